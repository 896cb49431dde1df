"""The text-free tasks through the real lmms-eval CLI: on a mirror whose OCR step has not run, the run stops
before inference naming the step; after the step (a stand-in reader here: EasyOCR is not in this venv;
the vision tier runs the real one), the model receives the painted covers, pixel for pixel: I2T the
question's cover, T2I the four option covers."""

import base64
import io
import os

import forkserver
import pytest
from conftest import VENV_BIN, cli_env, openai_args, read_outputs, run_cli
from PIL import Image

from lmms_eval_earthsci.commands.check_mirror import task_configs
from lmms_eval_earthsci.evals.mac import tasks as mac_tasks
from lmms_eval_earthsci.evals.mac import textfree
from lmms_eval_earthsci.evals.mac.benchmark import DATASET
from lmms_eval_earthsci.evals.mac.fixtures import TitleReader, mac_rows, write_mac
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, image_urls, text_of

pytestmark = pytest.mark.e2e

TASKS = "mac2025_i2t_info_textfree,mac2025_t2i_option_textfree"


def _pixels_of_url(url):
    return list(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB").getdata())


def _pixels_of_file(root, rel):
    return list(Image.open(os.path.join(root, *DATASET.split("/"), *rel.split("/"))).convert("RGB").getdata())


def test_textfree_tasks_fail_naming_the_step_then_read_the_painted_covers(hf_home, tmp_path):
    root = str(tmp_path / "m")
    write_mac(root, text_free=False)
    env = cli_env(root, hf_home)
    args = ["--model", "dummy", "--model_args", 'response={"A": 1}', "--tasks", TASKS, "--output_path", str(tmp_path / "before"), "--verbosity", "DEBUG"]
    proc = forkserver.run([os.path.join(VENV_BIN, "lmms-eval"), *args], env, str(tmp_path), 600)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log[-3000:]
    assert "nothing was sent to the model" in log and "mac2025_i2t_info_textfree: 8 invalid record(s)" in log and "mac2025_t2i_option_textfree: 8 invalid record(s)" in log
    assert (
        "field 'cover_image': text-free cover 'ACS/OCRed_Cover/ACS Fake Materials & Interfaces/2024_1.png' is not in "
        f"{root}/{DATASET}: the text-free covers are painted by the OCR step of `lmms-eval-earthsci mirror` (mac2025-textfree-covers); "
        "run `lmms-eval-earthsci mirror DIR --tasks mac2025_textfree`"
    ) in log
    assert "field 'option_A': text-free cover" in log

    got = textfree.mirror_step(root, [t for t in task_configs() if t.endswith("_textfree")], task_configs(), progress=False, reader_factory=TitleReader)
    assert got["ok"] and got["manifest"]["painted_now"] == 20, got["line"]
    with FakeOpenAIServer(responder=lambda body: '{"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1}') as srv:
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", TASKS, "--output_path", str(tmp_path / "after"), "--log_samples"]
        run_cli(args, env, str(tmp_path))
        bodies = list(srv.requests)
    res, samples = read_outputs(str(tmp_path / "after"))
    assert {t: len(s) for t, s in samples.items()} == {"mac2025_i2t_info_textfree": 8, "mac2025_t2i_option_textfree": 8}
    assert res["results"]["mac2025_i2t_info_textfree"]["mac_acc,none"] == pytest.approx(100 * sum(r["answer"] == "A" for r in mac_rows("i2t", "info")) / 8)
    assert len(bodies) == 16
    seen = 0
    for direction, domain in (("i2t", "info"), ("t2i", "option")):
        kw = mac_tasks._task_kwargs({"direction": direction, "domain": domain})
        for row in mac_rows(direction, domain):
            body = next(b for b in bodies if mac_tasks.user_text(row, kw) in text_of(b) and (direction == "t2i") == (len(image_urls(b)) == 4))
            covers = [row["cover_image"]] if direction == "i2t" else [row[f"option_{x}"] for x in "ABCD"]
            shown = [_pixels_of_url(u) for u in image_urls(body)]
            # the painted copies (120x160: under the 512 px cap, sent as they are), not the covers with their titles
            assert shown == [_pixels_of_file(root, textfree.text_free_path(c)) for c in covers]
            assert all(s != _pixels_of_file(root, textfree.repo_rel(c)) for s, c in zip(shown, covers))
            seen += 1
    assert seen == 16
