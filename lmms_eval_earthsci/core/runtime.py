"""The process's one runtime object: what is ours and what a run holds while it runs, in one place.

:func:`lmms_eval_earthsci.registration.register` (our entry point, run when lmms-eval imports
``lmms_eval.models``) builds it with what the layers above the core know (our task folders, the name hints
of the YAML generator, the settings check) and starts it (:func:`start`). The parts of the core read it
through :func:`current`; no module fills a slot of another at import. Before registration (a unit test, a
command that never starts lmms-eval) :func:`current` is a default one: our own task folder, no hints.

It holds:

- ``task_dirs``, ``looks_ours_but_unknown``, ``near``, ``did_you_mean``, ``check_settings``: what is ours
  (registration's);
- ``loader_leaves_out``: the task loader of an lmms-eval CLI run leaves a task of ours that cannot load out
  and says why (``core.adapter.task_manager``); a dataset route's error then leaves its line to the loader;
- ``run_hooks``: the run's hooks are installed (``core.activation``): a setting declared later is checked at
  once (``core.settings.declare_settings``);
- ``data_only``: this thread builds tasks to read their data, evaluating nothing (``report``);
- ``before_evaluate``: steps run on the model and the tasks before the first request (``check-model``'s
  alignment, the capture's expectations);
- ``judge``: the judge pass's verdicts per task, read by ``process_results`` (``core.judge.task_pass``);
- ``seen_of(lm)``: what the model boundary observed of a model object for the run (its figure budget, whether
  it loses a conversation's interleaving), kept here, not on the model object.

This module imports nothing of ours but the package root.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lmms_eval_earthsci import TASKS_DIR


@dataclass
class JudgeVerdicts:
    """The judge pass's results on this rank: ``outcomes[(spec, doc key, response)]``, the task's judge
    ``overrides`` per spec, and per spec why the pass failed (``errors``); one task's at a time."""

    outcomes: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Runtime:
    """See the module docstring."""

    #: our task folders: TASKS_DIR and those of the benchmarks registered from outside
    task_dirs: Callable[[], list[str]] = lambda: [TASKS_DIR]
    #: a hint when ``name`` looks like one of our tasks but is none of ``known`` (else None)
    looks_ours_but_unknown: Callable[[str, set], str | None] = lambda name, known: None
    #: the names of ours close to one of lmms-eval's (``emma-mini`` -> ``emma_mini``)
    near: Callable[[str], list] = lambda name: []
    #: "did you mean X?" for ``name`` among ``names`` at a similarity ``cutoff``
    did_you_mean: Callable[[str, Iterable[str], float], str] = lambda name, names, cutoff: "see `lmms-eval --tasks list`"
    #: every EARTHSCI_* setting of a run, checked once lmms-eval is there (a wrong value stops the run)
    check_settings: Callable[[], None] = lambda: None
    loader_leaves_out: bool = False
    run_hooks: bool = False
    before_evaluate: list[Callable[[Any, Any], None]] = field(default_factory=list)
    judge: JudgeVerdicts = field(default_factory=JudgeVerdicts)
    _data_only: threading.local = field(default_factory=threading.local, repr=False)
    #: model object -> {what was observed of it: value}; weakly held, so a model's entry goes with the model
    _models: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary, repr=False)
    #: the same for a model object that cannot be held weakly (by id, kept with the object so the id stays its own)
    _models_by_id: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict, repr=False)

    def new_run(self) -> None:
        """Forget what a run held (the steps before the first request, the judge's verdicts, what was observed
        of the models), keeping what is ours: a test starts here, seeing no other test's run."""
        self.before_evaluate.clear()
        self.judge = JudgeVerdicts()
        self._models = weakref.WeakKeyDictionary()
        self._models_by_id = {}

    def seen_of(self, lm: Any) -> dict[str, Any]:
        """What was observed of the model object ``lm`` in this run (a dict the boundary fills: ``budget``,
        ``loses_interleaving``)."""
        try:
            return self._models.setdefault(lm, {})
        except TypeError:  # not weakly referenceable, or unhashable
            return self._models_by_id.setdefault(id(lm), (lm, {}))[1]

    @property
    def data_only(self) -> bool:
        return getattr(self._data_only, "on", False)

    @contextlib.contextmanager
    def reading_data_only(self) -> Iterator[None]:
        """Inside the block this thread builds tasks to read their data and evaluates nothing (``report``'s
        figures): a task module lmms-eval imports installs the data hooks only, not a run's hooks."""
        before = self.data_only
        self._data_only.on = True
        try:
            yield
        finally:
            self._data_only.on = before


_CURRENT: list[Runtime] = []
_LOCK = threading.Lock()


def current() -> Runtime:
    """The process's runtime: the one registration started, else a default one."""
    with _LOCK:
        if not _CURRENT:
            _CURRENT.append(Runtime())
        return _CURRENT[0]


def start(runtime: Runtime) -> Runtime:
    """Make ``runtime`` the process's (registration). What the process's runtime already holds for the run to
    come is carried over: the steps before the first request (``check-model`` and the capture add theirs, then
    import lmms-eval's evaluator, whose import registers us), the judge's verdicts and a thread's
    ``reading_data_only`` block (building tasks may import lmms-eval's models)."""
    with _LOCK:
        if _CURRENT:
            before = _CURRENT[0]
            runtime.before_evaluate[:0] = [step for step in before.before_evaluate if step not in runtime.before_evaluate]
            runtime.judge = before.judge
            runtime._data_only = before._data_only
            runtime._models, runtime._models_by_id = before._models, before._models_by_id
        _CURRENT[:] = [runtime]
    return runtime
