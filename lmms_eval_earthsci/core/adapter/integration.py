"""The integration's run hooks, installed once per process by :func:`install` (``core.activation`` calls it):
our log records forwarded to lmms-eval's loguru logger, transformers' torchvision-fallback warning dropped,
the local mirror and the record gate (:mod:`.task_data`), the concurrent judge pass (:mod:`.judge_hook`),
and a metric's reason for null after aggregation (:mod:`.unavailable`).

:func:`forward_logs` sends our ``logging`` records to lmms-eval's loguru logger, so that our INFO lines
(judge summaries, mirror loads) appear in the run's log like lmms-eval's own."""

from __future__ import annotations

import logging
import sys
from types import FrameType

from lmms_eval_earthsci.core.adapter.inventory import ENTRIES
from lmms_eval_earthsci.core.adapter.judge_hook import install_judge_hook
from lmms_eval_earthsci.core.adapter.task_data import install_mirror_hook, install_record_gate
from lmms_eval_earthsci.core.adapter.unavailable import install_clt_hook, install_unavailable_hook
from lmms_eval_earthsci.core.data.loading import MIRROR_ENV
from lmms_eval_earthsci.core.settings import read_setting
from lmms_eval_earthsci.core.upstream.inventory import target_problem, warn_missing
from lmms_eval_earthsci.core.upstream.patching import register

LOGGER_NAME = "lmms_eval_earthsci"


class _ToLoguru(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            from loguru import logger  # noqa: PLC0415 - loguru (~40 ms, lmms-eval's logger), only when a record is forwarded

            # point loguru at our calling line, not at this handler (loguru's documented recipe)
            frame: FrameType | None = sys._getframe(1)
            depth = 1
            while frame is not None and frame.f_code.co_filename == logging.__file__:
                frame, depth = frame.f_back, depth + 1
            logger.opt(depth=depth, exception=record.exc_info if record.exc_info else None).log(record.levelname, record.getMessage())
        except Exception:
            self.handleError(record)


def forward_logs(level: int = logging.INFO) -> bool:
    """Route the ``lmms_eval_earthsci`` logger to loguru (lmms-eval's logger), at ``level``. Idempotent;
    False (logging left as it is) when loguru is not importable."""
    try:
        import loguru  # noqa: PLC0415, F401 - optional: is loguru (lmms-eval's logger) there
    except ImportError:  # pragma: no cover
        return False
    log = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h, _ToLoguru) for h in log.handlers):
        # propagation stays on (pytest's caplog, a lab's own logging config); with a handler here,
        # Python's last-resort stderr handler no longer prints our records a second time
        log.addHandler(_ToLoguru())
    log.setLevel(level)
    return True


class _TorchvisionFallback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "requires torchvision (not installed); falling back to" not in record.getMessage()


def quiet_torchvision_fallback() -> None:
    """transformers' warning that an image processor falls back to its PIL backend without torchvision,
    dropped: on CPU machines we remove torchvision on purpose (README, "Install"), and the PIL backend is
    what the models then use. Only that message; nothing is imported."""
    logger = logging.getLogger("transformers.utils.import_utils")
    # another library's logger: a recorded registration (its inventory entry says why), once per process
    register(ENTRIES["quiet torchvision fallback"], "transformers.utils.import_utils:logger", lambda: logger.addFilter(_TorchvisionFallback()))


def install_data_hooks() -> None:
    """The local-mirror hook and the record gate: what building our tasks and reading their docs needs
    (a run's, and ``report``'s for the figures). Idempotent."""
    if not install_mirror_hook():
        if read_setting(MIRROR_ENV):
            raise SystemExit(f"lmms_eval_earthsci: {MIRROR_ENV} is set but lmms-eval's ConfigurableTask.download cannot be wrapped "
                             f"({target_problem(ENTRIES['local mirror'])}); the run would read the Hub's data instead of your mirror. See lmms_eval_earthsci/core/adapter/inventory.py.")
        warn_missing(ENTRIES["local mirror"], f"{MIRROR_ENV} cannot be used")
    if not install_record_gate():  # installed by the mirror hook; asked again to know
        warn_missing(ENTRIES["bad-record gate"], "invalid records stop the run at the first task that has them, not all tasks at once")


def _has_clt_errors() -> bool:
    """Whether this lmms-eval computes CLT standard errors (0.7.3 and later)."""
    try:
        from lmms_eval.evaluator_utils import TaskOutput  # noqa: PLC0415 - lmms-eval's evaluator loads in seconds; absent parts on older versions
    except Exception:
        return False
    return hasattr(TaskOutput, "calculate_clt_aggregate_metric")


def install() -> None:
    """Everything of the integration a run needs besides task indexing (see the module docstring)."""
    forward_logs()
    quiet_torchvision_fallback()
    install_data_hooks()
    if not install_judge_hook():
        warn_missing(ENTRIES["judge pass"], "judged metrics are computed one doc at a time")
    if not install_clt_hook() and _has_clt_errors():
        warn_missing(ENTRIES["CLT errors of a null metric"], "a metric with no value may show a CLT standard error of 0.0")
    if not install_unavailable_hook():
        warn_missing(ENTRIES["aggregation"], "a metric with no value is null without its reason, and 'score,none: []' shows in the results")
