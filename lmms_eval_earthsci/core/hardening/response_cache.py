"""Response-cache recovery (inventory: "response-cache recovery"): lmms-eval's ``--use_cache`` merges a run's
response shards only when the run ends; the shards of runs killed on their way are merged before lmms-eval
opens the cache (``EARTHSCI_RECOVER_RESPONSE_CACHE=0`` turns it off)."""

from __future__ import annotations

import functools
import glob
import logging
import os
from typing import Any

from lmms_eval_earthsci.core.hardening.inventory import ENTRIES
from lmms_eval_earthsci.core.settings import read_flag
from lmms_eval_earthsci.core.upstream.patching import installed, patch, where

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
    if installed(ENTRIES["response-cache recovery"], where(cls, "create")):
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
                logging.getLogger("lmms_eval_earthsci").warning("lmms_eval_earthsci: could not recover unfinished runs of the response cache", exc_info=True)
        return original(klass, cache_root, *args, **kwargs)

    patch(cls, "create", classmethod(create), entry=ENTRIES["response-cache recovery"])
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
    logging.getLogger("lmms_eval_earthsci").info(
        "lmms_eval_earthsci: response cache %s: %d response(s) of %d unfinished run(s) made reusable (lmms-eval merges a run's responses only when it ends)", root, merged, len(pending)
    )


def has_layered_cache() -> bool:
    """Whether this lmms-eval has the response cache the recovery wraps (0.7.3 and later)."""
    try:
        from lmms_eval.caching import response_cache  # noqa: PLC0415 - lmms-eval's response cache (~50 ms); absent before 0.7.3
    except Exception:
        return False
    return hasattr(response_cache, "ResponseCache") and hasattr(response_cache.ResponseCache, "create")
