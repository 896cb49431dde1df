"""How our code comes into an lmms-eval process: one call for registration, one for a benchmark.

- :func:`install` (registration, ``lmms_eval_earthsci.registration.register``): the runtime started, the run's
  settings checked, then the run-wide hardening (``core.hardening``, unless ``EARTHSCI_HARDENING=0``), the
  integration (``core.adapter``) and the model boundary (``core.boundary``);
- :func:`activate` (each benchmark's task module, as lmms-eval imports it): its datasets and settings
  declared, and inside an lmms-eval run the run's hooks installed: the routes that bypass our entry point
  (``--include_path``, a hand-built ``TaskManager``) are as whole as the automatic one. While ``report``
  builds tasks to read their data (:meth:`..runtime.Runtime.reading_data_only`), the data hooks only.
"""

from __future__ import annotations

from typing import Any

from lmms_eval_earthsci.core import boundary, hardening
from lmms_eval_earthsci.core.adapter import integration, task_manager
from lmms_eval_earthsci.core.adapter.harness import lmms_eval_loads_tasks
from lmms_eval_earthsci.core.data.loading import declare_datasets
from lmms_eval_earthsci.core.runtime import Runtime, current, start
from lmms_eval_earthsci.core.settings import declare_settings, declared, enforce


def install(runtime: Runtime) -> bool:
    """Registration's one call (see the module docstring). False, after a warning, when lmms-eval's task
    machinery cannot be imported."""
    start(runtime)
    task_manager_cls = task_manager.task_manager_class()
    if task_manager_cls is None:
        return False
    runtime.check_settings()  # a wrong EARTHSCI_* value stops the run here (exit 2)
    hardening.install(task_manager_cls)  # before the integration's loader wrap: its leave-out of other tasks runs inside it
    task_manager.install(task_manager_cls)
    install_run_hooks()
    return True


def install_run_hooks() -> None:
    """Everything besides task indexing a run of our tasks needs. Idempotent."""
    rt = current()
    if rt.run_hooks:
        return
    rt.run_hooks = True  # a setting declared from now on is checked at once (core.settings.declare_settings)
    # a wrong EARTHSCI_* value stops the process here, before any task is built (SettingsError, exit 2)
    enforce(declared(), "run")
    hardening.install()  # first: its exit handler runs after the handlers registered later
    integration.install()
    boundary.install()


def activate(benchmark: Any) -> None:
    """A benchmark's one call, after its task module's imports: its datasets and settings declared; inside an
    lmms-eval run, the run's hooks (:func:`ensure_runtime_hooks`). Cheap and idempotent."""
    declare_datasets(benchmark.datasets)
    declare_settings(benchmark.settings)
    ensure_runtime_hooks()


def ensure_runtime_hooks() -> None:
    """Inside an lmms-eval run (lmms-eval's task module is imported: it is loading tasks), the run's hooks
    installed now, before any dataset is loaded; the data hooks only while ``report`` reads task data.
    Does nothing outside lmms-eval. (A benchmark written before :func:`activate` calls this.)"""
    if not lmms_eval_loads_tasks():
        return
    if current().data_only:
        integration.install_data_hooks()
        return
    install_run_hooks()
