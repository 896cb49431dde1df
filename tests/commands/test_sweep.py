"""Sweeps: runs by model identity (split jobs merge, reruns set aside, rescores apart), labels, natural and
step order, the baseline, Wilson intervals at small n, Benjamini-Hochberg over the paired rows, the
layout past four runs with its trend charts, and summary.csv / summary.json equal to the results JSON."""

import csv
import json
import os

import pytest
import scipy.stats as sps
from test_report import emma_samples, make_run, section

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report import ReportError, read_runs, write_report
from lmms_eval_earthsci.commands.report import charts as report_charts
from lmms_eval_earthsci.commands.report import sweep as report_sweep
from lmms_eval_earthsci.core.scoring.stats import interval

EMMA = {"emma_mini_math": {"emma_acc": 50.0}, "emma_mini_physics": {"emma_acc": 40.0}}


def job(root, folder, model_args, results, samples=None, stamp="20261122_010101", group=None, config=None):
    """An lmms-eval output folder: ``<root>/<folder>/<model>/<stamp>_results.json`` (+ samples)."""
    d = make_run(root, folder, "m", results, samples=samples, stamp=stamp, config={"model": "llava_hf", "model_args": model_args} | (config or {}))
    f = os.path.join(d, "m", f"{stamp}_results.json")
    data = json.load(open(f))
    data["higher_is_better"] = {t: {m: True for m in ms} for t, ms in results.items()}  # as lmms-eval writes it
    if group:
        data["group_subtasks"] = group
    json.dump(data, open(f, "w"))
    return d


# --------------------------------------------------------------------------- identity, merging, reruns


def test_split_jobs_merge_into_one_run_and_other_models_stay_apart(tmp_path):
    """One checkpoint, EMMA by one job and SciFIBench by another (other device, batch size, endpoint):
    one run, no folder in its label; another checkpoint, other generation settings or a rescore stay apart."""
    a = job(tmp_path, "jobA", "pretrained=/ck/run/checkpoint-2000,device=cuda:0,batch_size=8", EMMA)
    b = job(tmp_path, "jobB", "pretrained=/ck/run/checkpoint-2000/,device_map=auto,base_url=http://n1:8000", {"scifibench_cs_f2c": {"scifibench_acc": 70.0}})
    other = job(tmp_path, "other", "pretrained=/ck/run/checkpoint-3000,device=cuda:0", EMMA)
    hot = job(tmp_path, "hot", "pretrained=/ck/run/checkpoint-2000", EMMA, config={"gen_kwargs": {"temperature": 0.7}})
    runs = read_runs([a, b, other, hot])
    merged = next(r for r in runs if len(r.files) == 2)
    assert merged.label == "checkpoint-2000" and set(merged.results) == set(EMMA) | {"scifibench_cs_f2c"}
    assert merged.source["scifibench_cs_f2c"].folder == "jobB" and merged.source["emma_mini_math"].folder == "jobA" and merged.set_aside == []
    assert sorted(r.label for r in runs) == ["checkpoint-2000", "checkpoint-2000 (hot)", "checkpoint-3000 (other)"]
    # a run and its rescore: rescore copies the original's model and arguments, and stays its own run
    re = job(tmp_path, "re", "pretrained=/ck/run/checkpoint-3000,device=cuda:0", EMMA)
    f = os.path.join(re, "m", "20261122_010101_results.json")
    data = json.load(open(f))
    data["rescore"] = {"source": {"kind": "run", "path": other}}
    json.dump(data, open(f, "w"))
    assert [r.label for r in read_runs([other, re])] == ["checkpoint-3000 (other)", "checkpoint-3000 (re)"]


def test_a_rerun_is_set_aside_and_named_and_can_be_kept(tmp_path):
    old = job(tmp_path, "logs", "pretrained=/ck/a", EMMA, stamp="20261122_010101")
    job(tmp_path, "logs", "pretrained=/ck/a", {"emma_mini_math": {"emma_acc": 75.0}}, stamp="20261123_090000")
    (run,) = read_runs([old])
    assert run.value("emma_mini_math", "emma_acc") == (True, 75.0) and run.value("emma_mini_physics", "emma_acc") == (True, 40.0)
    ((f, tasks, why),) = run.set_aside
    assert f.path.endswith("20261122_010101_results.json") and tasks == ["emma_mini_math"] and "rerun" in why
    _, text = write_report([old], str(tmp_path / "rep"), resamples=0)
    runs_md = section(text, "Runs")
    assert any(ln.strip().startswith("- set aside: ") and "20261122_010101_results.json (emma_mini_math)" in ln for ln in runs_md)
    kept = read_runs([old], keep_reruns=True)
    assert [r.label for r in kept] == ["a (2026-11-22 01:01:01)", "a (2026-11-23 09:00:00)"] and all(r.set_aside == [] for r in kept)


def test_a_group_whose_task_was_rerun_is_set_aside(tmp_path):
    """The group's number would mix the old file's physics with the new file's math."""
    d = job(tmp_path, "logs", "pretrained=/ck/a", {"emma_mini": {"emma_acc": 45.0}} | EMMA, group={"emma_mini": ["emma_mini_math", "emma_mini_physics"]})
    job(tmp_path, "logs", "pretrained=/ck/a", {"emma_mini_math": {"emma_acc": 75.0}}, stamp="20261123_090000")
    (run,) = read_runs([d])
    assert "emma_mini" not in run.results and run.value("emma_mini_physics", "emma_acc") == (True, 40.0)
    reasons = {t: why for _, ts, why in run.set_aside for t in ts}
    assert reasons["emma_mini"] == "its task emma_mini_math comes from the newer 20261123_090000_results.json" and "rerun" in reasons["emma_mini_math"]


# --------------------------------------------------------------------------- order, labels, baseline


@pytest.mark.parametrize(
    "path, step",
    [("/ck/run/checkpoint-2000", 2000), ("/ck/step_2000/hf", 2000), ("/ck/global_step2000", 2000), ("/ck/iter_0002000", 2000), ("/ck/run-3/ckpt_500", 500), ("/ck/Qwen2.5-VL-7B", None), ("/ck/stepwise", None)],
)
def test_steps_are_read_from_checkpoint_paths(path, step):
    assert report_sweep.step_in(path) == step


def test_natural_order_steps_first_and_explicit_order(tmp_path):
    paths = [job(tmp_path, f"step_{s}", f"pretrained=/ck/model_{s}", EMMA) for s in (10000, 900, 2000)]
    # no step in the checkpoints' names: the run folders have them
    assert [r.step for r in read_runs(paths)] == [900, 2000, 10000]
    # natural order of labels (numbers as numbers) where there is no step: lexical order would be 1000, 10000, 2000
    plain = [job(tmp_path / "p", f"run{s}", f"pretrained=/ck/m{s}", EMMA) for s in (10000, 1000, 2000)]
    assert [r.label for r in read_runs(plain)] == ["m1000 (run1000)", "m2000 (run2000)", "m10000 (run10000)"]
    assert sorted(["step_10000", "step_900", "step_2000"], key=report_sweep.natural_key) == ["step_900", "step_2000", "step_10000"]
    # a run without a step (the base model) comes first, then the steps
    base = job(tmp_path, "base", "pretrained=/hub/Qwen2.5-VL-7B", EMMA)
    assert [r.label for r in read_runs(paths + [base])][:2] == ["Qwen2.5-VL-7B (base)", "model_900 (step_900)"]
    # --order puts the runs it names first; --label renames; --baseline picks the comparison's base
    runs = read_runs(paths + [base], labels=[f"{base}=base model"], order=["step_2000"])
    assert [r.label for r in runs] == ["model_2000 (step_2000)", "base model", "model_900 (step_900)", "model_10000 (step_10000)"]
    assert report_sweep.baseline(runs, "base model").label == "base model" and report_sweep.baseline(runs).label == "model_2000 (step_2000)"
    with pytest.raises(ReportError, match=r"--baseline 'nope': no run has that label or folder \(runs: model_2000"):
        report_sweep.baseline(runs, "nope")
    with pytest.raises(ReportError, match="--label 'x': expected FOLDER=NAME"):
        read_runs(paths, labels=["x"])
    with pytest.raises(ReportError, match="two runs would be called 'same'"):
        read_runs(paths, labels=["step_900=same", "step_2000=same"])


# --------------------------------------------------------------------------- intervals and tests


@pytest.mark.parametrize("k", [0, 9])
def test_small_n_right_wrong_intervals_do_not_collapse(k):
    items = [{"score": 100.0 if i < k else 0.0} for i in range(9)]
    iv = interval(items, "lmms_eval_earthsci.core.scoring.metrics.mean_present")
    ci = sps.binomtest(k, 9).proportion_ci(method="wilson")
    assert iv.method == "Wilson" and (iv.low, iv.high) == pytest.approx((100 * ci.low, 100 * ci.high))
    assert iv.high - iv.low > 25  # 0 of 9 is not 0.00–0.00
    assert (iv.low == 0.0) == (k == 0) and (iv.high == pytest.approx(100.0)) == (k == 9)


def test_every_paired_row_has_a_p_and_the_adjustment_is_the_librarys(tmp_path):
    """Right/wrong metrics: McNemar's p; MuSciClaims' macro F1 (a corpus metric): the paired bootstrap's
    p; adjusted over all rows by scipy's Benjamini-Hochberg; 'changed' follows the adjusted p."""
    def mc(i, pred):
        gold = ("SUPPORT", "NEUTRAL", "CONTRADICT")[i % 3]
        return {"claim_id": f"c{i}", "base_claim_id": f"b{i // 3}", "gold": gold, "pred": pred(gold, i), "stage": "json", "domain": "biology"}

    def run(name, right_every, mc_pred):
        ok = [i % right_every != 0 for i in range(60)]
        docs = [mc(i, mc_pred) for i in range(60)]
        return job(tmp_path, name, f"pretrained=/ck/{name}", {"emma_mini_math": {"emma_acc": 100 * sum(ok) / 60}, "musciclaims_d": {"musciclaims_macro_f1": 50.0}},
                   samples={"emma_mini_math": emma_samples(ok), "musciclaims_d": [{"doc_id": i, "musciclaims_macro_f1": d} for i, d in enumerate(docs)]})

    a = run("a", 2, lambda g, i: g if i % 2 else "SUPPORT")
    b = run("b", 10, lambda g, i: g)
    c = run("c", 3, lambda g, i: g if i % 4 else "NEUTRAL")
    _, text = write_report([a, b, c], str(tmp_path / "rep"), resamples=1000)
    rows = [[x.strip() for x in ln.strip("|").split("|")] for ln in section(text, "Paired comparisons", ci=True) if ln.startswith(("| emma", "| musciclaims"))]
    assert len(rows) == 4 and {r[6] for r in rows} == {"McNemar exact", "paired bootstrap"}
    assert all(r[5] not in ("–", "") for r in rows)
    with open(tmp_path / "rep" / "summary.json") as f:
        paired = [r for r in json.load(f)["rows"] if r["kind"] == "paired"]
    raw = [r["p"] for r in paired]
    assert [r["p_adjusted"] for r in paired] == pytest.approx(list(sps.false_discovery_control(raw, method="bh")))
    assert all(r["changed"] == (r["p_adjusted"] < 0.05) for r in paired)
    assert any(r["changed"] for r in paired)  # b gains 24 of 60 docs over a: the premise of the table below
    changes = section(text, "Changes against the baseline", ci=True)
    hits = [ln for ln in changes if ln.startswith("| emma_mini_math |")]
    assert hits and all("better" in ln for ln in hits)


# --------------------------------------------------------------------------- layout, trend, summary


def sweep(tmp_path, n):
    paths = []
    for i in range(n):
        ok = [(j + i) % (2 + i % 3) != 0 for j in range(30)]
        paths.append(job(tmp_path, f"step_{(i + 1) * 1000}", f"pretrained=/ck/run/checkpoint-{(i + 1) * 1000}",
                         {"emma_mini_math": {"emma_acc": 100 * sum(ok) / 30}, "msearth_mcq": {"msearth_acc": 40.0 + i}},
                         samples={"emma_mini_math": emma_samples(ok)}))
    return paths


def test_past_four_runs_the_headline_turns_and_a_trend_chart_is_drawn(tmp_path):
    four = sweep(tmp_path / "four", 4)
    _, text = write_report(four, str(tmp_path / "r4"), resamples=200)
    assert any(ln.startswith("| benchmark | task | metric | checkpoint-1000 (step_1000) | 95% CI |") for ln in section(text, "Headline", ci=True))
    assert not (tmp_path / "r4" / "emma_trend.png").exists()
    five = sweep(tmp_path / "five", 5)
    _, text = write_report(five, str(tmp_path / "r5"), resamples=200)
    head = section(text, "Headline", ci=True)
    emma = head[head.index("### EMMA"):]
    assert emma[2] == "| run | step | emma_mini_math · emma_acc |"
    runs = read_runs(five)
    for i, r in enumerate(runs):
        v = r.value("emma_mini_math", "emma_acc")[1]
        assert emma[4 + i].startswith(f"| {r.column}{' (baseline)' if i == 0 else ''} | {r.step} | {v:.2f} (")
    assert "![emma_trend.png](emma_trend.png)" in emma and (tmp_path / "r5" / "emma_trend.png").stat().st_size > 5000
    trend = report_charts.build_trend(registry.get("emma"), [("emma_mini_math", "emma_acc")], runs, "GPT-4o")
    assert trend.steps == [1000, 2000, 3000, 4000, 5000] and trend.lines[0].values == [r.value("emma_mini_math", "emma_acc")[1] for r in runs]
    assert all(lo < v < hi for lo, v, hi in zip(trend.lines[0].lows, trend.lines[0].values, trend.lines[0].highs))
    fig = report_charts.draw_trend(trend)
    assert len(fig.axes[0].lines) >= 1 and fig.axes[0].collections  # the line and its band
    # the full paired table is in the summary, the changes table in the report
    assert any("are in `summary.csv` and `summary.json`" in ln for ln in section(text, "Paired comparisons"))
    # counts: a line per task, a column per run (docs · no answer · judge failures)
    counts = section(text, "EMMA", ci=True)
    row = next(ln for ln in counts[counts.index("### Counts"):] if ln.startswith("| emma_mini_math |"))
    assert row == "| emma_mini_math | " + " | ".join("30 · 0 · –" for _ in runs) + " |"


def test_summary_rows_equal_the_results_json_and_text_cells_are_not_formulas(tmp_path):
    paths = sweep(tmp_path, 3)
    write_report(paths, str(tmp_path / "rep"), resamples=200, labels=[f"{paths[2]}==HYPERLINK(\"x\")"])
    with open(tmp_path / "rep" / "summary.json") as f:
        data = json.load(f)
    metric_rows = [r for r in data["rows"] if r["kind"] == "metric"]
    assert len(metric_rows) == 3 * 2
    for row in metric_rows:
        with open(row["results_file"]) as f:
            res = json.load(f)
        assert row["value"] == res["results"][row["task"]][row["metric"] + ",none"]
        assert row["model_args"] == res["config"]["model_args"]
    acc = [r for r in metric_rows if r["metric"] == "emma_acc"]
    assert all(r["ci_method"] == "Wilson" and r["docs"] == 30 and r["ci_low"] < r["value"] < r["ci_high"] for r in acc)
    assert [r["step"] for r in acc] == [1000, 2000, 3000]
    with open(tmp_path / "rep" / "summary.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(data["rows"])
    assert {r["run"] for r in table} >= {"'=HYPERLINK(\"x\")"}  # a formula made text
    assert all(float(r["value"]) == pytest.approx(j["value"]) for r, j in zip(table, data["rows"]) if r["value"])
    paired = [r for r in data["rows"] if r["kind"] == "paired"]
    assert len(paired) == 2 * 2 and all(r["baseline"] == "checkpoint-1000 (step_1000)" for r in paired)
    emma = [r for r in paired if r["metric"] == "emma_acc"]
    assert all(r["test"] == "McNemar exact" and r["p"] is not None and r["discordant_run_right"] is not None for r in emma)
    # no samples for msearth_mcq: no test, and its difference says nothing about 0
    ms = [r for r in paired if r["metric"] == "msearth_acc"]
    assert all(r["p"] is None and r["changed"] is None for r in ms)


def test_runs_of_one_model_are_named_by_the_settings_they_differ_in(tmp_path):
    """Two runs of one checkpoint with other --gen_kwargs written to one folder: a lab reads a sweep by its
    settings, not by the time each run was written (the --limit both share is not named)."""
    hot = job(tmp_path, "logs", "pretrained=/ck/checkpoint-1000", EMMA, stamp="20261127_114102", config={"gen_kwargs": "temperature=0.7,top_p=0.9", "limit": 5})
    job(tmp_path, "logs", "pretrained=/ck/checkpoint-1000", EMMA, stamp="20261127_114116", config={"gen_kwargs": "temperature=0,top_p=0.9", "limit": 5})
    labels = sorted(r.label for r in read_runs([hot]))
    assert labels == ["checkpoint-1000 (logs) (temperature=0)", "checkpoint-1000 (logs) (temperature=0.7)"], labels
