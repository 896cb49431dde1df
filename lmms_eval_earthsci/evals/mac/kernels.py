"""MAC's vectorised bootstrap kernel (``report``'s intervals): accuracy over the per-doc records."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lmms_eval_earthsci.core.scoring.stats import mean_stat


def _acc_encode(items: Sequence[Any]) -> tuple[np.ndarray, ...]:
    v = np.array([float(bool(i.get("correct"))) if isinstance(i, Mapping) else math.nan for i in items], dtype=float)
    return (np.nan_to_num(v) * 100.0, (~np.isnan(v)).astype(float))


def kernels() -> dict:
    return {"lmms_eval_earthsci.evals.mac.tasks.mac_acc": (_acc_encode, mean_stat)}
