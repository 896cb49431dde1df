"""``report.html``: the report as a page opened from disk, with a browser of every sample.

Layout of the report folder (nothing is fetched from anywhere else; the page works from ``file://``)::

    report.html            the tables, charts and paired comparisons of report.md, then the sample browser
    browser/app.js, app.css  the browser (no framework, no CDN)
    browser/index.js       the runs, the tasks and their groups, one line per task
    browser/data/t<N>.js   one task's docs over the runs, loaded when the task is opened
    browser/img/<hash>.jpg the docs' figures as thumbnails (see :mod:`.images`)

Data files are scripts calling ``EARTHSCI.index(...)`` / ``EARTHSCI.task(...)`` because a ``file://``
page cannot ``fetch()`` local files in Chromium. A Content-Security-Policy allows scripts, styles and
images from the report's own files only; every text from a run is JSON data set with ``textContent``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from typing import Sequence

from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.harness import group_leaves
from lmms_eval_earthsci.report.html.markdown import to_html
from lmms_eval_earthsci.report.html.samples import leaf_tasks, task_docs
from lmms_eval_earthsci.report.runs import Run

ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")
CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'none'; base-uri 'none'; form-action 'none'"


def _js(payload) -> str:
    """JSON for a script file: ASCII only, and no ``</`` (inert even if the file is ever inlined)."""
    return json.dumps(payload, ensure_ascii=True, separators=(",", ":"), default=str).replace("</", "<\\/")


def _paired_links(runs: Sequence[Run], base: Run | None = None):
    """A cell rewriter: the discordant counts "x/y" of the paired comparisons and of the changes against
    the baseline link to the browser's disagreement filter for that task and those two runs."""
    columns = {r.column: i for i, r in enumerate(runs)}
    where = {"Paired comparisons": 9, "Changes against the baseline": 11}

    def cell(section: str, row: list[str], index: int, content: str) -> str:
        if where.get(section) != index or len(row) <= index:
            return content
        m = re.fullmatch(r"(\d+)/(\d+)", row[index].strip())
        pair = row[2].split(" − ") if section == "Paired comparisons" else [row[2], base.column if base is not None else ""]
        if not m or len(pair) != 2 or pair[0] not in columns or pair[1] not in columns:
            return content
        b, a = columns[pair[0]], columns[pair[1]]
        task = re.sub(r"[^\w.-]", "", row[0])
        link = lambda who, n: f'<a class="mcnemar" href="#samples?task={task}&amp;pair={who}&amp;a={a}&amp;b={b}">{n}</a>'
        return f"{link('b_right', m.group(1))}/{link('a_right', m.group(2))}"

    return cell


def write_html(runs: Sequence[Run], benches: Sequence[Benchmark], out_dir: str, markdown: str, images: bool = True, base: Run | None = None) -> str:
    """Write ``report.html`` and ``browser/`` into ``out_dir`` (beside report.md); returns the page's path."""
    from lmms_eval_earthsci.report.html.images import ThumbStore, run_images

    browser = os.path.join(out_dir, "browser")
    data_dir = os.path.join(browser, "data")
    if os.path.isdir(data_dir):
        shutil.rmtree(data_dir)  # a task no longer in the report leaves no file behind
    os.makedirs(data_dir, exist_ok=True)
    for name in ("app.js", "app.css"):
        shutil.copyfile(os.path.join(ASSETS, name), os.path.join(browser, name))

    tasks = [(b, t) for b in benches for t in leaf_tasks(b, runs)]
    figures: dict[str, dict] = {t: {} for _, t in tasks}  # task -> doc id -> thumbnails or why there are none
    if images and tasks:
        store = ThumbStore(os.path.join(browser, "img"))
        pending = {t: sorted({str(s.get("doc_id")) for r in runs if t in r.samples for s in r.samples[t]}) for _, t in tasks}
        for r in runs:  # each doc's figures from the first run that has it
            logged = {t: {str(s.get("doc_id")) for s in r.samples.get(t, [])} for t in pending}
            mine = {t: [d for d in ids if d in logged[t]] for t, ids in pending.items()}
            mine = {t: ids for t, ids in mine.items() if ids}
            if not mine:
                continue
            got = run_images(r, mine, store)
            for t, by_doc in got.items():
                figures[t].update(by_doc)
                pending[t] = [x for x in pending[t] if x not in by_doc]
    index = {"runs": [r.column for r in runs], "tasks": [], "groups": {}}
    pngs = [f for f in os.listdir(out_dir) if f.endswith(".png")]
    names = {t for _, t in tasks} | {t for r in runs for t in r.results}
    for n, (b, t) in enumerate(tasks):
        docs = task_docs(b, t, runs)  # one task's docs over every run at a time: a sweep's fit in memory
        for d in docs:
            if d["id"] in figures[t]:
                d["images"] = figures[t][d["id"]]
        with open(os.path.join(data_dir, f"t{n}.js"), "w", encoding="ascii") as f:
            f.write(f"EARTHSCI.task({_js(t)},{_js({'docs': docs})});\n")
        # the report's own charts of this task (MAC's reliability diagram, MSEarth's breakdowns, ...)
        charts = sorted(f for f in pngs if max((x for x in names if f.startswith(x + "_")), key=len, default=None) == t)
        index["tasks"].append({"name": t, "benchmark": b.title, "file": f"browser/data/t{n}.js", "n": len(docs), "charts": charts})
        del docs
    have = {t for _, t in tasks}
    for r in runs:
        for g in r.subtasks:
            leaves = [t for t in group_leaves(g, r.subtasks) if t in have]
            if leaves:
                index["groups"][g] = sorted(set(index["groups"].get(g, [])) | set(leaves))
    with open(os.path.join(browser, "index.js"), "w", encoding="ascii") as f:
        f.write(f"EARTHSCI.index({_js(index)});\n")

    body = to_html(markdown, cell=_paired_links(runs, base))
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
<p>Every doc of every run: its figures, the prompt as sent, each run's response, extracted answer and verdict,
and the judge's record. Filter by task, verdict, breakdown field or text; with two or more runs, by
disagreement (the paired comparisons' discordant counts above link here). Every view has its own link.</p>
<div id="browser"><p>The sample browser needs JavaScript.</p></div>
</body></html>
"""
    path = os.path.join(out_dir, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path

