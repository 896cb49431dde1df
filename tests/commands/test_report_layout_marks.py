"""A number made without the authors' prompt layout (the run's own check, ``configs.<task>.metadata.earthsci_layout``)
is flagged wherever it appears and never set beside the paper's number: report.md's marker and note,
"–" for the paper, summary's ``layout`` column, the browser's banner. A run that kept the layout, one
not checked and an older run without the record show nothing."""

import csv
import html
import json
import os
import re
import shutil
import subprocess

import pytest
from test_report import make_run, no_ci, section

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report import charts as report_charts
from lmms_eval_earthsci.commands.report import layout_marks, read_runs, write_report
from lmms_eval_earthsci.commands.report import sections as report_sections
from lmms_eval_earthsci.commands.report.runs import Run

FIX = "a chat route that interleaves (qwen2_5_vl, qwen3_vl, internvl_hf chat); the paper reports no number for models without interleaved input"
LOST = {"status": "lost", "class": "LlavaHf", "expected": "T I T I T I T I T I T", "received": "I I I I I T T T T T T", "lost": ["images first", "labels cut off from their figures"], "fix": FIX}
KEPT = {"status": "as written", "class": "Qwen2_5_VL", "expected": "T I T I", "received": "T I T I"}
SERVER = {"status": "depends on the server", "class": "VLLM", "expected": "T I T I", "fix": "vLLM: interleave_mm_strings=True in --model_args (engine argument)"}
NOT_CHECKED = {"status": "not checked", "class": "DummyModel", "why": "no processor"}
NOT_OBSERVED = {"status": "not observed", "class": "Dummy", "why": "Dummy holds no transformers processor or model: what it sends cannot be observed here"}
C2F, F2C = "scifibench_cs_c2f_judge", "scifibench_cs_f2c_judge"


def scifi_run(tmp_path, name, c2f_layout, f2c_layout=KEPT, c2f=40.0):
    """A SciFIBench run of both CS judge splits (GPT-4o's paper numbers: C->F 72.20, F->C 75.40), with
    each split's layout verdict as the run recorded it (None: an older run, no record)."""
    configs = {t: {"task": t, "metadata": {"version": 1.0} | ({"earthsci_layout": lay} if lay else {})} for t, lay in ((C2F, c2f_layout), (F2C, f2c_layout))}
    samples = {C2F: [{"doc_id": i, "target": "A", "scifibench_acc": {"score": 100.0 * (i % 2), "stage": "strict", "parsed": "A" if i % 2 else "B", "gold": "A"}} for i in range(4)]}
    return make_run(tmp_path, name, name, {C2F: {"scifibench_acc": c2f, "scifibench_acc_judge": c2f}, F2C: {"scifibench_acc": 60.0, "scifibench_acc_judge": 60.0}}, samples=samples, configs=configs)


def row(lines, task, metric):
    return next(ln for ln in lines if ln.startswith(f"| SciFIBench | {task} | {metric} |"))


def summary_layouts(out):
    with open(out / "summary.csv", newline="") as f:
        csv_rows = {(r["kind"], r["run"], r["task"], r["metric"]): r["layout"] for r in csv.DictReader(f)}
    with open(out / "summary.json") as f:
        data = json.load(f)
    assert "layout" in data["columns"]
    assert {(r["kind"], r["run"], r["task"], r["metric"]): r["layout"] for r in data["rows"]} == csv_rows
    return csv_rows


def test_a_lost_layout_is_marked_noted_and_not_set_beside_the_paper(tmp_path):
    run = scifi_run(tmp_path, "llava", LOST)
    out = tmp_path / "report"
    _, text = write_report([run], str(out), resamples=0, html=True, images=False)
    lines = no_ci(text)
    # the headline: the marker on the cell, "–" for the paper (GPT-4o's 72.20), the split that kept it unchanged
    assert row(lines, C2F, "scifibench_acc_judge") == f"| SciFIBench | {C2F} | scifibench_acc_judge | 40.00 {layout_marks.MARK} | – |"
    assert row(lines, F2C, "scifibench_acc_judge") == f"| SciFIBench | {F2C} | scifibench_acc_judge | 60.00 | 75.40 |"
    note = (f"{layout_marks.MARK} `llava (llava)` · `{C2F}`: not the authors' layout, not comparable with the paper's number "
            f"(LlavaHf: images first; labels cut off from their figures). Fix: {FIX}.")
    headline = section(text, "Headline")
    assert note + "  " in headline and sum(ln.startswith(layout_marks.MARK) for ln in headline) == 1  # one line per (run, task)
    assert f"No paper number beside {C2F} · scifibench_acc_judge: no run kept the authors' layout ({layout_marks.MARK} below)." in headline
    # the benchmark's table (no paper column: the paper's numbers are the judge's, in the headline): the same marker and note
    sci = section(text, "SciFIBench")
    assert f"| cs_c2f_judge · scifibench_acc | 40.00 {layout_marks.MARK} |" in sci and "| cs_f2c_judge · scifibench_acc | 60.00 |" in sci
    assert note + "  " in sci
    assert text.count(note) == 2  # the headline's and the table's, nowhere else
    # the chart: no paper tick on the lost bar
    b = registry.get("scifibench")
    runs = read_runs([run])
    bars = [bar for c in b.report_spec().charts(report_sections.BenchView(b, runs, "GPT-4o")) for bar in report_charts.build_chart(b, c, runs, "GPT-4o").bars]
    assert {(bar.task, bar.paper) for bar in bars if bar.metric == "scifibench_acc_judge"} == {(C2F, None), (F2C, 75.4)}
    # summary: every metric row of the task says what was lost
    layouts = summary_layouts(out)
    assert layouts[("metric", "llava (llava)", C2F, "scifibench_acc_judge")] == "lost: images first; labels cut off from their figures"
    assert layouts[("metric", "llava (llava)", C2F, "scifibench_acc")] == "lost: images first; labels cut off from their figures"
    assert layouts[("metric", "llava (llava)", F2C, "scifibench_acc_judge")] == "as written"
    # the browser: the task's banner data (run, what is lost, the fix); the page draws it
    index = json.loads(re.fullmatch(r"EARTHSCI\.index\((.*)\);\n", (out / "browser" / "index.js").read_text(), re.S).group(1))
    (task,) = [t for t in index["tasks"] if t["name"] == C2F]
    assert task["layout"] == [{"run": "llava (llava)", "status": "lost", "class": "LlavaHf", "lost": ["images first", "labels cut off from their figures"], "fix": FIX}]
    app = (out / "browser" / "app.js").read_text()
    assert "layoutBanner(names)" in app and "not the authors' layout" in app
    assert "</code>: " + html.escape("not the authors' layout, not comparable with the paper's number (LlavaHf: images first;") in (out / "report.html").read_text()  # report.md's note


def test_beside_a_run_that_kept_the_layout_the_paper_stays_and_only_the_lost_run_is_marked(tmp_path):
    lost = scifi_run(tmp_path, "llava", LOST)
    kept = scifi_run(tmp_path, "qwen", KEPT, c2f=70.0)
    out = tmp_path / "report"
    _, text = write_report([kept, lost], str(out), resamples=200)
    lines = no_ci(text)
    assert row(lines, C2F, "scifibench_acc_judge") == f"| SciFIBench | {C2F} | scifibench_acc_judge | 40.00 {layout_marks.MARK} | 70.00 | 72.20 |"  # runs in order of name
    headline = section(text, "Headline")
    assert [ln for ln in headline if ln.startswith(layout_marks.MARK)] == [
        f"{layout_marks.MARK} `llava (llava)` · `{C2F}`: not the authors' layout, not comparable with the paper's number (LlavaHf: images first; labels cut off from their figures). Fix: {FIX}.  "
    ]
    assert "No paper number beside" not in text
    assert f"| cs_c2f_judge · scifibench_acc | 40.00 {layout_marks.MARK} | 70.00 |" in section(text, "SciFIBench")
    layouts = summary_layouts(out)
    assert layouts[("metric", "qwen (qwen)", C2F, "scifibench_acc_judge")] == "as written"
    assert layouts[("paired", "qwen (qwen)", C2F, "scifibench_acc_judge")] == "as written"  # the run's (the baseline, llava, has its own metric rows)


def test_as_written_and_older_runs_show_nothing(tmp_path):
    runs = [scifi_run(tmp_path, "qwen", KEPT), scifi_run(tmp_path, "old", None, None)]
    out = tmp_path / "report"
    _, text = write_report(runs, str(out), resamples=0, html=True, images=False)
    assert layout_marks.MARK not in text and layout_marks.UNOBSERVED_MARK not in text and "layout" not in text.lower()
    assert row(no_ci(text), C2F, "scifibench_acc_judge").endswith("| 72.20 |")
    layouts = summary_layouts(out)
    assert {layouts[("metric", r, C2F, "scifibench_acc_judge")] for r in ("qwen (qwen)", "old (old)")} == {"as written", ""}
    assert '"layout"' not in (out / "browser" / "index.js").read_text()


@pytest.mark.parametrize("record", [NOT_OBSERVED, NOT_CHECKED], ids=["not observed", "not checked (an older run)"])
def test_a_layout_that_could_not_be_observed_is_marked_everywhere(tmp_path, record):
    """A class the probe could not observe (and runs that recorded "not checked" before it could): the
    number is marked, a note names the class, why and check-model, summary and browser say so; the
    paper's number stays (nothing says the layout differs)."""
    run = scifi_run(tmp_path, "dummy", record, record)
    out = tmp_path / "report"
    _, text = write_report([run], str(out), resamples=0, html=True, images=False)
    assert row(no_ci(text), C2F, "scifibench_acc_judge") == f"| SciFIBench | {C2F} | scifibench_acc_judge | 40.00 {layout_marks.UNOBSERVED_MARK} | 72.20 |"
    note = (f"{layout_marks.UNOBSERVED_MARK} `dummy (dummy)` · `{F2C}`, `{C2F}`: layout not observed: check-model ({record['class']}: {record['why']}); "
            "`lmms-eval-earthsci check-model --model <its class>` says whether the authors' layout reaches it.  ")
    assert section(text, "Headline").count(note) == 1
    assert summary_layouts(out)[("metric", "dummy (dummy)", C2F, "scifibench_acc")] == "layout not observed: check-model"
    assert '"status":"layout not observed: check-model"' in (out / "browser" / "index.js").read_text()


def test_a_server_run_says_what_the_server_must_set(tmp_path):
    run = scifi_run(tmp_path, "vllm", SERVER, SERVER)
    out = tmp_path / "report"
    _, text = write_report([run], str(out), resamples=0, html=True, images=False)
    assert layout_marks.MARK not in text  # milder: no marker, the paper's number stays
    assert row(no_ci(text), C2F, "scifibench_acc_judge").endswith("| 40.00 | 72.20 |")
    line = f"Layout: `vllm (vllm)` (VLLM) sent `{F2C}`, `{C2F}` as written; the server decides whether figures stay between their labels: {SERVER['fix']}.  "
    assert section(text, "Headline").count(line) == 1 and text.count(line) == 1
    assert summary_layouts(out)[("metric", "vllm (vllm)", C2F, "scifibench_acc")] == "depends on the server"
    assert '"status":"depends on the server"' in (out / "browser" / "index.js").read_text()


def test_a_breakdown_row_of_a_lost_run_has_no_paper_number(tmp_path):
    """EMMA's subject rows sit beside the paper's (GPT-4o CoT, math: 27.00); a run that lost the task's
    layout (`<image_k>` order) reads "–" there, the run that kept it keeps the paper beside it."""
    def emma(name, lay):
        cfg = {"emma_mini_math": {"metadata": {"earthsci_layout": lay}}}
        return make_run(tmp_path, name, name, {"emma_mini": {"emma_acc": 25.0}, "emma_mini_math": {"emma_acc": 20.0}, "emma_mini_physics": {"emma_acc": 30.0}}, configs=cfg)

    lost = dict(LOST, lost=["images first", "<image_k> left as text"], fix="run the class's chat route (drop --force_simple)")
    _, text = write_report([emma("simple", lost)], str(tmp_path / "one"), resamples=0)
    assert f"| math | 20.00 {layout_marks.MARK} | – |" in section(text, "EMMA")
    assert "| physics | 30.00 |" in "\n".join(section(text, "EMMA"))  # its paper number stays
    assert any(ln.startswith(f"{layout_marks.MARK} `simple (simple)` · `emma_mini_math`") and "<image_k> left as text" in ln for ln in section(text, "EMMA"))
    _, text = write_report([emma("simple", lost), emma("chat", KEPT)], str(tmp_path / "two"), resamples=0)
    assert f"| math | 20.00 | 20.00 {layout_marks.MARK} | 27.00 |" in section(text, "EMMA")  # "chat" first (order of names)


def test_past_four_runs_the_lost_runs_row_is_marked_and_the_papers_row_stays(tmp_path):
    runs = [scifi_run(tmp_path, f"step_{i}", LOST if i == 3 else KEPT, c2f=40.0 + i) for i in range(1, 6)]
    _, text = write_report(runs, str(tmp_path / "report"), resamples=0)
    sci = section(text, "Headline")
    table = [ln for ln in sci if ln.startswith("| step_")]
    assert [layout_marks.MARK in ln for ln in table] == [False, False, True, False, False]
    assert any(ln.startswith("| paper: GPT-4o | – |") and "72.20" in ln for ln in sci)
    assert sum(ln.startswith(f"{layout_marks.MARK} `step_3") for ln in sci) == 1


def test_a_groups_layout_is_its_worst_tasks():
    run = Run(label="r", files=[], results={}, subtasks={"scifibench_judge": [C2F, F2C]},
              configs={C2F: {"metadata": {"earthsci_layout": LOST}}, F2C: {"metadata": {"earthsci_layout": KEPT}}})
    lay = layout_marks.task_layout(run, "scifibench_judge")
    assert (lay.status, lay.cls, lay.tasks, lay.summary) == ("lost", "LlavaHf", (C2F,), "lost: images first; labels cut off from their figures")
    assert layout_marks.task_layout(run, F2C).summary == "as written"
    assert layout_marks.task_layout(run, "scifibench_cs_f2c").summary == ""  # no record
    run.configs[C2F] = {"metadata": {"earthsci_layout": KEPT}}
    assert layout_marks.task_layout(run, "scifibench_judge").status == "as written"
    run.configs.pop(C2F)
    assert layout_marks.task_layout(run, "scifibench_judge").status == ""  # one task recorded nothing, the other as written
    note = layout_marks.lost_notes([Run(label="r", files=[], results={}, subtasks=run.subtasks, configs={C2F: {"metadata": {"earthsci_layout": LOST}}})], ["scifibench_judge"])
    assert note == [f"{layout_marks.MARK} `r` · `scifibench_judge` (`{C2F}`): not the authors' layout, not comparable with the paper's number (LlavaHf: images first; labels cut off from their figures). Fix: {FIX}."]


@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run the page's banner function")
def test_the_browsers_banner_names_the_run_what_is_lost_and_the_fix():
    """The page's banner, run in node with a stand-in for its DOM helper (tests/commands/test_browser.py runs the
    whole page in Chromium): one line per run and verdict, the tasks named when a group is shown."""
    app = open(os.path.join(os.path.dirname(layout_marks.__file__), "html", "assets", "app.js")).read()
    fn = "".join(re.search(rf"\n  function {f}\(names.*?\) \{{.*?\n  \}}\n", app, re.S).group(0) for f in ("grouped", "layoutBanner"))  # the banner and the helper it calls
    lost = {"run": "llava (r)", "status": "lost", "class": "LlavaHf", "lost": ["images first", "labels cut off from their figures"], "fix": "a chat route that interleaves"}
    server = {"run": "vllm (v)", "status": "depends on the server", "class": "VLLM", "lost": [], "fix": SERVER["fix"]}
    unseen = {"run": "dummy (d)", "status": "layout not observed: check-model", "class": "Dummy", "lost": [], "fix": "no processor"}
    index = {"tasks": [{"name": C2F, "layout": [lost, server, unseen]}, {"name": "scifibench_general_c2f_judge", "layout": [lost]}, {"name": F2C}],
             "byName": {C2F: 0, "scifibench_general_c2f_judge": 1, F2C: 2}}
    script = (
        "function el(tag, attrs, ...kids) { return { tag, attrs, kids, appendChild(k) { this.kids.push(k); } }; }\n"
        f"const S = {{ index: {json.dumps(index)} }};\n{fn}\n"
        "const text = (b) => b ? b.kids.map((p) => p.attrs.text) : null;\n"
        f"console.log(JSON.stringify([text(layoutBanner([{json.dumps(C2F)}])), text(layoutBanner([{json.dumps(C2F)}, 'scifibench_general_c2f_judge'])), text(layoutBanner([{json.dumps(F2C)}]))]));\n"
    )
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout
    one, group, none = json.loads(out)
    assert one == [
        "\u26a0 llava (r): not the authors' layout (LlavaHf: images first; labels cut off from their figures), not comparable with the paper's number. Fix: a chat route that interleaves.",
        f"vllm (v) (VLLM): sent as written; the server decides the layout: {SERVER['fix']}.",
        "\u2020 dummy (d): layout not observed: check-model (Dummy: no processor); lmms-eval-earthsci check-model says whether the authors' layout reaches this class.",
    ]
    assert group[0].startswith(f"\u26a0 llava (r) ({C2F}, scifibench_general_c2f_judge): not the authors' layout") and len(group) == 3
    assert none is None
