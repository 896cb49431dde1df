"""MSEarth's section of ``report``: one table per task (image type, question category, sphere), a chart
by image type and category and one by sphere; the paper's Tables 4, 5 and 10 beside ours."""

from __future__ import annotations

from lmms_eval_earthsci.core.benchmark import ChartSpec, ReportSpec

HEADLINE = {
    "msearth_mcq": ("msearth_acc", "msearth_acc_strict"),
    "msearth_mcq_nocap": ("msearth_acc",),
    "msearth_open": ("msearth_oe_acc",),
    "msearth_caption": ("msearth_cap_score",),
}
CHART_ORDER = {"image": ("single", "multi", "cross"), "category": ("discovery", "perception")}


# The similarity fallback always picks an option (argmax of all-MiniLM-L6-v2 cosine similarity). On the
# answers it exists for, a paraphrase of an option scores 0.5-0.9 against it; noise ("boxed{B}", "I don't
# know", an explanation fragment) scores 0.05-0.3. A pick below this is counted as a low-confidence pick,
# not as an extracted answer.
LOW_CONFIDENCE_SIMILARITY = 0.5


class MSEarthReport(ReportSpec):
    judged_metrics = ("msearth_oe_acc", "msearth_cap_score")
    low_confidence_similarity = LOW_CONFIDENCE_SIMILARITY
    counts_note = f"a low-confidence pick is MSEarth's similarity fallback choosing an option at cosine similarity < {LOW_CONFIDENCE_SIMILARITY} (an answer that is noise, not counted as extracted)"
    judge_failure_note = "left out of the mean for MSEarth captions"
    extraction_fields = {"msearth_acc": "rule"}
    model_spellings = {
        "gemini2.5flash": "Gemini-2.5-Flash",  # MSEarth Table 4 "Gemini2.5-Flash"
        "gemini2.5flashthinking": "Gemini-2.5-Flash-Thinking",
        "gemini2.5prothinking": "Gemini-2.5-Pro-Thinking",
        "claude3.5haiku": "Claude-3.5-Haiku",  # MSEarth Table 4 "Claude-3.5-haiku"
        # MSEarth Table 5 "-Chat": the same checkpoints (its model list: Qwen/Qwen2.5-VL-*-Instruct)
        "qwen2.5vl7bchat": "Qwen2.5-VL-7B",
        "qwen2.5vl32bchat": "Qwen2.5-VL-32B",
        "qwen2.5vl72bchat": "Qwen2.5-VL-72B",
    }

    def headline_metrics(self, task):
        return HEADLINE.get(task, ("msearth_acc",))

    def order(self, task):
        known = list(HEADLINE)
        return (known.index(task) if task in known else len(known), task)

    def charts(self, view):
        charts = []
        for t in view.tasks():
            if self.is_group_only(t):
                continue
            metrics = view.metrics(t)
            main = self.headline_metrics(t)[0]
            types = [f"msearth_{f}_{v}" for f, vs in CHART_ORDER.items() for v in vs if f"msearth_{f}_{v}" in metrics]
            spheres = [m for m in metrics if m.startswith("msearth_sphere_")]
            score = main.endswith("_score")
            if types:
                charts.append(ChartSpec(f"{t}_by_image_and_category", f"{t}: {main} by image type and question category", tuple((self.slice_label(m), (("", t, m),)) for m in types), score))
            if spheres:
                charts.append(ChartSpec(f"{t}_by_sphere", f"{t}: {main} by primary sphere", tuple((self.slice_label(m).replace("sphere ", ""), (("", t, m),)) for m in spheres), score))
        return charts

    def paper_entries(self, data):
        entries, _ = super().paper_entries(data)
        return entries, "; ".join(f"{k}: {v}" for k, v in data["sources"].items()) + ". " + data.get("note", "")
