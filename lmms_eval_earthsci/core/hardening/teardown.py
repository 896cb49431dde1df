"""The process group released at exit (inventory: "process group at exit"): lmms-eval never destroys the
``torch.distributed`` process group it creates; a gloo group still alive while the interpreter tears down can
abort a rank after its results were saved ("terminate called without an active exception", exit 1). At exit,
after every rank has passed lmms-eval's final barrier, the group is destroyed (a local operation, no
collective)."""

from __future__ import annotations

import atexit
import sys

from lmms_eval_earthsci.core.hardening.inventory import ENTRIES
from lmms_eval_earthsci.core.upstream.patching import register


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
    """Destroy the process group at interpreter exit (idempotent)."""
    register(ENTRIES["process group at exit"], "torch.distributed:destroy_process_group", lambda: atexit.register(_release_distributed))
