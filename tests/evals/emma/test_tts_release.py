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
