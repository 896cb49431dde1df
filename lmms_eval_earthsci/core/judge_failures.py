"""A run whose judge failed ends by saying so. The run still exits 0 (the model's answers, the expensive
part, are saved), and its last lines name, for each judged task that had failures, the failure counts by
cause, the endpoint and the setting that names it, and the exact ``lmms-eval-earthsci rescore`` command
that finishes the job once the judge answers.

The judge pass notes each task's judge setting (:func:`note_endpoint`, every rank) and the aggregation its
global counts (:func:`note_failures`, rank 0); :func:`last_lines` is printed to stderr at exit on the rank
that aggregated (atexit, after lmms-eval has written its outputs).
"""

from __future__ import annotations

import atexit
import os
import shlex
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval_earthsci.core.harness import cli_value, is_cli_run

_LOCK = threading.Lock()
_FAILED: dict[str, dict[str, Any]] = {}
_SETTING: dict[str, tuple[str, str | None]] = {}
_INSTALLED = False


def note_endpoint(task: str, setting: str, base_url: str | None) -> None:
    """The judge of ``task``: the setting naming its endpoint (``EARTHSCI_JUDGE_BASE_URL``) and its value."""
    with _LOCK:
        _SETTING[task] = (setting, base_url)


def note_failures(task: str, failed: int, docs: int, causes: Mapping[str, int]) -> None:
    """``failed`` of ``docs`` judged docs of ``task`` failed, by cause (the aggregation's global counts)."""
    if failed:
        with _LOCK:
            _FAILED[task] = {"failed": failed, "docs": docs, "causes": dict(causes)}
        _install()


def last_lines(argv: Sequence[str] | None = None) -> list[str]:
    """The lines a run whose judge failed ends with (none when no judged doc failed)."""
    argv = list(sys.argv if argv is None else argv)
    with _LOCK:
        failed = dict(_FAILED)
        settings = dict(_SETTING)
    if not failed:
        return []
    lines = []
    for task, f in sorted(failed.items()):
        setting, url = settings.get(task, ("EARTHSCI_JUDGE_BASE_URL", None))
        why = ", ".join(f"{c} x {n}" for c, n in f["causes"].items())
        lines.append(f"lmms_eval_earthsci: {task}: the judge failed on {f['failed']} of {f['docs']} docs ({why}); endpoint {url or '(none)'} ({setting})")
    out = cli_value(argv, "--output_path")
    logged = "--log_samples" in argv or "--predict_only" in argv
    if out and logged:
        path = os.path.abspath(out)
        lines.append("lmms_eval_earthsci: the model's answers are saved; once the judge answers, finish the job (the judge pass only, no model) with:")
        lines.append(f"  lmms-eval-earthsci rescore {shlex.quote(path)} --out {shlex.quote(path.rstrip(os.sep) + '-rescored')}")
    else:
        lines.append("lmms_eval_earthsci: this run kept no answers to judge later (run with --output_path and --log_samples, then `lmms-eval-earthsci rescore` finishes a failed judge's job)")
    return lines


def _print_at_exit() -> None:
    if not is_cli_run():
        return
    lines = last_lines()
    if lines:
        sys.stderr.write("\n" + "\n".join(lines) + "\n")
        sys.stderr.flush()


def _install() -> None:
    global _INSTALLED
    with _LOCK:
        if _INSTALLED:
            return
        _INSTALLED = True
    atexit.register(_print_at_exit)
