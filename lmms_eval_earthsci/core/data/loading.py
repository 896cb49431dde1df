"""Dataset resolution (Hub or local mirror), record validation and image decoding.

Every task loads its data from the Hugging Face Hub exactly as the benchmark's authors publish it, at a
pinned revision (``dataset_kwargs.revision`` in the task YAML). For air-gapped clusters one variable,
``EARTHSCI_DATA_MIRROR``, points at a local folder holding copies of those repos in the Hub's own file
layout (``$EARTHSCI_DATA_MIRROR/<org>/<name>/...``, e.g. made with ``hf download --repo-type
dataset``). Any task whose ``dataset_path`` has a copy there loads it from disk, through the same
``datasets.load_dataset`` call as the Hub path.

Local data is never served stale: when a task loads from a local folder (the mirror, or a
``dataset_path`` that is a directory), the ``datasets`` cache it builds is keyed by that folder's path
and its files' names, sizes and modification times (:func:`fingerprint`), so an edited, added or
truncated file gives a fresh build, never the copy cached from an earlier run. Each task records what it
loaded (source, path or revision, fingerprint, rows per split) in its config's ``metadata.earthsci_data``,
which lmms-eval writes into the results JSON.

A missing or malformed record or image raises :class:`RecordError`, one message naming the dataset,
the record id and the field. Every record of a task is checked when its dataset is loaded, before any
inference (:func:`..adapter.task_data.validate_task`, with the benchmark's check attached to its ``process_results`` by
:func:`record_check`): all problems are reported at once, and the run stops before the model is
called. ``EARTHSCI_BAD_RECORDS=skip`` excludes the invalid records instead, each counted and listed in
the task's ``metadata.earthsci_data.bad_records`` (results JSON) and in the log.

Nothing is copied or decoded twice: our tasks' image columns are read undecoded (:func:`undecoded`, the
same Arrow data under other features; nothing written to the datasets cache), our hooks decode each image
a doc needs once (:func:`load_image`), and the record check reads image headers from the memory-mapped
table in place (:func:`record_rows`). ``benchmarks/hook_cost.py`` measures it against the floor.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lmms_eval_earthsci.core.data import hub
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.settings import is_cli_run, read_setting

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger("lmms_eval_earthsci")

__all__ = [  # what ``lmms_eval_earthsci.core.data`` re-exports (it was this module)
    "BAD_RECORDS_ENV",
    "BadRecordsError",
    "DataRouteError",
    "HubRefusedError",
    "LISTED_BAD_RECORDS",
    "MIRROR_ENV",
    "MirrorError",
    "NoDataRouteError",
    "RecordError",
    "STORED_BYTES_ATTR",
    "check_image",
    "data_route",
    "declare_datasets",
    "doc_key",
    "ensure_hub_route",
    "fingerprint",
    "hub_refusal",
    "is_image_column",
    "is_media",
    "load_image",
    "mirror_env",
    "mirror_path",
    "mirror_root",
    "prepare_load",
    "record_check",
    "record_problems",
    "sizes_only",
    "record_rows",
    "recorded_mirror",
    "recorded_revision",
    "remember",
    "require",
    "require_columns",
    "resolve_dataset",
    "stored_bytes",
    "undecoded",
]

MIRROR_ENV = "EARTHSCI_DATA_MIRROR"

# Hub repos our tasks read, declared by each benchmark's task module when it is imported (lmms-eval
# imports it while reading the task's YAML, before any download). With the mirror variable set, a missing
# copy of one of these is an error (falling back to the Hub would hang on an air-gapped node); other
# repos fall back silently.
def declare_datasets(repos: Iterable[str]) -> None:
    """Declare the Hub repos a benchmark's tasks read (the runtime's ``datasets``: their loads go through our
    route checks, a mirror without them says so)."""
    rt = current()
    with rt.lock:
        rt.datasets.update(repos)


BAD_RECORDS_ENV = "EARTHSCI_BAD_RECORDS"
# bad records listed in the results metadata (the count is always exact)
LISTED_BAD_RECORDS = 100

# dataset_kwargs that only make sense for the Hub
_HUB_ONLY_KWARGS = ("revision", "token", "force_download")


class RecordError(ValueError):
    """A dataset record (or its image) is missing or malformed."""
    def __init__(self, dataset: str, record_id: Any, field: str, problem: str):
        self.dataset, self.record_id, self.field, self.problem = dataset, record_id, field, problem
        super().__init__(f"{dataset}: record {record_id!r}, field {field!r}: {problem}")


class MirrorError(FileNotFoundError):
    pass


class BadRecordsError(ValueError):
    """Records of a task's dataset that cannot be scored; raised before inference, listing them all."""

@contextlib.contextmanager
def mirror_env(root: str | None) -> Iterator[None]:
    """``EARTHSCI_DATA_MIRROR`` set to ``root`` for the block (left as it is when ``root`` is None), then
    restored: commands that run a load in this process (check-mirror, rescore) read a chosen mirror."""
    previous = os.environ.get(MIRROR_ENV)
    if root is not None:
        os.environ[MIRROR_ENV] = root
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(MIRROR_ENV, None)
        else:
            os.environ[MIRROR_ENV] = previous


def mirror_root() -> str | None:
    root = read_setting(MIRROR_ENV)
    return os.path.abspath(os.path.expanduser(root)) if root else None


def mirror_path(dataset_path: str | None) -> str | None:
    """The local copy of ``dataset_path`` under the mirror, or None to use ``dataset_path`` as is."""
    root = mirror_root()
    if not root or not dataset_path or os.path.isabs(dataset_path) or "/" not in dataset_path:
        return None
    local = os.path.join(root, *dataset_path.split("/"))
    if os.path.isdir(local):
        return local
    if dataset_path in current().datasets:
        parent = os.path.dirname(root)
        if os.path.isdir(os.path.join(parent, *dataset_path.split("/"))) or _holds_repo_folders(root):
            raise MirrorError(
                f"{MIRROR_ENV}={root} is one level too deep: it holds <name>/ folders of a mirror's <org>/<name>/ layout; "
                f"set {MIRROR_ENV}={parent} (the mirror's root, which holds {dataset_path.split('/')[0]}/)"
            )
        raise MirrorError(
            f"{MIRROR_ENV}={root} is set but holds no copy of {dataset_path!r}: expected the Hub repo's "
            f"files under {local} (on a machine with Hub access: `lmms-eval-earthsci mirror {root}`)"
        )
    return None


def _holds_repo_folders(root: str) -> bool:
    """Whether ``root`` holds, at its top, the ``<name>`` folder of one of our Hub repos (``<org>/<name>``)."""
    return any(os.path.isdir(os.path.join(root, repo.split("/", 1)[1])) for repo in current().datasets if "/" in repo)


def resolve_dataset(dataset_path: str, dataset_kwargs: Mapping[str, Any] | None) -> tuple[str, dict]:
    """(path, kwargs) to hand to ``datasets.load_dataset``: the mirror copy when there is one."""
    kwargs = dict(dataset_kwargs or {})
    local = mirror_path(dataset_path)
    if local is None:
        return dataset_path, kwargs
    for key in _HUB_ONLY_KWARGS:
        kwargs.pop(key, None)
    return local, kwargs


def fingerprint(folder: str) -> dict:
    """Identity of a local dataset folder now: its absolute path and every file's relative name, size and
    modification time (hidden files and folders, e.g. ``.cache/`` of ``hf download``, excluded)."""
    folder = os.path.abspath(folder)
    h = hashlib.sha256(folder.encode("utf-8", "surrogatepass"))
    n = size = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            full = os.path.join(root, name)
            st = os.stat(full)
            h.update(f"\0{os.path.relpath(full, folder)}\0{st.st_size}\0{st.st_mtime_ns}".encode("utf-8", "surrogatepass"))
            n, size = n + 1, size + st.st_size
    return {"fingerprint": h.hexdigest()[:20], "files": n, "bytes": size}


def recorded_revision(folder: str) -> str | None:
    """The commit an ``hf download --local-dir`` copy was made at (from its ``.cache/huggingface/download``
    metadata files), or None when the folder records none (or several)."""
    meta = os.path.join(folder, ".cache", "huggingface", "download")
    commits = set()
    for root, _, files in os.walk(meta):
        for name in files:
            if name.endswith(".metadata"):
                try:
                    with open(os.path.join(root, name)) as f:
                        commits.add(f.readline().strip())
                except OSError:
                    continue
    commits.discard("")
    return commits.pop() if len(commits) == 1 else None


def _datasets_cache() -> str:
    try:
        import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only for its cache folder

        return str(datasets.config.HF_DATASETS_CACHE)
    except Exception:  # pragma: no cover
        return os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "datasets")


def prepare_load(dataset_path: str, dataset_kwargs: Mapping[str, Any] | None) -> tuple[str, dict, dict]:
    """(path, kwargs, record) for ``datasets.load_dataset``: the mirror copy when there is one; for any
    local folder a ``cache_dir`` keyed by its :func:`fingerprint`; ``record`` says what is loaded."""
    path, kwargs = resolve_dataset(dataset_path, dataset_kwargs)
    record: dict = {"dataset_path": dataset_path}
    if os.path.isdir(path):
        fp = fingerprint(path)
        kwargs.setdefault("cache_dir", os.path.join(_datasets_cache(), "earthsci_local", fp["fingerprint"]))
        record.update(source="mirror" if path != dataset_path else "local", path=path, revision=recorded_revision(path), **fp)
    else:
        record.update(source="hub", revision=kwargs.get("revision"))
    return path, kwargs, record


def recorded_mirror(data: Mapping[str, Any]) -> tuple[str | None, str]:
    """(the local mirror a run read every task of ours from, if it is still there and unchanged; why
    not otherwise). ``data``: ``{task: its metadata.earthsci_data}`` as the run recorded what it loaded
    (source, path, fingerprint)."""
    records = [r for r in data.values() if isinstance(r, dict)]
    mirrored = [r for r in records if r.get("source") == "mirror" and r.get("path") and r.get("dataset_path")]
    if not records or len(mirrored) != len(records):
        return None, "the run did not read all its data from a local mirror"
    roots = set()
    for r in mirrored:
        suffix = os.path.join(*str(r["dataset_path"]).split("/"))
        path = os.path.normpath(str(r["path"]))
        if not path.endswith(os.sep + suffix):
            return None, f"the run's record of {r['dataset_path']} names no mirror root ({path})"
        roots.add(path[: -len(suffix) - 1])
    if len(roots) != 1:
        return None, f"the run read its data from several mirrors ({', '.join(sorted(roots))})"
    root = roots.pop()
    for r in mirrored:
        if not os.path.isdir(r["path"]):
            return None, f"the run's mirror {root} no longer holds {r['dataset_path']}"
        if r.get("fingerprint") and fingerprint(r["path"])["fingerprint"] != r["fingerprint"]:
            return None, f"the run's copy of {r['dataset_path']} in {root} changed since the run (its files' names, sizes or times)"
    return root, ""


class DataRouteError(RuntimeError):
    """The data a run used cannot be read here; the message says which variable to set."""


def data_route(data: Mapping[str, Any]) -> dict:
    """Where to read again the data a run read (``data``: ``{task: its metadata.earthsci_data}``; for
    ``rescore`` and the report's figures): ``EARTHSCI_DATA_MIRROR`` when set; else the mirror the run
    recorded, when it is still there and unchanged; else the Hub, unless it cannot be reached (then a
    one-line :class:`DataRouteError` naming the variable to set, in seconds, instead of Hub retries)."""
    if read_setting(MIRROR_ENV):
        return {"route": "environment", MIRROR_ENV: read_setting(MIRROR_ENV)}
    root, why = recorded_mirror(data)
    if root:
        return {"route": "the run's mirror", MIRROR_ENV: root}
    hub_state, seen = hub.state()
    if hub_state == "offline":
        return {"route": "hub cache (HF_HUB_OFFLINE)", "why_not_the_runs_mirror": why}
    if hub_state != "up":
        repos = sorted({str(r.get("dataset_path")) for r in data.values() if isinstance(r, dict) and r.get("dataset_path")})
        holding = ", ".join(repos) or "the tasks' datasets"
        raise DataRouteError(f"the Hugging Face Hub is {hub_state} ({seen}) and {why}: set {MIRROR_ENV} to a mirror holding {holding} (or HF_HUB_OFFLINE=1 to read the Hub cache)")
    return {"route": "hub", "why_not_the_runs_mirror": why}


class NoDataRouteError(SystemExit):
    """A task's data can be read from nowhere (no mirror, the Hub unreachable or offline, no cache): one
    line naming the dataset and the fix, exit status 2. A ``SystemExit`` because lmms-eval swallows
    exceptions (and exits 0) unless ``--verbosity DEBUG``."""

    def __init__(self, line: str):
        super().__init__(2)
        self.line = line
        self.on_stderr = False

    def __str__(self) -> str:
        return self.line

    def say(self) -> None:
        """The line on stderr, once."""
        if not self.on_stderr:
            self.on_stderr = True
            print(self.line, file=sys.stderr, flush=True)

    @classmethod
    def said(cls, line: str) -> NoDataRouteError:
        """The error, its line said on stderr now unless lmms-eval's task loader will deal with it: in an
        lmms-eval CLI run with our loader wrap (``adapter.task_manager.leave_out_what_cannot_load``), which leaves
        a task of ours out and says why (:mod:`..upstream.ledger`), or says the line of any other task."""
        err = cls(line)
        if not (current().loader_leaves_out and is_cli_run()):
            err.say()
        return err


def ensure_hub_route(repo: str, revision: str | None) -> None:
    """Before ``datasets`` spends minutes on Hub retries: is there a way to ``repo``? The Hub answers
    (:func:`hub.state`, a TCP probe of a few seconds, once per process), or the dataset is cached. Else
    one line on stderr and :class:`NoDataRouteError`. A cached dataset behind an unreachable Hub runs
    (``datasets`` falls back to its cache after its retries), with a line saying HF_HUB_OFFLINE=1 skips them."""
    state, seen = hub.state()
    if state == "up":
        return
    where = hub.dataset_cached(repo, revision)
    if where is not None:
        if state != "offline" and current().first_time(f"read from the cache: {repo}"):
            print(f"lmms-eval-earthsci: the Hugging Face Hub is {state} ({seen}); {repo} is read from the cache {where} after datasets' Hub retries: HF_HUB_OFFLINE=1 skips them", file=sys.stderr, flush=True)
        return
    at = f" at {revision[:12]}" if revision else ""
    why = "HF_HUB_OFFLINE is set and neither the Hub cache nor datasets' cache holds it" if state == "offline" else f"the Hugging Face Hub is {state} ({seen}) and no cache here holds it"
    line = (
        f"lmms-eval-earthsci: {repo}{at} cannot be read: {why}. On a machine with the Hub run `lmms-eval-earthsci mirror DIR`, "
        f"then here `export {MIRROR_ENV}=DIR` (or HF_HUB_OFFLINE=1 with that machine's Hugging Face cache copied here)"
    )
    if current().data_only:  # a command reading what a finished run read (report's figures): an error it reports in place
        raise DataRouteError(line[len("lmms-eval-earthsci: ") :])
    raise NoDataRouteError.said(line)


class HubRefusedError(RuntimeError):
    """The Hub refused a file of a task's dataset (401, 403, 404); the message names the repo, the file,
    the revision and the likely fix, in one line."""


_HUB_FIXES = MappingProxyType({
    401: "the repo needs a token (gated or private): set HF_TOKEN (or run `hf auth login`), or use a local mirror (EARTHSCI_DATA_MIRROR)",
    403: "the token may not read it: accept the dataset's terms on its Hub page with the account of HF_TOKEN, or check the token's scope; or use a local mirror (EARTHSCI_DATA_MIRROR)",
    404: "no such file at that revision: check the pin (dataset_kwargs.revision in the task YAML) against the repo, or use a local mirror (EARTHSCI_DATA_MIRROR)",
})


_NO_REPO_FIX = "no such repo or revision: check the repo name and the pin (dataset_kwargs.revision in the task YAML), or use a local mirror (EARTHSCI_DATA_MIRROR)"


def hub_refusal(exc: BaseException | None, repo: str | None, revision: str | None) -> HubRefusedError | None:
    """A one-line :class:`HubRefusedError` for a 401/403/404 the Hub answered while ``datasets`` loaded
    ``repo`` (found anywhere in the exception's chain: ``datasets`` re-raises it as a bare
    ``FileNotFoundError("404 Client Error.")``), or None for any other error."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int) and status in _HUB_FIXES:
            url = str(getattr(response, "url", "") or getattr(getattr(response, "request", None), "url", "") or "")
            file, rev = None, revision
            if "/resolve/" in url:
                rev_and_file = url.split("/resolve/", 1)[1].split("?", 1)[0]
                rev, _, file = (unquote(x) for x in rev_and_file.partition("/"))
            where = f"{repo}" + (f" file {file}" if file else "") + f" at revision {rev or 'main'}"
            fix = _HUB_FIXES[status] if file or status != 404 else _NO_REPO_FIX
            return HubRefusedError(f"the Hugging Face Hub answered {status} for {where} ({url}): {fix}")
        exc = exc.__cause__ or exc.__context__
    return None


def require(record: Mapping[str, Any], field: str, *, dataset: str, record_id: Any, types: type | tuple = object, allow_none: bool = False) -> Any:
    """``record[field]``, or a :class:`RecordError` that says exactly what is wrong."""
    if field not in record:
        raise RecordError(dataset, record_id, field, "missing")
    value = record[field]
    if value is None:
        if allow_none:
            return None
        raise RecordError(dataset, record_id, field, "is None")
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise RecordError(dataset, record_id, field, f"expected {names}, got {type(value).__name__}")
    return value


def require_columns(table: Any, columns: Iterable[str], *, dataset: str, where: str = "the dataset") -> None:
    """Every name in ``columns`` is a column of ``table`` (a ``datasets.Dataset``; other iterables are not
    checked): else one :class:`RecordError` naming the missing ones and the columns there are."""
    names = getattr(table, "column_names", None)
    if names is None:
        return
    missing = [c for c in columns if c not in names]
    if missing:
        raise RecordError(dataset, "*", ", ".join(missing), f"column(s) missing from {where} (columns: {', '.join(names)})")


def load_image(value: Any, *, dataset: str, record_id: Any, field: str) -> Image.Image:
    """Decode an image cell as ``datasets`` may hand it over: a PIL image, a ``{"bytes", "path"}``
    struct (undecoded parquet), raw bytes, or a file path. Returns an RGB PIL image (decoded from bytes:
    noting them, for a server route to send as they are: :mod:`..hardening.passthrough`)."""
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415 - PIL, only when an image is decoded: the tasks' import stays cheap

    if value is None:
        raise RecordError(dataset, record_id, field, "image is missing (None)")
    try:
        if isinstance(value, Image.Image):
            img = value
        elif isinstance(value, Mapping):
            if value.get("bytes"):
                img = remember(Image.open(io.BytesIO(value["bytes"])), value["bytes"])
            elif value.get("path"):
                img = Image.open(value["path"])
            else:
                raise RecordError(dataset, record_id, field, "image struct has neither bytes nor path")
        elif isinstance(value, (bytes, bytearray)):
            img = remember(Image.open(io.BytesIO(value)), value)
        elif isinstance(value, (str, os.PathLike)):
            img = Image.open(value)
        else:
            raise RecordError(dataset, record_id, field, f"not an image ({type(value).__name__})")
        return img if img.mode == "RGB" or reading_sizes() else img.convert("RGB")
    except RecordError:
        raise
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise RecordError(dataset, record_id, field, f"image cannot be decoded ({exc})") from exc


# --------------------------------------------------------------------------- figure sizes without decoding

@contextlib.contextmanager
def sizes_only() -> Iterator[None]:
    """Inside the block our image loaders decode nothing: :func:`load_image` returns the image as PIL opened
    it (its header read, its pixels not), and a file our repo-file loader would decode and downscale is
    a :class:`FigureSize` of the size it would have. A task's ``doc_to_visual`` then says the size of every
    figure a doc sends at the cost of reading headers (the layout probe's figure statistics)."""
    thread = current().thread
    before = getattr(thread, "sizes_only", False)
    thread.sizes_only = True
    try:
        yield
    finally:
        thread.sizes_only = before


def reading_sizes() -> bool:
    """Whether this thread is inside :func:`sizes_only`."""
    return bool(getattr(current().thread, "sizes_only", False))


class FigureSize:
    """A figure's size where its pixels were not decoded (:func:`sizes_only`): ``size``, ``width``, ``height``."""

    mode = "RGB"

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = (int(size[0]), int(size[1]))

    @property
    def width(self) -> int:
        return self.size[0]

    @property
    def height(self) -> int:
        return self.size[1]


# --------------------------------------------------------------------------- record validation


def record_check(check: Any, prepare: Callable[[Any, Mapping[str, Any]], Any] | None = None, describe: Callable[[dict], Any] | None = None) -> Callable[[Any], Any]:
    """Decorator for a benchmark's ``process_results``: ``check(doc, kwargs)`` raises :class:`RecordError`
    for a record that cannot be prompted or scored (``kwargs``: the task's default
    ``lmms_eval_specific_kwargs``). :func:`..adapter.task_data.validate_task` runs it on every record at load time, so that
    ``process_results`` never meets such a record.

    ``prepare(dataset, kwargs)``, when given, runs once over the whole split before the records are
    checked (e.g. fetch every file the rows name, in parallel, once); ``describe(kwargs)`` returns what
    it served, recorded in the task's ``metadata.earthsci_data.repo_files``."""
    if prepare is not None:
        check.prepare = prepare
    if describe is not None:
        check.describe = describe

    def deco(fn: Any) -> Any:
        fn.record_check = check
        return fn

    return deco


def check_image(value: Any, *, dataset: str, record_id: Any, field: str) -> None:
    """The image cell can be decoded: its header is read (no full decode). Accepts what
    :func:`load_image` accepts, undecoded ``{"bytes", "path"}`` structs included."""
    image_size(value, dataset=dataset, record_id=record_id, field=field)


def image_size(value: Any, *, dataset: str, record_id: Any, field: str) -> tuple[int, int]:
    """(width, height) of an image cell from its header alone, its bytes read in place (an Arrow buffer of
    :func:`record_rows` is not copied); a :class:`RecordError` naming the field when it cannot be read."""
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415 - PIL, only when an image is checked: the tasks' import stays cheap

    if value is None:
        raise RecordError(dataset, record_id, field, "image is missing (None)")
    if isinstance(value, Image.Image):
        return value.size

    def header(source: Any) -> tuple[int, int]:
        with Image.open(source) as im:
            return im.size

    try:
        if isinstance(value, Mapping):
            if value.get("bytes"):
                return header(_reader(value["bytes"]))
            if value.get("path"):
                return header(value["path"])
            raise RecordError(dataset, record_id, field, "image struct has neither bytes nor path")
        if isinstance(value, (bytes, bytearray)):
            return header(io.BytesIO(value))
        if isinstance(value, (str, os.PathLike)):
            return header(value)
        raise RecordError(dataset, record_id, field, f"not an image ({type(value).__name__})")
    except RecordError:
        raise
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise RecordError(dataset, record_id, field, f"image cannot be decoded ({exc})") from exc


def _undecoded_feature(feature: Any, datasets: Any) -> Any:
    """``feature`` with its images undecoded (an image, or a list of them), or ``feature`` itself."""
    if isinstance(feature, datasets.Image):
        return feature if not feature.decode else datasets.Image(decode=False)
    inner = getattr(feature, "feature", None)
    if isinstance(inner, datasets.Image) and inner.decode:
        length = getattr(feature, "length", -1)
        return type(feature)(datasets.Image(decode=False), length=length) if length not in (None, -1) else type(feature)(datasets.Image(decode=False))
    return feature


def _reader(data: Any) -> Any:
    """A file object over image bytes: a zero-copy reader for an Arrow buffer (:func:`record_rows`)."""
    if isinstance(data, (bytes, bytearray)):
        return io.BytesIO(data)
    import pyarrow as pa  # noqa: PLC0415 - pyarrow (datasets' own dependency), only for Arrow buffers

    return pa.BufferReader(data)


def undecoded(dataset: Any) -> Any:
    """``dataset`` whose image columns (an image, or a list of images) return their stored ``{"bytes",
    "path"}`` instead of PIL images: the same Arrow data under other features, a new dataset object and no
    data written (``datasets``' ``cast_column`` rewrites a whole list-of-images column into its cache, and
    decodes a list's first image twice on every row read)."""
    try:
        import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s); optional here
    except ImportError:  # pragma: no cover
        return dataset
    if not isinstance(dataset, datasets.Dataset):
        return dataset
    swaps = {name: new for name, feat in dataset.features.items() if (new := _undecoded_feature(feat, datasets)) is not feat}
    if not swaps:
        return dataset
    out = copy.deepcopy(dataset)  # the object, not the (memory-mapped) table: as datasets' own cast_column does
    for name, feature in swaps.items():
        out._info.features[name] = feature
    return out


def _image_cells(column: Any) -> list[Any]:
    """An Arrow column of image structs as ``{"bytes", "path"}`` cells whose bytes are zero-copy Arrow
    buffers (:func:`check_image` reads their headers only); a list column gives lists of such cells."""
    import pyarrow as pa  # noqa: PLC0415 - pyarrow (datasets' own dependency), only when records are checked

    if pa.types.is_struct(column.type):
        raw, paths = column.field("bytes"), column.field("path").to_pylist()
        valid = column.is_valid().to_pylist()
        return [None if not ok else {"bytes": raw[i].as_buffer() if raw[i].is_valid else None, "path": paths[i]} for i, ok in enumerate(valid)]
    offsets, valid = column.offsets.to_pylist(), column.is_valid().to_pylist()
    inner = _image_cells(column.flatten())
    base = offsets[0]
    return [inner[offsets[i] - base : offsets[i + 1] - base] if ok else None for i, ok in enumerate(valid)]


def is_image_column(feature: Any, datasets: Any) -> bool:
    """An ``Image`` feature, or a list of them (SciFIBench's ``Images``)."""
    return isinstance(feature, datasets.Image) or isinstance(getattr(feature, "feature", None), datasets.Image)


def record_rows(dataset: Any, batch_size: int = 64) -> Iterator[Mapping[str, Any]]:
    """The rows of ``dataset`` as the record checks read them: every column as ``datasets`` gives it,
    image cells undecoded with their bytes left in the (memory-mapped) Arrow table, so that a header check
    touches a header's pages, not the image's. Any other iterable: its rows."""
    try:
        import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s); optional here
    except ImportError:  # pragma: no cover
        yield from dataset
        return
    if not isinstance(dataset, datasets.Dataset) or getattr(dataset, "_indices", None) is not None:
        yield from undecoded(dataset)
        return
    images = {name for name, feat in dataset.features.items() if is_image_column(feat, datasets)}
    for batch in dataset.data.table.to_batches(max_chunksize=batch_size):
        columns = {name: (_image_cells(batch.column(name)) if name in images else batch.column(name).to_pylist()) for name in batch.schema.names}
        for i in range(batch.num_rows):
            yield {name: values[i] for name, values in columns.items()}


def record_problems(dataset: Any, check: Any, kwargs: Mapping[str, Any]) -> list[tuple[int, RecordError]]:
    """``[(row, error)]`` of the records ``check`` rejects, read undecoded (image headers only)."""
    out = []
    prepare = getattr(check, "prepare", None)
    if prepare is not None:
        prepare(undecoded(dataset), kwargs)
    for i, row in enumerate(record_rows(dataset)):
        try:
            check(row, kwargs)
        except RecordError as exc:
            out.append((i, exc))
    return out


# --------------------------------------------------------------------------- a doc's identity and an image's stored bytes


def is_media(value: Any) -> bool:
    if isinstance(value, (bytes, bytearray)):
        return True
    if isinstance(value, Mapping) and "bytes" in value:
        return True
    if isinstance(value, (list, tuple)):
        return any(is_media(v) for v in value)
    return type(value).__module__.startswith("PIL.")


def doc_key(doc: Mapping[str, Any]) -> str:
    """Identity of a doc from its non-media, non-null fields (the same with or without the image
    columns, whose empty slots are None in one and absent in the other)."""
    plain = {k: v for k, v in doc.items() if v is not None and not is_media(v)}
    blob = json.dumps(plain, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha1(blob.encode("utf-8", "surrogatepass")).hexdigest()


STORED_BYTES_ATTR = "earthsci_stored"  # on a PIL image our loader decoded: (stored bytes, format, size, mode)


def remember(image: Any, raw: Any) -> Any:
    """Note on ``image`` (as opened from ``raw``, before any change) the bytes it was decoded from."""
    try:
        setattr(image, STORED_BYTES_ATTR, (raw, image.format, image.size, image.mode))
    except AttributeError:  # pragma: no cover - an image class that takes no attributes
        pass
    return image


def stored_bytes(image: Any, image_format: str) -> Any:
    """The stored bytes of ``image`` when it is unchanged since it was decoded from them and they are
    in ``image_format``; else None."""
    stored = getattr(image, STORED_BYTES_ATTR, None)
    if stored is None:
        return None
    raw, fmt, size, mode = stored
    if str(fmt or "").upper() != image_format.upper() or image.size != size or image.mode != mode:
        return None
    return raw
