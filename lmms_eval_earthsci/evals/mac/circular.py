"""MAC's circular variants (:mod:`lmms_eval_earthsci.core.scoring.circular`): the four option columns (stories, or
covers with their images) rotate under the letters A-D and ``answer`` moves with its option; the
probability JSON is read in the letters asked and mapped back to the original ones, and the calibration
error is reported over every rotation."""

from __future__ import annotations

from typing import Any

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.evals.mac import tasks


def options(doc) -> list[str]:
    return [str(doc.get(c) or "") for c in tasks.OPTION_COLUMNS]


def gold(doc) -> int:
    return tasks.LETTERS.index(tasks.gold_letter(doc))


# what the CSVs say of each option moves with it (the official record names the picked option's embedding model)
OPTION_FIELDS = ("", "_path", "_embedding_name", "_embedding_id")


def rotate(doc, k: int, n: int) -> dict:
    out = dict(doc)
    for suffix in OPTION_FIELDS:
        columns = [f"{c}{suffix}" for c in tasks.OPTION_COLUMNS]
        if suffix and not any(c in doc for c in columns):
            continue
        for column, value in zip(columns, circular.shifted([doc.get(c) for c in columns], k)):
            out[column] = value
    out["answer"] = tasks.LETTERS[(gold(doc) + k) % n]
    return out


def chosen(record: dict, asked: Any) -> str | None:
    # an unparsed answer, or all-zero probabilities (argmax A by the tie rule), chose no position
    return record.get("pred") if record.get("parsed") and not record.get("all_zero") else None


def probabilities(record: dict) -> dict | None:
    return record.get("probs")


ROTATION = circular.Rotation(options=options, gold=gold, rotate=rotate, chosen=chosen, headline=tasks.METRIC, probabilities=probabilities)
_H = circular.hooks(ROTATION, doc_to_messages=tasks.doc_to_messages, doc_to_visual=tasks.doc_to_visual, doc_to_text=tasks.doc_to_text,
                    doc_to_target=tasks.doc_to_target, process_results=tasks.process_results, process_docs=tasks.process_docs, ece=True)
process_docs, doc_to_messages, doc_to_visual = _H.process_docs, _H.doc_to_messages, _H.doc_to_visual
doc_to_text, doc_to_target, process_results = _H.doc_to_text, _H.doc_to_target, _H.process_results
