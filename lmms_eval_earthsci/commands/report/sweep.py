"""Runs of a sweep: results files become runs by model identity, runs get labels and an order.

- **A run is a model identity, not a file**: lmms-eval's ``--model``, its ``--model_args`` without the
  keys that do not change answers (:data:`NOT_ANSWERS`: devices, batch sizes, parallelism, endpoints),
  and ``--gen_kwargs``. A rescored run (``rescore`` copies the original's model and arguments) is its own
  identity per rescore folder, so a run and its rescore stay two. Files of one identity merge into one
  run (split jobs: one job per task group, in several ``--output_path`` folders); a task present in two
  of them (a rerun) is taken from the newest file, and the others are *set aside* and named in the
  report. ``keep_reruns`` keeps them as runs of their own instead (each file joins the first run of its
  identity that lacks its tasks).
- **Labels**: the checkpoint's name (the last part of ``pretrained=`` / ``model=``; more of its path
  where two checkpoints share it), then ``(run folder)`` when the run comes from one folder; lmms-eval's
  date where that still leaves two alike. ``--label FOLDER=NAME`` names a run.
- **Order**: runs without a training step first, then by step (read from the checkpoint's path or the
  run folder: ``checkpoint-2000``, ``step_2000``, ``global_step2000``, ``iter_0002000``, ``ckpt_2000``),
  ties and the rest in natural order of their labels (``step_900 < step_2000 < step_10000``); ``--order``
  puts the runs it names first, in its order.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report.runs import ReportError, ResultsFile, Run, Samples, results_files, stamp_date
from lmms_eval_earthsci.core.adapter.harness import group_leaves

# --model_args keys that place or batch the model, or reach it, without changing its answers
NOT_ANSWERS = frozenset(
    {
        "device", "device_map", "batch_size", "max_batch_size", "parallelize", "num_processes", "num_gpus",
        "tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
        "max_num_seqs", "threads", "num_concurrent", "num_workers", "max_retries", "timeout", "base_url",
        "api_key", "host", "port", "use_cache", "cache_dir", "trust_remote_code",
    }
)
_CHECKPOINT = re.compile(r"(?:pretrained|model_version|model)=([^,]+)")
_STEP = re.compile(r"(?<![A-Za-z0-9])(?:global_step|checkpoint|ckpt|step|iter)[-_]?(\d+)(?![0-9])", re.IGNORECASE)


def parse_model_args(text: str) -> dict[str, str]:
    """lmms-eval's ``k=v,k=v`` model arguments (a part without ``=`` is kept as a key)."""
    out = {}
    for part in str(text or "").split(","):
        if part.strip():
            k, _, v = part.partition("=")
            out[k.strip()] = v.strip()
    return out


def identity(f: ResultsFile) -> tuple:
    """What makes two results files answers of the same model (see the module docstring)."""
    args = tuple(sorted((k, v.rstrip("/")) for k, v in parse_model_args(f.model_args).items() if k not in NOT_ANSWERS))
    gen = f.config.get("gen_kwargs")
    gen = json.dumps(gen, sort_keys=True, default=str) if gen not in (None, "", {}) else ""
    rescored = ("rescore", os.path.realpath(os.path.dirname(f.path))) if f.rescore else ()
    return (f.model, args, gen) + rescored


def checkpoint(f: ResultsFile) -> str:
    """The checkpoint a file's run evaluated (``pretrained=`` / ``model=``), else lmms-eval's ``--model``."""
    m = _CHECKPOINT.search(f.model_args)
    return m.group(1).rstrip("/") if m else (f.model or "run")


def step_in(text: str) -> int | None:
    """The training step a path names (its last ``checkpoint-N`` / ``step_N`` / ``global_stepN`` /
    ``iter_N`` / ``ckpt_N``), or None."""
    found = list(_STEP.finditer(str(text or "")))
    return int(found[-1].group(1)) if found else None


def natural_key(text: str) -> tuple:
    """Numbers inside a name compare as numbers: ``step_900 < step_2000 < step_10000``."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in re.split(r"(\d+)", text) if t)


# --------------------------------------------------------------------------- merging


def _judged_metrics() -> frozenset:
    """Every benchmark's judged metrics: a sample keeps them when None (no judge), the counts read that."""
    return frozenset(m for b in registry.benchmarks() for m in b.report_spec().judged_metrics)


def merge(files: Sequence[ResultsFile]) -> Run:
    """One run of one identity's files (oldest first): each task from the newest file that has it; a
    group whose tasks do not all come from its own file is set aside (its number would mix them)."""
    winner: dict[str, ResultsFile] = {}
    for f in files:
        for t in f.results:
            winner[t] = f
    mixed: dict[int, list[tuple[str, str]]] = {}  # id(file) -> its groups set aside, and why
    for g, w in list(winner.items()):
        if g in w.subtasks:
            stale = [t for t in group_leaves(g, w.subtasks) if t != g and winner.get(t) is not w]
            if stale:
                del winner[g]
                newer = winner.get(stale[0])
                mixed.setdefault(id(w), []).append((g, f"its task {stale[0]} comes from the newer {os.path.basename(newer.path) if newer else 'file'}"))
    aside = []
    for f in files:
        groups = dict(mixed.get(id(f), []))
        rerun = [t for t in f.results if winner.get(t) is not f and t not in groups]
        if rerun:
            aside.append((f, rerun, "a newer results file of this run has them (a rerun)"))
        for g, why in groups.items():
            aside.append((f, [g], why))
    used = [f for f in files if any(w is f for w in winner.values())]

    def pick(attr: str) -> dict:
        return {t: getattr(f, attr)[t] for t, f in winner.items() if t in getattr(f, attr)}

    ck = checkpoint(files[-1])
    step = step_in(ck)
    if step is None:
        step = next((s for f in reversed(used) for s in [step_in(f.folder_path)] if s is not None), None)
    return Run(
        label="",
        files=used,
        results=pick("results"),
        samples=Samples({t: f.sample_paths[t] for t, f in winner.items() if t in f.sample_paths}, keep_none=_judged_metrics()),
        aliases=pick("aliases"),
        n_samples=pick("n_samples"),
        versions=pick("versions"),
        subtasks=pick("subtasks"),
        unavailable=pick("unavailable"),
        configs=pick("configs"),
        higher_is_better=pick("higher_is_better"),
        source=dict(winner),
        set_aside=aside,
        identity=identity(files[-1]),
        model_path=ck,
        step=step,
    )


def _generations(files: list[ResultsFile], keep_reruns: bool) -> list[list[ResultsFile]]:
    if not keep_reruns:
        return [files]
    gens: list[list[ResultsFile]] = []
    for f in files:
        for g in gens:
            if not any(t in h.results for h in g for t in f.results):
                g.append(f)
                break
        else:
            gens.append([f])
    return gens


# --------------------------------------------------------------------------- labels and order


def _names(runs: list[Run]) -> list[str]:
    """Each run's checkpoint name: its last path part, more parts where two checkpoints share it."""
    paths = {r.model_path for r in runs}
    out = []
    for r in runs:
        parts = r.model_path.split("/")
        k = 1
        while k < len(parts) and any(p != r.model_path and p.split("/")[-k:] == parts[-k:] for p in paths):
            k += 1
        out.append("/".join(parts[-k:]))
    return out


def _label(runs: list[Run]) -> None:
    names = _names(runs)
    for r, n in zip(runs, names):
        r.label = f"{n} ({r.folders[0]})" if len(r.folders) == 1 else n
    first = [r.label for r in runs]
    for label in dict.fromkeys(x for x in first if first.count(x) > 1):  # one model's runs: named by the settings they differ in
        group = [r for r in runs if r.label == label]
        settings = [_settings(r) for r in group]
        differ = [k for k in dict.fromkeys(k for s in settings for k in s) if len({s.get(k, "–") for s in settings}) > 1]
        for r, s in zip(group, settings):
            if differ:
                r.label = f"{label} ({', '.join(f'{k}={s.get(k, chr(8211))}' for k in differ)})"
    first = [r.label for r in runs]
    for i, r in enumerate(runs):
        if first.count(r.label) > 1:
            r.label = f"{names[i]} ({stamp_date(r.files[-1].stamp)})"
    labels = [r.label for r in runs]
    for i, r in enumerate(runs):
        if labels.count(r.label) > 1:
            r.label = f"{r.label} #{i + 1}"


def _settings(run: Run) -> dict[str, str]:
    """What a run was asked for beyond its checkpoint: its model arguments, generation kwargs and
    ``--limit`` (the newest file's), as ``key=value`` text."""
    config = run.files[-1].config
    out = {k: v for k, v in parse_model_args(str(config.get("model_args") or "")).items() if not _CHECKPOINT.fullmatch(f"{k}={v}")}
    gen = config.get("gen_kwargs")
    items = gen.items() if isinstance(gen, dict) else parse_model_args(str(gen or "")).items()
    out.update({str(k): str(v) for k, v in items})
    if config.get("limit") is not None:
        out["limit"] = str(config["limit"])
    return out


def _matches(run: Run, name: str) -> bool:
    """Whether ``name`` (``--label``, ``--order``, ``--baseline``) names the run: its label, a run folder
    of it, or a path holding one of its results files."""
    if name in (run.label, run.column) or name in run.folders:
        return True
    if not os.path.exists(name):
        return False
    target = os.path.realpath(name)
    for f in run.files:
        p = os.path.realpath(f.path)
        if p == target or p.startswith(target.rstrip(os.sep) + os.sep):
            return True
    return False


def find(runs: list[Run], name: str, option: str) -> Run:
    """The one run ``name`` names; an error listing the runs otherwise."""
    hits = [r for r in runs if _matches(r, name)]
    if len(hits) == 1:
        return hits[0]
    known = "; ".join(r.label + ("" if all(f in r.label for f in r.folders) else f" ({', '.join(r.folders)})") for r in runs)
    if not hits:
        raise ReportError(f"{option} {name!r}: no run has that label or folder (runs: {known})")
    raise ReportError(f"{option} {name!r} names {len(hits)} runs ({', '.join(r.label for r in hits)}): give a label or a results file")


def _relabel(runs: list[Run], labels: Sequence[str]) -> None:
    for spec in labels:
        # FOLDER=NAME, where either side may hold "=" (a folder lr=1e-4): the first split naming a run
        cuts = [i for i, ch in enumerate(spec) if ch == "="]
        where = next((spec[:i] for i in cuts if spec[:i] and any(_matches(r, spec[:i]) for r in runs)), None)
        if not cuts or not spec[: cuts[0]] or not spec[cuts[-1] + 1 :].strip():
            raise ReportError(f"--label {spec!r}: expected FOLDER=NAME")
        if where is None:
            find(runs, spec[: cuts[0]], "--label")  # raises, listing the runs
        assert where is not None  # find() raised
        name = spec[len(where) + 1 :].strip()
        if not name:
            raise ReportError(f"--label {spec!r}: expected FOLDER=NAME")
        find(runs, where, "--label").label = name
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.label] = seen.get(r.label, 0) + 1
    twice = [n for n, k in seen.items() if k > 1]
    if twice:
        raise ReportError(f"--label: two runs would be called {twice[0]!r}")


def _order(runs: list[Run], order: Sequence[str]) -> list[Run]:
    runs = sorted(runs, key=lambda r: (r.step is not None, r.step or 0, natural_key(r.label)))
    first = []
    for name in order:
        r = find(runs, name, "--order")
        if r not in first:
            first.append(r)
    return first + [r for r in runs if r not in first]


def make_runs(files: Sequence[ResultsFile], labels: Sequence[str] | None = None, order: Sequence[str] | None = None, keep_reruns: bool = False) -> list[Run]:
    by_identity: dict[tuple, list[ResultsFile]] = {}
    for f in files:
        by_identity.setdefault(identity(f), []).append(f)
    runs = []
    for group in by_identity.values():
        group.sort(key=lambda f: (f.stamp, f.path))
        runs += [merge(g) for g in _generations(group, keep_reruns)]
    _label(runs)
    _relabel(runs, labels or ())
    return _order(runs, order or ())


def read_runs(paths: Sequence[str], labels: Sequence[str] | None = None, order: Sequence[str] | None = None, keep_reruns: bool = False) -> list[Run]:
    """The runs in the output folders (or results files) ``paths``, merged by model identity, labelled
    and ordered (see the module docstring)."""
    return make_runs(results_files(list(paths)), labels=labels, order=order, keep_reruns=keep_reruns)


def baseline(runs: list[Run], name: str | None = None) -> Run:
    """``--baseline``: the run it names, else the first in order."""
    return find(runs, name, "--baseline") if name else runs[0]
