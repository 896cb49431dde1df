"""lmms-eval's own CLI, run in this process (``rescore`` and the ``run`` wrapper), and the shape of the
results it writes."""

from __future__ import annotations

import sys
from typing import Mapping, Sequence


def run_lmms_eval(args: Sequence[str]) -> int:
    """lmms-eval's CLI in this process with ``args`` (``sys.argv`` restored afterwards)."""
    saved = sys.argv
    sys.argv = ["lmms-eval", *args]
    try:
        try:
            from lmms_eval.cli.dispatch import main as lmms_main  # lmms-eval >= 0.7
        except ImportError:  # 0.6.x: the flat CLI
            from lmms_eval.__main__ import cli_evaluate as lmms_main

        return lmms_main() or 0
    finally:
        sys.argv = saved


def group_leaves(task: str, groups: Mapping[str, Sequence[str]]) -> list[str]:
    """A task's leaf tasks through a results file's ``group_subtasks`` (a leaf task is its own)."""
    if task not in groups:
        return [task]
    return [leaf for t in groups[task] for leaf in group_leaves(t, groups)]
