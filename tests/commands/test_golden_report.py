"""The report of fixed runs, byte for byte: the guard of refactors that must not change what a user reads.

The runs: the demo's lmms-eval output (every benchmark's tasks on the sample mirror, a tiny random model)
kept in tests/data/golden/runs/base, and a second checkpoint made from it (a share of its verdicts
flipped, seeded). The report (intervals and paired comparisons with a fixed seed, report.html's data
without figures) is compared with tests/data/golden/report: report.md, summary.csv, summary.json and the
sample browser's data files, the temporary folder's path replaced by <RUNS>. A change that means to
change the report records it again:

    .venv/bin/python tests/commands/test_golden_report.py --update
"""

import os
import shutil
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
RUNS = os.path.join(HERE, "data", "golden", "runs", "base")
GOLDEN = os.path.join(HERE, "data", "golden", "report")


def report_files(tmp: str) -> dict[str, str]:
    """{name: text} of the report of the two runs, made in ``tmp``, paths normalised."""
    import glob

    from lmms_eval_earthsci.commands.report import write_report
    from lmms_eval_earthsci.testing.sweep import clone_run

    base = os.path.join(tmp, "base")
    shutil.copytree(RUNS, base)
    (results,) = glob.glob(os.path.join(base, "*", "*_results.json"))
    clone_run(results, os.path.join(tmp, "checkpoint-2000"), model_args="pretrained=/ckpts/tiny-llava/checkpoint-2000", stamp="20261126_000000", flip=0.3, seed=5)
    out = os.path.join(tmp, "report")
    write_report([base, os.path.join(tmp, "checkpoint-2000")], out, resamples=300, seed=0, html=True, images=False)
    files = {name: os.path.join(out, name) for name in ("report.md", "summary.csv", "summary.json")}
    for path in sorted(glob.glob(os.path.join(out, "browser", "*.js")) + glob.glob(os.path.join(out, "browser", "data", "*.js"))):
        if os.path.basename(path) != "app.js":  # the page's code is not report output
            files[os.path.relpath(path, out)] = path
    out_text = {}
    for name, path in files.items():
        with open(path, encoding="utf-8") as f:
            out_text[name] = f.read().replace(tmp, "<RUNS>")
    return out_text


@pytest.mark.slow  # a whole report of a sweep: 6-7 s on 2 cores, over the fast tier's limit
def test_the_report_of_fixed_runs_is_unchanged(tmp_path, monkeypatch):
    monkeypatch.setenv("EARTHSCI_CACHE_DIR", str(tmp_path / "cache"))
    got = report_files(str(tmp_path / "work"))
    want = {}
    for d, _, fs in os.walk(GOLDEN):
        for f in fs:
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                want[os.path.relpath(path, GOLDEN)] = fh.read()
    assert sorted(got) == sorted(want)
    changed = [name for name in sorted(got) if got[name] != want[name]]
    assert not changed, f"the report changed in {', '.join(changed)}; if on purpose: .venv/bin/python tests/commands/test_golden_report.py --update"


if __name__ == "__main__" and "--update" in sys.argv:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["EARTHSCI_CACHE_DIR"] = os.path.join(tmp, "cache")
        files = report_files(os.path.join(tmp, "work"))
    shutil.rmtree(GOLDEN, ignore_errors=True)
    for name, text in files.items():
        path = os.path.join(GOLDEN, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"recorded {len(files)} files in {GOLDEN}")
