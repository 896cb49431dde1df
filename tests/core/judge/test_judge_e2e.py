"""The judge pass through the real lmms-eval CLI: verdicts, failures counted, no judge configured,
SIGKILL mid-pass then resume from the cache, and accelerate ranks without duplicate calls."""

import json
import os
import re
import signal
import subprocess
import time

import forkserver
import pytest
from conftest import VENV_BIN, cli_env, openai_args, read_outputs, run_cli
from conftest import cached_verdict_keys as _cached_keys

from lmms_eval_earthsci.core.judge import JudgeConfig, VerdictCache, encode_payload, request_key
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, Fault, text_of

pytestmark = pytest.mark.e2e

JUDGE_MODEL = "judge-m"
SUBJECT_TASKS = ["emma_mini_judge_math", "emma_mini_judge_physics", "emma_mini_judge_chemistry", "emma_mini_judge_coding"]


def model_reply(body):
    """The model under test (openai backend): a distinct response per question, always boxing B."""
    first = text_of(body).strip().splitlines()[0][:40]
    return f"Thinking about: {first}\nSo the answer is \\boxed{{B}}"


def judge_reply(body):
    """A judge that reads the official prompt's last lines: Correct iff the response boxes the answer."""
    text = text_of(body)
    m = re.search(r"Answer: (.*)\nCorrect_or_not:$", text)
    return "Correct" if m and f"\\boxed{{{m.group(1)}}}" in text.rsplit("Response: ", 1)[1] else "Incorrect"


def is_judge(body):
    return body.get("model") == JUDGE_MODEL


class Both:
    """One loopback server playing the model and the judge; ``judge_hook`` may slow or break judging."""

    def __init__(self, judge_hook=None):
        self.judge_hook = judge_hook
        self.answered = []  # judge bodies whose reply was produced

    def __call__(self, body):
        if not is_judge(body):
            return model_reply(body)
        if self.judge_hook is not None:
            out = self.judge_hook(body)
            if out is not None:
                return out
        self.answered.append(body)
        return judge_reply(body)


def judge_env(mirror, hf_home, srv, cache, **extra):
    return cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=srv.base_url, EARTHSCI_JUDGE_MODEL=JUDGE_MODEL, EARTHSCI_JUDGE_API_KEY="sk-judge-secret", EARTHSCI_JUDGE_CACHE=str(cache), **extra)


def model_args(srv):
    return ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=4)]


def judged_bodies(srv):
    return [b for b in srv.requests if is_judge(b)]


# fixture docs whose answer is B (Math_2, coding_2): the judge says Correct exactly there
EXPECTED = {"emma_mini_judge_math": 100 / 3, "emma_mini_judge_physics": 0.0, "emma_mini_judge_chemistry": 0.0, "emma_mini_judge_coding": 50.0}


def _key(body):
    return request_key(JudgeConfig(model=JUDGE_MODEL, api_type="openai"), encode_payload(body))


def test_judge_verdicts_failures_and_samples(mirror, hf_home, tmp_path):
    # coding_1's judge request always fails with 500: counted, scored wrong, nothing raised
    def hook(body):
        return Fault("status", status=500) if "plt.bar" in text_of(body) or "Which code produces" in text_of(body) else None

    with FakeOpenAIServer(responder=Both(hook)) as srv:
        out = tmp_path / "out"
        env = judge_env(mirror, hf_home, srv, tmp_path / "cache", EARTHSCI_JUDGE_MAX_RETRIES="1")
        run_cli(model_args(srv) + ["--tasks", "emma_mini_judge", "--output_path", str(out), "--log_samples"], env, str(tmp_path))
    res, samples = read_outputs(str(out))
    r = res["results"]
    for task, acc in EXPECTED.items():
        assert r[task]["emma_judge_acc,none"] == pytest.approx(acc), task
        assert r[task]["emma_acc,none"] == pytest.approx(acc), task  # the rule-based scorer agrees here
    assert r["emma_mini_judge_coding"]["emma_judge_failed,none"] == 1
    assert r["emma_mini_judge_math"]["emma_judge_failed,none"] == 0
    assert r["emma_mini_judge"]["emma_judge_acc,none"] == pytest.approx(200 / 9)
    # raw reply and parsed verdict in every logged sample; the failure is recorded with its error
    logged = {s["emma_acc"]["pid"]: s["emma_judge_acc"]["judge"] for t in SUBJECT_TASKS for s in samples[t]}
    assert len(logged) == 9
    request = logged["Math_2"].pop("request")
    assert logged["Math_2"] == {"status": "judged", "verdict": True, "reply": "Correct", "error": None, "cause": None, "cached": False}
    assert request["images"] == 0 and request["text"].endswith("Answer: B\nCorrect_or_not:")  # what the judge saw
    assert logged["Math_1"]["verdict"] is False and logged["Math_1"]["reply"] == "Incorrect"
    assert logged["coding_1"]["status"] == "request_failed" and "HTTP 500" in logged["coding_1"]["error"] and logged["coding_1"]["cause"] == "HTTP 500"
    # judged tasks keep their breakdowns (of emma_judge_acc); no per-sample log field shows up as a metric
    assert r["emma_mini_judge_math"]["emma_type_multiple_choice,none"] is not None
    assert not any(isinstance(v, list) for t in SUBJECT_TASKS for v in r[t].values())
    # the key is never written anywhere
    for path in out.rglob("*"):
        if path.is_file():
            assert "sk-judge-secret" not in path.read_text(errors="ignore"), path


def test_no_judge_configured_reports_unavailable(mirror, hf_home, tmp_path):
    out = tmp_path / "out"
    proc = run_cli(["--model", "dummy", "--model_args", "response=\\boxed{B}", "--tasks", "emma_mini_judge", "--output_path", str(out)], cli_env(mirror, hf_home), str(tmp_path))
    res, _ = read_outputs(str(out))
    r = res["results"]
    assert r["emma_mini_judge"]["emma_judge_acc,none"] is None
    assert r["emma_mini_judge_math"]["emma_judge_acc,none"] is None and r["emma_mini_judge_math"]["emma_judge_failed,none"] is None
    assert r["emma_mini_judge"]["emma_acc,none"] == pytest.approx(200 / 9)  # rule-based metrics unaffected
    assert (proc.stdout + proc.stderr).count("no LLM judge configured") == 1


def _wait_for(cond, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigkill_mid_pass_then_resume_reuses_verdicts(mirror, hf_home, tmp_path):
    slow = Both(judge_hook=lambda body: time.sleep(0.4))  # judging is slow; the run is killed during it
    cache = tmp_path / "cache"
    with FakeOpenAIServer(responder=slow) as srv:
        env = judge_env(mirror, hf_home, srv, cache, EARTHSCI_JUDGE_CONCURRENCY="1")
        args = model_args(srv) + ["--tasks", "emma_mini_judge", "--output_path", str(tmp_path / "killed"), "--verbosity", "DEBUG"]
        proc = subprocess.Popen([os.path.join(VENV_BIN, "lmms-eval")] + args, env=env, cwd=str(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_for(lambda: len(slow.answered) >= 3, 240, "three judge verdicts")
            # verdicts are committed in batches at most FLUSH_SECONDS after they arrive; the next
            # request takes 0.4 s, so the kill still lands mid-pass
            time.sleep(5 * VerdictCache.FLUSH_SECONDS)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        before = _cached_keys(str(cache))
        assert len(before) >= 3
        assert before <= {_key(b) for b in slow.answered}  # only verdicts actually obtained are cached

        first = len(srv.requests)
        resumed = tmp_path / "resumed"
        run_cli(model_args(srv) + ["--tasks", "emma_mini_judge", "--output_path", str(resumed), "--log_samples"], judge_env(mirror, hf_home, srv, cache), str(tmp_path))
        rerun_judge = [b for b in srv.requests[first:] if is_judge(b)]
        all_keys = {_key(b) for b in judged_bodies(srv)}
    # cached verdicts were not requested again; everything else was, once
    assert not ({_key(b) for b in rerun_judge} & before)
    assert len(rerun_judge) == len({_key(b) for b in rerun_judge}) == len(all_keys - before)

    # identical results to an uninterrupted run with an empty cache
    with FakeOpenAIServer(responder=Both()) as srv2:
        clean = tmp_path / "clean"
        run_cli(model_args(srv2) + ["--tasks", "emma_mini_judge", "--output_path", str(clean), "--log_samples"], judge_env(mirror, hf_home, srv2, tmp_path / "cache2"), str(tmp_path))
    (r1, s1), (r2, s2) = read_outputs(str(resumed)), read_outputs(str(clean))
    for task in SUBJECT_TASKS + ["emma_mini_judge"]:
        assert r1["results"][task]["emma_judge_acc,none"] == r2["results"][task]["emma_judge_acc,none"], task
    def verdicts(s):
        return {x["emma_acc"]["pid"]: (x["emma_judge_acc"]["judge"]["verdict"], x["emma_judge_acc"]["judge"]["reply"]) for t in SUBJECT_TASKS for x in s[t]}
    assert verdicts(s1) == verdicts(s2) and len(verdicts(s1)) == 9
    cached = [x["emma_judge_acc"]["judge"]["cached"] for t in SUBJECT_TASKS for x in s1[t]]
    assert sum(cached) >= len(before)


def test_judge_rejecting_every_doc_reports_null_and_the_cause(mirror, hf_home, tmp_path):
    # a wrong key: 401 on every judge request; the pass stops at the first, the metric is null, not 0
    unauthorized = Both(judge_hook=lambda body: Fault("status", status=401))
    with FakeOpenAIServer(responder=unauthorized) as srv:
        out = tmp_path / "out"
        env = judge_env(mirror, hf_home, srv, tmp_path / "cache", EARTHSCI_JUDGE_CONCURRENCY="1")
        # every benchmark's judged tasks (MSEarth open-ended and captions, SciFIBench's LLM extractor, MAC's DAD)
        tasks = "emma_mini_judge_math,emma_mini_judge_coding,msearth_open,msearth_caption,scifibench_cs_f2c_judge,mac2025_dad_i2t_option"
        proc = run_cli(model_args(srv) + ["--tasks", tasks, "--output_path", str(out), "--log_samples"], env, str(tmp_path))
        judge_requests = len(judged_bodies(srv))
    res, samples = read_outputs(str(out))
    r = res["results"]
    assert r["emma_mini_judge_math"]["emma_judge_acc,none"] is None and r["emma_mini_judge_math"]["emma_judge_failed,none"] == 3
    assert r["emma_mini_judge_math"]["emma_acc,none"] == pytest.approx(100 / 3)  # rule-based metrics unaffected
    assert judge_requests <= 6  # at most one per task's pass, not one per doc
    # every metric aggregated as a judged mean (the headline and the breakdowns derived from it) is null,
    # never 0.00, in every judged task of every benchmark: no doc got a verdict
    # a metric is derived from a task's judged headline when it scores a slice of the docs (some, not all)
    # and each doc it scores has the headline's score (a breakdown): read from the samples, whatever the
    # task's YAML says (text metrics score every doc, and BLEU may be 0 where the judge failed)
    def score(v):
        return v.get("score") if isinstance(v, dict) else v

    derived = set()
    for t, c in res["configs"].items():
        head = c["metric_list"][0]
        if "judged_mean" not in str(head["aggregation"]):
            continue
        for m in (x["metric"] for x in c["metric_list"][1:]):
            scored = [s for s in samples[t] if isinstance(score(s.get(m)), (int, float))]
            if 0 < len(scored) < len(samples[t]) and all(score(s[m]) == score(s[head["metric"]]) for s in scored):
                derived.add((t, m))
        derived.add((t, head["metric"]))
    assert {t for t, _ in derived} >= {"emma_mini_judge_math", "msearth_open"} and len(derived) > 10
    assert {(t, m): r[t][f"{m},none"] for t, m in derived if r[t].get(f"{m},none") is not None} == {}
    # nor a CLT standard error beside the null (lmms-eval computed 0.0 from the failed docs' scores)
    assert {(t, m): r[t][f"{m}_stderr_clt,none"] for t, m in derived if r[t].get(f"{m}_stderr_clt,none", "N/A") != "N/A"} == {}
    records = [s["emma_judge_acc"]["judge"] for s in samples["emma_mini_judge_math"]]
    assert all(j["status"] == "request_failed" and j["cause"] == "HTTP 401" for j in records)
    log = proc.stdout + proc.stderr
    # one summary line per judged task, in each stream that gets lmms-eval's log (a task of this run adds a
    # stdout sink to loguru: the lines then show in both)
    for name in ("emma_mini_judge_math", "emma_mini_judge_coding"):
        assert max(proc.stdout.count(f"judge summary {name}:"), proc.stderr.count(f"judge summary {name}:")) == 1
    assert '"failures_by_cause": {"HTTP 401": 3}' in log
    assert "emma_mini_judge_coding: 2 of 2 judged docs failed (HTTP 401 x 2)" in log


def test_on_failure_raise_stops_the_run(mirror, hf_home, tmp_path):
    flaky = Both(judge_hook=lambda body: Fault("status", status=500) if "Which code produces" in text_of(body) else None)
    with FakeOpenAIServer(responder=flaky) as srv:
        env = judge_env(mirror, hf_home, srv, tmp_path / "cache", EARTHSCI_JUDGE_MAX_RETRIES="0", EARTHSCI_JUDGE_ON_FAILURE="raise")
        cmd = [os.path.join(VENV_BIN, "lmms-eval")] + model_args(srv) + ["--tasks", "emma_mini_judge_coding", "--output_path", str(tmp_path / "out"), "--verbosity", "DEBUG"]
        proc = forkserver.subprocess_run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "JudgeFailedError" in proc.stderr and "emma_mini_judge_coding: 1 of 2 judged docs failed (HTTP 500 x 1)" in proc.stderr


def test_a_refused_judge_ends_the_run_with_the_endpoint_the_counts_and_the_rescore_that_finishes_it(mirror, hf_home, tmp_path):
    """The judge's endpoint refuses connections: the run exits 0 (the answers are saved), its last lines
    name the task, the failures by cause, the endpoint and its setting, and a rescore command; that
    command, run once the judge answers, scores the judged metric."""
    import shlex
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with FakeOpenAIServer(responder=Both()) as srv:
        out = tmp_path / "out"
        env = cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=dead, EARTHSCI_JUDGE_MODEL=JUDGE_MODEL, EARTHSCI_JUDGE_CACHE=str(tmp_path / "cache"), EARTHSCI_JUDGE_MAX_RETRIES="0")
        proc = run_cli(model_args(srv) + ["--tasks", "emma_mini_judge_math", "--output_path", str(out), "--log_samples"], env, str(tmp_path))
        tail = proc.stderr.strip().splitlines()[-3:]
        assert tail[0] == f"lmms_eval_earthsci: emma_mini_judge_math: the judge failed on 3 of 3 docs (ConnectionRefusedError x 3); endpoint {dead} (EARTHSCI_JUDGE_BASE_URL)", tail
        assert tail[1].startswith("lmms_eval_earthsci: the model's answers are saved") and tail[2].startswith("  lmms-eval-earthsci rescore ")
        res, _ = read_outputs(str(out))
        assert res["results"]["emma_mini_judge_math"]["emma_judge_acc,none"] is None
        # the printed command, with the judge back
        cmd = shlex.split(tail[2].strip())
        cmd[0] = os.path.join(VENV_BIN, cmd[0])
        fixed = forkserver.subprocess_run(cmd, env={**env, "EARTHSCI_JUDGE_BASE_URL": srv.base_url}, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
        assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr[-3000:]
    res2, _ = read_outputs(cmd[cmd.index("--out") + 1])
    assert res2["results"]["emma_mini_judge_math"]["emma_judge_acc,none"] == pytest.approx(EXPECTED["emma_mini_judge_math"])


def test_a_dead_judge_is_asked_once_per_run_not_once_per_judged_task(mirror, hf_home, tmp_path):
    """A judge endpoint that drops every connection, three judged tasks (fewer docs each than the breaker's
    threshold): the first task's pass spends its retry chain on each of its docs, the endpoint is then
    known dead and the other tasks' passes send nothing; every task ends with its failures counted under
    the same cause."""
    dropping = Both(judge_hook=lambda body: Fault("drop"))
    tasks = ["emma_mini_judge_math", "emma_mini_judge_coding", "msearth_open"]
    with FakeOpenAIServer(responder=dropping) as srv:
        env = judge_env(mirror, hf_home, srv, tmp_path / "cache", EARTHSCI_JUDGE_MAX_RETRIES="1", EARTHSCI_JUDGE_CONCURRENCY="1")
        proc = run_cli(model_args(srv) + ["--tasks", ",".join(tasks), "--output_path", str(tmp_path / "out"), "--log_samples"], env, str(tmp_path))
        asked = judged_bodies(srv)
    res, _ = read_outputs(str(tmp_path / "out"))
    docs = {t: res["n-samples"][t]["effective"] for t in tasks}
    distinct = {json.dumps(b, sort_keys=True) for b in asked}
    # one task's docs, each tried twice (a first attempt and one retry); nothing for the two others
    assert len(asked) == 2 * len(distinct) and len(distinct) in docs.values() and len(distinct) < sum(docs.values()), (len(asked), docs)
    for t in tasks:
        assert re.search(rf"lmms_eval_earthsci: {t}: the judge failed on {docs[t]} of {docs[t]} docs \(ServerDisconnectedError x {docs[t]}\)", proc.stderr), t
