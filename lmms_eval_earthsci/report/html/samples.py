"""Every doc of every run, as the sample browser shows it: one record per (task, doc_id) with each run's
view of it side by side.

A run's view of a doc (:func:`view`) is read from its lmms-eval sample: the prompt as sent (``input``),
the raw responses (every one under ``--repeats``) and the filtered one, the task's headline record
(extracted answer, the extraction stage, gold, score, the judge's record), and a *verdict*:

- ``right`` / ``wrong``: the headline record's score (or its ``pred`` against its ``gold``);
- ``no_answer``: the extraction found no answer (each benchmark's ``extraction_fields``, as the counts
  table reads them);
- ``judge_failed``: the judge could not judge it (its record's status);
- ``no_verdict``: nothing scored it (a judged metric without a judge, a ``--predict_only`` run);
- ``scored``: a graded score with no right or wrong (MSEarth captioning's 1-5).

The doc's breakdown fields (subject, category, split, sphere, ...) come from the slice metrics its sample
carries (each benchmark's ``slice_label``) and from its record's categorical fields.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from lmms_eval_earthsci.core.benchmark import Benchmark, ReportSpec
from lmms_eval_earthsci.report.runs import Run, _number
from lmms_eval_earthsci.report.sections import _extraction, _judge_record

VERDICTS = ("right", "wrong", "no_answer", "judge_failed", "no_verdict", "scored")
RECORD_FIELDS = ("split", "category", "subject", "publisher", "journal", "variant", "domain", "type", "sphere", "image_type")
ANSWER_KEYS = ("extraction", "parsed", "pred", "answer", "option", "majority")
STAGE_KEYS = ("rule", "stage", "path")
GOLD_KEYS = ("gold", "gt_content", "answer_letter")


def _responses(sample: Mapping[str, Any]) -> list[str]:
    """Every raw response of the doc (``--repeats k``: k of them), flattened to strings."""
    raw = sample.get("resps", sample.get("filtered_resps"))
    out: list[str] = []

    def walk(v):
        if isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif v is not None:
            out.append(v if isinstance(v, str) else str(v))

    walk(raw)
    return out


def _filtered(sample: Mapping[str, Any]) -> str | None:
    v = sample.get("filtered_resps")
    while isinstance(v, (list, tuple)) and v:
        v = v[0]
    return None if v is None or isinstance(v, (list, tuple)) else str(v)


def _first(record: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        v = record.get(k)
        if v not in (None, "") and not isinstance(v, bool):  # MAC's `parsed: true` is a flag, not the answer
            return v
    return None


def main_metric(spec: ReportSpec, task: str, sample: Mapping[str, Any]) -> str | None:
    """The headline metric whose record this sample carries (a judged task's judged metric first)."""
    for m in (*[j for j in spec.judged_metrics if j in sample], *spec.headline_metrics(task)):
        if m in sample:
            return m
    return None


def view(spec: ReportSpec, task: str, sample: Mapping[str, Any]) -> dict:
    """One run's view of one doc (see the module docstring)."""
    metric = main_metric(spec, task, sample)
    record = sample.get(metric) if metric else None
    rec = record if isinstance(record, Mapping) else {}
    is_judged, judge = _judge_record(spec, dict(sample))
    extraction = _extraction(spec, dict(sample))
    # a judged task's rule-based twin record (emma_acc beside emma_judge_acc) carries the extraction
    rule_rec = next((sample[n] for n in spec.extraction_fields if isinstance(sample.get(n), Mapping)), {}) or {}
    score = rec.get("score") if _number(rec.get("score")) else (record if _number(record) else None)
    status = (judge or {}).get("status")
    if status in ("request_failed", "parse_failed"):
        verdict = "judge_failed"
    elif extraction == "none" and not (is_judged and score is not None):
        verdict = "no_answer"
    elif "gold" in rec and "pred" in rec and score is None:
        verdict = "no_answer" if rec.get("pred") in (None, "", "INVALID") else ("right" if rec.get("pred") == rec.get("gold") else "wrong")
    elif score is None:
        verdict = "no_verdict"
    elif metric and metric.endswith("_score"):
        verdict = "scored"
    else:
        verdict = "right" if score > 0 else "wrong"
    fields = {}
    for m, v in sample.items():
        if _number(v) and not isinstance(v, bool):
            label = spec.slice_label(m)
            if label != m and " " in label:
                key, value = label.split(" ", 1)
                fields[key] = value
    for k in RECORD_FIELDS:
        v = rec.get(k, rule_rec.get(k) if isinstance(rule_rec, Mapping) else None)
        if isinstance(v, str) and v and k not in fields:
            fields[k] = v
    answer = _first(rec, ANSWER_KEYS)
    if answer is None and isinstance(rule_rec, Mapping):
        answer = _first(rule_rec, ANSWER_KEYS)
    stage = _first(rec, STAGE_KEYS) or (_first(rule_rec, STAGE_KEYS) if isinstance(rule_rec, Mapping) else None)
    gold = _first(rec, GOLD_KEYS)
    return {
        "verdict": verdict,
        "score": score,
        "metric": metric,
        "answer": None if answer is None else (answer if isinstance(answer, str) else str(answer)),
        "stage": None if stage is None else str(stage),
        "gold": str(gold if gold is not None else sample.get("target", "")),
        "prompt": str(sample.get("input", "")),
        "responses": _responses(sample),
        "filtered": _filtered(sample),
        "judge": judge,
        "record": {k: v for k, v in rec.items() if k != "judge"},
        "fields": fields,
    }


def leaf_tasks(bench: Benchmark, runs: Sequence[Run]) -> list[str]:
    """The benchmark's tasks that have samples in some run, in its report order."""
    spec = bench.report_spec()
    names = {t for r in runs for t in r.samples if bench.owns(t)}
    return sorted(names, key=lambda t: (spec.order(t), t))


def task_docs(bench: Benchmark, task: str, runs: Sequence[Run]) -> list[dict]:
    """Every doc of ``task`` over the runs: ``{id, fields, gold, prompt, prompts_differ, runs: [view or
    None per run]}``, in doc order. Under ``--repeats`` lmms-eval logs a doc once, with every response."""
    spec = bench.report_spec()
    by_doc: dict[str, list] = {}
    for i, r in enumerate(runs):
        for sample in r.full_samples(task) if task in r.samples else ():
            doc = str(sample.get("doc_id"))
            slot = by_doc.setdefault(doc, [None] * len(runs))
            slot[i] = view(spec, task, sample)
    out = []
    for doc, views in sorted(by_doc.items(), key=lambda kv: (0, int(kv[0])) if kv[0].isdigit() else (1, kv[0])):
        present = [v for v in views if v is not None]
        prompts = {v["prompt"] for v in present}
        fields: dict = {}
        for v in present:
            for k, x in v["fields"].items():
                fields.setdefault(k, x)
        first = present[0]
        out.append(
            {
                "id": doc,
                "fields": fields,
                "gold": first["gold"],
                "prompt": first["prompt"],
                "prompts_differ": len(prompts) > 1,
                "runs": [None if v is None else {k: v[k] for k in ("verdict", "score", "metric", "answer", "stage", "gold", "responses", "filtered", "judge", "record")} | ({"prompt": v["prompt"]} if len(prompts) > 1 else {}) for v in views],
            }
        )
    spec.browser_view(task, out)
    labels = spec.image_labels(task)
    if labels:
        for d in out:
            d["image_labels"] = list(labels)
    return out
