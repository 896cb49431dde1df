"""Every lmms-eval patch and internal in core.activation.INVENTORY has, in the installed lmms-eval, the
shape we rely on (its target exists, takes the parameters we pass, its module has the names we read);
a failure names the entry. In the smoke list: the oldest lmms-eval we support runs it too (an entry
newer than the installed version is skipped, saying so). Our copy of lmms-eval's CLI default reasoning
tags equals its parser's, and our reading of `--reasoning_tags` from the command line equals argparse's."""

import importlib.util
import sys
from importlib.metadata import version

import pytest
from packaging.version import Version

from lmms_eval_earthsci.core.activation import INVENTORY
from lmms_eval_earthsci.core.adapter import judge_hook
from lmms_eval_earthsci.core.upstream.inventory import Entry, target_problem

LMMS_EVAL = Version(version("lmms-eval"))
pytestmark = pytest.mark.slow  # imports lmms-eval's task machinery and CLI (seconds)


@pytest.mark.parametrize("t", INVENTORY, ids=[t.name for t in INVENTORY])
def test_each_patch_target_has_the_shape_we_rely_on(t):
    top = t.target.split(":")[0].split(".")[0]
    if top != "lmms_eval" and importlib.util.find_spec(top) is None:
        pytest.skip(f"{t.name}: {top} is not installed here (its tier checks it: make test-vllm for vllm)")
    if LMMS_EVAL < Version(t.since):
        pytest.skip(f"{t.name}: {t.target} is in lmms-eval >= {t.since}, this is {LMMS_EVAL}")
    assert t.kind in ("wraps", "registers", "subscribes", "reads") and t.missing in ("warns", "fails") and t.why and t.owner
    assert target_problem(t) is None, f"inventory entry {t.name!r} ({t.owner}): {target_problem(t)}"


def test_a_moved_target_is_named():
    gone = Entry("x", "wraps", "lmms_eval.api.task:ConfigurableTask.no_such_method", "us", "why")
    assert target_problem(gone).startswith("lmms_eval.api.task:ConfigurableTask.no_such_method is gone (AttributeError")
    lost = Entry("x", "wraps", "lmms_eval.tasks:TaskManager.initialize_tasks", "us", "why", params=("include_path", "no_such_param"))
    assert target_problem(lost) == "lmms_eval.tasks:TaskManager.initialize_tasks no longer takes no_such_param"
    attrs = Entry("x", "reads", "lmms_eval.api.task:ConfigurableTask", "us", "why", attrs=("NO_SUCH_NAME",))
    assert target_problem(attrs) == "lmms_eval.api.task:ConfigurableTask's module no longer has NO_SUCH_NAME"


@pytest.mark.skipif(LMMS_EVAL < Version("0.7.3"), reason="lmms-eval < 0.7.3 strips no reasoning tags")
@pytest.mark.parametrize("argv", [[], ["--reasoning_tags", "none"], ['--reasoning_tags=[["<r>", "</r>"]]'], ["--reasoning_tags", '[["<a>", "</a>"]]', "--tasks", "x"]])
def test_our_reading_of_reasoning_tags_equals_lmms_evals_parser(argv, monkeypatch):
    from lmms_eval.__main__ import parse_eval_args

    monkeypatch.setattr(sys, "argv", ["lmms-eval", "--model", "openai", *argv])
    parsed = parse_eval_args()
    args = parsed[1] if isinstance(parsed, tuple) else parsed
    assert judge_hook._cli_reasoning_tags() == args.reasoning_tags
    if not argv:  # our copy of the CLI's default
        assert judge_hook._LMMS_DEFAULT_REASONING_TAGS == args.reasoning_tags


def test_the_reports_task_build_installs_the_data_hooks_only(tmp_path):
    """``report`` builds a run's tasks for their figures: it installs the mirror hook and the record gate, none of
    a run's hooks (judge pass, aggregation, exit hook) and no check of a setting only a run reads (a wrong judge
    concurrency stops a run, not a report)."""
    import json
    import os
    import subprocess

    from lmms_eval_earthsci.sample_mirror import sample_mirror_root

    code = (
        "import json\n"
        "from lmms_eval.api.task import ConfigurableTask\n"
        "from lmms_eval_earthsci.core.runtime import current\n"
        "from lmms_eval_earthsci.core.upstream.patching import records\n"
        "from lmms_eval_earthsci.commands.report.html.images import _build_tasks\n"
        "tasks = _build_tasks(['scifibench_cs_f2c'], None)\n"
        "print(json.dumps({'docs': {n: len(t.test_docs()) for n, t in tasks.items()}, 'run_hooks': current().run_hooks,\n"
        "  'installed': {e: e in {r.entry for r in records()} for e in ('local mirror', 'bad-record gate', 'judge pass', 'exit status')}}))\n"
    )
    env = {**os.environ, "EARTHSCI_DATA_MIRROR": sample_mirror_root(str(tmp_path / "mirror")), "EARTHSCI_JUDGE_CONCURRENCY": "0", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["docs"]["scifibench_cs_f2c"] > 0  # the task was built and read its docs through the mirror
    assert got["installed"] == {"local mirror": True, "bad-record gate": True, "judge pass": False, "exit status": False}
    assert got["run_hooks"] is False
