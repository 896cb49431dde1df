"""MAC snapshot builder at the full collection's scale (~25,000 pairs in 188 journals), on synthetic
embeddings: ranking + distractor selection + self-validation time and peak memory, side by side with the
same collection as one journal (what a builder quadratic in the whole collection would pay) and with a
collection twice as large; then the embedding cost the real models add, per image (FLOPs from their
architectures; one real-size architecture timed on this CPU).

    .venv/bin/python benchmarks/mac_build.py [--pairs 25000] [--journals 188] [--questions 2287]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from lmms_eval_earthsci.evals.mac import builder as mac_builder
from lmms_eval_earthsci.evals.mac.collection import Issue

TEXT_DIM, IMAGE_DIM = 768, 1024


def synthetic(pairs: int, journals: int, questions: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    sizes = rng.lognormal(mean=0.0, sigma=0.8, size=journals)
    sizes = np.maximum(4, np.round(sizes / sizes.sum() * pairs)).astype(int)
    pool, journal_objs = [], []
    share = questions / sizes.sum()
    for j, n in enumerate(sizes):
        name = f"Journal {j}"
        issues = [Issue("ACS", name, f"{k:05d}", f"/x/{j}/{k}.png", "s") for k in range(n)]
        start = len(pool)
        pool += issues
        q = max(1, int(round(n * share)))  # the newest issues are the snapshot's questions
        journal_objs.append(mac_builder.Journal(name, "ACS", issues, list(range(start, start + n)), list(range(n - q, n))))
    emb = mac_builder.Embeddings()
    for k in ("t1", "t2", "t3"):
        emb.text[k] = _unit(rng.standard_normal((len(pool), TEXT_DIM), dtype=np.float32))
    for k in ("i1", "i2", "i3"):
        emb.text[k] = _unit(rng.standard_normal((len(pool), IMAGE_DIM), dtype=np.float32))
        emb.image[k] = _unit(rng.standard_normal((len(pool), IMAGE_DIM), dtype=np.float32))
    return pool, journal_objs, emb


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def run(pool, journals, emb) -> tuple[float, float, int]:
    tracemalloc.start()
    t = time.perf_counter()
    rows, _, ranks = mac_builder.build_rows(journals, emb, ["t1", "t2", "t3"], ["i1", "i2", "i3"], seed=0)
    mac_builder.self_validation(ranks, emb, ["i1", "i2", "i3"], rows, {it.key: n for n, it in enumerate(pool)})
    secs = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return secs, peak / 2**20, sum(len(r) for r in rows.values())


def one_journal(journals):
    """The same issues and questions as one journal (ids made unique), same embeddings rows."""
    issues = [Issue("ACS", "all", f"{jn:03d}_{it.id}", it.cover, it.story) for jn, j in enumerate(journals) for it in j.issues]
    qs = [k for j in journals for k in (np.asarray(j.questions) + j.rows[0]).tolist()]
    return issues, [mac_builder.Journal("all", "ACS", issues, list(range(len(issues))), qs)]


def vit_flops(width: int, layers: int, mlp: float, tokens: int) -> float:
    """Forward FLOPs of a ViT tower: 2 x (attention 4w^2 + MLP 2*mlp*w^2) per layer per token, plus
    attention scores 2 x 2 x tokens x w per layer per token."""
    per_token = layers * (2 * (4 * width**2 + 2 * mlp * width**2) + 4 * tokens * width)
    return per_token * tokens


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=25_000)
    ap.add_argument("--journals", type=int, default=188)
    ap.add_argument("--questions", type=int, default=2_287)
    ap.add_argument("--no-cpu-timing", action="store_true")
    a = ap.parse_args()

    pool, journals, emb = synthetic(a.pairs, a.journals, a.questions)
    largest = max(len(j.issues) for j in journals)
    print(
        f"synthetic collection: {len(pool)} pairs, {len(journals)} journals (largest {largest}), {sum(len(j.questions) for j in journals)} questions; "
        f"embeddings {sum(v.nbytes for v in [*emb.text.values(), *emb.image.values()]) / 2**20:.0f} MB"
    )
    secs, peak, n = run(pool, journals, emb)
    print(f"per journal      : rank + select + stats {secs:6.2f} s, peak {peak:7.1f} MB above the embeddings, {n} rows")
    pool1, journals1 = one_journal(journals)
    secs1, peak1, _ = run(pool1, journals1, emb)
    print(f"as one journal   : {secs1:6.2f} s, peak {peak1:7.1f} MB  (ratio {secs1 / secs:.1f}x: what whole-collection ranking would cost)")
    pool2, journals2, emb2 = synthetic(2 * a.pairs, 2 * a.journals, 2 * a.questions, seed=1)
    secs2, peak2, _ = run(pool2, journals2, emb2)
    print(f"twice the size   : {secs2:6.2f} s, peak {peak2:7.1f} MB  (ratio {secs2 / secs:.2f}x for 2x pairs, journals, questions)")

    # the embedding side: the spec's image models, per image (224 px = 257 tokens; 336 px = 577)
    models = {
        "CLIP ViT-L/14@336 (hf:openai/clip-vit-large-patch14-336)": vit_flops(1024, 24, 4.0, 577),
        "OpenCLIP ViT-g-14": vit_flops(1408, 40, 4.3637, 257),
        "OpenCLIP ViT-H-14-quickgelu": vit_flops(1280, 32, 4.0, 257),
    }
    total = 0.0
    for name, f in models.items():
        total += f
        print(f"image tower FLOPs per cover, {name}: {f / 1e9:7.1f} GFLOP")
    print(f"the three image towers over {a.pairs} covers: {total * a.pairs / 1e15:.1f} PFLOP (text towers and the three SBERT models add less: 77 / <=512-token text encoders)")
    print(f"at an A100's 312 TFLOP/s bf16 peak that is >= {total * a.pairs / 312e12:.0f} s of pure compute, against {secs:.1f} s of ranking here")
    if not a.no_cpu_timing:
        import torch
        from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

        torch.set_num_threads(max(1, torch.get_num_threads()))
        cfg = CLIPVisionConfig(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16, image_size=336, patch_size=14, projection_dim=768)
        model = CLIPVisionModelWithProjection(cfg).eval()
        x = torch.randn(2, 3, 336, 336)
        with torch.no_grad():
            model(pixel_values=x)
            t = time.perf_counter()
            model(pixel_values=x)
            per = (time.perf_counter() - t) / 2
        print(f"measured here: CLIP ViT-L/14@336 image tower (random weights, same architecture) {per:.2f} s per cover on {torch.get_num_threads()} CPU threads; "
              f"{a.pairs} covers = {per * a.pairs / 3600:.1f} h for this one model alone, {per * a.pairs / secs:.0f}x the ranking")
    print(f"max RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
