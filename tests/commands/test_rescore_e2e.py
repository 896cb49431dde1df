"""`lmms-eval-earthsci rescore` through the real lmms-eval CLI: a --predict_only run, judged later
against a loopback judge, equals the direct run doc for doc; the model is never asked again; a doc
that does not match and a run of another task version are refused."""

import glob
import hashlib
import json
import os
import re
import shutil

import forkserver
import pytest
from conftest import VENV_BIN, cli_env, openai_args, read_outputs, run_cli
from conftest import run_rescore as rescore

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, prompt_field, text_of

pytestmark = pytest.mark.e2e

JUDGE = "judge-m"
# judged (EMMA's LLM judge, MSEarth's open-ended judge), a corpus metric (MuSciClaims), MAC
TASKS = "emma_mini_judge_math,msearth_open,musciclaims_rd,mac2025_i2t_info"


def model_reply(body):
    """Varied, deterministic answers per prompt: some right, some wrong, some unparsable."""
    text = text_of(body)
    h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    if "open-ended question" in text:
        return '{"answer": "%s"}' % ("Late spring" if h % 2 else "Winter")
    if "decision" in text.lower() and "SUPPORT" in text:
        return '{{"decision": "{}"}}'.format(("SUPPORT", "CONTRADICT", "NEUTRAL", "maybe")[h % 4])
    if "probabilit" in text.lower():
        return "A: %.1f, B: %.1f, C: 0.1, D: 0.1" % ((0.7, 0.1) if h % 2 else (0.1, 0.7))
    return "So the answer is \\boxed{{{}}}".format("ABCD"[h % 4])


def judge_reply(body):
    text = text_of(body)
    if "Generated Answer:" in text:
        std = prompt_field(text, "Standard Answer")
        gen = prompt_field(text, "Generated Answer")
        return '{"is_correct": %s}' % ("true" if std == gen else "false")
    m = re.search(r"Answer: (.*)\nCorrect_or_not:$", text)
    return "Correct" if m and f"\\boxed{{{m.group(1)}}}" in text.rsplit("Response: ", 1)[1] else "Incorrect"


def responder(body):
    return judge_reply(body) if body.get("model") == JUDGE else model_reply(body)


def env_for(mirror, hf_home, srv, cache):
    return cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=srv.base_url, EARTHSCI_JUDGE_MODEL=JUDGE, EARTHSCI_JUDGE_CACHE=str(cache))


VOLATILE = {"cached", "attempts", "latency", "usage"}


def comparable(value):
    """A per-doc record without what says how it was obtained (cache hit, attempts), not what it is."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


@pytest.fixture(scope="module")
def runs(mirror, hf_home, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rescore")
    with FakeOpenAIServer(responder=responder) as srv:
        base = ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", TASKS, "--log_samples"]
        run_cli(base + ["--output_path", str(tmp / "direct")], env_for(mirror, hf_home, srv, tmp / "cache_direct"), str(tmp))
        n_direct = len(srv.requests)
        run_cli(base + ["--output_path", str(tmp / "pred"), "--predict_only"], env_for(mirror, hf_home, srv, tmp / "cache_pred"), str(tmp))
        pred_bodies = srv.requests[n_direct:]
        n_before = len(srv.requests)
        proc = rescore([str(tmp / "pred"), "--out", str(tmp / "re")], env_for(mirror, hf_home, srv, tmp / "cache_re"), str(tmp))
        re_bodies = srv.requests[n_before:]
    assert proc.returncode == 0, proc.stderr[-5000:]
    return {"tmp": tmp, "pred_bodies": pred_bodies, "re_bodies": re_bodies, "stdout": proc.stdout}


def test_predict_only_then_rescore_equals_the_direct_run(runs):
    tmp = runs["tmp"]
    direct, dsamples = read_outputs(str(tmp / "direct"))
    rescored, rsamples = read_outputs(str(tmp / "re"))
    # premise: the predict-only run asked the model only (no judge call), and scored nothing
    assert runs["pred_bodies"] and not any(b.get("model") == JUDGE for b in runs["pred_bodies"])
    pred, _ = read_outputs(str(tmp / "pred"))
    assert all(set(k.split(",")[0] for k in m if "," in k) <= {"bypass", "bypass_stderr", "bypass_stderr_clt", "bypass_stderr_clustered"} for m in pred["results"].values())
    # the rescore asked the judge, never the model
    assert runs["re_bodies"] and all(b.get("model") == JUDGE for b in runs["re_bodies"])
    # its terminal: progress and a summary; lmms-eval's log in NEW_DIR/rescore.log
    out = runs["stdout"].splitlines()
    assert out[0].startswith("rescoring ") and out[0].endswith(f"(lmms-eval's log: {tmp / 're' / 'rescore.log'})") and out[1].startswith("rescored ")
    assert len(out) <= 40 and "| INFO" not in runs["stdout"] and "lmms_eval" in (tmp / "re" / "rescore.log").read_text()
    # results: every metric of every task equal
    leaf = [t for t in TASKS.split(",")]
    for task in leaf:
        d = {k: v for k, v in direct["results"][task].items()}
        r = rescored["results"][task]
        assert d == r, task
    assert direct["results"]["emma_mini_judge_math"]["emma_judge_acc,none"] is not None  # judged for real
    # what the model received is the replayed run's: its layout verdict carried over (the replay has no model to observe)
    for task in leaf:
        layout = pred["configs"][task]["metadata"]["earthsci_layout"]
        assert layout["status"] == "as written" and rescored["configs"][task]["metadata"]["earthsci_layout"] == layout, task
    assert direct["results"]["msearth_open"]["msearth_oe_acc,none"] is not None
    # samples: doc for doc, every metric's per-doc record (verdicts, extraction, route) the same
    for task in leaf:
        ds = {s["doc_id"]: s for s in dsamples[task]}
        rs = {s["doc_id"]: s for s in rsamples[task]}
        assert sorted(ds) == sorted(rs) and ds, task
        for doc_id, s in ds.items():
            keys = set(s) - {"token_counts", "doc_hash"}
            assert keys == set(rs[doc_id]) - {"token_counts", "doc_hash"}, (task, doc_id)
            for k in keys:
                assert comparable(s[k]) == comparable(rs[doc_id][k]), (task, doc_id, k)
    # lmms-eval's layout, the original model's name, and what rescore did
    assert rescored["config"]["model"] == "openai" and rescored["model_name"] == direct["model_name"]
    rec = rescored["rescore"]
    assert rec["source"]["kind"] == "lmms-eval run" and rec["source"]["path"].startswith(str(tmp / "pred"))
    assert rec["version_changes"] == {} and rec["not_in_tasks"] == [] and rec["target_mismatches"] == [] and not rec["forced"]
    assert glob.glob(str(tmp / "re" / direct["model_name_sanitized"] / "*_results.json"))
    # report reads it like any run
    from lmms_eval_earthsci.commands.report import write_report

    _, text = write_report([str(tmp / "direct"), str(tmp / "re")], str(tmp / "rep"), resamples=200)
    assert "rescored without the model from lmms-eval run" in text
    pairs = [ln for ln in text.splitlines() if ln.startswith("| emma_mini_judge_math | emma_judge_acc |")]
    assert pairs and "| +0.00 |" in pairs[0]


def _copy_run(src, dst):
    shutil.copytree(src, dst)
    return next(iter(glob.glob(os.path.join(dst, "**", "*_results.json"), recursive=True)))


def test_a_doc_that_does_not_match_stops_before_scoring(runs, mirror, hf_home):
    tmp = runs["tmp"]
    results = _copy_run(tmp / "pred", tmp / "pred_bad")
    sp = results.replace("_results.json", "_samples_emma_mini_judge_math.jsonl")
    rows = [json.loads(ln) for ln in open(sp)]
    rows[1]["input"] = "A question from another dataset revision"
    with open(sp, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    with FakeOpenAIServer(responder=responder) as srv:
        proc = rescore([str(tmp / "pred_bad"), "--out", str(tmp / "re_bad"), "--tasks", "emma_mini_judge_math"], env_for(mirror, hf_home, srv, tmp / "cache_bad"), str(tmp))
        asked = list(srv.requests)
    assert proc.returncode == 2
    assert "emma_mini_judge_math doc_id 1: the logged prompt differs" in proc.stderr
    assert not asked  # stopped before the judge pass
    assert not glob.glob(str(tmp / "re_bad" / "**" / "*_results.json"), recursive=True)


def test_another_task_version_is_refused_unless_forced(runs, mirror, hf_home):
    tmp = runs["tmp"]
    results = _copy_run(tmp / "pred", tmp / "pred_old")
    data = json.load(open(results))
    data["versions"]["musciclaims_rd"] = 0.5
    json.dump(data, open(results, "w"))
    env = cli_env(mirror, hf_home)
    proc = rescore([str(tmp / "pred_old"), "--out", str(tmp / "re_old"), "--tasks", "musciclaims_rd"], env, str(tmp))
    installed = registry.get("musciclaims").version
    assert proc.returncode == 2 and f"musciclaims_rd: run 0.5, installed {installed}" in proc.stderr and "--force" in proc.stderr
    assert not os.path.exists(tmp / "re_old" / "rescore_plan.json")
    proc = rescore([str(tmp / "pred_old"), "--out", str(tmp / "re_old"), "--tasks", "musciclaims_rd", "--force"], env, str(tmp))
    assert proc.returncode == 0, proc.stderr[-3000:]
    res, samples = read_outputs(str(tmp / "re_old"))
    assert res["rescore"]["forced"] and res["rescore"]["version_changes"] == {"musciclaims_rd": {"run": 0.5, "installed": installed}}
    direct, _ = read_outputs(str(tmp / "direct"))
    assert res["results"]["musciclaims_rd"] == direct["results"]["musciclaims_rd"] and list(res["results"]) == ["musciclaims_rd"]


def test_rescore_rebuilds_the_runs_groups_and_takes_group_names(mirror, hf_home, tmp_path):
    """A run of groups (as the demo runs them) rescored: the same groups, aggregated again as lmms-eval
    aggregated them (results, group_subtasks), and `report` shows them in both columns; `--tasks` takes a
    group name (its leaves only are rescored) and an unknown name is refused naming tasks and groups."""
    from lmms_eval_earthsci.commands.report import write_report

    out = tmp_path / "run"
    run_cli(["--model", "dummy", "--model_args", "response=So the answer is \\boxed{B}", "--tasks", "emma_mini,scifibench_f2c", "--limit", "3", "--output_path", str(out), "--log_samples"], cli_env(mirror, hf_home), str(tmp_path))
    first, _ = read_outputs(str(out))
    groups = {"emma_mini": [f"emma_mini_{s}" for s in ("math", "physics", "chemistry", "coding")], "scifibench_f2c": ["scifibench_cs_f2c", "scifibench_general_f2c"]}
    assert {g: sorted(first["group_subtasks"][g]) for g in groups} == {g: sorted(ts) for g, ts in groups.items()}  # the premise
    env = cli_env(mirror, hf_home)
    proc = rescore([str(out), "--out", str(tmp_path / "re")], env, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-5000:]
    again, _ = read_outputs(str(tmp_path / "re"))
    for name in [*groups, *(t for ts in groups.values() for t in ts)]:
        assert {k: v for k, v in again["results"][name].items() if k != "alias"} == {k: v for k, v in first["results"][name].items() if k != "alias"}, name
    assert {g: sorted(again["group_subtasks"][g]) for g in groups} == {g: sorted(ts) for g, ts in groups.items()}
    assert again["results"]["emma_mini"]["emma_acc,none"] is not None
    _, text = write_report([str(out), str(tmp_path / "re")], str(tmp_path / "rep"), resamples=0)
    row = next(line for line in text.splitlines() if line.startswith("| EMMA | emma_mini | emma_acc |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == cells[5] != "–"  # the group's number in both columns (cells 4 and 6: the intervals)
    # --tasks with a group name: that group only
    proc = rescore([str(out), "--out", str(tmp_path / "re_emma"), "--tasks", "emma_mini"], env, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-5000:]
    only, samples = read_outputs(str(tmp_path / "re_emma"))
    assert set(only["group_subtasks"]) == {"emma_mini"} and set(samples) == set(groups["emma_mini"])
    assert only["results"]["emma_mini"] == again["results"]["emma_mini"]
    proc = rescore([str(out), "--out", str(tmp_path / "re_x"), "--tasks", "emma_full"], env, str(tmp_path))
    assert proc.returncode == 2 and "no task or group emma_full" in proc.stderr and "scifibench_f2c" in proc.stderr


def test_rescore_reads_the_runs_recorded_mirror_and_fails_fast_offline(mirror, hf_home, tmp_path):
    """Rescore without EARTHSCI_DATA_MIRROR (as on the demo's own output): it reads the mirror the run
    recorded, when unchanged; once that copy changed and the Hub cannot be reached, one line in seconds
    names the variable to set, instead of waiting on Hub retries."""
    import time

    copy = tmp_path / "mirror"
    shutil.copytree(os.path.join(mirror, "luckychao"), copy / "luckychao")
    out = tmp_path / "run"
    run_cli(["--model", "dummy", "--model_args", "response=\\boxed{B}", "--tasks", "emma_mini_math", "--limit", "2", "--output_path", str(out), "--log_samples"], cli_env(str(copy), hf_home), str(tmp_path))
    first, _ = read_outputs(str(out))
    env = cli_env(str(copy), hf_home)
    env.pop("EARTHSCI_DATA_MIRROR")  # the premise: nothing but the run's own record points at the mirror
    proc = rescore([str(out), "--out", str(tmp_path / "re")], env, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-5000:]
    again, _ = read_outputs(str(tmp_path / "re"))
    assert again["results"]["emma_mini_math"] == first["results"]["emma_mini_math"]
    assert again["rescore"]["data"] == {"route": "the run's mirror", "EARTHSCI_DATA_MIRROR": str(copy)}
    # the copy changes; no mirror variable, no offline flag, a Hub that refuses connections
    target = next((copy / "luckychao" / "EMMA-mini" / "Math").glob("*.parquet"))
    os.utime(target, (1, 1))
    env.pop("HF_HUB_OFFLINE")
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_DATASETS_OFFLINE="0")
    t0 = time.time()
    proc = rescore([str(out), "--out", str(tmp_path / "re2")], env, str(tmp_path))
    assert proc.returncode == 2 and time.time() - t0 < 60
    err = proc.stderr.strip()
    assert "\n" not in err and "EARTHSCI_DATA_MIRROR" in err and "changed since the run" in err and "luckychao/EMMA-mini" in err, err
    assert not (tmp_path / "re2").exists() or not list((tmp_path / "re2").rglob("*_results.json"))


def _closed_port_url():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_rescore_while_the_judge_is_down_ends_like_a_run_and_exits_4(runs, mirror, hf_home):
    """Judging is rescore's whole job: with the judge down it ends as a run whose judge failed does (the
    failures by cause per task, the endpoint and its setting, the command that finishes the job, on the
    terminal, once each) and exits 4; that command, once the judge answers, scores the judged metrics as
    the direct run did. With no judge configured at all, the same ending, saying so."""
    import shlex

    tmp = runs["tmp"]
    tasks = "emma_mini_judge_math,msearth_open"
    direct, _ = read_outputs(str(tmp / "direct"))
    dead = _closed_port_url()
    env = cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=dead, EARTHSCI_JUDGE_MODEL=JUDGE, EARTHSCI_JUDGE_CACHE=str(tmp / "cache_down"), EARTHSCI_JUDGE_MAX_RETRIES="0")
    proc = rescore([str(tmp / "pred"), "--out", str(tmp / "re_down"), "--tasks", tasks], env, str(tmp))
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "msearth_open · msearth_oe_acc: n/a" in proc.stdout
    n = {t: direct["n-samples"][t]["effective"] for t in tasks.split(",")}
    tail = proc.stderr.strip().splitlines()[-4:]
    assert tail[:2] == [f"lmms_eval_earthsci: {t}: the judge failed on {n[t]} of {n[t]} docs (ConnectionRefusedError x {n[t]}); endpoint {dead} (EARTHSCI_JUDGE_BASE_URL)" for t in tasks.split(",")], tail
    assert tail[2] == "lmms_eval_earthsci: once the judge answers, finish the job with:" and proc.stderr.count(tail[0]) == 1  # not again at exit
    cmd = shlex.split(tail[3].strip())
    assert cmd[:2] == ["lmms-eval-earthsci", "rescore"]
    with FakeOpenAIServer(responder=responder) as srv:
        cmd[0] = os.path.join(VENV_BIN, cmd[0])
        fixed = forkserver.subprocess_run(cmd, env={**env, "EARTHSCI_JUDGE_BASE_URL": srv.base_url}, cwd=str(tmp), capture_output=True, text=True, timeout=900)
    assert fixed.returncode == 0 and "lmms_eval_earthsci:" not in fixed.stderr, fixed.stderr[-3000:]
    done, _ = read_outputs(str(tmp / "re_down"))
    for t, metric in (("emma_mini_judge_math", "emma_judge_acc,none"), ("msearth_open", "msearth_oe_acc,none")):
        assert done["results"][t][metric] == direct["results"][t][metric] is not None, t
    # no judge configured: the judged metrics are n/a, and the ending says which setting names one
    proc = rescore([str(tmp / "pred"), "--out", str(tmp / "re_none"), "--tasks", tasks], cli_env(mirror, hf_home), str(tmp))
    assert proc.returncode == 4, proc.stderr[-3000:]
    tail = proc.stderr.strip().splitlines()[-4:]
    assert tail[:2] == [f"lmms_eval_earthsci: {t}: no judge configured (set EARTHSCI_JUDGE_BASE_URL and EARTHSCI_JUDGE_MODEL); its judged metrics are n/a" for t in tasks.split(",")]
    assert tail[2] == "lmms_eval_earthsci: with a judge configured, finish the job with:" and tail[3].startswith("  lmms-eval-earthsci rescore ")
