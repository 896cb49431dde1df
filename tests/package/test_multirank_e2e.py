"""Two real ranks against one: the same results, the same samples, every judged doc requested exactly
once, and a judge cache directory that does not exist yet opened by both ranks at once.

On CPU, ``accelerate launch --cpu --num_processes 2`` starts ONE process; two real ranks need
``--multi_gpu`` (gloo) or torchrun. The test proves its premise from each rank's own log lines, so it
fails if the launcher ever falls back to one process. lmms-eval is started through a test shim that lets
0.6.x gather over gloo (see _gloo_allgather_shim.py; a no-op on 0.7)."""

import hashlib
import json
import re

import pytest
from conftest import cached_verdict_keys, cli_env, openai_args, read_outputs, run_cli, two_ranks

from lmms_eval_earthsci.core.judge import JudgeConfig, encode_payload, request_key
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, text_of

pytestmark = pytest.mark.e2e

JUDGE_MODEL = "judge-m"
# one judged task (or group) per benchmark, image judges included
TASKS = "emma_mini_judge,msearth_open,msearth_caption,scifibench_cs_f2c_judge"
JUDGED = ["emma_mini_judge_math", "emma_mini_judge_physics", "emma_mini_judge_chemistry", "emma_mini_judge_coding", "msearth_open", "msearth_caption", "scifibench_cs_f2c_judge"]

TWO_RANKS = two_ranks(29541)


def _h(text):
    return int(hashlib.sha1(text.encode()).hexdigest(), 16)


def responder(body):
    """Model and judge in one loopback server, deterministic per request, with mixed verdicts."""
    text = text_of(body)
    if body.get("model") != JUDGE_MODEL:
        # unique per doc: two docs never share a judge request (the SciFIBench extractor sees only this)
        return f"The answer is \\boxed{{{'ABCD'[_h(text) % 4]}}}. Late spring (ref {_h(text) % 10**8})."
    if "Correct_or_not:" in text:  # EMMA
        return "Correct" if _h(text) % 2 else "Incorrect"
    if "Generated Answer:" in text:  # MSEarth open-ended
        return '{"is_correct": %s}' % ("true" if _h(text) % 2 else "false")
    if '"score"' in text or "score" in text.lower():  # MSEarth captioning
        return json.dumps({"score": 1 + _h(text) % 5})
    return "ABCDE"[_h(text) % 5]  # SciFIBench extractor


def _run(mirror, hf_home, tmp_path, name, launcher):
    cache = tmp_path / name / "cache" / "does-not-exist-yet"
    with FakeOpenAIServer(responder=responder) as srv:
        out = tmp_path / name / "out"
        env = cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=srv.base_url, EARTHSCI_JUDGE_MODEL=JUDGE_MODEL, EARTHSCI_JUDGE_CACHE=str(cache), OMP_NUM_THREADS="1")
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", TASKS, "--output_path", str(out), "--log_samples"]
        proc = run_cli(args, env, str(tmp_path), launcher=launcher)  # asserts exit code 0 on every rank
        keys = [request_key(JudgeConfig(model=JUDGE_MODEL, api_type="openai"), encode_payload(b)) for b in srv.requests if b.get("model") == JUDGE_MODEL]
    res, samples = read_outputs(str(out))
    return proc.stdout + proc.stderr, res, samples, keys, cached_verdict_keys(str(cache))


def _metrics(res, task):
    return {k: v for k, v in res["results"][task].items() if "stderr" not in k}


def _by_doc(samples, task):
    return {s["doc_id"]: {k: v for k, v in s.items() if k not in ("input_media",)} for s in samples[task]}


def test_two_real_ranks_match_one_and_judge_each_doc_once(mirror, hf_home, tmp_path):
    log1, r1, s1, k1, c1 = _run(mirror, hf_home, tmp_path, "one", None)
    log2, r2, s2, k2, c2 = _run(mirror, hf_home, tmp_path, "two", TWO_RANKS)

    # premise: two processes ran, each with its own shard (lmms-eval's and our own per-rank lines)
    assert "Running on rank 1 (local rank 1)" in log2 and "world_size2" in log2, "the launcher started one process"
    for task in JUDGED:
        ranks = set(re.findall(rf"judge pass {task} \(rank (\d)/2", log2))
        assert ranks == {"0", "1"}, (task, ranks)
    assert "rank 1/2" not in log1

    # the same numbers and the same per-doc records
    for task in JUDGED + ["emma_mini_judge"]:
        assert _metrics(r1, task) == _metrics(r2, task), task
    for task in JUDGED:
        assert _by_doc(s1, task) == _by_doc(s2, task), task
        assert all((s.get(m) or {}).get("judge", {}).get("status") == "judged" for s in s2[task] for m in ("emma_judge_acc", "msearth_oe_acc", "msearth_cap_score", "scifibench_acc_judge") if m in s)
    assert r2["results"]["msearth_open"]["msearth_oe_judge_failed,none"] == 0

    # every judged doc requested exactly once across both ranks, and every verdict cached by its rank
    assert len(k2) == len(set(k2)) == len(set(k1)) == len(k1) == sum(len(s1[t]) for t in JUDGED)
    assert set(k2) == set(k1) == c2 == c1
