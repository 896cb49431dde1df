"""MuSciClaims' vectorised bootstrap kernels (``report``'s intervals and paired comparisons), every one
resampling base claims, the unit a claim's variants share (a cluster bootstrap): per-class and macro
P/R/F1 from per-claim class counts, and the flip rates by claim pair (the unit they are defined on)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lmms_eval_earthsci.core.scoring.stats import mean_stat
from lmms_eval_earthsci.evals.musciclaims.benchmark import DOMAINS, PANEL_SLICE_DOMAINS, PANEL_SLICE_KEYS, SLICE_KEYS
from lmms_eval_earthsci.evals.musciclaims.tasks import panel_classes, record_rows

_MC_LABELS = ("SUPPORT", "NEUTRAL", "CONTRADICT")


def _mc_rows(items: Sequence[Any]) -> list[tuple]:
    return [(record_rows([i]) or [(None,) * 6])[0] for i in items]


def _clusters(rows: Sequence[tuple]) -> tuple[np.ndarray, int]:
    """Each row's unit: its base claim (a claim's SUPPORT / CONTRADICT / NEUTRAL variants are one unit,
    not independent docs: the task YAMLs' ``cluster_key``), in order of first appearance (the same order
    in two runs of the same docs); a row without one is its own unit."""
    index: dict = {}
    units = [index.setdefault(("claim", r[2]) if r[2] is not None else ("doc", i), len(index)) for i, r in enumerate(rows)]
    return np.array(units, dtype=int), len(index)


def _classes_encode(domain: str | None = None, panels: str | None = None):
    def encode(items):
        """Per base claim (the bootstrap's unit) and class: gold, predicted and both counts of its docs.
        Counts add up, so the statistic over resampled claims is the aggregation over their docs."""
        rows = _mc_rows(items)
        index = {lab: k for k, lab in enumerate(_MC_LABELS)}
        gold = np.array([index.get(r[0], -1) for r in rows])
        pred = np.array([index.get(r[1], -1) for r in rows])
        classes = panel_classes(rows) if panels is not None else [None] * len(rows)
        keep = np.array([r[0] is not None and (domain is None or r[4] == domain) and (panels is None or c == panels) for r, c in zip(rows, classes)], dtype=float)
        units, n = _clusters(rows)
        out = []
        for col in ([gold == k for k in range(3)], [pred == k for k in range(3)], [(gold == k) & (pred == k) for k in range(3)]):
            out += [np.bincount(units, weights=c * keep, minlength=n) for c in col]
        return tuple(out)

    return encode


def _classes_stat(key: str):
    """Per-class or macro P/R/F1 (percent) from the per-claim counts, as ``core.scoring.metrics.precision_recall_f1``
    (undefined ratios 0; a prediction outside the labels is a miss and nobody's false positive)."""

    def stat(g0, g1, g2, p0, p1, p2, t0, t1, t2, axis: int = -1):
        ps, rs, fs = [], [], []
        for g, p, t in ((g0, p0, t0), (g1, p1, t1), (g2, p2, t2)):
            tp = np.sum(t, axis=axis)
            fp = np.sum(p, axis=axis) - tp
            fn = np.sum(g, axis=axis) - tp
            with np.errstate(invalid="ignore", divide="ignore"):
                prec = np.where(tp + fp > 0, tp / np.where(tp + fp > 0, tp + fp, 1), 0.0)
                rec = np.where(tp + fn > 0, tp / np.where(tp + fn > 0, tp + fn, 1), 0.0)
                f1 = np.where(prec + rec > 0, 2 * prec * rec / np.where(prec + rec > 0, prec + rec, 1), 0.0)
            ps.append(prec)
            rs.append(rec)
            fs.append(f1)
        total = np.sum(g0 + g1 + g2, axis=axis)
        kind, _, label = key.partition("_")
        table = {"precision": ps, "recall": rs, "f1": fs}
        if kind == "macro":
            out = sum(table[label]) / 3.0
        else:
            out = table[kind][_MC_LABELS.index(label.upper())]
        return np.where(total > 0, 100.0 * out, np.nan)

    return stat


def _flip_encode(correct_only: bool):
    def encode(items):
        """Units are base claims (the pairs flip rates are defined on): value 1 if the pair flips (to
        SUPPORT->CONTRADICT for the correct flip rate), NaN for a claim whose pair is incomplete."""
        pairs: dict[str, dict] = {}
        for _gold, pred, base, variant, *_ in _mc_rows(items):
            if variant in ("support", "contra"):
                pairs.setdefault(str(base), {})[variant] = pred
        vals = []
        for p in pairs.values():
            if len(p) != 2:
                vals.append(math.nan)
            elif correct_only:
                vals.append(float(p["support"] == "SUPPORT" and p["contra"] == "CONTRADICT"))
            else:
                vals.append(float(p["support"] != p["contra"]))
        v = np.array(vals, dtype=float)
        return (np.nan_to_num(v) * 100.0, (~np.isnan(v)).astype(float))

    return encode



_PREFIX = "lmms_eval_earthsci.evals.musciclaims.tasks."


def kernels() -> dict:
    out = {_PREFIX + "flip_rate": (_flip_encode(False), mean_stat), _PREFIX + "correct_flip_rate": (_flip_encode(True), mean_stat)}
    for key in ("macro_f1", "macro_precision", "macro_recall") + tuple(f"{k}_{c.lower()}" for k in ("precision", "recall", "f1") for c in _MC_LABELS):
        out[_PREFIX + key] = (_classes_encode(), _classes_stat(key))
    for dom in DOMAINS:
        for key in ("macro_f1", *SLICE_KEYS):
            out[_PREFIX + f"{key}_{dom}"] = (_classes_encode(dom), _classes_stat(key))
    for panels in ("single", "multi"):
        for dom in (None, *PANEL_SLICE_DOMAINS):
            for key in PANEL_SLICE_KEYS:
                out[_PREFIX + f"{key}_{panels}_panel" + (f"_{dom}" if dom else "")] = (_classes_encode(dom, panels), _classes_stat(key))
    return out
