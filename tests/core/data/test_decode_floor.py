"""From a dataset row to the model's input at the floor: tasks built by lmms-eval from the
fixture mirror, their docs read as lmms-eval reads them (``test_docs()[i]``), then our chat hook
(``doc_to_messages``) and our simple hook (``doc_to_visual``). Each distinct image is opened and decoded
once per doc (SciFIBench's list of images was decoded on every row read, its first image twice; EMMA's
repeated ``<image_k>`` once per occurrence), the pixels are those ``datasets`` decodes, and loading
rewrites nothing into the datasets cache."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

TASKS = ["scifibench_cs_c2f", "scifibench_cs_f2c", "emma_mini_math", "emma_mini_physics", "emma_mini_chemistry", "msearth_mcq", "mac2025_t2i_option", "musciclaims_rd"]
# MAC and MuSciClaims keep the covers and figures they decoded (core.data.repo_files.DecodedCache)
KEEP_DECODED = ("mac2025_t2i_option", "musciclaims_rd")


def _cache_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files if not f.endswith(".lock"))


def check() -> dict:
    import datasets
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_eval_earthsci.core.boundary.probe import task_messages
    from lmms_eval_earthsci.registration import register
    from lmms_eval_earthsci.testing.decodes import counting_decodes

    register()
    cache = os.environ["HF_DATASETS_CACHE"]
    with counting_decodes() as load:
        tasks = get_task_dict(TASKS, TaskManager())
    after_first_load = _cache_files(cache)
    get_task_dict(TASKS, TaskManager())
    report = {"cache_added_by_a_second_load": sorted(set(_cache_files(cache)) - set(after_first_load)), "cache_files": _cache_files(cache), "tasks": {},
              "load": {**load.as_dict(), "bytes_copied": sum(isinstance(src, bytes) for src in load.sources)}}
    for name, task in sorted(tasks.items()):
        docs = task.test_docs()
        rows = []
        for i in range(min(len(docs), 4)):
            with counting_decodes() as counts:
                doc = docs[i]
                read = counts.as_dict()
                messages = task_messages(task, doc)
                images = [part["url"] for m in messages for part in (m["content"] if isinstance(m["content"], list) else []) if part.get("type") == "image"]
                pixels = [im.tobytes() for im in images]  # every pixel the model would get
                chat = counts.as_dict()
                counts.reset()
                visuals = task.doc_to_visual(doc) if hasattr(task, "doc_to_visual") else []
                for im in visuals:
                    im.tobytes()
                simple = counts.as_dict()
            # the pixels are those datasets decodes from the stored cells (then RGB, as before)
            cells = [doc[k] for k in doc if isinstance(doc[k], dict) and "bytes" in doc[k]] + [c for k in doc if isinstance(doc[k], list) for c in doc[k] if isinstance(c, dict) and "bytes" in c]
            reference = {datasets.Image().decode_example(c).convert("RGB").tobytes() for c in cells if c.get("bytes")}
            rows.append({"row_read": read, "chat": chat, "distinct": len({id(im) for im in images}), "images": len(images), "simple": simple, "visuals": len(visuals),
                         "pixels_from_cells": all(p in reference for p in pixels) if cells else None})
        report["tasks"][name] = rows
    return report


@pytest.fixture(scope="module")
def report(mirror, tmp_path_factory):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EARTHSCI_JUDGE", "EARTHSCI_DAD"))}
    hf_home = str(tmp_path_factory.mktemp("hf_home"))
    env.update(EARTHSCI_DATA_MIRROR=mirror, HF_HOME=hf_home, HF_DATASETS_CACHE=os.path.join(hf_home, "datasets"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    proc = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_reading_a_row_decodes_no_image(report):
    for name, rows in report["tasks"].items():
        for row in rows:
            assert row["row_read"] == {"open": 0, "decoded": 0}, (name, row)


def test_each_distinct_image_is_opened_and_decoded_once_per_doc(report):
    seen_repeat = False
    for name, rows in report["tasks"].items():
        for row in rows:
            if name in KEEP_DECODED:  # covers and figures shared across docs: at most once, then from memory
                assert row["chat"]["open"] <= row["distinct"] and row["chat"]["decoded"] <= row["distinct"], (name, row)
            else:
                assert row["chat"] == {"open": row["distinct"], "decoded": row["distinct"]}, (name, row)
            assert row["simple"]["open"] <= row["visuals"] and row["simple"]["decoded"] <= row["visuals"], (name, row)
            if name not in KEEP_DECODED:
                assert row["simple"] == {"open": row["visuals"], "decoded": row["visuals"]}, (name, row)
            seen_repeat |= row["images"] > row["distinct"]
    assert seen_repeat, "no doc repeats an image: the once-per-distinct-image premise is untested"
    assert any(row["distinct"] == 5 for row in report["tasks"]["scifibench_cs_c2f"])


def test_the_pixels_are_those_datasets_decodes(report):
    checked = [row for rows in report["tasks"].values() for row in rows if row["pixels_from_cells"] is not None]
    assert checked and all(row["pixels_from_cells"] for row in checked)
    assert {name for name, rows in report["tasks"].items() if any(r["pixels_from_cells"] for r in rows)} >= {"scifibench_cs_c2f", "emma_mini_math", "msearth_mcq"}


def test_the_record_check_reads_headers_in_place(report):
    """Every record's images are checked at load (headers), none decoded, none copied out of the table."""
    assert report["load"]["open"] >= 20 and report["load"]["decoded"] == 0 and report["load"]["bytes_copied"] == 0, report["load"]


def test_loading_writes_only_what_load_dataset_writes(report):
    """No dataset rewritten at load (``cache-<fingerprint>.arrow`` is what a cast or a map writes), and a
    second load adds nothing."""
    assert report["cache_files"] and not [f for f in report["cache_files"] if os.path.basename(f).startswith("cache-")], report["cache_files"]
    assert report["cache_added_by_a_second_load"] == []


if __name__ == "__main__":
    print(json.dumps(check()))
