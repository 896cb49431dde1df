"""Judge throughput: our judge pass vs the upstream pattern, side by side in one run.

A real HTTP server on 127.0.0.1 (separate process, aiohttp event loop so that its own CPU cost stays
small on a 2-core machine) speaks OpenAI chat-completions with a fixed per-request latency and a
concurrency limit (requests beyond it queue, like a saturated vLLM server). N docs are judged

  (a) by our judge pass (``core.judge_pass.run_pass``: the code the lmms-eval hook runs, verdict
      cache included, in a fresh directory), and
  (b) the upstream pattern: one blocking call per doc from lmms-eval's 4 ``process_results`` threads.

The theoretical limit is ceil(N / limit) * latency seconds. One-time start-up (imports, the event loop,
first connections) is paid before timing, for both (a) and (b). Each latency given is measured in turn
(default 0.5 s and 0.1 s). Targets: (a) reaches >= 0.97 of the limit at 0.5 s and >= 0.88 at 0.1 s, and
>= 10x (b).

    .venv/bin/python benchmarks/judge_throughput.py [--docs 512] [--latency 0.5 0.1] [--limit 64]

One machine-readable line per latency: ``RESULT latency=<s> fraction_of_limit=<x> speedup_vs_per_doc=<y>
cpu_ms_per_request=<z>`` (z: this process's CPU seconds per judged request, the client's own cost,
steadier than wall time).
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from lmms_eval_earthsci.core.judge import JudgeClient, JudgeConfig
from lmms_eval_earthsci.core.judge_pass import JudgeSpec, PassItem, forget, run_pass

SPEC = JudgeSpec(
    name="bench",
    build=lambda doc, response, images: [{"role": "user", "content": f"Question {doc['id']}\nResponse: {response}\nCorrect_or_not:"}],
    parse=lambda reply: reply.strip().lower() == "correct",
)


def start_server(latency, limit):
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmms_eval_earthsci.testing.openai_server", "--engine", "asyncio", "--latency", str(latency), "--max-concurrency", str(limit)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=512)
    ap.add_argument("--latency", type=float, nargs="+", default=[0.5, 0.1])
    ap.add_argument("--limit", type=int, default=64, help="server concurrency limit, and our pass's concurrency")
    ap.add_argument("--upstream-threads", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3, help="passes of (a); the median is reported")
    args = ap.parse_args(argv)
    for latency in args.latency:
        one_latency(args, latency)


def one_latency(args, latency):
    proc, base_url = start_server(latency, args.limit)
    try:
        items = [PassItem({"id": i}, f"answer {i}") for i in range(args.docs)]
        with tempfile.TemporaryDirectory() as cache:
            ours = JudgeClient(JudgeConfig(base_url=base_url, model="judge", concurrency=args.limit, cache_dir=cache))
            # one-time start-up (imports, worker threads, connections) is paid before timing, for both
            run_pass(SPEC, [PassItem({"id": -i}, "warm-up") for i in range(1, args.limit + 1)], ours)
            times, cpu = [], []
            for rep in range(args.repeats):  # fresh texts each time: no cache hit
                items = [PassItem({"id": i}, f"answer {i} / {rep}") for i in range(args.docs)]
                t0, c0 = time.perf_counter(), time.process_time()
                outcomes = run_pass(SPEC, items, ours)
                times.append(time.perf_counter() - t0)
                cpu.append((time.process_time() - c0) / args.docs)  # this process only: the client
                forget("bench")
            t_ours = sorted(times)[len(times) // 2]  # the median: this machine is noisy
            cpu_ms = 1000 * sorted(cpu)[len(cpu) // 2]
            print("passes (s):", " ".join(f"{t:.3f}" for t in times), "  client CPU per request (ms):", " ".join(f"{1000 * c:.3f}" for c in cpu))
        assert all(o.ok for o in outcomes), "judge pass failed on some docs"

        upstream = JudgeClient(JudgeConfig(base_url=base_url, model="judge", concurrency=args.upstream_threads, cache_dir=None))

        def per_doc(it):  # what an upstream process_results does: build, call, parse, one doc
            return SPEC.parse(upstream.complete(SPEC.build(it.doc, it.response, dict)).content)

        with ThreadPoolExecutor(max_workers=args.upstream_threads) as pool:
            list(pool.map(per_doc, [PassItem({"id": -i}, "warm-up") for i in range(1, args.upstream_threads + 1)]))
            t0 = time.perf_counter()
            verdicts = list(pool.map(per_doc, items))
            t_up = time.perf_counter() - t0
        assert all(verdicts)
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)

    limit_s = math.ceil(args.docs / args.limit) * latency
    print(f"docs={args.docs} latency={latency}s server_limit={args.limit} cores={os.cpu_count()}")
    print(f"theoretical limit   {limit_s:7.2f} s  ({args.docs / limit_s:7.1f} docs/s)")
    print(f"(a) judge pass      {t_ours:7.2f} s  ({args.docs / t_ours:7.1f} docs/s; median of {args.repeats})")
    print(f"(b) upstream, {args.upstream_threads} thr {t_up:7.2f} s  ({args.docs / t_up:7.1f} docs/s)")
    print(f"client CPU per request: {cpu_ms:.3f} ms (a steadier figure than wall time on a shared machine)")
    print(f"RESULT latency={latency:g} fraction_of_limit={limit_s / t_ours:.3f} speedup_vs_per_doc={t_up / t_ours:.2f} cpu_ms_per_request={cpu_ms:.3f}")


if __name__ == "__main__":
    main()
