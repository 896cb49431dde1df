import pytest

from lmms_eval_earthsci.core.scoring.extraction import (
    Extracted,
    extract_after_phrase,
    extract_boxed_all,
    extract_boxed_answer,
    extract_json_object,
    extract_option_letter,
    option_letters,
    parse_json_lenient,
)


@pytest.mark.parametrize(
    "text, value, rule",
    [
        ('{"answer": "B", "Explanation": "x"}', {"answer": "B", "Explanation": "x"}, "json-bare"),
        ('Sure!\n```json\n{"answer": "C"}\n```\nDone', {"answer": "C"}, "json-fenced"),
        ('```json\n{"answer": "C",}\n```', {"answer": "C"}, "json-fenced+trailing-comma"),
        ("{'answer': 'D', 'Explanation': \"it's dry\"}", {"answer": "D", "Explanation": "it's dry"}, "json-bare+single-quotes"),
        ('{"answer": "A", "Explanation": "T = 5\\degree C"}', {"answer": "A", "Explanation": "T = 5\\degree C"}, "json-bare+backslash"),
        ('prefix {"a": {"b": 1}} suffix {"c": 2}', {"a": {"b": 1}}, "json-bare"),
        ('{"answer": "a } b"}', {"answer": "a } b"}, "json-bare"),
    ],
)
def test_extract_json_object(text, value, rule):
    got = extract_json_object(text)
    assert got.value == value
    assert got.rule == rule


@pytest.mark.parametrize("junk", [None, "", "no json here", "{not: json", "{" * 5000, "\ud800{", b"{\"answer\": \"B\"}", 12])
def test_extract_json_never_raises(junk):
    got = extract_json_object(junk)
    assert isinstance(got, Extracted)


def test_json_bytes_input_is_decoded():
    assert extract_json_object(b'{"answer": "B"}').value == {"answer": "B"}


def test_parse_json_lenient_reports_repair():
    assert parse_json_lenient('[1, 2,]') == ([1, 2], "trailing-comma")
    assert parse_json_lenient("nonsense") is None


def test_boxed_brace_matching_and_last():
    assert extract_boxed_all(r"\boxed{\frac{1}{2}} and \boxed{C}") == [r"\frac{1}{2}", "C"]
    assert extract_boxed_answer(r"So \boxed{\frac{1}{2}}").value == r"\frac{1}{2}"
    assert extract_boxed_answer(r"\boxed{B} then \boxed{C}").value == "C"
    assert extract_boxed_answer(r"\boxed{\text{B}}") == Extracted("B", "boxed-text")
    # \textbf is not unwrapped; a box without a backslash is not a box
    assert extract_boxed_answer(r"\boxed{\textbf{B}}").value == r"\textbf{B}"
    assert extract_boxed_answer("boxed{A}") == Extracted(None, "none")
    # unbalanced: no box
    assert extract_boxed_all(r"\boxed{oops") == []


def test_phrase_flags_order_last_occurrence_and_cuts():
    flags = ["final answer is", "answer is", "answer:"]
    assert extract_after_phrase("The answer is B. The final answer is C.\nmore", flags) == Extracted("c", "phrase:final answer is")
    assert extract_after_phrase("answer is x. then the answer is Y. end", flags).value == "y"
    assert extract_after_phrase("Answer: Rivers", flags, lower=False).value == "Rivers"
    assert extract_after_phrase("nothing", flags) == Extracted(None, "none")


@pytest.mark.parametrize(
    "text, letters, value, rule",
    [
        ("B", "ABCD", "B", "letter-bare"),
        ("(c)", "ABCD", "C", "letter-bare"),
        ("D.", "ABCD", "D", "letter-bare"),
        ("**B**", "ABCD", "B", "letter-markup"),
        (r"\textbf{A}", "ABCD", "A", "letter-markup"),
        ("C. Warm and humid air", "ABCD", "C", "letter-leading"),
        ("I pick Option B because", "ABCD", "B", "letter-option-word"),
        ("So the correct answer is (D).", "ABCD", "D", "letter-answer-phrase"),
        ("The answer is **E**", "ABCDE", "E", "letter-answer-phrase"),
        ("G", "ABCDEFGH", "G", "letter-bare"),
        ("E", "ABCD", None, "none"),  # not in the letter set
        ("A) foo B) bar C) baz", "ABCD", None, "none"),  # listing options is not an answer
        ("", "ABCD", None, "none"),
    ],
)
def test_extract_option_letter(text, letters, value, rule):
    got = extract_option_letter(text, letters)
    assert (got.value, got.rule) == (value, rule)


def test_option_letter_rule_subset():
    assert extract_option_letter("Option B", "ABCD", rules=["letter-bare"]).value is None
    assert option_letters(5) == "ABCDE"
    with pytest.raises(ValueError):
        option_letters(27)


def test_option_letter_huge_input_is_fast_and_safe():
    text = "A " * 200_000
    assert extract_option_letter(text, "ABCD").rule in ("none", "letter-leading")
