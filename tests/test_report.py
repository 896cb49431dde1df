"""The report on hand-made lmms-eval output folders: numbers in the table are the numbers in the JSON,
paper rows come from the bundled tables, counts come from the samples, bad folders name the file."""

import json
import os

import pytest

from lmms_eval_earthsci.cli import main as cli_main
from lmms_eval_earthsci.report import ReportError, read_runs, write_report


def make_run(root, name, model, results, samples=None, stamp="20261122_010101"):
    d = os.path.join(root, name, model)
    os.makedirs(d, exist_ok=True)
    payload = {"results": {t: {f"{k},none": v for k, v in m.items()} | {f"{k}_stderr,none": "N/A" for k in m} | {"alias": t} for t, m in results.items()}, "config": {"model": "fake", "model_args": f"model={model}"}}
    with open(os.path.join(d, f"{stamp}_results.json"), "w") as f:
        json.dump(payload, f)
    for task, rows in (samples or {}).items():
        with open(os.path.join(d, f"{stamp}_samples_{task}.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
    return os.path.join(root, name)


def test_tables_plots_paper_rows_and_counts(tmp_path):
    a = make_run(
        tmp_path,
        "run_a",
        "model-a",
        {"emma_mini": {"emma_acc": 36.25, "emma_acc_lenient": 37.5}, "emma_mini_math": {"emma_acc": 27.0}, "emma_mini_physics": {"emma_acc": 44.0},
         "scifibench_cs_f2c": {"scifibench_acc": 75.4, "scifibench_no_answer": 1.2}, "msearth_open": {"msearth_oe_acc": None, "msearth_oe_rouge1": 38.07}},
        samples={
            "emma_mini_math": [{"emma_acc": {"rule": "boxed"}}, {"emma_acc": {"rule": "none"}}, {"emma_judge": {"status": "parse_failed", "cached": False}}],
            "msearth_open": [{"msearth_oe_judge": {"status": "judged", "cached": True}}, {"msearth_oe_judge": {"status": "request_failed", "cached": False}}],
        },
    )
    b = make_run(tmp_path, "run_b", "model-b", {"emma_mini": {"emma_acc": 12.5}, "emma_mini_math": {"emma_acc": 3.0}})
    out = tmp_path / "report"
    path, text = write_report([a, b], str(out))
    assert path == str(out / "report.md") and open(path).read().strip() == text.strip()
    lines = text.splitlines()
    assert "| emma_mini | emma_acc | 36.25 | 12.50 |" in lines
    assert "| emma_mini | emma_acc_lenient | 37.50 | – |" in lines  # missing in run b
    assert "| msearth_open | msearth_oe_acc | n/a | – |" in lines  # unavailable (no judge)
    assert "| scifibench_cs_f2c | scifibench_acc | 75.40 | – |" in lines
    # paper rows: EMMA-mini Table 2 (GPT-4o CoT: overall 36.00, math 27.00), SciFIBench main table
    assert any(l.startswith("| GPT-4o (CoT) | paper | 36.00 | 27.00 |") for l in lines)
    assert any(l.startswith("| GPT-4o | paper | 75.40") for l in lines)
    assert "| run_a: fake model-a | emma_mini_math | 3 | 1 | 1 | 0 |" in lines
    assert "| run_a: fake model-a | msearth_open | 2 | 0 | 1 | 1 |" in lines
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "emma_1.png" in pngs and "scifibench_1.png" in pngs
    assert all((out / p).stat().st_size > 1000 for p in pngs)
    assert "![emma_1.png](emma_1.png)" in text


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
    with pytest.raises(ReportError, match="no results of EMMA, MSEarth or SciFIBench"):
        write_report([other], str(tmp_path / "r2"))
