"""The report's Markdown: the changes against the baseline, the headline (runs as columns up to four, as
rows with a trend chart past that; intervals and the reference model's numbers), the runs, task versions,
paired comparisons, and per benchmark its breakdown tables, charts and counts, each laid out by the
benchmark's report spec; the paper reference tables last."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from typing import Any, cast

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report import budget, scaling
from lmms_eval_earthsci.commands.report.charts import build_chart, build_trend, plot, plot_reliability, plot_trend
from lmms_eval_earthsci.commands.report.comparisons import RULE, Comparison
from lmms_eval_earthsci.commands.report.intervals import BOOTSTRAP_NOTE, bootstrap_options, ci_cell, method_of
from lmms_eval_earthsci.commands.report.layout_marks import MARK, marked, paper_comparable
from lmms_eval_earthsci.commands.report.layout_marks import notes as layout_notes
from lmms_eval_earthsci.commands.report.papers import fmt, footnotes, paper_cell, paper_entries, paper_value
from lmms_eval_earthsci.commands.report.position_bias import circular_tasks, is_circular
from lmms_eval_earthsci.commands.report.runs import MISSING, Run, _number
from lmms_eval_earthsci.core.benchmark import Benchmark, Family, PaperValue, ReportSpec, RunView
from lmms_eval_earthsci.core.scoring import circular

# --------------------------------------------------------------------------- which numbers go where


def bench_tasks(bench: Benchmark, runs: list[Run]) -> list[str]:
    """The benchmark's tasks some run has, in its spec's order; circular variants have their own section
    (:mod:`.position_bias`)."""
    spec = bench.report_spec()
    return sorted({t for r in runs for t in r.results if registry.benchmark_of(t) is bench and not is_circular(t, runs)}, key=spec.order)


def _has(runs: list[Run], task: str, metric: str) -> bool:
    return any(r.value(task, metric)[0] for r in runs)


def headline_keys(bench: Benchmark, runs: list[Run]) -> list[tuple[str, str]]:
    """(task, metric) of the benchmark's headline: each official task's headline metrics; a benchmark
    run only as circular variants leads with their ``circular_acc`` (right at every rotation)."""
    spec = bench.report_spec()
    tasks = bench_tasks(bench, runs)
    keys = [(t, m) for t in spec.headline_tasks(tasks) for m in spec.headline_metrics(t) if _has(runs, t, m)]
    return keys or [(t, circular.HEAD) for t in circular_tasks(bench, runs)]


def _aliases(runs: list[Run]) -> dict[str, str]:
    return {t: a for r in runs for t, a in r.aliases.items()}


class BenchView(RunView):
    """The runs as one benchmark's report spec sees them."""

    def __init__(self, bench: Benchmark, runs: list[Run], paper_model: str):
        self.bench, self._runs, self.paper_model = bench, runs, paper_model
        self._alias = _aliases(runs)

    def tasks(self) -> list[str]:
        return bench_tasks(self.bench, self._runs)

    def has(self, task: str, metric: str) -> bool:
        return _has(self._runs, task, metric)

    def metrics(self, task: str) -> list[str]:
        return sorted({m for r in self._runs for m in r.results.get(task, {})})

    def alias(self, task: str) -> str:
        return self._alias.get(task, task)

    def runs(self) -> list[Run]:
        return self._runs

    def paper_value(self, task: str, metric: str) -> PaperValue | None:
        return paper_value(self.bench, self.paper_model, task, metric)


def families(bench: Benchmark, runs: list[Run]) -> list[Family]:
    alias = _aliases(runs)

    def title(task: str) -> str:  # lmms-eval's display name, when the task has one, and the task
        return f"{alias[task]} · `{task}`" if alias.get(task, task) != task else f"`{task}`"

    return bench.report_spec().families(bench_tasks(bench, runs), title)


def breakdown_rows(bench: Benchmark, fam: Family, runs: list[Run], paper_model: str) -> list[tuple[str, str, str, PaperValue | None]]:
    """(row label, task, metric, paper value) of a family's table, in order. Left out: what the headline
    shows (unless the spec keeps it), judge-failure counters (the counts table has them), a *_judge
    task's rule-based breakdowns when its rules twin ran too, the metrics the spec leaves out of its
    table, and the rows its :meth:`ReportSpec.skip_row` drops."""
    spec = bench.report_spec()
    view = BenchView(bench, runs, paper_model)
    tasks = set(fam.tasks)
    headline = set(headline_keys(bench, runs))
    rows = []
    for t in fam.tasks:
        part = "" if t == fam.key else t[len(fam.key) + 1 :] if t.startswith(fam.key + "_") else spec.short_task(t)
        primary = spec.headline_metrics(t)
        twin_ran = t.endswith("_judge") and t[: -len("_judge")] in tasks
        metrics = sorted({m for r in runs for m in r.results.get(t, {})}, key=lambda m: (m not in primary, spec.slice_label(m) == m, m))
        metrics = spec.table_metrics(t, metrics)
        for m in metrics:
            if ((t, m) in headline and not spec.headline_in_table()) or m.endswith("_judge_failed"):
                continue
            if twin_ran and m not in spec.judged_metrics:
                continue
            is_slice = spec.slice_label(m) != m
            if spec.skip_row(fam, t, m, view, primary, is_slice):
                continue
            label = part if (m in primary and part) else " · ".join(x for x in (part, spec.slice_label(m)) if x)
            rows.append((label, t, m, paper_value(bench, paper_model, t, m)))
    return rows


# --------------------------------------------------------------------------- counts

# the per-sample field holding a task's answer extraction, and the key naming the rule that fired
NO_ANSWER_RULES = ("none", "no-answer", "ambiguous")


def _extraction(spec: ReportSpec, sample: dict) -> str | None:
    """What a sample's answer extraction gave: ``answer``, ``none`` or ``weak`` (a similarity pick below
    LOW_CONFIDENCE_SIMILARITY), read from the task's one extraction field, so a doc counts once
    (emma_acc_lenient's own rule is not read); None when the task extracts no answer (judged free text)."""
    for name, key in spec.extraction_fields.items():
        v = sample.get(name)
        if not isinstance(v, dict):
            continue
        rule = v.get(key)
        if rule in NO_ANSWER_RULES or spec.no_answer(name, v):
            return "none"
        if rule == "similarity":
            sim = v.get("similarity")
            if _number(sim) and spec.low_confidence_similarity is not None and cast(float, sim) < spec.low_confidence_similarity:
                return "weak"
        return "answer"
    return None


def _judge_record(spec: ReportSpec, sample: dict) -> tuple[bool, dict | None]:
    """(is a judged task, the judge's record): the record travels in the judged metric's value under
    ``judge``; the value is None when no judge was configured."""
    for name in spec.judged_metrics:
        if name in sample:
            v = sample[name]
            return True, (v.get("judge") if isinstance(v, dict) and isinstance(v.get("judge"), dict) else None)
    return False, None


def _rotation_extraction(spec: ReportSpec, record: dict) -> str:
    """A circular variant's doc (one rotation): ``none`` when it chose no option (``circular_no_answer``),
    ``weak`` when the official extraction picked it by low similarity, else ``answer``."""
    if not circular.answered(record):
        return "none"
    official = record.get("official")
    if isinstance(official, dict) and _extraction(spec, dict.fromkeys(spec.extraction_fields, official)) == "weak":
        return "weak"
    return "answer"


def counts(run: Run, tasks: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per task with samples: docs scored; docs with no answer extracted and low-confidence similarity
    picks (None when the task extracts no answer; a circular variant's docs are its rotations, those
    that chose no option); whether a judge ran (None: not a judged task; False: judged task, no judge
    configured), judge failures (by cause) and judge cache hits."""
    out = {}
    for task in tasks:
        ss = run.samples.get(task)
        bench = registry.benchmark_of(task)
        if ss is None or bench is None:
            continue
        spec = bench.report_spec()
        c: dict[str, Any] = {"docs": len(ss), "no_answer": None, "low_confidence": None, "judged": None, "judge_failed": 0, "judge_failure_causes": {}, "judge_cache_hits": 0}
        causes: Counter = Counter()
        for s in ss:
            rotation = s.get(circular.HEAD)
            ex = _rotation_extraction(spec, rotation) if circular.is_record(rotation) else _extraction(spec, s)
            if ex is not None:
                c["no_answer"] = (c["no_answer"] or 0) + (ex == "none")
                c["low_confidence"] = (c["low_confidence"] or 0) + (ex == "weak")
            is_judged, rec = _judge_record(spec, s)
            if is_judged:
                c["judged"] = bool(c["judged"]) or rec is not None
            if rec is not None:
                if rec.get("status") in ("request_failed", "parse_failed"):
                    c["judge_failed"] += 1
                    causes[str(rec.get("cause") or rec.get("status"))] += 1
                c["judge_cache_hits"] += bool(rec.get("cached"))
        c["judge_failure_causes"] = dict(causes.most_common())
        out[task] = c
    return out


def _count_unit(bench: Benchmark, task: str, run: Run) -> str:
    """A task is counted under its family when the run has it (EMMA's subjects under their variant
    group: one row, not four)."""
    unit = bench.report_spec().family_of(task)
    return unit if unit in run.results else task


def _merge(cs: list[dict]) -> dict:
    def total(key: str) -> int | None:
        vals = [c[key] for c in cs if c[key] is not None]
        return sum(vals) if vals else None

    causes: Counter = Counter()
    for c in cs:
        causes.update(c["judge_failure_causes"])
    judged = [c["judged"] for c in cs if c["judged"] is not None]
    return {
        "docs": sum(c["docs"] for c in cs),
        "no_answer": total("no_answer"),
        "low_confidence": total("low_confidence"),
        "judged": any(judged) if judged else None,
        "judge_failed": sum(c["judge_failed"] for c in cs),
        "judge_failure_causes": dict(causes.most_common()),
        "judge_cache_hits": sum(c["judge_cache_hits"] for c in cs),
    }



def _cell(run: Run, task: str, metric: str) -> str:
    present, v = run.value(task, metric)
    return fmt(v, metric) if present else MISSING


def _table(header: list[str], rows: list[list[str]], label_columns: int = 1) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i < label_columns else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _marked(cell: str, run: Run, task: str, other: Run | None) -> str:
    """A run's cell with its marks: the layout's (:mod:`.layout_marks`), and :data:`.budget.MARK` when its figures
    reached the model at another size than those of ``other``, the run it sits beside (:mod:`.budget`)."""
    return budget.marked(marked(cell, run, task), run, other, task)


def _partial_note(run: Run) -> str:
    """What a partial run left out: "`--limit 2`, 14 of 22 docs in <the tasks cut>"."""
    parts = []
    if run.limit is not None:
        limit = int(run.limit) if isinstance(run.limit, float) and run.limit.is_integer() else run.limit
        parts.append(f"`--limit {limit}`")
    cut = sorted((t for t, (scored, total) in run.n_samples.items() if scored < total), key=lambda t: (getattr(registry.benchmark_of(t), "name", ""), t))
    if cut:
        where = ", ".join(cut[:3]) + (f" and {len(cut) - 3} more tasks" if len(cut) > 3 else "")
        parts.append(f"{sum(run.n_samples[t][0] for t in cut)} of {sum(run.n_samples[t][1] for t in cut)} docs in {where}")
    return ", ".join(parts)



HEADLINE_COLUMNS_UP_TO = 4  # runs side by side as columns; past that, runs as rows


def _headline_wide(runs: list[Run], benches: list[Benchmark], paper_model: str, base: Run) -> tuple[list[str], list]:
    rows, refs = [], []
    for b in benches:
        for t, m in headline_keys(b, runs):
            ref = paper_value(b, paper_model, t, m) if paper_comparable(runs, t, m) else None
            refs.append(ref)
            cells = []
            other = budget.reference(runs, base, t)
            for r in runs:
                cells += [_marked(_cell(r, t, m), r, t, other), ci_cell(r, t, m)]
            rows.append([b.title, t, m] + cells + [method_of(runs, t, m), paper_cell(ref) if ref else MISSING])
    head = ["benchmark", "task", "metric"]
    for r in runs:
        head += [r.column, "95% CI"]
    return [_table(head + ["CI method", f"paper: {paper_model}"], rows, 3), ""], refs


def _compact(run: Run, task: str, metric: str, other: Run | None) -> str:
    """``value (low–high)``: a run's cell when runs are rows."""
    cell, ci = _cell(run, task, metric), ci_cell(run, task, metric)
    return _marked(cell if ci == MISSING else f"{cell} ({ci})", run, task, other)


def _headline_long(runs: list[Run], benches: list[Benchmark], paper_model: str, base: Run, out_dir: str | None) -> tuple[list[str], list]:
    """Past four runs: per benchmark one table, runs as rows in order, one column per headline metric,
    the interval beside each value; the paper's row last; then the benchmark's trend chart."""
    text, refs = [], []
    for b in benches:
        keys = headline_keys(b, runs)
        if not keys:
            continue
        head = ["run", "step"] + [f"{t} · {m}" for t, m in keys]
        others = [budget.reference(runs, base, t) for t, _ in keys]
        rows = [[r.column + (" (baseline)" if r is base else ""), MISSING if r.step is None else str(r.step)] + [_compact(r, t, m, o) for (t, m), o in zip(keys, others)] for r in runs]
        paper = [paper_value(b, paper_model, t, m) if paper_comparable(runs, t, m) else None for t, m in keys]
        refs += paper
        if any(paper):
            rows.append([f"paper: {paper_model}", MISSING] + [paper_cell(v) if v else MISSING for v in paper])
        methods = dict.fromkeys(method_of(runs, t, m) for t, m in keys)
        methods.pop(MISSING, None)
        text += [f"### {b.title}", "", _table(head, rows, 2), "", f"Intervals: {' / '.join(methods) or MISSING} (see below)." if methods else "", ""]
        if out_dir:
            png = plot_trend(b, build_trend(b, keys, runs, paper_model), out_dir)
            if png:
                text += [f"![{os.path.basename(png)}]({os.path.basename(png)})", ""]
    return text, refs


def headline_section(runs: list[Run], benches: list[Benchmark], paper_model: str, base: Run | None = None, out_dir: str | None = None) -> str:
    base = base or runs[0]
    if len(runs) <= HEADLINE_COLUMNS_UP_TO:
        body, refs = _headline_wide(runs, benches, paper_model, base)
    else:
        body, refs = _headline_long(runs, benches, paper_model, base, out_dir)
    text = ["## Headline", ""] + body
    options = bootstrap_options()
    text.append(BOOTSTRAP_NOTE.format(n=f"{options['resamples']:,}", seed=options["seed"]) + "\n")
    text.append(
        f"Paper column: the published number of {paper_model} for the same task and metric (`--paper-model` picks another; "
        "\"Paper reference\" at the end lists them all). n/a: no value (a judged metric without a judge, a slice with no docs); –: not run, or not in the paper."
    )
    keys = [(b, t, m) for b in benches for t, m in headline_keys(b, runs)]
    withheld = [f"{t} · {m}" for b, t, m in keys if paper_value(b, paper_model, t, m) and not paper_comparable(runs, t, m)]
    if withheld:
        text.append(f"No paper number beside {', '.join(withheld)}: no run kept the authors' layout ({MARK} below).")
    shown = [t for _, t, _ in keys]
    text += [""] + [n + "  " for n in footnotes(refs) + layout_notes(runs, shown) + budget.difference_notes(budget.side_by_side(runs, base, shown))]
    elsewhere = [f"{t} · {m}" for b in benches for t, m in headline_keys(b, runs) if not paper_value(b, paper_model, t, m) and any(e.task == t and e.metric == m for e in paper_entries(b)[0])]
    if elsewhere:
        text += ["", f"{paper_model} has no paper number for {', '.join(elsewhere)}; other paper models do (Paper reference)."]
    led = [f"`{t}`" for b, t, m in keys if m == circular.HEAD]
    if led:
        text += ["", f"{', '.join(led)}: circular variants run without their official task lead with `{circular.HEAD}`, the percent of questions right at every rotation (no paper number: ours; Position bias below)."]
    text += ["", runs_section(runs, base), "", counts_note(any(circular_tasks(b, runs) for b in benches))]
    return "\n".join(text) + "\n"


def headline_values(run: Run) -> list[tuple[Benchmark, str, str, str]]:
    """(benchmark, task, metric, formatted value) of the run's headline metrics, benchmark by benchmark:
    what a command prints of a run it just made (the demo, rescore)."""
    return [(b, t, m, fmt(run.value(t, m)[1], m)) for b in registry.benchmarks() for t, m in headline_keys(b, [run])]


def _n_tasks(n: int) -> str:
    return f"{n} task" + ("" if n == 1 else "s")


def runs_section(runs: list[Run], base: Run) -> str:
    """The runs in order: baseline, step, partial, rescore, the results files used and those set aside."""
    text = ["## Runs", "", f"In order (those `--order` names first, then runs without a training step, then by step, then by name); the baseline of the comparisons is `{base.column}` (`--baseline`). "
            "Results files of one model (lmms-eval's `--model`, its `--model_args` less devices and batch sizes, `--gen_kwargs`) make one run; a task in two of them is taken from the newest (`--keep-reruns` keeps them apart).", ""]
    for r in runs:
        note = " — **baseline**" if r is base else ""
        if r.step is not None:
            note += f" — step {r.step}"
        if r.partial:
            note += f" — **partial**: {_partial_note(r)}"
        if r.rescore:
            src = r.rescore.get("source") or {}
            note += f" — rescored without the model from {src.get('kind', 'a run')} `{src.get('path', '?')}`" + (" (**forced** over a version change)" if r.rescore.get("version_changes") else "")
        files = r.files
        where = files[0].path if len(files) == 1 else f"{len(files)} results files: " + ", ".join(f"{f.path} ({_n_tasks(len([t for t, s in r.source.items() if s is f]))})" for f in files)
        text.append(f"- `{r.column}`{note}: {where}")
        for f, tasks, why in r.set_aside:
            shown = ", ".join(tasks[:4]) + (f" and {len(tasks) - 4} more" if len(tasks) > 4 else "")
            text.append(f"  - set aside: {f.path} ({shown}): {why}")
    return "\n".join(text)


def _version(run: Run, task: str) -> str | None:
    v = run.versions.get(task)
    return None if v is None else str(v)


def versions_section(runs: list[Run], benches: list[Benchmark]) -> str:
    """The comparability version of every task run (``metadata.version``), and a warning where runs
    compared here were scored by different versions of a task."""
    tasks = [t for b in benches for t in bench_tasks(b, runs)]
    rows, differ = [], []
    for t in tasks:
        vs = [_version(r, t) for r in runs]
        if all(v is None for v in vs):
            continue
        rows.append([t] + [v or MISSING for v in vs])
        if len({v for v in vs if v is not None}) > 1:
            differ.append(f"**Warning**: `{t}` was scored by different task versions ({', '.join(f'{r.column}: {v}' for r, v in zip(runs, vs) if v)}); its numbers may not compare.")
    if not rows:
        return ""
    text = ["## Task versions", "", "Each task's comparability version (`metadata.version`, recorded by lmms-eval in `versions`): it moves whenever a change could move the task's scores.", ""]
    text += differ + ([""] if differ else [])
    if (1 < len(runs) <= HEADLINE_COLUMNS_UP_TO) or differ:  # a sweep scored by one version: one line
        text.append(_table(["task"] + [r.column for r in runs], rows))
    else:
        text.append(", ".join(f"`{t}` {v}" for t, v in ((row[0], row[1]) for row in rows)))
    return "\n".join(text) + "\n"


def _p(p: float | None) -> str:
    return MISSING if p is None else (f"{p:.3g}" if p >= 0.001 else "<0.001")


def _diff_cells(c: Comparison) -> list[str]:
    """The difference (marked when the two runs' figures reached the model at other sizes) and its interval."""
    r, m = c.result, c.metric
    if r is None or r.diff is None:
        return [MISSING, MISSING]
    iv = r.interval
    bounds = (f"n/a ({iv.why})" if iv.why else MISSING) if iv.low is None else f"{fmt(iv.low, m)}–{fmt(iv.high, m)}"
    return [budget.marked(f"{r.diff:+.2f}", c.run, c.base, c.task), bounds]


def _budget_notes(rows: Iterable[Comparison]) -> list[str]:
    """Under a table of comparisons: a line per run compared on other input than the baseline's."""
    lines = budget.difference_notes((c.run, c.base, c.task) for c in rows if c.result is not None and c.result.diff is not None)
    return [""] + [n + "  " for n in lines] if lines else []


def _discordant(c: Comparison) -> str:
    r = c.result
    return MISSING if r is None or r.discordant is None else f"{r.discordant[0]}/{r.discordant[1]}"


def changes_section(rows: list[Comparison], base: Run) -> str:
    """First of all: the comparisons the rule calls changed, biggest adjusted evidence first."""
    if not rows:
        return ""
    hits = sorted((c for c in rows if c.changed), key=lambda c: (c.p_adjusted, c.task, c.run.label))
    text = ["## Changes against the baseline", ""]
    tested = sum(c.p_adjusted is not None for c in rows)
    if not tested:
        text.append(f"None tested: the runs compared with `{base.column}` have no samples (`--log_samples`) for the metrics they share.")
        return "\n".join(text) + "\n"
    if not hits:
        text.append(f"None: no comparison with `{base.column}` changed after the correction ({tested} tested; rule under Paired comparisons).")
        return "\n".join(text) + "\n"
    text.append(f"The {len(hits)} of {tested} comparisons with `{base.column}` that changed (adjusted p < 0.05; the rule under Paired comparisons).")
    text.append("")
    table = []
    for c in hits:
        assert c.result is not None  # changed: it was tested
        table.append([c.task, c.metric, c.run.column, _cell(base, c.task, c.metric), _cell(c.run, c.task, c.metric)] + _diff_cells(c) + [c.direction or MISSING, _p(c.result.p), c.result.test or MISSING, _p(c.p_adjusted), _discordant(c)])
    text.append(_table(["task", "metric", "run", "baseline", "run value", "difference", "95% CI", "direction", "p", "test", "p adj.", "discordant"], table, 3))
    text += _budget_notes(hits)
    return "\n".join(text) + "\n"


def paired_section(rows: list[Comparison], runs: list[Run], base: Run) -> str:
    """Every run against the baseline on each headline metric (see :mod:`.comparisons`); past four runs
    the rows are in summary.csv / summary.json only."""
    if not rows:
        return ""
    text = [
        "## Paired comparisons",
        "",
        f"Each run minus the baseline (`{base.column}`), on the docs both scored (matched by task and doc_id): the difference, its 95% interval, the test's p, "
        "the p adjusted for the number of comparisons, and whether it changed. Discordant: docs this run got right and the baseline wrong / the reverse. Docs only one run has are counted, not compared.",
        "",
        RULE.format(n=sum(c.p_adjusted is not None for c in rows)),
        "",
    ]
    if len(runs) > HEADLINE_COLUMNS_UP_TO:
        text.append(f"The {len(rows)} rows (every run × headline metric) are in `summary.csv` and `summary.json` beside this report (`kind` = `paired`); those that changed are listed above.")
        return "\n".join(text) + "\n"
    table, skipped = [], []
    for c in rows:
        if c.result is None:
            skipped.append(f"{c.task} · {c.metric} ({c.run.column})")
            continue
        r = c.result
        changed = MISSING if c.changed is None else ("**yes**" if c.changed else "no")
        table.append([c.task, c.metric, f"{c.run.column} − {base.column}"] + _diff_cells(c) + [_p(r.p), r.test or MISSING, _p(c.p_adjusted), changed, _discordant(c), str(r.common), str(r.only_b), str(r.only_a), c.note or ""])
    if table:
        text.append(_table(["task", "metric", "runs", "difference", "95% CI", "p", "test", "p adj.", "changed", "discordant", "docs compared", "only in baseline", "only in this run", "note"], table, 3))
        text += _budget_notes(c for c in rows if c.result is not None)
    if skipped:
        text += ["", "Not compared (a run without `--log_samples`): " + ", ".join(skipped) + "."]
    return "\n".join(text) + "\n"


def _judge_cells(c: dict) -> list[str]:
    if c["judged"] is None:
        return [MISSING, MISSING]
    if not c["judged"]:
        return ["no judge", "no judge"]
    failed = str(c["judge_failed"])
    if c["judge_failure_causes"]:
        failed += " (" + ", ".join(f"{k} ×{n}" for k, n in c["judge_failure_causes"].items()) + ")"
    return [failed, str(c["judge_cache_hits"])]


def _no_answer_cell(unit: str, c: dict, runs: list[Run]) -> str:
    """The no-answer count; a circular variant's with its share of the rotations (``circular_no_answer``)."""
    if c["no_answer"] is None:
        return MISSING
    if is_circular(unit, runs) and c["docs"]:
        return f"{c['no_answer']} ({fmt(100.0 * c['no_answer'] / c['docs'])}%)"
    return str(c["no_answer"])


def counts_table(bench: Benchmark, runs: list[Run]) -> str:
    """The benchmark's counts, its circular variants' last (their docs are rotations)."""
    tasks = bench_tasks(bench, runs) + circular_tasks(bench, runs)
    per_unit: dict[tuple[str, int], list[dict]] = {}
    for i, r in enumerate(runs):
        for t, c in counts(r, tasks).items():
            per_unit.setdefault((_count_unit(bench, t, r), i), []).append(c)
    if not per_unit:
        return ""
    order = sorted(per_unit, key=lambda k: (is_circular(k[0], runs), bench.report_spec().order(k[0]), k[1]))
    if len(runs) > HEADLINE_COLUMNS_UP_TO:
        return _counts_by_run(bench, runs, {k: _merge(v) for k, v in per_unit.items()}, order)
    rows = []
    for unit, i in order:
        c = _merge(per_unit[(unit, i)])
        ex = [_no_answer_cell(unit, c, runs), MISSING if c["low_confidence"] is None else str(c["low_confidence"])]
        rows.append([unit, runs[i].column, str(c["docs"])] + ex + _judge_cells(c))
    head = ["task", "run", "docs scored", "no answer extracted", "low-confidence picks", "judge failures", "judge cache hits"]
    return "\n".join(["### Counts", "", _table(head, rows, 2), ""])


def _counts_by_run(bench: Benchmark, runs: list[Run], merged: dict, order: list) -> str:
    """Past four runs: one row per task, one column per run, each cell ``docs · no answer · judge
    failures`` (–: not counted there), so that a sweep's counts take a line per task."""
    units = list(dict.fromkeys(u for u, _ in order))
    rows = []
    for unit in units:
        cells = []
        for i in range(len(runs)):
            c = merged.get((unit, i))
            if c is None:
                cells.append(MISSING)
                continue
            judge = MISSING if c["judged"] is None else ("no judge" if not c["judged"] else str(c["judge_failed"]))
            cells.append(f"{c['docs']} · {_no_answer_cell(unit, c, runs)} · {judge}")
        rows.append([unit] + cells)
    note = "Each cell: docs scored · no answer extracted · judge failures (a report of four runs or fewer also gives the failures' causes, low-confidence picks and judge cache hits)."
    return "\n".join(["### Counts", "", note, "", _table(["task"] + [r.column for r in runs], rows), ""])


#: the counts note's clause on circular variants (said when a run has one)
CIRCULAR_COUNTS = ("a circular variant (`*_circular`, last) counts its rotations as docs, and as no answer those that chose no option, "
                   "with their share of the rotations (`circular_no_answer`, in Position bias too)")


def counts_note(with_circular: bool = False) -> str:
    """The note on the counts tables: what every benchmark's counts mean (its report spec's clauses; the
    circular variants' when ``with_circular``)."""
    specs = [b.report_spec() for b in registry.benchmarks()]
    clauses = [s.counts_note for s in specs if s.counts_note] + ([CIRCULAR_COUNTS] if with_circular else [])
    scored = "".join(f"; {s.judge_failure_note}" for s in specs if s.judge_failure_note)
    return (
        "Counts (each benchmark's last table) come from the samples (`--log_samples`): a doc counts once per task; "
        + "".join(c + "; " for c in clauses)
        + f"judge failures (by cause) are scored as each benchmark says (wrong{scored}); `no judge`: a judged task run without a judge."
    )


def paper_table(bench: Benchmark, runs: list[Run]) -> str:
    """Every paper model's numbers for the headline metrics of the tasks run (the columns as the
    benchmark's spec picks them from those keys)."""
    entries, source = paper_entries(bench)
    spec = bench.report_spec()
    have = {(e.task, e.metric) for e in entries}
    cols = sorted(spec.paper_columns(headline_keys(bench, runs), have), key=lambda k: (spec.order(k[0]), k[1]))
    if not cols:
        return ""
    models = [m for m in dict.fromkeys(e.model for e in entries) if any(paper_value(bench, m, t, k) for t, k in cols)]
    rows, vals = [], []
    for m in models:
        cells = []
        for t, k in cols:
            v = paper_value(bench, m, t, k)
            vals.append(v)
            cells.append(paper_cell(v) if v else MISSING)
        rows.append([m] + cells)
    text = [f"### {bench.title}", "", _table(["paper model"] + [f"{t} · {k}" for t, k in cols], rows), "", f"Source: {source}", ""]
    return "\n".join(text + [n + "  " for n in footnotes(vals)] + [""])



def breakdown_tables(bench: Benchmark, runs: list[Run], paper_model: str, base: Run | None = None) -> str:
    out = []
    base = base or runs[0]
    for fam in families(bench, runs):
        rows = []
        refs = []
        shown: list[str] = []  # the tasks of the rows kept
        withheld = False  # a paper number left out: no run beside it kept the authors' layout
        why: dict[tuple[str, str], list[str]] = {}  # a metric that could not be computed here (core.adapter.unavailable): n/a, and the reason below
        for label, t, m, ref in breakdown_rows(bench, fam, runs, paper_model):
            values = [r.value(t, m) for r in runs]
            reasons = [(r.column, r.unavailable.get(t, {}).get(m)) for r in runs]
            if not any(present and v is not None for present, v in values) and not any(text for _, text in reasons):
                continue  # no run has a number here
            if ref and not paper_comparable(runs, t, m):
                ref, withheld = None, True
            refs.append(ref)
            other = budget.reference(runs, base, t)
            rows.append([label] + [_marked(fmt(v, m), r, t, other) if present else MISSING for r, (present, v) in zip(runs, values)] + ([paper_cell(ref) if ref else MISSING]))
            shown.append(t)
            for column, text in reasons:
                if text:
                    why.setdefault((m, text), []).append(column)
        if not rows:
            continue
        with_paper = any(refs) or withheld
        if not with_paper:
            rows = [r[:-1] for r in rows]
        header = ["slice"] + [r.column for r in runs] + ([f"paper: {paper_model}"] if with_paper else [])
        notes = (footnotes(refs) + layout_notes(runs, shown, server=False) + budget.difference_notes(budget.side_by_side(runs, base, shown))
                 + [f"`{m}` n/a in {', '.join(dict.fromkeys(cols))}: {text}." for (m, text), cols in why.items()])
        out += [f"### {fam.title}", "", _table(header, rows), ""] + [n + "  " for n in notes]
        if notes:
            out.append("")
    return "\n".join(out)




def benchmark_section(bench: Benchmark, runs: list[Run], out_dir: str, paper_model: str, base: Run | None = None) -> str:
    """The benchmark's tables, the size its figures reached the model at in each run (:mod:`.budget`),
    charts and counts; of a benchmark run only as circular variants, its counts alone (their numbers are
    in Position bias); empty when it has neither."""
    spec = bench.report_spec()
    view = BenchView(bench, runs, paper_model)
    text = [f"## {bench.title}", ""]
    sizes = [n + "  " for n in budget.notes(runs, bench_tasks(bench, runs) + circular_tasks(bench, runs))]
    sizes += [""] if sizes else []
    if not bench_tasks(bench, runs):
        counted = counts_table(bench, runs)
        return "\n".join([*text, "Run as circular variants only: their numbers are under Position bias.", "", *sizes, counted]) if counted else ""
    for paragraph in spec.intro(view):
        text += [paragraph, ""]
    text.append(breakdown_tables(bench, runs, paper_model, base))
    text.append(scaling.section(bench, runs, out_dir, view, _table))
    text += sizes
    pngs = plot(bench, [build_chart(bench, c, runs, paper_model) for c in spec.charts(view)], out_dir)
    diagrams, missing = spec.reliability(view, paper_model)
    pngs += plot_reliability(diagrams, out_dir)
    text += [m + "  " for m in missing] + ([""] if missing else [])
    for png in pngs:
        text += [f"![{os.path.basename(png)}]({os.path.basename(png)})", ""]
    text.append(counts_table(bench, runs))
    return "\n".join(text)
