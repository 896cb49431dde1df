"""MSEarth through the real lmms-eval CLI on fixture mirrors of both upload schemas."""

import base64
import io

import pytest
from conftest import cli_env, read_outputs, run_cli, run_with_judge
from PIL import Image

from lmms_eval_earthsci.evals.msearth.fixtures import msearth_rows, write_msearth
from lmms_eval_earthsci.testing.figures import draw_figure
from lmms_eval_earthsci.testing.openai_server import image_urls, prompt_field, text_of

pytestmark = pytest.mark.e2e

MSEARTH_TASKS = ["msearth_mcq", "msearth_mcq_nocap", "msearth_open", "msearth_caption"]


@pytest.fixture(scope="module")
def reupload_mirror(tmp_path_factory):
    """The MSEarth-Data re-upload schema (struct columns, `caption` instead of `original_caption`)
    served under the MSEarth/ names, so the same tasks load it."""
    root = str(tmp_path_factory.mktemp("mirror_reupload"))
    for repo in ("MSEarth/MSEarth_MCQ", "MSEarth/MSEarth_Open_Ended", "MSEarth/MSEarth_Captioning"):
        write_msearth(root, repo, variant="reupload")
    return root


def test_simple_backend_all_tasks_without_judge(mirror, hf_home, tmp_path):
    out = tmp_path / "out"
    resp = '{"answer": "C", "Explanation": "read the figure"}'
    proc = run_cli(["--model", "dummy", "--model_args", f"response={resp}", "--tasks", "msearth", "--output_path", str(out), "--log_samples"], cli_env(mirror, hf_home), str(tmp_path))
    res, samples = read_outputs(str(out))
    r = res["results"]
    # gold letters C, A, B, C, D, A: two of six
    for task in ("msearth_mcq", "msearth_mcq_nocap"):
        assert r[task]["msearth_acc,none"] == pytest.approx(100 / 3)
        assert r[task]["msearth_acc_strict,none"] == pytest.approx(100 / 3)
        assert r[task]["msearth_image_multi,none"] == 100.0 and r[task]["msearth_sphere_geology,none"] == 0.0
    # no judge: judged metrics unavailable, text metrics computed, every doc counted
    assert r["msearth_open"]["msearth_oe_acc,none"] is None and r["msearth_caption"]["msearth_cap_score,none"] is None
    assert r["msearth_open"]["msearth_oe_rouge1,none"] == 0.0
    assert len(samples["msearth_mcq"]) == 6 and len(samples["msearth_open"]) == 4 and len(samples["msearth_caption"]) == 3
    assert "no LLM judge configured" in proc.stdout + proc.stderr
    # offline (HF_HUB_OFFLINE, an empty HF cache): BERTScore is null and the results JSON says why beside it
    for task, prefix in (("msearth_open", "msearth_oe"), ("msearth_caption", "msearth_cap")):
        assert r[task][f"{prefix}_bertscore,none"] is None
        why = res["configs"][task]["metadata"]["earthsci_unavailable"]
        assert list(why) == [f"{prefix}_bertscore"], why
        assert "offline" in why[f"{prefix}_bertscore"] and "EARTHSCI_BERTSCORE_MODEL" in why[f"{prefix}_bertscore"], why
    assert "earthsci_unavailable" not in res["configs"]["msearth_mcq"]["metadata"]


def _decode(url):
    return list(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB").getdata())


def model_reply(body):
    text = text_of(body)
    if "multiple-choice question" in text:
        return '{"answer": "c"}'  # lower-case: right for the paper's method, wrong for the official code
    if "open-ended question" in text:
        return '```json\n{"answer": "Late spring", "Explanation": "peak flow"}\n```'
    return '{"caption": "Annual precipitation at five stations."}'


def judge_reply(body):
    text = text_of(body)
    if "Generated Answer:" in text:
        std = prompt_field(text, "Standard Answer")
        gen = prompt_field(text, "Generated Answer")
        return '```json\n{"is_correct": %s}\n```' % ("true" if std == gen else "false")
    if "sea surface temperature" in text.lower():
        return "Score: excellent"  # unparseable: a counted judge failure
    return '{"score": 4}'


def test_chat_backend_and_judge_on_reupload_schema(reupload_mirror, hf_home, tmp_path):
    def responder(body):
        return judge_reply(body) if body.get("model") == "judge-m" else model_reply(body)
    res, samples, bodies = run_with_judge(reupload_mirror, hf_home, tmp_path, responder, "msearth_mcq,msearth_open,msearth_caption")
    r = res["results"]
    # MCQ: every answer is "c"; gold C for two of six
    assert r["msearth_mcq"]["msearth_acc,none"] == pytest.approx(100 / 3) and r["msearth_mcq"]["msearth_acc_strict,none"] == 0.0
    # OE: "Late spring" is right for the first doc only
    assert r["msearth_open"]["msearth_oe_acc,none"] == 25.0 and r["msearth_open"]["msearth_oe_judge_failed,none"] == 0
    assert r["msearth_open"]["msearth_sphere_hydrology,none"] == 100.0 and r["msearth_open"]["msearth_image_cross,none"] == 0.0
    # captions: 4 and 4 judged, one reply unparseable (left out of the mean, counted)
    assert r["msearth_caption"]["msearth_cap_score,none"] == 4.0 and r["msearth_caption"]["msearth_cap_judge_failed,none"] == 1
    logged = {s["msearth_oe_acc"]["id"]: s["msearth_oe_acc"]["judge"] for s in samples["msearth_open"]}
    assert logged["ON000201"]["verdict"] is True and '"is_correct": true' in logged["ON000201"]["reply"]
    assert logged["ON000201"]["request"]["images"] == 1 and "Generated Answer:" in logged["ON000201"]["request"]["text"]
    assert all(s["msearth_cap_score"]["id"] and s["msearth_cap_score"]["route"] == "chat" for s in samples["msearth_caption"])  # a record id on every task
    statuses = sorted(s["msearth_cap_score"]["judge"]["status"] for s in samples["msearth_caption"])
    assert statuses == ["judged", "judged", "parse_failed"]

    # model and judge both get one user turn: text first, then the doc's own image, byte for byte
    oe_rows = {row["question_id"]: row for row in msearth_rows("open", "reupload")}
    model_oe = [b for b in bodies if b.get("model") == "fake" and "open-ended question" in text_of(b)]
    judge_oe = [b for b in bodies if b.get("model") == "judge-m" and "Generated Answer:" in text_of(b)]
    assert len(model_oe) == 4 and len(judge_oe) == 4
    for b in model_oe + judge_oe:
        parts = b["messages"][-1]["content"]
        assert [p["type"] for p in parts] == ["text", "image_url"]
        qid = next(q for q, row in oe_rows.items() if row["query"].split("Question:\n")[1] in text_of(b))
        i = list(oe_rows).index(qid)
        assert _decode(image_urls(b)[0]) == list(draw_figure(400 + i).getdata())
    # the judge sees the refined caption and the raw query with its "<image>" literal
    j = next(b for b in judge_oe if "Late spring" in text_of(b).split("Standard Answer:")[1].split("\n")[0])
    assert "Question: <image>Caption:\nDischarge of the river" in text_of(j) and "Image Caption: Discharge of the river over a year. Refined:" in text_of(j)


def test_cot_variant_samples_eight_and_votes(mirror, hf_home, tmp_path):
    """msearth_mcq_cot through the CLI: 8 candidates per question reach the vote (lmms-eval's filter would keep one)."""
    from collections import defaultdict

    from conftest import openai_args

    from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

    cycle = ['{"short reasoning": "r", "answer": "A"}', '{"answer": "B"}', '{"answer": "B"}', '{"answer": "C"}']
    calls = defaultdict(int)

    def reply(body):
        text = text_of(body)
        assert "using Chain-of-Thought (CoT) reasoning" in text
        calls[text] += 1
        return cycle[(calls[text] - 1) % len(cycle)]

    with FakeOpenAIServer(responder=reply) as srv:
        run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=1), "--tasks", "msearth_mcq_cot", "--limit", "2",
                 "--output_path", str(tmp_path / "out"), "--log_samples"], cli_env(mirror, hf_home), str(tmp_path))
    res, samples = read_outputs(str(tmp_path / "out"))
    assert sorted(calls.values()) == [8, 8]
    golds = [r["response"][0] for r in msearth_rows("mcq")[:2]]  # C, A
    by_gold = {g: s for g, s in zip(golds, sorted(samples["msearth_mcq_cot"], key=lambda s: s["doc_id"]))}
    for gold, s in by_gold.items():
        assert s["msearth_acc"]["votes"] == ["A", "B", "B", "C"] * 2
        assert s["msearth_maj@8"]["pick"] == "B" and s["msearth_maj@8"]["score"] == 0.0  # B has 4 of 8, wrong for both
        assert s["msearth_pass@8"]["score"] == 100.0 and s["msearth_acc"]["score"] == (100.0 if gold == "A" else 0.0)
    r = res["results"]["msearth_mcq_cot"]
    assert r["msearth_maj@8,none"] == 0.0 and r["msearth_pass_unbiased@1,none"] == pytest.approx(100 * (1 / 4 + 1 / 4) / 2) and r["msearth_maj@16,none"] is None
