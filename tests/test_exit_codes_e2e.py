"""A job that failed says so through the plain ``lmms-eval`` CLI (a batch script reads the exit code;
default verbosity, as labs run it): a mistyped name of one of our tasks stops the run with exit 2 and
"did you mean", before the model loads, on one rank and on two real ranks. lmms-eval itself says
"Tasks not found" and exits 0 (its own tasks' typos are left to it)."""

import os
import subprocess
import sys

import pytest
from conftest import VENV_BIN, cli_env

pytestmark = pytest.mark.e2e

# a model that cannot load: reaching it would end otherwise (the premise that the names are checked first)
NO_MODEL = ["--model", "llava_hf", "--model_args", "pretrained=/nonexistent/model,device=cpu,device_map=cpu"]


def test_a_typo_of_ours_exits_2_naming_the_nearest_before_the_model_loads(mirror, hf_home, tmp_path):
    proc = subprocess.run([os.path.join(VENV_BIN, "lmms-eval"), *NO_MODEL, "--tasks", "msearth_mcqq,emma_mini_math", "--output_path", str(tmp_path / "o")],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "lmms_eval_earthsci: msearth_mcqq is none of our tasks or groups (did you mean msearth_mcq?)" in proc.stderr
    assert "nonexistent" not in proc.stdout + proc.stderr  # the model was never asked for
    assert not (tmp_path / "o").exists()


def test_other_harness_names_keep_lmms_evals_own_behaviour(mirror, hf_home, tmp_path):
    proc = subprocess.run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--tasks", "mmmu_vall", "--output_path", str(tmp_path / "o")],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Tasks not found" in proc.stdout + proc.stderr and "lmms_eval_earthsci:" not in proc.stderr


def test_two_real_ranks_both_stop_on_the_typo(mirror, hf_home, tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29543", "-m", "lmms_eval", *NO_MODEL, "--tasks", "scifibench_cs_c2ff", "--output_path", str(tmp_path / "o")]
    proc = subprocess.run(cmd, env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    line = "lmms_eval_earthsci: scifibench_cs_c2ff is none of our tasks or groups (did you mean scifibench_cs_c2f?)"
    assert (proc.stdout + proc.stderr).count(line) == 2, proc.stderr[-3000:]  # each rank said it: two ranks ran
    assert "nonexistent" not in proc.stdout + proc.stderr


def test_a_mirror_without_a_requested_dataset_exits_2_with_one_line(hf_home, tmp_path):
    """A mirror made for EMMA only, a run of msearth_mcq and emma_mini: exit 2 and one line naming the task,
    the dataset, the mirror and the command that completes it; no traceback, nothing written."""
    from lmms_eval_earthsci.evals.emma.benchmark import BENCHMARK as EMMA
    from lmms_eval_earthsci.testing.fixtures import write_mirror

    partial = write_mirror(str(tmp_path / "mirror"), repos=list(EMMA.datasets))
    proc = subprocess.run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--tasks", "msearth_mcq,emma_mini", "--output_path", str(tmp_path / "o")],
                          env=cli_env(partial, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("lmms-eval-earthsci: ")]
    assert len(ours) == 1 and "msearth_mcq: " in ours[0] and "MSEarth/MSEarth_MCQ" in ours[0] and partial in ours[0] and "lmms-eval-earthsci mirror" in ours[0], ours
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


def test_two_real_ranks_both_stop_on_a_mirror_gap(hf_home, tmp_path):
    from lmms_eval_earthsci.evals.emma.benchmark import BENCHMARK as EMMA
    from lmms_eval_earthsci.testing.fixtures import write_mirror

    partial = write_mirror(str(tmp_path / "mirror"), repos=list(EMMA.datasets))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29544", "-m", "lmms_eval", "--model", "dummy", "--tasks", "msearth_mcq", "--output_path", str(tmp_path / "o")]
    proc = subprocess.run(cmd, env=cli_env(partial, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    # lmms-eval 0.7.3 loads the datasets on rank 0 first while the other ranks wait at a barrier: rank 0
    # says it and exits 2, the waiting rank loses its peer, and the launcher fails with rank 0's code
    assert proc.returncode != 0
    ours = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("lmms-eval-earthsci: msearth_mcq: ")]
    assert len(ours) == 1 and "MSEarth/MSEarth_MCQ" in ours[0], proc.stderr[-3000:]
    assert "exitcode  : 2" in proc.stderr and "in barrier" in proc.stderr  # rank 0's exit 2; a second rank was waiting for it
    assert not (tmp_path / "o").exists()
