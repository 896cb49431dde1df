"""The smoke sweep a lab runs first (the README's recipe): every task of ours at ``--limit 1``, ``2`` and ``3``, two
``--model dummy`` runs answering differently (one "A" everywhere, one with no answer in any doc), then ``report``
over each pair. Nothing may end in a traceback: a
statistic that cannot be computed (one doc, one MuSciClaims cluster, no verdict) reads "n/a" with its reason."""

import glob
import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT, cli_env, run_cli

from lmms_eval_earthsci.cli import main as cli_main

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def every_task():
    """Every leaf task we ship (the generated YAMLs' ``task:`` names)."""
    names = []
    for path in sorted(glob.glob(os.path.join(ROOT, "task_yamls", "**", "*.yaml"), recursive=True)):
        with open(path) as f:
            first = [ln for ln in f if ln.startswith(("task: ", "group: "))]
        names += [ln.split(":", 1)[1].strip() for ln in first if ln.startswith("task: ")]
    return names


# --limit 1 (one doc: every statistic's n/a) and 2 (MuSciClaims' one cluster) in `make test`; 3 in CI's `make test-sweep`
@pytest.mark.parametrize("limit", [1, 2, pytest.param(3, marks=pytest.mark.sweep)])
def test_every_task_at_a_small_limit_through_report(limit, mirror, hf_home, tmp_path, capsys):
    tasks = every_task()
    assert len(tasks) >= 70  # the premise: every task, not a handful
    sweep = tmp_path / "sweep"

    def run(response):
        args = ["--model", "dummy", "--model_args", f"response={response}", "--tasks", ",".join(tasks), "--limit", str(limit), "--output_path", str(sweep / response), "--log_samples"]
        return run_cli(args, cli_env(mirror, hf_home), str(tmp_path), timeout=1200)

    with ThreadPoolExecutor(2) as pool:
        procs = list(pool.map(run, ["A", "zzz"]))  # zzz: no doc has an answer (scored wrong, counted)
    for proc in procs:
        assert "Traceback" not in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-4000:]
    out = tmp_path / "rep"
    code = cli_main(["report", str(sweep), "--out", str(out), "--resamples", "200", "--no-html"])
    said = capsys.readouterr()
    log = (out / "report.log").read_text() if (out / "report.log").exists() else ""
    assert code == 0 and "Traceback" not in said.out + said.err + log, (said.err + log)[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["runs"]) == 2
    reported = {r["task"] for r in summary["rows"]}
    assert {"emma_mini_math", "msearth_mcq", "scifibench_cs_f2c", "musciclaims_rd", "mac2025_i2t_option"} <= reported, sorted(reported)
    text = (out / "report.md").read_text()
    if limit == 2:  # MuSciClaims' two docs are the variants of one base claim: one cluster, nothing to resample
        assert "n/a (1 cluster)" in text
