"""``report.html``: the report as a page opened from disk, with a browser of every sample.

Layout of the report folder (nothing is fetched from anywhere else; the page works from ``file://``)::

    report.html            the tables, charts and paired comparisons of report.md, then the sample browser
    browser/app.js, app.css  the browser (no framework, no CDN)
    browser/index.js       the runs, the tasks and their groups, one line per task (with the runs that
                           lost the authors' layout of the task: its banner; and the size each run's
                           figures of the task reached the model at: ``budget``, :mod:`..budget`)
    browser/data/t<N>.js   one task's docs over the runs (what the list and its filters read), loaded when
                           the task is opened
    browser/data/t<N>_r<K>.js  run K's responses, judge and headline records of that task's docs, loaded
                           for the runs the page shows in full (every run up to FULL_RUNS, else the chosen)
    browser/img/<hash>.jpg the docs' figures as thumbnails, browser/large/<hash>.jpg their large copies
                           for the overlay, under a byte budget (see :mod:`.images`)

Data files are scripts calling ``EARTHSCI.index(...)`` / ``EARTHSCI.task(...)`` because a ``file://``
page cannot ``fetch()`` local files in Chromium. A Content-Security-Policy allows scripts, styles and
images from the report's own files only; every text from a run is JSON data set with ``textContent``.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast
from urllib.parse import quote

from lmms_eval_earthsci.commands.report.budget import browser_lines as budget_lines
from lmms_eval_earthsci.commands.report.html.images import DEFAULT_FIGURE_BUDGET_MB, LargeBudget, ThumbStore, run_images
from lmms_eval_earthsci.commands.report.html.markdown import to_html
from lmms_eval_earthsci.commands.report.html.samples import NOT_RIGHT, leaf_tasks, task_docs, view
from lmms_eval_earthsci.commands.report.layout_marks import LOST, NOT_OBSERVED, SERVER, UNOBSERVED, task_layout
from lmms_eval_earthsci.commands.report.paper_tables import SECTION as PAPER_TABLES
from lmms_eval_earthsci.commands.report.runs import Run
from lmms_eval_earthsci.core.adapter.harness import group_leaves
from lmms_eval_earthsci.core.benchmark import Benchmark

#: the ids the page and its browser (app.js) use: no report heading takes one
PAGE_IDS = ("samples", "browser", "overlay", "overlay-img", "overlay-caption", "layout-banner", "budget-banner", "match-count", "empty-hint", "export-jsonl", "export-csv", "f-task", "f-run", "f-q", "f-pair")
ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")
CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'none'; base-uri 'none'; form-action 'none'"


def _js(payload: Any) -> str:
    """JSON for a script file: ASCII only, and no ``</`` (inert even if the file is ever inlined)."""
    return json.dumps(payload, ensure_ascii=True, separators=(",", ":"), default=str).replace("</", "<\\/")


def fragment(**parts: object) -> str:
    """A link into the sample browser: ``#samples?k=v&...``, each key and value percent-encoded on its own
    (as app.js builds and parses them), so that ``&``, ``=``, ``%``, ``#`` and any text round-trip."""
    return "#samples?" + "&".join(f"{quote(str(k), safe='')}={quote(str(v), safe='')}" for k, v in parts.items())


def _paired_links(runs: Sequence[Run], base: Run | None = None) -> Callable[[str, list[str], int, str, str], str]:
    """A cell rewriter: the discordant counts "x/y" of the paired comparisons and of the changes against
    the baseline link to the browser's disagreement filter for that task and those two runs."""
    columns = {r.column: i for i, r in enumerate(runs)}
    where = {"Paired comparisons": 9, "Changes against the baseline": 11}

    def cell(section: str, row: list[str], index: int, content: str, heading: str = "") -> str:
        if where.get(section) != index or len(row) <= index:
            return content
        m = re.fullmatch(r"(\d+)/(\d+)", row[index].strip())
        pair = row[2].split(" − ") if section == "Paired comparisons" else [row[2], base.column if base is not None else ""]
        if not m or len(pair) != 2 or pair[0] not in columns or pair[1] not in columns:
            return content
        b, a = columns[pair[0]], columns[pair[1]]
        task = row[0].strip().strip("`")
        def link(who: str, n: str) -> str:
            return f'<a class="mcnemar" href="{html.escape(fragment(task=task, pair=who, a=a, b=b))}">{n}</a>'
        return f"{link('b_right', m.group(1))}/{link('a_right', m.group(2))}"

    return cell


FULL_RUNS = 4  # up to this many runs every run's details load with a task; past it, the runs chosen


def _priority(bench: Benchmark, task: str, runs: Sequence[Run]) -> list[str]:
    """The task's doc ids in the order their large figures are made (:class:`.images.LargeBudget`): docs
    the runs disagree on (right in one, not right in another), then docs some run did not get right, then
    the rest; doc order within each."""
    spec = bench.report_spec()
    verdicts: dict[str, set] = {}
    for r in runs:
        for sample in r.samples.get(task, ()) if task in r.samples else ():
            verdicts.setdefault(str(sample.get("doc_id")), set()).add(view(spec, task, sample)["verdict"])

    def tier(doc: str) -> int:
        v = verdicts[doc]
        wrong = bool(v & set(NOT_RIGHT))
        return 0 if wrong and "right" in v else 1 if wrong else 2

    return sorted(verdicts, key=lambda d: (tier(d), (0, int(d)) if d.isdigit() else (1, 0), d))


def _layouts(runs: Sequence[Run], task: str) -> list[dict[str, Any]]:
    """The runs whose prompts of ``task`` did not reach the model as the authors wrote them (lost), or
    whose server decides it: run label, status, class, what was lost, the fix."""
    out = []
    for r in runs:
        lay = task_layout(r, task)
        if lay.status in (LOST, SERVER):
            out.append({"run": r.column, "status": lay.status, "class": lay.cls, "lost": list(lay.lost), "fix": lay.fix})
        elif lay.status == NOT_OBSERVED:
            out.append({"run": r.column, "status": UNOBSERVED, "class": lay.cls, "lost": [], "fix": lay.fix})
    return out


def _size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) if os.path.isdir(path) else 0


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n / 1024:,.0f} KiB"


def write_html(
    runs: Sequence[Run], benches: Sequence[Benchmark], out_dir: str, markdown: str, images: bool = True, base: Run | None = None, figure_budget_mb: float | None = None,
    cell_notes: Mapping[tuple[str, tuple[str, ...], int], str] | None = None,
) -> tuple[str, str]:
    """Write ``report.html`` and ``browser/`` into ``out_dir`` (beside report.md); returns (the page's
    path, a line on the folder's size). ``figure_budget_mb``: the large copies' budget
    (default :data:`.images.DEFAULT_FIGURE_BUDGET_MB`; 0: none). ``cell_notes``: text shown after a cell of
    the "Paper tables" section, keyed by (its table's heading, the row's Markdown cells, the column's index):
    a run's 95% interval."""
    browser = os.path.join(out_dir, "browser")
    data_dir = os.path.join(browser, "data")
    for sub in ("data", "large"):  # a task or figure no longer in the report leaves no file behind
        if os.path.isdir(os.path.join(browser, sub)):
            shutil.rmtree(os.path.join(browser, sub))
    os.makedirs(data_dir, exist_ok=True)
    for name in ("app.js", "app.css"):
        shutil.copyfile(os.path.join(ASSETS, name), os.path.join(browser, name))

    tasks = [(b, t) for b in benches for t in leaf_tasks(b, runs)]
    figures: dict[str, dict] = {t: {} for _, t in tasks}  # task -> doc id -> thumbnails or why there are none
    large: set[tuple[str, str]] = set()
    budget_mb = DEFAULT_FIGURE_BUDGET_MB if figure_budget_mb is None else figure_budget_mb
    order = {t: _priority(b, t, runs) for b, t in tasks} if images else {}
    budget = LargeBudget(int(budget_mb * 2**20), {t: len(ids) for t, ids in order.items()})
    if images and tasks:
        store = ThumbStore(os.path.join(browser, "img"))
        pending = dict(order)
        for r in runs:  # each doc's figures from the first run that has it
            logged = {t: {str(s.get("doc_id")) for s in r.samples.get(t, [])} for t in pending}
            mine = {t: [d for d in ids if d in logged[t]] for t, ids in pending.items()}
            mine = {t: ids for t, ids in mine.items() if ids}
            if not mine:
                continue
            got, big = run_images(r, mine, store, budget)
            large |= big
            for t, by_doc in got.items():
                figures[t].update(by_doc)
                pending[t] = [x for x in pending[t] if x not in by_doc]
    index: dict = {"runs": [r.column for r in runs], "full_runs": FULL_RUNS, "tasks": [], "groups": {}}
    pngs = [f for f in os.listdir(out_dir) if f.endswith(".png")]
    names = {t for _, t in tasks} | {t for r in runs for t in r.results}
    for n, (b, t) in enumerate(tasks):
        detail_files: list[str | None] = [None] * len(runs)

        def write_details(i: int, by_doc: Mapping[str, dict], n: int = n, t: str = t, detail_files: list[str | None] = detail_files) -> None:
            if by_doc:  # one run's details of the task, written as the run is read
                detail_files[i] = f"browser/data/t{n}_r{i}.js"
                with open(os.path.join(out_dir, cast(str, detail_files[i])), "w", encoding="ascii") as f:
                    f.write(f"EARTHSCI.details({_js(t)},{i},{_js(by_doc)});\n")

        data = task_docs(b, t, runs, write_details)  # one task at a time: a sweep's docs fit in memory
        for d in data["docs"]:
            if d["id"] in figures[t]:
                d["images"] = figures[t][d["id"]]
                if (t, d["id"]) in large:
                    d["large"] = True
        with open(os.path.join(data_dir, f"t{n}.js"), "w", encoding="ascii") as f:
            f.write(f"EARTHSCI.task({_js(t)},{_js(data)});\n")
        # the report's own charts of this task (MAC's reliability diagram, MSEarth's breakdowns, ...)
        charts = sorted(f for f in pngs if max((x for x in names if f.startswith(x + "_")), key=len, default=None) == t)
        entry: dict[str, Any] = {"name": t, "benchmark": b.title, "file": f"browser/data/t{n}.js", "details": detail_files, "n": len(data["docs"]), "charts": charts}
        layouts = _layouts(runs, t)
        if layouts:  # the task's banner: a run that lost the authors' layout, or whose server decides it
            entry["layout"] = layouts
        reached = budget_lines(list(runs), base, t)
        if reached:  # beside it: the size each run's figures reached the model at (runs that recorded it)
            entry["budget"] = reached
        index["tasks"].append(entry)
        del data
    have = {t for _, t in tasks}
    for r in runs:
        for g in r.subtasks:
            leaves = [t for t in group_leaves(g, r.subtasks) if t in have]
            if leaves:
                index["groups"][g] = sorted(set(index["groups"].get(g, [])) | set(leaves))
    with open(os.path.join(browser, "index.js"), "w", encoding="ascii") as f:
        f.write(f"EARTHSCI.index({_js(index)});\n")
    n_docs = sum(len(ids) for ids in order.values())
    sizes = {k: _size(os.path.join(browser, k)) for k in ("data", "img", "large")}
    summary = (
        f"browser/: {_mib(sum(sizes.values()))} (data {_mib(sizes['data'])}, thumbnails {_mib(sizes['img'])}, "
        f"large figures {_mib(sizes['large'])} for {len({d for d in large}):,} of {n_docs:,} docs under a {budget_mb:g} MB budget: --figure-budget)"
        if images else f"browser/: {_mib(sizes['data'])} of data (no figures: --no-images)"
    )

    links = _paired_links(runs, base)
    notes = dict(cell_notes or {})

    def cell(section: str, row: list[str], index: int, content: str, heading: str) -> str:
        extra = notes.get((heading, tuple(row), index)) if section == PAPER_TABLES else None
        return f'{content} <span class="ci">{html.escape(extra)}</span>' if extra else links(section, row, index, content, heading)

    body = to_html(markdown, cell=cell, reserved=PAGE_IDS)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lmms_eval_earthsci report</title>
<link rel="stylesheet" href="browser/app.css">
<script src="browser/app.js"></script>
<script src="browser/index.js"></script>
</head><body>
<nav class="toc"><a href="#headline">Headline</a><a href="#samples">Samples</a></nav>
{body}
<h2 id="samples">Samples</h2>
<p>Every doc of every run: its figures (click one to enlarge it), the prompt as sent, each run's raw response,
the answer as scored and what decided it, the verdict (and why there is none), and the judge's record.
Filter by task, verdict ("not right": wrong, no answer or judge failed, as the paired comparisons count),
breakdown field or text; with two or more runs, by disagreement (the paired comparisons' discordant counts
above link here). Every view has its own link.</p>
<div id="browser"><p>The sample browser needs JavaScript.</p></div>
</body></html>
"""
    path = os.path.join(out_dir, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path, summary

