"""Reading released output files (the authors' per-model outputs, a run's JSON Lines) and turning them
into a replay plan for ``lmms-eval-earthsci rescore``: the helpers each benchmark's release importer
uses (its ``release_plan(path, options)``), so an importer needs no command module."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable
from typing import TextIO


class RescoreError(Exception):
    """A run or file rescore cannot use, or a doc that does not match; the message names it."""


def _open_text(path: str) -> TextIO:
    return gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else open(path, encoding="utf-8")


def _jsonl_rows(lines: Iterable[str], path: str) -> list[dict]:
    rows = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise RescoreError(f"{path}, line {n}: not JSON ({exc})") from exc
    return rows


def read_jsonl(path: str) -> list[dict]:
    """Rows of a JSON Lines file (gzip when it ends in .gz); a bad line is an error naming it."""
    with _open_text(path) as f:
        return _jsonl_rows(f, path)


def read_records(path: str) -> list[dict]:
    """The records of a released output file: a JSON array, a JSON object of records keyed by id (its
    values), or JSON Lines; gzip when the name ends in .gz."""
    with _open_text(path) as f:
        text = f.read()
    if text.lstrip()[:1] in ("[", "{"):
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None  # JSON Lines (or broken: the line is named below)
        if isinstance(whole, list):
            return whole
        if isinstance(whole, dict):
            return list(whole.values()) if whole and all(isinstance(v, dict) for v in whole.values()) else [whole]
    return _jsonl_rows(text.split("\n"), path)  # as file iteration does (not splitlines: U+2028 may sit in a string)


def release_plan_dict(key: str, tasks: str, entries: dict[str, dict], model_name: str) -> dict:
    """A replay plan over released outputs: ``entries`` = {task: {id: {"responses": [...], "fields": {...}}}},
    matched by the dataset column ``key``; ``fields`` are dataset columns the doc must equal."""
    return {"key": key, "tasks": tasks, "entries": entries, "limit": None, "offset": 0, "repeats": 1, "include_path": None, "model": {"model": "released", "model_args": f"release={model_name}", "model_name": model_name}}


def release_name(path: str) -> str:
    """The model/run name a released file carries in its name (``gpt_CoT.jsonl.gz`` -> ``gpt_CoT``)."""
    return os.path.basename(path).split(".jsonl")[0].split(".json")[0]
