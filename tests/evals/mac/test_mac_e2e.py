"""MAC through the real lmms-eval CLI: the official request layout on the wire (system message, text
first, then the cover or the four covers in A-D order: pixels asserted), the simple backend, metrics on
fixture docs worked out by hand, and two real ranks equal to one."""

import base64
import importlib.util
import io
import json
import os
import re

import pytest
from conftest import cli_env, openai_args, read_outputs, run_cli, two_ranks
from PIL import Image

from lmms_eval_earthsci.evals.mac import tasks as mac_tasks
from lmms_eval_earthsci.evals.mac.benchmark import DATASET as MAC_REPO
from lmms_eval_earthsci.evals.mac.fixtures import mac_rows
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, image_urls, text_of

pytestmark = pytest.mark.e2e

# lmms-eval >= 0.7 keeps per-response token counts (Instance.token_counts, results["usage"])
REPORTS_TOKENS = importlib.util.find_spec("lmms_eval.models.model_utils.usage_metrics") is not None


def _gold_by_text(direction, domain):
    kw = mac_tasks._task_kwargs({"direction": direction, "domain": domain})
    return {mac_tasks.user_text(r, kw): r for r in mac_rows(direction, domain)}


ROWS = {(d, m): _gold_by_text(d, m) for d in ("i2t", "t2i") for m in ("info", "option")}


def _cover_issue():
    """{pixel digest: issue id} of the fixture covers (a T2I request's four images name its options)."""
    import hashlib

    from lmms_eval_earthsci.evals.mac.fixtures import MAC_ISSUES, MAC_JOURNALS, draw_cover

    out = {}
    for n, (_, journal) in enumerate(MAC_JOURNALS):
        for k, issue in enumerate(MAC_ISSUES):
            out[hashlib.sha1(draw_cover(10 * n + k, journal).convert("RGB").tobytes()).hexdigest()] = issue
    return out


COVERS = _cover_issue()


def _gold(body, text):
    """The right letter, read from the request itself: I2T by its (unique) user text; T2I (the info and
    option variants share a story) from which of the four images is the story's own cover."""
    import hashlib
    import re

    for (direction, _), rows in ROWS.items():
        for t, row in rows.items():
            if t in text and direction == "i2t":
                return row
    issue = re.search(r"issue (\S+) of", text).group(1)
    issues = [COVERS[hashlib.sha1(_decode(u).convert("RGB").tobytes()).hexdigest()] for u in image_urls(body)]
    row = next(r for rows in ROWS.values() for t, r in rows.items() if t in text)
    return {**row, "answer": "ABCD"[issues.index(issue)]}


def responder(body):
    """Right with confidence 0.7 on ACS and Cell rows, wrong (0.6 on a wrong letter) on Nature rows,
    unparsable prose on Science rows."""
    text = text_of(body)
    row = _gold(body, text)
    gold = row["answer"]
    if "Science" in row["journal"]:
        return f"I'd say the answer is {gold}."
    if "Nature" in row["journal"]:
        wrong = "ABCD"[("ABCD".index(gold) + 1) % 4]
        probs = {x: (0.6 if x == wrong else 0.4 / 3) for x in "ABCD"}
    else:
        probs = {x: (0.7 if x == gold else 0.1) for x in "ABCD"}
    return "```json\n{" + ", ".join(f'"{k}": {v}' for k, v in probs.items()) + "}\n```"


def _pixels(img):
    return list(img.convert("RGB").getdata())


def _decode(url):
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def _env(mirror, hf_home):
    return cli_env(mirror, hf_home, OMP_NUM_THREADS="1")


def _run(mirror, hf_home, tmp_path, name, tasks, extra=(), launcher=None, env=None):
    with FakeOpenAIServer(responder=responder) as srv:
        out = tmp_path / name
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", tasks, "--output_path", str(out), "--log_samples", *extra]
        proc = run_cli(args, env or _env(mirror, hf_home), str(tmp_path), launcher=launcher)
        bodies = list(srv.requests)
    res, samples = read_outputs(str(out))
    return proc.stdout + proc.stderr, res, samples, bodies


def _cover(mirror, rel, side=512):
    img = Image.open(os.path.join(mirror, *MAC_REPO.split("/"), *rel[len("MAC_Bench/"):].split("/"))).convert("RGB")
    img.thumbnail((side, side))
    return img


@pytest.fixture(scope="module")
def chat_run(mirror, hf_home, tmp_path_factory):
    """One chat-backend run of all four MAC-2025 tasks, shared by the tests that assert on it."""
    return _run(mirror, hf_home, tmp_path_factory.mktemp("mac_chat"), "chat", "mac2025")


@pytest.mark.parametrize("route", ["chat", "simple"])
def test_requests_and_metrics(route, mirror, hf_home, tmp_path, request):
    if route == "chat":
        log, res, samples, bodies = request.getfixturevalue("chat_run")
    else:
        log, res, samples, bodies = _run(mirror, hf_home, tmp_path, route, "mac2025", extra=["--force_simple"])
    r = res["results"]
    for (direction, domain) in mac_tasks.CSV:
        task = f"mac2025_{direction}_{domain}"
        m = r[task]
        # 8 docs: ACS and Cell right (4), Nature wrong (2), Science unparsed (2)
        assert m["mac_acc,none"] == pytest.approx(50.0) and m["mac_unparsable,none"] == pytest.approx(25.0)
        assert m["mac_acc_lenient,none"] == pytest.approx(75.0)  # the Science answers name the right letter
        assert (m["mac_publisher_acs,none"], m["mac_publisher_nature,none"], m["mac_publisher_science,none"]) == (100.0, 0.0, 0.0)
        # ECE over the 6 parsed docs: bin (10/15, 11/15] 4 docs conf .7 acc 1; bin (8/15, 9/15] 2 docs conf .6 acc 0
        assert m["mac_ece,none"] == pytest.approx(0.3 * 4 / 6 + 0.6 * 2 / 6)
        assert m["mac_nll,none"] == pytest.approx((-4 * __import__("math").log(0.7) - 2 * __import__("math").log(0.4 / 3)) / 6)
        assert len(samples[task]) == 8
        assert {s["mac_acc"]["route"] for s in samples[task]} == {route}
    assert len(bodies) == 32
    for body in bodies:
        msgs = body["messages"]
        text = text_of(body)
        (direction, domain), row = next((k, rows[t]) for k, rows in ROWS.items() for t in rows if t in text)
        if direction == "t2i":  # the two T2I variants share a story: the covers tell them apart
            row = next(r for (d, _), rows in ROWS.items() for t, r in rows.items() if d == "t2i" and t in text and [_pixels(_decode(u)) for u in image_urls(body)] == [_pixels(_cover(mirror, r[f"option_{x}"])) for x in "ABCD"])
        system = mac_tasks.I2T_SYSTEM if direction == "i2t" else mac_tasks.T2I_SYSTEM
        user = mac_tasks.user_text(row, mac_tasks._task_kwargs({"direction": direction}))
        if route == "chat":
            assert [m["role"] for m in msgs] == ["system", "user"]
            assert text_of({"messages": msgs[:1]}) == system
            parts = msgs[1]["content"]
            assert [p["type"] for p in parts] == ["text"] + ["image_url"] * (1 if direction == "i2t" else 4)
            assert parts[0]["text"] == user
        else:
            assert system + "\n" + user in text
        covers = [row["cover_image"]] if direction == "i2t" else [row[f"option_{x}"] for x in "ABCD"]
        assert [_pixels(_decode(u)) for u in image_urls(body)] == [_pixels(_cover(mirror, c)) for c in covers]


def test_distractor_shares_by_embedding_model(chat_run):
    """The responder's wrong answers (Nature rows: the letter after the gold) counted by the embedding model
    whose distractor they picked; a share of the wrong picks per model, in the results and per doc."""
    _, res, samples, _ = chat_run
    for (direction, domain) in mac_tasks.CSV:
        task = f"mac2025_{direction}_{domain}"
        wrong = [r[f"option_{'ABCD'[('ABCD'.index(r['answer']) + 1) % 4]}_embedding_name"] for r in mac_rows(direction, domain) if "Nature" in r["journal"]]
        assert len(wrong) == 2 and "groundtruth" not in wrong
        m = res["results"][task]
        models = ("clip", "vith", "vitg", "allv2", "multibv1", "sbert", "ave", "siglip", "doubao", "qwen", "other")
        assert {k: m[f"mac_distractor_{k},none"] for k in models} == {k: 100.0 * sum(w.lower() == k for w in wrong) / 2 for k in models}
        picked = {(s["mac_acc"]["journal"], s["mac_acc"]["id"]): (s["mac_acc"]["picked_embedding"], s["mac_acc"]["distractor"]) for s in samples[task]}
        for r in mac_rows(direction, domain):
            got = picked[(r["journal"], r["id"])]
            if "Nature" in r["journal"]:
                assert got[0] == got[1] and got[0] in wrong
            else:  # right (ACS, Cell) or unparsed (Science): no distractor picked
                assert got == ("groundtruth" if "Science" not in r["journal"] else None, None)


def test_two_real_ranks_equal_one(chat_run, mirror, hf_home, tmp_path):
    """Two ranks against the one-rank chat run (same backend, responder and settings)."""

    launcher = two_ranks(29544)
    log1, r1, s1, _ = chat_run
    assert "world_size2" not in log1
    log2, r2, s2, _ = _run(mirror, hf_home, tmp_path, "two", "mac2025_i2t_info,mac2025_t2i_option", launcher=launcher)
    assert "Running on rank 1 (local rank 1)" in log2 and "world_size2" in log2, "the launcher started one process"
    for task in ("mac2025_i2t_info", "mac2025_t2i_option"):
        # every metric (the alias is lmms-eval's display name: indented when the task ran inside its group)
        assert {k: v for k, v in r1["results"][task].items() if "stderr" not in k and k != "alias"} == {k: v for k, v in r2["results"][task].items() if "stderr" not in k and k != "alias"}
        assert {s["doc_id"]: s["mac_acc"] for s in s1[task]} == {s["doc_id"]: s["mac_acc"] for s in s2[task]}


def test_hub_route_fetches_each_cover_once_and_matches_the_mirror(chat_run, mirror, hf_home, tmp_path):
    """The module's chat run made again over the Hub (same backend, responder and settings, no mirror): its
    mirror side is the shared chat run, whose responder reads each cover's pixels to answer."""
    from lmms_eval_earthsci.testing.hub_server import FakeHubServer

    repo = os.path.join(mirror, *MAC_REPO.split("/"))
    with FakeHubServer({MAC_REPO: repo}) as hub:
        base = _env(mirror, hf_home)
        base.pop("EARTHSCI_DATA_MIRROR")
        _, res_h, s_h, _ = _run(mirror, hf_home, tmp_path, "hub", "mac2025", env=hub.client_env(hf_home=str(tmp_path / "hf_hub"), base=base))
        downloads = [f for _, _, f in hub.downloaded_files()]
    _, res_m, s_m, _ = chat_run
    covers = [f for f in downloads if f.endswith(".png")]
    # every cover the rows name, once for the four tasks; the CSVs are the variants' own, never anything else
    named = {r[c][len("MAC_Bench/"):] for d, m in mac_tasks.CSV for r in mac_rows(d, m) for c in (["cover_image"] if d == "i2t" else [f"option_{x}" for x in "ABCD"])}
    assert sorted(covers) == sorted(named)
    assert sorted(f for f in downloads if f.endswith(".csv")) == sorted(mac_tasks.CSV.values())
    for task in (f"mac2025_{d}_{m}" for d, m in mac_tasks.CSV):
        assert res_h["results"][task] == res_m["results"][task]
        assert [s["mac_acc"] for s in s_h[task]] == [s["mac_acc"] for s in s_m[task]]
        assert res_m["configs"][task]["metadata"]["earthsci_data"]["source"] == "mirror"  # the premise: two routes
        info = res_h["configs"][task]["metadata"]["earthsci_data"]
        assert info["source"] == "hub" and info["repo_files"]["revision"] == hub.sha(MAC_REPO) and info["repo_files"]["fallbacks"] == {}


def test_dad_two_stages_through_the_judge_engine(mirror, hf_home, tmp_path):
    """Stage 1 (the model under test) and stage 2 (a reasoning model on its own endpoint) played by one
    loopback server: the stage-1 request is the DAD prompt with the cover(s); the stage-2 request carries
    the description; the reasoner's reasoning_content is logged apart; a stage-2 failure is wrong and
    counted."""
    import hashlib

    from lmms_eval_earthsci.evals.mac import dad as mac_dad
    from lmms_eval_earthsci.testing.openai_server import Fault, Reasoned

    rows = {(d, m): mac_rows(d, m) for d, m in (("i2t", "info"), ("t2i", "option"))}

    def describe(body, text):
        """Stage 1: name the gold issue in the description (the model 'sees' it)."""
        for row in rows[("i2t", "info")]:
            if mac_tasks.options_text(row) in text:
                return row["journal"], row["id"]
        issue = re.search(r"The story is On the cover: issue (\S+) of (.+?) shows", text)
        return issue.group(2), issue.group(1)

    def responder(body):
        text = text_of(body)
        if body.get("model") == "reasoner-m":
            journal, issue = re.search(r"GOLD-ISSUE (\S+) OF (.+?)\.", text).group(1, 2)[::-1]
            if "Science" in journal:
                return Fault("status", 500)
            # the options (I2T: the stories; T2I: "the image descriptions" name the covers in order)
            if "following options:" in text:
                letter = next(x for x in "ABCD" if re.search(rf"\n?{x}: On the cover: issue {re.escape(issue)} of", text))
            else:
                letter = re.search(r"GOLD-LETTER (\w)", text).group(1)
            probs = {x: (0.7 if x == letter else 0.1) for x in "ABCD"}
            return Reasoned("{" + ", ".join(f'"{k}": {v}' for k, v in probs.items()) + "}", f"Thinking about {journal}.")
        journal, issue = describe(body, text)
        extra = ""
        if image_urls(body) and len(image_urls(body)) == 4:
            issues = [COVERS[hashlib.sha1(_decode(u).convert("RGB").tobytes()).hexdigest()] for u in image_urls(body)]
            extra = f" GOLD-LETTER {'ABCD'[issues.index(issue)]}"
        return f"The image shows a cover. GOLD-ISSUE {issue} OF {journal}.{extra}"

    with FakeOpenAIServer(responder=responder) as srv:
        out = tmp_path / "dad"
        env = cli_env(
            mirror, hf_home, OMP_NUM_THREADS="1", EARTHSCI_DAD_BASE_URL=srv.base_url, EARTHSCI_DAD_MODEL="reasoner-m",
            EARTHSCI_JUDGE_CACHE=str(tmp_path / "cache"), EARTHSCI_JUDGE_MAX_RETRIES="1", EARTHSCI_DAD_REASONING_EFFORT="high",
        )
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", "mac2025_dad_i2t_info,mac2025_dad_t2i_option", "--output_path", str(out), "--log_samples"]
        proc = run_cli(args, env, str(tmp_path))
        bodies = list(srv.requests)
    res, samples = read_outputs(str(out))
    for task in ("mac2025_dad_i2t_info", "mac2025_dad_t2i_option"):
        m = res["results"][task]
        # ACS, Cell, Nature right (6 of 8); Science: stage 2 failed twice -> wrong, counted, unparsed
        assert m["mac_acc,none"] == pytest.approx(75.0) and m["mac_dad_failed,none"] == 2 and m["mac_unparsable,none"] == pytest.approx(25.0)
        recs = [s["mac_acc"] for s in samples[task]]
        ok = [r for r in recs if r["path"] == "json"]
        assert len(ok) == 6 and all(r["stage2"]["reasoning_content"].startswith("Thinking about") for r in ok)
        assert sorted(r["stage2"]["cause"] for r in recs if r["path"] == "stage-2 failed") == ["HTTP 500", "HTTP 500"]
    stage1 = [b for b in bodies if b.get("model") != "reasoner-m"]
    stage2 = [b for b in bodies if b.get("model") == "reasoner-m"]
    assert len(stage1) == 16 and len(stage2) == 16 + 4  # the four Science docs asked twice (1 retry)
    for b in stage1:
        assert [m["role"] for m in b["messages"]] == ["system", "user"]
        system = text_of({"messages": b["messages"][:1]})
        assert system in (mac_dad.DAD_I2T_SYSTEM, mac_dad.DAD_T2I_SYSTEM)
        parts = b["messages"][1]["content"]
        assert parts[0]["type"] == "text" and [p["type"] for p in parts[1:]] == ["image_url"] * (1 if system == mac_dad.DAD_I2T_SYSTEM else 4)
        if system == mac_dad.DAD_I2T_SYSTEM:  # question and options joined with no separator, as the original
            assert "do not give your final answer: Which of the following options best describe the cover image?A: On the cover" in parts[0]["text"]
    for b in stage2:
        assert b["reasoning_effort"] == "high" and not image_urls(b)
        assert text_of({"messages": b["messages"][:1]}) in (mac_dad.STAGE2_I2T_SYSTEM, mac_dad.STAGE2_T2I_SYSTEM)
        assert "The image shows a cover. GOLD-ISSUE" in text_of(b)
    # tokens of both stages in each task's summary line: stage 1 as the backend reported them (the
    # loopback counts whitespace words), stage 2 from the reasoner's replies (failed requests have none)
    log = proc.stdout + proc.stderr
    for task in ("mac2025_dad_i2t_info", "mac2025_dad_t2i_option"):
        line = re.search(rf"judge summary {task}: (\{{.*\}})", log)
        assert line, f"no summary line for {task}"
        summary = json.loads(line.group(1))
        answers = [r["stage2"]["reply"] for r in (s["mac_acc"] for s in samples[task]) if r["path"] == "json"]
        assert summary["completion_tokens"] == sum(len(a.split()) for a in answers) > 0
        if not REPORTS_TOKENS:  # lmms-eval < 0.7 keeps no per-response token counts
            assert summary["model_tokens"] is None
            continue
        descriptions = [s["filtered_resps"] for s in samples[task]]
        prompts = sum(tc["input_tokens"] for s in samples[task] for tc in s["token_counts"])
        assert summary["model_tokens"] == {"docs": 8, "input_tokens": prompts, "output_tokens": sum(len(d.split()) for d in descriptions), "reasoning_tokens": 0}
        assert prompts > 8 * 50
    if REPORTS_TOKENS:  # and in lmms-eval's own usage record, stage 2 as source "judge" beside the model's calls
        usage = res["usage"]["by_source"]
        assert usage["judge"]["n_api_calls"] == 12 and usage["model"]["n_api_calls"] == 16


def test_dad_killed_during_stage_two_resumes_without_asking_again(mirror, hf_home, tmp_path):
    """kill -9 while stage 2 runs (after stage 1 finished and K stage-2 answers were committed); the rerun
    (same lmms-eval --use_cache, same verdict cache) asks the model nothing and the reasoner only the
    docs it had not answered. lmms-eval alone would ask stage 1 again (it merges a run's responses only
    when the run ends): core.hardening.response_cache.recover_killed_response_runs merges the killed run's shard first."""
    import signal
    import subprocess
    import threading
    import time

    from conftest import VENV_BIN

    K = 3
    state = {"mode": "block", "answered": 0}
    release = threading.Event()

    def responder(body):
        if body.get("model") == "reasoner-m":
            if state["mode"] == "block" and state["answered"] >= K:
                release.wait(60)  # the run is killed while this request hangs
                return "{}"
            state["answered"] += 1
            letter = "ABCD"[len(text_of(body)) % 4]
            return f'{{"{letter}": 0.7}}'
        return "The image shows a cover."

    tasks = "mac2025_dad_i2t_info"
    with FakeOpenAIServer(responder=responder) as srv:
        def run(name, background=False):
            env = cli_env(mirror, hf_home, OMP_NUM_THREADS="1", EARTHSCI_DAD_BASE_URL=srv.base_url, EARTHSCI_DAD_MODEL="reasoner-m", EARTHSCI_DAD_CONCURRENCY="1", EARTHSCI_JUDGE_CACHE=str(tmp_path / "verdicts"))
            args = [
                os.path.join(VENV_BIN, "lmms-eval"), "--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", tasks,
                "--output_path", str(tmp_path / name), "--log_samples", "--use_cache", str(tmp_path / "responses"), "--verbosity", "DEBUG",
            ]
            if background:
                return subprocess.Popen(args, env=env, cwd=str(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            return run_cli(args[1:-2], env, str(tmp_path))

        proc = run("killed", background=True)
        deadline = time.time() + 300
        while sum(b.get("model") == "reasoner-m" for b in srv.requests) <= K and time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.5)  # the K answers are committed within 20 ms
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        release.set()
        first = list(srv.requests)
        # premise: killed mid-stage-2, with stage 1 complete and K stage-2 answers given
        assert proc.returncode == -signal.SIGKILL
        assert sum(b.get("model") != "reasoner-m" for b in first) == 8 and state["answered"] == K
        assert not list((tmp_path / "killed").glob("**/*_results.json"))
        state["mode"] = "free"
        srv.requests.clear()
        run("resumed")
        second = list(srv.requests)
    assert [b for b in second if b.get("model") != "reasoner-m"] == []  # stage 1 from lmms-eval's cache
    assert sum(b.get("model") == "reasoner-m" for b in second) == 8 - K  # stage 2: only what was never answered
    res, samples = read_outputs(str(tmp_path / "resumed"))
    assert len(samples[tasks]) == 8 and res["results"][tasks]["mac_dad_failed,none"] == 0
    assert sum(s["mac_acc"]["stage2"]["cached"] for s in samples[tasks]) == K
