"""Whether the prompt layout a benchmark's authors wrote (figures between their labels, the system prompt,
...) reached the model, as each run recorded it before its first doc (``configs.<task>.metadata.earthsci_layout``,
:mod:`lmms_eval_earthsci.core.boundary.probe`). A number made with a *lost* layout is not the paper's
protocol: its cells carry :data:`MARK` with a note (task, class, what was lost, the fix) and no paper
number is set beside it; *depends on the server* gets a note of what the server must set; a layout that
could not be observed (*not observed*, and *not checked* in runs made before the probe observed any
class) has its cells marked :data:`UNOBSERVED_MARK` with the note "layout not observed: check-model" (the
paper's number stays: nothing says it differs); runs that recorded nothing (older runs) show nothing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lmms_eval_earthsci.commands.report.runs import Run
from lmms_eval_earthsci.core.adapter.harness import group_leaves
from lmms_eval_earthsci.core.boundary.probe import AS_WRITTEN, LOST, NOT_CHECKED, NOT_OBSERVED, SERVER

MARK = "⚠"
#: a number whose layout could not be observed (the class, the route), and what says so everywhere
UNOBSERVED_MARK = "†"
UNOBSERVED = "layout not observed: check-model"


@dataclass(frozen=True)
class TaskLayout:
    """A task's layout in a run; a group's is its worst leaf's (lost, then depends on the server; as
    written only when every leaf is)."""
    status: str  # LOST, SERVER, AS_WRITTEN, NOT_OBSERVED (not checked too), or "" (the run recorded nothing)
    cls: str = ""  # the model class the run used
    lost: tuple[str, ...] = ()  # what was lost
    fix: str = ""
    tasks: tuple[str, ...] = ()  # the leaf tasks with this status

    @property
    def summary(self) -> str:
        """The ``layout`` cell of summary.csv: "as written", "lost: <what>", "depends on the server",
        :data:`UNOBSERVED`, "" (nothing recorded)."""
        return f"{LOST}: {'; '.join(self.lost)}" if self.status == LOST else UNOBSERVED if self.status == NOT_OBSERVED else self.status


NONE = TaskLayout("")


def _record(run: Run, task: str) -> dict[str, Any] | None:
    config = run.configs.get(task)
    meta = config.get("metadata") if isinstance(config, dict) else None
    rec = meta.get("earthsci_layout") if isinstance(meta, dict) else None
    return rec if isinstance(rec, dict) and isinstance(rec.get("status"), str) else None


def task_layout(run: Run, task: str) -> TaskLayout:
    recs = [(leaf, _record(run, leaf)) for leaf in group_leaves(task, run.subtasks)]
    for status in (LOST, SERVER):
        hit = [(leaf, r) for leaf, r in recs if r is not None and r["status"] == status]
        if hit:
            lost = dict.fromkeys(str(x) for _, r in hit for x in (r.get("lost") or ()))
            return TaskLayout(status, ", ".join(dict.fromkeys(str(r.get("class") or "?") for _, r in hit)), tuple(lost),
                              "; ".join(dict.fromkeys(str(r["fix"]) for _, r in hit if r.get("fix"))), tuple(leaf for leaf, _ in hit))
    got = [r for _, r in recs if r is not None]
    if not got:
        return NONE
    if len(got) == len(recs) and all(r["status"] == AS_WRITTEN for r in got):
        return TaskLayout(AS_WRITTEN, ", ".join(dict.fromkeys(str(r.get("class") or "?") for r in got)), tasks=tuple(leaf for leaf, r in recs if r is not None))
    unseen = [(leaf, r) for leaf, r in recs if r is not None and r["status"] in (NOT_OBSERVED, NOT_CHECKED)]
    if not unseen:  # as written where recorded, some leaves recorded nothing: nothing to say
        return NONE
    return TaskLayout(NOT_OBSERVED, ", ".join(dict.fromkeys(str(r.get("class") or "?") for _, r in unseen)),
                      fix="; ".join(dict.fromkeys(str(r["why"]) for _, r in unseen if r.get("why"))), tasks=tuple(leaf for leaf, _ in unseen))


def lost(run: Run, task: str) -> bool:
    return task_layout(run, task).status == LOST


def marked(cell: str, run: Run, task: str) -> str:
    """A run's cell, with :data:`MARK` when the run lost the task's layout, :data:`UNOBSERVED_MARK` when
    it could not be observed."""
    status = task_layout(run, task).status
    return f"{cell} {MARK}" if status == LOST else f"{cell} {UNOBSERVED_MARK}" if status == NOT_OBSERVED and cell.strip() not in ("", "-", "n/a") else cell


def paper_comparable(runs: Iterable[Run], task: str, metric: str) -> bool:
    """Whether a shared paper cell keeps the paper's number: not when every run with the metric lost the
    task's layout (the paper's number would sit beside numbers of another protocol only; SciFIBench's
    paper reads "–" for models without interleaved input). With a run that kept it, the number stays
    and the lost runs' cells are marked."""
    have = [r for r in runs if r.value(task, metric)[0]]
    return not have or not all(lost(r, task) for r in have)


def tasks_in_words(tasks: tuple[str, ...], shown: str) -> str:
    """The leaves a group's note is about, when they are not just the task shown."""
    return "" if tasks == (shown,) else " (" + ", ".join(f"`{t}`" for t in tasks[:4]) + (f" and {len(tasks) - 4} more" if len(tasks) > 4 else "") + ")"


def lost_notes(runs: Iterable[Run], tasks: Iterable[str]) -> list[str]:
    """One line per (run, task) whose layout was lost: the task, the class, what was lost, the fix."""
    out: dict[str, None] = {}
    tasks = list(dict.fromkeys(tasks))
    for r in runs:
        for t in tasks:
            lay = task_layout(r, t)
            if lay.status == LOST:
                out[f"{MARK} `{r.column}` · `{t}`{tasks_in_words(lay.tasks, t)}: not the authors' layout, not comparable with the paper's number "
                    f"({lay.cls}: {'; '.join(lay.lost) or 'lost'}). Fix: {lay.fix or 'see `lmms-eval-earthsci check-model`'}."] = None
    return list(out)


def _grouped(runs: Iterable[Run], tasks: Iterable[str], status: str) -> Iterator[tuple[Run, str, str, str]]:
    """``(run, class, fix or why, the tasks in words)`` for each run's tasks with ``status``, grouped by
    class and fix."""
    tasks = list(dict.fromkeys(tasks))
    for r in runs:
        by_fix: dict[tuple[str, str], list[str]] = {}
        for t in tasks:
            lay = task_layout(r, t)
            if lay.status == status:
                by_fix.setdefault((lay.cls, lay.fix), []).append(t)
        for (cls, fix), ts in by_fix.items():
            yield r, cls, fix, ", ".join(f"`{t}`" for t in ts) if len(ts) <= 3 else f"{len(ts)} tasks"


def server_notes(runs: Iterable[Run], tasks: Iterable[str]) -> list[str]:
    """One line per run whose tasks were sent as written to a server that decides their layout: what
    the server must set."""
    return [f"Layout: `{r.column}` ({cls}) sent {which} as written; the server decides whether figures stay between their labels: {fix or 'check its chat template'}."
            for r, cls, fix, which in _grouped(runs, tasks, SERVER)]


def unobserved_notes(runs: Iterable[Run], tasks: Iterable[str]) -> list[str]:
    """One line per run whose layouts could not be observed: the class, the tasks, why, and check-model."""
    return [f"{UNOBSERVED_MARK} `{r.column}` · {which}: {UNOBSERVED} ({cls}{': ' + why if why else ''}); "
            f"`lmms-eval-earthsci check-model --model <its class>` says whether the authors' layout reaches it."
            for r, cls, why, which in _grouped(runs, tasks, NOT_OBSERVED)]


def notes(runs: Iterable[Run], tasks: Iterable[str], server: bool = True) -> list[str]:
    runs, tasks = list(runs), list(tasks)
    return lost_notes(runs, tasks) + unobserved_notes(runs, tasks) + (server_notes(runs, tasks) if server else [])
