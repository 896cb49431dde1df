"""``lmms-eval-earthsci report OUTPUT_PATH...``: tables and plots from lmms-eval output folders.

For one run or a sweep (lmms-eval ``--output_path`` folders, with ``--log_samples`` for the counts; the
results files of one model make one run: :mod:`.sweep`) it writes ``report.md`` (and prints it) and
``summary.csv`` / ``summary.json`` (:mod:`.summary`). With two runs or more it leads with the changes
against the baseline (:mod:`.comparisons`); then one headline table: per benchmark task its headline
metric(s) with intervals, one column per run (runs as rows and a trend chart past four), and beside them
one paper model's published number (the *reference model*: ``--paper-model``, default GPT-4o). Then, per benchmark, as its report spec lays it
out (``evals/<benchmark>/report.py``): the breakdowns (one row per label, one column per run), PNG
charts with the reference model's values marked, and the counts that matter (docs scored, answers not
extracted, low-confidence picks, judge failures by cause, judge cache hits). Then the papers' own tables
with each run as a row of its own (:mod:`.paper_tables`, one CSV each under ``paper_tables/``). Last, every
paper model's numbers for the headline metrics (each benchmark's ``paper_numbers.json``, naming its source table).

One module a concern: :mod:`.runs` (reading results files), :mod:`.sweep` (runs of a sweep),
:mod:`.papers` (paper numbers, model names, formatting), :mod:`.intervals` (intervals),
:mod:`.comparisons` (paired rows and the rule for "changed"), :mod:`.charts` (drawing),
:mod:`.sections` (the Markdown), :mod:`.summary` (the tidy export).

Rules the report keeps, because a reader compares numbers across columns:

- Only numbers are shown: a metric without a value is ``n/a`` (a judged metric without a judge, a
  slice with no docs), a task a run did not have is ``–``; anything else in a results file (lists,
  strings) is not a metric and is skipped. A row no run has a number for is left out.
- Paper numbers sit only beside the metric computed the way the paper computed it; where the protocol
  still differs, a footnote mark says how (each benchmark's ``protocol_notes``).
- A run that did not give the model the authors' prompt layout (its own check:
  ``metadata.earthsci_layout``, :mod:`.layout_marks`) has its cells marked ``⚠`` with a note (task, class,
  what was lost, the fix), and no paper number beside them.
- Each benchmark section says how large each run's figures reached the model (``metadata.earthsci_budget``,
  :mod:`.budget`); a number set beside another run's whose figures reached the model at another size
  (a table row, a comparison with the baseline) is marked ``≠`` with a note saying both sizes.
- One model, one name across the papers (:mod:`lmms_eval_earthsci.core.scoring.papers`).
- A run made with ``--limit`` that scored fewer docs than the task has is marked ``(partial)`` in
  every table header and chart legend where its numbers appear.
- A chart bar is a number: ``n/a`` is written, never drawn as a zero bar; each bar says how many docs
  it averages; a chart no run has a number for is not written. A benchmark whose spec declares no
  chart gets none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report import paper_tables
from lmms_eval_earthsci.commands.report.comparisons import compare
from lmms_eval_earthsci.commands.report.html import write_html
from lmms_eval_earthsci.commands.report.intervals import configure
from lmms_eval_earthsci.commands.report.papers import DEFAULT_PAPER_MODEL, resolve_paper_model
from lmms_eval_earthsci.commands.report.position_bias import HEAD as CIRCULAR_HEAD
from lmms_eval_earthsci.commands.report.position_bias import circular_tasks, position_section
from lmms_eval_earthsci.commands.report.runs import ReportError, Run
from lmms_eval_earthsci.commands.report.sections import benchmark_section, changes_section, counts, headline_keys, headline_section, paired_section, paper_table, versions_section
from lmms_eval_earthsci.commands.report.summary import write_summary
from lmms_eval_earthsci.commands.report.sweep import baseline, read_runs
from lmms_eval_earthsci.core.scoring.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

__all__ = ["DEFAULT_PAPER_MODEL", "ReportError", "Run", "counts", "read_runs", "write_report"]


#: the sections of report.md a terminal shows (``report`` without ``--verbose``), and its line budget
TERMINAL_SECTIONS = ("Changes against the baseline", "Headline")
TERMINAL_LINES = 40


def terminal_summary(markdown: str, sections: Sequence[str] = TERMINAL_SECTIONS, budget: int = TERMINAL_LINES) -> str:
    """The sections of ``markdown`` a terminal shows: what changed against the baseline and the headline,
    at most ``budget`` lines (then a line saying the rest is in report.md)."""
    lines: list[str] = []
    for block in markdown.split("\n## ")[1:]:
        title, _, body = block.partition("\n")
        if title.strip() in sections:
            lines += [f"## {title.strip()}", *[ln for ln in body.strip().splitlines()], ""]
    if len(lines) > budget:
        lines = [*lines[:budget], f"... ({len(lines) - budget} more lines in report.md)"]
    return "\n".join(lines).rstrip()


def default_out(first: str) -> str:
    """Where a report goes without ``--out``: ``<run folder>-report`` beside the first run folder (never
    inside it: a run folder stays lmms-eval's)."""
    run = os.path.abspath(first if os.path.isdir(first) else os.path.dirname(first))
    return os.path.join(os.path.dirname(run), os.path.basename(run) + "-report")


def write_report(
    paths: Sequence[str], out_dir: str | None = None, paper_model: str | None = None, intro: str | None = None, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
    html: bool = False, images: bool = True, labels: Sequence[str] = (), order: Sequence[str] = (), baseline_run: str | None = None, keep_reruns: bool = False,
    figure_budget_mb: float | None = None, notes: list[str] | None = None,
) -> tuple[str, str]:
    """Write ``report.md``, the PNGs and ``summary.csv`` / ``summary.json``; returns (report path,
    markdown). ``intro``: a paragraph put first, under "What you are looking at" (the demo explains its
    tiny model there). ``resamples`` (0: no intervals) and ``seed``: the bootstrap of the error bars and
    paired comparisons. ``html``: also ``report.html`` with the sample browser (:mod:`.html`;
    ``images``: with the docs' figures, their large copies under ``figure_budget_mb``; the size of its
    folder is appended to ``notes``). ``labels`` (``FOLDER=NAME``), ``order``, ``baseline_run`` and
    ``keep_reruns``: the runs of a sweep (:mod:`.sweep`)."""
    if resamples < 0:
        raise ReportError("--resamples must be 0 (no error bars) or more")
    configure(resamples, seed)
    ref = resolve_paper_model(paper_model)
    runs = read_runs(paths, labels=labels, order=order, keep_reruns=keep_reruns)
    base = baseline(runs, baseline_run)
    out_dir = out_dir or default_out(paths[0])
    os.makedirs(out_dir, exist_ok=True)
    benches = [b for b in registry.benchmarks() if any(registry.benchmark_of(t) is b for r in runs for t in r.results)]
    if not benches:
        names = [b.title for b in registry.benchmarks()]
        raise ReportError(f"{', '.join(paths)}: no results of {', '.join(names[:-1])} or {names[-1]} tasks")
    md = ["# lmms_eval_earthsci report", ""]
    if intro:
        md += ["## What you are looking at", "", intro.strip(), ""]
    keys = [(b, t, m) for b in benches for t, m in headline_keys(b, runs)]
    keys += [(b, t, CIRCULAR_HEAD) for b in benches for t in circular_tasks(b, runs) if (b, t, CIRCULAR_HEAD) not in keys]  # (a headline already when run alone)
    comparisons = compare(runs, base, keys)
    md.append(changes_section(comparisons, base))
    md.append(headline_section(runs, benches, ref, base, out_dir))
    md.append(versions_section(runs, benches))
    md.append(paired_section(comparisons, runs, base))
    md += [benchmark_section(b, runs, out_dir, ref, base) for b in benches]
    md.append(position_section(benches, runs, out_dir, ref))
    shaped, cell_notes = paper_tables.section(benches, runs, out_dir)
    md.append(shaped)
    papers = [paper_table(b, runs) for b in benches]
    if any(papers):
        md += ["## Paper reference", "", "Every paper model's published number for the headline metrics of the tasks run (one row per model, names normalised across the papers).", ""] + papers
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(md)).strip() + "\n"
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write(text)
    write_summary(runs, base, comparisons, {(t, m) for _, t, m in keys}, out_dir)
    if html:
        _, size = write_html(runs, benches, out_dir, text, images=images, base=base, figure_budget_mb=figure_budget_mb, cell_notes=cell_notes)
        if notes is not None:
            notes.append(size)
    return path, text
