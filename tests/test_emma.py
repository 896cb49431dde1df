import glob
import gzip
import json
import os

import pytest

from lmms_eval_earthsci import emma
from conftest import shared_path


@pytest.mark.parametrize(
    "response, extraction",
    [
        ("B", "B"),
        ("b", "B"),
        ("B: Ring (a)", "B"),
        ("B. foo", "B"),
        ("  42 ", "42"),
        ("-100", "-100"),
        ("So the answer is \\boxed{C}.", "C"),
        ("\\[\\boxed{E}\\]", "E"),
        ("\\boxed{\\text{B}}", "B"),
        ("\\boxed{\\textbf{B}}", "\\textbf{B}"),
        ("\\boxed{(B)}", "(B)"),
        ("\\boxed{B} then \\boxed{C}", "C"),
        ("The correct answer is D.\nMore", "d"),
        ("Final answer: c", "c"),
        ("**Answer:** B", "** b"),
        ("The answer is: **B**", ": **b**"),
        ("I think it's (B)", ""),
        ("(C)", ""),
        ("boxed{A}", ""),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ],
)
def test_fast_extract_answer_spec_table(response, extraction):
    assert emma.fast_extract_answer(response).value == extraction


@pytest.mark.parametrize(
    "pred, gold, equal",
    [
        ("0.5", "\\frac{1}{2}", True),
        ("seven", "7", True),
        ("3.14159", "3.14", True),
        ("3.146", "3.15", True),
        ("11.0", "11", True),
        ("1,000", "1000", True),
        ("b", "B", True),
        ("(b)", "b", False),
        ("**b**", "b", False),
        ("x+1", "1+x", False),
        ("e", "2.72", True),
        ("2", "two", False),
        ("4,6,11", "4, 6, 11", False),
    ],
)
def test_is_equal_spec_table(pred, gold, equal):
    assert emma.is_equal(pred, gold) is equal


def doc(**kw):
    base = {"pid": "Math_1", "question": "Q <image_1>", "options": ["x", "y"], "answer": "B", "type": "Multiple Choice", "context": "", "subject": "Math", "category": "Path Tracing", "task": ""}
    base.update(kw)
    return base


def test_query_exact_strings():
    assert emma.build_query(doc()) == '\nQ <image_1>\nA: x\nB: y\n\nAnswer with the option\'s letter from the given choices and put the letter in one "\\boxed{}". Please solve the problem step by step.'
    oe = doc(options=None, type="Open-ended", answer="3", context=None)
    assert emma.build_query(oe, "Direct") == '\nQ <image_1>\nAnswer the question using a single word or phrase and put the answer in one "\\boxed{}". Please ensure that your output only contains the final answer without any additional content (such as intermediate reasoning steps).'


def test_scoring_uses_answer_or_option_text_and_never_raises():
    d = doc(options=["1.5", "6.84"], answer="b")
    assert emma.score_response(d, "\\boxed{6.84}")["correct"]
    assert emma.score_response(d, "B")["correct"]
    for junk in ["", None, "x" * 1_000_000, "\\boxed{" * 1000, "answer is " + "9" * 5000]:
        out = emma.process_results(d, [junk])
        assert out["emma_acc"]["score"] == 0.0


def test_process_results_breakdowns_coding_multilabel():
    d = doc(subject="Coding", category="Legend;Color & Texture", task="Code Choose Vis", answer="A")
    out = emma.process_results(d, ["\\boxed{A}"])
    assert out["emma_acc"]["score"] == 100.0
    assert out["emma_category_legend"] == 100.0 and out["emma_category_color_texture"] == 100.0
    assert out["emma_category_polar"] is None
    assert out["emma_task_code_choose_vis"] == 100.0 and out["emma_type_multiple_choice"] == 100.0


def test_bad_answer_letter_names_record_and_field():
    with pytest.raises(Exception, match=r"record 'Math_1', field 'answer'"):
        emma.gold_content(doc(answer="Q"))


def _reference_records():
    folder = shared_path("reference", "emma_mini")
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl.gz"))):
        with gzip.open(path, "rt") as f:
            yield os.path.basename(path), [json.loads(line) for line in f]


def test_rebuilds_every_released_query():
    n = 0
    for name, records in _reference_records():
        strategy = "Direct" if "Direct" in name else "CoT"
        if name.startswith("random"):
            continue
        for r in records:
            assert emma.build_query(r, strategy) == r["query"], (name, r["pid"])
            n += 1
    assert n > 7000


# Released verdicts that predate the current official scorer (spec §4.4): the paper-era code had no
# word-to-number step, so a boxed "Three" for gold "3" was stored as wrong; the current official
# is_equal (and so emma_acc) accepts it. Every other released verdict is reproduced exactly.
PREDATES_W2N = {
    ("gemini-2.0-flash-thinking-exp-1219_Chemistry_CoT.jsonl.gz", "chem_520"),
    ("gemini-2.0-flash-thinking-exp-1219_Chemistry_CoT.jsonl.gz", "chem_324"),
    ("gemini-2.0-flash-thinking-exp-1219_Math_CoT.jsonl.gz", "Math_589"),
    ("gemini-2.0-flash-thinking-exp-1219_Math_CoT.jsonl.gz", "Math_698"),
    ("gemini-2.0-flash-thinking-exp-1219_Math_CoT.jsonl.gz", "Math_690"),
    ("gemini_CoT.jsonl.gz", "Math_698"),
    ("gemini_CoT.jsonl.gz", "Math_728"),
    ("gemini_CoT.jsonl.gz", "Math_772"),
    ("gemini_CoT.jsonl.gz", "chem_324"),
    ("gemini_Direct.jsonl.gz", "Math_676"),
    ("gemini_Direct.jsonl.gz", "Math_683"),
    ("gemini_Direct.jsonl.gz", "Math_728"),
    ("gemini_Direct.jsonl.gz", "Math_772"),
}


def test_reproduces_released_verdicts():
    n = 0
    mismatches = set()
    for name, records in _reference_records():
        if name == "Llava_CoT.jsonl.gz":  # verdicts there come from the LLM judge (spec §4.1)
            continue
        for r in records:
            if "true_false" not in r:
                continue
            n += 1
            verdict = emma.score_response(r, r.get("response"))
            # the extraction matches the released one, except where the paper-era extractor stored the
            # whole response for "nothing extracted" (spec §4.4; scored wrong either way)
            if r.get("extraction") != (r.get("response") or "").strip():
                assert verdict["extraction"] == (r.get("extraction") or ""), (name, r["pid"])
            if verdict["correct"] != (str(r["true_false"]) == "True"):
                mismatches.add((name, r["pid"]))
                # the reason: word-to-number, which the released verdict predates
                assert str(r["true_false"]) == "False" and verdict["correct"]
                assert emma._word_number(verdict["extraction"].lower()) == r["answer"], (name, r["pid"])
    assert n > 7000
    assert mismatches == PREDATES_W2N
