"""The report's "Position bias" section: the circular variants of the multiple-choice tasks
(:mod:`lmms_eval_earthsci.core.scoring.circular`), per benchmark and run: the official accuracy (the official
task, when the run has it), ``vanilla_acc`` (rotation 0), ``circular_acc``, the share of rotations with no
answer, the flip rates (no answer as a choice; answered rotations only), RStd, the test of uniform
positions and the share of answers at each position; a chart of the positions per task; the questions
asked and those asked once. Where the position figures measured nothing (no rotation answered, no
question rotates) they read ``n/a (why)``, with a note, never a 0 that reads "no bias". The paired
comparison of ``circular_acc`` across runs is one row per question (:func:`question_items`) in the
report's paired comparisons."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report.charts import build_chart, plot
from lmms_eval_earthsci.commands.report.intervals import ci_cell
from lmms_eval_earthsci.commands.report.papers import fmt
from lmms_eval_earthsci.commands.report.runs import MISSING, UNAVAILABLE, Run
from lmms_eval_earthsci.core.benchmark import Benchmark, ChartSpec
from lmms_eval_earthsci.core.scoring import circular

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


def unmeasured(run: Run, task: str) -> str | None:
    """Why the run's position figures of the task measure nothing (:func:`.circular.unmeasured`), from its
    samples; without samples, "no answer" when ``circular_no_answer`` is 100."""
    recs = _records(run, task)
    if recs is not None:
        return circular.unmeasured(recs)
    present, v = run.value(task, "circular_no_answer")
    return "no answer" if present and v == 100.0 else None


def _rotating_questions(run: Run, task: str) -> int | None:
    recs = _records(run, task)
    return None if recs is None else sum(1 for rs in circular.by_question(recs).values() if rs[0]["n"] > 1)


def _na(why: str) -> str:
    return f"{UNAVAILABLE} ({why})"


def _positions(run: Run, task: str, why: str | None) -> str:
    shares = [(x, run.value(task, f"position_{x}")) for x in circular.POSITIONS]
    if not any(present for _, (present, _) in shares):
        return MISSING
    if why:
        return _na(why)
    return " / ".join(f"{fmt(v)}" for x, (present, v) in shares if present and v is not None) or UNAVAILABLE


def _with_ci(run: Run, task: str, metric: str, why: str | None = None, none: str | None = None) -> str:
    """The value and its interval; ``n/a (why)`` where the figure measured nothing (whatever it reads),
    ``n/a (none)`` where it has no value."""
    present, v = run.value(task, metric)
    if not present:
        return MISSING
    if why:
        return _na(why)
    if v is None and none:
        return _na(none)
    ci = ci_cell(run, task, metric) if v is not None else MISSING
    return fmt(v) + (f" ({ci})" if ci != MISSING else "")


def _rstd(run: Run, task: str, why: str | None) -> str:
    present, v = run.value(task, "position_rstd")
    return MISSING if not present else _na(why) if why else fmt(v)


def _official(bench: Benchmark, run: Run, task: str) -> str:
    official = official_task(task)
    for metric in bench.report_spec().headline_metrics(official):
        present, v = run.value(official, metric)
        if present:
            return fmt(v)
    return MISSING


def _p(run: Run, task: str, why: str | None) -> str:
    present, v = run.value(task, "position_p")
    if not present:
        return MISSING
    if why:
        return _na(why)
    if v is None:  # the test needs two questions that rotate
        q = _rotating_questions(run, task)
        return _na(f"{q} question rotates") if q == 1 else UNAVAILABLE
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def _unmeasured_note(run: Run, task: str, why: str) -> str:
    recs = _records(run, task)
    if why == "no answer":
        rotations = f"none of its {len(recs)} rotations chose an option" if recs is not None else "no rotation chose an option"
        return (f"`{task}` ({run.column}): no answer: {rotations}, so flip, RStd, p and positions measured nothing "
                "(the results JSON's `flip_rate` and `position_rstd` read 0 there: no answer counts as a choice, and as wrong).")
    return f"`{task}` ({run.column}): {why}: every question was asked once (its options name each other), so there is no position to compare."


LEGEND = (
    "Circular variants: each multiple-choice question asked once per rotation of its options (the letters stay, the options move). How to read each column: "
    "**official** = the official task's headline metric, when the run has that task. "
    "**vanilla** = rotation 0 alone (the official prompt: the official accuracy on the same responses). "
    "**circular** = percent of questions right at every rotation. "
    "**no answer** = percent of rotations whose answer chose no option (`circular_no_answer`; 100: the figures after it measured nothing). "
    "**flip** = percent of questions whose chosen option, mapped back, changes across rotations, no answer counting as a choice (`flip_rate`; 0: the same choice at every rotation); "
    "**flip (answered)** = the same over the answered rotations only, of the questions answered at two rotations or more (`flip_rate_answered`). "
    "**RStd** = the spread over positions of the accuracy on rotations whose gold sits there (Zheng et al., ICLR 2024; 0: none). "
    "**p** = a Wald test that every position is chosen equally often (cluster-robust over questions; under full rotation a model with no position preference "
    "chooses each position equally often, whatever its content preferences): small p, a position bias. **positions** = the share of answers at A / B / C ... "
    "(no preference: equal shares). **questions** = questions asked (in brackets, those asked once: options that name each other). "
    "**n/a (no answer)**: no rotation of a question that rotates chose an option, so flip, RStd, p and positions measured nothing (a 0 there would read \"no bias\"); "
    "**n/a (no question rotates)**: every question was asked once; p **n/a (1 question rotates)**: the test needs two; flip (answered) **n/a (no question answered twice)**. "
    "–: the run has no such number (not run, or a task version without the metric). "
    "Intervals (95%): Wilson's over questions (circular, flip, flip (answered)) and over rotation-0 docs (vanilla); a bootstrap over questions (no answer)."
)


def position_section(benches: list[Benchmark], runs: list[Run], out_dir: str, paper_model: str) -> str:
    """The section's Markdown (empty when no run has a circular task); the charts written to ``out_dir``."""
    per_bench = [(b, circular_tasks(b, runs)) for b in benches]
    per_bench = [(b, ts) for b, ts in per_bench if ts]
    if not per_bench:
        return ""
    text = ["## Position bias", "", LEGEND, ""]
    for bench, tasks in per_bench:
        ece = any(circular.ECE in r.results.get(t, {}) for r in runs for t in tasks)
        header = ["task", "run", "official", "vanilla", "circular", "no answer", "flip", "flip (answered)", "RStd", "p", "positions", "questions"] + (["ECE (all rotations)"] if ece else [])
        rows, notes = [], []
        for task in tasks:
            alias = next((r.aliases[task] for r in runs if task in r.aliases), task)
            for r in runs:
                if task not in r.results:
                    continue
                why = unmeasured(r, task)
                if why:
                    notes.append(_unmeasured_note(r, task, why))
                rows.append([f"{alias} · `{task}`", r.column, _official(bench, r, task), _with_ci(r, task, "vanilla_acc"), _with_ci(r, task, HEAD), _with_ci(r, task, "circular_no_answer"),
                             _with_ci(r, task, "flip_rate", why), _with_ci(r, task, "flip_rate_answered", why, none="no question answered twice"),
                             _rstd(r, task, why), _p(r, task, why), _positions(r, task, why), _questions(r, task)]
                            + ([_with_ci(r, task, circular.ECE)] if ece else []))
        text += [f"### {bench.title}", "", "| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
        text += ["| " + " | ".join(row) + " |" for row in rows]
        text.append("")
        if notes:
            text += [n + "  " for n in notes] + [""]
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
