"""lmms-eval's ``TaskManager``, wrapped for what running our tasks needs: our task folders indexed by every
``TaskManager`` (inventory: "registration"), and in a CLI run a task of ours that cannot load left out with
its line while the rest runs ("tasks of ours that cannot load": a group that lost one loses its group
score). What is ours (our task folders) is the runtime's (:mod:`lmms_eval_earthsci.core.runtime`), built by
registration. The run's exit codes, the names checked before the model loads and the tasks not ours left
out are the run-wide hardening's (:mod:`lmms_eval_earthsci.core.hardening`)."""

from __future__ import annotations

import inspect
import os
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from lmms_eval_earthsci.core.adapter.harness import leaf_tasks
from lmms_eval_earthsci.core.adapter.integration import install_data_hooks
from lmms_eval_earthsci.core.adapter.inventory import ENTRIES
from lmms_eval_earthsci.core.data.loading import HubRefusedError, NoDataRouteError
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.settings import is_cli_run
from lmms_eval_earthsci.core.upstream import ledger, taps
from lmms_eval_earthsci.core.upstream.inventory import warn_missing, warn_registration
from lmms_eval_earthsci.core.upstream.patching import installed, where, wrap_method


def with_our_tasks(include_path: Any) -> list:
    """``include_path`` (None, one folder or several) with our task folders added: what every ``TaskManager``
    indexes."""
    if include_path is None:
        paths = []
    elif isinstance(include_path, (str, bytes)):
        paths = [include_path]
    else:
        paths = list(include_path)
    for folder in current().task_dirs():
        if folder not in paths:
            paths.append(folder)
    return paths


def patch_task_manager(task_manager_cls: Any) -> bool:
    """Make ``task_manager_cls.initialize_tasks`` always index our task folders. Returns success."""
    original = getattr(task_manager_cls, "initialize_tasks", None)
    if original is None:
        warn_registration("lmms-eval's TaskManager has no `initialize_tasks` any more; our tasks are not registered.")
        return False
    if "include_path" not in inspect.signature(original).parameters:
        warn_registration("TaskManager.initialize_tasks no longer takes `include_path`; our tasks are not registered.")
        return False

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def initialize_tasks(self: Any, include_path: Any = None, *args: Any, **kwargs: Any) -> Any:
            return original(self, with_our_tasks(include_path), *args, **kwargs)

        return initialize_tasks

    return wrap_method(task_manager_cls, "initialize_tasks", make, entry=ENTRIES["registration"])


def _our_task_dirs() -> tuple[str, ...]:
    return tuple(os.path.join(os.path.abspath(d), "") for d in with_our_tasks(None))


def is_ours(task_manager: Any, name: str) -> bool:
    """Whether ``task_manager`` indexed ``name`` from one of our task folders."""
    entry = (getattr(task_manager, "task_index", None) or {}).get(name) or {}
    path = entry.get("yaml_path")
    return isinstance(path, str) and os.path.abspath(path).startswith(_our_task_dirs())


def why_not_loaded(task: str, exc: BaseException) -> str:
    """One line: what failed and, where we know it, the fix."""
    if isinstance(exc, NoDataRouteError):
        return exc.line.removeprefix("lmms-eval-earthsci: ").removeprefix(f"{task}: ")
    if isinstance(exc, HubRefusedError):
        return str(exc)
    traceback.print_exception(exc)
    return f"{ledger.in_one_line(exc)} (traceback above)" + ledger.known_cause(exc)


def _ungrouped(name: str, loaded: dict) -> dict:
    """A group's load result without the group (its score would be over fewer tasks): its tasks alone."""
    if len(loaded) != 1:
        return loaded
    (group, tasks), = loaded.items()
    if isinstance(group, str) or not isinstance(tasks, dict) or not (getattr(group, "config", None) or {}).get("aggregate_metric_list"):
        return loaded  # a task, or a group without a score of its own
    ledger.note_ungrouped(name, len(tasks))
    return dict(tasks)


def leave_out_what_cannot_load(task_manager_cls: Any) -> bool:
    """In an lmms-eval CLI run, a task of ours that cannot load is left out and noted
    (:mod:`..upstream.ledger`: one line now), a group that lost one of its tasks loses its group score, and the
    other tasks run (lmms-eval stops the whole run at the first task that cannot load, and exits 0). The
    failures of other tasks, and every failure outside a CLI run, are lmms-eval's as before (the run-wide
    hardening leaves tasks not ours out too). Returns success."""

    def leave_out(call: Callable[..., Any], self: Any, name_or_config: Any = None, *args: Any, **kwargs: Any) -> Any:
        name = name_or_config.get("task") if isinstance(name_or_config, dict) else name_or_config
        before = ledger.failures_seen()
        try:
            loaded = call(self, name_or_config, *args, **kwargs)
        except (Exception, NoDataRouteError) as exc:
            if isinstance(name, str) and is_cli_run() and is_ours(self, name):
                ledger.note_not_loaded(name, why_not_loaded(name, exc))
                return {}
            if isinstance(exc, NoDataRouteError):  # another task on a dataset of ours: it stops the run, with its line
                exc.say()
            raise
        if ledger.failures_seen() > before and isinstance(name, str):
            return _ungrouped(name, loaded)
        return loaded

    if taps.subscribe("task loader", task_manager_cls, "_load_individual_task_or_group", "ours left out", leave_out,
                      entry=ENTRIES["tasks of ours that cannot load"]) is None:
        return False
    current().loader_leaves_out = True  # the loader says a dataset route's line (core.data.loading)
    return True


def is_registered() -> bool:
    from lmms_eval.tasks import TaskManager  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds

    return installed(ENTRIES["registration"], where(TaskManager, "initialize_tasks"))


def task_manager_class() -> Any:
    """lmms-eval's ``TaskManager`` class, or None after a warning when its task machinery cannot be imported."""
    try:
        from lmms_eval.tasks import TaskManager  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds; its failure is reported
    except Exception as exc:  # lmms-eval import itself failing is not ours to hide, but say so
        warn_registration(f"could not import lmms_eval.tasks ({exc!r}).")
        return None
    return TaskManager


def install(task_manager_cls: Any) -> None:
    """This module's wraps on ``task_manager_cls``: our task folders indexed, a task of ours that cannot load
    left out."""
    patch_task_manager(task_manager_cls)
    if not leave_out_what_cannot_load(task_manager_cls):
        warn_missing(ENTRIES["tasks of ours that cannot load"], "a task of ours that cannot load stops the whole run")


def build_tasks(names: Iterable[str], include_path: list[str]) -> dict:
    """The tasks ``names`` as lmms-eval builds them from ``include_path`` (besides its own), to read their docs
    and figures (``report``): ``{name: task}`` for the leaf tasks with images; nothing is evaluated: the mirror hook
    and the record gate are installed, not a run's hooks, and a dataset with no route is an error the caller reports."""
    from lmms_eval.tasks import TaskManager, get_task_dict  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds; only when a command reads a task's data

    install_data_hooks()
    tm = TaskManager(include_path=include_path)
    with current().reading_data_only():
        return {name: task for name, task in leaf_tasks(get_task_dict(sorted(names), tm)) if hasattr(task, "doc_to_visual")}
