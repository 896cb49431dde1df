"""Circular variants (core.scoring.circular and each benchmark's rotation): rotations move options, images and the
gold together; the metrics on fixture questions with known answers; the position test."""

import json

import pytest

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.evals.emma import circular as emma_c
from lmms_eval_earthsci.evals.emma import tasks as emma
from lmms_eval_earthsci.evals.emma.fixtures import emma_rows
from lmms_eval_earthsci.evals.mac import circular as mac_c
from lmms_eval_earthsci.evals.mac.fixtures import mac_rows
from lmms_eval_earthsci.evals.msearth import circular as msearth_c
from lmms_eval_earthsci.evals.msearth import tasks as msearth
from lmms_eval_earthsci.evals.msearth.fixtures import msearth_rows
from lmms_eval_earthsci.evals.scifibench import circular as scifi_c
from lmms_eval_earthsci.evals.scifibench import tasks as scifi
from lmms_eval_earthsci.evals.scifibench.fixtures import scifibench_rows

MCQ_KW = {"kind": "mcq", "prompt": "open_source", "with_caption": True}


@pytest.mark.parametrize(
    "options, gold, reason",
    [
        (["ice", "water", "steam", "plasma"], 1, None),
        (["ice", "water", "both A and B", "neither"], 0, "option C names options A and B"),
        (["ice", "water", "steam", "None of the above"], 0, "option D names the others"),
        (["ice", "water", "A or C", "steam"], 0, "option C names options A and C"),
        (["a and b are equal", "x", "y", "z"], 0, None),  # variables, not option letters
        (["ice", "water"], 5, "the gold is not one of the options"),
        (["ice"], 0, "fewer than two options"),
    ],
)
def test_fixed_reason(options, gold, reason):
    assert circular.fixed_reason(options, gold) == reason


def test_shift_moves_option_i_to_position_i_plus_k():
    assert circular.shifted(["a", "b", "c", "d"], 1) == ["d", "a", "b", "c"]  # option A (a) now at B
    assert circular.shifted(["a", "b", "c", "d"], 4) == ["a", "b", "c", "d"]


def _expanded(rows, rotation):
    return circular.expand(rows, rotation)


def test_msearth_rotation_moves_option_text_and_gold_letter_only():
    doc = msearth_rows("mcq")[0]
    base = msearth.build_prompt(doc, "mcq")
    lines = msearth.option_lines(doc)
    gold_letter, gold_text = msearth.gold_option(doc)
    for k in range(1, 4):
        asked = msearth_c.rotate(doc, k, 4)
        new_lines = msearth.option_lines(asked)
        assert [ln[:3] for ln in new_lines] == [ln[:3] for ln in lines]  # letters in place
        assert [ln[3:] for ln in new_lines] == circular.shifted([ln[3:] for ln in lines], k)
        letter, text = msearth.gold_option(asked)
        assert letter == "ABCD"[("ABCD".index(gold_letter) + k) % 4] and text == gold_text
        # everything else of the prompt unchanged
        prompt = msearth.build_prompt(asked, "mcq")
        assert prompt.replace("\n".join(new_lines), "") == base.replace("\n".join(lines), "")


def test_scifibench_c2f_rotation_moves_figures_with_their_option():
    doc = {**scifibench_rows("CS_Caption2Figure")[0], "_split": "CS_Caption2Figure"}
    asked = scifi_c.rotate(doc, 2, 5)
    assert [o[:3] for o in asked["Options"]] == [o[:3] for o in doc["Options"]]
    assert asked["Images"] == circular.shifted(doc["Images"], 2)
    g = "ABCDE".index(doc["Answer"])
    assert asked["Answer"] == "ABCDE"[(g + 2) % 5]
    assert asked["Images"]["ABCDE".index(asked["Answer"])] == doc["Images"][g]  # the gold figure went along
    text = scifi.doc_to_text(asked, {"direction": "c2f"})
    assert text == scifi.doc_to_text(doc, {"direction": "c2f"})  # labels in place; the figures moved


def test_scifibench_f2c_rotation_keeps_the_letter_prefix_spacing():
    doc = {**scifibench_rows("CS_Figure2Caption")[0], "_split": "CS_Figure2Caption"}
    asked = scifi_c.rotate(doc, 1, 5)
    assert [o[:4] for o in asked["Options"]] == [o[:4] for o in doc["Options"]]  # "A)  " kept
    assert [scifi.caption_text(o) for o in asked["Options"]] == circular.shifted([scifi.caption_text(o) for o in doc["Options"]], 1)


def test_emma_multiple_choice_only_image_options_move_with_their_marker():
    rows = [r for subject in emma_rows().values() for r in subject]
    counts = [circular.rotations_of(r, emma_c.ROTATION) for r in rows]
    for r, n in zip(rows, counts):
        if not emma.is_multiple_choice(r):
            assert n == 0
        elif n > 1:
            assert n == len(emma.options_of(r))
    with_images = [r for r, n in zip(rows, counts) if n > 1 and any("<image_" in o for o in emma.options_of(r))]
    assert with_images, "the fixtures have a question whose options are images"
    doc = with_images[0]
    n = len(emma.options_of(doc))
    asked = emma_c.rotate(doc, 1, n)
    assert emma.options_of(asked) == circular.shifted(emma.options_of(doc), 1)
    assert emma.gold_content(asked) == emma.gold_content(doc)
    q = emma.build_query(asked)
    assert q.index(f"B: {emma.options_of(doc)[0]}") > 0  # option A's image marker now follows the label B


def test_rotation_zero_is_the_official_doc():
    for doc in msearth_rows("mcq"):
        expanded = circular.expand([doc], msearth_c.ROTATION)
        first = expanded[0]
        assert first[circular.K] == 0
        assert msearth_c.doc_to_text(first, MCQ_KW) == msearth.doc_to_text(doc, MCQ_KW)


def _run(rotation, process_results, docs, respond):
    """Every rotation of ``docs`` answered by ``respond(asked doc)``; the records of each metric."""
    out: dict[str, list] = {}
    for doc in circular.expand(docs, rotation):
        asked = circular.rotated(doc, rotation)
        for name, value in process_results(doc, [respond(asked)]).items():
            out.setdefault(name, []).append(value)
    return out


def _msearth_json(letter):
    return json.dumps({"answer": letter, "Explanation": "."})


def test_always_a_and_always_gold_on_msearth():
    docs = [d for d in msearth_rows("mcq") if circular.rotations_of(d, msearth_c.ROTATION) == 4]
    assert len(docs) >= 3
    gold_a = sum(msearth.gold_option(d)[0] == "A" for d in docs) / len(docs) * 100
    a = _run(msearth_c.ROTATION, msearth_c.process_results, docs, lambda asked: _msearth_json("A"))
    # the official accuracy of an always-A model is the share of gold A: rotation 0 alone
    official = [msearth.process_results_mcq(d, [_msearth_json("A")])[msearth.MCQ_METRIC]["score"] for d in docs]
    assert circular.vanilla_acc(a["vanilla_acc"]) == pytest.approx(sum(official) / len(official)) == pytest.approx(gold_a)
    assert circular.circular_acc(a["circular_acc"]) == 0.0
    assert circular.flip_rate(a["flip_rate"]) == 100.0
    assert circular.position_A(a["position_A"]) == 100.0 and circular.position_B(a["position_B"]) == 0.0
    assert circular.position_p(a["position_p"]) < 0.05
    assert circular.position_rstd(a["position_rstd"]) == pytest.approx(43.30127, abs=1e-4)  # std of (100, 0, 0, 0)

    g = _run(msearth_c.ROTATION, msearth_c.process_results, docs, lambda asked: _msearth_json(msearth.gold_option(asked)[0]))
    assert circular.circular_acc(g["circular_acc"]) == circular.vanilla_acc(g["vanilla_acc"]) == 100.0
    assert circular.flip_rate(g["flip_rate"]) == 0.0
    assert [circular.position_share(g["position_A"], x) for x in "ABCD"] == [25.0] * 4
    assert circular.position_p(g["position_p"]) == 1.0
    assert circular.position_rstd(g["position_rstd"]) == 0.0
    # each rotation's answer mapped back to the original letter: always the gold
    assert {r["option"] == r["gold"] for r in g["circular_acc"]} == {True}


def test_position_test_does_not_reject_content_preference_without_position_preference():
    # a model that always picks option B's content (whatever position it is at): wrong where B is not
    # gold, but every position equally often under full rotation
    docs = [d for d in msearth_rows("mcq") if circular.rotations_of(d, msearth_c.ROTATION) == 4]

    def respond(asked):
        return _msearth_json("ABCD"[(1 + int(asked.get(circular.K) or 0)) % 4])

    r = _run(msearth_c.ROTATION, msearth_c.process_results, docs, respond)
    assert circular.flip_rate(r["flip_rate"]) == 0.0
    assert circular.position_p(r["position_p"]) == 1.0
    assert {x["option"] for x in r["circular_acc"]} == {"B"}


def test_position_test_on_a_mild_bias():
    # 60 questions, 4 rotations: the model says A with probability 0.3, else picks the gold
    import random

    rng = random.Random(0)
    recs = []
    for q in range(60):
        for k in range(4):
            gold_pos = "ABCD"[(q + k) % 4]
            pos = "A" if rng.random() < 0.3 else gold_pos
            recs.append({"source": q, "k": k, "n": 4, "options": 4, "correct": pos == gold_pos, "position": pos,
                         "option": "ABCD"[("ABCD".index(pos) - k) % 4], "gold": "ABCD"[q % 4], "gold_position": gold_pos})
    stat, dof, p = circular.position_test(recs)
    assert p < 1e-3 and dof == 3
    assert circular.position_A(recs) > 40
    # no preference (gold always): not rejected
    fair = [{**r, "position": r["gold_position"], "correct": True} for r in recs]
    assert circular.position_p(fair) == 1.0


def test_questions_that_cannot_rotate_are_asked_once_and_counted():
    doc = dict(msearth_rows("mcq")[0])
    lines = msearth.option_lines(doc)
    doc["query"] = doc["query"].replace(lines[3], "D. All of the above")
    expanded = circular.expand([doc, msearth_rows("mcq")[1]], msearth_c.ROTATION)
    assert [(d[circular.SOURCE], d[circular.K], d[circular.N]) for d in expanded][:2] == [(0, 0, 1), (1, 0, 4)]
    assert len(expanded) == 5


def test_mac_probabilities_are_read_in_the_letters_asked_and_mapped_back():
    docs = mac_rows("i2t", "option")[:2]
    out = _run(mac_c.ROTATION, mac_c.process_results, docs, lambda asked: json.dumps({x: (0.7 if x == asked["answer"] else 0.1) for x in "ABCD"}))
    recs = out["circular_acc"]
    assert {r["correct"] for r in recs} == {True}
    for r in recs:
        assert r["probs"][r["gold"]] == pytest.approx(0.7)  # the gold's probability under its original letter
        assert r["confidence"] == pytest.approx(0.7)
    assert circular.circular_ece(out["circular_ece"]) == pytest.approx(30.0)


def test_kernels_match_the_aggregations():
    import numpy as np

    from lmms_eval_earthsci.core.scoring import stats

    docs = [d for d in msearth_rows("mcq") if circular.rotations_of(d, msearth_c.ROTATION) == 4]
    recs = _run(msearth_c.ROTATION, msearth_c.process_results, docs, lambda asked: _msearth_json("A" if asked[circular.K] % 2 else "B"))["circular_acc"]
    for dotted, (encode, stat) in circular.kernels().items():
        fn = stats.resolve(dotted)
        arrays = encode(recs)
        want = fn(recs)
        if arrays is None:
            assert want is None, dotted
            continue
        assert float(stat(*arrays)) == pytest.approx(want), dotted
        assert isinstance(arrays[0], np.ndarray)
