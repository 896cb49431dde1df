"""Files a dataset's rows name by path inside its Hub repo (MuSciClaims figures; MAC covers): found in
the repo's listing, fetched once per machine, decoded one doc at a time.

The rows come through ``datasets.load_dataset`` as usual (:mod:`core.data`); the files they name are
not embedded. :class:`RepoFiles` serves them from the same place the rows came from:

- the local mirror (``$EARTHSCI_DATA_MIRROR/<org>/<name>/<path>``) when it holds the repo;
- else the Hub, through ``huggingface_hub``: one ``repo_info`` call lists the repo at the requested
  revision (and resolves it to a commit), then each needed file is ``hf_hub_download``-ed at that commit
  into the shared Hub cache. A warm cache makes no file request (a file cached at a commit is served
  without the network). The fetch runs under an exclusive ``flock`` per repo in the Hub cache, so that
  the ranks of a run (and any other process of the machine) fetch each file once: the first holds the
  lock and downloads, the others wait, then find everything cached. With ``HF_HUB_OFFLINE=1`` the
  cached snapshot is listed instead.

A path is looked up in the listing: as given, then rewritten by the benchmark's known path fixes
(``rewrites``: ``(old, new)`` substring pairs, e.g. MuSciClaims' ``jacs_data_10.1021_`` ->
``chem_10.1021_``), then by its basename (when exactly one file has it). Every fallback is counted
(:meth:`RepoFiles.summary`) and each kind logged once. A path found nowhere raises
:class:`RepoFileError` naming the paths tried and the root searched.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from lmms_eval_earthsci.core.data import RecordError, hub_refusal, mirror_path, mirror_root
from lmms_eval_earthsci.core.data.loading import FigureSize, reading_sizes
from lmms_eval_earthsci.core.runtime import current

if TYPE_CHECKING:
    from huggingface_hub import DatasetInfo
    from PIL import Image

logger = logging.getLogger("lmms_eval_earthsci")

FETCH_WORKERS = 8


class RepoFileError(FileNotFoundError):
    """A file named by a row is not in the repo (nor after the fallbacks), or cannot be fetched."""
    def __init__(self, rel: str, tried: Sequence[str], root: str, problem: str = "not found"):
        self.rel, self.tried, self.root = rel, list(tried), root
        super().__init__(f"{problem}: tried {', '.join(repr(t) for t in self.tried)} in {root}")


@dataclass
class Located:
    """Where a path named by a row is: ``repo_path`` inside the repo, found ``how`` (given, rewritten,
    basename), and the local file once fetched."""
    rel: str
    repo_path: str
    how: str
    local: str | None = None


@dataclass
class _Listing:
    source: str  # mirror | hub | hub-cache | local
    root: str  # a local folder (mirror, cached snapshot) or "hub:<repo>@<revision>"
    revision: str | None  # the commit (hub), or None
    files: frozenset[str]
    by_basename: dict[str, list[str]] = field(default_factory=dict)


def _walk(folder: str) -> frozenset[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.startswith("."):
                out.append(os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/"))
    return frozenset(out)


@contextlib.contextmanager
def _machine_lock(name: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``<hub cache>/.locks/earthsci/<name>.lock`` (shared by every process
    of the machine that uses this Hub cache)."""
    import fcntl  # noqa: PLC0415 - fcntl is POSIX-only: the module imports without it

    from huggingface_hub import constants  # noqa: PLC0415 - huggingface_hub, only when fetching from the Hub

    folder = os.path.join(constants.HF_HUB_CACHE, ".locks", "earthsci")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name.replace("/", "--") + ".lock")
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class RepoFiles:
    """The files of one dataset repo at one revision (see the module docstring). Thread-safe; one per
    (repo, revision) per process via :func:`repo_files`."""
    def __init__(self, repo_id: str, revision: str | None = None, rewrites: Sequence[tuple[str, str]] = (), strip_prefixes: Sequence[str] = ()):
        self.repo_id, self.revision, self.rewrites = repo_id, revision, tuple(rewrites)
        self.strip_prefixes = tuple(strip_prefixes)
        self._lock = threading.RLock()
        self._listing: _Listing | None = None
        self._located: dict[str, Located] = {}
        self._fallbacks: collections.Counter = collections.Counter()
        self._logged: set[str] = set()

    # ----------------------------------------------------------------- listing
    def listing(self) -> _Listing:
        with self._lock:
            if self._listing is None:
                self._listing = self._list()
                index: dict[str, list[str]] = {}
                for f in sorted(self._listing.files):
                    index.setdefault(f.rsplit("/", 1)[-1], []).append(f)
                self._listing.by_basename = index
            return self._listing

    def _list(self) -> _Listing:

        if os.path.isabs(self.repo_id):  # a local folder laid out as the repo (a built MAC snapshot)
            return _Listing("local", self.repo_id, None, _walk(self.repo_id))
        local = mirror_path(self.repo_id)
        if local is not None:
            return _Listing("mirror", local, None, _walk(local))
        from huggingface_hub import HfApi, constants, snapshot_download  # noqa: PLC0415 - huggingface_hub, only when the repo is on the Hub

        if constants.HF_HUB_OFFLINE:
            folder = snapshot_download(self.repo_id, repo_type="dataset", revision=self.revision, local_files_only=True)
            return _Listing("hub-cache", folder, os.path.basename(folder.rstrip("/")), _walk(folder))
        try:
            info = cast("DatasetInfo", HfApi().repo_info(self.repo_id, repo_type="dataset", revision=self.revision))
        except Exception as exc:  # 401/403/404: one line naming the repo, the revision and the fix
            refused = hub_refusal(exc, self.repo_id, self.revision)
            if refused is not None:
                raise refused from exc
            raise
        files = frozenset(s.rfilename for s in (info.siblings or []))
        return _Listing("hub", f"hub:{self.repo_id}@{info.sha}", info.sha, files)

    @property
    def root(self) -> str:
        return self.listing().root

    # ----------------------------------------------------------------- lookup
    def candidates(self, rel: str) -> list[str]:
        """The repo paths tried for ``rel``, in order: as given (``./`` and the ``strip_prefixes``, e.g.
        MAC's ``MAC_Bench/``, removed from its start), then each rewrite."""
        given = rel.strip().lstrip("/")
        changed = True
        while changed:
            changed = False
            for prefix in ("./", *self.strip_prefixes):
                if given.startswith(prefix):
                    given, changed = given[len(prefix) :], True
        out = [given]
        for old, new in self.rewrites:
            if old in given:
                out.append(given.replace(old, new))
        return list(dict.fromkeys(out))

    def locate(self, rel: str) -> Located:
        """Find ``rel`` in the listing (no download). Raises :class:`RepoFileError`."""
        with self._lock:
            hit = self._located.get(rel)
        if hit is not None:
            return hit
        lst = self.listing()
        tried = self.candidates(rel)
        found = None
        for i, cand in enumerate(tried):
            if cand in lst.files:
                found = Located(rel, cand, "given" if i == 0 else "rewritten")
                break
        if found is None:
            names = list(dict.fromkeys(c.rsplit("/", 1)[-1] for c in tried))
            hits = [p for n in names for p in lst.by_basename.get(n, ())]
            tried = tried + [f"*/{n}" for n in names]
            if len(set(hits)) == 1:
                found = Located(rel, hits[0], "basename")
            elif len(set(hits)) > 1:
                raise RepoFileError(rel, tried, lst.root, f"not found; its basename matches {len(set(hits))} files ({', '.join(sorted(set(hits))[:3])})")
        if found is None:
            raise RepoFileError(rel, tried, lst.root)
        if found.how != "given":
            self._note_fallback(found)
        if lst.source != "hub":
            found.local = os.path.join(lst.root, *found.repo_path.split("/"))
        with self._lock:
            return self._located.setdefault(rel, found)

    def _note_fallback(self, found: Located) -> None:
        with self._lock:
            self._fallbacks[found.how] += 1
            first = found.how not in self._logged
            self._logged.add(found.how)
        if first:
            logger.warning(
                "lmms_eval_earthsci: %s: %r is not in the repo; found as %r (%s fallback; counted in the task's "
                "metadata, logged once)", self.repo_id, found.rel, found.repo_path, found.how,
            )

    # ----------------------------------------------------------------- fetch
    def fetch(self, rels: Iterable[str]) -> dict[str, Located | RepoFileError]:
        """Locate and (Hub) download every path in ``rels``, each distinct one once, in parallel, under
        the machine-wide lock. Returns ``{rel: Located (with .local) | RepoFileError}``; never raises for
        a single file."""
        out: dict[str, Located | RepoFileError] = {}
        todo: list[Located] = []
        for rel in dict.fromkeys(rels):
            try:
                loc = self.locate(rel)
            except RepoFileError as exc:
                out[rel] = exc
                continue
            out[rel] = loc
            if loc.local is None:
                todo.append(loc)
        if todo:
            lst = self.listing()
            with _machine_lock(f"{self.repo_id}@{lst.revision}"):
                with ThreadPoolExecutor(max_workers=FETCH_WORKERS) as pool:
                    for loc, result in zip(todo, pool.map(self._download, todo)):
                        if isinstance(result, Exception):
                            refused = hub_refusal(result, self.repo_id, lst.revision)
                            why = str(refused) if refused is not None else f"download failed ({type(result).__name__}: {result})"
                            out[loc.rel] = RepoFileError(loc.rel, [loc.repo_path], lst.root, why)
                self._record_ref(lst.revision)
        return out

    def _record_ref(self, commit: str | None) -> None:
        """Files are downloaded at the resolved commit, which records no branch in the Hub cache; write
        ``refs/<branch>`` (the cache's documented layout) so that an offline run finds the snapshot."""
        from huggingface_hub import constants  # noqa: PLC0415 - huggingface_hub, only when fetching from the Hub

        branch = self.revision or "main"
        if not commit or re.fullmatch(r"[0-9a-f]{40}", branch):
            return
        try:
            folder = os.path.join(constants.HF_HUB_CACHE, "datasets--" + self.repo_id.replace("/", "--"), "refs")
            os.makedirs(os.path.dirname(os.path.join(folder, branch)), exist_ok=True)
            with open(os.path.join(folder, branch), "w") as f:
                f.write(commit)
        except OSError:  # an offline run will say the snapshot is not cached; nothing else depends on it
            logger.debug("lmms_eval_earthsci: could not record %s@%s in the Hub cache", self.repo_id, branch, exc_info=True)

    def _download(self, loc: Located) -> str | Exception:
        from huggingface_hub import hf_hub_download  # noqa: PLC0415 - huggingface_hub, only when fetching from the Hub

        try:
            path = hf_hub_download(self.repo_id, loc.repo_path, repo_type="dataset", revision=self.listing().revision)
        except Exception as exc:  # reported per file by fetch()
            return exc
        with self._lock:
            loc.local = path
        return path

    def path(self, rel: str) -> str:
        """The local file for ``rel`` (fetched if needed). Raises :class:`RepoFileError`."""
        loc = self.locate(rel)
        if loc.local is None:
            got = self.fetch([rel])[rel]
            if isinstance(got, RepoFileError):
                raise got
            loc = got
        return loc.local  # type: ignore[return-value]

    def summary(self) -> dict:
        """What was served, for the task's ``metadata.earthsci_data``: source, root, revision, and how
        many paths needed each fallback."""
        lst = self.listing()
        with self._lock:
            return {"source": lst.source, "root": lst.root, "revision": lst.revision, "files_located": len(self._located), "fallbacks": dict(self._fallbacks)}


def fetch_columns(store: RepoFiles, dataset: Any, columns: Sequence[str]) -> None:
    """Fetch at once every file the rows name in ``columns`` (a ``datasets.Dataset`` or a list of rows)."""
    table = hasattr(dataset, "column_names")
    paths = [p for c in columns for p in (dataset[c] if table else [r.get(c) for r in dataset])]
    store.fetch(p for p in paths if isinstance(p, str) and p.strip())


def record_path(store: RepoFiles, doc: Mapping[str, Any], field: str, *, dataset: str, record_id: str, what: str) -> str:
    """The local file of the repo path in ``doc[field]``, or one ``RecordError`` naming the record, the
    field, the paths tried and the root (``what``: "figure", "image")."""
    rel = doc.get(field)
    if not isinstance(rel, str) or not rel.strip():
        raise RecordError(dataset, record_id, field, f"expected a path in the dataset repo, got {rel!r:.60}")
    try:
        return store.path(rel)
    except RepoFileError as exc:
        raise RecordError(dataset, record_id, field, f"{what} {exc}") from exc


def record_image(store: RepoFiles, cache: DecodedCache, doc: Mapping[str, Any], field: str, *, dataset: str, record_id: str, what: str, max_pixels: int | None = None, max_side: int | None = None) -> Image.Image:
    """The decoded image of ``doc[field]`` (:func:`record_path`, then ``cache``); a file that cannot be
    decoded is one ``RecordError`` naming the record, the field and the file."""
    path = record_path(store, doc, field, dataset=dataset, record_id=record_id, what=what)
    try:
        return cache.get(path, max_pixels, max_side)
    except (OSError, ValueError) as exc:
        raise RecordError(dataset, record_id, field, f"{what} {path} cannot be decoded ({exc})") from exc


def repo_files(repo_id: str, revision: str | None = None, rewrites: Sequence[tuple[str, str]] = (), strip_prefixes: Sequence[str] = ()) -> RepoFiles:
    """The process-wide :class:`RepoFiles` for this repo, revision and mirror setting."""
    key = (repo_id, revision, tuple(rewrites), tuple(strip_prefixes), mirror_root(), os.environ.get("HF_ENDPOINT"))
    return current().resource(("repo files", key), lambda: RepoFiles(repo_id, revision, rewrites, strip_prefixes))


# --------------------------------------------------------------------------- decoding


class DecodedCache:
    """A small LRU of decoded images keyed by (file, its size and mtime, max_pixels). Rows that show the
    same figure (MuSciClaims' SUPPORT and CONTRADICT variants) decode it once while it stays in the
    cache; ``maxsize`` bounds memory (a 300 ppi figure is ~30-100 MB decoded)."""
    def __init__(self, maxsize: int = 4):
        self.maxsize = maxsize
        self._items: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, path: str, max_pixels: int | None = None, max_side: int | None = None) -> Image.Image:
        if reading_sizes():  # the size the decode below would give, from the file's header
            return cast("Image.Image", FigureSize(decoded_size(path, max_pixels, max_side)))
        st = os.stat(path)
        key = (path, st.st_size, st.st_mtime_ns, max_pixels, max_side)
        with self._lock:
            img = self._items.get(key)
            if img is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return img
            self.misses += 1
        img = decode_image(path, max_pixels, max_side)
        if self.maxsize > 0:
            with self._lock:
                self._items[key] = img
                while len(self._items) > self.maxsize:
                    self._items.popitem(last=False)
        return img


def decode_image(path: str, max_pixels: int | None = None, max_side: int | None = None) -> Image.Image:
    """An RGB PIL image from ``path``; with ``max_pixels``, downscaled (aspect kept, bicubic as VLM
    processors resize) so that width x height <= max_pixels; with ``max_side``, so that it fits in a
    ``max_side`` square (what OpenAI's ``detail: low`` does at 512). No copy is made of an RGB image that needs
    no resize; a JPEG is decoded at a reduced scale when the cap allows (``draft``) and larger
    reductions go through a fast integer box reduce first (``reducing_gap``). Raises OSError/ValueError
    from PIL for an unreadable file."""
    from PIL import Image  # noqa: PLC0415 - PIL, only when a file is decoded: the tasks' import stays cheap

    im: Image.Image = Image.open(path)
    try:
        scale = _scale(im.size, max_pixels, max_side)
        if scale < 1.0:
            size = (max(1, int(im.width * scale)), max(1, int(im.height * scale)))
            im.draft("RGB", size)
            im.load()
            if im.mode not in ("RGB", "L"):
                im = im.convert("RGB")
            if im.size != size:
                im = im.resize(size, Image.BICUBIC, reducing_gap=3.0)  # type: ignore[attr-defined]  # PIL.Image sets its Resampling members as module attributes at runtime (setattr), unseen by its annotations
        else:
            im.load()
        return im if im.mode == "RGB" else im.convert("RGB")
    finally:
        fp = getattr(im, "fp", None)
        if fp is not None and getattr(im, "_exclusive_fp", False):
            fp.close()


def _scale(size: tuple[int, int], max_pixels: int | None, max_side: int | None) -> float:
    """The factor :func:`decode_image` scales an image of ``size`` by (1.0: kept)."""
    width, height = size
    scale = 1.0
    if max_pixels and width * height > max_pixels:
        scale = (max_pixels / (width * height)) ** 0.5
    if max_side and max(size) > max_side:
        scale = min(scale, max_side / max(size))
    return scale


def decoded_size(path: str, max_pixels: int | None = None, max_side: int | None = None) -> tuple[int, int]:
    """The size :func:`decode_image` gives ``path``, read from its header."""
    from PIL import Image  # noqa: PLC0415 - as in decode_image

    with Image.open(path) as im:
        scale = _scale(im.size, max_pixels, max_side)
        return (max(1, int(im.width * scale)), max(1, int(im.height * scale))) if scale < 1.0 else im.size
