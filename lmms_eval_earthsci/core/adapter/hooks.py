"""The runtime hooks a run of our tasks needs, whatever route started it, installed once per process by
:func:`install_runtime_hooks`: log forwarding, HF-token redaction, the local-mirror and record-validation
hook (:mod:`.task_data`), the concurrent judge pass (:mod:`.judge_hook`), the response-cache recovery and a
clean exit on every rank. The entry point (``registration.register``) calls it; so does every benchmark
module when lmms-eval imports it (:func:`ensure_runtime_hooks`), which covers ``--include_path``, the
``run`` wrapper and a hand-built ``TaskManager``. The lmms-eval methods they wrap are wrapped through
:func:`.patching.wrap_task_method`.

:func:`forward_logs` sends our ``logging`` records to lmms-eval's loguru logger, so that our INFO lines
(judge summaries, mirror loads) appear in the run's log like lmms-eval's own.

:func:`release_distributed_at_exit`: lmms-eval never destroys the ``torch.distributed`` process group it
creates; a gloo group still alive while the interpreter tears down can abort a rank after its results
were saved ("terminate called without an active exception", exit 1). At exit, after every rank has
passed lmms-eval's final barrier, the group is destroyed (a local operation, no collective).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import glob
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from types import FrameType
from typing import Any

from lmms_eval_earthsci.core.adapter.judge_hook import install_judge_hook
from lmms_eval_earthsci.core.adapter.layout_probe import install_layout_probe
from lmms_eval_earthsci.core.adapter.passthrough import install_passthrough
from lmms_eval_earthsci.core.adapter.patching import entry, target_problem, warn_missing
from lmms_eval_earthsci.core.adapter.run_status import install_exit_status
from lmms_eval_earthsci.core.adapter.task_data import install_mirror_hook, install_record_gate
from lmms_eval_earthsci.core.adapter.unavailable import install_clt_hook, install_unavailable_hook
from lmms_eval_earthsci.core.data.loading import MIRROR_ENV
from lmms_eval_earthsci.core.settings import ON_DECLARE, declared, enforce, read_flag
from lmms_eval_earthsci.core.settings import read as read_setting

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


def redact_hf_token() -> bool:
    """Mask ``HF_TOKEN`` in every loguru record: lmms-eval's CLI logs it in clear at INFO ("Evaluation
    tracker args: {..., 'token': 'hf_...'}", ``lmms_eval.__main__.cli_evaluate_single``). Idempotent;
    False when loguru is not importable."""
    try:
        from loguru import logger  # noqa: PLC0415 - loguru (~40 ms), optional: lmms-eval's logger
    except ImportError:  # pragma: no cover
        return False
    previous = getattr(getattr(logger, "_core", None), "patcher", None)
    if getattr(previous, "_earthsci_redacts", False):
        return True

    def patch(record: Any) -> None:
        if previous is not None:  # keep a patcher someone else installed
            previous(record)
        for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            token = os.environ.get(name)
            if token and token in record["message"]:
                record["message"] = record["message"].replace(token, "***")

    patch._earthsci_redacts = True  # type: ignore[attr-defined]  # a marker on the function: installed once
    logger.configure(patcher=patch)
    return True


_EXIT_HOOK = False

RECOVER_ENV = "EARTHSCI_RECOVER_RESPONSE_CACHE"
_RECOVERED_MARKER = ".earthsci_recovered"


def recover_killed_response_runs() -> bool:
    """lmms-eval's ``--use_cache`` writes a run's responses to ``runs/<id>/rank_*.db`` and merges them into
    ``cache.db`` only when the run ends: a run killed on its way (``kill -9``, a preempted node) never
    marks its shard ready, so the rerun asks the model for everything again. Before lmms-eval opens the
    cache, the shards of runs that were never merged are merged into ``cache.db`` (lmms-eval's own
    ``merge_shards``, INSERT OR IGNORE under its merge lock; entries are keyed by request, task config and
    model, so only identical requests reuse them) and marked, once. ``EARTHSCI_RECOVER_RESPONSE_CACHE=0``
    turns it off. Idempotent; False, changing nothing, when lmms-eval's cache internals are gone."""
    try:
        from lmms_eval.caching import response_cache as rc  # noqa: PLC0415 - lmms-eval's response cache (~50 ms); absent before 0.7.3
    except Exception:
        return False
    cls = rc.ResponseCache
    if getattr(cls, "_earthsci_recover", False):
        return True
    needed = ("_LAYERED_RUNS_DIRNAME", "_LAYERED_MERGED_MARKER", "_LAYERED_LOCK_DIRNAME", "_merge_lock")
    if not all(hasattr(rc, n) for n in needed) or not hasattr(cls, "merge_shards") or not hasattr(cls, "create"):
        return False
    original = cls.create.__func__

    @functools.wraps(original)
    def create(klass: Any, cache_root: str, *args: Any, **kwargs: Any) -> Any:
        if read_flag(RECOVER_ENV, True):
            try:
                _recover_runs(rc, cache_root)
            except Exception:  # the cache still works as lmms-eval made it
                logging.getLogger(LOGGER_NAME).warning("lmms_eval_earthsci: could not recover unfinished runs of the response cache", exc_info=True)
        return original(klass, cache_root, *args, **kwargs)

    cls.create = classmethod(create)
    cls._earthsci_recover = True
    return True


def _recover_runs(rc: Any, cache_root: str) -> None:
    root = os.path.abspath(os.path.dirname(os.path.abspath(cache_root)) if cache_root.endswith(".db") else cache_root)
    runs = os.path.join(root, rc._LAYERED_RUNS_DIRNAME)
    if not os.path.isdir(runs):
        return

    def unfinished(entry: os.DirEntry) -> bool:
        return entry.is_dir() and not entry.name.startswith(".") and not any(os.path.exists(os.path.join(entry.path, m)) for m in (rc._LAYERED_MERGED_MARKER, _RECOVERED_MARKER))

    pending = sorted(e.path for e in os.scandir(runs) if unfinished(e))
    if not pending:
        return
    merged = 0
    with rc._merge_lock(os.path.join(runs, rc._LAYERED_LOCK_DIRNAME), timeout_seconds=60):
        for path in pending:
            shards = sorted(glob.glob(os.path.join(path, "rank_*.db")))
            if shards:
                merged += rc.ResponseCache.merge_shards(shards, os.path.join(root, "cache.db"))
            with open(os.path.join(path, _RECOVERED_MARKER), "w") as f:
                f.write("merged by lmms_eval_earthsci before a later run\n")
    logging.getLogger(LOGGER_NAME).info(
        "lmms_eval_earthsci: response cache %s: %d response(s) of %d unfinished run(s) made reusable (lmms-eval merges a run's responses only when it ends)", root, merged, len(pending)
    )


FALLBACK_HINT = (
    "Run our tasks with `lmms-eval --include_path \"$(lmms-eval-earthsci tasks-dir)\" ...`, or use the "
    "`lmms-eval-earthsci run ...` wrapper, or in Python `TaskManager(include_path=lmms_eval_earthsci.TASKS_DIR)`."
)


class RegistrationWarning(UserWarning):
    """lmms-eval internals changed: automatic registration (or a runtime hook) could not be applied."""


def warn_registration(msg: str) -> None:
    text = f"lmms_eval_earthsci: {msg} {FALLBACK_HINT}"
    warnings.warn(text, RegistrationWarning, stacklevel=3)
    logging.getLogger(LOGGER_NAME).warning(text)


_RUNTIME_HOOKS = False


class _TorchvisionFallback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "requires torchvision (not installed); falling back to" not in record.getMessage()


def quiet_torchvision_fallback() -> None:
    """transformers' warning that an image processor falls back to its PIL backend without torchvision,
    dropped: on CPU machines we remove torchvision on purpose (README, "Install"), and the PIL backend is
    what the models then use. Only that message; nothing is imported."""
    logger = logging.getLogger("transformers.utils.import_utils")
    if not any(isinstance(f, _TorchvisionFallback) for f in logger.filters):
        logger.addFilter(_TorchvisionFallback())


def install_runtime_hooks() -> None:
    """Everything besides task indexing that a run of our tasks needs (see the module docstring).
    Idempotent."""
    global _RUNTIME_HOOKS
    if _RUNTIME_HOOKS:
        return
    _RUNTIME_HOOKS = True
    # a wrong EARTHSCI_* value stops the process here, before any task is built (SettingsError, exit 2)
    enforce(declared(), "run")
    forward_logs()
    quiet_torchvision_fallback()
    # each hook is an entry of core.adapter.patching.INVENTORY: a missing target is said once, naming it
    if not redact_hf_token():
        warn_missing("HF token redaction", "lmms-eval's log may show HF_TOKEN in clear")
    install_exit_status()  # before the handlers it must run after (atexit runs the last registered first)
    release_distributed_at_exit()
    if not recover_killed_response_runs() and _has_layered_cache():
        warn_missing("response-cache recovery", "a killed --use_cache run's responses are asked for again")
    install_data_hooks()
    if not install_judge_hook():
        warn_missing("judge pass", "judged metrics are computed one doc at a time")
    if not install_layout_probe():
        warn_missing("layout probe", "the run does not check that each task's layout reaches the model (lmms-eval-earthsci check-model does)")
    if not install_clt_hook() and _has_clt_errors():
        warn_missing("CLT errors of a null metric", "a metric with no value may show a CLT standard error of 0.0")
    if not install_unavailable_hook():
        warn_missing("aggregation", "a metric with no value is null without its reason, and 'score,none: []' shows in the results")
    if not install_passthrough():
        warn_missing("image pass-through", "server routes re-encode every image (lmms-eval's encode: slower, the same pixels)")


def install_data_hooks() -> None:
    """The local-mirror hook and the record gate: what building our tasks and reading their docs needs
    (a run's, and ``report``'s for the figures). Idempotent."""
    if not install_mirror_hook():
        if read_setting(MIRROR_ENV):
            raise SystemExit(f"lmms_eval_earthsci: {MIRROR_ENV} is set but lmms-eval's ConfigurableTask.download cannot be wrapped "
                             f"({target_problem(entry('local mirror'))}); the run would read the Hub's data instead of your mirror. See lmms_eval_earthsci/core/adapter/patching.py.")
        warn_missing("local mirror", f"{MIRROR_ENV} cannot be used")
    if not install_record_gate():  # installed by the mirror hook; asked again to know
        warn_missing("bad-record gate", "invalid records stop the run at the first task that has them, not all tasks at once")


_DATA_ONLY = threading.local()


@contextlib.contextmanager
def data_hooks_only() -> Iterator[None]:
    """Inside the block this thread builds tasks to read their data and evaluates nothing (``report``'s
    figures): a task module lmms-eval imports installs :func:`install_data_hooks`, not a run's hooks (no
    judge pass, log forwarding or exit hook, and no check of settings only a run reads)."""
    before = getattr(_DATA_ONLY, "on", False)
    _DATA_ONLY.on = True
    try:
        yield
    finally:
        _DATA_ONLY.on = before


def _has_clt_errors() -> bool:
    """Whether this lmms-eval computes CLT standard errors (0.7.3 and later)."""
    try:
        from lmms_eval.evaluator_utils import TaskOutput  # noqa: PLC0415 - lmms-eval's evaluator loads in seconds; absent parts on older versions
    except Exception:
        return False
    return hasattr(TaskOutput, "calculate_clt_aggregate_metric")


def _has_layered_cache() -> bool:
    """Whether this lmms-eval has the response cache the recovery wraps (0.7.3 and later)."""
    try:
        from lmms_eval.caching import response_cache  # noqa: PLC0415 - lmms-eval's response cache (~50 ms); absent before 0.7.3
    except Exception:
        return False
    return hasattr(response_cache, "ResponseCache") and hasattr(response_cache.ResponseCache, "create")


def _lmms_eval_loads_tasks() -> bool:
    """Whether this process is lmms-eval loading tasks (its task module is imported)."""
    return "lmms_eval.api.task" in sys.modules


def _check_in_a_run(new: list) -> None:
    """A benchmark's newly declared settings, checked at once inside an lmms-eval run (lmms-eval is loading
    our tasks): a wrong value stops it (exit 2)."""
    if _lmms_eval_loads_tasks():
        enforce(new, "run")


if _check_in_a_run not in ON_DECLARE:
    ON_DECLARE.append(_check_in_a_run)


def ensure_runtime_hooks() -> None:
    """Called when a benchmark module is imported: if lmms-eval is loading our tasks (its task module is
    imported), install every runtime hook now. This makes the routes that bypass our entry point
    (``--include_path``, ``lmms-eval-earthsci run``, a hand-built ``TaskManager``) as whole as the
    automatic one: lmms-eval imports these modules while it reads the task YAMLs, before any dataset is
    loaded. Cheap and idempotent; does nothing outside lmms-eval."""
    if not _lmms_eval_loads_tasks():
        return
    if getattr(_DATA_ONLY, "on", False):
        install_data_hooks()
        return
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
