"""How large the figures were when they reached the model, as each run recorded it per task
(``configs.<task>.metadata.earthsci_budget``: a probe figure sent through the model class and the size
the processor made of it, then the task's own figures counted against that budget). A model class
shrinks figures to its own pixel budget (Qwen2.5-VL's ``max_pixels``, ...) before the model sees them: two
numbers of one task made with different budgets were not made on the same input, whatever the
checkpoints. So each benchmark section says, per run and task, how large the figures reached the model
and how many of the task's docs had a figure shrunk (:func:`notes`), and wherever the report sets two
runs' numbers of a task side by side (a table row, a paired comparison with the baseline) a cell whose
run's budget differs from the other run's is marked :data:`MARK`, with one note saying both budgets
(:func:`difference_notes`). A paper's number has no recorded budget: never marked against. A run that
recorded nothing (older runs) shows nothing and is never marked; a group's budget is its leaves' (each
distinct one)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from lmms_eval_earthsci.commands.report.layout_marks import task_layout, tasks_in_words
from lmms_eval_earthsci.commands.report.runs import MISSING, Run
from lmms_eval_earthsci.core.adapter.harness import group_leaves
from lmms_eval_earthsci.core.boundary.budget import NOT_OBSERVED, OBSERVED
from lmms_eval_earthsci.core.boundary.budget import SERVER_DECIDES as SERVER
from lmms_eval_earthsci.core.boundary.probe import NOT_OBSERVED as LAYOUT_UNSEEN

#: a run's number made on other input than the run it is compared with (another figure budget)
MARK = "≠"
CHECK_MODEL = "`lmms-eval-earthsci check-model` shows it"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _size(v: Any) -> tuple[int, int] | None:
    """``[W, H]`` as recorded, or None when it is not two positive integers."""
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(_int(x) for x in v):
        return int(v[0]), int(v[1])
    return None


def _text(v: Any) -> str:
    return v.strip() if isinstance(v, str) else ""


def mp(pixels: int) -> str:
    """Megapixels with one decimal and at least two significant digits: ``1.2``, ``15.9``, ``0.26``."""
    v = pixels / 1e6
    return f"{v:.1f}" if v >= 0.95 else f"{v:.2g}"


def _wh(size: tuple[int, int]) -> str:
    return f"{size[0]} x {size[1]}"


@dataclass(frozen=True)
class Figures:
    """The task's own docs against the budget (``figures`` of the record): ``above`` and the shrink
    factors (figure W*H / max_pixels) are None, with ``why``, when they could not be counted; ``read``,
    when recorded, the docs whose figures were read (a large task's are an evenly spaced sample)."""
    docs: int | None = None
    with_figures: int | None = None
    above: int | None = None
    median_shrink: float | None = None
    max_shrink: float | None = None
    largest: tuple[int, int] | None = None
    why: str = ""
    read: int | None = None

    @classmethod
    def of(cls, rec: Any) -> Figures | None:
        if not isinstance(rec, dict):
            return None
        return cls(_int(rec.get("docs")), _int(rec.get("with_figures")), _int(rec.get("above")), _float(rec.get("median_shrink")),
                   _float(rec.get("max_shrink")), _size(rec.get("largest")), _text(rec.get("why")), _int(rec.get("read")))


@dataclass(frozen=True)
class Budget:
    """One task's figure budget in one run. Equal budgets are the same input (``figures``, the task's own
    docs, is not part of the budget: tasks of one budget are told in one line)."""
    status: str  # OBSERVED, SERVER, NOT_OBSERVED
    cls: str = ""  # the lmms-eval model class
    probe: tuple[int, int] | None = None  # the probe figure sent (W, H)
    reached: tuple[int, int] | None = None  # the size it reached the model at
    tokens: int | None = None  # visual tokens the probe became
    capped: bool | None = None  # the probe was shrunk: max_pixels is the class's budget
    max_pixels: int | None = None
    why: str = ""
    figures: Figures | None = field(default=None, compare=False)
    tokens_small: int | None = None  # visual tokens a 64 x 64 figure became (a class may enlarge small figures: its min_pixels)

    @property
    def pixels(self) -> int | None:
        """The budget in pixels when capped; when not, the probe's (the budget is at least that)."""
        if self.capped:
            return self.max_pixels or (self.reached[0] * self.reached[1] if self.reached else None)
        size = self.probe or self.reached
        return size[0] * size[1] if self.capped is False and size else None

    @property
    def phrase(self) -> str:
        """What the figures reached the model at, in a comparison's words: "up to 1.6 MP", "at least 15.9
        MP", "full size (server decides)", "a size not observed"."""
        if self.status == SERVER:
            return "full size (server decides)"
        if self.status != OBSERVED:
            return "a size not observed"
        px = self.pixels
        if px is None:
            return "a size the processor's output does not show"
        return f"{'up to' if self.capped else 'at least'} {mp(px)} MP"

    @property
    def summary(self) -> str:
        """summary.csv's ``figure_budget``: "up to 1.2 MP (observed)", "at least 15.9 MP (observed)",
        "server decides", "not observed"."""
        if self.status == SERVER:
            return "server decides"
        if self.status != OBSERVED:
            return "not observed"
        return f"{self.phrase} (observed)"

    def differs(self, other: Budget) -> bool:
        """Not the same input: another status, another budget, or (neither shrunk) another token count."""
        if self.status != other.status:
            return True
        if self.status != OBSERVED:
            return False
        if self.max_pixels != other.max_pixels or bool(self.capped) != bool(other.capped):
            return True
        if None not in (self.tokens_small, other.tokens_small) and self.tokens_small != other.tokens_small:
            return True  # the same cap, small figures enlarged otherwise
        return not self.capped and None not in (self.tokens, other.tokens) and self.tokens != other.tokens


def leaf_budget(run: Run, task: str) -> Budget | None:
    """The budget a run recorded for one task (not a group); None when it recorded none (an older run)."""
    config = run.configs.get(task)
    meta = config.get("metadata") if isinstance(config, dict) else None
    rec = meta.get("earthsci_budget") if isinstance(meta, dict) else None
    if not isinstance(rec, dict) or rec.get("status") not in (OBSERVED, SERVER, NOT_OBSERVED):
        return None
    capped = rec.get("capped")
    return Budget(rec["status"], _text(rec.get("class")), _size(rec.get("probe")), _size(rec.get("reached")), _int(rec.get("tokens")),
                  capped if isinstance(capped, bool) else None, _int(rec.get("max_pixels")) or None, _text(rec.get("why")), Figures.of(rec.get("figures")),
                  _int(rec.get("tokens_small")))


def task_budgets(run: Run, task: str) -> list[tuple[Budget, tuple[str, ...]]]:
    """The distinct budgets of a task's leaves (a leaf task: its own), each with its leaves, in order."""
    out: dict[Budget, list[str]] = {}
    for leaf in dict.fromkeys(group_leaves(task, run.subtasks)):
        b = leaf_budget(run, leaf)
        if b is not None:
            out.setdefault(b, []).append(leaf)
    return [(b, tuple(leaves)) for b, leaves in out.items()]


def summary(run: Run, task: str) -> str:
    """The ``figure_budget`` cell: each distinct budget of the task's leaves, ``; ``-separated; "" when
    the run recorded none."""
    return "; ".join(b.summary for b, _ in task_budgets(run, task))


# --------------------------------------------------------------------------- one line per run and task


def _shrink(v: float) -> str:
    return f"x{v:.1f}"


def _figures_clause(figures: Iterable[Figures | None]) -> str:
    """How many of the docs had a figure above the budget and how much it was shrunk, over the tasks of
    one line (counts added; a median per task cannot be merged, so several tasks' medians are a range)."""
    fs = [f for f in figures if f is not None]
    if not fs:
        return ""
    if any(f.above is None for f in fs):
        why = "; ".join(dict.fromkeys(f.why for f in fs if f.above is None and f.why))
        return f"; figures above it not counted ({why})" if why else ""
    docs = sum(f.docs or 0 for f in fs)
    read = sum((f.docs or 0) if f.read is None else f.read for f in fs)  # above counts over the docs read
    above = sum(f.above or 0 for f in fs)
    if not read:
        return ""
    of = f"{read:,} doc{'' if read == 1 else 's'}" + (f" read of {docs:,}" if read < docs else "")
    if not above:
        return f"; no doc had a larger figure ({of})"
    pct = 100.0 * above / read
    share = f"{pct:.0f}%" if pct >= 0.5 else "<1%"
    medians = sorted({round(f.median_shrink, 1) for f in fs if f.above and f.median_shrink is not None})
    tops = [f.max_shrink for f in fs if f.above and f.max_shrink is not None]
    if above == 1:
        how = f", shrunk {_shrink(tops[0])}" if tops else ""
    else:
        how = "" if not medians else f", shrunk median {_shrink(medians[0])}" if len(medians) == 1 else f", shrunk median {_shrink(medians[0])} to {_shrink(medians[-1])} by task"
        how += f", up to {_shrink(max(tops))}" if tops else ""
    return f"; {above:,} of {of} ({share}) had a larger figure{how}"


def wording(b: Budget, figures: Iterable[Figures | None] = ()) -> str:
    """What the figures of a task reached the model at, with its docs' ``figures`` (of one or several
    tasks of that budget)."""
    if b.status == SERVER:
        return "figures were sent at full size; the server's processor decides their size" + (f" ({b.why})" if b.why else "")
    if b.status != OBSERVED:
        return "figure size not observed" + (f" ({b.why})" if b.why else "") + f": {CHECK_MODEL}"
    tokens = f"{b.tokens:,} visual tokens" if b.tokens is not None else ""
    px = b.pixels
    if b.capped and px is not None:
        how = ", ".join(x for x in (f"{_wh(b.reached)} from a {_wh(b.probe)} probe" if b.reached and b.probe else "", tokens) if x)
        return f"figures reached the model at up to {mp(px)} MP" + (f" ({how})" if how else "") + ", observed" + _figures_clause(figures)
    if b.capped is False and px is not None:
        how = "; ".join(x for x in (f"the {_wh(b.probe)} probe was not shrunk" if b.probe else "", tokens) if x)
        counted = [f for f in figures if f is not None and f.above is not None]  # none above: said; not counted: nothing to say
        return f"figures reached the model at full size up to at least {mp(px)} MP" + (f" ({how})" if how else "") + ", observed" + _figures_clause(counted)
    probe = f"a {_wh(b.probe)} probe" if b.probe else "the probe"
    return "figures reached the model at a size the processor's output does not show" + (f" ({probe} became {tokens})" if tokens else "") + ", observed"


def _which(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _shown(run: Run, task: str, leaves: tuple[str, ...]) -> str:
    """A task as a line names it: a group whose leaves do not all share the line's budget with them named."""
    return f"`{task}`" + ("" if set(leaves) == set(group_leaves(task, run.subtasks)) else tasks_in_words(leaves, task))


def _lines(run: Run, tasks: list[str]) -> list[str]:
    by_budget: dict[Budget, dict[str, tuple[str, ...]]] = {}
    for t in tasks:
        for b, leaves in task_budgets(run, t):
            if b.status == NOT_OBSERVED and task_layout(run, t).status == LAYOUT_UNSEEN:
                continue  # the layout's note already says the class could not be observed, and names check-model
            by_budget.setdefault(b, {})[t] = leaves
    out = []
    for b, shown in by_budget.items():
        told = {leaf for t, leaves in shown.items() if leaves != (t,) for leaf in leaves}  # told through their group
        names = [_shown(run, t, leaves) for t, leaves in shown.items() if t not in told]
        every = dict.fromkeys(leaf for ls in shown.values() for leaf in ls)
        figures = [getattr(leaf_budget(run, leaf), "figures", None) for leaf in every]
        out.append(f"`{run.column}`" + (f" ({b.cls})" if b.cls else "") + f" · {_which(names)}: {wording(b, figures)}.")
    return out


def notes(runs: Iterable[Run], tasks: Iterable[str]) -> list[str]:
    """One line per run and budget: the tasks of that budget (a group once, its leaves with it), how
    large their figures reached the model, and how many of their docs had a figure shrunk."""
    tasks = list(dict.fromkeys(tasks))
    return [line for r in runs for line in _lines(r, tasks)]


# --------------------------------------------------------------------------- comparisons


def _differing(run: Run, other: Run, task: str) -> list[tuple[str, Budget, Budget]]:
    """(leaf, run's budget, other's budget) of the task's leaves both recorded and whose budgets differ."""
    out = []
    for leaf in dict.fromkeys(group_leaves(task, run.subtasks)):
        a, b = leaf_budget(run, leaf), leaf_budget(other, leaf)
        if a is not None and b is not None and a.differs(b):
            out.append((leaf, a, b))
    return out


def reference(runs: Iterable[Run], base: Run | None, task: str) -> Run | None:
    """The run a row's other runs are held against: the baseline when it recorded a budget of the task,
    else the first run that did (a run without a record is never marked)."""
    runs = list(runs)
    return next((r for r in ([base] if base is not None else []) + runs if task_budgets(r, task)), None)


def marked(cell: str, run: Run, other: Run | None, task: str) -> str:
    """A run's cell, with :data:`MARK` when its budget of the task differs from ``other``'s."""
    if other is None or other is run or cell.strip() in ("", MISSING) or not _differing(run, other, task):
        return cell
    return f"{cell} {MARK}"


def _quoted(run: Run) -> str:
    return f"`{run.column}`"


def difference(run: Run, other: Run, task: str, name: Callable[[Run], str] = _quoted) -> str:
    """"not the same input: `A` saw up to 1.6 MP, `B` 12.8 MP" ("" when the budgets do not differ)."""
    diff = _differing(run, other, task)
    if not diff:
        return ""
    mine = " / ".join(dict.fromkeys(a.phrase for _, a, _ in diff))
    theirs = " / ".join(dict.fromkeys(b.phrase for _, _, b in diff))
    if mine == theirs:  # the same bound, other tokens: the tokens tell them apart
        mine = " / ".join(dict.fromkeys(f"{a.phrase} ({a.tokens:,} visual tokens)" for _, a, _ in diff if a.tokens is not None)) or mine
        theirs = " / ".join(dict.fromkeys(f"{b.phrase} ({b.tokens:,} visual tokens)" for _, _, b in diff if b.tokens is not None)) or theirs
    if mine == theirs:  # the same cap and tokens: small figures tell them apart
        mine = " / ".join(dict.fromkeys(f"{a.phrase}, a 64 x 64 figure as {a.tokens_small:,} visual tokens" for _, a, _ in diff if a.tokens_small is not None)) or mine
        theirs = " / ".join(dict.fromkeys(f"{b.phrase}, a 64 x 64 figure as {b.tokens_small:,}" for _, _, b in diff if b.tokens_small is not None)) or theirs
    if mine.startswith("up to ") and theirs.startswith("up to ") and " / " not in theirs:
        theirs = theirs[len("up to "):]
    return f"not the same input: {name(run)} saw {mine}, {name(other)} {theirs}"


def difference_notes(pairs: Iterable[tuple[Run, Run | None, str]]) -> list[str]:
    """One line per marked run and difference (the tasks that share it named together): ``(run, the run
    it is held against, task)`` of a table's cells."""
    by_text: dict[tuple[str, str], list[str]] = {}
    for run, other, task in pairs:
        if other is None or other is run:
            continue
        text = difference(run, other, task)
        if text:
            leaves = tuple(leaf for leaf, _, _ in _differing(run, other, task))
            shown = _shown(run, task, leaves)
            names = by_text.setdefault((run.column, text), [])
            if shown not in names:
                names.append(shown)
    return [f"{MARK} `{column}` · {_which(names)}: {text}." for (column, text), names in by_text.items()]


def side_by_side(runs: list[Run], base: Run | None, tasks: Iterable[str]) -> list[tuple[Run, Run | None, str]]:
    """``(run, the run it is held against, task)`` of a table that shows ``runs`` side by side."""
    out = []
    for t in dict.fromkeys(tasks):
        ref = reference(runs, base, t)
        out += [(r, ref, t) for r in runs]
    return out


def _plain(run: Run) -> str:
    return run.column


def browser_lines(runs: list[Run], base: Run | None, task: str) -> list[dict[str, str]]:
    """The sample browser's lines of a task (``budget`` of its entry in index.js): per run and budget, the
    run, class and wording, and ``differs`` (the note's text) when it is marked against the reference."""
    other = reference(runs, base, task)
    out = []
    for r in runs:
        diff = difference(r, other, task, name=_plain) if other is not None and other is not r else ""
        for b, leaves in task_budgets(r, task):
            line = {"run": r.column, "class": b.cls, "text": wording(b, [getattr(leaf_budget(r, leaf), "figures", None) for leaf in leaves])}
            out.append(line | ({"differs": diff} if diff else {}))
    return out
