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
a look at each image's ``info`` and at the processor's output fields. ``core.adapter.patching.INVENTORY``:
"figures per sample: ...".
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Mapping
from typing import Any

from lmms_eval_earthsci.core.adapter.patching import patch_item, warn_missing, wrap_method, wrap_task_method
from lmms_eval_earthsci.core.boundary import observe

#: the key a doc of ours carries while the class reads it (taken off before any function of the task sees it)
DOC_KEY = "__earthsci_doc__"
#: the key of an image's ``info`` naming its doc: (task, doc_id, [width, height] as the task gave it)
TAG = "earthsci_doc"
#: the logged sample's field
FIELD = "earthsci_figures"

_SEEN: dict[tuple[str, int], list[dict[str, Any]]] = {}
_LOCK = threading.Lock()


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
    with _LOCK:
        for tag, size, n in zip(tags, reached, per_image, strict=True):
            if tag:
                task, doc_id, sent = tag
                _SEEN.setdefault((task, doc_id), []).append({"sent": sent, "reached": list(size), "tokens": n})


def _processor_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        output = original(self, *args, **kwargs)
        if not observe.active():  # the probe's own requests are read by the probe
            try:
                record(self, original, args, kwargs, output)
            except Exception:  # an output of another shape: nothing recorded, the request as ever
                pass
        return output

    return __call__


def _seen(task: str, doc_id: int) -> list[dict[str, Any]] | None:
    with _LOCK:
        return _SEEN.get((task, doc_id))


#: where a logged sample's figures come from: this run's requests, or (rescore) the run it replays
_SOURCE: list[Callable[[str, int], Any]] = [_seen]


def _into_sample(original: Callable[..., Any]) -> Callable[..., Any]:
    def process(item: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(item, *args, **kwargs)
        sample = getattr(out, "logged_sample", None)
        task = getattr(getattr(kwargs.get("task"), "config", None), "task", None)
        if isinstance(sample, dict) and task is not None:
            try:
                seen = _SOURCE[0](task, item[0])
            except Exception:  # nothing to add; the sample as lmms-eval built it
                seen = None
            if seen:
                sample[FIELD] = seen
        return out

    return process


def install(lm: Any, task_dict: Mapping[str, Any], ours: list[str]) -> bool:
    """Read the figures' sizes from this run's requests of ``ours`` (see the module docstring): only for a
    class with a transformers processor (another has nothing to read here). Returns whether it is on."""
    with _LOCK:
        _SEEN.clear()
    _SOURCE[0] = _seen
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
    if not wrap_method(evaluator, "_process_document_results", "_earthsci_figures", _into_sample, entry="figures per sample: logged sample"):
        warn_missing("figures per sample: logged sample", "the samples carry no earthsci_figures")
        return False
    if callable(replayed):
        _SOURCE[0] = replayed
        return True
    try:
        from lmms_eval.api.task import ConfigurableMessagesTask  # noqa: PLC0415 - loaded: this runs inside evaluate()
    except Exception:  # pragma: no cover - lmms-eval's layout changed
        ConfigurableMessagesTask = None  # noqa: N806
    if not wrap_task_method("doc_to_visual", "_earthsci_figures", _doc_function, entry="figures per sample: doc_to_visual"):
        warn_missing("figures per sample: doc_to_visual", "the samples carry no earthsci_figures")
        return False
    if ConfigurableMessagesTask is None or not wrap_method(ConfigurableMessagesTask, "doc_to_messages", "_earthsci_figures_messages", _doc_function, entry="figures per sample: doc_to_messages"):
        warn_missing("figures per sample: doc_to_messages", "the samples of chat classes carry no earthsci_figures")
    for cls in dict.fromkeys(type(p) for p in processors):
        wrap_method(cls, "__call__", "_earthsci_figures", _processor_call, entry="figures per sample: processor call")
    for name in ours:
        splits: Any = held.get(name)
        if hasattr(splits, "items"):  # a DatasetDict or a dict of splits
            patch_item(lm, "task_dict", name, {split: data if isinstance(data, _Docs) else _Docs(data, name) for split, data in splits.items()},
                       entry="figures per sample: docs handed out")
    return True

