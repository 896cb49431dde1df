"""What our hooks cost per doc next to the floor (each image the doc needs decoded once), and what loading
the tasks costs, on a synthetic mirror with real-size images (issue 43).

    .venv/bin/python benchmarks/hook_cost.py [--scale 0.05] [--docs 12] [--repeats 3] [--keep DIR]

The mirror is the fixture mirror (``testing.fixtures``, every benchmark's upstream schema) made
real-size: each parquet table's rows repeated up to ``scale`` x the real dataset's row count (ids made
unique), every image cell replaced by a figure of real size (PNG, ~1600x1200, 0.3-1 MB), MAC's covers
rewritten as JPEG ~2000x2600 as the real ones are (``--png-covers``: PNG, decoded whole before the 512 px
shrink; JPEG is drafted) and MuSciClaims' figures (~1700x1300) in their own formats. Decoded-image
caches (covers, figures) are emptied before each doc.

Per task, for the chat hook (``doc_to_messages``) and the simple one (``doc_to_visual`` + ``doc_to_text``):
the row read as lmms-eval reads it (``test_docs()[i]``), the hook, and every image it returned loaded
(what the model's processor does first), CPU time per doc; beside it, in the same process and the same
loop, the floor: each distinct image the hook opened, decoded once and made RGB, all held at once. An
untimed run of the hook before both finds what it opens; which timed run comes second alternates. The images opened and
decoded per doc are counted, and the page faults of each side (the per-doc run has glibc's mmap threshold
fixed, so that both sides put every decoded image on fresh pages: with the moving threshold, which side
reuses freed pages depends on which buffer is alive at the heap's top). Medians over ``--repeats`` passes. Then the set-up, in fresh processes (a
first load into an empty datasets cache, then a later one): wall and CPU seconds, the part of the wall
spent inside ``datasets.load_dataset`` (its parquet-to-Arrow build on a first load: not our code), peak RSS
(anonymous and file-backed, sampled; the anonymous peak outside ``load_dataset`` beside it), and the bytes
added to the datasets cache.

The last line is machine-readable: ``RESULT worst_ratio=<r> first_vs_later_load=<r> cache_bytes_beyond_load_dataset=<n>``.
"""

from __future__ import annotations

import argparse
import gc
import glob
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TASKS = ["emma_mini_math", "emma_mini_physics", "msearth_mcq", "scifibench_cs_f2c", "scifibench_cs_c2f", "musciclaims_rd", "mac2025_t2i_option", "mac2025_i2t_option"]
# rows of the real datasets (specs): a fixture table of a repo is repeated up to scale x these
REAL_ROWS = {
    "MSEarth/MSEarth_MCQ": 2784, "MSEarth/MSEarth_Open_Ended": 1411, "MSEarth/MSEarth_Captioning": 3000,
    "MSEarth-Data/MSEarth-Benchmark-MCQ": 2784, "MSEarth-Data/MSEarth-Benchmark-OpenQA": 1411, "MSEarth-Data/MSEarth-Benchmark-Captioning": 3000,
    "jonathan-roberts1/SciFIBench": 2000, "luckychao/EMMA-mini": 400, "luckychao/EMMA": 2788,
}
ID_FIELDS = ("pid", "ID", "id", "question_id", "idx")


# --------------------------------------------------------------------------- the real-size mirror


def _figure(seed: int, size=(1600, 1200), fmt="PNG") -> bytes:
    """A plot-like figure: white, curves, text-like strokes and a photo-like (noisy) panel."""
    import numpy as np
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    w, h = size
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    for k in range(6):
        ys = np.cumsum(rng.normal(0, 6, w // 4)) + h * (k + 1) / 8
        draw.line([(4 * i, float(y)) for i, y in enumerate(ys)], fill=tuple(int(c) for c in rng.integers(0, 200, 3)), width=3)
    for _ in range(300):
        x, y = int(rng.integers(0, w - 60)), int(rng.integers(0, h - 12))
        draw.rectangle([x, y, x + int(rng.integers(10, 60)), y + 8], fill=(40, 40, 40))
    pw, ph = w // 4, h // 4
    panel = (rng.normal(128, 40, (ph, pw, 3)).clip(0, 255)).astype("uint8")
    img.paste(Image.fromarray(panel), (w - pw - 20, 20))
    out = io.BytesIO()
    img.save(out, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return out.getvalue()


def _inflate_table(path: str, repo: str, factor: float, figures: list[bytes]) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    rows = table.to_pylist()
    n = max(len(rows), math.ceil(len(rows) * factor))
    out, k = [], 0

    def swap(value):
        nonlocal k
        if isinstance(value, dict) and value.get("bytes"):
            k += 1
            return {**value, "bytes": figures[k % len(figures)]}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    for i in range(n):
        row = {key: swap(v) for key, v in rows[i % len(rows)].items()}
        copy = i // len(rows)
        for f in ID_FIELDS:
            if copy and f in row and row[f] is not None:
                row[f] = row[f] + copy * 1_000_000 if isinstance(row[f], int) else f"{row[f]}_{copy}"
        out.append(row)
    pq.write_table(pa.Table.from_pylist(out, schema=table.schema), path)
    return n


def build_mirror(root: str, scale: float, png_covers: bool = False) -> dict:
    from lmms_eval_earthsci.testing.fixtures import write_mirror

    write_mirror(root)
    figures = [_figure(s) for s in range(4)]
    rows = {}
    for repo, real in REAL_ROWS.items():
        files = sorted(glob.glob(os.path.join(root, *repo.split("/"), "**", "*.parquet"), recursive=True))
        fixture_rows = sum(_rows(f) for f in files)
        rows[repo] = sum(_inflate_table(f, repo, real * scale / max(fixture_rows, 1), figures) for f in files)
    # MAC's covers are JPEG (~2000x2600; the fixture names them .png: PIL reads the content), unless
    # png_covers; MuSciClaims' figures keep their format
    kinds = {"mhjiang0408/MAC_Bench": ("PNG" if png_covers else "JPEG", (2000, 2600)), "StonyBrookNLP/MuSciClaims": (None, (1700, 1300))}
    for repo, (fmt, size) in kinds.items():
        images = [p for p in glob.glob(os.path.join(root, *repo.split("/"), "**", "*"), recursive=True) if os.path.splitext(p)[1].lower() in (".png", ".jpg", ".jpeg")]
        for i, path in enumerate(sorted(images)):
            with open(path, "wb") as f:
                f.write(_figure(100 + i, size, fmt or ("PNG" if path.lower().endswith(".png") else "JPEG")))
    return rows


def _rows(path: str) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


# --------------------------------------------------------------------------- per doc


def per_doc(n_docs: int, repeats: int) -> list[dict]:
    from lmms_eval.tasks import TaskManager, get_task_dict
    from PIL import Image

    from lmms_eval_earthsci.core.boundary.probe import task_messages
    from lmms_eval_earthsci.core.data.repo_files import DecodedCache
    from lmms_eval_earthsci.registration import register
    from lmms_eval_earthsci.testing.decodes import counting_decodes

    register()
    tasks = get_task_dict(TASKS, TaskManager())

    def images_in(messages):
        return [p["url"] for m in messages for p in (m["content"] if isinstance(m["content"], list) else []) if p.get("type") == "image"]

    def floor(sources) -> tuple[float, int]:
        """Each image the hook opened, decoded once and made RGB (the hook opens each distinct image once:
        ``tests/core/data/test_decode_floor.py``; the counts below show it)."""
        f, t = _faults(), time.process_time()
        held = []  # all alive at once, as the hook's are (a doc's images reach the model together)
        for src in sources:
            im = Image.open(io.BytesIO(src) if isinstance(src, bytes) else src)
            im.load()
            held.append(im if im.mode == "RGB" else im.convert("RGB"))
        took = time.process_time() - t, _faults() - f
        del held
        return took

    caches = [o for o in gc.get_objects() if isinstance(o, DecodedCache)]

    def clear_decoded() -> None:
        for cache in caches:
            cache._items.clear()

    hooks = {
        "chat": lambda task, doc: images_in(task_messages(task, doc)),
        "simple": lambda task, doc: (task.doc_to_text(doc), task.doc_to_visual(doc))[1],
    }
    out = []
    for name in TASKS:
        task = tasks[name]
        docs = task.test_docs()
        n = min(n_docs, len(docs))
        for route, hook in hooks.items():
            passes = []
            for _ in range(repeats):
                ours = base = 0.0
                opened = decoded = ours_faults = base_faults = 0
                for i in range(n):
                    # an untimed run first finds what the doc opens (counted) and warms the CPU caches for
                    # both timed runs alike; decoded-image caches are emptied before each run
                    clear_decoded()
                    with counting_decodes() as counts:
                        for im in hook(task, docs[i]):
                            im.load()
                    del im
                    sources, opened, decoded = list(counts.sources), opened + counts.opened, decoded + counts.decoded
                    clear_decoded()
                    if i % 2:  # which of the two runs second (warmer) alternates
                        took, faults = floor(sources)
                        base, base_faults = base + took, base_faults + faults
                    f, t = _faults(), time.process_time()
                    for im in hook(task, docs[i]):
                        im.load()
                    ours, ours_faults = ours + time.process_time() - t, ours_faults + _faults() - f
                    del im
                    if not i % 2:
                        took, faults = floor(sources)
                        base, base_faults = base + took, base_faults + faults
                passes.append((ours, base, opened, decoded, ours_faults, base_faults))
            ours, base = statistics.median(p[0] for p in passes), statistics.median(p[1] for p in passes)
            out.append({"task": name, "route": route, "docs": n, "ms_per_doc": 1000 * ours / n, "floor_ms_per_doc": 1000 * base / n,
                        "ratio": ours / base if base else None, "opened_per_doc": passes[-1][2] / n, "decoded_per_doc": passes[-1][3] / n,
                        "faults_per_doc": passes[-1][4] / n, "floor_faults_per_doc": passes[-1][5] / n})
    return out


# --------------------------------------------------------------------------- set-up


def _faults() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _du(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files) if os.path.isdir(path) else 0


def _mem() -> tuple[int, int]:
    anon = file = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1]) * 1024
            elif line.startswith("RssFile:"):
                file = int(line.split()[1]) * 1024
    return anon, file


def setup_once() -> dict:
    """In a fresh process: load every task of the ``earthsci`` suite's families measured here."""
    peaks = [0, 0, 0]  # anonymous, file-backed; anonymous outside load_dataset (what our code holds)
    stop = threading.Event()
    inside = {"depth": 0, "wall": 0.0}

    def sample():
        while not stop.is_set():
            a, f = _mem()
            peaks[0], peaks[1] = max(peaks[0], a), max(peaks[1], f)
            if not inside["depth"]:
                peaks[2] = max(peaks[2], a)
            time.sleep(0.02)

    import datasets

    real_load = datasets.load_dataset

    def timed_load(*args, **kwargs):  # datasets' own share: reading the parquet files into its Arrow cache
        inside["depth"] += 1
        t = time.perf_counter()
        try:
            return real_load(*args, **kwargs)
        finally:
            inside["wall"] += time.perf_counter() - t
            inside["depth"] -= 1

    datasets.load_dataset = timed_load

    cache = os.environ["HF_DATASETS_CACHE"]
    before = _du(cache)
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    wall, cpu = time.perf_counter(), time.process_time()
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_eval_earthsci.registration import register

    register()
    get_task_dict(TASKS, TaskManager())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stop.set()
    thread.join()
    rewrites = [os.path.join(d, f) for d, _, files in os.walk(cache) for f in files if f.startswith("cache-")]
    return {"wall_s": wall, "cpu_s": cpu, "peak_anon_mb": peaks[0] / 2**20, "peak_file_mb": peaks[1] / 2**20,
            "load_dataset_s": inside["wall"], "peak_anon_ours_mb": peaks[2] / 2**20,
            "cache_added_mb": (_du(cache) - before) / 2**20, "rewrites": len(rewrites), "rewrite_bytes": sum(os.path.getsize(p) for p in rewrites)}


def run_setup(env: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--setup-once"], env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.05, help="rows as a share of the real datasets' (1.0: full size)")
    ap.add_argument("--docs", type=int, default=12, help="docs per task and route")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", help="build (or reuse) the mirror and the cache here")
    ap.add_argument("--png-covers", action="store_true", help="MAC covers as PNG (decoded whole) instead of JPEG")
    ap.add_argument("--setup-once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--per-doc", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.setup_once:
        print(json.dumps(setup_once()))
        return
    if args.per_doc:
        print(json.dumps(per_doc(args.docs, args.repeats)))
        return
    work = args.keep or tempfile.mkdtemp(prefix="hook_cost_")
    mirror, hf = os.path.join(work, "mirror"), os.path.join(work, "hf")
    if not os.path.isdir(mirror):
        t = time.perf_counter()
        rows = build_mirror(mirror, args.scale, args.png_covers)
        print(f"mirror {mirror}: {sum(rows.values())} rows at scale {args.scale} ({time.perf_counter() - t:.0f} s), {_du(mirror) / 2**20:.0f} MB")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EARTHSCI_JUDGE", "EARTHSCI_DAD"))}
    env.update(EARTHSCI_DATA_MIRROR=mirror, HF_HOME=hf, HF_DATASETS_CACHE=os.path.join(hf, "datasets"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    first, later = run_setup(env), run_setup(env)
    print("\nset-up (tasks: " + ", ".join(TASKS) + ")")
    print(f"{'':8s} {'wall s':>7s} {'CPU s':>7s} {'in load_dataset s':>17s} {'rest s':>7s} {'anon MB':>8s} {'anon, rest':>10s} {'file MB':>8s} {'cache +MB':>9s}  rewrites")
    for label, s in (("first", first), ("later", later)):
        print(f"{label:8s} {s['wall_s']:7.2f} {s['cpu_s']:7.2f} {s['load_dataset_s']:17.2f} {s['wall_s'] - s['load_dataset_s']:7.2f} {s['peak_anon_mb']:8.0f} {s['peak_anon_ours_mb']:10.0f}"
              f" {s['peak_file_mb']:8.0f} {s['cache_added_mb']:9.1f}  {s['rewrites']} ({s['rewrite_bytes'] / 2**20:.1f} MB)")
    # glibc moves its mmap threshold as large blocks are freed, so whether a decoded image lands on fresh
    # pages (a page fault per 4 KB) or on reused ones depends on which buffer happens to be alive at the
    # heap's top: up to 12 % of a C->F doc either way, for either side. A fixed threshold gives every image
    # buffer fresh pages on both sides; the page faults are printed beside the times.
    per_doc_env = dict(env, MALLOC_MMAP_THRESHOLD_="131072")
    proc = subprocess.run([sys.executable, __file__, "--per-doc", "--docs", str(args.docs), "--repeats", str(args.repeats)], env=per_doc_env, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\nper doc, CPU, medians of {args.repeats} passes over {args.docs} docs")
    print(f"{'task':22s} {'route':6s} {'ours ms':>8s} {'floor ms':>9s} {'ratio':>6s} {'opened':>7s} {'decoded':>8s} {'faults':>7s} {'floor':>7s}")
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "-"
        print(f"{r['task']:22s} {r['route']:6s} {r['ms_per_doc']:8.1f} {r['floor_ms_per_doc']:9.1f} {ratio:>6s} {r['opened_per_doc']:7.2f} {r['decoded_per_doc']:8.2f} {r['faults_per_doc']:7.0f} {r['floor_faults_per_doc']:7.0f}")
    worst = max((r["ratio"] for r in rows if r["ratio"] and r["floor_ms_per_doc"] > 1.0), default=0.0)
    outside = (first["wall_s"] - first["load_dataset_s"]) / (later["wall_s"] - later["load_dataset_s"])
    print(f"\nRESULT worst_ratio={worst:.2f} first_vs_later_load={first['wall_s'] / later['wall_s']:.2f} first_vs_later_outside_load_dataset={outside:.2f}"
          f" cache_bytes_beyond_load_dataset={first['rewrite_bytes'] + later['rewrite_bytes']}")


if __name__ == "__main__":
    main()
