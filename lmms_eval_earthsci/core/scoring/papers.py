"""One model, one name across the papers' tables: the papers spell some models several ways; the bundled
tables (``evals/<benchmark>/paper_numbers.json``) keep the papers' spelling, and the report shows the
canonical one. A benchmark adds the spellings of its own paper through its report spec's
``model_spellings`` (the report joins them, :func:`add_spellings`, into the process's runtime)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from lmms_eval_earthsci.core.runtime import current


def _spellings() -> dict[str, str]:
    """Spellings of one model in the papers' tables, by :func:`model_key`, -> the name the report shows. Case,
    spaces and hyphens already match through the key ("Gemini2.5-Flash" = "Gemini-2.5-Flash"); joined here
    are the names the key alone cannot join and the canonical spelling of each joined family. What the
    benchmarks declared, so the runtime holds it (as it holds their settings and datasets)."""
    return current().resource(("model_spellings",), dict)


def model_key(name: str) -> str:
    """A model name without case, spaces, hyphens or underscores: equal keys, one model."""
    return re.sub(r"[\s_\-]+", "", name).casefold()


def canonical_model(name: str) -> str:
    return _spellings().get(model_key(name), name.strip())


def add_spellings(spellings: Mapping[str, str]) -> None:
    """Join more spellings (keys are :func:`model_key` forms); a key spelled two ways is an error."""
    joined = _spellings()
    for key, name in spellings.items():
        if joined.get(key, name) != name:
            raise ValueError(f"model key {key!r} is {joined[key]!r} already, not {name!r}")
        joined[key] = name
