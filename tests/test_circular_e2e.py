"""Circular variants through lmms-eval: rotation 0 is the official prompt byte for byte (every circular
task, loaded by lmms-eval on the fixture mirror), vanilla_acc equals the official accuracy on the same
responses (the real CLI), and two real ranks give what one gives."""

import hashlib
import json
import os
import sys

import pytest
from conftest import cli_env, openai_args, read_outputs, run_cli

from lmms_eval_earthsci.core import circular
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, text_of

TASKS = {"msearth_mcq": "msearth_acc", "scifibench_cs_c2f": "scifibench_acc", "scifibench_general_f2c": "scifibench_acc", "mac2025_i2t_option": "mac_acc"}
TWO_RANKS = [
    sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
    "--dynamo_backend", "no", "--main_process_port", "29543", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_gloo_allgather_shim.py"),
]


def _h(text):
    return int(hashlib.sha1(text.encode()).hexdigest(), 16)


def responder(body):
    """A model with a position preference that depends on the prompt: the same prompt, the same answer."""
    text = text_of(body)
    letter = "AABCD"[_h(text) % 5]
    if "probabilit" in text.lower():  # MAC asks for a probability per option
        return json.dumps({x: (0.55 if x == letter else 0.15) for x in "ABCD"})
    return f"Answer: {letter}"


def _run(mirror, hf_home, tmp_path, name, launcher=None):
    with FakeOpenAIServer(responder=responder) as srv:
        out = tmp_path / name
        tasks = ",".join([*TASKS, *(f"{t}_circular" for t in TASKS)])
        env = cli_env(mirror, hf_home, OMP_NUM_THREADS="1")
        proc = run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", tasks, "--output_path", str(out), "--log_samples"], env, str(tmp_path), launcher=launcher)
    res, samples = read_outputs(str(out))
    return proc.stdout + proc.stderr, res, samples


def _metrics(res, task):
    return {k: v for k, v in res["results"][task].items() if "stderr" not in k}


@pytest.mark.e2e
def test_vanilla_is_official_and_two_ranks_match_one(mirror, hf_home, tmp_path):
    log1, r1, s1 = _run(mirror, hf_home, tmp_path, "one")
    for task, metric in TASKS.items():
        c = r1["results"][f"{task}_circular"]
        assert c["vanilla_acc,none"] == pytest.approx(r1["results"][task][f"{metric},none"]), task
        assert c["circular_acc,none"] <= c["vanilla_acc,none"]
        recs = [s["circular_acc"] for s in s1[f"{task}_circular"]]
        # every source question of the official task, each asked n times (k = 0..n-1)
        by_source = {}
        for r in recs:
            by_source.setdefault(r["source"], []).append(r["k"])
        assert sorted(by_source) == sorted(s["doc_id"] for s in s1[task])
        assert all(sorted(ks) == list(range(len(ks))) for ks in by_source.values())
        assert len(recs) == sum(r["n"] for r in recs if r["k"] == 0)
        # rotation 0 got the official doc's answer
        official = {s["doc_id"]: s["filtered_resps"] for s in s1[task]}
        for s in s1[f"{task}_circular"]:
            if s["circular_acc"]["k"] == 0:
                assert s["filtered_resps"] == official[s["circular_acc"]["source"]]
    # the fixture questions rotate: something moved
    assert any(r1["results"][f"{t}_circular"]["flip_rate,none"] > 0 for t in TASKS)

    log2, r2, s2 = _run(mirror, hf_home, tmp_path, "two", TWO_RANKS)
    assert "Running on rank 1 (local rank 1)" in log2 and "world_size2" in log2, "the launcher started one process"
    for task in TASKS:
        assert _metrics(r1, f"{task}_circular") == _metrics(r2, f"{task}_circular"), task
        assert sorted(json.dumps(s["circular_acc"], sort_keys=True) for s in s1[f"{task}_circular"]) == sorted(json.dumps(s["circular_acc"], sort_keys=True) for s in s2[f"{task}_circular"])


def _circular_tasks():
    from lmms_eval_earthsci.yamlgen import task_yaml_paths

    return sorted(t for t in task_yaml_paths() if t.endswith("_circular"))


@pytest.mark.slow
def test_rotation_zero_is_the_official_prompt_for_every_circular_task(mirror, hf_home, monkeypatch):
    for k, v in cli_env(mirror, hf_home).items():
        monkeypatch.setenv(k, v)
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_eval_earthsci.core.layout_probe import task_messages
    from lmms_eval_earthsci.registration import register

    register()
    names = _circular_tasks()
    assert len(names) == 2 + 4 + 4 + 8
    officials = [n[: -len("_circular")] for n in names]
    tasks = get_task_dict(names + officials, TaskManager())

    def flat(messages):
        out = []
        for m in messages:
            for part in m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]:
                out.append((m["role"], part["type"], part.get("text") if part["type"] == "text" else part["url"].tobytes()))
        return out

    checked = 0
    for name, official in zip(names, officials):
        ct, ot = tasks[name], tasks[official]
        cdocs, odocs = ct.eval_docs, ot.eval_docs
        assert len(cdocs) == sum(d[circular.N] for d in cdocs if d[circular.K] == 0), name
        zero = [d for d in cdocs if d[circular.K] == 0]
        assert zero, name
        for d in zero:
            o = odocs[d[circular.SOURCE]]
            assert ct.doc_to_text(d) == ot.doc_to_text(o), name
            assert flat(task_messages(ct, d)) == flat(task_messages(ot, o)), name
            checked += 1
        # a later rotation differs from the official prompt (its options moved)
        later = [d for d in cdocs if d[circular.K] == 1]
        if later:
            d = later[0]
            assert flat(task_messages(ct, d)) != flat(task_messages(ot, odocs[d[circular.SOURCE]])), name
    assert checked >= len(names)
