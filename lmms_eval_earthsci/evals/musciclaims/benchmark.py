"""MuSciClaims' declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import os

from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.settings import Setting, integer

HERE = os.path.dirname(os.path.abspath(__file__))
DATASET = "StonyBrookNLP/MuSciClaims"  # importable without the task module, which installs the run hooks

BENCHMARK = Benchmark(
    name="musciclaims",
    title="MuSciClaims",
    folder=HERE,
    report="lmms_eval_earthsci.evals.musciclaims.report:MuSciClaimsReport",
    version=1.0,
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
