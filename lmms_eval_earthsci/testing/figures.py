"""Helpers for fixture data: figures drawn here (nothing copied from any dataset) and Hub-layout dataset
repos written through ``datasets`` (``<root>/<org>/<name>/``, the layout ``EARTHSCI_DATA_MIRROR`` reads).
Each benchmark's own writer (``evals/<benchmark>/fixtures.py``) builds its records with them;
:func:`lmms_eval_earthsci.testing.fixtures.write_mirror` runs every registered writer."""

from __future__ import annotations

import io
import math
import os
import random
from collections.abc import Callable, Mapping
from typing import Any

# --------------------------------------------------------------------------- figures


def draw_figure(seed: int, kind: str = "auto", size: tuple[int, int] = (96, 72)):
    """A small synthetic scientific figure (bar chart, line plot, scatter or diagram) as a PIL image;
    the same seed always gives the same picture."""
    from PIL import Image, ImageDraw  # noqa: PLC0415 - PIL, only when a figure is drawn

    rng = random.Random(seed)
    kinds = ["bars", "line", "scatter", "diagram"]
    if kind == "auto":
        kind = kinds[seed % len(kinds)]
    w, h = size
    img = Image.new("RGB", size, (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.line([(8, h - 8), (w - 4, h - 8)], fill=(0, 0, 0))
    d.line([(8, h - 8), (8, 4)], fill=(0, 0, 0))
    color = tuple(rng.randrange(0, 200) for _ in range(3))
    if kind == "bars":
        n = rng.randint(3, 6)
        bw = (w - 16) // n
        for i in range(n):
            top = rng.randint(8, h - 12)
            d.rectangle([10 + i * bw, top, 10 + i * bw + bw - 3, h - 9], fill=color)
    elif kind == "line":
        phase, amp = rng.uniform(0, 3), rng.uniform(8, (h - 16) / 2)
        pts = [(x, h / 2 + amp * math.sin(x / 9 + phase)) for x in range(10, w - 4, 3)]
        d.line(pts, fill=color, width=2)
    elif kind == "scatter":
        for _ in range(25):
            x, y = rng.randint(10, w - 6), rng.randint(6, h - 10)
            d.ellipse([x - 2, y - 2, x + 2, y + 2], fill=color)
    else:
        for _ in range(3):
            x, y = rng.randint(12, w - 24), rng.randint(6, h - 24)
            d.rectangle([x, y, x + 16, y + 12], outline=color, width=2)
        d.line([(20, 20), (w - 20, h - 20)], fill=(120, 120, 120), width=1)
    return img


def png_bytes(img) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


# --------------------------------------------------------------------------- Hub-layout writer


def write_hf_repo(repo_dir: str, configs: Mapping[str, Mapping[str, Any]], features: Any, path_pattern: Callable[[str, str], str]) -> None:
    """Write parquet files as ``push_to_hub`` lays them out, plus the README ``configs:`` header the
    Hub uses to map config names and splits to files.

    ``configs``: ``{config_name: {split: list_of_rows}}``; ``path_pattern(config, split)`` gives the
    file path inside the repo (e.g. ``"Math/test-00000-of-00001.parquet"``).
    """
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only when a repo is written

    os.makedirs(repo_dir, exist_ok=True)
    header = ["---", "configs:"]
    for config, splits in configs.items():
        header.append(f"- config_name: {config}")
        header.append("  data_files:")
        for split, rows in splits.items():
            rel = path_pattern(config, split)
            out = os.path.join(repo_dir, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            ds = datasets.Dataset.from_list(list(rows), features=features)
            ds.to_parquet(out)
            header.append(f"  - split: {split}")
            header.append(f"    path: {rel}")
    header.append("---")
    header.append("Synthetic fixture written by lmms_eval_earthsci.testing.fixtures (not real benchmark data).")
    with open(os.path.join(repo_dir, "README.md"), "w") as f:
        f.write("\n".join(header) + "\n")
