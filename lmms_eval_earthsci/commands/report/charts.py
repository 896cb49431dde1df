"""The report's charts: bar charts built from each benchmark's :class:`~lmms_eval_earthsci.core.benchmark.ChartSpec`
(a bar per run: its value, 95 % interval, doc count and the reference model's mark) and reliability
diagrams from its :class:`~lmms_eval_earthsci.core.benchmark.ReliabilitySpec`, drawn with matplotlib."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from lmms_eval_earthsci.commands.report.intervals import interval
from lmms_eval_earthsci.commands.report.layout_marks import lost, paper_comparable
from lmms_eval_earthsci.commands.report.papers import paper_value, protocol_notes
from lmms_eval_earthsci.commands.report.runs import UNAVAILABLE, Run, _number
from lmms_eval_earthsci.core.benchmark import Benchmark, ChartSpec, ReliabilitySpec

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure


@dataclass
class Bar:
    group: str  # x-axis label
    run: str  # the run's column label
    series: str  # what is measured, when a chart shows two metrics per group ("" otherwise)
    task: str
    metric: str
    value: float | None  # None: n/a (written, not drawn)
    docs: int | None  # docs the value averages (None: unknown, e.g. without --log_samples)
    paper: float | None  # the reference model's value, marked on the bar
    ci: tuple[float, float] | None = None  # the 95 % bootstrap interval, drawn as a whisker


@dataclass
class Chart:
    slug: str
    title: str
    bars: list[Bar]
    paper_label: str
    score_scale: bool = False  # 1-5 judge scores instead of percent


def doc_count(bench: Benchmark, run: Run, task: str, metric: str) -> int | None:
    """Docs behind one value: the samples whose value for the metric is a number (a breakdown's slice,
    a judged metric's scored docs; a MuSciClaims corpus metric's doc record); without samples,
    lmms-eval's n-samples for a task's own metric."""
    ss = run.samples.get(task)
    if ss is not None:
        record = bench.report_spec().record_metrics  # a record per doc (None: not scored, e.g. a panel)
        n = 0
        for s in ss:
            v = s.get(metric)
            n += _number(v) or (isinstance(v, dict) and _number(v.get("score"))) or (record and isinstance(v, (dict, list)))
        return n
    if metric in bench.report_spec().headline_metrics(task) and task in run.n_samples:
        return run.n_samples[task][0]
    return None


def build_chart(bench: Benchmark, spec: ChartSpec, runs: list[Run], paper_model: str) -> Chart:
    """The bars of a chart spec; a (run, series) the run does not have gets no bar."""
    bars: list[Bar]
    notes: set[str]
    bars, notes = [], set()
    for label, series in spec.groups:
        for name, task, metric in series:
            ref = paper_value(bench, paper_model, task, metric)
            if ref:
                notes.update(ref.notes)
            for r in runs:
                present, v = r.value(task, metric)
                if present:
                    iv = interval(r, task, metric) if v is not None else None
                    ci = (iv.low, cast(float, iv.high)) if iv is not None and iv.low is not None else None  # an Interval's low and high are None together
                    paper = ref.value if ref and not lost(r, task) else None  # no paper tick on a bar made without the authors' layout
                    bars.append(Bar(label, r.column, name, task, metric, v, doc_count(bench, r, task, metric) if v is not None else None, paper, ci))
    all_notes = protocol_notes()
    short = [note.short for key, note in all_notes.items() if key in notes]
    return Chart(spec.slug, spec.title, bars, f"paper: {paper_model}" + (f" ({', '.join(short)})" if short else ""), spec.score_scale)


def draw_chart(chart: Chart) -> Figure:
    """The matplotlib Figure of a chart (the caller saves and closes it). Bars: one colour per run,
    hatched for a chart's second series; a black whisker for its 95 % bootstrap interval; over each bar its value and ``n=<docs>`` (a 0 bar has no
    height to see), ``n/a`` where there is no value; a black tick across a bar at the reference
    model's value. Every run and series is in the legend, even one with no bar drawn."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib, ~0.2 s), only when a chart is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib, after its backend is set)
    from matplotlib.lines import Line2D  # noqa: PLC0415 - heavy (matplotlib), only when a chart is drawn
    from matplotlib.patches import Patch  # noqa: PLC0415 - heavy (matplotlib), only when a chart is drawn

    groups = list(dict.fromkeys(b.group for b in chart.bars))
    series = list(dict.fromkeys(b.series for b in chart.bars))
    runs = list(dict.fromkeys(b.run for b in chart.bars))
    slots = [(s, r) for s in series for r in runs if any(b.series == s and b.run == r for b in chart.bars)]
    width = 0.8 / max(1, len(slots))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    top = 5.0 if chart.score_scale else 100.0
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(groups) * max(1, len(slots)) / 2 + 3), 3.8))

    def style(run: str, name: str) -> dict:
        return {"facecolor": colours[runs.index(run) % len(colours)], "hatch": "//" if series.index(name) else None, "edgecolor": "white"}

    for b in chart.bars:
        k = slots.index((b.series, b.run))
        x = groups.index(b.group) + (k - (len(slots) - 1) / 2) * width
        if b.value is None:
            ax.text(x, top * 0.01, UNAVAILABLE, ha="center", va="bottom", fontsize=6, color="grey")
        else:
            ax.bar(x, b.value, width, **style(b.run, b.series))
            label_at = b.value
            if b.ci is not None:
                ax.errorbar(x, b.value, yerr=[[max(0.0, b.value - b.ci[0])], [max(0.0, b.ci[1] - b.value)]], fmt="none", ecolor="black", elinewidth=0.8, capsize=2, zorder=4)
                label_at = max(b.value, b.ci[1])
            ax.text(x, label_at + top * 0.01, f"{b.value:.3g}", ha="center", va="bottom", fontsize=6)
            if b.docs is not None:
                ax.text(x, label_at + top * 0.045, f"n={b.docs}", ha="center", va="bottom", fontsize=5, color="dimgrey")
        if b.paper is not None:
            ax.hlines(b.paper, x - width / 2, x + width / 2, colors="black", linewidth=2.5, zorder=3)
    handles: list[Artist] = [Patch(label=r + (f" · {s_}" if len(series) > 1 and s_ else ""), **style(r, s_)) for s_, r in slots]
    if any(b.paper is not None for b in chart.bars):
        handles.insert(0, Line2D([], [], color="black", linewidth=2.5, label=chart.paper_label))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, top * 1.08)
    ax.set_ylabel("score (1-5)" if chart.score_scale else "%")
    ax.set_title(chart.title, fontsize=9)
    ax.legend(handles=handles, fontsize=7)
    fig.tight_layout()
    return fig


def _save(fig: Figure, out_dir: str, slug: str) -> str:
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib), only when a chart is saved

    path = os.path.join(out_dir, f"{slug}.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot(bench: Benchmark, charts: list[Chart], out_dir: str) -> list[str]:
    """Write the charts that have a number to show; returns their paths."""
    return [_save(draw_chart(c), out_dir, c.slug) for c in charts if any(b.value is not None for b in c.bars)]


def draw_reliability(chart: ReliabilitySpec) -> Figure:
    """The matplotlib Figure of a reliability diagram (the caller saves and closes it): per bin and run a
    bar at the bin's accuracy, a black tick across it at the bin's mean confidence and ``n`` over it; the
    diagonal is perfect calibration; the legend gives each run's ECE and the docs binned."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib, ~0.2 s), only when a chart is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib, after its backend is set)
    from matplotlib.lines import Line2D  # noqa: PLC0415 - heavy (matplotlib), only when a chart is drawn
    from matplotlib.patches import Patch  # noqa: PLC0415 - heavy (matplotlib), only when a chart is drawn

    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1)
    k = len(chart.series)
    handles: list[Artist] = [Line2D([], [], linestyle="--", color="grey", label="perfect calibration"), Line2D([], [], color="black", linewidth=2, label="mean confidence in bin")]
    for i, (run, bins, ece) in enumerate(chart.series):
        colour = colours[i % len(colours)]
        for b in bins:
            if not b["n"]:
                continue
            width = (b["hi"] - b["lo"]) * 0.9 / k
            x = b["lo"] + (b["hi"] - b["lo"]) * 0.05 + width * (i + 0.5)
            ax.bar(x, b["accuracy"], width, color=colour, edgecolor="white")
            ax.hlines(b["confidence"], x - width / 2, x + width / 2, colors="black", linewidth=2, zorder=3)
            ax.text(x, max(b["accuracy"], b["confidence"]) + 0.02, f"n={b['n']}", ha="center", va="bottom", fontsize=5, color="dimgrey")
        binned = sum(b["n"] for b in bins)
        handles.append(Patch(color=colour, label=f"{run}: ECE {chart.ece_format(ece)} (n={binned} binned)"))
    handles.append(Line2D([], [], linestyle="none", label=chart.paper_label))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("confidence (the answer's largest normalised probability)")
    ax.set_ylabel("accuracy in bin")
    ax.set_title(chart.title, fontsize=8)
    ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # outside: bars reach every corner
    fig.tight_layout()
    return fig


def plot_reliability(charts: list[ReliabilitySpec], out_dir: str) -> list[str]:
    return [_save(draw_reliability(c), out_dir, c.slug) for c in charts]


# --------------------------------------------------------------------------- trend (a sweep)


@dataclass
class TrendLine:
    name: str  # "task · metric"
    values: list  # per run: float or None
    lows: list
    highs: list
    paper: float | None  # the reference model's value: a dashed line
    score_scale: bool = False  # a 1-5 judge score: drawn on its own axis, on the right


@dataclass
class Trend:
    slug: str
    title: str
    runs: list[str]
    steps: list[int] | None  # the x axis when every run has a training step, else run order
    lines: list[TrendLine]
    paper_label: str


def build_trend(bench: Benchmark, keys: list[tuple[str, str]], runs: list[Run], paper_model: str) -> Trend:
    """A benchmark's headline metrics against run order (or step), with their 95 % intervals."""
    lines = []
    for t, m in keys:
        values, lows, highs = [], [], []
        for r in runs:
            present, v = r.value(t, m)
            iv = interval(r, t, m) if present and v is not None else None
            values.append(v if present else None)
            lows.append(iv.low if iv is not None else None)
            highs.append(iv.high if iv is not None else None)
        ref = paper_value(bench, paper_model, t, m) if paper_comparable(runs, t, m) else None
        lines.append(TrendLine(f"{t} · {m}", values, lows, highs, ref.value if ref else None, score_scale=m.endswith("_score") and all(v is None or v <= 5 for v in values)))
    steps = [r.step for r in runs]
    return Trend(f"{bench.name}_trend", f"{bench.title}: headline metrics across runs (95% intervals shaded)", [r.column for r in runs],
                 cast("list[int]", steps) if all(s is not None for s in steps) else None, lines, f"paper: {paper_model} (dashed)")


def draw_trend(chart: Trend) -> Figure:
    """The matplotlib Figure of a trend chart: a line per headline metric over the runs in order (or their
    steps), its 95 % band shaded, the paper's number as a dashed line of the same colour; a run without
    a value is a gap."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib, ~0.2 s), only when a chart is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib, after its backend is set)

    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    x = chart.steps if chart.steps is not None else list(range(len(chart.runs)))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(x) + 4), 4.0))
    right = ax.twinx() if any(line.score_scale for line in chart.lines) else None
    handles: list[Artist] = []
    for i, line in enumerate(chart.lines):
        colour = colours[i % len(colours)]
        axis = right if line.score_scale else ax
        assert axis is not None  # `right` was made since a line is on the score scale
        ys = [float("nan") if v is None else v for v in line.values]
        handles += axis.plot(x, ys, marker="o", markersize=3, color=colour, label=line.name + (" (right axis)" if line.score_scale else ""))
        lo = [float("nan") if v is None else v for v in line.lows]
        hi = [float("nan") if v is None else v for v in line.highs]
        axis.fill_between(x, lo, hi, color=colour, alpha=0.15, linewidth=0)
        if line.paper is not None:
            axis.axhline(line.paper, color=colour, linestyle="--", linewidth=1)
    if right is not None:
        right.set_ylabel("score (1-5)")
    if chart.steps is None:
        ax.set_xticks(x)
        ax.set_xticklabels(chart.runs, rotation=30, ha="right", fontsize=7)
        ax.set_xlabel("run (in order)")
    else:
        ax.set_xlabel("training step")
    ax.set_ylabel("%")
    ax.set_title(chart.title + (f"; {chart.paper_label}" if any(line.paper is not None for line in chart.lines) else ""), fontsize=8)
    ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.08 if right is not None else 1.02, 1.0))
    fig.tight_layout()
    return fig


def plot_trend(bench: Benchmark, chart: Trend, out_dir: str) -> str | None:
    """Write the trend chart when some run has a number; its path."""
    if not any(v is not None for line in chart.lines for v in line.values):
        return None
    return _save(draw_trend(chart), out_dir, chart.slug)
