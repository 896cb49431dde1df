"""Scores every released EMMA-mini response (../shared/reference/emma_mini) through the tasks' own
``process_results`` + aggregation, on one core, and prints docs/s.

    .venv/bin/python benchmarks/emma_scoring.py [REFERENCE_DIR]

Target (issue 4): all of them in under 3 s. The first pass is cold (latex2sympy imported, caches
empty); the second pass shows the warm cost.
"""

import glob
import gzip
import json
import os
import sys
import time

from lmms_eval_earthsci import emma
from lmms_eval_earthsci.core.metrics import mean_present

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "shared", "reference", "emma_mini")


def load(folder):
    docs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl.gz"))):
        with gzip.open(path, "rt") as f:
            docs += [json.loads(line) for line in f]
    return docs


def score_all(docs):
    t0 = time.perf_counter()
    items = [emma.process_results(d, [d.get("response") or ""])["emma_acc"] for d in docs]
    acc = mean_present(items)
    return time.perf_counter() - t0, acc


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    docs = [d for d in load(folder) if "response" in d]
    if not docs:
        sys.exit(f"no released responses under {folder}")
    cold, acc = score_all(docs)
    emma._latex_value.cache_clear()
    emma._word_number.cache_clear()
    warm_imports, _ = score_all(docs)  # imports done, caches cleared again
    print(f"docs={len(docs)} accuracy={acc:.2f}")
    print(f"cold: {cold:.2f} s ({len(docs) / cold:.0f} docs/s)")
    print(f"caches cleared, imports warm: {warm_imports:.2f} s ({len(docs) / warm_imports:.0f} docs/s)")
    print(f"RESULT seconds={cold:.3f} docs_per_s={len(docs) / cold:.0f} target_seconds=3")


if __name__ == "__main__":
    main()
