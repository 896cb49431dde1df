"""Run-wide hardening: what changes lmms-eval's behaviour for the whole process, beyond what running our tasks
needs. A lab that wants lmms-eval's own behaviour sets ``EARTHSCI_HARDENING=0``: our tasks still run (the
integration, ``core.adapter``), a task of ours that cannot load is still left out with its line, and the
process exits as lmms-eval decides.

Its pieces, each an entry of ``core/hardening/inventory.py`` (:data:`.inventory.ENTRIES`):

- :mod:`.exit_codes`      the run's exit codes: names checked before the model loads, tasks not ours that
  cannot load left out, nothing left to run, what stopped the run, the exit handler;
- :mod:`.libyaml`         the task index parsed with libyaml's C parser;
- :mod:`.response_cache`  the responses of killed ``--use_cache`` runs merged before a rerun;
- :mod:`.redaction`       the HF token masked in lmms-eval's log;
- :mod:`.teardown`        the process group released at exit;
- :mod:`.passthrough`     a dataset image's stored bytes sent as they are on server routes.

What this part may touch: the lmms-eval, loguru and torch objects its inventory entries name, through
:func:`..upstream.patching.patch` / :func:`..upstream.patching.register`; it reads the ledger
(:mod:`..upstream.ledger`: it notes what it checks) and sets the exit status (:mod:`.exit_status`). Nothing in the
integration or the model boundary imports it: ``core.activation`` installs it, with :func:`install`. README.md beside
this file shows the part in ten lines.
"""

from __future__ import annotations

from typing import Any

from lmms_eval_earthsci.core.hardening import exit_codes, libyaml, passthrough, redaction, response_cache, teardown
from lmms_eval_earthsci.core.hardening.inventory import ENTRIES
from lmms_eval_earthsci.core.settings import read_flag
from lmms_eval_earthsci.core.upstream.inventory import warn_missing

#: ``0`` turns the whole part off (README, "Settings")
SETTING = "EARTHSCI_HARDENING"


def enabled() -> bool:
    return read_flag(SETTING, True)


def install(task_manager_cls: Any = None) -> bool:
    """Every piece (the ``TaskManager`` ones when ``task_manager_cls`` is given: registration), unless
    ``EARTHSCI_HARDENING=0``. Idempotent: a later call (the run's hooks after registration) installs only
    what is new (each piece asks the patch records whether it is in place); returns whether the part is on. Call
    it before other exit handlers are registered (the exit handler must run after them)."""
    if not enabled():
        return False
    exit_codes.install(task_manager_cls)
    if task_manager_cls is not None:
        libyaml.index_on_libyaml()  # a speed-up only: without libyaml lmms-eval's own loader stays
    if not redaction.redact_hf_token():
        warn_missing(ENTRIES["HF token redaction"], "lmms-eval's log may show HF_TOKEN in clear")
    teardown.release_distributed_at_exit()
    if not response_cache.recover_killed_response_runs() and response_cache.has_layered_cache():
        warn_missing(ENTRIES["response-cache recovery"], "a killed --use_cache run's responses are asked for again")
    if not passthrough.install_passthrough():
        warn_missing(ENTRIES["image pass-through"], "server routes re-encode every image (lmms-eval's encode: slower, the same pixels)")
    return True
