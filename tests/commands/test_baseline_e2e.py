"""lmms-eval's own statistics on our tasks, through the real CLI: its `--baseline` paired t-test against a
baseline run's samples JSONL finds our per-doc `score` on both sides (its loader and its evaluator), and
its CLT standard error is reported for the headline metrics (MAC's accuracy included, not its ECE).

Two runs of `msearth_mcq` whose per-doc verdicts differ in a known way (run a always answers A, run b
always B: each is right where the gold is its letter); run b is made with `--baseline` run a's samples.
lmms-eval >= 0.7.3 (`--baseline` writes its `paired_*` fields there)."""

import glob
import json
from importlib.metadata import version

import pytest
from conftest import cli_env, openai_args, read_outputs, run_cli
from packaging.version import Version
from scipy import stats

from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(Version(version("lmms-eval")) < Version("0.7.3"), reason="lmms-eval's --baseline is checked on 0.7.3")]

TASK = "msearth_mcq"


def answering(letter):
    def answer(body):
        if "probability" in json.dumps(body.get("messages")).lower():  # MAC: the official probability JSON
            return json.dumps({x: (0.7 if x == letter else 0.1) for x in "ABCD"})
        return json.dumps({"answer": letter})

    return answer


@pytest.fixture(scope="module")
def runs(mirror, hf_home, tmp_path_factory):
    root = tmp_path_factory.mktemp("baseline")
    env = cli_env(mirror, hf_home)
    with FakeOpenAIServer(responder=answering("A")) as srv:
        run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", f"{TASK},mac2025_i2t_info", "--output_path", str(root / "a"), "--log_samples"], env, str(root))
    (base_samples,) = glob.glob(str(root / "a" / "**" / f"*_samples_{TASK}.jsonl"), recursive=True)
    with FakeOpenAIServer(responder=answering("B")) as srv:
        proc = run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url, model_version="fake-b"), "--tasks", TASK, "--output_path", str(root / "b"), "--log_samples", "--baseline", base_samples], env, str(root))
    return read_outputs(str(root / "a")), read_outputs(str(root / "b")), proc


def test_lmms_evals_baseline_compares_our_per_doc_verdicts(runs):
    (res_a, samples_a), (res_b, samples_b), proc = runs
    a = {s["doc_id"]: s["msearth_acc"]["score"] / 100 for s in samples_a[TASK]}
    b = {s["doc_id"]: s["msearth_acc"]["score"] / 100 for s in samples_b[TASK]}
    # our field: the doc's headline verdict on lmms-eval's 0-1 scale, the first field naming a score
    for s in samples_a[TASK]:
        assert s["score"] == a[s["doc_id"]] and next(k for k in s if "score" in k.lower()) == "score"
    ids = sorted(a)
    assert sorted(b) == ids and sum(a[i] != b[i] for i in ids) >= 2, "the runs' verdicts do not differ: nothing to test"
    got = res_b["results"][TASK]
    assert "paired_baseline_score" in got, proc.stderr[-3000:]
    acc_a, acc_b = res_a["results"][TASK]["msearth_acc,none"], got["msearth_acc,none"]
    assert got["paired_baseline_score"] == pytest.approx(acc_a)  # the baseline's accuracy, as our report reads it
    diffs = [b[i] - a[i] for i in ids]
    mean = sum(diffs) / len(diffs)
    assert acc_b - acc_a == pytest.approx(100 * mean)  # lmms-eval's difference is ours
    t = stats.ttest_rel([b[i] for i in ids], [a[i] for i in ids])
    assert got["paired_pvalue"] == pytest.approx(t.pvalue)
    half = stats.t.ppf(0.975, len(ids) - 1) * stats.sem(diffs) * 100
    assert (got["paired_ci_lower"], got["paired_ci_upper"]) == (pytest.approx(100 * mean - half, abs=0.2), pytest.approx(100 * mean + half, abs=0.2))


def test_clt_standard_errors_of_the_headline_metrics(runs):
    (res_a, samples_a), _, _ = runs
    msearth, mac = res_a["results"][TASK], res_a["results"]["mac2025_i2t_info"]
    for table, metric, samples in ((msearth, "msearth_acc", samples_a[TASK]), (mac, "mac_acc", samples_a["mac2025_i2t_info"])):
        scores = [s[metric]["score"] for s in samples]
        want = stats.tstd(scores) / len(scores) ** 0.5
        assert table[f"{metric}_stderr_clt,none"] == pytest.approx(want)
    assert mac["mac_ece_stderr_clt,none"] == "N/A"  # no accuracy's error reported as the calibration error's
