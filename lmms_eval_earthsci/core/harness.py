"""lmms-eval's own CLI, run in this process (``rescore`` and the ``run`` wrapper)."""

from __future__ import annotations

import sys
from typing import Sequence


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
