"""EMMA's circular variants (:mod:`lmms_eval_earthsci.core.scoring.circular`): the multiple-choice questions only
(open-ended ones are left out), each option (text, SMILES, code or an ``<image_k>`` marker, whose image
follows it) rotated under the letters and ``answer`` moved with its option."""

from __future__ import annotations

from typing import Any

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.evals.emma import tasks


def options(doc) -> list[str]:
    return tasks.options_of(doc) if tasks.is_multiple_choice(doc) else []


def rotate(doc, k: int, n: int) -> dict:
    out = dict(doc)
    out["options"] = circular.shifted(list(doc.get("options") or []), k)
    letter = chr(ord("A") + (tasks.gold_index(doc) + k) % n)
    answer = str(doc.get("answer") or "")
    out["answer"] = letter if answer.strip().isupper() or not answer.strip() else letter.lower()
    return out


def chosen(record: dict, asked: Any) -> str | None:
    """The official extraction: a letter, or the exact text of one of the options as asked."""
    got = str(record.get("extraction") or "").strip()
    opts = tasks.options_of(asked)
    if len(got) == 1 and got.upper() in circular.LETTERS[: len(opts)]:
        return got.upper()
    texts = [o.strip().lower() for o in opts]
    return circular.LETTERS[texts.index(got.lower())] if got and texts.count(got.lower()) == 1 else None


ROTATION = circular.Rotation(options=options, gold=tasks.gold_index, rotate=rotate, chosen=chosen, headline=tasks.METRIC)
_H = circular.hooks(ROTATION, doc_to_messages=tasks.doc_to_messages, doc_to_visual=tasks.doc_to_visual, doc_to_text=tasks.doc_to_text,
                    doc_to_target=tasks.doc_to_target, process_results=tasks.process_results_full, positions="ABCDE")
process_docs, doc_to_messages, doc_to_visual = _H.process_docs, _H.doc_to_messages, _H.doc_to_visual
doc_to_text, doc_to_target, process_results = _H.doc_to_text, _H.doc_to_target, _H.process_results
