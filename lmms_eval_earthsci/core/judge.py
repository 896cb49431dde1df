"""The one LLM-judge client: any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, OpenAI,
Azure OpenAI).

Never constructed at import and never needed to load a task or compute rule-based metrics:
:func:`get_judge` returns ``None`` (after one warning) when no judge is configured.

Configuration (environment; a task's ``metadata.judge`` dict overrides per task):

=============================  ======================================================  ==========
variable                        meaning                                                 default
=============================  ======================================================  ==========
``EARTHSCI_JUDGE_BASE_URL``     endpoint base, e.g. ``http://judge-node:8000/v1``       ``OPENAI_API_URL`` if ``API_TYPE=openai``
``EARTHSCI_JUDGE_MODEL``        model name the server knows                             ``MODEL_VERSION``
``EARTHSCI_JUDGE_API_KEY``      bearer key (never logged)                               ``OPENAI_API_KEY`` / ``AZURE_API_KEY``
``EARTHSCI_JUDGE_API_TYPE``     ``openai`` or ``azure``                                 ``API_TYPE`` or ``openai``
``EARTHSCI_JUDGE_CONCURRENCY``  requests in flight                                      32
``EARTHSCI_JUDGE_TIMEOUT``      seconds per request                                     120
``EARTHSCI_JUDGE_MAX_RETRIES``  retries after the first attempt                         5
``EARTHSCI_JUDGE_CACHE``        verdict cache directory (``off`` disables)              ``$EARTHSCI_CACHE_DIR/judge``
``EARTHSCI_JUDGE_CACHE_JOURNAL`` SQLite journal: ``wal`` or ``delete``                  ``wal``; ``delete`` on NFS/CIFS/Lustre...
``EARTHSCI_JUDGE_BREAKER``      consecutive failed docs (after retries) that stop a pass 5 (0: never)
=============================  ======================================================  ==========

Azure: ``API_TYPE=azure`` with ``AZURE_ENDPOINT``, ``AZURE_API_KEY``, ``API_VERSION``; the model is
the deployment name.

Every request is retried on timeouts, connection errors, 429 (``Retry-After`` honoured), 5xx and
malformed replies, with exponential backoff, up to the bound. What still fails comes back as a
:class:`JudgeResult` with ``error`` (and a short ``cause`` such as ``HTTP 401``) set: nothing raises.

A circuit breaker guards each :meth:`JudgeClient.complete_many` call (one task's pass): an
authentication or not-found reply (401/403/404) stops it at once, and so do ``EARTHSCI_JUDGE_BREAKER``
consecutive docs that failed after all their retries (a dead or misconfigured endpoint); the docs not
yet judged are then failed with the same cause without a request, and requests waiting to retry are
woken. A dead endpoint so costs one retry chain (at most ~16 s at the defaults) per task, not one per doc.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import hashlib
import http.client
import io
import json
import logging
import os
import random
import socket
import sqlite3
import sys
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

logger = logging.getLogger("lmms_eval_earthsci")



def default_cache_dir() -> str:
    from lmms_eval_earthsci import cache_dir

    return cache_dir("judge")



JUDGE_ENV = "EARTHSCI_JUDGE"


def _env(*names: str, default: str | None = None) -> str | None:
    for n in names:
        v = os.environ.get(n)
        if v is not None and v.strip() != "":
            return v.strip()
    return default


@dataclass
class JudgeConfig:
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_type: str = "openai"
    api_version: str | None = None
    concurrency: int = 32
    timeout: float = 120.0
    max_retries: int = 5
    temperature: float = 0.0
    max_tokens: int | None = None
    cache_dir: str | None = field(default_factory=default_cache_dir)
    cache_journal: str | None = None  # None: WAL on local disks, DELETE on network filesystems
    # 0.5 s doubling over 5 retries: at most 15.5 s of waiting per request (jittered down to half)
    backoff_base: float = 0.5
    backoff_max: float = 60.0
    breaker: int = 5
    reasoning_effort: str | None = None  # sent as is (e.g. "high" for o3-mini) when set

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)

    @classmethod
    def from_env(cls, overrides: Mapping[str, Any] | None = None, prefix: str = JUDGE_ENV) -> "JudgeConfig":
        """Settings from ``<prefix>_*`` variables; a prefix other than the judge's (e.g. ``EARTHSCI_DAD``
        for MAC's stage-2 reasoner) falls back to ``EARTHSCI_JUDGE_*`` for each setting it does not set."""
        prefixes = [prefix] if prefix == JUDGE_ENV else [prefix, JUDGE_ENV]

        def var(suffix: str, *legacy: str, default: str | None = None) -> str | None:
            return _env(*(f"{p}_{suffix}" for p in prefixes), *legacy, default=default)

        api_type = (var("API_TYPE", "API_TYPE", default="openai") or "openai").lower()
        if api_type == "azure":
            base_url = var("BASE_URL", "AZURE_ENDPOINT")
            key = var("API_KEY", "AZURE_API_KEY")
        else:
            base_url = var("BASE_URL", "OPENAI_API_URL")
            key = var("API_KEY", "OPENAI_API_KEY")
        cache = var("CACHE", default=default_cache_dir())
        max_tokens = var("MAX_TOKENS")
        cfg = cls(
            base_url=base_url,
            model=var("MODEL", "MODEL_VERSION", "DEPLOYMENT_NAME"),
            api_key=key,
            api_type=api_type,
            api_version=_env("API_VERSION", default="2024-02-15-preview") if api_type == "azure" else None,
            concurrency=int(var("CONCURRENCY", default="32")),
            timeout=float(var("TIMEOUT", default="120")),
            max_retries=int(var("MAX_RETRIES", default="5")),
            max_tokens=int(max_tokens) if max_tokens else None,
            cache_dir=None if cache.lower() in ("off", "none", "0", "") else os.path.expanduser(cache),
            cache_journal=var("CACHE_JOURNAL"),
            breaker=int(var("BREAKER", default="5")),
            reasoning_effort=var("REASONING_EFFORT"),
        )
        for k, v in (overrides or {}).items():
            if not hasattr(cfg, k):
                raise ValueError(f"unknown judge setting {k!r} in task metadata")
            setattr(cfg, k, v)
        return cfg

    def public(self) -> dict:
        """Settings safe to log (no key)."""
        return {"base_url": self.base_url, "model": self.model, "api_type": self.api_type, "concurrency": self.concurrency, "temperature": self.temperature}


@dataclass
class JudgeResult:
    content: str | None
    error: str | None = None
    cached: bool = False
    usage: dict = field(default_factory=dict)
    attempts: int = 0
    # short failure class for summaries ("HTTP 401", "ConnectionRefusedError", "malformed reply", ...)
    cause: str | None = None
    # a reasoning model's `reasoning_content`, kept apart from the answer `content` (never parsed)
    reasoning: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.content is not None


# --------------------------------------------------------------------------- request encoding


def _mime(raw: bytes) -> str:
    if raw[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if raw[:4] == b"GIF8":
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


def _image_to_data_url(img: Any) -> str:
    """PIL image, raw bytes, a path, an undecoded HF image (``{"bytes", "path"}``) or a data URL ->
    data URL. Stored bytes are sent as they are (no decode/re-encode)."""
    if isinstance(img, str) and img.startswith("data:"):
        return img
    if isinstance(img, Mapping):
        if img.get("bytes") is not None:
            img = img["bytes"]
        elif img.get("path"):
            img = img["path"]
        else:
            raise ValueError("image has neither bytes nor path")
    if isinstance(img, (bytes, bytearray)):
        raw = bytes(img)
    elif isinstance(img, (str, os.PathLike)):
        with open(img, "rb") as f:
            raw = f.read()
    else:  # PIL image
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        raw = buf.getvalue()
    return f"data:{_mime(raw)};base64," + base64.b64encode(raw).decode("ascii")


def to_openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    """lmms-eval style messages (``{"type": "image", "url": PIL|path|bytes}`` parts) or plain
    OpenAI messages -> OpenAI chat-completions messages with base64 PNG data URLs."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        parts = []
        for p in content:
            if p.get("type") == "image":
                parts.append({"type": "image_url", "image_url": {"url": _image_to_data_url(p["url"])}})
            else:
                parts.append(p)
        out.append({"role": m["role"], "content": parts})
    return out


def encode_payload(payload: Mapping[str, Any]) -> bytes:
    """The request body, serialized once, canonically (sorted keys): sent as is and hashed for the key."""
    return json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


def request_key(cfg: JudgeConfig, body: bytes) -> str:
    """Cache key: judge endpoint kind + model + the full request body (prompt, images, settings)."""
    h = hashlib.sha256(f"{cfg.api_type}\0{cfg.model}\0".encode())
    h.update(body)
    return h.hexdigest()


# --------------------------------------------------------------------------- cache


# Filesystems on which SQLite's WAL mode is unsafe (its shared-memory index needs one host's mmap):
# there the cache uses the rollback journal, which relies on POSIX locks (NFSv4, or v3 with lockd).
_NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "9p", "afs", "fuse.sshfs", "fuse.glusterfs", "fuse.ceph", "wekafs")
_OPEN_RETRY_SECONDS = 60.0


def filesystem_type(path: str) -> str | None:
    """The type of the filesystem holding ``path`` (longest mount point in /proc/mounts), or None."""
    try:
        with open("/proc/mounts") as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return None
    real = os.path.realpath(path)
    best, kind = "", None
    for point, fstype in mounts:
        point = point.replace("\\040", " ")
        # >=: of stacked mounts on one point (autofs, then the NFS it mounts) the last one is in effect
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def journal_mode_for(directory: str, requested: str | None = None) -> str:
    if requested:
        mode = requested.strip().lower()
        if mode not in ("wal", "delete", "truncate", "persist"):
            raise ValueError(f"EARTHSCI_JUDGE_CACHE_JOURNAL must be wal or delete, not {requested!r}")
        return mode
    return "delete" if (filesystem_type(directory) or "") in _NETWORK_FS else "wal"


@contextlib.contextmanager
def _exclusive(lock_path: str):
    """An exclusive advisory lock on ``lock_path`` for the block (``flock``; on filesystems without
    it, the block runs unlocked and the busy-retry below is what keeps opening safe)."""
    fd = None
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)
    except (OSError, ImportError):
        pass
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing releases the lock


def _is_busy(exc: sqlite3.Error) -> bool:
    msg = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)


# a reply's reasoning_content is stored beside its token counts (the cache's `usage` column)
REASONING_KEY = "_reasoning_content"


class VerdictCache:
    """SQLite, one row per request key; replies are committed in batches within ``FLUSH_SECONDS`` of
    arriving, so a run killed mid-judging keeps everything obtained up to then.

    Opening is safe for any number of processes at once (all ranks of every node sharing a home
    directory): the file is created and its journal mode set under an exclusive lock on a sidecar
    ``.lock`` file, with a busy timeout and retries on top. WAL on local disks; the rollback journal on
    network filesystems, where WAL is unsafe (:func:`journal_mode_for`)."""

    def __init__(self, directory: str, journal: str | None = None):
        self.path = os.path.join(directory, "verdicts.sqlite3")
        self.journal = journal_mode_for(directory, journal)
        self._lock = threading.Lock()
        self._pending: dict[str, tuple] = {}
        self._pending_lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._wake = threading.Event()
        self._closed = False
        self.on_error: Callable[[BaseException], None] | None = None
        os.makedirs(directory, exist_ok=True)
        deadline = time.monotonic() + _OPEN_RETRY_SECONDS
        delay = 0.05
        while True:
            try:
                self._conn = self._open()
                break
            except sqlite3.Error as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, 1.0)

    def _open(self) -> sqlite3.Connection:
        with _exclusive(self.path + ".lock"):
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=_OPEN_RETRY_SECONDS)
            try:
                conn.execute(f"PRAGMA busy_timeout={int(_OPEN_RETRY_SECONDS * 1000)}")
                mode = conn.execute(f"PRAGMA journal_mode={self.journal}").fetchone()[0]
                self.journal = str(mode).lower()
                # NORMAL: a commit survives the process being killed (not a power cut), without an fsync each
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, content TEXT, usage TEXT, created REAL)")
                conn.commit()
            except BaseException:
                conn.close()
                raise
        return conn

    # replies are committed in small batches by one writer thread, at most this long after they arrive:
    # one transaction per batch instead of one per reply keeps the cache off the pass's critical path
    FLUSH_SECONDS = 0.02

    def get(self, key: str) -> JudgeResult | None:
        with self._pending_lock:
            row = self._pending.get(key)
        if row is None:
            with self._lock:
                row = self._conn.execute("SELECT key, content, usage FROM verdicts WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        usage = json.loads(row[2] or "{}")
        reasoning = usage.pop(REASONING_KEY, None)
        return JudgeResult(row[1], cached=True, usage=usage, reasoning=reasoning)

    def put(self, key: str, result: JudgeResult) -> None:
        with self._pending_lock:
            usage = {**result.usage, REASONING_KEY: result.reasoning} if result.reasoning else result.usage
            self._pending[key] = (key, result.content, json.dumps(usage), time.time())
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="earthsci-judge-cache", daemon=True)
                self._writer.start()
        self._wake.set()

    def _write_loop(self) -> None:
        while not self._closed:
            self._wake.wait()
            time.sleep(self.FLUSH_SECONDS)  # let a batch gather
            self._wake.clear()
            try:
                self.flush()
            except Exception as exc:  # reported once by the client; the rows stay readable from memory
                if self.on_error is not None:
                    self.on_error(exc)
                return

    def flush(self) -> None:
        """Commit every reply received so far (also called by :meth:`close`)."""
        with self._pending_lock:
            rows = list(self._pending.values())
        if not rows:
            return
        with self._lock:
            self._conn.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)", rows)
            self._conn.commit()
        with self._pending_lock:
            for row in rows:
                if self._pending.get(row[0]) is row:
                    del self._pending[row[0]]

    def close(self) -> None:
        try:
            self.flush()
        except sqlite3.Error:
            pass
        self._closed = True
        self._wake.set()
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass


# --------------------------------------------------------------------------- client


def _usage(raw: Any) -> dict:
    """Token counts from a reply's ``usage`` (anything unexpected counts as 0)."""
    out = {}
    for k in ("prompt_tokens", "completion_tokens"):
        try:
            out[k] = max(0, int(raw.get(k) or 0)) if isinstance(raw, Mapping) else 0
        except (TypeError, ValueError):
            out[k] = 0
    details = raw.get("completion_tokens_details") if isinstance(raw, Mapping) else None
    try:
        reasoning = int(details.get("reasoning_tokens") or 0) if isinstance(details, Mapping) else 0
    except (TypeError, ValueError):
        reasoning = 0
    if reasoning > 0:  # a reasoning model's thinking, already inside completion_tokens
        out["reasoning_tokens"] = reasoning
    return out


class _Retryable(Exception):
    def __init__(self, msg: str, retry_after: float | None = None, cause: str | None = None):
        super().__init__(msg)
        self.retry_after = retry_after
        self.cause = cause or msg


# replies that no retry and no other doc can fix: the endpoint, model or key is wrong
_FATAL_STATUS = (401, 403, 404)
# a doc that ran out of retries on these says nothing about the endpoint being dead (rate limiting; a
# reply without content): such docs neither count towards the breaker nor reset it
_NEUTRAL_CAUSES = ("HTTP 429",)


class _Breaker:
    """Stops one pass when the endpoint is unusable (see the module docstring)."""

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.cause: str | None = None
        self.error: str | None = None
        self._consecutive = 0
        self._lock = threading.Lock()
        self.wake = threading.Event()

    @property
    def open(self) -> bool:
        return self.cause is not None

    def trip(self, cause: str, error: str) -> None:
        with self._lock:
            if self.cause is None:
                self.cause, self.error = cause, error
                self.wake.set()

    def record(self, result: "JudgeResult", transport_failure: bool) -> None:
        if result.cause in {f"HTTP {c}" for c in _FATAL_STATUS}:
            self.trip(result.cause, result.error or result.cause)
            return
        if result.cause in _NEUTRAL_CAUSES:
            return  # a live endpoint that is rate-limiting or answering oddly: neither dead nor healthy
        with self._lock:
            self._consecutive = self._consecutive + 1 if transport_failure else 0
            hit = self.threshold > 0 and self._consecutive >= self.threshold
        if hit:
            self.trip(result.cause or "transport failure", f"{self.threshold} consecutive docs failed after all retries; last: {result.error}")

    def skipped(self) -> "JudgeResult":
        return JudgeResult(None, error=f"not sent: the judge pass was stopped ({self.error})", cause=self.cause)


@dataclass
class JudgeStats:
    requests: int = 0  # HTTP requests sent (retries included)
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


_MAX_LINE = 65536


def _readline(reader) -> bytes:
    line = reader.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise http.client.LineTooLong("header line")
    return line


def _read_response(reader) -> tuple[int, dict, bytes, bool]:
    """One HTTP/1.1 response from a connection's buffered reader: (status, lower-cased headers, body,
    whether the server closes the connection). Content-Length, chunked and read-to-close bodies; a
    short body raises ``IncompleteRead`` (retried), a closed connection ``RemoteDisconnected``. A
    minimal parser: ``http.client``'s goes through the ``email`` package, a third of the client's CPU
    per request here."""
    try:
        return _read_response_unchecked(reader)
    except ValueError as exc:  # a malformed status, length or chunk size: a protocol error, retried
        raise http.client.HTTPException(f"malformed HTTP reply: {exc}") from exc


def _read_response_unchecked(reader) -> tuple[int, dict, bytes, bool]:
    while True:
        line = _readline(reader)
        if not line:
            raise http.client.RemoteDisconnected("remote end closed connection without response")
        parts = line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise http.client.BadStatusLine(line.decode("latin-1", "replace"))
        version, status = parts[0], int(parts[1])
        headers: dict[str, str] = {}
        while True:
            h = _readline(reader)
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if not 100 <= status < 200:
            break  # informational replies (100 Continue, 103) precede the real one: skipped
    conn_header = headers.get("connection", "").lower()
    will_close = "close" in conn_header or (version == "HTTP/1.0" and "keep-alive" not in conn_header)
    if status in (204, 304):
        return status, headers, b"", will_close
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size_line = _readline(reader)
            if not size_line:
                raise http.client.IncompleteRead(b"".join(chunks))
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while _readline(reader) not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                break
            chunk = reader.read(size)
            if len(chunk) < size:
                raise http.client.IncompleteRead(chunk, size - len(chunk))
            chunks.append(chunk)
            reader.read(2)  # CRLF after the chunk
        return status, headers, b"".join(chunks), will_close
    if "content-length" in headers:
        n = int(headers["content-length"])
        data = reader.read(n)
        if len(data) < n:
            raise http.client.IncompleteRead(data, n - len(data))
        return status, headers, data, will_close
    return status, headers, reader.read(), True  # body ends when the server closes


class _Transport:
    """POST over one persistent connection per worker thread (``http.client`` connects, proxies and
    TLS included; the request goes out in one send and the reply is read by :func:`_read_response`).

    Measured here (benchmarks/judge_throughput.py): a shared httpx pool spends more time in its own
    locks than the judge spends answering once ~64 threads share it; per-thread connections keep the
    client's cost per request well under a millisecond. HTTPS and the usual proxy variables
    (``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``) are honoured. ``timeout`` applies per socket operation.
    """

    def __init__(self, timeout: float):
        self.timeout = timeout
        self._local = threading.local()
        self._targets: dict = {}

    def _connection(self, scheme: str, host: str, port: int | None):
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        key = (scheme, host, port)
        conn = conns.get(key)
        if conn is None:
            cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
            proxy = urllib.request.getproxies().get(scheme)
            if proxy and not urllib.request.proxy_bypass(host):
                p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
                conn = cls(p.hostname, p.port, timeout=self.timeout)
                conn.set_tunnel(host, port)
            else:
                conn = cls(host, port, timeout=self.timeout)
            conns[key] = conn
        return key, conn

    def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, dict, bytes]:
        target = (url, tuple(headers.items()))
        cached = self._targets.get(target)
        if cached is None:  # parsed once per endpoint: the head differs per request only in its length
            u = urllib.parse.urlsplit(url)
            path = (u.path or "/") + (f"?{u.query}" if u.query else "")
            cached = self._targets[target] = (u, self._head(u, path, headers))
        u, head = cached
        for attempt in (0, 1):
            key, conn = self._connection(u.scheme or "http", u.hostname or "", u.port)
            reused = conn.sock is not None
            try:
                if conn.sock is None:
                    conn.connect()  # proxy tunnel and TLS exactly as http.client does them
                    try:
                        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    except OSError:
                        pass
                # head and body in one send (http.client sends them apart, two packets per request)
                conn.sock.sendall(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                reader = getattr(conn, "_earthsci_reader", None)
                if reader is None:
                    reader = conn._earthsci_reader = conn.sock.makefile("rb")
                status, resp_headers, data, will_close = _read_response(reader)
                if will_close:
                    self._drop(key, conn)
                return status, resp_headers, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop(key, conn)
                if not (reused and attempt == 0):
                    raise
                # the server closed an idle keep-alive connection (vLLM does after 5 s): resend at once
            except BaseException:
                self._drop(key, conn)  # a broken connection is never reused
                raise
        raise http.client.HTTPException("unreachable")

    @staticmethod
    def _head(u, path: str, headers: Mapping[str, str]) -> bytes:
        """The request head up to (not including) Content-Length and the blank line."""
        name = f"[{u.hostname}]" if ":" in (u.hostname or "") else u.hostname
        host = name if u.port is None else f"{name}:{u.port}"
        lines = [f"POST {path} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n").encode("latin-1")

    def _drop(self, key, conn) -> None:
        try:
            reader = getattr(conn, "_earthsci_reader", None)
            if reader is not None:
                conn._earthsci_reader = None
                reader.close()
            conn.close()
        finally:
            self._local.conns.pop(key, None)


class JudgeClient:
    def __init__(self, config: JudgeConfig):
        if not config.configured:
            raise ValueError("judge is not configured (base URL and model are required)")
        self.config = config
        self.cache: VerdictCache | None = None
        if config.cache_dir:
            try:
                self.cache = VerdictCache(config.cache_dir, config.cache_journal)
                self.cache.on_error = lambda exc, path=self.cache.path: self._cache_failed("written", path, exc)
            except Exception as exc:  # judging goes on uncached: a cache must never cost a pass
                self._cache_failed("opened", os.path.join(config.cache_dir, "verdicts.sqlite3"), exc)
        self.stats = JudgeStats()
        self._stats_lock = threading.Lock()
        self._transport = _Transport(config.timeout)
        self._workers: ThreadPoolExecutor | None = None
        self._pools_lock = threading.Lock()

    def _cache_failed(self, what: str, path: str, exc: BaseException) -> None:
        """One warning for the client's life; the cache is dropped and judging goes on uncached."""
        self.cache = None
        logger.warning(
            "lmms_eval_earthsci: the judge verdict cache %s could not be %s (%s: %s); judging goes on without "
            "a cache (verdicts are not kept for a rerun). Set EARTHSCI_JUDGE_CACHE to a writable local directory, or off.",
            path, what, type(exc).__name__, exc,
        )

    def close(self) -> None:
        """Stop the worker threads and close the cache (also run at interpreter exit)."""
        with self._pools_lock:
            workers, self._workers = self._workers, None
        if workers is not None:
            workers.shutdown(wait=True)
        cache, self.cache = self.cache, None
        if cache is not None:
            cache.close()

    # -- plumbing
    def _pool(self) -> ThreadPoolExecutor:
        """One worker pool for the client's life, ``config.concurrency`` threads (they keep their
        connections open across passes), started up front: threads started while others are busy
        wait for the GIL, which delays the first wave of requests by a few ms per thread."""
        with self._pools_lock:
            if self._workers is None:
                workers = max(1, self.config.concurrency)
                self._workers = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="earthsci-judge")
                barrier = threading.Barrier(workers)

                def started():
                    try:
                        barrier.wait(timeout=10)
                    except threading.BrokenBarrierError:
                        pass

                for f in [self._workers.submit(started) for _ in range(workers)]:
                    f.result()
            return self._workers

    def _url_and_headers(self) -> tuple[str, dict]:
        cfg = self.config
        base = cfg.base_url.rstrip("/")
        if cfg.api_type == "azure":
            url = f"{base}/openai/deployments/{cfg.model}/chat/completions?api-version={cfg.api_version}"
            headers = {"api-key": cfg.api_key or ""}
        else:
            url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
            headers = {"Authorization": f"Bearer {cfg.api_key or 'EMPTY'}"}
        return url, headers

    def _count(self, **inc: int) -> None:
        with self._stats_lock:
            for k, v in inc.items():
                setattr(self.stats, k, getattr(self.stats, k) + v)

    def _post_once(self, body: bytes) -> JudgeResult:
        url, headers = self._url_and_headers()
        self._count(requests=1)
        try:
            status, resp_headers, raw = self._transport.post(url, body, {**headers, "Content-Type": "application/json"})
        except (OSError, http.client.HTTPException) as exc:  # timeouts, refused/dropped connections, truncated bodies
            raise _Retryable(f"{type(exc).__name__}: {exc}", cause=type(exc).__name__) from exc
        if status == 429 or status >= 500:
            ra = resp_headers.get("retry-after")
            try:  # honoured, but never negative and never longer than the backoff cap
                retry_after = min(max(0.0, float(ra)), self.config.backoff_max) if ra is not None else None
            except ValueError:
                retry_after = None
            raise _Retryable(f"HTTP {status}", retry_after)
        if status >= 400:
            # 4xx other than 429: the request itself is wrong; retrying cannot help
            return JudgeResult(None, error=f"HTTP {status}: {raw[:200].decode('utf-8', 'replace')}", cause=f"HTTP {status}")
        try:
            reply = json.loads(raw)
            message = reply["choices"][0]["message"]
            content = message["content"]
            if not isinstance(content, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise _Retryable(f"malformed reply: {exc}", cause="malformed reply") from exc
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        return JudgeResult(content, usage=_usage(reply.get("usage")), reasoning=reasoning if isinstance(reasoning, str) else None)

    def _payload(self, messages: Sequence[Mapping[str, Any]], **settings) -> dict:
        payload = {"model": self.config.model, "messages": to_openai_messages(messages), "temperature": self.config.temperature}
        if self.config.max_tokens:
            payload["max_tokens"] = self.config.max_tokens
        if self.config.reasoning_effort:
            payload["reasoning_effort"] = self.config.reasoning_effort
        payload.update(settings)
        return payload

    # -- public
    def complete(self, messages: Sequence[Mapping[str, Any]] | Callable[[], Sequence[Mapping[str, Any]]], _breaker: _Breaker | None = None, **settings) -> JudgeResult:
        """One judged request. ``messages`` may be a callable that builds them, so images are decoded
        only inside the worker that sends them (memory stays bounded in :meth:`complete_many`).
        Never raises: anything unexpected comes back as a failed :class:`JudgeResult`."""
        try:
            return self._complete(messages, _breaker, **settings)
        except Exception as exc:  # a cache or client error must not take the other requests down
            self._count(failures=1)
            return JudgeResult(None, error=f"judge client error: {type(exc).__name__}: {exc}", cause=f"client error {type(exc).__name__}")

    def _complete(self, messages, breaker: _Breaker | None = None, **settings) -> JudgeResult:
        # no early exit on an open breaker: a verdict already in the cache is still served
        try:
            msgs = messages() if callable(messages) else messages
            payload = self._payload(msgs, **settings)
        except Exception as exc:  # building the request failed (e.g. undecodable image)
            self._count(failures=1)
            return JudgeResult(None, error=f"request could not be built: {exc!r}", cause="request not built")
        body = encode_payload(payload)
        key = request_key(self.config, body)
        cache = self.cache
        if cache is not None:
            try:
                hit = cache.get(key)
            except sqlite3.Error as exc:
                self._cache_failed("read", cache.path, exc)
                hit = None
            if hit is not None:
                self._count(cache_hits=1)
                return hit
        last = _Retryable("no attempt made")
        for attempt in range(self.config.max_retries + 1):
            if breaker is not None and breaker.open:
                self._count(failures=1)
                return breaker.skipped()
            try:
                result = self._post_once(body)
            except _Retryable as exc:
                last = exc
                if attempt == self.config.max_retries:
                    break
                delay = exc.retry_after if exc.retry_after is not None else min(self.config.backoff_max, self.config.backoff_base * 2**attempt)
                delay *= 1.0 if exc.retry_after is not None else random.uniform(0.5, 1.0)
                if breaker is not None:
                    breaker.wake.wait(delay)  # a tripped breaker ends the wait at once
                else:
                    time.sleep(delay)
                continue
            result.attempts = attempt + 1
            if result.ok:
                self._count(prompt_tokens=result.usage.get("prompt_tokens", 0), completion_tokens=result.usage.get("completion_tokens", 0))
                cache = self.cache
                if cache is not None:
                    try:
                        cache.put(key, result)
                    except sqlite3.Error as exc:
                        self._cache_failed("written", cache.path, exc)
            else:
                self._count(failures=1)
            if breaker is not None:
                breaker.record(result, transport_failure=False)
            return result
        self._count(failures=1)
        result = JudgeResult(None, error=str(last), attempts=self.config.max_retries + 1, cause=last.cause)
        if breaker is not None:
            breaker.record(result, transport_failure=True)
        return result

    def complete_many(self, requests: Sequence[Any], progress: bool = False, desc: str = "judging", concurrency: int | None = None, **settings) -> list[JudgeResult]:
        """Judge many requests with ``concurrency`` (default ``config.concurrency``) in flight; results
        in input order. Each request may be a callable building its messages inside the worker."""
        if not requests:
            return []
        bar = None
        if progress:
            try:
                from tqdm import tqdm

                bar = tqdm(total=len(requests), desc=desc)
            except ImportError:
                bar = None

        slots = threading.BoundedSemaphore(max(1, min(concurrency or self.config.concurrency, self.config.concurrency)))
        breaker = _Breaker(self.config.breaker)

        def run(req):
            with slots:  # at most `concurrency` of the pool's workers in flight for this call
                try:
                    return self.complete(req, breaker, **settings)
                finally:
                    if bar is not None:
                        bar.update(1)

        pool = self._pool()
        # While the pass runs, this process only waits on the judge: a shorter GIL switch interval lets
        # a worker whose reply has arrived run at once instead of after up to 5 ms (restored after).
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, 0.0005))
        try:
            results = list(pool.map(run, requests))
        finally:
            sys.setswitchinterval(interval)
        if bar is not None:
            bar.close()
        if breaker.open:
            logger.warning(
                "lmms_eval_earthsci: %s stopped after %s (%s); %d of %d requests were not sent",
                desc, breaker.cause, breaker.error, sum(1 for r in results if r.error and r.error.startswith("not sent")), len(results),
            )
        return results


_JUDGES: dict[str, JudgeClient] = {}
_JUDGES_LOCK = threading.Lock()
_WARNED: set[str] = set()


def get_judge(overrides: Mapping[str, Any] | None = None, purpose: str = "judge metrics", prefix: str = JUDGE_ENV) -> JudgeClient | None:
    """The process-wide judge for the current settings (``<prefix>_*`` variables, see
    :meth:`JudgeConfig.from_env`), or None (with one warning) if none is configured. Thread-safe; builds
    no client until first called."""
    cfg = JudgeConfig.from_env(overrides, prefix=prefix)
    if not cfg.configured:
        if purpose not in _WARNED:
            _WARNED.add(purpose)
            names = f"{prefix}_BASE_URL and {prefix}_MODEL" + ("" if prefix == JUDGE_ENV else f" (or {JUDGE_ENV}_*)")
            logger.warning(
                "lmms_eval_earthsci: no LLM judge configured (set %s); %s are reported as unavailable, rule-based metrics are unaffected",
                names,
                purpose,
            )
        return None
    ident = json.dumps({**cfg.public(), "cache_dir": cfg.cache_dir, "timeout": cfg.timeout, "retries": cfg.max_retries, "max_tokens": cfg.max_tokens, "reasoning_effort": cfg.reasoning_effort}, sort_keys=True)
    with _JUDGES_LOCK:
        client = _JUDGES.get(ident)
        if client is None or client.config.api_key != cfg.api_key:
            client = _JUDGES[ident] = JudgeClient(cfg)
        return client


@atexit.register
def close_all() -> None:
    """Leave nothing of ours running at interpreter exit (worker threads, SQLite handles)."""
    with _JUDGES_LOCK:
        clients = list(_JUDGES.values())
        _JUDGES.clear()
    for c in clients:
        try:
            c.close()
        except Exception:
            pass
