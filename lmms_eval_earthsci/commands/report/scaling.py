"""The report's test-time-scaling tables: a benchmark's :class:`core.benchmark.ScalingTable` in its paper's
shape (EMMA's Table 3: a row per model and method, accuracy at N = 2, 4, 8, 16 sampled candidates), each run's
rows beside the paper's, the reward model's cost per method and N, a CSV and a chart of accuracy against N."""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from lmms_eval_earthsci.commands.report.charts import _save
from lmms_eval_earthsci.commands.report.intervals import leaves
from lmms_eval_earthsci.commands.report.runs import MISSING, UNAVAILABLE, Run
from lmms_eval_earthsci.core.benchmark import Benchmark, RunView, ScalingTable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLUMNS = (2, 4, 8, 16)


def sampled_task(table: ScalingTable, run: Run) -> str | None:
    """The first of the table's tasks this run sampled (a value at N = 2), or None."""
    for task in table.tasks:
        present, v = run.value(task, table.curves.maj.format(2))
        if present and v is not None:
            return task
    return None


def _value(run: Run, task: str, metric: str) -> float | None:
    present, v = run.value(task, metric)
    return float(v) if present and isinstance(v, (int, float)) else None


def _fmt(v: Any) -> str:
    return MISSING if v is None else f"{v:.2f}"


def _candidates(run: Run, task: str, table: ScalingTable) -> int | None:
    """T: the candidates per question (a logged sample's N = 1 record), or None without samples."""
    for leaf in leaves(run, task):
        for s in run.full_samples(leaf)[:1]:
            rec = s.get(table.curves.maj.format(1))
            if isinstance(rec, dict) and rec.get("t"):
                return int(rec["t"])
    return None


def cost(samples: list[dict], metric: str) -> dict[str, int] | None:
    """The reward model's requests and tokens behind one method and N in a task's samples (each request
    counted in every N that used it), or None when no record has a cost."""
    total: dict[str, int] = {"requests": 0, "cached": 0, "prompt_tokens": 0, "completion_tokens": 0}
    seen = False
    for s in samples:
        rec = s.get(metric)
        c = rec.get("cost") if isinstance(rec, dict) else None
        if isinstance(c, dict):
            seen = True
            total["requests"] += int(c.get("requests") or 0)
            total["cached"] += int(c.get("cached") or 0)
            for k in ("prompt_tokens", "completion_tokens"):
                total[k] += int((c.get("tokens") or {}).get(k) or 0)
    return total if seen else None


def rows(table: ScalingTable, runs: Iterable[Run]) -> list[dict[str, Any]]:
    """Every row of the table: each run's methods (the ones it has a value for), then the paper's."""
    out: list[dict[str, Any]] = []
    for run in runs:
        task = sampled_task(table, run)
        if task is None:
            continue
        t = _candidates(run, task, table)
        n1 = _value(run, task, table.curves.maj.format(1))
        samples: list[dict] | None = None  # the task's leaves' samples, read once per run
        for label, metric, rm in table.methods:
            values = {n: _value(run, task, metric.format(n)) for n in COLUMNS}
            if all(v is None for v in values.values()):
                continue
            who = run.column if task == table.tasks[0] else f"{run.column} · {task}"
            own1 = _value(run, task, metric.format(1))  # pass@1, pass_unbiased@1 of its own; a reward model's N=1 is the vote's
            if rm and samples is None:
                samples = [s for leaf in leaves(run, task) for s in run.full_samples(leaf)]
            out.append({"who": who, "source": "run", "task": task, "t": t, "n1": n1, "v1": n1 if own1 is None else own1, "method": label, "reward_model": rm or "", "values": values,
                        "cost": {n: cost(samples or [], metric.format(n)) for n in COLUMNS} if rm else {}})
    for p in table.paper_rows:
        out.append({"who": str(p["model"]), "source": "paper", "task": "", "t": None, "n1": p.get("n1"), "method": str(p["method"]), "reward_model": p.get("reward_model") or "",
                    "values": {n: (p.get("values") or {}).get(str(n)) for n in COLUMNS}, "cost": {}})
    return out


def _tokens(c: dict[str, int] | None) -> str:
    if not c:
        return MISSING
    fresh = c["requests"] - c["cached"]
    return f"{c['requests']:,} ({fresh:,} sent), {c['prompt_tokens'] + c['completion_tokens']:,} tokens"


def section(bench: Benchmark, runs: list[Run], out_dir: str, view: RunView, table_of: Callable[..., str]) -> str:
    """The benchmark's test-time-scaling tables (Markdown, laid out by the report's ``table_of(header, rows,
    label_columns)``), their CSVs and charts written into ``out_dir``."""
    spec = bench.report_spec()
    out: list[str] = []
    for table in spec.scaling_tables(view):
        all_rows = rows(table, runs)
        if not any(r["source"] == "run" for r in all_rows):
            continue
        body = []
        for r in all_rows:
            who = f"**{r['who']}** (T = {r['t'] or '?'}; N=1 sampled: {_fmt(r['n1'])})" if r["source"] == "run" else f"{r['who']} (N=1 Table 2, T=0: {_fmt(r['n1'])})"
            body.append([who, r["method"], r["reward_model"] or "—"] + [_fmt(r["values"][n]) if r["values"][n] is not None or r["source"] == "paper" else UNAVAILABLE for n in COLUMNS])
        out += [f"### {table.title}", "", table_of(["model (N=1)", "method", "reward model"] + [f"N={n}" for n in COLUMNS], body, label_columns=3), ""]
        priced = [r for r in all_rows if r["cost"]]
        if priced:
            out += ["Reward-model requests and tokens per method and N (a request two N share counted in each):", "",
                    table_of(["run", "method"] + [f"N={n}" for n in COLUMNS], [[r["who"], r["method"]] + [_tokens(r["cost"][n]) for n in COLUMNS] for r in priced], label_columns=2), ""]
        unsampled = [r["who"] for r in all_rows if r["source"] == "run" and r["t"] is not None and r["t"] < 16]
        notes = list(table.notes)
        for run in runs:
            task = sampled_task(table, run)
            failed = _value(run, task, table.curves.rm_failed) if task and table.curves.rm_failed else None
            if failed:
                notes.append(f"{run.column}: the reward model failed on {failed:.0f} question(s) (scored wrong; causes in each sample's `{table.curves.bon.format('N')}` record).")
            unread = _value(run, task, table.curves.rm_replies) if task and table.curves.rm_replies else None
            if unread:
                notes.append(f"{run.column}: {unread:.0f} Best-of-N repl(ies) did not score every shown candidate (no failure: the authors' rule still picks; "
                             f"how, in each sample's `{table.curves.bon.format('N')}` record, `reply`).")
        if unsampled:
            notes.append(f"n/a: N above the run's T candidates ({', '.join(dict.fromkeys(unsampled))}); run with `--repeats 16` for every column.")
        if table.paper_source:
            notes.append(f"Paper rows: {table.paper_source}")
        out += [n + "  " for n in notes] + [""]
        _write_csv(os.path.join(out_dir, f"{table.slug}.csv"), all_rows)
        png = _save(draw(table, all_rows), out_dir, table.slug)
        out += [f"![{os.path.basename(png)}]({os.path.basename(png)})", ""]
    return "\n".join(out)


def _write_csv(path: str, all_rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "model_or_run", "task", "candidates_T", "n1", "method", "reward_model"] + [f"n{n}" for n in COLUMNS] + [f"rm_requests_n{n}" for n in COLUMNS])
        for r in all_rows:
            w.writerow([r["source"], r["who"], r["task"], r["t"] or "", "" if r["n1"] is None else r["n1"], r["method"], r["reward_model"]]
                       + ["" if r["values"][n] is None else r["values"][n] for n in COLUMNS]
                       + [(r["cost"].get(n) or {}).get("requests", "") if r["cost"] else "" for n in COLUMNS])


def draw(table: ScalingTable, all_rows: list[dict[str, Any]]) -> Figure:
    """Accuracy against N (log scale): a solid line per run and method, the paper's rows dashed and grey."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib, ~0.2 s), only when a chart is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib, after its backend is set)

    fig, ax = plt.subplots(figsize=(11, 4.6))
    for r in all_rows:
        points = [(1, r["v1"])] if r["source"] == "run" and r["v1"] is not None else []
        points += [(n, r["values"][n]) for n in COLUMNS if r["values"][n] is not None]
        if not points:
            continue
        xs, ys = zip(*points)
        label = f"{r['who']}: {r['method']}" + (f" ({r['reward_model']})" if r["reward_model"] else "")
        if r["source"] == "paper":
            ax.plot(xs, ys, linestyle="--", color="grey", alpha=0.5, linewidth=1, marker=".", label=None)
        else:
            ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, *COLUMNS], ["1", *(str(n) for n in COLUMNS)])
    ax.set_xlabel("N (candidates)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(table.title + " (paper: dashed grey)", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
