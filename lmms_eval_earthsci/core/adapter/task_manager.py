"""lmms-eval's ``TaskManager`` and the run around it, wrapped: our task folders indexed by every
``TaskManager`` (inventory: "registration"), its task index on libyaml ("task index on libyaml"), a mistyped
name of ours or an unknown one in a run with ours stopped before the model loads ("task-name typos"), a task
that cannot load left out while the rest runs ("tasks that cannot load", "nothing left to run"), and how the
run ended noted for its exit status ("run outcome", "results written", :mod:`.run_status`).

What is ours (our task folders, the names of our tasks) is known above the core, by the registry and the YAML
generator: :mod:`lmms_eval_earthsci.registration` hands it in through :data:`OURS` (:func:`use`) before it
installs these wraps."""

from __future__ import annotations

import functools
import glob
import inspect
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lmms_eval_earthsci import TASKS_DIR
from lmms_eval_earthsci.core.adapter import run_status
from lmms_eval_earthsci.core.adapter.harness import leaf_tasks
from lmms_eval_earthsci.core.adapter.hooks import data_hooks_only, install_runtime_hooks, warn_registration
from lmms_eval_earthsci.core.adapter.patching import warn_missing, wrap_method
from lmms_eval_earthsci.core.data.loading import HubRefusedError, NoDataRouteError, loader_says_why
from lmms_eval_earthsci.core.settings import cli_value, is_cli_run


@dataclass
class Ours:
    """What is ours, as the layers above the core know it."""

    #: our task folders: TASKS_DIR and those of the benchmarks registered from outside
    task_dirs: Callable[[], list[str]] = lambda: [TASKS_DIR]
    #: a hint when ``name`` looks like one of our tasks but is none of ``known`` (else None)
    looks_ours_but_unknown: Callable[[str, set], str | None] = lambda name, known: None
    #: the names of ours close to one of lmms-eval's (``emma-mini`` -> ``emma_mini``)
    near: Callable[[str], list] = lambda name: []
    #: "did you mean X?" for ``name`` among ``names`` at a similarity ``cutoff``
    did_you_mean: Callable[[str, Iterable[str], float], str] = lambda name, names, cutoff: "see `lmms-eval --tasks list`"


OURS = Ours()


def use(**what: Callable) -> None:
    """Tell the wraps what is ours (the fields of :class:`Ours`)."""
    for name, fn in what.items():
        if not hasattr(OURS, name):
            raise TypeError(f"Ours has no {name!r}")
        setattr(OURS, name, fn)


def with_our_tasks(include_path: Any) -> list:
    """``include_path`` (None, one folder or several) with our task folders added: what every ``TaskManager``
    indexes."""
    if include_path is None:
        paths = []
    elif isinstance(include_path, (str, bytes)):
        paths = [include_path]
    else:
        paths = list(include_path)
    for folder in OURS.task_dirs():
        if folder not in paths:
            paths.append(folder)
    return paths


def patch_task_manager(task_manager_cls: Any) -> bool:
    """Make ``task_manager_cls.initialize_tasks`` always index :data:`TASKS_DIR`. Returns success."""
    if getattr(task_manager_cls, "_earthsci_patched", False):
        return True
    original = getattr(task_manager_cls, "initialize_tasks", None)
    if original is None:
        warn_registration("lmms-eval's TaskManager has no `initialize_tasks` any more; our tasks are not registered.")
        return False
    params = inspect.signature(original).parameters
    if "include_path" not in params:
        warn_registration("TaskManager.initialize_tasks no longer takes `include_path`; our tasks are not registered.")
        return False

    @functools.wraps(original)
    def initialize_tasks(self: Any, include_path: Any = None, *args: Any, **kwargs: Any) -> Any:
        return original(self, with_our_tasks(include_path), *args, **kwargs)

    task_manager_cls.initialize_tasks = initialize_tasks
    task_manager_cls._earthsci_patched = True
    return True


def _unknown(task_list: Any, matched: Any) -> list[str]:
    """The requested names lmms-eval will report as "Tasks not found" (as its CLI computes them)."""
    return [name for name in task_list if name not in matched and "*" not in name and not os.path.isfile(name)]


def stop_on_unknown_names(task_manager_cls: Any) -> bool:
    """Wrap ``task_manager_cls.match_tasks``: a requested name that looks like one of our tasks but is none
    stops the run with exit 2 and one line per name (did you mean ...), before the model loads (lmms-eval
    says "Tasks not found" and exits 0). In a CLI run that includes tasks of ours, any other name lmms-eval
    does not know stops it there too, with exit 3 and one line naming ours; the run's names of ours (and
    those of lmms-eval's own close to ours) are noted for its end (:mod:`.core.run_status`). Returns
    success."""
    if getattr(task_manager_cls, "_earthsci_names_checked", False):
        return True
    original = getattr(task_manager_cls, "match_tasks", None)
    if original is None:
        return False

    @functools.wraps(original)
    def match_tasks(self: Any, task_list: Any, *args: Any, **kwargs: Any) -> Any:
        matched = original(self, task_list, *args, **kwargs)
        known = set(getattr(self, "all_tasks", ()) or ())
        lines = [f"lmms_eval_earthsci: {name} is none of our tasks or groups ({hint})" for name in task_list if name not in matched and (hint := OURS.looks_ours_but_unknown(name, known))]
        if lines:
            run_status.say("\n".join(lines))
            raise SystemExit(2)
        if is_cli_run() and isinstance(task_list, list):
            _note_requested(self, task_list, matched, known)
        return matched

    task_manager_cls.match_tasks = match_tasks
    task_manager_cls._earthsci_names_checked = True
    return True


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
    ours = [name for name in names if isinstance(name, str) and _is_ours(task_manager, name)]
    near = {name: ", ".join(found) for name in names if isinstance(name, str) and name not in ours and (found := OURS.near(name))}
    unknown = _unknown(task_list, matched)
    limit = cli_value(sys.argv, "--limit")
    if ours and limit is not None and _is_zero(limit):  # lmms-eval would load every task, then raise "did not find any docs" and exit 1
        run_status.say(f"lmms_eval_earthsci: --limit {limit} evaluates no doc: {', '.join(ours)} did not run (exit 2); give --limit N (N >= 1, or a share "
                       "0 < x < 1) or leave it out for every doc")
        raise SystemExit(2)
    if ours and unknown:
        run_status.say("\n".join([*(f"lmms_eval_earthsci: {name} is no task lmms-eval knows ({OURS.did_you_mean(name, known, 0.75)})" for name in unknown),
                                  f"lmms_eval_earthsci: {', '.join(ours)} did not run (exit {run_status.OTHER}): the run stopped before the model loaded, at the name(s) above"]))
        raise SystemExit(run_status.OTHER)
    run_status.note_requested(ours, near)
    if ours or near:
        _install_outcome_hooks()


def note_outcome(original: Callable[..., Any]) -> Callable[..., Any]:
    """``lmms_eval.evaluator.simple_evaluate`` noting how the run ended (:mod:`.core.run_status`): what it
    raised, outside the evaluation of our tasks; on a rank other than 0 (it returns None), done."""

    @functools.wraps(original)
    def simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        run_status.note_started()
        try:
            results = original(*args, **kwargs)
        except Exception as exc:
            run_status.note_run_stopped(f"the run stopped before them ({run_status.in_one_line(exc)}; lmms-eval's traceback above){run_status.known_cause(exc)}", exc)
            raise
        if results is None:
            run_status.note_done()
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
            run_status.note_run_stopped(f"lmms-eval could not write the results under {where} (its warning 'Could not save results aggregated' above)")
        else:
            run_status.note_done()
        return out

    return save_results_aggregated


def _install_outcome_hooks() -> None:
    """The two wraps that tell a finished run from one stopped before our tasks ran or were written;
    installed when a CLI run asks for tasks of ours (lmms-eval's evaluator has finished importing by
    then: our entry point runs while it imports)."""
    evaluator = sys.modules.get("lmms_eval.evaluator")
    tracker = getattr(sys.modules.get("lmms_eval.loggers.evaluation_tracker"), "EvaluationTracker", None)
    if evaluator is None or not wrap_method(evaluator, "simple_evaluate", "_earthsci_outcome", note_outcome):
        warn_missing("run outcome", "a run of our tasks stopped by something else (a model that cannot load) may exit 0")
    if tracker is None or not wrap_method(tracker, "save_results_aggregated", "_earthsci_written", note_written):
        warn_missing("results written", "a run whose results could not be written may exit 0")


def _our_task_dirs() -> tuple[str, ...]:
    return tuple(os.path.join(os.path.abspath(d), "") for d in with_our_tasks(None))


def _is_ours(task_manager: Any, name: str) -> bool:
    entry = (getattr(task_manager, "task_index", None) or {}).get(name) or {}
    path = entry.get("yaml_path")
    return isinstance(path, str) and os.path.abspath(path).startswith(_our_task_dirs())


def _why(task: str, exc: BaseException) -> str:
    """One line: what failed and, where we know it, the fix."""
    if isinstance(exc, NoDataRouteError):
        return exc.line.removeprefix("lmms-eval-earthsci: ").removeprefix(f"{task}: ")
    if isinstance(exc, HubRefusedError):
        return str(exc)
    traceback.print_exception(exc)
    return f"{run_status.in_one_line(exc)} (traceback above)" + run_status.known_cause(exc)


def _ungrouped(name: str, loaded: dict) -> dict:
    """A group's load result without the group (its score would be over fewer tasks): its tasks alone."""
    if len(loaded) != 1:
        return loaded
    (group, tasks), = loaded.items()
    if isinstance(group, str) or not isinstance(tasks, dict) or not (getattr(group, "config", None) or {}).get("aggregate_metric_list"):
        return loaded  # a task, or a group without a score of its own
    run_status.note_ungrouped(name, len(tasks))
    return dict(tasks)


def leave_out_what_cannot_load(task_manager_cls: Any) -> bool:
    """In an lmms-eval CLI run, a task of ours that cannot load is left out and noted
    (:mod:`.core.run_status`: one line now, one at the end, a non-zero exit), a group that lost one of its
    tasks loses its group score, and the other tasks run (lmms-eval stops the whole run at the first task
    that cannot load, and exits 0). In a run that includes tasks of ours, any other task that cannot load
    is left out the same way (exit 3). Nothing left: exit 2 before the first doc. The failures of a
    run without tasks of ours, and every failure outside a CLI run, are lmms-eval's as before. Returns
    success."""
    if getattr(task_manager_cls, "_earthsci_leaves_out", False):
        return True
    one = getattr(task_manager_cls, "_load_individual_task_or_group", None)
    every = getattr(task_manager_cls, "load_task_or_group", None)
    if one is None or every is None:
        return False

    @functools.wraps(one)
    def _load_individual_task_or_group(self: Any, name_or_config: Any = None, *args: Any, **kwargs: Any) -> Any:
        name = name_or_config.get("task") if isinstance(name_or_config, dict) else name_or_config
        before = run_status.failures_seen()
        try:
            loaded = one(self, name_or_config, *args, **kwargs)
        except (Exception, NoDataRouteError) as exc:
            if isinstance(name, str) and is_cli_run():
                if _is_ours(self, name):
                    run_status.note_not_loaded(name, _why(name, exc))
                    return {}
                if run_status.requested_ours():  # a run with tasks of ours: another task is left out the same way
                    run_status.note_other_not_loaded(name, _why(name, exc))
                    return {}
            if isinstance(exc, NoDataRouteError):  # another task on a dataset of ours: it stops the run, with its line
                exc.say()
            raise
        if run_status.failures_seen() > before and isinstance(name, str):
            return _ungrouped(name, loaded)
        return loaded

    @functools.wraps(every)
    def load_task_or_group(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = run_status.failures_seen()
        loaded = every(self, *args, **kwargs)
        if not loaded and run_status.failures_seen() > before:
            run_status.stop_nothing_left()
        return loaded

    task_manager_cls._load_individual_task_or_group = _load_individual_task_or_group
    task_manager_cls.load_task_or_group = load_task_or_group
    task_manager_cls._earthsci_leaves_out = True
    return True


def _loader_says_why() -> bool:
    """In a CLI run with our loader wrap on lmms-eval's TaskManager, the loader says why a task was left out."""
    loader = getattr(sys.modules.get("lmms_eval.tasks"), "TaskManager", None)
    return is_cli_run() and getattr(loader, "_earthsci_leaves_out", False)


loader_says_why(_loader_says_why)


class _LibYaml:
    """PyYAML as ``lmms_eval.utils`` uses it, its ``full_load`` on libyaml's C parser (``yaml.CFullLoader``: the
    same constructors and resolver as ``FullLoader``, the same documents); everything else is PyYAML's own. A
    constructor lmms-eval adds (``!function``) is added to the C loader too."""

    def __init__(self, yaml: Any) -> None:
        self._yaml = yaml

    def __getattr__(self, name: str) -> Any:
        return getattr(self._yaml, name)

    def full_load(self, stream: Any) -> Any:
        loader = self._yaml.CFullLoader(stream)
        # the pure-Python Reader's name, which lmms-eval's !function constructor reads (the YAML's folder)
        loader.name = getattr(stream, "name", "<file>") if not isinstance(stream, (str, bytes)) else "<unicode string>" if isinstance(stream, str) else "<byte string>"
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()

    def add_constructor(self, tag: str, constructor: Any, Loader: Any = None) -> None:  # noqa: N803 - PyYAML's own keyword
        self._yaml.add_constructor(tag, constructor, Loader=Loader)
        if Loader is None:
            self._yaml.add_constructor(tag, constructor, Loader=self._yaml.CFullLoader)


def index_on_libyaml() -> bool:
    """Every ``TaskManager`` parses each task YAML lmms-eval ships (~2,000 files, ~3,400 loads with their
    includes) with PyYAML's pure-Python loader: ~2 s of each run's start on 2 cores. Where PyYAML has libyaml,
    ``lmms_eval.utils`` gets the C parser instead (~0.3 s; tests/core/adapter/test_registration.py loads every YAML lmms-eval
    and we ship both ways and finds the same documents). Returns whether it is in place."""
    import yaml  # noqa: PLC0415 - PyYAML, which lmms-eval has imported already
    from lmms_eval import utils  # noqa: PLC0415 - lmms-eval's task-config loader

    if isinstance(getattr(utils, "yaml", None), _LibYaml):
        return True
    if getattr(utils, "yaml", None) is not yaml or not getattr(yaml, "__with_libyaml__", False):
        return False
    utils.yaml = _LibYaml(yaml)
    return True


def is_registered() -> bool:
    from lmms_eval.tasks import TaskManager  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds

    return bool(getattr(TaskManager, "_earthsci_patched", False))


def install(check_settings: Callable[[], None] = lambda: None) -> bool:
    """Every wrap of this module on lmms-eval's ``TaskManager``, then the run's hooks (:mod:`.hooks`);
    ``check_settings`` runs first, once lmms-eval is there (a wrong value stops the run). False, after a
    warning, when lmms-eval's task machinery cannot be imported."""
    try:
        from lmms_eval.tasks import TaskManager  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds; its failure is reported
    except Exception as exc:  # lmms-eval import itself failing is not ours to hide, but say so
        warn_registration(f"could not import lmms_eval.tasks ({exc!r}).")
        return False
    check_settings()
    patch_task_manager(TaskManager)
    index_on_libyaml()  # a speed-up only: without libyaml lmms-eval's own loader stays
    if not stop_on_unknown_names(TaskManager):
        warn_missing("task-name typos", "a mistyped task name of ours says \"Tasks not found\" and exits 0")
    if not leave_out_what_cannot_load(TaskManager):
        warn_missing("tasks that cannot load", "a task of ours that cannot load stops the whole run, and lmms-eval exits 0")
    install_runtime_hooks()
    return True


def build_tasks(names: Iterable[str], include_path: list[str]) -> dict:
    """The tasks ``names`` as lmms-eval builds them from ``include_path`` (besides its own), to read their docs
    and figures (``report``): ``{name: task}`` for the leaf tasks with images; nothing is evaluated, and the task
    modules install the mirror hook and record gate only, not a run's hooks."""
    from lmms_eval.tasks import TaskManager, get_task_dict  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds; only when a command reads a task's data

    tm = TaskManager(include_path=include_path)
    with data_hooks_only():
        return {name: task for name, task in leaf_tasks(get_task_dict(sorted(names), tm)) if hasattr(task, "doc_to_visual")}
