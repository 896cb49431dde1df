"""A run that did not do everything it was asked ends non-zero, with one line per task of ours that did
not run: what, why, the fix.

This module is the run's ledger (its state is the runtime's ``ledger``), neutral: any part may note into it. The
integration (a task of ours left out, ``core.adapter.task_manager``) and the model boundary (an evaluation that
raised) note into it; the run's exit codes (``core.hardening.exit_codes``, on unless ``EARTHSCI_HARDENING=0``) note
what they check (the names requested, a task not ours left out, how the run ended) and end the process with its
status (the hardening owns the exit status: ``core.hardening.exit_status``). Without the hardening, only the first two notes are made, each
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

What the notes come to is :func:`last_lines` and :func:`status`: 2 when a task of ours could not load, else 1 when
the evaluation of ours raised, else 3 when something not ours stopped the run or was left out. The hardening's exit
handler (``core.hardening.exit_status``) prints the lines and ends the process with that status; a command that runs
lmms-eval in its own process (``run``, ``rescore``) takes them instead (:func:`take`) and nothing is left for the
exit.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from lmms_eval_earthsci.core.runtime import Ledger, current

NOT_LOADED = 2
STOPPED = 1
OTHER = 3  # not ours: a task that could not load (left out), or what stopped the run before ours ran


def _ledger() -> Ledger:
    return current().ledger


def say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _left_out(table: str, task: str, why: str, what: str) -> None:
    """``task`` noted in the ledger's ``table`` as left out because ``why``; said now, once per task."""
    ledger = _ledger()
    with ledger.lock:
        noted = getattr(ledger, table)
        first = task not in noted
        noted.setdefault(task, why)
        ledger.failures_seen += 1
    if first:
        say(f"lmms_eval_earthsci: {task}{what} could not load and is left out of this run: {why}")


def note_not_loaded(task: str, why: str) -> None:
    """``task`` of ours could not load because ``why`` (the cause and its fix, one line); said now."""
    _left_out("not_loaded", task, why, "")


def note_other_not_loaded(task: str, why: str) -> None:
    """``task``, not ours, could not load because ``why`` in a run that includes tasks of ours: it is left
    out (the rest runs) and named now and at the end (exit 3)."""
    _left_out("others", task, why + _near(task), " (not one of our tasks)")


def note_requested(ours: Iterable[str], near: dict[str, str] | None = None) -> None:
    """The run (lmms-eval's CLI) asks for ``ours`` (names of our tasks and groups) and for names of
    lmms-eval's own close to ours (``near``: that name -> ours). From here on, a run that stops before it
    is done (:func:`note_done`) ends naming those of ours that did not run."""
    ledger = _ledger()
    with ledger.lock:
        ledger.requested[:] = list(dict.fromkeys(ours))
        ledger.near.clear()
        ledger.near.update(near or {})
        ledger.started, ledger.done, ledger.why, ledger.noted = False, False, None, None


def requested_ours() -> bool:
    ledger = _ledger()
    with ledger.lock:
        return bool(ledger.requested)


def _near(name: str) -> str:
    our = _ledger().near.get(name)
    return f" ({name} is lmms-eval's own task, not ours: ours is {our})" if our else ""


def note_run_stopped(why: str, exc: BaseException | None = None) -> None:
    """What stopped the run outside the evaluation of our tasks (the first cause is kept); an exception
    already noted by :func:`note_stopped` is not noted again."""
    ledger = _ledger()
    with ledger.lock:
        if exc is not None and ledger.noted is exc:
            return
        if ledger.why is None:
            ledger.why = why


def note_started() -> None:
    """The evaluation (lmms-eval's ``simple_evaluate``) started: from here on the run has an end to reach
    (a command that only reads the task names, such as ``--power-analysis``, never starts it)."""
    ledger = _ledger()
    with ledger.lock:
        ledger.started = True


def note_done() -> None:
    """The run got to its end on this process: rank 0 wrote its results, another rank returned."""
    ledger = _ledger()
    with ledger.lock:
        ledger.done = True


def note_ungrouped(group: str, left: int) -> None:
    """``group`` lost a task: it has no group score in this run, its ``left`` other tasks run on their own
    (none: the group did not run at all); said now."""
    if left:
        line = f"lmms_eval_earthsci: {group}: no group score in this run (a task of it could not load); its other tasks ran on their own"
    else:
        line = f"lmms_eval_earthsci: {group} did not run (exit {NOT_LOADED}): none of its tasks could load (each is named with its cause)"
    ledger = _ledger()
    with ledger.lock:
        if line in ledger.ungrouped:
            return
        ledger.ungrouped.append(line)
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
    line = (f"lmms_eval_earthsci: the evaluation stopped ({what}); {names} have no results: see lmms-eval's traceback above (--verbosity DEBUG raises it)"
            + known_cause(exc))
    ledger = _ledger()
    with ledger.lock:
        ledger.noted = exc
        ledger.stopped.append(line)


def failures_seen() -> int:
    ledger = _ledger()
    with ledger.lock:
        return ledger.failures_seen


def _unfinished(ledger: Ledger) -> list[str]:
    """Requested names of ours that a run stopped before they ran and were written (lock held): none
    once the run is done, or when the evaluation of ours raised (its line says so)."""
    if not ledger.started or ledger.done or ledger.stopped:
        return []
    return [name for name in ledger.requested if name not in ledger.not_loaded]


def last_lines() -> list[str]:
    """The lines a run that did not do everything ends with (none when it did)."""
    ledger = _ledger()
    with ledger.lock:
        lines = [f"lmms_eval_earthsci: {task} did not run (exit {NOT_LOADED}): {why}" for task, why in sorted(ledger.not_loaded.items())]
        lines += [f"lmms_eval_earthsci: {task} did not run (exit {OTHER}): {why}" for task, why in sorted(ledger.others.items())]
        lines = lines + (list(ledger.ungrouped) if lines else []) + list(ledger.stopped)
        unfinished = _unfinished(ledger)
        if unfinished:
            why = ledger.why or "the run stopped before they ran and were written (see lmms-eval's output above)"
            lines.append(f"lmms_eval_earthsci: {', '.join(unfinished)} did not run (exit {OTHER}): {why}")
        if ledger.started and not ledger.done:  # a requested name of lmms-eval's own close to ours, in a run that failed
            lines += [f"lmms_eval_earthsci: {name} is lmms-eval's own task, not ours: ours is {our} (--tasks {our})"
                      for name, our in ledger.near.items() if name not in ledger.others]
        return lines


_MARKS = (" did not run (exit ", ": the evaluation stopped (", ": none of the requested tasks could load", ": no group score in this run (", " is lmms-eval's own task, not ours: ",
          " is no task lmms-eval knows (")


def is_last_line(line: str) -> bool:
    """Whether ``line`` is one of those a run that did not do everything ends with."""
    return line.startswith("lmms_eval_earthsci: ") and any(m in line for m in _MARKS)


def status() -> int:
    """What the notes come to: 2 when a task of ours could not load, else 1 when the evaluation of ours raised,
    else 3 when something not ours stopped the run or was left out, else 0."""
    ledger = _ledger()
    with ledger.lock:
        return NOT_LOADED if ledger.not_loaded else STOPPED if ledger.stopped else OTHER if ledger.others or _unfinished(ledger) else 0


def take() -> tuple[list[str], int]:
    """The last lines and the status, cleared (a command that ran lmms-eval in its process reports them)."""
    lines, code = last_lines(), status()
    ledger = _ledger()
    with ledger.lock:
        ledger.not_loaded.clear()
        ledger.ungrouped.clear()
        ledger.stopped.clear()
        ledger.others.clear()
        ledger.requested.clear()
        ledger.near.clear()
        ledger.started, ledger.done, ledger.why, ledger.noted = False, False, None, None
    return lines, code


def forget_requested() -> None:
    """The requested names are each named by a line of their own (nothing of them is left to run)."""
    ledger = _ledger()
    with ledger.lock:
        ledger.requested.clear()
