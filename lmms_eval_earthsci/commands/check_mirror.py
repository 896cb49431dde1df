"""``lmms-eval-earthsci check-mirror DIR``: is a local mirror complete, at the pinned revisions, and are its
records valid? In seconds, without lmms-eval's task index.

For every task of ours whose Hub repo has a copy under ``DIR`` (``DIR/<org>/<name>``, the layout
``hf download --repo-type dataset <repo> --revision <pin> --local-dir DIR/<org>/<name>`` writes), it
loads the task's split exactly as the task does (same dataset name, ``data_files`` and split, through
:func:`core.data.prepare_load`) and runs the benchmark's record check on every record, as a run would
before inference. It reports per repo the revision the copy records (``.cache/huggingface/download``)
against our pin, and per task the rows and the invalid records. Exit status 0 when everything present is
valid and at its pin, 1 otherwise, 2 when the folder holds none of our repos.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import yaml

from lmms_eval_earthsci import TASKS_DIR, registry
from lmms_eval_earthsci.core import data
from lmms_eval_earthsci.yamlgen import task_yaml_paths


class _Loader(yaml.SafeLoader):
    pass


def _function(loader, node):
    dotted = loader.construct_scalar(node)
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


_Loader.add_constructor("!function", _function)


def _load(path: str) -> dict:
    with open(path) as f:
        cfg = yaml.load(f, Loader=_Loader) or {}
    include = cfg.pop("include", None)
    if include:
        base = _load(os.path.join(os.path.dirname(path), include))
        base.update(cfg)
        cfg = base
    return cfg


def task_configs() -> dict[str, dict]:
    """Every task YAML of ours and of every registered benchmark (groups left out), includes merged,
    ``!function`` tags resolved."""
    out = {}
    for task, path in task_yaml_paths().items():
        cfg = _load(path)
        if isinstance(cfg.get("task"), str):
            out[task] = cfg
    return out


def group_members() -> dict[str, list[str]]:
    """Our group YAMLs (and every registered benchmark's): group -> its tasks and groups."""
    out = {}
    for root in [TASKS_DIR, *registry.external_task_dirs()]:
        for base, _, names in sorted(os.walk(root)) if root and os.path.isdir(root) else ():
            for name in sorted(n for n in names if n.endswith(".yaml")):
                cfg = _load(os.path.join(base, name))
                members = cfg.get("task")
                if isinstance(cfg.get("group"), str) and isinstance(members, list):
                    out.setdefault(cfg["group"], [m if isinstance(m, str) else str(m.get("task") or m.get("group") or "") for m in members])
    return out


def _check_task(cfg: dict, kwargs: dict, local: str) -> tuple[int, list[str]]:
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only when a mirror is checked

    name = cfg.get("dataset_name")
    split = cfg.get("test_split") or cfg.get("validation_split")
    ds = datasets.load_dataset(local, name, split=split, **kwargs)
    if cfg.get("process_docs") is not None:
        ds = cfg["process_docs"](ds)
    check = getattr(cfg.get("process_results"), "record_check", None)
    if check is None:
        return len(ds), []
    task_kwargs = (cfg.get("lmms_eval_specific_kwargs") or {}).get("default", {})
    return len(ds), [f"{exc} [row {i}]" for i, exc in data.record_problems(ds, check, task_kwargs)]


def check_mirror(root: str, tasks: list[str] | None = None) -> tuple[int, str]:
    """(exit status, report text)."""
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only when a mirror is checked

    datasets.disable_progress_bars()
    root = os.path.abspath(root)
    # files the rows name (MuSciClaims figures) are looked up in this mirror, as a run would
    with data.mirror_env(root):
        return _check_mirror(root, tasks)


def _check_mirror(root: str, tasks: list[str] | None) -> tuple[int, str]:
    configs = task_configs()
    if tasks:
        unknown = sorted(set(tasks) - set(configs))
        if unknown:
            return 2, f"unknown task(s): {', '.join(unknown)}"
        configs = {t: configs[t] for t in tasks}
    lines: list[str] = []
    status = 0
    repos: dict[str, list[str]] = {}
    for task, cfg in sorted(configs.items()):
        repos.setdefault(cfg["dataset_path"], []).append(task)
    present = 0
    seen_loads: dict[Any, tuple[int, list[str]]] = {}
    for repo, repo_tasks in sorted(repos.items()):
        local = os.path.join(root, *repo.split("/"))
        if not os.path.isdir(local):
            lines.append(f"- {repo}: not mirrored (expected {local}); {len(repo_tasks)} task(s) cannot run from this mirror")
            continue
        present += 1
        pins = {str((configs[t].get("dataset_kwargs") or {}).get("revision")) for t in repo_tasks} - {"None"}
        recorded = data.recorded_revision(local)
        fp = data.fingerprint(local)
        if pins and recorded and recorded not in pins:
            status = 1
            rev = f"revision {recorded} recorded, but our tasks pin {', '.join(sorted(pins))}: re-download at the pin"
        elif pins and not recorded:
            rev = f"no revision recorded (our pin: {', '.join(sorted(pins))}; `lmms-eval-earthsci mirror` records it)"
        else:
            rev = f"revision {recorded or 'not recorded'}" + (" (= our pin)" if pins and recorded in pins else "" if pins else " (no pin in our tasks)")
        lines.append(f"- {repo}: {fp['files']} files, {fp['bytes'] / 1e6:.1f} MB; {rev}")
        for task in repo_tasks:
            cfg = configs[task]
            kwargs = {k: v for k, v in (cfg.get("dataset_kwargs") or {}).items() if k in ("data_files",)}
            key = (repo, cfg.get("dataset_name"), str(kwargs), cfg.get("test_split"), cfg.get("process_results"), str(cfg.get("lmms_eval_specific_kwargs")))
            try:
                if key not in seen_loads:
                    _, load_kwargs, _ = data.prepare_load(local, kwargs)
                    seen_loads[key] = _check_task(cfg, load_kwargs, local)
                rows, problems = seen_loads[key]
            except Exception as exc:  # a file missing or unreadable: say which task and why
                status = 1
                lines.append(f"  - {task}: cannot be loaded: {type(exc).__name__}: {exc}")
                continue
            if problems:
                status = 1
                lines.append(f"  - {task}: {rows} records, {len(problems)} invalid:")
                lines += [f"      {p}" for p in problems[:50]] + ([f"      ... {len(problems) - 50} more"] if len(problems) > 50 else [])
            else:
                lines.append(f"  - {task}: {rows} records, all valid")
    if not present:
        return 2, f"{root} holds none of our repos ({', '.join(sorted(repos))})"
    head = f"mirror {root}: {'OK' if status == 0 else 'PROBLEMS FOUND'}"
    return status, "\n".join([head, *lines])
