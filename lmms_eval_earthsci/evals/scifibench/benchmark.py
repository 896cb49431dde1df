"""SciFIBench's declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import os
from collections.abc import Sequence
from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.scoring.metrics import range_labels

HERE = os.path.dirname(os.path.abspath(__file__))
# the Hub repo and its four splits (names importable without the task module, which installs the run hooks)
DATASET = "jonathan-roberts1/SciFIBench"
SPLITS = MappingProxyType({
    ("cs", "f2c"): "CS_Figure2Caption",
    ("cs", "c2f"): "CS_Caption2Figure",
    ("general", "f2c"): "General_Figure2Caption",
    ("general", "c2f"): "General_Caption2Figure",
})
METRIC, NO_ANSWER, JUDGE_METRIC = "scifibench_acc", "scifibench_no_answer", "scifibench_acc_judge"
BREAKDOWN_PREFIX = "scifibench"
# spec §1.2: CS fine-grained labels; General top-level arXiv categories (exact strings unverified:
# other labels still count in scifibench_acc and are logged)
CATEGORIES = MappingProxyType({
    "cs": ("cs.NI", "cs.CV", "cs.DC", "cs.SY", "cs.CR", "cs.AI", "cs.CL", "cs.RO", "cs.LG", "cs.SE", "other cs", "cross-list"),
    "general": ("physics", "math", "stat", "q-bio", "q-fin", "eess", "econ"),
})
# Fig. 8's analyses the released rows allow (their bins are ours: the paper does not print its axes).
# F->C: the correct caption's length in words; C->F: the five option figures' mean size, a figure's size
# being sqrt(width x height) in px (the side of a square of its area). The year panel needs a
# publication year, which no released row carries.
LENGTH_EDGES = (1, 6, 11, 21, 31, 51, 101)  # words: 1-5, 6-10, 11-20, 21-30, 31-50, 51-100, 101+
SIZE_EDGES = (0, 250, 500, 1000, 1500, 2000)  # px: 0-249, 250-499, 500-999, 1000-1499, 1500-1999, 2000+
FIGURE8_FIELDS = MappingProxyType({"f2c": "length", "c2f": "size"})


def known_breakdowns(subset: str, direction: str) -> dict[str, Sequence[str]]:
    """A split's breakdown fields and their labels: its categories, and Fig. 8's caption length (F->C)
    or mean figure size (C->F) bins (the YAML generator and ``process_results`` read the same)."""
    field = FIGURE8_FIELDS[direction]
    return {"category": CATEGORIES[subset], field: range_labels(LENGTH_EDGES if field == "length" else SIZE_EDGES)}

BENCHMARK = Benchmark(
    name="scifibench",
    title="SciFIBench",
    folder=HERE,
    report="lmms_eval_earthsci.evals.scifibench.report:SciFIBenchReport",
    # 1.1: accuracy by caption length (F->C) and by mean figure size (C->F) added (every other metric unchanged)
    version=1.1,
    # the circular variants' 1.1: circular_no_answer and flip_rate_answered added (every other metric
    # unchanged); 1.2: the official record they carry holds the Fig. 8 fields
    task_versions={f"scifibench_{field}_{direction}_circular": 1.2 for field, direction in SPLITS},
    yaml_files="lmms_eval_earthsci.evals.scifibench.yamls:scifibench_files",
    datasets=(DATASET,),
    fixtures={DATASET: "lmms_eval_earthsci.evals.scifibench.fixtures:write_scifibench"},
    suite=("scifibench",),
    suite_nojudge=("scifibench",),
    demo_tasks=("scifibench", "scifibench_judge", "scifibench_alignment"),
    circular=("scifibench_circular",),
    layout_tasks={"scifibench_cs_f2c": "the figure, then lettered captions", "scifibench_cs_c2f": "each label directly before its figure (5 figures)"},
)
