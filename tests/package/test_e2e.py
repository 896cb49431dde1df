"""End-to-end: the real lmms-eval CLI in a subprocess, on the fixture mirror, with --verbosity DEBUG."""

import base64
import io

import pytest
from conftest import cli_env, openai_args, read_outputs, run_cli
from PIL import Image

from lmms_eval_earthsci.evals.emma.fixtures import emma_rows
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, image_urls, text_of

pytestmark = pytest.mark.e2e

# fixture answers (testing/fixtures.py): a "\boxed{B}" reply is right exactly for Math_2 and coding_2
EXPECTED_BOXED_B = {"emma_mini_math": 100 / 3, "emma_mini_physics": 0.0, "emma_mini_chemistry": 0.0, "emma_mini_coding": 50.0}


def _acc(results, task):
    return results["results"][task]["emma_acc,none"]


def test_simple_backend_scores_fixture_docs(mirror, hf_home, tmp_path):
    out = tmp_path / "out"
    proc = run_cli(["--model", "dummy", "--model_args", "response=\\boxed{B}", "--tasks", "emma_mini", "--output_path", str(out), "--log_samples"], cli_env(mirror, hf_home), str(tmp_path))
    res, samples = read_outputs(str(out))
    # lmms-eval's dummy sends nothing to a model: the layout probe says so once for the run (not per task),
    # names check-model, and records "not observed" for each task (never a silent "not checked")
    log = proc.stdout + proc.stderr
    assert log.count("could not be observed") == 1 and "could not be observed for 4 task(s)" in log and "check-model" in log
    assert {res["configs"][t]["metadata"]["earthsci_layout"]["status"] for t in EXPECTED_BOXED_B} == {"not observed"}
    for task, acc in EXPECTED_BOXED_B.items():
        assert _acc(res, task) == pytest.approx(acc)
    assert res["results"]["emma_mini"]["emma_acc,none"] == pytest.approx(200 / 9)  # micro-average, 2 of 9 docs
    assert res["results"]["emma_mini_coding"]["emma_category_color_texture,none"] == pytest.approx(100.0)
    assert res["results"]["emma_mini_coding"]["emma_task_vis_choose_code,none"] == pytest.approx(0.0)
    # every doc counted and logged with its extraction rule
    assert sum(len(v) for v in samples.values()) == 9
    s = samples["emma_mini_math"][0]["emma_acc"]
    assert s["rule"] == "boxed" and s["extraction"] == "B" and s["route"] == "simple"  # which route the sample took


def _decode(url):
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")


def test_chat_backend_receives_interleaved_images_in_order(mirror, hf_home, tmp_path):
    replies = {"phy_2": "\\boxed{A}", "chem_2": "The answer is \\boxed{D}"}

    def responder(body):
        for pid, reply in replies.items():
            if pid == "phy_2" and "Compare the graphs" in text_of(body):
                return reply
            if pid == "chem_2" and "Follow the arrows" in text_of(body):
                return reply
        return "no idea"

    with FakeOpenAIServer(responder=responder) as srv:
        out = tmp_path / "out"
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", "emma_mini_physics,emma_mini_chemistry", "--output_path", str(out), "--log_samples"]
        run_cli(args, cli_env(mirror, hf_home), str(tmp_path))
        bodies = list(srv.requests)
    res, _ = read_outputs(str(out))
    assert _acc(res, "emma_mini_physics") == pytest.approx(50.0)
    assert _acc(res, "emma_mini_chemistry") == pytest.approx(50.0)

    rows = {r["pid"]: r for rows in emma_rows().values() for r in rows}
    def figure(pid, k):
        return Image.open(io.BytesIO(rows[pid][f"image_{k}"]["bytes"])).convert("RGB")

    by_text = {("phy_2" if "Compare the graphs" in text_of(b) else "chem_2" if "Follow the arrows" in text_of(b) else "phy_1" if "Which path" in text_of(b) else "other"): b for b in bodies}
    # phy_2: "<image_1> and <image_2>, then <image_1> again": three images, the repeat kept, in text order
    imgs = [_decode(u) for u in image_urls(by_text["phy_2"])]
    assert [list(i.getdata()) for i in imgs] == [list(figure("phy_2", k).getdata()) for k in (1, 2, 1)]
    # text and images interleaved: the first part is the text before <image_1>
    parts = by_text["phy_2"]["messages"][-1]["content"]
    kinds = [p["type"] for p in parts]
    assert kinds[:4] == ["text", "image_url", "text", "image_url"]
    assert parts[0]["text"].endswith("Compare the graphs ")
    # phy_1 references only <image_2><image_3>
    assert [list(_decode(u).getdata()) for u in image_urls(by_text["phy_1"])] == [list(figure("phy_1", k).getdata()) for k in (2, 3)]
    # chem_2: question image then the four option images
    assert len(image_urls(by_text["chem_2"])) == 5
