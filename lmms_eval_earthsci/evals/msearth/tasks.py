"""MSEarth: "MSEarth: A Benchmark for Multimodal Scientific Comprehension of Earth Science" (Zhao, Xu et
al.; arXiv 2505.20740 v1). Multiple-choice VQA, open-ended VQA and figure captioning.

What is specific to MSEarth lives here: the official prompts (exact strings, open-source-model script
by default, closed-model variants selectable), the record mapping for both upload schemas, the official
JSON/option extraction and MCQ verdict (quirks included) beside the paper's described method (similarity
fallback from the shared core), the judge prompts and their parsers. Messages, similarity, text metrics,
the judge pass and breakdown metrics come from :mod:`lmms_eval_earthsci.core`.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.core.adapter.unavailable import explained_by
from lmms_eval_earthsci.core.data import RecordError, check_image, load_image, record_check
from lmms_eval_earthsci.core.data.releases import RescoreError, read_records, release_name, release_plan_dict
from lmms_eval_earthsci.core.judge.task_pass import UNAVAILABLE, JudgeSpec, batched, doc_key, judged, judged_fields, outcome_for, slice_value
from lmms_eval_earthsci.core.prompts.messages import note_chat, route_of
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.scoring import scaling, textmetrics
from lmms_eval_earthsci.core.scoring.extraction import as_text
from lmms_eval_earthsci.core.scoring.metrics import breakdown_scores, percent, with_paired_score
from lmms_eval_earthsci.core.scoring.similarity import get_matcher
from lmms_eval_earthsci.evals.msearth.benchmark import BENCHMARK, BREAKDOWN_PREFIX, CAP_METRIC, CATEGORIES, CURVES, MCQ_METRIC, MCQ_STRICT, OE_METRIC, SPHERES, breakdowns  # noqa: F401 - the names it had: still tasks.X

logger = logging.getLogger("lmms_eval_earthsci")

# the Hub repos are named in benchmark.py (DATASETS, and REUPLOADS: other field names, accepted through
# `dataset_path` overrides); the training set never is
TRAINING_SET = "MSEarth-Data/MSEarth-MCQ-Train"

# ---------------------------------------------------------------------------- prompts (spec §3, exact)
# open-source-model scripts (auto_evaluator/evaluation/*.py): the defaults
MCQ_PROMPT = (
    '\n'
    '    You are tasked with answering a multiple-choice question about the given input image.\n\n'
    '    {question}\n\n'
    '    Based on the image, select the correct option (e.g., \'A\', \'B\', \'C\') or directly state the correct option content.\n\n'
    '    The output must be written in **JSON format** using the structure below:\n'
    '    ```json\n'
    '    {\n'
    '        "answer": "Correct option or short answer",\n'
    '        "Explanation": "Reasoning explaining how to derive the correct answer." \n'
    '    },\n'
    '    ```\n    '
)
OE_PROMPT = (
    '\n'
    '        You are tasked with answering a open-ended question about the given input image.\n\n'
    '        {question}\n\n'
    '        Based on the image and caption, give a concise and precise answer (no more than 4 words).\n\n'
    '        The output must be written in **JSON format** using the structure below:\n'
    '        ```json\n'
    '        {\n'
    '            "answer": "short answer",\n'
    '            "Explanation": "Reasoning explaining how to derive the correct answer." \n'
    '        },\n'
    '        ```\n        '
)
CAPTION_PROMPT = (
    '\n'
    '        You are an expert in Earth sciences, tasked with generating a detailed caption for the given input image.\n\n'
    '        The output must be written in **JSON format** using the structure below:\n'
    '        ```json\n'
    '        {\n'
    '            "caption": "Detailed and insightful caption about the image."\n'
    '        },\n'
    '        ```\n        '
)
OE_JUDGE_PROMPT = (
    '\n'
    '    You are tasked with evaluating the correctness of a generated answer to an open-ended question about a given input image.\n\n'
    '    Question: {query}\n'
    '    Image Caption: {caption}\n'
    '    Standard Answer: {response}\n'
    '    Generated Answer: {generated_answer}\n\n'
    '    Based on the image caption, question, and standard answer, determine if the generated answer is correct.\n\n'
    '    **Important Instructions**: \n'
    '    - Only output the determine in the specified JSON format.\n'
    '    - Do not provide any explanations, comments, or additional text.\n\n'
    '    Provide your evaluation in **JSON format** using the structure below:\n'
    '    ```json\n'
    '    {\n'
    '        "is_correct": true or false\n'
    '    }\n'
    '    ```\n    '
)
CAPTION_JUDGE_PROMPT = (
    '\n'
    '    Evaluate the quality of a generated caption for a geoscience research paper figure or image.\n\n'
    '    Evaluation Criteria:\n'
    '    1. Scientific Accuracy: Does the generated caption accurately describe the scientific content of the figure or image?\n'
    '    2. Clarity and Coherence: Is the caption well-structured, logically organized, and easy to understand?\n'
    '    3. Relevance and Completeness: Does the caption provide all necessary information to understand the figure or image?\n'
    '    \n'
    '    Evaluation Steps:\n'
    '    1. Compare the **Generated Caption** to the **Standard Caption**. Assess whether the generated caption aligns with the scientific content and intent of the standard caption.\n'
    '    2. Assign a score for coherence on a scale of 1 to 5, where 1 is the lowest and 5 is the highest, based on the Evaluation Criteria.\n\n'
    '    Standard Caption: {response}\n'
    '    Generated Caption: {generated_caption}\n\n'
    '    **Important Instructions**: \n'
    '    - Only output the score in the specified JSON format.\n'
    '    - Do not provide any explanations, comments, or additional text.\n\n'
    '    Provide your evaluation in **JSON format** using the structure below:\n'
    '    ```json\n'
    '    {\n'
    '        "score": 1-5\n'
    '    }\n'
    '    ```\n    '
)


def _closed_mcq(p: str) -> str:
    """Closed-model script (spec §3.1): 12-space indent, no ```json fence, one more blank line."""
    lines = [ln for ln in p.split("\n") if ln.strip() not in ("```json", "```")]
    text = "\n".join(("        " + ln) if ln.startswith("    ") else ln for ln in lines)
    return text.replace("structure below:\n", "structure below:\n\n", 1)


MCQ_PROMPT_CLOSED = _closed_mcq(MCQ_PROMPT)
# closed-model OE (spec §3.2): 12-space indent, only {"answer": ...}, and a fence that is opened twice
OE_PROMPT_CLOSED = (
    "\n            You are tasked with answering a open-ended question about the given input image.\n\n"
    "            {question}\n\n"
    "            Based on the image and caption, give a concise and precise answer (no more than 4 words).\n\n"
    "            The output must be written in **JSON format** using the structure below:\n"
    "            ```json\n"
    '            {"answer": "short answer"}\n'
    "            ```json\n"
    "            "
)
# closed-model captioning (spec §3.3): the same text, the JSON key is "answer"
CAPTION_PROMPT_CLOSED = CAPTION_PROMPT.replace('"caption": "Detailed', '"answer": "Detailed')
# the MSEarth-mini ablation's CoT prompt (evaluation/evaluate_mini.py, paper Fig. 6), as the spec prints it:
# dedented (the code indents it by 12 spaces inside a function), `{query}` there is our `{question}`
MCQ_COT_PROMPT = (
    "You are tasked with answering a multiple-choice question about the given input image using Chain-of-Thought (CoT) reasoning.\n\n"
    "{question}\n\n"
    "Based on the image, provide a short reasoning process to derive the correct answer. Then, state the final answer.\n\n"
    "The output must be written in **JSON format** using the structure below:\n"
    "```json\n"
    "{\n"
    '    "short reasoning": "short explanation",\n'
    '    "answer": "Correct option or short answer"\n'
    "}\n"
    "```"
)
PROMPTS = MappingProxyType({
    ("mcq", "open_source"): MCQ_PROMPT,
    ("mcq", "cot"): MCQ_COT_PROMPT,
    ("mcq", "closed"): MCQ_PROMPT_CLOSED,
    ("open", "open_source"): OE_PROMPT,
    ("open", "closed"): OE_PROMPT_CLOSED,
    ("caption", "open_source"): CAPTION_PROMPT,
    ("caption", "closed"): CAPTION_PROMPT_CLOSED,
})

# ---------------------------------------------------------------------------- breakdowns (spec §1.3, §2.2)
IMAGE_TYPES = MappingProxyType({
    "Single Image Question Answering": "SINGLE",
    "Single Sub-image Question Answering in Multi-image Figure": "MULTI",
    "Multi Sub-image Question Answering in Multi-image Figure": "CROSS",
})

# ---------------------------------------------------------------------------- record mapping (both schemas)


def _rid(doc) -> str:
    return str(doc.get("question_id") or doc.get("id") or "<no question_id>")


def _dataset(doc, kind: str = "") -> str:
    return f"MSEarth{('/' + kind) if kind else ''}"


def _mapping(value: Any, field: str, doc, column: str) -> dict:
    """A dict column as uploaded: a dict (repo JSON), a JSON string (HF) or a Python-literal string
    (released repo file). A bare label string becomes ``{field: label}``; None/"" gives ``{}``."""
    if value is None or value == "":
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("{"):
            for parse in (json.loads, ast.literal_eval):
                try:
                    out = parse(s)
                    if isinstance(out, Mapping):
                        return dict(out)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    continue
            raise RecordError(_dataset(doc), _rid(doc), column, f"not a dict, JSON or Python literal: {s[:80]!r}")
        return {field: s}
    raise RecordError(_dataset(doc), _rid(doc), column, f"expected a dict or a string, got {type(value).__name__}")


def query_of(doc) -> str:
    q = doc.get("query")
    if not isinstance(q, str):
        raise RecordError(_dataset(doc), _rid(doc), "query", "missing or not a string")
    return q


def refined_caption(doc) -> str:
    """The refined caption the OE judge sees (``caption`` in every upload of the OE set)."""
    return str(doc.get("caption") or "")


def sphere_of(doc) -> str:
    s = str(_mapping(doc.get("classification_result"), "primary_sphere", doc, "classification_result").get("primary_sphere") or "").strip()
    return s if s in SPHERES else "Other"


def image_type_of(doc) -> str | None:
    v = str(_mapping(doc.get("vqa_type"), "vqa_type", doc, "vqa_type").get("vqa_type") or "").strip()
    return IMAGE_TYPES.get(v)


def category_of(doc) -> str | None:
    v = str(_mapping(doc.get("vqa_type"), "vqa_type", doc, "vqa_type").get("question_category") or "").strip().lower()
    if v.startswith("discover"):
        return "Discovery"
    if v.startswith("percept"):
        return "Perception"
    return None


def _image_cell(doc) -> tuple[str, Any]:
    """(column, cell) of the doc's figure: ``image``, or the first of ``images`` (re-upload schema)."""
    field = "image" if "image" in doc else "images" if "images" in doc else "image"
    value = doc.get(field)
    if isinstance(value, list):
        value = value[0] if value else None
    return field, value


def image_of(doc):
    field, value = _image_cell(doc)
    return load_image(value, dataset=_dataset(doc), record_id=_rid(doc), field=field)


_CAPTION_RE = re.compile(r"Caption:.*?Question:", re.DOTALL)


def question_text(doc, kind: str, with_caption: bool = True) -> str:
    """``{question}`` of the prompt: the query without ``<image>`` (MCQ and OE); for the "w/o OC"
    setting the official (commented-out) regex removes the raw caption."""
    q = query_of(doc).replace("<image>", "")
    if not with_caption:
        q = _CAPTION_RE.sub("Question:", q)
    return q


def build_prompt(doc, kind: str, variant: str = "open_source", with_caption: bool = True) -> str:
    try:
        template = PROMPTS[(kind, variant)]
    except KeyError:
        raise ValueError(f"MSEarth prompt variant must be 'open_source', 'closed' or (MCQ) 'cot', got {variant!r}") from None
    if kind == "caption":
        return template  # the dataset's `query` is ignored by the official captioning scripts
    return template.replace("{question}", question_text(doc, kind, with_caption))


def _task_kwargs(kwargs) -> tuple[str, str, bool]:
    kw = kwargs or {}
    return kw.get("kind", "mcq"), kw.get("prompt", "open_source"), bool(kw.get("with_caption", True))


# ---------------------------------------------------------------------------- lmms-eval hooks


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    """One user turn, text then image, as the official scripts send it; no system prompt."""
    kind, variant, cap = _task_kwargs(lmms_eval_specific_kwargs)
    note_chat(doc)
    return [{"role": "user", "content": [{"type": "text", "text": build_prompt(doc, kind, variant, cap)}, {"type": "image", "url": image_of(doc)}]}]


def doc_to_visual(doc):
    return [image_of(doc)]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kind, variant, cap = _task_kwargs(lmms_eval_specific_kwargs)
    return build_prompt(doc, kind, variant, cap)


def doc_to_target(doc, model_specific_target_kwargs=None):
    return str(doc.get("response", ""))


# ---------------------------------------------------------------------------- official extraction (spec §4.1)

_FENCED_RE = re.compile(r"(?<=```json\n)([\s\S]*?)(?=\n```)")
_BARE_RE = re.compile(r"{[\s\S]*?}")
_TRAILING_RE = re.compile(r",\s*([}\]])")


def official_json(text: str, clean_backslashes: bool = True) -> tuple[Any, str]:
    """(parsed JSON or None, the text searched). Open-source scripts delete every backslash first;
    the judge's reply is parsed without that step."""
    t = text.replace("\\", "") if clean_backslashes else text
    m = _FENCED_RE.search(t) or _BARE_RE.search(t)
    if m:
        try:
            return json.loads(_TRAILING_RE.sub(r"\1", m.group(1) if m.re is _FENCED_RE else m.group(0))), t
        except (ValueError, RecursionError):
            pass
    return None, t


def generated_answer(response: Any, keys: tuple[str, ...] = ("answer",)) -> tuple[Any, str]:
    """(the model's answer, how it was found): the first of ``keys`` in the parsed JSON (it may be a
    non-string: the caller decides), else the raw text."""
    text = as_text(response)
    parsed, cleaned = official_json(text)
    if isinstance(parsed, dict):
        for k in keys:
            if k in parsed:
                return parsed[k], f"json:{k}"
        return None, "json-without-" + "/".join(keys)
    return cleaned, "raw"


# ---------------------------------------------------------------------------- MCQ (spec §4.2)

_OPTION_RE = re.compile(r"^\s*([abcdABCD])(?!\w)\s*[):.,\s]?\s*(.*)$")
_OPTIONS_BLOCK_RE = re.compile(r"Options:\s*((?:[A-D]\.\s.*?(?:\n|$))+)")


def parse_option(s: str) -> tuple[str | None, str | None]:
    """The official ``parse``: (letter, rest or None) when the regex matches, else (None, text)."""
    m = _OPTION_RE.match(s)
    if m:
        return m.group(1), (m.group(2) or None)
    return None, s.strip()


def option_lines(doc) -> list[str]:
    """The option lines ("A. text") of an MCQ, parsed from ``query`` as the authors' fallback does."""
    m = _OPTIONS_BLOCK_RE.search(query_of(doc))
    if not m:
        return []
    return [ln.strip() for ln in m.group(1).split("\n") if ln.strip()]


def gold_option(doc) -> tuple[str, str | None]:
    resp = doc.get("response")
    if not isinstance(resp, str) or not resp.strip():
        raise RecordError(_dataset(doc, "MCQ"), _rid(doc), "response", "missing gold answer")
    letter, content = parse_option(resp)
    if letter is None:
        raise RecordError(_dataset(doc, "MCQ"), _rid(doc), "response", f"gold {resp[:40]!r} does not start with an option letter")
    return letter, content


def strict_verdict(doc, answer: Any) -> dict:
    """``msearth_acc_strict``: the official verdict, quirks included (a lower-case letter never
    matches; a leading article "A " reads as option A; exact case-sensitive content compare). A
    missing or non-string ``answer`` is wrong (the official script drops or crashes on it)."""
    real_option, real_content = gold_option(doc)
    if not isinstance(answer, str):
        return {"correct": False, "option": None, "content": None, "reason": "answer is missing or not a string"}
    option, content = parse_option(answer)
    if option:
        correct = option == real_option
    elif content:
        correct = content == real_content
    else:
        correct = False
    return {"correct": correct, "option": option, "content": content}


# a lower-case "a" followed by a space and a word is the article (the official regex reads it as a
# letter, which no gold matches since gold letters are upper-case; upper-casing must not turn it into A)
_ARTICLE_RE = re.compile(r"^\s*a\s+[A-Za-z]{2,}")


def paper_option(answer: str) -> tuple[str | None, str | None]:
    """:func:`parse_option` as the paper method reads it: a lower-case article "a ..." is text, not option A."""
    option, content = parse_option(answer)
    if option and option.islower() and _ARTICLE_RE.match(answer):
        return None, answer.strip()  # "a decrease in salinity": an article, not option A
    return option, content


def paper_verdicts(docs_answers: list[tuple[Mapping, Any]]) -> list[dict]:
    """``msearth_acc`` for a batch: letters case-insensitive (a lower-case article "a ..." is not a
    letter); when no letter was extracted and the content does not match exactly, the answer goes to
    the similarity fallback (all-MiniLM-L6-v2, argmax over the option lines; paper §4.2). All
    fallbacks of the batch are encoded together."""
    out: list[dict] = []
    pending: list[tuple[int, str, list[str], str]] = []  # (index in out, answer, option lines, gold letter)
    for doc, answer in docs_answers:
        real_option, real_content = gold_option(doc)
        if not isinstance(answer, str):
            out.append({"correct": False, "rule": "no-answer"})
            continue
        option, content = paper_option(answer)
        lines = [] if option or (content and content == real_content) else option_lines(doc)
        if option:
            out.append({"correct": option.upper() == real_option.upper(), "rule": "letter", "option": option.upper()})
        elif content and content == real_content:
            out.append({"correct": True, "rule": "content"})
        elif not answer.strip() or not lines:
            out.append({"correct": False, "rule": "none"})
        else:
            out.append({"correct": False, "rule": "similarity"})
            pending.append((len(out) - 1, answer, lines, real_option))
    if pending:
        matches = get_matcher().best_matches([a for _, a, _, _ in pending], [lines for _, _, lines, _ in pending])
        for (i, _, lines, gold), m in zip(pending, matches):
            if m is None:
                continue
            letter = parse_option(lines[m.index])[0]
            runner_up = m.score - m.margin if m.margin != float("inf") else None
            out[i].update(
                {
                    "option": letter,
                    "similarity": round(m.score, 4),
                    # how clear the pick was: the best option's similarity and the next one's
                    "runner_up_similarity": None if runner_up is None else round(runner_up, 4),
                    "correct": bool(letter) and letter.upper() == gold.upper(),
                }
            )
    return out


def _breakdown(kind: str, doc, score) -> dict:
    labels = {"sphere": [sphere_of(doc)]}
    if kind in ("mcq", "open"):
        it = image_type_of(doc)
        labels["image"] = [it] if it else []
    if kind == "mcq":
        c = category_of(doc)
        labels["category"] = [c] if c else []
    out, _ = breakdown_scores(BREAKDOWN_PREFIX, score, labels, breakdowns(kind))
    return out


def _prepared() -> dict[tuple[str, str], dict]:
    """The paper verdicts :func:`prepare_mcq` computed in one batch, each taken by ``process_results_mcq``:
    held by the runtime, under its lock (``process_results`` runs in threads)."""
    return current().for_run(("msearth_prepared",), dict)


def prepare_mcq(pairs) -> None:
    """Batch step run by the hook before ``process_results`` (one rank's docs): every answer that
    needs the similarity fallback is encoded in one batch."""
    keyed, seen = [], set()
    for doc, response in pairs:
        key = doc_key(doc)
        if key in seen:  # --repeats: process_results scores the first candidate (the hook gives them in order)
            continue
        seen.add(key)
        answer, _ = generated_answer(response)
        keyed.append(((key, response), doc, answer))
    verdicts = paper_verdicts([(doc, answer) for _, doc, answer in keyed])
    prepared = _prepared()
    with current().lock:
        for (key, _, _), v in zip(keyed, verdicts):
            prepared[key] = v


def check_record(doc, kwargs=None) -> None:
    """What prompting and scoring will read, for the task's kind (:func:`core.adapter.task_data.validate_task` runs
    this on each record before inference): the image (header decoded), the label columns, the query
    (MCQ, open-ended) and the MCQ gold letter, which must name one of the question's options."""
    kind = (kwargs or {}).get("kind", "mcq")
    field, value = _image_cell(doc)
    check_image(value, dataset=_dataset(doc), record_id=_rid(doc), field=field)
    for label_of in (sphere_of, image_type_of, category_of):  # the label columns parse
        label_of(doc)
    if kind == "caption":
        return
    query_of(doc)
    if kind == "mcq":
        letter, _ = gold_option(doc)
        letters = [parse_option(line)[0] for line in option_lines(doc)]
        if letters and letter.upper() not in {x.upper() for x in letters if x}:
            raise RecordError(_dataset(doc, "MCQ"), _rid(doc), "response", f"gold letter {letter!r} is not one of the options {'/'.join(x for x in letters if x)}")


@record_check(check_record)
@batched(prepare_mcq)
def process_results_mcq(doc, results):
    """``msearth_acc`` (paper method), ``msearth_acc_strict`` (official code) and breakdowns of
    ``msearth_acc`` (under ``--repeats``, of the first candidate). Any response, however malformed, is
    scored (wrong) and counted."""
    response = scaling.samples_of(results)[0]
    response = response if isinstance(response, str) else as_text(response)
    answer, source = generated_answer(response)
    strict = strict_verdict(doc, answer)
    prepared = _prepared()
    with current().lock:
        paper = prepared.pop((doc_key(doc), response), None)
    if paper is None:
        paper = paper_verdicts([(doc, answer)])[0]
    score = percent(paper["correct"])
    out = _breakdown("mcq", doc, score)
    shown = answer if isinstance(answer, str) else repr(answer)
    out[MCQ_METRIC] = {"score": score, "id": _rid(doc), "answer": shown[:500], "source": source, **paper, "route": route_of(doc)}
    out[MCQ_STRICT] = {"score": percent(strict["correct"]), **strict}
    return with_paired_score(out, score)


def vote_of(response: Any) -> str | None:
    """A candidate's vote: its option letter (upper-cased; a leading article "a ..." is not one), else the
    answer's text; None when the reply has no answer (it does not vote)."""
    answer, _ = generated_answer(response)
    if not isinstance(answer, str) or not answer.strip():
        return None
    option, content = paper_option(answer)
    return option.upper() if option else content


def vote_correct(doc, vote: str) -> bool:
    """A vote's verdict: the gold letter, or exactly the gold option's text (the official content rule; no
    similarity fallback in a vote)."""
    real_option, real_content = gold_option(doc)
    return vote == real_option.upper() or vote == real_content


@record_check(check_record)
@batched(prepare_mcq)
def process_results_mcq_cot(doc, results):
    """The CoT variant: everything :func:`process_results_mcq` gives for the first candidate, and the
    voting curves over the ``--repeats`` candidates (``msearth_maj@N``, ``msearth_pass@N``,
    ``msearth_pass_unbiased@N``; core.scoring.scaling's subsets and seeded tie-break)."""
    out = process_results_mcq(doc, results)
    curves = scaling.curve_items(scaling.samples_of(results), vote_of, lambda v: vote_correct(doc, v), CURVES)
    candidates = curves.pop("candidates")
    out.update(curves)
    out[MCQ_METRIC]["votes"] = [c["extraction"] for c in candidates]
    return out


# ---------------------------------------------------------------------------- open-ended (spec §4.3)


def _image_part(images) -> dict:
    media = images()
    value = media.get("image") if "image" in media else media.get("images")
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None:
        raise ValueError("the doc has no image for the judge")
    return {"type": "image", "url": value}


def oe_judge_prompt(doc, generated: str) -> str:
    """The official OE judge prompt: the raw query (with ``<image>`` and the raw caption), the refined
    caption, the gold and the generated answer."""
    return (
        OE_JUDGE_PROMPT.replace("{query}", query_of(doc))
        .replace("{caption}", refined_caption(doc))
        .replace("{response}", str(doc.get("response", "")))
        .replace("{generated_answer}", generated)
    )


def parse_oe_verdict(reply: str) -> bool:
    """``is_correct`` as the official code reads it (``str(v).strip().lower() in ["true", "1"]``); a
    reply without a JSON object is a parse failure (the official code crashes there)."""
    parsed, _ = official_json(reply, clean_backslashes=False)
    if not isinstance(parsed, dict):
        raise ValueError(f"no JSON object in {reply[:80]!r}")
    return str(parsed.get("is_correct")).strip().lower() in ["true", "1"]


OE_JUDGE = JudgeSpec(
    name="msearth_oe",
    build=lambda doc, answer, images: [{"role": "user", "content": [{"type": "text", "text": oe_judge_prompt(doc, answer)}, _image_part(images)]}],
    parse=parse_oe_verdict,
    uses_images=True,
    judged_text=lambda response: _answer_text(response, ("answer",)),
)


def _answer_text(response: Any, keys: tuple[str, ...]) -> str:
    answer, _ = generated_answer(response, keys)
    if answer is None:
        return ""
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


def _text_items(prefix: str, reference: str, candidate: str) -> dict:
    scores = textmetrics.sample_scores(reference, candidate)
    out = {f"{prefix}_{m}": (None if scores is None else scores.get(m)) for m in textmetrics.SAMPLE_METRICS}
    out[f"{prefix}_bertscore"] = None if scores is None else {"reference": reference, "candidate": candidate}
    return out


@record_check(check_record)
@judged(OE_JUDGE)
def process_results_open(doc, results):
    """``msearth_oe_acc`` (judge; failures scored wrong and counted), the text metrics, breakdowns."""
    response = results[0] if results else ""
    answer = OE_JUDGE.text_of(response)
    outcome = outcome_for(OE_JUDGE, doc, answer)
    score = None if outcome.status == UNAVAILABLE else percent(bool(outcome.ok and outcome.verdict))
    out = _breakdown("open", doc, slice_value(outcome, score))
    out.update(judged_fields(OE_METRIC, "msearth_oe_judge_failed", outcome, score, extra={"id": _rid(doc), "answer": answer[:500], "route": route_of(doc)}))
    out.update(_text_items("msearth_oe", str(doc.get("response", "")), answer))
    return with_paired_score(out, score)


# ---------------------------------------------------------------------------- captioning (spec §4.4)


def caption_judge_prompt(doc, generated: str) -> str:
    return CAPTION_JUDGE_PROMPT.replace("{response}", str(doc.get("response", ""))).replace("{generated_caption}", generated)


def parse_caption_score(reply: str) -> float:
    """The judge's 1-5 ``score`` (a number or a numeric string); anything else is a parse failure."""
    parsed, _ = official_json(reply, clean_backslashes=False)
    if not isinstance(parsed, dict) or parsed.get("score") is None:
        raise ValueError(f"no JSON score in {reply[:80]!r}")
    value = float(parsed["score"])
    if not 1.0 <= value <= 5.0:
        raise ValueError(f"score {value} is outside 1-5")
    return value


CAPTION_JUDGE = JudgeSpec(
    name="msearth_cap",
    build=lambda doc, caption, images: [{"role": "user", "content": [{"type": "text", "text": caption_judge_prompt(doc, caption)}, _image_part(images)]}],
    parse=parse_caption_score,
    uses_images=True,
    judged_text=lambda response: _answer_text(response, ("caption", "answer")),
)


@record_check(check_record)
@judged(CAPTION_JUDGE)
def process_results_caption(doc, results):
    """``msearth_cap_score`` (judge, 1-5; as the official aggregation, docs whose judging failed are
    left out of the mean and counted in ``msearth_cap_judge_failed``) and the text metrics."""
    response = results[0] if results else ""
    caption = CAPTION_JUDGE.text_of(response)
    outcome = outcome_for(CAPTION_JUDGE, doc, caption)
    score = outcome.verdict if outcome.ok else None
    out = _breakdown("caption", doc, slice_value(outcome, score))
    out.update(judged_fields(CAP_METRIC, "msearth_cap_judge_failed", outcome, score, extra={"id": _rid(doc), "route": route_of(doc)}))
    out.update(_text_items("msearth_cap", str(doc.get("response", "")), caption))
    return with_paired_score(out, score)  # 1-5: 0.01-0.05, so that lmms-eval's x100 reads 1-5


# ---------------------------------------------------------------------------- aggregations


@explained_by(lambda: textmetrics.unavailable_reason("bertscore"))
def bertscore(items) -> float | None:
    """BERTScore F1 x100, per sample then mean, one batched pass; None if the model is unavailable."""
    pairs = [i for i in items if isinstance(i, Mapping)]
    if not pairs:
        return None
    f1 = textmetrics.bertscore_f1([p["reference"] for p in pairs], [p["candidate"] for p in pairs])
    return None if f1 is None else 100 * sum(f1) / len(f1)


# lmms-eval imports this module while it reads our task YAMLs: make sure our hooks are in, whatever route
# (entry point, --include_path, the `run` wrapper) brought it here


# ---------------------------------------------------------------------------- the authors' released outputs

RELEASE_TASKS = MappingProxyType({"mcq": "msearth_mcq", "open": "msearth_open", "caption": "msearth_caption"})
_RELEASE_KIND_OF_TASK = MappingProxyType({"msearth_mcq": "mcq", "msearth_mcq_nocap": "mcq", "msearth_open": "open", "msearth_caption": "caption"})


def release_kind(record: Mapping) -> str:
    """Which task an evaluator record is for: a caption record has ``generated_caption`` or no question;
    an MCQ's query lists ``Options:``."""
    query = str(record.get("query") or "")
    if "generated_caption" in record or "Question:" not in query:
        return "caption"
    return "mcq" if "Options:" in query else "open"


def release_response(record: Mapping, kind: str) -> Any:
    """The model output an evaluator record carries: ``generated_answer``; for captions
    ``generated_caption``, or ``generated_answer`` when that is empty or absent (as the official judge
    reads it). None when the record has neither."""
    if kind == "caption":
        cap = record.get("generated_caption")
        if isinstance(cap, str) and cap.strip():
            return cap
    return record.get("generated_answer")


def release_plan(path: str, options: dict) -> dict:
    """``rescore --from msearth-release FILE``: the records the authors' ``auto_evaluator`` scores (the
    dataset's records, e.g. ``results/msearth_open.json``, each with the model's ``generated_answer``;
    captioning: ``generated_caption``) as a replay plan matched by ``question_id``. The record's
    ``response`` (the gold answer) must equal the dataset's. The task is read from the records (one per
    file) unless ``--tasks`` names it. The answer is replayed as the model's raw output: our extraction
    finds an extracted answer as it is (raw text) and a full JSON reply as a run would."""
    rows = read_records(path)
    bad = next((i for i, r in enumerate(rows) if not isinstance(r, dict) or "question_id" not in r), None)
    if not rows or bad is not None:
        raise RescoreError(f"{path}: not an MSEarth evaluator file (record {1 if bad is None else bad + 1} has no question_id)")
    task = options.get("tasks")
    if task:
        if task not in _RELEASE_KIND_OF_TASK:
            raise RescoreError(f"--tasks {task}: an MSEarth release file scores one of {', '.join(_RELEASE_KIND_OF_TASK)}")
        kind = _RELEASE_KIND_OF_TASK[task]
    else:
        kinds = Counter(release_kind(r) for r in rows)
        if len(kinds) > 1:
            raise RescoreError(f"{path}: records of several tasks ({', '.join(f'{n} {k}' for k, n in kinds.items())}); name one with --tasks")
        kind = next(iter(kinds))
        task = RELEASE_TASKS[kind]
    entries: dict[str, dict] = {}
    for n, r in enumerate(rows, 1):
        qid = str(r["question_id"])
        if qid in entries:
            raise RescoreError(f"{path}, record {n}: question_id {qid} appears twice")
        answer = release_response(r, kind)
        if answer is not None:  # a record without an answer: its doc has no response (an error when asked)
            entries[qid] = {"responses": [as_text(answer)], "input": None, "target": None, "fields": {"response": r["response"]} if "response" in r else {}}
    return release_plan_dict("question_id", task, {task: entries}, release_name(path))
