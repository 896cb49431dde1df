"""Counting what PIL opens and decodes (tests and ``benchmarks/hook_cost.py``): ``Image.open`` calls,
with what they opened, and real decodes (``ImageFile.load`` with tiles left to decode; PIL calls
``load`` again on every pixel access, which decodes nothing)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any


class DecodeCounts:
    def __init__(self) -> None:
        self.opened = 0
        self.decoded = 0
        self.sources: list[Any] = []  # what each open read: a path, or the bytes of a buffer

    def reset(self) -> None:
        self.opened = self.decoded = 0
        self.sources = []

    def as_dict(self) -> dict[str, int]:
        return {"open": self.opened, "decoded": self.decoded}


@contextlib.contextmanager
def counting_decodes() -> Iterator[DecodeCounts]:
    """Within the block, every ``PIL.Image.open`` and every real decode is counted."""
    from PIL import Image, ImageFile  # noqa: PLC0415 - PIL, only when counting

    counts = DecodeCounts()
    real_open, real_load = Image.open, ImageFile.ImageFile.load

    def open_counted(fp: Any, *args: Any, **kwargs: Any) -> Any:
        counts.opened += 1
        if isinstance(fp, io.BytesIO):
            counts.sources.append(fp.getvalue())
        else:
            counts.sources.append(fp)
        return real_open(fp, *args, **kwargs)

    def load_counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "tile", None):
            counts.decoded += 1
        return real_load(self, *args, **kwargs)

    Image.open, ImageFile.ImageFile.load = open_counted, load_counted  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        Image.open, ImageFile.ImageFile.load = real_open, real_load  # type: ignore[method-assign]
