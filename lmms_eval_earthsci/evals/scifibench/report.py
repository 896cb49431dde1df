"""SciFIBench's section of ``report``: one table over splits, groups and variants, a chart of the four
splits (rules beside the paper's LLM answer extractor); the paper's numbers beside the extractor's."""

from __future__ import annotations

from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import ChartSpec, Family, PaperValue, ReportSpec
from lmms_eval_earthsci.core.scoring.papers import canonical_model

SPLITS = ("scifibench_cs_f2c", "scifibench_cs_c2f", "scifibench_general_f2c", "scifibench_general_c2f")
JUDGE_METRIC = "scifibench_acc_judge"


class SciFIBenchReport(ReportSpec):
    judged_metrics = (JUDGE_METRIC,)
    extraction_fields = MappingProxyType({"scifibench_acc": "stage"})
    breakdown_fields = ("category", "length", "size")  # Fig. 8: caption length (F->C), mean figure size (C->F)
    record_fields = ("split", "category")
    answer_field = "parsed"
    gold_field = "gold"
    model_spellings = MappingProxyType({"gemini1.5pro": "Gemini 1.5 Pro"})  # SciFIBench's spelling; MAC prints "Gemini-1.5-Pro"

    def image_labels(self, task):
        return ("A", "B", "C", "D", "E") if "_c2f" in task else None  # C→F: the five candidate figures

    def headline_metrics(self, task):
        return (JUDGE_METRIC,) if task.endswith("_judge") else ("scifibench_acc",)

    def order(self, task):
        base = task.removesuffix("_judge")
        rank = SPLITS.index(base) if base in SPLITS else len(SPLITS) + (0 if base in ("scifibench_f2c", "scifibench_c2f", "scifibench") else 1)
        return (rank, base, task.endswith("_judge"), task)

    def headline_tasks(self, tasks):
        """The four splits (rules, then the judge variant) and the pooled groups; the F->C / C->F groups
        and the alignment variants are breakdowns."""
        keep = set(SPLITS) | {s + "_judge" for s in SPLITS} | {"scifibench", "scifibench_judge"}
        return [t for t in tasks if t in keep]

    def families(self, tasks, title):
        # one table for all: the key is no task name, so every row says its task
        return [Family("SciFIBench", "By split, group and variant", list(tasks))] if tasks else []

    def short_task(self, task):
        """A split's task without the benchmark prefix (``cs_f2c_judge``); groups keep their name."""
        rest = task[len("scifibench_") :]
        return rest if rest.startswith(("cs_", "general_")) else task

    def skip_row(self, fam, task, metric, view, primary, is_slice):
        # the alignment variants are about their accuracy against the plain split's
        return is_slice and "_marked_" in task

    def intro(self, view):
        tasks = view.tasks()
        if any(t in SPLITS for t in tasks) and not any(t.endswith("_judge") for t in tasks):
            return ["The paper's numbers come from an LLM answer extractor: they compare with `scifibench_acc_judge` (run the `scifibench_judge` tasks with a judge), not with the rules-only `scifibench_acc`."]
        return []

    def charts(self, view):
        groups = []
        for s in SPLITS:
            series = tuple((name, task, metric) for name, task, metric in (("rules", s, "scifibench_acc"), ("LLM extractor", s + "_judge", JUDGE_METRIC)) if view.has(task, metric))
            if series:
                groups.append((s.replace("scifibench_", ""), series))
        if not groups:
            return []
        return [ChartSpec("scifibench_by_split", f"SciFIBench by split: scifibench_acc (rules), {JUDGE_METRIC} (LLM extractor)", tuple(groups))]

    def paper_entries(self, data):
        tasks = {col: spec.get("task") for col, spec in data["columns"].items()}
        out = []
        for row in data["rows"]:
            for col, v in row.items():
                if col != "model" and v is not None and tasks.get(col):
                    out.append(PaperValue(canonical_model(row["model"]), tasks[col], data["metric"], v))
        return out, data["source"]

    def paper_columns(self, keys, have):
        # a split run without its judge variant still gets the paper's column for it: that is where it compares
        keys = list(keys)
        for t, _ in list(keys):
            if t in SPLITS and (t + "_judge", JUDGE_METRIC) not in keys:
                keys.append((t + "_judge", JUDGE_METRIC))
        return [k for k in keys if k in have]
