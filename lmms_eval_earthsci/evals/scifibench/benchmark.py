"""SciFIBench's declaration for the registry (see :class:`lmms_eval_earthsci.core.benchmark.Benchmark`)."""

import os

from lmms_eval_earthsci.core.benchmark import Benchmark

HERE = os.path.dirname(os.path.abspath(__file__))

BENCHMARK = Benchmark(
    name="scifibench",
    title="SciFIBench",
    folder=HERE,
    report="lmms_eval_earthsci.evals.scifibench.report:SciFIBenchReport",
    version=1.0,
    yaml_files="lmms_eval_earthsci.evals.scifibench.yamls:scifibench_files",
    datasets=("jonathan-roberts1/SciFIBench",),
    fixtures={"jonathan-roberts1/SciFIBench": "lmms_eval_earthsci.evals.scifibench.fixtures:write_scifibench"},
    suite=("scifibench",),
    suite_nojudge=("scifibench",),
    demo_tasks=("scifibench", "scifibench_judge", "scifibench_alignment"),
)
