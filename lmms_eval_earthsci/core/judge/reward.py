"""A generative reward model over a question's candidates, through the judge engine: Best-of-N (one request
per question and N: the question's query, N candidates, the benchmark's instructions,
:func:`core.scoring.scaling.reward_prompt`) and a tournament (N - 1 matches, each the same request with two
candidates), sent by the judge pass with its concurrency, cache, resume and breaker
(:attr:`JudgeSpec.per_question`: the pass asks again for the matches the previous round decided);
``process_results`` reads each reply with the authors' parser and selection rule
(:func:`core.scoring.scaling.select_best`, :func:`core.scoring.scaling.match_winner`).

A reply that scores nothing is not a failure: the authors' rule still picks (among all T). A request that
failed after its retries is: that N is scored wrong, and the question counted in ``<benchmark>_rm_failed``
by cause; when no request of a task got a reply the metrics are null (:func:`..task_pass.judged_mean`), as a
judged metric's are.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from lmms_eval_earthsci.core.judge.task_pass import UNAVAILABLE, JudgeSpec, Outcome, outcome_for, stored_outcome
from lmms_eval_earthsci.core.scoring import scaling

logger = logging.getLogger("lmms_eval_earthsci")


def parse_reply(reply: str) -> dict:
    """A reward model's reply as the judge's verdict (JSON-safe, never raises)."""
    return asdict(scaling.parse_final_scores(reply))


@dataclass(frozen=True)
class Question:
    """What the reward model is shown of one question: its query, its T candidates (raw index order), the
    benchmark's instructions."""

    query: str
    responses: Sequence[Any]
    instructions: str

    @property
    def total(self) -> int:
        return len(self.responses)

    def candidates(self) -> dict[int, str | None]:
        return {i: (r if isinstance(r, str) and r else None) for i, r in enumerate(self.responses)}

    def prompt(self, nums: Sequence[int]) -> str:
        return scaling.reward_prompt(self.query, self.candidates(), nums, self.instructions)


def generative_ok(q: Question) -> bool:
    """The authors' reply format labels candidates in 16 score slots: a run of more candidates gets no
    generative reward-model curves (their N = 16 subset of T = 20 would show labels past the slots)."""
    return q.total <= scaling.SCORE_SLOTS


def _bon_prompts(q: Question, names: scaling.CurveNames) -> dict[int, str]:
    if not names.bon or not generative_ok(q):
        return {}
    return {n: q.prompt(scaling.subset(q.total, n).nums) for n in names.bon_sizes if n <= q.total}


def _bracket(q: Question, n: int, lookup: Callable[[str], Outcome | None]) -> tuple[scaling.Bracket, list[Outcome]]:
    """The tournament over the subset of N, each match looked up (None: not played yet)."""
    seen: list[Outcome] = []

    def decide(a: int, b: int) -> int | None:
        o = lookup(q.prompt([a, b]))
        if o is None or o.status == UNAVAILABLE:
            return None
        seen.append(o)
        if not o.ok:
            return scaling.FAILED
        return scaling.match_winner(scaling.Scores(**o.verdict), a, b)

    return scaling.tournament(scaling.subset(q.total, n).nums, decide), seen


def requests_for(spec: JudgeSpec, doc: Mapping[str, Any], q: Question, names: scaling.CurveNames) -> list[str]:
    """The pass's requests for one question: every Best-of-N prompt, and every tournament match whose
    players the matches already judged on this rank decide (the pass asks again until none is left)."""
    out = list(_bon_prompts(q, names).values())
    if names.tournament and generative_ok(q):
        for n in names.bon_sizes:
            if n <= q.total:
                bracket, _ = _bracket(q, n, lambda text: stored_outcome(spec, doc, text))
                out += [q.prompt([a, b]) for a, b in bracket.pending]
    return list(dict.fromkeys(out))


def _cost(outcomes: Sequence[Outcome]) -> dict:
    return {"requests": len(outcomes), "attempts": sum(o.attempts for o in outcomes if not o.cached), "cached": sum(o.cached for o in outcomes),
            "tokens": {k: sum(int(o.usage.get(k, 0)) for o in outcomes if not o.cached) for k in ("prompt_tokens", "completion_tokens")}}


def reward_items(spec: JudgeSpec, doc: Mapping[str, Any], q: Question, correct: Callable[[int], bool], names: scaling.CurveNames, scalar: JudgeSpec | None = None) -> dict:
    """A question's ``bon@N`` and ``tournament@N`` values, with ``scalar`` its scalar reward model's
    ``bon_scalar@N`` (each None above T, or without its reward model), and its ``rm_failed`` value.
    ``correct(i)`` is the verdict on raw candidate ``i``."""
    out: dict[str, Any] = {name: None for name in names.reward_model()}
    used: list[Outcome] = []
    for n, prompt in _bon_prompts(q, names).items():
        o = outcome_for(spec, doc, prompt)
        if o.status == UNAVAILABLE:
            continue
        used.append(o)
        sub = scaling.subset(q.total, n)
        record: dict[str, Any] = {"n": n, "t": q.total, "shown": sub.nums, "judge": o.log(), "cost": _cost([o])}
        if not o.ok:
            record.update(score=0.0, pick=None, why=f"the reward model's request failed: {o.cause}")
        else:
            scores = scaling.Scores(**o.verdict)
            pick = scaling.select_best(scores, sub)
            unscored = [i for i in sub.nums if i not in scores.scored]
            record.update(
                score=100.0 if pick.index is not None and correct(pick.index) else 0.0, pick=pick.index, tied=pick.tied, presented=pick.presented, why=pick.why,
                scores={str(i): s for i, s in enumerate(scores.slots) if s or i in sub.nums}, unscored=unscored, reply=reply_kind(scores, unscored, len(sub.nums)),
            )
        out[names.bon.format(n)] = record
    if names.tournament and generative_ok(q):
        for n in names.bon_sizes:
            if n > q.total:
                continue
            bracket, seen = _bracket(q, n, lambda text: outcome_for(spec, doc, text))
            if not seen:
                continue
            used += seen
            failed = [o for o in seen if not o.ok]
            record = {"n": n, "t": q.total, "shown": scaling.subset(q.total, n).nums, "matches": [list(m) for m in bracket.matches], "pick": bracket.winner, "cost": _cost(seen),
                      # the judge's status for judged_mean: a bracket that got its replies is "judged"
                      "judge": {"status": failed[0].status if failed else seen[0].status, "cause": failed[0].cause if failed else None}}
            if bracket.winner is None:
                why = f"a match's request failed: {failed[0].cause}" if failed else "a match was not played"
                record.update(score=0.0, why=why)
            else:
                record.update(score=100.0 if correct(bracket.winner) else 0.0)
            out[names.tournament.format(n)] = record
    if scalar is not None and names.bon_scalar:
        used += _scalar_items(scalar, doc, q, correct, names, out)
    if names.rm_replies:
        out[names.rm_replies] = replies_item(out, names)
    used = list({id(o): o for o in used}.values())  # a match two brackets share is one request
    out[names.rm_failed] = rm_failed_item([o.failed_item() or {} for o in used]) if used else None
    return out


# how a reward model's Best-of-N reply was read (not failures: the authors' rule picks in every case)
SCORED_ALL = "scored every shown candidate"
REPLY_KINDS = ("a label past the score slots (no pick)", "scored none of the shown (a pick among all T)", "scored some of the shown")


def reply_kind(scores: scaling.Scores, unscored: Sequence[int], shown: int) -> str:
    if scores.error:
        return REPLY_KINDS[0]
    if len(unscored) == shown:
        return REPLY_KINDS[1]
    return REPLY_KINDS[2] if unscored else SCORED_ALL


def replies_item(out: Mapping[str, Any], names: scaling.CurveNames) -> dict | None:
    """A question's value of ``<benchmark>_rm_replies``: its Best-of-N replies that did not score every shown
    candidate, by how (None without a reward model)."""
    recs = [out.get(names.bon.format(n)) for n in names.bon_sizes]
    kinds = [r["reply"] for r in recs if isinstance(r, dict) and r.get("reply")]
    if not kinds:
        return None
    causes = {k: kinds.count(k) for k in REPLY_KINDS if k in kinds}
    return {"score": sum(causes.values()), "replies": len(kinds), "causes": causes}


def reply_causes(items: Sequence[Any]) -> int | None:
    """Aggregation of ``<benchmark>_rm_replies``: the Best-of-N replies that did not score every shown candidate
    (each read as the authors' rule reads it, never a failure), logged by cause; None without a reward model."""
    present = [i for i in items if isinstance(i, Mapping)]
    if not present:
        return None
    causes: dict[str, int] = {}
    for i in present:
        for k, n in (i.get("causes") or {}).items():
            causes[k] = causes.get(k, 0) + int(n)
    total = sum(causes.values())
    if total:
        logger.info("lmms_eval_earthsci reward-model replies: %d of %d did not score every shown candidate: %s", total, sum(int(i.get("replies") or 0) for i in present), json.dumps(causes))
    return total


def rm_failed_item(items: Sequence[Mapping[str, Any]]) -> dict:
    """One question's ``rm_failed`` value from its requests', read by :func:`..task_pass.judge_failed`: the
    question failed when any of its requests did; requests and tokens summed."""
    failed = [i for i in items if i.get("score")]
    out: dict[str, Any] = {k: sum(int(i.get(k) or 0) for i in items) for k in ("attempts", "prompt_tokens", "completion_tokens", "reasoning_tokens")}
    out.update(
        score=1 if failed else 0, task=next((i.get("task") for i in items if i.get("task")), None), cause=failed[0].get("cause") if failed else None,
        cached=all(i.get("cached") for i in items), requests=len(items), failed_requests=len(failed), model_tokens=None,
    )
    return out


# ---------------------------------------------------------------------------- a scalar reward model


def scalar_score(reply: str) -> float:
    """A scalar reward model's score; a non-finite one (NaN, inf) is a reply that cannot be read."""
    value = float(reply)
    if not math.isfinite(value):
        raise ValueError(f"the score {reply!r} is not a finite number")
    return value


def scalar_text(response: Any) -> str:
    """A candidate as the scalar reward model's assistant turn: ``"no reponse"`` (sic, the authors') when missing."""
    return response if isinstance(response, str) and response else "no reponse"


def scalar_requests(q: Question) -> list[str]:
    """One request per distinct candidate text (every N's subset reads the same scores)."""
    return list(dict.fromkeys(scalar_text(r) for r in q.responses))


def _scalar_items(spec: JudgeSpec, doc: Mapping[str, Any], q: Question, correct: Callable[[int], bool], names: scaling.CurveNames, out: dict) -> list[Outcome]:
    """``bon_scalar@N``: each candidate scored once; the subset's scores in subset order, the maximum, the
    authors' seeded pick among ties (:func:`core.scoring.scaling.select_best_scalar`)."""
    outcomes = [outcome_for(spec, doc, scalar_text(r)) for r in q.responses]
    if all(o.status == UNAVAILABLE for o in outcomes):
        return []
    for n in names.bon_sizes:
        if n > q.total:
            continue
        sub = scaling.subset(q.total, n)
        shown = [outcomes[i] for i in sub.nums]
        record: dict[str, Any] = {"n": n, "t": q.total, "shown": sub.nums, "cost": _cost(list({id(o): o for o in shown}.values())),
                                  "judge": {"status": next((o.status for o in shown if not o.ok), shown[0].status), "cause": next((o.cause for o in shown if not o.ok), None)}}
        failed = [o for o in shown if not o.ok]
        if failed:
            record.update(score=0.0, pick=None, why=f"the scalar reward model's request failed: {failed[0].cause}")
        else:
            values = [float(o.verdict) for o in shown]
            pick = scaling.select_best_scalar(values, sub)
            record.update(score=100.0 if pick.index is not None and correct(pick.index) else 0.0, pick=pick.index, tied=pick.tied,
                          scores={str(i): v for i, v in zip(sub.nums, values)})
        out[names.bon_scalar.format(n)] = record
    return [o for o in outcomes if o.status != UNAVAILABLE]
