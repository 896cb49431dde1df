"""MAC: prompts against the spec's Appendix A.1, the official probability parser (and its quirks) on
real-looking outputs, the lenient reading, every metric on values worked out by hand, records."""

import ast
import math
import random
import re

import pytest
from conftest import shared_path

from lmms_eval_earthsci.core.data import RecordError
from lmms_eval_earthsci.evals.mac import scoring as mac_scoring
from lmms_eval_earthsci.evals.mac import tasks as mac_tasks


def _spec_literals():
    text = open(shared_path("specs", "mac.md")).read()
    out = {}
    for name in ("I2T_SYSTEM", "I2T_USER", "T2I_SYSTEM", "T2I_USER"):
        m = re.search(rf"^{name} = (.+)$", text, re.M)
        out[name] = ast.literal_eval(m.group(1))
    return out


def test_prompts_equal_the_spec():
    lit = _spec_literals()
    assert (mac_tasks.I2T_SYSTEM, mac_tasks.I2T_USER, mac_tasks.T2I_SYSTEM, mac_tasks.T2I_USER) == (lit["I2T_SYSTEM"], lit["I2T_USER"], lit["T2I_SYSTEM"], lit["T2I_USER"])


DOC_I2T = {
    "journal": "ACS Fake & Co", "id": "2024_1", "question": "Which of the following options best describe the cover image?",
    "cover_image": "MAC_Bench/ACS/Cover/ACS Fake & Co/2024_1.png", "answer": "B", **{f"option_{x}": f"Story {x} with {{options}} braces" for x in "ABCD"},
}


def test_user_text_fills_like_the_runner():
    kw = mac_tasks._task_kwargs({"direction": "i2t"})
    want = (
        "I want to ask you the following question: Which of the following options best describe the cover image? And you have the following options: "
        "A: Story A with {options} braces\nB: Story B with {options} braces\nC: Story C with {options} braces\nD: Story D with {options} braces. "
        "You need to predict the probability that you would choose each option based on the image."
    )
    assert mac_tasks.user_text(DOC_I2T, kw) == want
    assert mac_tasks.doc_to_text(DOC_I2T, {"direction": "i2t"}) == mac_tasks.I2T_SYSTEM + "\n" + want
    t2i = {**DOC_I2T, "cover_image": "The story {question}.", "question": "Which of the following options best describe the cover story?"}
    assert mac_tasks.user_text(t2i, mac_tasks._task_kwargs({"direction": "t2i"})).startswith(
        "I want to ask you the following question: Which of the following options best describe the cover story? And you have the cover story The story {question}.. You need"
    )


# --------------------------------------------------------------------------- parser

CASES = [
    # (response, pred, path)
    ('{"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1}', "A", "json"),
    ('```json\n{"A": 0.1, "B": 0.6, "C": 0.2, "D": 0.1}\n```', "B", "json"),
    ("{'A': 0.1, 'B': 0.1, 'C': 0.7, 'D': 0.1}", "C", "json"),
    ('{"A": "0.1", "B": "0.1", "C": "0.1", "D": "0.7"}', "D", "json"),
    ('{"A": 10, "B": 60, "C": 20, "D": 10}', "B", "json"),  # percentages: argmax unchanged
    ('{"A": 0.4, "B": 0.4, "C": 0.1, "D": 0.1}', "A", "json"),  # tie: the first written
    ('{"B": 0.4, "A": 0.4, "C": 0.1, "D": 0.1}', "B", "json"),
    ('{"C": 0.9}', "C", "json"),  # missing letters are 0
    ('{"A": 0.3, "B": 0.3}', "A", "json"),
    ("{}", "A", "json"),  # all zero: A by our deterministic fill (the original: random)
    ('{"A": 0, "B": 0, "C": 0, "D": 0}', "A", "json"),
    ('"{\\"A\\": 0.2, \\"B\\": 0.7, \\"C\\": 0.05, \\"D\\": 0.05}"', "B", "json"),  # a JSON string holding JSON
    ('{"A": 0.1, "B": 0.1, "C": 0.1, "D": 0.6, "E": 0.1}', None, "json"),  # key outside A-D: rejected
    ('{"answer": "B"}', None, "json"),
    ('{"A": "high", "B": 0.1, "C": 0.1, "D": 0.1}', None, "json"),
    ('{"A": null, "B": 0.5}', None, "json"),
    ('{"A": [0.5], "B": 0.5}', None, "json"),
    ('{"A": true, "B": 0.5}', "A", "json"),  # float(True) = 1.0, as the original
    # prose around the JSON: json.loads fails, the regex scans the whole text
    ('The answer is:\n{"A": 0.1, "B": 0.8, "C": 0.05, "D": 0.05}', "B", "regex"),
    ("I think it's the second one. {\"A\": 0.1, \"B\": 0.7, \"C\": 0.1, \"D\": 0.1}", "B", "regex"),  # apostrophe -> quote breaks JSON
    ('<think>Maybe "A": 0.9 is right... no.</think>{"A": 0.1, "B": 0.2, "C": 0.6, "D": 0.1}', "C", "regex"),  # the later "A" overwrites the think block's
    ('<think>Option "E": 0.95? There is no E.</think>{"A": 0.1, "B": 0.2, "C": 0.6, "D": 0.1}', "E", "regex"),  # the think block's pair wins: faithful
    ('<think>"C": 0.2</think>\n{"A": 0.5, "B": 0.1, "C": 0.3, "D": 0.1}', "A", "regex"),  # later duplicate C overwrites
    ('{"A": .7, "B": 0.1, "C": 0.1, "D": 0.1}', "B", "regex"),  # invalid JSON; the regex misses ".7"
    ('{"A": 1e-3, "B": 0.5, "C": 0.2, "D": 0.1}', "B", "json"),  # valid JSON: 1e-3 parsed properly
    ('Probabilities: "A": 1e-3, "B": 0.5, "C": 0.2, "D": 0.1', "A", "regex"),  # the regex reads 1e-3 as 1
    ('{"A": -0.1, "B": 0.5, "C": 0.3, "D": 0.3}', "B", "json"),
    ('Scores "A": -5, "B": 0.2', "B", "regex"),  # negatives never match the regex: A missing -> 0
    ('Result: "A": 0.1, "B": 0.1, "C": 0.1, "D": 0.2, "E": 0.5', "E", "regex"),  # E kept on the regex path (then wrong)
    ('{"A": 0.25, "B": 0.25, "C": 0.25, "D": 0.25', "A", "regex"),  # unclosed brace
    ('json\n{"A": 0.1, "B": 0.1, "C": 0.1, "D": 0.7}', "D", "regex"),
    ('{"A": "70%", "B": "10%", "C": "10%", "D": "10%"}', None, "json"),  # "70%" is not a number
    ("B", None, "none"),
    ("The answer is C.", None, "none"),
    ("I'm sorry, I can't determine this from the image.", None, "none"),
    ("", None, "none"),
    (None, None, "none"),
    ("[0.1, 0.2, 0.3, 0.4]", None, "none"),
    ("0.7", None, "none"),
    ('{"probabilities": {"A": 0.1, "B": 0.9}}', None, "json"),  # nested object: key outside A-D
    ('Answer: {"A": 0.05, "B": 0.05, "C": 0.85, "D": 0.05}. I\'m fairly confident.', "C", "regex"),
    ('```\n{"A": 0.2, "B": 0.2, "C": 0.2, "D": 0.4}\n```', "D", "json"),
    ('{"A":0.6,"B":0.2,"C":0.1,"D":0.1}', "A", "json"),
]


@pytest.mark.parametrize("response,pred,path", CASES)
def test_parse_probabilities(response, pred, path):
    got = mac_scoring.parse_probabilities(response)
    assert (got.pred, got.path) == (pred, path)
    assert got.parsed == (pred is not None)


def test_parser_details():
    assert len(CASES) >= 40
    got = mac_scoring.parse_probabilities("{}")
    assert got.all_zero and got.probs == {"A": 0.0, "B": 0.0, "C": 0.0, "D": 0.0}
    got = mac_scoring.parse_probabilities('{"C": 0.9}')
    assert list(got.probs) == ["C", "A", "B", "D"] and not got.all_zero
    assert mac_scoring.parse_probabilities('Result: "A": 0.1, "E": 0.5').probs == {"A": 0.1, "E": 0.5, "B": 0.0, "C": 0.0, "D": 0.0}
    assert mac_scoring.normalised({"A": 10, "B": 30}) == {"A": 0.25, "B": 0.75}
    assert mac_scoring.normalised({"A": 0.0}) == {"A": 0.0}
    for junk in [b"\xff", 3, ["A"], "{" * 3000, '"' * 500]:
        mac_scoring.parse_probabilities(junk)  # never raises


@pytest.mark.parametrize(
    "text,options,letter,rule",
    [
        ("B", None, "B", "letter"),
        ("**C**", None, "C", "letter"),
        ("(D).", None, "D", "letter"),
        ("<think>hmm</think> A", None, "A", "letter"),
        ("I would choose option B because the cover shows cells.", None, "B", "answer-phrase"),
        ("The answer is: C", None, "C", "answer-phrase"),
        ("The cover matches: 'a very long story about magnetic crystals growing in space stations'.", ["x" * 50, "a very long story about magnetic crystals growing in space stations", "y" * 50, "z" * 50], "B", "option-text"),
        ("No idea.", ["short"] * 4, None, "none"),
    ],
)
def test_lenient_letter(text, options, letter, rule):
    assert mac_scoring.lenient_letter(text, options) == (letter, rule)


# --------------------------------------------------------------------------- metrics

def _hand_docs():
    # (gold, response): d0 right 0.7; d1 wrong 0.6 (after normalising 0.6/0.4); d2 right, percentages
    # -> 0.7; d3 unparsed; d4 "{}" -> A (right by the tie rule), confidence 0
    raw = [("A", '{"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1}'), ("B", '{"A": 0.6, "B": 0.4, "C": 0, "D": 0}'), ("C", '{"A": 10, "B": 20, "C": 70, "D": 0}'), ("D", "no idea"), ("A", "{}")]
    docs = []
    for row, (gold, resp) in enumerate(raw):
        got = mac_scoring.parse_probabilities(resp)
        docs.append({"gold": gold, "pred": got.pred, "parsed": got.parsed, "probs": mac_scoring.normalised(got.probs) if got.probs else None, "correct": got.pred == gold, "row": row})
    return docs


def test_metrics_by_hand():
    docs = _hand_docs()
    assert mac_scoring.accuracy(docs) == pytest.approx(60.0)  # 3 of 5, the unparsed doc in the denominator
    assert mac_scoring.unparsable(docs) == pytest.approx(20.0)
    # ECE over the 4 parsed docs: bin (10/15, 11/15] holds d0, d2 (conf .7, acc 1): .3 x 2/4; bin
    # (8/15, 9/15] holds d1 (conf .6, acc 0): .6 x 1/4; d4 (conf 0) is in no bin but in N
    assert mac_scoring.ece(docs) == pytest.approx(0.3 * 2 / 4 + 0.6 / 4)
    assert mac_scoring.nll(docs) == pytest.approx((-math.log(0.7) * 2 - math.log(0.4) - math.log(1e-15)) / 4)
    # RMS, one bin of 30: mean conf (.7+.6+.7+0)/4 = .5, mean acc 3/4
    assert mac_scoring.rms(docs) == pytest.approx(0.25)
    # bins of 2, sorted by confidence: [d4 (0), d1 (.6)] -> conf .3 acc .5; [d0, d2] -> conf .7 acc 1
    assert mac_scoring.rms(docs, bin_size=2) == pytest.approx(math.sqrt(0.5 * 0.2**2 + 0.5 * 0.3**2))
    assert mac_scoring.accuracy([]) is None and mac_scoring.ece([]) is None and mac_scoring.nll([]) is None and mac_scoring.rms([]) is None


def test_ece_bin_edges_are_lo_exclusive_hi_inclusive():
    one = [{"gold": "A", "pred": "A", "parsed": True, "probs": {"A": 1.0, "B": 0.0}, "correct": True, "row": 0}]
    assert mac_scoring.ece(one) == pytest.approx(0.0)  # conf 1.0 lands in the last bin (14/15, 1]
    zero = [{"gold": "A", "pred": "A", "parsed": True, "probs": {"A": 0.0, "B": 0.0}, "correct": True, "row": 0}]
    assert mac_scoring.ece(zero) == 0.0  # conf 0 is in no bin


def test_rms_ties_follow_dataset_order_whatever_the_arrival_order():
    docs = [{"gold": "A", "pred": "A" if ok else "B", "parsed": True, "probs": {"A": 0.5, "B": 0.5}, "correct": ok, "row": r} for r, ok in enumerate([False, True, True])]
    want = math.sqrt(0.25 / 3)  # bins of 2 in row order: [wrong, right] -> 0; [right] -> (.5 - 1)^2 x 1/3
    for seed in range(6):
        shuffled = docs[:]
        random.Random(seed).shuffle(shuffled)
        assert mac_scoring.rms(shuffled, bin_size=2) == pytest.approx(want)


def test_metrics_do_not_mutate_the_records():
    docs = [{"gold": "A", "pred": "A", "parsed": True, "probs": {"A": 3.0, "B": 1.0}, "correct": True, "row": 0}]
    mac_scoring.ece(docs), mac_scoring.nll(docs), mac_scoring.rms(docs)
    assert docs[0]["probs"] == {"A": 3.0, "B": 1.0}
    assert mac_scoring.nll(docs) == pytest.approx(-math.log(0.75))


# --------------------------------------------------------------------------- records


def test_records_publisher_ids_and_errors(mirror, monkeypatch):
    monkeypatch.setenv("EARTHSCI_DATA_MIRROR", mirror)
    from lmms_eval_earthsci.evals.mac.fixtures import mac_rows

    row = mac_rows("i2t", "info")[0]
    mac_tasks.check_record(row, {"direction": "i2t"})
    out = mac_tasks.process_results({**row, "_row": 3}, ['{"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.4}'])
    rec = out[mac_tasks.METRIC]
    assert (rec["journal"], rec["id"], rec["publisher"], rec["pred"], rec["gold"], rec["parsed"], rec["row"]) == (row["journal"], "2024_1", "ACS", "D", row["answer"], True, 3)
    assert rec["probs"] == pytest.approx({"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.4})
    assert out["mac_publisher_acs"] in (0.0, 100.0) and out["mac_publisher_cell"] is None
    unparsed = mac_tasks.process_results(row, [None])
    assert unparsed[mac_tasks.METRIC]["pred"] is None and unparsed[mac_tasks.METRIC]["correct"] is False and unparsed[mac_tasks.LENIENT]["rule"] == "none"
    t2i = mac_rows("t2i", "option")[3]
    assert mac_tasks.publisher_of(t2i) == "Cell"
    mac_tasks.check_record(t2i, {"direction": "t2i"})
    bad = {**t2i, "option_C": "MAC_Bench/Cell/Cover/Cell Fake Reports/1999_9.png"}
    with pytest.raises(RecordError, match=r"record 'Cell Fake Reports/2024_2', field 'option_C': image not found: tried 'Cell/Cover/Cell Fake Reports/1999_9.png'"):
        mac_tasks.check_record(bad, {"direction": "t2i"})
    with pytest.raises(RecordError, match=r"field 'answer': expected one letter A-D"):
        mac_tasks.check_record({**row, "answer": "E"}, {"direction": "i2t"})
    import datasets

    ds = datasets.Dataset.from_list([{k: v for k, v in row.items() if k != "option_B"}])
    with pytest.raises(RecordError, match="'option_B'.*column\\(s\\) missing"):
        mac_tasks.check_columns(ds)


DISTRACTOR_KEYS = ["mac_distractor_" + m for m in ("clip", "vith", "vitg", "allv2", "multibv1", "sbert", "ave", "siglip", "doubao", "qwen", "other")]


def _answer(letter):
    return "{" + ", ".join(f'"{x}": {0.7 if x == letter else 0.1}' for x in "ABCD") + "}"


def test_distractor_picks_by_embedding_model(mirror, monkeypatch):
    """Each wrong pick counts for the embedding model whose distractor it was (option_<pred>_embedding_name);
    a right answer, an unparsed one, an all-zero one (A by our tie rule) and a letter beyond D pick no
    distractor; the model's share of the wrong picks is the mean over the docs that have one."""
    monkeypatch.setenv("EARTHSCI_DATA_MIRROR", mirror)
    from lmms_eval_earthsci.core.scoring.metrics import mean_present
    from lmms_eval_earthsci.evals.mac.fixtures import mac_rows

    row = mac_rows("i2t", "option")[0]  # the text models' distractors
    by_name = {row[f"option_{x}_embedding_name"]: x for x in "ABCD"}
    assert set(by_name) == {"groundtruth", "allv2", "multiBv1", "sbert"}  # the premise

    def run(response, doc=row):
        out = mac_tasks.process_results(doc, [response])
        return out, out[mac_tasks.METRIC]

    out, rec = run(_answer(by_name["multiBv1"]))
    assert {k: out[k] for k in DISTRACTOR_KEYS} == {k: (100.0 if k == "mac_distractor_multibv1" else 0.0) for k in DISTRACTOR_KEYS}
    assert (rec["picked_embedding"], rec["distractor"], rec["correct"], out["mac_acc"]["score"]) == ("multiBv1", "multiBv1", False, 0.0)
    out, rec = run(_answer(by_name["groundtruth"]))
    assert all(out[k] is None for k in DISTRACTOR_KEYS) and (rec["picked_embedding"], rec["distractor"], out["mac_acc"]["score"]) == ("groundtruth", None, 100.0)
    for no_pick in (None, "I cannot tell", "{}", '{"A": 0, "B": 0, "C": 0, "D": 0}', '"E": 0.9, "A": 0.1'):
        out, rec = run(no_pick)
        assert all(out[k] is None for k in DISTRACTOR_KEYS) and rec["distractor"] is None and rec["picked_embedding"] is None, no_pick
    # names beyond the declared models: ave_<k> is one slice, any other name (or none) is `other`
    wrong = by_name["sbert"]
    for name, slice_ in (("ave_2", "ave"), ("AVE_11", "ave"), ("dinov2", "other"), ("", "other"), (None, "other"), ("SigLIP", "siglip")):
        out, rec = run(_answer(wrong), {**row, f"option_{wrong}_embedding_name": name})
        assert out[f"mac_distractor_{slice_}"] == 100.0 and sum(out[k] for k in DISTRACTOR_KEYS) == 100.0, name
    # three wrong picks (two sbert, one allv2) and a right one: sbert 2/3 of the wrong picks
    docs = [(row, by_name["sbert"]), (row, by_name["allv2"]), (row, by_name["groundtruth"]), (row, by_name["sbert"])]
    outs = [mac_tasks.process_results(d, [_answer(x)]) for d, x in docs]
    assert mean_present(o["mac_distractor_sbert"] for o in outs) == pytest.approx(200 / 3)
    assert mean_present(o["mac_distractor_allv2"] for o in outs) == pytest.approx(100 / 3) and mean_present(o["mac_distractor_clip"] for o in outs) == 0.0
    assert mac_tasks.mac_acc([o["mac_acc"] for o in outs]) == 25.0  # the official accuracy is untouched


def test_a_rotated_option_keeps_its_embedding_model(mirror, monkeypatch):
    """Circular variants: each option's CSV fields move with it, so a pick names the model that chose it."""
    monkeypatch.setenv("EARTHSCI_DATA_MIRROR", mirror)
    from lmms_eval_earthsci.evals.mac import circular as mac_circular
    from lmms_eval_earthsci.evals.mac.fixtures import mac_rows

    row = mac_rows("t2i", "info")[0]
    fields = lambda d, x: tuple(d[f"option_{x}{s}"] for s in ("", "_path", "_embedding_name", "_embedding_id"))  # noqa: E731
    for k in range(4):
        asked = mac_circular.rotate(row, k, 4)
        assert sorted(fields(asked, x) for x in "ABCD") == sorted(fields(row, x) for x in "ABCD")
        assert asked[f"option_{asked['answer']}_embedding_name"] == "groundtruth"
        wrong = next(x for x in "ABCD" if x != asked["answer"])
        rec = mac_tasks.process_results(asked, [_answer(wrong)])[mac_tasks.METRIC]
        original = next(x for x in "ABCD" if row[f"option_{x}"] == asked[f"option_{wrong}"])
        assert rec["distractor"] == row[f"option_{original}_embedding_name"] != "groundtruth"


def test_process_docs_reads_id_as_string():
    import datasets

    ds = datasets.Dataset.from_list([{"journal": "J", "id": 2018}, {"journal": "J", "id": 7}])
    out = mac_tasks.process_docs(ds)
    assert out["id"] == ["2018", "7"] and out["_row"] == [0, 1]


def test_task_kwargs():
    assert mac_tasks._task_kwargs({})["image_max_side"] == 512
    assert mac_tasks._task_kwargs({"image_max_side": None})["image_max_side"] is None
    with pytest.raises(ValueError, match="MAC direction"):
        mac_tasks._task_kwargs({"direction": "x"})


def test_dad_prompts_equal_the_source_literals():
    from lmms_eval_earthsci.evals.mac import dad as mac_dad

    text = open(shared_path("specs", "mac.md")).read()
    section = text[text.index("### A.2 DAD prompts") : text.index("### A.3")]
    literals = [ast.literal_eval(lit) for _, lit in re.findall(r"^(system_prompt|user_prompt) = f?(\".*\")$", section, re.M)]
    ours = [mac_dad.DAD_I2T_SYSTEM, mac_dad.DAD_I2T_USER, mac_dad.DAD_T2I_SYSTEM, mac_dad.DAD_T2I_USER, mac_dad.STAGE2_I2T_SYSTEM, mac_dad.STAGE2_I2T_USER, mac_dad.STAGE2_T2I_SYSTEM, mac_dad.STAGE2_T2I_USER]
    assert ours == literals
    # stage 1 I2T: question and options with no separator, as the original concatenates them
    kw = mac_tasks._task_kwargs({"direction": "i2t"})
    assert mac_dad.stage1_text(DOC_I2T, kw).endswith(
        "do not give your final answer: Which of the following options best describe the cover image?"
        "A: Story A with {options} braces\nB: Story B with {options} braces\nC: Story C with {options} braces\nD: Story D with {options} braces"
    )
    msgs = mac_dad.stage2_messages(DOC_I2T, "The image shows {story}.")
    assert msgs[0]["content"] == mac_dad.STAGE2_I2T_SYSTEM and msgs[1]["content"].startswith("The image description is: The image shows {story}.. The answer in image description may be wrong. And you have the following options: A: Story A")


def test_report_labels_and_rows_of_the_distractor_shares():
    from lmms_eval_earthsci.evals.mac.benchmark import BENCHMARK

    spec = BENCHMARK.report_spec()
    assert spec.slice_label("mac_distractor_multibv1") == "distractor multibv1" and spec.slice_label("mac_publisher_acs") == "publisher acs"
    assert "picked_embedding" in spec.record_fields
    assert spec.table_metrics("mac2025_i2t_info", ["mac_acc", "mac_distractor_vitg", "mac_distractor_other"]) == ["mac_acc", "mac_distractor_vitg", "mac_distractor_other"]

    class Run:
        def __init__(self, values):
            self.values = values

        def value(self, task, metric):
            return (self.values.get(metric), None)

    class View:
        def runs(self):
            return [Run({"mac_distractor_vitg": 0.0, "mac_distractor_clip": 0.0}), Run({"mac_distractor_vitg": 50.0, "mac_distractor_clip": 0.0})]

    skip = {m: spec.skip_row(None, "mac2025_i2t_info", m, View(), (), True) for m in ("mac_distractor_vitg", "mac_distractor_clip", "mac_distractor_sbert", "mac_publisher_acs")}
    assert skip == {"mac_distractor_vitg": False, "mac_distractor_clip": True, "mac_distractor_sbert": True, "mac_publisher_acs": False}
