"""A sweep of real lmms-eval output folders: one checkpoint evaluated by two jobs (EMMA by one, SciFIBench by
another, on another device) and one of them run twice, beside a second checkpoint; `report` makes two
runs in step order, merges the split jobs, sets the rerun aside and names it, and its summary equals
the results JSON lmms-eval wrote."""

import glob
import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import cli_env, run_cli

from lmms_eval_earthsci.cli import main as cli_main

pytestmark = pytest.mark.e2e


def _job(mirror, hf_home, tmp_path, out, response, checkpoint, device, tasks):
    args = ["--model", "dummy", "--model_args", f"response={response},pretrained={checkpoint},device={device}", "--tasks", tasks, "--output_path", str(out), "--log_samples"]
    run_cli(args, cli_env(mirror, hf_home), str(tmp_path))


def test_split_jobs_a_rerun_and_two_checkpoints(mirror, hf_home, tmp_path, capsys):
    sweep = tmp_path / "sweep"
    ck2000, ck900 = "/ckpts/run/checkpoint-2000", "/ckpts/run/checkpoint-900"
    jobs = [
        (sweep / "jobA", "\\boxed{B}", ck2000, "cpu", "emma_mini"),
        (sweep / "jobB", "\\boxed{B}", ck2000, "cuda:1", "scifibench_cs_f2c"),
        (sweep / "jobB", "\\boxed{B}", ck2000, "cuda:1", "scifibench_cs_f2c"),  # a rerun of the same task into the same folder
        (sweep / "ck900", "\\boxed{A}", ck900, "cpu", "emma_mini,scifibench_cs_f2c"),
    ]
    with ThreadPoolExecutor(2) as pool:  # two at a time, as a scheduler would; the rerun after the first jobB
        list(pool.map(lambda j: _job(mirror, hf_home, tmp_path, *j), jobs[:2]))
        list(pool.map(lambda j: _job(mirror, hf_home, tmp_path, *j), jobs[2:]))
    job_b = sorted(glob.glob(str(sweep / "jobB" / "*" / "*_results.json")))
    assert len(job_b) == 2, "the rerun did not write a second results file: the test would prove nothing"

    out = tmp_path / "rep"
    assert cli_main(["report", str(sweep), "--out", str(out), "--resamples", "500", "--no-html"]) == 0
    text = (out / "report.md").read_text()
    summary = json.loads((out / "summary.json").read_text())
    runs = {r["run"]: r for r in summary["runs"]}
    # two runs, in step order; the split jobs are one run named by its checkpoint alone
    assert list(runs) == ["checkpoint-900 (ck900)", "checkpoint-2000"]
    merged = runs["checkpoint-2000"]
    assert sorted(os.path.basename(os.path.dirname(os.path.dirname(p))) for p in merged["results_files"]) == ["jobA", "jobB"]
    assert merged["results_files"][-1] == job_b[1] and merged["set_aside"] == [{"results_file": job_b[0], "tasks": ["scifibench_cs_f2c"], "why": "a newer results file of this run has them (a rerun)"}]
    assert f"  - set aside: {job_b[0]} (scifibench_cs_f2c): a newer results file of this run has them (a rerun)" in text
    assert runs["checkpoint-900 (ck900)"]["baseline"] and [r["step"] for r in summary["runs"]] == [900, 2000]
    # every value of the summary is the value lmms-eval wrote in the results file it names
    rows = [r for r in summary["rows"] if r["kind"] == "metric"]
    assert {r["task"] for r in rows} >= {"emma_mini", "emma_mini_math", "scifibench_cs_f2c"}
    for row in rows:
        with open(row["results_file"]) as f:
            res = json.load(f)
        assert row["value"] == res["results"][row["task"]][row["metric"] + ",none"], row
    # the two checkpoints answer differently: paired rows with McNemar's p against the baseline
    paired = [r for r in summary["rows"] if r["kind"] == "paired" and r["metric"] == "emma_acc"]
    assert paired and all(r["baseline"] == "checkpoint-900 (ck900)" and r["test"] == "McNemar exact" and r["p"] is not None for r in paired)
