"""What the figure statistics of the layout probe cost (issue 58): every evaluated doc's figure sizes read from
headers (``core.boundary.budget.figure_sizes``, once per task before the first doc), per doc, beside what the run
itself does with the same doc's figures (``doc_to_visual`` with each figure decoded: what the model's processor
needs first), in one process, alternating, on the real-size mirror of ``benchmarks/hook_cost.py``.

    .venv/bin/python benchmarks/budget_probe.py [--scale 0.02] [--docs 40] [--repeats 3] [--keep DIR]

The last line is machine-readable: ``RESULT worst_ratio=<headers / decode, the largest over tasks>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hook_cost import TASKS, build_mirror  # noqa: E402 - the real-size mirror, built the same way


def measure(n_docs: int, repeats: int) -> list[dict]:
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_eval_earthsci.core.boundary import budget
    from lmms_eval_earthsci.core.data.repo_files import DecodedCache
    from lmms_eval_earthsci.registration import register

    register()
    tasks = get_task_dict(TASKS, TaskManager())
    import gc

    caches = [o for o in gc.get_objects() if isinstance(o, DecodedCache)]
    out = []
    for name in TASKS:
        task = tasks[name]
        docs = task.test_docs()
        n = min(n_docs, len(docs))
        headers, decoded = [], []
        for r in range(repeats):
            for side in ((0, 1) if r % 2 else (1, 0)):
                for cache in caches:
                    cache._items.clear()
                t = time.process_time()
                if side == 0:
                    budget.figure_sizes(task, n)
                    headers.append(time.process_time() - t)
                else:
                    for i in range(n):
                        for image in task.doc_to_visual(docs[i]) or []:
                            image.load()
                    decoded.append(time.process_time() - t)
        h, d = statistics.median(headers), statistics.median(decoded)
        out.append({"task": name, "docs": n, "headers_ms": 1000 * h / n, "decode_ms": 1000 * d / n, "ratio": h / d if d else None})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.02, help="rows as a share of the real datasets'")
    ap.add_argument("--docs", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", help="build (or reuse) the mirror here")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="budget_probe_")
    mirror = os.path.join(work, "mirror")
    if not os.path.isdir(mirror):
        build_mirror(mirror, args.scale)
    os.environ.update(EARTHSCI_DATA_MIRROR=mirror, HF_HOME=os.path.join(work, "hf"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    rows = measure(args.docs, args.repeats)
    print(f"per doc, CPU, medians of {args.repeats} passes")
    print(f"{'task':22s} {'docs':>5s} {'headers ms':>11s} {'decode ms':>10s} {'ratio':>6s}")
    for r in rows:
        print(f"{r['task']:22s} {r['docs']:5d} {r['headers_ms']:11.2f} {r['decode_ms']:10.2f} {r['ratio']:6.3f}")
    print(f"\nRESULT worst_ratio={max(r['ratio'] for r in rows if r['ratio'] is not None):.3f}")


if __name__ == "__main__":
    main()
