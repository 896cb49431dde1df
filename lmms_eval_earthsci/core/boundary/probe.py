"""A run knows the layout it delivered: before the first doc, for the model class in use, whether each of
our tasks' prompts reaches the model as written (:mod:`.layout_verdict` names what is lost).

- Any class that holds a transformers processor or model, or an in-process vLLM engine: observed
  (:mod:`.observe`): one probe request per task through the class's own ``generate_until``, stopped where
  it reaches the processor (or, for vLLM, rendered by the engine's own code), compared with the task's
  messages. Where a simple class lost a layout that ``interleave_visuals=True`` would deliver, or a vLLM
  engine one that ``interleave_mm_strings=True`` would, the fix says so (observed with the setting on).
- Where nothing can be observed: the fallbacks (the simple classes we know, :data:`SIMPLE_HANDLING`; a
  processor's chat template rendered as the class does), else "not observed" with one warning line per
  run naming ``check-model``.
- Server classes (``openai``, ``async_openai``, ``sglang``): the messages are sent as written and the
  server's template decides; one info line per run says what the server must be told.

Where a layout is lost, one warning line names the class, the task, what is lost and the fix; the
task's ``metadata.earthsci_layout`` in the results JSON records the verdict (``report`` reads it). The
probe costs milliseconds per task and never stops a run.

The same wrap of ``evaluate`` notes an evaluation of our tasks that raised (:mod:`..upstream.ledger`: lmms-eval
prints the traceback and would exit 0).
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.core.adapter.harness import is_cli_run, leaf_tasks
from lmms_eval_earthsci.core.boundary import budget, figures_seen, observe
from lmms_eval_earthsci.core.boundary.interleave import applies as interleaves
from lmms_eval_earthsci.core.boundary.interleave import install_interleave_fix, numbered_form
from lmms_eval_earthsci.core.boundary.inventory import ENTRIES
from lmms_eval_earthsci.core.boundary.layout_verdict import NOT_OBSERVED, Layout, Verdict, check_prompt, fix_for, layout_of, simple_verdict, verdict_of
from lmms_eval_earthsci.core.prompts.messages import unrecorded
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream import ledger, taps
from lmms_eval_earthsci.core.upstream.patching import patch, task_class, wrap_method

logger = logging.getLogger("lmms_eval_earthsci")

AS_WRITTEN, LOST, NOT_CHECKED, SERVER = "as written", "lost", "not checked", "depends on the server"
INTERLEAVE_FIX = ("interleave_visuals=True in --model_args (the class then places each image where the text names it; "
                  "lmms_eval_earthsci rewrites our placeholders to the <image i> it reads)")

#: simple classes whose handling of images we know (lmms-eval 0.6.1-0.7.3): ``strip``: ``<image>`` is
#: removed from the text and every image goes before it; ``keep``: ``<image>`` tokens stay where they are
#: (images first only when the text has none)
SIMPLE_HANDLING = MappingProxyType({"Qwen2_5_VL": "strip", "Qwen3_VL": "strip", "Qwen2_VL": "strip", "LlavaHf": "keep"})
#: chat classes that insert a default system turn before the task's messages (our list subclass keeps
#: the task's own: :class:`lmms_eval_earthsci.core.prompts.messages.Messages`)
INSERTS_SYSTEM = frozenset({"Qwen3_VL"})
#: chat classes lmms-eval breaks for every task: ``{module: why}`` (the probe says so before the crash)
BROKEN_CLASSES = MappingProxyType({
    "lmms_eval.models.chat.huggingface": "lmms-eval 0.7.3's huggingface class crashes for every model: it passes audios= and videos=[] to the processor "
    "and compares model types with config classes, loading a model without generate (models/chat/huggingface.py); use the family's own class "
    "(qwen2_5_vl, qwen3_vl, internvl_hf, llava_hf) or vllm",
})
#: classes that send the messages to a server as written (the in-process vLLM classes are observed: their
#: engine renders the probe request); the server's template decides the layout: one info line per run
SERVER_CLASSES = MappingProxyType({"OpenAICompatible": AS_WRITTEN, "AsyncOpenAIChat": AS_WRITTEN, "Sglang": SERVER, "SGLang": SERVER})
SERVER_NOTE = ("the messages are sent as written; the server's chat template decides where images go: vLLM keeps them in place with a template that iterates "
               "the content parts (Qwen's, InternVL's), and with a string-format template only when started with --interleave-mm-strings; SGLang: a chat "
               "template that keeps images in place. `lmms-eval-earthsci check-model --model vllm --model_args model=<the served model>` shows what the engine builds")
VLLM_FIX = ("interleave_mm_strings=True in --model_args (a vLLM engine argument: with a chat template that renders the content as one string, the engine "
            "keeps each image where the messages put it instead of before the text)")

def our_tasks(task_dict: Mapping[Any, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, task)`` for every task of ours in lmms-eval's (possibly nested) task dict."""
    for name, task in leaf_tasks(task_dict):
        fn = getattr(getattr(task, "config", None), "doc_to_messages", None)
        if callable(fn) and str(getattr(fn, "__module__", "")).startswith("lmms_eval_earthsci"):
            yield name, task


def first_doc(task: Any) -> Any:
    docs = task.eval_docs
    return docs[0] if docs is not None and len(docs) else None


def task_messages(task: Any, doc: Any) -> list[dict[str, Any]]:
    """The task's chat messages for ``doc`` (lmms-eval's ``doc_to_messages``, our function with the task's
    kwargs on versions without it), the doc's route left unrecorded."""
    with unrecorded():
        if hasattr(task, "doc_to_messages"):
            return task.doc_to_messages(doc)
        fn: Callable[..., Any] = task.config.doc_to_messages
        kwargs = getattr(task, "lmms_eval_specific_kwargs", None)
        return fn(doc, kwargs) if kwargs else fn(doc)


def _simple_inputs(task: Any, doc: Any) -> tuple[str, int]:
    """What the simple route hands the class: the text and how many images (lmms-eval's own hooks)."""
    return str(task.doc_to_text(doc)), len(task.doc_to_visual(doc) or [])


def processor_of(lm: Any) -> Any:
    for name in ("processor", "_image_processor", "_processor"):
        p = getattr(lm, name, None)
        if p is not None and hasattr(p, "apply_chat_template"):
            return p
    return None


def chat_verdict(lm: Any, processor: Any, messages: list[dict[str, Any]], layout: Layout) -> Verdict:
    """Render ``messages`` through the class's processor as the class does and check the prompt."""
    from lmms_eval.protocol import ChatMessages  # noqa: PLC0415 - lmms-eval's message model, only when a run probes

    msgs = messages if hasattr(messages, "keeps_own_system") else list(messages)
    default = getattr(lm, "system_prompt", None)
    if type(lm).__name__ in INSERTS_SYSTEM and default:  # as the class does, on the object it gets
        msgs.insert(0, {"role": "system", "content": [{"type": "text", "text": default}]})
    chat = ChatMessages(messages=msgs)
    hf = chat.model_dump()["messages"] if type(lm).__name__ == "LlavaHf" else chat.to_hf_messages()
    prompt = processor.apply_chat_template(hf, tokenize=False, add_generation_prompt=True)
    token = getattr(processor, "image_token", None) or "<image>"
    return check_prompt(layout, str(prompt), re.escape(str(token)), images_passed=layout.images)


#: docs of a task looked at when its first one arrives as written but the class loses a probe conversation
#: with text before a figure (EMMA: a doc that opens with its figure says nothing of the next)
MORE_DOCS = 8


def _simple_handling(lm: Any) -> str | None:
    """How the simple class ``lm`` places images (:data:`SIMPLE_HANDLING`; ``interleave`` with our rewrite)."""
    return "interleave" if interleaves(lm) else SIMPLE_HANDLING.get(type(lm).__name__)


def _probe_conversation(first: Any, second: Any) -> list[dict[str, Any]]:
    """Two labelled figures: what a class that interleaves keeps and one that does not loses. One user turn
    and no system turn, so that a template that accepts a task's messages accepts it (a class may insert
    a system turn of its own: a second one breaks templates that want it first)."""
    return [{"role": "user", "content": [{"type": "text", "text": "A) "}, {"type": "image", "url": first}, {"type": "text", "text": "B) "}, {"type": "image", "url": second}, {"type": "text", "text": "Q"}]}]


_HARD = layout_of(_probe_conversation(None, None))


def observed_verdict(lm: Any, task: Any, doc: Any, messages: list[dict[str, Any]], layout: Layout) -> Verdict | dict[str, Any]:
    """The verdict for one doc from what the class handed its processor (:mod:`.observe`), or a dict with
    the status where nothing could be observed."""
    recolour = observe.Recolour()
    probe_messages, expected = observe.recoloured_messages(messages, recolour)
    text = str(task.doc_to_text(doc)) if hasattr(task, "doc_to_text") else ""
    if getattr(lm, "is_simple", False):
        visuals = [recolour(v) for v in (task.doc_to_visual(doc) or [])]
        if interleaves(lm):  # what our generate_until wrap does to the run's requests (core.boundary.interleave)
            text = numbered_form(text, lambda: len(visuals))
        return verdict_of(observe.observe(lm, observe.request_args(True, text, visuals)), layout, expected)
    return verdict_of(observe.observe(lm, observe.request_args(False, text, probe_messages)), layout, expected)


def _fallback_verdict(lm: Any, task: Any, messages: list[dict[str, Any]], layout: Layout, doc: Any) -> Verdict | None:
    """Where nothing could be observed: the simple classes' known handling (:data:`SIMPLE_HANDLING`) or
    the class's processor's chat template rendered as the class does; None when neither applies."""
    if getattr(lm, "is_simple", False):
        handling = _simple_handling(lm)
        if handling is None:
            return None
        text, n = _simple_inputs(task, doc)
        return simple_verdict(handling, layout, text, n, getattr(lm, "system_prompt", None))
    processor = processor_of(lm)
    return chat_verdict(lm, processor, messages, layout) if processor is not None else None


def _doc_verdict(lm: Any, task: Any, messages: list[dict[str, Any]], layout: Layout, doc: Any) -> Verdict | dict[str, Any]:
    """The verdict for one doc (its messages and their layout): observed, else the fallback, else a dict
    with the status and why."""
    seen = observed_verdict(lm, task, doc, messages, layout)
    if isinstance(seen, Verdict) or seen.get("broken"):
        return seen
    fallback = _fallback_verdict(lm, task, messages, layout, doc)
    return fallback if fallback is not None else seen


def _loses_interleaving(lm: Any) -> bool:
    """Whether the class loses a probe conversation's interleaving (labels before their figures)."""
    facts = current().seen_of(lm)
    cached = facts.get("loses_interleaving")
    if cached is None:
        images = [observe.probe_image(c) for c in observe.PALETTE[:2]]
        conversation = _probe_conversation(*images)
        expected = [observe.colour_of(i) for i in images]
        if getattr(lm, "is_simple", False):
            text = "A) <image>B) <image>Q"
            if interleaves(lm):
                text = numbered_form(text, lambda: 2)
            arguments = observe.request_args(True, text, images)
        else:
            arguments = observe.request_args(False, "A) B) Q", conversation)
        seen = verdict_of(observe.observe(lm, arguments), _HARD, expected)
        if isinstance(seen, Verdict):
            cached = not seen.ok
        elif getattr(lm, "is_simple", False):
            cached = not simple_verdict(_simple_handling(lm) or "strip", _HARD, "A) <image>B) <image>Q", 2).ok
        else:
            processor = processor_of(lm)
            cached = processor is not None and not chat_verdict(lm, processor, conversation, _HARD).ok
        facts["loses_interleaving"] = cached
    return bool(cached)


def _helps(owner: Any, setting: str, lm: Any, task: Any, doc: Any, messages: list[dict[str, Any]], layout: Layout) -> bool:
    """Whether the doc arrives as written with ``owner.<setting>`` (off in this run) switched on: observed with
    it set for one probe request, then switched off again."""
    if owner is None or getattr(owner, setting, None) is not False:
        return False
    undo = patch(owner, setting, True, entry=ENTRIES[f"layout probe: {setting} tried"])
    try:
        seen = observed_verdict(lm, task, doc, messages, layout)
    finally:
        undo()
    return isinstance(seen, Verdict) and seen.ok


def _engine_multimodal_config(lm: Any) -> Any:
    """The multimodal config of the vLLM engine ``lm`` holds (None when it holds none)."""
    for obj in observe.observable(lm)[1]:
        if observe.is_engine(obj):
            return getattr(getattr(obj, "model_config", None), "multimodal_config", None)
    return None


def _better_fix(lm: Any, task: Any, doc: Any, messages: list[dict[str, Any]], layout: Layout) -> str | None:
    """The setting that delivers a lost doc as written, where one does: a simple class's lmms-eval
    ``interleave_visuals`` (with our placeholder rewrite), a vLLM engine's ``interleave_mm_strings``."""
    if getattr(lm, "is_simple", False) and _helps(lm, "interleave_visuals", lm, task, doc, messages, layout):
        return INTERLEAVE_FIX
    if _helps(_engine_multimodal_config(lm), "interleave_mm_strings", lm, task, doc, messages, layout):
        return VLLM_FIX
    return None


def verdict_for(lm: Any, task: Any) -> dict[str, Any] | None:
    """The layout verdict of ``task`` under the model class ``lm`` (a dict for the results JSON): its
    first doc's, or where that arrives as written but the class loses interleaving, the first of its
    next docs that does not (up to :data:`MORE_DOCS`). A class with an ``earthsci_layout(task)`` method
    (rescore's replay) answers for itself: the replayed run's verdict, or None (nothing is recorded)."""
    cls = type(lm).__name__
    doc = first_doc(task)
    if doc is None:
        return {"status": NOT_CHECKED, "class": cls, "why": "no doc"}
    messages = task_messages(task, doc)
    layout = layout_of(messages)
    out: dict[str, Any] = {"class": cls, "expected": layout.shape()}
    recorded = getattr(lm, "earthsci_layout", None)
    if callable(recorded):  # a class that replays a run's responses (rescore): that run's verdict, or none
        return recorded(task.config.task)
    if cls in SERVER_CLASSES and not getattr(lm, "is_simple", False):
        status = SERVER_CLASSES[cls]
        out.update(status=status, sent=SERVER_NOTE)
        if status == SERVER:
            out["fix"] = SERVER_NOTE
        return out
    verdict = _doc_verdict(lm, task, messages, layout, doc)
    if isinstance(verdict, dict):
        broken = BROKEN_CLASSES.get(type(lm).__module__)
        if verdict.get("broken") and broken:
            verdict = {**verdict, "why": broken}
        return {**out, **verdict}
    if verdict.ok and _loses_interleaving(lm):
        docs = task.eval_docs
        for i in range(1, min(len(docs), MORE_DOCS)):
            more = task_messages(task, docs[i])
            more_layout = layout_of(more)
            other = _doc_verdict(lm, task, more, more_layout, docs[i])
            if isinstance(other, Verdict) and not other.ok:
                verdict, doc, messages, layout = other, docs[i], more, more_layout
                out.update(expected=more_layout.shape(), doc_id=i)
                break
    out.update(status=AS_WRITTEN if verdict.ok else LOST, received=verdict.received, observed=verdict.observed)
    if verdict.rendered is not None:
        out.update(rendered=verdict.rendered, visual_tokens=verdict.tokens)
    if not verdict.ok:
        simple = bool(getattr(lm, "is_simple", False))
        fix = _better_fix(lm, task, doc, messages, layout) or fix_for(verdict, simple=simple)
        out.update(lost=verdict.lost, fix=fix)
    return out


def _record(task: Any, key: str, value: dict[str, Any]) -> None:
    try:
        if not isinstance(task.config.metadata, dict):
            task.config.metadata = {}
        task.config.metadata[key] = value
    except Exception:
        pass


def _budget(lm: Any, task: Any, verdict: dict[str, Any], limit: Any) -> dict[str, Any] | None:
    """The task's ``earthsci_budget`` (:mod:`.budget`); a replaying class (rescore) answers for itself."""
    recorded = getattr(lm, "earthsci_budget", None)
    if callable(recorded):
        return recorded(task.config.task)
    try:
        return budget.budget_for(lm, task, limit, server=bool(verdict.get("sent")) or verdict.get("status") == SERVER)
    except Exception as exc:  # a probe must never stop a run
        return {"status": budget.NOT_OBSERVED, "class": type(lm).__name__, "why": f"budget probe failed: {type(exc).__name__}: {exc}"}


def pixels_in_words(pixels: float) -> str:
    """``1.6 MP``, ``0.26 MP``; below 0.01 MP the pixels themselves (``1,024 px``)."""
    if pixels >= 0.95e6:
        return f"{pixels / 1e6:.1f} MP"
    return f"{pixels / 1e6:.2g} MP" if pixels >= 1e4 else f"{int(pixels):,} px"


def budget_line(b: dict[str, Any]) -> str:
    """A budget in words, for a log line: "up to 1.6 MP (1456 x 1092, 2,028 visual tokens)"."""
    if b.get("status") != budget.OBSERVED:
        return str(b.get("status"))
    size, tokens = b.get("reached"), b.get("tokens")
    said = f"{size[0]} x {size[1]}" if size else ""
    if tokens is not None:
        said += (", " if said else "") + f"{tokens:,} visual token{'s' if tokens != 1 else ''}"
    probe = pixels_in_words(budget.PROBE_SIZE[0] * budget.PROBE_SIZE[1])
    if b.get("capped"):
        return f"up to {pixels_in_words(b['max_pixels'])} ({said})"
    if b.get("capped") is False:
        return f"at full size, up to at least {probe} ({said})"
    return f"as {said} for a {probe} figure"


def probe(lm: Any, task_dict: Mapping[Any, Any], limit: Any = None) -> dict[str, dict[str, Any]]:
    """Probe every task of ours, record each verdict (and figure budget) in its config's metadata and warn
    once per lost layout (once per run for layouts or budgets that could not be observed, and for a probe
    that failed). Never raises."""
    verdicts: dict[str, dict[str, Any]] = {}
    budgets: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for name, task in our_tasks(task_dict):
        try:
            verdict = verdict_for(lm, task)
        except Exception as exc:  # a probe must never stop a run
            verdict = {"status": NOT_CHECKED, "class": type(lm).__name__, "why": f"probe failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"}
        if verdict is None:
            continue
        verdicts[name] = current().verdicts[name] = verdict  # check-model reads them when lmms-eval stops later
        _record(task, "earthsci_layout", verdict)
        figure_budget = _budget(lm, task, verdict, limit)
        if figure_budget is not None:
            budgets[name] = figure_budget
            _record(task, "earthsci_budget", figure_budget)
        if verdict["status"] == LOST:
            logger.warning("lmms_eval_earthsci: %s with %s: not the authors' layout (%s). Fix: %s", name, verdict["class"], "; ".join(verdict["lost"]), verdict["fix"])
        elif verdict.get("broken") or verdict.get("why") in BROKEN_CLASSES.values():
            logger.warning("lmms_eval_earthsci: %s with %s: %s", name, verdict["class"], verdict["why"])
    served = [name for name, v in verdicts.items() if v.get("sent")]
    if served:  # a server decides: what is sent and what it must be told, once per run (nothing can be lost on our side)
        logger.info("lmms_eval_earthsci: with %s (%d task(s)): %s", verdicts[served[0]]["class"], len(served), verdicts[served[0]]["sent"])
    _warn_unseen(verdicts, budgets)
    if verdicts:
        counts = {status: sum(v["status"] == status for v in verdicts.values()) for status in (AS_WRITTEN, LOST, SERVER, NOT_OBSERVED, NOT_CHECKED)}
        seen = next((b for b in budgets.values() if b.get("status") == budget.OBSERVED), None)
        said = f"; figures reach the model {budget_line(seen)}" if seen else ""
        logger.info("lmms_eval_earthsci: layout probe: %d task(s) in %.2f s: %s%s", len(verdicts), time.perf_counter() - started,
                    ", ".join(f"{n} {s}" for s, n in counts.items() if n), said)
    return verdicts


def _warn_unseen(verdicts: dict[str, dict[str, Any]], budgets: dict[str, dict[str, Any]]) -> None:
    """One warning per run for layouts that could not be observed, one for a probe that failed, one for a
    figure budget that could not be observed: each names the class, the reason and ``check-model``."""
    check = "`lmms-eval-earthsci check-model --model <name> --model_args ...` checks them on this class"
    unseen = [name for name, v in verdicts.items() if v["status"] == NOT_OBSERVED and not v.get("broken")]
    if unseen:
        first = verdicts[unseen[0]]
        logger.warning("lmms_eval_earthsci: with %s, what reaches the model could not be observed for %d task(s) (%s): their layouts are not checked; %s",
                       first["class"], len(unseen), first["why"], check)
    failed = [name for name, v in verdicts.items() if v["status"] == NOT_CHECKED and v.get("why") != "no doc"]
    if failed:
        first = verdicts[failed[0]]
        logger.warning("lmms_eval_earthsci: with %s, the layout probe failed for %d task(s) (%s: %s): their layouts are not checked; %s",
                       first["class"], len(failed), failed[0], first["why"], check)
    blind = [name for name, b in budgets.items() if b.get("status") == budget.NOT_OBSERVED]
    if blind and not unseen:
        first = budgets[blind[0]]
        logger.warning("lmms_eval_earthsci: with %s, the size figures reach the model at could not be observed (%s); "
                       "`lmms-eval-earthsci check-model --model <name> --model_args ...` shows it", first["class"], first["why"])


def _evaluator_importing() -> bool:
    """Whether lmms-eval's evaluator is still importing (our entry point runs inside that import: it imports
    lmms_eval.models, which loads entry points), so that its ``evaluate`` does not exist yet."""
    loading = sys.modules.get("lmms_eval.evaluator")
    return loading is not None and not hasattr(loading, "evaluate")


def _later(call: Callable[..., Any], task: Any, *args: Any, **kwargs: Any) -> Any:
    # once the evaluator has finished importing and evaluate is wrapped, this subscriber has done its job
    if not _evaluator_importing() and install_layout_probe():
        cls = task_class()
        if cls is not None:
            taps.leave(cls, "download", "layout probe")
    return call(task, *args, **kwargs)


def install_layout_probe() -> bool:
    """Wrap lmms-eval's ``evaluator.evaluate`` so that :func:`probe` (then :data:`before_evaluate`) runs on
    its model and tasks before the first request. Idempotent; False when the target is gone."""
    if _evaluator_importing():  # wrap it when the first task loads, after that import has finished
        cls = task_class()
        return cls is not None and taps.subscribe("task download", cls, "download", "layout probe", _later,
                                                  entry=ENTRIES["layout probe, once the evaluator is imported"]) is not None
    try:
        from lmms_eval import evaluator  # noqa: PLC0415 - lmms-eval's evaluator (torch, seconds), only inside a run
    except Exception:
        return False

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def evaluate(lm: Any, task_dict: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                install_interleave_fix(lm)
                probe(lm, task_dict, kwargs.get("limit"))
            except Exception:
                logger.exception("lmms_eval_earthsci: layout probe failed")
            try:
                figures_seen.install(lm, task_dict, [name for name, _ in our_tasks(task_dict)])
            except Exception:  # the samples carry no earthsci_figures; the run is as ever
                logger.exception("lmms_eval_earthsci: reading the figures' sizes per sample failed")
            for step in current().before_evaluate:  # more steps on the model and the tasks (check-model's, the capture's)
                step(lm, task_dict)
            try:
                return original(lm, task_dict, *args, **kwargs)
            except Exception as exc:  # lmms-eval prints it and exits 0: our tasks that had no results end the run non-zero
                ours = [name for name, _ in our_tasks(task_dict)]
                if ours and is_cli_run():
                    ledger.note_stopped(ours, exc)
                raise

        return evaluate

    return wrap_method(evaluator, "evaluate", make, entry=ENTRIES["layout probe"])
