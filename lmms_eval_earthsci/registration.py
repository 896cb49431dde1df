"""Registers our tasks with lmms-eval without any flag or environment variable.

lmms-eval (0.7.3) has no task-plugin hook, and its ``LMMS_EVAL_PLUGINS`` route is applied after the
task index is built. What it does load early is the ``lmms_eval.models`` entry-point group: it is read
when ``lmms_eval.models`` is imported, which ``lmms_eval.evaluator`` does before the CLI builds its
``TaskManager``. Our entry point (``pyproject.toml``) calls :func:`register`, which

- appends :data:`lmms_eval_earthsci.TASKS_DIR` (and the task folders of benchmarks registered from
  outside, :mod:`.registry`) to every ``TaskManager``'s include paths, and
- routes dataset downloads to the local mirror when ``EARTHSCI_DATA_MIRROR`` is set
  (:func:`lmms_eval_earthsci.core.adapter.task_data.install_mirror_hook`),
- runs the concurrent judge pass of judged tasks right after lmms-eval applies their filters
  (:func:`lmms_eval_earthsci.core.adapter.judge_hook.install_judge_hook`),
- ends a CLI run that includes tasks of ours non-zero, with one line per task that did not run and why,
  whatever stopped it: a task of ours or another that cannot load (left out, the rest runs), a name
  lmms-eval does not know, a model that cannot load (:mod:`lmms_eval_earthsci.core.adapter.run_status`),

and returns no model manifests. It is idempotent. The patches touch lmms-eval internals; if those
change, a warning says what broke and how to run our tasks anyway (``--include_path``).

The wraps themselves live in the lmms-eval adapter (:mod:`lmms_eval_earthsci.core.adapter.task_manager`);
this module hands them what is ours (the registry's task folders, the YAML generator's names) and is the
entry point. Their names are importable from here as before.
"""

from __future__ import annotations

from lmms_eval_earthsci import TASKS_DIR, registry
from lmms_eval_earthsci.core.adapter import task_manager
from lmms_eval_earthsci.core.adapter.hooks import RegistrationWarning, install_runtime_hooks, warn_registration
from lmms_eval_earthsci.core.adapter.task_manager import (  # noqa: F401 - importable from here, as before the adapter
    _LibYaml,
    index_on_libyaml,
    is_registered,
    leave_out_what_cannot_load,
    patch_task_manager,
    stop_on_unknown_names,
    with_our_tasks,
)
from lmms_eval_earthsci.yamlgen import did_you_mean, looks_ours_but_unknown, ours_near

__all__ = ["RegistrationWarning", "install_runtime_hooks", "patch_task_manager", "register", "is_registered", "with_our_tasks"]


def _registered_task_dirs() -> list[str]:
    """The task folders of benchmarks registered from outside (registry); a broken one is named in a
    warning and left out, never taking our own tasks down with it."""
    try:
        return registry.external_task_dirs()
    except registry.RegistryError as exc:
        warn_registration(f"{exc}; that benchmark's tasks are not registered.")
        return []


task_manager.use(
    task_dirs=lambda: [TASKS_DIR, *_registered_task_dirs()],
    looks_ours_but_unknown=looks_ours_but_unknown,
    near=ours_near,
    did_you_mean=did_you_mean,
)


def register():
    """Entry point of the ``lmms_eval.models`` group: patch lmms-eval, register no model."""
    # every EARTHSCI_* setting of a run, before any task is built: a wrong value stops there (exit 2)
    task_manager.install(check_settings=lambda: registry.enforce_settings("run"))
    return []
