"""MSEarth's section of ``report``: one table per task (image type, question category, sphere), a chart
by image type and category and one by sphere; the paper's Tables 4, 5 and 10 beside ours."""

from __future__ import annotations

import re
from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import ChartSpec, ReportSpec, ScalingTable
from lmms_eval_earthsci.evals.msearth.benchmark import CURVES

VOTING = frozenset(CURVES.voting())

HEADLINE = MappingProxyType({
    "msearth_mcq": ("msearth_acc", "msearth_acc_strict"),
    "msearth_mcq_nocap": ("msearth_acc",),
    "msearth_open": ("msearth_oe_acc",),
    "msearth_caption": ("msearth_cap_score",),
})
CHART_ORDER = MappingProxyType({"image": ("single", "multi", "cross"), "category": ("discovery", "perception")})


# The similarity fallback always picks an option (argmax of all-MiniLM-L6-v2 cosine similarity). On the
# answers it exists for, a paraphrase of an option scores 0.5-0.9 against it; noise ("boxed{B}", "I don't
# know", an explanation fragment) scores 0.05-0.3. A pick below this is counted as a low-confidence pick,
# not as an extracted answer.
LOW_CONFIDENCE_SIMILARITY = 0.5


_OPTION_LINE = re.compile(r"^[ \t]*([A-Z])[ \t]*[.)][ \t]*(.*\S)[ \t]*$", re.M)


def _option_line(prompt: str, letter: str | None, gold: str | None) -> str | None:
    """The option line ("B. April") of ``letter`` in the prompt's options (after its last "Options:"), or
    the line the gold names when ``letter`` is None; None when the prompt has no such line."""
    options = prompt.rsplit("Options:", 1)[-1] if "Options:" in prompt else ""
    want = (letter or (gold or "")[:1]).upper()
    for m in _OPTION_LINE.finditer(options):
        if m.group(1) == want:
            return f"{m.group(1)}. {m.group(2)}"
    return None


class MSEarthReport(ReportSpec):
    judged_metrics = ("msearth_oe_acc", "msearth_cap_score")
    low_confidence_similarity = LOW_CONFIDENCE_SIMILARITY
    counts_note = f"a low-confidence pick is MSEarth's similarity fallback choosing an option at cosine similarity < {LOW_CONFIDENCE_SIMILARITY} (an answer that is noise, not counted as extracted)"
    judge_failure_note = "left out of the mean for MSEarth captions"
    extraction_fields = MappingProxyType({"msearth_acc": "rule"})
    breakdown_fields = ("category", "image", "sphere")
    model_spellings = MappingProxyType({
        "gemini2.5flash": "Gemini-2.5-Flash",  # MSEarth Table 4 "Gemini2.5-Flash"
        "gemini2.5flashthinking": "Gemini-2.5-Flash-Thinking",
        "gemini2.5prothinking": "Gemini-2.5-Pro-Thinking",
        "claude3.5haiku": "Claude-3.5-Haiku",  # MSEarth Table 4 "Claude-3.5-haiku"
        # MSEarth Table 5 "-Chat": the same checkpoints (its model list: Qwen/Qwen2.5-VL-*-Instruct)
        "qwen2.5vl7bchat": "Qwen2.5-VL-7B",
        "qwen2.5vl32bchat": "Qwen2.5-VL-32B",
        "qwen2.5vl72bchat": "Qwen2.5-VL-72B",
    })

    def no_answer(self, metric, record):
        # the similarity fallback had no option to pick from
        return True if record.get("rule") == "similarity" and record.get("similarity") is None and record.get("option") is None else None

    def scored_answer(self, task, sample, record):
        """MCQ: the option scored, its text (from the prompt's option lines) and what decided it (a
        letter, the option's exact text, or the similarity fallback with its similarity and the runner-up's);
        open-ended and captions: the answer the judge read."""
        if "rule" not in record:
            answer = record.get("answer")
            return (str(answer) if answer not in (None, "") else None), None
        letter = record.get("option")
        if record.get("rule") == "content":  # the answer was the gold option's text, exactly
            return _option_line(str(sample.get("input") or ""), None, str(sample.get("target") or "")), "the option's text, exactly"
        if not letter:
            return None, None
        line = _option_line(str(sample.get("input") or ""), str(letter), None) or str(letter)
        if record.get("rule") == "similarity" and record.get("similarity") is not None:
            runner = record.get("runner_up_similarity")
            below = f"; below {LOW_CONFIDENCE_SIMILARITY}: a low-confidence pick" if record["similarity"] < LOW_CONFIDENCE_SIMILARITY else ""
            return line, f"similarity fallback: {record['similarity']:.3f}" + (f" (runner-up {runner:.3f})" if runner is not None else "") + below
        return line, "read as a letter"

    def headline_metrics(self, task):
        return HEADLINE.get(task, ("msearth_acc",))

    def skip_row(self, fam, task, metric, view, primary, is_slice):
        return metric in VOTING  # in the test-time-scaling table

    def scaling_tables(self, view):
        """The CoT variant's voting curve (paper Fig. 6 ran on an unreleased 300-question subset: no paper row compares)."""
        methods = (("majority vote", CURVES.maj, None), ("pass@N (subset)", CURVES.pass_, None), ("pass@N (unbiased, ours)", CURVES.pass_unbiased, None))
        note = ("Fig. 6 of the paper (CoT, voting at N = 4 and 8) ran on MSEarth-mini, 300 specialized questions never released, at a temperature "
                "it does not give: ours are the full MCQ set at T = 0.7, and no paper number compares. Votes are option letters (or the answer's text), "
                "ties broken by the seeded rule of EMMA's authors.")
        return [ScalingTable("msearth_test_time_scaling", "MSEarth MCQ (CoT): majority voting", ("msearth_mcq_cot", "msearth_mcq", "msearth_mcq_nocap"), CURVES, methods, notes=(note,))]

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
