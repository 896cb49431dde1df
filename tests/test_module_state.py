"""Module globals hold constants only: what a process or a run holds lives on its one runtime object
(:mod:`lmms_eval_earthsci.core.runtime`: ``current()``, ``first_time``, ``resource``).

Every module of the package is imported and each module-level value that is a mutable container is listed
as ``module.NAME (type)`` under the module that defines it: a dict, list, set, bytearray, deque, weak
container, thread-local, namespace, an instance of a dataclass that is not frozen, or of one of our classes
with a ``__dict__``. Constant tables are tuples, frozensets, ``MappingProxyType`` and frozen dataclasses;
a lock, a logger, a compiled pattern, a function, a class and a module are not state. A value a module
imports from another (an import statement binds its name) is the other module's, listed there once (the
same object, found by identity). A ``global`` statement in a function rebinds a module's state: none is
written."""

from __future__ import annotations

import ast
import collections
import dataclasses
import enum
import importlib
import importlib.util
import os
import pkgutil
import threading
import types
import weakref
from collections.abc import Iterable, Iterator, Mapping

import lmms_eval_earthsci

PKG = "lmms_eval_earthsci"

# module.NAME -> why it may hold mutable state (one line each; the goal is this one entry)
ALLOWED = {
    # the one object every run's state lives on: what this test sends everything else to
    f"{PKG}.core.runtime._PROCESS": "the process's one runtime object",
}
# module.NAME -> why a function of the module may rebind it with a ``global`` statement (the goal: none)
ALLOWED_GLOBAL: dict[str, str] = {}

MUTABLE_TYPES = (dict, list, set, bytearray, collections.deque, weakref.WeakKeyDictionary, weakref.WeakValueDictionary, weakref.WeakSet,
                 threading.local, types.SimpleNamespace)
# what holds no state of ours whatever its attributes
NOT_STATE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, types.MappingProxyType, enum.Enum)


def module_names() -> list[str]:
    """Every module of the package (the benchmarks' sample_mirror folders are data; ``__main__`` runs a command)."""
    return sorted(m.name for m in pkgutil.walk_packages(lmms_eval_earthsci.__path__, PKG + ".") if ".sample_mirror." not in m.name and not m.name.endswith(".__main__"))


def is_mutable(value: object) -> bool:
    if isinstance(value, NOT_STATE):
        return False
    if isinstance(value, MUTABLE_TYPES):
        return True
    if dataclasses.is_dataclass(value):
        return not type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]  # set on every dataclass
    return type(value).__module__.split(".")[0] == PKG and hasattr(value, "__dict__")


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """The module's own statements (those under ``if``/``try``/``with`` included, not those of its functions and classes)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo += [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]


def imported_names(source: str) -> set[str]:
    """The names a module's top level binds by an import (another module's objects)."""
    out = set()
    for node in _top_level(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return out


def source_of(module: types.ModuleType) -> str:
    path = getattr(module, "__file__", None)
    if not path or not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


def module_state(modules: Iterable[types.ModuleType], sources: Mapping[str, str] | None = None) -> list[str]:
    """``module.NAME (type)`` for each mutable module-level value, once per object (by identity), under each
    module that binds it other than by an import (an object only imported, from a package not scanned, is
    that package's). ``sources``: a module's source by name, for a module that has no file (else its file is read)."""
    holders: dict[int, list[str]] = {}
    for module in modules:
        source = (sources or {}).get(module.__name__)
        imported = imported_names(source if source is not None else source_of(module))
        for name, value in vars(module).items():
            if name.startswith("__") or not is_mutable(value):  # __path__, __all__, ...: the import system's
                continue
            owners = holders.setdefault(id(value), [])
            if name not in imported:
                owners.append(f"{module.__name__}.{name} ({type(value).__name__})")
    return sorted(f for owners in holders.values() for f in owners)


def global_statements(source: str, module: str) -> list[str]:
    """``module.NAME (line, function)`` for each name a function declares ``global``."""
    out = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, ast.Global) and function:
            out.extend(f"{module}.{name} (line {node.lineno}, in {function})" for name in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child, child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function)

    visit(ast.parse(source), None)
    return sorted(out)


def _key(finding: str) -> str:
    return finding.split(" ", 1)[0]


# --------------------------------------------------------------------------- the package


def test_module_globals_hold_no_mutable_state():
    names = module_names()
    failed, modules = [], []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except Exception as exc:  # a module that cannot be imported cannot be checked
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    assert failed == []
    assert len(modules) > 100 and f"{PKG}.core.runtime" in names and f"{PKG}.evals.mac.tasks" in names  # its premise: the whole package
    found = module_state(modules)
    assert f"{PKG}.core.runtime._PROCESS (Runtime)" in found  # its premise: the scan sees the one object allowed
    assert [f for f in found if _key(f) not in ALLOWED] == []
    assert sorted(set(ALLOWED) - {_key(f) for f in found}) == []  # an entry no longer needed goes


def test_no_function_rebinds_a_module_global():
    found = []
    for name in module_names():
        path = importlib.util.find_spec(name).origin  # type: ignore[union-attr]  # every walked module has a spec
        with open(path, encoding="utf-8") as f:
            found += global_statements(f.read(), name)
    assert [f for f in found if _key(f) not in ALLOWED_GLOBAL] == []
    assert sorted(set(ALLOWED_GLOBAL) - {_key(f) for f in found}) == []


# --------------------------------------------------------------------------- the scan itself


@dataclasses.dataclass(frozen=True)
class _Frozen:
    x: int = 0


@dataclasses.dataclass
class _Open:
    x: int = 0


PLANTED = """
import threading
from types import MappingProxyType
from collections import OrderedDict
from lmms_eval_earthsci.core.runtime import _PROCESS

SEEN = {}
ORDER = OrderedDict()
VIEW = MappingProxyType({"a": 1})
ROW = (1, 2)
KINDS = frozenset({"a"})
LOCK = threading.Lock()

def note():
    global ROW
    ROW = ROW + (3,)
"""


def test_the_scan_finds_a_planted_mutable_and_passes_constants():
    """Its premise: in a throwaway module, the mutable dicts and the open dataclass are found, the read-only
    view, the tuple, the frozenset, the frozen dataclass, the lock and an imported object of another module
    (the runtime's, listed there) are not; a ``global`` in a function is found."""
    planted = types.ModuleType("planted_state")
    exec(compile(PLANTED, "<planted>", "exec"), planted.__dict__)
    planted.FROZEN, planted.OPEN = _Frozen(), _Open()
    from lmms_eval_earthsci.core import runtime

    wanted = ["planted_state.OPEN (_Open)", "planted_state.ORDER (OrderedDict)", "planted_state.SEEN (dict)"]
    assert module_state([planted], {"planted_state": PLANTED}) == wanted
    # scanned with the runtime's module, the object it imports from there is listed there, once
    both = module_state([planted, runtime], {"planted_state": PLANTED})
    assert [f for f in both if f.startswith("planted_state.")] == wanted and [f for f in both if "._PROCESS " in f] == [f"{PKG}.core.runtime._PROCESS (Runtime)"]
    assert global_statements(PLANTED, "planted_state") == ["planted_state.ROW (line 15, in note)"]
