"""``lmms-eval-earthsci rescore``: score a finished run's responses again, without the model.

    lmms-eval-earthsci rescore RUN_DIR --out NEW_DIR [--tasks T,...] [--force] [-- LMMS_EVAL_ARGS...]
    lmms-eval-earthsci rescore --from emma-release FILE --out NEW_DIR [--set mini|full]
    lmms-eval-earthsci rescore --from msearth-release FILE --out NEW_DIR [--tasks msearth_open]

``RUN_DIR`` is an lmms-eval ``--output_path`` of a run made with ``--log_samples`` or ``--predict_only``
(which logs the responses and skips scoring). The same tasks run again through the real lmms-eval
pipeline, with our scoring as a normal run has it (filters, the judge pass and its cache,
``process_results``, aggregation, groups), but the "model" is :class:`Replay`: it answers every request
with the response the run logged for that doc. The output is lmms-eval's own (results JSON, samples
JSONL), so ``report`` and anything else that reads lmms-eval output read it; the results JSON keeps the
original run's model name and arguments and gains a ``rescore`` record (source, forced version changes).

Checks, each naming the task and doc and stopping before anything is scored:
- a doc of the task that the run has no response for, or a logged doc the task no longer has;
- the logged prompt (``input``) differs from the prompt the task builds now for that doc_id (another
  dataset revision, another doc order); a different ``target`` is checked once the run is scored;
- the run's task version (``versions`` in its results) differs from the installed one: refused unless
  ``--force``, which records the change.

``--from`` imports the authors' released outputs instead of an lmms-eval run (each benchmark's
``importers``): the benchmark turns its release format into the same replay plan, matched by the
dataset's own id.

Judging is rescore's whole job: it ends as a run whose judge failed does (:mod:`..core.judge.failures`:
the failure counts by cause, the endpoint and its setting, the command that finishes the job, here the
same rescore again) and exits :data:`JUDGE_FAILED` when any doc it was asked to judge got no verdict (the
judge failed, or none is configured); a task of ours that did not run ends it with its line and
:mod:`..core.upstream.ledger`'s exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import glob
import json
import os
import shlex
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.core.adapter import replay
from lmms_eval_earthsci.core.adapter.harness import group_leaves, output_to, run_lmms_eval
from lmms_eval_earthsci.core.benchmark import resolve_ref
from lmms_eval_earthsci.core.data import MIRROR_ENV, DataRouteError, data_route, mirror_env
from lmms_eval_earthsci.core.data.releases import RescoreError, read_jsonl, read_records, release_name, release_plan_dict
from lmms_eval_earthsci.core.judge import failures as judge_failures
from lmms_eval_earthsci.core.prompts.messages import note_chat
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.yamlgen import task_yaml_paths

__all__ = ["RescoreError", "read_jsonl", "read_records", "release_name", "release_plan_dict", "rescore", "main"]

REPLAY_MODEL = "earthsci_replay"
PLAN_FILE = "rescore_plan.json"
#: the exit status of a rescore that could not judge every doc it was asked to (results written)
JUDGE_FAILED = 4


def importers() -> dict[str, str]:
    """--from FORMAT -> "module:function(path, options) -> plan", from every registered benchmark."""
    return {fmt: ref for b in registry.benchmarks() for fmt, ref in b.importers.items()}


# --------------------------------------------------------------------------- reading a run


def _results_files(path: str) -> list[str]:
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise RescoreError(f"{path}: no such folder")
    return sorted(glob.glob(os.path.join(path, "**", "*_results.json"), recursive=True))


def responses_of(sample: dict) -> list[str]:
    """The raw responses lmms-eval logged for one doc: ``resps`` (kept only when it differs from the
    filtered one, e.g. reasoning tags stripped) or else ``filtered_resps``; several for ``--repeats``."""
    value = sample["resps"] if "resps" in sample else sample.get("filtered_resps")
    while isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise RescoreError(f"doc {sample.get('doc_id')}: logged responses are not text ({str(value)[:80]!r})")


def plan_from_run(run: str, tasks: Sequence[str] | None = None) -> dict:
    """The replay plan of an lmms-eval output folder (or one ``*_results.json``)."""
    found = _results_files(run)
    if not found:
        raise RescoreError(f"{run}: no *_results.json inside (was it an lmms-eval --output_path, and did the run finish?)")
    if len(found) > 1:
        raise RescoreError(f"{run}: {len(found)} runs inside; give one results file:\n  " + "\n  ".join(found))
    path = found[0]
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
    except (OSError, ValueError) as exc:
        raise RescoreError(f"{path}: not a readable lmms-eval results JSON ({exc})") from exc
    configs = results.get("configs") or {}
    if not configs:
        raise RescoreError(f"{path}: records no task configs; not an lmms-eval results file")
    ours = {t for t in configs if registry.benchmark_of(t) is not None or _is_ours(configs[t])}
    groups = {g: list(ts) for g, ts in (results.get("group_subtasks") or {}).items() if ts}
    wanted = list(tasks) if tasks else _run_tasks(results, groups, configs)
    unknown = [t for t in wanted if t not in configs and t not in groups]
    if unknown:
        raise RescoreError(f"{path}: the run has no task or group {', '.join(unknown)} (it ran {', '.join(sorted(set(configs) | set(groups)))})")
    # what lmms-eval is asked for again: the run's own task and group names, ours only, so that its groups
    # are aggregated again as it aggregated them; the replay answers for their leaf tasks
    wanted = [t for t in wanted if set(group_leaves(t, groups)) <= ours]
    if not wanted:
        raise RescoreError(f"{path}: none of the tasks asked for are ours (ours in the run: {', '.join(sorted(ours)) or 'none'})")
    leaf = list(dict.fromkeys(leaf for t in wanted for leaf in group_leaves(t, groups)))
    stamp = os.path.basename(path)[: -len("_results.json")]
    entries, versions = {}, {}
    for task in leaf:
        sp = os.path.join(os.path.dirname(path), f"{stamp}_samples_{task}.jsonl")
        if not os.path.exists(sp):
            raise RescoreError(f"{task}: no samples file {sp} (rescore needs a run made with --log_samples or --predict_only)")
        by_doc = {}
        for s in read_jsonl(sp):
            if "doc_id" not in s:
                raise RescoreError(f"{sp}: a sample without doc_id")
            by_doc[str(s["doc_id"])] = {"responses": responses_of(s), "input": s.get("input"), "target": s.get("target"), "route": _route(s), "tokens": s.get("token_counts"),
                                     **({"figures": s["earthsci_figures"]} if s.get("earthsci_figures") else {})}
        entries[task] = by_doc
        versions[task] = results.get("versions", {}).get(task, (configs[task].get("metadata") or {}).get("version"))
    cfg = results.get("config") or {}
    cli = cfg.get("resolved_cli_args") or {}
    return {
        "source": {"kind": "lmms-eval run", "path": os.path.abspath(path)},
        "key": "doc_id",
        "tasks": ",".join(wanted),
        "entries": entries,
        "versions": versions,
        "limit": cfg.get("limit"),
        "offset": cfg.get("offset") or 0,
        "repeats": cli.get("repeats") or 1,
        "include_path": cli.get("include_path"),
        "data": {t: (configs[t].get("metadata") or {}).get("earthsci_data") for t in leaf},
        # what the run's model received (its layout probe): the rescored run records the same verdict
        "layout": {t: (configs[t].get("metadata") or {}).get("earthsci_layout") for t in leaf},
        # at what size its figures reached the model: the same record
        "budget": {t: (configs[t].get("metadata") or {}).get("earthsci_budget") for t in leaf},
        # a --predict_only run logs no per-doc records: the backend says how every doc was prompted
        "route": "chat" if "(chat)" in str(cfg.get("model_backend") or "") else "simple",
        "model": {"model": cfg.get("model"), "model_args": cfg.get("model_args"), "model_name": results.get("model_name") or "rescored"},
    }


def _run_tasks(results: dict, groups: dict[str, list[str]], configs: dict) -> list[str]:
    """The task and group names the run was started with (``--tasks``); where lmms-eval did not record
    them, the outermost groups and the tasks in no group."""
    cli = ((results.get("config") or {}).get("resolved_cli_args") or {}).get("tasks")
    if isinstance(cli, str) and cli.strip():
        names = [t.strip() for t in cli.split(",") if t.strip()]
        if all(t in configs or t in groups for t in names):
            return names
    inner = {t for ts in groups.values() for t in ts}
    return [g for g in groups if g not in inner] + [t for t in configs if t not in inner and t not in groups]


def _route(sample: dict) -> str | None:
    """How the run prompted the doc (``chat`` / ``simple``), from its per-doc records, so the rescored
    records say the same (the replay itself builds no prompt)."""
    for v in sample.values():
        if isinstance(v, dict) and v.get("route") in ("chat", "simple"):
            return v["route"]
    return None


def _is_ours(config: dict) -> bool:
    """A task of ours under another name (a built MAC snapshot): its hooks are our package's."""
    return any(isinstance(v, str) and "lmms_eval_earthsci" in v for v in (config.get("process_results"), config.get("doc_to_text")))


def plan_from_release(fmt: str, path: str, options: dict) -> dict:
    table = importers()
    if fmt not in table:
        raise RescoreError(f"--from {fmt}: unknown format (known: {', '.join(table)})")
    if not os.path.isfile(path):
        raise RescoreError(f"{path}: no such file")
    plan = resolve_ref(table[fmt])(path, options)
    plan["source"] = {"kind": fmt, "path": os.path.abspath(path)}
    plan.setdefault("versions", {})
    return plan


# --------------------------------------------------------------------------- versions


def current_versions(tasks: Sequence[str], include_path: str | None = None) -> dict[str, Any]:
    """The installed ``metadata.version`` of each task: read from its YAML (includes resolved, nothing
    imported) under our task folder and the run's ``--include_path`` (a built MAC snapshot)."""
    where = task_yaml_paths([p for p in str(include_path or "").split(",") if p])
    out = {}
    for t in tasks:
        if t not in where:
            raise RescoreError(f"task {t} is not installed (our tasks, or the run's --include_path for a built MAC snapshot)")
        out[t] = (replay.task_config(where[t]).get("metadata") or {}).get("version")
    return out


def version_changes(plan: dict, installed: dict) -> dict[str, dict]:
    return {t: {"run": plan["versions"].get(t), "installed": v} for t, v in installed.items() if plan["versions"].get(t) is not None and str(plan["versions"].get(t)) != str(v)}


# --------------------------------------------------------------------------- the replay model


@dataclass
class ReplayLog:
    """What the replay of one plan saw, for the driver's checks after lmms-eval returns: the docs that do not
    match the plan (``problems``), the responses served per (task, doc key), the prompts that changed
    (``--force``), lmms-eval's lines and exit status."""

    problems: list[str] = field(default_factory=list)
    served: Counter = field(default_factory=Counter)
    prompt_changes: list[str] = field(default_factory=list)
    run_lines: list[str] = field(default_factory=list)
    run_status: int = 0


def replay_log(plan_path: str) -> ReplayLog:
    """The log of the replay of the plan at ``plan_path`` (the replay model and the driver share it through
    the runtime: lmms-eval builds the model from its arguments)."""
    return current().for_run(("rescore_replay", plan_path), ReplayLog)


@functools.cache  # one class: lmms-eval's registry and the driver see the same
def _make_replay():
    lmms = replay.model_base()

    class Replay(lmms):
        """An lmms-eval "model" that answers each request with the response a plan holds for its doc."""

        is_simple = True

        def __init__(self, plan: str, model_name: str | None = None, force: str = "0", **kwargs) -> None:
            super().__init__()
            with open(plan, encoding="utf-8") as f:
                self.plan = json.load(f)
            self.force = str(force) in ("1", "True", "true")
            self.task_dict = {}
            self.replayed = replay_log(plan)

        def generate_until(self, requests) -> list[str]:
            problems, out, seen = [], [], Counter()
            for req in requests:
                ctx, _gen_kwargs, _visual, doc_id, task, split = req.args[:6]
                entries = self.plan["entries"].get(task)
                # the doc is fetched (its images decoded) only when needed, and once
                doc = None if self.plan["key"] == "doc_id" else self.task_dict[task][split][doc_id]
                key = str(doc_id) if doc is None else str(doc.get(self.plan["key"]))
                entry = None if entries is None else entries.get(key)
                where = f"{task} doc_id {doc_id}" + ("" if self.plan["key"] == "doc_id" else f" ({self.plan['key']} {key})")
                if entry is None:
                    problems.append(f"{where}: no response in {self.plan['source']['path']}")
                    out.append("")
                    continue
                if entry.get("fields"):
                    doc = self.task_dict[task][split][doc_id] if doc is None else doc
                    for field, want in entry["fields"].items():
                        if str(doc.get(field)).strip() != str(want).strip():
                            problems.append(f"{where}: {field} is {str(want)[:60]!r} in {self.plan['source']['path']}, {str(doc.get(field))[:60]!r} in the dataset")
                if entry.get("input") is not None and isinstance(ctx, str) and entry["input"] != ctx:
                    if self.force:
                        self.replayed.prompt_changes.append(where)
                    else:
                        problems.append(f"{where}: the logged prompt differs from the one the task builds now (another dataset revision or doc order?): logged {entry['input'][:60]!r}, now {ctx[:60]!r}")
                if (entry.get("route") or self.plan.get("route")) == "chat":
                    note_chat(self.task_dict[task][split][doc_id] if doc is None else doc)
                i = seen[(task, key)]
                seen[(task, key)] += 1
                responses = entry["responses"]
                if i >= len(responses):
                    problems.append(f"{where}: {i + 1} responses asked (--repeats), {len(responses)} logged")
                    out.append("")
                    continue
                tokens = entry.get("tokens") or []
                counts = tokens[i] if i < len(tokens) and isinstance(tokens[i], dict) else None
                # the run's token counts travel with the response (lmms-eval's (text, counts) output), so
                # the rescored samples and the judge summary's model_tokens say what the model used
                out.append((responses[i], counts) if counts else responses[i])
            self.replayed.served.update(seen)
            # every request of a type comes in this one call: a logged doc no task asked for is known now,
            # before anything is scored
            asked = {t for t, _ in seen}
            for t in sorted(asked):
                missing = [k for k in self.plan["entries"].get(t, {}) if (t, k) not in seen]
                problems += [f"{t} {self.plan['key']} {k}: in {self.plan['source']['path']} but not a doc of the task now" for k in missing[:20]]
            if problems:
                self.replayed.problems.extend(problems)
                raise RescoreError(f"{len(problems)} doc(s) do not match {self.plan['source']['kind']}:\n  " + "\n  ".join(problems[:20]) + ("\n  ..." if len(problems) > 20 else ""))
            return out

        def generate_until_multi_round(self, requests) -> list[str]:
            return self.generate_until(requests)

        def earthsci_layout(self, task: str) -> dict | None:
            """The layout verdict the replayed run recorded for ``task`` (None: it recorded none)."""
            return (self.plan.get("layout") or {}).get(task)

        def earthsci_budget(self, task: str) -> dict | None:
            """The figure budget the replayed run recorded for ``task`` (None: it recorded none)."""
            return (self.plan.get("budget") or {}).get(task)

        def earthsci_figures(self, task: str, doc_id: int) -> list | None:
            """The sizes the replayed run recorded for the figures of ``task``'s doc ``doc_id`` (None: none)."""
            if self.plan["key"] != "doc_id":
                return None
            return ((self.plan["entries"].get(task) or {}).get(str(doc_id)) or {}).get("figures")

        def loglikelihood(self, requests):
            raise RescoreError("rescore replays generated responses; loglikelihood tasks are not ours")

    return Replay


def __getattr__(name: str):
    # ``lmms_eval_earthsci.commands.rescore.Replay`` is the class path lmms-eval's registry imports
    if name == "Replay":
        return _make_replay()
    raise AttributeError(name)


def _register_replay() -> None:
    try:
        replay.register_model(REPLAY_MODEL, "lmms_eval_earthsci.commands.rescore.Replay")
    except replay.NoModelRegistry as exc:
        raise RescoreError(f"rescore needs lmms-eval >= 0.7.3 (its model registry): {exc}") from exc


# --------------------------------------------------------------------------- the driver


def _new_results(out: str, before: set[str]) -> str | None:
    fresh = [p for p in _results_files(out) if p not in before] if os.path.isdir(out) else []
    return max(fresh, key=os.path.getmtime) if fresh else None


def rescore(plan: dict, out: str, force: bool = False, extra: Sequence[str] = (), log: str | None = None) -> tuple[str, dict]:
    """Run lmms-eval on the plan's tasks with the replay model; returns (results path, rescore record).
    ``log``: lmms-eval's output (and the judge pass's) goes to this file instead of the terminal."""
    tasks = plan["tasks"].split(",")
    leaf = list(plan["entries"])
    installed = current_versions(leaf, plan.get("include_path"))
    changes = version_changes(plan, installed)
    if changes and not force:
        lines = [f"{t}: run {c['run']}, installed {c['installed']}" for t, c in changes.items()]
        raise RescoreError("the run was scored by another version of these tasks (their scores may not compare):\n  " + "\n  ".join(lines) + "\n--force rescores anyway and records the change")
    try:
        route = data_route(plan.get("data") or {})
    except DataRouteError as exc:
        raise RescoreError(str(exc)) from exc
    os.makedirs(out, exist_ok=True)
    plan_path = os.path.join(out, PLAN_FILE)
    with open(plan_path, "w", encoding="utf-8") as f:
        json.dump(plan, f, ensure_ascii=False)
    _register_replay()
    current().resources("rescore_replay")  # an earlier rescore's log is forgotten
    replayed = replay_log(plan_path)
    before = set(_results_files(out))
    model_args = f"plan={plan_path},model_name={plan['model']['model_name']},force={int(force)}"
    argv = ["--model", REPLAY_MODEL, "--model_args", model_args, "--tasks", ",".join(tasks), "--output_path", out, "--log_samples"]
    if plan.get("limit") is not None:
        argv += ["--limit", str(int(plan["limit"]) if float(plan["limit"]).is_integer() else plan["limit"])]
    if plan.get("offset"):
        argv += ["--offset", str(plan["offset"])]
    if (plan.get("repeats") or 1) > 1:
        argv += ["--repeats", str(plan["repeats"])]
    if plan.get("include_path"):
        argv += ["--include_path", plan["include_path"]]
    argv += list(extra)
    started = time.time()
    try:
        with mirror_env(route.get(MIRROR_ENV)), (output_to(log) if log else contextlib.nullcontext()):
            replayed.run_status = run_lmms_eval(argv, replayed.run_lines)
    except SystemExit as exc:  # the run stopped (nothing left to run, no route to the data): its lines, here
        said = "\n".join(line for line in replayed.run_lines if line.strip())
        raise RescoreError(said or f"lmms-eval stopped (exit {exc.code}); see its log {'in ' + log if log else 'above'}") from exc
    if replayed.problems:
        raise RescoreError(f"{len(replayed.problems)} doc(s) do not match the {plan['source']['kind']}, nothing scored:\n  " + "\n  ".join(replayed.problems[:20]))
    path = _new_results(out, before)
    if path is None:
        said = "".join(f"\n{line}" for line in replayed.run_lines if line.strip())
        raise RescoreError(f"lmms-eval wrote no results under {out} (see its log {'in ' + log if log else 'above'}; rerun with -- --verbosity DEBUG){said}")
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    served = set(replayed.served)
    unserved = [f"{t} {plan['key']} {k}" for t, by in plan["entries"].items() for k in by if (t, k) not in served]
    mismatched = _target_mismatches(plan, path)
    record = {
        "source": plan["source"],
        "replayed_by": REPLAY_MODEL,
        "forced": bool(force),
        "version_changes": changes,
        "prompt_changes": replayed.prompt_changes,
        "not_in_tasks": unserved,
        "target_mismatches": mismatched,
        "seconds": round(time.time() - started, 1),
        "data": route,
    }
    results["rescore"] = record
    model = plan["model"]
    cfg = results.setdefault("config", {})
    cfg["model"], cfg["model_args"] = model.get("model") or cfg.get("model"), model.get("model_args") or cfg.get("model_args")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, ensure_ascii=False, default=str)
    return path, record


def _target_mismatches(plan: dict, results_path: str) -> list[str]:
    stamp = os.path.basename(results_path)[: -len("_results.json")]
    out = []
    for task, by in plan["entries"].items():
        sp = os.path.join(os.path.dirname(results_path), f"{stamp}_samples_{task}.jsonl")
        if not os.path.exists(sp):
            continue
        for s in read_jsonl(sp):
            entry = by.get(str(s["doc_id"])) if plan["key"] == "doc_id" else None
            if entry is not None and entry.get("target") is not None and str(entry["target"]) != str(s.get("target")):
                out.append(f"{task} doc_id {s['doc_id']}: target {entry['target']!r} in the run, {s.get('target')!r} now")
    return out


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="lmms-eval-earthsci rescore",
        description="Score a finished lmms-eval run's logged responses again (judge pass included), without the model; or import the authors' released outputs (--from).",
        epilog="Arguments after `--` go to lmms-eval (e.g. -- --verbosity DEBUG --process_docs_parallel 8). "
        "Exit status: 0 scored; 2 refused (nothing scored) or the run and the tasks disagree; 1-3 as lmms-eval's with our tasks (README, Exit codes); 4 some doc it was asked to judge got no verdict "
        "(the judge failed or none is configured: results written, the last lines say why and the command that finishes it).",
    )
    ap.add_argument("run", nargs="?", metavar="RUN_DIR", help="an lmms-eval --output_path of a --log_samples or --predict_only run (or one *_results.json)")
    ap.add_argument("more", nargs="*", metavar="FILE", help="--from emma-tts-release: more released files, scored together")
    ap.add_argument("--out", required=True, metavar="NEW_DIR", help="where the rescored results and samples go (lmms-eval's layout)")
    ap.add_argument(
        "--tasks", default=None,
        help="comma-separated tasks or groups of the run to rescore (default: the tasks and groups the run was started with, ours); with --from msearth-release, the task the file is for (default: from its records)",
    )
    ap.add_argument("--force", action="store_true", help="rescore a run of another task version (or whose prompts changed), recording it")
    ap.add_argument("--from", dest="fmt", default=None, choices=sorted(importers()), help="import the authors' released outputs from FILE instead of a run")
    ap.add_argument("--set", dest="subset", default="mini", choices=["mini", "full"], help="--from emma-release: EMMA-mini or full EMMA (default mini)")
    ap.add_argument("--verbose", action="store_true", help="lmms-eval's log on the terminal (by default it goes to NEW_DIR/rescore.log)")
    return ap


def _summary(results_path: str) -> str:
    """The rescored run's headline numbers, a line per task (as the report's headline picks them)."""
    from lmms_eval_earthsci.commands.report import read_runs  # noqa: PLC0415 - heavy (numpy and the report's modules, ~100 ms): after the run
    from lmms_eval_earthsci.commands.report.papers import fmt  # noqa: PLC0415 - the report's modules, after the run
    from lmms_eval_earthsci.commands.report.sections import headline_values  # noqa: PLC0415 - heavy (numpy and the report's modules, ~100 ms): after the run
    from lmms_eval_earthsci.core.scoring.circular import HEAD  # noqa: PLC0415 - after the run, with the report's modules

    (run,) = read_runs([results_path])
    head = [(t, m, value) for _, t, m, value in headline_values(run)]
    shown = {(t, m) for t, m, _ in head}  # a run of circular tasks alone: their circular_acc is the headline
    lines = [f"  {t} · {m}: {value}" for t, m, value in head]
    lines += [f"  {t} · {m}: {fmt(run.results[t].get(m))}" for t in sorted(run.results) if HEAD in run.results[t]
              for m in ("vanilla_acc", HEAD, "flip_rate", "circular_no_answer") if (t, m) not in shown]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    a = _parser().parse_args(argv)
    if not a.run:
        print("lmms-eval-earthsci rescore: give RUN_DIR (or FILE with --from)", file=sys.stderr)
        return 2
    files_scorer = resolve_ref(importers()[a.fmt]) if a.fmt else None
    if getattr(files_scorer, "scores_files", False):  # released files scored as they are (no replay run)
        try:
            missing = [p for p in [a.run, *a.more] if not os.path.isfile(p)]
            if missing:
                raise RescoreError(f"{missing[0]}: no such file")
            return int(files_scorer([a.run, *a.more], a.out, {"set": a.subset, "tasks": a.tasks}))  # type: ignore[misc]
        except RescoreError as exc:
            print(f"lmms-eval-earthsci rescore: {exc}", file=sys.stderr)
            return 2
    if a.more:
        print(f"lmms-eval-earthsci rescore: one RUN_DIR or FILE (got {len(a.more) + 1}); several files only with --from emma-tts-release", file=sys.stderr)
        return 2
    try:
        if a.fmt:
            plan = plan_from_release(a.fmt, a.run, {"set": a.subset, "tasks": a.tasks})
        else:
            plan = plan_from_run(a.run, a.tasks.split(",") if a.tasks else None)
        log = None if a.verbose else os.path.join(os.path.abspath(a.out), "rescore.log")
        if log:
            os.makedirs(a.out, exist_ok=True)
            open(log, "w").close()
        print(f"rescoring {len(plan['entries'])} task(s) of {plan['source'].get('path', a.run)} without the model" + (f" (lmms-eval's log: {log})" if log else ""), flush=True)
        path, record = rescore(plan, a.out, force=a.force, extra=extra, log=log)
    except RescoreError as exc:
        print(f"lmms-eval-earthsci rescore: {exc}", file=sys.stderr)
        return 2
    finally:
        judged = judge_lines(a, extra)  # taken in every case: nothing is said again at exit
    problems = record["not_in_tasks"] + record["target_mismatches"]
    replayed = replay_log(os.path.join(a.out, PLAN_FILE))
    print(f"rescored {sum(replayed.served.values())} responses of {len({t for t, _ in replayed.served})} task(s): {path}")
    print(_summary(path))
    for key, label in (("version_changes", "version changes (forced)"), ("prompt_changes", "prompts changed (forced)")):
        if record[key]:
            print(f"  {label}: {len(record[key])}")
    sys.stdout.flush()
    ending = [line for line in replayed.run_lines if line.strip()]
    if problems:
        ending.append("lmms-eval-earthsci rescore: the run and the tasks disagree:\n  " + "\n  ".join(problems[:20]))
    if ending or judged:
        print("\n".join(["", *ending, *judged]), file=sys.stderr)
    return 2 if problems else replayed.run_status or (JUDGE_FAILED if judged else 0)


def again(a: argparse.Namespace, extra: Sequence[str]) -> str:
    """The command that does this rescore again (paths absolute; the judge's verdicts already in its cache
    are not asked for again)."""
    cmd = ["lmms-eval-earthsci", "rescore"]
    if a.fmt:
        cmd += ["--from", a.fmt]
    cmd += [os.path.abspath(a.run), "--out", os.path.abspath(a.out)]
    if a.tasks:
        cmd += ["--tasks", a.tasks]
    if a.fmt and a.subset != "mini":
        cmd += ["--set", a.subset]
    if a.force:
        cmd.append("--force")
    if extra:
        cmd += ["--", *extra]
    return shlex.join(cmd)


def judge_lines(a: argparse.Namespace, extra: Sequence[str]) -> list[str]:
    """How a rescore ends when it could not judge every doc it was asked to, as a run whose judge failed
    ends (:mod:`..core.judge.failures`): per judged task the failures by cause, the endpoint and its
    setting (or that no judge is configured), then the command that finishes the job; none when every
    doc got a verdict. The judge's record is taken (nothing is printed again at exit)."""
    lines = judge_failures.failure_lines(no_judge=True)
    failed, _ = judge_failures.take()
    if not lines:
        return []
    lead = "once the judge answers, finish the job" if failed else "with a judge configured, finish the job"
    return lines + judge_failures.finish_lines(again(a, extra), lead)


if __name__ == "__main__":
    raise SystemExit(main())
