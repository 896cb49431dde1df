"""The EMMA authors' released test-time-scaling files (GPT-4o, Chemistry; shared/reference/emma_tts/) scored by
our vote, subsets, reward-model prompt, parser and selection rule give their own ``*_result.json`` exactly, and
every per-question pick agrees with theirs. Skips without ../shared."""

import gzip
import json
import os

import pytest
from conftest import shared_path

from lmms_eval_earthsci.commands import rescore
from lmms_eval_earthsci.core.data.releases import RescoreError
from lmms_eval_earthsci.core.scoring import scaling
from lmms_eval_earthsci.evals.emma import tts_release
from lmms_eval_earthsci.evals.emma.scaling import extract_answer_dev

NAME = "chatgpt-4o-latest_Chemistry_8"


def _file(folder):
    return shared_path("reference", "emma_tts", folder, NAME + ".json.gz")


def _result(folder):
    with gzip.open(shared_path("reference", "emma_tts", folder, NAME + "_result.json.gz"), "rt") as f:
        return json.load(f)


@pytest.mark.parametrize("folder, method, correct", [("Majority_Voting_4", "maj@4", 42), ("Majority_Voting_8", "maj@8", 36), ("gpt-best-of-4", "bon@4", 36), ("gpt-best-of-8", "bon@8", 41)])
def test_each_released_file_gives_their_result_json(folder, method, correct):
    path = _file(folder)
    scored = tts_release.score_file(path)
    assert list(scored) == [method]
    got = tts_release.result_json(tts_release.read_release(path), scored[method])
    assert got == _result(folder) and got["average"]["correct"] == correct


@pytest.mark.parametrize("folder", ["Majority_Voting_4", "Majority_Voting_8"])
def test_votes_and_picks_agree_with_theirs_per_question(folder):
    data = tts_release.read_release(_file(folder))
    verdicts = next(iter(tts_release.score_file(_file(folder)).values()))
    ties = 0
    for pid, rec in data.items():
        theirs = rec["extraction_list"]
        assert verdicts[pid]["votes"] == theirs, pid
        assert verdicts[pid]["pick"] == rec["extraction"], pid
        assert verdicts[pid]["correct"] == (str(rec["true_false"]) == "True"), pid
        ties += len(scaling.majority_vote(theirs).winners) > 1
    assert ties >= 5, "the seeded tie-break is not exercised"


@pytest.mark.parametrize("folder", ["gpt-best-of-4", "gpt-best-of-8"])
def test_reward_model_prompt_scores_and_pick_agree_with_theirs(folder):
    data = tts_release.read_release(_file(folder))
    verdicts = next(iter(tts_release.score_file(_file(folder)).values()))  # raises if any prompt differs by a byte
    ties = 0
    for pid, rec in data.items():
        scores = scaling.parse_final_scores(rec["scoring_response"])
        assert scores.slots == rec["score_list"], pid
        pick = verdicts[pid]["pick"]
        assert rec[f"response_{pick}"] == rec["best_response"], pid
        assert extract_answer_dev(rec["best_response"]) == rec["extraction"], pid
        ties += len(verdicts[pid]["tied"]) > 1
    assert ties > 20, "ties at the top score are the norm (spec §5.4): the seeded pick is not exercised"


def test_raw_file_curves_agree_with_their_majority_vote_files():
    scored = tts_release.score_file(_file("raw_results"))
    assert sorted(scored) == sorted(f"{m}@{n}" for m in ("maj", "pass", "pass_unbiased") for n in (1, 2, 4, 8))
    for n, folder in ((4, "Majority_Voting_4"), (8, "Majority_Voting_8")):
        mv = next(iter(tts_release.score_file(_file(folder)).values()))
        assert {p: v["correct"] for p, v in scored[f"maj@{n}"].items()} == {p: v["correct"] for p, v in mv.items()}
    data = tts_release.read_release(_file("raw_results"))
    # pass@8 (all T) equals the unbiased estimate at N = T; pass@1 is the subset's first candidate (raw 1)
    assert tts_release.result_json(data, scored["pass@8"])["average"] == tts_release.result_json(data, scored["pass_unbiased@8"])["average"]
    assert tts_release.result_json(data, scored["pass@1"])["average"]["correct"] == 35


def test_a_changed_prompt_is_named_with_the_question_and_the_character(tmp_path):
    with gzip.open(_file("gpt-best-of-4"), "rt") as f:
        data = json.load(f)
    pid = next(iter(data))
    data[pid]["scoring_query"] = data[pid]["scoring_query"].replace("fair assessment", "fair  assessment")
    folder = tmp_path / "gpt-best-of-4"
    folder.mkdir()
    path = folder / (NAME + ".json")
    path.write_text(json.dumps(data))
    with pytest.raises(RescoreError, match=rf"question {pid}: our reward-model prompt differs .* at character \d+"):
        tts_release.score_file(str(path))


def test_rescore_from_emma_tts_release_scores_several_files(tmp_path, capsys):
    files = [_file("Majority_Voting_4"), _file("gpt-best-of-8")]
    assert rescore.main(["--from", "emma-tts-release", *files, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "maj@4 42/100 = 42.00" in out and "bon@8 41/100 = 41.00" in out
    written = json.loads((tmp_path / f"gpt-best-of-8.{NAME}.bon@8_result.json").read_text())
    assert written == _result("gpt-best-of-8")
    rows = [json.loads(line) for line in open(os.path.join(tmp_path, f"Majority_Voting_4.{NAME}.maj@4.jsonl"))]
    assert len(rows) == 100 and sum(r["correct"] for r in rows) == 42
    assert rescore.main(["--from", "emma-tts-release", str(tmp_path / "nope.json"), "--out", str(tmp_path)]) == 2


def test_table_3_transcription_equals_the_protocols_table():
    """paper_numbers.json's Table 3 rows equal the table as the protocol prints it (model labels realigned)."""
    spec = open(shared_path("specs", "emma_test_time_scaling.md")).read()
    block = spec[spec.index("Table 3 (EMMA-mini, %)") : spec.index("Table 7 (math portion")]
    want, model = [], None
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not cells[1] or cells[1] in ("Method", "---") or cells[0].startswith("o1"):
            continue
        if cells[0]:
            model = cells[0].split(" (")[0]
            n1 = float(cells[0].split("(")[1].rstrip(")"))
        method = {"Majority Voting": "majority vote", "BoN": "best-of-N", "Tournament": "tournament", "Pass@N": "pass@N"}[cells[1]]
        values = {n: (None if c in ("—", "-") else float(c.strip("*"))) for n, c in zip(("2", "4", "8", "16"), cells[3:])}
        want.append((model, n1, method, values))
    with open(os.path.join(os.path.dirname(tts_release.__file__), "paper_numbers.json")) as f:
        rows = json.load(f)["test_time_scaling"]["rows"]
    assert [(r["model"], r["n1"], r["method"], r["values"]) for r in rows] == want and len(want) == 13


def test_internvl_reward_model_files_are_read_with_their_older_selection_rule(tmp_path):
    """internvl-best-of-<N>/ files were made before the i < T filter (spec §5.6): a tie with a label >= T can
    pick it; where the file lacks that response their run raised KeyError (wrong), where it holds 16 it is chosen."""
    with gzip.open(_file("gpt-best-of-4"), "rt") as f:
        data = json.load(f)
    pid = next(iter(data))
    rec = data[pid]
    # every shown label and the never-shown 12 tie at 5: rule F ties among 1, 0, 5, 2 (< T); the older rule adds 12
    rec["scoring_response"] = "".join(f"\\finalscore{{{i}}}{{ok}}{{5}}" for i in (1, 0, 5, 2, 12))
    one = {pid: rec}
    for folder in ("gpt-best-of-4", "internvl-best-of-4"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / (NAME + ".json")).write_text(json.dumps(one))
    current = tts_release.score_file(str(tmp_path / "gpt-best-of-4" / (NAME + ".json")))["bon@4"][pid]
    legacy = tts_release.score_file(str(tmp_path / "internvl-best-of-4" / (NAME + ".json")))["bon@4"][pid]
    sub = scaling.subset(8, 4)
    assert current["tied"] == [0, 1, 2, 5] and legacy["tied"] == [0, 1, 2, 5, 12] and "selection" not in current
    # k = 5 tied: position 1 (the (8, 4) row of spec §5.4) -> slot 1; the same state, so the older rule picks position 1 too
    assert current["pick"] == scaling.select_best(scaling.Scores([5 if i in (0, 1, 2, 5) else 0 for i in range(16)], []), sub).index
    assert legacy["pick"] == [0, 1, 2, 5, 12][[0, 0, 0, 1, 1, 1, 1, 3][4]] and legacy["selection"] == tts_release.LEGACY
    # a pick >= T that the file does not hold: wrong, named
    rec["scoring_response"] = "\\finalscore{12}{ok}{5}\\finalscore{1}{ok}{4}"
    (tmp_path / "internvl-best-of-4" / (NAME + ".json")).write_text(json.dumps({pid: rec}))
    missing = tts_release.score_file(str(tmp_path / "internvl-best-of-4" / (NAME + ".json")))["bon@4"][pid]
    assert missing["pick"] == 12 and not missing["correct"] and "response_12, is not in the file" in missing["why"]


def test_the_files_questions_against_emma_mini_in_a_mirror(tmp_path, monkeypatch, capsys):
    """With a mirror, the questions EMMA-mini lacks are named (scored from the file's own fields), and a
    question whose CoT query our task builds differently from the file's is named with the character."""
    from lmms_eval_earthsci.evals.emma.fixtures import _emma_row, emma_features
    from lmms_eval_earthsci.testing.figures import write_hf_repo

    data = tts_release.read_release(_file("Majority_Voting_4"))
    pids = list(data)[:3]
    rows = []
    for k, pid in enumerate(pids):
        r = data[pid]
        images = sorted({int(m) for m in __import__("re").findall(r"<image_(\d+)>", r["query"])})
        question = r["question"] + (" (edited)" if k == 2 else "")
        rows.append(_emma_row(pid, "Chemistry", question, r["options"] or None, r["answer"], r["type"], r["category"], images, 100 + k, context=r["context"]))
    repo = tmp_path / "mirror" / "luckychao" / "EMMA-mini"
    write_hf_repo(str(repo), {"Chemistry": {"test": rows}}, emma_features(), lambda c, s: f"{c}/{s}-00000-of-00001.parquet")
    monkeypatch.setenv("EARTHSCI_DATA_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    lines = tts_release.check_against_task(data)
    assert lines[0].startswith("97 of 100 Chemistry questions are not in EMMA-mini (scored from the file's own fields): ") and pids[0] not in lines[0]
    assert len(lines) == 2 and lines[1].startswith(f"Chemistry question {pids[2]}: the task's CoT query differs from the file's at character ")
    assert " (edited)" in lines[1]
    assert rescore.main(["--from", "emma-tts-release", _file("Majority_Voting_4"), "--out", str(tmp_path / "out")]) == 0
    assert "97 of 100 Chemistry questions are not in EMMA-mini" in capsys.readouterr().out
    monkeypatch.delenv("EARTHSCI_DATA_MIRROR")
    assert tts_release.check_against_task(data) == ["EARTHSCI_DATA_MIRROR is not set: the file's questions were not checked against EMMA-mini's"]


def test_pass_at_1_and_qwen_reward_model_layouts(tmp_path):
    """pass@1/ (the subset's first candidate renumbered response_0) and Qwen2.5-Math-RM files (spec §6), laid out
    from the shared raw file as the authors' scripts lay them out: a raw file with all T scores and the chosen
    files of each N give the same picks."""
    import random

    raw = tts_release.read_release(_file("raw_results"))
    (tmp_path / "pass@1").mkdir()
    first = {pid: {**{k: v for k, v in r.items() if not k.startswith("response_")}, "response_0": r["response_1"]} for pid, r in raw.items()}  # nums[0] = 1 for T = 8
    (tmp_path / "pass@1" / (NAME + ".json")).write_text(json.dumps(first))
    scored = tts_release.score_file(str(tmp_path / "pass@1" / (NAME + ".json")))
    assert list(scored) == ["pass@1"] and sum(v["correct"] for v in scored["pass@1"].values()) == 35  # as the raw file's pass@1
    # a Qwen-RM raw file of 16 candidates (the 8 twice) with seeded float scores, ties included, and its chosen files
    rng = random.Random(7)
    qraw = {}
    for pid, r in raw.items():
        rec = {k: v for k, v in r.items() if not k.startswith("response_")}
        for i in range(16):
            rec[f"response_{i}"] = r[f"response_{i % 8}"]
        rec["score_list"] = str([rng.choice([0.5, 1.25, -2.0, 3.0, 3.0]) for _ in range(16)])
        qraw[pid] = rec
    (tmp_path / "qwen-rm-scoring" / "scored_results").mkdir(parents=True)
    raw_path = tmp_path / "qwen-rm-scoring" / "chatgpt-4o-latest_Chemistry_16_raw.json"
    raw_path.write_text(json.dumps(qraw))
    from_raw = tts_release.score_file(str(raw_path))
    assert sorted(from_raw) == [f"bon_scalar@{n}" for n in (1, 16, 2, 4, 8)]
    for n in (2, 4, 8, 16):
        nums = scaling.subset(16, n).nums
        chosen = {}
        for pid, rec in qraw.items():
            scores = json.loads(rec["score_list"])
            out = {k: v for k, v in rec.items() if not k.startswith("response_") and k != "score_list"}
            out.update({f"response_{j}": rec[f"response_{i}"] for j, i in enumerate(nums)}, score_list=[scores[i] for i in nums], best_response="")
            chosen[pid] = out
        path = tmp_path / "qwen-rm-scoring" / "scored_results" / f"chatgpt-4o-latest_Chemistry_{n}.json"
        path.write_text(json.dumps(chosen))
        got = tts_release.score_file(str(path))[f"bon_scalar@{n}"]
        want = from_raw[f"bon_scalar@{n}"]
        assert {p: (v["pick"], v["correct"]) for p, v in got.items()} == {p: (v["pick"], v["correct"]) for p, v in want.items()}, n
        ties = [v for v in want.values() if len(v["tied"]) > 1]
        assert ties and all(v["pick"] in v["tied"] for v in ties)
        for pid, v in want.items():  # the pick has the top score among the shown
            scores = json.loads(qraw[pid]["score_list"])
            assert scores[v["pick"]] == max(scores[i] for i in nums)


def test_a_file_that_does_not_fit_its_layout_is_named(tmp_path, capsys):
    """A Best-of-16 folder over a file of T = 8: the error names the file, no traceback."""
    (tmp_path / "gpt-best-of-16").mkdir()
    path = tmp_path / "gpt-best-of-16" / (NAME + ".json")
    with gzip.open(_file("gpt-best-of-4"), "rt") as f:
        path.write_text(f.read())
    with pytest.raises(RescoreError, match=r"does not fit its layout \(cannot choose 16 of 8 candidates\)"):
        tts_release.score_file(str(path))
    assert rescore.main(["--from", "emma-tts-release", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "does not fit its layout" in capsys.readouterr().err
