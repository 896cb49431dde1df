"""Reading lmms-eval output folders: one :class:`Run` per results JSON, with its samples."""

from __future__ import annotations

import glob
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

MISSING, UNAVAILABLE = "–", "n/a"


class ReportError(ValueError):
    """A results folder or file the report cannot use; the message names it."""


# --------------------------------------------------------------------------- reading runs


@dataclass
class Run:
    label: str
    path: str
    results: dict  # task -> {metric: float or None} (filter suffix removed; numbers and None only)
    samples: dict = field(default_factory=dict)  # task -> list of sample dicts
    aliases: dict = field(default_factory=dict)  # task -> lmms-eval's display name
    n_samples: dict = field(default_factory=dict)  # task -> (docs scored, docs in the task)
    limit: Any = None  # lmms-eval's --limit, as recorded in the results config
    versions: dict = field(default_factory=dict)  # task or group -> comparability version (metadata.version)
    subtasks: dict = field(default_factory=dict)  # group -> its tasks (lmms-eval's group_subtasks)
    rescore: dict | None = None  # the record `lmms-eval-earthsci rescore` adds
    include_path: str | None = None  # the run's --include_path (a built MAC snapshot's tasks)
    unavailable: dict = field(default_factory=dict)  # task -> {metric: why it has no value} (core.unavailable)
    configs: dict = field(default_factory=dict)  # task -> its config as the results JSON recorded it

    @property
    def partial(self) -> bool:
        """Scored fewer docs than a task has (``--limit``); without lmms-eval's ``n-samples`` record
        any ``--limit`` counts."""
        if self.n_samples:
            return any(eff < orig for eff, orig in self.n_samples.values())
        return self.limit is not None

    @property
    def column(self) -> str:
        return self.label + (" (partial)" if self.partial else "")

    def value(self, task: str, metric: str) -> tuple[bool, float | None]:
        """(present, value): a task or metric the run does not have is not present."""
        metrics = self.results.get(task)
        if metrics is None or metric not in metrics:
            return False, None
        return True, metrics[metric]


def load_json(path: str, what: str = "lmms-eval results JSON") -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not a readable {what} ({exc})") from exc


def _load_samples(path: str) -> list[dict]:
    out = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    out.append(json.loads(line))
                except ValueError as exc:
                    raise ReportError(f"{path}, line {n}: not JSON ({exc}); the run may have been cut short") from exc
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc})") from exc
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)


def _metrics_of(table: dict) -> dict[str, float | None]:
    """``{metric: value}`` of one task's results: "metric,filter" keys (the filter name kept unless it is
    lmms-eval's default "none"), no standard errors, only numbers and None (NaN is None)."""
    out = {}
    for k, v in table.items():
        if "," not in k or "_stderr" in k:
            continue
        name = k.split(",", 1)[0] if k.endswith(",none") else k
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out[name] = None
        elif _number(v):
            out[name] = v
    return out


def read_runs(paths: Sequence[str]) -> list[Run]:
    """Every ``*_results.json`` under each path is one run (samples: the same timestamp's JSONL)."""
    runs = []
    for base in paths:
        if not os.path.exists(base):
            raise ReportError(f"{base}: no such folder")
        found = sorted(glob.glob(os.path.join(base, "**", "*_results.json"), recursive=True)) if os.path.isdir(base) else [base]
        if not found:
            raise ReportError(f"{base}: no *_results.json inside (was lmms-eval given --output_path {base}, and did it finish?)")
        for path in found:
            data = load_json(path)
            if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
                raise ReportError(f"{path}: has no 'results' table; not an lmms-eval results file")
            results, aliases = {}, {}
            for task, metrics in data["results"].items():
                if not isinstance(metrics, dict):
                    raise ReportError(f"{path}: results for {task!r} are not a table")
                results[task] = _metrics_of(metrics)
                aliases[task] = str(metrics.get("alias") or task).strip().lstrip("- ").strip()
            stamp = os.path.basename(path)[: -len("_results.json")]
            samples = {}
            for sp in glob.glob(os.path.join(os.path.dirname(path), f"{stamp}_samples_*.jsonl")):
                samples[sp.rsplit("_samples_", 1)[1][: -len(".jsonl")]] = _load_samples(sp)
            n_samples = {}
            for task, n in (data.get("n-samples") or {}).items():
                if isinstance(n, dict) and _number(n.get("effective")) and _number(n.get("original")):
                    n_samples[task] = (int(n["effective"]), int(n["original"]))
            cfg = data.get("config") or {}
            label = _run_label(cfg, base, stamp, several=len(found) > 1)
            versions = {t: v for t, v in (data.get("versions") or {}).items() if v is not None}
            subtasks = {g: list(ts) for g, ts in (data.get("group_subtasks") or {}).items() if ts}
            include = (cfg.get("resolved_cli_args") or {}).get("include_path")
            unavailable = {}
            for task, tc in (data.get("configs") or {}).items():
                why = ((tc or {}).get("metadata") or {}).get("earthsci_unavailable") if isinstance(tc, dict) else None
                if isinstance(why, dict) and why:
                    unavailable[task] = {str(m): str(r) for m, r in why.items()}
            runs.append(Run(label, path, results, samples, aliases, n_samples, cfg.get("limit"), versions, subtasks, data.get("rescore"), include, unavailable, data.get("configs") or {}))
    labels = [r.label for r in runs]
    for i, r in enumerate(runs):  # keep columns distinct
        if labels.count(r.label) > 1:
            r.label = f"{r.label} #{i + 1}"
    return runs


def _stamp_date(stamp: str) -> str:
    """lmms-eval's results stamp ``20261123_223000`` (its clock: UTC+8) as ``2026-11-23 22:30:00``."""
    m = re.fullmatch(r"(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})(.*)", stamp)
    return f"{m[1]}-{m[2]}-{m[3]} {m[4]}:{m[5]}:{m[6]}{m[7]}" if m else stamp


def _run_label(cfg: dict, base: str, stamp: str, several: bool) -> str:
    """A run's column: ``model (run folder)``, or ``model (date)`` when the folder holds several runs.
    The model is the checkpoint's name (``pretrained=``/``model=`` of ``--model_args``, its last path
    part), else lmms-eval's ``--model``."""
    m = re.search(r"(?:pretrained|model_version|model)=([^,]+)", str(cfg.get("model_args") or ""))
    model = os.path.basename(m.group(1).rstrip("/")) if m else str(cfg.get("model") or "run")
    return f"{model} ({_stamp_date(stamp) if several else os.path.basename(os.path.normpath(base))})"
