"""A run knows the layout it delivered: before the first doc, for the model class in use, whether each of
our tasks' prompts reaches the model as written (:mod:`.layout` names what is lost).

- Chat classes with a processor (``qwen2_5_vl``, ``qwen3_vl``, ``internvl_hf``, ``llava_hf``,
  ``huggingface``, ...): the task's first doc is rendered through the model's own processor and chat
  template, as the class renders it (lmms-eval's message conversion; a default system turn where the
  class inserts one), and compared with the task's messages.
- Simple classes (``--force_simple``, or a class with no chat route): from the class's known handling of
  ``<image>`` (:data:`SIMPLE_HANDLING`): most put every image before the text and drop ``<image>``.
- Server classes: ``openai`` / ``async_openai`` send the messages as written; ``vllm`` / ``sglang`` send
  them as written but the engine decides (vLLM puts images before the text unless
  ``interleave_mm_strings`` is on).
- Any other class: "not checked", never "as written".

Where a layout is lost, one warning line names the class, the task, what is lost and the fix; the
task's ``metadata.earthsci_layout`` in the results JSON records the verdict (``report`` reads it). The
probe costs one chat-template render per task (milliseconds) and never stops a run.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lmms_eval_earthsci.core.interleave import applies as interleaves
from lmms_eval_earthsci.core.interleave import install_interleave_fix, numbered_form
from lmms_eval_earthsci.core.layout import Layout, Verdict, check_prompt, layout_of
from lmms_eval_earthsci.core.messages import unrecorded
from lmms_eval_earthsci.core.patching import wrap_task_method

logger = logging.getLogger("lmms_eval_earthsci")

AS_WRITTEN, LOST, NOT_CHECKED, SERVER = "as written", "lost", "not checked", "depends on the server"

#: simple classes whose handling of images we know (lmms-eval 0.6.1-0.7.3): ``strip``: ``<image>`` is
#: removed from the text and every image goes before it; ``keep``: ``<image>`` tokens stay where they are
#: (images first only when the text has none)
SIMPLE_HANDLING = {"Qwen2_5_VL": "strip", "Qwen3_VL": "strip", "Qwen2_VL": "strip", "LlavaHf": "keep"}
#: chat classes that insert a default system turn before the task's messages (our list subclass keeps
#: the task's own: :class:`lmms_eval_earthsci.core.messages.Messages`)
INSERTS_SYSTEM = {"Qwen3_VL"}
#: chat classes lmms-eval breaks for every task: ``{module: why}`` (the probe says so before the crash)
BROKEN_CLASSES = {
    "lmms_eval.models.chat.huggingface": "lmms-eval 0.7.3's huggingface class crashes for every model: it passes audios= and videos=[] to the processor "
    "and compares model types with config classes, loading a model without generate (models/chat/huggingface.py); use the family's own class "
    "(qwen2_5_vl, qwen3_vl, internvl_hf, llava_hf) or vllm",
}
SERVER_CLASSES = {"OpenAICompatible": AS_WRITTEN, "AsyncOpenAIChat": AS_WRITTEN, "VLLM": SERVER, "Sglang": SERVER, "SGLang": SERVER}

FIXES = {
    "images first": "run the class's chat route (drop --force_simple), or a class whose template keeps images where the text puts them (qwen2_5_vl, internvl_hf)",
    "labels cut off from their figures": "a chat route that interleaves (qwen2_5_vl, qwen3_vl, internvl_hf chat); the paper reports no number for models without interleaved input",
    "system prompt dropped": "a chat route that keeps the system turn",
    "placeholder text left": "the class's chat route (our chat messages carry no placeholder text)",
    "images in the prompt": "the class's chat route",
    "images passed": "the class's chat route",
}


def fix_for(verdict: Verdict) -> str:
    for key, fix in FIXES.items():
        if any(key in lost for lost in verdict.lost):
            return fix
    return "the class's chat route"


def our_tasks(task_dict: Mapping[Any, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, task)`` for every task of ours in lmms-eval's (possibly nested) task dict."""
    for key, value in task_dict.items():
        if isinstance(value, Mapping):
            yield from our_tasks(value)
            continue
        config = getattr(value, "config", None)
        fn = getattr(config, "doc_to_messages", None)
        if callable(fn) and str(getattr(fn, "__module__", "")).startswith("lmms_eval_earthsci"):
            yield str(getattr(config, "task", key)), value


def first_doc(task: Any) -> Any:
    docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
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
    kwargs = getattr(task, "lmms_eval_specific_kwargs", None)
    text = task.doc_to_text(doc) if hasattr(task, "doc_to_text") else ""
    visual = task.config.doc_to_visual
    images = visual(doc, kwargs) if callable(visual) and kwargs and _arity(visual) == 2 else (visual(doc) if callable(visual) else [])
    return str(text), len(images or [])


def _arity(fn: Callable[..., Any]) -> int:
    try:
        return int(fn.__code__.co_argcount)
    except AttributeError:
        return 1


_SPAN = "\x01IMG\x01"


def simple_verdict(handling: str, layout: Layout, text: str, n_images: int, system: str | None = None) -> Verdict:
    """What a simple class with ``handling`` makes of ``text`` and ``n_images`` images."""
    if handling == "interleave":  # interleave_visuals=True with our rewrite: <image i> is the i-th image
        prompt = re.sub(r"<image \d+>", _SPAN, numbered_form(text, lambda: n_images))
    elif handling == "strip":
        prompt = _SPAN * n_images + text.replace("<image>", "")
    else:
        prompt = text.replace("<image>", _SPAN) if "<image>" in text else _SPAN * n_images + "\n" + text
    return check_prompt(layout, (system or "") + "\n" + prompt, re.escape(_SPAN), images_passed=n_images)


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


def verdict_for(lm: Any, task: Any) -> dict[str, Any]:
    """The layout verdict of ``task`` under the model class ``lm`` (a dict for the results JSON)."""
    cls = type(lm).__name__
    doc = first_doc(task)
    if doc is None:
        return {"status": NOT_CHECKED, "class": cls, "why": "no doc"}
    messages = task_messages(task, doc)
    layout = layout_of(messages)
    out: dict[str, Any] = {"class": cls, "expected": layout.shape()}
    broken = BROKEN_CLASSES.get(type(lm).__module__)
    if broken and not getattr(lm, "is_simple", False):
        return {**out, "status": NOT_CHECKED, "why": broken}
    if cls in SERVER_CLASSES and not getattr(lm, "is_simple", False):
        status = SERVER_CLASSES[cls]
        out["status"] = status
        if status == SERVER:
            out["fix"] = "vLLM: interleave_mm_strings=True in --model_args (engine argument); SGLang: a chat template that keeps images in place"
        return out
    if getattr(lm, "is_simple", False):
        handling = "interleave" if interleaves(lm) else SIMPLE_HANDLING.get(cls)
        if handling is None:
            return {**out, "status": NOT_CHECKED, "why": f"simple class {cls}: its handling of <image> is not known to us"}
        text, n = _simple_inputs(task, doc)
        verdict = simple_verdict(handling, layout, text, n, getattr(lm, "system_prompt", None))
    else:
        processor = processor_of(lm)
        if processor is None:
            return {**out, "status": NOT_CHECKED, "why": f"chat class {cls} has no processor with a chat template"}
        verdict = chat_verdict(lm, processor, messages, layout)
    out.update(status=AS_WRITTEN if verdict.ok else LOST, received=verdict.received)
    if not verdict.ok:
        out.update(lost=verdict.lost, fix=fix_for(verdict))
    return out


def probe(lm: Any, task_dict: Mapping[Any, Any]) -> dict[str, dict[str, Any]]:
    """Probe every task of ours, record each verdict in its config's metadata and warn once per lost
    layout. Never raises."""
    verdicts: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for name, task in our_tasks(task_dict):
        try:
            verdict = verdict_for(lm, task)
        except Exception as exc:  # a probe must never stop a run
            verdict = {"status": NOT_CHECKED, "class": type(lm).__name__, "why": f"probe failed: {type(exc).__name__}: {exc}"}
        verdicts[name] = verdict
        try:
            if not isinstance(task.config.metadata, dict):
                task.config.metadata = {}
            task.config.metadata["earthsci_layout"] = verdict
        except Exception:
            pass
        if verdict["status"] == LOST:
            logger.warning("lmms_eval_earthsci: %s with %s: not the authors' layout (%s). Fix: %s", name, verdict["class"], "; ".join(verdict["lost"]), verdict["fix"])
        elif verdict.get("why") in BROKEN_CLASSES.values():
            logger.warning("lmms_eval_earthsci: %s with %s: %s", name, verdict["class"], verdict["why"])
        elif verdict["status"] == SERVER:
            logger.warning("lmms_eval_earthsci: %s with %s: sent as written; %s", name, verdict["class"], verdict["fix"])
    if verdicts:
        counts = {status: sum(v["status"] == status for v in verdicts.values()) for status in (AS_WRITTEN, LOST, SERVER, NOT_CHECKED)}
        logger.info("lmms_eval_earthsci: layout probe: %d task(s) in %.2f s: %s", len(verdicts), time.perf_counter() - started, ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return verdicts


def _later(original: Callable[..., Any]) -> Callable[..., Any]:
    def download(self: Any, *args: Any, **kwargs: Any) -> Any:
        install_layout_probe()
        return original(self, *args, **kwargs)

    return download


def install_layout_probe() -> bool:
    """Wrap lmms-eval's ``evaluator.evaluate`` so that :func:`probe` runs on its model and tasks before
    the first request. Idempotent; False when the target is gone."""
    loading = sys.modules.get("lmms_eval.evaluator")
    if loading is not None and not hasattr(loading, "evaluate"):
        # our entry point runs while lmms-eval's evaluator is still importing (it imports lmms_eval.models,
        # which loads entry points): wrap it when the first task loads, after that import has finished
        return wrap_task_method("download", "_earthsci_layout_later", _later)
    try:
        from lmms_eval import evaluator  # noqa: PLC0415 - lmms-eval's evaluator (torch, seconds), only inside a run
    except Exception:
        return False
    module: Any = evaluator
    if getattr(module, "_earthsci_layout", False):
        return True
    original = getattr(module, "evaluate", None)
    if original is None:
        return False

    def evaluate(lm: Any, task_dict: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            install_interleave_fix(lm)
            probe(lm, task_dict)
        except Exception:
            logger.exception("lmms_eval_earthsci: layout probe failed")
        return original(lm, task_dict, *args, **kwargs)

    module.evaluate = functools.wraps(original)(evaluate)
    module._earthsci_layout = True
    return True
