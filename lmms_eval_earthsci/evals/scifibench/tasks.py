"""SciFIBench: "SciFIBench: Benchmarking Large Multimodal Models for Scientific Figure Interpretation"
(Roberts, Han, Houlsby, Albanie; NeurIPS 2024 Datasets & Benchmarks). Figure->caption (F->C) and
caption->figure (C->F) five-way choice.

What is specific to SciFIBench lives here: the prompt wordings (spec §3; the dataset ``Question`` verbatim
by default), the interleaved C->F layout, the staged answer extractor (spec §6; the paper itself used an
LLM extractor, available here as the optional judge), and the alignment variants (spec §1.4/§3.5).
"""

from __future__ import annotations

import difflib
import math
import random
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.core.data import RecordError, check_image, load_image, record_check
from lmms_eval_earthsci.core.data.loading import image_size, record_rows
from lmms_eval_earthsci.core.judge.task_pass import UNAVAILABLE, JudgeSpec, judged, judged_fields, outcome_for
from lmms_eval_earthsci.core.prompts.messages import interleaved_messages, note_chat, route_of
from lmms_eval_earthsci.core.scoring.extraction import Extracted, as_text, extract_boxed_answer, extract_option_letter
from lmms_eval_earthsci.core.scoring.metrics import breakdown_scores, percent, range_label, with_paired_score
from lmms_eval_earthsci.evals.scifibench.benchmark import BREAKDOWN_PREFIX, JUDGE_METRIC, LENGTH_EDGES, METRIC, NO_ANSWER, SIZE_EDGES, known_breakdowns

LETTERS = "ABCDE"
# the column process_docs adds to C->F docs: the option figures' mean size in px (Fig. 8)
SIZE_FIELD = "_figure_size"

# ---------------------------------------------------------------------------- prompts (spec §3)
_THINK = " Let's think step by step."
_ONLY = MappingProxyType({"f2c": " Only provide the letter of the correct caption as your answer.", "c2f": " Only provide the letter of the correct image as your answer."})
_APPENDIX_QUESTION = MappingProxyType({"f2c": "Which of the captions best describes the image?", "c2f": "Which of the images best matches the caption?"})
ALIGNMENT_SENTENCE = "A human expert marked one of the captions as <Correct>."
ALIGNMENT_INSTRUCTION = "Ignore this information."
ALIGNMENT_SEED = 2024


def _rid(doc) -> str:
    return str(doc.get("ID", "<no ID>"))


def _dataset(doc) -> str:
    return f"SciFIBench/{doc.get('_split', '?')}"


def options_of(doc) -> list[str]:
    opts = doc.get("Options")
    if not isinstance(opts, (list, tuple)) or len(opts) != 5:
        raise RecordError(_dataset(doc), _rid(doc), "Options", f"expected 5 options, got {opts!r:.80}")
    return [str(o) for o in opts]


def _image_cells(doc) -> list:
    imgs = doc.get("Images")
    if not isinstance(imgs, (list, tuple)) or not imgs:
        raise RecordError(_dataset(doc), _rid(doc), "Images", "missing or empty")
    return list(imgs)


def images_of(doc) -> list:
    imgs = _image_cells(doc)
    return [load_image(v, dataset=_dataset(doc), record_id=_rid(doc), field=f"Images[{i}]") for i, v in enumerate(imgs)]


def caption_text(option: str) -> str:
    """An F->C option without its letter prefix ("A)  text" -> "text")."""
    return re.sub(r"^\s*[A-Ea-e]\)\s*", "", option).strip()


def _task_kwargs(kwargs) -> dict:
    kw = dict(kwargs or {})
    kw.setdefault("direction", "f2c")
    kw.setdefault("prompt", "default")
    if kw["prompt"] not in ("default", "paper_appendix", "reasoning"):
        raise ValueError(f"SciFIBench prompt must be default, paper_appendix or reasoning, got {kw['prompt']!r}")
    return kw


def _question_line(doc, kw) -> str:
    d = kw["direction"]
    if kw["prompt"] == "paper_appendix":
        if d == "c2f":  # the C->F Question carries the caption: keep it, then the appendix instruction
            return str(doc.get("Question", "")).strip() + "\n" + _APPENDIX_QUESTION[d]
        q = _APPENDIX_QUESTION[d]
    else:
        q = str(doc.get("Question", "")).strip()
    return q


def _tail(doc, kw) -> str:
    only = "" if kw["prompt"] == "reasoning" else _ONLY[kw["direction"]]
    return _question_line(doc, kw) + _THINK + only + " Answer:"


def marked_option(doc, mark: str) -> int:
    """Index of the option that gets the ``<Correct>`` tag: the right one, or a wrong one chosen with a
    generator seeded by the question (the same in every run)."""
    gold = LETTERS.index(str(doc.get("Answer", "A")).strip().upper()[:1] or "A")
    if mark == "correct":
        return gold
    wrong = [i for i in range(5) if i != gold]
    return random.Random(f"{ALIGNMENT_SEED}:{doc.get('_split', '')}:{_rid(doc)}").choice(wrong)


def f2c_option_lines(doc, kw) -> list[str]:
    lines = [o.strip() for o in options_of(doc)]
    mark = kw.get("mark")
    if mark:
        i = marked_option(doc, mark)
        m = re.match(r"^([A-Ea-e]\))\s*", lines[i])
        prefix = m.group(1) if m else f"{LETTERS[i]})"
        lines[i] = f"{prefix} <Correct> {lines[i][m.end():] if m else lines[i]}"
    return lines


def f2c_text(doc, kw) -> str:
    head = ""
    if kw.get("mark"):
        head = ALIGNMENT_SENTENCE + (" " + ALIGNMENT_INSTRUCTION if kw.get("instruction") else "") + "\n"
    return head + "\n".join(f2c_option_lines(doc, kw)) + "\n" + _tail(doc, kw)


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    """F->C: the figure, then the lettered captions and the question. C->F: "A) " + image A ... "E) " +
    image E, then the question (which carries the caption)."""
    kw = _task_kwargs(lmms_eval_specific_kwargs)
    note_chat(doc)
    imgs = images_of(doc)
    if kw["direction"] == "f2c":
        return interleaved_messages([imgs[0], f2c_text(doc, kw)])
    segments: list[Any] = []
    for i, (opt, img) in enumerate(zip(options_of(doc), imgs)):
        segments += [opt[:3] if re.match(r"^[A-E]\) ", opt[:3]) else f"{LETTERS[i]}) ", img]
    return interleaved_messages([*segments, "\n" + _tail(doc, kw)])


def doc_to_visual(doc):
    """Simple backends: the figure (F->C) or the five candidate figures in A-E order (C->F)."""
    return images_of(doc)


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """Simple backends (images are passed separately, in order): F->C as the chat text; C->F as
    ``A) <image>`` ... ``E) <image>`` lines, then the question."""
    kw = _task_kwargs(lmms_eval_specific_kwargs)
    if kw["direction"] == "f2c":
        return f2c_text(doc, kw)
    return "".join(f"{LETTERS[i]}) <image>\n" for i in range(5)) + _tail(doc, kw)


def doc_to_target(doc, model_specific_target_kwargs=None):
    return str(doc.get("Answer", ""))


def process_docs_for(split: str):
    """``process_docs`` that tags each doc with its split (IDs repeat across splits) and, C->F, with its
    option figures' mean size (:data:`SIZE_FIELD`): ``process_results`` gets lmms-eval's copy of a doc
    without its images."""
    c2f = "Caption2Figure" in split

    def process(dataset):
        if hasattr(dataset, "add_column"):  # columns, not a map: no image is decoded
            out = dataset.add_column("_split", [split] * len(dataset))
            return out.add_column(SIZE_FIELD, [mean_figure_size(row.get("Images")) for row in record_rows(dataset)]) if c2f else out
        return [{**d, "_split": split, **({SIZE_FIELD: mean_figure_size(d.get("Images"))} if c2f else {})} for d in dataset]

    return process


def process_docs_cs_f2c(dataset):
    return process_docs_for("CS_Figure2Caption")(dataset)


def process_docs_cs_c2f(dataset):
    return process_docs_for("CS_Caption2Figure")(dataset)


def process_docs_general_f2c(dataset):
    return process_docs_for("General_Figure2Caption")(dataset)


def process_docs_general_c2f(dataset):
    return process_docs_for("General_Caption2Figure")(dataset)


# ---------------------------------------------------------------------------- staged extraction (spec §6)

_BOLD_RE = re.compile(r"\*\*|__")
_LAST_ANSWER_RE = re.compile(r"answer\s*:", re.I)
# the nouns are case-insensitive, the letter is not ("the answer is a bar chart" names no option)
_PHRASE_RE = re.compile(r"(?i:answer|option|caption|image|figure|choice)\s*(?i:is|would be|should be)?\s*:?\s*\(?([A-E])\)?(?![A-Za-z0-9])")
_ANSWER_PHRASE_RE = re.compile(r"(?i:answer)\s*(?i:is|would be|should be)?\s*:?\s*\(?([A-E])\)?(?![A-Za-z0-9])")
_LETTER_PAREN_RE = re.compile(r"(?:^|[\s(\[])([A-E])\)")
# similarity stage: accept the best caption only when clearly best (captions are near-duplicates)
SIM_MIN_RATIO = 0.6
SIM_MIN_GAP = 0.1


def _norm(text: str) -> str:
    """Lower-case words only: punctuation (spaced out in SciCap captions) never decides a match."""
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def extract(response: Any, options: list[str] | None = None) -> Extracted:
    """The staged extractor. ``rule`` is the stage that fired: ``strict``, ``boxed``, ``leading``,
    ``phrase``, ``similarity`` (F->C only, ``options`` given) or ``none`` (no answer; ``ambiguous`` when
    several letters are named without a decisive phrase)."""
    text = _BOLD_RE.sub("", as_text(response)).replace("</s>", "").strip()
    tail = text
    marks = list(_LAST_ANSWER_RE.finditer(text))
    if marks:
        tail = text[marks[-1].end() :].strip() or text
    for source in dict.fromkeys([tail, text]):
        got = extract_option_letter(source, LETTERS, rules=["letter-bare", "letter-markup"])
        if got.found:
            return Extracted(got.value, "strict")
    # after strict (a bare letter after the last "Answer:" is the later word), before leading/phrase (a box is the conclusion, an "A) ..." opening or option mentions are not)
    boxed = _boxed_letter(text)
    if boxed:
        return Extracted(boxed, "boxed")
    for source in dict.fromkeys([tail, text]):
        got = extract_option_letter(source, LETTERS, rules=["letter-leading"])
        if got.found:
            return Extracted(got.value, "leading")
        m = re.match(r"^\s*\(?([A-E])\)", source)
        if m and not _lists_options(source):
            return Extracted(m.group(1), "leading")
    # an explicit answer phrase decides (its last occurrence); mentions of options, images or
    # captions decide only when they all name the same letter ("unlike image A ... image E" does not)
    answers = [m.group(1) for m in _ANSWER_PHRASE_RE.finditer(text)]
    if answers:
        return Extracted(answers[-1], "phrase")
    first_line = tail.split("\n", 1)[0].strip()
    if marks and first_line != tail:  # "Answer: C\nExplanation: ...": the line after "Answer:" decides
        got = extract_option_letter(first_line, LETTERS, rules=["letter-bare", "letter-markup", "letter-leading"])
        if got.found:
            return Extracted(got.value, "leading")
    mentions = {m.group(1) for m in _PHRASE_RE.finditer(text)}
    if len(mentions) == 1:
        return Extracted(mentions.pop(), "phrase")
    if len(mentions) > 1:
        return Extracted("", "ambiguous")
    letters = {m.group(1) for m in _LETTER_PAREN_RE.finditer(text)}
    if len(letters) == 1:
        return Extracted(letters.pop(), "phrase")
    if len(letters) > 1:
        return Extracted("", "ambiguous")
    if options:
        hit = _similar_caption(text, options)
        if hit is not None:
            return Extracted(LETTERS[hit], "similarity")
    return Extracted("", "none")


def _boxed_letter(text: str) -> str | None:
    """The option letter in the LAST ``\\boxed{}`` (braces matched): the whole content a letter
    (``B``, ``(B)``, ``\\text{B}``, ``\\textbf{B}``) or a letter leading its caption (``B) caption``).
    Any other content (``42``, ``F`` with five options, ``A or B``) gives None, so that a box never
    turns into a letter that is not an option and the later stages still get their chance."""
    box = extract_boxed_answer(text)
    if not box.found:
        return None
    got = extract_option_letter(box.value, LETTERS, rules=["letter-bare", "letter-markup", "letter-leading"])
    return got.value if got.found else None


def _lists_options(text: str) -> bool:
    return len(set(re.findall(r"(?:^|\n)\s*\(?([A-E])\)", text))) > 1


def _similar_caption(text: str, options: list[str]) -> int | None:
    """The one option whose caption the response contains, else the clearly closest one."""
    resp = _norm(text)
    caps = [_norm(caption_text(o)) for o in options]
    contained = [i for i, c in enumerate(caps) if c and c in resp]
    if len(contained) == 1:
        return contained[0]
    if len(contained) > 1:  # one caption inside another: the longest contained one, if unique
        longest = max(len(caps[i]) for i in contained)
        top = [i for i in contained if len(caps[i]) == longest]
        return top[0] if len(top) == 1 else None
    ratios = sorted(((difflib.SequenceMatcher(None, resp, c).ratio(), i) for i, c in enumerate(caps)), reverse=True)
    if ratios and ratios[0][0] >= SIM_MIN_RATIO and ratios[0][0] - ratios[1][0] >= SIM_MIN_GAP:
        return ratios[0][1]
    return None


# ---------------------------------------------------------------------------- scoring


def caption_words(caption: str) -> int:
    """A caption's length in words: its whitespace tokens holding a letter or digit (SciCap's captions
    space their punctuation out: " , " and " ." are no words)."""
    return sum(1 for token in caption.split() if any(ch.isalnum() for ch in token))


def mean_figure_size(cells: Any) -> float | None:
    """The mean size of a C->F question's option figures (its ``Images`` cells), each sqrt(width x height)
    px (the side of a square of its area), to 0.1 px, read from their headers in place (no pixel decoded,
    no byte copied); None for no figures or one that cannot be read (the
    record check names it)."""
    if not isinstance(cells, (list, tuple)) or not cells:
        return None
    try:
        sizes = [math.sqrt(w * h) for w, h in (image_size(v, dataset="SciFIBench", record_id="?", field=f"Images[{i}]") for i, v in enumerate(cells))]
    except RecordError:
        return None
    return round(sum(sizes) / len(sizes), 1)


def figure8_facts(doc, direction: str, gold: str) -> dict[str, Any]:
    """What Fig. 8 bins a question by: F->C the correct caption's length in words (``caption_words``),
    C->F the options' mean figure size (``figure_size``, px: from :data:`SIZE_FIELD`, else the doc's
    figures when it was not tagged)."""
    if direction == "f2c":
        return {"caption_words": caption_words(caption_text(options_of(doc)[LETTERS.index(gold)]))}
    return {"figure_size": doc[SIZE_FIELD] if SIZE_FIELD in doc else mean_figure_size(doc.get("Images"))}


def _breakdown(doc, score, direction: str, facts: Mapping[str, Any]) -> dict:
    subset = "cs" if str(doc.get("_split", "")).startswith("CS") else "general"
    cat = str(doc.get("Category", "")).strip()
    if direction == "f2c":
        fig8 = {"length": range_label(facts["caption_words"], LENGTH_EDGES)}
    else:
        fig8 = {"size": range_label(facts["figure_size"], SIZE_EDGES)}
    labels = {"category": [cat] if cat else [], **{k: [v] if v else [] for k, v in fig8.items()}}
    out, _ = breakdown_scores(BREAKDOWN_PREFIX, score, labels, known_breakdowns(subset, direction))
    return out


def gold_letter(doc) -> str:
    gold = str(doc.get("Answer", "")).strip().upper()
    if len(gold) != 1 or gold not in LETTERS:
        raise RecordError(_dataset(doc), _rid(doc), "Answer", f"expected one letter A-E, got {doc.get('Answer')!r}")
    return gold


def check_record(doc, kwargs=None) -> None:
    """What prompting and scoring will read (:func:`core.adapter.task_data.validate_task` runs this on each record
    before inference): five options, the gold letter A-E, and the headers of the figure(s): one for
    F->C, five for C->F."""
    kw = _task_kwargs(kwargs)
    options_of(doc)
    gold_letter(doc)
    imgs = _image_cells(doc)
    if kw["direction"] == "c2f" and len(imgs) < 5:
        raise RecordError(_dataset(doc), _rid(doc), "Images", f"expected 5 candidate figures, got {len(imgs)}")
    for i, v in enumerate(imgs):
        check_image(v, dataset=_dataset(doc), record_id=_rid(doc), field=f"Images[{i}]")


@record_check(check_record)
def process_results(doc, results):
    """``scifibench_acc`` (staged extractor), the no-answer rate, accuracy per category and per Fig. 8 bin
    (caption length for F->C, mean figure size for C->F). Every doc counts: no extracted letter is wrong."""
    response = results[0] if results else ""
    gold = gold_letter(doc)
    direction = "c2f" if "Caption2Figure" in str(doc.get("_split", "")) else "f2c"
    got = extract(response, options_of(doc) if direction == "f2c" else None)
    correct = got.value == gold
    score = percent(correct)
    facts = figure8_facts(doc, direction, gold)
    out = _breakdown(doc, score, direction, facts)
    out[METRIC] = {"score": score, "id": _rid(doc), "split": doc.get("_split"), "category": doc.get("Category"), "gold": gold, "parsed": got.value or None, "stage": got.rule, **facts, "route": route_of(doc)}
    out[NO_ANSWER] = percent(not got.value)
    return with_paired_score(out, score)


# the paper's extractor prompt (code version, backslash-continuation spaces normalised; spec §3.4)
EXTRACTOR_PROMPT = 'Here is the output from a generative model:\n"{output}"\nThe output contains the answer to a multiple choice question with options A) - E). Return only the letter of the answer. If no answer is found, return "None".'


# the extractor's reply: markup and punctuation that may wrap the letter it was asked for
_WRAP_OPEN = r"[\s\"'\u201c\u201d\u2018\u2019`*_(\[{<]*"
_WRAP_CLOSE = r"[\s\"'\u201c\u201d\u2018\u2019`*_)\]}>.,;:!]*"
_JUDGE_BOLD_RE = re.compile(r"\*\*|__")
# the prompt's null token ("None") and its usual paraphrases
_JUDGE_NULL = r"(?:none|null|n/?a|no answer(?: (?:found|given))?)"
_JUDGE_NULL_RE = re.compile(rf"^\W*{_JUDGE_NULL}\W*$", re.I)
_JUDGE_LONE_RE = re.compile(rf"^{_WRAP_OPEN}([A-Ea-e]){_WRAP_CLOSE}$")
_JUDGE_LEAD_RE = re.compile(r"\banswer\b\s*(?:is|was|would be|should be)?\s*[:=\-]?\s*", re.I)
# after a lead: an upper-case letter not starting a word ("Correct"), or a lower-case one alone on its
# line ("answer: c", but not "the answer is a bar chart")
_JUDGE_LEAD_LETTER_RE = re.compile(rf"^{_WRAP_OPEN}(?:([A-E])(?![A-Za-z0-9])|([a-e]){_WRAP_CLOSE}(?:\n|$))")
_JUDGE_LEAD_NULL_RE = re.compile(rf"^{_WRAP_OPEN}{_JUDGE_NULL}(?![A-Za-z0-9])", re.I)
# "A or B", "B/D", "A, C": the reply names alternatives, not an answer
_JUDGE_ALTERNATIVE_RE = re.compile(rf"^[\s*_)\]}}\"'`]*(?:or|and|/|,|&)\s*{_WRAP_OPEN}[A-E](?![A-Za-z0-9])")


def parse_judge_letter(reply: str) -> str | None:
    """The letter the paper's extractor replied (it is asked for "only the letter of the answer", or
    "None" if there is none), upper-cased, or None for no answer.

    Read, in this order: the null token (``None``, ``N/A``, ``No answer``) -> None; else the last
    ``answer``-style lead (``Answer: B``, ``Extracted answer: (C)``, ``The answer is D``, ``Final
    answer: **E**``, lead case-insensitive) that is followed by a letter or the null token; else the
    lines that are a lone letter with markup or punctuation around it (``B``, ``(B)``, ``**B**``,
    ``"B"``, ``B.``), when they all name the same one. Anything else (``Correct``, ``A or B``, letters
    in prose, an empty reply) is no answer. A lower-case letter counts only alone on its line: the
    extractor was asked for nothing else, while "a" before a word is an article.

    No letter is a verdict of None, not a parse failure: like the paper's ``answer == item['Answer']``
    it scores wrong but is not counted in ``scifibench_judge_failed``, which stays for judge requests
    that failed."""
    text = _JUDGE_BOLD_RE.sub("", as_text(reply)).strip()
    if not text or _JUDGE_NULL_RE.match(text):
        return None
    for lead in reversed(list(_JUDGE_LEAD_RE.finditer(text))):
        rest = text[lead.end() :]
        m = _JUDGE_LEAD_LETTER_RE.match(rest)
        if m:
            return None if _JUDGE_ALTERNATIVE_RE.match(rest[m.end() :]) else (m.group(1) or m.group(2)).upper()
        if _JUDGE_LEAD_NULL_RE.match(rest):
            return None
        # a lead followed by prose ("the answer is the roc curves caption") decides nothing
    lone = {m.group(1).upper() for m in map(_JUDGE_LONE_RE.match, text.splitlines()) if m}
    return lone.pop() if len(lone) == 1 else None


JUDGE = JudgeSpec(
    name="scifibench",
    build=lambda doc, response, images: [{"role": "user", "content": EXTRACTOR_PROMPT.replace("{output}", response)}],
    parse=parse_judge_letter,
    settings={"max_tokens": 8},
)


@record_check(check_record)
@judged(JUDGE)
def process_results_judge(doc, results):
    """Adds ``scifibench_acc_judge``: the paper's LLM extractor (sees only the output) through the
    judge engine; the letter its reply gives (:func:`parse_judge_letter`), else no answer (wrong);
    judge failures counted and wrong."""
    out = process_results(doc, results)
    response = results[0] if results else ""
    outcome = outcome_for(JUDGE, doc, as_text(response))
    gold = out[METRIC]["gold"]
    score = None if outcome.status == UNAVAILABLE else percent(bool(outcome.ok and outcome.verdict == gold))
    out.update(judged_fields(JUDGE_METRIC, "scifibench_judge_failed", outcome, score))
    return with_paired_score(out, score)  # the LLM extractor's verdict: the judge variant's headline
