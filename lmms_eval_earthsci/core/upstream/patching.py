"""The one patch primitive, its records and their audit.

Every attribute we change in another library goes through :func:`patch` (or :func:`patch_item` for an item of a
mapping an upstream object holds, :func:`register` for a handler or finder that sets no attribute we could name);
each call is recorded on the runtime (``current().patches``) under an inventory entry of the part that asks
(:class:`.inventory.Entry`). "Installed" is asked of those records (:func:`installed`), nowhere else: no marker
attribute is set on an upstream object. :func:`unrecorded` finds code of ours in an upstream module or class that
no record names; :func:`dump` writes a process's records for the tests (``EARTHSCI_PATCH_RECORDS``).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import json
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.settings import read_setting
from lmms_eval_earthsci.core.upstream.inventory import Entry


@dataclass(frozen=True)
class Record:
    """One patch a process made: the inventory ``entry`` it is, the ``target`` it changed (``module:Qualname.attr``,
    an instance's ``Class().attr``, a held mapping's ``[key]``, or what a registration named), its ``kind``
    (``wraps``: an attribute replaced; ``registers``: a handler or finder added; ``subscribes``: to a tap) and the
    module of ours (``owner``)."""

    entry: str
    target: str
    kind: str
    owner: str


#: a folder: each process writes its records there at exit (tests/core/adapter/test_patch_records_e2e.py)
RECORDS_ENV = "EARTHSCI_PATCH_RECORDS"


def records() -> list[Record]:
    """Every patch this process made, once each, in order."""
    patches = current().patches
    with patches.lock:
        return list(patches.made)


def installed(entry: Entry, target: str | None = None) -> bool:
    """Whether a patch under ``entry`` (on ``target``, when given) is in place in this process."""
    patches = current().patches
    with patches.lock:
        return any(r.entry == entry.name and (target is None or r.target == target) for r in patches.active)


def _caller() -> str:
    """The module of ours that asked for a patch (the first frame outside this module)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_globals.get("__name__", "?") if frame is not None else "?"


def where(obj: Any, name: Any) -> str:
    """``obj.<name>`` (or ``obj[name]``) as ``module:Qualname.attr``: a module's name, a class's attribute, an
    instance's (``Class().attr``) or an item of a mapping an instance holds (``[key]``)."""
    if isinstance(obj, types.ModuleType):
        return f"{obj.__name__}:{name}"
    if isinstance(obj, type):
        return f"{obj.__module__}:{obj.__qualname__}.{name}"
    holder = current().patches.holders.get(id(obj))
    if holder is not None:
        return f"{holder}[{name}]"
    return f"{type(obj).__module__}:{type(obj).__qualname__}().{name}"


def _apply(entry: Entry, target: str, kind: str, undo: Callable[[], None], owner: str | None = None) -> Callable[[], None]:
    """Record a patch under ``entry`` as made and in place (``owner``: the module of ours that asked, by default the
    caller's); returns its undo (which also takes it out of place)."""
    if not isinstance(entry, Entry):
        raise TypeError(f"a patch is recorded under an inventory Entry, not {entry!r}")
    record = Record(entry=entry.name, target=target, kind=kind, owner=owner or _caller())
    patches = current().patches

    def step() -> None:
        undo()
        with patches.lock:
            if patches.active.get(record) is step:
                del patches.active[record]

    with patches.lock:
        patches.made.setdefault(record, None)
        patches.active[record] = step
        if read_setting(RECORDS_ENV) and not patches.dump_at_exit:
            patches.dump_at_exit = True
            atexit.register(dump)
    return step


def patch(obj: Any, name: str, value: Any, *, entry: Entry) -> Callable[[], None]:
    """Set ``obj.<name>`` to ``value`` (``obj`` a module, a class or an instance of an upstream library), recorded
    under ``entry``; returns the undo, which restores exactly what was there (an inherited attribute is removed
    again, not left as an override). Every attribute we change in another library goes through here
    (``tests/core/adapter/test_patch_records_e2e.py`` finds any that does not)."""
    own = vars(obj) if hasattr(obj, "__dict__") else {}
    had, old = name in own, own.get(name)

    def undo() -> None:
        if had:
            setattr(obj, name, old)
        else:
            with contextlib.suppress(AttributeError):
                delattr(obj, name)

    step = _apply(entry, where(obj, name), "wraps", undo)
    setattr(obj, name, value)
    return step


def patch_item(holder: Any, attr: str, key: Any, value: Any, *, entry: Entry) -> Callable[[], None]:
    """``holder.<attr>[key] = value`` (a mapping an upstream object holds, e.g. a model's ``task_dict``), recorded;
    returns the undo."""
    mapping = getattr(holder, attr)
    # this mapping's, now (an id is reused once freed)
    current().patches.holders[id(mapping)] = f"{type(holder).__module__}:{type(holder).__qualname__}().{attr}"
    had, old = key in mapping, mapping.get(key)

    def undo() -> None:
        if had:
            mapping[key] = old
        else:
            mapping.pop(key, None)

    step = _apply(entry, where(mapping, key), "wraps", undo)
    mapping[key] = value
    return step


def register(entry: Entry, target: str, do: Callable[[], Any]) -> bool:
    """A registration that sets no attribute we could name (an ``atexit`` handler, loguru's patcher, an import
    finder on ``sys.meta_path``, a filter on another library's logger): ``do()`` once per process, recorded under
    ``entry`` with ``target``. Returns whether it was done now (False: it was in place)."""
    with current().patches.lock:  # reentrant: two threads cannot both do it
        if installed(entry, target):
            return False
        do()
        _apply(entry, target, "registers", lambda: None)
    return True


def wrap_method(cls: Any, name: str, make_wrapper: Callable[[Any], Any], requires: tuple[str, ...] = (), *, entry: Entry) -> bool:
    """Replace ``cls.<name>`` by ``make_wrapper(original)`` once (the records say whether it is in place), through
    :func:`patch` under ``entry``. False, changing nothing, if the class no longer has the method or the attributes
    in ``requires``."""
    if installed(entry, where(cls, name)):
        return True
    original = getattr(cls, name, None)
    if original is None or not all(hasattr(cls, r) for r in requires):
        return False
    patch(cls, name, functools.wraps(original)(make_wrapper(original)), entry=entry)
    return True


def task_class() -> Any:
    """lmms-eval's ``ConfigurableTask``, or None when its layout changed."""
    try:
        from lmms_eval.api.task import ConfigurableTask  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds; its layout may change
    except Exception:  # pragma: no cover - lmms-eval layout changed
        return None
    return ConfigurableTask


def wrap_task_method(name: str, make_wrapper: Callable[[Any], Any], requires: tuple[str, ...] = (), *, entry: Entry) -> bool:
    """:func:`wrap_method` on lmms-eval's ``ConfigurableTask``; False if lmms-eval's layout changed."""
    cls = task_class()
    return cls is not None and wrap_method(cls, name, make_wrapper, requires, entry=entry)


# --------------------------------------------------------------------------- the audit

#: the upstream packages whose objects we patch: :func:`unrecorded` walks their loaded modules
WATCHED = ("lmms_eval", "transformers", "vllm", "loguru", "torch", "yaml", "datasets", "PIL", "huggingface_hub", "accelerate")
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _is_ours(value: Any) -> bool:
    """Whether ``value`` is code of ours: a function (a classmethod's, a staticmethod's) written in this package,
    or an object of one of our classes."""
    try:
        fn = getattr(value, "__func__", value)
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType):
            return code.co_filename.startswith(_PKG_DIR + os.sep)
        return not isinstance(value, type) and str(getattr(type(value), "__module__", "")).split(".")[0] == "lmms_eval_earthsci"
    except Exception:  # an object whose attributes cannot be read: not ours
        return False


def unrecorded() -> list[str]:
    """Code of ours found in an upstream library's modules or classes (their own attributes) or as loguru's
    patcher, that no record names: a patch that bypassed :func:`patch`. It cannot see an instance's attribute or an
    ``atexit`` handler: those go through :func:`patch` / :func:`register` by review."""
    named = {r.target for r in records()}
    found = []
    for modname, module in list(sys.modules.items()):
        if module is None or modname.split(".")[0] not in WATCHED:
            continue
        try:
            members = list(vars(module).items())
        except TypeError:
            continue
        for key, value in members:
            if _is_ours(value) and f"{modname}:{key}" not in named:
                found.append(f"{modname}:{key}")
            if isinstance(value, type) and value.__module__ == modname:
                for attr, member in list(vars(value).items()):
                    target = f"{modname}:{value.__qualname__}.{attr}"
                    if _is_ours(member) and target not in named:
                        found.append(target)
    loguru = sys.modules.get("loguru")
    patcher = getattr(getattr(getattr(loguru, "logger", None), "_core", None), "patcher", None)
    if patcher is not None and _is_ours(patcher) and "loguru:logger.configure" not in named:
        found.append("loguru:logger.configure (its patcher)")
    return sorted(set(found))


def dump() -> None:
    """With ``EARTHSCI_PATCH_RECORDS=<folder>``: this process's records and :func:`unrecorded` into
    ``<folder>/<pid>.json`` (at exit; the exit-status handler calls it too, before it ends the process).
    Idempotent."""
    folder = read_setting(RECORDS_ENV)
    patches = current().patches
    with patches.lock:
        if not folder or patches.dumped:
            return
        patches.dumped = True
    text = json.dumps({"argv": sys.argv, "records": [dataclasses.asdict(r) for r in records()], "unrecorded": unrecorded()}, indent=1)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as f:
        f.write(text)
