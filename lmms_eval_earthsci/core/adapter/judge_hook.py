"""The judge pass meets lmms-eval here: ``ConfigurableTask.apply_filters`` followed by this rank's pass over
the task's (doc, response) pairs (:func:`after_filters`), read from lmms-eval's instances and undecoded docs,
responses stripped of reasoning blocks as lmms-eval will strip them, the judge's tokens logged into lmms-eval's
usage record. The pass itself (requests, verdicts, the fallback) is :mod:`..judge.task_pass`, which knows
nothing of lmms-eval. Inventory entries "judge pass", "reasoning tags", "reasoning stripping", "token usage
log", "instances", "undecoded docs"."""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from lmms_eval_earthsci.core.adapter.inventory import ENTRIES
from lmms_eval_earthsci.core.data.loading import is_media, undecoded
from lmms_eval_earthsci.core.judge.client import JudgeClient
from lmms_eval_earthsci.core.judge.config import JudgeResult
from lmms_eval_earthsci.core.judge.failures import note_endpoint, note_no_judge
from lmms_eval_earthsci.core.judge.task_pass import Outcome, PassItem, _sum_tokens, begin_pass, forget, logger, pass_failed, run_pass, summarize, world
from lmms_eval_earthsci.core.scoring.extraction import as_text
from lmms_eval_earthsci.core.settings import cli_value
from lmms_eval_earthsci.core.upstream.patching import wrap_task_method

# lmms-eval strips reasoning blocks (and surrounding whitespace) from each response after the filters
# and before process_results; the pass runs between the two, so it applies the same stripping.
_LMMS_DEFAULT_REASONING_TAGS = '[["<think>", "</think>"], ["<analysis>", "</analysis>"]]'


# a question's requests made in rounds (a tournament of 16: 4 rounds); a bound, never reached by ours
MAX_ROUNDS = 8


def _cli_reasoning_tags() -> str | None:
    argv = sys.argv
    given = cli_value(argv, "--reasoning_tags")
    if given is not None:
        return given
    # the CLI applies its default tags; the Python API (simple_evaluate without cli_args) strips none
    argv0 = argv[0] if argv else ""
    cli = "lmms_eval.__main__" in sys.modules or os.path.basename(argv0) == "lmms-eval" or argv0.endswith(os.path.join("lmms_eval", "__main__.py"))
    return _LMMS_DEFAULT_REASONING_TAGS if cli else None


def reasoning_tags_for(task: Any) -> Any:
    """The reasoning tags lmms-eval will strip for ``task`` (task setting over the CLI's), or None."""
    try:
        from lmms_eval.api.reasoning import parse_reasoning_tags_config  # noqa: PLC0415 - lmms-eval's API; absent in some versions (nothing is stripped)

        return parse_reasoning_tags_config(cli_value=_cli_reasoning_tags(), task_value=getattr(task.config, "reasoning_tags", None))
    except Exception:  # older/newer lmms-eval without this module: nothing is stripped
        return None


def normalize_response(text: str, tags: Any) -> str:
    """The response as ``process_results`` will receive it (idempotent)."""
    if not tags:
        return text
    try:
        from lmms_eval.api.reasoning import strip_reasoning_tags  # noqa: PLC0415 - lmms-eval's API; absent in some versions (nothing is stripped)

        return strip_reasoning_tags(text, tags)
    except Exception:
        return text


def _log_lmms_usage(client: JudgeClient, results: Sequence[JudgeResult], task: str | None) -> None:
    """The judge's fresh (uncached) token counts into lmms-eval's usage record (``results["usage"]``,
    ``source="judge"``, as its own judge providers log them), where lmms-eval has one (>= 0.7)."""
    try:
        from lmms_eval.models.model_utils.usage_metrics import log_usage  # noqa: PLC0415 - lmms-eval's models (seconds); absent before 0.7
    except ImportError:
        return
    model = str(getattr(client.config, "model", "judge"))
    for res in results:
        if res.ok and not res.cached and res.usage:
            reasoning = int(res.usage.get("reasoning_tokens", 0))  # part of completion_tokens: not counted twice
            log_usage(model, task_name=task, input_tokens=int(res.usage.get("prompt_tokens", 0)), output_tokens=int(res.usage.get("completion_tokens", 0)) - reasoning, reasoning_tokens=reasoning, source="judge")


def token_counts_of(inst: Any) -> dict | None:
    """An instance's token counts summed over its requests (lmms-eval >= 0.7 keeps them in
    ``Instance.token_counts`` for backends that report usage), or None when none were reported."""
    dicts = [tc if isinstance(tc, Mapping) else (tc.to_dict() if hasattr(tc, "to_dict") else None) for tc in getattr(inst, "token_counts", None) or []]
    dicts = [d for d in dicts if d]
    return _sum_tokens(cast(list[Mapping], dicts)) if dicts else None


def _rank_items(task: Any, media: bool, tags: Any = None, per_question: Callable[[Any, list[str]], list[str]] | None = None) -> list[PassItem]:
    """(doc, response) items of this rank's instances of ``task``, responses as ``process_results``
    will see them, images loaded lazily; with ``per_question``, the requests it makes of each question's
    responses instead."""
    docs = task.eval_docs_no_media
    cache = {}
    lock = threading.Lock()

    def images_of(doc_id: int) -> Callable[[], dict]:
        def load() -> dict:
            with lock:  # the undecoded view is built once, not by every builder thread at once
                if "ds" not in cache:
                    cache["ds"] = undecoded(task.eval_docs)
            row = cache["ds"][doc_id]
            return {k: v for k, v in row.items() if is_media(v)}

        return load

    items = []
    for inst in task.instances:
        if isinstance(inst.metadata, dict) and inst.metadata.get("__padding_only__"):
            continue
        doc = docs[inst.doc_id]
        usage = token_counts_of(inst)
        for resp in inst.filtered_resps.values():
            # a non-string response as process_results reads it (as_text: None -> ""); lmms-eval strips strings only
            texts = [normalize_response(r, tags) if isinstance(r, str) else as_text(r) for r in (resp if isinstance(resp, list) else [resp])]
            if per_question is not None:  # the question's requests, from all its responses
                texts = per_question(doc, texts)
            for text in texts:
                items.append(PassItem(doc, text, images_of(inst.doc_id) if media else dict, model_usage=usage))
    return items


def run_task_pass(task: Any) -> list[Outcome] | None:
    """The hook body: batch preparation, then the judge pass, for this rank's docs of ``task``."""
    pr = getattr(task.config, "process_results", None)
    prepare = getattr(pr, "batch_prepare", None)
    single = getattr(pr, "judge_spec", None)
    specs = getattr(pr, "judge_specs", None) or ([single] if single is not None else [])
    if prepare is None and not specs:
        return None
    tags = reasoning_tags_for(task)
    if prepare is not None:
        try:
            prepare([(it.doc, it.response) for it in _rank_items(task, media=False, tags=tags)])
        except Exception:  # process_results still scores each doc on its own
            logger.exception("lmms_eval_earthsci: batch preparation failed; scoring one doc at a time")
    outcomes: list[Outcome] = []
    for spec in specs:
        try:
            outcomes += _spec_pass(task, spec, tags) or []
        except Exception:  # one spec's pass failing leaves the next spec's pass to run; process_results falls back per doc
            if len(specs) == 1:
                raise
            logger.exception("lmms_eval_earthsci: the %s pass failed; its requests fall back to one doc at a time", spec.name)
    return outcomes if specs else None


def _spec_pass(task: Any, spec: Any, tags: Any) -> list[Outcome] | None:
    """One spec's pass over this rank's docs of ``task``."""
    meta = task.config.metadata if isinstance(task.config.metadata, dict) else {}
    begin_pass(spec.name, meta.get("judge"))
    try:
        client = spec.client(meta.get("judge"), purpose=f"{spec.name} metrics")
        name = getattr(task.config, "task", spec.name)
        if client is None:
            if not spec.optional:  # an endpoint a user opts into is not missing when unset
                note_no_judge(str(name), spec.config(meta.get("judge")).missing(spec.env_prefix))
            return None
        note_endpoint(str(name), f"{spec.env_prefix}_BASE_URL", client.config.base_url)
        rank, size = world()
        conc = max(1, math.ceil(client.config.concurrency / size))
        per_question = spec.per_question

        def requests(doc: Any, texts: list[str]) -> list[str]:
            texts = [spec.text_of(t) for t in texts]
            return texts if per_question is None else per_question(doc, texts)

        outcomes, asked = [], set()
        # one round; a spec making a question's requests may ask again: its next requests may read this round's outcomes
        for round_ in range(1 if per_question is None else MAX_ROUNDS):
            items = [it for it in _rank_items(task, media=spec.uses_images, tags=tags, per_question=requests) if (it.key, it.response) not in asked]
            if not items:
                break
            asked |= {(it.key, it.response) for it in items}
            desc = f"judging {name}" + (f" (round {round_ + 1})" if round_ else "")
            outcomes += run_pass(spec, items, client, concurrency=conc, progress=rank == 0, desc=desc, task=name, on_results=_log_lmms_usage)
    except Exception as exc:
        pass_failed(spec.name, exc)
        raise
    s = summarize(outcomes)
    logger.info("lmms_eval_earthsci judge pass %s (rank %d/%d, %d in flight): %s", name, rank, size, conc, json.dumps(s))
    return outcomes


def after_filters(original: Callable[..., Any]) -> Callable[..., Any]:
    """``ConfigurableTask.apply_filters`` followed by this rank's pass for the task. lmms-eval (0.6.1 to
    0.7.3 and main) applies one task's filters and scores that task before it moves to the next, so when
    a task's filters are applied every earlier task's outcomes have been looked up: they are dropped
    first (:func:`forget`), and the outcomes kept at any time are one task's on this rank."""

    def apply_filters(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        forget()
        try:
            run_task_pass(self)
        except Exception:  # the pass must never kill the run; process_results falls back per doc
            logger.exception("lmms_eval_earthsci: the judge pass failed; judging falls back to one doc at a time")
        return out

    return apply_filters


def install_judge_hook() -> bool:
    """Run :func:`run_task_pass` right after ``ConfigurableTask.apply_filters`` (:func:`after_filters`).
    Idempotent; False if the lmms-eval internals it relies on are gone."""
    return wrap_task_method("apply_filters", after_filters, entry=ENTRIES["judge pass"])

