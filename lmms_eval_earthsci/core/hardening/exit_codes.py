"""The run's exit codes (lmms-eval's CLI exits 0 whatever went wrong, unless ``--verbosity DEBUG``): a run that
includes tasks of ours ends non-zero, with one line per task that did not run and why, whatever stopped it.

- a requested name that looks like one of ours but is none: exit 2 before the model loads, "did you mean"
  (inventory: "task-name typos"); in a run with ours, a name lmms-eval does not know: exit 3, naming ours;
  ``--limit 0``: exit 2;
- a task of lmms-eval's that cannot load, in a run with ours: left out like ours, the rest runs (exit 3)
  ("upstream tasks that cannot load"); every requested task left out: exit 2 before the first doc
  ("nothing left to run");
- what stops the run outside the evaluation of our tasks (a model that cannot load): exit 3 ("run outcome"),
  results that could not be written ("results written");
- at exit, what the ledger (:mod:`..upstream.ledger`) noted decides the code, set with its last lines
  (:mod:`.exit_status`, "exit status").

Without this part (``EARTHSCI_HARDENING=0``) a task of ours that cannot load is still left out with its line
(the integration's), and the process exits as lmms-eval decides."""

from __future__ import annotations

import functools
import glob
import os
import sys
from collections.abc import Callable
from typing import Any

from lmms_eval_earthsci.core.adapter.task_manager import is_ours, why_not_loaded
from lmms_eval_earthsci.core.data.loading import NoDataRouteError
from lmms_eval_earthsci.core.hardening import exit_status
from lmms_eval_earthsci.core.hardening.inventory import ENTRIES
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.settings import cli_value, is_cli_run
from lmms_eval_earthsci.core.upstream import ledger, taps
from lmms_eval_earthsci.core.upstream.inventory import warn_missing
from lmms_eval_earthsci.core.upstream.patching import wrap_method


def _unknown(task_list: Any, matched: Any) -> list[str]:
    """The requested names lmms-eval will report as "Tasks not found" (as its CLI computes them)."""
    return [name for name in task_list if name not in matched and "*" not in name and not os.path.isfile(name)]


def stop_on_unknown_names(task_manager_cls: Any) -> bool:
    """Wrap ``task_manager_cls.match_tasks``: a requested name that looks like one of our tasks but is none
    stops the run with exit 2 and one line per name (did you mean ...), before the model loads (lmms-eval
    says "Tasks not found" and exits 0). In a CLI run that includes tasks of ours, any other name lmms-eval
    does not know stops it there too, with exit 3 and one line naming ours; the run's names of ours (and
    those of lmms-eval's own close to ours) are noted for its end (:mod:`..upstream.ledger`). Returns
    success."""

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def match_tasks(self: Any, task_list: Any, *args: Any, **kwargs: Any) -> Any:
            matched = original(self, task_list, *args, **kwargs)
            known = set(getattr(self, "all_tasks", ()) or ())
            hint = current().looks_ours_but_unknown
            lines = [f"lmms_eval_earthsci: {name} is none of our tasks or groups ({why})" for name in task_list if name not in matched and (why := hint(name, known))]
            if lines:
                ledger.say("\n".join(lines))
                raise SystemExit(2)
            if is_cli_run() and isinstance(task_list, list):
                _note_requested(self, task_list, matched, known)
            return matched

        return match_tasks

    return wrap_method(task_manager_cls, "match_tasks", make, entry=ENTRIES["task-name typos"])


def _is_zero(value: str) -> bool:
    try:
        return float(value) == 0.0
    except ValueError:
        return False


def _note_requested(task_manager: Any, task_list: list, matched: Any, known: set) -> None:
    """A CLI run's requested names: ours noted for its end, with lmms-eval's own names close to ours; an
    unknown name in a run with ours stops it now (exit 3), naming ours (lmms-eval would stop it later
    with "Tasks not found" and exit 0)."""
    names = [n for n in task_list if n in matched] + [n for n in matched if n not in task_list]  # as asked, then wildcards' matches
    ours = [name for name in names if isinstance(name, str) and is_ours(task_manager, name)]
    near = {name: ", ".join(found) for name in names if isinstance(name, str) and name not in ours and (found := current().near(name))}
    unknown = _unknown(task_list, matched)
    limit = cli_value(sys.argv, "--limit")
    if ours and limit is not None and _is_zero(limit):  # lmms-eval would load every task, then raise "did not find any docs" and exit 1
        ledger.say(f"lmms_eval_earthsci: --limit {limit} evaluates no doc: {', '.join(ours)} did not run (exit 2); give --limit N (N >= 1, or a share "
                       "0 < x < 1) or leave it out for every doc")
        raise SystemExit(2)
    if ours and unknown:
        ledger.say("\n".join([*(f"lmms_eval_earthsci: {name} is no task lmms-eval knows ({current().did_you_mean(name, known, 0.75)})" for name in unknown),
                                  f"lmms_eval_earthsci: {', '.join(ours)} did not run (exit {ledger.OTHER}): the run stopped before the model loaded, at the name(s) above"]))
        raise SystemExit(ledger.OTHER)
    ledger.note_requested(ours, near)
    if ours or near:
        _install_outcome_hooks()


def note_outcome(original: Callable[..., Any]) -> Callable[..., Any]:
    """``lmms_eval.evaluator.simple_evaluate`` noting how the run ended (:mod:`..upstream.ledger`): what it
    raised, outside the evaluation of our tasks; on a rank other than 0 (it returns None), done."""

    @functools.wraps(original)
    def simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        ledger.note_started()
        try:
            results = original(*args, **kwargs)
        except Exception as exc:
            ledger.note_run_stopped(f"the run stopped before them ({ledger.in_one_line(exc)}; lmms-eval's traceback above){ledger.known_cause(exc)}", exc)
            raise
        if results is None:
            ledger.note_done()
        return results

    return simple_evaluate


def note_written(original: Callable[..., Any]) -> Callable[..., Any]:
    """``EvaluationTracker.save_results_aggregated`` noting that rank 0's run is done once its results file
    is there (lmms-eval logs a warning and goes on when it cannot write it)."""

    @functools.wraps(original)
    def save_results_aggregated(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        where = getattr(self, "output_path", None)
        stamp = getattr(self, "date_id", None)
        if where and stamp and not glob.glob(os.path.join(glob.escape(str(where)), "**", f"{glob.escape(str(stamp))}_results.json"), recursive=True):
            ledger.note_run_stopped(f"lmms-eval could not write the results under {where} (its warning 'Could not save results aggregated' above)")
        else:
            ledger.note_done()
        return out

    return save_results_aggregated


def _install_outcome_hooks() -> None:
    """The two wraps that tell a finished run from one stopped before our tasks ran or were written;
    installed when a CLI run asks for tasks of ours (lmms-eval's evaluator has finished importing by
    then: our entry point runs while it imports)."""
    evaluator = sys.modules.get("lmms_eval.evaluator")
    tracker = getattr(sys.modules.get("lmms_eval.loggers.evaluation_tracker"), "EvaluationTracker", None)
    if evaluator is None or not wrap_method(evaluator, "simple_evaluate", note_outcome, entry=ENTRIES["run outcome"]):
        warn_missing(ENTRIES["run outcome"], "a run of our tasks stopped by something else (a model that cannot load) may exit 0")
    if tracker is None or not wrap_method(tracker, "save_results_aggregated", note_written, entry=ENTRIES["results written"]):
        warn_missing(ENTRIES["results written"], "a run whose results could not be written may exit 0")


def leave_out_upstream_tasks(task_manager_cls: Any) -> bool:
    """In a CLI run that includes tasks of ours, a task not ours that cannot load is left out and noted
    (exit 3), the others run (lmms-eval would stop the whole run, and exit 0). It runs inside the
    integration's subscriber of the same tap (tasks of ours; the order is ``core.upstream.taps.ORDER``). Returns
    success."""

    def leave_out(call: Callable[..., Any], self: Any, name_or_config: Any = None, *args: Any, **kwargs: Any) -> Any:
        name = name_or_config.get("task") if isinstance(name_or_config, dict) else name_or_config
        try:
            return call(self, name_or_config, *args, **kwargs)
        except (Exception, NoDataRouteError) as exc:
            if isinstance(name, str) and is_cli_run() and not is_ours(self, name) and ledger.requested_ours():
                ledger.note_other_not_loaded(name, why_not_loaded(name, exc))
                return {}
            raise

    return taps.subscribe("task loader", task_manager_cls, "_load_individual_task_or_group", "upstream left out", leave_out,
                          entry=ENTRIES["upstream tasks that cannot load"]) is not None


def stop_when_nothing_is_left(task_manager_cls: Any) -> bool:
    """When every requested task was left out, the run stops with exit 2 before the first doc (lmms-eval
    would evaluate nothing and exit 0). Returns success."""

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def load_task_or_group(self: Any, *args: Any, **kwargs: Any) -> Any:
            before = ledger.failures_seen()
            loaded = original(self, *args, **kwargs)
            if not loaded and ledger.failures_seen() > before:
                exit_status.stop_nothing_left()
            return loaded

        return load_task_or_group

    return wrap_method(task_manager_cls, "load_task_or_group", make, entry=ENTRIES["nothing left to run"])


def install(task_manager_cls: Any = None) -> None:
    """This module's wraps on ``task_manager_cls`` (when given: registration) and the exit handler."""
    exit_status.install()
    if task_manager_cls is None:
        return
    if not stop_on_unknown_names(task_manager_cls):
        warn_missing(ENTRIES["task-name typos"], "a mistyped task name of ours says \"Tasks not found\" and exits 0")
    if not leave_out_upstream_tasks(task_manager_cls):
        warn_missing(ENTRIES["upstream tasks that cannot load"], "a task not ours that cannot load stops the whole run, and lmms-eval exits 0")
    if not stop_when_nothing_is_left(task_manager_cls):
        warn_missing(ENTRIES["nothing left to run"], "a run whose every task was left out evaluates nothing and exits 0")
