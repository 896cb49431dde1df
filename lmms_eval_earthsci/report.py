"""``lmms-eval-earthsci report OUTPUT_PATH...``: tables and plots from lmms-eval output folders.

For one or several runs (each an lmms-eval ``--output_path``, with ``--log_samples`` for the counts) it
writes ``report.md`` (and prints it). It leads with one headline table: per benchmark task its
headline metric(s), one column per run, and beside them one paper model's published number (the
*reference model*: ``--paper-model``, default :data:`DEFAULT_PAPER_MODEL`). Then, per benchmark: the
breakdowns (one row per label, one column per run), PNG bar charts with the reference model's values
marked (MAC: a reliability diagram per task, from the samples), and the counts that matter (docs scored, answers not extracted, low-confidence picks, judge
failures by cause, judge cache hits). Last, every paper model's numbers for the headline metrics
(bundled in ``paper_numbers/``, each naming its source table).

Rules the report keeps, because a reader compares numbers across columns:

- Only numbers are shown: a metric without a value is ``n/a`` (a judged metric without a judge, a
  slice with no docs), a task a run did not have is ``–``; anything else in a results file (lists,
  strings) is not a metric and is skipped. A row no run has a number for is left out.
- Paper numbers sit only beside the metric computed the way the paper computed it (SciFIBench's LLM
  answer extractor is our ``scifibench_acc_judge``); where the protocol still differs, a footnote mark
  says how (:data:`PROTOCOL_NOTES`).
- One model, one name: the papers spell some models several ways (:data:`MODEL_SPELLINGS`); the
  bundled tables keep the papers' spelling, the report shows the canonical one.
- A run made with ``--limit`` that scored fewer docs than the task has is marked ``(partial)`` in
  every table header and chart legend where its numbers appear.
- A chart bar is a number: ``n/a`` is written, never drawn as a zero bar; each bar says how many docs
  it averages; a chart no run has a number for is not written.
"""

from __future__ import annotations

import functools
import glob
import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from lmms_eval_earthsci import PAPER_NUMBERS_DIR
from lmms_eval_earthsci.core.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, Interval

BENCHMARKS = {"emma": "EMMA", "msearth": "MSEarth", "scifibench": "SciFIBench", "musciclaims": "MuSciClaims", "mac": "MAC"}
# MAC's tasks are named by their yearly snapshot (mac2025_i2t_info; the group: mac2025)
MAC_TASK = re.compile(r"mac\d{4}(?:_\w+)?")
# the one model all five papers evaluated, so one paper column covers every benchmark
DEFAULT_PAPER_MODEL = "GPT-4o"
# MSEarth's similarity fallback always picks an option (argmax of all-MiniLM-L6-v2 cosine similarity).
# On the answers it exists for, a paraphrase of an option scores 0.5-0.9 against it; noise ("boxed{B}",
# "I don't know", an explanation fragment) scores 0.05-0.3. A pick below this is counted as a
# low-confidence pick, not as an extracted answer.
LOW_CONFIDENCE_SIMILARITY = 0.5

MISSING, UNAVAILABLE = "–", "n/a"


class ReportError(ValueError):
    """A results folder or file the report cannot use; the message names it."""


def benchmark_of(task: str) -> str | None:
    for prefix in BENCHMARKS:
        if task == prefix or task.startswith(prefix + "_"):
            return prefix
    if MAC_TASK.fullmatch(task):
        return "mac"
    return None


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


def _load_json(path: str) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not a readable lmms-eval results JSON ({exc})") from exc


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
            data = _load_json(path)
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
            model = str(cfg.get("model") or "run")
            margs = str(cfg.get("model_args") or "")
            m = re.search(r"(?:pretrained|model)=([^,]+)", margs)
            label = f"{os.path.basename(os.path.normpath(base))}: {model}" + (f" {os.path.basename(m.group(1))}" if m else "")
            if len(found) > 1:
                label += f" [{stamp}]"
            versions = {t: v for t, v in (data.get("versions") or {}).items() if v is not None}
            subtasks = {g: list(ts) for g, ts in (data.get("group_subtasks") or {}).items() if ts}
            include = (cfg.get("resolved_cli_args") or {}).get("include_path")
            runs.append(Run(label, path, results, samples, aliases, n_samples, cfg.get("limit"), versions, subtasks, data.get("rescore"), include))
    labels = [r.label for r in runs]
    for i, r in enumerate(runs):  # keep columns distinct
        if labels.count(r.label) > 1:
            r.label = f"{r.label} #{i + 1}"
    return runs


# --------------------------------------------------------------------------- paper numbers

# Spellings of one model in the papers' tables (kept as printed in paper_numbers/*.json), by
# :func:`model_key`, -> the name the report shows. Case, spaces and hyphens already match through the
# key ("Gemini2.5-Flash" = "Gemini-2.5-Flash"); listed here are the names the key alone cannot join
# and the canonical spelling of each joined family.
MODEL_SPELLINGS = {
    "llavaonvision72b": "LLaVA-OneVision-72B",  # MSEarth Tables 3 and 10 and its model list (sic)
    "llavaonevision72b": "LLaVA-OneVision-72B",  # EMMA "LLaVA-Onevision-72B", MSEarth Tables 4-5 "LLaVA-onevision-72B"
    "gemini2.5flash": "Gemini-2.5-Flash",  # MSEarth Table 4 "Gemini2.5-Flash"
    "gemini2.5flashthinking": "Gemini-2.5-Flash-Thinking",
    "gemini2.5prothinking": "Gemini-2.5-Pro-Thinking",
    "claude3.5haiku": "Claude-3.5-Haiku",  # MSEarth Table 4 "Claude-3.5-haiku"
    # MSEarth Table 5 "-Chat": the same checkpoints (its model list: Qwen/Qwen2.5-VL-*-Instruct)
    "qwen2.5vl7bchat": "Qwen2.5-VL-7B",
    "qwen2.5vl32bchat": "Qwen2.5-VL-32B",
    "qwen2.5vl72bchat": "Qwen2.5-VL-72B",
    # MuSciClaims names dated API snapshots and hub checkpoints (its paper's model list)
    "gpt4o20241120": "GPT-4o",
    "gpt4omini20240718": "GPT-4o-mini",
    "claude35sonnet20241022": "Claude 3.5 Sonnet",
    "o4mini20250416": "o4-mini",
    "qwen2.5vl32binstruct": "Qwen2.5-VL-32B",
    # MAC's Table 1 abbreviates the model the official code calls Step-1o-Turbo-Vision
    "step1oturbovision": "Step-1o-T-V",
    "gemini1.5pro": "Gemini 1.5 Pro",  # SciFIBench's spelling; MAC prints "Gemini-1.5-Pro"
}


def model_key(name: str) -> str:
    """A model name without case, spaces, hyphens or underscores: equal keys, one model."""
    return re.sub(r"[\s_\-]+", "", name).casefold()


def canonical_model(name: str) -> str:
    return MODEL_SPELLINGS.get(model_key(name), name.strip())


# Where our protocol differs from the paper's for a paper value: mark, footnote, short form for charts.
PROTOCOL_NOTES = {
    "sampled": ("†", "the EMMA paper sampled this open model at temperature 0.7 (its Table 6); our EMMA tasks are greedy (`--gen_kwargs temperature=0.7,do_sample=True` samples as the paper did).", "sampled at T=0.7"),
    "rules": ("‡", "the EMMA paper's number is rule-based (Table 2, CoT); `emma_judge_acc` is the LLM judge's verdict on the CoT responses.", "rule-based"),
    "v1": ("§", "the MuSciClaims paper's number is from v1 (arXiv 2506.04585 v1), on 918 biology items; the Hub data has 1,515 rows over biology, chemistry and physics: only `musciclaims_macro_f1_biology` compares directly.", "paper v1: 918 biology items"),
    "2class": ("¶", "the MuSciClaims paper's two-class numbers (Table 6) come from separate 2-class runs; our `musciclaims_2class_*` re-aggregate the 3-class predictions.", "separate 2-class runs"),
    "panels": ("‖", "the MuSciClaims paper does not say how it normalised panel names or averaged panel P/R/F1 (Table 3); ours are per-doc means over the SUPPORT/CONTRADICT docs whose gold names panels.", "panel scoring unstated"),
    "calibration": ("°", "the MAC paper's ECE may come from an earlier, unknown script, and the official ECE code normalises each probability dict in place (distorting the NLL and RMS computed after it); ours normalise a copy: `mac_ece` / `mac_nll` / `mac_rms` may differ slightly.", "ECE script unknown"),
    "dad": ("∆", "the MAC paper's DAD (\"+ ours\"): the MLLM describes, a text-only reasoning model decides (QwQ-32B, the code's default, unless the model name adds another reasoner; Table 4 does not name its reasoner).", "DAD"),
}


@dataclass(frozen=True)
class PaperValue:
    model: str  # canonical name
    task: str
    metric: str
    value: float
    notes: tuple[str, ...] = ()  # keys of PROTOCOL_NOTES

    @property
    def cell(self) -> str:
        return " ".join([_fmt(self.value, self.metric)] + [PROTOCOL_NOTES[n][0] for n in self.notes])


EMMA_SUBJECTS = ("math", "physics", "chemistry", "coding")


@functools.lru_cache(maxsize=None)
def paper_entries(bench: str) -> tuple[tuple[PaperValue, ...], str]:
    """The paper's values for a benchmark, each keyed by the (task, metric) of ours computed the same
    way, and the source note."""
    path = os.path.join(PAPER_NUMBERS_DIR, f"{bench}.json")
    if not os.path.exists(path):
        return (), ""
    data = _load_json(path)
    out: list[PaperValue] = []
    if bench == "emma":
        for row in data["rows"]:
            model = canonical_model(row["model"])
            notes = ("sampled",) if (row.get("temperature") or 0) > 0 else ()
            for col in data["columns"]:
                if row.get(col) is None:
                    continue
                size, subject = col.split("_", 1)
                tail = "" if subject == "overall" else f"_{subject}"
                if row.get("strategy") == "Direct":
                    out.append(PaperValue(model, f"emma_{size}_direct{tail}", data["metric"], row[col], notes))
                else:  # CoT, and the rows without a strategy column (baselines, reasoning models)
                    out.append(PaperValue(model, f"emma_{size}{tail}", data["metric"], row[col], notes))
                    out.append(PaperValue(model, f"emma_{size}_judge{tail}", "emma_judge_acc", row[col], notes + ("rules",)))
        source = data["source"]
    elif bench == "msearth":
        for row in data["rows"]:
            for k, v in row.items():
                if k not in ("model", "task") and v is not None:
                    out.append(PaperValue(canonical_model(row["model"]), row["task"], k, v))
        source = "; ".join(f"{k}: {v}" for k, v in data["sources"].items()) + ". " + data.get("note", "")
    elif bench == "musciclaims":
        for row, task, metric, value in _setting_cells(data):
            model = canonical_model(row["model"])
            notes = ("v1",) + (("2class",) if metric.startswith("musciclaims_2class_") else ()) + (("panels",) if metric.startswith("musciclaims_panel_") else ())
            out.append(PaperValue(model, task, metric, value, notes))
            if metric == "musciclaims_macro_f1":  # v1's items are all biology: the like-for-like slice
                out.append(PaperValue(model, task, "musciclaims_macro_f1_biology", value))
        source = data["source"] + ". " + data["note"]
    elif bench == "mac":
        for row, task, metric, value in _setting_cells(data):
            model = canonical_model(row["model"])
            reasoner = row.get("reasoner")
            if reasoner and model_key(reasoner) != model_key(data["default_reasoner"]):  # Table 7: one MLLM, three reasoners
                model = f"{model} + {canonical_model(reasoner)}"
            notes = (("calibration",) if metric in MAC_CALIBRATION_METRICS else ()) + (("dad",) if row["setting"] == "DAD" else ())
            out.append(PaperValue(model, task, metric, value, notes))
        source = data["source"] + ". " + data["note"]
    else:
        tasks = {col: spec.get("task") for col, spec in data["columns"].items()}
        for row in data["rows"]:
            for col, v in row.items():
                if col != "model" and v is not None and tasks.get(col):
                    out.append(PaperValue(canonical_model(row["model"]), tasks[col], data["metric"], v))
        source = data["source"]
    return tuple(out), source


def _setting_cells(data: dict) -> Iterable[tuple[dict, str, str, float]]:
    """(row, task, metric, value) of a paper table whose rows are (table, model, setting): the table maps
    each column to our metric and, by the row's setting, to our task (a column's own tasks override its
    table's); a column without a metric or a task for the setting is data only."""
    for row in data["rows"]:
        table = data["tables"][row["table"]]
        for col, spec in table["columns"].items():
            task = (spec.get("tasks") or table.get("tasks") or {}).get(row["setting"])
            metric = spec.get("metric")
            if row.get(col) is not None and metric and task:
                yield row, task, metric, row[col]


@functools.lru_cache(maxsize=None)
def paper_index(bench: str) -> dict[tuple[str, str, str], PaperValue]:
    return {(e.model, e.task, e.metric): e for e in paper_entries(bench)[0]}


def paper_models() -> list[str]:
    """Every canonical paper model name, in the papers' order."""
    return list(dict.fromkeys(e.model for b in BENCHMARKS for e in paper_entries(b)[0]))


def resolve_paper_model(name: str | None) -> str:
    """The canonical name of the reference model (``--paper-model``, matched whatever its spelling)."""
    if name is None:
        return DEFAULT_PAPER_MODEL
    wanted = model_key(canonical_model(name))
    for m in paper_models():
        if model_key(m) == wanted:
            return m
    raise ReportError(f"unknown paper model {name!r}; valid names: {', '.join(sorted(paper_models(), key=str.casefold))}")


def paper_value(bench: str, model: str, task: str, metric: str) -> PaperValue | None:
    return paper_index(bench).get((model, task, metric))


# --------------------------------------------------------------------------- which numbers go where


def emma_family(task: str) -> str:
    """The variant group of an EMMA task (``emma_mini_judge_math`` -> ``emma_mini_judge``)."""
    for s in EMMA_SUBJECTS:
        if task.endswith("_" + s):
            return task[: -len(s) - 1]
    return task


def _emma_order(task: str) -> tuple:
    """mini before full; CoT, Direct, judge; the group, then its subjects in the paper's order."""
    fam = emma_family(task)
    size = 0 if fam.startswith("emma_mini") else 1
    variant = 2 if fam.endswith("_judge") else 1 if fam.endswith("_direct") else 0
    subject = task[len(fam) + 1 :]
    return (size, variant, fam, EMMA_SUBJECTS.index(subject) + 1 if subject else 0, task)


MSEARTH_HEADLINE = {
    "msearth_mcq": ("msearth_acc", "msearth_acc_strict"),
    "msearth_mcq_nocap": ("msearth_acc",),
    "msearth_open": ("msearth_oe_acc",),
    "msearth_caption": ("msearth_cap_score",),
}
SCIFIBENCH_SPLITS = ("scifibench_cs_f2c", "scifibench_cs_c2f", "scifibench_general_f2c", "scifibench_general_c2f")
# MuSciClaims' tasks in report order (the paper's settings, our prompt-family variants, its diagnostics)
MUSCICLAIMS_TASKS = (
    "musciclaims_d", "musciclaims_rd", "musciclaims_ird", "musciclaims_d_kv", "musciclaims_rd_kv", "musciclaims_ird_kv",
    "musciclaims_caption_only_d", "musciclaims_caption_only_rd", "musciclaims_figure_only_d", "musciclaims_figure_only_rd", "musciclaims_thrd",
)
# its chart (per task: F1 by class, then the macro F1) and its table (the rest that matters), in order
MUSCICLAIMS_CHART = (("support", "musciclaims_f1_support"), ("neutral", "musciclaims_f1_neutral"), ("contradict", "musciclaims_f1_contradict"), ("macro", "musciclaims_macro_f1"))
MUSCICLAIMS_TABLE = (
    "musciclaims_flip_rate", "musciclaims_correct_flip_rate", "musciclaims_invalid_rate",
    "musciclaims_macro_f1_biology", "musciclaims_macro_f1_chemistry", "musciclaims_macro_f1_physics",
    "musciclaims_panel_precision", "musciclaims_panel_recall", "musciclaims_panel_f1",
)
# MAC's tasks in report order (the snapshot's four variants, then the DAD variants), its per-task table
MAC_VARIANTS = ("i2t_info", "i2t_option", "t2i_info", "t2i_option")
MAC_TASKS = tuple(f"mac2025_{v}" for v in MAC_VARIANTS) + tuple(f"mac2025_dad_{v}" for v in MAC_VARIANTS)
MAC_PUBLISHERS = ("acs", "cell", "nature", "science")
MAC_TABLE = ("mac_acc", "mac_acc_lenient", "mac_ece", "mac_nll", "mac_rms", "mac_unparsable") + tuple(f"mac_publisher_{p}" for p in MAC_PUBLISHERS)
# printed with three decimals, as the MAC paper prints them (ECE 0.053)
MAC_CALIBRATION_METRICS = ("mac_ece", "mac_nll", "mac_rms")
# the per-doc record in a MAC samples line (probs, correct, parsed): the reliability diagram's input
MAC_RECORD = "mac_acc"
# the metric a benchmark task is judged by: EMMA's and SciFIBench's judge variants are scored by the judge
JUDGED_METRICS = ("emma_judge_acc", "msearth_oe_acc", "msearth_cap_score", "scifibench_acc_judge")


def headline_metrics(task: str) -> tuple[str, ...]:
    bench = benchmark_of(task)
    if bench == "emma":
        return ("emma_judge_acc",) if emma_family(task).endswith("_judge") else ("emma_acc",)
    if bench == "msearth":
        return MSEARTH_HEADLINE.get(task, ("msearth_acc",))
    if bench == "musciclaims":
        return ("musciclaims_macro_f1",)
    if bench == "mac":
        return ("mac_acc",)
    return ("scifibench_acc_judge",) if task.endswith("_judge") else ("scifibench_acc",)


def _order(bench: str, task: str) -> tuple:
    if bench == "emma":
        return _emma_order(task)
    if bench == "msearth":
        known = list(MSEARTH_HEADLINE)
        return (known.index(task) if task in known else len(known), task)
    if bench == "musciclaims":
        return (MUSCICLAIMS_TASKS.index(task) if task in MUSCICLAIMS_TASKS else len(MUSCICLAIMS_TASKS), task)
    if bench == "mac":
        return (MAC_TASKS.index(task) if task in MAC_TASKS else len(MAC_TASKS), task)
    base = task.removesuffix("_judge")
    rank = SCIFIBENCH_SPLITS.index(base) if base in SCIFIBENCH_SPLITS else len(SCIFIBENCH_SPLITS) + (0 if base in ("scifibench_f2c", "scifibench_c2f", "scifibench") else 1)
    return (rank, base, task.endswith("_judge"), task)


def bench_tasks(bench: str, runs: list[Run]) -> list[str]:
    return sorted({t for r in runs for t in r.results if benchmark_of(t) == bench}, key=lambda t: _order(bench, t))


def headline_tasks(bench: str, tasks: list[str]) -> list[str]:
    """The tasks a benchmark leads with: EMMA's variant groups (a subject only when its group was not
    run), MSEarth's four tasks, SciFIBench's four splits (rules, then the judge variant) and the pooled
    groups, every MuSciClaims and MAC task; SciFIBench's F->C / C->F groups and alignment variants are
    breakdowns."""
    present = set(tasks)
    if bench == "emma":
        return [t for t in tasks if t == emma_family(t) or emma_family(t) not in present]
    if bench in ("msearth", "musciclaims", "mac"):
        return [t for t in tasks if t != bench and not _is_mac_group(t)]
    keep = set(SCIFIBENCH_SPLITS) | {s + "_judge" for s in SCIFIBENCH_SPLITS} | {"scifibench", "scifibench_judge"}
    return [t for t in tasks if t in keep]


def _is_mac_group(task: str) -> bool:
    """MAC's group (``mac2025``): it reports no numbers of its own."""
    return re.fullmatch(r"mac\d{4}", task) is not None


def _has(runs: list[Run], task: str, metric: str) -> bool:
    return any(r.value(task, metric)[0] for r in runs)


def headline_keys(bench: str, runs: list[Run]) -> list[tuple[str, str]]:
    tasks = bench_tasks(bench, runs)
    return [(t, m) for t in headline_tasks(bench, tasks) for m in headline_metrics(t) if _has(runs, t, m)]


BREAKDOWN_FIELDS = ("category", "type", "task", "sphere", "image", "publisher")
# with k = 1 (no --repeats) both equal emma_acc of the same task: shown only where they differ from it
EMMA_REPEAT_METRICS = ("emma_maj@k", "emma_pass@k")


def slice_label(bench: str, metric: str) -> str:
    """``emma_category_2d_transformation`` -> ``category 2d transformation``; other metrics keep their name."""
    rest = metric[len(bench) + 1 :] if metric.startswith(bench + "_") else metric
    fieldname, _, label = rest.partition("_")
    if fieldname in BREAKDOWN_FIELDS and label:
        return f"{fieldname} {label.replace('_', ' ')}"
    return metric


@dataclass
class Family:
    """One breakdown table: a task and the tasks folded under it (EMMA's subjects)."""

    key: str
    title: str
    tasks: list[str]


def families(bench: str, runs: list[Run]) -> list[Family]:
    tasks = bench_tasks(bench, runs)
    alias = {t: a for r in runs for t, a in r.aliases.items()}

    def title(task: str) -> str:  # lmms-eval's display name, when the task has one, and the task
        return f"{alias[task]} · `{task}`" if alias.get(task, task) != task else f"`{task}`"

    if bench == "emma":
        out: dict[str, Family] = {}
        for t in tasks:
            fam = emma_family(t)
            out.setdefault(fam, Family(fam, title(fam), [])).tasks.append(t)
        return list(out.values())
    if bench == "msearth":
        return [Family(t, title(t), [t]) for t in tasks if t != "msearth"]
    if bench == "mac":
        return [Family(t, title(t), [t]) for t in tasks if not _is_mac_group(t)]
    # one table for all: the key is no task name, so every row says its task
    if bench == "musciclaims":
        return [Family("MuSciClaims", "Flip rates, invalid answers, macro F1 by domain, panel localization", tasks)] if tasks else []
    return [Family("SciFIBench", "By split, group and variant", tasks)] if tasks else []


def _short_task(task: str) -> str:
    """A SciFIBench split's task without the benchmark prefix (``cs_f2c_judge``); groups and other
    benchmarks' tasks keep their name."""
    if benchmark_of(task) != "scifibench":
        return task
    rest = task[len("scifibench_") :]
    return rest if rest.startswith(("cs_", "general_")) else task


def _same_values(runs: list[Run], task: str, metric: str, other: str) -> bool:
    """Every run that has ``metric`` for the task has the same value for ``other``."""
    return all(r.value(task, other) == r.value(task, metric) for r in runs if r.value(task, metric)[0])


def breakdown_rows(bench: str, fam: Family, runs: list[Run], paper_model: str) -> list[tuple[str, str, str, PaperValue | None]]:
    """(row label, task, metric, paper value) of a family's table, in order. Left out: what the
    headline shows, judge-failure counters (the counts table has them), EMMA's maj@k / pass@k where
    they equal emma_acc, an EMMA subject's overall-only metrics when its group ran (the group row has
    them), a *_judge task's rule-based breakdowns when its rules twin ran too, the category slices
    of SciFIBench's alignment variants, MuSciClaims' metrics other than :data:`MUSCICLAIMS_TABLE`
    (its per-class F1 are charted) and MAC's other than :data:`MAC_TABLE` (whose table repeats the
    headline's mac_acc beside the lenient and calibration numbers)."""
    tasks = set(fam.tasks)
    headline = set(headline_keys(bench, runs))
    rows = []
    for t in fam.tasks:
        part = "" if t == fam.key else t[len(fam.key) + 1 :] if t.startswith(fam.key + "_") else _short_task(t)
        primary = headline_metrics(t)
        twin_ran = t.endswith("_judge") and t[: -len("_judge")] in tasks
        # SciFIBench's alignment variants are about their accuracy against the plain split's
        slices_wanted = not (bench == "scifibench" and "_marked_" in t)
        # an EMMA subject's lenient / maj@k / rules-under-judge values: its group's row has the overall one
        group_says_the_rest = bench == "emma" and t != fam.key and fam.key in tasks
        metrics = sorted({m for r in runs for m in r.results.get(t, {})}, key=lambda m: (m not in primary, slice_label(bench, m) == m, m))
        if bench == "musciclaims":
            metrics = [m for m in MUSCICLAIMS_TABLE if m in metrics]
        elif bench == "mac":
            metrics = [m for m in MAC_TABLE if m in metrics]
        for m in metrics:
            if ((t, m) in headline and bench != "mac") or m.endswith("_judge_failed"):
                continue
            if twin_ran and m not in JUDGED_METRICS:
                continue
            if m in EMMA_REPEAT_METRICS and _same_values(runs, t, m, "emma_acc"):
                continue
            is_slice = slice_label(bench, m) != m
            if group_says_the_rest and m not in primary and not is_slice:
                continue
            if is_slice and not slices_wanted:
                continue
            label = part if (m in primary and part) else " · ".join(x for x in (part, slice_label(bench, m)) if x)
            rows.append((label, t, m, paper_value(bench, paper_model, t, m)))
    return rows


# --------------------------------------------------------------------------- counts

# the per-sample field holding a task's answer extraction, and the key naming the rule that fired
EXTRACTION_FIELDS = {"emma_acc": "rule", "msearth_acc": "rule", "scifibench_acc": "stage", "musciclaims_macro_f1": "stage", MAC_RECORD: "path"}
NO_ANSWER_RULES = ("none", "no-answer", "ambiguous")


def _extraction(sample: dict) -> str | None:
    """What a sample's answer extraction gave: ``answer``, ``none`` or ``weak`` (a similarity pick below
    LOW_CONFIDENCE_SIMILARITY), read from the task's one extraction field, so a doc counts once
    (emma_acc_lenient's own rule is not read); None when the task extracts no answer (judged free text)."""
    for name, key in EXTRACTION_FIELDS.items():
        v = sample.get(name)
        if not isinstance(v, dict):
            continue
        rule = v.get(key)
        if rule in NO_ANSWER_RULES or v.get("pred") == "INVALID":  # MuSciClaims: no decision parsed
            return "none"
        if name == MAC_RECORD and not v.get("parsed"):  # MAC: the official parser rejected the JSON
            return "none"
        if rule == "similarity":
            sim = v.get("similarity")
            if sim is None and v.get("option") is None and v.get("parsed") is None:
                return "none"  # the fallback had no option to pick from
            if _number(sim) and sim < LOW_CONFIDENCE_SIMILARITY:
                return "weak"
        return "answer"
    return None


def _judge_record(sample: dict) -> tuple[bool, dict | None]:
    """(is a judged task, the judge's record): the record travels in the judged metric's value under
    ``judge``; the value is None when no judge was configured."""
    for name in JUDGED_METRICS:
        if name in sample:
            v = sample[name]
            return True, (v.get("judge") if isinstance(v, dict) and isinstance(v.get("judge"), dict) else None)
    return False, None


def counts(run: Run, tasks: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per task with samples: docs scored; docs with no answer extracted and low-confidence similarity
    picks (None when the task extracts no answer); whether a judge ran (None: not a judged task; False:
    judged task, no judge configured), judge failures (by cause) and judge cache hits."""
    out = {}
    for task in tasks:
        ss = run.samples.get(task)
        if ss is None:
            continue
        c: dict[str, Any] = {"docs": len(ss), "no_answer": None, "low_confidence": None, "judged": None, "judge_failed": 0, "judge_failure_causes": {}, "judge_cache_hits": 0}
        causes: Counter = Counter()
        for s in ss:
            ex = _extraction(s)
            if ex is not None:
                c["no_answer"] = (c["no_answer"] or 0) + (ex == "none")
                c["low_confidence"] = (c["low_confidence"] or 0) + (ex == "weak")
            is_judged, rec = _judge_record(s)
            if is_judged:
                c["judged"] = bool(c["judged"]) or rec is not None
            if rec is not None:
                if rec.get("status") in ("request_failed", "parse_failed"):
                    c["judge_failed"] += 1
                    causes[str(rec.get("cause") or rec.get("status"))] += 1
                c["judge_cache_hits"] += bool(rec.get("cached"))
        c["judge_failure_causes"] = dict(causes.most_common())
        out[task] = c
    return out


def _count_unit(bench: str, task: str, run: Run) -> str:
    """EMMA subjects are counted under their variant group when the run has it (one row, not four)."""
    if bench == "emma" and emma_family(task) in run.results:
        return emma_family(task)
    return task


def _merge(cs: list[dict]) -> dict:
    def total(key):
        vals = [c[key] for c in cs if c[key] is not None]
        return sum(vals) if vals else None

    causes: Counter = Counter()
    for c in cs:
        causes.update(c["judge_failure_causes"])
    judged = [c["judged"] for c in cs if c["judged"] is not None]
    return {
        "docs": sum(c["docs"] for c in cs),
        "no_answer": total("no_answer"),
        "low_confidence": total("low_confidence"),
        "judged": any(judged) if judged else None,
        "judge_failed": sum(c["judge_failed"] for c in cs),
        "judge_failure_causes": dict(causes.most_common()),
        "judge_cache_hits": sum(c["judge_cache_hits"] for c in cs),
    }


# --------------------------------------------------------------------------- rendering tables


def _fmt(v: Any, metric: str = "") -> str:
    if v is None:
        return UNAVAILABLE
    return f"{v:.3f}" if metric in MAC_CALIBRATION_METRICS else f"{v:.2f}"


def _cell(run: Run, task: str, metric: str) -> str:
    present, v = run.value(task, metric)
    return _fmt(v, metric) if present else MISSING


def _table(header: list[str], rows: list[list[str]], label_columns: int = 1) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i < label_columns else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _footnotes(values: Iterable[PaperValue | None]) -> list[str]:
    used = dict.fromkeys(n for v in values if v is not None for n in v.notes)
    return [f"{PROTOCOL_NOTES[n][0]} {PROTOCOL_NOTES[n][1]}" for n in PROTOCOL_NOTES if n in used]


def _partial_note(run: Run) -> str:
    """What a partial run left out: "`--limit 2`, 14 of 22 docs in <the tasks cut>"."""
    parts = []
    if run.limit is not None:
        limit = int(run.limit) if isinstance(run.limit, float) and run.limit.is_integer() else run.limit
        parts.append(f"`--limit {limit}`")
    cut = sorted((t for t, (scored, total) in run.n_samples.items() if scored < total), key=lambda t: (benchmark_of(t) or "", t))
    if cut:
        where = ", ".join(cut[:3]) + (f" and {len(cut) - 3} more tasks" if len(cut) > 3 else "")
        parts.append(f"{sum(run.n_samples[t][0] for t in cut)} of {sum(run.n_samples[t][1] for t in cut)} docs in {where}")
    return ", ".join(parts)


def headline_section(runs: list[Run], benches: list[str], paper_model: str) -> str:
    rows, refs = [], []
    for b in benches:
        for t, m in headline_keys(b, runs):
            ref = paper_value(b, paper_model, t, m)
            refs.append(ref)
            cells = []
            for r in runs:
                cells += [_cell(r, t, m), _ci_cell(r, t, m)]
            rows.append([BENCHMARKS[b], t, m] + cells + [ref.cell if ref else MISSING])
    head = ["benchmark", "task", "metric"]
    for r in runs:
        head += [r.column, "95% CI"]
    text = ["## Headline", "", _table(head + [f"paper: {paper_model}"], rows, 3), ""]
    text.append(BOOTSTRAP_NOTE.format(n=f"{BOOTSTRAP['resamples']:,}", seed=BOOTSTRAP["seed"]) + "\n")
    text.append(
        f"Paper column: the published number of {paper_model} for the same task and metric (`--paper-model` picks another; "
        "\"Paper reference\" at the end lists them all). n/a: no value (a judged metric without a judge, a slice with no docs); –: not run, or not in the paper."
    )
    text += [""] + [n + "  " for n in _footnotes(refs)]
    elsewhere = [f"{t} · {m}" for b in benches for t, m in headline_keys(b, runs) if not paper_value(b, paper_model, t, m) and any(e.task == t and e.metric == m for e in paper_entries(b)[0])]
    if elsewhere:
        text += ["", f"{paper_model} has no paper number for {', '.join(elsewhere)}; other paper models do (Paper reference)."]
    text += ["", "## Runs", ""]
    for r in runs:
        note = f" — **partial**: {_partial_note(r)}" if r.partial else ""
        if r.rescore:
            src = r.rescore.get("source") or {}
            note += f" — rescored without the model from {src.get('kind', 'a run')} `{src.get('path', '?')}`" + (" (**forced** over a version change)" if r.rescore.get("version_changes") else "")
        text.append(f"- `{r.column}`{note}: {r.path}")
    text += ["", COUNTS_NOTE]
    return "\n".join(text) + "\n"


# --------------------------------------------------------------------------- error bars, comparisons, versions

BOOTSTRAP = {"resamples": DEFAULT_RESAMPLES, "seed": DEFAULT_SEED}
_CI_CACHE: dict[tuple, Any] = {}
BOOTSTRAP_NOTE = (
    "95% CI: percentile bootstrap over the run's docs (from `--log_samples`), {n} resamples, seed {seed} (`--resamples`, `--seed`); "
    "a corpus metric (macro F1, flip rate, ECE) is recomputed on every resample, a group's interval pools its tasks' docs. "
    "–: no samples to resample (a run without `--log_samples`) or no value."
)


def _aggregation(run: Run, task: str, metric: str) -> str | None:
    """``module.function`` aggregating ``metric`` in ``task`` (its YAML; a group: its tasks', if one)."""
    paths = _yaml_paths(run.include_path)
    if task in paths:
        return _metric_aggregations(paths[task]).get(metric)
    found = {_metric_aggregations(paths[t]).get(metric) for t in _leaves(run, task) if t in paths}
    return found.pop() if len(found) == 1 else None


@functools.lru_cache(maxsize=None)
def _metric_aggregations(path: str) -> dict[str, str]:
    """A task YAML's aggregations, read once per report process (every interval asks for them)."""
    from lmms_eval_earthsci.yamlgen import metric_aggregations

    return metric_aggregations(path)


@functools.lru_cache(maxsize=8)
def _yaml_paths(include_path: str | None) -> dict[str, str]:
    from lmms_eval_earthsci.yamlgen import task_yaml_paths

    return task_yaml_paths([p for p in str(include_path or "").split(",") if p])


def _leaves(run: Run, task: str) -> list[str]:
    if task not in run.subtasks:
        return [task]
    return [leaf for t in run.subtasks[task] for leaf in _leaves(run, t)]


def doc_items(run: Run, task: str, metric: str) -> dict[tuple[str, Any], Any] | None:
    """``{(task, doc_id): per-doc item}`` of a task's (or a group's tasks') samples; None without samples."""
    leaves = _leaves(run, task)
    if not all(t in run.samples for t in leaves):
        return None
    return {(t, s.get("doc_id", i)): s.get(metric) for t in leaves for i, s in enumerate(run.samples[t])}


def interval(run: Run, task: str, metric: str) -> Interval | None:
    """The metric's 95 % bootstrap interval in this run (cached), or None."""
    if BOOTSTRAP["resamples"] <= 0:
        return None
    key = (run.path, run.label, task, metric)
    if key not in _CI_CACHE:
        from lmms_eval_earthsci.core.stats import bootstrap_ci

        items = doc_items(run, task, metric)
        present, value = run.value(task, metric)
        ok = items is not None and present and value is not None and any(v is not None for v in items.values())
        _CI_CACHE[key] = bootstrap_ci(list(items.values()), _aggregation(run, task, metric), BOOTSTRAP["resamples"], BOOTSTRAP["seed"]) if ok else None
    return _CI_CACHE[key]


def _ci_cell(run: Run, task: str, metric: str) -> str:
    iv = interval(run, task, metric)
    if iv is None or iv.low is None:
        return MISSING
    return f"{_fmt(iv.low, metric)}–{_fmt(iv.high, metric)}"


def _version(run: Run, task: str) -> str | None:
    v = run.versions.get(task)
    return None if v is None else str(v)


def versions_section(runs: list[Run], benches: list[str]) -> str:
    """The comparability version of every task run (``metadata.version``), and a warning where runs
    compared here were scored by different versions of a task."""
    tasks = [t for b in benches for t in bench_tasks(b, runs)]
    rows, differ = [], []
    for t in tasks:
        vs = [_version(r, t) for r in runs]
        if all(v is None for v in vs):
            continue
        rows.append([t] + [v or MISSING for v in vs])
        if len({v for v in vs if v is not None}) > 1:
            differ.append(f"**Warning**: `{t}` was scored by different task versions ({', '.join(f'{r.column}: {v}' for r, v in zip(runs, vs) if v)}); its numbers may not compare.")
    if not rows:
        return ""
    text = ["## Task versions", "", "Each task's comparability version (`metadata.version`, recorded by lmms-eval in `versions`): it moves whenever a change could move the task's scores.", ""]
    text += differ + ([""] if differ else [])
    if len(runs) > 1 or differ:
        text.append(_table(["task"] + [r.column for r in runs], rows))
    else:
        text.append(", ".join(f"`{t}` {v}" for t, v in ((row[0], row[1]) for row in rows)))
    return "\n".join(text) + "\n"


def paired_section(runs: list[Run], benches: list[str]) -> str:
    """Every later run against the first on each headline metric, doc by doc: the difference on the
    docs both have, its paired 95 % bootstrap interval, McNemar's exact test for right/wrong metrics;
    docs in one run only are counted, not compared."""
    if len(runs) < 2 or BOOTSTRAP["resamples"] <= 0:
        return ""
    from lmms_eval_earthsci.core.stats import paired

    base = runs[0]
    rows, skipped = [], []
    for b in benches:
        for t, m in headline_keys(b, runs):
            a_items = doc_items(base, t, m)
            for r in runs[1:]:
                if not (base.value(t, m)[0] and r.value(t, m)[0]):
                    continue
                b_items = doc_items(r, t, m)
                if a_items is None or b_items is None:
                    skipped.append(f"{t} · {m} ({r.column})")
                    continue
                res = paired(b_items, a_items, _aggregation(r, t, m), BOOTSTRAP["resamples"], BOOTSTRAP["seed"])
                iv = res.interval
                ci = MISSING if iv.low is None else f"{_fmt(iv.low, m)}–{_fmt(iv.high, m)}"
                flag = "yes" if iv.excludes(0.0) else "no"
                vers = {_version(base, t), _version(r, t)} - {None}
                if len(vers) > 1:
                    flag += " (versions differ)"
                p = MISSING if res.mcnemar_p is None else f"{res.mcnemar_p:.3g} ({res.discordant[0]}/{res.discordant[1]})"
                diff = MISSING if res.diff is None else f"{res.diff:+.2f}"
                rows.append([t, m, f"{r.column} − {base.column}", diff, ci, flag, p, str(res.common), str(res.only_b), str(res.only_a)])
    if not rows and not skipped:
        return ""
    text = [
        "## Paired comparisons",
        "",
        f"Each run minus the first (`{base.column}`), on the docs both scored (matched by task and doc_id): the difference, its paired 95% bootstrap interval "
        f"(the same resampled docs in both runs; {BOOTSTRAP['resamples']:,} resamples, seed {BOOTSTRAP['seed']}), whether the interval excludes 0, and McNemar's exact "
        "test where every per-doc value is right or wrong (p; discordant docs: this run right and the first wrong / the reverse). Docs only one run has are counted, not compared.",
        "",
    ]
    if rows:
        text.append(_table(["task", "metric", "runs", "difference", "95% CI", "excludes 0", "McNemar p", "docs compared", "only in first", "only in this run"], rows, 3))
    if skipped:
        text += ["", "Not compared (a run without `--log_samples`): " + ", ".join(skipped) + "."]
    return "\n".join(text) + "\n"


def _judge_cells(c: dict) -> list[str]:
    if c["judged"] is None:
        return [MISSING, MISSING]
    if not c["judged"]:
        return ["no judge", "no judge"]
    failed = str(c["judge_failed"])
    if c["judge_failure_causes"]:
        failed += " (" + ", ".join(f"{k} ×{n}" for k, n in c["judge_failure_causes"].items()) + ")"
    return [failed, str(c["judge_cache_hits"])]


def counts_table(bench: str, runs: list[Run]) -> str:
    tasks = bench_tasks(bench, runs)
    per_unit: dict[tuple[str, int], list[dict]] = {}
    for i, r in enumerate(runs):
        for t, c in counts(r, tasks).items():
            per_unit.setdefault((_count_unit(bench, t, r), i), []).append(c)
    if not per_unit:
        return ""
    rows = []
    for unit, i in sorted(per_unit, key=lambda k: (_order(bench, k[0]), k[1])):
        c = _merge(per_unit[(unit, i)])
        ex = [MISSING if c[k] is None else str(c[k]) for k in ("no_answer", "low_confidence")]
        rows.append([unit, runs[i].column, str(c["docs"])] + ex + _judge_cells(c))
    head = ["task", "run", "docs scored", "no answer extracted", "low-confidence picks", "judge failures", "judge cache hits"]
    return "\n".join(["### Counts", "", _table(head, rows, 2), ""])


COUNTS_NOTE = (
    "Counts (each benchmark's last table) come from the samples (`--log_samples`): a doc counts once per task; a low-confidence pick "
    f"is MSEarth's similarity fallback choosing an option at cosine similarity < {LOW_CONFIDENCE_SIMILARITY} (an answer that is "
    "noise, not counted as extracted); for MuSciClaims, no answer extracted is an INVALID decision; for MAC, an answer the official "
    "probability parser could not read (wrong in `mac_acc`, left out of ECE / NLL / RMS); judge failures (by cause) are "
    "scored as each benchmark says (wrong; left out of the mean for MSEarth captions); `no judge`: a judged task run without a judge."
)


def paper_table(bench: str, runs: list[Run]) -> str:
    """Every paper model's numbers for the headline metrics of the tasks run (a SciFIBench split run
    without its judge variant still gets the paper's column for it: that is where it compares; an
    EMMA judge column only when the CoT one is not shown, which it would repeat)."""
    entries, source = paper_entries(bench)
    keys = headline_keys(bench, runs)
    ran = {t for t, _ in keys}
    for t in list(ran):
        if bench == "scifibench" and t in SCIFIBENCH_SPLITS and (t + "_judge", "scifibench_acc_judge") not in keys:
            keys.append((t + "_judge", "scifibench_acc_judge"))
    have = {(e.task, e.metric) for e in entries}
    cols = sorted((k for k in keys if k in have), key=lambda k: (_order(bench, k[0]), k[1]))
    # EMMA's judge column would repeat the CoT column (the paper's numbers are rule-based)
    cols = [(t, k) for t, k in cols if not (k == "emma_judge_acc" and (t.replace("_judge", "", 1), "emma_acc") in cols)]
    if not cols:
        return ""
    models = [m for m in dict.fromkeys(e.model for e in entries) if any(paper_value(bench, m, t, k) for t, k in cols)]
    rows, vals = [], []
    for m in models:
        cells = []
        for t, k in cols:
            v = paper_value(bench, m, t, k)
            vals.append(v)
            cells.append(v.cell if v else MISSING)
        rows.append([m] + cells)
    text = [f"### {BENCHMARKS[bench]}", "", _table(["paper model"] + [f"{t} · {k}" for t, k in cols], rows), "", f"Source: {source}", ""]
    return "\n".join(text + [n + "  " for n in _footnotes(vals)] + [""])


def breakdown_tables(bench: str, runs: list[Run], paper_model: str) -> str:
    out = []
    for fam in families(bench, runs):
        rows = []
        refs = []
        for label, t, m, ref in breakdown_rows(bench, fam, runs, paper_model):
            values = [r.value(t, m) for r in runs]
            if not any(present and v is not None for present, v in values):
                continue  # no run has a number here
            refs.append(ref)
            rows.append([label] + [_fmt(v, m) if present else MISSING for present, v in values] + ([ref.cell if ref else MISSING]))
        if not rows:
            continue
        with_paper = any(refs)
        if not with_paper:
            rows = [r[:-1] for r in rows]
        header = ["slice"] + [r.column for r in runs] + ([f"paper: {paper_model}"] if with_paper else [])
        out += [f"### {fam.title}", "", _table(header, rows), ""] + [n + "  " for n in _footnotes(refs)]
        if _footnotes(refs):
            out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------- charts


@dataclass
class Bar:
    group: str  # x-axis label
    run: str  # the run's column label
    series: str  # what is measured, when a chart shows two metrics per group ("" otherwise)
    task: str
    metric: str
    value: float | None  # None: n/a (written, not drawn)
    docs: int | None  # docs the value averages (None: unknown, e.g. without --log_samples)
    paper: float | None  # the reference model's value, marked on the bar
    ci: tuple[float, float] | None = None  # the 95 % bootstrap interval, drawn as a whisker


@dataclass
class Chart:
    slug: str
    title: str
    bars: list[Bar]
    paper_label: str
    score_scale: bool = False  # 1-5 judge scores instead of percent


def doc_count(run: Run, task: str, metric: str) -> int | None:
    """Docs behind one value: the samples whose value for the metric is a number (a breakdown's slice,
    a judged metric's scored docs; a MuSciClaims corpus metric's doc record); without samples,
    lmms-eval's n-samples for a task's own metric."""
    ss = run.samples.get(task)
    if ss is not None:
        record = benchmark_of(task) == "musciclaims"  # a record per doc (None: not scored, e.g. a panel)
        n = 0
        for s in ss:
            v = s.get(metric)
            n += _number(v) or (isinstance(v, dict) and _number(v.get("score"))) or (record and isinstance(v, (dict, list)))
        return n
    if metric in headline_metrics(task) and task in run.n_samples:
        return run.n_samples[task][0]
    return None


def _chart(bench: str, slug: str, title: str, groups: list[tuple[str, list[tuple[str, str, str]]]], runs: list[Run], paper_model: str, score_scale: bool = False) -> Chart:
    """groups: (x label, [(series, task, metric)]); a (run, series) the run does not have gets no bar."""
    bars, notes = [], set()
    for label, series in groups:
        for name, task, metric in series:
            ref = paper_value(bench, paper_model, task, metric)
            if ref:
                notes.update(ref.notes)
            for r in runs:
                present, v = r.value(task, metric)
                if present:
                    iv = interval(r, task, metric) if v is not None else None
                    ci = (iv.low, iv.high) if iv is not None and iv.low is not None else None
                    bars.append(Bar(label, r.column, name, task, metric, v, doc_count(r, task, metric) if v is not None else None, ref.value if ref else None, ci))
    short = [PROTOCOL_NOTES[n][2] for n in PROTOCOL_NOTES if n in notes]
    return Chart(slug, title, bars, f"paper: {paper_model}" + (f" ({', '.join(short)})" if short else ""), score_scale)


def chart_specs(bench: str, runs: list[Run], paper_model: str) -> list[Chart]:
    """The charts of a benchmark: EMMA by subject (per variant; the judge variant plots emma_judge_acc),
    MSEarth by image type and category and by sphere (per task), SciFIBench by split (rules and the
    LLM extractor side by side: the paper's marks sit on the extractor's bars), MuSciClaims' F1 by
    class and macro F1 (per task: the paper's marks are its numbers for the task's prompt setting)."""
    tasks = bench_tasks(bench, runs)
    alias = {t: a for r in runs for t, a in r.aliases.items()}
    charts = []
    if bench == "emma":
        for fam in families(bench, runs):
            metric = headline_metrics(fam.key)[0]
            groups = [(t[len(fam.key) + 1 :], [("", t, metric)]) for t in fam.tasks if t != fam.key]
            if groups:
                charts.append(_chart(bench, f"{fam.key}_by_subject", f"{alias.get(fam.key, fam.key)}: {metric} by subject", groups, runs, paper_model))
    elif bench == "msearth":
        for t in tasks:
            if t == "msearth":
                continue
            metrics = sorted({m for r in runs for m in r.results.get(t, {})})
            main = headline_metrics(t)[0]
            order = {"image": ("single", "multi", "cross"), "category": ("discovery", "perception")}
            types = [f"msearth_{f}_{v}" for f, vs in order.items() for v in vs if f"msearth_{f}_{v}" in metrics]
            spheres = [m for m in metrics if m.startswith("msearth_sphere_")]
            score = main.endswith("_score")
            if types:
                charts.append(_chart(bench, f"{t}_by_image_and_category", f"{t}: {main} by image type and question category", [(slice_label(bench, m), [("", t, m)]) for m in types], runs, paper_model, score))
            if spheres:
                charts.append(_chart(bench, f"{t}_by_sphere", f"{t}: {main} by primary sphere", [(slice_label(bench, m).replace("sphere ", ""), [("", t, m)]) for m in spheres], runs, paper_model, score))
    elif bench == "musciclaims":
        for t in tasks:
            groups = [(label, [("", t, m)]) for label, m in MUSCICLAIMS_CHART if _has(runs, t, m)]
            if groups:
                charts.append(_chart(bench, f"{t}_f1_by_class", f"{t}: F1 by class (musciclaims_f1_*) and macro F1", groups, runs, paper_model))
    else:
        groups = []
        for s in SCIFIBENCH_SPLITS:
            series = [(name, task, metric) for name, task, metric in (("rules", s, "scifibench_acc"), ("LLM extractor", s + "_judge", "scifibench_acc_judge")) if _has(runs, task, metric)]
            if series:
                groups.append((s.replace("scifibench_", ""), series))
        if groups:
            charts.append(_chart(bench, "scifibench_by_split", "SciFIBench by split: scifibench_acc (rules), scifibench_acc_judge (LLM extractor)", groups, runs, paper_model))
    return charts


def draw_chart(chart: Chart):
    """The matplotlib Figure of a chart (the caller saves and closes it). Bars: one colour per run,
    hatched for a chart's second series; a black whisker for its 95 % bootstrap interval; over each bar its value and ``n=<docs>`` (a 0 bar has no
    height to see), ``n/a`` where there is no value; a black tick across a bar at the reference
    model's value. Every run and series is in the legend, even one with no bar drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    groups = list(dict.fromkeys(b.group for b in chart.bars))
    series = list(dict.fromkeys(b.series for b in chart.bars))
    runs = list(dict.fromkeys(b.run for b in chart.bars))
    slots = [(s, r) for s in series for r in runs if any(b.series == s and b.run == r for b in chart.bars)]
    width = 0.8 / max(1, len(slots))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    top = 5.0 if chart.score_scale else 100.0
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(groups) * max(1, len(slots)) / 2 + 3), 3.8))

    def style(run: str, name: str) -> dict:
        return {"facecolor": colours[runs.index(run) % len(colours)], "hatch": "//" if series.index(name) else None, "edgecolor": "white"}

    for b in chart.bars:
        k = slots.index((b.series, b.run))
        x = groups.index(b.group) + (k - (len(slots) - 1) / 2) * width
        if b.value is None:
            ax.text(x, top * 0.01, UNAVAILABLE, ha="center", va="bottom", fontsize=6, color="grey")
        else:
            ax.bar(x, b.value, width, **style(b.run, b.series))
            label_at = b.value
            if b.ci is not None:
                ax.errorbar(x, b.value, yerr=[[max(0.0, b.value - b.ci[0])], [max(0.0, b.ci[1] - b.value)]], fmt="none", ecolor="black", elinewidth=0.8, capsize=2, zorder=4)
                label_at = max(b.value, b.ci[1])
            ax.text(x, label_at + top * 0.01, f"{b.value:.3g}", ha="center", va="bottom", fontsize=6)
            if b.docs is not None:
                ax.text(x, label_at + top * 0.045, f"n={b.docs}", ha="center", va="bottom", fontsize=5, color="dimgrey")
        if b.paper is not None:
            ax.hlines(b.paper, x - width / 2, x + width / 2, colors="black", linewidth=2.5, zorder=3)
    handles = [Patch(label=r + (f" · {s_}" if len(series) > 1 and s_ else ""), **style(r, s_)) for s_, r in slots]
    if any(b.paper is not None for b in chart.bars):
        handles.insert(0, Line2D([], [], color="black", linewidth=2.5, label=chart.paper_label))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, top * 1.08)
    ax.set_ylabel("score (1-5)" if chart.score_scale else "%")
    ax.set_title(chart.title, fontsize=9)
    ax.legend(handles=handles, fontsize=7)
    fig.tight_layout()
    return fig


def plot(bench: str, runs: list[Run], out_dir: str, paper_model: str) -> list[str]:
    """Write the benchmark's charts that have a number to show; returns their paths."""
    written = []
    for chart in chart_specs(bench, runs, paper_model):
        if not any(b.value is not None for b in chart.bars):
            continue
        import matplotlib.pyplot as plt

        fig = draw_chart(chart)
        path = os.path.join(out_dir, f"{chart.slug}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


@dataclass
class Reliability:
    """A MAC task's reliability diagram: per run with samples, the ECE bins of its parsed answers."""

    slug: str
    title: str
    series: list[tuple[str, list[dict], float | None]]  # (run column, scoring.reliability bins, our ECE)
    paper_label: str  # the reference model's ECE for the task, or that the paper has none


def reliability_specs(runs: list[Run], paper_model: str) -> tuple[list[Reliability], list[str]]:
    """The reliability diagrams of the MAC tasks run (from the per-doc records of the samples files, as
    :mod:`lmms_eval_earthsci.mac.scoring` bins them for ECE) and, for the tasks or runs without one,
    why (no samples, no parsed answer)."""
    from lmms_eval_earthsci.mac import scoring

    charts, missing = [], []
    for t in headline_tasks("mac", bench_tasks("mac", runs)):
        ran = [r for r in runs if r.value(t, MAC_RECORD)[0]]
        if not ran:
            continue
        no_samples = [r.column for r in ran if t not in r.samples]
        if no_samples:
            missing.append(f"`{t}`: no reliability diagram for {', '.join(no_samples)}: no samples file (`*_samples_{t}.jsonl`; run lmms-eval with `--log_samples`).")
        series = []
        for r in ran:
            if t not in r.samples:
                continue
            items = [s[MAC_RECORD] for s in r.samples[t] if isinstance(s.get(MAC_RECORD), dict)]
            bins = scoring.reliability(items)
            if any(b["n"] for b in bins):
                series.append((r.column, bins, scoring.ece(items)))
            else:
                missing.append(f"`{t}`: no reliability diagram for {r.column}: no parsed answer to bin.")
        if series:
            ref = paper_value("mac", paper_model, t, "mac_ece")
            paper = f"paper ({paper_model}): ECE {_fmt(ref.value, 'mac_ece')}" if ref else f"paper: no ECE of {paper_model}"
            charts.append(Reliability(f"{t}_reliability", f"{t}: reliability, {scoring.ECE_BINS} bins (lo, hi] · {paper}", series, paper))
    return charts, missing


def draw_reliability(chart: Reliability):
    """The matplotlib Figure of a reliability diagram (the caller saves and closes it): per bin and run a
    bar at the bin's accuracy, a black tick across it at the bin's mean confidence and ``n`` over it; the
    diagonal is perfect calibration; the legend gives each run's ECE and the docs binned."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1)
    k = len(chart.series)
    handles = [Line2D([], [], linestyle="--", color="grey", label="perfect calibration"), Line2D([], [], color="black", linewidth=2, label="mean confidence in bin")]
    for i, (run, bins, ece) in enumerate(chart.series):
        colour = colours[i % len(colours)]
        for b in bins:
            if not b["n"]:
                continue
            width = (b["hi"] - b["lo"]) * 0.9 / k
            x = b["lo"] + (b["hi"] - b["lo"]) * 0.05 + width * (i + 0.5)
            ax.bar(x, b["accuracy"], width, color=colour, edgecolor="white")
            ax.hlines(b["confidence"], x - width / 2, x + width / 2, colors="black", linewidth=2, zorder=3)
            ax.text(x, max(b["accuracy"], b["confidence"]) + 0.02, f"n={b['n']}", ha="center", va="bottom", fontsize=5, color="dimgrey")
        binned = sum(b["n"] for b in bins)
        handles.append(Patch(color=colour, label=f"{run}: ECE {_fmt(ece, 'mac_ece')} (n={binned} binned)"))
    handles.append(Line2D([], [], linestyle="none", label=chart.paper_label))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("confidence (the answer's largest normalised probability)")
    ax.set_ylabel("accuracy in bin")
    ax.set_title(chart.title, fontsize=8)
    ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # outside: bars reach every corner
    fig.tight_layout()
    return fig


def plot_reliability(runs: list[Run], out_dir: str, paper_model: str) -> tuple[list[str], list[str]]:
    """Write the MAC reliability diagrams; returns their paths and the notes on those not drawn."""
    charts, missing = reliability_specs(runs, paper_model)
    written = []
    for chart in charts:
        import matplotlib.pyplot as plt

        fig = draw_reliability(chart)
        path = os.path.join(out_dir, f"{chart.slug}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written, missing


# --------------------------------------------------------------------------- the report


def benchmark_section(bench: str, runs: list[Run], out_dir: str, paper_model: str) -> str:
    text = [f"## {BENCHMARKS[bench]}", ""]
    if bench == "scifibench" and any(t in SCIFIBENCH_SPLITS for r in runs for t in r.results) and not any(t.endswith("_judge") for r in runs for t in r.results if benchmark_of(t) == bench):
        text += ["The paper's numbers come from an LLM answer extractor: they compare with `scifibench_acc_judge` (run the `scifibench_judge` tasks with a judge), not with the rules-only `scifibench_acc`.", ""]
    if bench == "musciclaims":
        text += ["The paper's numbers (§) are v1's, on 918 biology items; the Hub data adds chemistry and physics, so the like-for-like comparison is `musciclaims_macro_f1_biology` (the paper's Overall F sits beside it). The charts plot F1 per class and the macro F1 of each task, the paper's marks being the numbers for the task's prompt setting.", ""]
    if bench == "mac":
        from lmms_eval_earthsci.mac.scoring import ECE_BINS

        text += [
            (
                "`mac_acc` is percent, the paper's Acc.(%) (an answer the official parser cannot read is wrong); `mac_ece`, `mac_nll` and `mac_rms` are on the paper's scale (ECE 0.053), over the parsed answers only (°: the paper's ECE script is unknown, so they may differ slightly); "
                "`mac_acc_lenient` also reads a bare letter, `mac_unparsable` is the % of answers the parser rejected, `publisher *` the accuracy per publisher. "
                f"The reliability diagrams bin each parsed answer's confidence (its largest normalised probability) into the ECE's {ECE_BINS} equal-width bins (lo, hi] on (0, 1]."
            ),
            "",
        ]
    text.append(breakdown_tables(bench, runs, paper_model))
    pngs = plot(bench, runs, out_dir, paper_model)
    if bench == "mac":
        drawn, missing = plot_reliability(runs, out_dir, paper_model)
        pngs += drawn
        text += [m + "  " for m in missing] + ([""] if missing else [])
    for png in pngs:
        text += [f"![{os.path.basename(png)}]({os.path.basename(png)})", ""]
    text.append(counts_table(bench, runs))
    return "\n".join(text)


def write_report(paths: Sequence[str], out_dir: str | None = None, paper_model: str | None = None, intro: str | None = None, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> tuple[str, str]:
    """Write ``report.md`` and the PNGs; returns (report path, markdown). ``intro``: a paragraph put
    first, under "What you are looking at" (the demo explains its tiny model there). ``resamples``
    (0: no intervals) and ``seed``: the bootstrap of the error bars and paired comparisons."""
    if resamples < 0:
        raise ReportError("--resamples must be 0 (no error bars) or more")
    BOOTSTRAP.update(resamples=resamples, seed=seed)
    _CI_CACHE.clear()
    ref = resolve_paper_model(paper_model)
    runs = read_runs(paths)
    out_dir = out_dir or os.path.join(paths[0] if os.path.isdir(paths[0]) else os.path.dirname(paths[0]), "report")
    os.makedirs(out_dir, exist_ok=True)
    benches = [b for b in BENCHMARKS if any(benchmark_of(t) == b for r in runs for t in r.results)]
    if not benches:
        names = list(BENCHMARKS.values())
        raise ReportError(f"{', '.join(paths)}: no results of {', '.join(names[:-1])} or {names[-1]} tasks")
    md = ["# lmms_eval_earthsci report", ""]
    if intro:
        md += ["## What you are looking at", "", intro.strip(), ""]
    md.append(headline_section(runs, benches, ref))
    md.append(versions_section(runs, benches))
    md.append(paired_section(runs, benches))
    md += [benchmark_section(b, runs, out_dir, ref) for b in benches]
    papers = [paper_table(b, runs) for b in benches]
    if any(papers):
        md += ["## Paper reference", "", "Every paper model's published number for the headline metrics of the tasks run (one row per model, names normalised across the papers).", ""] + papers
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(md)).strip() + "\n"
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write(text)
    return path, text
