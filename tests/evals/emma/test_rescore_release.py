"""End-to-end: ``lmms-eval-earthsci rescore --from emma-release FILE`` on the authors' released EMMA-mini
outputs (../shared/reference/emma_mini) reproduces the README's reference table (`emma_acc` column),
through the real lmms-eval CLI in a subprocess.

No Hub here: the docs come from a local mirror (``EARTHSCI_DATA_MIRROR``) written from the released
records' own dataset columns, with a locally drawn figure for every referenced ``<image_k>`` (scoring
does not look at the images; record validation needs them to decode). Skips when ../shared is absent.
"""

import glob
import gzip
import json
import os
import re
import zlib

import pytest
from conftest import ROOT, cli_env, read_outputs, run_rescore, shared_path

pytestmark = pytest.mark.e2e

REFERENCE = ("reference", "emma_mini")
SUBJECTS = ("Math", "Physics", "Chemistry", "Coding")
DATASET_COLUMNS = ("pid", "question", "options", "answer", "type", "subject", "category", "task", "source", "context", "solution")
TABLE_TITLE = "What our metrics give on the authors' released EMMA-mini outputs"
# README row label -> released file (only the rows this test reruns)
ROWS = {
    "GPT-4o CoT (`gpt_CoT`)": "gpt_CoT.jsonl.gz",
    "Gemini 2.0 Flash CoT": "gemini_CoT.jsonl.gz",  # emma_acc differs from the released verdicts
    "LLaVA-OneVision-72B Direct": "Llava_Direct.jsonl.gz",
}


def _read_release(name):
    with gzip.open(shared_path(*REFERENCE, name), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def readme_table():
    """``{row label: {column header: cell}}`` of the README's reference table."""
    with open(os.path.join(ROOT, "lmms_eval_earthsci", "evals", "emma", "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert TABLE_TITLE in text, "README lost the EMMA-mini reference table"
    lines = text[text.index(TABLE_TITLE) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip().strip("|").split("|")])
    header, rows = table[0], table[2:]
    return {r[0]: dict(zip(header, r)) for r in rows}


def expected_emma_acc():
    """``{file name: emma_acc}`` for the rows of :data:`ROWS`, parsed from the README."""
    table = readme_table()
    missing = [label for label in ROWS if label not in table]
    assert not missing, f"README table has no row {missing} (rows: {list(table)})"
    return {ROWS[label]: float(table[label]["`emma_acc`"]) for label in ROWS}


# --------------------------------------------------------------------------- the mirror


def _referenced(row):
    text = "\n".join([row.get("context") or "", row.get("question") or "", *[str(o) for o in row.get("options") or []]])
    return sorted({int(k) for k in re.findall(r"<image_(\d+)>", text)})


def _doc(row):
    from lmms_eval_earthsci.testing.figures import draw_figure, png_bytes

    doc = {c: row.get(c) for c in DATASET_COLUMNS}
    refs = _referenced(row)
    assert all(1 <= k <= 5 for k in refs), f"{row['pid']}: placeholder out of range {refs}"
    seed = zlib.crc32(row["pid"].encode())
    for k in range(1, 6):
        doc[f"image_{k}"] = {"bytes": png_bytes(draw_figure(seed * 10 + k)), "path": None} if k in refs else None
    return doc


@pytest.fixture(scope="module")
def release_mirror(tmp_path_factory):
    """``<root>/luckychao/EMMA-mini/<Subject>/test-00000-of-00001.parquet``: the union by pid of the
    tested files' dataset columns (the 400 EMMA-mini questions; the first file's record wins)."""
    from lmms_eval_earthsci.evals.emma.fixtures import emma_features
    from lmms_eval_earthsci.testing.figures import write_hf_repo

    by_pid = {}
    for name in ROWS.values():
        for r in _read_release(name):
            by_pid.setdefault(r["pid"], r)
    per_subject = {s: [] for s in SUBJECTS}
    for pid in sorted(by_pid):
        per_subject[by_pid[pid]["subject"]].append(_doc(by_pid[pid]))
    root = str(tmp_path_factory.mktemp("release_mirror"))
    repo = os.path.join(root, "luckychao", "EMMA-mini")
    write_hf_repo(repo, {s: {"test": rows} for s, rows in per_subject.items()}, emma_features(), lambda c, s: f"{c}/{s}-00000-of-00001.parquet")
    return root


def rescore(release_file, out, mirror, hf_home, cwd):
    return run_rescore(["--from", "emma-release", release_file, "--out", out], cli_env(mirror, hf_home), str(cwd))


# --------------------------------------------------------------------------- tests


def test_readme_table_has_the_rows_this_test_reruns():
    expected = expected_emma_acc()
    assert set(expected) == set(ROWS.values())
    assert all(0 <= v <= 100 for v in expected.values())


@pytest.mark.parametrize("name", list(ROWS.values()))
def test_rescore_reproduces_readme_emma_acc(name, release_mirror, hf_home, tmp_path):
    path = shared_path(*REFERENCE, name)
    expected = expected_emma_acc()[name]
    out = tmp_path / "out"
    proc = rescore(path, out, release_mirror, hf_home, tmp_path)
    assert proc.returncode == 0, f"rescore failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-20000:]}"
    res, samples = read_outputs(str(out))

    group = "emma_mini_direct" if name.endswith("_Direct.jsonl.gz") else "emma_mini"
    leaves = [f"{group}_{s.lower()}" for s in SUBJECTS]
    assert res["results"][group]["emma_acc,none"] == pytest.approx(expected, abs=0.005), f"{name}: {group} emma_acc"
    # every doc counted: 400 scored samples, 100 per subject, each one a released record
    assert sum(res["n-samples"][t]["effective"] for t in leaves) == 400
    assert {t: len(samples.get(t, [])) for t in leaves} == {t: 100 for t in leaves}
    released = {r["pid"] for r in _read_release(name)}
    assert {s["emma_acc"]["pid"] for t in leaves for s in samples[t]} == released
    # the group value is the micro-average of the per-doc verdicts
    scores = [s["emma_acc"]["score"] for t in leaves for s in samples[t]]
    assert sum(scores) / len(scores) == pytest.approx(expected, abs=0.005)

    record = res["rescore"]
    assert record["source"]["kind"] == "emma-release"
    assert os.path.samefile(record["source"]["path"], path)
    assert record["not_in_tasks"] == [] and record["target_mismatches"] == [] and record["prompt_changes"] == []


def _physics_release(tmp_path, mutate, gz):
    """All released Physics records of ``gpt_CoT`` (so the importer runs only ``emma_mini_physics``),
    changed by ``mutate(rows)``, written as .jsonl(.gz)."""
    rows = [r for r in _read_release("gpt_CoT.jsonl.gz") if r["subject"] == "Physics"]
    mutate(rows)
    path = tmp_path / ("gpt_CoT.jsonl.gz" if gz else "gpt_CoT.jsonl")
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _drop_response(rows):
    rows[7].pop("response")
    return rows[7]["pid"]


def _unknown_pid(rows):
    extra = dict(rows[0], pid="phy_not_in_the_mirror")
    rows.append(extra)
    return extra["pid"]


@pytest.mark.parametrize("mutate,gz", [(_drop_response, True), (_unknown_pid, False)], ids=["doc-without-response", "pid-not-in-dataset"])
def test_rescore_refuses_a_release_that_does_not_match_the_dataset(mutate, gz, release_mirror, hf_home, tmp_path):
    """Exit 2 naming the task and pid, before anything is scored: a doc of the task the file has no
    response for, or a released pid the task does not have."""
    pid = {}
    path = _physics_release(tmp_path, lambda rows: pid.setdefault("pid", mutate(rows)), gz)
    proc = rescore(path, tmp_path / "out", release_mirror, hf_home, tmp_path)
    assert proc.returncode == 2, f"expected exit 2, got {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    assert "lmms-eval-earthsci rescore:" in proc.stderr, proc.stderr[-5000:]
    message = proc.stderr[proc.stderr.rindex("lmms-eval-earthsci rescore:") :]  # rescore's own error, last
    assert "emma_mini_physics" in message and pid["pid"] in message, message
    assert "nothing scored" in message
    assert not glob.glob(str(tmp_path / "out" / "**" / "*_results.json"), recursive=True), "a mismatch must stop the run before scoring"
