"""Every lmms-eval patch and internal in core.patching.INVENTORY has, in the installed lmms-eval, the
shape we rely on (its target exists, takes the parameters we pass, its module has the names we read);
a failure names the entry. In the smoke list: the oldest lmms-eval we support runs it too (an entry
newer than the installed version is skipped, saying so). Our copy of lmms-eval's CLI default reasoning
tags equals its parser's, and our reading of `--reasoning_tags` from the command line equals argparse's."""

import sys
from importlib.metadata import version

import pytest
from packaging.version import Version

from lmms_eval_earthsci.core import judge_pass
from lmms_eval_earthsci.core.patching import INVENTORY, VERIFIED, Target, target_problem

LMMS_EVAL = Version(version("lmms-eval"))
pytestmark = pytest.mark.slow  # imports lmms-eval's task machinery and CLI (seconds)


@pytest.mark.parametrize("t", INVENTORY, ids=[t.name for t in INVENTORY])
def test_each_patch_target_has_the_shape_we_rely_on(t):
    if LMMS_EVAL < Version(t.since):
        pytest.skip(f"{t.name}: {t.target} is in lmms-eval >= {t.since}, this is {LMMS_EVAL}")
    assert t.kind in ("wraps", "reads") and t.missing in ("warns", "fails") and t.why and t.owner
    assert target_problem(t) is None, f"inventory entry {t.name!r} ({t.owner}): {target_problem(t)}"


def test_the_inventory_covers_every_wrapped_method():
    """Each method our code wraps (wrap_method / wrap_task_method calls) is an inventory entry."""
    import re
    from pathlib import Path

    import lmms_eval_earthsci

    root = Path(lmms_eval_earthsci.__file__).parent
    wrapped = set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        wrapped |= set(re.findall(r'wrap_task_method\(\s*"(\w+)"', text))
        wrapped |= {m for m in re.findall(r'wrap_method\(\s*\w+,\s*"(\w+)"', text)}
    targets = {t.target.rsplit(".", 1)[-1] for t in INVENTORY if t.kind == "wraps"}
    assert wrapped and wrapped <= targets, wrapped - targets
    assert "0.6.1" in VERIFIED


def test_a_moved_target_is_named():
    gone = Target("x", "wraps", "lmms_eval.api.task:ConfigurableTask.no_such_method", "us", "why")
    assert target_problem(gone).startswith("lmms_eval.api.task:ConfigurableTask.no_such_method is gone (AttributeError")
    lost = Target("x", "wraps", "lmms_eval.tasks:TaskManager.initialize_tasks", "us", "why", params=("include_path", "no_such_param"))
    assert target_problem(lost) == "lmms_eval.tasks:TaskManager.initialize_tasks no longer takes no_such_param"
    attrs = Target("x", "reads", "lmms_eval.api.task:ConfigurableTask", "us", "why", attrs=("NO_SUCH_NAME",))
    assert target_problem(attrs) == "lmms_eval.api.task:ConfigurableTask's module no longer has NO_SUCH_NAME"


@pytest.mark.skipif(LMMS_EVAL < Version("0.7.3"), reason="lmms-eval < 0.7.3 strips no reasoning tags")
@pytest.mark.parametrize("argv", [[], ["--reasoning_tags", "none"], ['--reasoning_tags=[["<r>", "</r>"]]'], ["--reasoning_tags", '[["<a>", "</a>"]]', "--tasks", "x"]])
def test_our_reading_of_reasoning_tags_equals_lmms_evals_parser(argv, monkeypatch):
    from lmms_eval.__main__ import parse_eval_args

    monkeypatch.setattr(sys, "argv", ["lmms-eval", "--model", "openai", *argv])
    parsed = parse_eval_args()
    args = parsed[1] if isinstance(parsed, tuple) else parsed
    assert judge_pass._cli_reasoning_tags() == args.reasoning_tags
    if not argv:  # our copy of the CLI's default
        assert judge_pass._LMMS_DEFAULT_REASONING_TAGS == args.reasoning_tags
