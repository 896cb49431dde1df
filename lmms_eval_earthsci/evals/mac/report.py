"""MAC's section of ``report``: a table per task (accuracy, lenient accuracy, calibration, per publisher)
and a reliability diagram per task from the samples; the paper's Table 1 (and DAD's) beside ours."""

from __future__ import annotations

import re
from types import MappingProxyType

from lmms_eval_earthsci.core.benchmark import PaperValue, ProtocolNote, ReliabilitySpec, ReportSpec, setting_cells
from lmms_eval_earthsci.core.scoring.papers import canonical_model, model_key
from lmms_eval_earthsci.evals.mac import scoring
from lmms_eval_earthsci.evals.mac.benchmark import DISTRACTOR_MODELS, PUBLISHERS

# the snapshot's four variants, then the DAD variants, in report order; the per-task table
VARIANTS = ("i2t_info", "i2t_option", "t2i_info", "t2i_option")
TASKS = tuple(f"mac2025_{v}" for v in VARIANTS) + tuple(f"mac2025_dad_{v}" for v in VARIANTS)
PUBLISHER_KEYS = tuple(p.lower() for p in PUBLISHERS)  # as the breakdown metrics spell them
# each embedding model's share of the wrong picks (the paper's Fig. 7), as the breakdown metrics spell them
DISTRACTOR_METRICS = tuple(f"mac_distractor_{m.lower()}" for m in DISTRACTOR_MODELS)
TABLE = ("mac_acc", "mac_acc_lenient", "mac_ece", "mac_nll", "mac_rms", "mac_unparsable") + tuple(f"mac_publisher_{p}" for p in PUBLISHER_KEYS) + DISTRACTOR_METRICS
# printed with three decimals, as the MAC paper prints them (ECE 0.053)
CALIBRATION_METRICS = ("mac_ece", "mac_nll", "mac_rms")
# the per-doc record in a MAC samples line (probs, correct, parsed): the reliability diagram's input
RECORD = "mac_acc"


class MACReport(ReportSpec):
    headline_metric = RECORD
    extraction_fields = MappingProxyType({RECORD: "path"})
    three_decimals = CALIBRATION_METRICS
    breakdown_fields = ("publisher", "distractor")
    record_fields = ("journal", "publisher", "picked_embedding")
    answer_field = "pred"
    gold_field = "gold"
    counts_note = "for MAC, an answer the official probability parser could not read (wrong in `mac_acc`, left out of ECE / NLL / RMS)"
    protocol_notes = MappingProxyType({
        "calibration": ProtocolNote(
            "°",
            "the MAC paper's ECE may come from an earlier, unknown script, and the official ECE code normalises each probability dict in place (distorting the NLL and RMS computed after it); "
            "ours normalise a copy: `mac_ece` / `mac_nll` / `mac_rms` may differ slightly.",
            "ECE script unknown",
        ),
        "dad": ProtocolNote(
            "∆",
            "the MAC paper's DAD (\"+ ours\"): the MLLM describes, a text-only reasoning model decides (QwQ-32B, the code's default, unless the model name adds another reasoner; Table 4 does not name its reasoner).",
            "DAD",
        ),
    })
    # MAC's Table 1 abbreviates the model the official code calls Step-1o-Turbo-Vision
    model_spellings = MappingProxyType({"step1oturbovision": "Step-1o-T-V"})

    def order(self, task):
        return (TASKS.index(task) if task in TASKS else len(TASKS), task)

    def is_group_only(self, task):
        """The yearly group (``mac2025``) reports no numbers of its own."""
        return task == self.name or re.fullmatch(r"mac\d{4}", task) is not None

    def table_metrics(self, task, metrics):
        return [m for m in TABLE if m in metrics]

    def skip_row(self, fam, task, metric, view, primary, is_slice):
        # the models whose distractor no run picked (most are not this task's: I2T option's are the text models')
        return metric in DISTRACTOR_METRICS and not any(r.value(task, metric)[0] for r in view.runs())

    def headline_in_table(self):
        return True  # beside the lenient and calibration numbers

    def intro(self, view):
        return [
            "`mac_acc` is percent, the paper's Acc.(%) (an answer the official parser cannot read is wrong); "
            "`mac_ece`, `mac_nll` and `mac_rms` are on the paper's scale (ECE 0.053), over the parsed answers only (°: the paper's ECE script is unknown, so they may differ slightly); "
            "`mac_acc_lenient` also reads a bare letter, `mac_unparsable` is the % of answers the parser rejected, `publisher *` the accuracy per publisher, "
            "`distractor *` each embedding model's share (%) of the wrong picks, by the model that chose the distractor picked (the paper's Fig. 7; no answer is no pick). "
            f"The reliability diagrams bin each parsed answer's confidence (its largest normalised probability) into the ECE's {scoring.ECE_BINS} equal-width bins (lo, hi] on (0, 1]."
        ]

    def no_answer(self, metric, record):
        return True if metric == RECORD and not record.get("parsed") else None  # the official parser rejected the JSON

    def image_labels(self, task):
        return ("A", "B", "C", "D") if "_t2i_" in task else None  # T2I: the four candidate covers

    def scored_answer(self, task, sample, record):
        """The option picked (the largest normalised probability) with its probability; unparsed: why."""
        pred, probs = record.get("pred"), record.get("probs")
        if not pred:
            return None, (str(record["problem"]) if record.get("problem") else None)
        p = probs.get(pred) if isinstance(probs, dict) else None
        return str(pred), (f"probability {p:.2f}" if isinstance(p, (int, float)) else None)

    def browser_view(self, task, docs):
        """Each option with the probability every run gave it (the official parser's dict), the gold and
        the pick marked: what ECE and the reliability diagram are made of."""
        for d in docs:
            recs = [r["record"] if r else None for r in d["runs"]]
            if not any(isinstance(x, dict) and x.get("gold") for x in recs):
                continue
            gold = next(x["gold"] for x in recs if isinstance(x, dict) and x.get("gold"))
            rows = []
            for letter in "ABCD":
                values = []
                for x in recs:
                    probs = x.get("probs") if isinstance(x, dict) else None
                    p = probs.get(letter) if isinstance(probs, dict) else None
                    pick = isinstance(x, dict) and x.get("pred") == letter
                    values.append(None if x is None else (f"{p:.2f}" if isinstance(p, (int, float)) else "–") + (" ← pick" if pick else ""))
                rows.append({"label": letter, "gold": letter == gold, "values": values})
            d["options"] = {"title": "options: each run's probability (unparsed: –)", "rows": rows}

    def reliability(self, view, paper_model):
        """The reliability diagram of each MAC task run (from the per-doc records, as :mod:`.scoring`
        bins them for ECE) and, for the tasks or runs without one, why (no samples, no parsed answer)."""
        def fmt(v):
            return "n/a" if v is None else f"{v:.3f}"

        charts, missing = [], []
        for t in self.headline_tasks(view.tasks()):
            ran = [r for r in view.runs() if r.value(t, RECORD)[0]]
            if not ran:
                continue
            no_samples = [r.column for r in ran if t not in r.samples]
            if no_samples:
                missing.append(f"`{t}`: no reliability diagram for {', '.join(no_samples)}: no samples file (`*_samples_{t}.jsonl`; run lmms-eval with `--log_samples`).")
            series = []
            for r in ran:
                if t not in r.samples:
                    continue
                items = [s[RECORD] for s in r.samples[t] if isinstance(s.get(RECORD), dict)]
                bins = scoring.reliability(items)
                if any(b["n"] for b in bins):
                    series.append((r.column, tuple(bins), scoring.ece(items)))
                else:
                    missing.append(f"`{t}`: no reliability diagram for {r.column}: no parsed answer to bin.")
            if series:
                ref = view.paper_value(t, "mac_ece")
                paper = f"paper ({paper_model}): ECE {fmt(ref.value)}" if ref else f"paper: no ECE of {paper_model}"
                charts.append(ReliabilitySpec(f"{t}_reliability", f"{t}: reliability, {scoring.ECE_BINS} bins (lo, hi] · {paper}", tuple(series), paper, fmt))
        return charts, missing

    def paper_entries(self, data):
        out = []
        for row, task, metric, value in setting_cells(data):
            model = canonical_model(row["model"])
            reasoner = row.get("reasoner")
            if reasoner and model_key(reasoner) != model_key(data["default_reasoner"]):  # Table 7: one MLLM, three reasoners
                model = f"{model} + {canonical_model(reasoner)}"
            notes = (("calibration",) if metric in CALIBRATION_METRICS else ()) + (("dad",) if row["setting"] == "DAD" else ())
            out.append(PaperValue(model, task, metric, value, notes))
        return out, data["source"] + ". " + data["note"]
