"""Circular variants in the report and the demo: a model that never answers reads "n/a (no answer)" with
its reason, never a 0 that the legend reads as "no bias"; the no-answer share in Position bias and in
Counts; a run of circular variants alone leads its headline (report.md and the demo's terminal line) with
their circular_acc. The runs are the real circular hooks on fixture docs, aggregated by the task YAMLs'
own functions."""

import json

import pytest
from test_report import make_run, section, table_after

from lmms_eval_earthsci.commands.report import read_runs, write_report
from lmms_eval_earthsci.core.scoring import circular, stats
from lmms_eval_earthsci.evals.msearth import circular as msearth_c
from lmms_eval_earthsci.evals.msearth.fixtures import msearth_rows
from lmms_eval_earthsci.evals.scifibench import circular as scifi_c
from lmms_eval_earthsci.evals.scifibench.fixtures import scifibench_rows
from lmms_eval_earthsci.yamlgen import metric_aggregations, task_yaml_paths

MSEARTH = "msearth_mcq_circular"
SCIFI = "scifibench_cs_f2c_circular"


def _msearth(letter):
    return json.dumps({"answer": letter, "Explanation": "."})


def _tasks():
    """task -> (rotation, process_results, fixture docs, the response choosing a letter)."""
    return {
        MSEARTH: (msearth_c.ROTATION, msearth_c.process_results, msearth_rows("mcq"), _msearth),
        SCIFI: (scifi_c.ROTATION, scifi_c.process_results, [{**r, "_split": "CS_Figure2Caption"} for r in scifibench_rows("CS_Figure2Caption")], lambda x: f"The answer is ({x})."),
    }


def circular_samples(task, choose):
    """``(results, samples)`` of ``task`` answered by ``choose(asked doc) -> letter or None`` (None: a
    response with no letter), aggregated by the functions its YAML names."""
    rotation, process_results, docs, say = _tasks()[task]
    samples, per_metric = [], {}
    for i, doc in enumerate(circular.expand(docs, rotation)):
        letter = choose(circular.rotated(doc, rotation))
        response = "" if letter is None else say(letter)  # empty: no option (a text would go to MSEarth's similarity fallback)
        out = process_results(doc, [response])
        samples.append({"doc_id": i, "target": "", "resps": [[response]], "filtered_resps": [response], **out})
        for k, v in out.items():
            per_metric.setdefault(k, []).append(v)
    aggs = metric_aggregations(task_yaml_paths()[task])
    return {m: stats.resolve(aggs[m])(per_metric[m]) for m in aggs}, samples


def circular_run(tmp_path, name, choose, tasks=(MSEARTH, SCIFI)):
    results, samples = {}, {}
    for t in tasks:
        results[t], samples[t] = circular_samples(t, choose)
    return make_run(str(tmp_path), name, name, results, samples)


def never(asked):
    return None


def gold_or_nothing(asked):
    """The gold at even rotations, no answer at odd ones."""
    if asked.get(circular.K, 0) % 2:
        return None
    rotation = msearth_c.ROTATION if "query" in asked else scifi_c.ROTATION  # (an MSEarth doc has a query)
    return "ABCDE"[rotation.gold(asked)]


def table(lines, first_cell):
    """The header and rows (cells stripped) of the first table whose header starts with ``first_cell``."""
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in table_after(lines, first_cell)]
    return [rows[0]] + rows[2:]


def row_cells(lines, task):
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines if ln.startswith("| ") and f"`{task}`" in ln]


def test_the_no_answer_metrics_on_fixture_docs():
    results, samples = circular_samples(MSEARTH, never)
    recs = [s[circular.HEAD] for s in samples]
    questions = len(circular.by_question(recs))
    assert questions >= 3 and len(recs) > questions
    # the official metrics keep their definitions: no answer is a choice (never "flipped") and wrong
    assert results["flip_rate"] == 0.0 and results["position_rstd"] == 0.0 and results["circular_acc"] == 0.0
    assert results["position_p"] is None and results["position_A"] is None
    # the new ones say what happened
    assert results["circular_no_answer"] == 100.0
    assert results["flip_rate_answered"] is None
    assert circular.unmeasured(recs) == "no answer"

    # the gold at even rotations and nothing at odd ones: every question "flips" to no answer and back,
    # yet over the answered rotations it never changes its choice
    results, samples = circular_samples(MSEARTH, gold_or_nothing)
    recs = [s[circular.HEAD] for s in samples]
    rotating = [rs for rs in circular.by_question(recs).values() if rs[0]["n"] > 1]
    assert results["flip_rate"] == 100.0 and results["flip_rate_answered"] == 0.0
    assert results["circular_no_answer"] == pytest.approx(100.0 * sum(not r["position"] for r in recs) / len(recs)) == 50.0
    assert results["vanilla_acc"] == 100.0 and results["circular_acc"] == 100.0 * sum(rs[0]["n"] == 1 for rs in circular.by_question(recs).values()) / len(circular.by_question(recs))
    assert circular.unmeasured(recs) is None and len(rotating) >= 3


def test_kernels_of_the_no_answer_metrics_match_their_aggregations():
    _, samples = circular_samples(MSEARTH, lambda asked: None if asked.get(circular.K) == 1 else "AB"[asked.get(circular.K, 0) % 2])
    recs = [s[circular.HEAD] for s in samples]
    kernels = circular.kernels()
    for name in ("circular_no_answer", "flip_rate_answered"):
        dotted = f"lmms_eval_earthsci.core.scoring.circular.{name}"
        encode, stat = kernels[dotted]
        assert float(stat(*encode(recs))) == pytest.approx(stats.resolve(dotted)(recs)), name
    assert 0 < circular.circular_no_answer(recs) < 100 and circular.flip_rate_answered(recs) == 100.0


def test_a_model_that_never_answers_reads_na_with_its_reason(tmp_path):
    path = circular_run(tmp_path, "silent", never)
    _, text = write_report([path], str(tmp_path / "rep"), resamples=50, seed=0)
    lines = section(text, "Position bias", ci=True)
    header = table(lines, "task")[0]
    assert header[:12] == ["task", "run", "official", "vanilla", "circular", "no answer", "flip", "flip (answered)", "RStd", "p", "positions", "questions"]
    (cells,) = row_cells(lines, MSEARTH)
    got = dict(zip(header, cells))
    assert got["no answer"].startswith("100.00 (")  # with its interval
    for col in ("flip", "flip (answered)", "RStd", "p", "positions"):
        assert got[col] == "n/a (no answer)", col  # not the 0.00 the results JSON holds for flip and RStd
    assert got["circular"].startswith("0.00") and got["vanilla"].startswith("0.00")  # accuracies: a no answer is wrong
    recs = len(circular_samples(MSEARTH, never)[1])
    note = next(ln for ln in lines if ln.startswith(f"`{MSEARTH}`"))
    assert f"no answer: none of its {recs} rotations chose an option, so flip, RStd, p and positions measured nothing" in note
    legend = "\n".join(lines)
    for explained in ("**no answer** = percent of rotations", "**flip (answered)** =", "**n/a (no answer)**", "p **n/a (1 question rotates)**", "–: the run has no such number"):
        assert explained in legend, explained

    # Counts: the circular variants' rotations and their no-answer share
    counts = section(text, "MSEarth")
    assert "Run as circular variants only: their numbers are under Position bias." in counts
    rows = {r[0]: r for r in table(counts, "task")[1:]}
    assert rows[MSEARTH][2:4] == [str(recs), f"{recs} (100.00%)"]
    assert "a circular variant (`*_circular`, last) counts its rotations as docs" in text


def test_a_position_test_on_one_rotating_question_says_why_it_has_no_p(tmp_path):
    results, samples = circular_samples(MSEARTH, lambda asked: "A")
    first = samples[0][circular.HEAD]["source"]
    samples = [s for s in samples if s[circular.HEAD]["source"] == first]
    recs = [s[circular.HEAD] for s in samples]
    assert recs[0]["n"] > 1
    aggs = metric_aggregations(task_yaml_paths()[MSEARTH])
    results = {m: stats.resolve(aggs[m])([s[m] for s in samples]) for m in aggs}
    path = make_run(str(tmp_path), "one", "one", {MSEARTH: results}, {MSEARTH: samples})
    _, text = write_report([path], str(tmp_path / "rep"), resamples=0)
    lines = section(text, "Position bias")
    header = table(lines, "task")[0]
    got = dict(zip(header, row_cells(lines, MSEARTH)[0]))
    assert got["p"] == "n/a (1 question rotates)" and got["flip"] == "100.00" and got["positions"] == "100.00 / 0.00 / 0.00 / 0.00"


def test_circular_variants_alone_lead_the_headline_and_the_demo_line(tmp_path):
    from lmms_eval_earthsci.commands.demo import headline_lines

    path = circular_run(tmp_path, "always_a", lambda asked: "A")
    _, text = write_report([path], str(tmp_path / "rep"), resamples=50, seed=0)
    rows = table(section(text, "Headline", ci=True), "benchmark")[1:]
    assert [(r[0], r[1], r[2]) for r in rows] == [("MSEarth", MSEARTH, "circular_acc"), ("SciFIBench", SCIFI, "circular_acc")]
    assert all(r[3] == "0.00" and r[4] != "–" for r in rows)  # the value and its (Wilson) interval
    assert f"`{MSEARTH}`, `{SCIFI}`: circular variants run without their official task lead with `circular_acc`" in text
    assert headline_lines(read_runs([path])) == [f"  {'MSEarth':<12} {MSEARTH} 0.00", f"  {'SciFIBench':<12} {SCIFI} 0.00"]


def test_beside_its_official_task_a_circular_variant_does_not_lead(tmp_path):
    results, samples = circular_samples(MSEARTH, lambda asked: "A")
    path = make_run(str(tmp_path), "both", "both", {"msearth_mcq": {"msearth_acc": 25.0}, MSEARTH: results}, {MSEARTH: samples})
    _, text = write_report([path], str(tmp_path / "rep"), resamples=0)
    rows = table(section(text, "Headline"), "benchmark")[1:]
    assert [(r[1], r[2]) for r in rows] == [("msearth_mcq", "msearth_acc")]
    # its counts: after the official task's (which logged no samples here), its share of rotations
    counts = table(section(text, "MSEarth"), "task")[1:]
    assert [r[0] for r in counts] == [MSEARTH] and counts[0][3] == "0 (0.00%)"


def test_the_browser_says_how_to_read_a_flip(tmp_path):
    """The rotations card: each run's choice in the original letters (∅: no answer) and a flip as
    option@position per rotation, explained on the card."""
    path = circular_run(tmp_path, "half", gold_or_nothing, tasks=(MSEARTH,))
    write_report([path], str(tmp_path / "rep"), resamples=0, html=True, images=False)
    with open(tmp_path / "rep" / "browser" / "data" / "t0.js", encoding="ascii") as f:
        data = f.read()
    assert data.startswith(f'EARTHSCI.task("{MSEARTH}",')
    view = json.loads(data[data.index(",") + 1 : data.rindex(")")])["views"][0]
    assert view["title"] == ("question 0 (the official task's doc 0): 4 rotations, answers in the original letters (∅: no answer); "
                             "flipped: X@Y per rotation = option X (original letter) chosen at position Y (the letter it was asked under)")
    gold = "ABCD"[msearth_c.gold(msearth_rows("mcq")[0])]
    at_k2 = "ABCD"[("ABCD".index(gold) + 2) % 4]
    assert [r["values"] for r in view["rows"]] == [[gold], ["∅"], [gold], ["∅"]]
    assert view["summary"] == [f"flipped: {gold}@{gold} ∅@∅ {gold}@{at_k2} ∅@∅"]
