"""``summary.csv`` and ``summary.json``: the report's numbers as one tidy table a dashboard can read.

One row per run × task × metric (``kind`` = ``metric``): every metric of our tasks in the results
JSON, its 95 % interval where the report has one (Wilson's for right/wrong metrics, every one of them;
the bootstrap's for the headline metrics), the docs behind it, the task's version, the results file it
came from, whether the authors' prompt layout reached the model (``layout``: :mod:`.layout_marks`) and how
large its figures reached the model (``figure_budget``: :mod:`.budget`); then
one row per paired comparison with the baseline (``kind`` = ``paired``). The columns are :data:`COLUMNS`;
the report's README describes each. In the CSV a text cell that a spreadsheet would run as a formula
(starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading ``'`` (OWASP's
rule); numbers are written as numbers.
"""

from __future__ import annotations

import csv
import json
import os
from typing import TYPE_CHECKING, Any, cast

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report import budget
from lmms_eval_earthsci.commands.report.charts import doc_count
from lmms_eval_earthsci.commands.report.comparisons import Comparison
from lmms_eval_earthsci.commands.report.intervals import interval
from lmms_eval_earthsci.commands.report.layout_marks import task_layout
from lmms_eval_earthsci.commands.report.runs import Run

if TYPE_CHECKING:
    from lmms_eval_earthsci.core.scoring.stats import Interval, Paired

SCHEMA = 1
COLUMNS = (
    "kind", "run", "baseline", "model", "model_args", "step", "task", "metric", "value", "ci_low", "ci_high",
    "ci_method", "docs", "task_version", "results_file", "layout", "figure_budget",
    "baseline_value", "difference", "p", "test", "p_adjusted", "changed", "direction",
    "discordant_run_right", "discordant_baseline_right", "docs_compared", "only_in_baseline", "only_in_run", "note",
)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def metric_rows(runs: list[Run], base: Run, headline: set[tuple[str, str]]) -> list[dict[str, Any]]:
    rows = []
    for r in runs:
        for task in sorted(r.results):
            bench = registry.benchmark_of(task)
            if bench is None:
                continue
            layout, size = task_layout(r, task).summary, budget.summary(r, task)
            for metric in sorted(r.results[task]):
                value = r.results[task][metric]
                iv = interval(r, task, metric, bootstrap=(task, metric) in headline) if value is not None else None
                ok = iv is not None and iv.low is not None
                docs = cast("Interval", iv).n_units if ok else (doc_count(bench, r, task, metric) if value is not None else None)
                src = r.source.get(task)
                rows.append({
                    "kind": "metric", "run": r.label, "baseline": base.label, "model": r.model, "model_args": r.model_args,
                    "step": r.step, "task": task, "metric": metric, "value": value,
                    "ci_low": cast("Interval", iv).low if ok else None, "ci_high": cast("Interval", iv).high if ok else None, "ci_method": cast("Interval", iv).method if ok else None,
                    "docs": docs, "task_version": r.versions.get(task), "results_file": src.path if src else None, "layout": layout,
                    "figure_budget": size,
                })
    return rows


def _label(run: Run) -> str:
    return run.label


def paired_rows(comparisons: list[Comparison]) -> list[dict[str, Any]]:
    rows = []
    for c in comparisons:
        res = c.result
        iv = res.interval if res is not None else None
        has_ci = iv is not None and iv.low is not None and cast("Paired", res).diff is not None  # iv is not None: res is not None
        rows.append({
            "kind": "paired", "run": c.run.label, "baseline": c.base.label, "model": c.run.model, "model_args": c.run.model_args,
            "step": c.run.step, "task": c.task, "metric": c.metric, "value": c.run.value(c.task, c.metric)[1],
            "baseline_value": c.base.value(c.task, c.metric)[1],
            "difference": res.diff if res is not None else None,
            "ci_low": cast("Interval", iv).low if has_ci else None, "ci_high": cast("Interval", iv).high if has_ci else None, "ci_method": cast("Interval", iv).method if has_ci else None,
            "p": res.p if res is not None else None, "test": res.test if res is not None else None, "p_adjusted": c.p_adjusted,
            "changed": c.changed, "direction": c.direction or None,
            "discordant_run_right": res.discordant[0] if res is not None and res.discordant else None,
            "discordant_baseline_right": res.discordant[1] if res is not None and res.discordant else None,
            "docs_compared": res.common if res is not None else None,
            "only_in_baseline": res.only_b if res is not None else None, "only_in_run": res.only_a if res is not None else None,
            "note": "; ".join(x for x in (c.note, budget.difference(c.run, c.base, c.task, name=_label)) if x) or None, "task_version": c.run.versions.get(c.task),
            "results_file": c.run.source[c.task].path if c.task in c.run.source else None, "layout": task_layout(c.run, c.task).summary,
            "figure_budget": budget.summary(c.run, c.task),
        })
    return rows


def neutralize(v: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, made text (OWASP's rule); numbers as they are."""
    if isinstance(v, str) and v.startswith(FORMULA_START):
        return "'" + v
    return v


def write_summary(runs: list[Run], base: Run, comparisons: list[Comparison], headline: set[tuple[str, str]], out_dir: str) -> tuple[str, str]:
    rows = metric_rows(runs, base, headline) + paired_rows(comparisons)
    runs_meta = [{"run": r.label, "model": r.model, "model_args": r.model_args, "step": r.step, "baseline": r is base, "partial": r.partial,
                  "results_files": [f.path for f in r.files], "set_aside": [{"results_file": f.path, "tasks": ts, "why": why} for f, ts, why in r.set_aside]} for r in runs]
    json_path = os.path.join(out_dir, "summary.json")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump({"schema": SCHEMA, "columns": list(COLUMNS), "runs": runs_meta, "rows": [{k: row.get(k) for k in COLUMNS} for row in rows]}, f, indent=1, ensure_ascii=False)
    csv_path = os.path.join(out_dir, "summary.csv")
    with open(csv_path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for row in rows:
            w.writerow(["" if row.get(k) is None else neutralize(row.get(k)) for k in COLUMNS])
    return csv_path, json_path
