"""Reading answers out of model output.

Every extractor returns an :class:`Extracted` that names the rule that fired, so a logged sample shows
why an answer was read as it was. Extractors never raise on odd input (None, huge strings, broken
JSON, lone surrogates): they return ``Extracted(None, "none")``.

Benchmark modules compose these building blocks into the authors' exact pipelines; the building
blocks themselves carry no benchmark-specific quirk.
"""

from __future__ import annotations

import functools
import json
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Extracted:
    value: Any
    rule: str

    @property
    def found(self) -> bool:
        return self.value is not None and self.value != ""


NOTHING = Extracted(None, "none")


def as_text(response: Any) -> str:
    """Model output as a ``str`` whatever it was (None, bytes, numbers)."""
    if response is None:
        return ""
    if isinstance(response, bytes):
        return response.decode("utf-8", errors="replace")
    return response if isinstance(response, str) else str(response)


def option_letters(n: int) -> str:
    """The first ``n`` option letters: 4 -> ``"ABCD"``."""
    if not 0 <= n <= 26:
        raise ValueError(f"option count out of range: {n}")
    return string.ascii_uppercase[:n]


# --------------------------------------------------------------------------- JSON objects

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")
# a backslash that does not start a valid JSON escape
_STRAY_BACKSLASH_RE = re.compile(r'\\(?!["\\/bfnrtu])')


def _outer_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (strings respected), or from the first ``{`` to the
    last ``}`` when braces do not balance."""
    start = text.find("{")
    if start < 0:
        return None
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    end = text.rfind("}")
    return text[start : end + 1] if end > start else None


def _single_to_double_quotes(s: str) -> str:
    """Python-dict style ``{'a': 'b'}`` -> JSON, leaving apostrophes inside double-quoted strings."""
    out, in_dq, in_sq, esc = [], False, False, False
    for ch in s:
        if esc:
            out.append(ch)
            esc = False
            continue
        if ch == "\\":
            out.append(ch)
            esc = True
            continue
        if ch == '"' and not in_sq:
            in_dq = not in_dq
            out.append(ch)
        elif ch == "'" and not in_dq:
            in_sq = not in_sq
            out.append('"')
        elif ch == '"' and in_sq:
            out.append('\\"')
        else:
            out.append(ch)
    return "".join(out)


def parse_json_lenient(candidate: str) -> tuple[Any, str] | None:
    """``json.loads`` with repairs tried one after another: as is, trailing commas removed, stray
    backslashes escaped, single quotes turned into double quotes. Returns (value, repair) or None."""
    attempts = [("", lambda s: s)]
    attempts.append(("trailing-comma", lambda s: _TRAILING_COMMA_RE.sub(r"\1", s)))
    attempts.append(("backslash", lambda s: _STRAY_BACKSLASH_RE.sub(r"\\\\", _TRAILING_COMMA_RE.sub(r"\1", s))))
    attempts.append(("single-quotes", lambda s: _single_to_double_quotes(_TRAILING_COMMA_RE.sub(r"\1", s))))
    for name, fix in attempts:
        try:
            return json.loads(fix(candidate), strict=False), name
        except (ValueError, RecursionError):
            continue
    return None


def extract_json_object(response: Any) -> Extracted:
    """The JSON object in a response: a fenced ```json block first, else the first balanced ``{...}``.
    ``value`` is a dict; ``rule`` is ``json-fenced`` or ``json-bare``, with ``+<repair>`` when one
    was needed."""
    text = as_text(response)
    candidates: list[tuple[str, str]] = []
    for m in _FENCE_RE.finditer(text):
        obj = _outer_object(m.group(1))
        if obj:
            candidates.append(("json-fenced", obj))
    bare = _outer_object(text)
    if bare:
        candidates.append(("json-bare", bare))
    for rule, obj in candidates:
        parsed = parse_json_lenient(obj)
        if parsed is not None and isinstance(parsed[0], dict):
            return Extracted(parsed[0], rule + (f"+{parsed[1]}" if parsed[1] else ""))
    return NOTHING


# --------------------------------------------------------------------------- \boxed{}


def extract_boxed_all(response: Any) -> list[str]:
    """Contents of every ``\\boxed{...}`` (braces matched; the backslash is required)."""
    text = as_text(response)
    out = []
    start = text.find("\\boxed{")
    while start >= 0:
        i = start + len("\\boxed{")
        depth = 1
        j = i
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        if depth == 0:
            out.append(text[i : j - 1])
        start = text.find("\\boxed{", j if depth == 0 else i)
    return out


_TEXT_RE = re.compile(r"\\text{(.*?)}")


def extract_boxed_answer(response: Any, unwrap_text: bool = True) -> Extracted:
    """The last ``\\boxed{}`` content, stripped; with ``unwrap_text`` the content of its last
    ``\\text{...}`` if it has one (``\\textbf`` is not unwrapped)."""
    boxes = extract_boxed_all(response)
    if not boxes:
        return NOTHING
    last = boxes[-1]
    if unwrap_text:
        inner = _TEXT_RE.findall(last)
        if inner:
            return Extracted(inner[-1].strip(), "boxed-text")
    return Extracted(last.strip(), "boxed")


# --------------------------------------------------------------------------- answer phrases


def extract_after_phrase(response: Any, flags: Sequence[str], lower: bool = True) -> Extracted:
    """Text after the last occurrence of the first flag (in ``flags`` order) found in the response,
    cut at the first newline, then at the first period. Matching is on the lower-cased response;
    with ``lower`` the returned text is lower-cased too."""
    text = as_text(response)
    low = text.lower()
    for flag in flags:
        idx = low.rfind(flag.lower())
        if idx < 0:
            continue
        src = low if lower else text
        tail = src[idx + len(flag) :].strip()
        tail = tail.split("\n", 1)[0].split(".", 1)[0]
        return Extracted(tail, f"phrase:{flag}")
    return NOTHING


# --------------------------------------------------------------------------- option letters


def _letter_class(letters: str) -> str:
    return "[" + re.escape(letters + letters.lower()) + "]"


@functools.cache
def letter_patterns(letters: str) -> tuple[tuple[str, re.Pattern], ...]:
    """Ordered (rule, regex) pairs; group 1 is the letter. Earlier rules are more reliable."""
    L = _letter_class(letters)
    Lu = "[" + re.escape(letters) + "]"
    return (
        # the whole answer is a letter: "B", "(B)", "B.", "B)", "**B**", "\textbf{B}", "B: text"
        ("letter-bare", re.compile(rf"^\s*[\(\[]?({L})[\)\]]?\s*[.:)]?\s*$")),
        ("letter-markup", re.compile(rf"^\s*(?:\*\*|__|\\textbf{{|\\mathbf{{|\\text{{)\s*\(?({L})\)?\s*(?:\*\*|__|}})\s*[.:]?\s*$")),
        ("letter-leading", re.compile(rf"^\s*[\(\[]?({Lu})[\)\]]?\s*[.:)]\s+\S")),
        # "Option B", "option (B)", "Choice: C"
        ("letter-option-word", re.compile(rf"\b(?:option|choice)\s*[:#]?\s*[\(\[]?({Lu})[\)\]]?(?![A-Za-z0-9])", re.I)),
        # "answer is B", "Answer: (C)", "the correct answer is **D**"
        (
            "letter-answer-phrase",
            re.compile(rf"answer\s*(?:is|:)?\s*[:\-]?\s*(?:\*\*|__)?\s*[\(\[]?({Lu})[\)\]]?(?:\*\*|__)?(?![A-Za-z0-9])", re.I),
        ),
        ("letter-markup-inline", re.compile(rf"(?:\*\*|\\textbf{{)\s*[\(\[]?({Lu})[\)\]]?\s*(?:\*\*|}})")),
        ("letter-parenthesized", re.compile(rf"\(({Lu})\)")),
    )


def _lists_options(text: str, letters: str) -> bool:
    """True when the text carries option markers ("A) ", "B. ") for more than one letter."""
    marks = re.findall(rf"(?:^|\s)[\(\[]?([{re.escape(letters)}])[\)\].]\s", text)
    return len(set(marks)) > 1


def extract_option_letter(response: Any, letters: str = "ABCD", rules: Iterable[str] | None = None) -> Extracted:
    """An option letter from ``letters`` (any letter set), upper-cased.

    Rules are tried in :func:`letter_patterns` order (restricted to ``rules`` when given). Rules that
    can match mid-text take the **last** match and fail when the matches name different letters
    (a response that lists options is not an answer).
    """
    text = as_text(response)
    if not text.strip():
        return NOTHING
    patterns = letter_patterns(letters)
    wanted = set(rules) if rules is not None else None
    for rule, pat in patterns:
        if wanted is not None and rule not in wanted:
            continue
        if pat.pattern.startswith("^"):
            m = pat.match(text)
            if m and not (rule == "letter-leading" and _lists_options(text, letters)):
                return Extracted(m.group(1).upper(), rule)
            continue
        found = [m.group(1).upper() for m in pat.finditer(text)]
        if found and len(set(found)) == 1:
            return Extracted(found[-1], rule)
    return NOTHING


# --------------------------------------------------------------------------- reasoning blocks and fences

_THINK_BLOCK_RE = re.compile(r"<(think|thinking|reasoning|analysis)>.*?</\1>", re.S | re.I)
_THINK_CLOSE_RE = re.compile(r"</(?:think|thinking|reasoning|analysis)>", re.I)
_THINK_OPEN_RE = re.compile(r"<(?:think|thinking|reasoning|analysis)>", re.I)
_FENCE_MARK_RE = re.compile(r"```[A-Za-z]*")


def strip_reasoning(response: Any) -> str:
    """The answer part of a response: ``<think>...</think>`` (and ``<thinking>``, ``<reasoning>``,
    ``<analysis>``) blocks removed; with a closing tag but no opening one (chat templates that open the
    block themselves), everything before the last closing tag; an opening tag never closed (the
    answer was cut off while reasoning), everything from it; code-fence markers removed (their content
    kept); stripped."""
    text = _THINK_BLOCK_RE.sub(" ", as_text(response))
    closes = list(_THINK_CLOSE_RE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN_RE.search(text)
    if opened:
        text = text[: opened.start()]
    return _FENCE_MARK_RE.sub(" ", text).strip()
