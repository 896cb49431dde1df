"""Sweeps made from one real lmms-eval run (tests and ``benchmarks/sweep_report.py``): copies of its output
folder as other checkpoints' runs, with other ``--model_args``, some of its tasks (a split job), per-doc
right/wrong flipped at random (another checkpoint's answers), or every task's samples repeated up to a
doc count (the full suite's size)."""

from __future__ import annotations

import glob
import json
import os
import random
from collections.abc import Iterable


def _flip_value(v, rng: random.Random, share: float):
    if rng.random() >= share:
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v in (0, 100, 0.0, 100.0):
        return 100.0 - v
    if isinstance(v, dict):
        out = dict(v)
        if out.get("score") in (0, 100, 0.0, 100.0):
            out["score"] = 100.0 - out["score"]
            if "correct" in out:
                out["correct"] = out["score"] > 0
        elif isinstance(out.get("correct"), bool) and "score" not in out:
            out["correct"] = not out["correct"]
        return out
    return v


def _copy_ids(row: dict, k: int) -> dict:
    """The ``k``-th repetition of a sample: the string ``*_id`` fields of its per-doc records suffixed
    ``~k`` (k > 0), so that a group of docs (a claim and its variants) stays as large as in the run
    copied instead of growing with every repetition."""
    if k == 0:
        return row
    return {key: ({f: (f"{x}~{k}" if f.endswith("_id") and isinstance(x, str) else x) for f, x in v.items()} if isinstance(v, dict) and key != "doc" else v) for key, v in row.items()}


def clone_run(results_path: str, output_path: str, model_args: str | None = None, tasks: Iterable[str] | None = None, stamp: str | None = None,
              flip: float = 0.0, seed: int = 0, docs: int | None = None) -> str:
    """Write a copy of the run of ``results_path`` under ``output_path/<model folder>/``; returns its
    results file. ``tasks``: keep these tasks (and the groups whose tasks are all kept); ``flip``: the
    share of per-doc right/wrong values flipped; ``docs``: each task's samples repeated up to this many,
    each repetition with ids of its own (:func:`_copy_ids`)."""
    with open(results_path) as f:
        data = json.load(f)
    src_stamp = os.path.basename(results_path)[: -len("_results.json")]
    stamp = stamp or src_stamp
    keep = set(data["results"]) if tasks is None else set(tasks)
    groups = data.get("group_subtasks") or {}
    if tasks is not None:
        for g, subs in groups.items():
            if subs and all(s in keep for s in subs):
                keep.add(g)
    for key in ("results", "configs", "versions", "n-samples", "higher_is_better", "n-shot"):
        if isinstance(data.get(key), dict):
            data[key] = {t: v for t, v in data[key].items() if t in keep}
    data["group_subtasks"] = {g: s for g, s in groups.items() if g in keep}
    if model_args is not None:
        data["config"]["model_args"] = model_args
    folder = os.path.join(output_path, os.path.basename(os.path.dirname(results_path)))
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)
    for sp in glob.glob(os.path.join(os.path.dirname(results_path), f"{src_stamp}_samples_*.jsonl")):
        task = sp.rsplit("_samples_", 1)[1][: -len(".jsonl")]
        if task not in keep:
            continue
        with open(sp) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        if docs and rows:
            rows = [_copy_ids(dict(rows[i % len(rows)], doc_id=i), i // len(rows)) for i in range(docs)]
            if task in (data.get("n-samples") or {}):
                data["n-samples"][task] = {"original": docs, "effective": docs}
        with open(os.path.join(folder, f"{stamp}_samples_{task}.jsonl"), "w") as f:
            for row in rows:
                if flip:
                    row = {k: (_flip_value(v, rng, flip) if k not in ("doc_id", "target", "input", "resps", "filtered_resps") else v) for k, v in row.items()}
                f.write(json.dumps(row) + "\n")
    out = os.path.join(folder, f"{stamp}_results.json")
    with open(out, "w") as f:
        json.dump(data, f)
    return out
