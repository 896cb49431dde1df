"""What lmms-eval writes for one of our tasks after aggregating it: why a metric has no value, recorded
beside it in the results JSON, and no empty entry for the per-doc paired score.

A metric that needs a model or a resource this process does not have (BERTScore without its model, on
an offline machine) aggregates to ``None``: lmms-eval writes ``null`` and nothing more. An aggregation
function marked with :func:`explained_by` says why; after lmms-eval aggregates a task, the hook below
writes every such reason into the task's config, ``configs.<task>.metadata.earthsci_unavailable``
(``{metric: reason}``) of the results JSON, which ``report`` shows beside the ``n/a``.

Each sample of our tasks carries ``score`` (:data:`.metrics.PAIRED_SCORE`, the field lmms-eval's
``--baseline`` reads). lmms-eval gathers every field ``process_results`` returns as a metric; one with no
aggregation is written to the results as ``"score,none": []`` and ``"score_stderr,none": []``, an
empty pseudo-metric in every task's table; so is a metric our code gained after a task's YAML was written
(an older ``mac build`` snapshot). The same hook drops every field the task does not aggregate from its
gathered metrics once it is aggregated (the samples, written earlier, keep them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from lmms_eval_earthsci.core.adapter.inventory import ENTRIES
from lmms_eval_earthsci.core.upstream.patching import wrap_method

KEY = "earthsci_unavailable"


def explained_by(reason: Callable[[], str | None]) -> Callable[[Any], Any]:
    """Mark an aggregation function: when it returns None, ``reason()`` (None: no reason known) says why."""

    def deco(fn: Any) -> Any:
        fn.earthsci_unavailable_reason = reason
        return fn

    return deco


def reasons(task_output: Any) -> dict[str, str]:
    """``{metric: reason}`` for the metrics of one aggregated lmms-eval ``TaskOutput`` that have no value
    and whose aggregation says why."""
    out: dict[str, str] = {}
    aggregations = task_output.task.aggregation()
    for key, value in task_output.agg_metrics.items():
        metric = key.split(",", 1)[0]
        if value is not None or metric.endswith("_stderr"):
            continue
        why = getattr(aggregations.get(metric), "earthsci_unavailable_reason", None)
        text = why() if callable(why) else None
        if text:
            out[metric] = text
    return out


def ours(task_output: Any) -> bool:
    """Whether an lmms-eval ``TaskOutput`` is one of our tasks (its ``process_results`` is ours)."""
    fn = getattr(getattr(task_output.task, "config", None), "process_results", None)
    return (getattr(fn, "__module__", None) or "").startswith(__name__.split(".", 1)[0] + ".")


def drop_undeclared(task_output: Any) -> None:
    """Forget the gathered per-doc fields of one of our tasks that its YAML does not aggregate (module
    docstring): :data:`.metrics.PAIRED_SCORE`, and a metric our ``process_results`` gained after the task's
    YAML was written (a ``mac build`` snapshot keeps the YAML of the day it was built). The results then
    hold no ``<field>,none: []``; the samples keep every field."""
    if not ours(task_output):
        return
    declared = task_output.task.aggregation()
    for key in [k for k in task_output.sample_metrics if k[0] not in declared]:
        del task_output.sample_metrics[key]


def no_error_without_value(task_output: Any) -> None:
    """A metric of one of our tasks with no value (null) gets no CLT standard error either: lmms-eval
    computes ``<metric>_stderr_clt`` from the per-doc scores even where the aggregation is unavailable
    (every judged doc failed: 0.0 beside a null), so it reads "N/A" as the bootstrap error does."""
    if not ours(task_output):
        return
    for key, value in list(task_output.agg_metrics.items()):
        metric, sep, filter_key = key.partition(",")
        if value is None and sep and not metric.endswith(("_stderr", "_stderr_clt", "_stderr_clustered")):
            for suffix in ("_stderr_clt", "_stderr_clustered"):
                if f"{metric}{suffix},{filter_key}" in task_output.agg_metrics:
                    task_output.agg_metrics[f"{metric}{suffix},{filter_key}"] = "N/A"


def record_reasons(task_output: Any) -> None:
    """Write :func:`reasons` into the task's config (``metadata.earthsci_unavailable``)."""
    found = reasons(task_output)
    if found and isinstance(task_output.task_config, dict):
        meta = task_output.task_config.get("metadata")
        if not isinstance(meta, dict):
            meta = task_output.task_config["metadata"] = {}
        meta.setdefault(KEY, {}).update(found)


def _after_task_output(method: str, steps: tuple[Callable[[Any], None], ...], courtesy: tuple[Callable[[Any], None], ...], *, entry: str) -> bool:
    """Wrap lmms-eval's ``TaskOutput.<method>`` so that ``steps`` run after it, then ``courtesy`` steps
    whose failure never fails the run. Idempotent; False when lmms-eval has no such method."""
    try:
        from lmms_eval.evaluator_utils import TaskOutput  # noqa: PLC0415 - lmms-eval's evaluator loads in seconds; its layout may change
    except Exception:  # pragma: no cover - lmms-eval layout changed
        return False

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            for step in steps:
                step(self)
            for step in courtesy:
                try:
                    step(self)
                except Exception:  # bookkeeping: never fail the aggregation over it
                    pass
            return result

        return wrapped

    return wrap_method(TaskOutput, method, make, entry=ENTRIES[entry])


def install_clt_hook() -> bool:
    """After lmms-eval's ``TaskOutput.calculate_clt_aggregate_metric`` (0.7.3): :func:`no_error_without_value`.
    False when this lmms-eval has no such method (0.6.1 writes no CLT errors)."""
    return _after_task_output("calculate_clt_aggregate_metric", (), (no_error_without_value,), entry="CLT errors of a null metric")


def install_unavailable_hook() -> bool:
    """After lmms-eval's ``TaskOutput.calculate_aggregate_metric`` (rank 0, after the gather):
    :func:`drop_undeclared` (before lmms-eval's CLT errors and its results), then :func:`record_reasons`.
    Idempotent; False when lmms-eval has no such method."""
    return _after_task_output("calculate_aggregate_metric", (drop_undeclared,), (record_reasons,), entry="aggregation")
