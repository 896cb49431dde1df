"""Writes the generated task YAMLs (variants and groups) of every registered benchmark, each under its task
folder (ours: ``task_yamls/<benchmark>/``), and the sweep groups ``earthsci`` / ``earthsci_nojudge``.

Variant YAMLs differ in dataset, subject, prompt strategy and their breakdown metrics, which come from
the benchmark's declared labels (its ``yamls.py``); writing them by hand would let the two drift. The
templates (``_template_yaml``) are written by hand. Run after changing a benchmark's breakdowns:

    python -m lmms_eval_earthsci.yamlgen          # rewrite
    python -m lmms_eval_earthsci.yamlgen --check  # exit 1 if a committed file is stale (tested)
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Iterable, Sequence

from lmms_eval_earthsci import TASKS_DIR, registry
from lmms_eval_earthsci._legacy import today_name
from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.yamls import group_yaml, versioned, yaml_name

# Comparability versions (inspect_evals' practice): a task's ``metadata.version`` moves whenever a change
# could move its scores (data handling, prompt, extraction, metric, judge prompt or parsing). Each
# benchmark declares its version (and any task that moved alone) in its ``benchmark.py``; it is written
# into every generated task and group YAML; lmms-eval records it in the results (``versions``,
# ``configs``); ``report`` shows it and warns when runs of different versions are compared; ``rescore``
# refuses a run of another version unless ``--force``. tests/core/scoring/test_scoring_versions.py fails when a
# task's scoring outputs on the fixtures change while its version stays: bump it, regenerate, then
# `python tests/core/scoring/test_scoring_versions.py --update`.
SUITE_VERSION = 1.0  # the sweep groups below


def version_of(name: str, bench: Benchmark) -> float:
    """The comparability version of task or group ``name`` of ``bench``."""
    return bench.task_versions.get(name, bench.version)


# One name for a sweep: the headline task of every benchmark of ours, and those of them that need no
# judge. No aggregate_metric_list: a mean across benchmarks would mean nothing (each reports its own).
def suite_tasks(nojudge: bool = False) -> tuple[str, ...]:
    return tuple(t for b in registry.builtin() for t in (b.suite_nojudge if nojudge else b.suite))


def earthsci_files() -> dict[str, str]:
    circular = [t for b in registry.builtin() for t in b.circular]
    return {
        "earthsci_circular.yaml": group_yaml("earthsci_circular", circular, alias="Earth & science benchmarks, every multiple-choice task asked once per rotation of its options (no cross-benchmark average)"),
        "earthsci.yaml": group_yaml("earthsci", suite_tasks(), alias="Earth & science benchmarks, the headline task of each (no cross-benchmark average)"),
        "earthsci_nojudge.yaml": group_yaml("earthsci_nojudge", suite_tasks(nojudge=True), alias="Earth & science benchmarks, headline tasks that need no judge (no cross-benchmark average)"),
    }


def all_files(benchmarks: Sequence[Benchmark] | None = None) -> dict[str, str]:
    """``{absolute path: YAML text}`` of every generated file: each benchmark's under its task folder,
    the sweep groups under ours."""
    out = {}
    for b in registry.benchmarks() if benchmarks is None else benchmarks:
        for rel, text in b.generated_yamls().items():
            out[os.path.join(b.yaml_dir, rel)] = versioned(text, version_of(yaml_name(text), b))
    if benchmarks is None:
        for rel, text in earthsci_files().items():
            out[os.path.join(TASKS_DIR, "earthsci", rel)] = versioned(text, SUITE_VERSION)
    return out


# --------------------------------------------------------------------------- reading task YAMLs back


_TASK_LINE = re.compile(r"^task: (\S+)$", re.M)
_AGGREGATION = re.compile(r"^  - metric: (\S+)\n    aggregation: !function (\S+)$", re.M)


def task_yaml_paths(extra_roots: Sequence[str] = ()) -> dict[str, str]:
    """``{task: its YAML}`` under our task folder, every registered benchmark's, then ``extra_roots`` (a
    run's ``--include_path``, e.g. a built MAC snapshot's tasks/)."""
    out: dict[str, str] = {}
    for root in [TASKS_DIR, *registry.external_task_dirs(), *extra_roots]:
        if not root or not os.path.isdir(root):
            continue
        for base, _, names in sorted(os.walk(root)):
            for name in sorted(names):
                if name.endswith(".yaml"):
                    path = os.path.join(base, name)
                    with open(path, encoding="utf-8") as f:
                        m = _TASK_LINE.search(f.read())
                    if m:
                        out.setdefault(m.group(1), path)
    return out


_GROUP_LINE = re.compile(r"^group:\s*([\w.-]+)\s*$", re.MULTILINE)


def our_names() -> set[str]:
    """Every task and group name our task folders (and registered benchmarks') define, read as text."""
    names = set(task_yaml_paths())
    for root in [TASKS_DIR, *registry.external_task_dirs()]:
        for base, _, files in sorted(os.walk(root)) if root and os.path.isdir(root) else ():
            for name in files:
                if name.endswith(".yaml"):
                    with open(os.path.join(base, name), encoding="utf-8") as f:
                        names.update(_GROUP_LINE.findall(f.read()))
    return names


def looks_ours_but_unknown(name: str, known: set[str] | frozenset[str]) -> str | None:
    """For a requested task name with one of our benchmarks' prefixes (``emma_...``) that is none of the
    tasks, groups or tags ``known``: the nearest of ours ("did you mean ..."), or how to list them; None
    for any other name (lmms-eval's own tasks, upstream ``emma``, files, wildcards)."""
    if not name or name in known or "*" in name or os.path.exists(name) or not any(b.owns(name) and name != b.name for b in registry.benchmarks()):
        return None
    return did_you_mean(name, our_names(), cutoff=0.6)


def did_you_mean(name: str, names: Iterable[str], cutoff: float) -> str:
    """"did you mean <the nearest of ``names``>?", or how to list every task when none is close."""
    near = difflib.get_close_matches(name, sorted(names), n=1, cutoff=cutoff)
    return f"did you mean {near[0]}?" if near else "`lmms-eval --tasks list` lists every task"


def ours_near(name: str) -> list[str]:
    """Our task or group names close to ``name``, a name that is none of ours (lmms-eval's own
    ``emma-mini``: ours is ``emma_mini``; its ``emma``: ours are ``emma_full`` and ``emma_mini``); empty
    when none is close."""
    ours = our_names()
    if not name or name in ours:
        return []
    norm = name.lower().replace("-", "_")
    if norm in ours:
        return [norm]
    near = difflib.get_close_matches(norm, sorted(ours), n=1, cutoff=0.85)
    if near:
        return near
    bench = next((b for b in registry.benchmarks() if b.name == norm), None)
    if bench is None:
        return []
    # a benchmark's own name: its top groups (one more name part)
    return sorted(t for t in {*bench.suite, *bench.demo_tasks} if t in ours and t.count("_") == norm.count("_") + 1)


def metric_aggregations(path: str) -> dict[str, str]:
    """``{metric: "module.function"}`` of a task YAML's ``metric_list`` (our generated layout), under
    today's module names (a snapshot written before the core moved names the old ones: ``_legacy``)."""
    with open(path, encoding="utf-8") as f:
        return {metric: today_name(dotted) for metric, dotted in _AGGREGATION.findall(f.read())}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in argv
    stale = []
    files = all_files()
    for path, text in sorted(files.items()):
        rel = os.path.relpath(path, TASKS_DIR) if path.startswith(TASKS_DIR + os.sep) else path
        current = open(path).read() if os.path.exists(path) else None
        if current == text:
            continue
        stale.append(rel)
        if not check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
    if check and stale:
        print("stale generated task YAMLs (run `python -m lmms_eval_earthsci.yamlgen`):\n  " + "\n  ".join(stale))
        return 1
    print(f"{'checked' if check else 'wrote'} {len(files)} files ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
