"""``lmms-eval-earthsci demo``: the real pipeline, offline, in a few minutes on a CPU.

It builds (or reuses) the tiny random VLM of :mod:`lmms_eval_earthsci.tinyvlm`, points
``EARTHSCI_DATA_MIRROR`` at the sample mirror (a few synthetic docs per task in each benchmark's exact
upstream schema, shipped in each benchmark's folder: :mod:`lmms_eval_earthsci.sample_mirror`), runs every task group through the real ``lmms-eval`` CLI
(``llava_hf`` backend, ``--log_samples``, ``--verbosity DEBUG``: an lmms-eval error fails the demo),
then writes the report. The tiny model's answers are noise: the point is the pipeline. So that the
report still shows what a real model's report looks like, it opens with a short "What you are looking
at" paragraph (:func:`report_intro`), then the headline table with the paper's numbers beside ours,
and the charts carry the paper's marks.

With a GPU and Hub access the same command runs a real model on the real data::

    lmms-eval-earthsci demo --model qwen2_5_vl --model_args pretrained=Qwen/Qwen2.5-VL-3B-Instruct --data hub
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time

from lmms_eval_earthsci import registry, tinyvlm
from lmms_eval_earthsci.core.adapter.harness import output_to
from lmms_eval_earthsci.core.judge import JudgeConfig
from lmms_eval_earthsci.core.settings import cache_dir
from lmms_eval_earthsci.core.upstream import ledger
from lmms_eval_earthsci.sample_mirror import sample_mirror_root

# every benchmark's demo tasks (its declaration's demo_tasks), in registry order
DEFAULT_TASKS = ",".join(t for b in registry.builtin() for t in b.demo_tasks)
CACHE = cache_dir()


def judged_metrics_run(runs) -> list[str]:
    """The judged metrics (each benchmark's report spec's) that the runs have, in registry order."""
    have = {m for r in runs for metrics in r.results.values() for m in metrics}
    return [m for b in registry.benchmarks() for m in b.report_spec().judged_metrics if m in have]


def report_intro(tiny_model: bool, sample_data: bool, judge_configured: bool = False, judged: list[str] | None = None) -> str | None:
    """The paragraph the demo report opens with: what the numbers below are, and what they are not
    (None for a real model on the real data: nothing to explain). ``judged``: the judged metrics the
    run has (:func:`judged_metrics_run`); the judge paragraph names only those, and is left out when
    the run has none."""
    parts = []
    if tiny_model:
        parts.append(
            "These numbers come from a tiny untrained LLaVA-style model (random weights, ~0.2 M parameters) built on this "
            "machine: its answers are noise, so its accuracies sit at 0 or at chance and many docs read \"no answer extracted\"."
        )
    if sample_data:
        parts.append("It ran on the sample mirror bundled with the package: a few synthetic docs per task, so each number averages a handful of docs.")
    if not parts:
        return None
    if not judge_configured and judged:
        parts.append(
            f"Judged metrics ({', '.join(f'`{m}`' for m in judged)}) read n/a: no LLM "
            "judge is configured (set `EARTHSCI_JUDGE_BASE_URL` and `EARTHSCI_JUDGE_MODEL` to add one)."
        )
    parts.append(
        "The paper column of the headline "
        "table, the black marks in the charts and the Paper reference rows at the end are the papers' published numbers: they "
        "are the reference, where a real model's numbers land. For a real run: `lmms-eval-earthsci demo --model qwen2_5_vl "
        "--model_args pretrained=Qwen/Qwen2.5-VL-3B-Instruct --data hub`."
    )
    return " ".join(parts)


def parse(argv):
    ap = argparse.ArgumentParser(prog="lmms-eval-earthsci demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="demo_output", help="where lmms-eval output and the report go (default ./demo_output)")
    ap.add_argument("--model", default=None, help="lmms-eval model (default: the tiny local VLM through llava_hf)")
    ap.add_argument("--model_args", default=None)
    ap.add_argument("--tasks", default=DEFAULT_TASKS)
    ap.add_argument("--limit", default=None)
    ap.add_argument("--data", choices=["sample", "hub"], default="sample", help="sample: the bundled mirror (offline); hub: the real datasets")
    ap.add_argument("--max_new_tokens", type=int, default=None, help="generation cap (default 32 for the tiny model, the tasks' own otherwise)")
    ap.add_argument("--verbose", action="store_true", help="print the report and its logs too (by default they go to report.md and the log file)")
    return ap.parse_known_args(argv)


def headline_lines(runs) -> list[str]:
    """Each benchmark's headline numbers in one line: ``  EMMA  emma_mini 36.25 · emma_full 32.71``."""
    from lmms_eval_earthsci.commands.report.sections import headline_values  # noqa: PLC0415 - heavy (numpy and the report's modules, ~100 ms): after the run

    by_bench: dict = {}
    for b, t, m, value in headline_values(runs[0]):
        by_bench.setdefault(b.title, []).append((t, m, value))
    out = []
    for title, keys in by_bench.items():
        tasks = [t for t, _, _ in keys]
        out.append(f"  {title:<12} " + " · ".join(f"{t if tasks.count(t) == 1 else f'{t} ({m})'} {value}" for t, m, value in keys))
    return out


def failure_lines(log_path: str) -> list[str]:
    """What to show of a failed run's log: the lines it ended with that say what did not run, else our
    one-line errors, else its last lines."""
    with open(log_path, errors="replace") as f:
        lines = f.read().splitlines()
    ending = [line for line in lines if ledger.is_last_line(line)]
    ours = [line for line in lines if line.startswith("lmms-eval-earthsci")]
    return ending or ours or lines[-30:]


def main(argv=None) -> int:
    args, passthrough = parse(argv)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    model, model_args = args.model, args.model_args
    max_new = args.max_new_tokens
    if model is None:
        t0 = time.time()
        path = tinyvlm.build(os.path.join(CACHE, "tiny-llava"))
        print(f"tiny VLM ready at {path} ({time.time() - t0:.1f} s): random weights, its answers are random noise (this demo shows the pipeline, not a model)")
        model, model_args = "llava_hf", f"pretrained={path},device=cpu,device_map=cpu"
        max_new = max_new or 32
        env.setdefault("HF_HUB_OFFLINE", "1")
    if args.data == "sample":
        env["EARTHSCI_DATA_MIRROR"] = sample_mirror_root()
        env.setdefault("HF_DATASETS_OFFLINE", "1")
    cmd = [sys.executable, "-m", "lmms_eval", "--model", model, "--tasks", args.tasks, "--output_path", os.path.join(out, "runs"), "--log_samples", "--verbosity", "DEBUG"]
    if model_args:
        cmd += ["--model_args", model_args]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    if max_new:
        cmd += ["--gen_kwargs", f"max_new_tokens={max_new}"]
    cmd += passthrough
    log_path = os.path.join(out, "lmms_eval.log")
    where = "the bundled sample mirror" if args.data == "sample" else "the Hub's data"
    print(f"lmms-eval: {len(args.tasks.split(','))} task group(s) on {where} (its log: {log_path})", flush=True)
    t0 = time.time()
    with open(log_path, "w") as log:
        log.write("running: " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        print("\n".join(failure_lines(log_path)), file=sys.stderr)
        print(f"demo FAILED: lmms-eval exited with {proc.returncode}; full log: {log_path}", file=sys.stderr)
        return proc.returncode or 1
    print(f"lmms-eval finished in {time.time() - t0:.0f} s", flush=True)
    from lmms_eval_earthsci.commands.report import read_runs, write_report  # noqa: PLC0415 - heavy (numpy and the report's modules, ~100 ms): after the run

    runs_dir = os.path.join(out, "runs")
    t0 = time.time()
    quiet = contextlib.nullcontext() if args.verbose else output_to(log_path)
    with quiet:
        runs = read_runs([runs_dir])
        judged = judged_metrics_run(runs)
        intro = report_intro(tiny_model=args.model is None, sample_data=args.data == "sample", judge_configured=JudgeConfig.from_env().configured, judged=judged)
        path, text = write_report([runs_dir], os.path.join(out, "report"), intro=intro, html=True)
    if args.verbose:
        print(text)
    print(f"report written in {time.time() - t0:.0f} s", flush=True)
    note = " (a tiny untrained model: noise, not a result; report.md explains)" if args.model is None else ""
    print(f"headline{note}:")
    print("\n".join(headline_lines(runs)))
    report_dir = os.path.dirname(path)
    print("outputs:")
    print(f"  lmms-eval's results JSON and samples JSONL: {runs_dir}")
    print(f"  lmms-eval's log (and the report's): {log_path}")
    print(f"  report: {path} (PNG charts and summary.csv beside it)")
    print(f"  every sample: {os.path.join(report_dir, 'report.html')} (open it from disk)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
