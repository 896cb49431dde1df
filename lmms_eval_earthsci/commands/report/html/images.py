"""The figures of a run's docs as small JPEG thumbnails in the report folder, made from the data the run
used (the mirror it recorded, the Hub cache, a built MAC snapshot through its ``--include_path``).

Each task is built by lmms-eval as the run built it, and a doc's images are what the task's own
``doc_to_visual`` gives (the order the model saw them). Thumbnails are kept in a per-machine cache
(``$EARTHSCI_CACHE_DIR/thumbs``): a file per thumbnail, named by the hash of its bytes, and a manifest
per *doc set* (task, dataset, split, version and the data's fingerprint or commit: the content the run
read) listing each doc's thumbnails. A second report of the same data reads the manifest and links the
files (a hard link, else a copy): no dataset is loaded, no image decoded. Data whose content cannot be
named (an unpinned Hub revision) is not cached. A doc whose images cannot be had gets the reason, shown
as a placeholder in the page.

**Large copies** (at most LARGE_SIDE px, what the page's overlay shows when a figure is clicked) are made
from the same decode as the thumbnail, for the docs a :class:`LargeBudget` allows: a byte budget for the
report (``report --figure-budget MB``), shared among the tasks by their doc counts (what a task leaves
goes to the tasks started after it), each task's docs asked in the order the caller gives (the docs where runs disagree,
then those some run got wrong, then the rest). A large copy is cached beside its thumbnail, under the
thumbnail's name, in ``large/``.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast

from lmms_eval_earthsci.core.data import data_route, mirror_env, undecoded
from lmms_eval_earthsci.core.settings import cache_dir

if TYPE_CHECKING:
    from PIL import Image

    from lmms_eval_earthsci.commands.report.runs import Run

logger = logging.getLogger("lmms_eval_earthsci")

THUMB_SIDE = 256
LARGE_SIDE = 1024  # what the overlay shows: axis labels of a real figure readable
DEFAULT_FIGURE_BUDGET_MB = 500  # large copies per report (20,000 docs of them would be several GB)
# decoding and thumbnailing threads (Pillow releases the GIL while it decodes: ~2x on 2 cores)
WORKERS = max(1, min(8, os.cpu_count() or 1))
THUMB_VERSION = 1  # bump when the thumbnails change (size, format): every manifest is then new


def _cache_root() -> str:
    return cache_dir("thumbs")


def docset_key(task: str, config: Mapping[str, Any], version: Any) -> str | None:
    """The content a task's docs came from, as a key; None when the data cannot be named (then no cache)."""
    data = ((config or {}).get("metadata") or {}).get("earthsci_data") or {}
    content = data.get("fingerprint") or (data.get("revision") if re.fullmatch(r"[0-9a-f]{40}", str(data.get("revision") or "")) else None)
    if not content:
        return None
    ident = [task, str(config.get("dataset_path")), str(config.get("dataset_name")), str(config.get("test_split")), str(version), content, THUMB_VERSION]
    return hashlib.sha1(json.dumps(ident).encode()).hexdigest()


def thumbnail(image: Any) -> bytes:
    """A JPEG of at most THUMB_SIDE on its longer side (``draft`` lets the JPEG decoder skip pixels)."""
    return copies(image, large=False)[0]


def _jpeg(im: Image.Image, quality: int) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def copies(image: Any, large: bool) -> tuple[bytes, bytes | None]:
    """(thumbnail, large copy or None) of one figure from one decode: a JPEG of at most THUMB_SIDE, and
    with ``large`` one of at most LARGE_SIDE (the thumbnail then made from it)."""
    from PIL import Image  # noqa: PLC0415 - PIL, only when figures are thumbnailed

    if isinstance(image, (str, os.PathLike)):
        image = Image.open(image)
    side = LARGE_SIDE if large else THUMB_SIDE
    if getattr(image, "format", None) == "JPEG":
        image.draft("RGB", (side, side))
    im = image.convert("RGBA") if image.mode in ("P", "LA") else image
    if im.mode == "RGBA":
        bg = Image.new("RGB", im.size, "white")
        bg.paste(im, mask=im.split()[-1])
        im = bg
    elif im.mode != "RGB":
        im = im.convert("RGB")
    big = None
    if large:
        im.thumbnail((LARGE_SIDE, LARGE_SIDE))
        big = _jpeg(im, 85)
    im.thumbnail((THUMB_SIDE, THUMB_SIDE))
    return _jpeg(im, 72), big


class LargeBudget:
    """Bytes left for large copies, shared among tasks by their doc counts: a task starting (:meth:`start`)
    gets the budget left times its share of the docs left; a doc asks (:meth:`allows`) before its copies
    are made and pays (:meth:`spend`) after, so the budget is overrun by at most the docs in flight."""

    def __init__(self, limit_bytes: int, docs_per_task: Mapping[str, int]):
        self.limit = self.left = max(0, int(limit_bytes))
        self.docs_left = sum(docs_per_task.values())
        self.sizes = dict(docs_per_task)
        self.share: dict[str, int] = {}
        self.used = 0
        self.docs = 0
        self._lock = threading.Lock()

    def start(self, task: str) -> None:
        with self._lock:
            if task in self.share:
                return
            n = self.sizes.get(task, 0)
            self.share[task] = self.left * n // self.docs_left if self.docs_left else 0
            self.left -= self.share[task]
            self.docs_left -= n

    def allows(self, task: str) -> bool:
        self.start(task)
        return self.share[task] > 0

    def spend(self, task: str, n: int) -> None:
        with self._lock:
            self.share[task] -= n
            self.used += n
            self.docs += 1

    def finish(self, task: str) -> None:
        """What the task left of its share goes back to the tasks after it."""
        with self._lock:
            if task in self.share and self.share[task] > 0:
                self.left += self.share[task]
                self.share[task] = 0


class ThumbStore:
    """Thumbnails by hash in the machine's cache, linked into one report folder's ``img/``."""

    def __init__(self, out_dir: str, cache: str | None = None):
        self.cache = cache or _cache_root()
        self.out = out_dir
        os.makedirs(os.path.join(self.cache, "manifests"), exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)

    def _cached(self, name: str, large: bool = False) -> str:
        return os.path.join(self.cache, *(("large",) if large else ()), name[:2], name)

    def put(self, data: bytes, name: str | None = None) -> str:
        """A thumbnail into the cache (named by its hash); with ``name``, that thumbnail's large copy."""
        large = name is not None
        name = name or hashlib.sha1(data).hexdigest() + ".jpg"
        path = self._cached(name, large)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        return name

    def link(self, name: str, large: bool = False) -> str:
        """The thumbnail (or its large copy) in the report folder: ``img/<name>`` (``large/<name>``)."""
        dst = os.path.join(self.out if not large else self.large_out, name)
        if not os.path.exists(dst):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            src = self._cached(name, large)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        return name

    @property
    def large_out(self) -> str:
        return os.path.join(os.path.dirname(self.out), "large")

    def large_size(self, names: Iterable[str]) -> int | None:
        """Bytes of the cached large copies of ``names``; None when one is not cached."""
        total = 0
        for n in names:
            try:
                total += os.path.getsize(self._cached(n, large=True))
            except OSError:
                return None
        return total

    def manifest(self, key: str | None) -> dict:
        if key is None:
            return {}
        try:
            with open(os.path.join(self.cache, "manifests", key + ".json")) as f:
                got = json.load(f)
            return got if isinstance(got, dict) else {}
        except (OSError, ValueError):
            return {}

    def save_manifest(self, key: str | None, entries: Mapping[str, list[str]]) -> None:
        if key is None:
            return
        path = os.path.join(self.cache, "manifests", key + ".json")
        merged = {**self.manifest(key), **entries}
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(merged, f)
        os.replace(tmp, path)


def _build_tasks(names: Iterable[str], include_path: str | None) -> dict:
    from lmms_eval_earthsci.core.adapter.task_manager import build_tasks  # noqa: PLC0415 - the adapter pulls in the hooks and the judge (~30 ms); only for figures from the data
    from lmms_eval_earthsci.registration import our_task_dirs  # noqa: PLC0415 - registration pulls in the judge (~30 ms); only for figures from the data

    paths = [p for p in str(include_path or "").split(",") if p]
    return build_tasks(names, [*paths, *(d for d in our_task_dirs() if d not in paths)])


def run_images(run: Run, wanted: Mapping[str, Iterable[str]], store: ThumbStore, budget: LargeBudget | None = None) -> tuple[dict[str, dict[str, list[str] | str]], set[tuple[str, str]]]:
    """``({task: {doc_id: [thumbnail file names] or "why there is none"}}, {(task, doc_id) with large
    copies})`` for the docs ``wanted`` of one run (``{task: doc ids}``, each task's in the order its large
    copies are asked for), from the cache where it has them, else from the run's data."""
    budget = budget or LargeBudget(0, {})
    configs = run.configs
    out: dict[str, dict[str, list[str] | str]] = {}
    large: set[tuple[str, str]] = set()
    missing: dict[str, list[str]] = {}
    keys = {}
    for task, ids in wanted.items():
        key = keys[task] = docset_key(task, configs.get(task) or {}, run.versions.get(task))
        have = store.manifest(key)
        out[task] = {}
        for doc in ids:
            names = have.get(doc)
            if names is None or not all(os.path.exists(store._cached(n)) for n in names):
                missing.setdefault(task, []).append(doc)
                continue
            if names and budget.allows(task):
                size = store.large_size(names)
                if size is None:  # thumbnails cached, large copies not: decode again for them
                    missing.setdefault(task, []).append(doc)
                    continue
                budget.spend(task, size)
                large.add((task, doc))
                for n in names:
                    store.link(n, large=True)
            out[task][doc] = [store.link(n) for n in names]
    for task in wanted:
        if task not in missing:
            budget.finish(task)
    if missing:
        try:
            made: dict[str, dict[str, Any]] = _from_data(run, missing, store, budget)  # its (names, large) tuples are replaced by the names below
        except Exception as exc:  # the data is not here (offline, moved): the page shows why, the report is whole
            why = f"the run's data could not be loaded here ({type(exc).__name__}: {str(exc)[:200]})"
            logger.warning("lmms_eval_earthsci: report: no figures for %s: %s", ", ".join(sorted(missing)), why)
            made = {task: {d: why for d in ids} for task, ids in missing.items()}
            for task in missing:
                budget.finish(task)
        for task, by_doc in made.items():
            for d, v in by_doc.items():
                if isinstance(v, tuple):  # (names, with large copies)
                    v, big = v
                    if big:
                        large.add((task, d))
                        for n in v:
                            store.link(n, large=True)
                    by_doc[d] = v
                out[task][d] = [store.link(n) for n in v] if isinstance(v, list) else v
            store.save_manifest(keys.get(task), {d: v for d, v in by_doc.items() if isinstance(v, list)})
    return out, large


def _from_data(run: Run, missing: Mapping[str, list[str]], store: ThumbStore, budget: LargeBudget) -> dict[str, dict[str, tuple[list[str], bool] | str]]:
    route = data_route({t: ((run.configs.get(t) or {}).get("metadata") or {}).get("earthsci_data") for t in missing})
    out: dict[str, dict[str, tuple[list[str], bool] | str]] = {}
    with mirror_env(route.get("EARTHSCI_DATA_MIRROR")):  # no route: an error per figure (build_tasks reads data only)
        tasks = _build_tasks(missing, run.include_path)
        for task, ids in missing.items():
            obj = tasks.get(task)
            out[task] = {}
            if obj is None:
                out[task] = {d: f"task {task} is not installed here" for d in ids}
                continue
            # stored bytes, not decoded images: a JPEG is then decoded at thumbnail size (draft), and
            # doc_to_visual reads image cells in every form (core.data.load_image)
            docs = undecoded(obj.eval_docs)

            def one(doc: str, obj: Any = obj, docs: Any = docs, task: str = task) -> tuple[list[str], bool] | str:
                try:
                    # the row access and doc_to_visual (repo files, decoding) in the worker: Pillow
                    # releases the GIL while it decodes
                    visuals = obj.doc_to_visual(docs[int(doc)]) or []
                    big = budget.allows(task)
                    made = [copies(v, big) for v in (visuals if isinstance(visuals, list) else [visuals]) if v is not None]
                    names = [store.put(thumb) for thumb, _ in made]
                    if big and names:
                        for n, (_, b) in zip(names, made):
                            store.put(cast(bytes, b), name=n)  # made with large copies
                        budget.spend(task, sum(len(cast(bytes, b)) for _, b in made))
                    return names, big and bool(names)
                except Exception as exc:
                    return f"doc {doc}: its figures could not be read ({type(exc).__name__}: {str(exc)[:160]})"

            with ThreadPoolExecutor(max_workers=WORKERS) as pool:
                out[task] = dict(zip(ids, pool.map(one, ids)))
            budget.finish(task)
    return out
