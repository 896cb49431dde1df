"""MuSciClaims' declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import os
from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.settings import Setting, integer

HERE = os.path.dirname(os.path.abspath(__file__))
DATASET = "StonyBrookNLP/MuSciClaims"  # importable without the task module, which installs the run hooks
DOMAINS = ("biology", "chemistry", "physics")

# The metrics and, by name, their aggregation functions in the task module: the YAML generator writes them
# as `!function` lines without importing it (tests/evals/musciclaims/test_musciclaims.py checks each names one).
TASKS_MODULE = "lmms_eval_earthsci.evals.musciclaims.tasks"
METRIC = "musciclaims_macro_f1"
METRIC_AGGREGATION = "macro_f1"
CLASSES = ("support", "neutral", "contradict")
# what a slice of the docs (a domain) reports besides its macro F1: Table 1's other cells
SLICE_KEYS = ("macro_precision", "macro_recall", *(f"{m}_{c}" for c in CLASSES for m in ("precision", "recall", "f1")))
PANEL_SLICE_KEYS = ("macro_precision", "macro_recall", "macro_f1")
PANEL_SLICE_DOMAINS = ("biology",)
CLASSIFICATION_AGGREGATIONS = MappingProxyType({
    "musciclaims_macro_precision": "macro_precision",
    "musciclaims_macro_recall": "macro_recall",
    **{f"musciclaims_{m}_{c}": f"{m}_{c}" for c in CLASSES for m in ("precision", "recall", "f1")},
    "musciclaims_invalid_rate": "invalid_rate",
    "musciclaims_2class_weighted_precision": "two_class_weighted_precision",
    "musciclaims_2class_weighted_recall": "two_class_weighted_recall",
    "musciclaims_2class_weighted_f1": "two_class_weighted_f1",
    "musciclaims_2class_f1_support": "two_class_f1_support",
    "musciclaims_2class_f1_nonsupport": "two_class_f1_nonsupport",
    # Table 6's per-class P and R
    **{f"musciclaims_2class_{m}_{c}": f"two_class_{m}_{c}" for c in ("support", "nonsupport") for m in ("precision", "recall")},
    "musciclaims_flip_rate": "flip_rate",
    "musciclaims_correct_flip_rate": "correct_flip_rate",
    **{f"musciclaims_macro_f1_{d}": f"macro_f1_{d}" for d in DOMAINS},
    # Table 1 cell by cell on each domain slice (the paper's v1 is biology only)
    **{f"musciclaims_{k}_{d}": f"{k}_{d}" for d in DOMAINS for k in SLICE_KEYS},
    # Table 7: single- vs multi-panel figures (our proxy from the gold panels), on every domain and on
    # biology alone (the paper's v1 data)
    **{f"musciclaims_{k}_{p}_panel{s}": f"{k}_{p}_panel{s}" for p in ("single", "multi") for s in ("", *(f"_{d}" for d in PANEL_SLICE_DOMAINS)) for k in PANEL_SLICE_KEYS},
})
PANEL_AGGREGATIONS = MappingProxyType({
    "musciclaims_panel_precision": "panel_precision",
    "musciclaims_panel_recall": "panel_recall",
    "musciclaims_panel_f1": "panel_f1",
})
LOWER_IS_BETTER = frozenset({"musciclaims_invalid_rate"})

BENCHMARK = Benchmark(
    name="musciclaims",
    title="MuSciClaims",
    folder=HERE,
    report="lmms_eval_earthsci.evals.musciclaims.report:MuSciClaimsReport",
    # 1.1: per-class and macro P/R on each domain slice; 1.2: macro P/R/F1 on single- and multi-panel
    # figures; 1.3: the two-class per-class P and R (the official metrics unchanged)
    version=1.3,
    yaml_files="lmms_eval_earthsci.evals.musciclaims.yamls:musciclaims_files",
    datasets=(DATASET,),
    # the figures the rows name (associated_figure_filepath: paper_figures/<file>)
    repo_files={DATASET: ("paper_figures/*",)},
    fixtures={DATASET: "lmms_eval_earthsci.evals.musciclaims.fixtures:write_musciclaims"},
    kernels="lmms_eval_earthsci.evals.musciclaims.kernels:kernels",
    suite=("musciclaims_rd",),
    suite_nojudge=("musciclaims_rd",),
    demo_tasks=("musciclaims",),
    settings=(Setting("EARTHSCI_MUSCICLAIMS_MAX_PIXELS", "an integer >= 0 (a figure's pixel cap; 0: none)", integer(0), frozenset({"run", "check-mirror", "mirror"})),),
    layout_tasks={"musciclaims_d": "the figure, then the claim"},
)
