"""emma_mini_tts through the real lmms-eval CLI: 16 candidates per question reach process_results, the
curves follow the authors' subsets, and Best-of-N asks a reward model (a loopback OpenAI-compatible server,
EARTHSCI_RM_*) once per question and N with the authors' prompt and the question's image, reads its
\\finalscore replies, counts a failed request and resumes from the cache."""

import csv
import json
import re
from collections import defaultdict

import pytest
from conftest import cli_env, openai_args, read_outputs, run_cli, run_rescore

from lmms_eval_earthsci.commands.report import write_report
from lmms_eval_earthsci.core.scoring import scaling
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, Fault, text_of

pytestmark = pytest.mark.e2e

RM_MODEL = "rm-m"
SCALAR_MODEL = "srm-m"
# the i-th sample of a question (the server counts them): A, B, B with words before it, no answer
CYCLE = ["\\boxed{A}", "\\boxed{B}", "Rotating gives a triangle, so \\boxed{B}", "I am not sure."]


class ModelAndRewardModel:
    def __init__(self, fail_on=None):
        self.calls = defaultdict(int)
        self.fail_on = fail_on
        self.rm_bodies = []
        self.scalar_bodies = []

    def __call__(self, body):
        text = text_of(body)
        if body.get("model") == SCALAR_MODEL:  # /pooling: a scalar reward model that likes \boxed{B}
            self.scalar_bodies.append(body)
            return 0.9 if "boxed{B}" in body["messages"][-1]["content"] else 0.1
        if body.get("model") != RM_MODEL:
            i = self.calls[text]
            self.calls[text] += 1
            return CYCLE[i % len(CYCLE)]
        self.rm_bodies.append(body)
        if self.fail_on and self.fail_on in text and text.count("\nResponse{") >= 8:
            # a question whose 8 or 16 candidates do not fit: vLLM's refusal
            return Fault("status", status=400, error={"message": "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens.", "type": "BadRequestError"})
        if "Subtract all small balls" in text and text.count("\nResponse{") == 2:
            return "They all look fine to me."  # Math_3's Best-of-2 (and first match): no \finalscore at all
        # a reward model that likes \boxed{B}: 5 for those, 1 for the others (both forms of \finalscore)
        labels = re.findall(r"\nResponse\{(\d+)\}:\nke(.*?)(?=\nResponse\{|\nYou are a fair)", text, re.S)
        return "\n".join(f"\\finalscore{{{i}}}{{reason}}{{{5 if 'boxed{B}' in r else 1}}}" for i, r in labels)


def _run(mirror, hf_home, tmp_path, srv, out, **env):
    env = cli_env(mirror, hf_home, EARTHSCI_RM_BASE_URL=srv.base_url, EARTHSCI_RM_MODEL=RM_MODEL, EARTHSCI_RM_CACHE=str(tmp_path / "cache"), EARTHSCI_RM_MAX_RETRIES="0",
                  EARTHSCI_SCALAR_RM_BASE_URL=srv.base_url, EARTHSCI_SCALAR_RM_MODEL=SCALAR_MODEL, EARTHSCI_SCALAR_RM_CACHE=str(tmp_path / "cache"), **env)
    run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=1), "--tasks", "emma_mini_tts_math", "--output_path", str(out), "--log_samples"], env, str(tmp_path))
    return read_outputs(str(out))


def test_curves_and_best_of_n_through_the_cli(mirror, hf_home, tmp_path):
    with FakeOpenAIServer(responder=ModelAndRewardModel(fail_on="How many cubes")) as srv:  # Math_1
        res, samples = _run(mirror, hf_home, tmp_path, srv, tmp_path / "out")
        handler = srv.responder
    r = res["results"]["emma_mini_tts_math"]
    by_pid = {s["emma_acc"]["pid"]: s for s in samples["emma_mini_tts_math"]}
    assert len(by_pid) == 3
    # every question got its 16 samples, in the order the model gave them
    assert all(n == 16 for n in handler.calls.values()) and len(handler.calls) == 3
    math2 = by_pid["Math_2"]  # gold B
    assert [c["extraction"] for c in math2["emma_maj@k"]["candidates"]] == ["A", "B", "B", "I am not sure."] * 4
    assert math2["emma_maj@16"]["pick"] == "B" and math2["emma_maj@16"]["score"] == 100.0
    assert math2["emma_pass@16"]["score"] == 100.0 and math2["emma_pass_unbiased@1"]["score"] == 50.0
    # the subsets (raw indices 3, 0 | 3, 0, 11, 4 | ... 13 ...) decide: no B shown at N = 2, 4; B shown from N = 8
    assert math2["emma_pass@2"]["score"] == math2["emma_pass@4"]["score"] == 0.0 and math2["emma_pass@8"]["score"] == 100.0
    for n, right in ((2, False), (4, False), (8, True), (16, True)):
        item = math2[f"emma_bon@{n}"]
        assert item["shown"] == scaling.subset(16, n).nums and item["judge"]["status"] == "judged"
        assert (item["score"] == 100.0) is right, n
        assert item["pick"] in item["tied"] and all(item["scores"][str(i)] == max(item["scores"].values()) for i in item["tied"])
    # tournament (ours): single elimination in subset order, a tie to the earlier; B beats the others
    for n, right in ((2, False), (4, False), (8, True), (16, True)):
        item = math2[f"emma_tournament@{n}"]
        assert len(item["matches"]) == n - 1 and (item["score"] == 100.0) is right, n
    assert math2["emma_tournament@4"]["matches"] == [[3, 0, 3], [11, 4, 11], [3, 11, 3]]
    # per question: one Best-of-N request per N (4) and the 15 matches of the 16-bracket (the smaller brackets'
    # are among them; its first match is Best-of-2's request): 18, in 4 rounds of the pass
    assert len(handler.rm_bodies) == 3 * 18
    math1 = by_pid["Math_1"]
    # Math_1's Best-of-8 and -16 were refused (over the context): scored wrong, counted by cause, nothing raised
    assert all(math1[f"emma_bon@{n}"]["score"] == 0.0 and "--max-model-len" in math1[f"emma_bon@{n}"]["why"] for n in (8, 16))
    assert all(math1[f"emma_bon@{n}"]["judge"]["status"] == "judged" for n in (2, 4))
    assert all(math1[f"emma_tournament@{n}"]["judge"]["status"] == "judged" for n in (2, 4, 8, 16))
    # a reply without \finalscore is no failure: all scores 0, the authors' rule picks among all 16; counted by how
    math3 = by_pid["Math_3"]
    assert math3["emma_bon@2"]["reply"] == "scored none of the shown (a pick among all T)" and math3["emma_bon@2"]["tied"] == list(range(16))
    assert math3["emma_bon@2"]["judge"]["status"] == "judged" and math3["emma_rm_failed"]["score"] == 0
    assert math3["emma_rm_replies"] == {"score": 1, "replies": 4, "causes": {"scored none of the shown (a pick among all T)": 1}}
    assert r["emma_rm_replies,none"] == 1 and math2["emma_rm_replies"]["score"] == 0
    assert math3["emma_tournament@2"]["matches"] == [[3, 0, 3]]  # the same request as a match: a tie, to the earlier
    assert math1["emma_rm_failed"]["failed_requests"] == 2 and math1["emma_rm_failed"]["requests"] == 18 + 4  # + the scalar reward model's 4
    assert r["emma_rm_failed,none"] == 1
    assert r["emma_bon@8,none"] == pytest.approx(100 / 3) and r["emma_bon@2,none"] == 0.0 and r["emma_tournament@8,none"] == pytest.approx(100 / 3)
    assert r["emma_maj@16,none"] == pytest.approx(sum(s["emma_maj@16"]["score"] for s in by_pid.values()) / 3)
    # the scalar reward model (Table 7): each distinct candidate once per question (4 texts), on /pooling; the
    # subset's scores in subset order, the authors' seeded pick among ties (N = 8: positions 5, 6, 7 tie -> 7, raw 1)
    assert len(handler.scalar_bodies) == 3 * 4
    sb = next(b for b in handler.scalar_bodies if "rotating the figure" in b["messages"][1]["content"])
    assert [m["role"] for m in sb["messages"]] == ["system", "user", "assistant"] and sb["messages"][0]["content"] == "You are a math expert"
    assert "<image_1>" in sb["messages"][1]["content"] and "temperature" not in sb and sb["messages"][1]["content"].endswith("Please solve the problem step by step.")
    for n, pick, right in ((2, 0, False), (4, 0, False), (8, 1, True), (16, None, True)):
        item = math2[f"emma_bon_scalar@{n}"]
        assert (item["score"] == 100.0) is right and (pick is None or item["pick"] == pick), n
    assert math2["emma_bon_scalar@8"]["tied"] == [13, 2, 1] and r["emma_bon_scalar@8,none"] == pytest.approx(100 / 3)
    # the request: the authors' prompt (CoT query, "ke" blocks by raw index, instructions), the image in place,
    # temperature 0 and 2048 tokens, one user turn
    # Best-of-8's request for that question (the judge's requests arrive in any order: pick it by what it shows)
    body = next(b for b in handler.rm_bodies if "rotating the figure" in text_of(b) and len(re.findall(r"Response\{\d+\}:", text_of(b))) == 8)
    assert re.findall(r"Response\{(\d+)\}:", text_of(body)) == ["3", "0", "11", "4", "15", "13", "2", "1"]  # the seeded subset, in its order
    assert body["temperature"] == 0 and body["max_tokens"] == 2048 and [m["role"] for m in body["messages"]] == ["user"]
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    text = text_of(body)
    assert text.startswith("Which shape results from rotating the figure by 90 degrees?\n") and "Please solve the problem step by step.\nResponse{3}:\nkeI am not sure.\n\nResponse{0}:\nke\\boxed{A}\n" in text
    assert text.endswith("it is PARAMOUNT that you provide them using the format I gave you.")

    # a second run: every reply from the cache, the same numbers
    with FakeOpenAIServer(responder=ModelAndRewardModel()) as srv2:
        res2, _ = _run(mirror, hf_home, tmp_path, srv2, tmp_path / "out2")
        again = srv2.responder
    assert len(again.rm_bodies) == 2 and not again.scalar_bodies  # only Math_1's two refused, asked again (failures are never cached)
    r2 = res2["results"]["emma_mini_tts_math"]
    assert r2["emma_rm_failed,none"] == 0 and r2["emma_bon@8,none"] >= r["emma_bon@8,none"]

    # generate on one node, rank later: rescore replays the 16 candidates (no model call) and asks a reward
    # model of its own for what its cache does not hold
    with FakeOpenAIServer(responder=ModelAndRewardModel()) as srv3:
        env = cli_env(mirror, hf_home, EARTHSCI_RM_BASE_URL=srv3.base_url, EARTHSCI_RM_MODEL=RM_MODEL, EARTHSCI_RM_CACHE=str(tmp_path / "cache3"),
                      EARTHSCI_SCALAR_RM_BASE_URL=srv3.base_url, EARTHSCI_SCALAR_RM_MODEL=SCALAR_MODEL, EARTHSCI_SCALAR_RM_CACHE=str(tmp_path / "cache3"))
        proc = run_rescore([str(tmp_path / "out"), "--out", str(tmp_path / "rescored")], env, str(tmp_path))
        assert proc.returncode == 0, proc.stderr[-5000:]
        ranker = srv3.responder
    assert not ranker.calls and len(ranker.rm_bodies) == 3 * 18 and len(ranker.scalar_bodies) == 12  # the reward models only
    res3, samples3 = read_outputs(str(tmp_path / "rescored"))
    r3 = res3["results"]["emma_mini_tts_math"]
    assert r3["emma_rm_failed,none"] == 0 and r3["emma_bon@8,none"] == pytest.approx(r2["emma_bon@8,none"])
    for key in ("emma_maj@16,none", "emma_pass@4,none", "emma_pass_unbiased@2,none", "emma_acc,none", "emma_tournament@8,none", "emma_bon_scalar@8,none"):
        assert r3[key] == pytest.approx(r2[key]), key


def test_without_a_reward_model_best_of_n_is_null_and_the_rest_is_scored(mirror, hf_home, tmp_path):
    with FakeOpenAIServer(responder=ModelAndRewardModel()) as srv:
        env = cli_env(mirror, hf_home)
        run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=1), "--tasks", "emma_mini_tts_math", "--repeats", "4", "--limit", "1",
                 "--output_path", str(tmp_path / "out"), "--log_samples"], env, str(tmp_path))
    res, samples = read_outputs(str(tmp_path / "out"))
    r = res["results"]["emma_mini_tts_math"]
    assert r["emma_bon@2,none"] is None and r["emma_tournament@2,none"] is None and r["emma_bon_scalar@2,none"] is None and r["emma_rm_failed,none"] is None
    assert r["emma_maj@4,none"] is not None and r["emma_maj@8,none"] is None  # --repeats 4: N = 8 has no value
    assert len(samples["emma_mini_tts_math"][0]["emma_maj@k"]["candidates"]) == 4


def test_report_table_3_shape_from_a_run(mirror, hf_home, tmp_path):
    with FakeOpenAIServer(responder=ModelAndRewardModel()) as srv:
        _run(mirror, hf_home, tmp_path, srv, tmp_path / "out")
    _, text = write_report([str(tmp_path / "out")], str(tmp_path / "rep"), html=True, figure_budget_mb=0)
    section = text[text.index("### EMMA-mini: test-time scaling (Table 3)") :]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    assert lines[0] == "| model (N=1) | method | reward model | N=2 | N=4 | N=8 | N=16 |"
    ours = [line for line in lines if "emma_mini_tts_math" in line and "(T = 16" in line]
    assert [line.split(" | ")[1] for line in ours[:6]] == ["majority vote", "best-of-N", "best-of-N", "tournament (ours)", "pass@N (subset)", "pass@N (unbiased, ours)"]
    assert ours[1].endswith("| 0.00 | 0.00 | 33.33 | 33.33 |")  # Best-of-N: B is shown from N = 8 (Math_2 of 3)
    assert "scalar (EARTHSCI_SCALAR_RM_MODEL) | 0.00 | 0.00 | 33.33 | 33.33 |" in ours[2]
    # Table 7 (Math): the run's two Best-of-N rows beside the paper's six
    table7 = text[text.index("### EMMA-mini Math: Best-of-N by reward model (Table 7)") :].split("\n\n")[1].splitlines()
    assert len([line for line in table7 if "(T = 16" in line]) == 2
    assert "| GPT-4o (N=1 Table 2, T=0: 27.00) | best-of-N | Qwen2.5-Math-RM-72B | 26.00 | 24.00 | 25.00 | 29.00 |" in table7
    assert "| GPT-4o (N=1 Table 2, T=0: 36.00) | majority vote | — | – | 37.25 | 36.25 | 38.25 |" in lines
    assert "fake (out): 1 Best-of-N repl(ies) did not score every shown candidate" in section
    # the breakdown table leaves the curves to this table; the cost per method and N; the CSV and the chart
    assert "math · emma_maj@16" not in text
    tournament_cost = next(line for line in lines if line.startswith("| fake (out) · emma_mini_tts_math | tournament (ours) | 3 (3 sent)"))
    assert "| best-of-N | 3 (3 sent)" in section and tournament_cost.split(" | ")[-1].startswith("45 (45 sent)")  # 15 matches x 3 questions
    with open(tmp_path / "rep" / "emma_test_time_scaling.csv") as f:
        rows = list(csv.DictReader(f))
    run_rows = [r for r in rows if r["source"] == "run"]
    assert len(run_rows) == 6 and run_rows[0]["candidates_T"] == "16" and float(run_rows[0]["n16"]) == pytest.approx(100 / 3)
    assert len([r for r in rows if r["source"] == "paper"]) == 13
    assert (tmp_path / "rep" / "emma_test_time_scaling.png").stat().st_size > 10_000

    # the sample browser: each candidate (answer, verdict, the reward model's score where shown), each method's pick
    data = (tmp_path / "rep" / "browser" / "data" / "t0.js").read_text()
    docs = json.loads(data[data.index(",") + 1 : data.rindex(")")])["docs"]
    math2 = next(d for d in docs if "rotating the figure" in d["prompt"])
    rows = {r["label"]: r["values"][0] for r in math2["options"]["rows"]}
    assert rows["candidate 13"] == "B ✓ · reward model at N=8: 5, 16: 5" and rows["candidate 3"] == "I am not sure. ✗ · reward model at N=2: 1, 4: 1, 8: 1, 16: 1"
    assert rows["vote, N=16"] == "'B' ✓" and rows["best-of-2"].startswith("candidate ") and rows["best-of-2"].endswith("✗")
    assert rows["tournament, N=4"] == "candidate 3 ✗" and rows["tournament, N=8"] == "candidate 13 ✓"
