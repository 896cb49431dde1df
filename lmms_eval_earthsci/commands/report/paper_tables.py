"""The papers' own tables with the runs in them ("Paper tables" in ``report``).

Each benchmark's ``paper_numbers.json`` describes its paper's tables as data (``tables``), and its
``rows`` carry the printed numbers; nothing here names a benchmark. A table is rendered in the paper's
shape: its label columns, its columns in order with the printed headers, its rows in order with their
numbers at the printed scale and rounding, and each run as a row of its own (bold, ``run:``), placed
after the paper's last row of the same setting. A run's cell is our metric for the task the column and
setting name (a slice of it where the table says the paper's data are a slice of ours); a cell a run
cannot fill says why. The HTML shows each run cell's 95% interval; one CSV per table has every cell,
its interval and why a cell is empty.

A table (``tables.<name>``)::

    title       the paper's caption, shortened
    spec        where the printed table is (a heading of the benchmark's spec; the tests compare)
    select      {"field": [values]}: its rows are the file's rows whose field has one of the values
                (default: the rows whose "table" is the table's name)
    setting     the row field naming its setting (default "setting"); settings map to our tasks
    settings    {setting: printed label}; their order is the order of a run's rows
    labels      [{"field", "printed"}]: the label columns (default: model, and the setting if any)
    tasks       {setting: task} for every column (a column's own "tasks" or "task" overrides)
    run_tasks   {setting: task} for the runs' rows only, where the paper's rows of that setting repeat
                another table's numbers at another rounding (the report's paper reference keeps one)
    run_labels  {setting: {label field: text}}: what a run's row shows in a label column (MAC's Y / N)
    columns     {key: {"printed", "metric" (null: no metric of ours), "tasks" | "task", "decimals", "scale"}}
    decimals, scale   how values are printed (a value times scale, so a 0-100 metric prints 0.77)
    change      {"setting", "against", "columns"}: printed "v (↑d)" with d = v minus the same model's
                value in the other setting (EMMA: CoT minus Direct)
    slice       {"suffix", "note"}: a run's cell reads metric + suffix (the paper's data are that slice)
    note        what the reader must know (a deviation, a slice)
    rows_key    the list of the file holding its rows (default "rows")

A row may carry ``printed_change`` ({column: change}: the paper's arrows, computed from values it did not
publish) and ``as_printed`` ({column: text}: a cell printed unlike its column).
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report.intervals import interval
from lmms_eval_earthsci.commands.report.layout_marks import marked
from lmms_eval_earthsci.commands.report.papers import canonical_model, footnotes, paper_value
from lmms_eval_earthsci.commands.report.runs import Run, load_json
from lmms_eval_earthsci.commands.report.sections import _table
from lmms_eval_earthsci.core.benchmark import Benchmark, PaperValue
from lmms_eval_earthsci.yamlgen import version_of

SECTION = "Paper tables"
RUN_PREFIX = "run: "
MISSING = "-"  # the papers print "-" for a cell they have no number for

# why a run's cell is empty, as the cell says it (the CSV's note column has the long form)
NOT_RUN, NO_TASK, NO_METRIC, OTHER_SLICE, NO_JUDGE, NO_VALUE = "not run", "no task", "no metric", "another slice", "no judge", "n/a"
EMPTY = "no value of "  # the why of a metric present without a value (the notes list those metrics once)


@dataclass(frozen=True)
class Column:
    key: str
    printed: str
    metric: str | None
    tasks: Mapping[str | None, str]
    decimals: int
    scale: float
    mean_of: tuple[str, ...] = ()  # a run's value: the mean of these columns' (the paper's Overall of two equal-sized subsets)
    unit: str = ""  # printed after the number ("%")
    trim: bool = False  # trailing zeros dropped, as the paper prints them (0.5, not 0.50)

    def task(self, setting: str | None) -> str | None:
        return self.tasks.get(setting, self.tasks.get(None))


@dataclass(frozen=True)
class PaperTable:
    """One table of a paper, read from ``paper_numbers.json`` (see the module's docstring)."""
    bench: str
    name: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[Mapping[str, Any], ...]
    labels: tuple[tuple[str, str], ...]  # (row field, printed header)
    setting_field: str | None
    settings: Mapping[str, str] = field(default_factory=dict)  # setting -> printed label
    change: Mapping[str, Any] = field(default_factory=dict)
    slice_suffix: str = ""
    notes: tuple[str, ...] = ()
    spec: str = ""
    run_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "_", f"{self.bench} {self.name}".lower()).strip("_")

    def tasks(self) -> list[str]:
        """Every task a run of which fills a cell, in column order."""
        return list(dict.fromkeys(t for c in self.columns if c.metric and not c.mean_of for t in c.tasks.values()))

    def run_settings(self) -> list[str | None]:
        found = list(dict.fromkeys(s for c in self.columns for s in c.tasks))
        ordered = [s for s in self.settings if s in found] + [s for s in found if s not in self.settings]
        return ordered or [None]

    def setting_label(self, setting: str | None) -> str:
        if setting is None:
            return ""
        return self.settings.get(setting, setting)

    def fmt(self, column: Column, value: Any) -> str:
        if not _finite(value):
            return MISSING
        return number(value * column.scale, column)

    def data_only(self) -> bool:
        return not self.tasks()


def _values(v: Any) -> list:
    """A ``select`` entry's values: a list (a single value is a list of one, never a substring test)."""
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _finite(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def number(v: float, column: Column) -> str:
    text = f"{v:.{column.decimals}f}"
    if column.trim and "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + column.unit


def read_tables(bench: Benchmark) -> list[PaperTable]:
    """The paper tables a benchmark bundles (none without ``paper_numbers.json`` or its ``tables``)."""
    if not os.path.exists(bench.paper_numbers):
        return []
    return tables_of(bench.name, load_json(bench.paper_numbers, "paper-numbers JSON"))


def tables_of(bench: str, data: Mapping[str, Any]) -> list[PaperTable]:
    out = []
    for name, spec in (data.get("tables") or {}).items():
        where = spec.get("select")
        rows = [r for r in data.get(spec.get("rows_key", "rows"), []) if (all(r.get(k) in _values(v) for k, v in where.items()) if where is not None else r.get("table") == name)]
        setting_field = spec.get("setting", "setting")
        has_settings = bool(spec.get("tasks")) or any(c.get("tasks") for c in spec["columns"].values())
        several = len({s for c in spec["columns"].values() for s in {**(spec.get("tasks") or {}), **(c.get("tasks") or {})}} | {r.get(setting_field) for r in rows if r.get(setting_field)}) > 1
        labels = [(lab["field"], lab["printed"]) for lab in spec.get("labels", [])] or [("model", "Model")] + ([(setting_field, "Setting")] if several else [])
        columns = []
        for key, c in spec["columns"].items():
            tasks: dict[str | None, str] = {**(spec.get("run_tasks") or {}), **(spec.get("tasks") or {})}
            tasks.update(c.get("tasks") or {})
            if c.get("task"):
                tasks = {None: c["task"]}
            columns.append(Column(key, c.get("printed", key), c.get("metric"), tasks, int(c.get("decimals", spec.get("decimals", 2))), float(c.get("scale", spec.get("scale", 1))),
                                  tuple(c.get("mean_of") or ()), c.get("unit", spec.get("unit", "")), bool(c.get("trim", spec.get("trim", False)))))
        notes = [spec[k] for k in ("note",) if spec.get(k)] + ([spec["slice"]["note"]] if spec.get("slice", {}).get("note") else [])
        out.append(PaperTable(bench, name, spec.get("title", name), tuple(columns), tuple(rows), tuple(labels), setting_field if has_settings else None,
                              dict(spec.get("settings") or {}), dict(spec.get("change") or {}), (spec.get("slice") or {}).get("suffix", ""), tuple(notes), spec.get("spec", ""),
                              dict(spec.get("run_labels") or {})))
    return out


# --------------------------------------------------------------------------- cells


@dataclass
class Cell:
    text: str  # as printed in the table
    value: float | None = None  # on the printed scale
    low: float | None = None  # the 95% interval, on the printed scale (runs only)
    high: float | None = None
    why: str = ""  # why a run's cell is empty (long form)
    change: float | None = None
    stale: str = ""  # the task scored by an older version of ours, where that is why ("musciclaims_d (1.0; ours 1.3)")


def run_cell(table: PaperTable, column: Column, setting: str | None, run: Run) -> Cell:
    task = column.task(setting)
    if not column.metric:
        return Cell(NO_METRIC, why="no metric of ours computes this column")
    if not task:
        return Cell(NO_TASK, why=f"no task of ours runs the {table.setting_label(setting) or 'this'} setting")
    if task not in run.results:
        return Cell(NOT_RUN, why=f"{task} not in the run")
    metric = column.metric + table.slice_suffix
    present, v = run.value(task, metric)
    if not present:
        bench = registry.benchmark_of(task)
        scored, current = run.versions.get(task), (version_of(task, bench) if bench else None)
        stale = f"{task} ({scored}; ours {current})" if scored is not None and current is not None and _older(scored, current) else ""
        if table.slice_suffix and run.value(task, column.metric)[0]:
            return Cell(OTHER_SLICE, why=f"the run has {column.metric} over all its docs, not {metric}", stale=stale)
        return Cell(NO_VALUE, why=f"{task} has no {metric}", stale=stale)
    if not _finite(v):
        recorded = run.unavailable.get(task, {}).get(metric)
        bench = registry.benchmark_of(task)
        judged = bench is not None and metric in bench.report_spec().judged_metrics
        if recorded:
            return Cell(NO_VALUE, why=recorded)
        return Cell(NO_JUDGE, why=f"{metric} needs the judge, which the run had not") if judged else Cell(NO_VALUE, why=f"{EMPTY}{metric}")
    iv = interval(run, task, metric, keep=False)
    low, high = (iv.low, iv.high) if iv is not None and iv.low is not None else (None, None)
    scale = column.scale
    return Cell(marked(table.fmt(column, v), run, task), v * scale, None if low is None else low * scale, None if high is None else high * scale)


def _older(scored: Any, current: float) -> bool:
    try:
        return float(scored) < float(current)
    except (TypeError, ValueError):
        return False


def mean_cell(table: PaperTable, column: Column, parts: list[Cell]) -> Cell:
    """A column the paper computes as the mean of others (SciFIBench's Overall: CS and General, 500
    questions each, so the mean is the pooled accuracy); no interval of its own."""
    if parts and all(p.value is not None for p in parts):
        v = sum(p.value for p in parts if p.value is not None) / len(parts)
        return Cell(number(v, column), v, why=f"the mean of {' and '.join(column.mean_of)}, the paper's rule (no interval of its own)")
    missing = [p for p in parts if p.value is None]
    return Cell(missing[0].text if missing else NO_VALUE, why=missing[0].why if missing else "nothing to average")


def paper_cell(table: PaperTable, column: Column, row: Mapping[str, Any]) -> Cell:
    v = row.get(column.key)
    if not _finite(v):
        return Cell(MISSING)
    # a cell the paper printed unlike its column (MuSciClaims' Table 6 has one "0.5" among "0.50"s)
    return Cell((row.get("as_printed") or {}).get(column.key) or table.fmt(column, v), v * column.scale)


def _with_change(table: PaperTable, cells: list[Cell], against: list[Cell] | None, printed: Mapping[str, float] | None = None) -> None:
    """The change (``37.23 (↑2.15)``) on the change columns, against the other setting's row: a run's from
    its unrounded values, as the paper computed its own; a paper row's as printed where the data carry it
    (``printed_change``: the paper's unrounded values are not published, so 29.12 - 33.61 prints ↓4.48)."""
    keys = table.change.get("columns") or [c.key for c in table.columns]
    for i, col in enumerate(table.columns):
        if col.key not in keys or against is None:
            continue
        a, b = cells[i], against[i]
        if a.value is None or b.value is None:
            continue
        d = printed[col.key] if printed and col.key in printed else a.value - b.value
        a.change = d
        arrow = "↑" if d > 0 else "↓" if d < 0 else "±"
        a.text = f"{a.text} ({arrow}{abs(d):.{col.decimals}f})"


# --------------------------------------------------------------------------- rows


@dataclass
class Row:
    source: str  # "paper" or "run"
    labels: list[str]
    setting: str | None
    cells: list[Cell]
    who: str  # the model or the run


def _label(row: Mapping[str, Any], fieldname: str, table: PaperTable) -> str:
    v = row.get(fieldname)
    if fieldname == table.setting_field:
        return table.setting_label(v) if v is not None else MISSING
    return "" if v is None else str(v)


def paper_rows(table: PaperTable) -> list[Row]:
    out = [Row("paper", [_label(r, f, table) for f, _ in table.labels], r.get(table.setting_field) if table.setting_field else None,
               [paper_cell(table, c, r) for c in table.columns], str(r.get("model", ""))) for r in table.rows]
    if table.change and not table.change.get("runs_only"):
        by = {(r.who, r.setting): r for r in out}
        for r, data in zip(out, table.rows):
            if r.setting == table.change["setting"]:
                other = by.get((r.who, table.change["against"]))
                _with_change(table, r.cells, other.cells if other else None, data.get("printed_change") or {})
    return out


def run_rows(table: PaperTable, run: Run) -> list[Row]:
    """A run's rows: one per setting it ran any task of."""
    out = []
    for setting in table.run_settings():
        if not any(c.task(setting) in run.results for c in table.columns if c.metric):
            continue
        cells = [run_cell(table, c, setting, run) for c in table.columns]
        for i, c in enumerate(table.columns):
            if c.mean_of:
                cells[i] = mean_cell(table, c, [cells[j] for j, o in enumerate(table.columns) if o.key in c.mean_of])
        fixed = table.run_labels.get(setting or "", {})
        named = next((f for f, _ in table.labels if f != table.setting_field), None)  # the run's name goes in the first label that is not the setting
        shown = len(table.run_settings()) < 2 or setting in table.run_labels or any(f == table.setting_field for f, _ in table.labels)  # the row says its setting already
        name = run.column if shown else f"{run.column} · {table.setting_label(setting)}"
        labels = [table.setting_label(setting) if f == table.setting_field else f"**{RUN_PREFIX}{name}**" if f == named else fixed.get(f, "") for f, _ in table.labels]
        out.append(Row("run", labels, setting, cells, run.column))
    if table.change:
        by = {r.setting: r for r in out}
        mine = by.get(table.change["setting"])
        if mine is not None:
            other = by.get(table.change["against"])
            _with_change(table, mine.cells, other.cells if other else None)
    return out


def _blocked(rows: Sequence[Row]) -> bool:
    """Whether the paper prints its rows in one block per setting (EMMA's ✗ rows, then its ✓ rows), not
    model by model (MuSciClaims' D, RD per model)."""
    at: dict[str | None, list[int]] = {}
    for i, r in enumerate(rows):
        at.setdefault(r.setting, []).append(i)
    return len(at) > 1 and all(ix[-1] - ix[0] == len(ix) - 1 for s, ix in at.items() if s is not None)


def all_rows(table: PaperTable, runs: Sequence[Run]) -> list[Row]:
    """The paper's rows in its order, then the runs' rows: where the paper prints one block per setting, each
    run's row after its setting's block; otherwise at the end, in the order of the settings."""
    rows = paper_rows(table)
    blocked = bool(table.setting_field) and _blocked(rows)
    mine = [r for run in runs for r in run_rows(table, run)]
    if not blocked:
        order = {s: i for i, s in enumerate(table.run_settings())}
        return rows + sorted(mine, key=lambda r: order.get(r.setting, 0))  # stable: the runs' order within a setting
    for r in mine:
        at = max((i for i, p in enumerate(rows) if p.setting == r.setting), default=len(rows) - 1)
        rows.insert(at + 1, r)
    return rows


# --------------------------------------------------------------------------- the section


def interval_text(cell: Cell, decimals: int) -> str:
    """``(16.82–68.73)``: a run cell's 95% interval as report.html shows it after the value."""
    return f"({cell.low:.{decimals}f}–{cell.high:.{decimals}f})" if cell.low is not None and cell.high is not None else ""


CellNotes = dict[tuple[str, tuple[str, ...], int], str]  # (table heading, row's Markdown cells, column) -> text


def heading(table: PaperTable) -> str:
    return f"{table.name}: {table.title}"


def protocol_footnotes(bench: Benchmark | None, table: PaperTable) -> list[str]:
    """The benchmark's protocol notes that hold for the paper's numbers of this table (as the report's
    other tables print them under a paper number: MAC's calibration, EMMA's sampled open models)."""
    if bench is None:
        return []
    found: list[PaperValue | None] = []
    for r in table.rows:
        for c in table.columns:
            task = c.task(r.get(table.setting_field) if table.setting_field else None)
            if task and c.metric and r.get("model"):
                found.append(paper_value(bench, canonical_model(str(r["model"])), task, c.metric))
    return footnotes(found)


def render(table: PaperTable, runs: Sequence[Run], bench: Benchmark | None = None) -> tuple[str, list[Row], CellNotes]:
    """(the Markdown, the rows, the run cells' intervals for report.html)."""
    rows = all_rows(table, runs)
    header = [p for _, p in table.labels] + [c.printed for c in table.columns]
    body = [[x.replace("|", "/") for x in r.labels + [c.text for c in r.cells]] for r in rows]
    intervals: CellNotes = {}
    for r, line in zip(rows, body):
        if r.source == "run":
            for i, (c, col) in enumerate(zip(r.cells, table.columns)):
                text = interval_text(c, col.decimals)
                if text:
                    intervals[(heading(table), tuple(line), len(table.labels) + i)] = text
    out = [f"#### {heading(table)}", "", _table(header, body, label_columns=len(table.labels)), ""]
    notes = list(table.notes) + protocol_footnotes(bench, table)
    whys: dict[str, list[str]] = {}
    stale: list[str] = []
    for r in rows:
        for c in r.cells:
            if r.source == "run" and c.stale:
                stale.append(c.stale)
            elif r.source == "run" and c.why and c.value is None:
                whys.setdefault(c.text if c.text in (NOT_RUN, NO_TASK, NO_METRIC, OTHER_SLICE, NO_JUDGE) else c.why, []).append(c.why)
    if NOT_RUN in whys:
        missing = sorted({w.split(" ", 1)[0] for w in whys[NOT_RUN]})
        notes.append(f"not run: the run has no {', '.join(missing)}.")
    if NO_METRIC in whys:
        notes.append("no metric: no metric of ours computes the column (the paper's number is data only).")
    if NO_TASK in whys:
        notes.append("no task: " + "; ".join(sorted(set(whys[NO_TASK]))) + ".")
    if NO_JUDGE in whys:
        notes.append("no judge: " + "; ".join(sorted(set(whys[NO_JUDGE]))) + " (set EARTHSCI_JUDGE_*; `rescore` adds it to a logged run).")
    if OTHER_SLICE in whys:
        notes.append("another slice: " + sorted(set(whys[OTHER_SLICE]))[0] + "; rescore the run for the comparable cell.")
    if stale:
        notes.append(f"{OTHER_SLICE} / {NO_VALUE}: scored by an older version of the task, before the metric existed: {', '.join(dict.fromkeys(stale))}; `rescore` the run for these cells.")
    rest = [w for k, ws in whys.items() if k not in (NOT_RUN, NO_TASK, NO_METRIC, OTHER_SLICE, NO_JUDGE) for w in ws]
    empty = [w[len(EMPTY):] for w in dict.fromkeys(rest) if w.startswith(EMPTY)]
    if empty:
        notes.append(f"n/a: no value of {', '.join(empty)} in the run (no doc of the slice, or nothing to compute it from).")
    rest = [w for w in rest if not w.startswith(EMPTY)]
    if rest:
        notes.append("n/a: " + "; ".join(dict.fromkeys(rest)) + ".")
    if any(r.source == "run" for r in rows):
        notes.append(f"**{RUN_PREFIX}...** rows are this report's runs (their 95% intervals in report.html and `paper_tables/{table.slug}.csv`); the other rows are the paper's numbers as printed.")
    out += [n + "  " for n in notes] + [""]
    return "\n".join(out), rows, intervals


def write_csv(path: str, table: PaperTable, rows: Iterable[Row]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "setting", *[p for _, p in table.labels]] + [f"{c.key}{s}" for c in table.columns for s in ("", "_text", "_ci_low", "_ci_high", "_change", "_note")])
        for r in rows:
            cells: list[Any] = []
            for c, col in zip(r.cells, table.columns):
                def num(v: float | None, col: Column = col) -> Any:
                    return "" if v is None else round(v, col.decimals + 6)  # the scale's float noise (0.47000000000000003) off
                cells += [num(c.value), c.text, num(c.low), num(c.high), num(c.change), c.why]
            w.writerow([r.source, r.setting or "", *[lab.replace("**", "") for lab in r.labels], *cells])


def section(benches: Sequence[Benchmark], runs: Sequence[Run], out_dir: str) -> tuple[str, CellNotes]:
    """The "Paper tables" section (Markdown) for every benchmark that ran, its CSVs written under
    ``out_dir/paper_tables``, and the run cells' intervals for report.html."""
    out: list[str] = []
    intervals: CellNotes = {}
    for bench in benches:
        tables = read_tables(bench)
        shown, idle, data_only = [], [], []
        for t in tables:
            if t.data_only():
                data_only.append(t.name)
            elif any(task in r.results for r in runs for task in t.tasks()):
                shown.append(t)
            else:
                idle.append(f"{t.name} ({', '.join(t.tasks())})")
        if not tables:
            continue
        out += [f"### {bench.title}", ""]
        if not shown:
            out += ["No run has a task of the paper's tables." if idle else "", ""]
        for t in shown:
            text, rows, ivs = render(t, runs, bench)
            out.append(text)
            intervals.update(ivs)
            write_csv(os.path.join(out_dir, "paper_tables", f"{t.slug}.csv"), t, rows)
        if idle:
            out += [f"Not shown, no run has their tasks: {'; '.join(idle)}.", ""]
        if data_only:
            out += [f"Data only (no metric of ours; in `paper_numbers.json`): {', '.join(data_only)}.", ""]
    if not out:
        return "", intervals
    head = [f"## {SECTION}", "",
            "Each paper's own tables, in its shape: its rows in its order with its numbers, at its scale and rounding, and each run as a row of its own. "
            "A run's cell that cannot be filled says why (not run, no judge, another slice, no metric).", ""]
    return "\n".join(head + out), intervals
