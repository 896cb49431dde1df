"""Best-of-N with a generative reward model, through the judge engine: one request per question and N (the
question's query, N candidates, the benchmark's instructions: :func:`core.scoring.scaling.reward_prompt`),
sent by the judge pass with its concurrency, cache, resume and breaker (:class:`JudgeSpec.per_question`);
``process_results`` reads each reply with the authors' parser and selection rule
(:func:`core.scoring.scaling.select_best`).

A reply that scores nothing is not a failure: the authors' rule still picks (among all T). A request that
failed after its retries is: that N is scored wrong, counted in ``<benchmark>_rm_failed`` by cause; when no
request of a task got a reply the Best-of-N metrics are null (:func:`..task_pass.judged_mean`), as a judged
metric's are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from lmms_eval_earthsci.core.judge.task_pass import UNAVAILABLE, JudgeSpec, Outcome, outcome_for
from lmms_eval_earthsci.core.scoring import scaling


def parse_reply(reply: str) -> dict:
    """A reward model's reply as the judge's verdict (JSON-safe, never raises)."""
    return asdict(scaling.parse_final_scores(reply))


def prompts_for(responses: Sequence[Any], query: str, instructions: str, sizes: Sequence[int]) -> dict[int, str]:
    """``{N: the reward model's prompt}`` for every N of ``sizes`` that T = ``len(responses)`` allows."""
    total = len(responses)
    candidates = {i: (r if isinstance(r, str) else None) or None for i, r in enumerate(responses)}
    return {n: scaling.reward_prompt(query, candidates, scaling.subset(total, n).nums, instructions) for n in sizes if n <= total}


def best_of_n_items(spec: JudgeSpec, doc: Mapping[str, Any], responses: Sequence[Any], prompts: Mapping[int, str], correct: Callable[[int], bool], names: scaling.CurveNames) -> dict:
    """A question's ``bon@N`` values (None above T, or without a reward model) and its ``rm_failed`` value.
    ``correct(i)`` is the verdict on raw candidate ``i``."""
    total = len(responses)
    out: dict[str, Any] = {names.bon.format(n): None for n in names.bon_sizes}
    outcomes: dict[int, Outcome] = {n: outcome_for(spec, doc, p) for n, p in prompts.items()}
    if not outcomes or all(o.status == UNAVAILABLE for o in outcomes.values()):
        out[names.rm_failed] = None
        return out
    failed_items = []
    for n, o in outcomes.items():
        sub = scaling.subset(total, n)
        record: dict[str, Any] = {"n": n, "t": total, "shown": sub.nums, "judge": o.log(), "attempts": o.attempts, "tokens": dict(o.usage)}
        if not o.ok:
            record.update(score=0.0, pick=None, why=f"the reward model's request failed: {o.cause}")
        else:
            scores = scaling.Scores(**o.verdict)
            pick = scaling.select_best(scores, sub)
            ok = pick.index is not None and correct(pick.index)
            record.update(
                score=100.0 if ok else 0.0, pick=pick.index, tied=pick.tied, presented=pick.presented, why=pick.why,
                scores={str(i): s for i, s in enumerate(scores.slots) if s or i in sub.nums}, unscored=[i for i in sub.nums if i not in scores.scored],
            )
        out[names.bon.format(n)] = record
        failed_items.append(o.failed_item() or {})
    out[names.rm_failed] = rm_failed_item(failed_items)
    return out


def rm_failed_item(items: Sequence[Mapping[str, Any]]) -> dict:
    """One question's ``rm_failed`` value from its requests' (one per N), read by
    :func:`..task_pass.judge_failed`: the question failed when any of its requests did; requests and
    tokens summed."""
    failed = [i for i in items if i.get("score")]
    out: dict[str, Any] = {k: sum(int(i.get(k) or 0) for i in items) for k in ("attempts", "prompt_tokens", "completion_tokens", "reasoning_tokens")}
    out.update(
        score=1 if failed else 0, task=next((i.get("task") for i in items if i.get("task")), None), cause=failed[0].get("cause") if failed else None,
        cached=all(i.get("cached") for i in items), requests=len(items), failed_requests=len(failed), model_tokens=None,
    )
    return out
