"""The report's "Position bias" section: the circular variants of the multiple-choice tasks
(:mod:`lmms_eval_earthsci.core.circular`), per benchmark and run: the official accuracy (the official
task, when the run has it), ``vanilla_acc`` (rotation 0), ``circular_acc``, the flip rate, RStd, the test
of uniform positions and the share of answers at each position; a chart of the positions per task; the
questions asked and those asked once. The paired comparison of ``circular_acc`` across runs is one row
per question (:func:`question_items`) in the report's paired comparisons."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.core import circular
from lmms_eval_earthsci.core.benchmark import Benchmark, ChartSpec
from lmms_eval_earthsci.report.charts import build_chart, plot
from lmms_eval_earthsci.report.intervals import ci_cell
from lmms_eval_earthsci.report.papers import fmt
from lmms_eval_earthsci.report.runs import MISSING, Run

HEAD = circular.HEAD


def is_circular(task: str, runs: list[Run]) -> bool:
    """A circular variant (or a group of them): its name, or a run that reports ``circular_acc`` for it."""
    return task.endswith("_circular") or any(HEAD in r.results.get(task, {}) for r in runs)


def circular_tasks(bench: Benchmark, runs: list[Run]) -> list[str]:
    """The benchmark's circular tasks (not groups) some run has, in name order."""
    return sorted({t for r in runs for t, ms in r.results.items() if HEAD in ms and registry.benchmark_of(t) is bench})


def official_task(task: str) -> str:
    return task[: -len("_circular")] if task.endswith("_circular") else task


def _records(run: Run, task: str) -> list[Mapping[str, Any]] | None:
    samples = run.samples.get(task)
    if samples is None:
        return None
    return [s[HEAD] for s in samples if isinstance(s.get(HEAD), Mapping)]


def question_items(run: Run, task: str) -> dict[tuple[str, Any], float] | None:
    """``{(task, source question): 100 or 0}``: right at every rotation; None without samples."""
    recs = _records(run, task)
    if recs is None:
        return None
    return {(task, source): 100.0 if circular.question_right(rs) else 0.0 for source, rs in circular.by_question(recs).items()}


def _answers(run: Run, task: str) -> int | None:
    """The answers a position share is over: rotations of questions that rotate, with a letter."""
    recs = _records(run, task)
    return None if recs is None else sum(1 for x in recs if x.get("position") and x["n"] > 1)


def _questions(run: Run, task: str) -> str:
    recs = _records(run, task)
    if recs is None:
        return MISSING
    groups = circular.by_question(recs)
    once = sum(1 for rs in groups.values() if rs[0]["n"] == 1)
    return f"{len(groups)} ({once} once)" if once else str(len(groups))


def _positions(run: Run, task: str) -> str:
    shares = [(x, run.value(task, f"position_{x}")) for x in circular.POSITIONS]
    return " / ".join(f"{fmt(v)}" for x, (present, v) in shares if present and v is not None) or MISSING


def _with_ci(run: Run, task: str, metric: str) -> str:
    present, v = run.value(task, metric)
    if not present:
        return MISSING
    ci = ci_cell(run, task, metric) if v is not None else MISSING
    return fmt(v) + (f" ({ci})" if ci != MISSING else "")


def _official(bench: Benchmark, run: Run, task: str) -> str:
    official = official_task(task)
    for metric in bench.report_spec().headline_metrics(official):
        present, v = run.value(official, metric)
        if present:
            return fmt(v)
    return MISSING


def _p(v: float | None) -> str:
    if v is None:
        return MISSING
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def position_section(benches: list[Benchmark], runs: list[Run], out_dir: str, paper_model: str) -> str:
    """The section's Markdown (empty when no run has a circular task); the charts written to ``out_dir``."""
    per_bench = [(b, circular_tasks(b, runs)) for b in benches]
    per_bench = [(b, ts) for b, ts in per_bench if ts]
    if not per_bench:
        return ""
    text = [
        "## Position bias",
        "",
        "Circular variants: each multiple-choice question asked once per rotation of its options (the letters stay, the options move); "
        "**circular** = right at every rotation, **vanilla** = rotation 0 alone (the official prompt: the official accuracy on the same responses), "
        "**flip** = questions whose chosen option, mapped back, changes across rotations. "
        "**RStd** = the spread over positions of the accuracy on rotations whose gold sits there (Zheng et al., ICLR 2024; 0: none). "
        "**p** = a Wald test that every position is chosen equally often (cluster-robust over questions; under full rotation a model with no position preference "
        "chooses each position equally often, whatever its content preferences): small p, a position bias. **positions** = the share of answers at A / B / C ... "
        "Intervals (95%): Wilson's over questions (circular, flip) and over rotation-0 docs (vanilla). A question whose options name each other is asked once.",
        "",
    ]
    for bench, tasks in per_bench:
        ece = any(circular.ECE in r.results.get(t, {}) for r in runs for t in tasks)
        header = ["task", "run", "official", "vanilla", "circular", "flip", "RStd", "p", "positions", "questions"] + (["ECE (all rotations)"] if ece else [])
        rows = []
        for task in tasks:
            alias = next((r.aliases[task] for r in runs if task in r.aliases), task)
            for r in runs:
                if task not in r.results:
                    continue
                rows.append([f"{alias} · `{task}`", r.column, _official(bench, r, task), _with_ci(r, task, "vanilla_acc"), _with_ci(r, task, HEAD), _with_ci(r, task, "flip_rate"),
                             fmt(r.value(task, "position_rstd")[1]), _p(r.value(task, "position_p")[1]), _positions(r, task), _questions(r, task)]
                            + ([_with_ci(r, task, circular.ECE)] if ece else []))
        text += [f"### {bench.title}", "", "| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
        text += ["| " + " | ".join(row) + " |" for row in rows]
        text.append("")
        charts = []
        for task in tasks:
            width = max((len([x for x in circular.POSITIONS if r.value(task, f"position_{x}")[0]]) for r in runs), default=0)
            spec = ChartSpec(f"positions_{task}", f"{task}: answers by position (uniform {100 / width:.0f}%)" if width else task,
                             tuple((x, (("", task, f"position_{x}"),)) for x in circular.POSITIONS[:width]))
            chart = build_chart(bench, spec, runs, paper_model)
            answers = {r.column: _answers(r, task) for r in runs}
            for bar in chart.bars:  # each bar: the answers it is a share of
                bar.docs = answers.get(bar.run)
            chart.paper_label = ""
            charts.append(chart)
        for png in plot(bench, charts, out_dir):
            text += [f"![{os.path.basename(png)}]({os.path.basename(png)})", ""]
    return "\n".join(text)
