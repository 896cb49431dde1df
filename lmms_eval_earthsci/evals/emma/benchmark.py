"""EMMA's declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import os

from lmms_eval_earthsci.core.benchmark import Benchmark

HERE = os.path.dirname(os.path.abspath(__file__))
# the Hub repos (names importable without the task module, which installs the run hooks)
DATASET_MINI = "luckychao/EMMA-mini"
DATASET_FULL = "luckychao/EMMA"

BENCHMARK = Benchmark(
    name="emma",
    title="EMMA",
    folder=HERE,
    report="lmms_eval_earthsci.evals.emma.report:EmmaReport",
    version=1.0,
    # the circular variants' 1.1: circular_no_answer and flip_rate_answered added (issue 52; every other metric unchanged)
    task_versions={f"emma_{size}_{subject}_circular": 1.1 for size in ("mini", "full") for subject in ("math", "physics", "chemistry", "coding")},
    yaml_files="lmms_eval_earthsci.evals.emma.yamls:emma_files",
    datasets=(DATASET_MINI, DATASET_FULL),
    fixtures={repo: "lmms_eval_earthsci.evals.emma.fixtures:write_emma" for repo in (DATASET_MINI, DATASET_FULL)},
    importers={"emma-release": "lmms_eval_earthsci.evals.emma.tasks:release_plan"},
    suite=("emma_mini",),
    suite_nojudge=("emma_mini",),
    demo_tasks=("emma_mini", "emma_mini_direct", "emma_full", "emma_mini_judge"),
    circular=("emma_mini_circular",),
    layout_tasks={"emma_full_physics": "<image_k> placeholders out of order, one repeated", "emma_full_chemistry": "option images (<image_k> as options)"},
)
