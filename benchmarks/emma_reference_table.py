"""EMMA-mini: the paper's numbers next to what our metrics give on the authors' released responses.

    .venv/bin/python benchmarks/emma_reference_table.py [REFERENCE_DIR]

For each released run (../shared/reference/emma_mini/<model>_<strategy>.jsonl.gz) it scores every
response through the task's own ``process_results_full`` and prints a Markdown table: the paper's
EMMA-mini overall (Table 2, bundled in ``lmms_eval_earthsci/evals/emma/paper_numbers.json``), the accuracy
of the verdicts stored in the released file, ``emma_acc`` and ``emma_acc_lenient``. The README's
table is this script's output.
"""

import glob
import gzip
import json
import os
import sys

from lmms_eval_earthsci import PACKAGE_DIR
from lmms_eval_earthsci.evals.emma import tasks as emma

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "shared", "reference", "emma_mini")
# released file prefix -> the paper's model name
NAMES = {
    "claude": "Claude 3.5 Sonnet",
    "gemini": "Gemini 2.0 Flash",
    "gpt": "GPT-4o",
    "Qwen": "Qwen2-VL-72B-Instruct",
    "Llava": "LLaVA-Onevision-72B",
    "InternVL2": "InternVL2-Llama3-76B",
    "InternVL2_5": "InternVL2.5-78B",
    "random_choice": "Random choice",
}


def paper_row(model, strategy):
    with open(os.path.join(PACKAGE_DIR, "evals", "emma", "paper_numbers.json")) as f:
        rows = json.load(f)["rows"]
    for r in rows:
        if r["model"] == model and r["strategy"] in (strategy, None):
            return r
    return None


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    print("| released run | n | paper (Table 2) | released verdicts | `emma_acc` | `emma_acc_lenient` |")
    print("|---|---:|---:|---:|---:|---:|")
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl.gz"))):
        name = os.path.basename(path)[: -len(".jsonl.gz")]
        with gzip.open(path, "rt") as f:
            docs = [json.loads(line) for line in f]
        docs = [d for d in docs if "response" in d]
        if not docs:
            continue
        prefix, _, strategy = name.rpartition("_")
        if name == "random_choice":
            prefix, strategy = name, None
        paper = paper_row(NAMES.get(prefix, ""), strategy) if prefix in NAMES else None
        n = len(docs)
        released = 100 * sum(bool(d.get("true_false")) for d in docs) / n
        outs = [emma.process_results_full(d, [d.get("response") or ""]) for d in docs]
        acc = sum(o["emma_acc"]["score"] for o in outs) / n
        lenient = sum(o["emma_acc_lenient"]["score"] for o in outs) / n
        p = f"{paper['mini_overall']:.2f}" if paper and n == 400 and paper.get("mini_overall") is not None else "–"
        print(f"| {name} | {n} | {p} | {released:.2f} | {acc:.2f} | {lenient:.2f} |")


if __name__ == "__main__":
    main()
