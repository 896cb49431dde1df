"""Reading lmms-eval output folders: one :class:`ResultsFile` per results JSON, its samples read when a
section first asks for them (:class:`Samples`); :mod:`.sweep` makes :class:`Run` objects of them."""

from __future__ import annotations

import glob
import json
import math
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

MISSING, UNAVAILABLE = "–", "n/a"


class ReportError(ValueError):
    """A results folder or file the report cannot use; the message names it."""


def load_json(path: str, what: str = "lmms-eval results JSON") -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not a readable {what} ({exc})") from exc


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)


# --------------------------------------------------------------------------- samples

# what the tables, intervals and counts never read: the sample browser reads them from the file again
# (read_full), so that 20 runs of 20,000 samples fit in memory
BULKY_FIELDS = frozenset({"input", "resps", "filtered_resps", "target", "arguments", "doc", "token_counts", "doc_hash", "input_media"})


def _lines(path: str) -> Iterator[tuple[int, dict]]:
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield n, json.loads(line)
                except ValueError as exc:
                    raise ReportError(f"{path}, line {n}: not JSON ({exc}); the run may have been cut short") from exc
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc})") from exc


def read_full(path: str) -> list[dict]:
    """Every sample of a samples JSONL, as lmms-eval logged it."""
    return [s for _, s in _lines(path)]


def _check_last_line(path: str) -> None:
    """A run cut short leaves a half-written last line: said when the folder is read, before any work
    (lmms-eval appends whole lines, so the last one is the one to check)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - (1 << 20)))
            tail = f.read().rstrip(b"\n")
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc})") from exc
    if not tail:
        return
    last = tail.rsplit(b"\n", 1)[-1]
    try:
        json.loads(last)
    except ValueError as exc:
        with open(path, "rb") as f:
            n = sum(1 for line in f if line.strip())
        raise ReportError(f"{path}, line {n}: not JSON ({exc}); the run may have been cut short") from exc


# one float object for each common score, which every sample with that score points at (thousands of samples)
_SHARED_VALUES = MappingProxyType({0.0: 0.0, 100.0: 100.0, 1.0: 1.0})


class Samples(Mapping):
    """task -> the run's samples of that task, read on first use and kept without their bulky fields
    (prompt, responses, target: :func:`read_full` has them) and without the fields whose value is None
    (an absent field reads None with ``.get``), except ``keep_none``'s (a judged metric without a judge
    is told from a task without one by its presence); field names interned and the common scores shared
    (thousands of samples repeat them)."""

    def __init__(self, paths: Mapping[str, str] | None = None, loaded: Mapping[str, list] | None = None, keep_none: frozenset = frozenset()):
        self.keep_none = keep_none
        self.paths = dict(paths or {})
        self._loaded: dict[str, list[dict]] = dict(loaded or {})
        self.paths.update({t: "" for t in self._loaded if t not in self.paths})

    def __getitem__(self, task: str) -> list[dict]:
        if task not in self._loaded:
            path = self.paths[task]  # KeyError: the run logged no samples of this task
            self._loaded[task] = [self._compact(s) for _, s in _lines(path)]
        return self._loaded[task]

    def _compact(self, sample: dict) -> dict:
        out: dict[str, Any]
        lists: dict[tuple, list]
        out, lists = {}, {}
        for k, v in sample.items():
            if k in BULKY_FIELDS or (v is None and k not in self.keep_none):
                continue
            if type(v) is float:
                v = _SHARED_VALUES.get(v, v)
            elif type(v) is list and all(type(x) is str or x is None for x in v):
                v = lists.setdefault(tuple(v), v)  # MuSciClaims logs one decision record under each of its metrics
            out[sys.intern(k)] = v
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __contains__(self, task: object) -> bool:
        return task in self.paths

    def full(self, task: str) -> list[dict]:
        """Every field of the task's samples (the sample browser), read from the file again."""
        path = self.paths.get(task)
        if not path:
            return list(self._loaded.get(task, []))
        return read_full(path)


# --------------------------------------------------------------------------- one results file


@dataclass
class ResultsFile:
    """One ``*_results.json`` (one lmms-eval invocation) and the samples it logged."""
    path: str
    stamp: str  # lmms-eval's date stamp of the file (20261123_223000), or the file's modification time
    folder: str  # the run folder: the --output_path it was written to (as the report's arguments name it)
    folder_path: str
    config: dict
    results: dict  # task -> {metric: float or None}
    aliases: dict
    n_samples: dict
    versions: dict
    subtasks: dict
    unavailable: dict
    configs: dict
    higher_is_better: dict
    rescore: dict | None
    include_path: str | None
    sample_paths: dict = field(default_factory=dict)  # task -> samples JSONL

    @property
    def model(self) -> str:
        return str(self.config.get("model") or "")

    @property
    def model_args(self) -> str:
        return str(self.config.get("model_args") or "")

    @property
    def limit(self) -> Any:
        return self.config.get("limit")


def _metrics_of(table: dict) -> dict[str, float | None]:
    """``{metric: value}`` of one task's results: "metric,filter" keys (the filter name kept unless it is
    lmms-eval's default "none"), no standard errors, only numbers and None (NaN is None)."""
    out: dict[str, float | None] = {}
    for k, v in table.items():
        if "," not in k or "_stderr" in k:
            continue
        name = k.split(",", 1)[0] if k.endswith(",none") else k
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out[name] = None
        elif _number(v):
            out[name] = v
    return out


def _run_folder(base: str, results_dir: str) -> tuple[str, str]:
    """(name, path) of the run folder of a results file found under ``base``: lmms-eval writes
    ``<output_path>/<model>/<stamp>_results.json``, so the folder is the one above the model's; a file
    directly in ``base`` (or in its model folder) belongs to ``base``."""
    base = os.path.normpath(base)
    rel = os.path.relpath(results_dir, base)
    parts = [] if rel == "." else rel.split(os.sep)
    if len(parts) <= 1:
        return os.path.basename(os.path.abspath(base)), base
    return "/".join(parts[:-1]), os.path.join(base, *parts[:-1])


def read_results_file(path: str, base: str) -> ResultsFile:
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
    sample_paths = {}
    for sp in glob.glob(os.path.join(glob.escape(os.path.dirname(path)), f"{glob.escape(stamp)}_samples_*.jsonl")):
        _check_last_line(sp)
        sample_paths[sp.rsplit("_samples_", 1)[1][: -len(".jsonl")]] = sp
    n_samples = {}
    for task, n in (data.get("n-samples") or {}).items():
        if isinstance(n, dict) and _number(n.get("effective")) and _number(n.get("original")):
            n_samples[task] = (int(n["effective"]), int(n["original"]))
    cfg = cast(dict, data.get("config")) if isinstance(data.get("config"), dict) else {}
    unavailable = {}
    for task, tc in (data.get("configs") or {}).items():
        why = ((tc or {}).get("metadata") or {}).get("earthsci_unavailable") if isinstance(tc, dict) else None
        if isinstance(why, dict) and why:
            unavailable[task] = {str(m): str(r) for m, r in why.items()}
    folder, folder_path = _run_folder(base, os.path.dirname(path))
    if not re.fullmatch(r"\d{8}_\d{6}.*", stamp):  # not lmms-eval's name: its modification time orders it
        stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(os.path.getmtime(path))) + "~" + stamp
    return ResultsFile(
        path=path,
        stamp=stamp,
        folder=folder,
        folder_path=folder_path,
        config=cfg,
        results=results,
        aliases=aliases,
        n_samples=n_samples,
        versions={t: v for t, v in (data.get("versions") or {}).items() if v is not None},
        subtasks={g: list(ts) for g, ts in (data.get("group_subtasks") or {}).items() if ts},
        unavailable=unavailable,
        configs=data.get("configs") or {},
        higher_is_better={t: dict(h) for t, h in (data.get("higher_is_better") or {}).items() if isinstance(h, dict)},
        rescore=data.get("rescore"),
        include_path=(cfg.get("resolved_cli_args") or {}).get("include_path") if isinstance(cfg.get("resolved_cli_args"), dict) else None,
        sample_paths=sample_paths,
    )


def results_files(paths: list[str] | tuple[str, ...]) -> list[ResultsFile]:
    """Every ``*_results.json`` under each path (a folder, searched recursively, or a results file)."""
    out = []
    seen = set()
    for base in paths:
        if not os.path.exists(base):
            raise ReportError(f"{base}: no such folder")
        found = sorted(glob.glob(os.path.join(glob.escape(base), "**", "*_results.json"), recursive=True)) if os.path.isdir(base) else [base]
        if not found:
            raise ReportError(f"{base}: no *_results.json inside (was lmms-eval given --output_path {base}, and did it finish?)")
        for path in found:
            key = os.path.realpath(path)
            if key in seen:  # a folder named twice, or a folder and a file inside it
                continue
            seen.add(key)
            out.append(read_results_file(path, base if os.path.isdir(base) else os.path.dirname(os.path.dirname(os.path.abspath(path)))))
    return out


# --------------------------------------------------------------------------- a run


@dataclass
class Run:
    """One model identity's results (:mod:`.sweep`): the tasks of one or several results files (split
    jobs), each task from the newest file that has it."""
    label: str
    files: list[ResultsFile]  # the files used, oldest first
    results: dict  # task -> {metric: float or None} (filter suffix removed; numbers and None only)
    samples: Mapping = field(default_factory=dict)  # task -> list of sample dicts (Samples)
    aliases: dict = field(default_factory=dict)  # task -> lmms-eval's display name
    n_samples: dict = field(default_factory=dict)  # task -> (docs scored, docs in the task)
    versions: dict = field(default_factory=dict)  # task or group -> comparability version (metadata.version)
    subtasks: dict = field(default_factory=dict)  # group -> its tasks (lmms-eval's group_subtasks)
    unavailable: dict = field(default_factory=dict)  # task -> {metric: why it has no value} (core.adapter.unavailable)
    configs: dict = field(default_factory=dict)  # task -> its config as the results JSON recorded it
    higher_is_better: dict = field(default_factory=dict)  # task -> {metric: bool}
    source: dict = field(default_factory=dict)  # task or group -> the ResultsFile it comes from
    set_aside: list = field(default_factory=list)  # (ResultsFile, [tasks], why) not used
    identity: tuple = ()
    model_path: str = ""  # the checkpoint (pretrained= / model= of --model_args), else --model
    step: int | None = None  # the training step read from the checkpoint's path or the run folder
    intervals: dict = field(default_factory=dict, repr=False, compare=False)  # report.intervals' cache

    @property
    def path(self) -> str:
        """The newest results file used (the run's files are in :attr:`files`)."""
        return self.files[-1].path if self.files else ""

    @property
    def limit(self) -> Any:
        return next((f.limit for f in self.files if f.limit is not None), None)

    @property
    def rescore(self) -> dict | None:
        return next((f.rescore for f in reversed(self.files) if f.rescore), None)

    @property
    def include_path(self) -> str | None:
        paths = [p for f in self.files for p in str(f.include_path or "").split(",") if p]
        return ",".join(dict.fromkeys(paths)) or None

    @property
    def model(self) -> str:
        return self.files[-1].model if self.files else ""

    @property
    def model_args(self) -> str:
        return self.files[-1].model_args if self.files else ""

    @property
    def folders(self) -> list[str]:
        return list(dict.fromkeys(f.folder for f in self.files))

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

    def full_samples(self, task: str) -> list[dict]:
        """The task's samples with every field lmms-eval logged (prompt, responses, target)."""
        if isinstance(self.samples, Samples):
            return self.samples.full(task)
        return list(self.samples.get(task, []))


def stamp_date(stamp: str) -> str:
    """lmms-eval's results stamp ``20261123_223000`` (its clock: UTC+8) as ``2026-11-23 22:30:00``."""
    m = re.fullmatch(r"(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})(.*)", stamp)
    return f"{m[1]}-{m[2]}-{m[3]} {m[4]}:{m[5]}:{m[6]}{m[7]}" if m else stamp

