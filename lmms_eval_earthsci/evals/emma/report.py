"""EMMA's section of ``report``: a table and a chart per variant group (CoT, Direct, judge; mini, full),
its subjects folded under it; the paper's Table 2 beside ``emma_acc`` (rule-based, as the paper)."""

from __future__ import annotations

import json
from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import ChartSpec, Family, PaperValue, ProtocolNote, ReportSpec, ScalingTable
from lmms_eval_earthsci.core.scoring.papers import canonical_model
from lmms_eval_earthsci.evals.emma.benchmark import CURVES, MAJ

SUBJECTS = ("math", "physics", "chemistry", "coding")
# with k = 1 (no --repeats) both equal emma_acc of the same task: shown only where they differ from it
REPEAT_METRICS = ("emma_maj@k", "emma_pass@k", "emma_maj_normalized@k")
# the test-time-scaling curves: in the test-time-scaling table, not in the breakdown tables
SCALING_METRICS = frozenset([*CURVES.all(), CURVES.rm_failed, CURVES.rm_replies])


def family(task: str) -> str:
    """The variant group of an EMMA task (``emma_mini_judge_math`` -> ``emma_mini_judge``)."""
    for s in SUBJECTS:
        if task.endswith("_" + s):
            return task[: -len(s) - 1]
    return task


class EmmaReport(ReportSpec):
    judged_metrics = ("emma_judge_acc",)
    extraction_fields = MappingProxyType({"emma_acc": "rule"})
    breakdown_fields = ("category", "type", "task")
    answer_field = "extraction"
    gold_field = "gt_content"
    protocol_notes = MappingProxyType({
        "sampled": ProtocolNote("†", "the EMMA paper sampled this open model at temperature 0.7 (its Table 6); our EMMA tasks are greedy (`--gen_kwargs temperature=0.7,do_sample=True` samples as the paper did).", "sampled at T=0.7"),
        "rules": ProtocolNote("‡", "the EMMA paper's number is rule-based (Table 2, CoT); `emma_judge_acc` is the LLM judge's verdict on the CoT responses.", "rule-based"),
    })
    model_spellings = MappingProxyType({
        "llavaonvision72b": "LLaVA-OneVision-72B",  # MSEarth Tables 3 and 10 and its model list (sic)
        "llavaonevision72b": "LLaVA-OneVision-72B",  # EMMA "LLaVA-Onevision-72B", MSEarth Tables 4-5 "LLaVA-onevision-72B"
    })

    browser_records = (MAJ, *CURVES.voting(), *CURVES.reward_model())

    def browser_view(self, task, docs):
        """Under ``--repeats``: each candidate (its answer and verdict, the reward model's score of it at each N
        that showed it), then per N the vote's pick, Best-of-N's and the tournament's: every run a column."""
        for d in docs:
            recs = [(r or {}).get("records") or {} for r in d["runs"]]
            cands = [((x.get(MAJ) or {}).get("candidates") or []) if isinstance(x.get(MAJ), dict) else [] for x in recs]
            if max((len(c) for c in cands), default=0) < 2:
                continue
            rows = []
            for i in range(max(len(c) for c in cands)):
                values = []
                for x, c in zip(recs, cands):
                    if i >= len(c):
                        values.append(None)
                        continue
                    cell = f"{c[i]['extraction'] if c[i]['extraction'] is not None else '(no response)'} {'✓' if c[i]['correct'] else '✗'}"
                    bons = [(n, x.get(CURVES.bon.format(n))) for n in CURVES.bon_sizes]
                    scored = [f"{n}: {b['scores'].get(str(i), 0) if 'scores' in b else 'failed'}" for n, b in bons if isinstance(b, dict) and i in (b.get("shown") or [])]
                    values.append(cell + (f" · reward model at N={', '.join(scored)}" if scored else ""))
                rows.append({"label": f"candidate {i}", "gold": "", "values": values})

            def pick(rec, key, fmt):
                return None if not isinstance(rec, dict) else fmt(rec) + (" ✓" if rec.get("score") else " ✗")

            for n in CURVES.sizes:
                rows.append({"label": f"vote, N={n}", "gold": "", "values": [pick(x.get(CURVES.maj.format(n)), "maj", lambda r: f"{r.get('pick')!r}" + (f" (tie of {len(r['tied'])})" if r.get("tied") else "")) for x in recs]})
            for n in CURVES.bon_sizes:
                rows.append({"label": f"best-of-{n}", "gold": "", "values": [pick(x.get(CURVES.bon.format(n)), "bon", lambda r: f"candidate {r.get('pick')}" + (f" ({r['why']})" if r.get("why") else "")) for x in recs]})
                rows.append({"label": f"tournament, N={n}", "gold": "", "values": [pick(x.get(CURVES.tournament.format(n)), "t", lambda r: f"candidate {r.get('pick')}" + (f" ({r['why']})" if r.get("why") else "")) for x in recs]})
            rows = [r for r in rows if any(v is not None for v in r["values"])]
            d["options"] = {"title": "candidates (--repeats): answer, verdict, the reward model's scores; each method's pick", "rows": rows}

    def headline_metrics(self, task):
        return ("emma_judge_acc",) if family(task).endswith("_judge") else ("emma_acc",)

    def order(self, task):
        """mini before full; CoT, Direct, judge; the group, then its subjects in the paper's order."""
        fam = family(task)
        size = 0 if fam.startswith("emma_mini") else 1
        variant = 2 if fam.endswith("_judge") else 1 if fam.endswith("_direct") else 0
        subject = task[len(fam) + 1 :]
        return (size, variant, fam, SUBJECTS.index(subject) + 1 if subject else 0, task)

    def headline_tasks(self, tasks):
        """The variant groups; a subject only when its group was not run."""
        present = set(tasks)
        return [t for t in tasks if t == family(t) or family(t) not in present]

    def families(self, tasks, title):
        out: dict[str, Family] = {}
        for t in tasks:
            fam = family(t)
            out.setdefault(fam, Family(fam, title(fam), [])).tasks.append(t)
        return list(out.values())

    def family_of(self, task):
        return family(task)

    def skip_row(self, fam, task, metric, view, primary, is_slice):
        if metric in SCALING_METRICS:  # in the test-time-scaling table (commands/report/scaling.py) when a run sampled
            return True
        # maj@k / pass@k equal to emma_acc (k = 1) say nothing
        if metric in REPEAT_METRICS and all(r.value(task, "emma_acc") == r.value(task, metric) for r in view.runs() if r.value(task, metric)[0]):
            return True
        # a subject's lenient / maj@k / rules-under-judge values: its group's row has the overall one
        return task != fam.key and fam.key in fam.tasks and metric not in primary and not is_slice

    def charts(self, view):
        charts = []
        for fam in self.families(view.tasks(), view.alias):
            metric = self.headline_metrics(fam.key)[0]
            groups = tuple((t[len(fam.key) + 1 :], (("", t, metric),)) for t in fam.tasks if t != fam.key)
            if groups:
                charts.append(ChartSpec(f"{fam.key}_by_subject", f"{view.alias(fam.key)}: {metric} by subject", groups))
        return charts

    def paper_entries(self, data):
        out = []
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
        return out, data["source"]

    def paper_columns(self, keys, have):
        cols = [k for k in keys if k in have]
        # the judge column would repeat the CoT column (the paper's numbers are rule-based)
        return [(t, k) for t, k in cols if not (k == "emma_judge_acc" and (t.replace("_judge", "", 1), "emma_acc") in cols)]

    def scaling_tables(self, view):
        """Table 3's shape: EMMA-mini's test-time scaling (the sampling task, else a CoT run with --repeats)."""
        with open(self.benchmark.paper_numbers, encoding="utf-8") as f:
            paper = json.load(f).get("test_time_scaling") or {}
        with open(self.benchmark.paper_numbers, encoding="utf-8") as f:
            math = json.load(f).get("test_time_scaling_math") or {}
        generative, scalar = ("best-of-N", CURVES.bon, "the run's (EARTHSCI_RM_MODEL)"), ("best-of-N", CURVES.bon_scalar, "the run's scalar (EARTHSCI_SCALAR_RM_MODEL)")
        methods = (("majority vote", CURVES.maj, None), generative, scalar, ("tournament (ours)", CURVES.tournament, "the run's (EARTHSCI_RM_MODEL)"),
                   ("pass@N (subset)", CURVES.pass_, None), ("pass@N (unbiased, ours)", CURVES.pass_unbiased, None))
        notes = (
            "Candidates scored with the authors' development-repository rules; subsets, vote and reward-model pick as they ran them. "
            "The paper's N=1 is Table 2's temperature-0 CoT result (compare `emma_mini`'s `emma_acc`); a run's N=1 is its first sampled candidate of the subset. "
            "The paper's Pass@N is not reproducible from its released files; its tournament used its own unreleased protocol.",
        )
        def tasks(*groups):
            return tuple(t for g in groups for t in (g, *(f"{g}_{s}" for s in SUBJECTS)))

        return [
            ScalingTable("emma_test_time_scaling", "EMMA-mini: test-time scaling (Table 3)", tasks("emma_mini_tts", "emma_mini", "emma_mini_direct", "emma_mini_judge"), CURVES, methods,
                         tuple(paper.get("rows") or ()), str(paper.get("source") or ""), notes),
            ScalingTable("emma_test_time_scaling_math", "EMMA-mini Math: Best-of-N by reward model (Table 7)", ("emma_mini_tts_math", "emma_mini_math"), CURVES, (generative, scalar),
                         tuple(math.get("rows") or ()), str(math.get("source") or ""), notes),
            ScalingTable("emma_full_test_time_scaling", "EMMA: test-time scaling", tasks("emma_full", "emma_full_direct", "emma_full_judge"), CURVES, methods, (), "", notes),
        ]
