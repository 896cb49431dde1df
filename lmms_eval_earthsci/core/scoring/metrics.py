"""Metrics: pure functions, plus the glue that turns breakdowns into real lmms-eval metrics.

How breakdowns become lmms-eval metrics
---------------------------------------
lmms-eval only aggregates metric names listed in a task's ``metric_list``. A benchmark module
declares its breakdown labels (fixed by the benchmark, from the spec); the task YAMLs list one metric
per label (``<prefix>_<field>_<label slug>``, see :func:`breakdown_key`), and ``process_results``
returns every one of those keys for every doc (:func:`breakdown_scores`): the doc's score under the
keys of its own labels, ``None`` under the others. :func:`mean_present` averages the non-None values.
Returning every key for every doc keeps lmms-eval's per-task sample count right (it takes it from
the last metric aggregated) and so keeps group ``weight_by_size`` averages exact.

The prefix (e.g. ``emma``) must not contain the headline metric's name (``emma_acc``): a group's
``aggregate_metric_list`` entry matches every task metric that *contains* its name, and averaging a
breakdown over subtasks weighted by subtask size would be wrong for labels that span subtasks.

Per-doc scores are percentages (100.0 / 0.0) so lmms-eval's CLT standard error is on the same scale
as the reported value.

lmms-eval's own paired comparison (``--baseline``, a paired t-test on a baseline run's samples JSONL)
reads one number per doc: the sample field named by the task's ``score_key`` (``"score"``, its default)
on its side, the first field whose name contains "score" on the baseline's side, and it takes both on a
0-1 scale (it multiplies means by 100). :func:`with_paired_score` puts that field first in a doc's
results: ``score``, the doc's value of the task's headline metric divided by 100 (right/wrong: 0 or 1;
MSEarth's 1-5 caption score: 0.01-0.05), so that lmms-eval's ``paired_baseline_score`` reads as the
headline metric. A doc without a value (no judge, a caption the judge failed on) has none.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# --------------------------------------------------------------------------- per-doc scores

#: the per-doc field of lmms-eval's ``score_key`` convention (module docstring)
PAIRED_SCORE = "score"


def with_paired_score(out: Mapping[str, Any], value: float | None) -> dict:
    """``out`` led by :data:`PAIRED_SCORE` = ``value`` / 100 (the doc's headline value, 0-100 scale),
    the first key so that lmms-eval's baseline loader finds it before any other "score" field; without
    the field when ``value`` is None."""
    rest = {k: v for k, v in out.items() if k != PAIRED_SCORE}
    return rest if value is None else {PAIRED_SCORE: value / 100.0, **rest}



def percent(correct: bool) -> float:
    return 100.0 if correct else 0.0


def score_of(item: Any, key: str = "score") -> Any:
    """A per-doc metric value: a number, or a dict carrying ``key``; None means "not in this slice"."""
    if isinstance(item, Mapping):
        return item.get(key)
    return item


def mean_present(items: Iterable[Any]) -> float | None:
    """Mean of the non-None values (dict items contribute their ``score``); None if there are none."""
    vals = [float(v) for v in (score_of(i) for i in items) if v is not None]
    return sum(vals) / len(vals) if vals else None


def group_mean(metrics: Sequence[Any], sizes: Sequence[int], weight_by_size: bool = True) -> float | None:
    """A group's pooled value from its subtasks' values (lmms-eval group ``aggregation`` callable):
    the size-weighted (or plain) mean over the subtasks that report the metric; None when none does
    (e.g. a judge metric without a configured judge), where lmms-eval's own ``mean`` would crash."""
    pairs = [(float(m), int(n)) for m, n in zip(metrics, sizes) if m is not None and not isinstance(m, str)]
    if not pairs:
        return None
    if weight_by_size:
        total = sum(n for _, n in pairs)
        return sum(m * n for m, n in pairs) / total if total else None
    return sum(m for m, _ in pairs) / len(pairs)


# --------------------------------------------------------------------------- breakdowns

_SLUG_RE = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=4096)
def slug(label: str) -> str:
    """``"Alignment, Orientation, & Position"`` -> ``"alignment_orientation_position"``."""
    s = _SLUG_RE.sub("_", str(label).lower()).strip("_")
    return s or "empty"


@functools.lru_cache(maxsize=4096)
def breakdown_key(prefix: str, field: str, label: str) -> str:
    return f"{prefix}_{field}_{slug(label)}"


def split_labels(value: Any, sep: str | None = None) -> list[str]:
    """A doc field as a list of labels: a list stays a list; a string is split on ``sep`` (multi-label
    fields) and stripped; None/empty gives no label."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = [str(v).strip() for v in value]
    elif sep:
        items = [p.strip() for p in str(value).split(sep)]
    else:
        items = [str(value).strip()]
    return [i for i in items if i]


def breakdown_keys(prefix: str, known: Mapping[str, Sequence[str]]) -> list[str]:
    """Every breakdown metric name a task reports, in declaration order."""
    return [breakdown_key(prefix, field, label) for field, labels in known.items() for label in labels]


def breakdown_scores(prefix: str, score: Any, doc_labels: Mapping[str, Iterable[str]], known: Mapping[str, Sequence[str]]) -> tuple[dict, list[str]]:
    """``({breakdown key: score or None}, [labels not in known])`` for one doc.

    ``known`` maps a field to its declared labels; ``doc_labels`` maps a field to this doc's labels.
    Labels are matched by slug, so case and punctuation variants (``3d Field Simulation``) land in the
    declared slot. Unknown labels are returned so the caller can warn: they still count in the
    overall metric.
    """
    out = {k: None for k in breakdown_keys(prefix, known)}
    unknown = []
    for field, labels in doc_labels.items():
        declared = {slug(label) for label in known.get(field, ())}
        for label in labels:
            if slug(label) in declared:
                out[breakdown_key(prefix, field, label)] = score
            else:
                unknown.append(f"{field}={label}")
    return out, unknown


def range_labels(edges: Sequence[int]) -> list[str]:
    """The labels of the bins that integer ``edges`` open (each edge a bin's first value, the last bin
    open-ended): ``(1, 6, 11)`` -> ``["1_5", "6_10", "11_plus"]``, one breakdown field's labels."""
    return [f"{lo}_{hi - 1}" for lo, hi in zip(edges, edges[1:])] + [f"{edges[-1]}_plus"]


def range_label(value: float | None, edges: Sequence[int]) -> str | None:
    """The label (:func:`range_labels`) of the bin ``value`` falls in; None for no value or one below the
    first edge (in no bin)."""
    if value is None or math.isnan(value) or value < edges[0]:
        return None
    labels = range_labels(edges)
    return next(label for label, hi in zip(labels, [*edges[1:], math.inf]) if value < hi)


# --------------------------------------------------------------------------- classification


def precision_recall_f1(golds: Sequence[Any], preds: Sequence[Any], labels: Sequence[Any]) -> dict[str, float]:
    """Per-class precision/recall/F1 (``precision_<label>`` ...), their macro averages
    (``macro_precision`` ...: the mean of the per-class values, so macro F1 is not the harmonic mean of
    macro P and R) and their averages weighted by each class's gold count (``weighted_precision`` ...),
    as fractions: sklearn's ``average="macro"`` / ``"weighted"`` with ``labels=labels`` and
    ``zero_division=0``. A prediction outside ``labels`` (e.g. None for "no answer") counts as a miss
    for the gold class and as nobody's false positive. Undefined ratios are 0."""
    if len(golds) != len(preds):
        raise ValueError("golds and preds differ in length")
    out: dict[str, float] = {}
    ps, rs, fs, ws = [], [], [], []
    for lab in labels:
        tp = sum(1 for g, p in zip(golds, preds) if g == lab and p == lab)
        fp = sum(1 for g, p in zip(golds, preds) if g != lab and p == lab)
        fn = sum(1 for g, p in zip(golds, preds) if g == lab and p != lab)
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        name = slug(str(lab))
        out[f"precision_{name}"], out[f"recall_{name}"], out[f"f1_{name}"] = p, r, f
        ps.append(p)
        rs.append(r)
        fs.append(f)
        ws.append(tp + fn)
    n = len(labels) or 1
    out["macro_precision"], out["macro_recall"], out["macro_f1"] = sum(ps) / n, sum(rs) / n, sum(fs) / n
    total = sum(ws)
    for key, vals in (("precision", ps), ("recall", rs), ("f1", fs)):
        out[f"weighted_{key}"] = sum(v * w for v, w in zip(vals, ws)) / total if total else 0.0
    return out


def set_precision_recall_f1(pred: Iterable[Any], gold: Iterable[Any]) -> tuple[float, float, float]:
    """(precision, recall, F1) of a predicted set against a gold set. An empty prediction has precision 1
    when the gold is empty too, else 0; likewise recall for an empty gold."""
    pred, gold = set(pred), set(gold)
    tp = len(pred & gold)
    p = tp / len(pred) if pred else (1.0 if not gold else 0.0)
    r = tp / len(gold) if gold else (1.0 if not pred else 0.0)
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


# --------------------------------------------------------------------------- calibration


def calibration(confidences: Sequence[float], correct: Sequence[bool], n_bins: int = 10, eps: float = 1e-12) -> dict[str, float]:
    """Calibration of the confidence a model put on its own answer.

    - ``ece``: expected calibration error, equal-width bins over [0, 1]: sum_b n_b/N * |acc_b - conf_b|
    - ``rms``: root-mean-square calibration error: sqrt(sum_b n_b/N * (acc_b - conf_b)^2)
    - ``nll``: mean binary negative log-likelihood of the correctness under the confidence
      (confidences clipped to [eps, 1-eps]).
    """
    if len(confidences) != len(correct):
        raise ValueError("confidences and correct differ in length")
    n = len(confidences)
    if n == 0:
        return {"ece": float("nan"), "rms": float("nan"), "nll": float("nan")}
    bins: list[list[tuple[float, bool]]] = [[] for _ in range(n_bins)]
    nll = 0.0
    for c, y in zip(confidences, correct):
        c = float(c)
        if not 0.0 <= c <= 1.0 or math.isnan(c):
            raise ValueError(f"confidence out of [0, 1]: {c}")
        bins[min(int(c * n_bins), n_bins - 1)].append((c, bool(y)))
        cc = min(max(c, eps), 1 - eps)
        nll -= math.log(cc) if y else math.log(1 - cc)
    ece = rms = 0.0
    for b in bins:
        if not b:
            continue
        acc = sum(y for _, y in b) / len(b)
        conf = sum(c for c, _ in b) / len(b)
        ece += len(b) / n * abs(acc - conf)
        rms += len(b) / n * (acc - conf) ** 2
    return {"ece": ece, "rms": math.sqrt(rms), "nll": nll / n}
