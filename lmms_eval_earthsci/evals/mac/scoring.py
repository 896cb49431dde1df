"""MAC scoring: the official probability-JSON parser (``utils/parse_jsonString.parse_probabilities``,
spec §3.2) reproduced exactly, our lenient reading beside it, and the metrics of
``mac_cli/commands/analyze.py`` (spec §5) with their bugs fixed where they would distort a number.

Decisions on what the official code leaves to chance (spec errata; each tested):

- Missing letters are added as 0.0 in A->D order (the original adds them in ``set`` order, random per
  process), so ``{}`` and other all-zero answers always predict A; they are counted (``all_zero``).
- Ties go to the first key the model wrote (as the original; with the A->D fill, deterministic).
- The regex fallback is kept as it is, quirks included: it misses ``.7`` (no leading digit), reads
  ``1e-3`` as 1, never matches a negative number, keeps letters beyond D (an ``E`` key can win and is
  then simply wrong), and the last duplicate of a letter wins.
- ``None`` content (the original crashed) parses as unparsed.
- ECE / NLL / RMS normalise a *copy* of each probability dict (the original ECE normalised in place,
  one key at a time, distorting non-normalised dicts and the metrics computed after it).
- RMS sorts by confidence with a stable sort in dataset order (the original's ``np.argsort`` is
  unstable and its rows arrive in thread order, so tied confidences fell into bins by chance).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_eval_earthsci.core.scoring.extraction import strip_reasoning

LETTERS = "ABCD"
ECE_BINS = 15
RMS_BIN_SIZE = 30
NLL_EPS = 1e-15
_REGEX = re.compile(r'"([A-Z])"\s*:\s*"?(\d+(?:\.\d+)?)"?')


@dataclass(frozen=True)
class Parsed:
    """``probs``: the parsed dict in the order the model wrote it (missing A-D appended as 0.0), or None
    when the answer did not parse; ``pred``: its argmax (ties: first written) or None; ``path``: ``json``,
    ``regex`` or ``none``; ``all_zero``: every probability is 0 (``{}`` included), so the argmax is A by
    our tie rule, not by the model."""

    probs: dict | None
    pred: str | None
    path: str
    all_zero: bool = False
    problem: str = ""

    @property
    def parsed(self) -> bool:
        return self.probs is not None


def _fail(path: str, problem: str) -> Parsed:
    return Parsed(None, None, path, problem=problem)


def _fill(probs: dict) -> dict:
    for letter in LETTERS:
        probs.setdefault(letter, 0.0)
    return probs


def _done(probs: dict, path: str) -> Parsed:
    probs = _fill(probs)
    pred = max(probs, key=probs.get)
    return Parsed(probs, pred, path, all_zero=all(v == 0 for v in probs.values()))


def parse_probabilities(text: Any) -> Parsed:
    """The official parser (spec §3.2), step by step; never raises."""
    if text is None:
        return _fail("none", "no content")
    if not isinstance(text, str):
        text = str(text)
    text = text.replace("'", '"').replace("```json", "").replace("```", "").strip()
    try:
        data = json.loads(text)
        if isinstance(data, str):
            data = json.loads(data)
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except (ValueError, RecursionError):
        matches = _REGEX.findall(text)
        if not matches:
            return _fail("none", "no JSON object and no \"X\": number pair")
        probs: dict = {}
        for letter, value in matches:
            probs[letter] = float(value)
        return _done(probs, "regex")
    if any(str(k) not in LETTERS or len(str(k)) != 1 for k in data):
        return _fail("json", f"key outside A-D: {sorted(map(str, data))}")
    probs = {}
    for k, v in data.items():
        try:
            probs[str(k)] = float(v.strip().strip('"').strip("'")) if isinstance(v, str) else float(v)
        except (TypeError, ValueError):
            return _fail("json", f"value of {k} is not a number: {v!r:.40}")
    return _done(probs, "json")


def normalised(probs: Mapping[str, float]) -> dict[str, float]:
    """A copy divided by its sum when the sum is positive (as the metrics code intends)."""
    total = sum(probs.values())
    return {k: (v / total if total > 0 else v) for k, v in probs.items()}


# --------------------------------------------------------------------------- lenient (ours)

_LETTER_ANSWER_RE = re.compile(r"(?i:answer|option|choice)\s*(?i:is|would be)?\s*:?\s*[*(\[]*\s*([A-D])\b")
_BARE_LETTER_RE = re.compile(r"^[\s*(\[\"'`]*([A-D])[\s*)\]\"'`.:]*$")


def lenient_letter(text: Any, options: Sequence[str] | None = None) -> tuple[str | None, str]:
    """Ours, for ``mac_acc_lenient`` only, when the official parser fails: a bare letter (``B``,
    ``**B**``, ``(B).``), else the last "answer/option/choice (is) X", else (I2T, ``options`` given) the
    one option text the response quotes (at least 40 characters of it). Returns (letter, rule)."""
    body = strip_reasoning(text)
    m = _BARE_LETTER_RE.match(body)
    if m:
        return m.group(1), "letter"
    hits = _LETTER_ANSWER_RE.findall(body)
    if hits:
        return hits[-1].upper(), "answer-phrase"
    if options:
        norm = " ".join(body.lower().split())
        quoted = [i for i, o in enumerate(options) if len(o.strip()) >= 40 and " ".join(o.lower().split())[:200] in norm]
        if len(quoted) == 1:
            return LETTERS[quoted[0]], "option-text"
    return None, "none"


# --------------------------------------------------------------------------- metrics


@dataclass
class Scored:
    """One doc as the corpus metrics see it."""

    correct: bool
    parsed: bool
    probs: dict | None = None
    gold: str = ""
    row: int = 0
    extra: dict = field(default_factory=dict)


def _items(items: Iterable[Any]) -> list[Scored]:
    out = []
    for it in items:
        if isinstance(it, Scored):
            out.append(it)
        elif isinstance(it, Mapping):
            out.append(Scored(bool(it.get("correct")), bool(it.get("parsed")), it.get("probs"), str(it.get("gold", "")), int(it.get("row") or 0)))
    return out


def _confidences(docs: list[Scored]) -> list[tuple[float, bool, int]]:
    """(confidence, correct, row) of the parsed docs: the max normalised probability."""
    out = []
    for d in docs:
        if d.parsed and d.probs:
            out.append((max(normalised(d.probs).values()), d.correct, d.row))
    return out


def accuracy(items: Iterable[Any]) -> float | None:
    """% correct over every doc; unparsed answers are wrong, never dropped."""
    docs = _items(items)
    return 100.0 * sum(d.correct for d in docs) / len(docs) if docs else None


def ece(items: Iterable[Any], n_bins: int = ECE_BINS) -> float | None:
    """Expected calibration error over the parsed docs: equal-width bins ``lo < conf <= hi`` on (0, 1]
    (a confidence of 0, i.e. an all-zero answer, falls in no bin but counts in N)."""
    conf = _confidences(_items(items))
    if not conf:
        return None
    n = len(conf)
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        inside = [(c, y) for c, y, _ in conf if lo < c <= hi]
        if inside:
            mean_c = sum(c for c, _ in inside) / len(inside)
            mean_a = sum(y for _, y in inside) / len(inside)
            total += abs(mean_c - mean_a) * len(inside) / n
    return total


def nll(items: Iterable[Any], eps: float = NLL_EPS) -> float | None:
    """Mean of -ln p_norm[gold] over the parsed docs, p clipped to [eps, 1 - eps]."""
    docs = [d for d in _items(items) if d.parsed and d.probs]
    if not docs:
        return None
    total = 0.0
    for d in docs:
        p = normalised(d.probs).get(d.gold, 0.0)
        total -= math.log(min(max(p, eps), 1 - eps))
    return total / len(docs)


def rms(items: Iterable[Any], bin_size: int = RMS_BIN_SIZE) -> float | None:
    """RMS calibration error: parsed docs sorted by confidence (stable: ties in dataset order),
    consecutive bins of ``bin_size``, sqrt(sum n_b/N (mean conf - mean acc)^2)."""
    conf = sorted(_confidences(_items(items)), key=lambda t: (t[0], t[2]))
    if not conf:
        return None
    n = len(conf)
    total = 0.0
    for start in range(0, n, bin_size):
        b = conf[start : start + bin_size]
        mean_c = sum(c for c, _, _ in b) / len(b)
        mean_a = sum(y for _, y, _ in b) / len(b)
        total += len(b) / n * (mean_c - mean_a) ** 2
    return math.sqrt(total)


def unparsable(items: Iterable[Any]) -> float | None:
    docs = _items(items)
    return 100.0 * sum(not d.parsed for d in docs) / len(docs) if docs else None


def reliability(items: Iterable[Any], n_bins: int = ECE_BINS) -> list[dict]:
    """Per ECE bin: ``{lo, hi, n, confidence, accuracy}`` (for the report's reliability diagram)."""
    conf = _confidences(_items(items))
    out = []
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        inside = [(c, y) for c, y, _ in conf if lo < c <= hi]
        out.append({"lo": lo, "hi": hi, "n": len(inside), "confidence": sum(c for c, _ in inside) / len(inside) if inside else None, "accuracy": sum(y for _, y in inside) / len(inside) if inside else None})
    return out
