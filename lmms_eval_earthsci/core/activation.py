"""How our code comes into an lmms-eval process: one call for registration, one for a benchmark, and the inventory
of every part.

- :func:`install` (registration, ``lmms_eval_earthsci.registration.register``): the run's settings checked, then
  the run-wide hardening (``core.hardening``, unless ``EARTHSCI_HARDENING=0``), the integration (``core.adapter``)
  and the model boundary (``core.boundary``). Idempotent: each piece asks the patch records whether it is in place.
- :func:`activate` (each benchmark's task module, as lmms-eval imports it): its datasets and settings declared on the
  runtime, nothing installed (an import has no effect: our entry point and our commands install).
- :data:`INVENTORY`: every part's entries (the taps', the integration's, the hardening's, the boundary's), for the
  tests and the docs; each part declares its own next to its code.
"""

from __future__ import annotations

from typing import Any

from lmms_eval_earthsci.core import boundary, hardening
from lmms_eval_earthsci.core.adapter import integration, task_manager
from lmms_eval_earthsci.core.adapter.harness import lmms_eval_loads_tasks
from lmms_eval_earthsci.core.adapter.inventory import ENTRIES as ADAPTER
from lmms_eval_earthsci.core.boundary.inventory import ENTRIES as BOUNDARY
from lmms_eval_earthsci.core.data.loading import declare_datasets
from lmms_eval_earthsci.core.hardening.inventory import ENTRIES as HARDENING
from lmms_eval_earthsci.core.runtime import Runtime, current
from lmms_eval_earthsci.core.settings import declare_settings, declared, enforce
from lmms_eval_earthsci.core.upstream.taps import ENTRIES as TAPS

#: every inventory entry of every part
INVENTORY = TAPS + ADAPTER + HARDENING + BOUNDARY


def install(runtime: Runtime) -> bool:
    """Registration's one call (see the module docstring). False, after a warning, when lmms-eval's task
    machinery cannot be imported."""
    task_manager_cls = task_manager.task_manager_class()
    if task_manager_cls is None:
        return False
    runtime.check_settings()  # a wrong EARTHSCI_* value stops the run here (exit 2)
    hardening.install(task_manager_cls)
    task_manager.install(task_manager_cls)
    install_run_hooks()
    return True


def install_run_hooks() -> None:
    """Everything besides task indexing a run of our tasks needs. Idempotent."""
    rt = current()
    rt.run_hooks = True  # a setting declared from now on is checked at once (core.settings.declare_settings)
    # a wrong EARTHSCI_* value stops the process here, before any task is built (SettingsError, exit 2)
    enforce(declared(), "run")
    hardening.install()  # first: its exit handler runs after the handlers registered later
    integration.install()
    boundary.install()


def activate(benchmark: Any) -> None:
    """A benchmark's one call, after its task module's imports: its datasets and settings declared on the runtime.
    Cheap and idempotent; installs nothing."""
    declare_datasets(benchmark.datasets)
    declare_settings(benchmark.settings)


def ensure_runtime_hooks() -> None:
    """What a lab's task module written before :func:`activate` calls at its end: inside an lmms-eval run
    (lmms-eval's task module is imported: it is loading tasks) the run's hooks, as our entry point installs them;
    the data hooks only while ``report`` reads task data; outside lmms-eval, nothing (a notebook importing that
    module is not patched)."""
    if not lmms_eval_loads_tasks():
        return
    if current().data_only:
        integration.install_data_hooks()
        return
    install_run_hooks()
