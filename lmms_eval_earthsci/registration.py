"""Registers our tasks with lmms-eval without any flag or environment variable.

lmms-eval (0.7.3) has no task-plugin hook, and its ``LMMS_EVAL_PLUGINS`` route is applied after the
task index is built. What it does load early is the ``lmms_eval.models`` entry-point group: it is read
when ``lmms_eval.models`` is imported, which ``lmms_eval.evaluator`` does before the CLI builds its
``TaskManager``. Our entry point (``pyproject.toml``) calls :func:`register`, which

- appends :data:`lmms_eval_earthsci.TASKS_DIR` to every ``TaskManager``'s include paths, and
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
import logging
import warnings

from lmms_eval_earthsci import TASKS_DIR

logger = logging.getLogger("lmms_eval_earthsci")

_FALLBACK_HINT = (
    "Run our tasks with `lmms-eval --include_path \"$(lmms-eval-earthsci tasks-dir)\" ...`, or use the "
    "`lmms-eval-earthsci run ...` wrapper, or in Python `TaskManager(include_path=lmms_eval_earthsci.TASKS_DIR)`."
)


class RegistrationWarning(UserWarning):
    """lmms-eval internals changed: automatic registration could not be applied."""


def _warn(msg: str) -> None:
    text = f"lmms_eval_earthsci: {msg} {_FALLBACK_HINT}"
    warnings.warn(text, RegistrationWarning, stacklevel=3)
    logger.warning(text)


def _with_our_tasks(include_path):
    if include_path is None:
        paths = []
    elif isinstance(include_path, (str, bytes)):
        paths = [include_path]
    else:
        paths = list(include_path)
    if TASKS_DIR not in paths:
        paths.append(TASKS_DIR)
    return paths


def patch_task_manager(task_manager_cls) -> bool:
    """Make ``task_manager_cls.initialize_tasks`` always index :data:`TASKS_DIR`. Returns success."""
    if getattr(task_manager_cls, "_earthsci_patched", False):
        return True
    original = getattr(task_manager_cls, "initialize_tasks", None)
    if original is None:
        _warn("lmms-eval's TaskManager has no `initialize_tasks` any more; our tasks are not registered.")
        return False
    params = inspect.signature(original).parameters
    if "include_path" not in params:
        _warn("TaskManager.initialize_tasks no longer takes `include_path`; our tasks are not registered.")
        return False

    @functools.wraps(original)
    def initialize_tasks(self, include_path=None, *args, **kwargs):
        return original(self, _with_our_tasks(include_path), *args, **kwargs)

    task_manager_cls.initialize_tasks = initialize_tasks
    task_manager_cls._earthsci_patched = True
    return True


def register():
    """Entry point of the ``lmms_eval.models`` group: patch lmms-eval, register no model."""
    try:
        from lmms_eval.tasks import TaskManager
    except Exception as exc:  # lmms-eval import itself failing is not ours to hide, but say so
        _warn(f"could not import lmms_eval.tasks ({exc!r}).")
        return []
    patch_task_manager(TaskManager)
    install_runtime_hooks()
    return []


_RUNTIME_HOOKS = False


def install_runtime_hooks() -> None:
    """Everything besides task indexing that a run of our tasks needs, whatever route started it
    (entry point, ``--include_path``, the ``run`` wrapper; see :func:`core.hooks.ensure_runtime_hooks`):
    log forwarding, the mirror/validation hook, the judge pass and a clean exit on every rank. Idempotent."""
    global _RUNTIME_HOOKS
    if _RUNTIME_HOOKS:
        return
    _RUNTIME_HOOKS = True
    from lmms_eval_earthsci.core.hooks import forward_logs, recover_killed_response_runs, redact_hf_token, release_distributed_at_exit

    forward_logs()
    redact_hf_token()
    release_distributed_at_exit()
    recover_killed_response_runs()  # nothing to do on lmms-eval versions without the layered cache

    from lmms_eval_earthsci.core.data import install_mirror_hook

    if not install_mirror_hook():
        _warn("the local-mirror hook could not be installed; EARTHSCI_DATA_MIRROR is ignored.")

    from lmms_eval_earthsci.core.judge_pass import install_judge_hook

    if not install_judge_hook():
        logger.warning("lmms_eval_earthsci: the judge-pass hook could not be installed; judged metrics are computed one doc at a time.")


def is_registered() -> bool:
    from lmms_eval.tasks import TaskManager

    return bool(getattr(TaskManager, "_earthsci_patched", False))
