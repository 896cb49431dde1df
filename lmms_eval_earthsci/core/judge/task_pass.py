"""The judge pass: a task's judged docs are judged in one concurrent pass per rank, before
``process_results`` runs, instead of one blocking call per doc inside ``process_results``.

Why not the upstream pattern
----------------------------
lmms-eval calls ``process_results`` once per doc: from a pool of ``--process_docs_parallel`` (4)
threads in 0.7.3, one doc at a time in 0.6.x and upstream main. A blocking judge call there caps
throughput at 4 (or 1) / latency, whatever the endpoint can take. Here:

1. A benchmark declares a :class:`JudgeSpec` (how to build the judge request for one doc and response,
   how to parse the reply) and attaches it to its ``process_results`` with :func:`judged`.
2. :func:`..adapter.judge_hook.install_judge_hook` (run by our entry point, like the task registration) wraps
   ``ConfigurableTask.apply_filters``. Right after lmms-eval has applied the task's filters on a rank,
   :func:`..adapter.judge_hook.run_task_pass` collects that rank's (doc, response) pairs, which are exactly the docs this
   rank will score, and judges them with :meth:`JudgeClient.complete_many`: ``concurrency / world_size``
   requests in flight per rank (so the endpoint sees the configured total), a progress bar on rank 0,
   the persistent verdict cache in front. No doc is judged twice across ranks: the shards are disjoint.
3. ``process_results`` then only looks the outcome up (:func:`outcome_for`), instantly.

The same hook also runs a benchmark's *batch preparation* (:func:`batched`) first: work that batches
well across docs (sentence embeddings for MSEarth's similarity fallback) is done for the whole shard in
one call, and ``process_results`` looks its results up the same way.

Memory stays bounded: images are read *undecoded* (the dataset's stored bytes, no PIL round trip) when
the client's builder threads build the request, no more requests built than are in flight plus a few
(``core.judge.client.BUILD_AHEAD``), and dropped once the reply is in; nothing but small per-doc dicts ever
reaches lmms-eval's cross-rank gather. The outcomes kept for ``process_results`` are one task's: the
next task's filters drop them (:func:`..adapter.judge_hook.after_filters`).

If the pass did not run for a doc (the hook is missing because lmms-eval internals changed, or the
pass itself failed on this rank), ``process_results`` falls back to judging its doc on the spot
(text-only specs), or records a judge failure saying which of the two happened (specs that need
images, which ``process_results`` does not get): slower or counted, never silent.

lmms-eval 0.7.3 calls ``process_results`` from a pool of threads, 0.6.x and upstream main one doc at a
time; the lookups here are thread-safe and do not depend on either.

Failure policy (documented in the README): a request that still fails after the retries, or a reply
that cannot be parsed, is recorded in the sample (the judged metric's ``judge`` record: ``status``,
``error``, ``cause``, raw reply), counted in the ``<prefix>_judge_failed`` metric, and scored as
*wrong* in the judged metric, so the denominator is always every doc. When *no* doc of a task got a
verdict (no judge configured, or the judge failed on every doc) the judged metric is ``None``
(unavailable), never a misleading 0. ``EARTHSCI_JUDGE_ON_FAILURE=raise`` makes any judge failure stop
the run instead (an error from the task's aggregation; a non-zero exit under ``--verbosity DEBUG``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_eval_earthsci.core.data.loading import doc_key
from lmms_eval_earthsci.core.judge.client import JudgeClient, get_judge
from lmms_eval_earthsci.core.judge.config import JudgeConfig, JudgeResult
from lmms_eval_earthsci.core.judge.failures import note_failures
from lmms_eval_earthsci.core.runtime import JudgeVerdicts, current
from lmms_eval_earthsci.core.scoring.metrics import mean_present
from lmms_eval_earthsci.core.settings import read_setting

logger = logging.getLogger("lmms_eval_earthsci")

Messages = Sequence[Mapping[str, Any]]
# build(doc, response, images) -> messages; ``images()`` returns the doc's media columns, undecoded
Builder = Callable[[Mapping[str, Any], str, Callable[[], dict]], Messages]


@dataclass(frozen=True)
class JudgeSpec:
    """How one benchmark uses the judge.

    ``name`` is the metric prefix (``<name>_judge_failed``); ``build`` makes the request for one doc and
    response; ``parse`` turns the raw reply into a verdict and raises ``ValueError`` if it cannot;
    ``uses_images`` says whether ``build`` calls its ``images`` argument; ``settings`` are extra
    chat-completions fields (e.g. ``max_tokens``); ``judged_text`` maps the model's raw response to
    the text the judge sees (e.g. the JSON ``answer`` field); ``process_results`` looks outcomes up
    with that same text. ``env_prefix`` names the endpoint's variables (``EARTHSCI_JUDGE_*``; e.g.
    ``EARTHSCI_DAD_*`` for MAC's stage-2 reasoner, falling back to the judge's); ``defaults`` are settings
    (``max_tokens``) used where no such variable sets them. ``per_question`` makes the requests of one
    question from all its responses (``--repeats``: a reward model shown N candidates at once): each
    returned text is a "response" to ``build`` and to :func:`outcome_for`; None: one request per response.
    ``api`` ``pooling``: a scalar reward model's vLLM ``/pooling`` endpoint (the reply is its score as text);
    ``endpoint_fallback`` False: its base URL, model and key are its own (no chat judge stands in);
    ``optional``: a metric a user opts into, not said missing at the run's end when unset.
    The pass calls it again after judging what it returned, until it returns nothing new (a tournament's
    next round reads the last one's outcomes with :func:`stored_outcome`)."""
    name: str
    build: Builder
    parse: Callable[[str], Any]
    uses_images: bool = False
    settings: Mapping[str, Any] = field(default_factory=dict)
    judged_text: Callable[[str], str] | None = None
    env_prefix: str = "EARTHSCI_JUDGE"
    defaults: Mapping[str, Any] = field(default_factory=dict)
    per_question: Callable[[Mapping[str, Any], list[str]], list[str]] | None = None
    api: str = "chat"
    endpoint_fallback: bool = True
    optional: bool = False

    def overrides(self, given: Mapping[str, Any] | None) -> dict | None:
        """The task's judge overrides, plus each of ``defaults`` that no ``<env_prefix>_*`` variable set, and
        the endpoint's API when it is not chat completions."""
        if not self.defaults and self.api == "chat":
            return dict(given) if given else None
        cfg = self.config(None)
        api = {"api": self.api} if self.api != "chat" else {}
        return {**{k: v for k, v in self.defaults.items() if getattr(cfg, k, None) is None}, **api, **(given or {})}

    def client(self, given: Mapping[str, Any] | None, purpose: str) -> JudgeClient | None:
        """The client of this spec's endpoint (None: not configured; one warning naming the settings)."""
        return get_judge(self.overrides(given), purpose=purpose, prefix=self.env_prefix, endpoint_fallback=self.endpoint_fallback)

    def config(self, given: Mapping[str, Any] | None) -> JudgeConfig:
        return JudgeConfig.from_env(given, prefix=self.env_prefix, endpoint_fallback=self.endpoint_fallback)

    def text_of(self, response: Any) -> str:
        text = response if isinstance(response, str) else ("" if response is None else str(response))
        return self.judged_text(text) if self.judged_text is not None else text


def judged(*specs: JudgeSpec) -> Callable[[Any], Any]:
    """Decorator: mark a ``process_results`` function as judged by ``specs`` (the hook runs a pass of each,
    in order)."""
    if not specs:
        raise TypeError("judged() needs at least one JudgeSpec")

    def deco(fn: Any) -> Any:
        fn.judge_spec = specs[0]
        fn.judge_specs = specs
        return fn

    return deco


def batched(prepare: Callable[[list[tuple[Mapping[str, Any], str]]], None]) -> Callable[[Any], Any]:
    """Decorator: before ``process_results`` runs on a rank, the same hook calls ``prepare`` once with
    every (doc, response) of the rank, so work that batches well (e.g. sentence embeddings) is done in
    one go; ``prepare`` stores what ``process_results`` will look up (and ``process_results`` must
    still work alone, one doc at a time, if the hook did not run)."""
    def deco(fn: Any) -> Any:
        fn.batch_prepare = prepare
        return fn

    return deco


# --------------------------------------------------------------------------- outcomes

JUDGED, REQUEST_FAILED, PARSE_FAILED, UNAVAILABLE = "judged", "request_failed", "parse_failed", "unavailable"


@dataclass
class Outcome:
    status: str
    verdict: Any = None
    reply: str | None = None
    error: str | None = None
    cached: bool = False
    attempts: int = 0
    usage: dict = field(default_factory=dict)
    cause: str | None = None  # short failure class, for the per-task summary
    task: str | None = None
    request: dict | None = None  # what the judge was sent: {"text", "images"}
    reasoning: str | None = None  # a reasoning model's reasoning_content (logged, never parsed)
    model_usage: dict | None = None  # token counts of the judged response itself (the model under test), if its backend reported them

    @property
    def ok(self) -> bool:
        return self.status == JUDGED

    @property
    def failed(self) -> bool:
        return self.status in (REQUEST_FAILED, PARSE_FAILED)

    def log(self) -> dict:
        """What goes into the logged sample: raw reply, parsed verdict, status, error."""
        out = {"status": self.status, "verdict": self.verdict, "reply": self.reply, "error": self.error, "cause": self.cause, "cached": self.cached, "request": self.request}
        if self.reasoning is not None:
            out["reasoning_content"] = self.reasoning
        return out

    def failed_item(self) -> dict | None:
        """Per-doc value of ``<prefix>_judge_failed`` (None when no judge is configured)."""
        if self.status == UNAVAILABLE:
            return None
        return {
            "score": 1 if self.failed else 0,
            "task": self.task,
            "cause": self.cause if self.failed else None,
            "cached": self.cached,
            "attempts": self.attempts,
            "prompt_tokens": int(self.usage.get("prompt_tokens", 0)),
            "completion_tokens": int(self.usage.get("completion_tokens", 0)),
            "reasoning_tokens": int(self.usage.get("reasoning_tokens", 0)),
            "model_tokens": self.model_usage,
        }


def outcome_of(spec: JudgeSpec, result: JudgeResult) -> Outcome:
    common: dict[str, Any] = dict(reply=result.content, cached=result.cached, attempts=result.attempts, usage=dict(result.usage), reasoning=result.reasoning)
    if not result.ok:
        return Outcome(REQUEST_FAILED, error=result.error, cause=result.cause or "request failed", **common)
    assert result.content is not None  # result.ok
    try:
        verdict = spec.parse(result.content)
    except Exception as exc:  # a reply that cannot be parsed is a parse failure, never a crash
        return Outcome(PARSE_FAILED, error=f"unparseable judge reply: {exc}", cause="unparseable reply", **common)
    return Outcome(JUDGED, verdict=verdict, **common)


def judged_fields(metric: str, failed_metric: str, outcome: Outcome, score: float | None, extra: Mapping[str, Any] | None = None) -> dict:
    """A doc's values of a judged metric and of its ``<prefix>_judge_failed`` counter. The judge's record
    (status, verdict, raw reply, error, the request's text and image count) travels inside the judged
    metric's value, so it is in every logged sample without being a metric of its own; ``extra`` (e.g.
    the record id) is added in every case, no judge included. ``score`` None (no judge, or a failure the
    benchmark leaves out of its mean) is left out of the item, which lmms-eval's CLT standard error and
    :func:`judged_mean` then skip."""
    if outcome.status == UNAVAILABLE:
        return {metric: dict(extra) if extra else None, failed_metric: None}
    item: dict = {**(extra or {}), "judge": outcome.log()}
    if score is not None:
        item["score"] = score
    return {metric: item, failed_metric: outcome.failed_item()}


# the request text kept in a sample (the full prompt is rebuilt from the doc when needed)
REQUEST_TEXT_CHARS = 4000


def request_summary(messages: Messages) -> dict:
    """The judge request as the logged sample shows it: all text parts joined, and the image count."""
    texts, images = [], 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        for p in content or []:
            if p.get("type") in ("image", "image_url"):
                images += 1
            elif p.get("type") == "text":
                texts.append(str(p.get("text", "")))
    text = "\n".join(texts)
    return {"text": text[:REQUEST_TEXT_CHARS] + ("..." if len(text) > REQUEST_TEXT_CHARS else ""), "images": images}


def _recording(build: Callable[[], Messages], into: dict) -> Callable[[], Messages]:
    """``build`` that also notes its request's summary in ``into`` (in the builder thread that builds it)."""
    def wrapped() -> Messages:
        msgs = build()
        into["request"] = request_summary(msgs)
        return msgs

    return wrapped


def slice_value(outcome: Outcome, score: float | None) -> dict | None:
    """A doc's value in the breakdowns of a judged metric: its score with the judge's status (not its
    whole record), so that :func:`judged_mean` reads a slice where no doc got a verdict as unavailable,
    as it reads the whole metric; None where the score is None."""
    return None if score is None else {"score": score, "judge": {"status": outcome.status}}


def judged_mean(items: Sequence[Any]) -> float | None:
    """Aggregation of a judged metric: the mean over docs (failures scored as each benchmark says),
    or None (unavailable) when no doc got a verdict: no judge configured, or the judge failed on every
    doc. A 0.0 there would read as a terrible model."""
    if not any(isinstance(i, Mapping) and (i.get("judge") or {}).get("status") == JUDGED for i in items):
        return None
    return mean_present(items)


# --------------------------------------------------------------------------- registry of pass results


def _verdicts() -> JudgeVerdicts:
    """This rank's verdicts, held by the process's runtime (:mod:`lmms_eval_earthsci.core.runtime`)."""
    return current().judge


def _store(spec: JudgeSpec, key: str, response: str, outcome: Outcome) -> None:
    v = _verdicts()
    with v.lock:
        v.outcomes[(spec.name, key, response)] = outcome


def begin_pass(spec_name: str, overrides: Any) -> None:
    """A pass of ``spec_name`` starts with the task's judge ``overrides`` (the per-doc fallback uses them too)."""
    v = _verdicts()
    with v.lock:
        v.overrides[spec_name] = overrides
        v.errors.pop(spec_name, None)


def pass_failed(spec_name: str, exc: BaseException) -> None:
    """This rank's pass of ``spec_name`` raised: the per-doc fallback's failures say why."""
    v = _verdicts()
    with v.lock:
        v.errors[spec_name] = f"{type(exc).__name__}: {exc}"


def forget(spec_name: str | None = None) -> None:
    """Drop stored outcomes (all, or one spec's): :func:`..adapter.judge_hook.after_filters` drops every earlier task's when a
    task's filters are applied, so a run holds one task's outcomes at a time."""
    v = _verdicts()
    with v.lock:
        for k in [k for k in v.outcomes if spec_name is None or k[0] == spec_name]:
            del v.outcomes[k]
        for name in [name for name in v.errors if spec_name is None or name == spec_name]:
            del v.errors[name]


def stored_outcome(spec: JudgeSpec, doc: Mapping[str, Any], response: str) -> Outcome | None:
    """The outcome this rank's pass stored for ``response`` on ``doc``, or None (nothing is judged)."""
    v = _verdicts()
    with v.lock:
        return v.outcomes.get((spec.name, doc_key(doc), response))


def outcome_for(spec: JudgeSpec, doc: Mapping[str, Any], response: str, overrides: Mapping[str, Any] | None = None) -> Outcome:
    """The verdict for ``response`` on ``doc``: from this rank's judge pass, else judged now (the
    fallback when the pass did not run), else UNAVAILABLE when no judge is configured."""
    response = response if isinstance(response, str) else ("" if response is None else str(response))
    key = doc_key(doc)
    v = _verdicts()
    with v.lock:
        hit = v.outcomes.get((spec.name, key, response))
        used_overrides = v.overrides.get(spec.name)
        pass_error = v.errors.get(spec.name)
    if hit is not None:
        return hit
    client = spec.client(overrides if overrides is not None else used_overrides, purpose=f"{spec.name} metrics")
    if client is None:
        return Outcome(UNAVAILABLE)
    noted: dict = {}
    if spec.uses_images:
        why = (
            f"the judge pass failed on this rank ({pass_error})"
            if pass_error
            else "the judge pass did not run for this doc (the apply_filters hook is not installed: see the registration warning)"
        )
        out = Outcome(REQUEST_FAILED, error=f"{why}; process_results has no images to judge it now", cause="judge pass failed" if pass_error else "judge pass missing")
    else:
        out = outcome_of(spec, client.complete(_recording(lambda: spec.build(doc, response, dict), noted), **dict(spec.settings)))
        out.request = noted.get("request")
    _store(spec, key, response, out)
    return out


# --------------------------------------------------------------------------- the pass


@dataclass
class PassItem:
    doc: Mapping[str, Any]
    response: str
    images: Callable[[], dict] = dict
    key: str = ""
    model_usage: dict | None = None  # the response's own token counts (lmms-eval >= 0.7 backends that report them)

    def __post_init__(self) -> None:
        if not self.key:
            self.key = doc_key(self.doc)


def world() -> tuple[int, int]:
    """(rank, world_size) from the launcher's environment (accelerate / torchrun set these)."""
    try:
        size = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")))
    except ValueError:
        size, rank = 1, 0
    return rank, max(1, size)


def run_pass(
    spec: JudgeSpec,
    items: Sequence[PassItem],
    client: JudgeClient,
    *,
    concurrency: int | None = None,
    progress: bool = False,
    desc: str = "judging",
    task: str | None = None,
    on_results: Callable[[JudgeClient, Sequence[JudgeResult], str | None], None] | None = None,
) -> list[Outcome]:
    """Judge ``items`` concurrently (deduplicated on doc and response), store and return outcomes in
    input order; ``on_results`` sees the client's results (the lmms-eval adapter logs their tokens). Never
    raises for a failing request or reply."""
    unique: dict[tuple[str, str], PassItem] = {}
    for it in items:
        unique.setdefault((it.key, it.response), it)
    todo = list(unique.values())

    noted: list[dict] = [{} for _ in todo]

    def request(it: PassItem, into: dict) -> Callable[[], Messages]:
        return _recording(lambda: spec.build(it.doc, it.response, it.images), into)

    results = client.complete_many([request(it, n) for it, n in zip(todo, noted)], progress=progress, desc=desc, concurrency=concurrency, **dict(spec.settings))
    by_key = {}
    for it, res, n in zip(todo, results, noted):
        out = outcome_of(spec, res)
        out.task = task
        out.request = n.get("request")
        out.model_usage = it.model_usage
        _store(spec, it.key, it.response, out)
        by_key[(it.key, it.response)] = out
    if on_results is not None:
        on_results(client, results, task)
    return [by_key[(it.key, it.response)] for it in items]


TOKEN_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens")


def _sum_tokens(counts: Sequence[Mapping]) -> dict:
    return {k: sum(int(c.get(k) or 0) for c in counts) for k in TOKEN_FIELDS}


def failure_causes(causes: Iterable[str | None]) -> dict[str, int]:
    """``{cause: count}``, most frequent first."""
    counts: dict[str, int] = {}
    for c in causes:
        counts[c or "unknown"] = counts.get(c or "unknown", 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def summarize(outcomes: Sequence[Outcome]) -> dict:
    return {
        "items": len(outcomes),
        "judged": sum(o.ok for o in outcomes),
        "failed": sum(o.failed for o in outcomes),
        "causes": failure_causes(o.cause for o in outcomes if o.failed),
        "cache_hits": sum(o.cached for o in outcomes),
        "requests": sum(o.attempts for o in outcomes if not o.cached),
        "prompt_tokens": sum(int(o.usage.get("prompt_tokens", 0)) for o in outcomes if not o.cached),
        "completion_tokens": sum(int(o.usage.get("completion_tokens", 0)) for o in outcomes if not o.cached),
    }


# --------------------------------------------------------------------------- aggregation


ON_FAILURE_ENV = "EARTHSCI_JUDGE_ON_FAILURE"


class JudgeFailedError(RuntimeError):
    """Raised from a task's aggregation when ``EARTHSCI_JUDGE_ON_FAILURE=raise`` and a doc's judging failed."""

def _on_failure() -> str:
    value = (read_setting(ON_FAILURE_ENV) or "wrong").lower()
    if value not in ("wrong", "raise"):
        logger.warning("lmms_eval_earthsci: %s=%r is not one of wrong, raise; using wrong", ON_FAILURE_ENV, value)
        return "wrong"
    return value


def model_tokens(counts: Sequence[Any]) -> dict | None:
    """Sum of the judged responses' own token counts (the model under test; DAD's stage 1), with the
    number of docs that had them; None when the backend reported none (older lmms-eval, local backends
    that do not count, ``--use_cache`` replays)."""
    have = [c for c in counts if isinstance(c, Mapping)]
    if not have:
        return None
    return {"docs": len(have), **_sum_tokens(have)}


def judge_failed(items: Sequence[Any]) -> int | None:
    """Aggregation of ``<prefix>_judge_failed``: the number of docs whose judging failed, or None if no
    judge was configured. Runs once per task on rank 0, after every rank's docs were gathered, and logs
    the task's summary line (docs, failures by cause, cache hits, requests, tokens); the per-doc
    details are in the logged samples."""
    present = [i for i in items if isinstance(i, Mapping)]
    if not present:
        return None
    tasks = sorted({str(i.get("task")) for i in present if i.get("task")})
    task = ",".join(tasks) or "judged task"
    causes = failure_causes(i.get("cause") for i in present if i.get("score"))
    summary: dict[str, Any] = {
        "docs": len(present),
        "failed": sum(int(i.get("score") or 0) for i in present),
        "failures_by_cause": causes,
        "cache_hits": sum(bool(i.get("cached")) for i in present),
        "requests": sum(int(i.get("attempts") or 0) for i in present if not i.get("cached")),
        "prompt_tokens": sum(int(i.get("prompt_tokens") or 0) for i in present if not i.get("cached")),
        "completion_tokens": sum(int(i.get("completion_tokens") or 0) for i in present if not i.get("cached")),
        "reasoning_tokens": sum(int(i.get("reasoning_tokens") or 0) for i in present if not i.get("cached")),
        "model_tokens": model_tokens([i.get("model_tokens") for i in present]),
    }
    logger.info("lmms_eval_earthsci judge summary %s: %s", task, json.dumps(summary))
    if summary["failed"]:
        note_failures(task, summary["failed"], summary["docs"], causes)
        why = ", ".join(f"{c} x {n}" for c, n in causes.items())
        msg = f"{task}: {summary['failed']} of {summary['docs']} judged docs failed ({why})"
        if _on_failure() == "raise":
            raise JudgeFailedError(f"lmms_eval_earthsci: {msg}; stopping because {ON_FAILURE_ENV}=raise")
        if summary["failed"] == summary["docs"]:
            logger.warning("lmms_eval_earthsci: %s; the judged metric is reported unavailable (null)", msg)
        else:
            logger.warning("lmms_eval_earthsci: %s; scored wrong (see the `judge` record of the judged metric in the samples)", msg)
    return summary["failed"]
