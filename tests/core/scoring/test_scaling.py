"""Test-time scaling primitives against the protocol's tables (shared/specs/emma_test_time_scaling.md §2, §4,
§5): the seeded subsets, the vote's and the reward model's tie-break positions, score parsing, the prompt."""

import random

import pytest

from lmms_eval_earthsci.core.scoring import scaling


@pytest.mark.parametrize(
    "total, n, nums",
    [
        (8, 1, [1]), (8, 2, [1, 0]), (8, 4, [1, 0, 5, 2]), (8, 8, [1, 0, 5, 2, 7, 6, 4, 3]),
        (16, 1, [3]), (16, 2, [3, 0]), (16, 4, [3, 0, 11, 4]), (16, 8, [3, 0, 11, 4, 15, 13, 2, 1]),
        (16, 16, [3, 0, 11, 4, 15, 13, 2, 1, 8, 12, 10, 14, 6, 5, 9, 7]),
    ],
)
def test_subsets_are_the_authors(total, n, nums):
    assert scaling.subset(total, n).nums == nums


def test_subset_needs_enough_candidates():
    with pytest.raises(ValueError, match="cannot choose 4 of 2"):
        scaling.subset(2, 4)


def test_vote_tie_positions_are_the_authors():
    # §4: with k answers tied at the top, the pick is at position 0,0,2,0,0,5,5,1 (k = 1..8), 1,1,10,10,10,10,10,3 (9..16)
    positions = [0, 0, 2, 0, 0, 5, 5, 1, 1, 1, 10, 10, 10, 10, 10, 3]
    for k, pos in enumerate(positions, start=1):
        answers = [f"a{i}" for i in range(k)]
        vote = scaling.majority_vote(answers)
        assert vote.winners == answers and vote.pick == answers[pos], k


def test_vote_counts_raw_strings_skips_none_and_lets_empty_win():
    # coding_414 (MV4): votes '', 'D', 'B', 'A' tie four ways; position 0 wins: the empty answer
    assert scaling.majority_vote(["", "D", "B", "A"]).pick == ""
    # no normalisation: "b" and "B" are different answers; None does not vote
    vote = scaling.majority_vote(["B", None, "b", "B", None])
    assert vote.pick == "B" and vote.counts == {"B": 2, "b": 1} and vote.voters == 3
    assert scaling.majority_vote([None, None]).pick is None


@pytest.mark.parametrize(
    "n, positions",
    [
        (2, [0, 1, 2, 2, 2, 5, 5, 4, 4, 4, 4, 11, 11, 11, 11, 8]),
        (4, [0, 0, 0, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 7]),
        (8, [0, 0, 2, 0, 4, 5, 5, 1, 8, 8, 10, 10, 10, 10, 10, 2]),
    ],
)
def test_reward_model_tie_positions_are_the_authors(n, positions):
    # §5.4: the pick among k tied slots draws from the state the subset's sample left, for T = 8 and 16 alike
    for total in (8, 16):
        for k, pos in enumerate(positions, start=1):
            if k > total:
                continue
            slots = [5 if i < k else 0 for i in range(16)]
            pick = scaling.select_best(scaling.Scores(slots, list(range(k))), scaling.subset(total, n))
            assert pick.tied == list(range(k)) and pick.index == pos, (total, n, k)


def test_reward_model_n16_positions():
    positions = [0, 0, 2, 0, 4, 4, 4, 0, 8, 8, 8, 8, 8, 8, 8, 0]
    for k, pos in enumerate(positions, start=1):
        slots = [3 if i < k else 0 for i in range(16)]
        assert scaling.select_best(scaling.Scores(slots, []), scaling.subset(16, 16)).index == pos


def test_an_unscored_reply_picks_among_all_t_and_a_label_not_shown_can_win():
    sub = scaling.subset(8, 4)  # shows 1, 0, 5, 2
    nothing = scaling.select_best(scaling.parse_final_scores("I cannot judge these."), sub)
    assert nothing.tied == list(range(8)) and nothing.index is not None
    # chem_969: the reply scored "3" (never shown) highest; response_3 is chosen
    invented = scaling.select_best(scaling.parse_final_scores("\\finalscore{3}{made up}{5} \\finalscore{1}{ok}{4}"), sub)
    assert invented.index == 3 and not invented.presented
    # the top score on a label >= T selects nothing (the authors' choice of an empty list raised)
    over = scaling.select_best(scaling.parse_final_scores("\\finalscore{12}{x}{5}"), sub)
    assert over.index is None and "label >= T" in over.why
    # selecting twice from one subset gives the same pick (the state is copied, not consumed)
    assert scaling.select_best(scaling.Scores([1] * 16, []), sub).index == scaling.select_best(scaling.Scores([1] * 16, []), sub).index


def test_final_scores_parse_as_the_authors():
    reply = (
        "\\accuracyscore{3}{good}{5}\\finalscore{3}{solid}{4}\n"
        "\\finalscore0{numbered zero is ignored}{5}\\finalscore11{numbered form}{2}\n"
        "\\finalscore{0}{braced zero is fine}{3}\n"
        "\\finalscore{4}{a reason with {braces} fails}{5}\n"
        "\\finalscore{5}{half}{4.5}\n"
        "\\finalscore{11}{braced overrides numbered}{1}"
    )
    s = scaling.parse_final_scores(reply)
    assert s.slots[3] == 4 and s.slots[0] == 3 and s.slots[11] == 1
    assert s.slots[4] == 0 and s.slots[5] == 0  # unparseable entries leave 0
    assert s.scored == [0, 3, 11] and s.error is None
    # a later entry for a slot overwrites an earlier one; case matters ("inalscore", no backslash needed)
    assert scaling.parse_final_scores("finalscore{2}{a}{1} finalscore{2}{b}{3} FINALSCORE{1}{c}{5}").slots[:3] == [0, 0, 3]
    assert scaling.parse_final_scores("\\finalscore{16}{x}{5}").error
    assert scaling.parse_final_scores(None).slots == [0] * 16


def test_reward_prompt_seam():
    # §5.1, Math_54 at N = 4 (T = 16): raw labels 3, 0, 11, 4; response 4 missing
    cands = {3: "r3", 0: "r0", 11: "r11", 4: None}
    got = scaling.reward_prompt("\nQ <image_1>\nPlease solve the problem step by step.", cands, [3, 0, 11, 4], "You are a fair assessment expert.\n   a. x\n")
    assert got == (
        "Q <image_1>\nPlease solve the problem step by step.\nResponse{3}:\nker3\n\nResponse{0}:\nker0\n\nResponse{11}:\nker11\n\nResponse{4}:\nkeno response\n"
        "You are a fair assessment expert.\n   a. x"
    )


def test_pass_unbiased():
    assert scaling.pass_unbiased(16, 0, 4) == 0.0
    assert scaling.pass_unbiased(16, 16, 1) == 1.0
    assert scaling.pass_unbiased(8, 2, 1) == pytest.approx(0.25)
    assert scaling.pass_unbiased(4, 1, 2) == pytest.approx(1 - 3 / 6)
    assert scaling.pass_unbiased(4, 3, 2) == 1.0  # n - c < k
    # the estimator is the mean over every N-subset of "any correct"
    import itertools

    right = [True, False, False, True, False, False, False, False]
    subsets = list(itertools.combinations(range(8), 3))
    assert scaling.pass_unbiased(8, 2, 3) == pytest.approx(sum(any(right[i] for i in s) for s in subsets) / len(subsets))


def test_keep_samples_filter_and_samples_of():
    f = scaling.KeepSamples()
    assert f.apply([["a"], ["b", "c"], []], None) == ["a", ["b", "c"], ""]
    assert scaling.samples_of(["a"]) == ["a"] and scaling.samples_of([["b", "c"]]) == ["b", "c"] and scaling.samples_of([]) == [""]


def test_curve_items():
    names = scaling.CurveNames(maj="m@{}", pass_="p@{}", pass_unbiased="u@{}", bon="b@{}", rm_failed="f")
    responses = ["A", "B", None, "B"]  # T = 4: subsets 1 -> [3]? (random.sample on range(4))
    rng = random.Random(42)
    assert scaling.subset(4, 2).nums == rng.sample(range(4), 2)
    out = scaling.curve_items(responses, lambda r: r, lambda e: e == "B", names)
    assert out["m@8"] is None and out["p@16"] is None
    nums4 = scaling.subset(4, 4).nums
    assert out["m@4"]["pick"] == "B" and out["m@4"]["score"] == 100.0
    assert out["p@4"]["score"] == 100.0 and out["u@4"]["score"] == 100.0
    assert out["u@1"]["score"] == pytest.approx(50.0)
    first = responses[nums4[0]]
    assert out["m@1"]["pick"] == first and out["p@1"]["score"] == (100.0 if first == "B" else 0.0)
    assert [c["extraction"] for c in out["candidates"]] == responses


def test_tournament_bracket_in_subset_order():
    played = []

    def higher(a, b):
        played.append((a, b))
        return max(a, b)

    br = scaling.tournament([3, 0, 11, 4, 15, 13, 2, 1], higher)
    assert br.winner == 15 and not br.pending and len(br.matches) == 7
    assert played[:4] == [(3, 0), (11, 4), (15, 13), (2, 1)] and played[4:] == [(3, 11), (15, 2), (11, 15)]
    # an odd one out passes to the next round; N - 1 matches whatever N
    assert len(scaling.tournament([5, 1, 2], higher).matches) == 2 and scaling.tournament([5, 1, 2], higher).winner == 5
    assert scaling.tournament([7], higher).winner == 7


def test_tournament_reports_pending_matches_and_failures():
    decided = {(3, 0): 0}
    br = scaling.tournament([3, 0, 11, 4], lambda a, b: decided.get((a, b)))
    assert br.winner is None and br.pending == [(11, 4)] and br.matches == [(3, 0, 0)]
    decided[(11, 4)] = 4
    br = scaling.tournament([3, 0, 11, 4], lambda a, b: decided.get((a, b)))
    assert br.pending == [(0, 4)]
    decided[(0, 4)] = scaling.FAILED
    br = scaling.tournament([3, 0, 11, 4], lambda a, b: decided.get((a, b)))
    assert br.failed and br.winner is None and not br.pending


def test_match_winner_ties_go_to_the_earlier():
    s = scaling.parse_final_scores("\\finalscore{3}{x}{4}\\finalscore{0}{y}{4}")
    assert scaling.match_winner(s, 3, 0) == 3 and scaling.match_winner(s, 0, 3) == 0
    assert scaling.match_winner(scaling.parse_final_scores("\\finalscore{0}{y}{5}"), 3, 0) == 0
    assert scaling.match_winner(scaling.parse_final_scores("nothing"), 3, 0) == 3
