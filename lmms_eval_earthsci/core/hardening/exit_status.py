"""The process's exit status: what the ledger's notes come to (:func:`..upstream.ledger.status`), set at exit.

lmms-eval's CLI exits 0 whatever went wrong. An ``atexit`` handler registered early (so it runs after lmms-eval has
written its outputs and after the later handlers, the judge's last lines among them) prints the ledger's last lines
and ends the process with its status. The status can only be set there with ``os._exit``: the handler first flushes
what the handlers it then skips would (our patch records, logging, loguru, ``weakref.finalize``,
``multiprocessing``). Without the hardening (``EARTHSCI_HARDENING=0``) nothing sets it."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import weakref

from lmms_eval_earthsci.core.hardening.inventory import ENTRIES
from lmms_eval_earthsci.core.upstream import ledger
from lmms_eval_earthsci.core.upstream.patching import dump as patch_records
from lmms_eval_earthsci.core.upstream.patching import register


def stop_nothing_left() -> None:
    """Every requested task was left out: the lines now, and exit 2 before the first doc."""
    ledger.forget_requested()  # each is named by its own line
    lines, code = ledger.take()
    ledger.say("\n".join(["lmms_eval_earthsci: none of the requested tasks could load; nothing to run", *lines]))
    raise SystemExit(code)


def _flush_what_exit_skips() -> None:
    for flush in (patch_records, _loguru_complete, logging.shutdown, weakref.finalize._exitfunc, _multiprocessing_exit):  # type: ignore[attr-defined]
        try:
            flush()
        except Exception:  # exiting anyway
            pass
    sys.stdout.flush()
    sys.stderr.flush()


def _loguru_complete() -> None:
    loguru = sys.modules.get("loguru")
    if loguru is not None:
        loguru.logger.complete()


def _multiprocessing_exit() -> None:
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util._exit_function()


def exit_with_status() -> None:
    """The exit handler: the noted lines, then the process ends with the ledger's status when it is not 0."""
    lines, code = ledger.take()
    if lines:
        ledger.say("\n" + "\n".join(lines))
    if not code:
        return
    _flush_what_exit_skips()
    os._exit(code)


def install() -> None:
    """The exit handler (once per process). Installed first of the hardening's handlers: atexit runs the last
    registered first, and this one must run after those that print a run's last lines or release its process group."""
    register(ENTRIES["exit status"], "atexit:register", lambda: atexit.register(exit_with_status))
