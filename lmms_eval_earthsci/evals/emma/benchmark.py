"""EMMA's declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import functools
import os
from collections.abc import Mapping
from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.scoring.scaling import CurveNames
from lmms_eval_earthsci.core.settings import judge_family

HERE = os.path.dirname(os.path.abspath(__file__))
# the Hub repos (names importable without the task module, which installs the run hooks)
DATASET_MINI = "luckychao/EMMA-mini"
DATASET_FULL = "luckychao/EMMA"
# Hub revisions pinned for reproducibility (dataset_kwargs.revision in task_yamls/emma/).
REVISION_MINI = "6b9ae9a74733bb57f0b741213f8d0ec9ebae067a"
REVISION_FULL = "6c87aec9048c489108170088e50b768646b5bcf9"
SUBJECTS = ("Math", "Physics", "Chemistry", "Coding")

# ---------------------------------------------------------------------------- breakdowns (spec §1.3)
CATEGORIES = MappingProxyType({
    "Math": ("2D Transformation", "3D Spatial Simulation", "Path Tracing", "Multi-hop Visual Object Counting", "Pattern Inference"),
    "Physics": ("Visual Decomposition Simulation", "3d Field Simulation", "Multi-hop Visual Reasoning", "Graph Reasoning", "Path Tracing"),
    "Chemistry": ("Knowledge-based counting", "Structure Recognition", "Reaction Simulation", "Reaction Simulation Pro", "Graph Reasoning"),
    "Coding": (
        "Advanced Chart Type",
        "Alignment, Orientation, & Position",
        "Color & Texture",
        "3D",
        "Data Reasoning",
        "Axis & Scale",
        "Legend",
        "Gridline",
        "Marker, Line, & Cap",
        "Polar",
    ),
})
QUESTION_TYPES = ("multiple choice", "open-ended")
CODING_TASKS = ("Vis Choose Code", "Code Choose Vis", "Modify Without Image", "Modify With Image")
METRIC = "emma_acc"
LENIENT = "emma_acc_lenient"
MAJ, PASS = "emma_maj@k", "emma_pass@k"
# test-time scaling (paper §4.3, Tables 3 and 7): one metric per method and N (evals/emma/scaling.py)
# (N = 1, 2, 4, 8, 16; Best-of-N from N = 2: one candidate needs no reward model, and Table 3 has no such cell)
CURVES = CurveNames(maj="emma_maj@{}", pass_="emma_pass@{}", pass_unbiased="emma_pass_unbiased@{}", bon="emma_bon@{}", tournament="emma_tournament@{}",
                    bon_scalar="emma_bon_scalar@{}", rm_failed="emma_rm_failed", rm_replies="emma_rm_replies")
MAJ_NORMALIZED = "emma_maj_normalized@k"
JUDGE_METRIC, JUDGE_FAILED = "emma_judge_acc", "emma_judge_failed"
# breakdown metrics: emma_<field>_<label> = emma_acc over that slice (see core.scoring.metrics)
BREAKDOWN_PREFIX = "emma"


@functools.cache
def breakdowns(subject: str) -> Mapping[str, tuple[str, ...]]:
    """Breakdown labels reported by one subject task (``emma_<field>_<label>`` metrics)."""
    out = {"category": CATEGORIES[subject], "type": QUESTION_TYPES}
    if subject == "Coding":
        out["task"] = CODING_TASKS
    return MappingProxyType(out)


BENCHMARK = Benchmark(
    name="emma",
    title="EMMA",
    folder=HERE,
    report="lmms_eval_earthsci.evals.emma.report:EmmaReport",
    # 1.1: emma_maj@k / emma_pass@k follow the authors' test-time-scaling rules over every --repeats candidate
    # (before: lmms-eval's filter passed the first only, and the vote was normalised), the curves at N = 1-16 added
    version=1.1,
    # the circular variants' 1.1: circular_no_answer and flip_rate_answered added (every other metric unchanged)
    yaml_files="lmms_eval_earthsci.evals.emma.yamls:emma_files",
    datasets=(DATASET_MINI, DATASET_FULL),
    fixtures={repo: "lmms_eval_earthsci.evals.emma.fixtures:write_emma" for repo in (DATASET_MINI, DATASET_FULL)},
    # Table 7's scalar reward model (Qwen2.5-Math-RM) behind vLLM's /pooling: its own endpoint, no fallback to the judge's
    settings=judge_family("EARTHSCI_SCALAR_RM", frozenset({"run"})),
    importers={"emma-release": "lmms_eval_earthsci.evals.emma.tasks:release_plan", "emma-tts-release": "lmms_eval_earthsci.evals.emma.tts_release:rescore_files"},
    suite=("emma_mini",),
    suite_nojudge=("emma_mini",),
    demo_tasks=("emma_mini", "emma_mini_direct", "emma_full", "emma_mini_judge"),
    circular=("emma_mini_circular",),
    layout_tasks={"emma_full_physics": "<image_k> placeholders out of order, one repeated", "emma_full_chemistry": "option images (<image_k> as options)"},
)
