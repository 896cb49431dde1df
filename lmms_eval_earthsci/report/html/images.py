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
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Mapping

logger = logging.getLogger("lmms_eval_earthsci")

THUMB_SIDE = 256
# decoding and thumbnailing threads (Pillow releases the GIL while it decodes: ~2x on 2 cores)
WORKERS = max(1, min(8, os.cpu_count() or 1))
THUMB_VERSION = 1  # bump when the thumbnails change (size, format): every manifest is then new


def _cache_root() -> str:
    from lmms_eval_earthsci import cache_dir

    return cache_dir("thumbs")


def docset_key(task: str, config: Mapping[str, Any], version: Any) -> str | None:
    """The content a task's docs came from, as a key; None when the data cannot be named (then no cache)."""
    data = ((config or {}).get("metadata") or {}).get("earthsci_data") or {}
    content = data.get("fingerprint") or (data.get("revision") if re.fullmatch(r"[0-9a-f]{40}", str(data.get("revision") or "")) else None)
    if not content:
        return None
    ident = [task, str(config.get("dataset_path")), str(config.get("dataset_name")), str(config.get("test_split")), str(version), content, THUMB_VERSION]
    return hashlib.sha1(json.dumps(ident).encode()).hexdigest()


def thumbnail(image) -> bytes:
    """A JPEG of at most THUMB_SIDE on its longer side (``draft`` lets the JPEG decoder skip pixels)."""
    from PIL import Image

    if isinstance(image, (str, os.PathLike)):
        image = Image.open(image)
    if getattr(image, "format", None) == "JPEG":
        image.draft("RGB", (THUMB_SIDE, THUMB_SIDE))
    im = image.convert("RGBA") if image.mode in ("P", "LA") else image
    if im.mode == "RGBA":
        bg = Image.new("RGB", im.size, "white")
        bg.paste(im, mask=im.split()[-1])
        im = bg
    elif im.mode != "RGB":
        im = im.convert("RGB")
    im.thumbnail((THUMB_SIDE, THUMB_SIDE))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=72)
    return buf.getvalue()


class ThumbStore:
    """Thumbnails by hash in the machine's cache, linked into one report folder's ``img/``."""

    def __init__(self, out_dir: str, cache: str | None = None):
        self.cache = cache or _cache_root()
        self.out = out_dir
        os.makedirs(os.path.join(self.cache, "manifests"), exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)

    def put(self, data: bytes) -> str:
        name = hashlib.sha1(data).hexdigest() + ".jpg"
        path = os.path.join(self.cache, name[:2], name)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        return name

    def link(self, name: str) -> str:
        """The thumbnail in the report folder (relative to it): ``img/<name>``."""
        dst = os.path.join(self.out, name)
        if not os.path.exists(dst):
            src = os.path.join(self.cache, name[:2], name)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        return name

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


def _leaf_tasks(task_dict) -> dict:
    out = {}
    for key, value in task_dict.items():
        if isinstance(value, dict):
            out.update(_leaf_tasks(value))
        elif value is not None and hasattr(value, "doc_to_visual"):
            name = getattr(getattr(value, "config", None), "task", None) or str(key)
            out[name] = value
    return out


def _build_tasks(names: Iterable[str], include_path: str | None) -> dict:
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_eval_earthsci.registration import with_our_tasks

    tm = TaskManager(include_path=with_our_tasks([p for p in str(include_path or "").split(",") if p]))
    return _leaf_tasks(get_task_dict(sorted(names), tm))


def run_images(run, wanted: Mapping[str, Iterable[str]], store: ThumbStore) -> dict[str, dict[str, list[str] | str]]:
    """``{task: {doc_id: [thumbnail file names] or "why there is none"}}`` for the docs ``wanted`` of one
    run (``{task: doc ids}``), from the cache where it has them, else from the run's data."""
    configs = run.configs
    out: dict[str, dict[str, list[str] | str]] = {}
    missing: dict[str, list[str]] = {}
    keys = {}
    for task, ids in wanted.items():
        key = keys[task] = docset_key(task, configs.get(task) or {}, run.versions.get(task))
        have = store.manifest(key)
        out[task] = {}
        for doc in ids:
            if doc in have and all(os.path.exists(os.path.join(store.cache, n[:2], n)) for n in have[doc]):
                out[task][doc] = [store.link(n) for n in have[doc]]
            else:
                missing.setdefault(task, []).append(doc)
    if not missing:
        return out
    try:
        made = _from_data(run, missing, store)
    except Exception as exc:  # the data is not here (offline, moved): the page shows why, the report is whole
        why = f"the run's data could not be loaded here ({type(exc).__name__}: {str(exc)[:200]})"
        logger.warning("lmms_eval_earthsci: report: no figures for %s: %s", ", ".join(sorted(missing)), why)
        for task, ids in missing.items():
            out[task].update({d: why for d in ids})
        return out
    for task, by_doc in made.items():
        out[task].update({d: ([store.link(n) for n in v] if isinstance(v, list) else v) for d, v in by_doc.items()})
        store.save_manifest(keys.get(task), {d: v for d, v in by_doc.items() if isinstance(v, list)})
    return out


def _from_data(run, missing: Mapping[str, list[str]], store: ThumbStore) -> dict[str, dict[str, list[str] | str]]:
    from lmms_eval_earthsci.core.data import data_route, mirror_env, no_route_as_error, undecoded

    route = data_route({t: ((run.configs.get(t) or {}).get("metadata") or {}).get("earthsci_data") for t in missing})
    out: dict[str, dict[str, list[str] | str]] = {}
    with mirror_env(route.get("EARTHSCI_DATA_MIRROR")), no_route_as_error():
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

            def one(doc: str, obj=obj, docs=docs):
                try:
                    # the row access and doc_to_visual (repo files, decoding) in the worker: Pillow
                    # releases the GIL while it decodes
                    visuals = obj.doc_to_visual(docs[int(doc)]) or []
                    return [store.put(thumbnail(v)) for v in (visuals if isinstance(visuals, list) else [visuals]) if v is not None]
                except Exception as exc:
                    return f"doc {doc}: its figures could not be read ({type(exc).__name__}: {str(exc)[:160]})"

            with ThreadPoolExecutor(max_workers=WORKERS) as pool:
                out[task] = dict(zip(ids, pool.map(one, ids)))
    return out
