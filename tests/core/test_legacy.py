"""Names from before the core was grouped by concern keep working (``_legacy``): the ``!function`` paths in
YAMLs written by earlier versions (every MAC snapshot built by ``mac build``), a lab's benchmark importing
``core.benchmark``, ``core.data``, ``core.hooks``, ``core.messages`` or ``core.metrics``, and the dotted
aggregation names our registries look up (``stats.KERNELS``, circular's kernels) in YAMLs and results
written before. An old name is the same module object as the new one, never a second copy."""

import importlib
import subprocess
import sys

import pytest

from lmms_eval_earthsci import _legacy

CORE = "lmms_eval_earthsci.core"
# each module that moved, by its old name (what YAMLs, results files and labs' code may name)
MOVED = sorted(old for old in _legacy.ALIASES if old.startswith(CORE + "."))


def test_every_module_that_moved_has_an_alias():
    # its premise: the 24 modules that left core/'s top level
    assert len(MOVED) == 24 and f"{CORE}.judge_pass" in MOVED and f"{CORE}.metrics" in MOVED
    for old in MOVED:
        new = _legacy.ALIASES[old]
        assert importlib.util.find_spec(new).origin.endswith("/" + new.rsplit(".", 1)[1] + ".py"), new


@pytest.mark.parametrize("old", MOVED)
def test_an_old_name_is_the_new_module(old):
    module = importlib.import_module(old)
    new = importlib.import_module(_legacy.ALIASES[old])
    assert module is new
    assert module.__name__ == module.__spec__.name == _legacy.ALIASES[old]  # its own spec, not the alias's


def test_a_labs_imports_from_the_old_core_names():
    from lmms_eval_earthsci.core import data, metrics  # noqa: F401 - the old spellings
    from lmms_eval_earthsci.core.adapter import hooks
    from lmms_eval_earthsci.core.benchmark import Benchmark, ReportSpec
    from lmms_eval_earthsci.core.data import RecordError, declare_datasets, load_image, loading, record_check, require
    from lmms_eval_earthsci.core.hooks import data_hooks_only, ensure_runtime_hooks
    from lmms_eval_earthsci.core.messages import chat_messages, simple_text
    from lmms_eval_earthsci.core.metrics import mean_present
    from lmms_eval_earthsci.core.prompts import messages
    from lmms_eval_earthsci.core.scoring import metrics as new_metrics

    assert (ensure_runtime_hooks, data_hooks_only) == (hooks.ensure_runtime_hooks, hooks.data_hooks_only)
    assert (require, load_image, record_check, declare_datasets, RecordError) == (loading.require, loading.load_image, loading.record_check, loading.declare_datasets, loading.RecordError)
    assert (chat_messages, simple_text, mean_present) == (messages.chat_messages, messages.simple_text, new_metrics.mean_present)
    assert Benchmark.__module__ == ReportSpec.__module__ == f"{CORE}.benchmark"
    assert sys.modules[f"{CORE}.metrics"] is new_metrics


def test_old_function_paths_resolve_as_lmms_eval_resolves_them():
    """lmms-eval's ``!function a.b.c`` imports module ``a.b`` and takes ``c``: each path the YAMLs of
    earlier versions name gives today's function."""
    old_paths = {
        f"{CORE}.metrics.mean_present": f"{CORE}.scoring.metrics.mean_present",
        f"{CORE}.metrics.group_mean": f"{CORE}.scoring.metrics.group_mean",
        f"{CORE}.judge_pass.judged_mean": f"{CORE}.judge.task_pass.judged_mean",
        f"{CORE}.judge_pass.judge_failed": f"{CORE}.judge.task_pass.judge_failed",
        f"{CORE}.circular.circular_acc": f"{CORE}.scoring.circular.circular_acc",
        f"{CORE}.circular.position_A": f"{CORE}.scoring.circular.position_A",
        f"{CORE}.repo_files.record_image": f"{CORE}.data.repo_files.record_image",
    }

    def function(path):
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name, None)

    for old, new in old_paths.items():
        assert function(old) is function(new) is not None, old


def test_registries_read_old_aggregation_names():
    from lmms_eval_earthsci.core.scoring import circular, stats

    stats.register_kernels(circular.kernels())
    for old, new in ((f"{CORE}.metrics.mean_present", f"{CORE}.scoring.metrics.mean_present"),
                     (f"{CORE}.judge_pass.judged_mean", f"{CORE}.judge.task_pass.judged_mean"),
                     (f"{CORE}.circular.flip_rate", f"{CORE}.scoring.circular.flip_rate")):
        assert _legacy.current(old) == new
        assert stats._kernel(old) is stats._kernel(new) is not None
        assert stats.resolve(old) is stats.resolve(new)
    # a results file's interval on an old name is the vectorised one, equal to the new name's
    items = [{"score": 1.0}, {"score": 0.0}, {"score": 1.0}, {"score": None}]
    assert stats.interval(items, f"{CORE}.metrics.mean_present", 200, 0) == stats.interval(items, f"{CORE}.scoring.metrics.mean_present", 200, 0)
    # names that did not move are left alone
    assert _legacy.current(f"{CORE}.data.loading.undecoded") == f"{CORE}.data.loading.undecoded"
    assert _legacy.current(f"{CORE}.metricsx.f") == f"{CORE}.metricsx.f"


@pytest.mark.slow
def test_an_old_name_imported_first_in_a_fresh_interpreter():
    """Before any new name is imported (a snapshot's YAML read first): one module object under both names."""
    code = (
        "import sys\n"
        "import lmms_eval_earthsci.core.judge_pass as old\n"
        "from lmms_eval_earthsci.core import hooks\n"
        "import lmms_eval_earthsci.core.judge.task_pass as new\n"
        "assert old is new and old.__spec__.name == 'lmms_eval_earthsci.core.judge.task_pass'\n"
        "assert hooks is sys.modules['lmms_eval_earthsci.core.adapter.hooks']\n"
        "assert len({id(m) for m in sys.modules.values() if (getattr(m, '__file__', '') or '').endswith('task_pass.py')}) == 1\n"
        "print('one module')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "one module", out.stderr


def test_an_aliased_module_stays_a_module_and_pickles_under_its_new_name():
    import pickle

    old = importlib.import_module(f"{CORE}.metrics")
    assert not hasattr(old, "__path__")  # a module, not turned into a package by its alias
    assert hasattr(importlib.import_module("lmms_eval_earthsci.mac"), "__path__")  # a package alias stays a package
    blob = pickle.dumps(old.mean_present)
    assert f"{CORE}.scoring.metrics".encode() in blob and pickle.loads(blob) is old.mean_present
