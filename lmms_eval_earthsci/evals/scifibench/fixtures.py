"""SciFIBench fixture data: made-up figure/caption questions for the four splits, in the Hub schema."""

from __future__ import annotations

import os
from types import MappingProxyType

from lmms_eval_earthsci.evals.scifibench.benchmark import DATASET, SPLITS
from lmms_eval_earthsci.testing.figures import draw_figure, png_bytes, write_hf_repo

SCIFIBENCH_SPLITS = tuple(SPLITS.values())
# near-duplicate captions, as the benchmark's hard negatives are (lower-cased, spaced punctuation)
_SCIFI_CAPTIONS = (
    ("ber vs snr for fft size=2048 using ls , lmmse .", "ber vs snr for fft size=1024 using ls , lmmse .", "ber vs snr for fft size=512 using ls , lmmse .", "throughput vs snr for fft size=2048 .", "ber vs snr for fft size=256 using ls ."),
    ("expected lookup time for different table sizes .", "expected insert time for different table sizes .", "lookup time vs load factor .", "memory use for different table sizes .", "expected lookup time for two hash functions ."),
    ("the roc curves of three detectors .", "the roc curves of two detectors .", "precision-recall curves of three detectors .", "the roc curve of the proposed detector .", "detection rate vs false alarms ."),
)
_SCIFI_CATEGORIES = MappingProxyType({"CS": ("cs.CV", "other cs", "cross-list"), "General": ("physics", "q-bio", "econ")})


def scifibench_features():
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only when fixtures are written

    return datasets.Features(
        {
            "ID": datasets.Value("int64"),
            "Question": datasets.Value("string"),
            "Options": datasets.Sequence(datasets.Value("string")),
            "Answer": datasets.Value("string"),
            "Category": datasets.Value("string"),
            "Images": datasets.Sequence(datasets.Image()),
        }
    )


def scifibench_rows(split: str) -> list[dict]:
    subset, direction = split.split("_")
    rows = []
    for i, caps in enumerate(_SCIFI_CAPTIONS):
        answer = "ABCDE"[(i * 2 + (1 if subset == "General" else 0)) % 5]
        gold = caps[0]
        caps = list(caps)
        # put the true caption (the first) at the answer position
        caps[0], caps["ABCDE".index(answer)] = caps["ABCDE".index(answer)], caps[0]
        seed = 600 + 10 * i + (5 if subset == "General" else 0)
        if direction == "Figure2Caption":
            row = {"Question": "Which caption best matches the image?", "Options": [f"{'ABCDE'[k]})  {c}" for k, c in enumerate(caps)], "Images": [{"bytes": png_bytes(draw_figure(seed)), "path": None}]}
        else:
            row = {
                "Question": f"Caption: {gold} Which image best matches the caption?",
                "Options": [f"{'ABCDE'[k]}) image{k}" for k in range(5)],
                "Images": [{"bytes": png_bytes(draw_figure(seed + k, size=(64 + 8 * k, 48))), "path": None} for k in range(5)],
            }
        row.update(ID=i, Answer=answer, Category=_SCIFI_CATEGORIES[subset][i])
        rows.append(row)
    return rows


def write_scifibench(root: str, repo_id: str = DATASET) -> str:
    """The four splits under ``data/`` plus the two legacy v1 files the real repo still carries
    (``Figure2Caption-*``/``Caption2Figure-*``, other content): tasks must never read those."""
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only when fixtures are written

    repo_dir = os.path.join(root, *repo_id.split("/"))
    write_hf_repo(repo_dir, {"default": {s: scifibench_rows(s) for s in SCIFIBENCH_SPLITS}}, scifibench_features(), lambda c, s: f"data/{s}-00000-of-00001.parquet")
    legacy = [{**r, "ID": 900 + r["ID"], "Answer": "E", "Category": "legacy"} for r in scifibench_rows("CS_Figure2Caption")]
    datasets.Dataset.from_list(legacy, features=scifibench_features()).to_parquet(os.path.join(repo_dir, "data", "Figure2Caption-00000-of-00001-cbaff1898767fb41.parquet"))
    return repo_dir
