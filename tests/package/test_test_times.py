"""benchmarks/test_times.py: each tier's time from what its session wrote, beside the make target's wall and the
budgets; a total past its budget is printed OVER; --readme writes the table between the README's markers only."""

import importlib.util
import json
import os

from conftest import ROOT

spec = importlib.util.spec_from_file_location("test_times", os.path.join(ROOT, "benchmarks", "test_times.py"))
test_times = importlib.util.module_from_spec(spec)
spec.loader.exec_module(test_times)


def test_the_report_adds_up_each_tier_and_names_a_budget_crossed(tmp_path, capsys, monkeypatch):
    (tmp_path / "make_test-1.json").write_text(json.dumps({"tier": "make test", "wall": 470.0, "tests": {
        "tests/a.py::t1": {"setup": 30.0, "call": 200.0, "teardown": 1.0}, "tests/a.py::t2": {"setup": 0.5, "call": 400.0, "teardown": 0.0}}}))
    (tmp_path / "make_test-fast-2.json").write_text(json.dumps({"tier": "make test-fast", "wall": 80.0, "tests": {"tests/b.py::t": {"setup": 1.0, "call": 2.0, "teardown": 0.0}}}))
    (tmp_path / "walls.txt").write_text("make setup 60\nmake test 490\nmake test-fast 85\nci total 1900\n")
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\nbefore\n{test_times.START}\nold table\n{test_times.END}\nafter\n")
    monkeypatch.setattr(test_times, "README", str(readme))
    assert test_times.main(["report", str(tmp_path), "--readme"]) == 0
    out = capsys.readouterr().out
    assert "| `make test` | 490 s | 20 s | 32 s | 600 s | 2 | <= 480 s |" in out  # wall, outside pytest, fixtures, bodies
    assert "budget: make test 490 s of 480 s  OVER" in out and "budget: make test-fast 85 s of 90 s\n" in out
    assert "budget: .ci/run 1,900 s of 1,800 s  OVER" in out
    assert out.index("slowest of make test") < out.index("400.5  tests/a.py::t2") < out.index("231.0  tests/a.py::t1")
    text = readme.read_text()
    assert text.startswith("# x\nbefore\n") and text.endswith("after\n") and "old table" not in text and "| `make setup` | 60 s |" in text
