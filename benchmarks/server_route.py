"""The server route (``--model async_openai``) per doc: what lmms-eval's re-encoding of every image costs
next to passing the dataset's stored image bytes through, in time, in bytes and in pixels (issue 43).

    .venv/bin/python benchmarks/server_route.py [--keep DIR] [--docs N] [--repeats R] [--concurrency C]

The mirror is ``hook_cost``'s real-size synthetic one (``build_mirror``; ``--keep DIR`` builds it there at
``--scale`` or reuses it: DIR/mirror and its datasets cache DIR/hf). A loopback OpenAI chat-completions
server (``testing.openai_server``, aiohttp, ``--skim``: it reads each body without parsing it) runs in its
own process for the whole run. One task per benchmark (``TASKS``), the first ``--docs`` docs of each
(fewer where the mirror has fewer). Three routes:

  PNG   lmms-eval as shipped: ``ChatMessages.to_openai_messages`` re-encodes every image as base64 PNG;
  JPEG  the same with ``LMMS_IMAGE_ENCODE_FORMAT=JPEG`` (quality ``LMMS_IMAGE_JPEG_QUALITY``, default 85);
  PASS  ours (``core.hardening.passthrough``, in every run of our tasks): an image our hook decoded from a
        dataset cell and returned unchanged (size and mode as stored) is sent as the stored bytes when
        they are PNG, what lmms-eval sends; any other image (MAC's covers, shrunk to 512 px; a converted
        one; MuSciClaims' JPEG files) goes through lmms-eval's encode.

1. End to end: lmms-eval's own CLI (``lmms_eval.cli.dispatch.main``, what ``.venv/bin/lmms-eval`` runs)
   in a child process, ``--model async_openai`` against the loopback server, one task per run, at
   ``--limit N`` and ``--limit N // 2``, routes interleaved, ``--repeats`` runs each (medians). The child
   times ``AsyncOpenAIChat.generate_until`` (the model phase: row reads, the hook, the encode, the
   requests) and counts ``doc_to_messages`` calls in it. docs/s is N / model phase; ms/doc is the
   marginal cost between the two limits (the phase's own fixed part, event loop and first connection,
   left out; it is printed as "fixed ms"); the rest of the process's wall time (imports, task loading,
   scoring, saving) is printed as the start-up.
2. Where the time goes per doc, in process (``get_task_dict`` after ``register()``), CPU ms per doc,
   medians over ``--repeats`` passes (decoded-image caches emptied before each pass): our hook (the
   row read and ``doc_to_messages``; row images opened lazily), the decode (every returned image
   loaded), lmms-eval's encode as the model does it (``ChatMessages(...)`` + ``to_openai_messages()``) for PNG, JPEG and PASS,
   and the request (``json.dumps`` of the model's payload + one POST over a kept-alive httpx connection;
   client CPU, and wall). A route's total is hook + decode + its encode + its request (PASS: no decode
   unless an image fell back, or the hook decoded itself).
3. Bytes per request body for each route, and fidelity: is PASS pixel-identical to the image our hook
   returns (the stored bytes decoded vs the hook's image, as arrays; an image the hook converted or
   resized is not passed through at all), is PNG (lossless check), and what JPEG does to the pixels
   (mean abs error, max abs error, PSNR over all pixels of the task's images). The modes and formats of
   every image in the mirror are tallied (the synthetic mirror's are RGB by construction; real datasets
   may hold RGBA, P, L or CMYK images, which our hook converts to RGB and PASS would not pass through).

The last line is machine-readable: ``RESULT e2e_jpeg_vs_png=<x> e2e_pass_vs_png=<x> e2e_ms_png_vs_jpeg=<x>
e2e_ms_png_vs_pass=<x> cpu_png_vs_pass=<x> cpu_png_vs_jpeg=<x> bytes_jpeg_vs_png=<x> bytes_pass_vs_png=<x>
jpeg_psnr_min_db=<x> jpeg_mae=<x> pass_identical=<k>/<n>`` (docs/s, marginal ms and in-process CPU
ratios: geometric means over the tasks, > 1 means faster than PNG; bytes: totals over all docs).
"""

from __future__ import annotations

import argparse
import base64
import collections
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = ["emma_mini_math", "msearth_mcq", "scifibench_cs_c2f", "musciclaims_rd", "mac2025_t2i_option"]
ROUTES = ("PNG", "JPEG", "PASS")
TIMING_ENV, PASS_ENV = "SERVER_ROUTE_TIMING", "SERVER_ROUTE_PASS"
MODEL = "loopback"


# --------------------------------------------------------------------------- the routes

_ENCODE: dict = {}  # "ours": ChatMessages.encode_image with core.hardening.passthrough; "lmms-eval": as shipped
_OPENED: collections.Counter = collections.Counter()  # format and mode of every image opened


def install_passthrough() -> None:
    """``core.hardening.passthrough`` (what every run of ours installs) with lmms-eval's own encode kept beside it,
    and every ``PIL.Image.open`` tallied (format, mode)."""
    from lmms_eval.protocol import ChatMessages
    from PIL import Image

    from lmms_eval_earthsci.core.hardening import passthrough

    passthrough.install_passthrough()
    _ENCODE["ours"] = ChatMessages.encode_image
    _ENCODE["lmms-eval"] = ChatMessages.encode_image.__wrapped__
    real_open = Image.open

    def open_noting(fp, *args, **kwargs):
        im = real_open(fp, *args, **kwargs)
        _OPENED[f"{im.format} {im.mode}"] += 1
        return im

    Image.open = open_noting


def set_route(route: str) -> None:
    from lmms_eval.protocol import ChatMessages

    os.environ["LMMS_IMAGE_ENCODE_FORMAT"] = "JPEG" if route == "JPEG" else "PNG"
    ChatMessages.encode_image = _ENCODE["ours" if route == "PASS" else "lmms-eval"]


def passed_through(image) -> bool:
    from lmms_eval_earthsci.core.hardening import passthrough

    return passthrough.stored_bytes(image, "PNG") is not None


# --------------------------------------------------------------------------- 1. end to end


def cli_child(argv: list[str]) -> int:
    """lmms-eval's CLI with the model phase timed (our pass-through only when ``SERVER_ROUTE_PASS=1``)."""
    from lmms_eval.api.task import ConfigurableMessagesTask
    from lmms_eval.cli.dispatch import main as lmms_eval_main
    from lmms_eval.models.chat.async_openai import AsyncOpenAIChat

    if os.environ.get(PASS_ENV) != "1":  # lmms-eval's encode as shipped: our pass-through undone and marked as installed
        from lmms_eval.protocol import ChatMessages

        from lmms_eval_earthsci.core import activation

        activation.install_run_hooks()  # what the run would install first; then lmms-eval's own encode back
        ChatMessages.encode_image = getattr(ChatMessages.encode_image, "__wrapped__", ChatMessages.encode_image)
    calls = [0]
    real_messages, real_generate = ConfigurableMessagesTask.doc_to_messages, AsyncOpenAIChat.generate_until

    def doc_to_messages(self, *args, **kwargs):
        calls[0] += 1
        return real_messages(self, *args, **kwargs)

    def generate_until(self, requests):
        c0, t0, p0 = calls[0], time.perf_counter(), time.process_time()
        out = real_generate(self, requests)
        record = {"n": len(requests), "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - p0, "hook_calls": calls[0] - c0,
                  "failed": sum("LMMS_EVAL_REQUEST_FAILED" in getattr(r, "text", str(r)) for r in out)}
        with open(os.environ[TIMING_ENV], "a") as f:
            f.write(json.dumps(record) + "\n")
        return out

    ConfigurableMessagesTask.doc_to_messages, AsyncOpenAIChat.generate_until = doc_to_messages, generate_until
    sys.argv = ["lmms-eval", *argv]
    return lmms_eval_main() or 0


def run_cli(task: str, route: str, limit: int, base_url: str, env: dict, concurrency: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="server_route_") as tmp:
        timing = os.path.join(tmp, "timing.jsonl")
        child_env = dict(env, LMMS_IMAGE_ENCODE_FORMAT="JPEG" if route == "JPEG" else "PNG", **{TIMING_ENV: timing, PASS_ENV: "1" if route == "PASS" else "0"})
        args = ["eval", "--model", "async_openai", "--model_args", f"base_url={base_url},model_version={MODEL},api_key=unused,num_cpus={concurrency}",
                "--tasks", task, "--limit", str(limit), "--output_path", os.path.join(tmp, "out")]
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--cli", *args], env=child_env, capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - t0
        if proc.returncode or not os.path.exists(timing):
            raise SystemExit(f"lmms-eval {task} {route} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        with open(timing) as f:
            rec = json.loads(f.read().splitlines()[-1])
    if rec["failed"]:
        raise SystemExit(f"lmms-eval {task} {route}: {rec['failed']} request(s) failed")
    return dict(rec, process_wall_s=wall)


def end_to_end(docs: dict, base_url: str, env: dict, repeats: int, concurrency: int) -> dict:
    """Per task and route, the model phase at ``--limit`` N and at N // 2: docs/s at N, and the marginal
    ms per doc between the two limits (what a doc costs once the phase's own fixed cost is paid)."""
    runs = collections.defaultdict(list)
    for rep in range(repeats):
        for task in TASKS:
            n = docs[task]
            order = ROUTES[rep % 3:] + ROUTES[: rep % 3]  # which route runs first rotates
            for limit in (n, max(1, n // 2)):
                for route in order:
                    runs[task, route, limit].append(run_cli(task, route, limit, base_url, env, concurrency))
                    print(f"  e2e {rep + 1}/{repeats} {task:20s} {route:4s} limit {limit:3d}: model phase {runs[task, route, limit][-1]['wall_s']:6.2f} s", file=sys.stderr, flush=True)
    out = {}
    for task in TASKS:
        n = docs[task]
        half = max(1, n // 2)
        for route in ROUTES:
            full, part = runs[task, route, n], runs[task, route, half]
            med = {k: statistics.median(r[k] for r in full) for k in ("wall_s", "cpu_s", "process_wall_s", "hook_calls", "n")}
            half_wall = statistics.median(r["wall_s"] for r in part)
            med["marginal_ms"] = 1000 * (med["wall_s"] - half_wall) / (n - half) if n > half else float("nan")
            med["phase_fixed_ms"] = 1000 * med["wall_s"] - n * med["marginal_ms"]
            med["startup_s"] = statistics.median(r["process_wall_s"] - r["wall_s"] for r in full + part)
            out[task, route] = med
    return out


# --------------------------------------------------------------------------- 2 and 3. per doc, in process


def images_in(messages) -> list:
    return [p["url"] for m in messages for p in (m["content"] if isinstance(m["content"], list) else []) if p.get("type") == "image"]


def per_doc(n_docs: int, repeats: int, base_url: str) -> list[dict]:
    import gc

    import httpx
    import numpy as np
    from lmms_eval.protocol import ChatMessages
    from lmms_eval.tasks import TaskManager, get_task_dict
    from PIL import Image

    from lmms_eval_earthsci.core.data.repo_files import DecodedCache
    from lmms_eval_earthsci.registration import register

    install_passthrough()
    register()
    tasks = get_task_dict(TASKS, TaskManager(), "chat")  # as the CLI builds them for a chat model
    caches = [o for o in gc.get_objects() if isinstance(o, DecodedCache)]
    client = httpx.Client(timeout=120)
    url = base_url.rstrip("/") + "/chat/completions"

    def encode(messages, route):
        set_route(route)
        t = time.process_time()
        out = ChatMessages(**{"messages": messages}).to_openai_messages()
        return time.process_time() - t, out

    def post(openai_messages) -> tuple[float, float, int]:
        t, w = time.process_time(), time.perf_counter()
        body = json.dumps({"messages": openai_messages, "model": MODEL, "max_tokens": 1024, "temperature": 0}).encode()
        r = client.post(url, content=body, headers={"Content-Type": "application/json", "Authorization": "Bearer unused"})
        r.raise_for_status()
        r.json()
        return time.process_time() - t, time.perf_counter() - w, len(body)

    def payloads(openai_messages) -> list[bytes]:
        return [base64.b64decode(p["image_url"]["url"].partition(",")[2]) for m in openai_messages for p in m["content"] if p.get("type") == "image_url"]

    out = []
    for name in TASKS:
        task = tasks[name]
        docs = task.test_docs()
        n = min(n_docs, len(docs))
        passes = []
        fid = {"images": 0, "pass_identical": 0, "pass_sent": 0, "png_lossless": 0, "jpeg_abs": 0.0, "jpeg_sq": 0.0, "jpeg_max": 0, "values": 0,
               "modes": collections.Counter(), "bytes": dict.fromkeys(ROUTES, 0), "image_bytes": dict.fromkeys(ROUTES, 0)}
        for rep in range(repeats):
            for cache in caches:
                cache._items.clear()
            acc = collections.defaultdict(float)
            for i in range(n):
                _OPENED.clear()
                t = time.process_time()
                messages = task.doc_to_messages(docs[i])  # the row read and the hook, as AsyncOpenAIChat does both
                acc["hook"] += time.process_time() - t
                images = images_in(messages)
                t = time.process_time()
                for im in images:
                    im.load()
                decode = time.process_time() - t
                acc["decode"] += decode
                if rep == 0:  # what the hook opened: the stored images' formats and modes
                    fid["modes"].update(_OPENED)
                fell_back = not all(passed_through(im) for im in images)
                encoded = {}
                for route in ROUTES:
                    took, encoded[route] = encode(messages, route)
                    acc[f"enc_{route}"] += took
                for k in range(3):  # the order of the three requests rotates
                    route = ROUTES[(i + k) % 3]
                    cpu, wall, size = post(encoded[route])
                    acc[f"req_{route}"] += cpu
                    acc[f"wall_{route}"] += wall
                    if rep == 0:
                        fid["bytes"][route] += size
                acc["pass_decode"] += decode if fell_back else 0.0
                if rep:
                    continue
                sent = {route: payloads(encoded[route]) for route in ROUTES}
                for route in ROUTES:
                    fid["image_bytes"][route] += sum(len(b) for b in sent[route])
                for j, im in enumerate(images):
                    ours = np.asarray(im)
                    fid["images"] += 1
                    if passed_through(im):
                        fid["pass_sent"] += 1
                        with Image.open(io.BytesIO(sent["PASS"][j])) as s:
                            fid["pass_identical"] += int(np.array_equal(np.asarray(s), ours))
                    with Image.open(io.BytesIO(sent["PNG"][j])) as s:
                        fid["png_lossless"] += int(np.array_equal(np.asarray(s), ours))
                    with Image.open(io.BytesIO(sent["JPEG"][j])) as s:
                        diff = np.abs(np.asarray(s).astype(np.int32) - ours.astype(np.int32))
                    fid["jpeg_abs"] += float(diff.sum())
                    fid["jpeg_sq"] += float((diff.astype(np.float64) ** 2).sum())
                    fid["jpeg_max"] = max(fid["jpeg_max"], int(diff.max()))
                    fid["values"] += diff.size
            passes.append(dict(acc))
        row = {"task": name, "docs": n, "images_per_doc": fid["images"] / n}
        for key in passes[0]:
            row[key] = 1000 * statistics.median(p[key] for p in passes) / n
        for route in ROUTES:
            row[f"kb_{route}"] = fid["bytes"][route] / n / 1024
            row[f"img_kb_{route}"] = fid["image_bytes"][route] / n / 1024
        mse = fid["jpeg_sq"] / fid["values"]
        row.update(pass_sent=fid["pass_sent"], pass_identical=fid["pass_identical"], images=fid["images"], png_lossless=fid["png_lossless"],
                   jpeg_mae=fid["jpeg_abs"] / fid["values"], jpeg_max=fid["jpeg_max"], jpeg_psnr=10 * math.log10(255**2 / mse) if mse else float("inf"),
                   modes=dict(fid["modes"]))
        out.append(row)
    client.close()
    return out


def mirror_modes(mirror: str) -> collections.Counter:
    """format + mode of every image in the mirror: parquet image cells ({"bytes", "path"}, also in lists)
    and image files."""
    import pyarrow.parquet as pq
    from PIL import Image

    tally: collections.Counter = collections.Counter()

    def visit(value) -> None:
        if isinstance(value, dict) and value.get("bytes"):
            with Image.open(io.BytesIO(value["bytes"])) as im:
                tally[f"{im.format} {im.mode}"] += 1
        elif isinstance(value, list):
            for v in value:
                visit(v)

    for root, _, files in os.walk(mirror):
        for f in files:
            path = os.path.join(root, f)
            ext = os.path.splitext(f)[1].lower()
            if ext == ".parquet":
                table = pq.read_table(path)
                for col in table.column_names:
                    if "struct" in str(table.schema.field(col).type):
                        for v in table.column(col).to_pylist():
                            visit(v)
            elif ext in (".png", ".jpg", ".jpeg", ".gif", ".webp", ".tif", ".tiff"):
                with Image.open(path) as im:
                    tally[f"{im.format} {im.mode}"] += 1
    return tally


# --------------------------------------------------------------------------- main


def start_server():
    cmd = [sys.executable, "-m", "lmms_eval_earthsci.testing.openai_server", "--engine", "asyncio", "--skim", "--reply", "A"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def _geomean(xs) -> float:
    """Over the finite positive values (a marginal cost lost in noise is left out)."""
    xs = [x for x in xs if math.isfinite(x) and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--cli":
        sys.exit(cli_child(sys.argv[2:]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", help="build (or reuse) the mirror and the datasets cache here (DIR/mirror, DIR/hf)")
    ap.add_argument("--scale", type=float, default=0.02, help="when the mirror is built: rows as a share of the real datasets'")
    ap.add_argument("--docs", type=int, default=16, help="docs per task (--limit of the CLI runs)")
    ap.add_argument("--repeats", type=int, default=3, help="CLI runs per task and route, and in-process passes (medians)")
    ap.add_argument("--concurrency", type=int, default=8, help="async_openai's num_cpus (requests in flight)")
    ap.add_argument("--per-doc", metavar="BASE_URL", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.per_doc:
        print(json.dumps(per_doc(args.docs, args.repeats, args.per_doc)))
        return
    sys.path.insert(0, HERE)
    from hook_cost import build_mirror

    work = args.keep or tempfile.mkdtemp(prefix="server_route_")
    mirror, hf = os.path.join(work, "mirror"), os.path.join(work, "hf")
    if not os.path.isdir(mirror):
        t = time.perf_counter()
        rows = build_mirror(mirror, args.scale)
        print(f"mirror {mirror}: {sum(rows.values())} rows at scale {args.scale} ({time.perf_counter() - t:.0f} s)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EARTHSCI_JUDGE", "EARTHSCI_DAD", "LMMS_IMAGE_", "OPENAI_"))}
    env.update(EARTHSCI_DATA_MIRROR=mirror, HF_HOME=hf, HF_DATASETS_CACHE=os.path.join(hf, "datasets"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    server, base_url = start_server()
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--per-doc", base_url, "--docs", str(args.docs), "--repeats", str(args.repeats)],
                              env=env, capture_output=True, text=True, timeout=3600)
        if proc.returncode:
            raise SystemExit(proc.stderr[-3000:])
        rows = json.loads(proc.stdout.strip().splitlines()[-1])
        docs = {r["task"]: r["docs"] for r in rows}
        e2e = end_to_end(docs, base_url, env, args.repeats, args.concurrency)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    tally = mirror_modes(mirror)

    print(f"\nserver route, {os.cpu_count()} cores; lmms-eval CLI --model async_openai num_cpus={args.concurrency} against a loopback server; medians of {args.repeats}")
    print("\n1. end to end, the model phase (hook + encode + requests): docs/s at --limit N; ms per doc beyond the phase's fixed part (limits N and N // 2);")
    print("   start-up: the rest of the CLI process (imports, task loading, scoring, saving)")
    print(f"{'task':20s} {'N':>3s} {'img/doc':>7s} | {'docs/s PNG':>10s} {'JPEG':>6s} {'PASS':>6s} | {'JPEG/PNG':>8s} {'PASS/PNG':>8s} | {'ms/doc PNG':>10s} {'JPEG':>6s} {'PASS':>6s} {'in-proc PNG':>11s} | "
          f"{'fixed ms':>8s} {'start-up s':>10s} {'hooks/doc':>9s}")
    for r in rows:
        t = r["task"]
        e = {route: e2e[t, route] for route in ROUTES}
        r["rate"] = {route: e[route]["n"] / e[route]["wall_s"] for route in ROUTES}
        r["marginal"] = {route: e[route]["marginal_ms"] for route in ROUTES}
        rate, marg = r["rate"], r["marginal"]
        in_proc = r["hook"] + r["decode"] + r["enc_PNG"] + r["req_PNG"]
        print(f"{t:20s} {r['docs']:3d} {r['images_per_doc']:7.1f} | {rate['PNG']:10.1f} {rate['JPEG']:6.1f} {rate['PASS']:6.1f} | {rate['JPEG'] / rate['PNG']:8.2f} {rate['PASS'] / rate['PNG']:8.2f} | "
              f"{marg['PNG']:10.1f} {marg['JPEG']:6.1f} {marg['PASS']:6.1f} {in_proc:11.1f} | {statistics.median(e[x]['phase_fixed_ms'] for x in ROUTES):8.0f} "
              f"{statistics.median(e[x]['startup_s'] for x in ROUTES):10.1f} {e['PNG']['hook_calls'] / e['PNG']['n']:9.1f}")
    print("\n2. CPU ms per doc, in process (req: json.dumps + POST, client CPU; wall: the POST's wall time)")
    print(f"{'task':20s} {'hook':>6s} {'decode':>6s} | {'enc PNG':>7s} {'JPEG':>6s} {'PASS':>6s} | {'req PNG':>7s} {'JPEG':>6s} {'PASS':>6s} | {'wall PNG':>8s} {'JPEG':>6s} {'PASS':>6s} | "
          f"{'total PNG':>9s} {'JPEG':>6s} {'PASS':>6s} | {'PNG/JPEG':>8s} {'PNG/PASS':>8s}")
    for r in rows:
        r["total"] = {route: r["hook"] + r["decode"] + r[f"enc_{route}"] + r[f"req_{route}"] for route in ("PNG", "JPEG")}
        r["total"]["PASS"] = r["hook"] + r["pass_decode"] + r["enc_PASS"] + r["req_PASS"]
        tot = r["total"]
        print(f"{r['task']:20s} {r['hook']:6.1f} {r['decode']:6.1f} | {r['enc_PNG']:7.1f} {r['enc_JPEG']:6.1f} {r['enc_PASS']:6.1f} | {r['req_PNG']:7.1f} {r['req_JPEG']:6.1f} {r['req_PASS']:6.1f} | "
              f"{r['wall_PNG']:8.1f} {r['wall_JPEG']:6.1f} {r['wall_PASS']:6.1f} | {tot['PNG']:9.1f} {tot['JPEG']:6.1f} {tot['PASS']:6.1f} | {tot['PNG'] / tot['JPEG']:8.2f} {tot['PNG'] / tot['PASS']:8.2f}")
    print("\n3. KB per request body (images' payload), and fidelity against the image our hook returns")
    print(f"{'task':20s} {'PNG':>14s} {'JPEG':>14s} {'PASS':>14s} | {'PASS sent/imgs':>14s} {'identical':>9s} | {'PNG lossless':>12s} | {'JPEG MAE':>8s} {'max':>4s} {'PSNR dB':>7s}")
    for r in rows:
        kb = {route: f"{r[f'kb_{route}']:.0f} ({r[f'img_kb_{route}']:.0f})" for route in ROUTES}
        print(f"{r['task']:20s} {kb['PNG']:>14s} {kb['JPEG']:>14s} {kb['PASS']:>14s} | {r['pass_sent']:>6d}/{r['images']:<7d} {r['pass_identical']:>9d} | {r['png_lossless']:>5d}/{r['images']:<6d} | "
              f"{r['jpeg_mae']:8.2f} {r['jpeg_max']:4d} {r['jpeg_psnr']:7.1f}")
    print("\nstored images of these docs: " + ", ".join(f"{r['task']}: " + ", ".join(f"{k} x{v}" for k, v in r["modes"].items()) for r in rows))
    print("every image in the mirror: " + ", ".join(f"{k} x{v}" for k, v in sorted(tally.items())))

    e2e_jpeg = _geomean(r["rate"]["JPEG"] / r["rate"]["PNG"] for r in rows)
    e2e_pass = _geomean(r["rate"]["PASS"] / r["rate"]["PNG"] for r in rows)
    cpu_pass = _geomean(r["total"]["PNG"] / r["total"]["PASS"] for r in rows)
    cpu_jpeg = _geomean(r["total"]["PNG"] / r["total"]["JPEG"] for r in rows)
    b = {route: sum(r[f"kb_{route}"] * r["docs"] for r in rows) for route in ROUTES}
    marg_jpeg = _geomean(r["marginal"]["PNG"] / r["marginal"]["JPEG"] for r in rows)
    marg_pass = _geomean(r["marginal"]["PNG"] / r["marginal"]["PASS"] for r in rows)
    print(f"\nRESULT e2e_jpeg_vs_png={e2e_jpeg:.2f} e2e_pass_vs_png={e2e_pass:.2f} e2e_ms_png_vs_jpeg={marg_jpeg:.2f} e2e_ms_png_vs_pass={marg_pass:.2f} cpu_png_vs_pass={cpu_pass:.2f} cpu_png_vs_jpeg={cpu_jpeg:.2f} "
          f"bytes_jpeg_vs_png={b['JPEG'] / b['PNG']:.3f} bytes_pass_vs_png={b['PASS'] / b['PNG']:.3f} jpeg_psnr_min_db={min(r['jpeg_psnr'] for r in rows):.1f} "
          f"jpeg_mae={statistics.mean(r['jpeg_mae'] for r in rows):.2f} pass_identical={sum(r['pass_identical'] for r in rows)}/{sum(r['pass_sent'] for r in rows)}")


if __name__ == "__main__":
    main()
