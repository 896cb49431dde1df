"""SciFIBench through the real lmms-eval CLI on the fixture mirror (which also holds a legacy split
file that must never be read)."""

import base64
import io

import pytest
from conftest import cli_env, read_outputs, run_cli, run_with_judge
from PIL import Image

from lmms_eval_earthsci.testing.openai_server import image_urls, text_of

pytestmark = pytest.mark.e2e


def test_groups_and_alignment_simple_backend(mirror, hf_home, tmp_path):
    out = tmp_path / "out"
    run_cli(["--model", "dummy", "--model_args", "response=Let's see. Answer: C", "--tasks", "scifibench,scifibench_alignment", "--output_path", str(out), "--log_samples"], cli_env(mirror, hf_home), str(tmp_path))
    res, samples = read_outputs(str(out))
    r = res["results"]
    # fixture answers: CS A, C, E; General B, D, A -> "C" is right once in each CS split
    assert r["scifibench_cs_f2c"]["scifibench_acc,none"] == pytest.approx(100 / 3)
    assert r["scifibench_general_c2f"]["scifibench_acc,none"] == 0.0
    assert r["scifibench_f2c"]["scifibench_acc,none"] == pytest.approx(100 / 6)  # mean of CS and General
    assert r["scifibench"]["scifibench_acc,none"] == pytest.approx(100 / 6)
    assert r["scifibench_cs_f2c"]["scifibench_category_other_cs,none"] == 100.0
    assert r["scifibench_cs_f2c"]["scifibench_no_answer,none"] == 0.0
    # Fig. 8: the fixture's correct captions are 6-9 words, its figures 55-65 px (sqrt(w*h)): one bin each
    assert r["scifibench_cs_f2c"]["scifibench_length_6_10,none"] == pytest.approx(100 / 3) and r["scifibench_cs_f2c"]["scifibench_length_11_20,none"] is None
    assert r["scifibench_cs_c2f"]["scifibench_size_0_249,none"] == pytest.approx(100 / 3) and r["scifibench_general_c2f"]["scifibench_size_0_249,none"] == 0.0
    assert not any(k.startswith("scifibench_size_") for k in r["scifibench_cs_f2c"]) and not any(k.startswith("scifibench_length_") for k in r["scifibench_cs_c2f"])
    assert not any("year" in k for task in r.values() for k in task)  # no released row carries a publication year
    assert r["scifibench_cs_f2c_marked_correct"]["scifibench_length_6_10,none"] == pytest.approx(100 / 3)
    assert {s["scifibench_acc"]["caption_words"] for s in samples["scifibench_cs_f2c"]} == {9, 7, 6}
    # three docs per split: the legacy v1 file in data/ was not read
    assert len(samples["scifibench_cs_f2c"]) == 3 and {s["scifibench_acc"]["split"] for s in samples["scifibench_cs_f2c"]} == {"CS_Figure2Caption"}
    for task in ("scifibench_cs_f2c_marked_correct", "scifibench_cs_f2c_marked_incorrect_inst"):
        assert r[task]["scifibench_acc,none"] == pytest.approx(100 / 3)
    prompt = samples["scifibench_cs_f2c_marked_incorrect_inst"][0]["input"]
    assert prompt.startswith("A human expert marked one of the captions as <Correct>. Ignore this information.\n")


def _size(url):
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size


def test_chat_backend_interleaves_and_llm_extractor(mirror, hf_home, tmp_path):
    def responder(body):
        text = text_of(body)
        if body.get("model") == "judge-m":  # the paper's extractor: sees only the output
            return "D" if "looks like" in text else "None"
        if "correct image" in text:
            return "It looks like the fourth one."  # no letter for the rules; the extractor says D
        return "B"

    res, samples, bodies = run_with_judge(mirror, hf_home, tmp_path, responder, "scifibench_judge")
    r = res["results"]
    # C->F: rules find no letter (0 %, all no-answer); the LLM extractor maps every output to D
    assert r["scifibench_cs_c2f_judge"]["scifibench_acc,none"] == 0.0 and r["scifibench_cs_c2f_judge"]["scifibench_no_answer,none"] == 100.0
    assert r["scifibench_general_c2f_judge"]["scifibench_acc_judge,none"] == pytest.approx(100 / 3)  # General answers B, D, A
    assert r["scifibench_cs_f2c_judge"]["scifibench_acc,none"] == 0.0 and r["scifibench_cs_f2c_judge"]["scifibench_acc_judge,none"] == 0.0
    assert r["scifibench_cs_f2c_judge"]["scifibench_judge_failed,none"] == 0
    # Fig. 8's bins on the judge variants follow the rules' verdict, as the category breakdown does
    assert r["scifibench_general_c2f_judge"]["scifibench_size_0_249,none"] == 0.0 and r["scifibench_cs_f2c_judge"]["scifibench_length_6_10,none"] == 0.0
    logged = samples["scifibench_general_c2f_judge"][0]["scifibench_acc_judge"]["judge"]
    assert "scifibench_judge" not in samples["scifibench_general_c2f_judge"][0]  # no log-only field
    assert not any(isinstance(v, list) for v in r["scifibench_cs_f2c_judge"].values())  # no empty pseudo-metric
    assert logged["status"] == "judged" and logged["reply"] == "D" and logged["verdict"] == "D"
    # the chat model saw "A) " image "B) " image ... "E) " image, then the question, images in A-E order
    c2f = [b for b in bodies if b.get("model") == "fake" and "correct image" in text_of(b)]
    assert len(c2f) == 6
    for b in c2f:
        parts = b["messages"][-1]["content"]
        assert [p["type"] for p in parts] == ["text", "image_url"] * 5 + ["text"]
        assert [parts[i]["text"] for i in range(0, 10, 2)] == ["A) ", "B) ", "C) ", "D) ", "E) "]
        assert [_size(u) for u in image_urls(b)] == [(64 + 8 * k, 48) for k in range(5)]
        assert parts[-1]["text"].startswith("\nCaption: ")
