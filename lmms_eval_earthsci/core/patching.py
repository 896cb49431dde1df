"""The one primitive that patches lmms-eval: wrap a ``ConfigurableTask`` method once, idempotently.

lmms-eval has no plugin hooks for what we need, so a few of its methods are wrapped, each recording a
marker on the class: ``ConfigurableTask.download`` (local mirror, :mod:`.data`) and
``ConfigurableTask.apply_filters`` (the judge pass, :mod:`.judge_pass`); task registration wraps
``TaskManager.initialize_tasks`` (:mod:`lmms_eval_earthsci.registration`). This module imports nothing
of ours, so the modules that own those behaviours build their wrappers here without an import circle.
"""

from __future__ import annotations

import functools


def wrap_method(cls: type, name: str, marker: str, make_wrapper, requires: tuple[str, ...] = ()) -> bool:
    """Replace ``cls.<name>`` by ``make_wrapper(original)`` once (``marker`` records it on the class).
    False, changing nothing, if the class no longer has the method or the attributes in ``requires``."""
    if getattr(cls, marker, False):
        return True
    original = getattr(cls, name, None)
    if original is None or not all(hasattr(cls, r) for r in requires):
        return False
    setattr(cls, name, functools.wraps(original)(make_wrapper(original)))
    setattr(cls, marker, True)
    return True


def wrap_task_method(name: str, marker: str, make_wrapper, requires: tuple[str, ...] = ()) -> bool:
    """:func:`wrap_method` on lmms-eval's ``ConfigurableTask``; False if lmms-eval's layout changed."""
    try:
        from lmms_eval.api.task import ConfigurableTask
    except Exception:  # pragma: no cover - lmms-eval layout changed
        return False
    return wrap_method(ConfigurableTask, name, marker, make_wrapper, requires)
