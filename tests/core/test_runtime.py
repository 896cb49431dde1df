"""The process's one runtime object (core.runtime): created once, filled, never replaced. Importing every module of
ours, in a process that has lmms-eval's task module loaded, patches nothing and installs nothing; our entry point
(registration) fills the runtime and installs."""

import json
import subprocess
import sys

import pytest

from lmms_eval_earthsci.core.runtime import Runtime, current

# in a fresh process: lmms-eval's task module first (as inside a run), then every module of ours; what changed
IMPORT_ALL = """
import atexit, json, pkgutil, importlib, sys
import lmms_eval.api.task
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.tasks import TaskManager
handlers, finders = atexit._ncallbacks(), list(sys.meta_path)
upstream = (ConfigurableTask.download, ConfigurableTask.build_all_requests, ConfigurableTask.apply_filters, TaskManager.initialize_tasks,
            TaskManager._load_individual_task_or_group)
import lmms_eval_earthsci
from lmms_eval_earthsci.core import runtime
before = runtime.current()
names = [m.name for m in pkgutil.walk_packages(lmms_eval_earthsci.__path__, 'lmms_eval_earthsci.') if '.sample_mirror' not in m.name]
for name in names:
    importlib.import_module(name)
from lmms_eval_earthsci.core.upstream import patching
def state():
    rt = runtime.current()
    return {'same': rt is before, 'patches': [r.entry for r in patching.records()], 'unrecorded': patching.unrecorded(),
            'handlers': atexit._ncallbacks() - handlers, 'finders': len(sys.meta_path) - len(finders),
            'upstream': (ConfigurableTask.download, ConfigurableTask.build_all_requests, ConfigurableTask.apply_filters, TaskManager.initialize_tasks,
                         TaskManager._load_individual_task_or_group) != upstream,
            'run_hooks': rt.run_hooks, 'steps': len(rt.before_evaluate), 'datasets': len(rt.datasets), 'settings': len(rt.settings),
            'dirs': len(rt.task_dirs()), 'hint': rt.looks_ours_but_unknown('emma_minii', {'emma_mini'})}
imported = state()
import lmms_eval.models  # as in a run: lmms-eval's import of its models runs our entry point
print(json.dumps({'modules': len(names), 'imported': imported, 'registered': state()}))
"""


@pytest.mark.slow
def test_importing_every_module_patches_nothing_and_installs_nothing():
    out = subprocess.run([sys.executable, "-c", IMPORT_ALL], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["modules"] > 100  # its premise: the whole package was imported
    assert got["imported"] == {"same": True, "patches": [], "unrecorded": [], "handlers": 0, "finders": 0, "upstream": False, "run_hooks": False, "steps": 0,
                               "datasets": 0, "settings": 0, "dirs": 1, "hint": None}
    # its premise, the other way: the checks see what our entry point installs (in the same process)
    reg = got["registered"]
    assert reg["same"] and reg["upstream"] and reg["run_hooks"] and reg["handlers"] >= 2 and reg["finders"] == 1 and reg["unrecorded"] == []
    assert {"registration", "old module names", "exit status", "tap: task loader", "tasks of ours that cannot load", "local mirror"} <= set(reg["patches"])
    assert reg["datasets"] >= 10 and reg["settings"] > 0 and "emma_mini" in reg["hint"]


def test_registration_fills_the_processs_runtime_with_what_is_ours():
    from lmms_eval_earthsci import TASKS_DIR, registration

    rt = current()
    assert registration.start() is rt  # filled, not replaced
    assert rt.task_dirs()[0] == TASKS_DIR
    assert "emma_mini" in rt.looks_ours_but_unknown("emma_minii", {"emma_mini"})  # the YAML generator's hint
    assert rt.near("emma-mini") == ["emma_mini"]
    assert "MSEarth/MSEarth_MCQ" in rt.datasets
    with pytest.raises(TypeError, match="not what is ours"):
        rt.fill(judge=None)


def test_the_judges_verdicts_live_on_the_runtime():
    from lmms_eval_earthsci.core.judge import task_pass

    task_pass.pass_failed("spec", RuntimeError("down"))
    assert current().judge.errors == {"spec": "RuntimeError: down"}
    task_pass.forget()
    assert current().judge.errors == {}


def test_the_steps_added_before_registration_survive_it():
    """check-model and the capture add their step before the first request, then import lmms-eval's evaluator,
    whose import registers us: registration fills the same runtime, so the step (and the judge's verdicts) stay."""
    from lmms_eval_earthsci import registration

    # each test starts with a run of its own (conftest: Runtime.new_run): no step an earlier test left
    assert current().before_evaluate == []

    def step(lm, task_dict):
        return None

    current().before_evaluate.append(step)
    verdicts = current().judge
    rt = registration.start()
    assert rt is current() and rt.before_evaluate == [step] and rt.judge is verdicts
    assert rt.looks_ours_but_unknown("emma_minii", {"emma_mini"})  # what is ours: registration's


def test_what_the_boundary_observed_of_a_model_lives_on_the_runtime_not_on_the_model():
    """The figure budget observed of a model object is kept by the runtime for the run (asked twice, observed
    once), nothing is set on the model object, and the entry goes with the model."""
    import gc

    from lmms_eval_earthsci.core.boundary import budget

    class ServerClass:
        __slots__ = ("__weakref__",)  # an attribute set on it would raise: none is

    class Unhashable:
        __eq__ = object.__eq__
        __hash__ = None  # type: ignore[assignment]

    rt = current()
    lm = ServerClass()
    first = budget.observe_budget(lm, server=True)
    assert budget.observe_budget(lm, server=True) is first and rt.seen_of(lm)["budget"] is first
    assert first["status"] == budget.SERVER_DECIDES
    del lm
    gc.collect()
    assert not any(isinstance(k, ServerClass) for k in list(rt._models.keys()))
    odd = Unhashable()
    rt.seen_of(odd)["loses_interleaving"] = True
    assert rt.seen_of(odd) == {"loses_interleaving": True}


def test_a_new_run_forgets_the_last_runs_state_and_keeps_what_is_ours():
    """What conftest does before every test: everything the last run held goes (the ledger, the steps, the judge's
    verdicts and failures, the probe's verdicts, the figures, the capture, the warnings said, the models'
    observations); what is ours, what was declared and what is installed stay."""
    rt = Runtime(run_hooks=True)
    rt.datasets.add("org/data")
    rt.before_evaluate.append(lambda lm, task_dict: None)
    verdicts, ledger, patches = rt.judge, rt.ledger, rt.patches
    rt.ledger.not_loaded["t"] = "why"
    rt.judge_failures.failed["t"] = {"failed": 1}
    rt.verdicts["t"] = {"status": "lost"}
    rt.figures[("t", 0)] = [{}]
    rt.capture.records.append({"event": "processor"})
    rt.pending_bad["t"] = "bad"
    rt.chat_docs.add("d")
    assert rt.first_time("w") and not rt.first_time("w")

    class Model:
        pass

    m = Model()
    rt.seen_of(m)["budget"] = {"status": "observed"}
    rt.new_run()
    assert rt.before_evaluate == [] and rt.judge is not verdicts and rt.seen_of(m) == {}
    assert rt.ledger is not ledger and rt.ledger.not_loaded == {} and rt.judge_failures.failed == {} and rt.verdicts == {} and rt.figures == {}
    assert rt.capture.records == [] and rt.pending_bad == {} and rt.chat_docs == set() and rt.first_time("w")
    assert rt.run_hooks and rt.task_dirs() == Runtime().task_dirs() and rt.datasets == {"org/data"} and rt.patches is patches
