"""MuSciClaims' section of ``report``: one table of flip rates, invalid answers, macro F1 by domain and by
single- / multi-panel figure, panel localization; a chart per task of F1 by class; the paper's (v1) numbers beside ours."""

from __future__ import annotations

from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import ChartSpec, Family, PaperValue, ProtocolNote, ReportSpec, setting_cells
from lmms_eval_earthsci.core.scoring.papers import canonical_model

# the tasks in report order (the paper's settings, our prompt-family variants, its diagnostics)
TASKS = (
    "musciclaims_d", "musciclaims_rd", "musciclaims_ird", "musciclaims_d_kv", "musciclaims_rd_kv", "musciclaims_ird_kv",
    "musciclaims_caption_only_d", "musciclaims_caption_only_rd", "musciclaims_figure_only_d", "musciclaims_figure_only_rd", "musciclaims_thrd",
)
# its chart (per task: F1 by class, then the macro F1) and its table (the rest that matters), in order
CHART = (("support", "musciclaims_f1_support"), ("neutral", "musciclaims_f1_neutral"), ("contradict", "musciclaims_f1_contradict"), ("macro", "musciclaims_macro_f1"))
TABLE = (
    "musciclaims_flip_rate", "musciclaims_correct_flip_rate", "musciclaims_invalid_rate",
    "musciclaims_macro_f1_biology", "musciclaims_macro_f1_chemistry", "musciclaims_macro_f1_physics",
    "musciclaims_macro_f1_single_panel", "musciclaims_macro_f1_multi_panel",
    "musciclaims_panel_precision", "musciclaims_panel_recall", "musciclaims_panel_f1",
)


class MuSciClaimsReport(ReportSpec):
    headline_metric = "musciclaims_macro_f1"
    extraction_fields = MappingProxyType({"musciclaims_macro_f1": "stage"})
    record_metrics = True  # a record per doc (None: not scored, e.g. a panel)
    record_fields = ("variant", "domain", "panel_class")
    answer_field = "pred"  # the decision (INVALID: none parsed)
    gold_field = "gold"
    counts_note = "for MuSciClaims, no answer extracted is an INVALID decision"
    protocol_notes = MappingProxyType({
        "v1": ProtocolNote(
            "§",
            "the MuSciClaims paper's number is from v1 (arXiv 2506.04585 v1), on 918 biology items; "
            "the Hub data has 1,515 rows over biology, chemistry and physics: only `musciclaims_macro_f1_biology` compares directly.",
            "paper v1: 918 biology items",
        ),
        "2class": ProtocolNote("¶", "the MuSciClaims paper's two-class numbers (Table 6) come from separate 2-class runs; our `musciclaims_2class_*` re-aggregate the 3-class predictions.", "separate 2-class runs"),
        "panels": ProtocolNote(
            "‖",
            "the MuSciClaims paper does not say how it normalised panel names or averaged panel P/R/F1 (Table 3); ours are per-doc means over the SUPPORT/CONTRADICT docs whose gold names panels.",
            "panel scoring unstated",
        ),
    })
    # MuSciClaims names dated API snapshots and hub checkpoints (its paper's model list)
    model_spellings = MappingProxyType({
        "gpt4o20241120": "GPT-4o",
        "gpt4omini20240718": "GPT-4o-mini",
        "claude35sonnet20241022": "Claude 3.5 Sonnet",
        "o4mini20250416": "o4-mini",
        "qwen2.5vl32binstruct": "Qwen2.5-VL-32B",
    })

    def order(self, task):
        return (TASKS.index(task) if task in TASKS else len(TASKS), task)

    def families(self, tasks, title):
        # one table for all: the key is no task name, so every row says its task
        return [Family("MuSciClaims", "Flip rates, invalid answers, macro F1 by domain, panel localization", list(tasks))] if tasks else []

    def table_metrics(self, task, metrics):
        return [m for m in TABLE if m in metrics]  # per-class F1 are charted

    def intro(self, view):
        return [
            "The paper's numbers (§) are v1's, on 918 biology items; the Hub data adds chemistry and physics, "
            "so the like-for-like comparison is `musciclaims_macro_f1_biology` (the paper's Overall F sits beside it). "
            "The charts plot F1 per class and the macro F1 of each task, the paper's marks being the numbers for the task's prompt setting."
        ]

    def charts(self, view):
        charts = []
        for t in view.tasks():
            groups = tuple((label, (("", t, m),)) for label, m in CHART if view.has(t, m))
            if groups:
                charts.append(ChartSpec(f"{t}_f1_by_class", f"{t}: F1 by class (musciclaims_f1_*) and macro F1", groups))
        return charts

    def browser_view(self, task, docs):
        """A claim's SUPPORT and CONTRADICT variants side by side (its other docs), each run's decision on
        each, and whether the run flipped its decision between them (correctly: both right)."""
        by_base: dict = {}
        for d in docs:
            rec = next((r["record"] for r in d["runs"] if r and isinstance(r.get("record"), dict)), None)
            if rec and rec.get("base_claim_id"):
                by_base.setdefault(rec["base_claim_id"], []).append((d, rec))
        n = len(docs[0]["runs"]) if docs else 0
        for base, members in by_base.items():
            if len(members) < 2:
                continue
            rows = []
            for d, rec in sorted(members, key=lambda m: str(m[1].get("variant"))):
                rows.append({"doc": d["id"], "label": str(rec.get("variant")), "gold": rec.get("gold"), "values": [(r["record"].get("pred") if r and isinstance(r.get("record"), dict) else None) for r in d["runs"]]})
            summary = []
            for i in range(n):
                preds = [row["values"][i] for row in rows]
                if any(p is None for p in preds):
                    summary.append(None)
                    continue
                flipped = len(set(preds)) > 1
                correct = all(row["values"][i] == row["gold"] for row in rows)
                summary.append("flipped, correctly" if flipped and correct else "flipped, not both right" if flipped else "no flip: the same decision on both")
            view = {"title": f"claim {base}: its variants", "rows": rows, "summary": summary}
            for d, _ in members:
                d["pair"] = view

    def no_answer(self, metric, record):
        return True if record.get("pred") == "INVALID" else None  # no decision parsed

    def paper_entries(self, data):
        out = []
        for row, task, metric, value in setting_cells(data):
            model = canonical_model(row["model"])
            notes = ("v1",) + (("2class",) if metric.startswith("musciclaims_2class_") else ()) + (("panels",) if metric.startswith("musciclaims_panel_") else ())
            out.append(PaperValue(model, task, metric, value, notes))
            if metric == "musciclaims_macro_f1":  # v1's items are all biology: the like-for-like slice
                out.append(PaperValue(model, task, "musciclaims_macro_f1_biology", value))
        return out, data["source"] + ". " + data["note"]
