"""What a benchmark declares, so that every command can serve it without naming it.

A benchmark is one folder (``lmms_eval_earthsci/evals/<name>/``, or a lab's own package) whose
``benchmark.py`` defines ``BENCHMARK = Benchmark(...)``; :mod:`lmms_eval_earthsci.registry` lists them
(ours, then those registered from outside through the ``lmms_eval_earthsci.benchmarks`` entry-point
group or ``EARTHSCI_BENCHMARKS``). The commands iterate the registry: YAML generation and the suite
groups, ``report`` (its section comes from the benchmark's :class:`ReportSpec`, nothing else),
``rescore --from`` (its importers), ``check-mirror`` and ``write-fixtures``, the demo's task list, the
bootstrap kernels. A benchmark that declares no chart gets none.

References to code are ``"module:attribute"`` strings, imported when first used, so that listing the
benchmarks (lmms-eval does it at every start, on every rank) imports none of their code.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci import TASKS_DIR
from lmms_eval_earthsci.core.scoring.papers import canonical_model
from lmms_eval_earthsci.core.scoring.scaling import CurveNames


def resolve_ref(ref: str) -> Any:
    """The object a ``"module:attribute"`` reference names."""
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


# --------------------------------------------------------------------------- paper numbers


@dataclass(frozen=True)
class ProtocolNote:
    """Where our protocol differs from a paper's for a paper value: the mark beside it, the footnote,
    and the short form a chart legend uses."""
    mark: str
    footnote: str
    short: str


@dataclass(frozen=True)
class PaperValue:
    model: str  # canonical name (core.scoring.papers.canonical_model)
    task: str
    metric: str
    value: float
    notes: tuple[str, ...] = ()  # keys of the benchmark's protocol notes


def setting_cells(data: Mapping[str, Any]) -> Iterable[tuple[dict, str, str, float]]:
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


# --------------------------------------------------------------------------- the report's view of a benchmark


@dataclass
class Family:
    """One breakdown table: a task and the tasks folded under it (EMMA's subjects)."""
    key: str
    title: str
    tasks: list[str]


@dataclass(frozen=True)
class ChartSpec:
    """A bar chart: ``groups`` are (x label, [(series, task, metric)]); the report draws one bar per run
    that has the value, with its interval, its doc count and the reference model's mark."""
    slug: str
    title: str
    groups: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...]
    score_scale: bool = False  # 1-5 judge scores instead of percent


@dataclass(frozen=True)
class ReliabilitySpec:
    """A reliability diagram: per run, confidence bins (``{"lo", "hi", "n", "accuracy", "confidence"}``)
    and the calibration error they give; the report draws it."""
    slug: str
    title: str
    series: tuple[tuple[str, tuple[dict, ...], float | None], ...]  # (run column, bins, ECE)
    paper_label: str
    ece_format: Callable[[float | None], str] = str


@dataclass(frozen=True)
class ScalingTable:
    """A test-time-scaling table in a paper's shape (EMMA's Table 3): per run, a row per method with its
    accuracy at each N, the paper's rows beside, and a chart of accuracy against N. A run's rows come from the
    first of ``tasks`` it sampled (a value at N = 2); ``methods`` are (row label, metric with ``{}`` for N,
    reward-model label or None); ``paper_rows`` ``{"model", "n1", "method", "reward_model", "values": {N: value}}``."""
    slug: str
    title: str
    tasks: tuple[str, ...]
    curves: CurveNames
    methods: tuple[tuple[str, str, str | None], ...]
    paper_rows: tuple[Mapping[str, Any], ...] = ()
    paper_source: str = ""
    notes: tuple[str, ...] = ()


class RunView:
    """What a report spec may ask of the runs being reported (implemented by the report)."""
    def tasks(self) -> list[str]:  # this benchmark's tasks any run has, in the spec's order
        raise NotImplementedError

    def has(self, task: str, metric: str) -> bool:  # some run has the metric for the task
        raise NotImplementedError

    def metrics(self, task: str) -> list[str]:  # every metric some run has for the task (sorted)
        raise NotImplementedError

    def alias(self, task: str) -> str:
        raise NotImplementedError

    def runs(self) -> list[Any]:  # report.runs.Run objects (column, samples, value(task, metric))
        raise NotImplementedError

    def paper_value(self, task: str, metric: str) -> PaperValue | None:  # the reference model's
        raise NotImplementedError


class ReportSpec:
    """A benchmark's section of ``report``: which numbers lead, how its tasks are ordered and grouped
    into tables, its charts, how its samples are counted, its paper numbers. The defaults suit a
    benchmark whose every task leads with one metric; override what differs."""
    #: the metric every task leads with (when :meth:`headline_metrics` is not overridden)
    headline_metric: str = ""
    #: metrics that only an LLM judge gives (a run without a judge reads "no judge" in the counts)
    judged_metrics: tuple[str, ...] = ()
    #: per-sample field holding a task's answer extraction -> the key naming the rule that fired
    extraction_fields: Mapping[str, str] = MappingProxyType({})
    #: per-doc records of corpus metrics (a doc counts when its record is there, not its number)
    record_metrics: bool = False
    #: where our protocol differs from the paper's for a paper value (keys used by PaperValue.notes)
    protocol_notes: Mapping[str, ProtocolNote] = MappingProxyType({})
    #: printed with three decimals (as the paper prints them), not two
    three_decimals: tuple[str, ...] = ()
    #: model spellings in this paper's tables that the model key alone cannot join (core.scoring.papers)
    model_spellings: Mapping[str, str] = MappingProxyType({})
    #: a similarity-fallback pick (extraction rule "similarity") below this is a low-confidence pick
    low_confidence_similarity: float | None = None
    #: what its counts mean, for the report's note on the counts tables (a clause; "" for none)
    counts_note: str = ""
    #: how it scores a doc the judge failed on, where that is not "wrong" (a clause; "" for wrong)
    judge_failure_note: str = ""
    #: the breakdowns of its slice metrics: ``<benchmark>_<field>_<value>`` with one of these fields is
    #: the slice "<field> <value>" (``emma_category_path_tracing``: "category path tracing")
    breakdown_fields: tuple[str, ...] = ()
    #: categorical fields of a doc's headline record that the sample browser offers as filters
    record_fields: tuple[str, ...] = ()
    #: the key of the headline record (else of its extraction record) holding the answer as scored,
    #: and the key holding the gold ("": the sample's ``target``)
    answer_field: str = ""
    gold_field: str = ""
    #: metrics of a sample besides the headline whose records :meth:`browser_view` reads (each run's
    #: ``records``: ``{metric: record}``)
    browser_records: tuple[str, ...] = ()

    def __init__(self, benchmark: Benchmark | None = None):
        self.benchmark = benchmark

    @property
    def name(self) -> str:
        return self.benchmark.name if self.benchmark else ""

    # -- which numbers lead

    def headline_metrics(self, task: str) -> tuple[str, ...]:
        return (self.headline_metric,) if self.headline_metric else ()

    def order(self, task: str) -> tuple:
        return (0, task)

    def is_group_only(self, task: str) -> bool:
        """A group that reports no numbers of its own (left out of the tables)."""
        return task == self.name

    def headline_tasks(self, tasks: Sequence[str]) -> list[str]:
        return [t for t in tasks if not self.is_group_only(t)]

    # -- breakdown tables

    def families(self, tasks: Sequence[str], title: Callable[[str], str]) -> list[Family]:
        return [Family(t, title(t), [t]) for t in tasks if not self.is_group_only(t)]

    def family_of(self, task: str) -> str:
        """The unit a task is counted and charted under (EMMA: a subject under its variant group)."""
        return task

    def table_metrics(self, task: str, metrics: Sequence[str]) -> list[str]:
        """The metrics of a task's rows in its breakdown table, in order."""
        return list(metrics)

    def headline_in_table(self) -> bool:
        """Whether a table repeats the headline metric of its task (MAC's table shows it beside the
        calibration numbers)."""
        return False

    def skip_row(self, family: Family, task: str, metric: str, view: RunView, primary: tuple[str, ...], is_slice: bool) -> bool:
        """A benchmark's own reason to leave a row out of a breakdown table."""
        return False

    def short_task(self, task: str) -> str:
        """A task's name in a table whose rows span several tasks."""
        return task

    def slice_label(self, metric: str) -> str:
        """``emma_category_2d_transformation`` -> ``category 2d transformation`` (a field of
        :attr:`breakdown_fields` after the benchmark's name, or after a metric prefix of another name:
        ``toy_kind_even``); other metrics keep their name."""
        rest = metric[len(self.name) + 1 :] if metric.startswith(self.name + "_") else metric.partition("_")[2]
        fieldname, _, label = rest.partition("_")
        if fieldname in self.breakdown_fields and label:
            return f"{fieldname} {label.replace('_', ' ')}"
        return metric

    def intro(self, view: RunView) -> list[str]:
        """Paragraphs the benchmark's section opens with."""
        return []

    # -- charts

    def charts(self, view: RunView) -> list[ChartSpec]:
        return []

    def scaling_tables(self, view: RunView) -> list[ScalingTable]:
        """Test-time-scaling tables (accuracy against the number of sampled candidates N), if it has them."""
        return []

    def reliability(self, view: RunView, paper_model: str) -> tuple[list[ReliabilitySpec], list[str]]:
        """Reliability diagrams and notes on those that could not be drawn."""
        return [], []

    # -- counts

    def no_answer(self, metric: str, record: Mapping[str, Any]) -> bool | None:
        """A benchmark's own "no answer extracted" reading of a record (None: the generic rules decide)."""
        return None

    # -- the sample browser (report.html)

    def image_labels(self, task: str) -> Sequence[str] | None:
        """How the browser labels a doc's figures, in ``doc_to_visual`` order (SciFIBench C→F: the options
        A-E); None: numbered 1, 2, ..."""
        return None

    def scored_answer(self, task: str, sample: Mapping[str, Any], record: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """(the answer as it was scored, what decided it) for the browser and its exports, from ``record``
        (the headline record, else its extraction record when only that has :attr:`answer_field`) and
        the sample (its prompt ``input``, e.g. for an option's text). Default: the record's
        :attr:`answer_field`, no detail."""
        v = record.get(self.answer_field) if self.answer_field else None
        return (None if v in (None, "") or isinstance(v, bool) else str(v)), None

    def browser_view(self, task: str, docs: list[dict]) -> None:
        """Add this benchmark's views to the browser's docs of ``task`` (each ``{id, fields, gold, runs:
        [per run: {verdict, answer, record, ...} or None]}``): ``pair`` (a claim pair across docs:
        ``{title, rows: [{doc, label, gold, values: [per run]}], summary: [per run]}``) or ``options``
        (``{rows: [{label, gold, values: [per run]}]}``, e.g. each option's probability). Default: none."""
        return None

    # -- paper numbers

    def paper_entries(self, data: Mapping[str, Any]) -> tuple[list[PaperValue], str]:
        """The paper's values, each keyed by the (task, metric) of ours computed the same way, and the
        source note. Default: ``rows`` of ``{"model", "task", <metric>: value}``."""
        out = []
        for row in data.get("rows", []):
            for k, v in row.items():
                if k not in ("model", "task") and v is not None:
                    out.append(PaperValue(canonical_model(row["model"]), row["task"], k, v))
        return out, str(data.get("source", ""))

    def paper_columns(self, keys: list[tuple[str, str]], have: set[tuple[str, str]]) -> list[tuple[str, str]]:
        """The (task, metric) columns of the paper reference table, from the headline keys of the run."""
        return [k for k in keys if k in have]


# --------------------------------------------------------------------------- the declaration


@dataclass(frozen=True, eq=False)  # one object per benchmark: hashed by identity (caches key on it)
class Benchmark:
    """One benchmark, declared once in its folder's ``benchmark.py``: a constant (its mappings are read-only)."""
    name: str  # folder name, task-name prefix (``emma`` -> ``emma_mini_math``), version key
    title: str  # as the report heads its section ("EMMA")
    folder: str  # the benchmark's folder: README.md, paper_numbers.json
    report: str  # "module:attribute" of its ReportSpec subclass
    # the task names it owns beyond ``<name>`` and ``<name>_*`` (MAC's yearly snapshots: mac2025_*)
    task_pattern: str | None = None
    # comparability version (written into every task YAML; see yamlgen), and tasks that moved alone
    version: float = 1.0
    task_versions: Mapping[str, float] = field(default_factory=dict)
    # "module:function" () -> {path relative to the task folder: YAML text}: the generated task YAMLs
    yaml_files: str | None = None
    # where its task YAMLs live; None: our task_yamls/<name>/ (a lab's benchmark names its own folder)
    task_dir: str | None = None
    # the Hub repos its tasks read, and the writer of each repo's fixture copy ("module:function(root, repo)")
    datasets: tuple[str, ...] = ()
    # repo -> path patterns (fnmatch, as huggingface_hub's allow_patterns) of the repo files its rows
    # name, which no task YAML lists (MuSciClaims' figures, MAC's covers): `mirror` downloads them too
    repo_files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fixtures: Mapping[str, str] = field(default_factory=dict)
    # --from FORMAT of `rescore` -> "module:function(path, options) -> replay plan"
    importers: Mapping[str, str] = field(default_factory=dict)
    # "module:function" () -> {dotted aggregation: (encode, statistic)}: vectorised bootstrap kernels
    kernels: str | None = None
    # its headline tasks in the `earthsci` sweep groups (all; those that need no judge), in the demo
    suite: tuple[str, ...] = ()
    suite_nojudge: tuple[str, ...] = ()
    demo_tasks: tuple[str, ...] = ()
    # its circular variants' groups (multiple-choice tasks once per rotation: core.scoring.circular), in the
    # `earthsci_circular` suite
    circular: tuple[str, ...] = ()
    # the EARTHSCI_* settings its code reads (core.settings.Setting), checked before a run or command
    settings: tuple = ()
    # one task per prompt layout it ships -> the layout in words: what `check-model` and the model-class
    # tier send through each model class
    layout_tasks: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("task_versions", "repo_files", "fixtures", "importers", "layout_tasks"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def owns(self, task: str) -> bool:
        if task == self.name or task.startswith(self.name + "_"):
            return True
        return bool(self.task_pattern and re.fullmatch(self.task_pattern, task))

    @property
    def yaml_dir(self) -> str:
        """The folder of its task YAMLs: its ``task_dir``, else ours (``task_yamls/<name>/``)."""
        return self.task_dir or os.path.join(TASKS_DIR, self.name)

    @property
    def paper_numbers(self) -> str:
        return os.path.join(self.folder, "paper_numbers.json")

    @property
    def readme(self) -> str:
        return os.path.join(self.folder, "README.md")

    def report_spec(self) -> ReportSpec:
        return _report_spec(self)

    def generated_yamls(self) -> dict[str, str]:
        return resolve_ref(self.yaml_files)() if self.yaml_files else {}

    def kernel_table(self) -> dict[str, tuple[Callable, Callable]]:
        return dict(resolve_ref(self.kernels)()) if self.kernels else {}


@functools.cache
def _report_spec(benchmark: Benchmark) -> ReportSpec:
    """A benchmark's report spec, built once (its class is imported on first use)."""
    return resolve_ref(benchmark.report)(benchmark)
