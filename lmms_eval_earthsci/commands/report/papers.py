"""The papers' published numbers beside ours: each benchmark's ``paper_numbers.json`` read by its report
spec, one canonical name per model, the protocol-difference marks and footnotes, the "Paper reference"
tables; and the number formatting every table shares."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from typing import Any

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report.runs import UNAVAILABLE, ReportError, load_json
from lmms_eval_earthsci.core.benchmark import Benchmark, PaperValue, ProtocolNote
from lmms_eval_earthsci.core.scoring import papers as _names
from lmms_eval_earthsci.core.scoring.papers import add_spellings, model_key

# the one model all five papers evaluated, so one paper column covers every benchmark
DEFAULT_PAPER_MODEL = "GPT-4o"


@functools.cache
def _prepared() -> bool:
    """Every benchmark's model spellings joined (before any paper table is read)."""
    for b in registry.benchmarks():
        add_spellings(b.report_spec().model_spellings)
    return True


def canonical_model(name: str) -> str:
    """The name the report shows for a paper's model (every benchmark's spellings joined)."""
    _prepared()
    return _names.canonical_model(name)


def protocol_notes() -> dict[str, ProtocolNote]:
    """Every benchmark's protocol notes, in registry order (the order footnotes are printed in)."""
    out: dict[str, ProtocolNote] = {}
    for b in registry.benchmarks():
        out.update(b.report_spec().protocol_notes)
    return out


@functools.cache
def _three_decimals() -> frozenset[str]:
    return frozenset(m for b in registry.benchmarks() for m in b.report_spec().three_decimals)


def fmt(v: Any, metric: str = "") -> str:
    if v is None:
        return UNAVAILABLE
    return f"{v:.3f}" if metric in _three_decimals() else f"{v:.2f}"


def paper_cell(v: PaperValue) -> str:
    notes = protocol_notes()
    return " ".join([fmt(v.value, v.metric)] + [notes[n].mark for n in v.notes])


def footnotes(values: Iterable[PaperValue | None]) -> list[str]:
    used = dict.fromkeys(n for v in values if v is not None for n in v.notes)
    return [f"{note.mark} {note.footnote}" for key, note in protocol_notes().items() if key in used]


@functools.cache
def paper_entries(bench: Benchmark) -> tuple[tuple[PaperValue, ...], str]:
    """The paper's values for a benchmark, each keyed by the (task, metric) of ours computed the same
    way, and the source note (none when the benchmark bundles no paper numbers)."""
    if not os.path.exists(bench.paper_numbers):
        return (), ""
    _prepared()
    entries, source = bench.report_spec().paper_entries(load_json(bench.paper_numbers, "paper-numbers JSON"))
    return tuple(entries), source


@functools.cache
def paper_index(bench: Benchmark) -> dict[tuple[str, str, str], PaperValue]:
    return {(e.model, e.task, e.metric): e for e in paper_entries(bench)[0]}


def paper_models() -> list[str]:
    """Every canonical paper model name, in the papers' order."""
    return list(dict.fromkeys(e.model for b in registry.benchmarks() for e in paper_entries(b)[0]))


def resolve_paper_model(name: str | None) -> str:
    """The canonical name of the reference model (``--paper-model``, matched whatever its spelling)."""
    if name is None:
        return DEFAULT_PAPER_MODEL
    _prepared()
    wanted = model_key(canonical_model(name))
    for m in paper_models():
        if model_key(m) == wanted:
            return m
    raise ReportError(f"unknown paper model {name!r}; valid names: {', '.join(sorted(paper_models(), key=str.casefold))}")


def paper_value(bench: Benchmark, model: str, task: str, metric: str) -> PaperValue | None:
    return paper_index(bench).get((model, task, metric))
