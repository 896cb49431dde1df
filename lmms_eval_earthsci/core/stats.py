"""Error bars and paired comparisons from a run's per-doc records (``report``).

A metric's value is its task's aggregation over the per-doc items lmms-eval logged (``--log_samples``).
Its 95 % interval is a percentile bootstrap over docs: the aggregation is *recomputed* on each resample
(macro F1, flip rate, ECE ... are corpus metrics; averaging per-doc values would be wrong). Two runs over
the same docs are compared pairwise: the difference of the metric, with a paired bootstrap interval
(the same resampled docs in both runs) and, for accuracy-type metrics (every per-doc value right or
wrong), McNemar's exact test on the discordant docs.

Resampling is ``scipy.stats.bootstrap`` (seeded; ``method="percentile"``; the interval is taken with
``nanpercentile`` over its bootstrap distribution, so a resample whose slice is empty is dropped, not
poisonous); McNemar is ``scipy.stats.binomtest``. Aggregations we know are vectorised over resamples
(:data:`KERNELS`): means (``mean_present``, ``judged_mean``, MAC accuracy), MuSciClaims' per-class and
macro P/R/F1 and its flip rates (resampled by claim pair, the unit they are defined on); any other
aggregation is called once per resample (exact, slower: see ``benchmarks/bootstrap.py``).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from lmms_eval_earthsci.core.metrics import mean_present

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
_BATCH = 250  # resamples per vectorised batch: bounds memory at ~_BATCH x n values per array


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    n_resamples: int
    n_units: int  # docs (or claim pairs) resampled
    dropped: int = 0  # resamples whose statistic was undefined (an empty slice)

    def excludes(self, value: float = 0.0) -> bool:
        return self.low is not None and self.high is not None and not (self.low <= value <= self.high)


@dataclass(frozen=True)
class Paired:
    diff: float | None  # metric(a) - metric(b) on the docs both runs have
    interval: Interval
    common: int
    only_a: int
    only_b: int
    mcnemar_p: float | None  # exact McNemar p-value (accuracy-type metrics), else None
    discordant: tuple[int, int] | None  # (a right b wrong, a wrong b right)


# --------------------------------------------------------------------------- encodings


def _score(item: Any) -> float:
    if isinstance(item, Mapping):
        item = item.get("score")
    if isinstance(item, bool):
        return float(item)
    if isinstance(item, (int, float)) and not (isinstance(item, float) and math.isnan(item)):
        return float(item)
    return math.nan


def _mean_encode(items: Sequence[Any]) -> tuple[np.ndarray, ...]:
    v = np.array([_score(i) for i in items], dtype=float)
    return (np.nan_to_num(v), (~np.isnan(v)).astype(float))


def _mean_stat(v: np.ndarray, m: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(v, axis=axis) / np.sum(m, axis=axis)


def _judged_mean_encode(items: Sequence[Any]) -> tuple[np.ndarray, ...] | None:
    # judged_mean is None (unavailable) when no doc got a verdict: then there is nothing to bound
    if not any(isinstance(i, Mapping) and (i.get("judge") or {}).get("status") == "judged" for i in items):
        return None
    return _mean_encode(items)


# dotted aggregation -> (encode(items) -> arrays | None, statistic(*arrays, axis) -> values): the core's
# aggregations here; each benchmark adds its own (its ``kernels``), see :func:`register_kernels`
KERNELS: dict[str, tuple[Callable, Callable]] = {
    "lmms_eval_earthsci.core.metrics.mean_present": (_mean_encode, _mean_stat),
    "lmms_eval_earthsci.core.judge_pass.judged_mean": (_judged_mean_encode, _mean_stat),
}
mean_encode, mean_stat = _mean_encode, _mean_stat


def register_kernels(kernels: Mapping[str, tuple[Callable, Callable]]) -> None:
    """Add vectorised kernels for aggregations (``module.function`` -> (encode, statistic)); each must
    compute what the aggregation computes (tests/test_stats.py checks every registered kernel)."""
    KERNELS.update(kernels)


class UnknownAggregation(LookupError):
    """An aggregation named in a task YAML that cannot be imported: its interval would be another metric's."""

def resolve(dotted: str | None) -> Callable[[Sequence[Any]], Any]:
    """The aggregation function named ``module.function``; ``mean_present`` only when the task names none
    (a group pooling tasks of different aggregations). A name that does not import is an error, never a
    silent plain mean."""
    if dotted:
        module, _, name = dotted.rpartition(".")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise UnknownAggregation(f"aggregation {dotted!r} cannot be imported ({exc})") from exc

    return mean_present


# --------------------------------------------------------------------------- the bootstrap


def _as_number(v: Any) -> float:
    try:
        return math.nan if v is None else float(v)
    except (TypeError, ValueError):
        return math.nan


def _generic(items: Sequence[Any], dotted: str | None):
    agg = resolve(dotted)
    objs = list(items)

    def stat(idx, axis: int = -1):
        return _as_number(agg([objs[int(i)] for i in idx]))

    return (np.arange(len(objs)),), stat, False


def _prepared(items: Sequence[Any], dotted: str | None):
    """(arrays, statistic, vectorised) for the metric; None when it has no value to bound."""
    kernel = KERNELS.get(dotted or "")
    if kernel is None:
        return _generic(items, dotted)
    arrays = kernel[0](items)
    if arrays is None:
        return None
    return arrays, kernel[1], True


def _interval(distribution: np.ndarray, n_resamples: int, n_units: int, confidence: float) -> Interval:
    d = np.asarray(distribution, dtype=float).ravel()
    finite = d[~np.isnan(d)]
    if finite.size == 0:
        return Interval(None, None, n_resamples, n_units, int(d.size))
    alpha = (1 - confidence) / 2
    lo, hi = np.percentile(finite, [100 * alpha, 100 * (1 - alpha)])
    return Interval(float(lo), float(hi), n_resamples, n_units, int(d.size - finite.size))


def _bootstrap(data: tuple[np.ndarray, ...], statistic, vectorized: bool, n_resamples: int, seed: int) -> np.ndarray:
    from scipy import stats

    res = stats.bootstrap(
        data, statistic, n_resamples=n_resamples, vectorized=vectorized, paired=True, axis=-1,
        confidence_level=CONFIDENCE, method="percentile", random_state=np.random.default_rng(seed), batch=_BATCH,
    )
    return res.bootstrap_distribution


def bootstrap_ci(items: Sequence[Any], dotted: str | None, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> Interval | None:
    """The percentile bootstrap interval of the aggregation ``dotted`` over ``items`` (one per doc);
    None when the metric has no value (e.g. a judged metric without verdicts) or there are < 2 docs."""
    prepared = _prepared(items, dotted)
    if prepared is None or len(items) < 2:
        return None
    arrays, stat, vectorized = prepared
    n_units = int(arrays[0].shape[-1])
    if n_units < 2:
        return None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        dist = _bootstrap(arrays, stat, vectorized, n_resamples, seed)
    return _interval(dist, n_resamples, n_units, confidence)


def point(items: Sequence[Any], dotted: str | None) -> float | None:
    v = _as_number(resolve(dotted)(list(items)))
    return None if math.isnan(v) else v


def _binary(items: Sequence[Any]) -> list[bool] | None:
    out = []
    for i in items:
        v = _score(i) if not (isinstance(i, Mapping) and "correct" in i and "score" not in i) else float(bool(i["correct"])) * 100
        if v in (0.0, 1.0, 100.0):
            out.append(v > 0)
        else:
            return None
    return out


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> tuple[float, tuple[int, int]]:
    """Two-sided exact McNemar test: a binomial test on the discordant pairs (p = 1 with none)."""
    from scipy import stats

    n10 = sum(1 for x, y in zip(a, b) if x and not y)
    n01 = sum(1 for x, y in zip(a, b) if y and not x)
    if n10 + n01 == 0:
        return 1.0, (n10, n01)
    return float(stats.binomtest(n10, n10 + n01, 0.5).pvalue), (n10, n01)


def paired(items_a: Mapping[Any, Any], items_b: Mapping[Any, Any], dotted: str | None, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> Paired:
    """Run a minus run b on the docs both have (keyed by doc_id), with a paired bootstrap interval
    (each resample draws the same docs from both runs) and McNemar's exact test where every per-doc
    value is right/wrong. Docs in one run only are counted, not compared."""
    common = [k for k in items_a if k in items_b]
    only_a, only_b = len(items_a) - len(common), len(items_b) - len(common)
    a, b = [items_a[k] for k in common], [items_b[k] for k in common]
    pa, pb = point(a, dotted), point(b, dotted)
    diff = None if pa is None or pb is None else pa - pb
    interval = Interval(None, None, n_resamples, len(common))
    prep_a, prep_b = (_prepared(a, dotted), _prepared(b, dotted)) if len(common) >= 2 else (None, None)
    if diff is not None and prep_a is not None and prep_b is not None:
        arrays_a, stat, vectorized = prep_a
        arrays_b = prep_b[0]
        if vectorized and arrays_a[0].shape[-1] == arrays_b[0].shape[-1]:
            k = len(arrays_a)

            def dstat(*arrays, axis=-1):
                return stat(*arrays[:k], axis=axis) - stat(*arrays[k:], axis=axis)

            data, vec = tuple(arrays_a) + tuple(arrays_b), True
        else:  # per-resample aggregation (also: units that are not docs, e.g. claim pairs, per run)
            agg = resolve(dotted)

            def dstat(idx, axis=-1):
                sel = [int(i) for i in idx]
                return _as_number(agg([a[i] for i in sel])) - _as_number(agg([b[i] for i in sel]))

            data, vec = (np.arange(len(common)),), False
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            dist = _bootstrap(data, dstat, vec, n_resamples, seed)
        interval = _interval(dist, n_resamples, len(common), confidence)
    p, disc = None, None
    ba, bb = _binary(a), _binary(b)
    if ba is not None and bb is not None and common:
        p, disc = mcnemar_exact(ba, bb)
    return Paired(diff, interval, len(common), only_a, only_b, p, disc)
