"""lmms_eval_earthsci: MSEarth, EMMA, SciFIBench, MuSciClaims and MAC as lmms-eval tasks.

Importing this package (or any module of it) is cheap (no lmms-eval, no torch) and has no effect: it patches
nothing and installs nothing (``tests/core/test_runtime.py``). Our entry point and our commands start the runtime
(:mod:`.registration`).

Python users who build their own ``TaskManager`` before lmms-eval's evaluator is imported (whose import runs our
entry point) make the entry point's call themselves, then point it at :data:`TASKS_DIR`::

    from lmms_eval_earthsci import TASKS_DIR, registration
    registration.register()  # what is ours, the old module names, the run's hooks
    from lmms_eval.tasks import TaskManager
    tm = TaskManager(include_path=TASKS_DIR)
"""

from __future__ import annotations

import os

__version__ = "0.1.0"


def _find_tasks_dir() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    # Installed wheel: task_yamls/ is shipped inside the package.
    # Source checkout / editable install: it sits at the repository top level.
    for candidate in (os.path.join(here, "task_yamls"), os.path.join(os.path.dirname(here), "task_yamls")):
        if os.path.isdir(candidate):
            return candidate
    raise RuntimeError(
        f"lmms_eval_earthsci: no task_yamls/ folder next to {here}; the installation is incomplete "
        "(reinstall the package)"
    )


TASKS_DIR: str = _find_tasks_dir()
PACKAGE_DIR: str = os.path.dirname(os.path.abspath(__file__))

__all__ = ["TASKS_DIR", "PACKAGE_DIR", "__version__"]
