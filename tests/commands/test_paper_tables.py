"""The papers' tables as data (each benchmark's ``paper_numbers.json`` ``tables``), rendered in the papers'
shape: every bundled table renders; its paper rows print exactly what the paper printed (compared cell by
cell with the printed tables transcribed in ``../shared/specs``: skipped without them); a run's rows sit
in the table with its values at the paper's scale, and a cell it cannot fill says why."""

from __future__ import annotations

import csv
import os
import re

import pytest

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report import paper_tables

SPECS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "specs"))

TABLES = [(b, t) for b in registry.benchmarks() for t in paper_tables.read_tables(b)]


def test_every_benchmark_bundles_its_tables():
    names = {b.name: [t.name for t in paper_tables.read_tables(b)] for b in registry.benchmarks()}
    assert names["emma"] == ["Table 2", "Table 8", "Table 9", "Table 10", "Table 11"]
    assert names["msearth"] == ["Table 10", "Table 4", "Table 5"]
    assert names["scifibench"] == ["Table 2"]
    assert names["musciclaims"][:4] == ["Table 1", "Table 2", "Table 3", "Table 4"]
    assert "Table 1" in names["mac"] and "Table 4" in names["mac"]


@pytest.mark.parametrize("bench,table", TABLES, ids=[f"{b.name}-{t.name}" for b, t in TABLES])
def test_every_table_renders_with_its_paper_rows(bench, table, tmp_path):
    text, rows, _ = paper_tables.render(table, [], bench)
    assert table.rows and len(rows) == len(table.rows)
    assert table.spec, "every table names where it is printed, so that its rows are compared"
    header = text.splitlines()[2]
    assert header.count("|") == len(table.labels) + len(table.columns) + 1
    for c in table.columns:  # a column our metric fills names a task of ours
        for task in c.tasks.values():
            assert registry.benchmark_of(task) is bench, (table.name, c.key, task)
    paper_tables.write_csv(str(tmp_path / "t.csv"), table, rows)
    with open(tmp_path / "t.csv") as f:
        assert len(list(csv.reader(f))) == len(rows) + 1


def printed_table(bench: str, heading: str) -> list[list[str]]:
    """The body rows of the first pipe table after ``heading`` in the benchmark's spec."""
    with open(os.path.join(SPECS, f"{bench}.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(heading))
    first = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("|"))
    body = []
    for ln in lines[first + 2:]:
        if not ln.startswith("|"):
            break
        body.append([c.strip().replace("**", "") for c in ln.strip().strip("|").split("|")])
    return body


def _numbers_only(cells: list[str]) -> bool:
    return any(re.search(r"\d", c) for c in cells)


@pytest.mark.skipif(not os.path.isdir(SPECS), reason="needs ../shared/specs (the papers' printed tables)")
@pytest.mark.parametrize("bench,table", [(b, t) for b, t in TABLES if t.spec], ids=[f"{b.name}-{t.name}" for b, t in TABLES if t.spec])
def test_paper_rows_equal_the_printed_table(bench, table):
    """Every number of every paper row as printed (scale, rounding, the CoT - Direct arrows), in the printed order."""
    printed = [r for r in printed_table(bench.name, table.spec) if _numbers_only(r[1:])]
    ours = paper_tables.paper_rows(table)
    assert len(ours) == len(printed), (len(ours), len(printed))
    n = len(table.columns)
    for mine, theirs in zip(ours, printed):
        assert [c.text for c in mine.cells] == theirs[-n:], (mine.who, theirs)


def _row(lines, start):
    """The cells of the first table row starting with ``start``, and its index."""
    i = next(i for i, ln in enumerate(lines) if ln.startswith(start))
    return i, [c.strip() for c in lines[i].strip().strip("|").split("|")]


def test_a_run_sits_in_the_papers_tables_at_their_scale(tmp_path):
    """EMMA's Table 2: the run's ✗ row after the paper's last ✗ row, its ✓ row after the last ✓ row, the CoT
    minus Direct arrow from its own values, a column it did not run says so; the HTML carries the Wilson
    interval of a cell and the CSV its bounds. SciFIBench's Overall is the mean of CS and General; a judged
    metric without a judge says "no judge". MuSciClaims' Table 1 reads the biology slice at the paper's
    fraction scale, and a run scored before the slice existed says "another slice"."""
    from test_report import make_run

    from lmms_eval_earthsci.commands.report import write_report
    from lmms_eval_earthsci.core.scoring import stats

    samples = [{"doc_id": i, "emma_acc": 100.0 if i < 4 else 0.0} for i in range(10)]
    results = {
        "emma_mini_math": {"emma_acc": 40.0}, "emma_mini_direct_math": {"emma_acc": 30.0},
        "emma_mini": {"emma_acc": 35.0}, "emma_mini_direct": {"emma_acc": 32.5},
        "scifibench_cs_f2c_judge": {"scifibench_acc_judge": 70.0}, "scifibench_general_f2c_judge": {"scifibench_acc_judge": 61.0},
        "scifibench_cs_c2f_judge": {"scifibench_acc_judge": None},
        "musciclaims_d": {"musciclaims_macro_f1": 44.0, "musciclaims_macro_f1_biology": 51.234, "musciclaims_precision_support": 40.0},
    }
    results["emma_mini_direct_physics"] = {"emma_acc": 30.0}
    direct = {"emma_mini_direct_math": [{"doc_id": i, "emma_acc": 100.0 if i < 3 else 0.0} for i in range(10)],
              "emma_mini_direct_physics": [{"doc_id": i, "emma_acc": 100.0 if i < 6 else 0.0} for i in range(20)]}
    run = make_run(str(tmp_path), "r", "org/tiny", results, samples={"emma_mini_math": samples, **direct})
    out = tmp_path / "report"
    _, md = write_report([run], str(out), resamples=200, html=True, images=False)
    lines = md.splitlines()
    start = lines.index("## Paper tables")
    lines = lines[start:]

    i_direct, direct = _row(lines, "| **run: tiny (r)** | ✗ |")
    i_cot, cot = _row(lines, "| **run: tiny (r)** | ✓ |")
    assert lines[i_direct - 1].startswith("| InternVL2.5-78B | ✗ |") and lines[i_cot - 1].startswith("| InternVL2.5-78B | ✓ |")
    assert direct[2:] == ["not run"] * 5 + ["30.00", "30.00", "not run", "not run", "32.50"]
    assert cot[2:] == ["not run"] * 5 + ["40.00", "not run", "not run", "not run", "35.00 (↑2.50)"]

    _, sf = _row(lines, "| **run: tiny (r)** | 70.0 |")
    assert sf == ["**run: tiny (r)**", "70.0", "no judge", "61.0", "not run", "65.5", "no judge"]

    i_mc, mc = _row(lines, "| **run: tiny (r)** | D |")
    assert lines[i_mc + 1] == "" and lines[i_mc - 1].startswith("| DeepSeek | RD |")  # model by model in the paper: the runs last
    assert mc[2:] == ["another slice"] + ["n/a"] * 10 + ["0.51"]  # Sup P: all domains only; the rest: none
    assert any(ln.startswith("another slice: the run has musciclaims_") and "_biology" in ln for ln in lines)

    low, high = stats.wilson(4, 10).low, stats.wilson(4, 10).high
    page = (out / "report.html").read_text()
    assert f'40.00 <span class="ci">({low:.2f}–{high:.2f})</span>' in page
    # Tables 8 and 9 have the same Direct row in Markdown (30.00, then "not run"): each keeps its own interval
    for table, (right, n) in (("Table 8:", (3, 10)), ("Table 9:", (6, 20))):
        iv = stats.wilson(right, n)
        start = page.index(f">{table}")
        part = page[start: page.index("<h", start)]
        assert f'30.00 <span class="ci">({iv.low:.2f}–{iv.high:.2f})</span>' in part, table
    with open(out / "paper_tables" / "emma_table_2.csv") as f:
        rows = list(csv.DictReader(f))
    mine = [r for r in rows if r["source"] == "run"]
    assert [r["CoT"] for r in mine] == ["✗", "✓"]
    assert float(mine[1]["mini_math"]) == 40.0 and abs(float(mine[1]["mini_math_ci_low"]) - low) < 1e-9
    assert float(mine[1]["mini_overall_change"]) == 2.5 and mine[1]["full_math_note"] == "emma_full_math not in the run"
    assert len([r for r in rows if r["source"] == "paper"]) == 20
