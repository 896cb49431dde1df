"""The route that does not need our entry point installs all our hooks (mirror, record validation, judge pass,
logs): our `run` command, tested with the entry point hidden, as it is when a site disables entry points. An import
of ours installs nothing (tests/core/test_runtime.py): with the entry point hidden, lmms-eval's own CLI finds our
tasks through --include_path but runs them without our hooks, so the README names `lmms-eval-earthsci run` for it."""

import subprocess
import sys

import pytest
from conftest import cli_env, openai_args, read_outputs

from lmms_eval_earthsci import TASKS_DIR
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

# runs the route with this package's lmms_eval.models entry point neutralised (loading it gives a
# callable that registers nothing, as if the entry point were not installed)
HIDDEN = """
import importlib.metadata as md, runpy, sys
_load = md.EntryPoint.load
def load(self):
    return (lambda: []) if self.value.startswith("lmms_eval_earthsci") else _load(self)
md.EntryPoint.load = load
route, args = sys.argv[1], sys.argv[2:]
if route == "wrapper":
    from lmms_eval_earthsci.cli import main
    raise SystemExit(main(["run", *args]))
sys.argv = ["lmms-eval", *args]
runpy.run_module("lmms_eval", run_name="__main__")
"""


def _run(route, args, env, cwd):
    return subprocess.run([sys.executable, "-c", HIDDEN, route, *args, "--verbosity", "DEBUG"], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_entry_point_hidden_is_really_hidden(mirror, hf_home, tmp_path):
    proc = _run("lmms-eval", ["--model", "dummy", "--tasks", "emma_mini_math", "--output_path", str(tmp_path / "o")], cli_env(mirror, hf_home), str(tmp_path))
    assert proc.returncode != 0 and "emma_mini_math" in proc.stdout + proc.stderr  # not found: the premise holds


@pytest.mark.parametrize("route", ["wrapper"])
def test_fallback_routes_install_every_hook(mirror, hf_home, tmp_path, route):
    def responder(body):
        return "Correct" if body.get("model") == "judge-m" else "So \\boxed{B}"
    with FakeOpenAIServer(responder=responder) as srv:
        out = tmp_path / "out"
        env = cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=srv.base_url, EARTHSCI_JUDGE_MODEL="judge-m", EARTHSCI_JUDGE_CACHE=str(tmp_path / "cache"))
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", "emma_mini_judge_math", "--output_path", str(out), "--log_samples"]
        if route == "include_path":
            args = ["--include_path", TASKS_DIR, *args]
        proc = _run("wrapper" if route == "wrapper" else "lmms-eval", args, env, str(tmp_path))
        assert proc.returncode == 0, proc.stderr[-4000:]
        judged = [b for b in srv.requests if b.get("model") == "judge-m"]
    res, samples = read_outputs(str(out))
    log = proc.stdout + proc.stderr
    assert res["configs"]["emma_mini_judge_math"]["metadata"]["earthsci_data"]["source"] == "mirror"  # mirror hook
    assert "judge pass emma_mini_judge_math (rank 0/1" in log and "judge summary emma_mini_judge_math" in log  # pass + logs
    assert len(judged) == 3 and all(s["emma_judge_acc"]["judge"]["status"] == "judged" for s in samples["emma_mini_judge_math"])
