"""SciFIBench's declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import os

from lmms_eval_earthsci.core.benchmark import Benchmark

HERE = os.path.dirname(os.path.abspath(__file__))
# the Hub repo and its four splits (names importable without the task module, which installs the run hooks)
DATASET = "jonathan-roberts1/SciFIBench"
SPLITS = {
    ("cs", "f2c"): "CS_Figure2Caption",
    ("cs", "c2f"): "CS_Caption2Figure",
    ("general", "f2c"): "General_Figure2Caption",
    ("general", "c2f"): "General_Caption2Figure",
}
METRIC, NO_ANSWER, JUDGE_METRIC = "scifibench_acc", "scifibench_no_answer", "scifibench_acc_judge"
BREAKDOWN_PREFIX = "scifibench"
# spec §1.2: CS fine-grained labels; General top-level arXiv categories (exact strings unverified:
# other labels still count in scifibench_acc and are logged)
CATEGORIES = {
    "cs": ["cs.NI", "cs.CV", "cs.DC", "cs.SY", "cs.CR", "cs.AI", "cs.CL", "cs.RO", "cs.LG", "cs.SE", "other cs", "cross-list"],
    "general": ["physics", "math", "stat", "q-bio", "q-fin", "eess", "econ"],
}

BENCHMARK = Benchmark(
    name="scifibench",
    title="SciFIBench",
    folder=HERE,
    report="lmms_eval_earthsci.evals.scifibench.report:SciFIBenchReport",
    version=1.0,
    # the circular variants' 1.1: circular_no_answer and flip_rate_answered added (issue 52; every other metric unchanged)
    task_versions={f"scifibench_{field}_{direction}_circular": 1.1 for field, direction in SPLITS},
    yaml_files="lmms_eval_earthsci.evals.scifibench.yamls:scifibench_files",
    datasets=(DATASET,),
    fixtures={DATASET: "lmms_eval_earthsci.evals.scifibench.fixtures:write_scifibench"},
    suite=("scifibench",),
    suite_nojudge=("scifibench",),
    demo_tasks=("scifibench", "scifibench_judge", "scifibench_alignment"),
    circular=("scifibench_circular",),
    layout_tasks={"scifibench_cs_f2c": "the figure, then lettered captions", "scifibench_cs_c2f": "each label directly before its figure (5 figures)"},
)
