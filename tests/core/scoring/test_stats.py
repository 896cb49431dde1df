"""core.scoring.stats: each vectorised kernel equals its aggregation on resampled docs (MuSciClaims': on resampled
base claims, its cluster); intervals, paired differences and McNemar on constructed runs."""

import math
import random

import numpy as np
import pytest
from scipy import stats as sps

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.core.scoring import stats
from lmms_eval_earthsci.core.scoring.metrics import mean_present
from lmms_eval_earthsci.core.scoring.stats import bootstrap_ci, kernels, mcnemar_exact, paired, register_kernels, resolve

for _bench in registry.benchmarks():  # as `report` does: every benchmark's own kernels
    register_kernels(_bench.kernel_table())

LABELS = ["SUPPORT", "NEUTRAL", "CONTRADICT", None, "INVALID"]


def emma_items(n, p, seed):
    rng = random.Random(seed)
    return [{"score": 100.0 if rng.random() < p else 0.0, "pid": f"q{i}"} for i in range(n)]


def musciclaims_items(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        base, variant = f"b{i // 2}", ("support", "contra", "neutral")[i % 3] if i % 7 else "neutral"
        out.append([rng.choice(LABELS[:3]), rng.choice(LABELS), base, variant, rng.choice(["biology", "chemistry", "physics"])])
    return out


def mac_items(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        probs = {k: rng.random() for k in "ABCD"}
        out.append({"correct": rng.random() < 0.6, "parsed": rng.random() < 0.9, "probs": probs, "gold": "A", "row": i})
    return out


def items_for(dotted, n, seed):
    if "musciclaims" in dotted:
        return musciclaims_items(n, seed)
    if "mac" in dotted:
        return mac_items(n, seed)
    items = emma_items(n, 0.4, seed)
    for k, it in enumerate(items):
        if k % 5 == 0:
            it["score"] = None  # not in this slice
        it["judge"] = {"status": "judged"}
    return items


def claims_of(items):
    """MuSciClaims' units: the docs of each base claim, in order of first appearance."""
    members: dict = {}
    for i, it in enumerate(items):
        members.setdefault(it[2], []).append(i)
    return list(members.values())


@pytest.mark.parametrize("dotted", sorted(kernels()))
def test_kernel_equals_the_aggregation_on_resamples(dotted):
    encode, stat = kernels()[dotted]
    agg = resolve(dotted)
    items = items_for(dotted, 60, 1)
    arrays = encode(items)
    full = stat(*arrays)
    want = agg(items)
    assert (want is None and math.isnan(full)) or full == pytest.approx(want, abs=1e-9)
    if "flip" in dotted:  # units are claim pairs, not docs: checked on the full data (and by the bootstrap test)
        return
    # a resample of units: docs (MuSciClaims: base claims, every doc of a drawn claim with it)
    units = claims_of(items) if "musciclaims" in dotted else [[i] for i in range(len(items))]
    assert arrays[0].shape[-1] == len(units)
    rng = np.random.default_rng(0)
    for _ in range(25):
        idx = rng.integers(0, len(units), len(units))
        got = stat(*(a[idx] for a in arrays))
        want = agg([items[j] for u in idx for j in units[u]])
        assert (want is None and math.isnan(got)) or got == pytest.approx(want, abs=1e-9), dotted
    # vectorised over a batch of resamples: the same values row by row
    batch = rng.integers(0, len(units), (7, len(units)))
    got = stat(*(a[batch] for a in arrays), axis=-1)
    for row, g in zip(batch, got):
        want = agg([items[j] for u in row for j in units[u]])
        assert (want is None and math.isnan(g)) or g == pytest.approx(want, abs=1e-9)


def test_interval_of_a_proportion_is_seeded_and_about_the_normal_one():
    items = [{"score": 100.0 if i < 144 else 0.0} for i in range(400)]  # 36 %
    ci = bootstrap_ci(items, "lmms_eval_earthsci.core.scoring.metrics.mean_present", n_resamples=4000, seed=3)
    again = bootstrap_ci(items, "lmms_eval_earthsci.core.scoring.metrics.mean_present", n_resamples=4000, seed=3)
    assert ci == again and ci.n_resamples == 4000 and ci.n_units == 400
    half = 1.96 * math.sqrt(0.36 * 0.64 / 400) * 100  # 4.70 points
    assert ci.low == pytest.approx(36 - half, abs=0.6) and ci.high == pytest.approx(36 + half, abs=0.6)
    f1 = musciclaims_items(200, 3)
    runs = [bootstrap_ci(f1, "lmms_eval_earthsci.evals.musciclaims.tasks.macro_f1", n_resamples=200, seed=s) for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2]  # the seed decides the resamples


def test_corpus_metric_is_recomputed_per_resample_not_averaged():
    items = musciclaims_items(300, 2)
    dotted = "lmms_eval_earthsci.evals.musciclaims.tasks.macro_f1"
    ci = bootstrap_ci(items, dotted, n_resamples=500)
    point = resolve(dotted)(items)
    assert ci.low < point < ci.high
    # the aggregation called on every resample of base claims gives the same distribution
    units = claims_of(items)
    agg = resolve(dotted)
    def per_resample(idx, axis=-1):
        return agg([items[j] for u in idx for j in units[int(u)]])
    generic = stats._interval(stats._bootstrap((np.arange(len(units)),), per_resample, False, 500, 0), 500, len(units), 0.95)
    assert ci.n_units == len(units) < len(items)
    assert generic.low == pytest.approx(ci.low, abs=1e-9) and generic.high == pytest.approx(ci.high, abs=1e-9)


def test_musciclaims_resamples_base_claims_not_docs():
    """A claim's variants decided together (both right or both wrong): resampling docs as if they were
    independent understates the interval; the cluster bootstrap does not (premise: the doc bootstrap's
    interval is narrower on the same data)."""
    rng = random.Random(7)
    items = []
    for c in range(150):
        right = rng.random() < 0.6
        for variant, gold in (("support", "SUPPORT"), ("contra", "CONTRADICT")):
            items.append([gold, gold if right else ("CONTRADICT" if gold == "SUPPORT" else "SUPPORT"), f"b{c}", variant, "biology"])
    dotted = "lmms_eval_earthsci.evals.musciclaims.tasks.macro_f1"
    clustered = bootstrap_ci(items, dotted, n_resamples=2000)
    arrays, stat, vec = stats._generic(items, dotted)  # the aggregation on resampled docs
    docs = stats._interval(stats._bootstrap(arrays, stat, vec, 2000, 0), 2000, len(items), 0.95)
    assert clustered.n_units == 150 and (clustered.high - clustered.low) > 1.25 * (docs.high - docs.low)


def test_generic_route_for_an_aggregation_without_kernel():
    items = mac_items(120, 5)
    ci = bootstrap_ci(items, "lmms_eval_earthsci.evals.mac.tasks.mac_ece", n_resamples=300)
    assert ci is not None and ci.low <= resolve("lmms_eval_earthsci.evals.mac.tasks.mac_ece")(items) <= ci.high


def test_judged_metric_without_verdicts_has_no_interval():
    items = [{"score": 0.0, "judge": {"status": "unavailable"}} for _ in range(10)]
    assert bootstrap_ci(items, "lmms_eval_earthsci.core.judge.task_pass.judged_mean") is None


def test_paired_difference_mcnemar_and_unmatched_docs():
    a = {i: {"score": 100.0 if i % 3 else 0.0} for i in range(300)}
    b = {i: {"score": 100.0 if i % 3 and i % 10 else 0.0} for i in range(2, 305)}
    res = paired(a, b, "lmms_eval_earthsci.core.scoring.metrics.mean_present", n_resamples=2000)
    common = [k for k in a if k in b]
    assert (res.common, res.only_a, res.only_b) == (len(common), 2, 5)
    want = mean_present([a[k] for k in common]) - mean_present([b[k] for k in common])
    assert res.diff == pytest.approx(want)
    n10 = sum(1 for k in common if a[k]["score"] and not b[k]["score"])
    n01 = sum(1 for k in common if b[k]["score"] and not a[k]["score"])
    assert res.discordant == (n10, n01) and n01 == 0
    assert res.mcnemar_p == pytest.approx(sps.binomtest(n10, n10 + n01, 0.5).pvalue)
    assert res.interval.excludes(0.0) and res.interval.low > 0
    # right/wrong: the row's test is McNemar's, its interval Tango's score interval
    assert res.test == "McNemar exact" and res.p == res.mcnemar_p and res.interval.method == "Tango score"
    assert res.interval.low < res.diff < res.interval.high
    same = paired(a, dict(a), "lmms_eval_earthsci.core.scoring.metrics.mean_present", n_resamples=200)
    # no discordant doc: p = 1, and the interval is still the score interval's width, not 0–0
    assert same.diff == 0 and same.mcnemar_p == 1.0 and same.interval.low == pytest.approx(-same.interval.high) and 0 < same.interval.high < 2
    assert not same.interval.excludes(0.0)


def test_paired_corpus_metric_and_no_mcnemar_for_graded_scores():
    a = dict(enumerate(musciclaims_items(200, 7)))
    b = dict(enumerate(musciclaims_items(200, 8)))
    res = paired(a, b, "lmms_eval_earthsci.evals.musciclaims.tasks.macro_f1", n_resamples=300)
    assert res.diff == pytest.approx(resolve("lmms_eval_earthsci.evals.musciclaims.tasks.macro_f1")(list(a.values())) - resolve("lmms_eval_earthsci.evals.musciclaims.tasks.macro_f1")(list(b.values())))
    assert res.interval.low < res.diff < res.interval.high and res.mcnemar_p is None
    graded = paired({i: {"score": float(i % 5 + 1)} for i in range(50)}, {i: {"score": 3.0} for i in range(50)}, "lmms_eval_earthsci.core.scoring.metrics.mean_present", n_resamples=100)
    assert graded.mcnemar_p is None


def test_mcnemar_exact_small_case():
    p, disc = mcnemar_exact([True] * 8 + [False] * 2, [False] * 8 + [True] * 2)
    assert disc == (8, 2) and p == pytest.approx(sps.binomtest(8, 10, 0.5).pvalue)


def test_every_tasks_interval_uses_its_own_aggregation():
    """Each metric of each task YAML (ours and every registered benchmark's) is bootstrapped with the very
    function its YAML names: the name resolves to it, never to a plain mean; every kernel is keyed by an
    aggregation some task uses (a kernel left under an old path would be dead weight, the interval silently
    generic)."""
    import importlib

    from lmms_eval_earthsci.yamlgen import metric_aggregations, task_yaml_paths

    used, pairs = set(), 0
    for task, path in task_yaml_paths().items():
        for metric, dotted in metric_aggregations(path).items():
            module, _, name = dotted.rpartition(".")
            assert resolve(dotted) is getattr(importlib.import_module(module), name), (task, metric, dotted)
            used.add(dotted)
            pairs += 1
    assert pairs > 700 and len(used) > 30  # the premise: the walk saw every task's metrics
    assert sorted(k for k in kernels() if k not in used) == []
    with pytest.raises(stats.UnknownAggregation, match="lmms_eval_earthsci.evals.nothing.tasks.acc"):
        resolve("lmms_eval_earthsci.evals.nothing.tasks.acc")
    with pytest.raises(stats.UnknownAggregation):
        bootstrap_ci([1.0, 0.0, 1.0], "lmms_eval_earthsci.core.scoring.metrics.no_such_mean", 50, 0)


@pytest.mark.parametrize("p10, p01, n", [(0.10, 0.05, 80), (0.03, 0.03, 200), (0.02, 0.0, 150)])
def test_tango_score_interval_covers_the_true_difference(p10, p01, n):
    """Simulated coverage of the 95 % interval for paired right/wrong docs is near 95 % (a Wald interval
    falls far short where a discordance is rare); and no discordant doc still gives an interval, not 0–0."""
    import numpy as np

    from lmms_eval_earthsci.core.scoring.stats import tango_interval

    rng = np.random.default_rng(7)
    cells = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=1500)
    hits = 0
    for n10, n01, _ in cells:
        low, high = tango_interval(int(n10), int(n01), n)
        hits += low <= p10 - p01 <= high
    assert 0.925 <= hits / len(cells) <= 0.985, hits / len(cells)
    low, high = tango_interval(0, 0, n)
    assert low == pytest.approx(-high) and 0 < high < 0.05


def test_paired_with_one_cluster_or_one_doc_reads_na_with_its_reason():
    """A `--limit 2` smoke run of MuSciClaims: the two docs are variants of one base claim, one cluster; the
    paired bootstrap has nothing to resample (scipy raised on it): the difference stands, no interval, why."""
    dotted = "lmms_eval_earthsci.evals.musciclaims.tasks.macro_f1"
    a, b = dict(enumerate(musciclaims_items(2, 1))), dict(enumerate(musciclaims_items(2, 2)))
    assert len({row[2] for row in a.values()}) == 1  # the premise: one base claim
    res = paired(a, b, dotted, n_resamples=200)
    assert res.diff is not None and res.interval.low is None and res.interval.why == "1 cluster" and res.p is None
    one = paired({0: {"score": 4.0}}, {0: {"score": 2.0}}, "lmms_eval_earthsci.core.scoring.metrics.mean_present", n_resamples=200)  # a graded score: no McNemar
    assert one.diff == 2.0 and one.interval.low is None and one.interval.why == "1 doc"
