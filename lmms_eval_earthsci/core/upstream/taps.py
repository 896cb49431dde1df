"""One tap per upstream callable that more than one part needs to see, and the order its subscribers run in.

A part does not wrap such a callable itself: it subscribes to the callable's tap (:func:`subscribe`) with an
``around(call, *args, **kwargs)`` function that calls ``call(*args, **kwargs)`` to go on (or ``call.original(...)``
to go straight to the upstream callable, skipping the subscribers inside it). The tap wraps the callable once,
through the patch primitive; the subscribers run outermost first in the order :data:`ORDER` declares, whatever
order they subscribed in. Who subscribed is on the runtime (``current().patches.taps``); the tap's wrap goes when
its last subscriber leaves, restoring what was there.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream.inventory import Entry, Inventory
from lmms_eval_earthsci.core.upstream.patching import _apply, patch, where

#: each tap -> its subscribers, outermost first (the one place their order is written)
ORDER = MappingProxyType({
    # the layout probe's own request is read by the probe alone (it goes straight to the processor); a run's call is
    # captured (check-model) before the figures' sizes are read from its output
    "processor call": ("observe", "capture", "figures seen"),
    # the probe stops a generate before anything is generated; the capture records a run's generate
    "generate": ("observe", "capture"),
    # the probe's wrap of evaluate waits for the first download (lmms-eval's evaluator has finished importing by
    # then); the mirror points the task at local files inside it
    "task download": ("layout probe", "local mirror"),
    # a task of ours that cannot load is left out by the integration; inside it the hardening leaves out a task not
    # ours (it notes what lmms-eval's loader raised before the integration sees it)
    "task loader": ("ours left out", "upstream left out"),
})

ENTRIES = Inventory(
    "taps",
    Entry("tap: processor call", "wraps", "transformers.processing_utils:ProcessorMixin.__call__", "lmms_eval_earthsci.core.upstream.taps",
          "the processor call of a class is seen by three parts of the model boundary (the probe, the capture, the figures' sizes): it is wrapped "
          "once, for the classes a run uses, and each part subscribes (ORDER)", installed_by="a run with a processor"),
    Entry("tap: generate", "wraps", "transformers.generation.utils:GenerationMixin.generate", "lmms_eval_earthsci.core.upstream.taps",
          "generate is seen by the probe (stopped before it generates) and the capture (check-model): wrapped once, each subscribes",
          installed_by="a run with a processor"),
    Entry("tap: task download", "wraps", "lmms_eval.api.task:ConfigurableTask.download", "lmms_eval_earthsci.core.upstream.taps",
          "datasets are loaded inside download(): the local mirror (the integration) and the layout probe's install (the model boundary) "
          "subscribe to one wrap", missing="fails"),
    Entry("tap: task loader", "wraps", "lmms_eval.tasks:TaskManager._load_individual_task_or_group", "lmms_eval_earthsci.core.upstream.taps",
          "lmms-eval stops the whole run at the first task that cannot load: the integration (tasks of ours) and the hardening (tasks not ours) "
          "subscribe to one wrap, in ORDER", params=("name_or_config",)),
)


class Next:
    """The rest of a tap's chain, handed to a subscriber: calling it goes on to the subscribers inside; ``original``
    is the upstream callable itself."""

    __slots__ = ("call", "original")

    def __init__(self, call: Callable[..., Any], original: Callable[..., Any]) -> None:
        self.call, self.original = call, original

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)


def _chain(tap: str, target: str, original: Callable[..., Any]) -> Callable[..., Any]:
    subscribers = current().patches.taps.get(target) or {}
    call: Callable[..., Any] = original
    for name in reversed(ORDER[tap]):
        around = subscribers.get(name)
        if around is not None:
            call = functools.partial(around, Next(call, original))
    return call


def subscribe(tap: str, owner: Any, name: str, subscriber: str, around: Callable[..., Any], *, entry: Entry) -> Callable[[], None] | None:
    """``around`` runs on every call of ``owner.<name>`` (a class's method or a module's function), at
    ``subscriber``'s place in :data:`ORDER`; recorded under the part's ``entry``. Returns the unsubscribe, or None
    (changing nothing) when ``owner`` has no ``name``. Subscribing again replaces the subscriber's ``around``."""
    if subscriber not in ORDER[tap]:
        raise ValueError(f"{subscriber!r} is not a subscriber of the {tap!r} tap (ORDER)")
    target = where(owner, name)
    patches = current().patches
    with patches.lock:
        subscribers = patches.taps.get(target)
        if subscribers is None:
            original = getattr(owner, name, None)
            if original is None:
                return None

            @functools.wraps(original)
            def tapped(*args: Any, **kwargs: Any) -> Any:
                return _chain(tap, target, original)(*args, **kwargs)

            subscribers = patches.taps[target] = {}
            subscribers["__undo__"] = patch(owner, name, tapped, entry=ENTRIES[f"tap: {tap}"])
        subscribers[subscriber] = around

    def leave() -> None:
        with patches.lock:
            if subscribers.get(subscriber) is not around:
                return
            del subscribers[subscriber]
            if set(subscribers) == {"__undo__"}:
                del patches.taps[target]
                subscribers["__undo__"]()

    return _apply(entry, target, "subscribes", leave, owner=sys._getframe(1).f_globals.get("__name__", "?"))


def subscribed(owner: Any, name: str, subscriber: str) -> bool:
    """Whether ``subscriber`` is on the tap of ``owner.<name>``."""
    return subscriber in (current().patches.taps.get(where(owner, name)) or {})
