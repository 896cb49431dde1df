"""MuSciClaims: "Can Multimodal LLMs Verify Scientific Claims? MuSciClaims: Multimodal Scientific Claim
Verification" (Lal, Balasubramanian et al., arXiv 2506.04585). A claim, a figure and its caption: does
the figure SUPPORT or CONTRADICT the claim, or is it NEUTRAL (an unrelated figure of the same paper)?

What is specific to MuSciClaims lives here: the paper's prompts (Appendix F: the JSON family shown for
Sonnet, the "KEY: value" family shown for InternVL3) as exact constants, our minimal edits for the
caption-only / figure-only / text-hint diagnostics, the decision and panel parser, and the corpus
metrics (per-class and macro P/R/F1, 2-class weighted, flip rates over claim pairs, panel P/R/F1).
Figures are files in the dataset repo, served by :mod:`core.data.repo_files` (mirror or Hub, fetched once
per machine). Every metric is on a 0-100 scale (the paper prints F1 as 0-1: 0.77 here is 77.0).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.core.data import RecordError, check_image, record_check, require_columns
from lmms_eval_earthsci.core.data.repo_files import DecodedCache, fetch_columns, record_image, record_path, repo_files
from lmms_eval_earthsci.core.prompts.messages import fill_fields, note_chat, route_of
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.scoring.extraction import as_text, extract_json_object, strip_reasoning
from lmms_eval_earthsci.core.scoring.metrics import precision_recall_f1, set_precision_recall_f1
from lmms_eval_earthsci.core.settings import read_setting
from lmms_eval_earthsci.evals.musciclaims.benchmark import BENCHMARK, CLASSIFICATION_AGGREGATIONS, DATASET, DOMAINS, LOWER_IS_BETTER, METRIC, PANEL_AGGREGATIONS, PANEL_SLICE_DOMAINS, PANEL_SLICE_KEYS, SLICE_KEYS  # noqa: F401 - the names it had: still tasks.X

logger = logging.getLogger("lmms_eval_earthsci")

# The spec names the card commit only by its short hash (9134142, "Configured dataset to be displayed
# as test split"); the Hub needs a full sha to pin, so the tasks read `main` and record the commit they
# got (metadata.earthsci_data.repo_files.revision).
REVISION: str | None = None
CARD_COMMIT_SHORT = "9134142"
SPLIT = "test"

SUPPORT, NEUTRAL, CONTRADICT, INVALID = "SUPPORT", "NEUTRAL", "CONTRADICT", "INVALID"
LABELS = (SUPPORT, NEUTRAL, CONTRADICT)
NONSUPPORT = "NONSUPPORT"
# the known path bug: chemistry figures are stored as chem_10.1021_..., some rows say jacs_data_10.1021_...
PATH_REWRITES = (("jacs_data_10.1021_", "chem_10.1021_"),)

# the card's features (spec §2): field -> allowed types
SCHEMA: Mapping[str, tuple] = MappingProxyType({
    "base_claim_id": (str,),
    "claim_id": (str,),
    "claim_text": (str,),
    "label_3class": (str,),
    "label_2class": (str, type(None)),
    "paper_id": (str,),
    "associated_figure_filepath": (str,),
    "associated_figure_number": (str, int, type(None)),
    "associated_figure_panels": (list, tuple, type(None)),
    "caption": (str,),
    "claim_from_which_random_figure_is_taken": (str, type(None)),
    "domain": (str, type(None)),
})

PREFIX = "musciclaims"
INVALID_RATE = "musciclaims_invalid_rate"

# ---------------------------------------------------------------------------- prompts (spec §3.1)
# Wording verbatim from the paper's Appendix F, ASCII quotes, single newlines as the spec lays them out
# (the authors' later code doubles blank lines; exact whitespace is unverified). {claim}/{caption} are
# filled by str.replace: the templates contain literal braces.

JSON_D = """You are an AI model tasked with verifying claims related to visual evidence using zero-shot learning.
Your job is to analyze a given image(s) and its provided caption(s) to decide whether it SUPPORT or CONTRADICT or NEUTRAL the provided claim.

CLAIM: {claim}

IMAGE CAPTION(S): {caption}

Guidelines:
1. Evaluate the claim's plausibility based on visual elements within the image(s).
2. Consider the relevance, meaning, and implications of both the depicted content and the caption(s).
3. Analyze the broader context and scope of the image(s) and caption(s) in relation to the claim.

After completing your analysis, output exactly one JSON object with exactly one key: "decision".
- For "decision", output exactly one word \u2014 either "SUPPORT" or "CONTRADICT" or "NEUTRAL" (uppercase, no extra text).
Do NOT add markdown formatting, code fences, or any additional text. The output must start with an opening curly brace { and end with a closing curly brace }.

Example output format:
{"decision": "SUPPORT"}

Now, please evaluate the image(s) and caption(s) with respect to the claim provided above."""

JSON_RD = """You are an AI model tasked with verifying claims related to visual evidence using zero-shot learning.
Your job is to analyze a given image(s) and its provided caption(s) to decide whether it SUPPORT or CONTRADICT or NEUTRAL the provided claim.

CLAIM: {claim}

IMAGE CAPTION(S): {caption}

Guidelines:
1. Evaluate the claim's plausibility based on visual elements within the image(s).
2. Consider the relevance, meaning, and implications of both the depicted content and the caption(s).
3. Analyze the broader context and scope of the image(s) and caption(s) in relation to the claim.
4. Think step by step to reach your conclusion, but only provide a concise reasoning statement in the output.

After completing your analysis, output exactly one JSON object with exactly two keys in this order: "reasoning" and "decision".
- For "reasoning", provide a brief (one- or two-sentence) explanation of your analysis.
- For "decision", output exactly one word \u2014 either "SUPPORT" or "CONTRADICT" or "NEUTRAL" (uppercase, no extra text).
Do NOT add markdown formatting, code fences, or any additional text. The output must start with an opening curly brace { and end with a closing curly brace }.

Example output format:
{"reasoning": "The caption confirms the rising trend visible in the image, supporting the claim.", "decision": "SUPPORT"}

Now, please evaluate the image(s) and caption(s) with respect to the claim provided above."""

JSON_IRD = """You are an AI model tasked with verifying claims related to visual evidence using zero-shot learning.
Your job is to analyze a given image(s) and its provided caption(s) to decide whether it SUPPORT or CONTRADICT or NEUTRAL the provided claim.

CLAIM: {claim}

IMAGE CAPTION(S): {caption}

Guidelines:
1. Evaluate the claim's plausibility based on visual elements within the image(s).
2. Consider the relevance, meaning, and implications of both the depicted content and the caption(s).
3. Analyze the broader context and scope of the image(s) and caption(s) in relation to the claim.
4. Identify which specific panels (e.g., Panel A, Panel B, Panel C, etc.) are necessary to evaluate the claim.
5. Think step by step to reach your conclusion and provide it in a concise manner in the output.

After completing your analysis, output exactly one JSON object with exactly three keys in this order: "figure_panels", "reasoning", and "decision".
- For "figure_panels", list ONLY the names or labels of the panels needed to evaluate the claim (e.g., ["Panel A", "Panel C"]) with no further description. If no panels are needed, return [].
- For "reasoning", provide a brief (one- or two-sentence) explanation of your analysis.
- For "decision", output exactly one word \u2014 either "SUPPORT" or "CONTRADICT" or "NEUTRAL" (uppercase, no extra text).
Do NOT add markdown formatting, code fences, or any additional text. The output must start with an opening curly brace { and end with a closing curly brace }.

Example output format:
{"figure_panels": ["Panel A", "Panel C"], "reasoning": "The trend in Panel A aligns with the claim, while Panel C corroborates the effect.", "decision": "SUPPORT"}

Now, please evaluate the image(s) and caption(s) with respect to the claim provided above."""

KV_D = """This is an image from a scientific paper. The following is the caption of the image.
IMAGE CAPTION(S): {caption}
Using this image, analyze whether the following claim is supported, contradicted or neutral according to the image and caption.
CLAIM: {claim}
Reply with one of the following keywords: SUPPORT, CONTRADICT, NEUTRAL. Do not generate any other text or explanation.
Return your answer in following format:
DECISION: <your decision>"""

KV_RD = """This is an image from a scientific paper. The following is the caption of this image.
IMAGE CAPTION(S): {caption}
Using this image, analyze whether the following claim is supported, contradicted or neutral according to the image and caption.
CLAIM: {claim}
Think step by step to reach your conclusion and then reply with only one of the following keywords: SUPPORT, CONTRADICT, NEUTRAL. Your reasoning should be brief and concise, no more than 100 words.
Return your answer in following format:
REASONING: <your reasoning>
DECISION: <your decision>"""

KV_IRD = """This is an image, with multiple panels, from a scientific paper. The following is the caption of this image.
IMAGE CAPTION(S): {caption}
Using this image, analyze whether the following claim is supported, contradicted or neutral according to the image and caption.
CLAIM: {claim}
First identify the relevant panels (Figure A, Figure B etc.) in the image that are needed to analyze the claim. \
Then think step by step to reach your conclusion and reply with only one of the following keywords: SUPPORT, CONTRADICT, NEUTRAL. Your reasoning should be brief and concise, no more than 100 words.
Return your answer in following format:
FIGURE PANELS: <the figure panels to use for deduction>
REASONING: <your reasoning>
DECISION: <your decision>"""

TEMPLATES = MappingProxyType({("json", "d"): JSON_D, ("json", "rd"): JSON_RD, ("json", "ird"): JSON_IRD, ("kv", "d"): KV_D, ("kv", "rd"): KV_RD, ("kv", "ird"): KV_IRD})

# Ours (the paper gives no prompt for these; spec §3.1): the minimal edits of the JSON prompts.
# Caption only: the task sentence no longer mentions the image; no image is sent.
CAPTION_ONLY_EDIT = ("image(s) and its provided caption(s)", "caption(s)")
# Figure only: the caption line (and the blank line after it) is dropped.
CAPTION_LINE = "IMAGE CAPTION(S): {caption}\n\n"
# THRD: the gold panels as a text hint after the CLAIM line, then RD.
HINT_LINE = "RELEVANT PANELS: {panels}\n\n"
CLAIM_LINE = "CLAIM: {claim}\n\n"

SETTINGS = ("d", "rd", "ird", "thrd")
FAMILIES = ("json", "kv")
INPUTS = ("figure+caption", "caption", "figure")
# inline figure references a claim may still carry (the authors' cleaning regex, spec §2, errata)
FIGURE_REF_RE = re.compile(r"\b(?:Fig\.?|Figure|Table)s?\s*\d+[A-Za-z]?", re.I)
MAX_PIXELS_ENV = "EARTHSCI_MUSCICLAIMS_MAX_PIXELS"


def _task_kwargs(kwargs) -> dict:
    kw = dict(kwargs or {})
    kw.setdefault("prompt", "d")
    kw.setdefault("family", "json")
    kw.setdefault("inputs", "figure+caption")
    for key, allowed in (("prompt", SETTINGS), ("family", FAMILIES), ("inputs", INPUTS)):
        if kw[key] not in allowed:
            raise ValueError(f"MuSciClaims {key} must be one of {', '.join(allowed)}, got {kw[key]!r}")
    if kw["inputs"] != "figure+caption" and (kw["family"] != "json" or kw["prompt"] not in ("d", "rd")):
        raise ValueError("MuSciClaims caption-only / figure-only prompts exist for the JSON family, D and RD only")
    if kw["prompt"] == "thrd" and kw["family"] != "json":
        raise ValueError("MuSciClaims THRD exists for the JSON family only")
    env = read_setting(MAX_PIXELS_ENV)
    kw["max_pixels"] = int(env) if env else (int(kw["max_pixels"]) if kw.get("max_pixels") else None)
    return kw


def template(kw: Mapping[str, Any]) -> str:
    """The prompt template of a task's settings, placeholders unfilled."""
    if kw["prompt"] == "thrd":
        return JSON_RD.replace(CLAIM_LINE, CLAIM_LINE + HINT_LINE, 1)
    text = TEMPLATES[(kw["family"], kw["prompt"])]
    if kw["inputs"] == "caption":
        text = text.replace(*CAPTION_ONLY_EDIT)
    elif kw["inputs"] == "figure":
        text = text.replace(CAPTION_LINE, "")
    return text


def _rid(doc) -> str:
    return str(doc.get("claim_id", "<no claim_id>"))


def claim_text(doc, kw) -> str:
    claim = str(doc.get("claim_text") or "").strip()
    if kw.get("strip_figure_refs"):
        claim = re.sub(r"\(\s*[,;]?\s*\)", "", FIGURE_REF_RE.sub("", claim))
        claim = re.sub(r"\s{2,}", " ", claim).replace(" .", ".").strip()
    return claim


def gold_panels(doc) -> list[str]:
    return [str(p) for p in (doc.get("associated_figure_panels") or [])]


def prompt_text(doc, kw: Mapping[str, Any]) -> str:
    """The prompt of ``doc`` under a task's settings (as :func:`_task_kwargs` returns them), filled in one
    pass: a claim or caption that quotes ``{caption}`` or ``{claim}`` stays as written."""
    text = template(kw)
    values = {"caption": str(doc.get("caption") or "").strip(), "claim": claim_text(doc, kw)}
    if kw["prompt"] == "thrd":
        panels = gold_panels(doc)
        if panels:
            values["panels"] = ", ".join(panels)
        else:
            text = text.replace(HINT_LINE, "")
    return fill_fields(text, values)


# ---------------------------------------------------------------------------- figures


def _store():
    return repo_files(DATASET, REVISION, PATH_REWRITES)


FIGURE_FIELD = "associated_figure_filepath"


def _decoded() -> DecodedCache:
    """The figures this process decoded lately (a claim's SUPPORT and CONTRADICT rows show one figure), held
    by the runtime."""
    return current().resource(("decoded_images", "musciclaims"), lambda: DecodedCache(maxsize=4))


def figure_path(doc) -> str:
    return record_path(_store(), doc, FIGURE_FIELD, dataset=DATASET, record_id=_rid(doc), what="figure")


def figure(doc, kw) -> Any:
    return record_image(_store(), _decoded(), doc, FIGURE_FIELD, dataset=DATASET, record_id=_rid(doc), what="figure", max_pixels=kw.get("max_pixels"))


def _visuals(doc, kw) -> list:
    return [] if kw["inputs"] == "caption" else [figure(doc, kw)]


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    """One user turn: the figure, then the prompt (no image for caption-only). No system prompt."""
    kw = _task_kwargs(lmms_eval_specific_kwargs)
    note_chat(doc)
    content = [{"type": "image", "url": img} for img in _visuals(doc, kw)]
    content.append({"type": "text", "text": prompt_text(doc, kw)})
    return [{"role": "user", "content": content}]


def doc_to_visual(doc, lmms_eval_specific_kwargs=None):
    """Simple backends: the figure (none for caption-only); the backend places it before the text."""
    return _visuals(doc, _task_kwargs(lmms_eval_specific_kwargs))


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return prompt_text(doc, _task_kwargs(lmms_eval_specific_kwargs))


def doc_to_target(doc, model_specific_target_kwargs=None):
    return str(doc.get("label_3class", ""))


# ---------------------------------------------------------------------------- the parser (spec §3.2)

_LABEL_WORDS = MappingProxyType({
    "SUPPORT": SUPPORT,
    "SUPPORTS": SUPPORT,
    "SUPPORTED": SUPPORT,
    "CONTRADICT": CONTRADICT,
    "CONTRADICTS": CONTRADICT,
    "CONTRADICTED": CONTRADICT,
    "CONTRADICTION": CONTRADICT,
    "REFUTE": CONTRADICT,
    "REFUTES": CONTRADICT,
    "REFUTED": CONTRADICT,
    "NEUTRAL": NEUTRAL,
    "NOT ENOUGH INFO": NEUTRAL,
})
_WORD_ALT = "|".join(sorted((re.escape(w).replace(r"\ ", r"\s+") for w in _LABEL_WORDS), key=len, reverse=True))
_KEYWORD_RE = re.compile(rf"(?<![A-Za-z])({_WORD_ALT})(?![A-Za-z])", re.I)
_JSON_DECISION_RE = re.compile(r'"decision"\s*:\s*"?\s*(SUPPORT|CONTRADICT|NEUTRAL)', re.I)
_KV_DECISION_RE = re.compile(r"DECISION\**\s*[:\uff1a]\s*[*\s]*(SUPPORT|CONTRADICT|NEUTRAL)", re.I)
_KV_PANELS_RE = re.compile(r"FIGURE\s+PANELS?\s*[:\uff1a]\s*(.*)", re.I)
_JSON_PANELS_RE = re.compile(r'"figure_panels"\s*:\s*\[(.*?)\]', re.I | re.S)
_NEGATION_RE = re.compile(r"(?:\bnot|n't|\bno|\bneither|\bnor|\bnever)\s+(?:\w+\s+)?$", re.I)
_MARKUP_RE = re.compile(r"[\s*_`'\".:;!,()\[\]{}<>#-]+")


def _label_word(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return _LABEL_WORDS.get(" ".join(_MARKUP_RE.sub(" ", value).upper().split()))


@dataclass(frozen=True)
class Parsed:
    """``value``: SUPPORT/NEUTRAL/CONTRADICT or INVALID; ``rule``: the stage that fired; ``panels``: the
    panel names the answer gave (IRD), as written."""

    value: str
    rule: str
    panels: tuple = ()


def parse_response(response: Any) -> Parsed:
    """The decision a response gives, and the stage that read it (spec §3.2):

    1. ``<think>`` blocks and code fences removed;
    2. ``json``: the JSON object's ``decision`` (a keyword variant is accepted: ``Supported`` ->
       SUPPORT); a ``decision`` that names no label is ``decision-unrecognized`` (INVALID: the model
       decided, and not one of the labels);
    3. ``json-regex``: ``"decision": "LABEL"`` in text that is not valid JSON;
    4. ``kv``: the last ``DECISION: LABEL``;
    5. ``keyword-whole``: the whole answer is a label or a variant (``Supported.``, ``**NEUTRAL**``);
    6. ``keyword-last``: the last upper-case label word (the prompts ask for upper case), else the last
       label word in any case that is not negated ("does not support" is skipped);
    7. else INVALID (``none``; ``empty`` for no output, ``reasoning-only`` when the output is all
       reasoning block, e.g. cut off by the token limit).

    Never raises."""
    text = strip_reasoning(response)
    obj = extract_json_object(text)
    panels = _panels_of(text, obj)
    if not text:
        return Parsed(INVALID, "empty" if not as_text(response).strip() else "reasoning-only", panels)
    if obj.found:
        keys = {str(k).strip().lower(): v for k, v in obj.value.items()}
        if "decision" in keys:
            label = _label_word(keys["decision"])
            return Parsed(label, "json", panels) if label else Parsed(INVALID, "decision-unrecognized", panels)
    m = _JSON_DECISION_RE.search(text)
    if m:
        return Parsed(m.group(1).upper(), "json-regex", panels)
    kv = list(_KV_DECISION_RE.finditer(text))
    if kv:
        return Parsed(kv[-1].group(1).upper(), "kv", panels)
    whole = _label_word(text)
    if whole:
        return Parsed(whole, "keyword-whole", panels)
    hits = list(_KEYWORD_RE.finditer(text))
    upper = [h for h in hits if h.group(1) == h.group(1).upper()]
    if upper:
        return Parsed(_label_word(upper[-1].group(1)), "keyword-last", panels)
    plain = [h for h in hits if not _NEGATION_RE.search(text[max(0, h.start() - 40) : h.start()])]
    if plain:
        return Parsed(_label_word(plain[-1].group(1)), "keyword-last", panels)
    return Parsed(INVALID, "none", panels)


def _panels_of(text: str, obj) -> tuple:
    """The panels an IRD answer names: the JSON ``figure_panels`` list (or string) of ``obj`` (the
    answer's JSON object, as :func:`parse_response` extracted it), else the list in a broken-JSON
    ``"figure_panels": [...]``, else the ``FIGURE PANELS:`` line split on ``,``, ``;`` and ``and``."""
    if obj.found:
        for k, v in obj.value.items():
            if str(k).strip().lower() == "figure_panels":
                if isinstance(v, (list, tuple)):
                    return tuple(str(x).strip() for x in v if str(x).strip())
                if isinstance(v, str):
                    return _split_panel_line(v)
    m = _JSON_PANELS_RE.search(text)
    if m:
        return _split_panel_line(m.group(1))
    lines = list(_KV_PANELS_RE.finditer(text))
    if lines:
        return _split_panel_line(lines[-1].group(1))
    return ()


def _split_panel_line(line: str) -> tuple:
    parts = (p.strip().strip("\"'[]*").strip() for p in re.split(r",|;|\band\b|&", line.strip()))
    return tuple(p for p in parts if p)


# ---------------------------------------------------------------------------- panels (spec §3.3)

_WHOLE_FIGURE_RE = re.compile(r"^\s*(?:all(?:\s+(?:the\s+)?panels?)?|full\s+figure|whole\s+figure|entire\s+figure|no\s+panel\s+markings?|single\s+panel|none|n/?a)\s*$", re.I)
_PANEL_WORD_RE = re.compile(r"\b(?:panels?|subfig(?:ure)?s?|sub-?panels?|inset)\b", re.I)
_RANGE_RE = re.compile(r"(?<![A-Za-z])([A-Za-z])\s*(?:-|\u2013|\u2014|to|through)\s*([A-Za-z])(?![A-Za-z])")
_LETTER_RE = re.compile(r"(?<![A-Za-z])([A-Za-z])(?![A-Za-z])")


def normalize_panels(values: Iterable[Any]) -> tuple[frozenset[str], bool]:
    """``(letters, whole_figure)`` from panel names as gold data or a model writes them: "Panel A",
    "A", "(a)", "panel a", "Figure 2C", "Fig. 2a", "Figure A" (the KV prompt's wording), ranges
    "A-C"/"A–C"/"A to C", lists "A, B and D". Values that mean the whole figure ("ALL Panels", "Full
    Figure", "No panel markings", "Figure 3" without a letter) set ``whole_figure``."""
    letters: set[str] = set()
    whole = False
    for raw in values:
        s = str(raw).strip()
        if not s:
            continue
        if _WHOLE_FIGURE_RE.match(s):
            whole = True
            continue
        s = _PANEL_WORD_RE.sub(" ", s)
        # "Figure 2C" -> " C"; "Figure A" -> " A"
        s = re.sub(r"(?i)\bfig(?:ure)?s?\.?\s*\d+\s*(?=[A-Za-z](?![A-Za-z]))", " ", s)
        bare_fig = bool(re.fullmatch(r"(?i)\s*fig(?:ure)?s?\.?\s*\d+\s*", s))
        s = re.sub(r"(?i)\bfig(?:ure)?s?\b\.?", " ", s)
        s = re.sub(r"(?i)\b(?:and|or|the|of)\b", ",", s)
        found = set()
        for m in _RANGE_RE.finditer(s):
            a, b = m.group(1).upper(), m.group(2).upper()
            if a <= b and ord(b) - ord(a) < 26:
                found.update(chr(c) for c in range(ord(a), ord(b) + 1))
        s = _RANGE_RE.sub(" ", s)
        found.update(m.group(1).upper() for m in _LETTER_RE.finditer(s))
        if found:
            letters |= found
        elif bare_fig:
            whole = True
    return frozenset(letters), whole


# Table 7's split (the paper does not say how it classed a figure; our proxy, README): gold panels naming a
# panel letter, or all panels, mean a multi-panel figure; gold values that say the figure has no panels
# ("No panel markings", "Full Figure", a bare "Figure 3") a single-panel one
_SINGLE_PANEL_RE = re.compile(r"^\s*(?:no\s+panel\s+markings?|(?:full|whole|entire)\s+figure|single\s+panel|fig(?:ure)?s?\.?\s*\d+)\s*$", re.I)
_ALL_PANELS_RE = re.compile(r"^\s*all(?:\s+(?:the\s+)?panels?)?\s*$", re.I)
SINGLE_PANEL, MULTI_PANEL = "single", "multi"


def panel_class(values: Iterable[Any] | None) -> str | None:
    """``single`` / ``multi`` from a row's gold panels (``associated_figure_panels``), None when they do
    not tell (empty, or values such as "None" that name neither panels nor the whole figure)."""
    values = [str(v).strip() for v in values or () if str(v).strip()]
    letters, _ = normalize_panels(values)
    if letters or any(_ALL_PANELS_RE.match(v) for v in values):
        return MULTI_PANEL
    if any(_SINGLE_PANEL_RE.match(v) for v in values):
        return SINGLE_PANEL
    return None


# ---------------------------------------------------------------------------- records


def variant_of(doc) -> str:
    """``support`` / ``contra`` / ``neutral`` from the claim_id suffix (ids contain ``_`` and ``.``:
    rsplit), else from the label."""
    suffix = _rid(doc).rsplit("_", 1)[-1].lower()
    if suffix in ("support", "contra", "neutral"):
        return suffix
    return {SUPPORT: "support", CONTRADICT: "contra", NEUTRAL: "neutral"}.get(str(doc.get("label_3class")), "?")


_DOMAIN_WORDS = MappingProxyType({"biology": "biology", "bio": "biology", "life sciences": "biology", "life science": "biology", "chemistry": "chemistry", "chem": "chemistry", "physics": "physics", "phys": "physics"})


def domain_of(doc) -> tuple[str, str]:
    """``(domain, source)``: the ``domain`` field when it names one of biology/chemistry/physics (exact
    strings unverified), else from the paper id: ``PIIS...`` (Cell) biology, ``10.1021_...`` (JACS)
    chemistry, ``s41567_...`` (Nature Physics) physics; ``other`` when neither tells."""
    d = _DOMAIN_WORDS.get(" ".join(str(doc.get("domain") or "").lower().replace("_", " ").split()))
    if d:
        return d, "field"
    ident = str(doc.get("paper_id") or doc.get("base_claim_id") or _rid(doc))
    if ident.upper().startswith("PII"):
        return "biology", "id"
    if ident.startswith("10.1021") or "jacs" in ident.lower():
        return "chemistry", "id"
    if ident.startswith("s41567"):
        return "physics", "id"
    return "other", "id"


def check_schema(dataset) -> None:
    """Every field of the card's schema is a column (one error naming the missing ones)."""
    require_columns(dataset, SCHEMA, dataset=DATASET, where="the rows: the dataset's schema differs from the card's")


def _figures_needed(kw) -> bool:
    return kw["inputs"] != "caption"


def prepare(dataset, kwargs) -> None:
    """Before the records are checked: the schema, the figure-reference count (logged), and every figure
    the split names fetched at once (:meth:`RepoFiles.fetch`: once per machine, in parallel)."""
    kw = _task_kwargs(kwargs)
    check_schema(dataset)
    texts = dataset["claim_text"] if hasattr(dataset, "column_names") else [r.get("claim_text") for r in dataset]
    refs = sum(1 for t in texts if FIGURE_REF_RE.search(str(t or "")))
    if refs:
        logger.info(
            "lmms_eval_earthsci: MuSciClaims: %d of %d claims carry an inline figure reference (e.g. 'Figure 2A')%s",
            refs, len(texts), "; stripped (strip_figure_refs)" if kw.get("strip_figure_refs") else "; kept as the release has them",
        )
    if _figures_needed(kw):
        fetch_columns(_store(), dataset, [FIGURE_FIELD])


def describe(kwargs=None) -> dict:
    return _store().summary()


def check_record(doc, kwargs=None) -> None:
    """What prompting and scoring read: the schema's fields and types, a known label, the figure (found,
    fetched, its header readable) unless the task is caption-only."""
    kw = _task_kwargs(kwargs)
    for name, types in SCHEMA.items():
        if name not in doc:
            raise RecordError(DATASET, _rid(doc), name, "missing")
        if not isinstance(doc[name], types):
            raise RecordError(DATASET, _rid(doc), name, f"expected {'/'.join(t.__name__ for t in types)}, got {type(doc[name]).__name__}")
    if doc["label_3class"] not in LABELS:
        raise RecordError(DATASET, _rid(doc), "label_3class", f"expected one of {', '.join(LABELS)}, got {doc['label_3class']!r}")
    if _figures_needed(kw):
        path = figure_path(doc)
        check_image(path, dataset=DATASET, record_id=_rid(doc), field=FIGURE_FIELD)


def _panel_score(doc, parsed: Parsed) -> dict | None:
    """Per-doc panel P/R/F1 (fractions) for a SUPPORT/CONTRADICT doc whose gold names panels; None for
    NEUTRAL docs (their figure is another one) and for whole-figure or empty golds (excluded, counted)."""
    if doc.get("label_3class") == NEUTRAL:
        return None
    gold, _ = normalize_panels(gold_panels(doc))
    if not gold:
        return None
    pred, _ = normalize_panels(parsed.panels)  # "all panels" names no panel: scored as an empty prediction
    p, r, f = set_precision_recall_f1(pred, gold)
    return {"p": p, "r": r, "f": f, "tp": len(pred & gold), "n_pred": len(pred), "n_gold": len(gold)}


def _compact(rec: Mapping[str, Any]) -> list:
    """What every corpus metric needs of a doc, small (it is logged once per metric): gold, pred, base
    claim, variant, domain, panel class."""
    return [rec["gold"], rec["pred"], rec["base_claim_id"], rec["variant"], rec["domain"], rec["panel_class"]]


@record_check(check_record, prepare=prepare, describe=describe)
def process_results(doc, results):
    """Per-doc records for the corpus metrics. Any output is scored: no decision is INVALID (a miss for
    its gold class, nobody's false positive), every doc is in every denominator."""
    return _scored(doc, parse_response(results[0] if results else ""))


def _scored(doc, parsed: Parsed) -> dict:
    """The decision metrics' values of one doc, from its parsed answer."""
    domain, domain_source = domain_of(doc)
    rec = {
        "claim_id": _rid(doc),
        "base_claim_id": str(doc.get("base_claim_id") or _rid(doc).rsplit("_", 1)[0]),
        "variant": variant_of(doc),
        "gold": str(doc.get("label_3class")),
        "pred": parsed.value,
        "stage": parsed.rule,
        "domain": domain,
        "domain_source": domain_source,
        "panel_class": panel_class(gold_panels(doc)),
        "route": route_of(doc),
    }
    compact = _compact(rec)
    out: dict[str, Any] = {name: compact for name in CLASSIFICATION_METRICS}
    out[METRIC] = rec
    return out


@record_check(check_record, prepare=prepare, describe=describe)
def process_results_ird(doc, results):
    """IRD: the decision metrics of :func:`process_results` and the panel P/R/F1 (per doc; None for the
    docs that are not scored: NEUTRAL, whole-figure or empty gold)."""
    parsed = parse_response(results[0] if results else "")
    out = _scored(doc, parsed)
    rec = out[METRIC]
    rec["panels_pred"], rec["panels_gold"] = list(parsed.panels), gold_panels(doc)
    panel = _panel_score(doc, parsed)
    rec["panel_scored"] = panel is not None
    for name in PANEL_METRICS:
        out[name] = panel
    return out


# ---------------------------------------------------------------------------- corpus metrics


def record_rows(items: Iterable[Any]) -> list[tuple]:
    """(gold, pred, base, variant, domain, panel class) from full records or their compact form (a record
    logged before the panel class was: None, in neither panel slice)."""
    out = []
    for it in items:
        if isinstance(it, Mapping):
            out.append((it.get("gold"), it.get("pred"), it.get("base_claim_id"), it.get("variant"), it.get("domain"), it.get("panel_class")))
        elif isinstance(it, (list, tuple)) and len(it) >= 5:
            out.append((*it[:5], it[5] if len(it) > 5 else None))
    return out


def panel_classes(rows: list[tuple]) -> list[str | None]:
    """Each row's class for Table 7: its own, except a NEUTRAL row's, which is its base claim's (the class
    of that claim's SUPPORT row, else its CONTRADICT row, when the run has them; else its own). A NEUTRAL
    row shows another figure of the paper, of which nothing tells the panels: the split is by claim."""
    base: dict = {}
    for r in rows:
        if r[3] in ("support", "contra") and r[5] is not None and (r[3] == "support" or r[2] not in base):
            base[r[2]] = r[5]
    return [base.get(r[2], r[5]) if r[3] == "neutral" else r[5] for r in rows]


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def classification(items: Iterable[Any], domain: str | None = None, panels: str | None = None) -> dict[str, float]:
    """Per-class and macro P/R/F1 over the 3 labels (fractions) on the docs of ``domain`` and of the
    panel class ``panels`` (:func:`panel_classes`), if given; INVALID is nobody's prediction."""
    rows = record_rows(items)
    if panels is not None:
        rows = [r for r, c in zip(rows, panel_classes(rows)) if c == panels]
    rows = [r for r in rows if domain is None or r[4] == domain]
    return precision_recall_f1([r[0] for r in rows], [r[1] for r in rows], LABELS) if rows else {}


def two_class(items: Iterable[Any]) -> dict[str, float]:
    """Table 6: NEUTRAL and CONTRADICT merged into NONSUPPORT (gold and predicted; INVALID stays a miss),
    per-class P/R/F1 and the support-weighted averages."""
    merge = {SUPPORT: SUPPORT, NEUTRAL: NONSUPPORT, CONTRADICT: NONSUPPORT}
    rows = record_rows(items)
    return precision_recall_f1([merge.get(r[0], r[0]) for r in rows], [merge.get(r[1], INVALID) for r in rows], (SUPPORT, NONSUPPORT)) if rows else {}


def flips(items: Iterable[Any]) -> dict[str, Any]:
    """Over the (support, contra) pairs of a base claim that are both in the run: how often the
    prediction changes (the paper's sensitivity), and how often it is SUPPORT then CONTRADICT. An
    INVALID answer is a prediction like any other (two INVALIDs do not change)."""
    pairs: dict[str, dict[str, str]] = {}
    for _gold, pred, base, variant, *_ in record_rows(items):
        if variant in ("support", "contra"):
            pairs.setdefault(str(base), {})[variant] = pred
    complete = [p for p in pairs.values() if len(p) == 2]
    n = len(complete)
    changed = sum(1 for p in complete if p["support"] != p["contra"])
    correct = sum(1 for p in complete if p["support"] == SUPPORT and p["contra"] == CONTRADICT)
    return {"pairs": n, "unpaired": len(pairs) - n, "flip_rate": changed / n if n else None, "correct_flip_rate": correct / n if n else None}


def _slice_metric(key: str, domain: str | None = None, panels: str | None = None):
    """A metric of :func:`classification` on the docs of ``domain`` and of the panel class ``panels``
    (every doc without either); None when the run has none of them."""

    def agg(items):
        return _pct(classification(items, domain, panels).get(key))

    agg.__name__ = f"musciclaims_{key}" + (f"_{panels}_panel" if panels else "") + (f"_{domain}" if domain else "")
    return agg


def macro_f1(items):
    """``musciclaims_macro_f1``: the mean of the three per-class F1 (the paper's "Overall" F), not the
    harmonic mean of macro P and R. Logs the run's parse stages, INVALID and domain-fallback counts."""
    items = list(items)
    _log_summary(items)
    return _pct(classification(items).get("macro_f1"))


macro_precision = _slice_metric("macro_precision")
macro_recall = _slice_metric("macro_recall")
precision_support = _slice_metric("precision_support")
recall_support = _slice_metric("recall_support")
f1_support = _slice_metric("f1_support")
precision_neutral = _slice_metric("precision_neutral")
recall_neutral = _slice_metric("recall_neutral")
f1_neutral = _slice_metric("f1_neutral")
precision_contradict = _slice_metric("precision_contradict")
recall_contradict = _slice_metric("recall_contradict")
f1_contradict = _slice_metric("f1_contradict")


def invalid_rate(items):
    rows = record_rows(items)
    return _pct(sum(1 for r in rows if r[1] not in LABELS) / len(rows)) if rows else None


def _two_class_metric(key: str):
    def agg(items):
        return _pct(two_class(items).get(key))

    agg.__name__ = f"musciclaims_2class_{key}"
    return agg


two_class_weighted_precision = _two_class_metric("weighted_precision")
two_class_weighted_recall = _two_class_metric("weighted_recall")
two_class_weighted_f1 = _two_class_metric("weighted_f1")
two_class_f1_support = _two_class_metric("f1_support")
two_class_f1_nonsupport = _two_class_metric("f1_nonsupport")
two_class_precision_support = _two_class_metric("precision_support")
two_class_recall_support = _two_class_metric("recall_support")
two_class_precision_nonsupport = _two_class_metric("precision_nonsupport")
two_class_recall_nonsupport = _two_class_metric("recall_nonsupport")


def flip_rate(items):
    return _pct(flips(items)["flip_rate"])


def correct_flip_rate(items):
    return _pct(flips(items)["correct_flip_rate"])


macro_f1_biology = _slice_metric("macro_f1", "biology")
macro_f1_chemistry = _slice_metric("macro_f1", "chemistry")
macro_f1_physics = _slice_metric("macro_f1", "physics")
# the rest of Table 1 on each domain (``precision_support_biology`` ...): the names benchmark.py declares
for _domain in DOMAINS:
    for _key in SLICE_KEYS:
        globals()[f"{_key}_{_domain}"] = _slice_metric(_key, _domain)


# ``macro_f1_single_panel``, ``macro_recall_multi_panel_biology`` ...: the names benchmark.py declares
for _panels in (SINGLE_PANEL, MULTI_PANEL):
    for _key in PANEL_SLICE_KEYS:
        for _domain in (None, *PANEL_SLICE_DOMAINS):
            globals()[f"{_key}_{_panels}_panel" + (f"_{_domain}" if _domain else "")] = _slice_metric(_key, _domain, _panels)


def panels(items: Iterable[Any]) -> dict[str, Any]:
    """Panel localization over the scored docs: per-example P/R/F1 averaged (the headline), and the
    micro-averaged P/R/F1 (logged)."""
    scored = [i for i in items if isinstance(i, Mapping)]
    n = len(scored)
    if not n:
        return {"n": 0, "precision": None, "recall": None, "f1": None}
    tp, n_pred, n_gold = (sum(i[k] for i in scored) for k in ("tp", "n_pred", "n_gold"))
    mp = tp / n_pred if n_pred else 0.0
    mr = tp / n_gold if n_gold else 0.0
    return {
        "n": n,
        "precision": sum(i["p"] for i in scored) / n,
        "recall": sum(i["r"] for i in scored) / n,
        "f1": sum(i["f"] for i in scored) / n,
        "micro_precision": mp,
        "micro_recall": mr,
        "micro_f1": 2 * mp * mr / (mp + mr) if mp + mr else 0.0,
    }


def panel_precision(items):
    return _pct(panels(items)["precision"])


def panel_recall(items):
    return _pct(panels(items)["recall"])


def panel_f1(items):
    items = list(items)
    got = panels(items)
    logger.info(
        "lmms_eval_earthsci: MuSciClaims panels: %d of %d docs scored (NEUTRAL, whole-figure and empty golds excluded); micro P/R/F1 %s",
        got["n"], len(items), "/".join(f"{100 * got[k]:.1f}" for k in ("micro_precision", "micro_recall", "micro_f1")) if got["n"] else "n/a",
    )
    return _pct(got["f1"])


def _log_summary(items: list) -> None:
    recs = [i for i in items if isinstance(i, Mapping)]
    stages = Counter(r.get("stage") for r in recs)
    fallback = sum(1 for r in recs if r.get("domain_source") == "id")
    fl = flips(recs)
    panels = Counter(panel_classes(record_rows(recs)))
    logger.info(
        "lmms_eval_earthsci: MuSciClaims: %d docs; parse stages %s; INVALID %d; domain from the id prefix for %d; %d support/contra pairs (%d unpaired); "
        "single-panel %d, multi-panel %d, in neither (gold panels tell nothing) %d",
        len(recs), dict(stages), sum(1 for r in recs if r.get("pred") == INVALID), fallback, fl["pairs"], fl["unpaired"],
        panels[SINGLE_PANEL], panels[MULTI_PANEL], panels[None],
    )


# metric name -> aggregation (process_results reads these; benchmark.py names the functions for the YAML generator)
CLASSIFICATION_METRICS: Mapping[str, Any] = MappingProxyType({name: globals()[fn] for name, fn in CLASSIFICATION_AGGREGATIONS.items()})
PANEL_METRICS: Mapping[str, Any] = MappingProxyType({name: globals()[fn] for name, fn in PANEL_AGGREGATIONS.items()})
