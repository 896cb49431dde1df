"""What a transformers-based model class hands its model, captured without changing the class: every
processor loaded through ``AutoProcessor.from_pretrained`` records the prompt text and the images it is
called with (whatever the call's shape: positional or keyword, PIL images, data URLs or paths; its image
token is the one that occurs once per image, :meth:`.observe.Observation.marker`), and ``generate`` records the input ids it receives (decoded with the processor's tokenizer,
special tokens kept). Records go to the runtime's ``capture.records`` in this process and, when a path is given, to a JSON-lines
file (one per call), so that a test can read what a real ``lmms-eval`` process fed its model.

Used by ``check-model`` (in-process) and by the model-class test tier (``tests/models/test_model_classes.py``,
through a launcher). Idempotent; a class whose processor does not come from ``AutoProcessor`` is not
seen (the check then says "not checked").
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from lmms_eval_earthsci.core.boundary import observe
from lmms_eval_earthsci.core.boundary.inventory import ENTRIES
from lmms_eval_earthsci.core.boundary.layout_verdict import Layout, layout_of, mean_colour
from lmms_eval_earthsci.core.boundary.probe import install_layout_probe, our_tasks, task_messages
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream import taps
from lmms_eval_earthsci.core.upstream.patching import installed, patch, where, wrap_method


def records() -> list[dict[str, Any]]:
    """What the run captured so far (the runtime's ``capture.records``)."""
    capture = current().capture
    with capture.lock:
        return list(capture.records)


def _write(record: dict[str, Any]) -> None:
    capture = current().capture
    with capture.lock:
        capture.records.append(record)
        path = capture.path
        if path:
            with open(path, "a") as f:
                f.write(json.dumps(record) + "\n")


def _call(original: Callable[..., Any], go_on: Callable[..., Any], self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Record one processor (or tokenizer) call of the run, then make it."""
    text, images = observe.bind_call(original, args, kwargs)  # keywords or positional, by the processor's signature
    texts = [text] if isinstance(text, str) else [t for t in (text or []) if isinstance(t, str)]
    imgs = [observe.load_any_image(i) for i in observe.flatten(images)]  # PIL, arrays, data URLs, paths
    seen = observe.Observation(text=texts[0] if texts else None, images=imgs, markers=observe.image_markers(self))
    current().capture.processor = self
    _write({"event": "processor", "text": texts, "images": [list(mean_colour(i)) if i is not None else None for i in imgs], "image_token": seen.marker()})
    return go_on(self, *args, **kwargs)


def _processor_call(call: taps.Next, self: Any, *args: Any, **kwargs: Any) -> Any:
    return _call(call.original, call, self, args, kwargs)


def _tokenizer_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if observe.active():  # the layout probe's own request, not one of the run's
            return original(self, *args, **kwargs)
        return _call(original, original, self, args, kwargs)

    return __call__


def _wrap_processor_class(cls: type) -> None:
    from transformers import PreTrainedTokenizerBase, ProcessorMixin  # noqa: PLC0415 - transformers, loaded: the class is one of its

    # AutoProcessor gives a tokenizer where the checkpoint has no processor config (an image processor alone: not captured)
    if issubclass(cls, ProcessorMixin):
        taps.subscribe("processor call", cls, "__call__", "capture", _processor_call, entry=ENTRIES["capture: processor call"])
    elif issubclass(cls, PreTrainedTokenizerBase):
        wrap_method(cls, "__call__", _tokenizer_call, entry=ENTRIES["capture: tokenizer call"])


def install(path: str | None = None) -> None:
    """Start capturing (``path``: also append each record to this JSON-lines file)."""
    if path:
        current().capture.path = os.path.abspath(path)
    from transformers import AutoProcessor  # noqa: PLC0415 - transformers (~1 s), only when capturing
    from transformers.generation.utils import GenerationMixin  # noqa: PLC0415 - as above

    if installed(ENTRIES["capture: processor loaded"], where(AutoProcessor, "from_pretrained")):
        return
    load = AutoProcessor.from_pretrained.__func__  # type: ignore[attr-defined]

    def from_pretrained(cls: Any, *args: Any, **kwargs: Any) -> Any:
        processor = load(cls, *args, **kwargs)
        _wrap_processor_class(type(processor))
        return processor

    patch(AutoProcessor, "from_pretrained", classmethod(from_pretrained), entry=ENTRIES["capture: processor loaded"])

    def generate(call: taps.Next, self: Any, *args: Any, **kwargs: Any) -> Any:
        ids = kwargs.get("input_ids", args[0] if args else None)
        tokenizer = getattr(current().capture.processor, "tokenizer", None)
        if ids is not None and tokenizer is not None:
            rows = ids.tolist() if hasattr(ids, "tolist") else list(ids)
            _write({"event": "generate", "decoded": [tokenizer.decode(r, skip_special_tokens=False) for r in rows]})
        return call(self, *args, **kwargs)

    taps.subscribe("generate", GenerationMixin, "generate", "capture", generate, entry=ENTRIES["capture: generate"])


def read(path: str) -> list[dict[str, Any]]:
    """The records a capturing process wrote to ``path``."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def calls(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per processor call, with the decoded input ids of the ``generate`` call it fed
    (``decoded``: None when none did). A class may prepare the next batch while the model generates
    (lmms-eval 0.7.3's simple ``qwen3_vl``): a ``generate`` goes to the open processor call whose text
    it is once each run of image tokens is one token again, else to the latest open call."""
    out: list[dict[str, Any]] = []
    for r in records:
        if r["event"] == "processor":
            out.append({**r, "decoded": None})
        elif r["event"] == "generate":
            open_calls = [c for c in out if c["decoded"] is None]
            if not open_calls:
                continue
            target = open_calls[-1]
            for c in open_calls:
                token = c.get("image_token")
                if token and [re.sub(f"(?:{re.escape(token)})+", token, d) for d in r["decoded"]] == c["text"]:
                    target = c
                    break
            target["decoded"] = r["decoded"]
    return out


def record_expected(task_dict: Any, limit: int | None = None) -> None:
    """Record the layout each of our tasks wrote for its first ``limit`` docs (system texts, parts, the
    mean colours of its images in message order), for a test to hold against what the model got."""
    for name, task in our_tasks(task_dict):
        docs = task.eval_docs
        for doc_id in range(min(len(docs), limit or len(docs))):
            messages = task_messages(task, docs[doc_id])
            layout = layout_of(messages)
            images = [part["url"] for m in messages if m.get("role") != "system" for part in (m.get("content") or []) if isinstance(part, dict) and part.get("type") == "image"]
            _write({"event": "expected", "task": name, "doc_id": doc_id, "system": list(layout.system), "parts": [list(p) for p in layout.parts], "images": [list(mean_colour(i)) for i in images]})


def expected_layout(record: dict[str, Any]) -> Layout:
    """The layout an ``expected`` record holds (as :func:`record_expected` wrote it)."""
    return Layout(tuple(record["system"]), tuple((kind, value) for kind, value in record["parts"]))


def install_expected(limit: int | None = None) -> None:
    """Run :func:`record_expected` on lmms-eval's tasks before its first request (a step of the layout
    probe's wrap of ``evaluate``, installed here if the run has not installed it yet)."""
    current().before_evaluate.append(lambda lm, task_dict: record_expected(task_dict, limit))
    from lmms_eval import evaluator  # noqa: PLC0415, F401 - lmms-eval's evaluator (torch, seconds), imported whole before it is wrapped

    if not install_layout_probe():
        raise RuntimeError("lmms-eval's evaluator.evaluate cannot be wrapped: nothing would be recorded")


def match(calls_: list[dict[str, Any]], expected: dict[str, Any]) -> dict[str, Any] | None:
    """The captured processor call that prompted the doc of an ``expected`` record: the one whose text
    holds the most of the doc's text parts (docs of a task share instructions; their questions differ)."""
    texts = [" ".join(str(p[1]).split()) for p in expected["parts"] if p[0] == "text"] + [" ".join(s.split()) for s in expected["system"]]
    best, score = None, (0, False)
    for call in calls_:
        prompt = " ".join(" ".join(call["text"]).split())
        found = (sum(len(t) for t in texts if t and t in prompt), call.get("decoded") is not None)
        if found[0] and found > score:  # a call that reached generate wins over a preparatory one
            best, score = call, found
    return best
