"""Error bars for the report: each metric's 95 % interval over a run's docs (:mod:`lmms_eval_earthsci.core.scoring.stats`):
Wilson's for right/wrong metrics, else a bootstrap recomputing the task's own aggregation (read from its
task YAML) on every resample, with every registered benchmark's vectorised kernels."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, cast

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report.papers import fmt
from lmms_eval_earthsci.commands.report.runs import MISSING, Run
from lmms_eval_earthsci.core.adapter.harness import group_leaves
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.scoring import circular, stats
from lmms_eval_earthsci.core.scoring.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, Interval
from lmms_eval_earthsci.yamlgen import metric_aggregations, task_yaml_paths

BOOTSTRAP_NOTE = (
    "95% CI, from the run's docs (`--log_samples`): Wilson's score interval where every doc is right or wrong (accuracies; it does not collapse at 0 or all right); "
    "elsewhere (F1, flip rates, judge scores, ECE) a percentile bootstrap, {n} resamples, seed {seed} (`--resamples`, `--seed`), the corpus metric recomputed on every resample. "
    "A group's interval pools its tasks' docs. –: no samples (a run without `--log_samples`) or no value."
)


def bootstrap_options() -> dict[str, int]:
    """The bootstrap of this process's report (``resamples``, 0: no intervals; ``seed``), set by
    :func:`configure` and held by the runtime."""
    return current().for_run(("report_bootstrap",), lambda: {"resamples": DEFAULT_RESAMPLES, "seed": DEFAULT_SEED})


def configure(resamples: int, seed: int) -> None:
    bootstrap_options().update(resamples=resamples, seed=seed)
    register_kernels()  # paired comparisons resolve kernels too, not only intervals


def register_kernels() -> None:
    """Every benchmark's bootstrap kernels (and the circular variants') known to the process (idempotent)."""
    stats.register_kernels(circular.kernels())
    for b in registry.benchmarks():
        stats.register_kernels(b.kernel_table())


def aggregation(run: Run, task: str, metric: str) -> str | None:
    """``module.function`` aggregating ``metric`` in ``task`` (its YAML; a group: its tasks', if one)."""
    paths = _yaml_paths(run.include_path)
    if task in paths:
        return _metric_aggregations(paths[task]).get(metric)
    found = {_metric_aggregations(paths[t]).get(metric) for t in leaves(run, task) if t in paths}
    return found.pop() if len(found) == 1 else None


@functools.cache
def _metric_aggregations(path: str) -> dict[str, str]:
    """A task YAML's aggregations, read once per report process (every interval asks for them)."""
    return metric_aggregations(path)


@functools.lru_cache(maxsize=8)
def _yaml_paths(include_path: str | None) -> dict[str, str]:
    return task_yaml_paths([p for p in str(include_path or "").split(",") if p])


def leaves(run: Run, task: str) -> list[str]:
    return group_leaves(task, run.subtasks)


def doc_items(run: Run, task: str, metric: str) -> dict[tuple[str, Any], Any] | None:
    """``{(task, doc_id): per-doc item}`` of a task's (or a group's tasks') samples; None without samples."""
    ls = leaves(run, task)
    if not all(t in run.samples for t in ls):
        return None
    return {(t, s.get("doc_id", i)): s.get(metric) for t in ls for i, s in enumerate(run.samples[t])}


def interval(run: Run, task: str, metric: str, bootstrap: bool = True, keep: bool = True) -> Interval | None:
    """The metric's 95 % interval in this run (cached), or None; ``bootstrap=False``: only a closed-form
    one (a metric that would need the bootstrap gets none, unless it was computed already). ``keep=False``:
    an interval not cached yet is not cached (the summary's intervals do not depend on which tables asked)."""
    options = bootstrap_options()
    if options["resamples"] <= 0:
        return None
    cache = run.intervals  # on the run: its intervals live as long as it does
    key = (task, metric, options["resamples"], options["seed"])
    if key not in cache and not bootstrap:
        items = doc_items(run, task, metric)
        prop = stats.proportion(list(items.values()), aggregation(run, task, metric)) if items is not None and run.value(task, metric)[1] is not None else None
        return stats.wilson(*prop) if prop is not None else None
    if key not in cache:
        aside = ("aside",) + key  # asked by a table that must not add to the summary's intervals
        if not keep and aside in cache:
            return cache[aside]
        register_kernels()
        items = doc_items(run, task, metric)
        present, value = run.value(task, metric)
        ok = items is not None and present and value is not None and any(v is not None for v in items.values())
        found = stats.interval(list(cast(dict, items).values()), aggregation(run, task, metric), options["resamples"], options["seed"]) if ok else None
        cache[key if keep else aside] = found
        if not keep:
            return found
    return cache[key]


def ci_cell(run: Run, task: str, metric: str) -> str:
    iv = interval(run, task, metric)
    if iv is None or iv.low is None:
        return MISSING
    return f"{fmt(iv.low, metric)}–{fmt(iv.high, metric)}"


def method_of(runs: Iterable[Run], task: str, metric: str) -> str:
    """How the runs' intervals of a row were made (``Wilson``, ``bootstrap``, both, or –)."""
    found = dict.fromkeys(iv.method for r in runs for iv in [interval(r, task, metric)] if iv is not None and iv.low is not None)
    return " / ".join(found) or MISSING
