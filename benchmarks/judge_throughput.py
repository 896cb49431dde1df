"""Judge throughput: our judge pass vs the upstream pattern, side by side in one run; text requests and
requests carrying a figure.

A real HTTP server on 127.0.0.1 (separate process, aiohttp event loop so that its own CPU cost stays
small on a 2-core machine; with figures it reads each body without parsing it, ``--skim``) speaks
OpenAI chat-completions with a fixed per-request latency and a concurrency limit (requests beyond it
queue, like a saturated vLLM server). N docs are judged

  (a) by our judge pass (``core.judge.task_pass.run_pass``: the code the lmms-eval hook runs, verdict
      cache included, in a fresh directory), and
  (b) for text requests, the upstream pattern: one blocking call per doc from lmms-eval's 4
      ``process_results`` threads.

With ``--image-kb N`` every request also carries one figure of N KiB: random bytes (incompressible, like
a photo) behind a PNG signature, made when the doc's request is built (as a dataset row is read) and
passed as stored bytes (``{"bytes": ...}``), as MSEarth's judges send theirs.

The theoretical limit is ceil(N / limit) * latency seconds. One-time start-up (imports, the event loop,
first connections) is paid before timing. Targets: text >= 0.97 of the limit at 0.5 s and >= 0.88 at
0.1 s, >= 10x (b); 1.5 MB figures >= 0.95 at 0.5 s.

    .venv/bin/python benchmarks/judge_throughput.py [--docs 512] [--latency 0.5 0.1] [--limit 64] [--image-kb 0 1500 5000]
    .venv/bin/python benchmarks/judge_throughput.py --rss 2000 --image-kb 5000     # peak memory of one pass

One machine-readable line per (figure size, latency): ``RESULT image_kb=<n> latency=<s>
fraction_of_limit=<x> cpu_ms_per_request=<z> server_cpu_ms_per_request=<w> client_ceiling_rps=<c>
limit_rps=<l> [speedup_vs_per_doc=<y>]`` (z: this process's CPU seconds per judged request, the client's
own cost; c: the requests per second that cost allows on one core, since base64 and json hold the GIL;
the smaller of c and l bounds the pass).
"""

import argparse
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from lmms_eval_earthsci.core.judge import JudgeClient, JudgeConfig
from lmms_eval_earthsci.core.judge.task_pass import JudgeSpec, PassItem, forget, run_pass

PNG = b"\x89PNG\r\n\x1a\n"


def _text(doc, response, images):
    return [{"role": "user", "content": f"Question {doc['id']}\nResponse: {response}\nCorrect_or_not:"}]


def _with_figure(doc, response, images):
    return [{"role": "user", "content": [{"type": "image", "url": images()["image"]}, {"type": "text", "text": f"Question {doc['id']}\nResponse: {response}\nCorrect_or_not:"}]}]


def spec(image_kb: int) -> JudgeSpec:
    return JudgeSpec(name="bench", build=_with_figure if image_kb else _text, parse=lambda reply: reply.strip().lower() == "correct", uses_images=bool(image_kb))


_NOISE: dict[int, bytes] = {}


def figure(doc_id: int, image_kb: int) -> dict:
    """A doc's figure as a dataset row stores it: undecoded bytes, incompressible, different for every
    doc (a window of one random buffer, as cheap to read as an Arrow row, not generated per doc)."""
    n = image_kb * 1024 - len(PNG)
    if n not in _NOISE:
        _NOISE[n] = random.Random(0).randbytes(4 * n)
    offset = (doc_id * 7919) % (3 * n)
    return {"bytes": PNG + _NOISE[n][offset : offset + n], "path": None}


def items(n: int, image_kb: int, tag: str, start: int = 0) -> list[PassItem]:
    return [PassItem({"id": i}, f"answer {i} / {tag}", images=(lambda i=i: {"image": figure(i, image_kb)}) if image_kb else dict) for i in range(start, start + n)]


def start_server(latency, limit, skim=False):
    cmd = [sys.executable, "-m", "lmms_eval_earthsci.testing.openai_server", "--engine", "asyncio", "--latency", str(latency), "--max-concurrency", str(limit)]
    proc = subprocess.Popen(cmd + (["--skim"] if skim else []), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=512)
    ap.add_argument("--latency", type=float, nargs="+", default=[0.5, 0.1])
    ap.add_argument("--limit", type=int, default=64, help="server concurrency limit, and our pass's concurrency")
    ap.add_argument("--upstream-threads", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3, help="passes of (a); the median is reported")
    ap.add_argument("--image-kb", type=int, nargs="+", default=[0], help="figure sizes in KiB (0: text only)")
    ap.add_argument("--rss", type=int, default=None, metavar="DOCS", help="one pass of DOCS docs with the first --image-kb figure, then this process's peak RSS")
    ap.add_argument("--build-ahead", type=int, default=None, help="bodies built beyond the requests in flight (default: the client's BUILD_AHEAD)")
    ap.add_argument("--build-threads", type=int, default=None, help="threads building bodies (default: the client's BUILD_THREADS)")
    args = ap.parse_args(argv)
    from lmms_eval_earthsci.core.judge import client as judge_client

    if args.build_ahead is not None:
        judge_client.BUILD_AHEAD = args.build_ahead
    if args.build_threads is not None:
        judge_client.BUILD_THREADS = args.build_threads
    print(f"build-ahead {judge_client.BUILD_AHEAD}, build threads {judge_client.BUILD_THREADS}")
    if args.rss:
        return peak_rss(args)
    for kb in args.image_kb:
        for latency in args.latency:
            one_run(args, latency, kb)


def one_run(args, latency, image_kb):
    proc, base_url = start_server(latency, args.limit, skim=bool(image_kb))
    s = spec(image_kb)
    t_up = None
    try:
        with tempfile.TemporaryDirectory() as cache:
            ours = JudgeClient(JudgeConfig(base_url=base_url, model="judge", concurrency=args.limit, cache_dir=cache))
            # one-time start-up (imports, threads, connections) is paid before timing
            run_pass(s, items(args.limit, image_kb, "warm-up", start=10**6), ours)
            times, cpu, server = [], [], []
            for rep in range(args.repeats):  # fresh texts each time: no cache hit
                todo = items(args.docs, image_kb, str(rep))
                t0, c0, s0 = time.perf_counter(), time.process_time(), cpu_seconds(proc.pid)
                outcomes = run_pass(s, todo, ours)
                times.append(time.perf_counter() - t0)
                cpu.append((time.process_time() - c0) / args.docs)  # this process only: the client
                server.append((cpu_seconds(proc.pid) - s0) / args.docs)
                forget("bench")
                assert all(o.ok for o in outcomes), "judge pass failed on some docs"
            ours.close()
        t_ours = sorted(times)[len(times) // 2]  # the median: this machine is noisy
        cpu_ms = 1000 * sorted(cpu)[len(cpu) // 2]
        server_ms = 1000 * sorted(server)[len(server) // 2]
        print(f"image_kb={image_kb} passes (s):", " ".join(f"{t:.3f}" for t in times), "  client CPU per request (ms):", " ".join(f"{1000 * c:.3f}" for c in cpu))
        if not image_kb:
            upstream = JudgeClient(JudgeConfig(base_url=base_url, model="judge", concurrency=args.upstream_threads, cache_dir=None))

            def per_doc(it):  # what an upstream process_results does: build, call, parse, one doc
                return s.parse(upstream.complete(s.build(it.doc, it.response, dict)).content)

            with ThreadPoolExecutor(max_workers=args.upstream_threads) as pool:
                list(pool.map(per_doc, items(args.upstream_threads, 0, "warm-up", start=10**6)))
                t0 = time.perf_counter()
                verdicts = list(pool.map(per_doc, items(args.docs, 0, "upstream")))
                t_up = time.perf_counter() - t0
            assert all(verdicts)
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)

    limit_s = math.ceil(args.docs / args.limit) * latency
    limit_rps = args.limit / latency
    ceiling = 1000 / cpu_ms if cpu_ms else float("inf")
    print(f"docs={args.docs} latency={latency}s server_limit={args.limit} image_kb={image_kb} cores={os.cpu_count()}")
    print(f"theoretical limit   {limit_s:7.2f} s  ({args.docs / limit_s:7.1f} docs/s)")
    print(f"(a) judge pass      {t_ours:7.2f} s  ({args.docs / t_ours:7.1f} docs/s; median of {args.repeats})")
    if t_up is not None:
        print(f"(b) upstream, {args.upstream_threads} thr {t_up:7.2f} s  ({args.docs / t_up:7.1f} docs/s)")
    print(f"client CPU per request: {cpu_ms:.3f} ms (ceiling {ceiling:.0f} requests/s on one core, vs the server's limit {limit_rps:.0f}/s: "
          f"{'the server' if limit_rps < ceiling else 'the client'} bounds it); server CPU per request: {server_ms:.3f} ms")
    extra = f" speedup_vs_per_doc={t_up / t_ours:.2f}" if t_up is not None else ""
    print(f"RESULT image_kb={image_kb} latency={latency:g} fraction_of_limit={limit_s / t_ours:.3f} cpu_ms_per_request={cpu_ms:.3f} "
          f"server_cpu_ms_per_request={server_ms:.3f} client_ceiling_rps={ceiling:.0f} limit_rps={limit_rps:.0f}{extra}")


def peak_rss(args):
    """One pass of ``--rss`` docs with the first ``--image-kb`` figure; the process's peak RSS beside the
    sum of the figures (the bound: bodies in flight plus the build-ahead queue, not every figure)."""
    kb = args.image_kb[0]
    latency = args.latency[0]
    proc, base_url = start_server(latency, args.limit, skim=True)
    try:
        with tempfile.TemporaryDirectory() as cache:
            client = JudgeClient(JudgeConfig(base_url=base_url, model="judge", concurrency=args.limit, cache_dir=cache))
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            t0 = time.perf_counter()
            outcomes = run_pass(spec(kb), items(args.rss, kb, "rss"), client)
            took = time.perf_counter() - t0
            client.close()
            assert all(o.ok for o in outcomes)
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"RESULT rss_docs={args.rss} image_kb={kb} latency={latency:g} seconds={took:.1f} peak_rss_mb={peak:.0f} (before the pass {before:.0f}) sum_of_figures_mb={args.rss * kb / 1024:.0f}")


if __name__ == "__main__":
    main()
