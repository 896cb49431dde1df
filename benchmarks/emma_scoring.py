"""Scores every released EMMA-mini response (../shared/reference/emma_mini) through the tasks' own
``process_results`` (every rule-based metric: ``emma_acc``, breakdowns, ``emma_acc_lenient``,
``emma_maj@k``/``emma_pass@k``) + aggregation, on one core, and prints docs/s.

    .venv/bin/python benchmarks/emma_scoring.py [REFERENCE_DIR]

Target (issue 4): all of them in under 3 s on one core (``taskset -c 0``). The first pass is cold:
our imports (latex2sympy, sentence-transformers and the similarity model for ``emma_acc_lenient``) and
empty caches, in a process where lmms-eval itself is already imported, as inside a run. The second
pass shows the warm cost (imports done, scorer caches cleared).
"""

import glob
import gzip
import json
import os
import sys
import time

from lmms_eval_earthsci.core.scoring.metrics import mean_present
from lmms_eval_earthsci.evals.emma import tasks as emma

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "shared", "reference", "emma_mini")


def load(folder):
    docs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl.gz"))):
        with gzip.open(path, "rt") as f:
            docs += [json.loads(line) for line in f]
    return docs


def timed(fn, docs):
    t0 = time.perf_counter()
    outs = [fn(d, [d.get("response") or ""]) for d in docs]
    acc = {k: mean_present([o[k] for o in outs]) for k in outs[0] if k.startswith("emma_acc")}
    return time.perf_counter() - t0, acc


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    docs = [d for d in load(folder) if "response" in d]
    if not docs:
        sys.exit(f"no released responses under {folder}")
    # process_results runs inside lmms-eval, which has already imported torch and transformers:
    # import them untimed, as a run would have; everything of ours starts cold
    t0 = time.perf_counter()
    import lmms_eval.evaluator  # noqa: F401

    print(f"(untimed: lmms-eval's own imports, {time.perf_counter() - t0:.1f} s)")
    official, acc = timed(emma.process_results, docs)  # emma_acc + breakdowns, cold
    full, acc_full = timed(emma.process_results_full, docs)  # + lenient (similarity model cold), maj/pass
    extra = full - timed(emma.process_results, docs)[0]  # what lenient + maj/pass add (scorer caches warm)
    emma._latex_value.cache_clear()
    emma._word_number.cache_clear()
    warm, _ = timed(emma.process_results_full, docs)  # imports and model loaded, scorer caches cleared
    n = len(docs)
    print(f"docs={n} emma_acc={acc['emma_acc']:.2f} emma_acc_lenient={acc_full['emma_acc_lenient']:.2f}")
    print(f"official metrics (emma_acc + breakdowns), cold:     {official:6.2f} s ({n / official:5.0f} docs/s)")
    print(f"+ lenient and maj@k/pass@k, similarity model cold: {extra:6.2f} s")
    print(f"every metric, imports and model loaded, caches cleared: {warm:6.2f} s ({n / warm:5.0f} docs/s)")
    print(f"RESULT seconds_official_cold={official:.3f} seconds_all_cold={official + extra:.3f} seconds_all_warm={warm:.3f} target_seconds=3")


if __name__ == "__main__":
    main()
