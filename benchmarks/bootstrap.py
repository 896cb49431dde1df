"""Cost of the report's error bars: 10,000 bootstrap resamples over 3,000 docs.

    .venv/bin/python benchmarks/bootstrap.py [N_DOCS] [N_RESAMPLES]

Side by side in one run: the vectorised kernels (a mean such as ``emma_acc``; MuSciClaims' macro F1,
a corpus metric recomputed per resample), a paired comparison of two runs, and the generic route (the
aggregation function called once per resample; timed on fewer resamples and scaled, printed as such).
"""

import random
import sys
import time

from lmms_eval_earthsci.core.scoring.stats import bootstrap_ci, paired

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
B = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
rng = random.Random(0)
labels = ["SUPPORT", "NEUTRAL", "CONTRADICT"]
acc = [{"score": 100.0 if rng.random() < 0.4 else 0.0} for _ in range(N)]
acc_b = {i: {"score": 100.0 if rng.random() < 0.42 else 0.0} for i in range(N)}
claims = [[rng.choice(labels), rng.choice(labels + ["INVALID"]), f"b{i // 2}", ("support", "contra")[i % 2], "physics"] for i in range(N)]


def timed(label, fn, scale=1.0):
    t = time.perf_counter()
    out = fn()
    dt = (time.perf_counter() - t) * scale
    print(f"{label:62s} {dt:7.2f} s   [{out.low:.2f}, {out.high:.2f}]" if hasattr(out, "low") else f"{label:62s} {dt:7.2f} s   diff {out.diff:+.2f} [{out.interval.low:.2f}, {out.interval.high:.2f}] McNemar p={out.mcnemar_p:.3g}")
    return dt


print(f"{N} docs, {B} resamples, 2 CPU cores\n")
mean = timed("mean (emma_acc: mean_present), vectorised", lambda: bootstrap_ci(acc, "lmms_eval_earthsci.core.scoring.metrics.mean_present", B))
f1 = timed("macro F1 (MuSciClaims), vectorised", lambda: bootstrap_ci(claims, "lmms_eval_earthsci.evals.musciclaims.tasks.macro_f1", B))
flip = timed("flip rate (MuSciClaims, claim pairs), vectorised", lambda: bootstrap_ci(claims, "lmms_eval_earthsci.evals.musciclaims.tasks.flip_rate", B))
pair = timed("paired difference + McNemar (mean), vectorised", lambda: paired(dict(enumerate(acc)), acc_b, "lmms_eval_earthsci.core.scoring.metrics.mean_present", B))
small = max(B // 50, 20)
gen = timed(f"2-class weighted F1 (no kernel): generic route ({small} resamples, x{B / small:.0f})", lambda: bootstrap_ci(claims, "lmms_eval_earthsci.evals.musciclaims.tasks.two_class_weighted_f1", small), B / small)
print(f"\ngeneric route / vectorised macro F1 (same data, a metric of the same cost): {gen / f1:.0f}x")
