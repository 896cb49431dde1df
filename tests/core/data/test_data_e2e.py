"""Data through the real CLI: an edited mirror is never served from a stale cache, and every run records
what it loaded."""

import glob
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import cli_env, read_outputs, run_cli

pytestmark = pytest.mark.e2e


def _math_parquet(root):
    return glob.glob(str(root / "luckychao" / "EMMA-mini" / "Math" / "*.parquet"))[0]


def _run(mirror, hf_home, tmp_path, name):
    out = tmp_path / name
    run_cli(["--model", "dummy", "--model_args", "response=\\boxed{B}", "--tasks", "emma_mini_math", "--output_path", str(out), "--log_samples"], cli_env(str(mirror), hf_home), str(tmp_path))
    return read_outputs(str(out))


def test_edited_mirror_is_seen_by_the_next_run(mirror, hf_home, tmp_path):
    copy = tmp_path / "mirror"
    shutil.copytree(mirror, copy)
    res1, s1 = _run(copy, hf_home, tmp_path, "before")
    assert len(s1["emma_mini_math"]) == 3

    # edit Math_1's question and add a row, as a mirror update would
    path = _math_parquet(copy)
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["question"] = "<image_1>\nEDITED: how many cubes are there?"
    rows.append({**rows[1], "pid": "Math_4", "question": "A new question?\n<image_1>"})
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)

    res2, s2 = _run(copy, hf_home, tmp_path, "after")  # same HF_HOME: the old build is still cached
    assert len(s2["emma_mini_math"]) == 4
    assert any("EDITED: how many cubes" in s["input"] for s in s2["emma_mini_math"])
    # each run says what it loaded, and the two can be told apart
    d1 = res1["configs"]["emma_mini_math"]["metadata"]["earthsci_data"]
    d2 = res2["configs"]["emma_mini_math"]["metadata"]["earthsci_data"]
    assert d1["source"] == d2["source"] == "mirror" and d1["dataset_path"] == "luckychao/EMMA-mini"
    assert d1["rows"] == {"test": 3} and d2["rows"] == {"test": 4}
    assert d1["fingerprint"] != d2["fingerprint"] and d1["files"] == d2["files"]

    # a truncated parquet is an error, not a quiet rerun of the cached copy
    with open(path, "r+b") as f:
        f.truncate(200)
    with pytest.raises(AssertionError, match="lmms-eval failed"):
        _run(copy, hf_home, tmp_path, "truncated")
