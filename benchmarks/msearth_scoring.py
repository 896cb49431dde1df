"""MSEarth MCQ scoring speed: 10k synthetic model outputs, a quarter of them needing the similarity
fallback, through the task's own batch preparation (what the lmms-eval hook runs per rank),
``process_results`` and aggregation, on one core, after the embedding model is loaded.

    taskset -c 0 .venv/bin/python benchmarks/msearth_scoring.py [N]

Target (issue 5): >= 500 docs/s. For comparison it also times the same docs scored one at a time
(no batch preparation: each fallback encoded on its own). Last line: ``RESULT docs_per_s=<x> ...``.
"""

import random
import sys
import time

from lmms_eval_earthsci.core.scoring.metrics import mean_present
from lmms_eval_earthsci.core.scoring.similarity import get_matcher
from lmms_eval_earthsci.evals.msearth import tasks as msearth_tasks

WORDS = "warm cold humid dry air mass front pressure river glacier sediment layer basin flow rise fall summer winter coastal inland".split()


def synthetic(n, seed=0):
    rng = random.Random(seed)
    docs, responses = [], []
    for i in range(n):
        opts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))).capitalize() for _ in range(4)]
        gold = rng.randrange(4)
        q = f"<image>Caption:Figure {i}.\nQuestion:\nWhat is shown in panel {i % 7}?\nOptions:\n" + "\n".join(f"{'ABCD'[k]}. {o}" for k, o in enumerate(opts))
        docs.append(
            {
                "question_id": f"N{i:06d}",
                "query": q,
                "response": f"{'ABCD'[gold]}. {opts[gold]}",
                "classification_result": '{"primary_sphere": "Hydrology"}',
                "vqa_type": '{"vqa_type": "Single Image Question Answering", "question_category": "Discovery"}',
            }
        )
        kind = i % 4
        if kind == 3:  # free text: goes to the similarity fallback
            responses.append(f'{{"answer": "{opts[rng.randrange(4)].lower()}", "Explanation": "it looks like it"}}')
        elif kind == 2:
            responses.append('```json\n{{"answer": "{}. {}",\n "Explanation": "x",}}\n```'.format("ABCD"[rng.randrange(4)], opts[0]))
        else:
            responses.append('{{"answer": "{}", "Explanation": "the figure shows it"}}'.format("ABCD"[rng.randrange(4)]))
    return docs, responses


def score(docs, responses, batch):
    t0 = time.perf_counter()
    if batch:
        msearth_tasks.prepare_mcq(list(zip(docs, responses)))
    outs = [msearth_tasks.process_results_mcq(d, [r]) for d, r in zip(docs, responses)]
    acc = mean_present([o[msearth_tasks.MCQ_METRIC] for o in outs])
    mean_present([o[msearth_tasks.MCQ_STRICT] for o in outs])
    return time.perf_counter() - t0, acc, sum(o[msearth_tasks.MCQ_METRIC]["rule"] == "similarity" for o in outs)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    docs, responses = synthetic(n)
    get_matcher().best_match("warm air", ["Cold air", "Warm air"])  # model loaded before timing
    t_batch, acc, fallbacks = score(docs, responses, batch=True)
    get_matcher()._cache.clear()  # the per-doc run starts with no cached embeddings either
    m = min(n, 2000)
    t_doc, _, _ = score(docs[:m], responses[:m], batch=False)
    print(f"docs={n} fallbacks={fallbacks} msearth_acc={acc:.2f}")
    print(f"batched (hook + process_results + aggregation): {t_batch:6.2f} s  {n / t_batch:7.0f} docs/s")
    print(f"one doc at a time (first {m} docs):            {t_doc:6.2f} s  {m / t_doc:7.0f} docs/s")
    print(f"RESULT docs_per_s={n / t_batch:.0f} per_doc_docs_per_s={m / t_doc:.0f} target_docs_per_s=500")


if __name__ == "__main__":
    main()
