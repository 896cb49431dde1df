"""`lmms-eval-earthsci mac build`: the distractor rule on hand-made similarity lists, model specs,
reading and cleaning a collection, a real build with small local models (the bundled all-MiniLM-L6-v2
and tiny randomly initialised CLIPs saved as real checkpoints), seed determinism, the embedding cache,
and the built snapshot through the real lmms-eval CLI from a moved folder."""

import csv
import json
import os
import shutil
import sys

import forkserver
import numpy as np
import pytest

from lmms_eval_earthsci.evals.mac import builder as mac_builder
from lmms_eval_earthsci.evals.mac import collection as mac_collection
from lmms_eval_earthsci.evals.mac import distractors as mac_distractors
from lmms_eval_earthsci.evals.mac import embedders as mac_embedders
from lmms_eval_earthsci.evals.mac.fixtures import MAC_COLLECTION, minilm_path, write_mac_collection, write_tiny_clip

# --------------------------------------------------------------------------- the rule (spec §3.3)


def test_ranked_leaves_out_the_question_and_keeps_ties_in_index_order():
    sims = np.array([0.5, 0.9, 0.2, 0.9, 1.0])
    assert mac_distractors.ranked(sims, 4).tolist() == [1, 3, 0, 2]  # self (index 4, the most similar) left out; 1 before 3
    assert mac_distractors.ranked(sims, 1).tolist() == [4, 3, 0, 2]


def test_average_rank_list_by_mean_position_ties_in_index_order():
    # positions: 1 -> 0,2,1 (sum 3); 2 -> 1,0,2 (3); 3 -> 2,1,0 (3); 5 -> 3,3,3 (9)
    lists = [[1, 2, 3, 5], [2, 3, 1, 5], [3, 1, 2, 5]]
    assert mac_distractors.average_rank_list(lists).tolist() == [1, 2, 3, 5]
    assert mac_distractors.average_rank_list([[5, 3, 2, 1], [3, 5, 1, 2]]).tolist() == [3, 5, 1, 2]  # sums 3:1, 5:1, 1:5, 2:5
    with pytest.raises(ValueError):
        mac_distractors.average_rank_list([[1, 2], [1, 3]])


def test_select_each_model_top1_then_the_average_list():
    lists = {"clip": [7, 3, 5, 9], "vith": [3, 7, 5, 9], "vitg": [5, 3, 7, 9]}
    assert mac_distractors.select(lists, [3, 7, 5, 9]) == [("clip", 7), ("vith", 3), ("vitg", 5)]


def test_select_overlap_adds_nothing_and_the_average_fills_skipping_chosen():
    # vith's top-1 is clip's: vith adds nothing (it does not take its second); the average list fills
    lists = {"clip": [7, 3, 5, 9], "vith": [7, 5, 3, 9], "vitg": [7, 9, 3, 5]}
    ave = [7, 3, 5, 9]
    assert mac_distractors.select(lists, ave) == [("clip", 7), ("ave_1", 3), ("ave_2", 5)]
    # all three agree on one candidate: two from the average list
    assert mac_distractors.select({"a": [2, 1, 4], "b": [2, 4, 1], "c": [2, 1, 4]}, [2, 4, 1]) == [("a", 2), ("ave_1", 4), ("ave_2", 1)]


def test_select_drops_a_question_with_too_few_candidates():
    # a journal with three issues: each question has two candidates
    assert mac_distractors.select({"a": [1, 2], "b": [2, 1]}, [1, 2]) is None
    assert mac_distractors.select({"a": [], "b": []}, []) is None


def test_letters_seeded_per_question():
    a = mac_distractors.letters_for(0, "i2t_info", "J", "1")
    assert sorted(a) == ["A", "B", "C", "D"] and mac_distractors.letters_for(0, "i2t_info", "J", "1") == a
    draws = {tuple(mac_distractors.letters_for(s, "i2t_info", "J", "1")) for s in range(40)}
    assert len(draws) > 10  # the seed moves the letters
    firsts = [mac_distractors.letters_for(0, "i2t_info", "J", str(i))[0] for i in range(400)]
    assert all(60 < firsts.count(x) < 140 for x in "ABCD")  # the answer letter is about uniform


def test_relative_rank_and_embedding_picks():
    row = np.array([0.1, 0.9, 0.5, 0.5])
    assert mac_distractors.relative_rank(row, 1) == 0.25 and mac_distractors.relative_rank(row, 0) == 1.0 and mac_distractors.relative_rank(row, 2) == 0.5
    assert mac_distractors.average_relative_rank([np.array([0.9, 0.1, 0.5]), np.array([0.2, 0.1, 0.8])], 2) == pytest.approx(1 / 3)
    assert mac_distractors.embedding_pick([0.2, 0.7, 0.7, 0.1]) == 1
    assert mac_distractors.average_pick([[0.5, 0.9, 0.1, 0.0], [0.1, 0.8, 0.9, 0.0]]) == 1  # mean positions 1.5, 0.5, 1, 3
    assert mac_distractors.average_pick([[0.9, 0.8, 0.1, 0.0], [0.1, 0.8, 0.9, 0.0]]) == 0  # a tie (0, 1, 2): the first


# --------------------------------------------------------------------------- model specs


def test_model_specs():
    s = mac_embedders.parse_spec("st:sentence-transformers/all-mpnet-base-v2#cls")
    assert (s.library, s.name, s.pooling, s.key) == ("st", "sentence-transformers/all-mpnet-base-v2", "cls", "allv2")
    s = mac_embedders.parse_spec("open_clip:ViT-H-14-quickgelu:metaclip_fullcc")
    assert (s.library, s.name, s.pretrained, s.key) == ("open_clip", "ViT-H-14-quickgelu", "metaclip_fullcc", "vith")
    assert mac_embedders.parse_spec("hf:google/siglip2-so400m-patch16-naflex").key == "siglip"
    assert [s.key for s in mac_embedders.parse_specs(list(mac_embedders.DEFAULT_TEXT_MODELS))] == ["multiBv1", "allv2", "sbert"]
    assert [s.key for s in mac_embedders.parse_specs(list(mac_embedders.DEFAULT_IMAGE_MODELS))] == ["clip", "vitg", "vith"]
    assert [s.key for s in mac_embedders.parse_specs(["st:/m/My Model", "st:/m/My Model#cls"])] == ["my-model", "my-model-2"]
    for bad in ("clip:x", "st:", "open_clip:ViT-g-14", "st:x#mean", "x"):
        with pytest.raises(mac_embedders.ModelSpecError):
            mac_embedders.parse_spec(bad)
    with pytest.raises(mac_embedders.ModelSpecError, match="given twice"):
        mac_embedders.parse_specs(["hf:a", "hf:a"])


def test_cls_pooling_is_the_first_token_of_the_plain_model():
    """`#cls` = the authors' BERTEmbedding: AutoModel's last hidden state at [CLS], 512 tokens."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    texts = ["A layered oxide on the cover.", "word " * 300]
    enc = mac_embedders.load_encoder(mac_embedders.parse_spec(f"st:{minilm_path()}#cls"), "cpu")
    got = enc.texts(texts)
    tok, model = AutoTokenizer.from_pretrained(minilm_path()), AutoModel.from_pretrained(minilm_path()).eval()
    with torch.no_grad():
        ref = model(**tok(texts, padding=True, truncation=True, max_length=512, return_tensors="pt")).last_hidden_state[:, 0].numpy()
    np.testing.assert_allclose(got, ref / np.linalg.norm(ref, axis=1, keepdims=True), atol=1e-5)
    mean = mac_embedders.load_encoder(mac_embedders.parse_spec(f"st:{minilm_path()}"), "cpu").texts(texts)
    assert not np.allclose(mean, got, atol=1e-3)  # the model's own (mean) pooling differs


def test_clip_text_tower_truncates_at_77_tokens(tmp_path):
    enc = mac_embedders.load_encoder(mac_embedders.parse_spec(f"hf:{write_tiny_clip(str(tmp_path / 'clip'))}"), "cpu")
    long = " ".join(f"w{i}" for i in range(400))
    ids = enc.tokenizer(long, truncation=True, max_length=77)["input_ids"]
    head = enc.tokenizer.decode(ids[1:-1])
    np.testing.assert_allclose(enc.texts([long]), enc.texts([head]), atol=1e-5)
    from lmms_eval_earthsci.evals.mac.fixtures import draw_cover

    paths = []
    for k in range(2):
        paths.append(str(tmp_path / f"{k}.png"))
        draw_cover(k, "J").save(paths[-1])
    vecs = enc.images(paths)
    assert vecs.shape == (2, 16) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


# --------------------------------------------------------------------------- input and cleaning


def test_folder_input_and_cleaning(tmp_path):
    root = write_mac_collection(str(tmp_path / "c"), manifest=False)
    issues, report = mac_collection.read_input(root)
    kept = mac_collection.clean(issues, report, drop_blank=True)
    counts = report.counts()
    assert counts == {"no story file": 1, "empty story": 1, "unreadable image": 1, "identical image": 1, "near-blank image": 1}
    assert any("2024_7.png" in x for x in report.dropped["unreadable image"])
    assert len(kept) == sum(len(i) for _, _, i in MAC_COLLECTION) and report.read == len(kept) + 5
    assert all(it.cover_sha and it.story_sha for it in kept)
    with pytest.raises(mac_collection.BuildInputError, match="needs one"):
        mac_collection.in_window(kept[0], (2024, 1), None)


def test_manifest_errors_and_window(tmp_path):
    path = write_mac_collection(str(tmp_path / "c"))
    issues, _ = mac_collection.read_input(path)
    by = {it.id: it for it in issues}
    w = ((2024, 1), (2025, 2))
    assert mac_collection.in_window(by["2024_1"], *w) and mac_collection.in_window(by["2025_1"], *w) and not mac_collection.in_window(by["2025_2"], *w)
    assert not mac_collection.in_window(by["12_1"], *w)  # "2023": a year outside
    assert mac_collection.in_window(by["12_1"], (2023, 1), (2023, 12)) and not mac_collection.in_window(by["12_1"], (2023, 6), (2024, 1))
    bad = tmp_path / "bad.csv"
    bad.write_text("publisher,journal,id,cover_path,story_path\n")
    with pytest.raises(mac_collection.BuildInputError, match="missing column.*pub_date"):
        mac_collection.read_input(str(bad))
    bad.write_text("publisher,journal,id,cover_path,story_path,pub_date\nACS,J,1,a.png,a.txt,2024-13\n")
    with pytest.raises(mac_collection.BuildInputError, match=r"line 2 \(J/1\): pub_date"):
        mac_collection.read_input(str(bad))
    with pytest.raises(mac_collection.BuildInputError, match="expected YYYY-MM"):
        mac_collection.parse_month("2024/01", "--from")


# --------------------------------------------------------------------------- a real build


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    return {"text": [f"st:{minilm_path()}", f"st:{minilm_path()}#cls"], "image": [f"hf:{write_tiny_clip(str(d / 'clip-a'), 0)}", f"hf:{write_tiny_clip(str(d / 'clip-b'), 1)}"]}


def _build(src, out, models, cache, seed=0, **kw):
    logs = []
    opts = mac_builder.BuildOptions(src, str(out), "2024-01", "2025-02", seed=seed, text_models=models["text"], image_models=models["image"], cache_dir=str(cache), progress=False, **kw)
    return mac_builder.build(opts, log=logs.append), logs


def _rows(out, name):
    with open(os.path.join(out, name), newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def built(tmp_path_factory, models):
    tmp = tmp_path_factory.mktemp("build")
    src = write_mac_collection(str(tmp / "collection"))
    info, logs = _build(src, tmp / "out", models, tmp / "cache", drop_blank=True)
    return src, tmp, info, logs


def test_build_writes_the_official_schema_and_applies_the_rule(built):
    src, tmp, info, logs = built
    out = tmp / "out"
    in_window = {(j, i) for _, j, issues in MAC_COLLECTION for i, d in issues if "2024-01" <= d[:7] <= "2025-02" and len(d) >= 7}
    small = {j for _, j, issues in MAC_COLLECTION if len(issues) < 4}
    journal_issues = {j: {i for i, _ in issues} for _, j, issues in MAC_COLLECTION}
    for variant in mac_builder.VARIANTS:
        rows = _rows(out, mac_builder.CSV_NAMES[variant])
        with open(os.path.join(out, mac_builder.CSV_NAMES[variant])) as f:
            assert f.readline().rstrip("\n").split(",") == list(mac_builder.COLUMNS)
        assert {(r["journal"], r["id"]) for r in rows} == {k for k in in_window if k[0] not in small}
        for r in rows:
            names = [r[f"option_{x}_embedding_name"] for x in "ABCD"]
            ids = [r[f"option_{x}_embedding_id"][:-4] for x in "ABCD"]
            assert r[f"option_{r['answer']}_embedding_name"] == "groundtruth" and names.count("groundtruth") == 1
            assert r[f"option_{r['answer']}_embedding_id"] == f"{r['id']}.txt"
            assert len(set(ids)) == 4 and set(ids) <= journal_issues[r["journal"]]  # same journal, distinct
            model_keys = ["model", "model-2"] if variant == ("i2t", "option") else ["clip-a", "clip-b"]
            assert all(n == "groundtruth" or n in model_keys or n.startswith("ave_") for n in names)
            assert r["question"] == mac_builder.QUESTIONS[variant[0]] and r["split"] == "test"
            if variant[0] == "i2t":
                assert r["cover_image"] == f"MAC_Bench/{_pub(r['journal'])}/Cover/{r['journal']}/{r['id']}.png"
                assert all(r[f"option_{x}_path"].endswith(".txt") and "/Story/" in r[f"option_{x}_path"] for x in "ABCD")
            else:
                assert r["cover_image"].startswith("The cover of ") and all(r[f"option_{x}"].endswith(".png") for x in "ABCD")
    # candidates span the journal's whole history: issues outside the window are distractors somewhere
    used = {(r["journal"], r[f"option_{x}_embedding_id"][:-4]) for v in mac_builder.VARIANTS for r in _rows(out, mac_builder.CSV_NAMES[v]) for x in "ABCD"}
    assert used - in_window
    # the covers and stories the rows name are laid out as the repo; the dropped journal's are not
    for journal, issue in used:
        assert os.path.isfile(os.path.join(out, _pub(journal), "Cover", journal, f"{issue}.png"))
        assert os.path.isfile(os.path.join(out, _pub(journal), "Story", journal, f"{issue}.txt"))
    assert not os.path.exists(os.path.join(out, "Nature"))
    assert info["dropped_questions"] == {"journal has fewer than 4 issues": 3 * 4}
    stats = json.loads((out / "stats.json").read_text())
    assert set(stats["relative_rank"]) == {"clip-a", "clip-b", "average"}
    assert stats["relative_rank"]["clip-a"]["i2t"]["n"] == len(_rows(out, "image2text_info.csv"))
    assert set(stats["embedding_accuracy"]) == {"image2text_info", "image2text_option", "text2image_info", "text2image_option"}
    assert any("unreadable image" in line and "2024_7.png" in line for line in logs)


def _pub(journal):
    return next(p for p, j, _ in MAC_COLLECTION if j == journal)


def test_same_inputs_and_seed_give_identical_csvs_and_the_cache_embeds_nothing_new(built, models):
    src, tmp, info, _ = built
    again, logs = _build(src, tmp / "again", models, tmp / "cache", drop_blank=True)
    for name in mac_builder.CSV_NAMES.values():
        assert (tmp / "out" / name).read_bytes() == (tmp / "again" / name).read_bytes()
    assert info["embedded_now"] == {"model": 14, "model-2": 14, "clip-a": 28, "clip-b": 28}
    assert again["embedded_now"] == {"model": 0, "model-2": 0, "clip-a": 0, "clip-b": 0}
    other, _ = _build(src, tmp / "seed7", models, tmp / "cache", seed=7, drop_blank=True)
    answers = [r["answer"] for n in mac_builder.CSV_NAMES.values() for r in _rows(tmp / "out", n)]
    answers7 = [r["answer"] for n in mac_builder.CSV_NAMES.values() for r in _rows(tmp / "seed7", n)]
    assert answers != answers7
    # a rebuild into the same folder replaces the earlier build; a foreign non-empty folder is refused
    _build(src, tmp / "again", models, tmp / "cache", drop_blank=True)
    (tmp / "foreign").mkdir()
    (tmp / "foreign" / "x.txt").write_text("x")
    with pytest.raises(mac_collection.BuildInputError, match="not empty"):
        _build(src, tmp / "foreign", models, tmp / "cache")


def test_cli_errors_are_one_clear_line(tmp_path):
    cli = [sys.executable, "-m", "lmms_eval_earthsci.cli", "mac", "build"]

    def run(*args):
        return forkserver.subprocess_run(cli + list(args), capture_output=True, text=True, timeout=120)

    p = run(str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "not a folder" in p.stderr and "Traceback" not in p.stderr
    p = run(str(tmp_path), "--out", str(tmp_path / "o"), "--from", "2024-13")
    assert p.returncode == 2 and "--from: expected YYYY-MM" in p.stderr
    p = run(str(tmp_path), "--out", str(tmp_path / "o"), "--image-models", "clip:x")
    assert p.returncode == 2 and "model spec 'clip:x'" in p.stderr
    p = run(str(tmp_path), "--out", str(tmp_path / "o"), "--bogus")
    assert p.returncode == 2 and "unrecognized arguments: --bogus" in p.stderr
    p = run("--help")
    assert p.returncode == 0 and all(f in p.stdout for f in ("--from", "--to", "--seed", "--text-models", "--image-models", "--device", "--ocr", "--name"))


# --------------------------------------------------------------------------- text-free covers


def test_ocr_paints_confident_boxes_white_from_first_to_third_corner():
    from lmms_eval_earthsci.evals.mac import ocr

    img = np.zeros((40, 60, 3), dtype=np.uint8)
    dets = [([[2.7, 3.2], [20, 3], [20.9, 10.6], [2, 10]], "TITLE", 0.9), ([[30, 20], [50, 20], [50, 30], [30, 30]], "faint", 0.25)]
    assert ocr.paint(img, dets) == 1
    assert (img[3:11, 2:21] == 255).all() and img[2, 2].max() == 0 and img[11, 2].max() == 0 and img[3, 21].max() == 0
    assert img[20:31, 30:51].max() == 0  # 0.25 is not above the threshold


def test_ocr_paths_are_built_from_parts_not_replaced():
    rows = [{"cover_image": "MAC_Bench/ACS/Cover/Cover Reports/1_1.png"}]
    assert mac_builder._ocr_rows(rows, "i2t")[0]["cover_image"] == "MAC_Bench/ACS/OCRed_Cover/Cover Reports/1_1.png"
    it = mac_collection.Issue("ACS", "Cover Reports", "1_1", "/x/1_1.png", "s")
    assert mac_builder.repo_path(it, "OCRed_Cover") == "ACS/OCRed_Cover/Cover Reports/1_1.png"


# --------------------------------------------------------------------------- through lmms-eval


def _run_snapshot(snapshot, name, mirror, hf_home, tmp_path):
    """Run a snapshot's group `name` through the real CLI (`--include_path <snapshot>/tasks`) against a
    loopback model that always answers A; checks every row is a doc and the accuracy is the share of rows
    whose answer is A, and returns (results, number of requests, rows)."""
    from conftest import cli_env, openai_args, read_outputs, run_cli

    from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, image_urls

    with FakeOpenAIServer(responder=lambda body: '{"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1}') as srv:
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--include_path", str(snapshot / "tasks"), "--tasks", name, "--output_path", str(tmp_path / "res"), "--log_samples"]
        run_cli(args, cli_env(mirror, hf_home, OMP_NUM_THREADS="1"), str(tmp_path))
        bodies = list(srv.requests)
    res, samples = read_outputs(str(tmp_path / "res"))
    total = 0
    for (direction, domain), csv_name in mac_builder.CSV_NAMES.items():
        rows = _rows(snapshot, csv_name)
        task = f"{name}_{direction}_{domain}"
        assert len(samples[task]) == len(rows) > 0
        assert res["results"][task]["mac_acc,none"] == pytest.approx(100.0 * sum(r["answer"] == "A" for r in rows) / len(rows))
        total += len(rows)
    assert len(bodies) == total
    assert sorted(len(image_urls(b)) for b in bodies) == sorted([1] * (total // 2) + [4] * (total // 2))
    return res


@pytest.mark.e2e
def test_built_snapshot_runs_through_lmms_eval_from_a_moved_folder(built, mirror, hf_home, tmp_path):
    """The task folder finds the snapshot next to it: build, move, run `--include_path <moved>/tasks
    --tasks mac_custom`; every row is a doc, the covers on the wire are the snapshot's, the accuracy is
    the share of rows whose answer is A (the responder always says A)."""
    src, tmp, _, _ = built
    moved = tmp_path / "elsewhere" / "snapshot"
    shutil.copytree(tmp / "out", moved)
    res = _run_snapshot(moved, "mac_custom", mirror, hf_home, tmp_path)
    for task in (f"mac_custom_{d}_{m}" for d, m in mac_builder.CSV_NAMES):
        assert res["configs"][task]["metadata"]["earthsci_data"]["repo_files"]["root"] == str(moved)


@pytest.mark.e2e
def test_a_snapshot_built_before_the_layout_move_still_runs(mirror, hf_home, tmp_path):
    """tests/data/mac_snapshot_v0_1 was built by `mac build` of 0.1.0 before the one-folder-per-benchmark
    layout: its YAMLs name `lmms_eval_earthsci.mac.tasks.*` and `lmms_eval_earthsci.core.metrics.*`, which
    must keep resolving (to the modules that live on as lmms_eval_earthsci.evals.mac.tasks and
    lmms_eval_earthsci.core.scoring.metrics) so users' snapshots keep running."""
    snapshot = tmp_path / "snapshot"
    shutil.copytree(os.path.join(os.path.dirname(__file__), "..", "..", "data", "mac_snapshot_v0_1"), snapshot)
    template = (snapshot / "tasks" / "_template_yaml").read_text()
    assert "!function lmms_eval_earthsci.mac.tasks.process_results" in template  # the premise: old names
    # ... and the core's module names from before it was grouped by concern (core.metrics, now core.scoring.metrics)
    assert any("!function lmms_eval_earthsci.core.metrics.mean_present" in f.read_text() for f in (snapshot / "tasks").glob("*.yaml"))
    _run_snapshot(snapshot, "mac_legacy", mirror, hf_home, tmp_path)
