"""The report of a sweep at scale: 20 runs x the `earthsci` suite's doc counts (~20,000 samples per run).

The runs are copies of one real lmms-eval run (the demo's, made here unless --run names one) with each
task's samples repeated up to its real doc count and a share of the per-doc right/wrong flipped per run
(another checkpoint's answers; lmms_eval_earthsci.testing.sweep). Each report is written in a fresh
process, whose wall time and peak memory (ru_maxrss) are printed beside the goals of the sweeps issue:
report.md + charts + summary under 2 minutes, with report.html (no figures) under 5, under 4 GB.

    python benchmarks/sweep_report.py [--runs 20] [--run DEMO_RUNS_DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

# the `earthsci` suite's tasks and their doc counts on the Hub (EMMA-mini's subjects, MSEarth's three
# sets, SciFIBench's four splits, MuSciClaims' 1,515 claims, MAC-2025's four variants of 2,287)
DOCS = {
    "emma_mini_math": 100, "emma_mini_physics": 100, "emma_mini_chemistry": 100, "emma_mini_coding": 100,
    "msearth_mcq": 2784, "msearth_open": 1410, "msearth_caption": 3000,
    "scifibench_cs_f2c": 500, "scifibench_cs_c2f": 500, "scifibench_general_f2c": 500, "scifibench_general_c2f": 500,
    "musciclaims_rd": 1515,
    "mac2025_i2t_info": 2287, "mac2025_i2t_option": 2287, "mac2025_t2i_info": 2287, "mac2025_t2i_option": 2287,
}

CHILD = """
import resource, sys, time
t0 = time.perf_counter()
from lmms_eval_earthsci.commands.report import write_report
write_report([sys.argv[1]], sys.argv[2], html=sys.argv[3] == "html", images=False)
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_sweep(results: str, root: str, n_runs: int) -> None:
    from lmms_eval_earthsci.testing.sweep import clone_run

    for i in range(n_runs):
        step = (i + 1) * 1000
        for task, docs in DOCS.items():
            clone_run(results, os.path.join(root, f"step_{step}"), model_args=f"pretrained=/ckpts/run/checkpoint-{step}", tasks=[task],
                      stamp=f"20261124_{i:02d}{list(DOCS).index(task):02d}00", flip=0.25, seed=1000 * i + list(DOCS).index(task), docs=docs)


def report(sweep: str, out: str, kind: str) -> tuple[float, float]:
    proc = subprocess.run([sys.executable, "-c", CHILD, sweep, out, kind], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    seconds, kb = proc.stdout.split()[-2:]
    return float(seconds), int(kb) / 1024 / 1024


def demo_results(runs_dir: str | None, root: str) -> str:
    """The results JSON of a demo's run: the newest in ``runs_dir``, or of a demo run now under ``root``."""
    if runs_dir is None:
        demo = os.path.join(root, "demo")
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "lmms-eval-earthsci"), "demo", "--out", demo], check=True, capture_output=True)
        runs_dir = os.path.join(demo, "runs")
    return sorted(glob.glob(os.path.join(runs_dir, "*", "*_results.json")))[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--run", default=None, help="a demo's runs folder (default: run the demo here first)")
    ap.add_argument("--keep", default=None, help="write the sweep and reports here and keep them")
    a = ap.parse_args()
    root = a.keep or tempfile.mkdtemp(prefix="sweep_report_")
    try:
        results = demo_results(a.run, root)
        sweep = os.path.join(root, "sweep")
        t0 = time.perf_counter()
        make_sweep(results, sweep, a.runs)
        n = sum(1 for _ in glob.glob(os.path.join(sweep, "*", "*", "*_samples_*.jsonl")))
        print(f"sweep: {a.runs} runs, {sum(DOCS.values()):,} samples each ({n} sample files) written in {time.perf_counter() - t0:.1f} s")
        md_s, md_gb = report(sweep, os.path.join(root, "report_md"), "md")
        html_s, html_gb = report(sweep, os.path.join(root, "report_html"), "html")
        print(f"RESULT report.md + charts + summary: {md_s:.1f} s (goal 120 s: {md_s / 120:.2f} of it), peak {md_gb:.2f} GB (goal 4 GB)")
        print(f"RESULT with report.html, no figures: {html_s:.1f} s (goal 300 s: {html_s / 300:.2f} of it), peak {html_gb:.2f} GB (goal 4 GB)")
        print(f"(this process: peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024:.2f} GB)")
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
