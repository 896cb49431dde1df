"""SciFIBench: prompts and layouts, the staged extractor on the paper's example outputs, alignment
variants, scoring and the LLM-extractor parser."""

import pytest

from lmms_eval_earthsci.core.data import RecordError
from lmms_eval_earthsci.evals.scifibench import tasks as scifibench_tasks
from lmms_eval_earthsci.evals.scifibench.fixtures import scifibench_rows

OPTS = [
    "A)  ber vs snr for fft size=2048 using ls , lmmse , lr-lmmse .",
    "B)  ber vs snr for fft size=1024 using ls , lmmse , lr-lmmse .",
    "C)  surowiec-south flow rates over the season .",
    "D)  expected lookup time for different table sizes .",
    "E)  the roc curves of three detectors .",
]


@pytest.mark.parametrize(
    "response, letter, stage",
    [
        ("D)", "D", "strict"),
        ("D", "D", "strict"),
        ("**B**", "B", "strict"),
        ("A) surowiec-south flow …", "A", "leading"),
        ("The correct caption that best describes the image is: E) expected lookup time …</s>", "E", "phrase"),
        ("Answer: E", "E", "strict"),
        ("The answer is E) the roc curves …", "E", "phrase"),
        ("Let's think step by step. The plot shows flow rates over a season, so it is C. Answer: C", "C", "strict"),
        ("The figure is a line plot of bit error rate against snr for several estimators, with no clear winner among them at high snr.", "", "none"),
        ("A) ber vs snr\nB) ber vs snr 1024\nC) surowiec\nD) lookup\nE) roc curves", "", "ambiguous"),  # lists all options
        ("Either (B) or (D).", "", "ambiguous"),
        ("the answer is a bar chart", "", "none"),  # lower-case "a" is a word, not an option
        ("the roc curves of three detectors", "E", "similarity"),  # exactly one caption contained
        ("ber vs snr for fft size=1024 using ls , lmmse , lr-lmmse", "B", "similarity"),  # near-duplicates: the contained one
        ("ber vs snr for fft size using ls and lmmse", "", "none"),  # close to A and B alike: no margin
        ("Answer: C\nExplanation: unlike image A and image E, it shows flow.", "C", "phrase"),  # the answer, not the mentions
        ("The answer is C. Note that option A is close.", "C", "phrase"),  # the answer phrase beats mentions
        ("Image D matches; image D has the curve.", "D", "phrase"),
        ("Option A has flow, option E has curves.", "", "ambiguous"),
    ],
)
def test_staged_extractor(response, letter, stage):
    got = scifibench_tasks.extract(response, OPTS)
    assert (got.value, got.rule) == (letter, stage)


def test_no_similarity_stage_for_caption_to_figure():
    assert scifibench_tasks.extract("the roc curves of three detectors", None).rule == "none"


def test_f2c_prompt_layout():
    doc = {**scifibench_rows("CS_Figure2Caption")[1], "_split": "CS_Figure2Caption"}
    msgs = scifibench_tasks.doc_to_messages(doc, {"direction": "f2c"})
    parts = msgs[0]["content"]
    assert [p["type"] for p in parts] == ["image", "text"]
    expected = "\n".join(o.strip() for o in doc["Options"]) + "\nWhich caption best matches the image? Let's think step by step. Only provide the letter of the correct caption as your answer. Answer:"
    assert parts[1]["text"] == expected
    assert parts[1]["text"].startswith("A)  lookup time vs load factor .\nB)  ")  # options verbatim, never reordered
    appendix = scifibench_tasks.doc_to_text(doc, {"direction": "f2c", "prompt": "paper_appendix"})
    assert appendix.endswith("\nWhich of the captions best describes the image? Let's think step by step. Only provide the letter of the correct caption as your answer. Answer:")
    reasoning = scifibench_tasks.doc_to_text(doc, {"direction": "f2c", "prompt": "reasoning"})
    assert reasoning.endswith("Which caption best matches the image? Let's think step by step. Answer:")
    with pytest.raises(ValueError):
        scifibench_tasks.doc_to_text(doc, {"direction": "f2c", "prompt": "cot"})


def test_c2f_interleaved_layout_and_simple_text():
    doc = {**scifibench_rows("CS_Caption2Figure")[0], "_split": "CS_Caption2Figure"}
    parts = scifibench_tasks.doc_to_messages(doc, {"direction": "c2f"})[0]["content"]
    assert [p["type"] for p in parts] == ["text", "image"] * 5 + ["text"]
    assert [parts[i]["text"] for i in range(0, 10, 2)] == ["A) ", "B) ", "C) ", "D) ", "E) "]
    assert [parts[i]["url"].size for i in range(1, 10, 2)] == [(64 + 8 * k, 48) for k in range(5)]  # A-E order
    assert parts[-1]["text"] == "\n" + doc["Question"] + " Let's think step by step. Only provide the letter of the correct image as your answer. Answer:"
    assert [im.size for im in scifibench_tasks.doc_to_visual(doc)] == [(64 + 8 * k, 48) for k in range(5)]
    assert scifibench_tasks.doc_to_text(doc, {"direction": "c2f"}).startswith("A) <image>\nB) <image>\nC) <image>\nD) <image>\nE) <image>\nCaption: ")


def test_alignment_variants():
    doc = {**scifibench_rows("CS_Figure2Caption")[1], "_split": "CS_Figure2Caption"}  # answer C
    right = scifibench_tasks.doc_to_text(doc, {"direction": "f2c", "mark": "correct"})
    assert right.startswith(scifibench_tasks.ALIGNMENT_SENTENCE + "\nA)  lookup")
    assert "\nC) <Correct> expected lookup time for different table sizes .\n" in right
    wrong = scifibench_tasks.doc_to_text(doc, {"direction": "f2c", "mark": "incorrect", "instruction": True})
    assert wrong.startswith("A human expert marked one of the captions as <Correct>. Ignore this information.\n")
    tagged = [line[0] for line in wrong.split("\n") if "<Correct> " in line and line[:2].endswith(")")]
    assert len(tagged) == 1 and tagged[0] != "C"
    assert scifibench_tasks.marked_option(doc, "incorrect") == scifibench_tasks.marked_option(doc, "incorrect")  # seeded: every run agrees
    picks = {scifibench_tasks.marked_option({**doc, "ID": i}, "incorrect") for i in range(30)}
    assert len(picks) == 4 and 2 not in picks


def test_scoring_and_breakdowns():
    doc = {**scifibench_rows("General_Figure2Caption")[1], "_split": "General_Figure2Caption"}  # answer D, q-bio
    out = scifibench_tasks.process_results(doc, ["Answer: D"])
    assert out["scifibench_acc"]["score"] == 100.0 and out["scifibench_acc"]["stage"] == "strict"
    assert out["scifibench_category_q_bio"] == 100.0 and out["scifibench_category_physics"] is None
    assert out["scifibench_no_answer"] == 0.0
    out = scifibench_tasks.process_results(doc, ["I cannot tell."])
    assert out["scifibench_acc"]["score"] == 0.0 and out["scifibench_no_answer"] == 100.0
    for bad in (None, 12, "\udcff" * 3, "x" * 200_000):
        assert scifibench_tasks.process_results(doc, [bad])["scifibench_acc"]["score"] in (0.0, 100.0)
    with pytest.raises(RecordError, match=r"record '1', field 'Answer'"):
        scifibench_tasks.process_results({**doc, "Answer": "F"}, ["F"])
    with pytest.raises(RecordError, match="Answer"):
        scifibench_tasks.process_results({**doc, "Answer": "AB"}, ["A"])


def test_llm_extractor_prompt_and_parser():
    msg = scifibench_tasks.JUDGE.build({}, "It is D) expected lookup", dict)
    assert msg[0]["content"] == (
        'Here is the output from a generative model:\n"It is D) expected lookup"\n'
        'The output contains the answer to a multiple choice question with options A) - E). Return only the letter of the answer. If no answer is found, return "None".'
    )
    assert scifibench_tasks.parse_judge_letter("D") == "D" and scifibench_tasks.parse_judge_letter(" B)") == "B"
    assert scifibench_tasks.parse_judge_letter("None") is None and scifibench_tasks.parse_judge_letter("") is None


# ---------------------------------------------------------------------------- \boxed{} stage


@pytest.mark.parametrize(
    "response, letter, stage",
    [
        ("The answer is \\boxed{B}.", "B", "boxed"),
        ("\\boxed{B}", "B", "boxed"),
        ("Final answer: \\boxed{\\text{B}}", "B", "boxed"),
        ("\\boxed{\\textbf{D}}", "D", "boxed"),
        ("\\boxed{(B)}", "B", "boxed"),
        ("\\boxed{**B**}", "B", "boxed"),
        ("So the caption is \\boxed{B) ber vs snr for fft size=1024 using ls , lmmse , lr-lmmse .}", "B", "boxed"),
        ("\\boxed{\\text{E) the roc curves of three detectors .}}", "E", "boxed"),
        ("First guess \\boxed{A}; on reflection the flow plot fits, so \\boxed{C}", "C", "boxed"),  # the last box
        ("Option A is close and option E too, but the figure shows flow: \\boxed{C}", "C", "boxed"),  # not ambiguous
        ("A) shows ber curves, which does not fit. The final answer is \\boxed{D}", "D", "boxed"),  # not the "A)" opening
        ("\\boxed{A}\nAnswer: C", "C", "strict"),  # the bare letter after the last "Answer:" comes later than the box
        ("\\boxed{42}", "", "none"),  # not an option letter
        ("\\boxed{F}", "", "none"),  # five options: F is none of them
        ("\\boxed{A or B}", "", "none"),
        ("The best match is \\boxed{42}. Answer: C", "C", "strict"),  # an invalid box falls through
        ("\\boxed{B} ... then \\boxed{42}", "", "none"),  # only the LAST box counts
        ("\\boxed{B", "", "none"),  # unbalanced: no box
    ],
)
def test_boxed_stage(response, letter, stage):
    got = scifibench_tasks.extract(response, OPTS)
    assert (got.value, got.rule) == (letter, stage)


def test_boxed_stage_is_logged_in_the_sample():
    doc = {**scifibench_rows("CS_Caption2Figure")[0], "_split": "CS_Caption2Figure"}
    gold = doc["Answer"]
    out = scifibench_tasks.process_results(doc, [f"Comparing the five figures, the match is \\boxed{{{gold}}}."])
    assert out["scifibench_acc"]["score"] == 100.0 and out["scifibench_acc"]["stage"] == "boxed" and out["scifibench_acc"]["parsed"] == gold


# ---------------------------------------------------------------------------- the LLM extractor's reply


@pytest.mark.parametrize(
    "reply, letter",
    [
        # a standalone letter, markup and punctuation around it
        ("B", "B"),
        ("E", "E"),
        (" B)", "B"),
        ("B.", "B"),
        ("(B)", "B"),
        ("**B**", "B"),
        ('"B"', "B"),
        ("`C`", "C"),
        ("[D]", "D"),
        ("B\n", "B"),
        ("c", "C"),  # lower case counts when it stands alone: the extractor was asked for only the letter
        # an answer lead, case-insensitive
        ("Answer: B", "B"),
        ("Extracted answer: A", "A"),
        ("Extracted answer: (C)", "C"),
        ("The answer is D", "D"),
        ("Final answer: **E**", "E"),
        ("ANSWER: D.", "D"),
        ("answer: c", "C"),  # lower case after a lead, alone on its line
        ("The correct answer is: (B)", "B"),
        ("Answer:\nB", "B"),
        ("Answer: B (not A)", "B"),  # other letters mentioned after the answer
        ("The answer is B, not A.", "B"),
        # explanation before or after
        ("The output concludes with caption D.\nAnswer: D", "D"),
        ("B\nThe output names caption B as the match.", "B"),
        ("The model compares A and C and settles on C.\nC", "C"),
        ("Answer: E\nThe model says the roc curves (option E) match, rejecting A.", "E"),
        ("The output first says A, then the answer is C", "C"),  # the last lead decides
        ("Answer: E\nThe model's answer is the roc curves caption.", "E"),  # a lead followed by prose decides nothing
        ("\u201cD\u201d", "D"),  # curly quotes
        ("Answer: None. The model mentions option B only in passing.", None),  # the lead names the null token
        # the null token and other non-answers
        ("None", None),
        ('"None"', None),
        ("None.", None),
        ("Answer: None", None),
        ("No answer", None),
        ("No answer found.", None),
        ("N/A", None),
        ("I cannot determine", None),
        ("I cannot determine the answer.", None),
        ("Correct", None),  # a word starting with C is not C
        ("Incorrect", None),
        ("Error", None),
        ("The answer is a bar chart", None),  # lower-case "a" before a word is an article
        ("Answer: Correct", None),
        ("A or B", None),  # ambiguous
        ("Answer: A or B", None),
        ("Answer: B/D", None),
        ("A, C", None),
        ("The output discusses options A and C.", None),  # letters in prose, no answer given
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_parse_judge_letter_table(reply, letter):
    assert scifibench_tasks.parse_judge_letter(reply) == letter


# --------------------------------------------------------------------------- Fig. 8: caption length, figure size


def test_caption_length_is_counted_in_words_without_spaced_punctuation():
    assert scifibench_tasks.caption_words("ber vs snr for fft size=2048 using ls , lmmse , lr-lmmse .") == 10
    assert scifibench_tasks.caption_words("  ") == 0 and scifibench_tasks.caption_words("( a ) and ( b ) .") == 3


def _f2c_doc(gold_words: int) -> dict:
    doc = {**scifibench_rows("CS_Figure2Caption")[0], "_split": "CS_Figure2Caption"}  # answer A
    opts = list(doc["Options"])
    opts[0] = "A)  " + " ".join(f"w{i}" for i in range(gold_words)) + " ."
    return {**doc, "Options": opts}


@pytest.mark.parametrize("words, label", [(5, "1_5"), (6, "6_10"), (20, "11_20"), (25, "21_30"), (50, "31_50"), (51, "51_100"), (101, "101_plus"), (0, None)])
def test_f2c_accuracy_by_the_correct_captions_length(words, label):
    out = scifibench_tasks.process_results(_f2c_doc(words), ["Answer: A"])
    bins = {k: v for k, v in out.items() if k.startswith("scifibench_length_")}
    assert list(bins) == ["scifibench_length_" + b for b in ("1_5", "6_10", "11_20", "21_30", "31_50", "51_100", "101_plus")]
    assert {k: v for k, v in bins.items() if v is not None} == ({f"scifibench_length_{label}": 100.0} if label else {})
    assert out["scifibench_acc"]["caption_words"] == words and out["scifibench_category_cs_cv"] == 100.0
    assert not any(k.startswith(("scifibench_size_", "scifibench_year")) for k in out)  # F->C: no size, and no year anywhere


def test_c2f_accuracy_by_the_options_mean_figure_size_read_from_headers_only():
    from PIL import Image

    from lmms_eval_earthsci.testing.figures import draw_figure, png_bytes

    doc = {**scifibench_rows("General_Caption2Figure")[2], "_split": "General_Caption2Figure"}  # answer A
    # sqrt(w*h): 300, 200, 600, 500, 200 -> mean 360 px; the bytes are cut short: a full decode would fail
    sizes = [(300, 300), (400, 100), (600, 600), (1000, 250), (200, 200)]
    cells = []
    for k, wh in enumerate(sizes):
        raw = png_bytes(draw_figure(k, size=wh))
        cells.append(Image.open(__import__("io").BytesIO(raw[: len(raw) // 2])) if k == 0 else {"bytes": raw[: len(raw) // 2], "path": None})
    out = scifibench_tasks.process_results({**doc, "Images": cells}, ["A"])
    assert out["scifibench_acc"]["figure_size"] == 360.0
    assert {k: v for k, v in out.items() if k.startswith("scifibench_size_") and v is not None} == {"scifibench_size_250_499": 100.0}
    assert [k for k in out if k.startswith("scifibench_size_")] == ["scifibench_size_" + b for b in ("0_249", "250_499", "500_999", "1000_1499", "1500_1999", "2000_plus")]
    assert not any(k.startswith("scifibench_length_") for k in out)
    # the fixture's five figures, (64 + 8k) x 48: mean size 64.0 px, wrong answer scored 0 in its bin
    plain = scifibench_tasks.process_results({**doc}, ["B"])
    assert plain["scifibench_acc"]["figure_size"] == pytest.approx(round(sum((64 + 8 * k) ** 0.5 * 48**0.5 for k in range(5)) / 5, 1))
    assert plain["scifibench_size_0_249"] == 0.0
    # lmms-eval's copy of a doc without media: no size, in no bin, still scored
    bare = scifibench_tasks.process_results({k: v for k, v in doc.items() if k != "Images"}, ["A"])
    assert bare["scifibench_acc"]["figure_size"] is None and bare["scifibench_acc"]["score"] == 100.0
    assert all(v is None for k, v in bare.items() if k.startswith("scifibench_size_"))


def test_c2f_docs_carry_their_mean_figure_size_into_lmms_evals_copy_without_images():
    """lmms-eval scores a copy of each doc without its image columns: process_docs tags C->F docs with the
    size (read from headers, on an Arrow dataset and on a list of rows alike), process_results reads it."""
    from lmms_eval_earthsci.evals.scifibench.fixtures import scifibench_features

    datasets = pytest.importorskip("datasets")
    rows = scifibench_rows("CS_Caption2Figure")
    want = [round(sum(((64 + 8 * k) * 48) ** 0.5 for k in range(5)) / 5, 1)] * 3
    tagged = scifibench_tasks.process_docs_cs_c2f(datasets.Dataset.from_list(rows, features=scifibench_features()))
    assert tagged["_figure_size"] == want and tagged["_split"] == ["CS_Caption2Figure"] * 3
    assert [d["_figure_size"] for d in scifibench_tasks.process_docs_cs_c2f(rows)] == want
    assert "_figure_size" not in scifibench_tasks.process_docs_cs_f2c(datasets.Dataset.from_list(scifibench_rows("CS_Figure2Caption"), features=scifibench_features())).column_names
    no_media = {k: v for k, v in tagged[0].items() if k != "Images"}
    out = scifibench_tasks.process_results({**no_media, "_figure_size": 1234.5}, ["A"])  # answer A
    assert out["scifibench_acc"]["figure_size"] == 1234.5 and out["scifibench_size_1000_1499"] == 100.0
