"""Test-time scaling over T sampled candidates per question: N of them chosen, then a majority vote, the
best by a reward model's scores, or "any correct" (pass@N), as the EMMA authors ran it (EMMA paper §4.3,
Tables 3 and 7; the protocol step by step: ``shared/specs/emma_test_time_scaling.md``).

Nothing here names a benchmark: a benchmark supplies its candidates' extractions and verdicts, its
reward-model instructions and the ``query`` its candidates answered.

Determinism. The authors' tie-breaks come from CPython's ``random`` module in a fixed call order:
``seed(42)`` then ``sample(range(T), N)`` (the subset, in order) then, for a reward model's pick, one
``choice`` on the same state; for a majority vote, ``seed(42)`` then ``choice``. A ``random.Random(42)``
replays exactly those draws (a test checks the spec's tables of positions).

How a run gets its T candidates: lmms-eval sends a task's request ``repeats`` times, and its default filter
(``take_first``) keeps the first response only. A task that scores several candidates declares
:class:`KeepSamples` as its filter: one response stays a string (what every other metric reads), several
stay a list (:func:`samples_of`).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: the seed of every draw (the authors' ``random.seed(42)``)
SEED = 42
#: the candidate counts of the paper's curves (Table 3's columns)
SIZES = (1, 2, 4, 8, 16)
#: the reward model's score slots: its reply labels candidates by raw index, parsed into a 16-slot list
SCORE_SLOTS = 16


# --------------------------------------------------------------------------- the candidates of a run


class KeepSamples:
    """lmms-eval filter (``filter_list: [{name: none, filter: [{function: !function ...KeepSamples}]}]``):
    each instance's responses as they are when there are several (``--repeats`` / ``repeats:``), its one
    response (a string, as ``take_first`` gives it) otherwise."""

    def __init__(self, **kwargs: Any) -> None:
        pass

    def apply(self, resps: Iterable[Sequence[Any]], docs: Any) -> list[Any]:
        return [list(r) if len(r) > 1 else (r[0] if r else "") for r in resps]


def samples_of(results: Sequence[Any]) -> list[Any]:
    """A doc's candidates from ``process_results``' ``results``: the list :class:`KeepSamples` kept, or the
    one response."""
    if not results:
        return [""]
    first = results[0]
    if isinstance(first, (list, tuple)):
        return list(first) or [""]
    return list(results)


# --------------------------------------------------------------------------- choosing N of T


@dataclass
class Subset:
    """The N raw indices of T chosen for one question (``nums``, in draw order), and the random state the
    draw left (the reward model's tie-break draws from it)."""

    total: int
    nums: list[int]
    rng: random.Random

    def choice(self, seq: Sequence[Any]) -> Any:
        """``random.choice(seq)`` on the state the draw left (a copy: the same subset may choose again)."""
        rng = random.Random()
        rng.setstate(self.rng.getstate())
        return rng.choice(seq)


def subset(total: int, n: int) -> Subset:
    """``random.seed(42); nums = random.sample(range(T), N)``: the same subset for every question; N = T
    is a permutation."""
    if not 1 <= n <= total:
        raise ValueError(f"cannot choose {n} of {total} candidates")
    rng = random.Random(SEED)
    return Subset(total, rng.sample(range(total), n), rng)


def sizes_up_to(total: int) -> list[int]:
    """The curve's N that T candidates allow."""
    return [n for n in SIZES if n <= total]


# --------------------------------------------------------------------------- majority vote


@dataclass
class Vote:
    """A majority vote's outcome: the chosen answer (None: no candidate voted), the answers tied at the
    top in first-occurrence order, each answer's count, and the candidates that voted."""

    pick: str | None
    winners: list[str]
    counts: dict[str, int]
    voters: int


def majority_vote(extractions: Sequence[str | None]) -> Vote:
    """The authors' vote: a None extraction (no response) does not vote; every other string, the empty one
    included, is a vote counted as it is (no normalisation); ties go to ``seed(42); choice(winners)``."""
    votes = [e for e in extractions if e is not None]
    counts: dict[str, int] = {}
    for e in votes:
        counts[e] = counts.get(e, 0) + 1
    if not counts:
        return Vote(None, [], {}, 0)
    top = max(counts.values())
    winners = [a for a in counts if counts[a] == top]  # dict order: first occurrence
    return Vote(random.Random(SEED).choice(winners), winners, counts, len(votes))


# --------------------------------------------------------------------------- pass@N


def pass_unbiased(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator (Chen et al., 2021): 1 - C(n-c, k) / C(n, k) for c correct of n."""
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n = {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


# --------------------------------------------------------------------------- generative reward model

# "\finalscore3{reason}{4}" (read first; slot 0 ignored), then "\finalscore{3}{reason}{4}" (overrides)
_FINAL_NUMBERED = re.compile(r"inalscore(?:(\d+))\{[^\}]+\}\{(\d+)\}")
_FINAL_BRACED = re.compile(r"inalscore(?:\{(\d+)\})\{[^\}]+\}\{(\d+)\}")


@dataclass
class Scores:
    """A reward model's reply read as the authors read it: a score per slot (raw candidate index; 0 where
    the reply gave none), the slots it did score, and ``error`` when a label past the slots made the
    authors' code fail on the question (no pick: scored wrong)."""

    slots: list[int]
    scored: list[int]
    error: str | None = None


def parse_final_scores(reply: str | None, slots: int = SCORE_SLOTS) -> Scores:
    """``\\finalscore`` entries of a reply into ``slots`` integer scores: the other four metrics are
    ignored; a reason holding ``}``, an empty reason or a score that is not digits leave that slot at 0;
    a later entry for a slot overwrites an earlier one. Never raises: an unreadable reply scores 0
    everywhere, which still selects (see :func:`select_best`)."""
    out = [0] * slots
    scored: list[int] = []
    error = None
    for rx, skip_zero in ((_FINAL_NUMBERED, True), (_FINAL_BRACED, False)):
        for label, value in rx.findall(reply or ""):
            i = int(label)
            if skip_zero and i == 0:
                continue
            if i >= slots:
                error = error or f"the reply scores Response{{{i}}}, past the {slots} slots"
                continue
            out[i] = int(value)
            if i not in scored:
                scored.append(i)
    return Scores(out, sorted(scored), error)


@dataclass
class Pick:
    """The candidate a reward model's scores select: ``index`` its raw index (None: none selected, scored
    wrong), ``tied`` the candidates tied at the top, ``presented`` whether it was among the N shown."""

    index: int | None
    tied: list[int]
    presented: bool
    why: str | None = None


def select_best(scores: Scores, sub: Subset, below_t: bool = True) -> Pick:
    """The authors' selection (their current code): the maximum over every slot; the tied slots below T,
    ascending; ``choice`` on the state the subset's draw left. A reply that scored nothing selects among all
    T candidates, and a label the subset did not show can win: both as they ran it. ``below_t=False``: their code before commit ``aa44bc9``
    (every tied slot, so a pick may be a raw index >= T), which made their InternVL reward-model files."""
    if scores.error:
        return Pick(None, [], False, scores.error)
    top = max(scores.slots)
    tied = [i for i, s in enumerate(scores.slots) if s == top and (i < sub.total or not below_t)]
    if not tied:
        return Pick(None, [], False, f"the top score {top} is on a label >= T = {sub.total}")
    i = sub.choice(tied)
    return Pick(i, tied, i in sub.nums)


def select_best_scalar(values: Sequence[float], sub: Subset) -> Pick:
    """A scalar reward model's selection: the subset's candidates in subset order, those at the maximum
    score, ``choice`` on the state the subset's draw left; the pick as a raw index."""
    if len(values) != len(sub.nums):
        raise ValueError(f"{len(values)} scores for {len(sub.nums)} candidates")
    top = max(values)
    tied_pos = [p for p, v in enumerate(values) if v == top]
    pos = sub.choice(tied_pos)
    return Pick(sub.nums[pos], [sub.nums[p] for p in tied_pos], True)


# --------------------------------------------------------------------------- tournament (ours: no code was released)

#: ``decide``'s answer for a match whose request failed
FAILED = -1


@dataclass
class Bracket:
    """A tournament's outcome: the winner's raw index (None: undecided or failed), the matches played
    ``(a, b, winner)``, the matches still to play (their players known), and whether a match failed."""

    winner: int | None
    matches: list[tuple[int, int, int]]
    pending: list[tuple[int, int]]
    failed: bool = False


def tournament(nums: Sequence[int], decide: Any) -> Bracket:
    """Single elimination over the chosen candidates in subset order: round 1 pairs the 1st with the 2nd, the
    3rd with the 4th, ...; an odd one out passes to the next round; winners meet in the same order. N - 1
    matches. ``decide(a, b)`` is the winner's raw index, None when the match has not been played, or
    :data:`FAILED`. Every match whose players are known is returned as pending at once (a round's matches
    are independent)."""
    players = list(nums)
    matches: list[tuple[int, int, int]] = []
    while len(players) > 1:
        pending: list[tuple[int, int]] = []
        winners: list[int] = []
        failed = False
        for j in range(0, len(players) - 1, 2):
            a, b = players[j], players[j + 1]
            w = decide(a, b)
            if w is None:
                pending.append((a, b))
            elif w == FAILED:
                failed = True
            else:
                matches.append((a, b, w))
                winners.append(w)
        if failed:
            return Bracket(None, matches, [], True)
        if pending:
            return Bracket(None, matches, pending)
        if len(players) % 2:
            winners.append(players[-1])
        players = winners
    return Bracket(players[0] if players else None, matches, [])


def match_winner(scores: Scores, a: int, b: int) -> int:
    """A match's winner from the reward model's scores of its two candidates: the higher ``\finalscore``;
    a tie (an unreadable reply included) goes to ``a``, the earlier in subset order."""
    slots = scores.slots
    return b if (slots[b] if b < len(slots) else 0) > (slots[a] if a < len(slots) else 0) else a


def reward_prompt(query: str, candidates: Mapping[int, str | None], nums: Sequence[int], instructions: str) -> str:
    """The reward model's prompt as the authors built it: the question's query, then a block per chosen
    candidate labelled by its raw index, ``"\\nResponse{i}:\\nke" + text + "\\n"`` (the ``ke`` was sent: a
    typo kept), ``"no response"`` for a missing one, then the instructions; the whole stripped."""
    out = query
    for i in nums:
        text = candidates.get(i)
        out += "\nResponse{" + str(i) + "}:\nke" + (text if text else "no response") + "\n"
    return (out + instructions).strip()


# --------------------------------------------------------------------------- a benchmark's curves


@dataclass(frozen=True)
class CurveNames:
    """A benchmark's metric names for the curves (``{}`` is N), e.g. ``emma_maj@{}``."""

    maj: str
    pass_: str
    pass_unbiased: str
    bon: str = ""
    rm_failed: str = ""
    tournament: str = ""
    bon_scalar: str = ""
    rm_replies: str = ""  # the Best-of-N replies that did not score every shown candidate, by how
    sizes: tuple[int, ...] = SIZES
    bon_sizes: tuple[int, ...] = (2, 4, 8, 16)

    def voting(self) -> list[str]:
        """The curves a run of candidates gives alone (no reward model)."""
        return [f.format(n) for f in (self.maj, self.pass_, self.pass_unbiased) for n in self.sizes]

    def reward_model(self) -> list[str]:
        """The curves a reward model gives (Best-of-N, the tournament and a scalar reward model's Best-of-N where named)."""
        return [f.format(n) for f in (self.bon, self.tournament, self.bon_scalar) if f for n in self.bon_sizes]

    def all(self) -> list[str]:
        """Every curve metric, in the order a task's ``metric_list`` declares them."""
        return self.voting() + self.reward_model()


def curve_items(responses: Sequence[Any], extract: Any, correct: Any, names: CurveNames) -> dict:
    """A question's majority-vote and pass@N values for every N of the curve (None above T, which
    lmms-eval shows as N/A) and its candidates' record. ``extract(response)`` is a candidate's answer (None:
    no response, which does not vote), ``correct(answer)`` its verdict."""
    total = len(responses)
    extractions = [extract(r) for r in responses]
    verdicts = [e is not None and bool(correct(e)) for e in extractions]
    right = sum(verdicts)
    out: dict[str, Any] = {}
    for n in names.sizes:
        if n > total:
            out[names.maj.format(n)] = out[names.pass_.format(n)] = out[names.pass_unbiased.format(n)] = None
            continue
        sub = subset(total, n)
        vote = majority_vote([extractions[i] for i in sub.nums])
        maj = vote.pick is not None and bool(correct(vote.pick))
        out[names.maj.format(n)] = {"score": 100.0 if maj else 0.0, "n": n, "t": total, "pick": vote.pick, **({"tied": vote.winners} if len(vote.winners) > 1 else {})}
        out[names.pass_.format(n)] = {"score": 100.0 if any(verdicts[i] for i in sub.nums) else 0.0, "n": n, "t": total}
        out[names.pass_unbiased.format(n)] = {"score": 100.0 * pass_unbiased(total, right, n), "n": n, "t": total, "correct": right}
    out["candidates"] = [{"extraction": e, "correct": v} for e, v in zip(extractions, verdicts)]
    return out
