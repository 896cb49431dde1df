"""MSEarth's declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import os
from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.scoring.scaling import CurveNames

HERE = os.path.dirname(os.path.abspath(__file__))
# the Hub repos per kind (names importable without the task module, which installs the run hooks): the
# authors' and their MSEarth-Data re-uploads (same rows, other column names)
DATASETS = MappingProxyType({"mcq": "MSEarth/MSEarth_MCQ", "open": "MSEarth/MSEarth_Open_Ended", "caption": "MSEarth/MSEarth_Captioning"})
REUPLOADS = MappingProxyType({"mcq": "MSEarth-Data/MSEarth-Benchmark-MCQ", "open": "MSEarth-Data/MSEarth-Benchmark-OpenQA", "caption": "MSEarth-Data/MSEarth-Benchmark-Captioning"})
_REPOS = (*DATASETS.values(), *REUPLOADS.values())

# ---------------------------------------------------------------------------- breakdowns (spec §1.3, §2.2)
SPHERES = ("Atmospheric Sciences", "Ecology and Biosciences", "Hydrology", "Oceanography", "Geology", "Geography", "Solid Earth Geophysics", "Polar Science", "Other")
CATEGORIES = ("Discovery", "Perception")
BREAKDOWN_PREFIX = "msearth"
MCQ_METRIC, MCQ_STRICT = "msearth_acc", "msearth_acc_strict"
# the CoT variant's voting curves (paper Fig. 6: N = 4 and 8; core.scoring.scaling)
CURVES = CurveNames(maj="msearth_maj@{}", pass_="msearth_pass@{}", pass_unbiased="msearth_pass_unbiased@{}")
OE_METRIC, CAP_METRIC = "msearth_oe_acc", "msearth_cap_score"


def breakdowns(kind: str) -> dict[str, tuple[str, ...]]:
    out = {"sphere": SPHERES}
    if kind in ("mcq", "open"):
        out["image"] = ("SINGLE", "MULTI", "CROSS")
    if kind == "mcq":
        out["category"] = CATEGORIES
    return out

BENCHMARK = Benchmark(
    name="msearth",
    title="MSEarth",
    folder=HERE,
    report="lmms_eval_earthsci.evals.msearth.report:MSEarthReport",
    version=1.0,
    # the circular variants' 1.1: circular_no_answer and flip_rate_answered added (every other metric unchanged)
    task_versions={"msearth_mcq_circular": 1.1, "msearth_mcq_nocap_circular": 1.1},
    yaml_files="lmms_eval_earthsci.evals.msearth.yamls:msearth_files",
    datasets=_REPOS,
    fixtures={repo: "lmms_eval_earthsci.evals.msearth.fixtures:write_msearth" for repo in _REPOS},
    importers={"msearth-release": "lmms_eval_earthsci.evals.msearth.tasks:release_plan"},
    suite=("msearth_mcq", "msearth_open", "msearth_caption"),
    suite_nojudge=("msearth_mcq",),
    demo_tasks=("msearth",),
    circular=("msearth_circular",),
    layout_tasks={"msearth_mcq": "text, then the figure"},
)
