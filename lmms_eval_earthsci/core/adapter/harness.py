"""lmms-eval's own CLI, run in this process (``rescore`` and the ``run`` wrapper), and the shape of the
results it writes."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from lmms_eval_earthsci.core.settings import cli_value, is_cli_run
from lmms_eval_earthsci.core.upstream import ledger

__all__ = ["cli_value", "group_leaves", "is_cli_run", "leaf_tasks", "output_to", "run_lmms_eval"]  # cli_value, is_cli_run: read the run's argv, in core.settings


def run_lmms_eval(args: Sequence[str], lines_out: list[str] | None = None) -> int:
    """lmms-eval's CLI in this process with ``args`` (``sys.argv`` restored afterwards); its exit status, or
    that of our tasks that did not run (:mod:`..upstream.ledger`, their lines printed, or appended to
    ``lines_out`` for the caller to show). What lmms-eval raises is raised, with :mod:`..upstream.ledger`
    cleared: the caller's exit status stands."""

    def report(lines: list[str]) -> None:
        if lines_out is not None:
            lines_out.extend(lines)
        elif lines:
            ledger.say("\n" + "\n".join(lines))

    saved = sys.argv
    sys.argv = ["lmms-eval", *args]
    try:
        try:
            from lmms_eval.cli.dispatch import main as lmms_main  # noqa: PLC0415 - lmms-eval's CLI (>= 0.7), only when a run starts
        except ImportError:  # 0.6.x: the flat CLI
            from lmms_eval.__main__ import cli_evaluate as lmms_main  # noqa: PLC0415 - lmms-eval 0.6.x's flat CLI, only when a run starts

        code = lmms_main() or 0
    except BaseException:
        # the caller reports what raised and sets the exit status: the exit handler must not replace it
        report(ledger.take()[0])
        raise
    finally:
        sys.argv = saved
    lines, status = ledger.take()  # what did not run is reported by the caller's exit status, not at exit
    report(lines)
    return code or status


def leaf_tasks(task_dict: Mapping[Any, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, task)`` for every task in lmms-eval's (possibly nested: groups hold dicts) task dict."""
    for key, value in task_dict.items():
        if isinstance(value, Mapping):
            yield from leaf_tasks(value)
        elif value is not None:
            yield getattr(getattr(value, "config", None), "task", None) or str(key), value


def group_leaves(task: str, groups: Mapping[str, Sequence[str]]) -> list[str]:
    """A task's leaf tasks through a results file's ``group_subtasks`` (a leaf task is its own)."""
    if task not in groups:
        return [task]
    return [leaf for t in groups[task] for leaf in group_leaves(t, groups)]


@contextlib.contextmanager
def output_to(path: str) -> Iterator[None]:
    """Everything this process writes to its standard output and error (lmms-eval's and our logging,
    progress bars, library warnings, from Python or C) appended to ``path`` for the block, at the file
    descriptors: a command's terminal keeps its own lines only (``demo``, ``rescore``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def lmms_eval_loads_tasks() -> bool:
    """Whether this process is lmms-eval loading tasks (its task module is imported)."""
    return "lmms_eval.api.task" in sys.modules
