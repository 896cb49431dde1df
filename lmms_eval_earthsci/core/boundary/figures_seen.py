"""At what size each figure of each doc reached the model, read from the run's own requests where that is
cheap (``earthsci_figures`` in each logged sample; the sample browser shows it).

The figure budget (:mod:`.budget`) is observed once per run on a probe figure. This reads the real
requests, with no resize rule of ours:

- **Which doc**: the class reads a doc of ours as ``lm.task_dict[task][split][doc_id]``; for our tasks that
  container hands out the doc with its ``(task, doc_id)`` under :data:`DOC_KEY`, which lmms-eval's
  ``doc_to_visual`` / ``doc_to_messages`` (wrapped) take off again before our functions see the doc, and
  write on each PIL image they return (its ``info``, which PIL copies through ``convert`` and ``resize``,
  as qwen-vl-utils applies them).
- **What size**: the processor class's ``__call__`` (wrapped for the run) reads its own output as the probe
  does (:func:`.observe.processor_sizes`: its grid of patches, or ``pixel_values`` of one picture per
  image) and records, per tagged image, the size it was sent at, the size it reached the model at and its
  visual tokens, when the output gives one size per image it was given.
- **Into the sample**: lmms-eval (0.7.3 and newer) builds each logged sample in
  ``evaluator._process_document_results``; its result gets the doc's records. ``rescore``'s replaying
  class answers ``earthsci_figures(task, doc_id)`` from the run it replays, so a rescored sample keeps them.

Not read, and the sample carries no ``earthsci_figures``: a class that sends figures as data URLs or paths
(the simple Qwen classes, Gemma 3, lmms-eval's ``vllm``), an image whose ``info`` a class drops (a new image
built from it), an output that does not give one size per image (LLaVA-OneVision's and InternVL's tiles),
lmms-eval 0.6.x. ``tests/models/test_model_classes.py`` says which classes are read, on the real ones. The cost per request is
a look at each image's ``info`` and at the processor's output fields. ``core.activation.INVENTORY``:
"figures per sample: ...".
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from lmms_eval_earthsci.core.boundary import observe
from lmms_eval_earthsci.core.boundary.inventory import ENTRIES
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream import taps
from lmms_eval_earthsci.core.upstream.inventory import warn_missing
from lmms_eval_earthsci.core.upstream.patching import patch_item, wrap_method, wrap_task_method

#: the key a doc of ours carries while the class reads it (taken off before any function of the task sees it)
DOC_KEY = "__earthsci_doc__"
#: the key of an image's ``info`` naming its doc: (task, doc_id, [width, height] as the task gave it)
TAG = "earthsci_doc"
#: the logged sample's field
FIELD = "earthsci_figures"

class _Docs:
    """A split of a task of ours as the class reads it: ``[doc_id]`` gives the doc with :data:`DOC_KEY`;
    everything else is the dataset's."""

    def __init__(self, data: Any, task: str) -> None:
        self._data, self._task = data, task

    def __getitem__(self, key: Any) -> Any:
        doc = self._data[key]
        try:
            doc_id = operator.index(key)
        except TypeError:  # a column name, a slice: the dataset's own answer
            return doc
        return {**doc, DOC_KEY: (self._task, doc_id)} if isinstance(doc, dict) else doc

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Any:
        return iter(self._data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._data, name)


def _untagged(doc: Any) -> tuple[Any, Any]:
    """(the doc without :data:`DOC_KEY`, its (task, doc_id) or None)."""
    if isinstance(doc, dict) and DOC_KEY in doc:
        return {k: v for k, v in doc.items() if k != DOC_KEY}, doc[DOC_KEY]
    return doc, None


def _tag(value: Any, ref: tuple[str, int], depth: int = 0) -> None:
    """Write ``ref`` and its size on every PIL image in ``value`` (a list of visuals, chat messages)."""
    if depth > 6:
        return
    info = getattr(value, "info", None)
    if isinstance(info, dict) and hasattr(value, "size"):
        info[TAG] = (ref[0], ref[1], list(value.size))
    elif isinstance(value, Mapping):
        for v in value.values():
            _tag(v, ref, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tag(v, ref, depth + 1)


def _doc_function(original: Callable[..., Any]) -> Callable[..., Any]:
    def read(self: Any, doc: Any, *args: Any, **kwargs: Any) -> Any:
        doc, ref = _untagged(doc)
        out = original(self, doc, *args, **kwargs)
        if ref is not None:
            try:
                _tag(out, ref)
            except Exception:  # nothing recorded for this doc; the request is the task's as ever
                pass
        return out

    return read


def record(processor: Any, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
    """The sizes of the tagged images of one processor call, from its output (none unless it gives one size
    per image it was given)."""
    _, images = observe.bind_call(call, args, kwargs)
    flat = observe.flatten(images)
    tags = [getattr(i, "info", {}).get(TAG) if isinstance(getattr(i, "info", None), dict) else None for i in flat]
    if not any(tags):
        return
    sizes = observe.processor_sizes(processor, output, len(flat))
    reached, tokens = sizes.get("reached"), sizes.get("per_image")
    if not isinstance(reached, list) or len(reached) != len(flat):
        return
    per_image = tokens if isinstance(tokens, list) and len(tokens) == len(flat) else [None] * len(flat)
    rt = current()
    with rt.lock:
        for tag, size, n in zip(tags, reached, per_image, strict=True):
            if tag:
                task, doc_id, sent = tag
                rt.figures.setdefault((task, doc_id), []).append({"sent": sent, "reached": list(size), "tokens": n})


def _processor_call(call: taps.Next, self: Any, *args: Any, **kwargs: Any) -> Any:
    output = call(self, *args, **kwargs)
    try:
        record(self, call.original, args, kwargs, output)
    except Exception:  # an output of another shape: nothing recorded, the request as ever
        pass
    return output


def _seen(task: str, doc_id: int) -> list[dict[str, Any]] | None:
    """What this run's requests recorded for a doc, or (rescore) what the run it replays did."""
    rt = current()
    if rt.figures_source is not None:
        return rt.figures_source(task, doc_id)
    with rt.lock:
        return rt.figures.get((task, doc_id))


def _into_sample(original: Callable[..., Any]) -> Callable[..., Any]:
    def process(item: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(item, *args, **kwargs)
        sample = getattr(out, "logged_sample", None)
        task = getattr(getattr(kwargs.get("task"), "config", None), "task", None)
        if isinstance(sample, dict) and task is not None:
            try:
                seen = _seen(task, item[0])
            except Exception:  # nothing to add; the sample as lmms-eval built it
                seen = None
            if seen:
                sample[FIELD] = seen
        return out

    return process


def install(lm: Any, task_dict: Mapping[str, Any], ours: list[str]) -> bool:
    """Read the figures' sizes from this run's requests of ``ours`` (see the module docstring): only for a
    class with a transformers processor (another has nothing to read here). Returns whether it is on."""
    rt = current()
    with rt.lock:
        rt.figures.clear()
        rt.figures_source = None
    replayed = getattr(lm, "earthsci_figures", None)  # a replaying class (rescore) answers for the run it replays
    processors, _ = ([], []) if callable(replayed) else observe.observable(lm)
    held: Any = getattr(lm, "task_dict", None)
    if not (processors and isinstance(held, dict)) and not callable(replayed):
        return False
    try:
        from lmms_eval import evaluator  # noqa: PLC0415 - loaded: this runs inside evaluate()
    except Exception:  # pragma: no cover - lmms-eval's layout changed
        return False
    if not hasattr(evaluator, "_process_document_results"):  # lmms-eval 0.6.x builds its samples inline: nothing to add them to
        return False
    if not wrap_method(evaluator, "_process_document_results", _into_sample, entry=ENTRIES["figures per sample: logged sample"]):
        warn_missing(ENTRIES["figures per sample: logged sample"], "the samples carry no earthsci_figures")
        return False
    if callable(replayed):
        rt.figures_source = replayed
        return True
    try:
        from lmms_eval.api.task import ConfigurableMessagesTask  # noqa: PLC0415 - loaded: this runs inside evaluate()
    except Exception:  # pragma: no cover - lmms-eval's layout changed
        ConfigurableMessagesTask = None  # noqa: N806
    if not wrap_task_method("doc_to_visual", _doc_function, entry=ENTRIES["figures per sample: doc_to_visual"]):
        warn_missing(ENTRIES["figures per sample: doc_to_visual"], "the samples carry no earthsci_figures")
        return False
    if ConfigurableMessagesTask is None or not wrap_method(ConfigurableMessagesTask, "doc_to_messages", _doc_function, entry=ENTRIES["figures per sample: doc_to_messages"]):
        warn_missing(ENTRIES["figures per sample: doc_to_messages"], "the samples of chat classes carry no earthsci_figures")
    for cls in dict.fromkeys(type(p) for p in processors):
        taps.subscribe("processor call", cls, "__call__", "figures seen", _processor_call, entry=ENTRIES["figures per sample: processor call"])
    for name in ours:
        splits: Any = held.get(name)
        if hasattr(splits, "items"):  # a DatasetDict or a dict of splits
            patch_item(lm, "task_dict", name, {split: data if isinstance(data, _Docs) else _Docs(data, name) for split, data in splits.items()},
                       entry=ENTRIES["figures per sample: docs handed out"])
    return True

