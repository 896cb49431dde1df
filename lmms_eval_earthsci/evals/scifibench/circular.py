"""SciFIBench's circular variants (:mod:`lmms_eval_earthsci.core.scoring.circular`): F->C rotates the captions
under the letters A-E; C->F rotates the five figures with their option entries (each figure stays after
the label of its new position). ``Answer`` moves with its option."""

from __future__ import annotations

import re
from typing import Any

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.evals.scifibench import tasks

_PREFIX = re.compile(r"^\s*[A-Ea-e]\)\s*")


def _c2f(doc) -> bool:
    return "Caption2Figure" in str(doc.get("_split", ""))


def options(doc) -> list[str]:
    return [_PREFIX.sub("", o, count=1) for o in tasks.options_of(doc)]


def gold(doc) -> int:
    return tasks.LETTERS.index(tasks.gold_letter(doc))


def rotate(doc, k: int, n: int) -> dict:
    opts = tasks.options_of(doc)
    prefixes = [m.group(0) if (m := _PREFIX.match(o)) else "" for o in opts]
    bodies = circular.shifted([o[len(p):] for o, p in zip(opts, prefixes)], k)
    out = dict(doc)
    out["Options"] = [p + b for p, b in zip(prefixes, bodies)]
    if _c2f(doc) and doc.get("Images") is not None:  # lmms-eval also prompts from its copy without media
        out["Images"] = circular.shifted(list(doc["Images"])[:n], k) + list(doc["Images"])[n:]
    out["Answer"] = tasks.LETTERS[(gold(doc) + k) % n]
    return out


def chosen(record: dict, asked: Any) -> str | None:
    return record.get("parsed")


ROTATION = circular.Rotation(options=options, gold=gold, rotate=rotate, chosen=chosen, headline=tasks.METRIC)
_H = circular.hooks(ROTATION, doc_to_messages=tasks.doc_to_messages, doc_to_visual=tasks.doc_to_visual, doc_to_text=tasks.doc_to_text,
                    doc_to_target=tasks.doc_to_target, process_results=tasks.process_results, positions="ABCDE")
doc_to_messages, doc_to_visual, doc_to_text = _H.doc_to_messages, _H.doc_to_visual, _H.doc_to_text
doc_to_target, process_results = _H.doc_to_target, _H.process_results
process_docs_cs_f2c = circular.expanding(ROTATION, tasks.process_docs_cs_f2c)
process_docs_cs_c2f = circular.expanding(ROTATION, tasks.process_docs_cs_c2f)
process_docs_general_f2c = circular.expanding(ROTATION, tasks.process_docs_general_f2c)
process_docs_general_c2f = circular.expanding(ROTATION, tasks.process_docs_general_c2f)
