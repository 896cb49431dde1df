"""The process's one runtime object (core.runtime): no module of the package fills a slot of another at import.
Importing every module leaves the runtime as a fresh one and touches no list or hook of another module; what
is ours arrives when registration builds the runtime."""

import json
import subprocess
import sys

import pytest

from lmms_eval_earthsci.core.runtime import Runtime, current, start


@pytest.mark.slow
def test_importing_every_module_fills_no_slot():
    code = (
        "import json, pkgutil, importlib, lmms_eval_earthsci\n"
        "from lmms_eval_earthsci.core import runtime\n"
        "before = runtime.current()\n"
        "names = [m.name for m in pkgutil.walk_packages(lmms_eval_earthsci.__path__, 'lmms_eval_earthsci.') if '.sample_mirror' not in m.name]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "rt = runtime.current()\n"
        "from lmms_eval_earthsci.core.adapter import patching\n"
        "print(json.dumps({'modules': len(names), 'same': rt is before, 'dirs': rt.task_dirs() == runtime.Runtime().task_dirs(),\n"
        "  'hint': rt.looks_ours_but_unknown('emma_minii', set()), 'steps': len(rt.before_evaluate), 'run_hooks': rt.run_hooks,\n"
        "  'leaves_out': rt.loader_leaves_out, 'patches': [r.entry for r in patching.RECORDS if r.entry != 'old module names']}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["modules"] > 100  # its premise: the whole package was imported
    assert {k: v for k, v in got.items() if k != "modules"} == {"same": True, "dirs": True, "hint": None, "steps": 0, "run_hooks": False, "leaves_out": False, "patches": []}


def test_registration_builds_the_runtime_with_what_is_ours():
    from lmms_eval_earthsci import TASKS_DIR, registration

    rt = registration.runtime()
    assert rt.task_dirs()[0] == TASKS_DIR
    assert "emma_mini" in rt.looks_ours_but_unknown("emma_minii", {"emma_mini"})  # the YAML generator's hint
    assert rt.near("emma-mini") == ["emma_mini"]


def test_the_judges_verdicts_live_on_the_runtime():
    from lmms_eval_earthsci.core.judge import task_pass

    saved = current()
    try:
        fresh = start(Runtime())
        task_pass.pass_failed("spec", RuntimeError("down"))
        assert fresh.judge.errors == {"spec": "RuntimeError: down"}
        task_pass.forget()
        assert fresh.judge.errors == {}
    finally:
        start(saved)


def test_the_steps_added_before_registration_survive_it():
    """check-model and the capture add their step before the first request, then import lmms-eval's evaluator,
    whose import registers us: the runtime registration starts keeps the step (and the judge's verdicts)."""
    from lmms_eval_earthsci import registration

    saved = current()
    try:
        # each test starts with a run of its own (conftest: Runtime.new_run): no step an earlier test left
        earlier = list(start(Runtime()).before_evaluate)
        assert earlier == []

        def step(lm, task_dict):
            return None

        current().before_evaluate.append(step)
        verdicts = current().judge
        rt = start(registration.runtime())
        assert rt.before_evaluate == [step] and rt.judge is verdicts
        assert rt.looks_ours_but_unknown("emma_minii", {"emma_mini"})  # what is ours: registration's
    finally:
        start(saved)


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
    """What conftest does before every test: the steps, the verdicts and the models' observations of the last
    run go; the task folders and the installed hooks stay."""
    rt = Runtime(run_hooks=True)
    rt.before_evaluate.append(lambda lm, task_dict: None)
    verdicts = rt.judge

    class Model:
        pass

    m = Model()
    rt.seen_of(m)["budget"] = {"status": "observed"}
    rt.new_run()
    assert rt.before_evaluate == [] and rt.judge is not verdicts and rt.seen_of(m) == {}
    assert rt.run_hooks and rt.task_dirs() == Runtime().task_dirs()
