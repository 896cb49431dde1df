"""A run whose judge failed ends by saying so. The run still exits 0 (the model's answers, the expensive
part, are saved), and its last lines name, for each judged task that had failures, the failure counts by
cause, the endpoint and the setting that names it, and the exact ``lmms-eval-earthsci rescore`` command
that finishes the job once the judge answers.

The judge pass notes each task's judge setting (:func:`note_endpoint`, every rank), a judged task it could
not judge for want of a judge (:func:`note_no_judge`) and the aggregation its global counts
(:func:`note_failures`, rank 0); :func:`last_lines` is printed to stderr at exit on the rank that
aggregated (atexit, after lmms-eval has written its outputs). ``rescore``, whose whole job is judging,
ends with the same lines (:func:`failure_lines`, :func:`finish_lines`) and takes them (:func:`take`), so
nothing is printed again at its exit.
"""

from __future__ import annotations

import atexit
import os
import shlex
import sys
from collections.abc import Mapping, Sequence

from lmms_eval_earthsci.core.runtime import JudgeFailures, current
from lmms_eval_earthsci.core.settings import cli_value, is_cli_run


def _noted() -> JudgeFailures:
    return current().judge_failures


def note_endpoint(task: str, setting: str, base_url: str | None) -> None:
    """The judge of ``task``: the setting naming its endpoint (``EARTHSCI_JUDGE_BASE_URL``) and its value."""
    noted = _noted()
    with noted.lock:
        noted.setting[task] = (setting, base_url)


def note_failures(task: str, failed: int, docs: int, causes: Mapping[str, int]) -> None:
    """``failed`` of ``docs`` judged docs of ``task`` failed, by cause (the aggregation's global counts)."""
    if failed:
        noted = _noted()
        with noted.lock:
            noted.failed[task] = {"failed": failed, "docs": docs, "causes": dict(causes)}
        # the lines at exit, once per process (our own handler; registered when a failure is first noted)
        current().resource(("at exit", "judge failures"), lambda: atexit.register(_print_at_exit))


def note_no_judge(task: str, settings: str) -> None:
    """``task`` is judged but no judge is configured (``settings``: the variables that would name one)."""
    noted = _noted()
    with noted.lock:
        noted.no_judge[task] = settings


def failure_lines(no_judge: bool = False) -> list[str]:
    """One line per judged task whose judge failed on some docs: the counts by cause, the endpoint and its
    setting; with ``no_judge``, one per judged task that had no judge configured too."""
    noted = _noted()
    with noted.lock:
        failed = dict(noted.failed)
        settings = dict(noted.setting)
        unjudged = dict(noted.no_judge) if no_judge else {}
    lines = []
    for task, f in sorted(failed.items()):
        setting, url = settings.get(task, ("EARTHSCI_JUDGE_BASE_URL", None))
        why = ", ".join(f"{c} x {n}" for c, n in f["causes"].items())
        lines.append(f"lmms_eval_earthsci: {task}: the judge failed on {f['failed']} of {f['docs']} docs ({why}); endpoint {url or '(none)'} ({setting})")
    lines += [f"lmms_eval_earthsci: {task}: no judge configured (set {names}); its judged metrics are n/a" for task, names in sorted(unjudged.items()) if task not in failed]
    return lines


def finish_lines(command: str, lead: str = "once the judge answers, finish the job") -> list[str]:
    """The lines that end with the ``command`` that finishes a failed judge's job."""
    return [f"lmms_eval_earthsci: {lead} with:", f"  {command}"]


def last_lines(argv: Sequence[str] | None = None) -> list[str]:
    """The lines a run whose judge failed ends with (none when no judged doc failed)."""
    argv = list(sys.argv if argv is None else argv)
    lines = failure_lines()
    if not lines:
        return []
    out = cli_value(argv, "--output_path")
    logged = "--log_samples" in argv or "--predict_only" in argv
    if out and logged:
        path = os.path.abspath(out)
        lines += finish_lines(f"lmms-eval-earthsci rescore {shlex.quote(path)} --out {shlex.quote(path.rstrip(os.sep) + '-rescored')}", "the model's answers are saved; once the judge answers, finish the job (the judge pass only, no model)")
    else:
        lines.append("lmms_eval_earthsci: this run kept no answers to judge later (run with --output_path and --log_samples, then `lmms-eval-earthsci rescore` finishes a failed judge's job)")
    return lines


def take() -> tuple[int, int]:
    """(judged tasks whose judge failed on some docs, judged tasks with no judge), forgotten: a command that
    reported them (``rescore``) leaves nothing for the exit."""
    noted = _noted()
    with noted.lock:
        counts = len(noted.failed), len([t for t in noted.no_judge if t not in noted.failed])
        noted.failed.clear()
        noted.no_judge.clear()
        noted.setting.clear()
    return counts


def _print_at_exit() -> None:
    if not is_cli_run():
        return
    lines = last_lines()
    if lines:
        sys.stderr.write("\n" + "\n".join(lines) + "\n")
        sys.stderr.flush()
