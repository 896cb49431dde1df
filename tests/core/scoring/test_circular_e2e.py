"""Circular variants through lmms-eval: rotation 0 is the official prompt byte for byte (every circular
task, loaded by lmms-eval on the fixture mirror), vanilla_acc equals the official accuracy on the same
responses (the real CLI), and two real ranks give what one gives."""

import hashlib
import json
import os

import pytest
from conftest import cli_env, openai_args, read_outputs, run_cli, run_rescore, two_ranks

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, text_of

TASKS = {"msearth_mcq": "msearth_acc", "scifibench_cs_c2f": "scifibench_acc", "scifibench_general_f2c": "scifibench_acc", "mac2025_i2t_option": "mac_acc"}
TWO_RANKS = two_ranks(29543)


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

    from lmms_eval_earthsci.core.boundary.probe import task_messages
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


@pytest.mark.e2e
def test_report_position_bias_section_browser_and_paired_rows(mirror, hf_home, tmp_path):
    """Two runs (a model that always says A, one that always says B) through the real CLI, then `report`:
    the Position bias section, its charts, the paired comparison question by question, the browser's
    rotations on one card, the summary's rows; and `rescore` of a circular run gives the same numbers."""
    import csv
    import glob

    from lmms_eval_earthsci.commands.report import write_report

    tasks = "msearth_mcq,msearth_mcq_circular,scifibench_cs_f2c_circular"
    outs = {}
    for letter in "AB":
        outs[letter] = tmp_path / f"always_{letter}"
        run_cli(["--model", "dummy", "--model_args", f"response={letter}", "--tasks", tasks, "--output_path", str(outs[letter]), "--log_samples"], cli_env(mirror, hf_home), str(tmp_path))
    res_a, samples_a = read_outputs(str(outs["A"]))
    questions = len({s["circular_acc"]["source"] for s in samples_a["msearth_mcq_circular"]})
    rep = tmp_path / "rep"
    _, text = write_report([str(outs["A"]), str(outs["B"])], str(rep), resamples=200, seed=0, html=True, images=False)

    section = text.split("## Position bias", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| MSEarth MCQ (with original caption, circular)")]
    assert len(rows) == 2  # one per run
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[2] == f"{res_a['results']['msearth_mcq']['msearth_acc,none']:.2f}"  # official, beside vanilla
    assert cells[3].startswith(cells[2])
    assert cells[4].startswith("0.00") and cells[5].startswith("0.00")  # circular 0, every rotation answered
    assert cells[6].startswith("100.00") and cells[7].startswith("100.00")  # every question flipped, over its answered rotations too
    assert cells[10] == "100.00 / 0.00 / 0.00 / 0.00" and cells[11] == str(questions)
    assert "100.00 / 0.00 / 0.00 / 0.00 / 0.00" in section  # SciFIBench: five positions
    # the MSEarth section: the circular variant only in its counts (rotations, none without an answer)
    msearth = text.split("## MSEarth", 1)[1].split("\n## ", 1)[0]
    assert "msearth_mcq_circular" not in msearth.split("### Counts", 1)[0]
    assert any(ln.startswith("| msearth_mcq_circular |") and "| 0 (0.00%) |" in ln for ln in msearth.split("### Counts", 1)[1].splitlines())
    for task in ("msearth_mcq_circular", "scifibench_cs_f2c_circular"):
        assert os.path.getsize(rep / f"positions_{task}.png") > 5000

    # the paired comparison of circular accuracy: one unit per question
    with open(rep / "summary.csv") as f:
        summary = list(csv.DictReader(f))
    paired = [r for r in summary if r["kind"] == "paired" and r["metric"] == "circular_acc" and r["task"] == "msearth_mcq_circular"]
    assert len(paired) == 1 and int(paired[0]["docs_compared"]) == questions
    wilson = [r for r in summary if r["kind"] == "metric" and r["metric"] == "circular_acc" and r["task"] == "msearth_mcq_circular"]
    assert {r["ci_method"] for r in wilson} == {"Wilson"} and {int(r["docs"]) for r in wilson} == {questions}

    # the browser: every rotation's card shows the question's rotations, answers in the original letters
    data = "".join(open(p).read() for p in glob.glob(str(rep / "browser" / "data" / "*.js")))
    assert "question 0 (the official task's doc 0): 4 rotations, answers in the original letters" in data
    assert "flipped: " in data

    # rescore of the circular run: the same numbers
    out = tmp_path / "rescored"
    proc = run_rescore([outs["A"], "--out", out, "--tasks", "msearth_mcq_circular"], cli_env(mirror, hf_home), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("msearth_mcq_circular · circular_acc: 0.00") == 1  # the headline of a circular run alone, said once
    assert "msearth_mcq_circular · circular_no_answer: 0.00" in proc.stdout
    res_r, _ = read_outputs(str(out))
    assert _metrics(res_r, "msearth_mcq_circular") == _metrics(res_a, "msearth_mcq_circular")
