"""`lmms-eval-earthsci mirror DIR` against a real HTTP server speaking the Hub's API (FakeHubServer over the
fixture repos): every benchmark's repos at their pins with the files their tasks read, the commit of an
unpinned repo recorded, 401 and 404 in one line each, an interruption mid-file resumed by a second call,
and a run on the made mirror, without the Hub, equal to a run on the fixture mirror."""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import forkserver
import pytest
from conftest import cli_env, read_outputs, run_cli

from lmms_eval_earthsci.commands.mirror import plan
from lmms_eval_earthsci.core import data
from lmms_eval_earthsci.evals.emma import tasks as emma
from lmms_eval_earthsci.testing.hub_server import FakeHubServer

CLI = [sys.executable, "-m", "lmms_eval_earthsci.cli"]
PINS = {"luckychao/EMMA-mini": emma.REVISION_MINI, "luckychao/EMMA": emma.REVISION_FULL}


def served(mirror):
    """Every repo our tasks read, served from the fixture mirror's folder (EMMA's at their pins)."""
    repos = {}
    for p in plan():
        folder = os.path.join(mirror, *p.repo.split("/"))
        repos[p.repo] = (folder, PINS[p.repo]) if p.repo in PINS else folder
    return repos


def mirror_cmd(hub, hf_home, dest, *args, token=None):
    env = hub.client_env(hf_home=hf_home, token=token)
    env.pop("EARTHSCI_DATA_MIRROR", None)
    return forkserver.subprocess_run([*CLI, "mirror", str(dest), *args], env=env, capture_output=True, text=True, timeout=300)


def files_under(folder):
    return sorted(os.path.relpath(p, folder) for p in glob.glob(os.path.join(folder, "**", "*"), recursive=True) if os.path.isfile(p) and "/.cache/" not in "/" + os.path.relpath(p, folder) + "/")


@pytest.mark.slow
def test_every_benchmark_mirrored_at_its_pins_with_the_files_its_tasks_read(mirror, tmp_path):
    with FakeHubServer(served(mirror)) as hub:
        proc = mirror_cmd(hub, tmp_path / "hf", tmp_path / "m")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        requested = {(r.repo, r.revision) for r in hub.requests if r.endpoint == "resolve"}
    out = proc.stdout.splitlines()
    root = str(tmp_path / "m")
    assert out[-2:] == ["on the compute nodes:", f"export EARTHSCI_DATA_MIRROR={root}"]
    assert any(line.startswith(f"mirror {root}: OK") for line in out)  # check-mirror's verdict
    # EMMA at its pins only; the unpinned repos at main, whose commit is recorded
    assert {rev for repo, rev in requested if repo in PINS} <= set(PINS.values()) | {None}
    manifest = json.load(open(tmp_path / "m" / "earthsci_mirror.json"))["repos"]
    for p in plan():
        local = os.path.join(root, *p.repo.split("/"))
        assert data.recorded_revision(local) == hub.sha(p.repo) == manifest[p.repo]["commit"], p.repo
        assert manifest[p.repo]["pin"] == PINS.get(p.repo)
    # the files the tasks read: SciFIBench's four splits, not its legacy file; MAC's CSVs and covers
    sci = files_under(os.path.join(root, "jonathan-roberts1", "SciFIBench"))
    assert sci == sorted(["README.md"] + [f"data/{s}-00000-of-00001.parquet" for s in ("CS_Caption2Figure", "CS_Figure2Caption", "General_Caption2Figure", "General_Figure2Caption")])
    assert any(f.startswith("data/Figure2Caption") for f in files_under(os.path.join(mirror, "jonathan-roberts1", "SciFIBench")))  # the premise
    mac_src, mac = (files_under(os.path.join(r, "mhjiang0408", "MAC_Bench")) for r in (mirror, root))
    assert mac == [f for f in mac_src if f.endswith(".csv") or "/Cover/" in f or f == "README.md"] and any("/Cover/" in f for f in mac)
    figures = files_under(os.path.join(root, "StonyBrookNLP", "MuSciClaims"))
    assert figures == files_under(os.path.join(mirror, "StonyBrookNLP", "MuSciClaims"))
    # a second call fetches nothing
    with FakeHubServer(served(mirror)) as hub:
        again = mirror_cmd(hub, tmp_path / "hf", tmp_path / "m")
        assert again.returncode == 0 and hub.downloaded_files() == [], again.stdout


@pytest.mark.slow  # two fresh interpreters (the mirror command): 4-6 s on 2 cores, over the fast tier's limit under load
@pytest.mark.parametrize("status", ["401", "404"])
def test_a_refused_repo_is_one_line_and_the_others_are_fetched(status, mirror, tmp_path):
    with FakeHubServer(served(mirror)) as hub:
        hub.add_fault(lambda r: r.repo == "mhjiang0408/MAC_Bench", status)
        proc = mirror_cmd(hub, tmp_path / "hf", tmp_path / "m", "--benchmarks", "mac,scifibench")
    ours = [line for line in proc.stderr.splitlines() if line.startswith("lmms-eval-earthsci mirror:")]
    assert proc.returncode == 1 and len(ours) == 1, proc.stderr
    assert f"answered {status} for mhjiang0408/MAC_Bench" in ours[0] and ("HF_TOKEN" in ours[0] if status == "401" else "check the repo name and the pin" in ours[0])
    assert os.path.isfile(tmp_path / "m" / "jonathan-roberts1" / "SciFIBench" / "data" / "CS_Figure2Caption-00000-of-00001.parquet")
    assert "export EARTHSCI_DATA_MIRROR" not in proc.stdout


@pytest.mark.slow
def test_killed_mid_file_leaves_no_file_that_passes_and_a_second_call_completes(mirror, tmp_path):
    target = "Math/test-00000-of-00001.parquet"
    src = os.path.join(mirror, "luckychao", "EMMA-mini", target)
    dest = tmp_path / "m" / "luckychao" / "EMMA-mini" / target
    with FakeHubServer(served(mirror)) as hub:
        hub.add_fault(target, "stall", delay=120, methods=("GET",))
        env = hub.client_env(hf_home=tmp_path / "hf")
        proc = subprocess.Popen([*CLI, "mirror", str(tmp_path / "m"), "--tasks", "emma_mini"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not any(r.fault == "stall" for r in hub.requests) and time.time() < deadline:
            time.sleep(0.1)
        assert any(r.fault == "stall" for r in hub.requests), "the download never reached the file"
        time.sleep(0.5)  # the first half of the body is in the client's hands
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert proc.returncode == -signal.SIGKILL  # killed mid-file, not finished
        incomplete = glob.glob(str(tmp_path / "m" / "luckychao" / "EMMA-mini" / ".cache" / "huggingface" / "download" / "**" / "*.incomplete"), recursive=True)
        assert not dest.exists() and incomplete, "a partial file passes as complete, or nothing was written"
        hub.clear_faults()
        hub.release_stalls()
        again = forkserver.subprocess_run([*CLI, "mirror", str(tmp_path / "m"), "--tasks", "emma_mini"], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert open(dest, "rb").read() == open(src, "rb").read()


@pytest.mark.e2e
def test_a_run_on_the_made_mirror_without_the_hub_equals_the_fixture_mirrors(mirror, hf_home, tmp_path):
    tasks = "emma_mini_math,msearth_mcq,scifibench_cs_f2c,musciclaims_d,mac2025_i2t_info"
    with FakeHubServer(served(mirror)) as hub:
        proc = mirror_cmd(hub, tmp_path / "hf", tmp_path / "m", "--tasks", tasks)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    args = ["--model", "dummy", "--model_args", "response=\\boxed{B}", "--tasks", tasks, "--log_samples", "--limit", "3"]
    outputs = {}
    for name, root in (("made", str(tmp_path / "m")), ("fixture", mirror)):
        run_cli([*args, "--output_path", str(tmp_path / name)], cli_env(root, hf_home), str(tmp_path))  # HF_HUB_OFFLINE=1: no Hub
        outputs[name] = read_outputs(str(tmp_path / name))
    (made_res, made), (fix_res, fixture) = outputs["made"], outputs["fixture"]
    assert made_res["results"] == fix_res["results"]
    for task, rows in fixture.items():
        assert [{k: v for k, v in r.items() if k != "doc_hash"} for r in made[task]] == [{k: v for k, v in r.items() if k != "doc_hash"} for r in rows], task


@pytest.mark.slow  # two fresh interpreters, as above
def test_hf_token_is_honoured_and_never_written(mirror, tmp_path):
    """A private Hub (every request needs the token): without HF_TOKEN a 401 line; with it the mirror is
    made, every request carrying it, and the token is in no file of the mirror."""
    secret = "hf_mirror_secret_42"
    with FakeHubServer(served(mirror), token=secret) as hub:
        refused = mirror_cmd(hub, tmp_path / "hf", tmp_path / "m", "--benchmarks", "emma")
        hub.clear_requests()
        made = mirror_cmd(hub, tmp_path / "hf", tmp_path / "m", "--benchmarks", "emma", token=secret)
        requests = list(hub.requests)
    assert refused.returncode == 1 and "answered 401" in refused.stderr and "HF_TOKEN" in refused.stderr
    assert made.returncode == 0, made.stdout + made.stderr
    assert requests and all(r.authorization for r in requests)
    for path in glob.glob(str(tmp_path / "m" / "**" / "*"), recursive=True):
        if os.path.isfile(path):
            assert secret.encode() not in open(path, "rb").read(), path
