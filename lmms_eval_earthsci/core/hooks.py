"""Where our code meets lmms-eval's internals: the one place that patches them.

lmms-eval has no plugin hooks for what we need, so a few of its methods are wrapped (once, idempotently,
each recording a marker on the class): ``TaskManager.initialize_tasks`` (task registration),
``ConfigurableTask.download`` (local mirror) and ``ConfigurableTask.apply_filters`` (the judge pass).
The modules that own those behaviours (``registration``, ``core.data``, ``core.judge_pass``) build
their wrappers with :func:`wrap_task_method`; nothing here imports them, so there is no import circle.

:func:`forward_logs` sends our ``logging`` records to lmms-eval's loguru logger, so that our INFO lines
(judge summaries, mirror loads) appear in the run's log like lmms-eval's own.

:func:`release_distributed_at_exit`: lmms-eval never destroys the ``torch.distributed`` process group it
creates; a gloo group still alive while the interpreter tears down can abort a rank after its results
were saved ("terminate called without an active exception", exit 1). At exit, after every rank has
passed lmms-eval's final barrier, the group is destroyed (a local operation, no collective).
"""

from __future__ import annotations

import atexit
import functools
import logging
import sys

LOGGER_NAME = "lmms_eval_earthsci"


def wrap_task_method(name: str, marker: str, make_wrapper, requires: tuple[str, ...] = ()) -> bool:
    """Replace ``ConfigurableTask.<name>`` by ``make_wrapper(original)`` once (``marker`` records it).
    False, changing nothing, if lmms-eval no longer has the method or the attributes in ``requires``."""
    try:
        from lmms_eval.api.task import ConfigurableTask
    except Exception:  # pragma: no cover - lmms-eval layout changed
        return False
    if getattr(ConfigurableTask, marker, False):
        return True
    original = getattr(ConfigurableTask, name, None)
    if original is None or not all(hasattr(ConfigurableTask, r) for r in requires):
        return False
    setattr(ConfigurableTask, name, functools.wraps(original)(make_wrapper(original)))
    setattr(ConfigurableTask, marker, True)
    return True


class _ToLoguru(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            from loguru import logger

            # point loguru at our calling line, not at this handler (loguru's documented recipe)
            frame, depth = sys._getframe(1), 1
            while frame is not None and frame.f_code.co_filename == logging.__file__:
                frame, depth = frame.f_back, depth + 1
            logger.opt(depth=depth, exception=record.exc_info if record.exc_info else None).log(record.levelname, record.getMessage())
        except Exception:
            self.handleError(record)


def forward_logs(level: int = logging.INFO) -> bool:
    """Route the ``lmms_eval_earthsci`` logger to loguru (lmms-eval's logger), at ``level``. Idempotent;
    False (logging left as it is) when loguru is not importable."""
    try:
        import loguru  # noqa: F401
    except ImportError:  # pragma: no cover
        return False
    log = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h, _ToLoguru) for h in log.handlers):
        # propagation stays on (pytest's caplog, a lab's own logging config); with a handler here,
        # Python's last-resort stderr handler no longer prints our records a second time
        log.addHandler(_ToLoguru())
    log.setLevel(level)
    return True


def redact_hf_token() -> bool:
    """Mask ``HF_TOKEN`` in every loguru record: lmms-eval's CLI logs it in clear at INFO ("Evaluation
    tracker args: {..., 'token': 'hf_...'}", ``lmms_eval.__main__.cli_evaluate_single``). Idempotent;
    False when loguru is not importable."""
    try:
        from loguru import logger
    except ImportError:  # pragma: no cover
        return False
    import os

    previous = getattr(getattr(logger, "_core", None), "patcher", None)
    if getattr(previous, "_earthsci_redacts", False):
        return True

    def patch(record):
        if previous is not None:  # keep a patcher someone else installed
            previous(record)
        for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            token = os.environ.get(name)
            if token and token in record["message"]:
                record["message"] = record["message"].replace(token, "***")

    patch._earthsci_redacts = True
    logger.configure(patcher=patch)
    return True


_EXIT_HOOK = False


def ensure_runtime_hooks() -> None:
    """Called when a benchmark module is imported: if lmms-eval is loading our tasks (its task module is
    imported), install every runtime hook now. This makes the routes that bypass our entry point
    (``--include_path``, ``lmms-eval-earthsci run``, a hand-built ``TaskManager``) as whole as the
    automatic one: lmms-eval imports these modules while it reads the task YAMLs, before any dataset is
    loaded. Cheap and idempotent; does nothing outside lmms-eval."""
    if "lmms_eval.api.task" not in sys.modules:
        return
    from lmms_eval_earthsci.registration import install_runtime_hooks

    install_runtime_hooks()


def _release_distributed() -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # exiting anyway; never turn a clean exit into a traceback
        pass


def release_distributed_at_exit() -> None:
    """Destroy the process group at interpreter exit (idempotent; see the module docstring)."""
    global _EXIT_HOOK
    if not _EXIT_HOOK:
        _EXIT_HOOK = True
        atexit.register(_release_distributed)
