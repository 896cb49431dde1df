"""How large each run's figures reached the model (the run's own probe, ``configs.<task>.metadata.earthsci_budget``)
is said per run and task in each benchmark section, in summary's ``figure_budget`` and in the browser; a
number set beside another run's made with another budget (a table row, a comparison with the baseline, a
sweep's rows) is marked "≠" with a note giving both. Equal budgets, the paper's column and an older run
without the record are never marked."""

import csv
import json
import os
import re
import shutil
import subprocess

import pytest
from test_report import emma_samples, make_run, no_ci, section

from lmms_eval_earthsci.commands.report import budget as report_budget
from lmms_eval_earthsci.commands.report import write_report
from lmms_eval_earthsci.commands.report.runs import Run

C2F, F2C = "scifibench_cs_c2f_judge", "scifibench_cs_f2c_judge"
PROBE = [4608, 3456]


def figures(docs=40, above=12, median=2.4, top=7.5, why=None):
    return {"docs": docs, "with_figures": docs, "above": above, "median_shrink": median, "max_shrink": top, "largest": [3200, 2900] if above else None, "why": why}


def capped(reached, tokens, figs=None):
    return {"class": "Qwen2_5_VL", "status": "observed", "probe": PROBE, "reached": reached, "tokens": tokens, "capped": True,
            "max_pixels": reached[0] * reached[1], "why": None, "figures": figs or figures()}


CAPPED = capped([1288, 966], 1587)  # 1.2 MP
SMALL = capped([1456, 1092], 2028)  # 1.6 MP
BIG = capped([4128, 3096], 16512)  # 12.8 MP
NOT_CAPPED = {"class": "Qwen2_5_VL", "status": "observed", "probe": PROBE, "reached": PROBE, "tokens": 16128, "capped": False, "max_pixels": None, "why": None,
              "figures": figures(above=None, median=None, top=None, why="not capped: no figure of the task is above the probe")}
SERVER = {"class": "VLLM", "status": "decided by the server", "probe": PROBE, "reached": None, "tokens": None, "capped": None, "max_pixels": None,
          "why": "vLLM resizes with the served model's processor (mm_processor_kwargs)", "figures": figures(above=None, median=None, top=None, why="sent to a server")}
NOT_OBSERVED = {"class": "Dummy", "status": "not observed", "probe": PROBE, "reached": None, "tokens": None, "capped": None, "max_pixels": None,
                "why": "Dummy holds no transformers processor", "figures": figures(above=None, median=None, top=None, why="no pixels observed")}


def scifi_run(tmp_path, name, c2f, f2c=None, **kw):
    """A SciFIBench run of both CS judge splits, each split's budget as the run recorded it (None: none, an older run)."""
    configs = {t: {"task": t, "metadata": {"version": 1.0} | ({"earthsci_budget": rec} if rec else {})} for t, rec in ((C2F, c2f), (F2C, f2c))}
    samples = {C2F: [{"doc_id": i, "target": "A", "scifibench_acc": {"score": 100.0 * (i % 2), "stage": "strict", "parsed": "A" if i % 2 else "B", "gold": "A"}} for i in range(4)]}
    return make_run(tmp_path, name, name, {C2F: {"scifibench_acc": 40.0, "scifibench_acc_judge": 40.0}, F2C: {"scifibench_acc": 60.0, "scifibench_acc_judge": 60.0}},
                    samples=samples, configs=configs, **kw)


def emma_run(tmp_path, name, math, physics, right):
    """An EMMA-mini run of its group (math: 20 docs, physics: 20) with each subject's budget; ``right``: the docs right."""
    configs = {t: {"metadata": {"earthsci_budget": rec}} for t, rec in (("emma_mini_math", math), ("emma_mini_physics", physics)) if rec}
    acc = 100.0 * sum(right) / len(right)
    path = make_run(tmp_path, name, name, {"emma_mini": {"emma_acc": acc}, "emma_mini_math": {"emma_acc": 100.0 * sum(right[:20]) / 20}, "emma_mini_physics": {"emma_acc": 100.0 * sum(right[20:]) / 20}},
                    samples={"emma_mini_math": emma_samples(right[:20]), "emma_mini_physics": emma_samples(right[20:])}, configs=configs)
    f = os.path.join(path, name, "20261122_010101_results.json")
    data = json.load(open(f))
    data["group_subtasks"] = {"emma_mini": ["emma_mini_math", "emma_mini_physics"]}
    json.dump(data, open(f, "w"))
    return path


def summary_budgets(out):
    with open(out / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(out / "summary.json") as f:
        data = json.load(f)
    assert "figure_budget" in data["columns"]
    assert [r["figure_budget"] or "" for r in data["rows"]] == [r["figure_budget"] for r in rows]
    return {(r["kind"], r["run"], r["task"], r["metric"]): r for r in rows}


def browser_index(out):
    return json.loads(re.fullmatch(r"EARTHSCI\.index\((.*)\);\n", (out / "browser" / "index.js").read_text(), re.S).group(1))


LINES = {
    "capped": (CAPPED, "figures reached the model at up to 1.2 MP (1288 x 966 from a 4608 x 3456 probe, 1,587 visual tokens), observed; "
                       "12 of 40 docs (30%) had a larger figure, shrunk median x2.4, up to x7.5", "up to 1.2 MP (observed)"),
    "not capped": (NOT_CAPPED, "figures reached the model at full size up to at least 15.9 MP (the 4608 x 3456 probe was not shrunk; 16,128 visual tokens), observed",
                   "at least 15.9 MP (observed)"),
    "server": (SERVER, "figures were sent at full size; the server's processor decides their size (vLLM resizes with the served model's processor (mm_processor_kwargs))", "server decides"),
    "not observed": (NOT_OBSERVED, "figure size not observed (Dummy holds no transformers processor): `lmms-eval-earthsci check-model` shows it", "not observed"),
}


@pytest.mark.parametrize("case", list(LINES))
def test_each_status_is_one_line_in_the_benchmark_section_and_a_summary_cell(tmp_path, case):
    rec, wording, cell = LINES[case]
    run = scifi_run(tmp_path, "qwen", rec)  # f2c: an older record-less split, said nowhere
    out = tmp_path / "report"
    _, text = write_report([run], str(out), resamples=0, html=True, images=False)
    line = f"`qwen (qwen)` ({rec['class']}) · `{C2F}`: {wording}.  "
    sci = section(text, "SciFIBench")
    assert line in sci and text.count(line) == 1
    assert [ln for ln in sci if ln.startswith("`qwen (qwen)`")] == [line]  # nothing of the split without a record
    assert report_budget.MARK not in text  # one run: nothing to compare
    assert no_ci(text).count(f"| SciFIBench | {C2F} | scifibench_acc_judge | 40.00 | 72.20 |") == 1  # the paper's number is never marked against
    budgets = summary_budgets(out)
    assert budgets[("metric", "qwen (qwen)", C2F, "scifibench_acc_judge")]["figure_budget"] == cell
    assert budgets[("metric", "qwen (qwen)", F2C, "scifibench_acc_judge")]["figure_budget"] == ""
    (entry,) = [t for t in browser_index(out)["tasks"] if t["name"] == C2F]  # the browser's line for the task (F2C has no samples)
    assert entry["budget"] == [{"run": "qwen (qwen)", "class": rec["class"], "text": wording}]


def test_tasks_of_one_budget_share_a_line_their_docs_added(tmp_path):
    run = scifi_run(tmp_path, "qwen", CAPPED, capped([1288, 966], 1587, figures(docs=40, above=3, median=1.5, top=2.0)))
    _, text = write_report([run], str(tmp_path / "report"), resamples=0)
    assert [ln for ln in section(text, "SciFIBench") if ln.startswith("`qwen")] == [
        f"`qwen (qwen)` (Qwen2_5_VL) · `{F2C}`, `{C2F}`: figures reached the model at up to 1.2 MP (1288 x 966 from a 4608 x 3456 probe, 1,587 visual tokens), observed; "
        "15 of 80 docs (19%) had a larger figure, shrunk median x1.5 to x2.4 by task, up to x7.5.  "]


def test_a_group_is_told_by_its_leaves_each_distinct_budget_once():
    groups = {"scifibench_judge": [C2F, F2C]}

    def run(c2f, f2c):
        return Run(label="r", files=[], results={}, subtasks=groups, configs={C2F: {"metadata": {"earthsci_budget": c2f}}, F2C: {"metadata": {"earthsci_budget": f2c}}})

    same = run(CAPPED, CAPPED)
    assert report_budget.notes([same], ["scifibench_judge", C2F, F2C]) == [
        "`r` (Qwen2_5_VL) · `scifibench_judge`: figures reached the model at up to 1.2 MP (1288 x 966 from a 4608 x 3456 probe, 1,587 visual tokens), observed; "
        "24 of 80 docs (30%) had a larger figure, shrunk median x2.4, up to x7.5."]
    assert report_budget.summary(same, "scifibench_judge") == "up to 1.2 MP (observed)"
    split = run(CAPPED, NOT_CAPPED)
    assert report_budget.notes([split], ["scifibench_judge"]) == [
        f"`r` (Qwen2_5_VL) · `scifibench_judge` (`{C2F}`): figures reached the model at up to 1.2 MP (1288 x 966 from a 4608 x 3456 probe, 1,587 visual tokens), observed; "
        "12 of 40 docs (30%) had a larger figure, shrunk median x2.4, up to x7.5.",
        f"`r` (Qwen2_5_VL) · `scifibench_judge` (`{F2C}`): figures reached the model at full size up to at least 15.9 MP (the 4608 x 3456 probe was not shrunk; 16,128 visual tokens), observed."]
    assert report_budget.summary(split, "scifibench_judge") == "up to 1.2 MP (observed); at least 15.9 MP (observed)"
    # against a run of one budget: only the leaf that differs makes the difference
    assert report_budget.difference(split, same, "scifibench_judge") == "not the same input: `r` saw at least 15.9 MP, `r` up to 1.2 MP"
    assert report_budget.difference_notes([(split, same, "scifibench_judge")]) == [
        f"{report_budget.MARK} `r` · `scifibench_judge` (`{F2C}`): not the same input: `r` saw at least 15.9 MP, `r` up to 1.2 MP."]


def test_the_difference_names_both_budgets_in_each_status():
    def run(label, rec):
        return Run(label=label, files=[], results={}, configs={C2F: {"metadata": {"earthsci_budget": rec}}})

    small = run("A", SMALL)
    said = {name: report_budget.difference(small, run("B", rec), C2F) for name, rec in
            (("big", BIG), ("not capped", NOT_CAPPED), ("server", SERVER), ("not observed", NOT_OBSERVED), ("same", capped([1456, 1092], 2028, figures(docs=3, above=1))), ("old", None))}
    assert said == {
        "big": "not the same input: `A` saw up to 1.6 MP, `B` 12.8 MP",
        "not capped": "not the same input: `A` saw up to 1.6 MP, `B` at least 15.9 MP",
        "server": "not the same input: `A` saw up to 1.6 MP, `B` full size (server decides)",
        "not observed": "not the same input: `A` saw up to 1.6 MP, `B` a size not observed",
        "same": "",  # the same budget over other docs: the same input
        "old": "",  # nothing recorded: no mark
    }
    more_tokens = dict(NOT_CAPPED, tokens=20000)
    assert report_budget.difference(run("A", NOT_CAPPED), run("B", more_tokens), C2F) == (
        "not the same input: `A` saw at least 15.9 MP (16,128 visual tokens), `B` at least 15.9 MP (20,000 visual tokens)")
    assert report_budget.difference(run("A", SERVER), run("B", dict(SERVER, why="another server")), C2F) == ""  # both: the server decides
    # the same cap, small figures enlarged otherwise (the HF class's min_pixels against the engine's aligned max_pixels alone)
    assert report_budget.difference(run("A", dict(SMALL, tokens_small=256)), run("B", dict(SMALL, tokens_small=4)), C2F) == (
        "not the same input: `A` saw up to 1.6 MP, a 64 x 64 figure as 256 visual tokens, `B` 1.6 MP, a 64 x 64 figure as 4")
    assert report_budget.difference(run("A", dict(SMALL, tokens_small=4)), run("B", SMALL), C2F) == ""  # one side did not record it: no mark
    assert report_budget.mp(256 * 1024) == "0.26" and report_budget.mp(1244208) == "1.2" and report_budget.mp(15925248) == "15.9"


A_RIGHT = [i % 2 == 0 for i in range(40)]  # 50 %
B_RIGHT = [i % 2 == 0 or i % 4 == 1 for i in range(40)]  # right on 10 more docs: changed


def test_runs_of_other_budgets_are_marked_wherever_they_are_compared(tmp_path):
    """b's math figures reached the model at 12.8 MP, a's at 1.6 MP (physics: both 1.6): b's cells of the
    group and of math are marked in the headline, the EMMA table, the changes and the paired comparison
    (the difference), each table with one note; physics and the paper's column are not."""
    a = emma_run(tmp_path, "a", SMALL, SMALL, A_RIGHT)
    b = emma_run(tmp_path, "b", BIG, SMALL, B_RIGHT)
    out = tmp_path / "report"
    _, text = write_report([a, b], str(out), resamples=500, html=True, images=False)
    mark = report_budget.MARK
    group_note = f"{mark} `b (b)` · `emma_mini` (`emma_mini_math`): not the same input: `b (b)` saw up to 12.8 MP, `a (a)` 1.6 MP.  "
    head = section(text, "Headline")
    row = next(ln for ln in head if ln.startswith("| EMMA | emma_mini | emma_acc |")).split(" | ")
    assert row[3:5] == ["50.00", f"75.00 {mark}"] and mark not in row[5]  # a: the baseline; the paper's column unmarked
    assert group_note in head
    changes = section(text, "Changes against the baseline", ci=True)
    crow = [c.strip() for c in next(ln for ln in changes if ln.startswith("| emma_mini |")).strip("|").split("|")]
    assert crow[5] == f"+25.00 {mark}" and group_note in changes
    paired = section(text, "Paired comparisons", ci=True)
    prow = [c.strip() for c in next(ln for ln in paired if ln.startswith("| emma_mini |")).strip("|").split("|")]
    assert prow[2] == "b (b) − a (a)" and prow[3] == f"+25.00 {mark}" and prow[9] == "10/0"  # the runs and discordant cells stay as the page links them
    assert group_note in paired
    emma = section(text, "EMMA")
    assert any(ln.startswith("| math |") and ln.split(" | ")[2] == f"{100 * sum(B_RIGHT[:20]) / 20:.2f} {mark}" for ln in emma)
    assert any(ln.startswith("| physics |") and mark not in ln for ln in emma)
    assert f"{mark} `b (b)` · `emma_mini_math`: not the same input: `b (b)` saw up to 12.8 MP, `a (a)` 1.6 MP.  " in emma
    # the lines of each run: b's two budgets apart, the group named with its leaf
    assert [ln.split(":")[0] for ln in emma if ln.startswith("`")] == [
        "`a (a)` (Qwen2_5_VL) · `emma_mini`", "`b (b)` (Qwen2_5_VL) · `emma_mini` (`emma_mini_math`)", "`b (b)` (Qwen2_5_VL) · `emma_mini` (`emma_mini_physics`)"]
    # summary: each run's budget; the paired row's note says both
    budgets = summary_budgets(out)
    assert budgets[("metric", "b (b)", "emma_mini", "emma_acc")]["figure_budget"] == "up to 12.8 MP (observed); up to 1.6 MP (observed)"
    pair = budgets[("paired", "b (b)", "emma_mini", "emma_acc")]
    assert pair["figure_budget"] == "up to 12.8 MP (observed); up to 1.6 MP (observed)" and pair["note"].endswith("not the same input: b (b) saw up to 12.8 MP, a (a) 1.6 MP")
    # the browser: b's math line carries the difference
    tasks = {t["name"]: t for t in browser_index(out)["tasks"]}
    assert [x.get("differs") for x in tasks["emma_mini_math"]["budget"]] == [None, "not the same input: b (b) saw up to 12.8 MP, a (a) 1.6 MP"]
    assert all("differs" not in x for x in tasks["emma_mini_physics"]["budget"])


def test_equal_budgets_and_a_run_without_the_record_are_not_marked(tmp_path):
    same = [emma_run(tmp_path, "a", SMALL, SMALL, A_RIGHT), emma_run(tmp_path, "b", capped([1456, 1092], 2028, figures(docs=20, above=1)), SMALL, B_RIGHT)]
    _, text = write_report(same, str(tmp_path / "same"), resamples=500)
    assert report_budget.MARK not in text and "not the same input" not in text
    old = [emma_run(tmp_path / "o", "a", None, None, A_RIGHT), emma_run(tmp_path / "o", "b", BIG, BIG, B_RIGHT)]
    out = tmp_path / "old"
    _, text = write_report(old, str(out), resamples=500)
    assert report_budget.MARK not in text and "not the same input" not in text
    assert not any(ln.startswith("`a (a)`") for ln in text.splitlines())  # the older run: nothing said
    assert any(ln.startswith("`b (b)` (Qwen2_5_VL) · `emma_mini`: figures reached the model at up to 12.8 MP") for ln in section(text, "EMMA"))
    assert summary_budgets(out)[("metric", "a (a)", "emma_mini", "emma_acc")]["figure_budget"] == ""


def test_without_the_baselines_record_runs_side_by_side_are_held_against_the_first_that_has_one(tmp_path):
    """The baseline recorded nothing: its paired comparisons are not marked, but in a table row the runs
    that recorded a budget are held against the first of them."""
    runs = [emma_run(tmp_path, "a", None, None, A_RIGHT), emma_run(tmp_path, "b", SMALL, SMALL, A_RIGHT), emma_run(tmp_path, "c", BIG, BIG, B_RIGHT)]
    _, text = write_report(runs, str(tmp_path / "report"), resamples=500)
    mark = report_budget.MARK
    head = section(text, "Headline")
    assert next(ln for ln in head if ln.startswith("| EMMA | emma_mini |")).split(" | ")[3:6] == ["50.00", "50.00", f"75.00 {mark}"]
    assert f"{mark} `c (c)` · `emma_mini`: not the same input: `c (c)` saw up to 12.8 MP, `b (b)` 1.6 MP.  " in head
    assert mark not in "\n".join(section(text, "Paired comparisons") + section(text, "Changes against the baseline"))


def test_past_four_runs_the_rows_of_another_budget_are_marked(tmp_path):
    runs = [scifi_run(tmp_path, f"step_{i}", BIG if i == 3 else SMALL, BIG if i == 3 else SMALL) for i in range(1, 6)]
    _, text = write_report(runs, str(tmp_path / "report"), resamples=0)
    head = section(text, "Headline")
    table = [ln for ln in head if ln.startswith("| step_")]
    assert [report_budget.MARK in ln for ln in table] == [False, False, True, False, False]  # step_1: the baseline
    assert not any(report_budget.MARK in ln for ln in head if ln.startswith("| paper:"))
    assert [ln for ln in head if ln.startswith(report_budget.MARK)] == [
        f"{report_budget.MARK} `step_3 (step_3)` · `{F2C}`, `{C2F}`: not the same input: `step_3 (step_3)` saw up to 12.8 MP, `step_1 (step_1)` 1.6 MP.  "]


@pytest.mark.parametrize("one_budget", [False, True], ids=["two budgets", "one budget"])
def test_a_limit_1_run_of_one_doc(tmp_path, one_budget):
    one = capped([1288, 966], 1587, figures(docs=1, above=1, median=3.0, top=3.0))
    none = capped([1288, 966] if one_budget else [1456, 1092], 1587 if one_budget else 2028, figures(docs=1, above=0, median=None, top=None))
    run = scifi_run(tmp_path, "qwen", one, none, config={"limit": 1}, n_samples={C2F: {"effective": 1, "original": 40}, F2C: {"effective": 1, "original": 40}})
    _, text = write_report([run], str(tmp_path / "report"), resamples=200, html=True, images=False)
    lines = [ln for ln in section(text, "SciFIBench") if ln.startswith("`qwen")]
    assert all(ln.endswith(".  ") for ln in lines)
    assert [ln.split("), observed")[1] for ln in lines] == (
        ["; 1 of 2 docs (50%) had a larger figure, shrunk x3.0.  "] if one_budget else ["; no doc had a larger figure (1 doc).  ", "; 1 of 1 doc (100%) had a larger figure, shrunk x3.0.  "])


def test_a_sample_of_a_large_tasks_docs_and_a_probe_no_figure_exceeds():
    """The recorder reads an evenly spaced sample of a large task's docs (``read``): the share is of those;
    not shrunk with no figure above the probe: said."""
    sampled = capped([1288, 966], 1587, figures(docs=5000, above=500) | {"read": 2000})
    within = dict(NOT_CAPPED, figures=figures(above=0, median=None, top=None) | {"read": 40})
    run = Run(label="r", files=[], results={}, configs={C2F: {"metadata": {"earthsci_budget": sampled}}, F2C: {"metadata": {"earthsci_budget": within}}})
    assert [n.split("), observed")[1] for n in report_budget.notes([run], [C2F, F2C])] == [
        "; 500 of 2,000 docs read of 5,000 (25%) had a larger figure, shrunk median x2.4, up to x7.5.", "; no doc had a larger figure (40 docs)."]


def test_a_task_of_no_doc_counts_nothing():
    run = Run(label="r", files=[], results={}, configs={C2F: {"metadata": {"earthsci_budget": capped([1288, 966], 1587, figures(docs=0, above=0, median=None, top=None))}}})
    assert report_budget.notes([run], [C2F])[0].endswith("1,587 visual tokens), observed.")  # no "0 of 0 docs"
    run.configs[C2F]["metadata"]["earthsci_budget"] = {"status": "observed", "probe": "4608x3456", "capped": "yes", "figures": []}  # not the shape: nothing made up
    assert report_budget.notes([run], [C2F]) == ["`r` · `scifibench_cs_c2f_judge`: figures reached the model at a size the processor's output does not show, observed."]


@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run the page's budget function")
def test_the_browsers_budget_lines():
    """The page's lines (its budgetBanner, run in node with a stand-in for its DOM helper): one per run and
    wording, "≠" and the difference where it differs, the tasks named when a group is shown."""
    app = open(os.path.join(os.path.dirname(report_budget.__file__), "html", "assets", "app.js")).read()
    fn = "".join(re.search(rf"\n  function {f}\(names.*?\) \{{.*?\n  \}}\n", app, re.S).group(0) for f in ("grouped", "budgetBanner"))  # the banner and the helper it calls
    a = {"run": "a (a)", "class": "Qwen2_5_VL", "text": "figures reached the model at up to 1.6 MP, observed"}
    b = {"run": "b (b)", "class": "Qwen2_5_VL", "text": "figures reached the model at up to 12.8 MP, observed", "differs": "not the same input: b (b) saw up to 12.8 MP, a (a) 1.6 MP"}
    index = {"tasks": [{"name": "emma_mini_math", "budget": [a, b]}, {"name": "emma_mini_physics", "budget": [a]}, {"name": "emma_mini_chemistry"}],
             "byName": {"emma_mini_math": 0, "emma_mini_physics": 1, "emma_mini_chemistry": 2}}
    script = (
        "function el(tag, attrs, ...kids) { return { tag, attrs, kids, appendChild(k) { this.kids.push(k); } }; }\n"
        f"const S = {{ index: {json.dumps(index)} }};\n{fn}\n"
        "const text = (b) => b ? b.kids.map((p) => p.attrs.text) : null;\n"
        "console.log(JSON.stringify([text(budgetBanner(['emma_mini_math'])), text(budgetBanner(['emma_mini_math', 'emma_mini_physics'])), text(budgetBanner(['emma_mini_chemistry']))]));\n"
    )
    one, group, none = json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout)
    assert one == ["a (a) (Qwen2_5_VL): figures reached the model at up to 1.6 MP, observed.",
                   "\u2260 b (b) (Qwen2_5_VL): figures reached the model at up to 12.8 MP, observed. Not the same input: b (b) saw up to 12.8 MP, a (a) 1.6 MP."]
    assert group[0] == "a (a) (emma_mini_math, emma_mini_physics) (Qwen2_5_VL): figures reached the model at up to 1.6 MP, observed." and len(group) == 2
    assert none is None
