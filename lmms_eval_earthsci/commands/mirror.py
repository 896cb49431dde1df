"""``lmms-eval-earthsci mirror DIR``: a local mirror of our datasets in one command, for the login node of a
cluster whose compute nodes have no internet.

For every registered benchmark (or those ``--benchmarks`` names, or the repos ``--tasks`` needs) it
downloads each Hub repo its tasks read into ``DIR/<org>/<name>`` (the layout ``EARTHSCI_DATA_MIRROR``
reads), with ``huggingface_hub.snapshot_download``:

- at the revision the task YAMLs pin (``dataset_kwargs.revision``), else at the Hub's ``main``, whose
  commit is recorded (``.cache/huggingface/download`` in the copy, read back by ``check-mirror`` and by a
  run, and ``DIR/earthsci_mirror.json``);
- only the files the tasks read: a task's ``data_files`` patterns when every task of the repo has them
  (SciFIBench's four splits, not its legacy files; MAC's CSVs), with the README and the repo files its
  rows name (a benchmark's ``repo_files``: MAC's covers); otherwise the whole repo;
- honouring ``HF_TOKEN`` and ``HF_ENDPOINT`` as ``huggingface_hub`` does; resumable: a second call fetches
  only what is missing or changed, and an interrupted one leaves a partial file only under
  ``.cache/huggingface/download/*.incomplete``, never at its name.

Then the steps that make what some tasks read but no repo holds: a task names its step in its
``lmms_eval_specific_kwargs`` (``earthsci_mirror_step: "module:function"``; MAC's text-free tasks name the
OCR pass that paints their covers, :mod:`..evals.mac.textfree`). Each step runs once for the selected
tasks that name it, after their repos are fetched: ``function(root, tasks, configs)`` returns ``{"ok",
"line", "manifest"}`` (what it made, recorded under ``steps`` in ``DIR/earthsci_mirror.json``) and
``"missing"`` when what it needs is not installed here. A step with something missing is a failure when
``--tasks`` named its tasks; otherwise one line says so and its tasks are left out of the check. A step
caches what it made: a second call redoes only what is missing or changed.

A repo the Hub refuses is one line naming the repo, the file, the revision and the fix; the other repos
are still fetched. At the end it runs ``check-mirror`` on the result and prints the one line to use on the
compute nodes: ``export EARTHSCI_DATA_MIRROR=DIR``. Exit status 0 when every repo is there and valid, 1
when a repo failed or a record is invalid, 2 when the Hub cannot be reached or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.check_mirror import check_mirror, group_members, task_configs
from lmms_eval_earthsci.core import data
from lmms_eval_earthsci.core.benchmark import resolve_ref
from lmms_eval_earthsci.core.data import hub

MANIFEST = "earthsci_mirror.json"
# a task's lmms_eval_specific_kwargs key naming the step ("module:function") that makes what it reads
STEP_KWARG = "earthsci_mirror_step"


class MirrorUsageError(ValueError):
    """Arguments naming no benchmark or task of ours; the message lists the valid ones."""


@dataclass
class RepoPlan:
    repo: str
    revision: str | None  # the tasks' pin, or None: the Hub's main (its commit is recorded)
    patterns: list[str] | None  # files to fetch (fnmatch); None: the whole repo
    tasks: list[str] = field(default_factory=list)


def _data_file_patterns(data_files) -> list[str] | None:
    if data_files is None:
        return None
    if isinstance(data_files, str):
        return [data_files]
    if isinstance(data_files, dict):
        return [p for v in data_files.values() for p in (_data_file_patterns(v) or [])]
    return [str(p) for p in data_files]


def select_tasks(configs: dict[str, dict], tasks: list[str] | None, benchmarks: list[str] | None) -> list[str]:
    """The tasks the arguments name (groups expanded), or every task of the named (default: every)
    registered benchmark."""
    if tasks:
        groups = group_members()
        out, unknown = [], []

        def add(name: str, depth: int = 0) -> None:
            if name in configs:
                out.append(name)
            elif name in groups and depth < 10:
                for member in groups[name]:
                    add(member, depth + 1)
            else:
                unknown.append(name)

        for name in tasks:
            add(name)
        if unknown:
            raise MirrorUsageError(f"--tasks: no task or group of ours is called {', '.join(unknown)}")
        return list(dict.fromkeys(out))
    names = [b.name for b in registry.benchmarks()]
    chosen = benchmarks or names
    unknown = [b for b in chosen if b not in names]
    if unknown:
        raise MirrorUsageError(f"--benchmarks: {', '.join(unknown)} is not a registered benchmark (registered: {', '.join(names)})")
    return [t for t in configs if getattr(registry.benchmark_of(t), "name", None) in chosen]


def plan(tasks: list[str] | None = None, benchmarks: list[str] | None = None, configs: dict[str, dict] | None = None) -> list[RepoPlan]:
    """One :class:`RepoPlan` per Hub repo the selected tasks read."""
    configs = task_configs() if configs is None else configs
    by_repo: dict[str, list[str]] = {}
    for t in select_tasks(configs, tasks, benchmarks):
        by_repo.setdefault(str(configs[t]["dataset_path"]), []).append(t)
    plans = []
    for repo, repo_tasks in sorted(by_repo.items()):
        kwargs = [configs[t].get("dataset_kwargs") or {} for t in repo_tasks]
        pins = sorted({str(k["revision"]) for k in kwargs if k.get("revision")})
        if len(pins) > 1:
            raise MirrorUsageError(f"{repo}: our tasks pin {len(pins)} revisions ({', '.join(pins)}); one copy can hold one")
        files = [_data_file_patterns(k.get("data_files")) for k in kwargs]
        patterns = None
        if all(f is not None for f in files):
            named = [p for t in repo_tasks for p in getattr(registry.benchmark_of(t), "repo_files", {}).get(repo, ())]
            patterns = list(dict.fromkeys(["README.md", *(p for f in files for p in f), *named]))
        plans.append(RepoPlan(repo, pins[0] if pins else None, patterns, repo_tasks))
    return plans


def _refusal_line(exc: BaseException, p: RepoPlan) -> str:
    refused = data.hub_refusal(exc, p.repo, p.revision)
    if refused is not None:
        return str(refused).replace(", or use a local mirror (EARTHSCI_DATA_MIRROR)", "").replace("; or use a local mirror (EARTHSCI_DATA_MIRROR)", "")
    return f"{p.repo} at {p.revision or 'main'}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def fetch(p: RepoPlan, root: str) -> tuple[bool, str | None, str]:
    """Download one repo into ``root/<org>/<name>``: (fetched, the commit the copy records, a line saying
    what was fetched or why not)."""
    from huggingface_hub import snapshot_download  # noqa: PLC0415 - huggingface_hub: the command's help and usage errors need none of it

    dest = os.path.join(root, *p.repo.split("/"))
    before = data.fingerprint(dest) if os.path.isdir(dest) else {"files": 0, "bytes": 0}
    t0 = time.time()
    try:
        snapshot_download(p.repo, repo_type="dataset", revision=p.revision, local_dir=dest, allow_patterns=p.patterns, max_workers=4)
    except Exception as exc:  # one line, and the other repos are still fetched
        return False, None, _refusal_line(exc, p)
    commit = data.recorded_revision(dest)
    fp = data.fingerprint(dest)
    what = "the whole repo" if p.patterns is None else f"{len(p.patterns)} pattern(s)"
    at = f"at {p.revision[:12]} (pinned)" if p.revision else f"at main = {commit[:12] if commit else 'an unrecorded commit'} (not pinned: recorded)"
    return True, commit, f"{p.repo} {at}: {fp['files']} files, {fp['bytes'] / 1e6:.1f} MB ({what}; {fp['files'] - before['files']:+d} files) in {time.time() - t0:.1f} s"


def mirror_steps(configs: dict[str, dict], tasks: list[str]) -> dict[str, list[str]]:
    """``{step ("module:function"): the tasks of ``tasks`` that name it}``, in task order."""
    out: dict[str, list[str]] = {}
    for t in tasks:
        ref = ((configs[t].get("lmms_eval_specific_kwargs") or {}).get("default") or {}).get(STEP_KWARG)
        if ref:
            out.setdefault(str(ref), []).append(t)
    return out


def run_steps(root: str, configs: dict[str, dict], tasks: list[str], manifest: dict, required: bool, out=None) -> tuple[list[str], list[str]]:
    """Run the steps ``tasks`` name; returns (the failed steps, the tasks a step left unready)."""
    out = out or sys.stdout
    failed, unready = [], []
    for ref, step_tasks in mirror_steps(configs, tasks).items():
        result = resolve_ref(ref)(root, step_tasks, configs)
        if result.get("ok"):
            manifest.setdefault("steps", {})[ref] = result.get("manifest")
            print(f"  {result['line']}", file=out, flush=True)
            continue
        unready += step_tasks
        if result.get("missing") and not required:
            print(f"  {result['line']} (left out of the check; with --tasks naming them this is a failure)", file=out, flush=True)
        else:
            failed.append(ref)
            print(f"lmms-eval-earthsci mirror: {result['line']}", file=sys.stderr, flush=True)
    return failed, unready


def make_mirror(root: str, tasks: list[str] | None = None, benchmarks: list[str] | None = None, out=sys.stdout) -> int:
    """Fetch, run the steps, record, check; returns the exit status (module docstring)."""
    configs = task_configs()
    plans = plan(tasks, benchmarks, configs)
    state, seen = hub.state()
    if state != "up":
        why = "HF_HUB_OFFLINE is set" if state == "offline" else f"the Hugging Face Hub is {state} ({seen})"
        print(f"lmms-eval-earthsci mirror: {why}: run it on a machine that reaches the Hub (HF_ENDPOINT for another endpoint)", file=sys.stderr)
        return 2
    root = os.path.abspath(root)
    os.makedirs(root, exist_ok=True)
    n_tasks = sum(len(p.tasks) for p in plans)
    print(f"mirror {root}: {len(plans)} repo(s) for {n_tasks} task(s)", file=out, flush=True)
    manifest_path = os.path.join(root, MANIFEST)
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        manifest = {"repos": {}}
    failed = []
    for p in plans:
        ok, commit, line = fetch(p, root)
        if not ok:
            failed.append(p)
            print(f"lmms-eval-earthsci mirror: {line}", file=sys.stderr, flush=True)
            continue
        manifest["repos"][p.repo] = {"pin": p.revision, "commit": commit, "patterns": p.patterns, "tasks": p.tasks, "fetched": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        print(f"  {line}", file=out, flush=True)
    fetched = [t for p in plans if p not in failed for t in p.tasks]
    failed_steps, unready = run_steps(root, configs, fetched, manifest, required=bool(tasks), out=out)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    checked = [t for t in fetched if t not in unready]
    status = 1 if failed or failed_steps else 0
    if checked:
        check_status, text = check_mirror(root, checked)
        status = max(status, 1 if check_status else 0)
        print(text.splitlines()[0] if check_status == 0 else text, file=out, flush=True)
    if failed:
        print(f"{len(failed)} repo(s) not fetched: {', '.join(p.repo for p in failed)} (see above); call again to resume", file=sys.stderr)
    if failed_steps:
        print(f"{len(failed_steps)} step(s) failed: {', '.join(failed_steps)} (see above); call again to resume", file=sys.stderr)
    if status == 0:
        print(f"on the compute nodes:\nexport EARTHSCI_DATA_MIRROR={root}", file=out, flush=True)
    return status


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="lmms-eval-earthsci mirror", description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", metavar="DIR", help="the mirror's root (created; what EARTHSCI_DATA_MIRROR will point at)")
    ap.add_argument("--benchmarks", default=None, help="comma-separated benchmarks (default: every registered one)")
    ap.add_argument("--tasks", default=None, help="comma-separated tasks or groups: only the repos they read")
    ap.add_argument("--verbose", action="store_true", help="huggingface_hub's progress bars")
    a = ap.parse_args(argv)
    if not a.verbose:
        from huggingface_hub.utils import disable_progress_bars  # noqa: PLC0415 - huggingface_hub, only once the arguments are valid

        disable_progress_bars()
    split = lambda v: [x.strip() for x in v.split(",") if x.strip()] if v else None  # noqa: E731
    try:
        return make_mirror(a.dir, split(a.tasks), split(a.benchmarks))
    except MirrorUsageError as exc:
        print(f"lmms-eval-earthsci mirror: {exc}", file=sys.stderr)
        return 2
