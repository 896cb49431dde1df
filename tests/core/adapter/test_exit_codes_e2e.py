"""A job that failed says so through the plain ``lmms-eval`` CLI (a batch script reads the exit code;
default verbosity, as labs run it): a mistyped name of one of our tasks stops the run with exit 2 and
"did you mean", before the model loads, on one rank and on two real ranks. lmms-eval itself says
"Tasks not found" and exits 0 (its own tasks' typos are left to it). A task of ours whose data cannot be
read is left out, the others run and are written, and the run exits 2 with one line per task at the end."""

import glob
import os
import sys

import forkserver
import pytest
from conftest import VENV_BIN, cli_env, openai_args, read_outputs, two_ranks

from lmms_eval_earthsci import TASKS_DIR
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

# a model that cannot load: reaching it would end otherwise (the premise that the names are checked first)
NO_MODEL = ["--model", "llava_hf", "--model_args", "pretrained=/nonexistent/model,device=cpu,device_map=cpu"]


def test_a_typo_of_ours_exits_2_naming_the_nearest_before_the_model_loads(mirror, hf_home, tmp_path):
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), *NO_MODEL, "--tasks", "msearth_mcqq,emma_mini_math", "--output_path", str(tmp_path / "o")],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "lmms_eval_earthsci: msearth_mcqq is none of our tasks or groups (did you mean msearth_mcq?)" in proc.stderr
    assert "nonexistent" not in proc.stdout + proc.stderr  # the model was never asked for
    assert not (tmp_path / "o").exists()


def test_other_harness_names_keep_lmms_evals_own_behaviour(mirror, hf_home, tmp_path):
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--tasks", "mmmu_vall", "--output_path", str(tmp_path / "o")],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Tasks not found" in proc.stdout + proc.stderr and "lmms_eval_earthsci:" not in proc.stderr


def test_two_real_ranks_both_stop_on_the_typo(mirror, hf_home, tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29547", "-m", "lmms_eval", *NO_MODEL, "--tasks", "scifibench_cs_c2ff", "--output_path", str(tmp_path / "o")]
    proc = forkserver.subprocess_run(cmd, env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    line = "lmms_eval_earthsci: scifibench_cs_c2ff is none of our tasks or groups (did you mean scifibench_cs_c2f?)"
    assert (proc.stdout + proc.stderr).count(line) == 2, proc.stderr[-3000:]  # each rank said it: two ranks ran
    assert "nonexistent" not in proc.stdout + proc.stderr


def _gap_mirror(tmp_path):
    """A mirror made for EMMA only (``mirror --benchmarks emma``) whose copy of EMMA-mini lost its Coding file."""
    from lmms_eval_earthsci.evals.emma.benchmark import BENCHMARK as EMMA
    from lmms_eval_earthsci.testing.fixtures import write_mirror

    partial = write_mirror(str(tmp_path / "mirror"), repos=list(EMMA.datasets))
    (coding,) = glob.glob(os.path.join(partial, "luckychao", "EMMA-mini", "Coding", "*.parquet"))
    os.remove(coding)
    return partial


def _ours_last(stderr):
    """Our lines at the end of stderr (after lmms-eval's last output)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    tail = []
    for ln in reversed(lines):
        if not ln.startswith("lmms_eval_earthsci: "):
            break
        tail.append(ln)
    return tail[::-1]


def _check_gap_outputs(out, stderr, partial):
    res, samples = read_outputs(str(out))
    # the tasks that loaded ran and were written; the group that lost a task has no score of its own
    assert sorted(res["results"]) == ["emma_mini_chemistry", "emma_mini_math", "emma_mini_physics"], sorted(res["results"])
    assert "emma_mini" not in res.get("groups", {}) and sorted(samples) == sorted(res["results"])
    tail = _ours_last(stderr)
    assert len(tail) == 3, stderr[-3000:]
    coding, msearth, group = tail
    assert coding.startswith("lmms_eval_earthsci: emma_mini_coding did not run (exit 2): the mirror's copy of luckychao/EMMA-mini")
    assert "lacks Coding/test-00000-of-00001.parquet" in coding and f"lmms-eval-earthsci mirror {partial}" in coding
    assert msearth.startswith("lmms_eval_earthsci: msearth_mcq did not run (exit 2): ") and "MSEarth/MSEarth_MCQ" in msearth and partial in msearth
    assert group == "lmms_eval_earthsci: emma_mini: no group score in this run (a task of it could not load); its other tasks ran on their own"
    assert "Traceback" not in stderr


def test_a_mirror_gap_leaves_those_tasks_out_runs_the_rest_and_exits_2(hf_home, tmp_path):
    """Plain ``lmms-eval`` at default verbosity (lmms-eval itself stops the whole run at the first task
    that cannot load and exits 0): the tasks whose data is missing are named at once and at the end, the
    others run and are written, and the exit status is 2."""
    partial = _gap_mirror(tmp_path)
    with FakeOpenAIServer(responder=lambda body: "The answer is A") as srv:  # a model every supported lmms-eval has
        proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", "msearth_mcq,emma_mini",
                               "--output_path", str(tmp_path / "o"), "--log_samples"], env=cli_env(partial, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    early = [ln for ln in proc.stderr.splitlines() if "could not load and is left out of this run" in ln]
    assert [ln.split(" could not")[0] for ln in early] == ["lmms_eval_earthsci: emma_mini_coding", "lmms_eval_earthsci: msearth_mcq"]
    _check_gap_outputs(tmp_path / "o", proc.stderr, partial)


def test_a_labs_own_task_on_our_dataset_keeps_its_one_line(hf_home, tmp_path):
    """A task outside our folders (a lab's YAML including ours) reading a dataset the mirror lacks is not
    left out (it is not ours): lmms-eval's run stops as before, with exit 2 and our one line."""
    partial = _gap_mirror(tmp_path)
    lab = tmp_path / "lab_tasks"
    lab.mkdir()
    (lab / "lab_msearth.yaml").write_text(f"include: {os.path.join(TASKS_DIR, 'msearth', 'msearth_mcq.yaml')}\ntask: lab_msearth\n")
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--tasks", "lab_msearth", "--include_path", str(lab), "--output_path", str(tmp_path / "o")],
                          env=cli_env(partial, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    ours = [ln for ln in proc.stderr.splitlines() if "lmms-eval-earthsci" in ln or "lmms_eval_earthsci" in ln]
    assert len(ours) == 1 and ours[0].startswith("lmms-eval-earthsci: lab_msearth: ") and "MSEarth/MSEarth_MCQ" in ours[0], ours


def test_nothing_left_to_run_exits_2_before_the_first_doc(hf_home, tmp_path):
    partial = _gap_mirror(tmp_path)
    proc = forkserver.subprocess_run([sys.executable, "-m", "lmms_eval", "--model", "dummy", "--tasks", "msearth_mcq,emma_mini_coding", "--output_path", str(tmp_path / "o")],
                          env=cli_env(partial, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    tail = _ours_last(proc.stderr)
    assert tail[-3] == "lmms_eval_earthsci: none of the requested tasks could load; nothing to run", tail
    assert [ln.split(" did not run")[0] for ln in tail[-2:]] == ["lmms_eval_earthsci: emma_mini_coding", "lmms_eval_earthsci: msearth_mcq"]
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


def test_two_real_ranks_leave_the_same_tasks_out_and_exit_2(hf_home, tmp_path):
    """``accelerate launch`` over two real CPU ranks (gloo): each rank leaves the same tasks out (lmms-eval
    loads on rank 0 first, then on the others), the rest runs on both ranks and is written once, and both
    ranks exit 2, which the launcher reports."""
    partial = _gap_mirror(tmp_path)
    launcher = two_ranks(29545)
    with FakeOpenAIServer(responder=lambda body: "The answer is A") as srv:
        proc = forkserver.subprocess_run([*launcher, "--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", "msearth_mcq,emma_mini", "--output_path", str(tmp_path / "o"), "--log_samples"],
                              env=cli_env(partial, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert said.count("lmms_eval_earthsci: msearth_mcq could not load and is left out of this run") == 2, proc.stderr[-3000:]  # two ranks ran
    # each rank ends with exit 2 and its last line (a rank the launcher stops after the other's exit may not get to print it)
    assert said.count("lmms_eval_earthsci: msearth_mcq did not run (exit 2)") >= 1 and "exitcode  : 2" in proc.stderr
    res, samples = read_outputs(str(tmp_path / "o"))
    assert sorted(res["results"]) == ["emma_mini_chemistry", "emma_mini_math", "emma_mini_physics"]
    assert len(samples["emma_mini_math"]) == res["n-samples"]["emma_mini_math"]["effective"]  # both ranks' docs gathered


# --------------------------------------------------------------------------- what is not ours stops the run


def _last(stderr):
    return [ln for ln in stderr.splitlines() if ln.strip()][-1]


def test_a_task_not_ours_that_cannot_load_is_left_out_ours_run_and_the_run_exits_3(mirror, hf_home, tmp_path):
    """lmms-eval's own ``ai2d`` cannot load offline (its data is on the Hub only): lmms-eval would stop the
    whole run, write nothing and exit 0. Beside a task of ours it is left out: ours runs and is written,
    and the run ends with exit 3 and one line naming it and why."""
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--tasks", "msearth_mcq,ai2d", "--limit", "2", "--output_path", str(tmp_path / "o")],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 3, proc.stderr[-3000:]
    res, _ = read_outputs(str(tmp_path / "o"))
    assert list(res["results"]) == ["msearth_mcq"] and res["n-samples"]["msearth_mcq"]["effective"] == 2
    assert "lmms_eval_earthsci: ai2d (not one of our tasks) could not load and is left out of this run: ConnectionError: Couldn't reach" in proc.stderr
    assert _ours_last(proc.stderr) == [_last(proc.stderr)]
    assert _last(proc.stderr).startswith("lmms_eval_earthsci: ai2d did not run (exit 3): ConnectionError: Couldn't reach ") and "ai2d' on the Hub" in _last(proc.stderr)


def test_lmms_evals_own_emma_mini_that_fails_ends_naming_ours(mirror, hf_home, tmp_path):
    """Upstream's ``emma-mini`` (which we leave alone) builds its judge when it loads: without OpenAI
    credentials it fails. Its last line names ours; the exit status stays lmms-eval's."""
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--tasks", "emma-mini", "--limit", "2", "--output_path", str(tmp_path / "o")],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Error during evaluation" in proc.stdout + proc.stderr  # the premise: it failed, lmms-eval exited 0
    assert _ours_last(proc.stderr) == ["lmms_eval_earthsci: emma-mini is lmms-eval's own task, not ours: ours is emma_mini (--tasks emma_mini)"]


def test_an_unknown_name_beside_ours_stops_before_the_model_loads_with_exit_3(mirror, hf_home, tmp_path):
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), *NO_MODEL, "--tasks", "msearth_mcq,mmmu_vall", "--output_path", str(tmp_path / "o")],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert _ours_last(proc.stderr) == ["lmms_eval_earthsci: mmmu_vall is no task lmms-eval knows (did you mean mmmu_val?)",
                                       "lmms_eval_earthsci: msearth_mcq did not run (exit 3): the run stopped before the model loaded, at the name(s) above"]
    assert "nonexistent" not in proc.stdout + proc.stderr and not (tmp_path / "o").exists()


def test_limit_0_stops_before_the_model_loads_naming_it(mirror, hf_home, tmp_path):
    """`--limit 0` evaluates no doc: lmms-eval would load every task, raise "did not find any docs!" and exit 1."""
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), *NO_MODEL, "--tasks", "msearth_mcq,emma_mini_math", "--limit", "0", "--output_path", str(tmp_path / "o")],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert _ours_last(proc.stderr) == ["lmms_eval_earthsci: --limit 0 evaluates no doc: msearth_mcq, emma_mini_math did not run (exit 2); give --limit N "
                                       "(N >= 1, or a share 0 < x < 1) or leave it out for every doc"]
    assert "nonexistent" not in proc.stdout + proc.stderr and not (tmp_path / "o").exists()


@pytest.mark.parametrize("verbosity", ["INFO", "DEBUG"])
def test_a_model_that_cannot_load_ends_naming_ours_with_exit_3(mirror, hf_home, tmp_path, verbosity):
    """What stops the run before our tasks ran, outside them (here the model: lmms-eval prints its error
    and exits 0, or 1 with ``--verbosity DEBUG``): exit 3 and one line naming ours and the cause."""
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), *NO_MODEL, "--tasks", "msearth_mcq,emma_mini", "--output_path", str(tmp_path / "o"), "--verbosity", verbosity],
                          env=cli_env(mirror, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 3, proc.stderr[-3000:]
    tail = _ours_last(proc.stderr)
    assert len(tail) == 1 and tail[0].startswith("lmms_eval_earthsci: msearth_mcq, emma_mini did not run (exit 3): the run stopped before them (") and "nonexistent" in tail[0], tail
    assert not (tmp_path / "o").exists()


def test_a_mirror_one_level_too_deep_names_its_parent_and_a_group_that_did_not_run(mirror, hf_home, tmp_path):
    """``EARTHSCI_DATA_MIRROR=<mirror>/luckychao`` (an org folder): every task names the mirror's root to set
    instead, none suggests building a mirror there, and the group none of whose tasks loaded says it did not
    run (not that "its other tasks ran")."""
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--tasks", "emma_mini,msearth_mcq", "--output_path", str(tmp_path / "o")],
                                     env=cli_env(os.path.join(mirror, "luckychao"), hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    tail = _ours_last(proc.stderr)
    tail = tail[tail.index("lmms_eval_earthsci: none of the requested tasks could load; nothing to run") + 1:]
    assert [ln.split(" did not run")[0] for ln in tail] == [f"lmms_eval_earthsci: {t}" for t in ("emma_mini_chemistry", "emma_mini_coding", "emma_mini_math", "emma_mini_physics", "msearth_mcq", "emma_mini")], tail
    for line in tail[:-1]:
        assert "one level too deep" in line and f"set EARTHSCI_DATA_MIRROR={mirror} (the mirror's root" in line, line
    assert tail[-1] == "lmms_eval_earthsci: emma_mini did not run (exit 2): none of its tasks could load (each is named with its cause)"
    assert "its other tasks ran" not in proc.stderr and "lmms-eval-earthsci mirror" not in proc.stderr


def test_with_the_hardening_off_our_tasks_run_with_lmms_evals_exit_code(hf_home, tmp_path):
    """``EARTHSCI_HARDENING=0``: the same mirror gap as above runs our tasks that can load and leaves the
    others out with their line (the integration's), but the process exits as lmms-eval decides (0), with no
    last lines; the records of the run hold no patch of the hardening (each piece is off)."""
    import json

    partial = _gap_mirror(tmp_path)
    records = tmp_path / "records"
    env = cli_env(partial, hf_home, EARTHSCI_HARDENING="0", EARTHSCI_PATCH_RECORDS=str(records))
    with FakeOpenAIServer(responder=lambda body: "The answer is A") as srv:
        proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", "msearth_mcq,emma_mini",
                               "--output_path", str(tmp_path / "o"), "--log_samples"], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    early = [ln for ln in proc.stderr.splitlines() if "could not load and is left out of this run" in ln]
    assert [ln.split(" could not")[0] for ln in early] == ["lmms_eval_earthsci: emma_mini_coding", "lmms_eval_earthsci: msearth_mcq"]
    res, _ = read_outputs(str(tmp_path / "o"))
    assert sorted(res["results"]) == ["emma_mini_chemistry", "emma_mini_math", "emma_mini_physics"]
    assert _ours_last(proc.stderr) == []  # no exit-status lines
    (dump,) = [json.loads(p.read_text()) for p in records.glob("*.json")]
    owners = {r["owner"] for r in dump["records"]}
    assert "lmms_eval_earthsci.core.adapter.task_manager" in owners  # its premise: the run recorded its patches
    assert not [o for o in owners if ".core.hardening." in o] and dump["unrecorded"] == []
