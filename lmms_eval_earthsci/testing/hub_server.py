"""A real HTTP server on 127.0.0.1 speaking enough of the Hugging Face Hub HTTP API for tests of the
Hub route without the Hub: the unmodified ``huggingface_hub`` and ``datasets`` libraries, pointed at it
with ``HF_ENDPOINT=<server.base_url>``, run ``load_dataset("org/name", config, revision=sha)``,
``hf_hub_download`` and ``snapshot_download`` against local folders served as dataset repos::

    with FakeHubServer({"org/name": "/path/to/repo_folder"}) as hub:
        env = hub.client_env(hf_home=tmp)   # HF_ENDPOINT, fresh HF_HOME, online, no xet, no token
        subprocess.run([sys.executable, "-c", code], env=env)  # huggingface_hub reads HF_ENDPOINT at import
        hub.resolved_files()                 # [(repo, revision as requested, path), ...]

Every file under a repo folder is served (``.git/`` excepted) at one commit: the ``sha`` given for the
repo, else a deterministic 40-hex sha derived from the repo id. Revision ``main`` (or
``refs/heads/main``) resolves to that sha; any other revision gets the 404 ``RevisionNotFound``,
an unknown repo the 404 ``RepoNotFound`` (errors carry ``X-Error-Code`` / ``X-Error-Message``, which
``huggingface_hub.utils.hf_raise_for_status`` maps to ``RevisionNotFoundError``,
``RepositoryNotFoundError`` and ``EntryNotFoundError``). All repos are dataset repos: model and space
URLs get ``RepoNotFound``.

Endpoints (``{repo}`` is ``org/name``, ``{rev}`` a percent-quoted revision):

* ``HEAD|GET /datasets/{repo}/resolve/{rev}/{path}`` (also under ``/api/``): the file, with
  ``X-Repo-Commit`` (the resolved sha), ``ETag`` (the git blob oid, quoted), ``Content-Length``,
  ``Accept-Ranges: bytes``; for binary files (what the Hub stores in LFS) also ``X-Linked-Etag``
  (sha256) and ``X-Linked-Size``. Single byte ranges (``Range: bytes=a-b``, ``a-``, ``-n``) get a
  206 with ``Content-Range`` (416 past the end). A missing file: 404 ``EntryNotFound`` with
  ``X-Repo-Commit`` (so the client caches the absence). No ``X-Xet-*`` header and no ``xet-auth``
  link is ever sent, so ``huggingface_hub`` downloads over plain HTTP even with ``hf_xet`` installed.
* ``GET /api/datasets/{repo}`` and ``/api/datasets/{repo}/revision/{rev}``: repo info (``id``,
  ``sha``, ``siblings``; ``blobs=true`` adds sizes/oids/lfs, ``expand=`` selects properties).
* ``GET /api/datasets/{repo}/tree/{rev}[/{path}]?recursive=&expand=``: the listing, paginated like
  the Hub (1000 entries a page, 50 with ``expand``; ``Link: <...&cursor=N>; rel="next"``).
* ``POST /api/datasets/{repo}/paths-info/{rev}`` (form or JSON ``paths``, ``expand``).
* ``GET /api/datasets/{repo}/commits/{rev}`` (one commit) and ``/api/datasets/{repo}/refs``.
* Anything else: 404.

``server.requests`` records every request (:class:`HubRequest`: method, path, repo, revision as
requested, file, whether an ``Authorization`` header was present -- never its value --, status);
``add_fault`` makes matching requests fail (``404``/``500``/any status, ``drop``, ``slow``,
``truncate``, ``stall``); ``token=`` makes every request without ``Authorization: Bearer <token>`` get a 401 (no
``X-Error-Code``: the client raises ``HfHubHTTPError`` with ``response.status_code == 401``; over
plain http huggingface_hub does not turn an API 401 into ``RepositoryNotFoundError``).
Requests to the dataset-viewer (``datasets-server.<host>``, used by ``datasets`` only for revision
``main``) never reach this server: the host does not resolve, which ``datasets`` tolerates.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import os
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from lmms_eval_earthsci.testing.loopback import LoopbackServer, QuietHandler, drop_connection

FAKE_DATE = "2024-01-01T00:00:00.000Z"

# Hub page sizes for /tree (huggingface_hub.hf_api._iter_repo_tree_pages docstring)
TREE_PAGE_SIZE = 1000
TREE_PAGE_SIZE_EXPAND = 50

_REPO_TYPES = MappingProxyType({"datasets": "dataset", "models": "model", "spaces": "space", "kernels": "kernel"})


def default_sha(repo_id: str) -> str:
    """The commit sha a repo is served at when none is given: deterministic, 40 hex digits."""
    return hashlib.sha1(f"fake-hub:{repo_id}".encode()).hexdigest()


def git_blob_oid(data: bytes) -> str:
    """The git blob id of some content (what the Hub reports as a file's ``oid`` / ``ETag``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass
class HubRequest:
    """One request as the server saw it. ``revision`` is as requested in the URL (before ``main`` is
    resolved); ``file`` is the path in the repo for resolve requests (else ``None``); ``status`` is
    the status sent, ``None`` while in flight or when the connection was dropped."""

    method: str
    path: str  # URL path, still percent-quoted, without the query string
    query: str = ""
    endpoint: str = "other"  # resolve | info | tree | paths-info | commits | refs | other
    repo: str | None = None
    repo_type: str | None = None
    revision: str | None = None
    file: str | None = None
    authorization: bool = False  # an Authorization header was present (its value is never stored)
    range: str | None = None
    user_agent: str | None = None
    status: int | None = None
    fault: str | None = None  # kind of the injected fault, if one was applied
    stall: float = 0.0  # a ``stall`` fault: seconds the cut-off response waits before closing
    time: float = 0.0


@dataclass
class HubFault:
    """A fault registered with :meth:`FakeHubServer.add_fault`. ``hits`` counts the requests it hit."""

    match: Callable[[HubRequest], bool]
    kind: str
    times: int | None = None
    delay: float = 1.0
    methods: tuple[str, ...] | None = None
    hits: int = 0

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times


@dataclass
class _File:
    data: bytes
    oid: str
    sha256: str
    lfs: bool


@dataclass
class _Repo:
    repo_id: str
    folder: str
    sha: str
    _cache: dict = field(default_factory=dict)

    def files(self) -> list[str]:
        """Every file of the repo, as sorted posix paths relative to its root (``.git/`` excepted)."""
        out = []
        for root, dirs, names in os.walk(self.folder):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            rel = os.path.relpath(root, self.folder)
            for n in names:
                out.append(n if rel == "." else f"{rel.replace(os.sep, '/')}/{n}")
        return sorted(out)

    def dirs(self, files: list[str] | None = None) -> set[str]:
        """Every folder of the repo (of ``files`` if given), as posix paths."""
        out = set()
        for f in self.files() if files is None else files:
            parts = f.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                out.add("/".join(parts[:i]))
        return out

    def read(self, path: str) -> _File | None:
        if not path or path.startswith("/") or any(p in ("", ".", "..", ".git") for p in path.split("/")):
            return None
        full = os.path.join(self.folder, *path.split("/"))
        try:
            st = os.stat(full)
        except OSError:
            return None
        if not os.path.isfile(full):
            return None
        key = (path, st.st_mtime_ns, st.st_size)
        f = self._cache.get(key)
        if f is None:
            with open(full, "rb") as fh:
                data = fh.read()
            f = _File(data, git_blob_oid(data), hashlib.sha256(data).hexdigest(), not _is_text(data))
            self._cache[key] = f
        return f


class _HubError(Exception):
    def __init__(self, status: int, code: str | None, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


class FakeHubServer(LoopbackServer):
    """Serve local folders as Hub dataset repos on 127.0.0.1 (see the module docstring).

    ``repos``: repo id (``"org/name"``) -> folder, or -> ``(folder, sha)``. ``token``: if set, every
    request must carry ``Authorization: Bearer <token>`` (else 401). ``page_size``: entries per /tree
    page (default: the Hub's, 1000 / 50 with ``expand``)."""

    def __init__(self, repos: Mapping[str, str | os.PathLike | tuple[str | os.PathLike, str]], *, token: str | None = None, page_size: int | None = None):
        self.repos: dict[str, _Repo] = {}
        for repo_id, spec in repos.items():
            folder, sha = (spec if isinstance(spec, tuple) else (spec, None))
            sha = sha or default_sha(repo_id)
            if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
                raise ValueError(f"sha of {repo_id!r} must be 40 lowercase hex digits, got {sha!r}")
            if not os.path.isdir(folder):
                raise ValueError(f"folder of {repo_id!r} does not exist: {folder}")
            self.repos[repo_id] = _Repo(repo_id, os.fspath(folder), sha)
        self.token = token
        self.page_size = page_size
        self.requests: list[HubRequest] = []
        self.errors: list[str] = []  # tracebacks of bugs in this server (answered with a 500)
        self.faults: list[HubFault] = []
        self._stalls = threading.Event()
        self._lock = threading.Lock()
        super().__init__()

    # -- lifecycle
    def handler_class(self):
        server = self

        class Handler(QuietHandler):
            def do_GET(self):
                server._handle(self, "GET")

            def do_HEAD(self):
                server._handle(self, "HEAD")

            def do_POST(self):
                server._handle(self, "POST")

        return Handler

    @property
    def base_url(self) -> str:
        """The value for ``HF_ENDPOINT``."""
        return f"http://127.0.0.1:{self.port}"

    endpoint = base_url

    def sha(self, repo_id: str) -> str:
        """The commit sha ``repo_id`` is served at."""
        return self.repos[repo_id].sha

    def client_env(self, hf_home: str | os.PathLike | None = None, token: str | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """An environment for a client process: ``base`` (default ``os.environ``) without any HF
        token, cache or offline setting, plus ``HF_ENDPOINT`` pointing here, ``HF_HOME`` (if given),
        online, telemetry, xet and progress bars off, and ``HF_TOKEN=token`` if given."""
        env = dict(os.environ if base is None else base)
        for k in list(env):
            if k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                     "HF_DATASETS_CACHE", "HF_XET_CACHE", "HF_ASSETS_CACHE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE",
                     "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HUGGINGFACE_CO_STAGING"):
                env.pop(k)
        env.update(
            {
                "HF_ENDPOINT": self.base_url,
                "HF_HUB_OFFLINE": "0",
                "HF_DATASETS_OFFLINE": "0",
                "HF_HUB_DISABLE_TELEMETRY": "1",
                "HF_HUB_DISABLE_XET": "1",
                "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1" if token is None else "0",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        if hf_home is not None:
            env["HF_HOME"] = os.fspath(hf_home)
        if token is not None:
            env["HF_TOKEN"] = token
        return env

    # -- request log
    def resolved_files(self, methods: tuple[str, ...] = ("GET", "HEAD")) -> list[tuple[str | None, str | None, str | None]]:
        """``(repo, revision as requested, path)`` of every resolve (file) request with one of ``methods``."""
        with self._lock:
            return [(r.repo, r.revision, r.file) for r in self.requests if r.endpoint == "resolve" and r.method in methods]

    def downloaded_files(self) -> list[tuple[str | None, str | None, str | None]]:
        """``(repo, revision, path)`` of every resolve GET (the requests that transfer file content)."""
        return self.resolved_files(methods=("GET",))

    def revisions_requested(self, repo: str | None = None) -> set[str]:
        """Every revision named in a request URL (for ``repo``, or any repo), as requested."""
        with self._lock:
            return {r.revision for r in self.requests if r.revision is not None and (repo is None or r.repo == repo)}

    def requests_for(self, endpoint: str | None = None, method: str | None = None, file: str | None = None) -> list[HubRequest]:
        """The recorded requests filtered by endpoint kind, method and file path (``None``: any)."""
        with self._lock:
            return [
                r for r in self.requests
                if (endpoint is None or r.endpoint == endpoint) and (method is None or r.method == method) and (file is None or r.file == file)
            ]

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- faults
    def add_fault(
        self,
        match: str | Callable[[HubRequest], bool] = "*",
        kind: str = "500",
        times: int | None = None,
        delay: float = 1.0,
        methods: str | tuple[str, ...] | None = None,
    ) -> HubFault:
        """Make matching requests fail. ``match``: a glob on the file path of resolve requests
        (``"figures/*.png"``), a glob on the URL path if it starts with ``/`` (any request), or a
        callable taking the :class:`HubRequest`. ``kind``: an HTTP status (``"404"`` -- for a file an
        ``EntryNotFound`` 404 --, ``"500"``, ``"503"``, ...), ``"drop"`` (close the connection without
        a response), ``"slow"`` (sleep ``delay`` seconds, then answer normally), ``"truncate"``
        (announce the full Content-Length, send half the body, close) or ``"stall"`` (the same, but wait
        ``delay`` seconds, or until :meth:`release_stalls`, before closing: a client killed meanwhile
        is cut off mid-file, as by a dropped link its own retries never see). ``times``: how many requests it
        hits (default: all). ``methods``: only these methods (e.g. ``"GET"`` to spare HEAD). The first
        registered fault that matches applies."""
        if kind not in ("drop", "slow", "truncate", "stall") and not (kind.isdigit() and len(kind) == 3):
            raise ValueError(f"unknown fault kind {kind!r}")
        if isinstance(match, str):
            pattern = match
            if pattern.startswith("/"):
                def matcher(r):
                    return fnmatch.fnmatchcase(r.path, pattern)
            else:
                def matcher(r):
                    return r.file is not None and fnmatch.fnmatchcase(r.file, pattern)
        else:
            matcher = match
        if isinstance(methods, str):
            methods = (methods,)
        fault = HubFault(matcher, kind, times, delay, tuple(m.upper() for m in methods) if methods else None)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def _take_fault(self, req: HubRequest) -> HubFault | None:
        with self._lock:
            for f in self.faults:
                if f.exhausted or (f.methods and req.method not in f.methods):
                    continue
                if f.kind in ("truncate", "stall") and req.method != "GET":  # only a body can be cut short
                    continue
                if f.match(req):
                    f.hits += 1
                    return f
        return None

    # -- serving
    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        body = b""
        if method == "POST":  # always consume the body, so the connection stays in sync
            body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        split = urlsplit(h.path)
        req = HubRequest(
            method=method,
            path=split.path,
            query=split.query,
            authorization=h.headers.get("Authorization") is not None,
            range=h.headers.get("Range"),
            user_agent=h.headers.get("User-Agent"),
            time=time.time(),
        )
        try:
            route = self._route(req)
        except _HubError as e:  # unparseable: still recorded, answered below
            route = e
        except Exception:  # noqa: BLE001 -- a bug here: recorded in .errors, answered with a 500
            with self._lock:
                self.errors.append(traceback.format_exc())
            route = _HubError(500, None, "fake hub server bug (see server.errors)")
        with self._lock:
            self.requests.append(req)

        fault = self._take_fault(req)
        if fault is not None:
            req.fault = fault.kind
            if fault.kind == "drop":
                drop_connection(h)
                return
            if fault.kind == "slow":
                time.sleep(fault.delay)
            elif fault.kind in ("truncate", "stall"):
                pass  # below, once the file is known
            else:
                status = int(fault.kind)
                headers = {}
                code = None
                if status == 404 and req.endpoint == "resolve" and req.repo in self.repos:
                    code = "EntryNotFound"
                    headers["X-Repo-Commit"] = self.repos[req.repo].sha
                self._error(h, req, _HubError(status, code, f"injected fault {fault.kind}", headers))
                return
        try:
            if self.token is not None and not self._authorized(h):
                given = h.headers.get("Authorization") is not None
                raise _HubError(401, None, "Invalid credentials in Authorization header" if given else "Unauthorized: a token is required")
            if isinstance(route, _HubError):
                raise route
            handler, args = route
            cut = fault.kind if fault is not None and fault.kind in ("truncate", "stall") else False
            if cut == "stall":
                req.stall = fault.delay
            handler(h, req, *args, body=body, truncate=cut)
        except _HubError as e:
            self._error(h, req, e)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True
        except Exception:  # noqa: BLE001 -- a bug here: recorded in .errors, answered with a 500
            with self._lock:
                self.errors.append(traceback.format_exc())
            if req.status is not None:  # headers already sent: the response cannot be fixed
                h.close_connection = True
                return
            try:
                self._error(h, req, _HubError(500, None, "fake hub server bug (see server.errors)"))
            except OSError:
                h.close_connection = True

    def _authorized(self, h) -> bool:
        auth = h.headers.get("Authorization") or ""
        return auth.startswith("Bearer ") and hmac.compare_digest(auth[len("Bearer "):].encode(), self.token.encode())

    def _route(self, req: HubRequest):
        """Parse the URL into (handler, args), filling ``req``'s repo/revision/file/endpoint."""
        raw = req.path.split("/")
        if raw and raw[0] == "":
            raw = raw[1:]
        segs = [unquote(s) for s in raw]
        api = bool(segs) and segs[0] == "api"
        if api:
            segs, raw = segs[1:], raw[1:]
        if not segs:
            raise _HubError(404, None, "Not found")
        # repo type prefix
        if segs[0] in _REPO_TYPES:
            req.repo_type = _REPO_TYPES[segs[0]]
            segs, raw = segs[1:], raw[1:]
        elif api:
            raise _HubError(404, None, "Not found")
        else:
            req.repo_type = "model"
        # repo id: one or two segments (a registered id wins)
        if len(segs) >= 2 and f"{segs[0]}/{segs[1]}" in self.repos or (len(segs) >= 2 and segs[0] not in self.repos):
            repo_id, rest, rest_raw = f"{segs[0]}/{segs[1]}", segs[2:], raw[2:]
        else:
            repo_id, rest, rest_raw = segs[0], segs[1:], raw[1:]
        req.repo = repo_id
        action = rest[0] if rest else None
        if action == "resolve" and len(rest) >= 2:
            req.endpoint = "resolve"
            revision, n = self._revision_from(rest, 1)
            req.revision = revision
            req.file = "/".join(rest[1 + n:])
            return self._serve_resolve, (revision, req.file)
        if not api:
            raise _HubError(404, None, "Not found")
        if action is None:
            req.endpoint = "info"
            return self._serve_info, (None,)
        at_revision = {"revision": ("info", self._serve_info), "tree": ("tree", self._serve_tree), "paths-info": ("paths-info", self._serve_paths_info), "commits": ("commits", self._serve_commits)}
        if action in at_revision and len(rest) >= 2:
            req.endpoint, serve = at_revision[action]
            revision, n = self._revision_from(rest, 1)
            req.revision = revision
            if action == "tree":
                # huggingface_hub quotes the path with safe="" (one segment), fsspec users may not
                return serve, (revision, "/".join(unquote(s) for s in rest_raw[1 + n:]).strip("/"))
            return serve, (revision,)
        if action == "refs":
            req.endpoint = "refs"
            return self._serve_refs, ()
        raise _HubError(404, None, "Not found")

    @staticmethod
    def _revision_from(rest: list[str], i: int) -> tuple[str, int]:
        """The revision at ``rest[i]`` (already unquoted) and how many segments it took: special refs
        (``refs/pr/1``, ``refs/convert/parquet``, ``refs/heads/main``) may come unquoted."""
        if rest[i] == "refs" and len(rest) >= i + 3 and rest[i + 1] in ("pr", "convert", "heads", "tags"):
            return "/".join(rest[i : i + 3]), 3
        return rest[i], 1

    def _repo(self, req: HubRequest) -> _Repo:
        repo = self.repos.get(req.repo or "") if req.repo_type == "dataset" else None
        if repo is None:
            raise _HubError(404, "RepoNotFound", "Repository not found")
        return repo

    def _resolve_revision(self, repo: _Repo, revision: str | None) -> str:
        if revision in (None, "main", "refs/heads/main", repo.sha):
            return repo.sha
        raise _HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}")

    # -- responses
    def _send(self, h, req: HubRequest, status: int, data: bytes, headers: dict, *, truncate: bool = False) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        if "Content-Length" not in headers:
            h.send_header("Content-Length", str(len(data)))
        if truncate:
            h.send_header("Connection", "close")
        h.end_headers()
        req.status = status
        if req.method != "HEAD":
            h.wfile.write(data[: len(data) // 2] if truncate else data)
        if truncate:
            h.wfile.flush()
            if truncate == "stall":
                self._stalls.wait(req.stall)
            h.close_connection = True

    def release_stalls(self) -> None:
        """End every ``stall`` fault's wait (their connections close)."""
        self._stalls.set()

    def stop(self) -> None:
        self.release_stalls()
        super().stop()

    def _json(self, h, req, obj: Any, status: int = 200, headers: dict | None = None) -> None:
        self._send(h, req, status, json.dumps(obj).encode(), {"Content-Type": "application/json", **(headers or {})})

    def _error(self, h, req: HubRequest, e: _HubError) -> None:
        headers = dict(e.headers)
        if e.code:
            headers["X-Error-Code"] = e.code
        headers["X-Error-Message"] = e.message
        self._json(h, req, {"error": e.message}, status=e.status, headers=headers)

    def _serve_resolve(self, h, req: HubRequest, revision: str, path: str, *, body: bytes, truncate: bool) -> None:
        repo = self._repo(req)
        sha = self._resolve_revision(repo, revision)
        f = repo.read(path)
        if f is None:
            raise _HubError(404, "EntryNotFound", f"Entry not found: {path}", {"X-Repo-Commit": sha})
        headers = {
            "Content-Type": "application/octet-stream",
            "X-Repo-Commit": sha,
            "ETag": f'"{f.oid}"',
            "Accept-Ranges": "bytes",
        }
        if f.lfs:
            headers["X-Linked-Etag"] = f'"{f.sha256}"'
            headers["X-Linked-Size"] = str(len(f.data))
        data, status = f.data, 200
        rng = h.headers.get("Range")
        if rng:
            span = _parse_range(rng, len(f.data))
            if span == "unsatisfiable":
                raise _HubError(416, None, "Range Not Satisfiable", {"Content-Range": f"bytes */{len(f.data)}", "X-Repo-Commit": sha})
            if span is not None:
                start, end = span
                data, status = f.data[start : end + 1], 206
                headers["Content-Range"] = f"bytes {start}-{end}/{len(f.data)}"
        self._send(h, req, status, data, headers, truncate=truncate)

    def _entry(self, repo: _Repo, path: str, expand: bool, dirs: set[str]) -> dict | None:
        """The /tree and /paths-info entry of ``path`` (``None`` if it does not exist)."""
        f = repo.read(path)
        if f is not None:
            e: dict[str, Any] = {"type": "file", "oid": f.oid, "size": len(f.data), "path": path}
            if f.lfs:
                e["lfs"] = {"oid": f.sha256, "size": len(f.data), "pointerSize": 134}
        elif path in dirs:
            e = {"type": "directory", "oid": hashlib.sha1(f"tree:{repo.sha}:{path}".encode()).hexdigest(), "size": 0, "path": path}
        else:
            return None
        if expand:
            e["lastCommit"] = {"id": repo.sha, "title": "Initial commit", "date": FAKE_DATE}
            if e["type"] == "file":
                e["securityFileStatus"] = {"status": "safe", "avScan": {"virusFound": False, "virusNames": None}, "pickleImportScan": None}
        return e

    def _serve_info(self, h, req: HubRequest, revision: str | None, *, body: bytes, truncate: bool) -> None:
        repo = self._repo(req)
        sha = self._resolve_revision(repo, revision)
        q = parse_qs(req.query)
        blobs = _truthy(q.get("blobs", ["false"])[0])
        siblings = []
        for p in repo.files():
            s: dict[str, Any] = {"rfilename": p}
            if blobs:
                f = repo.read(p)
                s.update({"size": len(f.data), "blobId": f.oid})
                if f.lfs:
                    s["lfs"] = {"sha256": f.sha256, "size": len(f.data), "pointerSize": 134}
            siblings.append(s)
        info = {
            "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            "author": repo.repo_id.split("/")[0] if "/" in repo.repo_id else None,
            "sha": sha,
            "lastModified": FAKE_DATE,
            "createdAt": FAKE_DATE,
            "private": False,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": siblings,
            "usedStorage": sum(len(repo.read(p).data) for p in repo.files()),
        }
        expand = q.get("expand") or q.get("expand[]")
        if expand:
            info = {k: v for k, v in info.items() if k in set(expand) | {"_id", "id"}}
        self._json(h, req, info)

    def _serve_tree(self, h, req: HubRequest, revision: str, sub: str, *, body: bytes, truncate: bool) -> None:
        repo = self._repo(req)
        self._resolve_revision(repo, revision)
        q = parse_qs(req.query)
        recursive = _truthy(q.get("recursive", ["false"])[0])
        expand = _truthy(q.get("expand", ["false"])[0])
        files = repo.files()
        dirs = repo.dirs(files)
        if sub and sub not in dirs:
            raise _HubError(404, "EntryNotFound", f"Entry not found: {sub}")
        prefix = f"{sub}/" if sub else ""
        paths = set()
        for p in files:
            if not p.startswith(prefix):
                continue
            rel = p[len(prefix):].split("/")
            depth = len(rel) if recursive else 1
            for i in range(1, depth + 1):
                paths.add(prefix + "/".join(rel[:i]))
        # the Hub lists a folder's directories before its files
        ordered = sorted(paths, key=lambda p: (p not in dirs, p))
        entries = [self._entry(repo, p, expand, dirs) for p in ordered]
        size = self.page_size or (TREE_PAGE_SIZE_EXPAND if expand else TREE_PAGE_SIZE)
        cursor = int(q.get("cursor", ["0"])[0] or 0)
        page = entries[cursor : cursor + size]
        headers = {}
        if cursor + size < len(entries):
            host = h.headers.get("Host") or f"127.0.0.1:{self.port}"
            nxt = urlencode({"recursive": str(recursive).lower(), "expand": str(expand).lower(), "cursor": cursor + size})
            headers["Link"] = f'<http://{host}{req.path}?{nxt}>; rel="next"'
        self._json(h, req, page, headers=headers)

    def _serve_paths_info(self, h, req: HubRequest, revision: str, *, body: bytes, truncate: bool) -> None:
        repo = self._repo(req)
        self._resolve_revision(repo, revision)
        ctype = (h.headers.get("Content-Type") or "").lower()
        if "json" in ctype:
            payload = json.loads(body or b"{}")
            paths = payload.get("paths") or []
            expand = bool(payload.get("expand"))
        else:
            form = parse_qs(body.decode("utf-8"), keep_blank_values=True)
            paths = form.get("paths", [])
            expand = _truthy((form.get("expand") or ["false"])[0])
        if isinstance(paths, str):
            paths = [paths]
        dirs = repo.dirs()
        out = [e for e in (self._entry(repo, p.strip("/"), expand, dirs) for p in paths) if e is not None]
        self._json(h, req, out)

    def _serve_commits(self, h, req: HubRequest, revision: str, *, body: bytes, truncate: bool) -> None:
        repo = self._repo(req)
        sha = self._resolve_revision(repo, revision)
        commit = {"id": sha, "title": "Initial commit", "message": "", "authors": [{"user": "fake-hub"}], "date": FAKE_DATE}
        self._json(h, req, [commit])

    def _serve_refs(self, h, req: HubRequest, *, body: bytes, truncate: bool) -> None:
        repo = self._repo(req)
        self._json(h, req, {"branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": repo.sha}], "converts": [], "tags": []})


def _truthy(v: str) -> bool:
    return v.strip().lower() in ("1", "true", "yes", "on")


def _parse_range(header: str, size: int):
    """``(start, end)`` inclusive for a single ``bytes=`` range, ``"unsatisfiable"``, or ``None`` to
    ignore the header (multiple ranges, other units, malformed: the whole file is served)."""
    header = header.strip()
    if not header.lower().startswith("bytes=") or "," in header:
        return None
    spec = header[len("bytes="):].strip()
    first, sep, last = spec.partition("-")
    if not sep:
        return None
    try:
        if first.strip() == "":
            n = int(last)
            if n <= 0:
                return "unsatisfiable"
            return max(0, size - n), size - 1
        start = int(first)
        end = int(last) if last.strip() else size - 1
    except ValueError:
        return None
    if start >= size or end < start:
        return "unsatisfiable"
    return start, min(end, size - 1)
