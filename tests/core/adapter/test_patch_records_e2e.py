"""The inventory (core.activation.INVENTORY) against what real processes patched: a registration, a
``--model dummy`` run of our tasks, and ``check-model`` on the demo's tiny LLaVA (a run with a processor: the
layout probe, the capture, the figures per sample). Each process writes its records at exit
(``EARTHSCI_PATCH_RECORDS``), with any code of ours found in an upstream module or class that no record names:
a hand-written assignment on a module or class cannot escape. The model tier checks the interleave_visuals entries, the vLLM tier the
engine's (tests/patch_records.py)."""

import json
import os
import subprocess
import sys

import patch_records
import pytest
from conftest import VENV_BIN, cli_env

from lmms_eval_earthsci import tinyvlm
from lmms_eval_earthsci.core.activation import INVENTORY

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _run(cmd, env, cwd, timeout=600):
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return proc


def test_every_patch_of_a_registration_a_run_and_check_model_is_an_inventory_entry(mirror, hf_home, tmp_path):
    records = tmp_path / "records"
    env = cli_env(mirror, hf_home, EARTHSCI_PATCH_RECORDS=str(records))
    # a registration: lmms-eval loads our entry point when it imports its models
    reg = _run([sys.executable, "-c", "import lmms_eval.models"], env, str(tmp_path))
    assert reg.returncode == 0, reg.stderr[-3000:]
    assert len(patch_records.load(str(records))) == 1  # its premise: the process wrote its records
    # a --model dummy run of two of our tasks (a judged one among them)
    run = _run([os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--tasks", "msearth_mcq,scifibench_cs_f2c", "--limit", "1",
                "--output_path", str(tmp_path / "out"), "--verbosity", "DEBUG"], env, str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    # check-model on a class with a transformers processor: the probe, the capture, the figures per sample
    path = tinyvlm.build(str(tmp_path / "tiny-llava"))
    check = _run([os.path.join(VENV_BIN, "lmms-eval-earthsci"), "check-model", "--model", "llava_hf", "--model_args", f"pretrained={path},device=cpu,device_map=cpu",
                  "--tasks", "msearth_mcq", "--log", str(tmp_path / "check.log"), "--json", str(tmp_path / "check.json")], env, str(tmp_path))
    assert check.returncode in (0, 1), check.stdout[-2000:] + check.stderr[-3000:]  # 1: a layout lost (the tiny LLaVA's template), still a whole check
    # the capture's step before the first request survived the registration the evaluator's import makes: the doc's
    # own processor call was matched to the layout it wrote (None: nothing captured)
    assert json.loads((tmp_path / "check.json").read_text())["tasks"]["msearth_mcq"]["captured"] is not None
    dumps = patch_records.load(str(records))
    assert len(dumps) >= 3 and any("check-model" in " ".join(d["argv"]) or "lmms_eval" in " ".join(d["argv"]) for d in dumps)
    seen = patch_records.check(dumps, {"registration", "a run", "a run with a processor", "check-model", "check-model, a tokenizer"})
    # what the records name is the run's real objects: the tiny model's processor class, wrapped for the run
    assert any("LlavaProcessor" in t for t in seen["figures per sample: processor call"]), seen["figures per sample: processor call"]
    assert seen["old module names"] == {"sys:meta_path"}


def test_a_patch_that_bypasses_the_primitive_is_found(tmp_path):
    """Code of ours set on an upstream class by hand (no record) is reported by the process's dump."""
    from lmms_eval_earthsci.core.upstream import patching

    code = (
        "from lmms_eval.api.task import ConfigurableTask\n"
        "from lmms_eval_earthsci.core.adapter import integration\n"
        "ConfigurableTask.doc_to_choice = integration.forward_logs  # by hand\n"
        "from lmms_eval_earthsci.core.hardening.inventory import ENTRIES\n"
        "from lmms_eval_earthsci.core.upstream.patching import patch\n"
        "import lmms_eval.evaluator as ev\n"
        "patch(ev, 'simple_evaluate', integration.install, entry=ENTRIES['run outcome'])  # through the primitive: recorded\n"
    )
    env = {**os.environ, patching.RECORDS_ENV: str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (dump,) = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert dump["unrecorded"] == ["lmms_eval.api.task:ConfigurableTask.doc_to_choice"]
    assert [(r["entry"], r["target"]) for r in dump["records"] if r["owner"] == "__main__"] == [("run outcome", "lmms_eval.evaluator:simple_evaluate")]


def test_each_entry_says_which_run_installs_it():
    runs = {"registration", "a run", "a run with a processor", "check-model", "check-model --against", "interleave_visuals", "vllm", "a lost layout",
            "check-model, a tokenizer"}
    assert {t.installed_by for t in INVENTORY if t.kind != "reads"} <= runs
    assert patch_records.covers("transformers.processing_utils:ProcessorMixin.__call__", "transformers.models.llava.processing_llava:LlavaProcessor.__call__")
    assert not patch_records.covers("transformers.processing_utils:ProcessorMixin.__call__", "transformers.models.llava.processing_llava:LlavaProcessor.decode")
    assert patch_records.covers("lmms_eval.api.model:lmms", "lmms_eval.models.chat.llava_hf:LlavaHf().task_dict[msearth_mcq]")
    assert not patch_records.covers("lmms_eval.api.model:lmms", "lmms_eval.api.task:ConfigurableTask().task_dict[x]")


def test_one_callable_wrapped_under_two_entries_is_found():
    """The check behind "one tap per upstream target": two wraps of the same callable in one process fail it, naming
    the target and both entries (the records of the runs above pass it: each such callable is wrapped by its tap)."""
    target = "transformers.models.llava.processing_llava:LlavaProcessor.__call__"
    dump = {"argv": ["x"], "unrecorded": [], "records": [
        {"entry": "tap: processor call", "target": target, "kind": "wraps", "owner": "lmms_eval_earthsci.core.upstream.taps"},
        {"entry": "capture: processor call", "target": target, "kind": "subscribes", "owner": "lmms_eval_earthsci.core.boundary.capture"},
    ]}
    assert patch_records.check([dump], set())["capture: processor call"] == {target}  # a tap and its subscriber: one wrap
    dump["records"].append({"entry": "budget: the processor's cap tried", "target": target, "kind": "wraps", "owner": "lmms_eval_earthsci.core.boundary.budget"})
    with pytest.raises(AssertionError, match="wrapped under more than one entry.*budget: the processor's cap tried.*tap: processor call"):
        patch_records.check([dump], set())
