"""The report on hand-made lmms-eval output folders: numbers in the table are the numbers in the JSON,
paper rows come from the bundled tables, counts come from the samples, bad folders name the file."""

import json
import os

import pytest

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.cli import main as cli_main
from lmms_eval_earthsci.commands.report import ReportError, counts, read_runs, write_report
from lmms_eval_earthsci.commands.report import charts as report_charts
from lmms_eval_earthsci.commands.report import intervals as report_intervals
from lmms_eval_earthsci.commands.report import papers as report_papers
from lmms_eval_earthsci.commands.report import sections as report_sections


def chart_specs(bench, runs, paper_model):
    """The charts a benchmark's section draws (its report spec's, bars built from the runs)."""
    b = registry.get(bench)
    return [report_charts.build_chart(b, c, runs, paper_model) for c in b.report_spec().charts(report_sections.BenchView(b, runs, paper_model))]


def paper_entries(bench):
    return report_papers.paper_entries(registry.get(bench))


def reliability_specs(runs, paper_model):
    b = registry.get("mac")
    return b.report_spec().reliability(report_sections.BenchView(b, runs, paper_model), paper_model)


def make_run(root, name, model, results, samples=None, stamp="20261122_010101", config=None, n_samples=None, configs=None):
    d = os.path.join(root, name, model.replace("/", "__"))  # lmms-eval's model folder: the name, sanitised
    os.makedirs(d, exist_ok=True)
    payload = {
        "results": {t: {f"{k},none": v for k, v in m.items()} | {f"{k}_stderr,none": "N/A" for k in m} | {"alias": t} for t, m in results.items()},
        "config": {"model": "fake", "model_args": f"model={model}", "limit": None} | (config or {}),
    }
    if n_samples:
        payload["n-samples"] = n_samples
    if configs:  # task -> its config as lmms-eval records it (metadata.earthsci_layout, ...)
        payload["configs"] = configs
    with open(os.path.join(d, f"{stamp}_results.json"), "w") as f:
        json.dump(payload, f)
    for task, rows in (samples or {}).items():
        with open(os.path.join(d, f"{stamp}_samples_{task}.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
    return os.path.join(root, name)


def no_ci(text):
    """The report's lines with the headline table's "95% CI" and "CI method" columns left out (the
    intervals have their own tests below): the numbers the older assertions look for."""
    out, drop = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            drop = None
            out.append(line)
            continue
        cells = line.strip("|").split("|")
        if drop is None:
            drop = {i for i, c in enumerate(cells) if c.strip() in ("95% CI", "CI method")}
        out.append("|" + "|".join(c for i, c in enumerate(cells) if i not in drop) + "|")
    return out


def section(text, title, ci=False):
    """The lines of the ``## title`` section (with the "95% CI" columns if ``ci``)."""
    lines = text.splitlines() if ci else no_ci(text)
    start = lines.index(f"## {title}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def table_after(lines, first_cell):
    """The rows of the first Markdown table whose header starts with ``| first_cell |``."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"| {first_cell} |"))
    out = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        out.append(ln)
    return out


def two_runs(tmp_path):
    a = make_run(
        tmp_path,
        "run_a",
        "model-a",
        {
            "emma_mini": {"emma_acc": 36.25, "emma_acc_lenient": 37.5, "emma_maj@k": 36.25, "emma_pass@k": 36.25},
            "emma_mini_math": {"emma_acc": 27.0, "emma_acc_lenient": 28.0, "emma_category_2d_transformation": 50.0, "emma_category_path_tracing": None, "emma_type_open_ended": 10.0},
            "emma_mini_physics": {"emma_acc": 44.0, "emma_category_path_tracing": 40.0},
            "scifibench_cs_f2c": {"scifibench_acc": 75.4, "scifibench_no_answer": 1.2, "scifibench_category_cs_cv": 80.0},
            "msearth_open": {"msearth_oe_acc": None, "msearth_oe_rouge1": 38.07, "msearth_oe_judge_failed": None, "msearth_oe_bertscore": []},
        },
        samples={
            "emma_mini_math": [{"emma_acc": {"score": 100.0, "rule": "boxed"}}, {"emma_acc": {"score": 0.0, "rule": "none"}}, {"emma_acc": {"score": 0.0, "rule": "boxed"}}],
            "msearth_open": [{"msearth_oe_acc": None, "msearth_oe_judge_failed": None}, {"msearth_oe_acc": None, "msearth_oe_judge_failed": None}],
        },
    )
    b = make_run(tmp_path, "run_b", "model-b", {"emma_mini": {"emma_acc": 12.5}, "emma_mini_math": {"emma_acc": 3.0}})
    return a, b


def test_tables_plots_paper_rows_and_counts(tmp_path):
    a, b = two_runs(tmp_path)
    out = tmp_path / "report"
    path, text = write_report([a, b], str(out))
    assert path == str(out / "report.md") and open(path).read().strip() == text.strip()
    lines = no_ci(text)
    assert "| EMMA | emma_mini | emma_acc | 36.25 | 12.50 | 36.00 |" in lines  # paper: GPT-4o CoT, EMMA-mini overall
    assert "| SciFIBench | scifibench_cs_f2c | scifibench_acc | 75.40 | – | – |" in lines
    assert "| MSEarth | msearth_open | msearth_oe_acc | n/a | – | 48.55 |" in lines  # unavailable (no judge)
    emma = section(text, "EMMA")
    assert "| math | 27.00 | 3.00 | 27.00 |" in emma  # subject row: emma_acc of the subject task, paper beside
    assert "| emma_acc_lenient | 37.50 | – | – |" in emma  # missing in run b
    # paper rows: one per model; EMMA-mini Table 2 (GPT-4o CoT: 36.00), SciFIBench main table (GPT-4o CS F->C: 75.40)
    papers = section(text, "Paper reference")
    assert papers.index("### EMMA") < papers.index("| GPT-4o | 36.00 |") < papers.index("### MSEarth")
    assert "| GPT-4o | 75.40 |" in papers[papers.index("### SciFIBench") :]
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "emma_mini_by_subject.png" in pngs and "scifibench_by_split.png" in pngs
    assert all((out / p).stat().st_size > 1000 for p in pngs)
    assert "![emma_mini_by_subject.png](emma_mini_by_subject.png)" in text


def test_no_answer_is_counted_once_per_doc_and_weak_similarity_picks_apart(tmp_path):
    """Issue: 2 docs without an answer read 4 (emma_acc and emma_acc_lenient both counted), more than
    the docs scored; MSEarth's similarity fallback on noise (similarity 0.15) counted as an answer."""
    run = make_run(
        tmp_path,
        "r",
        "m",
        {"emma_mini_math": {"emma_acc": 33.3}, "msearth_mcq": {"msearth_acc": 50.0}, "scifibench_cs_f2c": {"scifibench_acc": 50.0}},
        samples={
            "emma_mini_math": [
                {"emma_acc": {"score": 0.0, "rule": "none"}, "emma_acc_lenient": {"score": 0.0, "rule": "none"}, "emma_maj@k": {"score": 0.0, "k": 1}},
                {"emma_acc": {"score": 0.0, "rule": "none"}, "emma_acc_lenient": {"score": 0.0, "rule": "none"}},
                {"emma_acc": {"score": 100.0, "rule": "boxed"}, "emma_acc_lenient": {"score": 100.0, "rule": "official"}},
            ],
            "msearth_mcq": [
                {"msearth_acc": {"score": 0.0, "rule": "similarity", "option": "B", "similarity": 0.15}, "msearth_acc_strict": {"score": 0.0, "option": None, "content": "boxed{B}"}},
                {"msearth_acc": {"score": 100.0, "rule": "similarity", "option": "A", "similarity": 0.82}},
                {"msearth_acc": {"score": 0.0, "rule": "similarity"}},  # no option lines matched: no answer
                {"msearth_acc": {"score": 0.0, "rule": "none"}},
                {"msearth_acc": {"score": 0.0, "rule": "no-answer"}},
                {"msearth_acc": {"score": 100.0, "rule": "letter", "option": "A"}},
            ],
            "scifibench_cs_f2c": [{"scifibench_acc": {"score": 0.0, "stage": "ambiguous"}, "scifibench_no_answer": 100.0}, {"scifibench_acc": {"score": 100.0, "stage": "strict"}, "scifibench_no_answer": 0.0}],
        },
    )
    c = counts(read_runs([run])[0], ["emma_mini_math", "msearth_mcq", "scifibench_cs_f2c"])
    assert (c["emma_mini_math"]["docs"], c["emma_mini_math"]["no_answer"], c["emma_mini_math"]["low_confidence"]) == (3, 2, 0)
    assert (c["msearth_mcq"]["docs"], c["msearth_mcq"]["no_answer"], c["msearth_mcq"]["low_confidence"]) == (6, 3, 1)
    assert (c["scifibench_cs_f2c"]["docs"], c["scifibench_cs_f2c"]["no_answer"]) == (2, 1)
    assert 0.15 < registry.get("msearth").report_spec().low_confidence_similarity < 0.82
    _, text = write_report([run], str(tmp_path / "rep"))
    rows = table_after(section(text, "EMMA"), "task")
    assert rows[0] == "| task | run | docs scored | no answer extracted | low-confidence picks | judge failures | judge cache hits |"
    assert "| emma_mini_math | m (r) | 3 | 2 | 0 | – | – |" in rows
    assert "| msearth_mcq | m (r) | 6 | 3 | 1 | – | – |" in section(text, "MSEarth")


def test_judge_failures_and_cache_hits_come_from_the_judged_metric(tmp_path):
    """The judge record travels inside the judged metric's value (``judge``); failures by cause."""

    def judged(status, cause=None, cached=False, score=0.0):
        value = {"judge": {"status": status, "verdict": None, "reply": "x", "error": None if status == "judged" else "e", "cause": cause, "cached": cached}}
        return value | ({} if score is None else {"score": score})

    def failed(status, cause=None, cached=False):
        return {"score": int(status != "judged"), "task": "t", "cause": cause, "cached": cached, "attempts": 1, "prompt_tokens": 9, "completion_tokens": 1}

    run = make_run(
        tmp_path,
        "r",
        "m",
        {
            "emma_mini_judge_math": {"emma_acc": 25.0, "emma_judge_acc": 25.0, "emma_judge_failed": 3},
            "msearth_caption": {"msearth_cap_score": 3.0, "msearth_cap_judge_failed": 1},
            "scifibench_cs_f2c_judge": {"scifibench_acc": 0.0, "scifibench_acc_judge": None},
        },
        samples={
            "emma_mini_judge_math": [
                {"emma_acc": {"score": 100.0, "rule": "boxed"}, "emma_judge_acc": judged("judged", cached=True, score=100.0), "emma_judge_failed": failed("judged", cached=True)},
                {"emma_acc": {"score": 0.0, "rule": "boxed"}, "emma_judge_acc": judged("request_failed", "HTTP 401"), "emma_judge_failed": failed("request_failed", "HTTP 401")},
                {"emma_acc": {"score": 0.0, "rule": "boxed"}, "emma_judge_acc": judged("request_failed", "HTTP 401"), "emma_judge_failed": failed("request_failed", "HTTP 401")},
                {"emma_acc": {"score": 0.0, "rule": "boxed"}, "emma_judge_acc": judged("parse_failed", "unparseable reply", cached=True), "emma_judge_failed": failed("parse_failed", "unparseable reply", cached=True)},
            ],
            "msearth_caption": [
                {"msearth_cap_score": judged("judged", score=3.0), "msearth_cap_judge_failed": failed("judged")},
                {"msearth_cap_score": judged("parse_failed", "unparseable reply", score=None), "msearth_cap_judge_failed": failed("parse_failed", "unparseable reply")},
            ],
            "scifibench_cs_f2c_judge": [{"scifibench_acc": {"score": 0.0, "stage": "strict"}, "scifibench_acc_judge": None, "scifibench_judge_failed": None}],
        },
    )
    c = counts(read_runs([run])[0], ["emma_mini_judge_math", "msearth_caption", "scifibench_cs_f2c_judge"])
    assert c["emma_mini_judge_math"]["judge_failed"] == 3 and c["emma_mini_judge_math"]["judge_cache_hits"] == 2
    assert c["emma_mini_judge_math"]["judge_failure_causes"] == {"HTTP 401": 2, "unparseable reply": 1}
    assert c["msearth_caption"]["judge_failed"] == 1 and c["msearth_caption"]["judge_cache_hits"] == 0
    assert c["scifibench_cs_f2c_judge"]["judged"] is False  # no judge configured
    _, text = write_report([run], str(tmp_path / "rep"))
    assert "| emma_mini_judge_math | m (r) | 4 | 0 | 0 | 3 (HTTP 401 ×2, unparseable reply ×1) | 2 |" in section(text, "EMMA")
    assert "| msearth_caption | m (r) | 2 | – | – | 1 (unparseable reply ×1) | 0 |" in section(text, "MSEarth")
    assert "| scifibench_cs_f2c_judge | m (r) | 1 | 0 | 0 | no judge | no judge |" in section(text, "SciFIBench")


def test_report_leads_with_one_headline_table_and_compact_breakdowns(tmp_path):
    """Issue: 662 lines, EMMA alone 280 rows, 47 cells reading ``[]``."""
    a, b = two_runs(tmp_path)
    _, text = write_report([a, b], str(tmp_path / "rep"))
    lines = no_ci(text)
    assert lines[0] == "# lmms_eval_earthsci report"
    # two runs: the changes against the baseline first (none here: run_b has no samples), then the headline
    sections = [ln for ln in lines if ln.startswith("## ")]
    assert sections[:2] == ["## Changes against the baseline", "## Headline"]
    headline = table_after(section(text, "Headline"), "benchmark")
    assert headline[0] == "| benchmark | task | metric | model-a (run_a) | model-b (run_b) | paper: GPT-4o |"
    # one row per benchmark task's headline metric; subjects and breakdowns are not in it
    assert [r.split(" | ")[1:3] for r in headline[2:]] == [["emma_mini", "emma_acc"], ["msearth_open", "msearth_oe_acc"], ["scifibench_cs_f2c", "scifibench_acc"]]
    assert "[]" not in text
    emma = section(text, "EMMA")
    # breakdowns: one row per label, one column per run; no row where no run has a number
    rows = table_after(emma, "slice")
    assert rows[2:] == [
        "| emma_acc_lenient | 37.50 | – | – |",
        "| math | 27.00 | 3.00 | 27.00 |",
        "| math · category 2d transformation | 50.00 | – | – |",
        "| math · type open ended | 10.00 | – | – |",
        "| physics | 44.00 | – | 44.00 |",
        "| physics · category path tracing | 40.00 | – | – |",
    ]  # k = 1: maj@k / pass@k equal emma_acc and are not repeated; math's path tracing is null in every run
    assert len(lines[: lines.index("## Paper tables")]) < 90  # the papers' own tables follow, as long as the papers print them


def test_run_columns_name_the_model_and_the_run_folder_or_date(tmp_path):
    """A column is ``model (run folder)``; the model is the checkpoint's last path part. The same model
    in two folders is one run (changed on purpose with the sweeps: it was two columns); a second results
    file of the same task (the demo run twice) is a rerun: the newest is used and the other set aside,
    unless reruns are kept, when lmms-eval's date tells them apart."""
    res = {"emma_mini": {"emma_acc": 50.0}}
    a = make_run(str(tmp_path / "a"), "sweep_1", "org/Qwen2.5-VL-7B", res)
    b = make_run(str(tmp_path / "b"), "sweep_2", "org/Qwen2.5-VL-7B", {"emma_mini": {"emma_acc": 60.0}}, stamp="20261122_020202")
    two = make_run(str(tmp_path / "c"), "demo", "tiny", res, stamp="20261123_101500")
    make_run(str(tmp_path / "c"), "demo", "tiny", {"emma_mini": {"emma_acc": 70.0}}, stamp="20261123_114501")
    (one,) = read_runs([a, b])
    # the newer file has every task: the run is that file's, named by its folder (a run merged from two
    # folders drops the folder part: test_split_jobs_merge...)
    assert one.column == "Qwen2.5-VL-7B (sweep_2)" and one.value("emma_mini", "emma_acc") == (True, 60.0)
    assert [f.path for f, _, _ in one.set_aside] == [os.path.join(a, "org__Qwen2.5-VL-7B", "20261122_010101_results.json")]
    (rerun,) = read_runs([two])
    assert rerun.column == "tiny (demo)" and rerun.value("emma_mini", "emma_acc") == (True, 70.0)
    assert [r.column for r in read_runs([two], keep_reruns=True)] == ["tiny (2026-11-23 10:15:00)", "tiny (2026-11-23 11:45:01)"]
    # --model only (no checkpoint argument): the backend's name
    plain = make_run(str(tmp_path / "d"), "r", "x", res, config={"model_args": ""})
    assert read_runs([plain])[0].column == "fake (r)"


def test_default_out_is_beside_the_first_run_as_help_says(tmp_path, capsys):
    run = make_run(str(tmp_path / "logs"), "run_a", "m", {"emma_mini": {"emma_acc": 50.0}})
    assert cli_main(["report", run, "--resamples", "0"]) == 0
    assert os.path.isfile(tmp_path / "logs" / "run_a-report" / "report.md")
    assert not os.path.exists(os.path.join(run, "report")) and not os.path.exists(os.path.join(run, "run_a-report"))
    assert "OUTPUT_PATH-report/ beside the first run folder" in " ".join(_help("report").split())


def _help(command):
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        cli_main([command, "--help"])
    return buf.getvalue()


def test_a_metric_that_could_not_be_computed_reads_na_with_its_reason(tmp_path):
    """BERTScore offline: null in the results JSON, the reason beside it (configs.<task>.metadata.
    earthsci_unavailable): its row reads n/a with the reason under the table instead of vanishing."""
    why = "the Hugging Face Hub is offline (HF_HUB_OFFLINE=1) and 'roberta-large' is not in the Hugging Face cache; set EARTHSCI_BERTSCORE_MODEL to a local copy of roberta-large"
    run = make_run(str(tmp_path), "r", "m", {"msearth_open": {"msearth_oe_acc": 50.0, "msearth_oe_rouge1": 38.07, "msearth_oe_bertscore": None, "msearth_oe_meteor": None}})
    path = next(p for p in (tmp_path / "r" / "m").iterdir() if p.name.endswith("_results.json"))
    data = json.loads(path.read_text())
    data["configs"] = {"msearth_open": {"metadata": {"version": 1, "earthsci_unavailable": {"msearth_oe_bertscore": why}}}}
    path.write_text(json.dumps(data))
    _, text = write_report([run], str(tmp_path / "rep"), resamples=0)
    ms = section(text, "MSEarth")
    assert "| msearth_oe_bertscore | n/a | 89.78 |" in ms, ms  # the paper's number stays beside it
    assert f"`msearth_oe_bertscore` n/a in m (r): {why}." in [ln.strip() for ln in ms]
    # a metric with no value and no recorded reason (an empty slice) is still left out
    assert not any("meteor" in ln.lower() for ln in ms if ln.startswith("|"))


def test_paper_numbers_compare_like_with_like(tmp_path):
    """SciFIBench's paper used an LLM extractor: its numbers sit against scifibench_acc_judge; the EMMA
    judge chart plots emma_judge_acc; protocol differences carry a footnote."""
    run = make_run(
        tmp_path,
        "r",
        "m",
        {
            "scifibench_cs_f2c": {"scifibench_acc": 10.0},
            "scifibench_cs_f2c_judge": {"scifibench_acc": 10.0, "scifibench_acc_judge": 70.0},
            "emma_mini": {"emma_acc": 20.0},
            "emma_mini_math": {"emma_acc": 20.0},
            "emma_mini_judge": {"emma_acc": 20.0, "emma_judge_acc": 30.0},
            "emma_mini_judge_math": {"emma_acc": 20.0, "emma_judge_acc": 30.0},
        },
    )
    _, text = write_report([run], str(tmp_path / "rep"))
    lines = no_ci(text)
    assert "| SciFIBench | scifibench_cs_f2c | scifibench_acc | 10.00 | – |" in lines
    assert "| SciFIBench | scifibench_cs_f2c_judge | scifibench_acc_judge | 70.00 | 75.40 |" in lines
    judge_row = next(ln for ln in lines if ln.startswith("| EMMA | emma_mini_judge | emma_judge_acc |"))
    assert judge_row.endswith("| 30.00 | 36.00 ‡ |")
    assert any(ln.startswith("‡") and "rule-based" in ln for ln in lines)
    runs = read_runs([run])
    judge_charts = [c for c in chart_specs("emma", runs, report_papers.DEFAULT_PAPER_MODEL) if "judge" in c.slug]
    assert judge_charts and all(bar.metric == "emma_judge_acc" for c in judge_charts for bar in c.bars)
    sci = [c for c in chart_specs("scifibench", runs, report_papers.DEFAULT_PAPER_MODEL)]
    marked = {(b.task, b.metric) for c in sci for b in c.bars if b.paper is not None}
    assert marked == {("scifibench_cs_f2c_judge", "scifibench_acc_judge")}
    # an open model the EMMA paper sampled at temperature 0.7, against our greedy runs
    _, text = write_report([run], str(tmp_path / "rep2"), paper_model="Qwen2-VL-72B-Instruct")
    lines = no_ci(text)
    assert "| EMMA | emma_mini | emma_acc | 20.00 | 31.00 † |" in lines
    assert any(ln.startswith("†") and "temperature 0.7" in ln and "greedy" in ln for ln in lines)


def test_paper_model_names_are_normalised_across_benchmarks(tmp_path, capsys):
    assert report_papers.canonical_model("LLaVA-onvision-72B") == report_papers.canonical_model("LLaVA-onevision-72B") == report_papers.canonical_model("LLaVA-Onevision-72B") == "LLaVA-OneVision-72B"
    assert report_papers.canonical_model("Gemini2.5-Flash") == "Gemini-2.5-Flash" and report_papers.canonical_model("Claude-3.5-haiku") == "Claude-3.5-Haiku"
    assert report_papers.canonical_model("Qwen2.5-VL-7B-Chat") == "Qwen2.5-VL-7B"
    names = {e.model for bench in ("emma", "msearth", "scifibench") for e in paper_entries(bench)[0]}
    keys = {}
    for n in names:  # no two spellings of one model left
        assert keys.setdefault(report_papers.model_key(n), n) == n, (n, keys[report_papers.model_key(n)])
    # the paper's own spelling stays recorded in the data
    with open(registry.get("msearth").paper_numbers) as f:
        assert "LLaVA-onvision-72B" in {r["model"] for r in json.load(f)["rows"]}
    run = make_run(tmp_path, "r", "m", {"msearth_mcq": {"msearth_acc": 40.0}, "msearth_caption": {"msearth_cap_score": 2.0}})
    _, text = write_report([run], str(tmp_path / "rep"))
    ms = section(text, "Paper reference")
    assert len([ln for ln in ms if ln.startswith("| LLaVA-OneVision-72B |")]) == 1
    assert len([ln for ln in ms if ln.startswith("| Gemini-2.5-Flash |")]) == 1
    assert not any("onvision" in ln or "Gemini2.5" in ln for ln in ms)
    # --paper-model: matched whatever the spelling; an unknown name is an error listing the valid ones
    _, text = write_report([run], str(tmp_path / "rep2"), paper_model="llava-onevision-72b")
    assert "| MSEarth | msearth_mcq | msearth_acc | 40.00 | 51.11 |" in no_ci(text)
    with pytest.raises(ReportError, match=r"unknown paper model 'GPT-5'.*GPT-4o.*LLaVA-OneVision-72B"):
        write_report([run], str(tmp_path / "rep3"), paper_model="GPT-5")
    assert cli_main(["report", run, "--out", str(tmp_path / "rep4"), "--paper-model", "GPT-5"]) == 2
    assert "valid names: " in capsys.readouterr().err


def test_partial_runs_are_flagged_and_charts_draw_only_what_exists(tmp_path):
    full = make_run(
        tmp_path,
        "full",
        "m",
        {
            "msearth_mcq": {"msearth_acc": 40.0, "msearth_image_single": 50.0, "msearth_image_multi": None, "msearth_image_cross": 30.0},
            "msearth_open": {"msearth_oe_acc": None, "msearth_image_single": None, "msearth_sphere_hydrology": None},
        },
        samples={
            "msearth_mcq": [
                {"msearth_acc": {"score": 100.0, "rule": "letter"}, "msearth_image_single": 100.0, "msearth_image_multi": None, "msearth_image_cross": None},
                {"msearth_acc": {"score": 0.0, "rule": "letter"}, "msearth_image_single": 0.0, "msearth_image_multi": None, "msearth_image_cross": 30.0},
            ]
        },
    )
    part = make_run(
        tmp_path,
        "part",
        "p",
        {"msearth_mcq": {"msearth_acc": 20.0, "msearth_image_single": None, "msearth_image_multi": 10.0, "msearth_image_cross": None}},
        config={"limit": 2.0},
        n_samples={"msearth_mcq": {"original": 2784, "effective": 2}},
    )
    out = tmp_path / "rep"
    _, text = write_report([full, part], str(out))
    lines = no_ci(text)
    assert "| benchmark | task | metric | m (full) | p (part) (partial) | paper: GPT-4o |" in lines
    assert any("p (part)" in ln and "--limit 2" in ln and "2 of 2784" in ln for ln in lines)
    runs = read_runs([full, part])
    assert runs[1].partial and not runs[0].partial
    (chart,) = [c for c in chart_specs("msearth", runs, report_papers.DEFAULT_PAPER_MODEL) if c.slug == "msearth_mcq_by_image_and_category"]
    fig = report_charts.draw_chart(chart)
    ax = fig.axes[0]
    heights = sorted(round(p.get_height(), 2) for p in ax.patches)
    assert heights == [10.0, 30.0, 50.0]  # n/a never drawn as a zero bar
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("n/a") == 3 and "n=2" in texts and "n=1" in texts  # docs behind each bar
    assert any("(partial)" in t.get_text() for t in ax.get_legend().get_texts())
    # msearth_open has nothing to show (every value n/a): no chart file
    pngs = {p.name for p in out.glob("*.png")}
    assert "msearth_mcq_by_image_and_category.png" in pngs and not any(p.startswith("msearth_open") for p in pngs)


def test_demo_report_explains_itself_and_shows_the_paper_reference(tmp_path):
    from lmms_eval_earthsci.commands.demo import judged_metrics_run, report_intro

    run = make_run(
        tmp_path,
        "runs",
        "tiny-llava",
        {"emma_mini_math": {"emma_acc": 0.0}, "emma_mini_physics": {"emma_acc": 0.0}, "emma_mini_judge_math": {"emma_acc": 0.0, "emma_judge_acc": None}, "scifibench_cs_c2f": {"scifibench_acc": 0.0}},
    )
    # the intro names the judged metrics this run has, not every benchmark's (MSEarth's did not run)
    judged = judged_metrics_run(read_runs([run]))
    assert judged == ["emma_judge_acc"]
    intro = report_intro(tiny_model=True, sample_data=True, judged=judged)
    assert "`emma_judge_acc`" in intro and "msearth" not in intro and "scifibench" not in intro
    # a run with no judged task: no judge paragraph at all
    plain = report_intro(tiny_model=True, sample_data=True, judged=[])
    assert "judge" not in plain.lower()
    _, text = write_report([run], str(tmp_path / "rep"), intro=intro)
    lines = no_ci(text)
    sections = [ln for ln in lines if ln.startswith("## ")]
    assert sections[:2] == ["## What you are looking at", "## Headline"]
    para = " ".join(section(text, "What you are looking at")).lower()
    assert "untrained" in para and "n/a" in para and "judge" in para and "paper" in para
    # the charts carry the paper's marks even when the tiny model scores 0 everywhere
    (chart,) = [c for c in chart_specs("emma", read_runs([run]), report_papers.DEFAULT_PAPER_MODEL) if c.slug == "emma_mini_by_subject"]
    assert [b.paper for b in chart.bars] == [27.0, 44.0]
    assert report_papers.DEFAULT_PAPER_MODEL == "GPT-4o"


def test_bad_folders_name_the_file(tmp_path, capsys):
    with pytest.raises(ReportError, match="no such folder"):
        read_runs([str(tmp_path / "missing")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReportError, match=r"empty: no \*_results.json"):
        read_runs([str(empty)])
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "20261122_000000_results.json").write_text('{"results": {"emma_mini": ')
    with pytest.raises(ReportError, match="20261122_000000_results.json: not a readable"):
        read_runs([str(broken)])
    cut = make_run(tmp_path, "cut", "m", {"emma_mini": {"emma_acc": 1.0}})
    with open(os.path.join(cut, "m", "20261122_010101_samples_emma_mini.jsonl"), "w") as f:
        f.write('{"doc_id": 0}\n{"doc_id": 1, "emma_')
    with pytest.raises(ReportError, match=r"samples_emma_mini.jsonl, line 2"):
        read_runs([cut])
    # the console command prints the one message and exits 2
    assert cli_main(["report", str(empty)]) == 2
    assert "no *_results.json" in capsys.readouterr().err
    other = make_run(tmp_path, "other", "m", {"mmmu_val": {"acc": 50.0}})
    with pytest.raises(ReportError, match="no results of EMMA, MSEarth, SciFIBench, MuSciClaims or MAC"):
        write_report([other], str(tmp_path / "r2"))


def musciclaims_run(tmp_path):
    """musciclaims_d (with samples: one INVALID decision of three docs) and musciclaims_ird (with panels)."""
    d = {
        "musciclaims_macro_f1": 45.0, "musciclaims_f1_support": 60.0, "musciclaims_f1_neutral": 50.0, "musciclaims_f1_contradict": 25.0,
        "musciclaims_flip_rate": 12.5, "musciclaims_correct_flip_rate": 10.0, "musciclaims_invalid_rate": 2.0,
        "musciclaims_macro_f1_biology": 50.0, "musciclaims_macro_f1_chemistry": 40.0, "musciclaims_macro_f1_physics": None,
        "musciclaims_2class_weighted_f1": 55.0,
    }
    ird = {"musciclaims_macro_f1": 40.0, "musciclaims_f1_support": 55.0, "musciclaims_flip_rate": 20.0, "musciclaims_panel_precision": 35.0, "musciclaims_panel_recall": 70.0, "musciclaims_panel_f1": 30.0}

    def rec(gold, pred, stage):
        return {"claim_id": f"x_{gold}", "base_claim_id": "x", "gold": gold, "pred": pred, "stage": stage, "domain": "biology"}

    docs = [rec("SUPPORT", "SUPPORT", "json"), rec("CONTRADICT", "INVALID", "decision-unrecognized"), rec("NEUTRAL", "NEUTRAL", "json")]
    compact = ("musciclaims_f1_support", "musciclaims_f1_neutral", "musciclaims_f1_contradict", "musciclaims_flip_rate")
    samples = {"musciclaims_d": [{"musciclaims_macro_f1": r} | {m: [r["gold"], r["pred"], "x", "v", "biology"] for m in compact} for r in docs]}
    return make_run(tmp_path, "r", "m", {"musciclaims_d": d, "musciclaims_ird": ird}, samples=samples)


def test_musciclaims_headline_section_and_chart(tmp_path):
    run = musciclaims_run(tmp_path)
    out = tmp_path / "rep"
    _, text = write_report([run], str(out))
    lines = no_ci(text)
    # headline: our macro F1 beside GPT-4o's (gpt-4o-2024-11-20): Table 1 D Overall F 0.52, Table 2 IRD F 0.47, on our 0-100 scale
    assert "| MuSciClaims | musciclaims_d | musciclaims_macro_f1 | 45.00 | 52.00 § |" in lines
    assert "| MuSciClaims | musciclaims_ird | musciclaims_macro_f1 | 40.00 | 47.00 § |" in lines
    assert any(ln.startswith("§") and "918 biology" in ln and "musciclaims_macro_f1_biology" in ln for ln in section(text, "Headline"))
    mc = section(text, "MuSciClaims")
    rows = table_after(mc, "slice")
    assert rows[0] == "| slice | m (r) | paper: GPT-4o |"
    assert "| musciclaims_d · musciclaims_flip_rate | 12.50 | – |" in rows
    assert "| musciclaims_d · musciclaims_correct_flip_rate | 10.00 | – |" in rows
    assert "| musciclaims_d · musciclaims_invalid_rate | 2.00 | – |" in rows
    assert "| musciclaims_ird · musciclaims_flip_rate | 20.00 | – |" in rows
    # the biology slice is the like-for-like comparison: the paper's Overall F, unmarked
    assert "| musciclaims_d · musciclaims_macro_f1_biology | 50.00 | 52.00 |" in rows
    assert not any("macro_f1_physics" in r for r in rows)  # no run has a number: no row
    assert "| musciclaims_ird · musciclaims_panel_f1 | 30.00 | 61.00 § ‖ |" in rows  # Table 3, 4o
    assert not any("musciclaims_f1_support" in r or "2class" in r for r in rows)  # charted / not asked for
    assert "| musciclaims_d | m (r) | 3 | 1 | 0 | – | – |" in mc  # the INVALID decision: no answer extracted
    # the chart: F1 per class and macro per task, GPT-4o's Table 1 D row marked, n = docs scored
    assert (out / "musciclaims_d_f1_by_class.png").stat().st_size > 1000 and (out / "musciclaims_ird_f1_by_class.png").exists()
    assert "![musciclaims_d_f1_by_class.png](musciclaims_d_f1_by_class.png)" in text
    charts = {c.slug: c for c in chart_specs("musciclaims", read_runs([run]), report_papers.DEFAULT_PAPER_MODEL)}
    d = charts["musciclaims_d_f1_by_class"]
    assert [(b.group, b.value, b.paper) for b in d.bars] == [("support", 60.0, 59.0), ("neutral", 50.0, 60.0), ("contradict", 25.0, 36.0), ("macro", 45.0, 52.0)]
    assert [b.docs for b in d.bars] == [3, 3, 3, 3] and "918 biology" in d.paper_label
    assert [(b.group, b.paper) for b in charts["musciclaims_ird_f1_by_class"].bars] == [("support", None), ("macro", 47.0)]
    # the paper reference lists every model with a number for the tasks run, names normalised
    papers = section(text, "Paper reference")
    assert "| GPT-4o | 52.00 § | 47.00 § |" in papers and "| o4-mini | – | – |" not in papers
    assert any(ln.startswith("| InternVL3-38B | 74.00 § | 58.00 § |") for ln in papers)
    # another reference model, by the paper's full name
    _, text = write_report([run], str(tmp_path / "rep2"), paper_model="claude-3-5-sonnet-20241022")
    assert "| MuSciClaims | musciclaims_d | musciclaims_macro_f1 | 45.00 | 68.00 § |" in no_ci(text)


def test_musciclaims_paper_numbers_transcription():
    """Overall (macro) = the mean of the per-class values (spec: 4o-mini D F (0.56+0.51+0.18)/3 = 0.42);
    Table 6's aggregate is support-weighted ((Sup + 2 NonSup)/3); tables that repeat a value agree. The
    paper prints 0-1 with two decimals, the JSON holds x100: 0.01 there is 1.0 here."""
    with open(registry.get("musciclaims").paper_numbers) as f:
        data = json.load(f)
    assert "0-100" in data["note"] and "1,515" in data["note"] and "musciclaims_macro_f1_biology" in data["note"]
    rows = data["rows"]
    assert {r["table"] for r in rows} == {f"Table {n}" for n in range(1, 8)}
    assert all(r["paper"] == "arXiv 2506.04585 v1" and r["setting"] in ("D", "RD", "IRD") and r["model"] == data["models"][r["paper_name"]] for r in rows)
    t1 = [r for r in rows if r["table"] == "Table 1"]
    assert len(t1) == 21
    for r in t1:
        for k in "prf":
            assert abs((r[f"sup_{k}"] + r[f"neu_{k}"] + r[f"con_{k}"]) / 3 - r[f"all_{k}"]) <= 1.0, (r["paper_name"], r["setting"], k)
    first = t1[0]
    assert (first["model"], first["setting"], first["sup_f"], first["neu_f"], first["con_f"], first["all_f"]) == ("gpt-4o-mini-2024-07-18", "D", 56.0, 51.0, 18.0, 42.0)
    for r in (r for r in rows if r["table"] == "Table 6"):
        for k in "prf":
            assert abs((r[f"sup_{k}"] + 2 * r[f"nonsup_{k}"]) / 3 - r[f"weighted_{k}"]) <= 1.0, (r["paper_name"], r["setting"], k)
    assert all(0 <= v <= 100 for r in rows for k, v in r.items() if isinstance(v, float))
    # one (model, task, metric), one value: Table 2's RD rows and Table 4's F+C column repeat Table 1
    seen = {}
    entries, _ = paper_entries("musciclaims")
    for e in entries:
        assert seen.setdefault((e.model, e.task, e.metric), e.value) == e.value, e
    by_key = {(e.model, e.task, e.metric): e for e in entries}
    assert by_key[("o4-mini", "musciclaims_rd", "musciclaims_macro_f1")].value == 77.0
    assert by_key[("GPT-4o", "musciclaims_caption_only_rd", "musciclaims_macro_f1")].value == 44.0
    assert by_key[("Claude 3.5 Sonnet", "musciclaims_ird", "musciclaims_2class_weighted_f1")].notes == ("v1", "2class")
    assert not any(e.task.endswith("_kv") for e in entries)  # the paper does not say which prompt family a model got
    # no two spellings of one model across the four papers
    keys = {}
    for n in {e.model for b in [x.name for x in registry.benchmarks()] for e in paper_entries(b)[0]}:
        assert keys.setdefault(report_papers.model_key(n), n) == n, (n, keys[report_papers.model_key(n)])


def mac_run(tmp_path, name="r", with_samples=True):
    """mac2025_i2t_info (4 docs, all parsed) and mac2025_t2i_option (3 docs, one unparsed), the MAC group
    (no numbers of its own); samples as ``--log_samples`` writes them (the per-doc record under mac_acc)."""

    def rec(probs, gold, publisher="nature"):
        pred = max(probs, key=probs.get) if probs else None
        return {"journal": "J", "id": "2024_1", "publisher": publisher, "gold": gold, "pred": pred, "parsed": probs is not None, "path": "json" if probs else "none", "all_zero": False, "probs": probs, "correct": pred == gold, "row": 0}

    def line(r):
        return {"doc_id": 0, "mac_acc": r, "mac_ece": r, "mac_nll": r, "mac_rms": r, "mac_unparsable": r, "mac_acc_lenient": {"score": 100.0 * r["correct"], "pred": r["pred"], "rule": "official"}}

    i2t = [rec({"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1}, "A"), rec({"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1}, "B"), rec({"A": 0.05, "B": 0.05, "C": 0.9, "D": 0.0}, "C", "acs"), rec({"A": 0.25, "B": 0.25, "C": 0.25, "D": 0.25}, "A", "cell")]
    t2i = [rec({"A": 0.0, "B": 1.0, "C": 0.0, "D": 0.0}, "B"), rec(None, "C"), rec({"A": 0.6, "B": 0.4, "C": 0.0, "D": 0.0}, "D", "science")]
    results = {
        "mac2025": {},
        "mac2025_i2t_info": {
            "mac_acc": 75.0, "mac_acc_lenient": 75.0, "mac_ece": 0.3125, "mac_nll": 0.9, "mac_rms": 0.2, "mac_unparsable": 0.0,
            "mac_publisher_acs": 100.0, "mac_publisher_cell": 100.0, "mac_publisher_nature": 50.0, "mac_publisher_science": None,
        },
        "mac2025_t2i_option": {"mac_acc": 33.3333, "mac_acc_lenient": 33.3333, "mac_ece": 0.3, "mac_nll": 17.7, "mac_rms": 0.3, "mac_unparsable": 33.3333, "mac_publisher_science": 0.0, "mac_publisher_nature": 50.0},
    }
    samples = {"mac2025_i2t_info": [line(r) for r in i2t], "mac2025_t2i_option": [line(r) for r in t2i]} if with_samples else None
    return make_run(tmp_path, name, "m", results, samples=samples)


def test_mac_headline_section_and_reliability_diagrams(tmp_path):
    from lmms_eval_earthsci.evals.mac import scoring

    run = mac_run(tmp_path)
    out = tmp_path / "rep"
    _, text = write_report([run], str(out), paper_model="gpt-4o")  # any spelling of the reference model
    lines = no_ci(text)
    # headline: our mac_acc beside GPT-4o's Table 1 accuracy (I2T info 75.1, T2I option 74.3); the group has no row
    assert "| MAC | mac2025_i2t_info | mac_acc | 75.00 | 75.10 |" in lines
    assert "| MAC | mac2025_t2i_option | mac_acc | 33.33 | 74.30 |" in lines
    assert not any(ln.startswith("| MAC | mac2025 |") for ln in lines)
    mac = section(text, "MAC")
    # a table per task: accuracy, lenient, calibration (three decimals, the paper's beside ours), unparsable, publishers
    i2t = table_after(mac, "slice")
    assert i2t[0] == "| slice | m (r) | paper: GPT-4o |"
    assert i2t[2:] == [
        "| mac_acc | 75.00 | 75.10 |",
        "| mac_acc_lenient | 75.00 | – |",
        "| mac_ece | 0.312 | 0.053 ° |",  # Table 1 (ours: 0.25 right, 0.7 half right, 0.9 right: (0.75 + 0.4 + 0.1) / 4)
        "| mac_nll | 0.900 | 1.291 ° |",  # Table 7, GPT-4o "/" (the baseline)
        "| mac_rms | 0.200 | 0.089 ° |",
        "| mac_unparsable | 0.00 | – |",
        "| publisher acs | 100.00 | – |",
        "| publisher cell | 100.00 | – |",
        "| publisher nature | 50.00 | – |",
    ]  # science: no doc, n/a in every run: no row
    t2i = table_after(mac[mac.index(next(ln for ln in mac if "`mac2025_t2i_option`" in ln)) :], "slice")
    assert "| mac_ece | 0.300 | 0.068 ° |" in t2i and "| mac_unparsable | 33.33 | – |" in t2i and "| mac_nll | 17.700 | – |" in t2i
    assert any(ln.startswith("°") and "normalises" in ln for ln in mac)
    assert "| mac2025_t2i_option | m (r) | 3 | 1 | 0 | – | – |" in mac  # the unparsed answer: no answer extracted
    # a reliability diagram per task, from the samples' records, binned by mac.scoring
    for t in ("mac2025_i2t_info", "mac2025_t2i_option"):
        assert (out / f"{t}_reliability.png").stat().st_size > 1000
        assert f"![{t}_reliability.png]({t}_reliability.png)" in text
    charts, missing = reliability_specs(read_runs([run]), "GPT-4o")
    assert missing == [] and [c.slug for c in charts] == ["mac2025_i2t_info_reliability", "mac2025_t2i_option_reliability"]
    ((column, bins, ece),) = charts[0].series
    assert column == "m (r)" and len(bins) == 15 and ece == pytest.approx(0.3125)
    filled = [(b["lo"], b["hi"], b["n"], b["accuracy"]) for b in bins if b["n"]]
    assert filled == [(3 / 15, 4 / 15, 1, 1.0), (10 / 15, 11 / 15, 2, 0.5), (13 / 15, 14 / 15, 1, 1.0)]  # 0.25, 0.7 x2, 0.9
    assert "paper (GPT-4o): ECE 0.053" in charts[0].title and "ECE 0.068" in charts[1].title
    ((_, bins, ece),) = charts[1].series  # the unparsed doc is not binned
    assert sum(b["n"] for b in bins) == 2 and ece == pytest.approx(scoring.ece([s["mac_acc"] for s in read_runs([run])[0].samples["mac2025_t2i_option"]]))
    fig = report_charts.draw_reliability(charts[0])
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "m (r): ECE 0.312 (n=4 binned)" in legend and "paper (GPT-4o): ECE 0.053" in legend
    # the paper reference lists every Table 1 model for the tasks run
    papers = section(text, "Paper reference")
    assert "| GPT-4o | 75.10 | 74.30 |" in papers and "| Step-3 | 77.30 | 79.10 |" in papers


def test_mac_without_samples_says_why_there_is_no_diagram(tmp_path):
    run = mac_run(tmp_path, "nosamples", with_samples=False)
    out = tmp_path / "rep"
    _, text = write_report([run], str(out))
    mac = section(text, "MAC")
    assert any("`mac2025_i2t_info`: no reliability diagram for m (nosamples): no samples file" in ln and "--log_samples" in ln for ln in mac)
    assert not list(out.glob("*_reliability.png"))
    assert "| MAC | mac2025_i2t_info | mac_acc | 75.00 | 75.10 |" in no_ci(text)


def test_mac_paper_numbers_transcription():
    """Table 1 (8 models x 4 variants, accuracy in percent and ECE as printed); Table 4's base rows and
    Table 7's "/" rows repeat Table 1's I2T numbers; DAD rows map to the future mac2025_dad_* tasks
    (one reasoner per model name), the ICL rows and the data-only tables to nothing."""
    with open(registry.get("mac").paper_numbers) as f:
        data = json.load(f)
    assert "normalises" in data["note"] and "CC-BY-NC-SA-4.0" in data["note"]
    rows = data["rows"]
    assert {r["table"] for r in rows} == {"Table 1", "Appendix D", "Table 4", "Table 5", "Table 6", "Table 7", "Table 8"}
    assert all(r["paper"] == "arXiv 2508.15802 (COLM 2025)" for r in rows)
    variants = ("i2t_info", "i2t_option", "t2i_info", "t2i_option")
    t1 = {r["model"]: r for r in rows if r["table"] == "Table 1"}
    assert list(t1) == ["Qwen2.5-VL-7B", "Qwen-VL-Max", "Step-1V-8k", "Step-1o-T-V", "Ernie-4.5-8k", "Gemini-1.5-Pro", "GPT-4o", "Step-3"]
    for r in t1.values():
        for v in variants:
            assert 50 <= r[f"{v}_acc"] <= 80 and 0 < r[f"{v}_ece"] < 0.25, (r["model"], v)
    assert (t1["GPT-4o"]["i2t_info_acc"], t1["GPT-4o"]["i2t_info_ece"]) == (75.1, 0.053)
    assert (t1["Step-3"]["t2i_option_acc"], t1["Step-3"]["t2i_option_ece"]) == (79.1, 0.048)
    assert (t1["Qwen2.5-VL-7B"]["t2i_option_acc"], t1["Qwen2.5-VL-7B"]["t2i_option_ece"]) == (61.0, 0.131)
    assert (t1["Ernie-4.5-8k"]["i2t_option_acc"], t1["Gemini-1.5-Pro"]["t2i_info_ece"]) == (61.4, 0.237)
    for r in (r for r in rows if r["table"] == "Table 4" and r["setting"] == "baseline"):
        assert (r["acc"], r["ece"]) == (t1[r["model"]]["i2t_info_acc"], t1[r["model"]]["i2t_info_ece"])
    (t7,) = [r for r in rows if r["table"] == "Table 7" and r["setting"] == "baseline"]
    assert [t7[f"{v}_{k}"] for v in variants[:2] for k in ("acc", "ece")] == [t1["GPT-4o"][f"{v}_{k}"] for v in variants[:2] for k in ("acc", "ece")]
    assert sorted(r["printed"] for r in rows if r["table"] == "Table 4") == sorted(["Qwen2.5-VL-7B", "Qwen-VL-Max"] + ["+ CoT", "+ One-Shot", "+ Self-Consistency(5)", "+ ours"] * 2)
    # the report's index: one (model, task, metric), one value; what maps where
    entries, source = paper_entries("mac")
    assert "2508.15802" in source
    seen = {}
    for e in entries:
        assert seen.setdefault((e.model, e.task, e.metric), e.value) == e.value, e
    assert {e.task for e in entries} == {f"mac2025_{v}" for v in variants} | {"mac2025_dad_i2t_info", "mac2025_dad_i2t_option", "mac2025_i2t_info_textfree"}
    assert len({(e.model, e.task) for e in entries if e.metric == "mac_acc" and not e.task.startswith("mac2025_dad") and not e.task.endswith("_textfree")}) == 8 * 4  # Table 1 (Tables 4 and 7 repeat it)
    assert seen[("Qwen2.5-VL-7B", "mac2025_dad_i2t_info", "mac_acc")] == 65.0 and seen[("Qwen-VL-Max", "mac2025_i2t_info", "mac_rms")] == 0.21
    assert seen[("GPT-4o", "mac2025_dad_i2t_info", "mac_acc")] == 76.3  # QwQ-32B, the default reasoner
    assert seen[("GPT-4o + Deepseek-R1", "mac2025_dad_i2t_option", "mac_nll")] == 0.938
    assert not any(e.value in (56.6, 43.2, 59.2, 75.5, 58.4, 77.6) for e in entries)  # ICL, text-free with the text in the prompt, 2025 embeddings, MAC-Old: data only
    assert (seen[("GPT-4o", "mac2025_i2t_info_textfree", "mac_acc")], seen[("Qwen-VL-Max", "mac2025_i2t_info_textfree", "mac_ece")]) == (64.8, 0.1334)  # Table 6's N/N rows
    by_key = {(e.model, e.task, e.metric): e for e in entries}
    assert by_key[("GPT-4o", "mac2025_i2t_info", "mac_acc")].notes == () and by_key[("GPT-4o", "mac2025_i2t_info", "mac_ece")].notes == ("calibration",)
    assert by_key[("GPT-4o", "mac2025_dad_i2t_info", "mac_ece")].notes == ("calibration", "dad")
    # model names: any spelling matches, and no two spellings of one model across the papers
    assert report_papers.resolve_paper_model("gpt-4o") == "GPT-4o" and report_papers.resolve_paper_model("step 3") == "Step-3" and report_papers.resolve_paper_model("step-1o-turbo-vision") == "Step-1o-T-V"
    keys = {}
    for n in {e.model for b in [x.name for x in registry.benchmarks()] for e in paper_entries(b)[0]}:
        assert keys.setdefault(report_papers.model_key(n), n) == n, (n, keys[report_papers.model_key(n)])


# --------------------------------------------------------------------------- error bars, paired comparisons, versions


def emma_samples(correct):
    return [{"doc_id": i, "emma_acc": {"score": 100.0 if c else 0.0, "rule": "boxed"}} for i, c in enumerate(correct)]


def test_headline_intervals_paired_comparison_and_version_warning(tmp_path):
    from lmms_eval_earthsci.core.scoring.stats import mcnemar_exact, wilson

    a_ok = [i % 2 == 0 for i in range(40)]  # 50 %
    b_ok = [i % 2 == 0 or i % 5 == 1 for i in range(42)]  # right on 4 more of the 40 shared docs; 2 docs more
    math_a, phys_a = a_ok[:20], a_ok[20:]
    a = make_run(tmp_path, "a", "m-a", {"emma_mini": {"emma_acc": 50.0}, "emma_mini_math": {"emma_acc": 50.0}, "emma_mini_physics": {"emma_acc": 50.0}},
                 samples={"emma_mini_math": emma_samples(math_a), "emma_mini_physics": emma_samples(phys_a)},
                 config={}, n_samples=None)
    b_math, b_phys = b_ok[:20], b_ok[20:]
    b = make_run(tmp_path, "b", "m-b", {"emma_mini": {"emma_acc": 100 * sum(b_ok) / 42}, "emma_mini_math": {"emma_acc": 100 * sum(b_math) / 20}, "emma_mini_physics": {"emma_acc": 100 * sum(b_phys) / 22}},
                 samples={"emma_mini_math": emma_samples(b_math), "emma_mini_physics": emma_samples(b_phys)})
    for path, version in ((a, 1.0), (b, 1.1)):  # the two runs were scored by different versions of emma_mini_math
        f = next(os.path.join(dp, n) for dp, _, ns in os.walk(path) for n in ns if n.endswith("_results.json"))
        data = json.load(open(f))
        data["versions"] = {"emma_mini": version, "emma_mini_math": version, "emma_mini_physics": 1.0}
        data["group_subtasks"] = {"emma_mini": ["emma_mini_math", "emma_mini_physics"]}
        json.dump(data, open(f, "w"))
    _, text = write_report([a, b], str(tmp_path / "rep"), resamples=2000, seed=5)
    head = section(text, "Headline", ci=True)
    # the group's interval pools its tasks' docs
    group = next(ln for ln in head if ln.startswith("| EMMA | emma_mini |"))
    pooled = wilson(sum(a_ok), len(a_ok))  # right/wrong docs: Wilson's interval, k of n over both tasks
    assert group.split(" | ")[3:5] == ["50.00", f"{pooled.low:.2f}–{pooled.high:.2f}"] and group.split(" | ")[7] == "Wilson"
    assert any("2,000 resamples, seed 5" in ln for ln in head)
    # versions: the table and the warning
    vers = section(text, "Task versions")
    assert any(ln.startswith("**Warning**: `emma_mini_math` was scored by different task versions") for ln in vers)
    assert not any("`emma_mini_physics` was scored" in ln for ln in vers)
    # paired: b - a on the shared docs; McNemar on the discordant ones; unmatched docs counted
    pairs = section(text, "Paired comparisons", ci=True)
    prow = next(ln for ln in pairs if ln.startswith("| emma_mini | emma_acc |"))
    cells = [c.strip() for c in prow.strip("|").split("|")]
    shared_a, shared_b = a_ok[:20] + a_ok[20:40], b_ok[:20] + b_ok[20:40]
    p, disc = mcnemar_exact(shared_b, shared_a)
    assert cells[3] == f"{100 * (sum(shared_b) - sum(shared_a)) / 40:+.2f}" and disc == (4, 0)
    # 4 docs gained, none lost, of 40: McNemar's exact p is 0.125, so not changed, while the interval
    # (Tango's score interval; it was the bootstrap's) excludes 0: the row's note says why (changed on purpose)
    low, high = (float(x) for x in cells[4].replace("−", "-").split("–"))
    assert p == pytest.approx(0.125) and cells[5] == f"{p:.3g}" and cells[6] == "McNemar exact" and 0 < low < high
    assert cells[8] == "no" and cells[9] == "4/0" and cells[10:13] == ["40", "0", "2"]
    assert cells[13] == "the interval excludes 0 but the exact test on 4 discordant docs does not reject: the test decides; task versions differ"
    # the adjusted p is Benjamini-Hochberg's (scipy's) over the report's raw p-values
    import scipy.stats as sps

    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in pairs if ln.startswith("| emma_mini")]
    raw = [float(r[5]) for r in rows]
    assert [r[7] for r in rows] == [f"{q:.3g}" for q in sps.false_discovery_control(raw, method="bh")]
    assert any("`emma_mini` was scored by different task versions" in ln for ln in vers)
    # no resamples: no intervals, no paired section
    _, plain = write_report([a, b], str(tmp_path / "rep0"), resamples=0)
    assert "## Paired comparisons" not in plain and next(ln for ln in section(plain, "Headline", ci=True) if ln.startswith("| EMMA | emma_mini |")).split(" | ")[4] == "–"


def test_chart_bars_carry_their_interval(tmp_path):
    run = make_run(tmp_path, "r", "m", {"emma_mini_math": {"emma_acc": 50.0}}, samples={"emma_mini_math": emma_samples([i % 2 == 0 for i in range(30)])})
    report_intervals.configure(500, 0)
    runs = read_runs([run])
    bars = [b for c in chart_specs("emma", runs, "GPT-4o") for b in c.bars if b.metric == "emma_acc"]
    assert bars and all(b.ci is not None and b.ci[0] < 50.0 < b.ci[1] for b in bars)


def test_each_section_draws_only_its_own_benchmarks_charts(tmp_path):
    """MAC beside SciFIBench (the demo, the `earthsci` suite): the MAC section shows MAC's reliability
    diagrams and nothing of SciFIBench's; SciFIBench's chart sits in its own section."""
    mac = mac_run(tmp_path)
    sci = make_run(tmp_path, "sci", "m", {"scifibench_cs_f2c": {"scifibench_acc": 75.4}, "scifibench_cs_c2f": {"scifibench_acc": 60.0}})
    out = tmp_path / "rep"
    _, text = write_report([mac, sci], str(out), resamples=0)
    images = {title: [ln for ln in section(text, title) if ln.startswith("![")] for title in ("MAC", "SciFIBench")}
    assert images["MAC"] == ["![mac2025_i2t_info_reliability.png](mac2025_i2t_info_reliability.png)", "![mac2025_t2i_option_reliability.png](mac2025_t2i_option_reliability.png)"]
    assert images["SciFIBench"] == ["![scifibench_by_split.png](scifibench_by_split.png)"]
    # a benchmark whose spec declares no chart gets none: MAC's spec has bar charts of no kind
    b = registry.get("mac")
    assert b.report_spec().charts(report_sections.BenchView(b, read_runs([mac, sci]), "GPT-4o")) == []


def test_the_terminal_gets_the_headline_and_where_everything_is(tmp_path, capfd):
    """`report` prints what changed, the headline and where its outputs are (tens of lines), not the whole
    report.md; its log goes to report.log; --verbose prints report.md whole."""
    a = make_run(str(tmp_path / "logs"), "run_a", "m-a", {"emma_mini": {"emma_acc": 50.0}, "msearth_mcq": {"msearth_acc": 40.0}})
    b = make_run(str(tmp_path / "logs"), "run_b", "m-b", {"emma_mini": {"emma_acc": 60.0}, "msearth_mcq": {"msearth_acc": 45.0}})
    out = tmp_path / "rep"
    assert cli_main(["report", a, b, "--out", str(out), "--resamples", "0", "--no-images"]) == 0
    printed = capfd.readouterr().out
    full = (out / "report.md").read_text()
    assert "## Headline" in printed and "## EMMA" in full and "## EMMA" not in printed
    assert len(printed.splitlines()) < len(full.splitlines()) and len(printed.splitlines()) <= 60
    assert f"report: {out / 'report.md'}" in printed and f"log: {out / 'report.log'}" in printed and (out / "report.log").exists()
    assert cli_main(["report", a, b, "--out", str(tmp_path / "rep2"), "--resamples", "0", "--no-images", "--verbose"]) == 0
    assert "## EMMA" in capfd.readouterr().out
    assert cli_main(["report", str(tmp_path / "nothing"), "--out", str(tmp_path / "rep3")]) == 2
    assert not (tmp_path / "rep3").exists()  # a report that could not be made leaves no folder behind


def test_runs_with_no_doc_in_common_say_so_in_the_paired_row(tmp_path):
    """Two runs of other docs (``--limit 2`` at another ``--offset``): the paired row compares nothing and its
    note says why; the docs each run has are counted."""
    a = make_run(tmp_path, "a", "m-a", {"emma_mini_math": {"emma_acc": 50.0}}, samples={"emma_mini_math": emma_samples([True, False])})
    shifted = [{**s, "doc_id": s["doc_id"] + 2} for s in emma_samples([True, True, False])]
    b = make_run(tmp_path, "b", "m-b", {"emma_mini_math": {"emma_acc": 66.67}}, samples={"emma_mini_math": shifted})
    _, text = write_report([a, b], str(tmp_path / "rep"), resamples=200, seed=1)
    row = next(ln for ln in section(text, "Paired comparisons", ci=True) if ln.startswith("| emma_mini_math | emma_acc |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:5] == ["–", "–"] and cells[10:13] == ["0", "2", "3"], cells
    assert cells[13] == "no doc in common: the runs scored other docs (another --limit or --offset), nothing to compare"
