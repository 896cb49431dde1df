"""The Hub route through the real CLI, against a real HTTP server speaking the Hub API.

Every other end-to-end test loads data from the local mirror (``EARTHSCI_DATA_MIRROR``, Hub offline).
Here the unmodified ``huggingface_hub`` / ``datasets`` clients inside the real ``lmms-eval`` CLI load
the same fixture repos over HTTP from :class:`FakeHubServer` (``HF_ENDPOINT`` pointing at it, a fresh
``HF_HOME``, online, no mirror). This proves that:

* the Hub route and the mirror route give the same results and the same per-doc samples, so what the
  mirror tests prove holds for a user who loads from the Hub;
* EMMA is loaded at exactly the revision pinned in its YAMLs, never at ``main`` (the server knows only
  ``emma.REVISION_MINI``: a YAML pin that drifts from the constant is a ``RevisionNotFound`` and the run
  fails), the unpinned repos (MSEarth, SciFIBench) at ``main``; SciFIBench's ``data_files`` override
  reads only its split's parquet over the Hub too (never the legacy v1 files nor the other splits);
* each task records in the results JSON where its data came from (``hub`` with the pinned revision,
  or ``mirror``);
* no request carries an ``Authorization`` header when no token is set; with ``HF_TOKEN`` set every
  request carries it, and the token is written to no output file and no log;
* a data file the Hub fails to serve stops the run (non-zero exit), and the output names the URL.
"""

import glob
import os
import re

import forkserver
import pytest
from conftest import VENV_BIN, cli_env, read_outputs, run_cli

from lmms_eval_earthsci.evals.emma import tasks as emma
from lmms_eval_earthsci.testing.hub_server import FakeHubServer

pytestmark = pytest.mark.e2e

EMMA_MINI = "luckychao/EMMA-mini"
MCQ = "MSEarth/MSEarth_MCQ"
SCIFI = "jonathan-roberts1/SciFIBench"
TASKS = "emma_mini_math,msearth_mcq,scifibench_cs_f2c"
TASK_REPO = {"emma_mini_math": EMMA_MINI, "msearth_mcq": MCQ, "scifibench_cs_f2c": SCIFI}
MODEL_ARGS = ["--model", "dummy", "--model_args", "response=\\boxed{B}"]

EMMA_MATH_PARQUET = "Math/test-00000-of-00001.parquet"
# the data files each task must read over the Hub, and nothing else but the READMEs
EXPECTED_DOWNLOADS = {
    (EMMA_MINI, "README.md"),
    (EMMA_MINI, EMMA_MATH_PARQUET),
    (MCQ, "README.md"),
    (MCQ, "data/train-00000-of-00001.parquet"),
    (SCIFI, "README.md"),
    (SCIFI, "data/CS_Figure2Caption-00000-of-00001.parquet"),
}

# Per-doc sample fields that may differ between the two routes. None does today (the samples hold no
# path nor timing; `doc_hash` is a hash of the doc, so it must match): add a field here only with a
# reason.
VOLATILE_SAMPLE_FIELDS: frozenset = frozenset()

SECRET = "hf_secret_123"


def _repos(mirror, **sha):
    """The served repos: each from the mirror fixture's folder; EMMA-mini at its pinned revision."""
    folder = lambda repo: os.path.join(mirror, *repo.split("/"))  # noqa: E731
    return {
        EMMA_MINI: (folder(EMMA_MINI), sha.get("emma", emma.REVISION_MINI)),
        MCQ: folder(MCQ),
        SCIFI: folder(SCIFI),
    }


def hub_env(hub, mirror, hf_home, token=None):
    """The CLI's environment for the Hub route: cli_env without the mirror and offline flags, plus the
    server's client env (HF_ENDPOINT, this fresh HF_HOME, online, HF_TOKEN only if ``token``)."""
    base = cli_env(mirror, hf_home)
    base.pop("EARTHSCI_DATA_MIRROR")
    env = hub.client_env(hf_home=hf_home, token=token, base=base)
    # as a user's environment: huggingface_hub may send a stored token on its own (there is none in a
    # fresh HF_HOME), so "no Authorization header" is a property of the run, not of this flag
    env.pop("HF_HUB_DISABLE_IMPLICIT_TOKEN", None)
    assert "EARTHSCI_DATA_MIRROR" not in env and env["HF_HUB_OFFLINE"] == env["HF_DATASETS_OFFLINE"] == "0"
    return env


def _cli(out):
    return MODEL_ARGS + ["--tasks", TASKS, "--output_path", str(out), "--log_samples"]


def _metrics(res):
    """{task: {metric: value}} without the stderr entries."""
    return {task: {k: v for k, v in m.items() if "_stderr" not in k} for task, m in res["results"].items()}


def _by_doc(samples):
    out = {}
    for task, rows in samples.items():
        ids = [r["doc_id"] for r in rows]
        assert len(ids) == len(set(ids)), f"{task}: duplicate doc_ids {ids}"
        out[task] = {r["doc_id"]: {k: v for k, v in r.items() if k not in VOLATILE_SAMPLE_FIELDS} for r in rows}
    return out


def _config(cfg):
    """A task's config as written in the results JSON, without what may differ between the routes:
    the data record and the addresses in function reprs."""
    cfg = dict(cfg)
    cfg["metadata"] = {k: v for k, v in (cfg.get("metadata") or {}).items() if k != "earthsci_data"}
    return re.sub(r" at 0x[0-9a-f]+", "", repr(sorted(cfg.items())))


def test_hub_route_matches_mirror_route(mirror, hf_home, tmp_path):
    hub_home = str(tmp_path / "hf_home_hub")
    with FakeHubServer(_repos(mirror)) as hub:
        run_cli(_cli(tmp_path / "hub"), hub_env(hub, mirror, hub_home), str(tmp_path))
    assert hub.errors == [], "\n".join(hub.errors)
    run_cli(_cli(tmp_path / "mirror"), cli_env(mirror, hf_home), str(tmp_path))
    res_hub, samples_hub = read_outputs(str(tmp_path / "hub"))
    res_mir, samples_mir = read_outputs(str(tmp_path / "mirror"))

    # --- what the Hub route asked for
    assert hub.requests, "the Hub route made no request: was the data loaded from elsewhere?"
    assert [(r.method, r.path, r.status) for r in hub.requests if r.status is None or r.status >= 500 or r.status in (401, 403)] == []
    # EMMA-mini: the pinned revision, and only it (never "main")
    assert hub.revisions_requested(EMMA_MINI) == {emma.REVISION_MINI}
    assert "main" not in hub.revisions_requested(EMMA_MINI)
    # the unpinned repos: "main", resolved to the served commit
    for repo in (MCQ, SCIFI):
        assert "main" in hub.revisions_requested(repo) and hub.revisions_requested(repo) <= {"main", hub.sha(repo)}, (repo, hub.revisions_requested(repo))
    # only each task's own data files are transferred: SciFIBench's data_files override works over the
    # Hub (not its other splits, not the legacy v1 files), MSEarth reads MSEarth/MSEarth_MCQ
    assert {(repo, path) for repo, _, path in hub.downloaded_files()} == EXPECTED_DOWNLOADS
    assert not [f for f in hub.resolved_files() if f[0] == SCIFI and "Figure2Caption-00000-of-00001-" in (f[2] or "")]
    # no token set: no request carried one
    assert not [r.path for r in hub.requests if r.authorization]

    # --- each run records where its data came from
    for task, repo in TASK_REPO.items():
        d_hub = res_hub["configs"][task]["metadata"]["earthsci_data"]
        d_mir = res_mir["configs"][task]["metadata"]["earthsci_data"]
        assert d_hub["source"] == "hub" and d_hub["dataset_path"] == repo, d_hub
        assert d_mir["source"] == "mirror" and d_mir["path"] == os.path.join(mirror, *repo.split("/")), d_mir
        assert d_hub["rows"] == d_mir["rows"] and sum(d_hub["rows"].values()) > 0, (task, d_hub, d_mir)
        if repo == EMMA_MINI:
            assert d_hub["revision"] == emma.REVISION_MINI, d_hub
        else:  # unpinned: nothing known offline (the resolved commit would be welcome too)
            assert d_hub["revision"] in (None, hub.sha(repo)), d_hub

    # --- same results, same samples, same task configs
    assert set(res_hub["results"]) == set(TASK_REPO)
    assert _metrics(res_hub) == _metrics(res_mir)
    assert res_hub["n-samples"] == res_mir["n-samples"]
    assert set(samples_hub) == set(samples_mir) == set(TASK_REPO)
    hub_docs, mir_docs = _by_doc(samples_hub), _by_doc(samples_mir)
    for task in TASK_REPO:
        assert hub_docs[task].keys() == mir_docs[task].keys() and hub_docs[task], task
        for doc_id, sample in hub_docs[task].items():
            assert sample.get("doc_hash") and sample == mir_docs[task][doc_id], (task, doc_id)
        assert _config(res_hub["configs"][task]) == _config(res_mir["configs"][task]), task


def test_hub_data_file_failure_names_the_url(mirror, tmp_path):
    """A data file the Hub answers with a 500: the run fails, and its output names the file's URL.

    The fault hits the GET of EMMA-mini's Math parquet only. A 500 on its HEAD too takes
    huggingface_hub's backoff (1+2+4+8+8 s, see test_hub_server.test_fault_always_500_exhausts_the_backoff),
    and lmms-eval's ``download`` retries the whole load (tenacity: 5 attempts or 60 s, 2 s apart): that
    run took ~96 s. A GET is not retried by huggingface_hub, so each load attempt fails at once and the
    run ends in ~30 s (~20 s of it the CLI's start)."""
    out = tmp_path / "out"
    with FakeHubServer({EMMA_MINI: _repos(mirror)[EMMA_MINI]}) as hub:
        fault = hub.add_fault(EMMA_MATH_PARQUET, "500", methods="GET")
        url = f"{hub.base_url}/datasets/{EMMA_MINI}/resolve/{emma.REVISION_MINI}/{EMMA_MATH_PARQUET}"
        cmd = [os.path.join(VENV_BIN, "lmms-eval")] + MODEL_ARGS + ["--tasks", "emma_mini_math", "--output_path", str(out), "--verbosity", "DEBUG"]
        proc = forkserver.subprocess_run(cmd, env=hub_env(hub, mirror, str(tmp_path / "hf_home")), cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert hub.errors == [], "\n".join(hub.errors)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"the run succeeded without its data file:\n{output[-3000:]}"
    assert fault.hits >= 1 and hub.requests_for(endpoint="resolve", method="GET", file=EMMA_MATH_PARQUET)
    assert url in output, f"the failing URL {url} is not named in the output:\n{output[-6000:]}"
    assert re.search(r"\b500\b", output), output[-3000:]
    assert not glob.glob(str(out / "**" / "*_results.json"), recursive=True), "a failed load wrote results"


def test_hf_token_is_sent_and_never_logged(mirror, tmp_path):
    out = tmp_path / "out"
    with FakeHubServer(_repos(mirror), token=SECRET) as hub:
        proc = run_cli(_cli(out), hub_env(hub, mirror, str(tmp_path / "hf_home"), token=SECRET), str(tmp_path))
    assert hub.errors == [], "\n".join(hub.errors)
    # every request carried the token (the server answers any other with a 401)
    assert hub.requests and all(r.authorization for r in hub.requests)
    assert [r.path for r in hub.requests if r.status == 401] == []
    res, samples = read_outputs(str(out))
    assert {t: res["configs"][t]["metadata"]["earthsci_data"]["source"] for t in TASK_REPO} == dict.fromkeys(TASK_REPO, "hub")
    assert all(samples[t] for t in TASK_REPO)
    # ... and it is in no output file, no log
    files = [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs]
    assert len(files) >= 1 + len(TASK_REPO)
    leaks = [p for p in files if SECRET.encode() in open(p, "rb").read()]
    assert leaks == [], f"the token is written in {leaks}"
    # lmms-eval's cli_evaluate_single logs HF_TOKEN in clear at INFO ("Evaluation tracker args: {...,
    # 'token': 'hf_...'}"); our loguru patcher (core.hardening.redaction.redact_hf_token) masks it
    leaked = [line for line in (proc.stdout + proc.stderr).splitlines() if SECRET in line]
    assert leaked == [], "the token is in the CLI's output:\n" + "\n".join(leaked)
    assert "'token': '***'" in proc.stdout + proc.stderr


@pytest.mark.parametrize("status", ["404"])
def test_hub_refusing_a_data_file_is_one_line_naming_repo_file_revision_and_fix(status, mirror, tmp_path):
    """A data file the Hub refuses (here a moved file or a wrong pin; 401 and 403 take the same route,
    their messages are checked in test_data.py): instead of `datasets`' "check your connection", one line
    names the repo, the file, the revision and what to do; the run fails and writes no results."""
    out = tmp_path / "out"
    with FakeHubServer({EMMA_MINI: _repos(mirror)[EMMA_MINI]}) as hub:
        fault = hub.add_fault(EMMA_MATH_PARQUET, status, methods=("GET", "HEAD"))
        cmd = [os.path.join(VENV_BIN, "lmms-eval")] + MODEL_ARGS + ["--tasks", "emma_mini_math", "--output_path", str(out), "--verbosity", "DEBUG"]
        proc = forkserver.subprocess_run(cmd, env=hub_env(hub, mirror, str(tmp_path / "hf_home")), cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2 and fault.hits >= 1, proc.stderr[-3000:]
    # said when it happened, and as the run's last line
    assert len([ln for ln in output.splitlines() if "emma_mini_math could not load and is left out of this run: the Hugging Face Hub answered" in ln]) == 1
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("lmms_eval_earthsci: emma_mini_math did not run (exit 2): the Hugging Face Hub answered "), line
    assert f"answered {status} for {EMMA_MINI} file {EMMA_MATH_PARQUET} at revision {emma.REVISION_MINI}" in line
    fix = {"401": "HF_TOKEN", "403": "accept the dataset's terms", "404": "check the pin"}[status]
    assert fix in line and "EARTHSCI_DATA_MIRROR" in line
    assert not glob.glob(str(out / "**" / "*_results.json"), recursive=True)
