"""core.data.repo_files: the files rows name (MuSciClaims figures), from the loopback Hub server and the
mirror, through the unmodified huggingface_hub client in separate processes (as ranks are).

Proves: a cold cache downloads each needed file once (one listing call, no 404 probing: the path fixes
are resolved against the listing); a warm cache makes no file request; two processes started together
on a fresh cache download each file once in total (the machine-wide lock), and both did wait on each
other (their fetch windows overlap); offline, the cached snapshot serves everything with no request; a
missing file is one error naming the paths tried and the root; the mirror serves the same files."""

import json
import os
import subprocess
import sys

import pytest

from lmms_eval_earthsci.core.data.repo_files import RepoFileError, RepoFiles
from lmms_eval_earthsci.evals.musciclaims import tasks as musciclaims_tasks
from lmms_eval_earthsci.evals.musciclaims.fixtures import musciclaims_rows, write_musciclaims
from lmms_eval_earthsci.testing.hub_server import FakeHubServer

REPO = musciclaims_tasks.DATASET

FETCH = r"""
import json, sys, time
from lmms_eval_earthsci.evals.musciclaims import tasks as musciclaims_tasks
from lmms_eval_earthsci.core.data.repo_files import RepoFileError, repo_files
paths = json.loads(sys.argv[1])
t0 = time.time()
store = repo_files(musciclaims_tasks.DATASET, musciclaims_tasks.REVISION, musciclaims_tasks.PATH_REWRITES)
got = store.fetch(paths)
t1 = time.time()
out = {p: ({"error": str(v)} if isinstance(v, RepoFileError) else {"repo_path": v.repo_path, "how": v.how, "local": v.local}) for p, v in got.items()}
print(json.dumps({"files": out, "summary": store.summary(), "t0": t0, "t1": t1}))
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("mc_repo"))
    return write_musciclaims(root)


def _paths():
    return sorted({r["associated_figure_filepath"] for r in musciclaims_rows()[0]})


def _fetch(env, paths):
    proc = subprocess.run([sys.executable, "-c", FETCH, json.dumps(paths)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _start(env, paths):
    return subprocess.Popen([sys.executable, "-c", FETCH, json.dumps(paths)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _env(hub, hf_home):
    env = hub.client_env(hf_home=str(hf_home))
    env.pop("EARTHSCI_DATA_MIRROR", None)
    return env


def _check_files(repo, result):
    for _rel, got in result["files"].items():
        assert "error" not in got, got
        with open(got["local"], "rb") as a, open(os.path.join(repo, *got["repo_path"].split("/")), "rb") as b:
            assert a.read() == b.read()


def test_cold_then_warm_cache(repo, tmp_path):
    paths = _paths()
    bug = [p for p in paths if "jacs_data_10.1021_" in p]
    assert bug, "the fixture must carry the path bug"
    with FakeHubServer({REPO: repo}) as hub:
        env = _env(hub, tmp_path / "hf")
        cold = _fetch(env, paths)
        _check_files(repo, cold)
        assert cold["files"][bug[0]]["how"] == "rewritten"
        assert cold["summary"]["fallbacks"] == {"rewritten": 1} and cold["summary"]["revision"] == hub.sha(REPO)
        downloads = sorted(f for _, _, f in hub.downloaded_files())
        wanted = sorted({got["repo_path"] for got in cold["files"].values()})
        assert downloads == wanted  # each needed file once, nothing else (no 404 probing of the buggy path)
        assert len(hub.requests_for(endpoint="info")) == 1
        hub.clear_requests()
        warm = _fetch(env, paths)
        _check_files(repo, warm)
        assert hub.resolved_files() == []  # no file request at all
        assert len(hub.requests_for(endpoint="info")) == 1
        hub.clear_requests()
        offline = _fetch({**env, "HF_HUB_OFFLINE": "1"}, paths)
        _check_files(repo, offline)
        assert offline["summary"]["source"] == "hub-cache"
        assert hub.requests == []


def test_two_processes_at_once_download_each_file_once(repo, tmp_path):
    paths = _paths()
    with FakeHubServer({REPO: repo}) as hub:
        hub.add_fault("paper_figures/*", kind="slow", delay=0.3, methods="GET")
        env = _env(hub, tmp_path / "hf")
        procs = [_start(env, paths) for _ in range(2)]
        outs = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=120)
            assert p.returncode == 0, stderr[-3000:]
            outs.append(json.loads(stdout.strip().splitlines()[-1]))
        for out in outs:
            _check_files(repo, out)
        # premise: both processes were fetching at the same time (their windows overlap)
        (a, b) = sorted(outs, key=lambda o: o["t0"])
        assert b["t0"] < a["t1"], "the two processes did not overlap: the test proves nothing"
        wanted = sorted({o["repo_path"] for o in a["files"].values()})
        # one GET per file in total; and one HEAD: the second process waited for the first (the lock)
        # instead of probing each file itself (huggingface_hub alone dedupes the GETs, not the HEADs)
        assert sorted(f for _, _, f in hub.downloaded_files()) == wanted
        assert sorted(f for _, _, f in hub.resolved_files(methods=("HEAD",))) == wanted


def test_missing_file_is_one_error_naming_tried_paths_and_root(repo, tmp_path):
    missing = "paper_figures/jacs_data_10.1021_jacs.9z99999_figure_7.jpg"
    with FakeHubServer({REPO: repo}) as hub:
        out = _fetch(_env(hub, tmp_path / "hf"), [missing])
        err = out["files"][missing]["error"]
        assert f"'{missing}'" in err and "'paper_figures/chem_10.1021_jacs.9z99999_figure_7.jpg'" in err
        assert "*/jacs_data_10.1021_jacs.9z99999_figure_7.jpg" in err and f"hub:{REPO}@{hub.sha(REPO)}" in err
        assert hub.downloaded_files() == []


def test_mirror_serves_the_same_files_and_the_basename_fallback(repo, tmp_path, monkeypatch):
    mirror_root = os.path.dirname(os.path.dirname(repo))
    monkeypatch.setenv("EARTHSCI_DATA_MIRROR", mirror_root)
    store = RepoFiles(REPO, None, musciclaims_tasks.PATH_REWRITES)
    name = "bio_PIIS0092867400000001_images_figure_1.jpg"
    got = store.fetch([f"figures/{name}", f"./paper_figures/{name}"])
    assert got[f"figures/{name}"].how == "basename" and got[f"./paper_figures/{name}"].how == "given"
    assert got[f"figures/{name}"].local == os.path.join(repo, "paper_figures", name)
    assert store.summary()["fallbacks"] == {"basename": 1} and store.summary()["source"] == "mirror"
    with pytest.raises(RepoFileError, match=r"tried 'paper_figures/nope.jpg', '\*/nope.jpg' in " + repo):
        store.path("paper_figures/nope.jpg")


def test_decoded_cache_and_max_pixels(tmp_path, monkeypatch):
    from PIL import Image

    from lmms_eval_earthsci.core.data.repo_files import DecodedCache

    path = str(tmp_path / "big.jpg")
    Image.new("RGB", (3000, 2000), (10, 200, 30)).save(path, quality=90)
    cache = DecodedCache(maxsize=2)
    full = cache.get(path)
    assert full.size == (3000, 2000) and cache.get(path) is full and (cache.hits, cache.misses) == (1, 1)
    small = cache.get(path, max_pixels=600_000)
    assert small.width * small.height <= 600_000 and abs(small.width / small.height - 1.5) < 0.01 and small.mode == "RGB"
    cache.get(str(tmp_path / "big.jpg"), max_pixels=10**9)  # under the cap: full size, a third entry
    assert len(cache._items) == 2  # bounded
    assert cache.get(path, max_pixels=10**9).size == (3000, 2000)
    # the task setting and its environment override
    assert musciclaims_tasks._task_kwargs({"max_pixels": 500000})["max_pixels"] == 500000 and musciclaims_tasks._task_kwargs({})["max_pixels"] is None
    monkeypatch.setenv(musciclaims_tasks.MAX_PIXELS_ENV, "123456")
    assert musciclaims_tasks._task_kwargs({"max_pixels": 500000})["max_pixels"] == 123456


REFUSED = r"""
import sys
from lmms_eval_earthsci.evals.musciclaims import tasks as musciclaims_tasks
from lmms_eval_earthsci.core.data import HubRefusedError
from lmms_eval_earthsci.core.data.repo_files import repo_files
try:
    repo_files(musciclaims_tasks.DATASET, musciclaims_tasks.REVISION, musciclaims_tasks.PATH_REWRITES).listing()
except HubRefusedError as exc:
    print(exc)
"""


@pytest.mark.parametrize("status, fix", [("401", "set HF_TOKEN"), ("404", "no such repo or revision")])
def test_a_refused_repo_listing_is_one_line_naming_repo_revision_and_fix(status, fix, repo, tmp_path):
    with FakeHubServer({REPO: repo}) as hub:
        hub.add_fault(f"/api/datasets/{REPO}*", status)
        proc = subprocess.run([sys.executable, "-c", REFUSED], env=_env(hub, tmp_path / "hf"), capture_output=True, text=True, timeout=120)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and len(lines) == 1, proc.stdout + proc.stderr[-3000:]
    assert lines[0].startswith(f"the Hugging Face Hub answered {status} for {REPO} at revision {musciclaims_tasks.REVISION or 'main'} ("), lines[0]
    assert fix in lines[0] and "EARTHSCI_DATA_MIRROR" in lines[0]


@pytest.mark.parametrize("status, fix", [("403", "accept the dataset's terms"), ("404", "check the pin")])
def test_a_refused_figure_is_one_line_naming_repo_file_revision_and_fix(status, fix, repo, tmp_path):
    """A figure the listing has but the Hub refuses (gated file, pulled from the revision): the doc's error
    names the repo, the file, the commit and the fix, not huggingface_hub's bare status line."""
    paths = _paths()
    with FakeHubServer({REPO: repo}) as hub:
        hub.add_fault(paths[0], status)
        out = _fetch(_env(hub, tmp_path / "hf"), paths)
        sha = hub.sha(REPO)
    err = out["files"][paths[0]]["error"]
    assert "\n" not in err and f"the Hugging Face Hub answered {status} for {REPO} file {paths[0]} at revision {sha} (" in err, err
    assert fix in err and "EARTHSCI_DATA_MIRROR" in err
    assert all("error" not in got for rel, got in out["files"].items() if rel != paths[0])
