"""MAC's declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import os
from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.settings import Setting, integer, judge_family

HERE = os.path.dirname(os.path.abspath(__file__))
# names importable without the task module, which installs the run hooks
DATASET = "mhjiang0408/MAC_Bench"
PUBLISHERS = ("ACS", "Cell", "Nature", "Science")  # as the CSVs' paths spell them
CSV = MappingProxyType({
    ("i2t", "info"): "image2text_info.csv",
    ("i2t", "option"): "image2text_option.csv",
    ("t2i", "info"): "text2image_info.csv",
    ("t2i", "option"): "text2image_option.csv",
})
# OpenAI `detail: low` (what the authors sent) fits an image in 512x512
DEFAULT_IMAGE_MAX_SIDE = 512
IMAGE_MAX_SIDE_ENV = "EARTHSCI_MAC_IMAGE_MAX_SIDE"

# the distractors' embedding models as the CSVs name them (option_X_embedding_name, spec §2.3): the image-text
# models (clip, vith, vitg: names inferred), the text models (allv2, multiBv1, sbert), the average-rank fill
# (ave_<k>, one slice: ave), the 2025 models (siglip, doubao, qwen); any other name, or none: other
DISTRACTOR_MODELS = ("clip", "vith", "vitg", "allv2", "multiBv1", "sbert", "ave", "siglip", "doubao", "qwen", "other")
# the slices of mac_acc (mac_publisher_<p>) and the shares of the distractor picks (mac_distractor_<model>)
BREAKDOWNS = MappingProxyType({"publisher": PUBLISHERS, "distractor": DISTRACTOR_MODELS})

METRIC = "mac_acc"
LENIENT = "mac_acc_lenient"
BREAKDOWN_PREFIX = "mac"

BENCHMARK = Benchmark(
    name="mac",
    title="MAC",
    folder=HERE,
    report="lmms_eval_earthsci.evals.mac.report:MACReport",
    # MAC's tasks are named by their yearly snapshot (mac2025_i2t_info; the group: mac2025)
    task_pattern=r"mac\d{4}(?:_\w+)?",
    # 1.1: mac_distractor_<model> and the record's picked_embedding / distractor (every other metric unchanged)
    version=1.1,
    # the circular variants' 1.1: circular_no_answer and flip_rate_answered added (every other metric unchanged);
    # 1.2: the official record they carry names the picked option's embedding model (each option's CSV fields rotate with it)
    task_versions={f"mac2025_{direction}_{domain}_circular": 1.2 for direction in ("i2t", "t2i") for domain in ("info", "option")},
    yaml_files="lmms_eval_earthsci.evals.mac.yamls:mac_files",
    datasets=(DATASET,),
    # the covers the CSVs' rows name: <publisher>/Cover/<journal>/<issue>.<ext>
    repo_files={DATASET: ("*/Cover/*",)},
    fixtures={DATASET: "lmms_eval_earthsci.evals.mac.fixtures:write_mac"},
    kernels="lmms_eval_earthsci.evals.mac.kernels:kernels",
    suite=("mac2025",),
    suite_nojudge=("mac2025",),
    demo_tasks=("mac2025",),
    circular=("mac2025_circular",),
    settings=(
        Setting(
            "EARTHSCI_MAC_IMAGE_MAX_SIDE", "an integer >= 1 (pixels of a cover's longer side), or 0 (also none, null) for full size",
            lambda v: v.lower() in ("none", "null") or integer(0)(v), frozenset({"run", "check-mirror", "mirror"}),
        ),
        # DAD's two stages through the judge engine: EARTHSCI_DAD_<S> before EARTHSCI_JUDGE_<S>
        *judge_family("EARTHSCI_DAD", frozenset({"run"})),
    ),
    layout_tasks={"mac2025_t2i_option": "a system prompt, then the story and 4 covers"},
)
