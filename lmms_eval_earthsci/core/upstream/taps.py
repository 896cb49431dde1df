"""One tap per upstream callable that more than one part needs to see, and the order its subscribers run in.

A part does not wrap such a callable itself: it subscribes to the callable's tap (:func:`subscribe`) with an
``around(call, *args, **kwargs)`` function that calls ``call(*args, **kwargs)`` to go on (or ``call.original(...)``
to go straight to the upstream callable, skipping the subscribers inside it). The tap wraps the callable once,
through the patch primitive; the subscribers run outermost first in the order :data:`ORDER` declares, whatever
order they subscribed in. Who subscribed is on the runtime (``current().patches.taps``, by the owner object and the
name); the tap's wrap goes when its last subscriber leaves, restoring what was there.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
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
    is the upstream callable itself (through a parent class's tap too: nothing of ours runs in it)."""

    __slots__ = ("call", "original")

    def __init__(self, call: Callable[..., Any], original: Callable[..., Any]) -> None:
        self.call, self.original = call, original

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)


@dataclass(eq=False)
class Tap:
    """One tapped callable: ``owner.<name>``, the attribute it replaced (``inner``: the callable, or a parent class's
    tap), the upstream callable itself (``raw``), its subscribers by name (``around`` and the subscription's undo)."""

    kind: str
    owner: Any
    name: str
    inner: Callable[..., Any]
    raw: Callable[..., Any]
    subscribers: dict[str, tuple[Callable[..., Any], Callable[[], None]]] = field(default_factory=dict)
    wrapper: Callable[..., Any] | None = None
    undo: Callable[[], None] | None = None

    def chain(self) -> Callable[..., Any]:
        call = self.inner
        for name in reversed(ORDER[self.kind]):
            held = self.subscribers.get(name)
            if held is not None:
                call = functools.partial(held[0], Next(call, self.raw))
        return call


def _tap_of(owner: Any, name: str) -> Tap | None:
    return current().patches.taps.get((id(owner), name))


def _raw(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` without any tap of ours around it (a parent class's)."""
    taps = list(current().patches.taps.values())
    while True:
        under = next((t.raw for t in taps if t.wrapper is fn), None)
        if under is None:
            return fn
        fn = under


def subscribe(tap: str, owner: Any, name: str, subscriber: str, around: Callable[..., Any], *, entry: Entry) -> Callable[[], None] | None:
    """``around`` runs on every call of ``owner.<name>`` (a class's plain method, or a module's function), at
    ``subscriber``'s place in :data:`ORDER`; recorded under the part's ``entry``. Returns the unsubscribe, or None
    (changing nothing) when ``owner`` has no ``name``. Subscribing again replaces the subscriber's ``around`` (the
    earlier unsubscribe then does nothing)."""
    if subscriber not in ORDER[tap]:
        raise ValueError(f"{subscriber!r} is not a subscriber of the {tap!r} tap (ORDER)")
    static = inspect.getattr_static(owner, name, None)
    if isinstance(static, (staticmethod, classmethod)):
        raise TypeError(f"{where(owner, name)} is a {type(static).__name__}: a tap wraps plain methods and functions")
    target = where(owner, name)
    patches = current().patches
    with patches.lock:
        state = _tap_of(owner, name)
        if state is None:
            inner = getattr(owner, name, None)
            if inner is None:
                return None
            state = Tap(tap, owner, name, inner, _raw(inner))

            @functools.wraps(inner)
            def tapped(*args: Any, **kwargs: Any) -> Any:
                return state.chain()(*args, **kwargs)

            state.wrapper = tapped
            patches.taps[(id(owner), name)] = state
            state.undo = patch(owner, name, tapped, entry=ENTRIES[f"tap: {tap}"])
        mine: list[Callable[[], None]] = []

        def leave() -> None:
            with patches.lock:
                held = state.subscribers.get(subscriber)
                if held is None or held[1] is not mine[0]:  # replaced since: the later subscription stays
                    return
                del state.subscribers[subscriber]
                if not state.subscribers:
                    patches.taps.pop((id(owner), name), None)
                    if state.undo is not None:
                        state.undo()

        step = _apply(entry, target, "subscribes", leave, owner=sys._getframe(1).f_globals.get("__name__", "?"))
        mine.append(step)
        state.subscribers[subscriber] = (around, step)
    return step


def subscribed(owner: Any, name: str, subscriber: str) -> bool:
    """Whether ``subscriber`` is on the tap of ``owner.<name>``."""
    state = _tap_of(owner, name)
    return state is not None and subscriber in state.subscribers


def leave(owner: Any, name: str, subscriber: str) -> None:
    """Take ``subscriber`` off the tap of ``owner.<name>`` (the tap goes with its last subscriber)."""
    state = _tap_of(owner, name)
    held = state.subscribers.get(subscriber) if state is not None else None
    if held is not None:
        held[1]()
