import os
import sys

import forkserver
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
VENV_BIN = os.path.dirname(sys.executable)


SHARED_WHAT = {"reference": "the authors' released outputs", "specs": "the benchmark's specification"}


def shared_path(*parts):
    """A file of the project's reference material (the authors' released outputs, the specifications),
    which the package does not ship; skips the test, saying what is missing and how to provide it, when
    the folder beside the checkout (``../shared``) does not have it (a user's checkout)."""
    path = os.path.join(SHARED, *parts)
    if not os.path.exists(path):
        what = SHARED_WHAT.get(parts[0], "reference material")
        pytest.skip(f"needs {what} ({'/'.join(parts)}), not shipped with the package: put the project's shared/ folder beside this checkout (as ../shared) to run it")
    return path


@pytest.fixture(scope="session")
def mirror(tmp_path_factory):
    """A fixture mirror in every benchmark's upstream schema (written once per session)."""
    from lmms_eval_earthsci.testing.fixtures import write_mirror

    return write_mirror(str(tmp_path_factory.mktemp("mirror")))


@pytest.fixture(scope="session")
def hf_home(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hf_home"))


def cli_env(mirror, hf_home, **extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("EARTHSCI_JUDGE", "EARTHSCI_RM_", "OPENAI_", "API_TYPE", "AZURE_")):
            env.pop(k)
    env.update(
        {
            "EARTHSCI_DATA_MIRROR": mirror,
            "HF_HOME": hf_home,
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PATH": VENV_BIN + os.pathsep + env.get("PATH", ""),
        }
    )
    env.update(extra)
    return env


def run_cli(args, env, cwd, timeout=600, launcher=None):
    """Run the real lmms-eval CLI (``--verbosity DEBUG`` so task errors exit non-zero)."""
    cmd = (launcher or [os.path.join(VENV_BIN, "lmms-eval")]) + list(args) + ["--verbosity", "DEBUG"]
    proc = forkserver.run(cmd, env, cwd, timeout)  # a process of its own, forked with the heavy imports done (tests/forkserver.py)
    if proc.returncode != 0:
        raise AssertionError(f"lmms-eval failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-20000:]}")
    return proc


def two_ranks(port):
    """The launcher prefix of two real CPU ranks (gloo): ``accelerate launch --cpu --num_processes 2`` starts
    one process. lmms-eval runs through a shim that lets 0.6.x gather over gloo (a no-op on 0.7)."""
    return [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
        "--dynamo_backend", "no", "--main_process_port", str(port), os.path.join(os.path.dirname(os.path.abspath(__file__)), "_gloo_allgather_shim.py"),
    ]


def openai_args(base_url, **extra):
    """``--model_args`` of lmms-eval's openai backend serving model ``fake`` from ``base_url``. ``model_version=``
    is the spelling every supported lmms-eval takes (0.7 added the ``model=`` alias; 0.6.1 ignores it)."""
    args = {"model_version": "fake", "base_url": base_url, "api_key": "sk-fake", **extra}
    return ",".join(f"{k}={v}" for k, v in args.items())


def read_outputs(output_path):
    """(results dict, {task: [samples]}) from an lmms-eval output folder."""
    import glob
    import json

    results = sorted(glob.glob(os.path.join(output_path, "**", "*_results.json"), recursive=True))
    assert results, f"no results JSON under {output_path}"
    with open(results[-1]) as f:
        res = json.load(f)
    # every run of ours: no empty pseudo-metric (a per-doc field lmms-eval gathered with no aggregation)
    empty = {(t, k) for t, r in res.get("results", {}).items() for k, v in r.items() if v == []}
    assert not empty, f"empty metrics in the results: {sorted(empty)}"
    samples = {}
    for path in glob.glob(os.path.join(output_path, "**", "*_samples_*.jsonl"), recursive=True):
        task = path.rsplit("_samples_", 1)[1][: -len(".jsonl")]
        with open(path) as f:
            samples[task] = [json.loads(line) for line in f if line.strip()]
    return res, samples


def run_with_judge(mirror, hf_home, tmp_path, responder, tasks, judge_model="judge-m", **env_extra):
    """Run the openai chat backend against one loopback server playing the model (``fake``)
    and the judge (``judge_model``); returns (results, samples, request bodies)."""
    from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(responder=responder) as srv:
        out = tmp_path / "out"
        env = cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=srv.base_url, EARTHSCI_JUDGE_MODEL=judge_model, EARTHSCI_JUDGE_CACHE=str(tmp_path / "cache"), **env_extra)
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", tasks, "--output_path", str(out), "--log_samples"]
        run_cli(args, env, str(tmp_path))
        bodies = list(srv.requests)
    res, samples = read_outputs(str(out))
    return res, samples, bodies


# --------------------------------------------------------------------------- test tiers
#
# `make test-fast` runs what is marked neither `e2e` (starts the real lmms-eval CLI or a process running
# it) nor `slow` (anything else that costs more than a few seconds: a fresh interpreter, lmms-eval's task
# index, a stress test, a wheel build), with --fast-tier-limit: a test of that tier that takes longer
# (setup + call, a module or session fixture it is the first to use included) fails, naming the marker
# it needs. `make test` runs everything.


def pytest_addoption(parser):
    parser.addoption("--fast-tier-limit", type=float, default=None, metavar="SECONDS", help="fail any test not marked e2e or slow that takes longer than this (setup + call)")
    parser.addoption("--run-install", action="store_true", help="run the tests marked `install` (each installs a full venv; `make test-install`)")
    parser.addoption("--run-browser", action="store_true", help="run the tests marked `browser` (Debian's chromium + Playwright; `make test-browser`)")
    parser.addoption("--run-models", action="store_true", help="run the tests marked `models` (lmms-eval's model classes on tiny models; `make test-models`, the vision venv)")
    parser.addoption("--run-vllm", action="store_true", help="run the tests marked `vllm` (the real vLLM engine on CPU; `make test-vllm`, its own venv)")
    parser.addoption("--run-sweep", action="store_true", help="run the tests marked `sweep` (the smoke sweep at --limit 3; `make test-sweep`, CI)")


# markers whose tests run only when asked for, each by its own make target
OPT_IN = {
    "install": ("--run-install", "installs a full venv: `make test-install`"),
    "browser": ("--run-browser", "needs Chromium and Playwright: `make test-browser`"),
    "models": ("--run-models", "lmms-eval's model classes on tiny models, in the vision venv: `make test-models`"),
    "vllm": ("--run-vllm", "the real vLLM engine on CPU, in its own venv: `make test-vllm`"),
    "sweep": ("--run-sweep", "the smoke sweep at --limit 3, CI's: `make test-sweep`"),
}


def pytest_collection_modifyitems(config, items):
    for marker, (option, why) in OPT_IN.items():
        if config.getoption(option):
            continue
        skip = pytest.mark.skip(reason=f"{why} ({option})")
        for item in items:
            if item.get_closest_marker(marker):
                item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    limit = item.config.getoption("--fast-tier-limit")
    if limit is None or rep.when not in ("setup", "call") or item.get_closest_marker("e2e") or item.get_closest_marker("slow"):
        return
    item._earthsci_seconds = getattr(item, "_earthsci_seconds", 0.0) + rep.duration
    if rep.when == "call" and rep.passed and item._earthsci_seconds > limit:
        rep.outcome = "failed"
        rep.longrepr = (
            f"{item.nodeid} took {item._earthsci_seconds:.1f} s (setup + call), over the fast tier's {limit:g} s: "
            "make it faster, or mark it `slow` (or `e2e` if it starts lmms-eval) so that it runs in `make test` only"
        )


# `make test-times` and CI: with PYTEST_TIMES_DIR set, the session (xdist's controller, which sees every worker's
# reports) writes its wall time and what each test cost, phase by phase, to <dir>/<tier>-<pid>.json, the tier named by
# PYTEST_TIER (each make target sets it); benchmarks/test_times.py adds them up. Not an EARTHSCI_* name: the CLI runs
# the tests start would warn about a setting they do not know.
_TIMES: dict = {"tests": {}, "started": None}


def pytest_sessionstart(session):
    import time

    _TIMES["started"] = time.time()


def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_TIMES_DIR"):
        phases = _TIMES["tests"].setdefault(report.nodeid, {"setup": 0.0, "call": 0.0, "teardown": 0.0})
        phases[report.when] = phases.get(report.when, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    import json
    import time

    folder = os.environ.get("PYTEST_TIMES_DIR")
    if not folder or os.environ.get("PYTEST_XDIST_WORKER"):  # a worker: its reports reach the controller
        return
    os.makedirs(folder, exist_ok=True)
    out = {"tier": os.environ.get("PYTEST_TIER", "make test"), "wall": time.time() - (_TIMES["started"] or time.time()), "tests": _TIMES["tests"]}
    with open(os.path.join(folder, f"{out['tier'].replace(' ', '_')}-{os.getpid()}.json"), "w") as f:
        json.dump(out, f)


def cached_verdict_keys(cache_dir):
    """The request keys in a judge cache directory's verdicts (what a killed pass had judged)."""
    import sqlite3

    con = sqlite3.connect(os.path.join(cache_dir, "verdicts.sqlite3"))
    try:
        return {k for (k,) in con.execute("SELECT key FROM verdicts")}
    finally:
        con.close()


def run_rescore(args, env, cwd=None, timeout=900):
    """``lmms-eval-earthsci rescore ARGS`` as its own process (forked with the heavy imports done)."""
    return forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval-earthsci"), "rescore", *map(str, args)], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session", autouse=True)
def _our_entry_point_has_run():
    """As in every lmms-eval process (our entry point runs when lmms-eval imports its models) and every command of
    ours: the runtime filled with what is ours and the old module names installed. An import does neither
    (tests/core/test_runtime.py)."""
    from lmms_eval_earthsci import registration

    registration.start()


@pytest.fixture(autouse=True)
def _a_run_of_its_own():
    """Each test starts with no other test's run state on the process's runtime (the steps before the first
    request, judge verdicts, observations of models): on a shared pytest worker a test once saw two
    ``before_evaluate`` steps an earlier test had added."""
    from lmms_eval_earthsci.core.runtime import current

    current().new_run()
    yield


@pytest.fixture(autouse=True)
def _no_loguru_sink_on_a_closed_stream():
    """lmms-eval adds loguru handlers on ``sys.stdout`` when it runs or is imported in-process (``__main__``'s
    ``--verbosity`` handler, ``lmms_eval.models``' WARNING handler). Under ``capsys`` that stream is pytest's
    and is closed when the test ends; every later log line of that worker then prints a "Logging error"
    traceback into the next test's output. Such handlers are removed before each test."""
    from loguru import logger

    for handler_id, handler in list(logger._core.handlers.items()):
        stream = getattr(getattr(handler, "_sink", None), "_stream", None)
        if getattr(stream, "closed", False):
            logger.remove(handler_id)
    yield
