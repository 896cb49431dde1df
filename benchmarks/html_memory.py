"""Memory and speed of report.html's sample browser at 20,000 samples per run, for 2 runs and for a sweep
of 20 (the goals of the sample-browser issue: at 2 runs the page under 500 MB, Python under 2 GB, the
first table under 2 s, a filter under 200 ms; at 20 runs what it costs, the page still usable).

    .venv/bin/python benchmarks/html_memory.py [--runs 2,20] [--run DEMO_RUNS_DIR] [--compare REV] [--keep DIR]

The runs are copies of the demo's lmms-eval run with the `earthsci` suite's doc counts (20,257 samples
per run; benchmarks/sweep_report.py), a quarter of the verdicts flipped per run, each response padded to
~1.5 KB (a chain of thought's length). Each report (`html=True, images=False`) is written in a fresh
process: its wall time and peak RSS. The page, in headless Chromium from file://: the first table shown,
opening the task with the most data until every shown run's details are in, V8's and Blink's heap after a
garbage collection (CDP) and the renderer process's resident memory (the page's whole cost), a verdict
filter (median of 6 clicks), a text search. `--compare REV` measures the package at git revision REV side by side
(a worktree on PYTHONPATH), on the same runs, and prints the ratios.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_report import demo_results, make_sweep  # noqa: E402  (the sweep's runs, as that benchmark makes them)

CHILD = """
import resource, sys, time
t0 = time.perf_counter()
import lmms_eval_earthsci
from lmms_eval_earthsci.commands.report import write_report
write_report(sys.argv[1].split(","), sys.argv[2], html=True, images=False, resamples=200)
print(lmms_eval_earthsci.__file__, time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
PAD = "Looking at the figure, the axis shows the quantity rising and then falling; comparing the panels, " * 16


def pad_responses(folder: str) -> None:
    """Each sample's responses ~1.5 KB long, deterministic (the demo's tiny model writes a few words)."""
    for path in glob.glob(os.path.join(folder, "**", "*_samples_*.jsonl"), recursive=True):
        out = []
        with open(path) as f:
            for line in f:
                s = json.loads(line)
                text = PAD[: 1400 + (s["doc_id"] * 37) % 200] + " " + str(s.get("filtered_resps", ""))[:60]
                s["resps"], s["filtered_resps"] = [[text]], [text]
                out.append(json.dumps(s))
        with open(path, "w") as f:
            f.write("\n".join(out) + "\n")


def python_side(folders: list[str], out: str, pythonpath: str | None) -> tuple[float, float, str]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # from the output's folder: `python -c` puts the working folder first on sys.path (a checkout's package)
    proc = subprocess.run([sys.executable, "-c", CHILD, ",".join(folders), out], env=env, capture_output=True, text=True, cwd=os.path.dirname(out))
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    module, seconds, kb = proc.stdout.split()[-3:]
    return float(seconds), int(kb) / 1024 / 1024, module


def renderer_mb() -> float:
    """Resident memory of the Chromium renderers this process started (through Playwright's driver): the
    page's whole cost, its JS heap, the DOM and the strings V8 keeps outside its heap alike."""
    parent, kids = {}, {}
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(os.path.join(d, "stat")) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(os.path.join(d, "cmdline"), "rb") as f:
                kids[int(d[6:])] = f.read().replace(b"\0", b" ")
            parent[int(d[6:])] = ppid
        except (OSError, ValueError, IndexError):
            continue

    def ours(pid: int) -> bool:
        while pid in parent:
            if parent[pid] == os.getpid():
                return True
            pid = parent[pid]
        return False

    kb = 0
    for pid, cmd in kids.items():
        if b"--type=renderer" in cmd and ours(pid):
            try:
                with open(f"/proc/{pid}/status") as f:
                    kb += next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
            except (OSError, StopIteration):
                continue
    return kb / 1024


def heap_mb(cdp) -> float:
    """V8's heap after a garbage collection, its own objects and the embedder's (Blink's) together."""
    cdp.send("HeapProfiler.collectGarbage")
    use = cdp.send("Runtime.getHeapUsage")
    return (use["usedSize"] + use.get("embedderHeapUsedSize", 0)) / 2**20


def largest_task(out: str) -> str:
    """The task whose data files (its list and every run's details) weigh most: the worst one to open."""
    with open(os.path.join(out, "browser", "index.js")) as f:
        text = f.read()
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    return max(index["tasks"], key=lambda t: sum(os.path.getsize(os.path.join(out, p)) for p in [t["file"], *t.get("details", [])]))["name"]


def page_side(out: str, task: str) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        cdp = page.context.new_cdp_session(page)
        t = time.perf_counter()
        page.goto(f"file://{out}/report.html", wait_until="commit")
        page.wait_for_selector("table")
        first = time.perf_counter() - t
        t = time.perf_counter()
        page.evaluate("h => { location.hash = h; }", f"#samples?task={task}")
        page.wait_for_function("t => { const c = document.getElementById('f-task'); return c && c.value === t && document.getElementById('match-count') && !document.querySelector('#browser .loading'); }", arg=task, timeout=300_000)
        opened = time.perf_counter() - t
        heap, rss = heap_mb(cdp), renderer_mb()
        ms = []
        for v in ("wrong", "right", "no_answer"):  # boxes both this and the pre-issue page have
            for _ in range(2):
                ms.append(page.evaluate("v => { const t0 = performance.now(); document.getElementById('f-verdict-' + v).click(); return performance.now() - t0; }", v))
        search = page.evaluate("() => { const q = document.getElementById('f-q'); q.value = 'the panels'; const t0 = performance.now(); q.dispatchEvent(new Event('change')); return performance.now() - t0; }")
        page.wait_for_function("() => !document.querySelector('#browser .loading')", timeout=300_000)
        heap_all, rss_all = heap_mb(cdp), renderer_mb()
        browser.close()
    return {"first": first, "open": opened, "heap": heap, "page_rss": rss, "filter": sorted(ms)[len(ms) // 2], "search": search, "heap_search": heap_all, "page_rss_search": rss_all}


def folder_mb(path: str) -> tuple[float, float]:
    sizes = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs]
    return sum(sizes) / 2**20, max(sizes, default=0) / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="2,20")
    ap.add_argument("--run", default=None, help="a demo's runs folder (default: run the demo here first)")
    ap.add_argument("--compare", default=None, metavar="REV", help="also measure the package at this git revision")
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()
    root = a.keep or tempfile.mkdtemp(prefix="html_memory_")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    other = None
    try:
        results = demo_results(a.run, root)
        if a.compare:
            other = os.path.join(root, "compare")
            subprocess.run(["git", "-C", repo, "worktree", "add", "-q", "--detach", other, a.compare], check=True)
        n_max = max(int(x) for x in a.runs.split(","))
        sweep = os.path.join(root, "sweep")
        t0 = time.perf_counter()
        make_sweep(results, sweep, n_max)
        pad_responses(sweep)
        steps = sorted(os.listdir(sweep), key=lambda s: int(s.split("_")[1]))
        print(f"sweep: {n_max} runs of 20,257 samples, responses ~1.5 KB, made in {time.perf_counter() - t0:.0f} s")
        for n in (int(x) for x in a.runs.split(",")):
            folders = [os.path.join(sweep, s) for s in steps[:n]]
            rows: dict = {}
            task = None  # the task the page opens: the one with the most data in this version's report
            for name, path in (("now", None), (a.compare, other)) if a.compare else (("now", None),):
                out = os.path.join(root, f"report_{n}_{name}")
                seconds, gb, module = python_side(folders, out, path)
                assert (path is None) or module.startswith(other), f"the compared package was not the one imported: {module}"
                data_mb, largest = folder_mb(os.path.join(out, "browser", "data"))
                task = task or largest_task(out)
                rows[name] = {"seconds": seconds, "rss": gb, "data": data_mb, "largest": largest, **page_side(out, task)}
            print(f"\n{n} runs x 20,257 samples; the page opens {task}, the task with the most data")
            goals = {"rss": (2.0, "GB"), "page_rss": (500, "MB"), "first": (2.0, "s"), "filter": (200, "ms")} if n <= 2 else {}
            for key, label, unit in (("seconds", "Python: report written", "s"), ("rss", "Python: peak RSS", "GB"), ("data", "browser/data", "MiB"), ("largest", "  largest data file", "MiB"),
                                     ("first", "page: first table shown", "s"), ("open", "page: the task opened (details in)", "s"), ("heap", "page: V8 + Blink heap, task open", "MB"),
                                     ("page_rss", "page: renderer RSS, task open", "MB"),
                                     ("filter", "page: a verdict filter (median)", "ms"), ("search", "page: a text search", "ms"), ("heap_search", "page: heap after the search", "MB"),
                                     ("page_rss_search", "page: renderer RSS after the search", "MB")):
                now = rows["now"][key]
                line = f"  {label:36s} {now:9.2f} {unit}"
                if a.compare:
                    was = rows[a.compare][key]
                    line += f"   {a.compare}: {was:9.2f} {unit}   ratio now/{a.compare} {now / was if was else float('nan'):.2f}"
                if key in goals:
                    goal, _ = goals[key]
                    line += f"   goal < {goal:g}: {'PASS' if now < goal else 'OVER'}"
                print(line)
    finally:
        if other:
            subprocess.run(["git", "-C", repo, "worktree", "remove", "--force", other], check=False)
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
