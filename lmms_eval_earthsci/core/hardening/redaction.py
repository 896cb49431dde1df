"""HF-token redaction (inventory: "HF token redaction"): lmms-eval's CLI logs the HF token in clear at INFO
("Evaluation tracker args: {..., 'token': 'hf_...'}", ``lmms_eval.__main__.cli_evaluate_single``); a loguru
patcher masks it in every record, keeping a patcher someone else installed."""

from __future__ import annotations

import os
from typing import Any

from lmms_eval_earthsci.core.hardening.inventory import ENTRIES
from lmms_eval_earthsci.core.upstream.patching import installed, register


def redact_hf_token() -> bool:
    """Mask ``HF_TOKEN`` (and ``HUGGING_FACE_HUB_TOKEN``) in every loguru record. Idempotent; False when
    loguru is not importable."""
    try:
        from loguru import logger  # noqa: PLC0415 - loguru (~40 ms), optional: lmms-eval's logger
    except ImportError:  # pragma: no cover
        return False
    if installed(ENTRIES["HF token redaction"]):
        return True
    previous = getattr(getattr(logger, "_core", None), "patcher", None)

    def patch(record: Any) -> None:
        if previous is not None:  # keep a patcher someone else installed
            previous(record)
        for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            token = os.environ.get(name)
            if token and token in record["message"]:
                record["message"] = record["message"].replace(token, "***")

    register(ENTRIES["HF token redaction"], "loguru:logger.configure", lambda: logger.configure(patcher=patch))
    return True
