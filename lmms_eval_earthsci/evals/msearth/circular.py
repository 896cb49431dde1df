"""MSEarth MCQ's circular variants (:mod:`lmms_eval_earthsci.core.scoring.circular`): the options are lines of the
query ("A. text"); a rotation rewrites those lines' texts under the same letters and moves the gold letter
of ``response`` with its option."""

from __future__ import annotations

import re
from typing import Any

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.evals.msearth import tasks

_PREFIX = re.compile(r"^\s*[A-D]\.\s")


def _lines(doc) -> list[str]:
    return tasks.option_lines(doc)


def options(doc) -> list[str]:
    return [_PREFIX.sub("", line, count=1) for line in _lines(doc)]


def gold(doc) -> int:
    letter, _ = tasks.gold_option(doc)
    letters = [(tasks.parse_option(line)[0] or "").upper() for line in _lines(doc)]
    return letters.index(letter.upper()) if letter.upper() in letters else -1


def rotate(doc, k: int, n: int) -> dict:
    query = tasks.query_of(doc)
    m = tasks._OPTIONS_BLOCK_RE.search(query)
    if not m:
        return dict(doc)
    parts = m.group(1).split("\n")
    slots = [i for i, part in enumerate(parts) if part.strip()]
    prefixes = [_PREFIX.match(parts[i].lstrip()) for i in slots]
    texts = [parts[i].strip() for i in slots]
    bodies = [t[p.end():] if p else t for t, p in zip(texts, prefixes)]
    moved = circular.shifted(bodies, k)
    for slot, p, t, body in zip(slots, prefixes, texts, moved):
        lead = parts[slot][: len(parts[slot]) - len(parts[slot].lstrip())]
        trail = parts[slot][len(parts[slot].rstrip()):]
        parts[slot] = lead + (t[: p.end()] if p else "") + body + trail
    out = dict(doc)
    out["query"] = query[: m.start(1)] + "\n".join(parts) + query[m.end(1):]
    response = str(doc.get("response") or "")
    g = tasks._OPTION_RE.match(response)
    if g:
        new = "ABCD"[("ABCD".index(g.group(1).upper()) + k) % n]
        out["response"] = response[: g.start(1)] + (new if g.group(1).isupper() else new.lower()) + response[g.end(1):]
    return out


def chosen(record: dict, asked: Any) -> str | None:
    return record.get("option")


ROTATION = circular.Rotation(options=options, gold=gold, rotate=rotate, chosen=chosen, headline=tasks.MCQ_METRIC)
_H = circular.hooks(ROTATION, doc_to_messages=tasks.doc_to_messages, doc_to_visual=tasks.doc_to_visual, doc_to_text=tasks.doc_to_text, doc_to_target=tasks.doc_to_target, process_results=tasks.process_results_mcq)
process_docs, doc_to_messages, doc_to_visual = _H.process_docs, _H.doc_to_messages, _H.doc_to_visual
doc_to_text, doc_to_target, process_results = _H.doc_to_text, _H.doc_to_target, _H.process_results
