"""Registers our tasks with lmms-eval without any flag or environment variable.

lmms-eval (0.7.3) has no task-plugin hook, and its ``LMMS_EVAL_PLUGINS`` route is applied after the
task index is built. What it does load early is the ``lmms_eval.models`` entry-point group: it is read
when ``lmms_eval.models`` is imported, which ``lmms_eval.evaluator`` does before the CLI builds its
``TaskManager``. Our entry point (``pyproject.toml``) calls :func:`register`: :func:`start` fills the process's
runtime (:mod:`lmms_eval_earthsci.core.runtime`: our task folders, those of the benchmarks registered from
outside (:mod:`.registry`), the YAML generator's name hints, the settings check) and installs the old module names
(:mod:`._legacy`); then :func:`lmms_eval_earthsci.core.activation.install` installs the run-wide hardening (unless
``EARTHSCI_HARDENING=0``), the integration (every ``TaskManager`` indexes our tasks; local mirror, record gate,
judge pass, ...) and the model boundary. Our commands call :func:`start` (``cli.main``). Importing a module of
ours does neither: nothing is patched or installed by an import. :func:`register` returns no model manifests
and is idempotent (each piece asks the patch records). The patches touch lmms-eval internals; if those change,
a warning says what broke and how to run our tasks anyway (``--include_path``).
"""

from __future__ import annotations

from lmms_eval_earthsci import TASKS_DIR, _legacy, registry
from lmms_eval_earthsci.core import activation
from lmms_eval_earthsci.core.adapter.inventory import ENTRIES
from lmms_eval_earthsci.core.adapter.task_manager import is_registered, patch_task_manager, with_our_tasks
from lmms_eval_earthsci.core.runtime import Runtime, current
from lmms_eval_earthsci.core.upstream.inventory import RegistrationWarning, warn_registration
from lmms_eval_earthsci.core.upstream.patching import register as record_registration
from lmms_eval_earthsci.yamlgen import did_you_mean, looks_ours_but_unknown, ours_near

__all__ = ["RegistrationWarning", "register", "is_registered", "our_task_dirs", "patch_task_manager", "start", "with_our_tasks"]


def _registered_task_dirs() -> list[str]:
    """The task folders of benchmarks registered from outside (registry); a broken one is named in a
    warning and left out, never taking our own tasks down with it."""
    try:
        return registry.external_task_dirs()
    except registry.RegistryError as exc:
        warn_registration(f"{exc}; that benchmark's tasks are not registered.")
        return []


def our_task_dirs() -> list[str]:
    """Our task folder and those of the benchmarks registered from outside."""
    return [TASKS_DIR, *_registered_task_dirs()]


def _declare_benchmarks() -> None:
    """Each benchmark's datasets and settings declared on the runtime (a broken outside one: warned and left out)."""
    try:
        benchmarks = registry.benchmarks()
    except registry.RegistryError as exc:
        warn_registration(f"{exc}; that benchmark's tasks are not registered.")
        benchmarks = registry.builtin()
    for benchmark in benchmarks:
        activation.activate(benchmark)


def start() -> Runtime:
    """The process's runtime filled with what is ours, as the registry and the YAML generator know it (each
    benchmark's datasets and settings declared), and the old module names installed (once per process,
    recorded)."""
    _declare_benchmarks()
    rt = current().fill(
        task_dirs=our_task_dirs,
        looks_ours_but_unknown=looks_ours_but_unknown,
        near=ours_near,
        did_you_mean=did_you_mean,
        # every EARTHSCI_* setting of a run, before any task is built: a wrong value stops there (exit 2)
        check_settings=lambda: registry.enforce_settings("run"),
    )
    record_registration(ENTRIES["old module names"], "sys:meta_path", _legacy.install)
    return rt


def register():
    """Entry point of the ``lmms_eval.models`` group: patch lmms-eval, register no model. Idempotent; when
    lmms-eval's task machinery cannot be imported (said), tried again at the next call."""
    activation.install(start())
    return []
