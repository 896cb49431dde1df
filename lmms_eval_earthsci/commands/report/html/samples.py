"""Every doc of every run, as the sample browser shows it: one record per (task, doc_id) with each run's
view of it side by side.

A run's view of a doc (:func:`view`) is read from its lmms-eval sample: the prompt as sent (``input``),
the raw responses (every one under ``--repeats``) and the filtered one, the size each figure reached the
model at where the run read it (``earthsci_figures``), the task's headline record, the
answer as scored and what decided it (the benchmark's :meth:`~ReportSpec.scored_answer`: MSEarth's option
and its text, by letter or by similarity; MAC's pick and its probability), the judge's record, and a
*verdict*:

- ``right`` / ``wrong``: the headline record's score (or its ``pred`` against its ``gold``);
- ``no_answer``: the extraction found no answer (each benchmark's ``extraction_fields``, as the counts
  table reads them);
- ``judge_failed``: the judge could not judge it (its record's status);
- ``no_verdict``: nothing scored it; the task's data says why (:func:`no_verdict_reason`: no judge
  configured, a ``--predict_only`` run, a metric the run could not compute);
- ``scored``: a graded score with no right or wrong (MSEarth captioning's 1-5).

Wrong, no answer and judge failed are the *not right* of the paired comparisons (McNemar's cells).

The doc's breakdown fields come from the slice metrics its sample carries (the benchmark's
``breakdown_fields``, through ``slice_label``) and from its record's ``record_fields``: this module names
no benchmark's field.

A task's docs are written in two parts (:func:`task_docs`): what the browser filters and lists (fields,
gold, prompt, figures, each run's verdict, scored answer and stage) and, per run, what a doc's card opens
(responses, judge record, the headline record), so that the page loads in full only the runs it shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from lmms_eval_earthsci.commands.report.runs import Run, _number
from lmms_eval_earthsci.commands.report.sections import _extraction, _judge_record
from lmms_eval_earthsci.core.benchmark import Benchmark, ReportSpec
from lmms_eval_earthsci.core.scoring import circular

VERDICTS = ("right", "wrong", "no_answer", "judge_failed", "no_verdict", "scored")
NOT_RIGHT = ("wrong", "no_answer", "judge_failed")  # McNemar's "wrong" side, as report.comparisons scores them
# a run's view, split: what the list and filters read (kept for every run) / what a doc's card opens
SUMMARY_KEYS = ("verdict", "score", "answer", "detail", "stage")
DETAIL_KEYS = ("responses", "filtered", "judge", "record", "metric")


def _responses(sample: Mapping[str, Any]) -> list[str]:
    """Every raw response of the doc (``--repeats k``: k of them), flattened to strings."""
    raw = sample.get("resps", sample.get("filtered_resps"))
    out: list[str] = []

    def walk(v: Any) -> None:
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


def main_metric(spec: ReportSpec, task: str, sample: Mapping[str, Any]) -> str | None:
    """The headline metric whose record this sample carries (a judged task's judged metric first)."""
    for m in (*[j for j in spec.judged_metrics if j in sample], *spec.headline_metrics(task)):
        if m in sample:
            return m
    return None


def _circular_view(sample: Mapping[str, Any], rec: Mapping[str, Any]) -> dict:
    """A rotation of a circular variant (:mod:`lmms_eval_earthsci.core.scoring.circular`): right or wrong at this
    rotation, the option chosen mapped back to its original letter, the position it was at."""
    option = rec.get("option")
    return {
        "verdict": "no_answer" if option is None and not rec.get("correct") else ("right" if rec.get("correct") else "wrong"),
        "score": 100.0 if rec.get("correct") else 0.0,
        "metric": circular.HEAD,
        "answer": option,
        "detail": f"at position {rec.get('position')} (rotation {rec.get('k')}); original letters" if option else None,
        "stage": None,
        "gold": str(rec.get("gold") or ""),
        "prompt": str(sample.get("input", "")),
        "responses": _responses(sample),
        "filtered": _filtered(sample),
        "judge": None,
        "record": {k: v for k, v in rec.items() if k != "official"},
        "fields": {"rotation": str(rec.get("k"))},
        "figures": figures_seen(sample),
    }


def figures_seen(sample: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The size each figure was sent at and reached the model at (and its visual tokens), as the run read it
    from its own request (``earthsci_figures``: :mod:`lmms_eval_earthsci.core.boundary.figures_seen`); None
    where it could not be read."""
    seen = sample.get("earthsci_figures")
    if not isinstance(seen, list):
        return None
    out = []
    for f in seen:
        if isinstance(f, Mapping) and isinstance(f.get("reached"), list):
            out.append({"sent": f.get("sent"), "reached": f.get("reached"), "tokens": f.get("tokens")})
    return out or None


def view(spec: ReportSpec, task: str, sample: Mapping[str, Any]) -> dict:
    """One run's view of one doc (see the module docstring)."""
    circ = sample.get(circular.HEAD)
    if circular.is_record(circ):
        return _circular_view(sample, cast(Mapping[str, Any], circ))
    metric = main_metric(spec, task, sample)
    record = sample.get(metric) if metric else None
    rec = record if isinstance(record, Mapping) else {}
    is_judged, judge = _judge_record(spec, dict(sample))
    extraction = _extraction(spec, dict(sample))
    # a judged task's rule-based twin record (emma_acc beside emma_judge_acc) carries the extraction
    rule_rec: Mapping[str, Any] = next((sample[n] for n in spec.extraction_fields if isinstance(sample.get(n), Mapping)), {}) or {}
    score = rec.get("score") if _number(rec.get("score")) else (record if _number(record) else None)
    status = (judge or {}).get("status")
    if status in ("request_failed", "parse_failed"):
        verdict = "judge_failed"
    elif extraction == "none" and not (is_judged and score is not None):
        verdict = "no_answer"
    elif score is None and spec.answer_field in rec and spec.gold_field in rec:  # a decision against its gold
        pred = rec.get(spec.answer_field)
        verdict = "no_answer" if pred in (None, "") else ("right" if pred == rec.get(spec.gold_field) else "wrong")
    elif score is None:
        verdict = "no_verdict"
    elif metric and metric.endswith("_score"):
        verdict = "scored"
    else:
        verdict = "right" if score > 0 else "wrong"
    fields = {}
    for m, v in sample.items():
        if _number(v):
            label = spec.slice_label(m)
            if label != m and " " in label:
                key, value = label.split(" ", 1)
                fields[key] = value
    for k in spec.record_fields:
        v = rec.get(k, rule_rec.get(k))
        if isinstance(v, str) and v and k not in fields:
            fields[k] = v
    source = rec if spec.answer_field and spec.answer_field in rec else (rule_rec or rec)
    answer, detail = spec.scored_answer(task, sample, source)
    stage_key = next((k for n, k in spec.extraction_fields.items() if isinstance(sample.get(n), Mapping)), None)
    stage = (rule_rec or {}).get(stage_key) if stage_key else None
    gold = rec.get(spec.gold_field) if spec.gold_field else None
    return {
        "verdict": verdict,
        "score": score,
        "metric": metric,
        "answer": answer,
        "detail": detail,
        "stage": None if stage in (None, "") else str(stage),
        "gold": str(gold if gold not in (None, "") else sample.get("target", "")),
        "prompt": str(sample.get("input", "")),
        "responses": _responses(sample),
        "filtered": _filtered(sample),
        "judge": judge,
        "record": {k: v for k, v in rec.items() if k != "judge"},
        "fields": fields,
        "figures": figures_seen(sample),
    }


def no_verdict_reason(spec: ReportSpec, run: Run, task: str, metric: str | None) -> str:
    """Why a doc of ``task`` has no verdict in ``run``, from what the run recorded: a ``--predict_only``
    run, a judged metric without a judge, a metric the run could not compute (``Run.unavailable``)."""
    source = run.source.get(task) or (run.files[-1] if run.files else None)
    cli = (source.config.get("resolved_cli_args") or {}) if source is not None else {}
    if isinstance(cli, dict) and cli.get("predict_only"):
        return "a --predict_only run: its responses were logged, nothing was scored (`lmms-eval-earthsci rescore` scores them)"
    why = run.unavailable.get(task, {})
    for m in dict.fromkeys([metric, *spec.headline_metrics(task)]):
        if m in why:
            return f"{m} could not be computed in this run: {why[m]}"
    if metric in spec.judged_metrics:
        return f"no LLM judge was configured for this run, so {metric} has no value (set EARTHSCI_JUDGE_BASE_URL and EARTHSCI_JUDGE_MODEL, or judge it later: `lmms-eval-earthsci rescore`)"
    return f"the sample carries no value of {metric or ' / '.join(spec.headline_metrics(task)) or 'a headline metric'}"


def leaf_tasks(bench: Benchmark, runs: Sequence[Run]) -> list[str]:
    """The benchmark's tasks that have samples in some run, in its report order."""
    spec = bench.report_spec()
    names = {t for r in runs for t in r.samples if bench.owns(t)}
    return sorted(names, key=lambda t: (spec.order(t), t))


def _doc_order(doc: str) -> tuple:
    return (0, int(doc)) if doc.isdigit() else (1, doc)


def task_docs(bench: Benchmark, task: str, runs: Sequence[Run], details: Callable[[int, dict], None] | None = None) -> dict:
    """Every doc of ``task`` over the runs, read one run at a time: ``{"docs": [{id, fields, gold, prompt,
    prompts_differ, runs: [summary (SUMMARY_KEYS) or None per run]}], "no_verdict": [why, per run],
    "views": [a pair view shared by docs]}`` in doc order (a doc's ``pair``: its index in ``views``). Each run's details (``{doc id: DETAIL_KEYS, "figures" where the run read them, and "prompt" where the run's differs}``) go to
    ``details(run index, by doc)`` as soon as the run is read (without ``details``: into each summary).
    Under ``--repeats`` lmms-eval logs a doc once, with every response."""
    d: Any  # a doc id, then a doc
    spec = bench.report_spec()
    by_doc: dict[str, dict] = {}
    reasons: list[str | None] = []
    for i, r in enumerate(runs):
        mine: dict[str, dict] = {}
        reason = None
        for sample in r.full_samples(task) if task in r.samples else ():
            v = view(spec, task, sample)
            doc = by_doc.setdefault(str(sample.get("doc_id")), {"id": str(sample.get("doc_id")), "fields": {}, "gold": v["gold"], "prompt": v["prompt"], "prompts_differ": False, "runs": [None] * len(runs)})
            for k, x in v["fields"].items():
                doc["fields"].setdefault(k, x)
            summary = {k: v[k] for k in SUMMARY_KEYS}
            summary["record"] = v["record"]  # for the benchmark's browser_view; dropped after it
            if spec.browser_records:  # the other records its browser_view reads; dropped with it
                summary["records"] = {k: sample.get(k) for k in spec.browser_records}
            detail = {k: v[k] for k in DETAIL_KEYS}
            if v["figures"] is not None:  # only where the run read them
                detail["figures"] = v["figures"]
            if v["prompt"] != doc["prompt"]:
                doc["prompts_differ"] = True
                detail["prompt"] = v["prompt"]
            if v["verdict"] == "no_verdict" and reason is None:
                reason = no_verdict_reason(spec, r, task, v["metric"])
            doc["runs"][i] = summary
            mine[doc["id"]] = detail
        reasons.append(reason)
        if details is not None:
            details(i, mine)
        else:
            for d, x in mine.items():
                by_doc[d]["runs"][i].update(x)
        del mine
    docs = [by_doc[d] for d in sorted(by_doc, key=_doc_order)]
    if not _rotations_view(docs):
        spec.browser_view(task, docs)
    if details is not None:
        for d in docs:
            for s in d["runs"]:
                if s is not None:
                    s.pop("record", None)
                    s.pop("records", None)
    labels = spec.image_labels(task)
    if labels:
        for d in docs:
            d["image_labels"] = list(labels)
    out = {"docs": docs, "no_verdict": reasons}
    views = _share_views(docs)
    if views:
        out["views"] = views
    return out


NO_ANSWER = "∅"
#: how to read a rotations card, in its title: a flip lists each rotation's answer as ``X@Y``
ROTATIONS_KEY = f" ({NO_ANSWER}: no answer); flipped: X@Y per rotation = option X (original letter) chosen at position Y (the letter it was asked under)"


def _rotations_view(docs: list[dict]) -> bool:
    """A circular variant's docs: each question's rotations on every one of its cards (the ``pair``
    view), each run's choice mapped back to the original letters (:data:`NO_ANSWER`: none), and a flip
    as ``option@position`` per rotation (:data:`ROTATIONS_KEY` explains it on the card); False for any
    other task."""
    by_source: dict[Any, list[tuple[dict, Mapping[str, Any]]]] = {}
    for d in docs:
        rec = next((r["record"] for r in d["runs"] if r and circular.is_record(r.get("record"))), None)
        if rec is None:
            return False
        by_source.setdefault(rec["source"], []).append((d, rec))
    n = len(docs[0]["runs"]) if docs else 0
    for source, members in by_source.items():
        members.sort(key=lambda m: m[1].get("k") or 0)
        rows = [{"doc": d["id"], "label": f"rotation {rec.get('k')}: gold at {rec.get('gold_position')}", "gold": rec.get("gold"),
                 "values": [((r["record"].get("option") or NO_ANSWER) if r and isinstance(r.get("record"), Mapping) else None) for r in d["runs"]]} for d, rec in members]
        summary: list[str | None] = []
        for i in range(n):
            recs = [d["runs"][i]["record"] for d, _ in members if d["runs"][i]]
            if len(recs) < len(members):
                summary.append(None)
            elif circular.question_right(recs):
                summary.append("right at every rotation")
            elif circular.question_flipped(recs):
                summary.append("flipped: " + " ".join(f"{r.get('option') or NO_ANSWER}@{r.get('position') or NO_ANSWER}" for r in recs))
            else:
                summary.append("the same option at every rotation, wrong")
        view = {"title": f"question {source} (the official task's doc {source}): {len(members)} rotation{'s' if len(members) > 1 else ''}, answers in the original letters{ROTATIONS_KEY}",
                "rows": rows, "summary": summary}
        for d, _ in members:
            d["pair"] = view
    return bool(by_source)


def _share_views(docs: list[dict]) -> list[dict]:
    """A ``pair`` view the benchmark gave several docs (a claim and its variants) written once: each doc's
    ``pair`` becomes its index in the returned list (the data file's ``views``), not a copy per member."""
    views: list[dict] = []
    at: dict[int, int] = {}
    for d in docs:
        v = d.get("pair")
        if isinstance(v, dict):
            if id(v) not in at:
                at[id(v)] = len(views)
                views.append(v)
            d["pair"] = at[id(v)]
    return views
