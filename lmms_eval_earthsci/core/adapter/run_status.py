"""A run that did not do everything it was asked ends non-zero, with one line per task of ours that did
not run: what, why, the fix.

This module is the run's ledger. The integration (a task of ours left out, ``core.adapter.task_manager``) and
the model boundary (an evaluation that raised) note into it; the run's exit codes (``core.hardening.exit_codes``,
on unless ``EARTHSCI_HARDENING=0``) note what they check (the names requested, a task not ours left out, how the
run ended) and end the process with its status. Without the hardening, only the first two notes are made, each
saying its line at once, and nothing sets the exit status. lmms-eval's CLI exits 0 when a task fails
to load or the evaluation raises (1 only with ``--verbosity DEBUG``), and stops the whole run at the first
task that cannot load. In an lmms-eval CLI run (:func:`core.adapter.harness.is_cli_run`):

- a task of ours that cannot load (no route to its data, a mirror without it, the Hub refusing it, any
  error while building it) is left out, named now on stderr and noted (:func:`note_not_loaded`); the other
  tasks run and lmms-eval writes their results. A group that lost a task is left out as a group (its
  score would be over fewer tasks); its loaded tasks run on their own. When nothing requested is left,
  the run stops there (exit 2; the hardening's).
- an evaluation of our tasks that raised is noted (:func:`note_stopped`); lmms-eval prints its traceback.
- a run that includes tasks of ours (:func:`note_requested`) and is stopped by anything else: a task not
  ours that cannot load is left out the same way (:func:`note_other_not_loaded`), the rest runs; a name
  lmms-eval does not know stops the run before the model loads (``core.hardening.exit_codes``); whatever else stops
  it before our tasks ran and were written (a model that cannot load, results that could not be
  written) is noted (:func:`note_run_stopped`) and, when the run never reached :func:`note_done`, named
  in one line with our tasks that did not run (exit 3).
- a requested name of lmms-eval's own close to one of ours (``emma-mini``: ours is ``emma_mini``) that
  failed gets a last line naming ours (:func:`note_requested`), the exit status left as it is.

At exit (with the run's exit codes, ``core.hardening.exit_codes``: an ``atexit`` handler registered early, so it runs after lmms-eval has written its
outputs and after the later handlers, the judge's last lines among them) the noted lines are printed and
the process ends with :func:`status`: 2 when a task of ours could not load, else 1 when the evaluation
of ours raised, else 3 when something not ours stopped the run or was left out.
The status can only be set there with ``os._exit``: the handler first flushes what the handlers it then
skips would (logging, loguru, ``weakref.finalize``, ``multiprocessing``). A command that runs lmms-eval
in its own process (``run``, ``rescore``) takes the status instead (:func:`take`) and nothing is left
for the exit.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from collections.abc import Iterable

from lmms_eval_earthsci.core.adapter.patching import dump as patch_records

NOT_LOADED = 2
STOPPED = 1
OTHER = 3  # not ours: a task that could not load (left out), or what stopped the run before ours ran

_LOCK = threading.Lock()
_NOT_LOADED: dict[str, str] = {}
_STOPPED: list[str] = []
_UNGROUPED: list[str] = []
_SEEN = [0]  # load failures noted, ever (a group's loader compares it before and after)
_OTHERS: dict[str, str] = {}  # tasks not ours left out -> why
_REQUESTED: list[str] = []  # the requested names of ours (a CLI run)
_NEAR: dict[str, str] = {}  # requested names of lmms-eval's own close to ours -> ours
_RUN: dict[str, object] = {"started": False, "done": False, "why": None, "noted": None}


def say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _left_out(table: dict[str, str], task: str, why: str, what: str) -> None:
    """``task`` noted in ``table`` as left out because ``why``; said now, once per task."""
    with _LOCK:
        first = task not in table
        table.setdefault(task, why)
        _SEEN[0] += 1
    if first:
        say(f"lmms_eval_earthsci: {task}{what} could not load and is left out of this run: {why}")


def note_not_loaded(task: str, why: str) -> None:
    """``task`` of ours could not load because ``why`` (the cause and its fix, one line); said now."""
    _left_out(_NOT_LOADED, task, why, "")


def note_other_not_loaded(task: str, why: str) -> None:
    """``task``, not ours, could not load because ``why`` in a run that includes tasks of ours: it is left
    out (the rest runs) and named now and at the end (exit 3)."""
    _left_out(_OTHERS, task, why + _near(task), " (not one of our tasks)")


def note_requested(ours: Iterable[str], near: dict[str, str] | None = None) -> None:
    """The run (lmms-eval's CLI) asks for ``ours`` (names of our tasks and groups) and for names of
    lmms-eval's own close to ours (``near``: that name -> ours). From here on, a run that stops before it
    is done (:func:`note_done`) ends naming those of ours that did not run."""
    with _LOCK:
        _REQUESTED[:] = list(dict.fromkeys(ours))
        _NEAR.clear()
        _NEAR.update(near or {})
        _RUN.update(started=False, done=False, why=None, noted=None)


def requested_ours() -> bool:
    with _LOCK:
        return bool(_REQUESTED)


def _near(name: str) -> str:
    our = _NEAR.get(name)
    return f" ({name} is lmms-eval's own task, not ours: ours is {our})" if our else ""


def note_run_stopped(why: str, exc: BaseException | None = None) -> None:
    """What stopped the run outside the evaluation of our tasks (the first cause is kept); an exception
    already noted by :func:`note_stopped` is not noted again."""
    with _LOCK:
        if exc is not None and _RUN["noted"] is exc:
            return
        if _RUN["why"] is None:
            _RUN["why"] = why


def note_started() -> None:
    """The evaluation (lmms-eval's ``simple_evaluate``) started: from here on the run has an end to reach
    (a command that only reads the task names, such as ``--power-analysis``, never starts it)."""
    with _LOCK:
        _RUN["started"] = True


def note_done() -> None:
    """The run got to its end on this process: rank 0 wrote its results, another rank returned."""
    with _LOCK:
        _RUN["done"] = True


def note_ungrouped(group: str, left: int) -> None:
    """``group`` lost a task: it has no group score in this run, its ``left`` other tasks run on their own
    (none: the group did not run at all); said now."""
    if left:
        line = f"lmms_eval_earthsci: {group}: no group score in this run (a task of it could not load); its other tasks ran on their own"
    else:
        line = f"lmms_eval_earthsci: {group} did not run (exit {NOT_LOADED}): none of its tasks could load (each is named with its cause)"
    with _LOCK:
        if line in _UNGROUPED:
            return
        _UNGROUPED.append(line)
    say(line)


def in_one_line(exc: BaseException) -> str:
    """``Type: the first line of its message`` (at most 300 characters of it), for a line that names an error."""
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"


def known_cause(exc: BaseException) -> str:
    """What an error we have seen stop runs means and its fix, as a clause to add to the line naming it ("" for
    any other): the torchvision a later ``pip install`` brought back beside a CPU torch; a Hub that could not be
    reached, behind upstream's message asking for a token."""
    text = f"{type(exc).__name__}: {exc}"
    for cause in _causes(exc):
        text += f" {type(cause).__name__}: {cause}"
    if "torchvision::nms does not exist" in text:
        return ("; the installed torchvision does not match this torch (a later `pip install` brought PyPI's torchvision back beside a CPU torch): "
                "`pip uninstall -y torchvision`, or install the torchvision built for your torch")
    if "LocalTokenNotFoundError" in text or "Token is required" in text or "ConnectionError" in text or "OfflineModeIsEnabled" in text:
        from lmms_eval_earthsci.core.data import hub  # noqa: PLC0415 - only when a run stopped on the Hub

        state, found = hub.state()
        if state != "up":
            return (f"; reaching the Hub failed ({found}), not a missing token: on a machine without the Hub, run with the dataset in the "
                    "Hub cache and HF_HUB_OFFLINE=1 (our tasks: EARTHSCI_DATA_MIRROR)")
    return ""


def _causes(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen and len(out) < 5:
        out.append(cause)
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return out


def note_stopped(tasks: Iterable[str], exc: BaseException) -> None:
    """The evaluation of ``tasks`` (ours) raised ``exc``: they have no results."""
    names = ", ".join(sorted(set(tasks)))
    what = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    with _LOCK:
        _RUN["noted"] = exc
        _STOPPED.append(f"lmms_eval_earthsci: the evaluation stopped ({what}); {names} have no results: see lmms-eval's traceback above (--verbosity DEBUG raises it)"
                        + known_cause(exc))


def failures_seen() -> int:
    with _LOCK:
        return _SEEN[0]


def _unfinished() -> list[str]:
    """Requested names of ours that a run stopped before they ran and were written (lock held): none
    once the run is done, or when the evaluation of ours raised (its line says so)."""
    if not _RUN["started"] or _RUN["done"] or _STOPPED:
        return []
    return [name for name in _REQUESTED if name not in _NOT_LOADED]


def last_lines() -> list[str]:
    """The lines a run that did not do everything ends with (none when it did)."""
    with _LOCK:
        lines = [f"lmms_eval_earthsci: {task} did not run (exit {NOT_LOADED}): {why}" for task, why in sorted(_NOT_LOADED.items())]
        lines += [f"lmms_eval_earthsci: {task} did not run (exit {OTHER}): {why}" for task, why in sorted(_OTHERS.items())]
        lines = lines + (list(_UNGROUPED) if lines else []) + list(_STOPPED)
        unfinished = _unfinished()
        if unfinished:
            why = _RUN["why"] or "the run stopped before they ran and were written (see lmms-eval's output above)"
            lines.append(f"lmms_eval_earthsci: {', '.join(unfinished)} did not run (exit {OTHER}): {why}")
        if _RUN["started"] and not _RUN["done"]:  # a requested name of lmms-eval's own close to ours, in a run that failed
            lines += [f"lmms_eval_earthsci: {name} is lmms-eval's own task, not ours: ours is {our} (--tasks {our})" for name, our in _NEAR.items() if name not in _OTHERS]
        return lines


_MARKS = (" did not run (exit ", ": the evaluation stopped (", ": none of the requested tasks could load", ": no group score in this run (", " is lmms-eval's own task, not ours: ",
          " is no task lmms-eval knows (")


def is_last_line(line: str) -> bool:
    """Whether ``line`` is one of those a run that did not do everything ends with."""
    return line.startswith("lmms_eval_earthsci: ") and any(m in line for m in _MARKS)


def status() -> int:
    with _LOCK:
        return NOT_LOADED if _NOT_LOADED else STOPPED if _STOPPED else OTHER if _OTHERS or _unfinished() else 0


def take() -> tuple[list[str], int]:
    """The last lines and the status, cleared (a command that ran lmms-eval in its process reports them)."""
    lines, code = last_lines(), status()
    with _LOCK:
        _NOT_LOADED.clear()
        _UNGROUPED.clear()
        _STOPPED.clear()
        _OTHERS.clear()
        _REQUESTED.clear()
        _NEAR.clear()
        _RUN.update(started=False, done=False, why=None, noted=None)
    return lines, code


def stop_nothing_left() -> None:
    """Every requested task was left out: the lines now, and exit 2 before the first doc."""
    with _LOCK:
        _REQUESTED.clear()  # each is named by its own line
    lines, code = take()
    say("\n".join(["lmms_eval_earthsci: none of the requested tasks could load; nothing to run", *lines]))
    raise SystemExit(code)


def _flush_what_exit_skips() -> None:
    for flush in (patch_records, _loguru_complete, logging.shutdown, weakref.finalize._exitfunc, _multiprocessing_exit):  # type: ignore[attr-defined]
        try:
            flush()
        except Exception:  # exiting anyway
            pass
    sys.stdout.flush()
    sys.stderr.flush()


def _loguru_complete() -> None:
    loguru = sys.modules.get("loguru")
    if loguru is not None:
        loguru.logger.complete()


def _multiprocessing_exit() -> None:
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util._exit_function()


def exit_with_status() -> None:
    """The exit handler (registered by ``core.hardening.exit_codes``): the noted lines, then the process ends
    with :func:`status` when it is not 0."""
    lines, code = take()
    if lines:
        say("\n" + "\n".join(lines))
    if not code:
        return
    _flush_what_exit_skips()
    os._exit(code)
