"""Cost of report.html at full-run scale: ~20,000 samples and ~40,000 figures of 1-2 MP.

    .venv/bin/python benchmarks/html_report.py [N_SAMPLES] [N_IMAGES_TIMED]

Side by side in one run:

1. Figures: synthetic 1-2 MP figures (PNG charts, JPEG photo-like covers, half each), opened from
   their stored bytes as ``doc_to_visual`` opens them and thumbnailed by the report (``report.html.images``),
   one thread vs the report's worker threads; then the same with the large copy (1,024 px, the overlay's)
   made from the same decode; the per-figure costs, scaled to 40,000 figures, and the copies' mean sizes
   (what the default --figure-budget buys).
2. Writing: a synthetic run of N_SAMPLES samples (default 20,000; EMMA task names, two figures a doc)
   whose thumbnails are already in the cache (what a second report of the same data finds): report.md
   alone, then report.md + report.html + its 40,000 thumbnails linked in. The first report's time is
   this plus part 1's figure time (plus loading the datasets, which a run pays too).
3. The page, in headless Chromium (skipped without /usr/bin/chromium and Playwright): time to the first
   table, and one verdict filter over a task of 10,000 docs (click to rendered list).
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
N_IMG = int(sys.argv[2]) if len(sys.argv) > 2 else 200
FIGURES_PER_DOC = 2


def figures(n: int, seed: int = 0) -> list[bytes]:
    import numpy as np
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if i % 2 == 0:  # a chart: white, lines and marks, 1600x1000 PNG
            im = Image.new("RGB", (1600, 1000), "white")
            d = ImageDraw.Draw(im)
            for _ in range(60):
                x, y = int(rng.integers(0, 1500)), int(rng.integers(0, 900))
                d.rectangle([x, y, x + int(rng.integers(5, 200)), y + int(rng.integers(5, 200))], outline=tuple(int(c) for c in rng.integers(0, 255, 3)), width=3)
            fmt = "PNG"
        else:  # a cover: photo-like, 1400x1100 JPEG
            im = Image.fromarray((rng.random((137, 175, 3)) * 255).astype("uint8")).resize((1400, 1100), Image.BICUBIC)
            fmt = "JPEG"
        buf = io.BytesIO()
        im.save(buf, fmt, quality=90)
        out.append(buf.getvalue())
    return out


def part1() -> tuple[float, float]:
    from PIL import Image

    from lmms_eval_earthsci.commands.report.html.images import DEFAULT_FIGURE_BUDGET_MB, WORKERS, copies, thumbnail

    data = figures(N_IMG)

    def one(b: bytes) -> int:
        # as the report reads a doc: its stored bytes (undecoded), opened by doc_to_visual, decoded
        # by the thumbnail (a JPEG at thumbnail size)
        return len(thumbnail(Image.open(io.BytesIO(b))))

    def both(b: bytes) -> int:
        return len(copies(Image.open(io.BytesIO(b)), large=True)[1])

    t = time.perf_counter()
    sizes = [one(b) for b in data]
    serial = (time.perf_counter() - t) / len(data)
    t = time.perf_counter()
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(one, data))
    threaded = (time.perf_counter() - t) / len(data)
    mean = sum(sizes) / len(sizes)
    t = time.perf_counter()
    with ThreadPoolExecutor(WORKERS) as pool:
        large = list(pool.map(both, data))
    with_large = (time.perf_counter() - t) / len(data)
    mean_large = sum(large) / len(large)
    print(f"1. figures ({len(data)} timed, half 1.6 MP PNG charts, half 1.5 MP JPEG covers)")
    print(f"   decode + thumbnail, 1 thread          {serial * 1000:6.1f} ms/figure -> 40,000 figures: {serial * 40_000 / 60:5.1f} min")
    print(f"   decode + thumbnail, {WORKERS} threads         {threaded * 1000:6.1f} ms/figure -> 40,000 figures: {threaded * 40_000 / 60:5.1f} min   (x{serial / threaded:.2f})")
    print(f"   thumbnail size                        {mean / 1024:6.1f} KiB mean -> 40,000: {mean * 40_000 / 2**20:.0f} MiB")
    print(f"   + large copy, {WORKERS} threads               {with_large * 1000:6.1f} ms/figure (x{with_large / threaded:.2f} of the thumbnail alone)")
    print(
        f"   large copy size                       {mean_large / 1024:6.1f} KiB mean -> the default budget ({DEFAULT_FIGURE_BUDGET_MB} MB) holds "
        f"{DEFAULT_FIGURE_BUDGET_MB * 2**20 / mean_large:,.0f} figures; 40,000 would take {mean_large * 40_000 / 2**30:.1f} GiB"
    )
    return threaded, mean


def synthetic_run(root: str, cache: str) -> str:
    """N samples over EMMA-named tasks (one task holds 10,000 for the filter timing), results JSON with
    each task's data fingerprint, and the thumbnails' cache filled as a first report leaves it."""
    from PIL import Image

    from lmms_eval_earthsci.commands.report.html.images import ThumbStore, docset_key

    rng = random.Random(0)
    tasks = {"emma_full_math": min(10_000, N)}
    rest = N - tasks["emma_full_math"]
    for k, t in enumerate(("emma_full_physics", "emma_full_chemistry", "emma_full_coding")):
        tasks[t] = rest // 3 + (rest % 3 if k == 2 else 0)
    run = os.path.join(root, "run", "model")
    os.makedirs(run)
    store = ThumbStore(os.path.join(root, "unused"), cache=cache)
    configs, results = {}, {}
    for t, n in tasks.items():
        configs[t] = {"task": t, "dataset_path": "luckychao/EMMA", "dataset_name": t.split("_")[-1].title(), "test_split": "test", "metadata": {"version": 1.0, "earthsci_data": {"source": "mirror", "fingerprint": f"synthetic-{t}"}}}
        key = docset_key(t, configs[t], 1.0)
        manifest = {}
        with open(os.path.join(run, f"20261123_000000_samples_{t}.jsonl"), "w") as f:
            right = 0
            for i in range(n):
                ok = rng.random() < 0.4
                right += ok
                rule = rng.choice(["boxed", "boxed", "answer_phrase", "none"]) if not ok else "boxed"
                resp = f"Let me think about figure {i}. " + "The trend rises then falls. " * rng.randint(5, 40) + f"\\boxed{{{rng.choice('ABCD')}}}"
                sample = {"doc_id": i, "target": "B", "resps": [[resp]], "filtered_resps": [resp], "input": f"<image_1>\nQuestion {i} about the figure ...\nA: one\nB: two\nC: three\nD: four\nAnswer with the option's letter.",
                          "emma_acc": {"score": 100.0 if ok else 0.0, "pid": f"{t}_{i}", "extraction": "" if rule == "none" else rng.choice("ABCD"), "rule": rule, "gt_content": "B", "correct": ok, "route": "chat"},
                          f"emma_category_{rng.choice(['pattern_inference', 'path_tracing', '3d_spatial_simulation'])}": 100.0 if ok else 0.0}
                f.write(json.dumps(sample) + "\n")
                thumbs = []
                for k in range(FIGURES_PER_DOC):
                    im = Image.frombytes("RGB", (8, 8), random.Random(f"{t}-{i}-{k}").randbytes(192))  # distinct
                    buf = io.BytesIO()
                    im.save(buf, "JPEG")
                    thumbs.append(store.put(buf.getvalue()))
                manifest[str(i)] = thumbs
            results[t] = {"alias": t, "emma_acc,none": 100.0 * right / max(n, 1), "emma_acc_stderr,none": "N/A"}
        store.save_manifest(key, manifest)
    with open(os.path.join(run, "20261123_000000_results.json"), "w") as f:
        json.dump(
            {
                "results": results, "configs": configs, "versions": {t: 1.0 for t in tasks}, "config": {"model": "synthetic", "model_args": "pretrained=org/synthetic-vlm"},
                "n-samples": {t: {"original": n, "effective": n} for t, n in tasks.items()},
            },
            f,
        )
    return os.path.dirname(run)


def folder_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def part2(root: str, cache: str) -> tuple[str, float, float]:
    from lmms_eval_earthsci.commands.report import write_report

    t = time.perf_counter()
    run = synthetic_run(root, cache)
    print(f"2. writing ({N:,} samples, {N * FIGURES_PER_DOC:,} figures in the cache; made in {time.perf_counter() - t:.0f} s)")
    os.environ["EARTHSCI_CACHE_DIR"] = os.path.dirname(cache)
    t = time.perf_counter()
    write_report([run], os.path.join(root, "md"), resamples=1000)
    md = time.perf_counter() - t
    t = time.perf_counter()
    write_report([run], os.path.join(root, "html"), resamples=1000, html=True)
    full = time.perf_counter() - t
    out = os.path.join(root, "html")
    data = folder_size(os.path.join(out, "browser", "data"))
    print(f"   report.md only                        {md:6.1f} s")
    print(f"   report.md + report.html (cache warm)  {full:6.1f} s   (x{full / md:.2f}; the browser adds {full - md:.1f} s)")
    linked = len(os.listdir(os.path.join(out, "browser", "img")))
    assert linked == N * FIGURES_PER_DOC, f"{linked} thumbnails linked, not {N * FIGURES_PER_DOC}: the cache was missed"
    print(
        f"   folder: {linked:,} thumbnails linked, data files {data / 2**20:.0f} MiB, "
        f"largest task file {max(os.path.getsize(os.path.join(out, 'browser', 'data', f)) for f in os.listdir(os.path.join(out, 'browser', 'data'))) / 2**20:.1f} MiB (thumbnails: hard links of the cache)"
    )
    return out, md, full


def part3(out: str) -> None:
    if not os.path.exists("/usr/bin/chromium"):
        print("3. the page: skipped (no /usr/bin/chromium)")
        return
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("3. the page: skipped (no playwright)")
        return
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        t = time.perf_counter()
        page.goto(f"file://{out}/report.html", wait_until="commit")
        page.wait_for_selector("table")
        first_table = time.perf_counter() - t
        t = time.perf_counter()
        page.evaluate("() => { location.hash = '#samples?task=emma_full_math'; }")
        page.wait_for_function("() => { const c = document.getElementById('f-task'); return c && c.value === 'emma_full_math' && document.getElementById('match-count'); }", timeout=120_000)
        open_task = time.perf_counter() - t
        total = page.inner_text("#match-count")
        ms = []
        for v in ("wrong", "right", "no_answer"):
            for _ in range(2):
                ms.append(page.evaluate("v => { const t0 = performance.now(); document.getElementById('f-verdict-' + v).click(); return performance.now() - t0; }", v))
        ms_text = page.evaluate("() => { const q = document.getElementById('f-q'); q.value = 'trend rises'; const t0 = performance.now(); q.dispatchEvent(new Event('change')); return performance.now() - t0; }")
        browser.close()
    print("3. the page (headless Chromium)")
    print(f"   first table shown                     {first_table:6.2f} s")
    print(f"   open a task of {total.split(' of ')[-1]:>17s}  {open_task:6.2f} s (its data file loaded and parsed)")
    print(f"   one verdict filter, click to list     {sorted(ms)[len(ms) // 2]:6.0f} ms median of {len(ms)} (max {max(ms):.0f} ms)")
    print(f"   a text search over it                 {ms_text:6.0f} ms")


if __name__ == "__main__":
    root = tempfile.mkdtemp(prefix="html_report_")
    cache = os.path.join(root, "cache", "thumbs")
    try:
        threaded, mean = part1()
        out, md, full = part2(root, cache)
        print(
            f"   first report, projected: {full:.0f} s + 40,000 figures x {threaded * 1000:.1f} ms = {(full + threaded * 40_000) / 60:.1f} min; "
            f"folder with real thumbnails ~{(folder_size(os.path.join(out, 'browser', 'data')) + mean * 40_000) / 2**20:.0f} MiB"
        )
        part3(out)
    finally:
        shutil.rmtree(root, ignore_errors=True)
