"""EMMA and EMMA-mini: "Can MLLMs Reason in Multimodality? EMMA: An Enhanced MultiModal ReAsoning
Benchmark" (Hao, Gu, Wang, Li, Yang, Wang, Cheng; ICML 2025; https://arxiv.org/abs/2501.05444).

What is specific to EMMA lives here: the authors' prompt templates (exact strings), the record
mapping, and the official rule-based scorer (``fast_extract_answer`` + ``is_equal`` of the current
official code, spec §4.2-4.3). Messages, extraction primitives and metrics come from
:mod:`lmms_eval_earthsci.core`.
"""

from __future__ import annotations

import functools
import logging
import random
import re
from types import MappingProxyType
from typing import Any

from word2number import w2n

from lmms_eval_earthsci.core.data import RecordError, check_image, load_image, record_check, require
from lmms_eval_earthsci.core.data.releases import RescoreError, read_records, release_name, release_plan_dict
from lmms_eval_earthsci.core.judge import reward
from lmms_eval_earthsci.core.judge.task_pass import UNAVAILABLE, JudgeSpec, judged, judged_fields, outcome_for, slice_value
from lmms_eval_earthsci.core.prompts import messages as msg
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.scoring import scaling
from lmms_eval_earthsci.core.scoring.extraction import Extracted, as_text, extract_after_phrase, extract_boxed_answer, extract_option_letter, option_letters
from lmms_eval_earthsci.core.scoring.metrics import breakdown_scores, percent, split_labels, with_paired_score
from lmms_eval_earthsci.core.scoring.similarity import get_matcher
from lmms_eval_earthsci.evals.emma.benchmark import (  # noqa: F401 - the names it had: still tasks.X
    BENCHMARK,
    BREAKDOWN_PREFIX,
    CATEGORIES,
    CODING_TASKS,
    CURVES,
    JUDGE_FAILED,
    JUDGE_METRIC,
    LENIENT,
    MAJ,
    MAJ_NORMALIZED,
    METRIC,
    PASS,
    QUESTION_TYPES,
    REVISION_FULL,
    REVISION_MINI,
    SUBJECTS,
    breakdowns,
)
from lmms_eval_earthsci.evals.emma.scaling import RM_DEFAULTS, SCORING_PROMPT, extract_answer_dev

logger = logging.getLogger("lmms_eval_earthsci")

MAX_IMAGES = 5

# ---------------------------------------------------------------------------- prompts (spec §3.1)
MULTI_CHOICE_FORMAT = '{context}\n{question}\n{options}\nAnswer with the option\'s letter from the given choices and put the letter in one "\\boxed{{}}". '
OPEN_ENDED_FORMAT = '{context}\n{question}\nAnswer the question using a single word or phrase and put the answer in one "\\boxed{{}}". '
STRATEGY_SUFFIX = MappingProxyType({
    "CoT": "Please solve the problem step by step.",
    "Direct": "Please ensure that your output only contains the final answer without any additional content (such as intermediate reasoning steps).",
})

# majority-vote ties are broken at random, seeded per question: the same run scores the same
TIE_SEED = 1234


# ---------------------------------------------------------------------------- record mapping


def _pid(doc) -> str:
    return str(doc.get("pid", "<no pid>"))


def _dataset(doc) -> str:
    return f"EMMA/{doc.get('subject', '?')}"


def is_multiple_choice(doc) -> bool:
    # both spellings occur: "Multiple Choice" and "Multiple choice" (all chemistry MC)
    return str(require(doc, "type", dataset=_dataset(doc), record_id=_pid(doc), types=str)).strip().lower() == "multiple choice"


def options_of(doc) -> list[str]:
    opts = doc.get("options")
    return [] if opts is None else [str(o) for o in opts]


def gold_index(doc) -> int:
    """The gold letter's option index (A: 0); out of range when the letter names no option."""
    return ord(str(doc.get("answer") or "").strip().upper()[:1] or "?") - ord("A")


def gold_content(doc) -> str:
    """The official ``gt_content``: the gold option's text (MC) or the answer (open-ended)."""
    answer = str(require(doc, "answer", dataset=_dataset(doc), record_id=_pid(doc), types=str))
    if not is_multiple_choice(doc):
        return answer
    raw = require(doc, "options", dataset=_dataset(doc), record_id=_pid(doc), types=(list, tuple))
    if not raw:
        raise RecordError(_dataset(doc), _pid(doc), "options", "empty list for a multiple-choice question")
    opts = options_of(doc)
    idx = gold_index(doc)
    if not 0 <= idx < len(opts):
        raise RecordError(_dataset(doc), _pid(doc), "answer", f"letter {answer!r} does not name one of {len(opts)} options")
    return opts[idx]


def build_query(doc, strategy: str = "CoT") -> str:
    """The official prompt, character for character (spec §3.1)."""
    if strategy not in STRATEGY_SUFFIX:
        raise ValueError(f"EMMA strategy must be one of {sorted(STRATEGY_SUFFIX)}, got {strategy!r}")
    question = str(require(doc, "question", dataset=_dataset(doc), record_id=_pid(doc), types=str))
    context = doc.get("context") or ""  # None must not print as "None"
    if is_multiple_choice(doc):
        options = "".join(f"{chr(ord('A') + i)}: {o}\n" for i, o in enumerate(options_of(doc)))
        query = MULTI_CHOICE_FORMAT.format(context=context, question=question, options=options)
    else:
        query = OPEN_ENDED_FORMAT.format(context=context, question=question)
    return query + STRATEGY_SUFFIX[strategy]


def _strategy(kwargs) -> str:
    return (kwargs or {}).get("strategy", "CoT")


def _image_field(doc, k: int) -> str:
    field = f"image_{k}"
    if not 1 <= k <= MAX_IMAGES:
        raise RecordError(_dataset(doc), _pid(doc), field, f"placeholder <image_{k}> is out of range (1..{MAX_IMAGES})")
    return field


def _resolver(doc):
    def resolve(k: int):
        field = _image_field(doc, k)
        return load_image(doc.get(field), dataset=_dataset(doc), record_id=_pid(doc), field=field)

    return resolve


def check_record(doc, kwargs=None) -> None:
    """Everything prompting and scoring will read: the query (question, type, options), the gold
    answer against the options, and the header of every referenced image (:func:`core.adapter.task_data.validate_task`
    runs this on each record before inference)."""
    query = build_query(doc, _strategy(kwargs))
    gold_content(doc)
    for k in msg.referenced_images(query):
        field = _image_field(doc, k)
        check_image(doc.get(field), dataset=_dataset(doc), record_id=_pid(doc), field=field)


# ---------------------------------------------------------------------------- lmms-eval hooks


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    """Chat backends: the official interleaving (text and images in ``<image_k>`` order, repeats kept,
    only referenced images)."""
    msg.note_chat(doc)
    return msg.chat_messages(build_query(doc, _strategy(lmms_eval_specific_kwargs)), _resolver(doc))


def doc_to_visual(doc):
    """Simple backends: each referenced image once, by image number."""
    return msg.simple_visuals(build_query(doc), _resolver(doc))


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """Simple backends: the official query with its literal ``<image_k>`` markers (they say which
    image is which option)."""
    return msg.simple_text(build_query(doc, _strategy(lmms_eval_specific_kwargs)))


def doc_to_target(doc, model_specific_target_kwargs=None):
    return str(doc.get("answer", ""))


# ---------------------------------------------------------------------------- official scorer


def fast_extract_answer(response: Any) -> Extracted:
    """The official rule-based extraction (current official code, spec §4.2)."""
    r = as_text(response).strip()
    upper = r.upper() if len(r) == 1 else None
    for ch in "ABCDEFGH":
        if upper == ch or r.startswith(ch + ":") or r.startswith(ch + "."):
            return Extracted(ch, "letter")
    if _is_float(r):
        return Extracted(r, "number")
    if "boxed{" in r:
        boxed = extract_boxed_answer(r)
        if boxed.rule != "none":
            return boxed
    phrase = extract_after_phrase(r, ["final answer is", "correct answer is", "answer should be", "answer is", "answer:"])
    if phrase.rule != "none":
        return phrase
    return Extracted("", "none")


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except (ValueError, OverflowError):
        return False


_PLAIN_NUMBER_RE = re.compile(r"^-?\d+(?:\.\d+)?$")
# latex2sympy on long free text is slow and never yields a number equal to a short gold answer
_LATEX_MAX_CHARS = 200


# Plain words (letters, spaces, sentence punctuation; no digit, backslash or operator) parse to a
# product of symbols, which has no numeric value, unless every letter is a constant: "e" (Euler's
# number) or "i" ("i i" = -1). Those strings skip the parser; a test checks this against latex2sympy.
_WORDS_ONLY_RE = re.compile(r"^[A-Za-z\s.,;?!'\"]*$")
_NON_CONSTANT_LETTER_RE = re.compile(r"[A-DF-HJ-Za-df-hj-z]")


def _certainly_not_numeric(s: str) -> bool:
    return bool(_WORDS_ONLY_RE.match(s)) and bool(_NON_CONSTANT_LETTER_RE.search(s))


def _decided_without_parser(s: str) -> bool:
    return bool(_PLAIN_NUMBER_RE.match(s)) or len(s) > _LATEX_MAX_CHARS or _certainly_not_numeric(s)


@functools.lru_cache(maxsize=65536)
def _latex_value(s: str) -> float | None:
    if _PLAIN_NUMBER_RE.match(s):
        return float(s)
    if len(s) > _LATEX_MAX_CHARS or _certainly_not_numeric(s):
        return None
    try:
        from latex2sympy2 import latex2sympy  # noqa: PLC0415 - heavy (latex2sympy2, ~0.2 s), only for a LaTeX answer

        return float(latex2sympy(s).evalf())
    except Exception:
        return None


@functools.lru_cache(maxsize=65536)
def _word_number(s: str) -> str | None:
    try:
        return str(w2n.word_to_num(s))
    except Exception:
        return None


def is_equal(pred: str, gold: str, words: bool = True) -> bool:
    """The official equivalence test (spec §4.3): lower-cased string equality, word-to-number on the
    prediction, then numeric equality after rounding both to 2 decimals. ``words=False``: the development
    repository's test, without word-to-number (the test-time-scaling files were scored with it)."""
    pred, gold = pred.lower(), gold.lower()
    if pred.strip() == gold.strip():
        return True
    if not pred:
        return False
    if words and _word_number(pred) == gold.strip():
        return True
    # Numeric equality needs both values. The official code parses the prediction first; when the
    # gold's value is known without the parser (a plain number, or plain words such as an option
    # letter or text: no value), look at it first and skip the costly parse of the prediction when
    # the gold has no value. Same verdicts, a fraction of the LaTeX parsing.
    if _decided_without_parser(gold):
        b = _latex_value(gold)
        if b is None:
            return False
        a = _latex_value(pred)
    else:
        a = _latex_value(pred)
        if a is None:
            return False
        b = _latex_value(gold)
    try:
        return a is not None and b is not None and round(a, 2) == round(b, 2)
    except (OverflowError, ValueError):  # inf / nan
        return False


def score_response(doc, response: Any) -> dict:
    """Per-doc official verdict with everything the aggregations and the logged sample need."""
    extraction = fast_extract_answer(response)
    answer = str(doc.get("answer", ""))
    gt = gold_content(doc)
    pred = extraction.value or ""
    correct = bool(pred) and (is_equal(pred, answer) or is_equal(pred, gt))
    return {"pid": _pid(doc), "extraction": pred, "rule": extraction.rule, "gt_content": gt, "correct": correct}


def _breakdowns(doc, score) -> dict:
    """``{breakdown key: score or None}`` for the doc's category/type (and coding task) labels."""
    subject = str(doc.get("subject", ""))
    labels = {
        "category": split_labels(doc.get("category"), ";" if subject == "Coding" else None),
        "type": split_labels(str(doc.get("type", "")).strip().lower()),
    }
    if subject == "Coding":
        labels["task"] = split_labels(doc.get("task"))
    known = breakdowns(subject) if subject in CATEGORIES else {}
    out, unknown = breakdown_scores(BREAKDOWN_PREFIX, score, labels, known)
    for label in unknown:
        if current().first_time(f"emma label:{label}"):
            logger.warning("EMMA %s: label %s is not a declared breakdown; it counts in the overall metric only", subject, label)
    return out


def process_results(doc, results):
    """``emma_acc`` (official rules, on the first candidate under ``--repeats``) plus its breakdowns; an
    empty, huge or malformed response is scored wrong and counted."""
    response = scaling.samples_of(results)[0]
    verdict = score_response(doc, response)
    score = percent(verdict["correct"])
    out = _breakdowns(doc, score)
    out[METRIC] = {"score": score, **verdict, "route": msg.route_of(doc)}
    return with_paired_score(out, score)


# ---------------------------------------------------------------------------- lenient (ours, named)

# a free-text answer is matched to an option's text only when it is clearly closest to one option
LENIENT_MIN_SIMILARITY = 0.75
LENIENT_MIN_MARGIN = 0.05


def lenient_verdict(doc, response: Any, official: dict) -> dict:
    """``emma_acc_lenient``: the official verdict, plus what a reader would accept on multiple-choice
    questions: an option letter in markup or words (``(B)``, ``**B**``, ``\\textbf{B}``, "Option B",
    "the answer is B"), else the option whose text the free-text answer matches (all-MiniLM-L6-v2,
    similarity >= 0.75 and a margin >= 0.05 over the runner-up). Never lower than ``emma_acc``."""
    if official["correct"] or not is_multiple_choice(doc):
        return {"correct": official["correct"], "rule": "official"}
    opts = options_of(doc)
    letters = option_letters(len(opts)) if opts else "ABCD"
    answer = str(doc.get("answer", "")).strip().upper()
    text = as_text(response)
    for source in (official["extraction"], text):
        got = extract_option_letter(source, letters)
        if got.found:
            return {"correct": got.value == answer, "rule": got.rule, "letter": got.value}
    free = official["extraction"].strip()
    if free and opts and len(free) <= 500:
        m = get_matcher().best_match(free, opts)
        if m is not None and m.score >= LENIENT_MIN_SIMILARITY and m.margin >= LENIENT_MIN_MARGIN:
            letter = letters[m.index]
            return {"correct": letter == answer, "rule": "similarity", "letter": letter, "similarity": round(m.score, 4)}
    return {"correct": False, "rule": "none"}


# ---------------------------------------------------------------------------- test-time scaling (spec: emma_test_time_scaling.md)


def judge_answer(doc, extraction: str) -> bool:
    """The development repository's verdict on an extracted answer (against ``answer`` or the gold
    option's text; no word-to-number): how the authors' test-time-scaling files were scored."""
    return is_equal(extraction, str(doc.get("answer", "")), words=False) or is_equal(extraction, gold_content(doc), words=False)


def candidate_correct(doc, response: Any) -> bool:
    ext = extract_answer_dev(response)
    return ext is not None and judge_answer(doc, ext)


def scaling_items(doc, responses: list) -> dict:
    """The curves (``emma_maj@N``, ``emma_pass@N``, ``emma_pass_unbiased@N``), and at N = T (every candidate
    of the run, in the subset's order) ``emma_maj@k`` / ``emma_pass@k`` with the same rules, and
    ``emma_maj_normalized@k`` (ours, the rule ``emma_maj@k`` had before version 1.1: answers compared
    lower-cased with whitespace collapsed, empty answers ignored)."""
    out = scaling.curve_items(responses, extract_answer_dev, lambda ext: judge_answer(doc, ext), CURVES)
    candidates = out.pop("candidates")
    total = len(responses)
    nums = scaling.subset(total, total).nums
    vote = scaling.majority_vote([candidates[i]["extraction"] for i in nums])
    out[MAJ] = {"score": percent(vote.pick is not None and judge_answer(doc, vote.pick)), "k": total, "majority": vote.pick, "candidates": candidates}
    out[PASS] = {"score": percent(any(c["correct"] for c in candidates)), "k": total}
    out[MAJ_NORMALIZED] = {"score": percent(normalized_vote(doc, responses)), "k": total}
    return out


def _vote_key(pred: str) -> str:
    return " ".join(pred.strip().lower().split())


def normalized_vote(doc, responses: list) -> bool:
    """``emma_maj_normalized@k``: a vote over the non-empty official (current) extractions compared
    lower-cased with whitespace collapsed; ties broken at random with a seed fixed per question."""
    votes: dict[str, bool] = {}
    counts: dict[str, int] = {}
    for r in responses:
        v = score_response(doc, r)
        if v["extraction"].strip():
            key = _vote_key(v["extraction"])
            counts[key] = counts.get(key, 0) + 1
            votes.setdefault(key, v["correct"])
    if not counts:
        return False
    top = max(counts.values())
    tied = sorted(k for k, c in counts.items() if c == top)
    pick = tied[0] if len(tied) == 1 else random.Random(f"{TIE_SEED}:{_pid(doc)}").choice(tied)
    return votes[pick]


@record_check(check_record)
def process_results_full(doc, results):
    """All rule-based EMMA metrics: ``emma_acc`` and breakdowns, ``emma_acc_lenient``, and the test-time
    scaling curves over the ``--repeats`` candidates."""
    out = process_results(doc, results)
    official = out[METRIC]
    responses = scaling.samples_of(results)
    lenient = lenient_verdict(doc, responses[0], official)
    out[LENIENT] = {"score": percent(lenient["correct"]), **lenient}
    out.update(scaling_items(doc, responses))
    return out


def reward_question(doc, responses: list) -> reward.Question:
    """What the reward model is shown: the CoT query, the candidates, the authors' scoring instructions."""
    return reward.Question(build_query(doc, "CoT"), [as_text(r) for r in responses], SCORING_PROMPT)


def _rm_messages(doc, prompt: str, images) -> list:
    """The reward model's request: one user turn, the prompt's ``<image_k>`` replaced by the question's
    images in place, as the generation sent them; no system turn."""
    media = images()

    def resolve(k: int):
        field = _image_field(doc, k)
        if media.get(field) is None:
            raise RecordError(_dataset(doc), _pid(doc), field, "the reward model's prompt names this image; the doc has none")
        return media[field]

    # the authors split at <image_k> only: a candidate's "<image>" stays text
    return [{"role": "user", "content": msg.content_parts(prompt, resolve, numbered_only=True)}]


REWARD_MODEL = JudgeSpec(
    name="emma_rm",
    build=_rm_messages,
    parse=reward.parse_reply,
    uses_images=True,
    settings={"temperature": RM_DEFAULTS["temperature"]},
    defaults={"max_tokens": RM_DEFAULTS["max_tokens"]},
    env_prefix="EARTHSCI_RM",
    per_question=lambda doc, responses: reward.requests_for(REWARD_MODEL, doc, reward_question(doc, responses), CURVES),
)


# Table 7's scalar reward model (spec §6): each candidate once, as a chat of the authors' system turn, the CoT
# query (its <image_k> placeholders as text: no image, no caption) and the candidate; the score at its last token
SCALAR_SYSTEM = "You are a math expert"
SCALAR_REWARD_MODEL = JudgeSpec(
    name="emma_scalar_rm",
    build=lambda doc, text, images: [{"role": "system", "content": SCALAR_SYSTEM}, {"role": "user", "content": build_query(doc, "CoT")}, {"role": "assistant", "content": text}],
    parse=reward.scalar_score,
    env_prefix="EARTHSCI_SCALAR_RM",
    api="pooling",
    endpoint_fallback=False,
    optional=True,
    per_question=lambda doc, responses: reward.scalar_requests(reward_question(doc, responses)),
)


@record_check(check_record)
@judged(REWARD_MODEL, SCALAR_REWARD_MODEL)
def process_results_tts(doc, results):
    """The test-time-scaling tasks: everything :func:`process_results_full` gives, ``emma_bon@N`` (Best-of-N
    by the generative reward model, ``EARTHSCI_RM_*``), ``emma_tournament@N`` (ours), ``emma_bon_scalar@N``
    (a scalar reward model, ``EARTHSCI_SCALAR_RM_*``, when set) and ``emma_rm_failed``."""
    out = process_results_full(doc, results)
    q = reward_question(doc, scaling.samples_of(results))
    out.update(reward.reward_items(REWARD_MODEL, doc, q, lambda i: candidate_correct(doc, q.responses[i]), CURVES, scalar=SCALAR_REWARD_MODEL))
    return out


# ---------------------------------------------------------------------------- judge (official "LLMs-eval", spec §4.5)

# exact text: lines 1-3 end with a space; the official code strips the whole prompt before use
SCORE_DEMO_PROMPT = """Please read the following example. Then determine whether the response is correct and type it 
at the end of the prompt. It is worth noting that the final answer in the response is usually in \\boxed{}, 
You only need to compare the final answer in the response with the answer, without considering the logical 
correctness of the response itself.

Response: The correct answer is:

A

Answer: A

Correct_or_not: Correct

Response: The correct option is:

\\[
\\boxed{E}
\\]

Answer: C

Correct_or_not: Incorrect
"""


def judge_prompt(doc, response: Any) -> str:
    """The official judge input: one user message, no question, no options, no images."""
    return SCORE_DEMO_PROMPT.strip() + "\n" + "Response: " + as_text(response) + "\n" + "Answer: " + str(doc.get("answer", "")) + "\n" + "Correct_or_not:"


def judge_decision(reply: str) -> bool:
    """The official decision rule, exactly: correct iff the reply is "correct" (case-insensitive,
    stripped). Anything else, a verbose reply included, is incorrect."""
    return reply.strip().lower() == "correct"


JUDGE = JudgeSpec(
    name="emma_judge",
    build=lambda doc, response, images: [{"role": "user", "content": judge_prompt(doc, response)}],
    parse=judge_decision,
    per_question=lambda doc, responses: responses[:1],  # the first candidate is judged (--repeats: not every one)
)


@record_check(check_record)
@judged(JUDGE)
def process_results_judge(doc, results):
    """Judge variant: ``emma_judge_acc`` (official judge prompt and decision rule; a failed judge call
    is scored wrong and counted in ``emma_judge_failed``; the judge's record is in the metric's
    ``judge`` field), beside the rule-based ``emma_acc``. The category/type breakdowns here are of
    ``emma_judge_acc`` (None without a judge)."""
    out = process_results_full(doc, results)
    response = scaling.samples_of(results)[0]
    outcome = outcome_for(JUDGE, doc, as_text(response))
    score = None if outcome.status == UNAVAILABLE else percent(bool(outcome.ok and outcome.verdict))
    out.update(_breakdowns(doc, slice_value(outcome, score)))
    out.update(judged_fields(JUDGE_METRIC, JUDGE_FAILED, outcome, score))
    return with_paired_score(out, score)  # the judge's verdict: the judge variant's headline


# lmms-eval imports this module while it reads our task YAMLs: make sure our hooks are in, whatever route
# (entry point, --include_path, the `run` wrapper) brought it here


# ---------------------------------------------------------------------------- released outputs


def release_plan(path: str, options: dict) -> dict:
    """``rescore --from emma-release FILE``: the authors' per-model JSONL (``results/EMMA-mini/<model>_<CoT|
    Direct>.json``, one record per question with ``pid`` and ``response``) as a replay plan over our EMMA
    tasks, matched by ``pid``. The strategy is the file name's suffix (else the prompt's CoT sentence); the
    subjects are those present (all four: the group). A record without ``response`` has no answer and is
    an error when its doc is asked for, never a silent skip."""

    rows = read_records(path)
    name = release_name(path)
    if not rows or any(not isinstance(r, dict) or "pid" not in r or "subject" not in r for r in rows):
        raise RescoreError(f"{path}: not an EMMA release file (records need pid, subject and response)")
    strategy = "Direct" if name.endswith("_Direct") else "CoT" if name.endswith("_CoT") else ("CoT" if "step by step" in str(rows[0].get("query", "")) else "Direct")
    family = f"emma_{options.get('set') or 'mini'}" + ("_direct" if strategy == "Direct" else "")
    subjects = [s for s in SUBJECTS if any(r["subject"] == s for r in rows)]
    unknown = sorted({r["subject"] for r in rows} - set(SUBJECTS))
    if unknown:
        raise RescoreError(f"{path}: unknown subject(s) {unknown}")
    entries: dict[str, dict] = {f"{family}_{s.lower()}": {} for s in subjects}
    for r in rows:
        if "response" in r:
            entries[f"{family}_{r['subject'].lower()}"][str(r["pid"])] = {"responses": [as_text(r["response"])], "input": None, "target": None, "fields": {"answer": r["answer"]} if "answer" in r else {}}
    tasks = family if len(subjects) == len(SUBJECTS) else ",".join(entries)
    if options.get("tasks"):
        tasks = options["tasks"]
        entries = {t: v for t, v in entries.items() if t in tasks.split(",") or tasks == family}
    return release_plan_dict("pid", tasks, entries, name)
