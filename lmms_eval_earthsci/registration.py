"""Registers our tasks with lmms-eval without any flag or environment variable.

lmms-eval (0.7.3) has no task-plugin hook, and its ``LMMS_EVAL_PLUGINS`` route is applied after the
task index is built. What it does load early is the ``lmms_eval.models`` entry-point group: it is read
when ``lmms_eval.models`` is imported, which ``lmms_eval.evaluator`` does before the CLI builds its
``TaskManager``. Our entry point (``pyproject.toml``) calls :func:`register`, which

- appends :data:`lmms_eval_earthsci.TASKS_DIR` (and the task folders of benchmarks registered from
  outside, :mod:`.registry`) to every ``TaskManager``'s include paths, and
- routes dataset downloads to the local mirror when ``EARTHSCI_DATA_MIRROR`` is set
  (:func:`lmms_eval_earthsci.core.data.install_mirror_hook`),
- runs the concurrent judge pass of judged tasks right after lmms-eval applies their filters
  (:func:`lmms_eval_earthsci.core.judge_pass.install_judge_hook`),

and returns no model manifests. It is idempotent. The patches touch lmms-eval internals; if those
change, a warning says what broke and how to run our tasks anyway (``--include_path``).
"""

from __future__ import annotations

import functools
import inspect
import sys

from lmms_eval_earthsci import TASKS_DIR, registry
from lmms_eval_earthsci.core.hooks import RegistrationWarning, install_runtime_hooks, warn_registration
from lmms_eval_earthsci.core.patching import warn_missing
from lmms_eval_earthsci.yamlgen import looks_ours_but_unknown

__all__ = ["RegistrationWarning", "install_runtime_hooks", "patch_task_manager", "register", "is_registered"]

def with_our_tasks(include_path):
    """``include_path`` (None, one folder or several) with our task folder and those of the benchmarks
    registered from outside added: what every ``TaskManager`` indexes."""
    if include_path is None:
        paths = []
    elif isinstance(include_path, (str, bytes)):
        paths = [include_path]
    else:
        paths = list(include_path)
    for folder in [TASKS_DIR, *_registered_task_dirs()]:
        if folder not in paths:
            paths.append(folder)
    return paths


def _registered_task_dirs() -> list[str]:
    """The task folders of benchmarks registered from outside (registry); a broken one is named in a
    warning and left out, never taking our own tasks down with it."""
    try:
        return registry.external_task_dirs()
    except registry.RegistryError as exc:
        warn_registration(f"{exc}; that benchmark's tasks are not registered.")
        return []


def patch_task_manager(task_manager_cls) -> bool:
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
    def initialize_tasks(self, include_path=None, *args, **kwargs):
        return original(self, with_our_tasks(include_path), *args, **kwargs)

    task_manager_cls.initialize_tasks = initialize_tasks
    task_manager_cls._earthsci_patched = True
    return True


def stop_on_unknown_names(task_manager_cls) -> bool:
    """Wrap ``task_manager_cls.match_tasks``: a requested name that looks like one of our tasks but is none
    stops the run with exit 2 and one line per name (did you mean ...), before the model loads (lmms-eval
    says "Tasks not found" and exits 0). Returns success."""
    if getattr(task_manager_cls, "_earthsci_names_checked", False):
        return True
    original = getattr(task_manager_cls, "match_tasks", None)
    if original is None:
        return False

    @functools.wraps(original)
    def match_tasks(self, task_list, *args, **kwargs):
        matched = original(self, task_list, *args, **kwargs)
        known = set(getattr(self, "all_tasks", ()) or ())
        lines = [f"lmms_eval_earthsci: {name} is none of our tasks or groups ({hint})" for name in task_list if name not in matched and (hint := looks_ours_but_unknown(name, known))]
        if lines:
            sys.stderr.write("\n".join(lines) + "\n")
            sys.stderr.flush()
            raise SystemExit(2)
        return matched

    task_manager_cls.match_tasks = match_tasks
    task_manager_cls._earthsci_names_checked = True
    return True


def register():
    """Entry point of the ``lmms_eval.models`` group: patch lmms-eval, register no model."""
    try:
        from lmms_eval.tasks import TaskManager  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds; its failure is reported
    except Exception as exc:  # lmms-eval import itself failing is not ours to hide, but say so
        warn_registration(f"could not import lmms_eval.tasks ({exc!r}).")
        return []
    # every EARTHSCI_* setting of a run, before any task is built: a wrong value stops here (exit 2)
    registry.enforce_settings("run")
    patch_task_manager(TaskManager)
    if not stop_on_unknown_names(TaskManager):
        warn_missing("task-name typos", "a mistyped task name of ours says \"Tasks not found\" and exits 0")
    install_runtime_hooks()
    return []


def is_registered() -> bool:
    from lmms_eval.tasks import TaskManager  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds

    return bool(getattr(TaskManager, "_earthsci_patched", False))
