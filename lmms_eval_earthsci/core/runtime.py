"""The process's one runtime object: what is ours, what is installed, and everything a run holds while it runs.

There is one per process (:func:`current`), created when this module is imported, filled and never replaced or
merged. Module globals elsewhere hold constants only (``tests/test_module_state.py``). Our entry point
(:func:`lmms_eval_earthsci.registration.register`) fills in what the layers above the core know (:meth:`Runtime.fill`:
our task folders, the name hints of the YAML generator, the settings check); before that (a unit test, a command that
never starts lmms-eval) those are the defaults: our own task folder, no hints.

What it holds, by who writes it:

- what is ours (registration): ``task_dirs``, ``looks_ours_but_unknown``, ``near``, ``did_you_mean``,
  ``check_settings``; what the benchmarks declared (``core.activation.activate``): ``settings``, ``datasets``;
- what is installed (``core.upstream.patching``): ``patches`` (every patch made and those in place), and
  ``run_hooks``: a run's hooks are in, so a setting declared later is checked at once (``core.settings``);
- what a run holds (:meth:`Runtime.new_run` forgets it):

  ====================  ===================================================================================
  ``ledger``            what did not run and why, how the run ended (``core.upstream.ledger``)
  ``before_evaluate``   steps run on the model and the tasks before the first request (``check-model``)
  ``judge``             the judge pass's verdicts per task (``core.judge.task_pass``)
  ``judge_failures``    the judged docs that failed, per task, and why (``core.judge.failures``)
  ``pending_bad``       invalid records found at load, reported together before inference (``core.adapter``)
  ``verdicts``          the layout probe's verdict per task (``core.boundary.probe``)
  ``figures``           the size each doc's figures reached the model at (``core.boundary.figures_seen``)
  ``capture``           every processor call and ``generate`` of a run (``core.boundary.capture``)
  ``probing``           a probe request is under way (``core.boundary.observe``)
  ``seen_of(lm)``       what the model boundary observed of a model object (its figure budget, ...)
  ``chat_docs``         the docs prompted through a chat backend (``core.prompts.messages``)
  ``said``              the warnings said once per run
  ``figures_source``    a replayed run's reader of the figures' sizes (``rescore``), else None
  ====================  ===================================================================================

- per thread (``thread``): ``data_only``: this thread builds tasks to read their data, evaluating nothing
  (``report``); a dataset without a route is then an error the command reports, not a run's stop; ``unrecorded``:
  the probe reads a doc's messages, which records no route;
- ``resource(key, make)``: objects a process makes once and shares (judge clients, repo-file stores, what the
  benchmarks declared: bootstrap kernels, model spellings); ``for_run(key, make)``: a part's own state for the run
  (a report's bootstrap options, prepared verdicts, a rescore's replay log), which :meth:`Runtime.new_run` forgets.

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
class JudgeFailures:
    """Per judged task: its failed docs by cause (``failed``), the setting and endpoint naming its judge
    (``setting``), and the tasks not judged for want of a judge (``no_judge``: task -> the settings that would)."""

    failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    setting: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    no_judge: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Ledger:
    """What a run did not do and why (``core.upstream.ledger`` notes into it, the hardening's exit status reads it)."""

    not_loaded: dict[str, str] = field(default_factory=dict)  # tasks of ours left out -> why
    stopped: list[str] = field(default_factory=list)  # the lines of an evaluation of ours that raised
    ungrouped: list[str] = field(default_factory=list)  # groups that lost a task
    failures_seen: int = 0  # load failures noted, ever (a group's loader compares it before and after)
    others: dict[str, str] = field(default_factory=dict)  # tasks not ours left out -> why
    requested: list[str] = field(default_factory=list)  # the requested names of ours (a CLI run)
    near: dict[str, str] = field(default_factory=dict)  # requested names of lmms-eval's own close to ours -> ours
    started: bool = False
    done: bool = False
    why: str | None = None  # what stopped the run outside the evaluation of ours (the first cause)
    noted: BaseException | None = None  # the exception an evaluation of ours raised (noted once)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


@dataclass
class Patches:
    """What this process patched (``core.upstream.patching``): every record made, once each, in order
    (``made``), the ones in place now (``active``: record -> its undo), the mappings of upstream objects
    whose items we set, by id (``holders``), and the taps' subscribers (``taps``)."""

    made: dict[Any, None] = field(default_factory=dict)
    active: dict[Any, Callable[[], None]] = field(default_factory=dict)
    holders: dict[int, str] = field(default_factory=dict)
    #: (id of the owner, name) -> its tap (``core.upstream.taps.Tap``: the owner held, its subscribers)
    taps: dict[tuple[int, str], Any] = field(default_factory=dict)
    dump_at_exit: bool = False
    dumped: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)


@dataclass
class Capture:
    """``check-model``'s capture: each processor call and ``generate`` of the run (``records``), the file they go
    to (``path``) and the processor of the last call (``processor``)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    path: str | None = None
    processor: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


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
    #: the settings declared (the core's, then each benchmark's), in order
    settings: list[Any] = field(default_factory=list)
    #: the Hub datasets the benchmarks declared (their loads go through our route checks)
    datasets: set[str] = field(default_factory=set)
    patches: Patches = field(default_factory=Patches)
    run_hooks: bool = False
    #: the integration's task loader leaves a task of ours that cannot load out (its route error says its own line)
    loader_leaves_out: bool = False
    ledger: Ledger = field(default_factory=Ledger)
    before_evaluate: list[Callable[[Any, Any], None]] = field(default_factory=list)
    judge: JudgeVerdicts = field(default_factory=JudgeVerdicts)
    judge_failures: JudgeFailures = field(default_factory=JudgeFailures)
    pending_bad: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    figures: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    #: where the logged samples' figure sizes come from: None for ``figures``, else a replayed run's reader
    figures_source: Callable[[str, int], Any] | None = None
    capture: Capture = field(default_factory=Capture)
    probing: int = 0
    said: set[str] = field(default_factory=set)
    #: the docs prompted through ``doc_to_messages`` (a chat backend) in this run, by key (``core.prompts.messages``)
    chat_docs: set[str] = field(default_factory=set)
    #: what this thread is doing: ``data_only`` (below), ``unrecorded`` (the probe reads a doc's messages),
    #: ``sizes_only`` (the images are read for their size, not decoded: ``core.data.loading.sizes_only``)
    thread: threading.local = field(default_factory=threading.local, repr=False)
    #: model object -> {what was observed of it: value}; weakly held, so a model's entry goes with the model
    _models: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary, repr=False)
    #: the same for a model object that cannot be held weakly (by id, kept with the object so the id stays its own)
    _models_by_id: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict, repr=False)
    _resources: dict[Any, Any] = field(default_factory=dict, repr=False)
    _run_resources: dict[Any, Any] = field(default_factory=dict, repr=False)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def fill(self, **ours: Any) -> Runtime:
        """Set what is ours (registration: ``task_dirs``, ``near``, ...); nothing a run holds is touched."""
        for name, value in ours.items():
            if name not in ("task_dirs", "looks_ours_but_unknown", "near", "did_you_mean", "check_settings"):
                raise TypeError(f"Runtime.fill: {name} is not what is ours")
            setattr(self, name, value)
        return self

    def new_run(self) -> None:
        """Forget what a run held (see the module docstring), keeping what is ours, what the benchmarks declared and
        what is installed: a test starts here, seeing no other test's run."""
        with self.lock:
            self.ledger = Ledger()
            self.before_evaluate.clear()
            self.judge = JudgeVerdicts()
            self.judge_failures = JudgeFailures()
            self.pending_bad = {}
            self.verdicts = {}
            self.figures = {}
            self.figures_source = None
            self.capture = Capture()
            self.probing = 0
            self.said = set()
            self.chat_docs = set()
            self._models = weakref.WeakKeyDictionary()
            self._models_by_id = {}
            self._run_resources = {}

    def first_time(self, key: str) -> bool:
        """True the first time ``key`` is asked in this run (a warning said once)."""
        with self.lock:
            if key in self.said:
                return False
            self.said.add(key)
            return True

    def resource(self, key: Any, make: Callable[[], Any]) -> Any:
        """The process's one object for ``key``, made by ``make()`` the first time (thread-safe)."""
        with self.lock:
            if key not in self._resources:
                self._resources[key] = make()
            return self._resources[key]

    def for_run(self, key: Any, make: Callable[[], Any]) -> Any:
        """The run's one object for ``key`` (a part's own state for the run: a report's bootstrap options, a batch
        of prepared verdicts, a rescore's replay log), made by ``make()`` the first time; :meth:`new_run` forgets it."""
        with self.lock:
            if key not in self._run_resources:
                self._run_resources[key] = make()
            return self._run_resources[key]

    def resources(self, kind: str) -> list[Any]:
        """The objects made for keys ``(kind, ...)`` (by :meth:`resource` or :meth:`for_run`), forgotten here (the
        caller closes them)."""
        with self.lock:
            out = []
            for held in (self._resources, self._run_resources):
                keys = [k for k in held if isinstance(k, tuple) and k and k[0] == kind]
                out += [held.pop(k) for k in keys]
            return out

    def seen_of(self, lm: Any) -> dict[str, Any]:
        """What was observed of the model object ``lm`` in this run (a dict the boundary fills: ``budget``,
        ``loses_interleaving``)."""
        with self.lock:
            try:
                return self._models.setdefault(lm, {})
            except TypeError:  # not weakly referenceable, or unhashable
                return self._models_by_id.setdefault(id(lm), (lm, {}))[1]

    @property
    def data_only(self) -> bool:
        return getattr(self.thread, "data_only", False)

    @contextlib.contextmanager
    def reading_data_only(self) -> Iterator[None]:
        """Inside the block this thread builds tasks to read their data and evaluates nothing (``report``'s
        figures): lmms-eval's task loading installs the data hooks only, not a run's hooks, and a dataset with no
        route raises an error the command reports instead of stopping the process."""
        before = self.data_only
        self.thread.data_only = True
        try:
            yield
        finally:
            self.thread.data_only = before


#: the process's one runtime (an object with mutable fields: the one allowed, tests/test_module_state.py)
_PROCESS = Runtime()


def current() -> Runtime:
    """The process's runtime."""
    return _PROCESS
