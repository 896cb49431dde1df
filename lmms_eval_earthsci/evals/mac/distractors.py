"""Ranking within a journal, distractor selection, letters, and the self-validation stats of a MAC
snapshot (spec §3.3, §3.4). Pure NumPy on embeddings; the builder feeds it one journal at a time, so
the cost is the sum over journals of (questions x issues), never quadratic in the whole collection.

Conventions (where the spec leaves a choice):
- candidates of a question are every other issue of its journal, in the journal's id order; ties in
  similarity (and in average rank) keep that order (stable sorts), so a build is reproducible;
- the average-rank list ranks candidates by the mean of their 0-based positions in the models' lists;
  its picks are keyed ``ave_<position in that list>``;
- letters: a per-question generator seeded by (seed, variant, journal, id), so adding a journal or an
  issue never reshuffles the others' letters.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import numpy as np

LETTERS = ("A", "B", "C", "D")
N_DISTRACTORS = len(LETTERS) - 1


def ranked(sim_row: np.ndarray, self_index: int) -> np.ndarray:
    """Candidate indices by similarity, highest first, the question's own issue left out; ties in
    index order."""
    order = np.argsort(-np.asarray(sim_row), kind="stable")
    return order[order != self_index]


def average_rank_list(lists: Sequence[Sequence[int]]) -> np.ndarray:
    """Candidates re-ranked by their mean position over the models' lists (paper Appendix B)."""
    arrays = [np.asarray(lst, dtype=np.int64) for lst in lists]
    if not arrays or not len(arrays[0]):
        return np.zeros(0, dtype=np.int64)
    cands = np.sort(arrays[0])
    total = np.zeros(int(cands[-1]) + 1, dtype=np.int64)  # the sum of positions: the mean's order, exact
    for arr in arrays:
        if not np.array_equal(np.sort(arr), cands):
            raise ValueError("the models' ranked lists must hold the same candidates")
        total[arr] += np.arange(len(arr))
    return cands[np.argsort(total[cands], kind="stable")]  # stable: ties stay in index order


def select(model_lists: Mapping[str, Sequence[int]], ave: Sequence[int], n: int = N_DISTRACTORS) -> list[tuple[str, int]] | None:
    """Spec §3.3 steps 1-3. Each model in order contributes its top-1 unless an earlier model already
    chose it (then nothing); the average-rank list fills up to ``n``, skipping chosen ones; fewer than
    ``n`` distractors available = None (the question is dropped). Returns ``[(key, candidate)]`` in the
    order chosen."""
    chosen: list[tuple[str, int]] = []
    taken: set[int] = set()
    for key, lst in model_lists.items():
        if len(lst):
            top = int(lst[0])
            if top not in taken:
                chosen.append((key, top))
                taken.add(top)
    for p in range(len(ave)):  # usually stops after a few entries
        if len(chosen) >= n:
            break
        c = int(ave[p])
        if c not in taken:
            chosen.append((f"ave_{p}", c))
            taken.add(c)
    return chosen[:n] if len(chosen) >= n else None


def letters_for(seed: int, variant: str, journal: str, issue_id: str) -> list[str]:
    """The shuffled letters of one question: the ground truth takes the first, the distractors the rest
    in the order chosen (spec §3.3 step 4)."""
    out = list(LETTERS)
    random.Random(f"{seed}\0{variant}\0{journal}\0{issue_id}").shuffle(out)
    return out


def relative_rank(sim_row: np.ndarray, true_index: int) -> float:
    """Rank of the true pair among all of the journal's candidates (itself included), 1-based, divided
    by their number: 1/n when it is the most similar, 1.0 when the least (ties count in its favour)."""
    return float((sim_row > sim_row[true_index]).sum() + 1) / len(sim_row)


def _position_sum(sim_rows: Sequence[np.ndarray]) -> np.ndarray:
    """Each candidate's summed 0-based position over the models' similarity rankings (ties in index
    order): the average-rank model's order, in exact integers."""
    total = np.zeros(len(sim_rows[0]), dtype=np.int64)
    for row in sim_rows:
        order = np.argsort(-np.asarray(row), kind="stable")
        total[order] += np.arange(len(order))
    return total


def average_relative_rank(sim_rows: Sequence[np.ndarray], true_index: int) -> float:
    """The same for the average-rank model: candidates ranked by their mean rank over the models."""
    total = _position_sum(sim_rows)
    return float((total < total[true_index]).sum() + 1) / len(total)


def embedding_pick(option_sims: Sequence[float]) -> int:
    """The option an embedding model alone would choose: the most similar (first on ties)."""
    return int(np.argmax(np.asarray(option_sims)))


def average_pick(option_sims_by_model: Sequence[Sequence[float]]) -> int:
    """The option with the best mean rank over the models (first on ties)."""
    return int(np.argmin(_position_sum(option_sims_by_model)))
