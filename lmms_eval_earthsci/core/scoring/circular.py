"""Circular variants of multiple-choice tasks: position bias, measured (VLMEvalKit's CircularEval, MMBench).

A circular task asks each question once per rotation of its options. Rotation ``k`` moves the option at
index ``i`` to position ``(i + k) % n``; the letters A, B, ... stay in place, so the gold letter moves with
its option, and an option's image moves with it. Each rotation is its own doc to lmms-eval (batching,
ranks, resume and the judge work unchanged), carrying its source question (:data:`SOURCE`: the official
task's doc id), ``k`` (:data:`K`) and the number of rotations (:data:`N`). Rotation 0 is the official
doc, untouched: its prompt is the official prompt byte for byte. A question whose options cannot rotate
(an option naming another: "both A and B", "none of the above"; a gold outside the options) is asked
once (``N`` = 1) and counted as such, as VLMEvalKit does.

A benchmark declares a :class:`Rotation` (how to read a doc's options and gold, rotate a doc, read the
chosen letter from its official record) and builds the hooks with :func:`hooks`; the official hooks run
on the rotated doc. The metrics (each named; none replaces an official one):

- ``circular_acc``: a question is right only if every rotation is right.
- ``vanilla_acc``: rotation 0 alone: the official accuracy on the same responses.
- ``flip_rate``: questions (that rotate) whose chosen option, mapped back to the original letters,
  changes across rotations (no answer counts as a choice of its own).
- ``position_A`` ...: the share of answers at each *position* (over the rotations of questions that
  rotate, answers with a letter); ``position_p``: a Wald test of "every position equally chosen" with
  a cluster-robust covariance (clusters: the source questions; under full rotation a model without a
  position preference picks each position equally often whatever its content preference);
  ``position_rstd``: the standard deviation over positions of the recall of questions whose gold sits
  there (RStd, Zheng et al., "Large Language Models Are Not Robust Multiple Choice Selectors", ICLR
  2024), in points.
- ``circular_ece``: the calibration error over every rotation (benchmarks whose records carry the
  probabilities of the options, MAC).
- ``circular_no_answer``: the share of rotations (every doc of the task) with no option chosen; where it
  is 100 the position figures above measured nothing (:func:`unmeasured` says why), whatever they read.
- ``flip_rate_answered``: ``flip_rate`` over the answered rotations only (no answer left out), over the
  questions that rotate and were answered at two rotations or more.

Intervals (the report; :func:`kernels`): Wilson's over questions for ``circular_acc``, ``flip_rate``
and ``flip_rate_answered``, over rotation-0 docs for ``vanilla_acc``; a bootstrap over source questions
for the position shares and ``circular_no_answer``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_eval_earthsci.core.data import RecordError, is_image_column
from lmms_eval_earthsci.core.scoring.metrics import calibration, percent, with_paired_score

K, N, SOURCE = "circular_k", "circular_n", "circular_source"
LETTERS = "ABCDEFGH"
HEAD = "circular_acc"  # its per-rotation record also carries the official headline record (the browser's)
METRICS = (HEAD, "vanilla_acc", "flip_rate", "position_rstd", "position_p", "circular_no_answer", "flip_rate_answered")
ECE = "circular_ece"
#: the metrics that read better lower (the YAMLs' ``higher_is_better: false``)
LOWER_IS_BETTER = frozenset({"flip_rate", "position_rstd", "circular_no_answer", "flip_rate_answered", ECE})
AGG = "!function lmms_eval_earthsci.core.scoring.circular."


@dataclass(frozen=True)
class Rotation:
    """How a benchmark's multiple-choice docs rotate."""
    #: the question's options, in order; empty: not a multiple-choice question (left out of the task)
    options: Callable[[Mapping[str, Any]], Sequence[str]]
    #: index of the gold option
    gold: Callable[[Mapping[str, Any]], int]
    #: (doc, k, n) -> the doc asked at rotation k (a copy: option i at position (i + k) % n, gold moved)
    rotate: Callable[[Mapping[str, Any], int, int], dict]
    #: (the official headline record, the doc as asked) -> the letter chosen (None: no answer)
    chosen: Callable[[Mapping[str, Any], Mapping[str, Any]], str | None]
    #: the official headline metric (its record is read for ``correct`` and the chosen letter)
    headline: str
    #: the option probabilities in the headline record, by (rotated) letter; None: not reported
    probabilities: Callable[[Mapping[str, Any]], Mapping[str, float] | None] | None = None


# an option that names another: "all of the above", "none of these", "both A and B", "A or C"
_NAMES_ALL = re.compile(r"\b(?:all|none|both|neither|either)\s+of\s+(?:the\s+)?(?:above|below|these|those|them|options|choices|answers)\b", re.I)
_NAMES_LETTERS = re.compile(r"(?<![A-Za-z])(?:[Oo]ptions?\s+)?\(?([A-H])\)?\s*(?:,|and|&|or)\s*\(?([A-H])\)?(?![A-Za-z])")


def fixed_reason(options: Sequence[str], gold: int) -> str | None:
    """Why a question is asked once instead of rotated; None when it rotates."""
    if len(options) < 2:
        return "fewer than two options"
    if not 0 <= gold < len(options):
        return "the gold is not one of the options"
    letters = LETTERS[: len(options)]
    for i, text in enumerate(options):
        if _NAMES_ALL.search(text):
            return f"option {LETTERS[i]} names the others"
        for m in _NAMES_LETTERS.finditer(text):
            if m.group(1) in letters and m.group(2) in letters:
                return f"option {LETTERS[i]} names options {m.group(1)} and {m.group(2)}"
    return None


def shifted(seq: Sequence[Any], k: int) -> list[Any]:
    """``seq`` rotated by ``k``: position p holds the element at (p - k) % n."""
    n = len(seq)
    return [seq[(p - k) % n] for p in range(n)] if n else []


def rotated(doc: Mapping[str, Any], rotation: Rotation) -> Mapping[str, Any]:
    """The doc as asked: rotation 0 (and any doc outside a circular task) is the doc itself."""
    k = int(doc.get(K) or 0)
    if not k:
        return doc
    return rotation.rotate(doc, k, int(doc[N]))


# --------------------------------------------------------------------------- process_docs


def _text_view(dataset: Any) -> Any:
    """The dataset without its image columns (zero-copy), for reading the options."""
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s): the tasks' import stays cheap

    features = getattr(dataset, "features", None) or {}
    images = [c for c, f in features.items() if is_image_column(f, datasets)]
    return dataset.remove_columns(images) if images else dataset


def rotations_of(doc: Mapping[str, Any], rotation: Rotation) -> int:
    """How many times the question is asked: 0 (not multiple choice), 1 (cannot rotate) or its n."""
    try:
        options = list(rotation.options(doc))
        if not options:
            return 0
        return 1 if fixed_reason(options, rotation.gold(doc)) else len(options)
    except RecordError:
        return 1  # asked once: the record check names what is wrong with it (or skips it)


def expand(dataset: Any, rotation: Rotation) -> Any:
    """Every multiple-choice question once per rotation, its rotations consecutive (so ``--limit``
    takes whole questions), as in-memory columns and an in-memory index over the same Arrow data:
    nothing is decoded, copied or written."""
    counts = [rotations_of(row, rotation) for row in (_text_view(dataset) if hasattr(dataset, "remove_columns") else dataset)]
    m = len(counts)
    if not hasattr(dataset, "add_column"):  # a list of docs (tests, other loaders)
        return [{**doc, K: k, N: n, SOURCE: j} for j, (doc, n) in enumerate(zip(dataset, counts)) for k in range(n)]
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s): the tasks' import stays cheap

    most = max(counts, default=0)
    if not most:
        return dataset.select([])
    blocks = [dataset.add_column(K, [k] * m).add_column(N, counts).add_column(SOURCE, list(range(m))) for k in range(most)]
    order = [k * m + j for j, n in enumerate(counts) for k in range(n)]
    return datasets.concatenate_datasets(blocks).select(order, keep_in_memory=True)


# --------------------------------------------------------------------------- the hooks


@dataclass(frozen=True)
class Hooks:
    process_docs: Callable[[Any], Any]
    doc_to_messages: Callable[..., Any]
    doc_to_visual: Callable[..., Any]
    doc_to_text: Callable[..., Any]
    doc_to_target: Callable[..., Any]
    process_results: Callable[..., Any]


def _on_rotated(fn: Callable[..., Any], rotation: Rotation) -> Callable[..., Any]:
    @functools.wraps(fn)  # lmms-eval reads the official signature (whether it takes the task kwargs)
    def hook(doc: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
        return fn(rotated(doc, rotation), *args, **kwargs)

    return hook


def record(doc: Mapping[str, Any], asked: Mapping[str, Any], official: Mapping[str, Any], rotation: Rotation) -> dict:
    """The per-rotation record every circular metric aggregates: the source question, k, n, whether
    it was right, the chosen position and the chosen option mapped back to the original letters."""
    k, n = int(doc.get(K) or 0), int(doc.get(N) or 1)
    head = official.get(rotation.headline)
    head = head if isinstance(head, Mapping) else {}
    score = head.get("score")
    correct = bool(head.get("correct")) if score is None else score == 100
    try:
        n_options = len(rotation.options(doc))
        gold = rotation.gold(doc)
    except RecordError:
        n_options, gold = 0, -1
    letter = rotation.chosen(head, asked)
    position = letter.upper() if isinstance(letter, str) and letter.upper() in LETTERS[:n_options] else None
    option = LETTERS[(LETTERS.index(position) - k) % n_options] if position else None
    out = {
        "source": doc.get(SOURCE), "k": k, "n": n, "options": n_options, "correct": correct,
        "position": position, "option": option,
        "gold": LETTERS[gold] if 0 <= gold < len(LETTERS) else None,
        "gold_position": LETTERS[(gold + k) % n_options] if n_options and 0 <= gold < n_options else None,
    }
    if rotation.probabilities is not None:
        probs = rotation.probabilities(head)
        if probs and n_options:
            out["probs"] = {LETTERS[i]: probs.get(LETTERS[(i + k) % n_options]) for i in range(n_options)}  # original letters
            out["confidence"] = probs.get(position) if position else max((v for v in probs.values() if v is not None), default=None)
    return out


def _process_results(official: Callable[..., Any], rotation: Rotation, positions: str, ece: bool) -> Callable[..., Any]:
    def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict:
        asked = rotated(doc, rotation)
        out = official(asked, results)
        rec = record(doc, asked, out, rotation)
        head = out.get(rotation.headline)
        full = {**rec, "official": head} if isinstance(head, Mapping) else rec
        metrics: dict[str, Any] = {HEAD: full}
        for name in (*METRICS[1:], *(f"position_{x}" for x in positions), *((ECE,) if ece else ())):
            metrics[name] = rec
        return with_paired_score(metrics, percent(rec["correct"]))

    check = getattr(official, "record_check", None)
    if check is not None:
        def check_rotated(doc: Mapping[str, Any], kwargs: Any = None) -> Any:
            return check(rotated(doc, rotation), kwargs)

        for attr in ("prepare", "describe"):
            if hasattr(check, attr):
                setattr(check_rotated, attr, getattr(check, attr))
        process_results.record_check = check_rotated  # type: ignore[attr-defined]
    prepare = getattr(official, "batch_prepare", None)
    if prepare is not None:
        process_results.batch_prepare = lambda pairs: prepare([(rotated(d, rotation), r) for d, r in pairs])  # type: ignore[attr-defined]
    return process_results


Hook = Callable[..., Any]


def expanding(rotation: Rotation, process_docs: Hook | None = None) -> Hook:
    """The circular task's ``process_docs``: the official one (if any), then :func:`expand`."""
    def docs(dataset: Any) -> Any:
        return expand(process_docs(dataset) if process_docs else dataset, rotation)

    return docs


def hooks(rotation: Rotation, *, doc_to_messages: Hook, doc_to_visual: Hook, doc_to_text: Hook, doc_to_target: Hook, process_results: Hook,
          process_docs: Hook | None = None, positions: str = "ABCD", ece: bool = False) -> Hooks:
    """The circular task's hooks from the official ones (``process_docs``: the official one, run first)."""
    return Hooks(
        process_docs=expanding(rotation, process_docs),
        doc_to_messages=_on_rotated(doc_to_messages, rotation),
        doc_to_visual=_on_rotated(doc_to_visual, rotation),
        doc_to_text=_on_rotated(doc_to_text, rotation),
        doc_to_target=_on_rotated(doc_to_target, rotation),
        process_results=_process_results(process_results, rotation, positions, ece),
    )


# --------------------------------------------------------------------------- aggregations


RECORD_KEYS = frozenset({"source", "k", "n", "gold_position"})


def is_record(item: Any) -> bool:
    """A per-rotation record of :func:`record` (other records may have a ``source`` of their own)."""
    return isinstance(item, Mapping) and RECORD_KEYS <= item.keys()


def _records(items: Iterable[Any]) -> list[Mapping[str, Any]]:
    return [i for i in items if is_record(i)]


def by_question(items: Iterable[Any]) -> dict[Any, list[Mapping[str, Any]]]:
    out: dict[Any, list[Mapping[str, Any]]] = {}
    for r in _records(items):
        out.setdefault(r["source"], []).append(r)
    return out


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def question_right(recs: Sequence[Mapping[str, Any]]) -> bool:
    return all(r["correct"] for r in recs)


def question_flipped(recs: Sequence[Mapping[str, Any]]) -> bool:
    return len({r.get("option") for r in recs}) > 1


def answered(rec: Mapping[str, Any]) -> bool:
    """The rotation chose one of the question's options (a letter within them)."""
    return bool(rec.get("position"))


def question_flipped_answered(recs: Sequence[Mapping[str, Any]]) -> bool:
    """The chosen option, mapped back, changes across the rotations that were answered."""
    return len({r.get("option") for r in recs if answered(r)}) > 1


def circular_acc(items: Iterable[Any]) -> float | None:
    """Percent of questions right at every rotation (a question asked once: right at it)."""
    return _mean([percent(question_right(recs)) for recs in by_question(items).values()])


def vanilla_acc(items: Iterable[Any]) -> float | None:
    """Percent right at rotation 0: the official accuracy on the same responses."""
    return _mean([percent(r["correct"]) for r in _records(items) if r["k"] == 0])


def _rotating(items: Iterable[Any]) -> dict[Any, list[Mapping[str, Any]]]:
    """The questions that rotate (not those asked once), by source."""
    return {s: recs for s, recs in by_question(items).items() if recs[0]["n"] > 1}


def flip_rate(items: Iterable[Any]) -> float | None:
    """Percent of the questions that rotate whose chosen option (mapped back) changes across rotations."""
    return _mean([percent(question_flipped(recs)) for recs in _rotating(items).values()])


def _answered_twice(items: Iterable[Any]) -> dict[Any, list[Mapping[str, Any]]]:
    """The questions that rotate and were answered at two rotations or more, by source."""
    return {s: recs for s, recs in _rotating(items).items() if sum(answered(r) for r in recs) >= 2}


def flip_rate_answered(items: Iterable[Any]) -> float | None:
    """``flip_rate`` over the answered rotations: percent of the questions that rotate and were answered
    at two rotations or more whose chosen option (mapped back) changes across those rotations; None when
    no such question."""
    return _mean([percent(question_flipped_answered(recs)) for recs in _answered_twice(items).values()])


def circular_no_answer(items: Iterable[Any]) -> float | None:
    """Percent of the rotations (every doc of the task) with no option chosen."""
    return _mean([percent(not answered(r)) for r in _records(items)])


def unmeasured(items: Iterable[Any]) -> str | None:
    """Why the position figures (flip rates, RStd, the position test and shares) measure nothing here:
    ``"no question rotates"``, ``"no answer"`` (no rotation of a question that rotates chose an
    option: ``flip_rate`` then reads 0, RStd 0); None when they measure something."""
    questions = _rotating(items)
    if not questions:
        return "no question rotates"
    if not any(answered(r) for recs in questions.values() for r in recs):
        return "no answer"
    return None


def position_counts(items: Iterable[Any]) -> tuple[list[list[float]], list[list[float]], int]:
    """Per rotating question: (answers at each position, the count expected with no position
    preference: its answers spread evenly over its n positions), and the number of positions."""
    questions = _rotating(items)
    width = max((recs[0]["options"] for recs in questions.values()), default=0)
    observed, expected = [], []
    for recs in questions.values():
        counts = [0.0] * width
        answered = 0
        for r in recs:
            if r.get("position"):
                counts[LETTERS.index(r["position"])] += 1
                answered += 1
        n = recs[0]["options"]
        observed.append(counts)
        expected.append([answered / n if p < n else 0.0 for p in range(width)])
    return observed, expected, width


def position_share(items: Iterable[Any], letter: str) -> float | None:
    """Percent of the answers (rotations of rotating questions, with a letter) at position ``letter``."""
    observed, _, width = position_counts(items)
    total = sum(sum(c) for c in observed)
    if not total or LETTERS.index(letter) >= width:
        return None
    return 100.0 * sum(c[LETTERS.index(letter)] for c in observed) / total


def _position(letter: str) -> Callable[[Iterable[Any]], float | None]:
    def share(items: Iterable[Any]) -> float | None:
        return position_share(items, letter)

    share.__name__ = share.__qualname__ = f"position_{letter}"
    share.__doc__ = f"Percent of the answers at position {letter} (rotating questions)."
    return share


# the positions the task YAMLs report (our tasks have at most five options; more are counted, not shown)
POSITIONS = "ABCDE"
position_A, position_B, position_C, position_D, position_E = (_position(x) for x in POSITIONS)


def position_test(items: Iterable[Any]) -> tuple[float, int, float] | None:
    """(Wald statistic, degrees of freedom, p) for "every position equally chosen": the mean over
    questions of (observed - expected) position counts, with the cluster-robust covariance of the
    per-question differences (clusters = questions). None with fewer than two rotating questions."""
    import numpy as np  # noqa: PLC0415 - numpy, only when aggregating
    from scipy import stats  # noqa: PLC0415 - heavy (scipy.stats, ~0.5 s): the aggregation alone needs it

    observed, expected, width = position_counts(items)
    q = len(observed)
    if q < 2 or not width or not any(sum(c) for c in observed):
        return None
    d = np.asarray(observed) - np.asarray(expected)
    mean = d.mean(axis=0)
    if np.allclose(mean, 0.0):
        return 0.0, 0, 1.0
    centred = d - mean
    cov = centred.T @ centred / (q * (q - 1))
    vals, vecs = np.linalg.eigh(cov)
    keep = vals > 1e-12 * max(1.0, float(vals.max(initial=0.0)))
    proj = vecs.T @ mean
    if np.any(np.abs(proj[~keep]) > 1e-9):  # a difference with no variance across questions: certain
        return math.inf, int(keep.sum()) or 1, 0.0
    dof = int(keep.sum())
    stat = float(np.sum(proj[keep] ** 2 / vals[keep]))
    return stat, dof, float(stats.chi2.sf(stat, dof))


def position_p(items: Iterable[Any]) -> float | None:
    """p of the test of "every position equally chosen" (:func:`position_test`); small: a position bias."""
    t = position_test(items)
    return None if t is None else t[2]


def position_rstd(items: Iterable[Any]) -> float | None:
    """RStd (Zheng et al. 2024), in points: the standard deviation over positions of the accuracy on
    the rotations whose gold sits at that position (rotating questions)."""
    by_gold: dict[str, list[float]] = {}
    for recs in _rotating(items).values():
        for r in recs:
            if r.get("gold_position"):
                by_gold.setdefault(r["gold_position"], []).append(percent(r["correct"]))
    recalls = [sum(v) / len(v) for v in by_gold.values() if v]
    if len(recalls) < 2:
        return None
    mu = sum(recalls) / len(recalls)
    return math.sqrt(sum((x - mu) ** 2 for x in recalls) / len(recalls))


def circular_ece(items: Iterable[Any]) -> float | None:
    """Expected calibration error (10 bins, percent) over every rotation's confidence in its answer."""
    pairs = [(float(r["confidence"]), bool(r["correct"])) for r in _records(items) if r.get("confidence") is not None]
    if not pairs:
        return None
    return 100.0 * calibration([c for c, _ in pairs], [y for _, y in pairs])["ece"]


# --------------------------------------------------------------------------- intervals (report)


Questions = Callable[[Iterable[Any]], Mapping[Any, Sequence[Mapping[str, Any]]]]


def _per_question(flag: Callable[[Sequence[Mapping[str, Any]]], bool], questions: Questions = by_question) -> Callable[[Sequence[Any]], Any]:
    def encode(items: Sequence[Any]) -> Any:
        import numpy as np  # noqa: PLC0415 - numpy, only for intervals

        groups = list(questions(items).values())
        if not groups:
            return None
        v = np.array([percent(flag(recs)) for recs in groups], dtype=float)
        return v, np.ones_like(v)

    return encode


def _vanilla_encode(items: Sequence[Any]) -> Any:
    import numpy as np  # noqa: PLC0415 - numpy, only for intervals

    v = np.array([percent(r["correct"]) for r in _records(items) if r["k"] == 0], dtype=float)
    return (v, np.ones_like(v)) if v.size else None


def _share_encode(letter: str) -> Callable[[Sequence[Any]], Any]:
    def encode(items: Sequence[Any]) -> Any:
        import numpy as np  # noqa: PLC0415 - numpy, only for intervals

        observed, _, width = position_counts(items)
        if not observed or LETTERS.index(letter) >= width:
            return None
        at = np.array([c[LETTERS.index(letter)] for c in observed], dtype=float)
        total = np.array([sum(c) for c in observed], dtype=float)
        return 100.0 * at, total

    return encode


def _no_answer_encode(items: Sequence[Any]) -> Any:
    """Per question: 100 x its rotations with no answer, and its rotations (a share of rotations,
    resampled by question)."""
    import numpy as np  # noqa: PLC0415 - numpy, only for intervals

    groups = list(by_question(items).values())
    if not groups:
        return None
    return np.array([100.0 * sum(not answered(r) for r in recs) for recs in groups]), np.array([float(len(recs)) for recs in groups])


def ratio(v: Any, m: Any, axis: int = -1) -> Any:
    """sum(v) / sum(m) over the clusters (a share whose units are questions, not right/wrong docs)."""
    import numpy as np  # noqa: PLC0415 - numpy, only for intervals

    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(v, axis=axis) / np.sum(m, axis=axis)


def kernels() -> dict[str, tuple[Callable, Callable]]:
    """Vectorised interval kernels (``core.scoring.stats``): right/wrong per question (Wilson's), the position
    shares and the no-answer share resampled by question."""
    from lmms_eval_earthsci.core.scoring.stats import mean_stat  # noqa: PLC0415 - numpy; stats imports nothing of ours back

    out: dict[str, tuple[Callable, Callable]] = {
        "lmms_eval_earthsci.core.scoring.circular.circular_acc": (_per_question(question_right), mean_stat),
        "lmms_eval_earthsci.core.scoring.circular.flip_rate": (_per_question(question_flipped, _rotating), mean_stat),
        "lmms_eval_earthsci.core.scoring.circular.flip_rate_answered": (_per_question(question_flipped_answered, _answered_twice), mean_stat),
        "lmms_eval_earthsci.core.scoring.circular.vanilla_acc": (_vanilla_encode, mean_stat),
        "lmms_eval_earthsci.core.scoring.circular.circular_no_answer": (_no_answer_encode, ratio),
    }
    for x in POSITIONS:
        out[f"lmms_eval_earthsci.core.scoring.circular.position_{x}"] = (_share_encode(x), ratio)
    return out


# --------------------------------------------------------------------------- YAML


def task_yaml(*, official: str, task: str, alias: str, module: str, process_docs: str = "process_docs", positions: str = "ABCD", ece: bool = False, header: str = "") -> str:
    """A circular variant's YAML: the official task's file included, the hooks and metrics replaced."""
    lines = [f"include: {official}.yaml", f"task: {task}", f'task_alias: "{alias}"', f"process_docs: !function {module}.{process_docs}"]
    lines += [f"{h}: !function {module}.{h}" for h in ("doc_to_messages", "doc_to_visual", "doc_to_text", "doc_to_target", "process_results")]
    lines.append("metric_list:")
    for name in (*METRICS, *(f"position_{x}" for x in positions), *((ECE,) if ece else ())):
        lower_better = name in LOWER_IS_BETTER
        lines += [f"  - metric: {name}", f"    aggregation: {AGG}{name}", f"    higher_is_better: {'false' if lower_better else 'true'}"]
    return header + "\n".join(lines) + "\n"
