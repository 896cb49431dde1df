"""What the model sees (``make test-models``, the vision venv): lmms-eval's real model classes, each with a
tiny random model of its family built here (``tests/tiny_models``: the family's real processor and chat
template), run through the real ``lmms-eval`` CLI over every layout we ship:

- a figure before the text (SciFIBench F->C, MuSciClaims) and after it (MSEarth MCQ);
- numbered placeholders, out of order, with a repeat and option images (EMMA physics and chemistry);
- labelled candidates, each label directly before its figure (SciFIBench C->F);
- a system prompt and four covers (MAC T2I).

What the model received is captured from the test side (``core.boundary.capture``: the processor's text and
images, the decoded input ids of ``generate``) without changing any class, and held against the layout
each task's ``doc_to_messages`` wrote: image spans = the doc's images in order, no placeholder text left,
each label directly before its figure, the system text present. Cells that lmms-eval or the family's
own template break are strict expected failures naming the cause, so a fix upstream turns them red.
The run's own verdict (``metadata.earthsci_layout``, the layout probe) must agree with what was captured.
"""

import os
import re
import subprocess
import sys

import patch_records
import pytest
from conftest import ROOT, cli_env, read_outputs

pytestmark = [pytest.mark.models, pytest.mark.e2e]

WHERE = "the model-class tier runs in the vision venv: `make test-models`"
tiny_models = pytest.importorskip("tiny_models", reason=WHERE)
pytest.importorskip("qwen_vl_utils", reason=WHERE)
pytest.importorskip("torchvision", reason=WHERE)
from tiny_models import FAMILIES  # noqa: E402

from lmms_eval_earthsci.core.boundary import capture  # noqa: E402
from lmms_eval_earthsci.core.boundary.layout_verdict import check_prompt, image_order  # noqa: E402

for _module in ("tiny_models.qwen_internvl", "tiny_models.llava_smolvlm", "tiny_models.gemma_mllama"):
    try:
        __import__(_module)
    except ImportError:  # pragma: no cover - a family file not there yet
        pass

# (task, docs): every layout we ship, two docs each where the fixture has them
TASKS = ["scifibench_cs_f2c", "scifibench_cs_c2f", "msearth_mcq", "musciclaims_d", "emma_full_physics", "emma_full_chemistry", "mac2025_t2i_option"]
LIMIT = 2

LAUNCH = """
import os, runpy, sys
from lmms_eval_earthsci.core.boundary import capture
capture.install(os.environ["EARTHSCI_TEST_CAPTURE"])
capture.install_expected(int(os.environ["EARTHSCI_TEST_LIMIT"]))
sys.argv = ["lmms-eval", *sys.argv[1:]]
runpy.run_module("lmms_eval", run_name="__main__")
"""

# run id -> (family, extra --model_args, extra CLI args)
RUNS = {
    "qwen2_5_vl": ("qwen2_5_vl", "", []),
    "qwen3_vl": ("qwen3_vl", "", []),
    # a template that raises on a system turn that is not the first, on a class that inserts one (the probe's own requests carry none)
    "qwen3_vl-strict": ("qwen3_vl_strict", "", []),
    "internvl_hf": ("internvl", "", []),
    "llava_hf-1.5": ("llava_1_5", "", []),
    "llava_hf-onevision": ("llava_onevision", "", []),
    "huggingface": ("smolvlm", "", []),
    "qwen2_5_vl-simple": ("qwen2_5_vl", "", ["--force_simple"]),
    "qwen3_vl-simple": ("qwen3_vl", "", ["--force_simple"]),
    # interleave_visuals=True: zero images before our rewrite (core.boundary.interleave)
    "qwen2_5_vl-interleave": ("qwen2_5_vl", "interleave_visuals=True", ["--force_simple"]),
    # classes no table of ours knows: what reached the model is observed by the probe
    "gemma3": ("gemma3", "", []),
    "gemma3-interleave": ("gemma3", "interleave_visuals=True", []),
    "llama_vision": ("llama_3_2_vision", "", []),
}

IMAGES_AFTER_TEXT = {"scifibench_cs_c2f", "msearth_mcq", "emma_full_physics", "emma_full_chemistry", "mac2025_t2i_option"}
ONEVISION = "the LLaVA-OneVision chat template renders every image of a turn before its text"
SIMPLE = "lmms-eval's simple Qwen classes drop <image> and put every image before the text (no interleaving without interleave_visuals)"
INTERLEAVE = "with interleave_visuals a prompt that names no image gets its images first (where the simple classes put them)"
GEMMA = "lmms-eval's gemma3 class puts every image before the text (<image> dropped, <image_k> left as text, a repeat lost) unless interleave_visuals=True"
LLAMA = "lmms-eval's llama_vision class puts every image before the text and leaves <image> and <image_k> in it as text"
# (run, task) -> why the layout is lost: strict expected failures
LLAVA15 = "the LLaVA-1.5 chat template (llava-hf) renders every image of a turn before its text"
HF_CLASS = ("lmms-eval 0.7.3's huggingface chat class crashes for every model: it passes audios= and videos=[] to the processor "
            "(models/chat/huggingface.py:236-237) and compares model types with config classes (lines 92-97), loading a model without generate")
BROKEN = {
    **{("huggingface", t): HF_CLASS for t in TASKS},
    **{("llava_hf-onevision", t): ONEVISION for t in IMAGES_AFTER_TEXT},
    **{("llava_hf-1.5", t): LLAVA15 for t in IMAGES_AFTER_TEXT},
    **{(run, t): SIMPLE for run in ("qwen2_5_vl-simple", "qwen3_vl-simple") for t in IMAGES_AFTER_TEXT},
    **{("qwen2_5_vl-interleave", t): INTERLEAVE for t in ("msearth_mcq", "mac2025_t2i_option")},
    **{("gemma3", t): GEMMA for t in IMAGES_AFTER_TEXT},
    **{("gemma3-interleave", t): INTERLEAVE for t in ("msearth_mcq", "mac2025_t2i_option")},
    **{("llama_vision", t): LLAMA for t in IMAGES_AFTER_TEXT},
}
#: runs whose lost layouts interleave_visuals=True (with our rewrite) delivers as written: their verdicts' fix says so
INTERLEAVE_HELPS = {(run, t) for run in ("gemma3", "qwen2_5_vl-simple", "qwen3_vl-simple") for t in ("scifibench_cs_c2f", "emma_full_physics", "emma_full_chemistry")}


@pytest.fixture(scope="session")
def models_root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tiny_models"))


_RUNS: dict = {}
_PATCHES: dict = {}  # run id -> its processes' patch records (EARTHSCI_PATCH_RECORDS)


def run_class(run_id, models_root, mirror, hf_home, tmp_path_factory):
    """One real CLI call of a model class over every layout; (records, results, samples, log)."""
    if run_id in _RUNS:
        return _RUNS[run_id]
    family_name, extra_args, cli_extra = RUNS[run_id]
    if family_name not in FAMILIES:
        pytest.skip(f"no tiny {family_name} model builder")
    family = FAMILIES[family_name]
    path = tiny_models.build(family_name, models_root)
    work = tmp_path_factory.mktemp(run_id)
    records = str(work / "capture.jsonl")
    env = cli_env(mirror, hf_home, EARTHSCI_TEST_CAPTURE=records, EARTHSCI_TEST_LIMIT=str(LIMIT), PYTHONPATH=ROOT, EARTHSCI_PATCH_RECORDS=str(work / "patches"))
    model_args = ",".join(filter(None, [f"pretrained={path}", family.model_args, extra_args]))
    args = ["--model", family.model, "--model_args", model_args, "--tasks", ",".join(TASKS), "--limit", str(LIMIT), "--gen_kwargs", "max_new_tokens=4",
            "--output_path", str(work / "out"), "--log_samples", "--batch_size", "1", *cli_extra, "--verbosity", "DEBUG"]
    proc = subprocess.run([sys.executable, "-c", LAUNCH, *args], env=env, cwd=str(work), capture_output=True, text=True, timeout=900)
    out = (proc, capture.read(records) if os.path.exists(records) else [])
    _PATCHES[run_id] = patch_records.load(str(work / "patches"))
    if proc.returncode == 0:
        res, samples = read_outputs(str(work / "out"))
        out = (*out, res, samples)
    else:
        out = (*out, None, None)
    _RUNS[run_id] = out
    return out


def verdicts(run_id, task, models_root, mirror, hf_home, tmp_path_factory):
    proc, records, res, _ = run_class(run_id, models_root, mirror, hf_home, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr[-6000:]
    family = FAMILIES[RUNS[run_id][0]]
    expected = [r for r in records if r["event"] == "expected" and r["task"] == task]
    assert len(expected) == LIMIT, f"{task}: {len(expected)} docs recorded"  # the premise: docs were evaluated
    calls = capture.calls(records)
    problems = []
    for exp in expected:
        call = capture.match(calls, exp)
        assert call is not None, f"{task} doc {exp['doc_id']}: no processor call holds its text"
        layout = capture.expected_layout(exp)
        assert call["decoded"], f"{task} doc {exp['doc_id']}: generate was not called after the processor"
        seen = check_prompt(layout, call["decoded"][0], family.image_span, images_passed=len(call["images"]))
        order = image_order(exp["images"], call["images"]) if seen.ok and distinguishable(exp["images"]) else None
        problems += [f"doc {exp['doc_id']}: {p}" for p in seen.lost + ([order] if order else [])]
    return problems, res["configs"][task]["metadata"].get("earthsci_layout", {})


# one xdist group per run: its CLI call is made once, on one worker (`--dist loadgroup`)
CELLS = [pytest.param(run, task, id=f"{run}-{task}", marks=pytest.mark.xdist_group(run)) for run in RUNS for task in TASKS]


@pytest.mark.parametrize("run_id,task", CELLS)
def test_layout_reaches_the_model(run_id, task, models_root, mirror, hf_home, tmp_path_factory, request):
    # under `--dist loadgroup` a run's cells share one worker (its CLI call made once): xdist tags the node id
    assert not os.environ.get("PYTEST_XDIST_WORKER") or request.node.nodeid.endswith(f"@{run_id}"), request.node.nodeid
    why = BROKEN.get((run_id, task))
    if why:
        request.applymarker(pytest.mark.xfail(reason=why, strict=True))
    problems, probe = verdicts(run_id, task, models_root, mirror, hf_home, tmp_path_factory)
    # the run's own verdict agrees with what the model got
    assert probe.get("status") == ("lost" if problems else "as written"), (probe, problems)
    assert not problems, f"{run_id} {task}: " + "; ".join(problems)


def distinguishable(sigs, gap=4.0):
    """Whether a doc's distinct images differ in mean colour by more than twice the drift a processor's
    resizing gives a mean (well under 1 on 0-255 here): then the nearest match is the right image."""
    return all(a == b or max(abs(x - y) for x, y in zip(a, b)) > gap for i, a in enumerate(sigs) for b in sigs[:i])


RUN_PARAMS = [pytest.param(run, id=run, marks=pytest.mark.xdist_group(run)) for run in RUNS if run != "huggingface"]


@pytest.mark.parametrize("run_id", RUN_PARAMS)
def test_the_run_observed_what_its_model_received_and_warned_where_lost(run_id, models_root, mirror, hf_home, tmp_path_factory):
    """Every verdict of the run comes from what the class handed its processor (``observed``), not from a
    table of classes; each lost layout is one warning line naming the fix, and nothing else warns about
    layouts. Where interleave_visuals=True would deliver the layout, the fix says so (observed too)."""
    from lmms_eval_earthsci.core.boundary.probe import INTERLEAVE_FIX

    proc, _, res, _ = run_class(run_id, models_root, mirror, hf_home, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr[-6000:]
    log = proc.stdout + proc.stderr
    assert "could not be observed" not in log and "the layout probe failed" not in log
    for task in TASKS:
        verdict = res["configs"][task]["metadata"]["earthsci_layout"]
        assert verdict.get("observed") is True, (task, verdict)
        # the figure budget too, from the processor's output, whatever the family (no table of ours)
        budget = res["configs"][task]["metadata"]["earthsci_budget"]
        assert budget["status"] == "observed" and budget["tokens"] and budget["tokens_small"], (task, budget)
        warned = f"lmms_eval_earthsci: {task} with {verdict['class']}: not the authors' layout" in log
        assert warned == (verdict["status"] == "lost"), (task, verdict)
        if verdict["status"] == "lost":
            assert (verdict["fix"] == INTERLEAVE_FIX) == ((run_id, task) in INTERLEAVE_HELPS), (task, verdict["fix"])
    # every patch of the run is an inventory entry (tests/patch_records.py): a run with a processor, the capture;
    # interleave_visuals=True: its rewrite; a simple class's lost layout: the setting tried for its fix
    installs = {"registration", "a run", "a run with a processor", "check-model"}
    seen = patch_records.check(_PATCHES[run_id], installs | ({"interleave_visuals"} if run_id.endswith("-interleave") else set()))
    assert ("layout probe: interleave_visuals tried" in seen) == any(r == run_id for r, _ in INTERLEAVE_HELPS), sorted(seen)


@pytest.mark.xdist_group("qwen2_5_vl")
def test_fixture_images_tell_apart(mirror, models_root, hf_home, tmp_path_factory):
    """The premise of the order check, which runs only on docs whose images can be told apart: most can,
    the C->F docs among them (some fixture figures of EMMA chemistry are too alike in mean colour)."""
    _, records, _, _ = run_class("qwen2_5_vl", models_root, mirror, hf_home, tmp_path_factory)
    multi = [r for r in records if r["event"] == "expected" and len(r["images"]) > 1]
    told = [r for r in multi if distinguishable(r["images"])]
    assert len(told) * 2 >= len(multi) and {r["task"] for r in told} >= {"scifibench_cs_c2f", "mac2025_t2i_option"}, [(r["task"], r["doc_id"]) for r in multi if r not in told]


# runs whose every sample must say at what size its figures reached the model (PIL images reach the processor)
FIGURES_READ = {"qwen2_5_vl", "qwen3_vl", "llava_hf-1.5"}
# and runs whose samples carry none: data URLs (the simple Qwen classes, Gemma 3), tiles without one size per image (OneVision, InternVL)
FIGURES_NOT_READ = {"qwen2_5_vl-simple", "gemma3", "llava_hf-onevision", "internvl_hf"}


@pytest.mark.parametrize("run_id", [pytest.param(r, id=r, marks=pytest.mark.xdist_group(r)) for r in sorted(FIGURES_READ | FIGURES_NOT_READ)])
def test_each_sample_says_at_what_size_its_figures_reached_the_model(run_id, models_root, mirror, hf_home, tmp_path_factory):
    """``earthsci_figures`` in each logged sample, read from the run's own processor call for that doc: one
    entry per image the processor was given, and their visual tokens add up to the image tokens in the ids
    ``generate`` received for the doc (counted there, not computed). A class whose processor is not given the
    task's images as they were returned (data URLs: the simple Qwen classes, Gemma 3), or whose output gives
    no size per image (OneVision's and InternVL's tiles), records none: no field rather than a guess."""
    proc, records, _, samples = run_class(run_id, models_root, mirror, hf_home, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr[-6000:]
    calls = capture.calls(records)
    recorded = 0
    for task in TASKS:
        for sample in samples[task]:
            figures = sample.get("earthsci_figures")
            if run_id not in FIGURES_READ:
                continue
            assert figures, (task, sample["doc_id"])
            exp = next(r for r in records if r["event"] == "expected" and r["task"] == task and r["doc_id"] == sample["doc_id"])
            call = capture.match(calls, exp)
            assert len(figures) == len(call["images"]), (task, sample["doc_id"], figures)
            tokens = [f["tokens"] for f in figures]
            if None not in tokens and call.get("image_token"):
                assert sum(tokens) == call["decoded"][0].count(call["image_token"]), (task, sample["doc_id"], tokens)
                recorded += 1
            assert all(f["reached"][0] > 0 and f["reached"][1] > 0 and len(f["sent"]) == 2 for f in figures)
    if run_id in FIGURES_READ:
        assert recorded, "no doc's tokens were checked against generate's input"  # the premise: the count was compared somewhere
    else:
        assert not any(s.get("earthsci_figures") for v in samples.values() for s in v)


@pytest.mark.xdist_group("qwen3_vl")
def test_qwen3_vl_keeps_the_task_system_prompt(mirror, models_root, hf_home, tmp_path_factory):
    """lmms-eval 0.7.3's qwen3_vl inserts "You are a helpful assistant." before the task's messages; the
    task's own system text (MAC's probability-JSON instructions) is what reaches the model."""
    proc, records, _, _ = run_class("qwen3_vl", models_root, mirror, hf_home, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr[-4000:]
    mac = [c for c in capture.calls(records) if "Cover" in " ".join(c["text"]) or "cover" in " ".join(c["text"])]
    assert mac, "no MAC request captured"
    for call in mac:
        system = re.search(r"<\|im_start\|>system\n(.*?)<\|im_end\|>", call["decoded"][0], re.S)
        assert system and "You are a helpful assistant." not in system.group(1) and "predict the probability" in system.group(1), call["decoded"][0][:600]


@pytest.mark.xdist_group("huggingface")
def test_the_broken_huggingface_class_is_named_before_it_crashes(mirror, models_root, hf_home, tmp_path_factory):
    """lmms-eval 0.7.3's huggingface class crashes on its first request for every model: the run's layout
    probe says so (and which class to use) on each task's line before the crash."""
    proc, _, _, _ = run_class("huggingface", models_root, mirror, hf_home, tmp_path_factory)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "audios" in log  # the premise: the class crashed as the xfails say
    assert log.index("huggingface class crashes for every model") < log.index("Traceback")
    assert all(f"{t} with Huggingface: lmms-eval 0.7.3's huggingface class crashes" in log for t in TASKS)


# --------------------------------------------------------------------------- server routes
# openai and async_openai send lmms-eval's chat messages to an OpenAI-compatible server (vLLM, SGLang, an
# API); what they send is captured by a real loopback server speaking the protocol.

SPAN = "\x02IMG\x02"


def server_call(body):
    """A request body as a captured call: its parts joined in order, each image one span."""
    import base64
    import io

    from PIL import Image

    from lmms_eval_earthsci.core.boundary.layout_verdict import mean_colour

    parts, images = [], []
    for message in body.get("messages", []):
        content = message.get("content")
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            if part.get("type") == "text":
                parts.append(part["text"])
            elif part.get("type") == "image_url":
                parts.append(SPAN)
                data = part["image_url"]["url"].split(",", 1)[1]
                images.append(list(mean_colour(Image.open(io.BytesIO(base64.b64decode(data))))))
    prompt = " ".join(parts)
    return {"text": [prompt], "decoded": [prompt], "images": images}


@pytest.mark.parametrize("model", ["openai", "async_openai"])
def test_server_routes_send_every_layout_as_written(model, mirror, hf_home, tmp_path):
    from conftest import openai_args

    from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

    records = str(tmp_path / "capture.jsonl")
    env = cli_env(mirror, hf_home, EARTHSCI_TEST_CAPTURE=records, EARTHSCI_TEST_LIMIT=str(LIMIT), PYTHONPATH=ROOT)
    with FakeOpenAIServer(responder=lambda body: "A") as srv:
        args = ["--model", model, "--model_args", openai_args(srv.base_url), "--tasks", ",".join(TASKS), "--limit", str(LIMIT), "--gen_kwargs", "max_new_tokens=4",
                "--output_path", str(tmp_path / "out"), "--log_samples", "--verbosity", "DEBUG"]
        proc = subprocess.run([sys.executable, "-c", LAUNCH, *args], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
        bodies = list(srv.requests)
    assert proc.returncode == 0, proc.stderr[-6000:]
    res, _ = read_outputs(str(tmp_path / "out"))
    calls = [server_call(b) for b in bodies]
    expected = [r for r in capture.read(records) if r["event"] == "expected"]
    assert len(expected) == LIMIT * len(TASKS) and len(calls) == len(expected)  # every doc went to the server once
    problems = []
    for exp in expected:
        call = capture.match(calls, exp)
        assert call is not None, (exp["task"], exp["doc_id"])
        layout = capture.expected_layout(exp)
        seen = check_prompt(layout, call["text"][0], re.escape(SPAN), images_passed=len(call["images"]))
        order = image_order(exp["images"], call["images"]) if seen.ok and distinguishable(exp["images"]) else None
        problems += [f"{exp['task']} doc {exp['doc_id']}: {p}" for p in seen.lost + ([order] if order else [])]
    assert not problems, problems
    assert {t: res["configs"][t]["metadata"]["earthsci_layout"]["status"] for t in TASKS} == dict.fromkeys(TASKS, "as written")


# --------------------------------------------------------------------------- check-model


# qwen2_5_vl: every layout we ship, exit 0; the families no table of ours knows, on one figure-first layout (kept),
# C->F and EMMA's repeat (lost): exit 1, through Gemma's data URLs and Llama's positional processor call
CHECKS = [("qwen2_5_vl", None, set()), *((f, "scifibench_cs_f2c,scifibench_cs_c2f,emma_full_physics", {"scifibench_cs_c2f", "emma_full_physics"}) for f in ("gemma3", "llama_3_2_vision"))]


@pytest.mark.parametrize("family,tasks,lost", CHECKS, ids=[c[0] for c in CHECKS])
def test_check_model_prints_each_layout_and_exits_1_when_one_is_lost(family, tasks, lost, models_root, hf_home, tmp_path):
    """`lmms-eval-earthsci check-model` on a user's class and weights (the shipped sample mirror, offline):
    one row per layout task, LOST where the family's template puts images first, exit 1 then, 0 otherwise."""
    fam = FAMILIES[family]
    path = tiny_models.build(family, models_root)
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "HF_HOME": hf_home, "HF_HUB_OFFLINE": "1", "EARTHSCI_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path / "tmp")}
    env.pop("EARTHSCI_DATA_MIRROR", None)
    cli = os.path.join(os.path.dirname(sys.executable), "lmms-eval-earthsci")
    proc = subprocess.run([cli, "check-model", "--model", fam.model, "--model_args", f"pretrained={path},{fam.model_args}", *(["--tasks", tasks] if tasks else [])],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == (1 if lost else 0), proc.stdout + proc.stderr[-3000:]
    rows = {line.split("|")[1].strip(): line.split("|")[3].strip() for line in proc.stdout.splitlines() if line.startswith("| ") and not line.startswith("| task")}
    assert set(rows) == set(tasks.split(",") if tasks else TASKS)  # every layout asked for (default: every one we ship), one row each
    assert {t for t, says in rows.items() if says.startswith("LOST")} == lost
    assert all(says == "as written" for t, says in rows.items() if t not in lost)
    assert "Figures: a 4608 x 3456 figure reaches the model " in proc.stdout and ", observed." in proc.stdout  # the class's budget
    assert not [p for p in os.listdir(tmp_path / "tmp") if p.startswith("earthsci-check-model-")]  # nothing left behind


def test_check_model_says_in_one_line_when_the_run_itself_stops(models_root, hf_home, tmp_path):
    """lmms-eval's llama_vision with its default device_map="" stops before the first doc under transformers
    5: check-model exits 2 (not 1, "a layout is lost") with the reason in one line."""
    path = tiny_models.build("llama_3_2_vision", models_root)
    env = {**os.environ, "HF_HOME": hf_home, "HF_HUB_OFFLINE": "1", "EARTHSCI_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("EARTHSCI_DATA_MIRROR", None)
    cli = os.path.join(os.path.dirname(sys.executable), "lmms-eval-earthsci")
    proc = subprocess.run([cli, "check-model", "--model", "llama_vision", "--model_args", f"pretrained={path},device=cpu", "--tasks", "msearth_mcq"],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
    last = [ln for ln in proc.stderr.splitlines() if ln.startswith("check-model: lmms-eval stopped: ")]
    assert len(last) == 1 and "device_map=auto on a GPU, device=cpu,device_map=cpu on CPU" in last[0], proc.stderr[-3000:]


def readme_cpu_lines():
    """The README's command lines for a machine without CUDA (those with ``device=cpu``), as written."""
    with open(os.path.join(ROOT, "README.md")) as f:
        blocks = re.findall(r"```bash\n(.*?)```", f.read(), re.S)
    return [ln for block in blocks for ln in block.splitlines() if "device=cpu" in ln and not ln.lstrip().startswith("#")]


def test_the_readmes_cpu_examples_work_as_written(models_root, mirror, hf_home, tmp_path):
    """The README's CPU lines (check-model, then two ranks through torch.distributed.run) run as written on a
    tiny model of the family they name: only ``pretrained=`` points at it and ``logs/`` into this test's folder."""
    lines = readme_cpu_lines()
    assert [ln.split()[0] for ln in lines] == ["lmms-eval-earthsci", "python"], lines  # the premise: both examples found
    path = tiny_models.build("llava_onevision", models_root)
    env = cli_env(mirror, hf_home, TMPDIR=str(tmp_path))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]  # `python` is this venv's
    for line in lines:
        assert "pretrained=llava-hf/llava-onevision-qwen2-7b-ov-hf," in line, line
        cmd = line.replace("pretrained=llava-hf/llava-onevision-qwen2-7b-ov-hf,", f"pretrained={path},").replace(" logs/", f" {tmp_path / 'logs'}/")
        proc = subprocess.run(["bash", "-c", cmd], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
        said = proc.stdout + proc.stderr
        if line.startswith("lmms-eval-earthsci check-model"):
            # exit 1: OneVision's template puts images first (C->F, EMMA, MSEarth, MAC), the check ran and said so
            assert proc.returncode == 1 and "| scifibench_cs_c2f |" in proc.stdout and "LOST" in proc.stdout, said[-4000:]
        else:
            assert proc.returncode == 0 and "Traceback" not in said, said[-6000:]
            assert "Running on rank 1 (local rank 1)" in said, said[-3000:]  # the premise: two ranks ran
            res, _ = read_outputs(str(tmp_path / "logs"))
            assert list(res["results"]) == ["musciclaims_rd"] and res["n-samples"]["musciclaims_rd"]["effective"] == 4, res.get("n-samples")
