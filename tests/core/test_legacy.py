"""Module names from before a layout move that files on disk still name keep working (``_legacy``), and no
others: a MAC snapshot built by ``mac build`` before the moves (``tests/data/mac_snapshot_v0_1``) names
``lmms_eval_earthsci.mac.tasks.*`` and ``lmms_eval_earthsci.core.metrics.mean_present`` in its YAMLs; its
``!function`` paths resolve through lmms-eval's own YAML loader, and ``report`` looks the aggregations it names
up in the kernel registries. Results files name no module of ours. The other modules that left ``core``'s top
level import only under their new names. An old name is the same module object as the new one, never a
second copy."""

import glob
import importlib
import json
import os
import re
import subprocess
import sys

import pytest
from lmms_eval.utils import load_yaml_config

from lmms_eval_earthsci import _legacy
from lmms_eval_earthsci.core.scoring import metrics, stats
from lmms_eval_earthsci.evals.mac import kernels as mac_kernels
from lmms_eval_earthsci.evals.mac import tasks as mac_tasks
from lmms_eval_earthsci.yamlgen import metric_aggregations

PKG = "lmms_eval_earthsci"
CORE = f"{PKG}.core"
DATA = os.path.join(os.path.dirname(__file__), "..", "data")
SNAPSHOT_TASKS = os.path.join(DATA, "mac_snapshot_v0_1", "tasks")
KEPT = {f"{PKG}.mac": f"{PKG}.evals.mac", f"{CORE}.metrics": f"{CORE}.scoring.metrics"}
# what the contributors' README told a lab's benchmark to call at the end of its task module, until activate()
README_NAMED = {f"{CORE}.adapter.hooks": f"{CORE}.activation"}
# moved when the adapter was split (integration, hardening, model boundary) and the commands got their package:
# named in no file on disk and in no README a lab was told to follow
MOVED_UNNAMED = [f"{CORE}.adapter.{m}" for m in ("observe", "capture", "layout_probe", "budget", "interleave", "figures_seen", "passthrough")] + [
    f"{CORE}.prompts.layout", f"{PKG}.report", f"{PKG}.rescore", f"{PKG}.model_check", f"{PKG}.mirror_build", f"{PKG}.demo"]
# the other 23 modules that left core's top level in the move by concern: no file on disk names them
REMOVED = [
    *(f"{CORE}.{m}" for m in ("capture", "harness", "hooks", "interleave", "layout_probe", "observe", "passthrough", "patching", "run_status", "unavailable")),
    *(f"{CORE}.{m}" for m in ("circular", "extraction", "papers", "similarity", "stats", "textmetrics")),
    *(f"{CORE}.{m}" for m in ("hub", "releases", "repo_files", "layout", "messages", "judge_pass", "judge_failures")),
]


def _snapshot_function_paths() -> set[str]:
    paths = set()
    for path in glob.glob(os.path.join(SNAPSHOT_TASKS, "*")):
        with open(path, encoding="utf-8") as f:
            paths.update(re.findall(r"!function (lmms_eval_earthsci\.[\w.]+)", f.read()))
    return paths


def test_the_kept_names_are_those_an_old_snapshot_writes():
    """Its premise: every old module name a snapshot's YAMLs name is kept, and nothing else is."""
    assert _legacy.ALIASES == {**KEPT, **README_NAMED}
    old_modules = set()
    for path in _snapshot_function_paths():
        module = path.rpartition(".")[0]
        if importlib.util.find_spec(_legacy.today_name(module)).name != module:
            old_modules.add(next(old for old in KEPT if module == old or module.startswith(old + ".")))
    assert old_modules == set(KEPT)
    assert len(REMOVED) == 23 and not set(REMOVED) & set(KEPT)


@pytest.mark.parametrize("old", sorted(KEPT))
def test_a_kept_name_is_the_new_module(old):
    module = importlib.import_module(old)
    new = importlib.import_module(KEPT[old])
    assert module is new
    assert module.__name__ == module.__spec__.name == KEPT[old]  # its own spec, not the alias's
    assert importlib.import_module(f"{PKG}.mac.tasks") is mac_tasks


def test_an_old_snapshots_function_paths_resolve_as_lmms_eval_resolves_them():
    """lmms-eval's own YAML loader (``!function a.b.c``: module ``a.b``, attribute ``c``) on the snapshot's
    task YAMLs gives today's functions."""
    yamls = sorted(glob.glob(os.path.join(SNAPSHOT_TASKS, "mac_legacy_*.yaml")))
    assert len(yamls) == 4
    for path in yamls:
        config = load_yaml_config(path)
        assert config["process_results"] is mac_tasks.process_results
        assert config["doc_to_messages"] is mac_tasks.doc_to_messages
        aggregations = {m["metric"]: m["aggregation"] for m in config["metric_list"]}
        assert aggregations["mac_acc"] is mac_tasks.mac_acc
        assert aggregations["mac_acc_lenient"] is aggregations["mac_publisher_nature"] is metrics.mean_present
    assert f"{CORE}.metrics.mean_present" in _snapshot_function_paths()


def test_registries_read_the_aggregation_names_an_old_snapshot_carries():
    """``report`` reads a task's aggregations from its YAML (a snapshot's: the run's --include_path) and looks
    their kernels up by name."""
    stats.register_kernels(mac_kernels.kernels())
    with open(os.path.join(SNAPSHOT_TASKS, "mac_legacy_i2t_info.yaml")) as f:
        assert f"{CORE}.metrics.mean_present" in f.read()  # the snapshot's YAML names the old modules
    names = set(metric_aggregations(os.path.join(SNAPSHOT_TASKS, "mac_legacy_i2t_info.yaml")).values())
    # the reader gives today's names, so the statistics (which know no old name) find their kernels
    assert {f"{CORE}.scoring.metrics.mean_present", f"{PKG}.evals.mac.tasks.mac_acc"} <= names
    for old, new in ((f"{CORE}.metrics.mean_present", f"{CORE}.scoring.metrics.mean_present"), (f"{PKG}.mac.tasks.mac_acc", f"{PKG}.evals.mac.tasks.mac_acc")):
        assert _legacy.today_name(old) == new and new in names
        assert stats._kernel(new) is not None
        assert stats.resolve(old) is stats.resolve(new)  # an old name still imports (the finder)
    for name in names:
        assert name == _legacy.today_name(name)


def test_results_files_name_no_module_of_ours():
    """Why no old name is kept for results files: lmms-eval writes a task's functions into them as
    ``str(function)`` (the golden runs were written before the core moved)."""
    results = glob.glob(os.path.join(DATA, "golden", "runs", "**", "*_results.json"), recursive=True)
    assert results
    for path in results:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        assert PKG + "." not in text, path
        aggregations = [m.get("aggregation") for c in json.loads(text)["configs"].values() for m in c.get("metric_list") or []]
        assert aggregations and all(str(a).startswith("<function ") for a in aggregations), path


@pytest.mark.parametrize("old", REMOVED + MOVED_UNNAMED)
def test_a_removed_name_does_not_import(old):
    assert old not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    assert _legacy.today_name(old + ".f") == old + ".f"


def test_current_maps_kept_names_only():
    assert _legacy.today_name(f"{CORE}.metrics:group_mean") == f"{CORE}.scoring.metrics:group_mean"
    assert _legacy.today_name(f"{PKG}.mac.tasks.mac_ece") == f"{PKG}.evals.mac.tasks.mac_ece"
    # names that did not move, or merely share a prefix, are left alone
    assert _legacy.today_name(f"{CORE}.data.loading.undecoded") == f"{CORE}.data.loading.undecoded"
    assert _legacy.today_name(f"{CORE}.metricsx.f") == f"{CORE}.metricsx.f"
    assert _legacy.today_name(f"{PKG}.machine.f") == f"{PKG}.machine.f"


@pytest.mark.slow
def test_an_old_name_imported_first_in_a_fresh_interpreter():
    """Before any new name is imported (a snapshot's YAML read first): one module object under both names."""
    code = (
        "import sys\n"
        "from lmms_eval_earthsci import _legacy\n"
        "_legacy.install()  # what our entry point and our commands install (an import does not); it imports nothing else of ours\n"
        "import lmms_eval_earthsci.core.metrics as old\n"
        "import lmms_eval_earthsci.mac.tasks as old_tasks\n"
        "import lmms_eval_earthsci.core.scoring.metrics as new\n"
        "import lmms_eval_earthsci.evals.mac.tasks as new_tasks\n"
        "assert old is new and old.__spec__.name == 'lmms_eval_earthsci.core.scoring.metrics'\n"
        "assert old_tasks is new_tasks and old_tasks.__spec__.name == 'lmms_eval_earthsci.evals.mac.tasks'\n"
        "for suffix in ('scoring/metrics.py', 'evals/mac/tasks.py'):\n"
        "    assert len({id(m) for m in sys.modules.values() if (getattr(m, '__file__', '') or '').endswith(suffix)}) == 1\n"
        "print('one module')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "one module", out.stderr


def test_an_aliased_module_stays_a_module_and_pickles_under_its_new_name():
    import pickle

    old = importlib.import_module(f"{CORE}.metrics")
    assert not hasattr(old, "__path__")  # a module, not turned into a package by its alias
    assert hasattr(importlib.import_module(f"{PKG}.mac"), "__path__")  # a package alias stays a package
    blob = pickle.dumps(old.mean_present)
    assert f"{CORE}.scoring.metrics".encode() in blob and pickle.loads(blob) is old.mean_present


def test_a_labs_task_module_written_to_the_previous_readme_still_imports():
    """``from lmms_eval_earthsci.core.adapter.hooks import ensure_runtime_hooks``, then the call, as the contributors'
    README said until ``activate``: the same function ``core.activation`` has, the same module object."""
    from lmms_eval_earthsci.core import activation
    from lmms_eval_earthsci.core.adapter.hooks import ensure_runtime_hooks  # the old spelling

    assert ensure_runtime_hooks is activation.ensure_runtime_hooks
    assert sys.modules[f"{CORE}.adapter.hooks"] is activation
