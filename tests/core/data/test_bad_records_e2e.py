"""Bad records are found when the data is loaded, all at once, before the model is called; with
EARTHSCI_BAD_RECORDS=skip they are left out, counted and listed, and the rest of the run is scored."""

import glob
import os
import shutil

import forkserver
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import VENV_BIN, cli_env, openai_args, read_outputs, run_cli

from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

TASKS = "emma_mini_math,msearth_mcq,scifibench_cs_f2c"


def _edit(path, edit, drop=None):
    table = pq.read_table(path)
    rows = table.to_pylist()
    edit(rows)
    schema = table.schema if drop is None else pa.schema([f for f in table.schema if f.name != drop], metadata=table.schema.metadata)
    if drop is not None:
        for r in rows:
            r.pop(drop)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


@pytest.fixture(scope="module")
def bad_mirror(mirror, tmp_path_factory):
    root = tmp_path_factory.mktemp("bad") / "mirror"
    shutil.copytree(mirror, root)
    def one(pattern):
        return glob.glob(str(root / pattern))[0]

    def emma(rows):
        rows[1]["answer"] = "G"  # Math_2: multiple choice with 5 options
        rows[0]["image_1"] = {"bytes": b"this is not an image", "path": None}  # Math_1

    def msearth(rows):
        rows[0]["response"] = "F. Nowhere"

    def scifi(rows):
        rows[0]["Answer"] = "Z"

    _edit(one("luckychao/EMMA-mini/Math/*.parquet"), emma)
    _edit(one("MSEarth/MSEarth_MCQ/data/*.parquet"), msearth)
    _edit(one("jonathan-roberts1/SciFIBench/data/CS_Figure2Caption-*.parquet"), scifi)
    # a dropped options column is reported as `options`, not as the answer that cannot be checked
    _edit(one("luckychao/EMMA-mini/Chemistry/*.parquet"), lambda rows: None, drop="options")  # chem_2 is MC
    return str(root)


def _args(srv, out, tasks):
    return ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", tasks, "--output_path", str(out), "--log_samples"]


def test_bad_records_stop_the_run_before_inference(bad_mirror, hf_home, tmp_path):
    with FakeOpenAIServer(responder=lambda body: "The answer is C") as srv:
        with pytest.raises(AssertionError) as err:
            run_cli(_args(srv, tmp_path / "out", TASKS + ",emma_mini_chemistry"), cli_env(bad_mirror, hf_home), str(tmp_path))
        assert srv.count == 0  # nothing was sent to the model
    text = str(err.value)
    assert "BadRecordsError" in text and "nothing was sent to the model" in text
    # each problem named: record, field, what is wrong
    assert "record 'Math_2', field 'answer': letter 'G' does not name one of 5 options" in text
    assert "record 'Math_1', field 'image_1': image cannot be decoded" in text
    assert "field 'response': gold 'F. Nowhere' does not start with an option letter" in text  # MSEarth
    assert "field 'Answer': expected one letter A-E, got 'Z'" in text  # SciFIBench: every task reported at once
    assert "record 'chem_2', field 'options': missing" in text and "chem_1" not in text


def test_at_default_verbosity_the_stopped_run_exits_1_naming_our_tasks(bad_mirror, hf_home, tmp_path):
    """lmms-eval prints the traceback and exits 0 unless --verbosity DEBUG: a batch script reads 1, and the
    last line names the error and the tasks of ours that have no results."""
    with FakeOpenAIServer(responder=lambda body: "The answer is C") as srv:
        proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), *_args(srv, tmp_path / "out", "emma_mini_math,msearth_mcq")],
                              env=cli_env(bad_mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
        assert srv.count == 0
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lmms_eval_earthsci: the evaluation stopped (BadRecordsError: ") and "emma_mini_math, msearth_mcq have no results" in last, last
    assert not (tmp_path / "out").exists()


def test_skip_leaves_bad_records_out_and_lists_them(bad_mirror, hf_home, tmp_path):
    with FakeOpenAIServer(responder=lambda body: "The answer is C") as srv:
        out = tmp_path / "out"
        run_cli(_args(srv, out, TASKS), cli_env(bad_mirror, hf_home, EARTHSCI_BAD_RECORDS="skip"), str(tmp_path))
    res, samples = read_outputs(str(out))
    assert len(samples["emma_mini_math"]) == 1 and samples["emma_mini_math"][0]["emma_acc"]["pid"] == "Math_3"
    assert len(samples["msearth_mcq"]) == 5 and len(samples["scifibench_cs_f2c"]) == 2
    bad = {t: res["configs"][t]["metadata"]["earthsci_data"].get("bad_records") for t in ("emma_mini_math", "msearth_mcq", "scifibench_cs_f2c")}
    assert bad["emma_mini_math"]["count"] == 2 and bad["msearth_mcq"]["count"] == 1 and bad["scifibench_cs_f2c"]["count"] == 1
    assert "field 'response': gold 'F. Nowhere' does not start with an option letter" in bad["msearth_mcq"]["records"][0]
    assert "field 'Answer': expected one letter A-E, got 'Z'" in bad["scifibench_cs_f2c"]["records"][0]
