"""What an inventory entry is, and the checks every part's entries go through.

Each part that touches another library declares its own entries next to its code (``core/adapter/inventory.py``,
``core/hardening/inventory.py``, ``core/boundary/inventory.py``, and this layer's taps in :mod:`.taps`);
:data:`lmms_eval_earthsci.core.activation.INVENTORY` is all of them. An entry names what we touch upstream, how,
who owns it and why no public hook serves, the versions it was checked on (:data:`VERIFIED`), the first version that
has it (``since``), and what happens when the target is gone (``missing``: ``warns``, or ``fails`` where a wrong
answer would follow). ``tests/core/adapter/test_patch_targets.py`` checks every target's shape in the installed
lmms-eval (CI runs it on the newest and, in the smoke list, on the oldest we support) and fails naming the entry
when upstream moves. :func:`target_problem` is the same check at run time; :func:`warn_missing` says it once.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lmms_eval_earthsci.core.runtime import current

#: the lmms-eval versions every entry was checked on (CI: the newest in the main venv, the oldest in its own);
#: 0.7.2 is excluded by our requirement (its wheel cannot index tasks)
VERIFIED = ("0.6.1", "0.7.3")


@dataclass(frozen=True)
class Entry:
    """One entry of an inventory: what we touch upstream (``target``: ``module:Qualname``, ``module:`` alone
    for the module), how, who owns it and why; ``params``: parameter names its signature must have;
    ``attrs``: names the module must have."""

    name: str
    kind: str  # "wraps" (we replace it), "registers" (we add a handler or a finder), "subscribes" (to a tap) or "reads"
    target: str
    owner: str
    why: str
    missing: str = "warns"
    since: str = "0.6.1"
    params: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()
    #: the run that installs it, where tests/core/adapter/test_patch_records_e2e.py (and the model tiers) see its
    #: record: "registration", "a run", "a run with a processor", "check-model", "interleave_visuals" (make
    #: test-models), "check-model --against" and "vllm" (make test-vllm), "a lost layout" (the model tiers: a
    #: simple class's or an engine's run that loses one), "check-model, a tokenizer" (the demo's tiny LLaVA); a read
    #: installs nothing
    installed_by: str = "registration"


@dataclass(frozen=True)
class Inventory:
    """A part's entries, in order; ``inventory[name]`` is the entry named ``name`` (a KeyError names the part)."""

    part: str
    entries: tuple[Entry, ...]

    def __init__(self, part: str, *entries: Entry) -> None:
        names = [e.name for e in entries]
        if len(set(names)) != len(names):
            raise ValueError(f"{part}: an inventory entry name is used twice")
        object.__setattr__(self, "part", part)
        object.__setattr__(self, "entries", tuple(entries))

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, name: str) -> Entry:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(f"{self.part} has no inventory entry {name!r}")

    def __add__(self, other: Inventory) -> Inventory:
        return Inventory(f"{self.part} + {other.part}", *self.entries, *other.entries)


def resolve(target: str) -> Any:
    """The object ``module:Qualname`` names (the module for ``module:``); raises when it is gone."""
    module, _, qualname = target.partition(":")
    saved = sys.argv
    # lmms-eval 0.6.x's __main__ prints its banner and exits at import when argv holds no argument
    sys.argv = saved if len(saved) > 1 else ["lmms-eval", "--verbosity", "INFO"]
    try:
        obj: Any = importlib.import_module(module)
    finally:
        sys.argv = saved
    for part in filter(None, qualname.split(".")):
        obj = getattr(obj, part)
    return obj


def target_problem(t: Entry) -> str | None:
    """What is wrong with ``t``'s target in the installed packages, or None when it has the shape we
    rely on (it exists, takes ``params``, its module has ``attrs``)."""
    try:
        obj = resolve(t.target)
    except (Exception, SystemExit) as exc:
        return f"{t.target} is gone ({type(exc).__name__}: {exc})"
    module = importlib.import_module(t.target.partition(":")[0])
    absent = [a for a in t.attrs if not hasattr(module, a)]
    if absent:
        return f"{t.target}'s module no longer has {', '.join(absent)}"
    if t.params:
        try:
            have = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            return None  # a builtin without a signature: existence is what we can check
        lost = [p for p in t.params if p not in have]
        if lost:
            return f"{t.target} no longer takes {', '.join(lost)}"
    return None


def warn_missing(t: Entry, consequence: str) -> None:
    """Say once per run that the entry ``t`` could not be installed or read, with its target, what the run does
    without it and the versions it was checked on."""
    if not current().first_time(f"missing: {t.name}"):
        return
    why = target_problem(t) or f"{t.target} does not have the shape we rely on"
    logging.getLogger("lmms_eval_earthsci").warning("lmms_eval_earthsci: %s not installed: %s; %s (checked on lmms-eval %s; see %s)", t.name, why, consequence, ", ".join(VERIFIED), t.owner)


FALLBACK_HINT = (
    'Run our tasks with `lmms-eval --include_path "$(lmms-eval-earthsci tasks-dir)" ...`, or use the `lmms-eval-earthsci run ...` wrapper, '
    "or in Python `lmms_eval_earthsci.registration.register()` then `TaskManager(include_path=lmms_eval_earthsci.TASKS_DIR)`."
)


class RegistrationWarning(UserWarning):
    """lmms-eval internals changed: automatic registration (or a runtime hook) could not be applied."""


def warn_registration(msg: str) -> None:
    text = f"lmms_eval_earthsci: {msg} {FALLBACK_HINT}"
    warnings.warn(text, RegistrationWarning, stacklevel=3)
    logging.getLogger("lmms_eval_earthsci").warning(text)
