"""Error bars, paired comparisons and their tests from a run's per-doc records (``report``).

A metric's value is its task's aggregation over the per-doc items lmms-eval logged (``--log_samples``).

- **Right/wrong metrics** (the aggregation is a mean and every per-doc value is right or wrong): the
  95 % interval is Wilson's score interval for k right of n docs (closed form; it does not collapse at
  0 or n, where a bootstrap gives 0–0). Two runs are compared by McNemar's exact test on the discordant
  docs; the difference's interval is Tango's score interval for paired proportions (the inversion of
  the score test McNemar's approximates: the two agree but at a handful of discordant docs, where the
  exact test is the more cautious; the report says so on such a row).
- **Other metrics** (F1, ECE, judge scores, flip rates): a percentile bootstrap over docs, the
  aggregation *recomputed* on each resample (macro F1, flip rate, ECE ... are corpus metrics; averaging
  per-doc values would be wrong). Two runs: the paired bootstrap (the same resampled docs in both runs);
  its p-value is twice the smaller share of resampled differences on either side of 0 (``(count + 1) /
  (resamples + 1)``), so it is below 0.05 exactly when the percentile interval excludes 0, up to the
  percentile's interpolation.
- **Many comparisons**: :func:`adjust` is Benjamini-Hochberg (``scipy.stats.false_discovery_control``).

Resampling is ``scipy.stats.bootstrap`` (seeded; ``method="percentile"``; the interval is taken with
``nanpercentile`` over its bootstrap distribution, so a resample whose slice is empty is dropped, not
poisonous); McNemar is ``scipy.stats.binomtest``. Aggregations we know are vectorised over resamples
(:func:`kernels`): means (``mean_present``, ``judged_mean``, MAC accuracy), MuSciClaims' per-class and
macro P/R/F1 and its flip rates; any other aggregation is called once per resample (exact, slower: see
``benchmarks/bootstrap.py``). A kernel's units need not be docs: MuSciClaims' resample base claims (a
cluster bootstrap: a claim's variants are one unit), its encoding summing each claim's docs.
"""

from __future__ import annotations

import importlib
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

import numpy as np

from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.scoring.metrics import mean_present

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
_BATCH = 250  # resamples per vectorised batch: bounds memory at ~_BATCH x n values per array


WILSON, BOOTSTRAP, TANGO = "Wilson", "bootstrap", "Tango score"
MCNEMAR, BOOTSTRAP_TEST = "McNemar exact", "paired bootstrap"


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    n_resamples: int
    n_units: int  # docs (or a kernel's clusters: MuSciClaims' base claims) resampled
    dropped: int = 0  # resamples whose statistic was undefined (an empty slice)
    method: str = BOOTSTRAP  # WILSON, BOOTSTRAP or TANGO
    why: str | None = None  # no bounds though a value exists: why ("1 cluster": nothing to resample)

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
    p: float | None = None  # the row's p-value: McNemar's where there is one, else the paired bootstrap's
    test: str | None = None  # MCNEMAR or BOOTSTRAP_TEST


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
CORE_KERNELS: Mapping[str, tuple[Callable, Callable]] = MappingProxyType({
    "lmms_eval_earthsci.core.scoring.metrics.mean_present": (_mean_encode, _mean_stat),
    "lmms_eval_earthsci.core.judge.task_pass.judged_mean": (_judged_mean_encode, _mean_stat),
})
mean_encode, mean_stat = _mean_encode, _mean_stat


def _kernels() -> dict[str, tuple[Callable, Callable]]:
    """The kernels this process knows: the core's, then those registered. What the benchmarks declared, so
    the runtime holds the table (as it holds their settings and datasets)."""
    return current().resource(("bootstrap_kernels",), lambda: dict(CORE_KERNELS))


def kernels() -> Mapping[str, tuple[Callable, Callable]]:
    """Every kernel this process knows (read-only; :func:`register_kernels` adds to it)."""
    return MappingProxyType(_kernels())


def register_kernels(kernels: Mapping[str, tuple[Callable, Callable]]) -> None:
    """Add vectorised kernels for aggregations (``module.function`` -> (encode, statistic)); each must
    compute what the aggregation computes (tests/core/scoring/test_stats.py checks every registered kernel)."""
    _kernels().update(kernels)


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


def _generic(items: Sequence[Any], dotted: str | None) -> tuple[tuple[np.ndarray, ...], Callable[..., Any], bool]:
    agg = resolve(dotted)
    objs = list(items)

    def stat(idx: np.ndarray, axis: int = -1) -> float:
        return _as_number(agg([objs[int(i)] for i in idx]))

    return (np.arange(len(objs)),), stat, False


def _prepared(items: Sequence[Any], dotted: str | None) -> tuple[tuple[np.ndarray, ...], Callable[..., Any], bool] | None:
    """(arrays, statistic, vectorised) for the metric; None when it has no value to bound."""
    kernel = _kernels().get(dotted or "")  # today's names: the YAML reader translates an older snapshot's (yamlgen.metric_aggregations)
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


def _bootstrap(data: tuple[np.ndarray, ...], statistic: Callable[..., Any], vectorized: bool, n_resamples: int, seed: int) -> np.ndarray:
    from scipy import stats  # noqa: PLC0415 - heavy (scipy.stats, ~0.5 s): the report alone needs it

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
    from scipy import stats  # noqa: PLC0415 - heavy (scipy.stats, ~0.5 s): the report alone needs it

    n10 = sum(1 for x, y in zip(a, b) if x and not y)
    n01 = sum(1 for x, y in zip(a, b) if y and not x)
    if n10 + n01 == 0:
        return 1.0, (n10, n01)
    return float(stats.binomtest(n10, n10 + n01, 0.5).pvalue), (n10, n01)


def _kernel(dotted: str | None) -> tuple[Callable, Callable] | None:
    return _kernels().get(dotted or "lmms_eval_earthsci.core.scoring.metrics.mean_present")


def _right_wrong(items: Sequence[Any], dotted: str | None) -> tuple[np.ndarray, np.ndarray, float] | None:
    """(values, scored mask, scale) of a right/wrong mean: its aggregation is a mean (a mean kernel) and
    every scored doc is 0 or ``scale`` (100: percent, or 1); None otherwise. A metric whose docs are all
    0 counts as percent (every metric of ours is)."""
    kernel = _kernel(dotted)
    if kernel is None or kernel[1] is not _mean_stat:
        return None
    arrays = kernel[0](items)
    if arrays is None:
        return None
    v, m = arrays
    scored = v[m > 0]
    if scored.size == 0:
        return None
    for scale in (100.0, 1.0):
        if np.all((scored == 0) | (scored == scale)):
            return v, m, scale
    return None


def proportion(items: Sequence[Any], dotted: str | None) -> tuple[int, int, float] | None:
    """(docs right, docs scored, scale) when the metric is a right/wrong mean (:func:`_right_wrong`)."""
    rw = _right_wrong(items, dotted)
    if rw is None:
        return None
    v, m, scale = rw
    scored = v[m > 0]
    return int(np.sum(scored == scale)), int(scored.size), scale


def wilson(k: int, n: int, scale: float = 100.0, confidence: float = CONFIDENCE) -> Interval:
    """Wilson's score interval for k of n, on the metric's scale."""
    from scipy import stats  # noqa: PLC0415 - heavy (scipy.stats, ~0.5 s): the report alone needs it

    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(float(ci.low) * scale, float(ci.high) * scale, 0, n, method=WILSON)


def interval(items: Sequence[Any], dotted: str | None, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> Interval | None:
    """The metric's 95 % interval: Wilson's for a right/wrong metric (:func:`proportion`), else the
    percentile bootstrap (:func:`bootstrap_ci`); None when it has no value to bound."""
    prop = proportion(items, dotted)
    if prop is not None:
        return wilson(prop[0], prop[1], prop[2], confidence)
    return bootstrap_ci(items, dotted, n_resamples, seed, confidence)


def tango_interval(n10: int, n01: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Tango's score interval (Stat. Med. 1998) for the difference of two paired proportions,
    ``(n10 - n01) / n``: the differences a score test (McNemar's, asymptotically) does not reject."""
    from scipy.optimize import brentq  # noqa: PLC0415 - heavy (scipy, ~0.5 s): the report alone needs it
    from scipy.stats import norm  # noqa: PLC0415 - heavy (scipy, ~0.5 s): the report alone needs it

    z = float(norm.ppf(1 - (1 - confidence) / 2))

    def score(d: float) -> float:
        num = n10 - n01 - n * d
        if num == 0:
            return 0.0
        a, b, c = 2 * n, -n10 - n01 + (2 * n - n10 + n01) * d, -n01 * d * (1 - d)
        q = (math.sqrt(max(b * b - 4 * a * c, 0.0)) - b) / (2 * a)  # the constrained MLE of the n01 share
        var = n * (2 * q + d * (1 - d))
        return num / math.sqrt(var) if var > 0 else math.copysign(math.inf, num)

    d_hat, eps = (n10 - n01) / n, 1e-12
    low = -1.0 if score(-1 + eps) <= z else brentq(lambda d: score(d) - z, -1 + eps, d_hat)
    high = 1.0 if score(1 - eps) >= -z else brentq(lambda d: score(d) + z, d_hat, 1 - eps)
    return low, high


def _paired_binary(a: Sequence[bool], b: Sequence[bool], scale: float, confidence: float) -> tuple[Interval, float, tuple[int, int]]:
    """McNemar's exact test of a against b and Tango's score interval of a - b (module docstring)."""
    p, (n10, n01) = mcnemar_exact(a, b)
    low, high = tango_interval(n10, n01, len(a), confidence)
    return Interval(low * scale, high * scale, 0, len(a), method=TANGO), p, (n10, n01)


def _bootstrap_p(distribution: np.ndarray) -> float | None:
    """Twice the smaller share of resampled differences on either side of 0, ``(count + 1) / (R + 1)``."""
    d = np.asarray(distribution, dtype=float).ravel()
    d = d[~np.isnan(d)]
    if d.size == 0:
        return None
    below, above = int(np.sum(d <= 0)), int(np.sum(d >= 0))
    return float(min(1.0, 2 * (min(below, above) + 1) / (d.size + 1)))


def paired(items_a: Mapping[Any, Any], items_b: Mapping[Any, Any], dotted: str | None, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> Paired:
    """Run a minus run b on the docs both have (keyed by doc_id): for a right/wrong metric McNemar's exact
    test and Tango's score interval; for the others the paired bootstrap (each resample draws the
    same docs from both runs), its interval and p-value. Docs in one run only are counted, not compared."""
    p: float | None
    disc: tuple[int, int] | None
    common = [k for k in items_a if k in items_b]
    only_a, only_b = len(items_a) - len(common), len(items_b) - len(common)
    a, b = [items_a[k] for k in common], [items_b[k] for k in common]
    pa, pb = point(a, dotted), point(b, dotted)
    diff = None if pa is None or pb is None else pa - pb
    if diff is None:
        return Paired(None, Interval(None, None, n_resamples, len(common)), len(common), only_a, only_b, None, None)
    rw_a, rw_b = _right_wrong(a, dotted), _right_wrong(b, dotted)
    if rw_a is not None and rw_b is not None and rw_a[2] == rw_b[2]:
        (va, ma, scale), (vb, mb, _) = rw_a, rw_b
        both = (ma > 0) & (mb > 0)  # docs scored in both runs (a judged doc without a verdict is not)
        if np.any(both):
            ra, rb = (va[both] == scale).tolist(), (vb[both] == scale).tolist()
            iv, p, disc = _paired_binary(ra, rb, scale, confidence)
            diff = (disc[0] - disc[1]) / len(ra) * scale
            return Paired(diff, iv, len(common), only_a, only_b, p, disc, p, MCNEMAR)
    ba, bb = _binary(a), _binary(b)
    interval = Interval(None, None, n_resamples, len(common))
    prep_a, prep_b = (_prepared(a, dotted), _prepared(b, dotted)) if len(common) >= 2 else (None, None)
    p = None
    units = min(int(prep_a[0][0].shape[-1]), int(prep_b[0][0].shape[-1])) if prep_a is not None and prep_b is not None and prep_a[2] else len(common)
    if units < 2:  # one doc, or one cluster of a kernel that resamples clusters (MuSciClaims' base claim): nothing to resample
        interval = Interval(None, None, n_resamples, units, why=f"{units} {'doc' if units == len(common) else 'cluster'}{'s' if units != 1 else ''}")
    if n_resamples > 0 and prep_a is not None and prep_b is not None and units >= 2:
        arrays_a, stat, vectorized = prep_a
        arrays_b = prep_b[0]
        dstat: Callable[..., Any]
        if vectorized and arrays_a[0].shape[-1] == arrays_b[0].shape[-1]:
            k = len(arrays_a)

            def dstat(*arrays: np.ndarray, axis: int = -1) -> Any:
                return stat(*arrays[:k], axis=axis) - stat(*arrays[k:], axis=axis)

            data, vec = tuple(arrays_a) + tuple(arrays_b), True
        else:  # per-resample aggregation (also: a kernel whose units differ between the runs)
            agg = resolve(dotted)

            def dstat(idx: np.ndarray, axis: int = -1) -> float:
                sel = [int(i) for i in idx]
                return _as_number(agg([a[i] for i in sel])) - _as_number(agg([b[i] for i in sel]))

            data, vec = (np.arange(len(common)),), False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            dist = _bootstrap(data, dstat, vec, n_resamples, seed)
        interval = _interval(dist, n_resamples, len(common), confidence)
        p = _bootstrap_p(dist)
    mp, disc = None, None
    if ba is not None and bb is not None and common:
        mp, disc = mcnemar_exact(ba, bb)
    return Paired(diff, interval, len(common), only_a, only_b, mp, disc, p, BOOTSTRAP_TEST if p is not None else None)


def adjust(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values (``scipy.stats.false_discovery_control``) of the rows that
    have one, in their order; None stays None."""
    from scipy import stats  # noqa: PLC0415 - heavy (scipy.stats, ~0.5 s): the report alone needs it

    have = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    if have:
        adjusted = stats.false_discovery_control([float(cast(float, pvalues[i])) for i in have], method="bh")
        for i, q in zip(have, np.atleast_1d(adjusted)):
            out[i] = float(q)
    return out
