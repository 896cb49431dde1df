"""MSEarth: exact prompts on real records, the official MCQ verdict with its quirks, the paper's method,
both upload schemas, breakdowns, judge prompts and parsers, and robustness to malformed output."""

import ast
import collections
import gzip
import json
import re

import pytest
from conftest import shared_path

from lmms_eval_earthsci.core.data import RecordError
from lmms_eval_earthsci.evals.msearth import tasks as msearth_tasks
from lmms_eval_earthsci.evals.msearth.fixtures import msearth_rows


def _spec_prompts():
    spec = open(shared_path("specs", "msearth.md")).read()
    return [ast.literal_eval(b.strip()) for b in re.findall(r"```python\n(.*?)\n```", spec, re.S)[:5]]


def _open_records():
    with gzip.open(shared_path("reference", "msearth", "msearth_open.jsonl.gz"), "rt") as f:
        return [json.loads(line) for line in f]


def test_prompts_are_the_spec_strings():
    mcq, oe, cap, oe_judge, cap_judge = _spec_prompts()
    assert (msearth_tasks.MCQ_PROMPT, msearth_tasks.OE_PROMPT, msearth_tasks.CAPTION_PROMPT, msearth_tasks.OE_JUDGE_PROMPT, msearth_tasks.CAPTION_JUDGE_PROMPT) == (mcq, oe, cap, oe_judge, cap_judge)


def test_open_ended_prompts_on_every_released_record():
    oe = _spec_prompts()[1]
    records = _open_records()
    assert len(records) == 1411
    for r in records:
        q = r["query"].replace("<image>", "")
        assert msearth_tasks.build_prompt(r, "open") == oe.replace("{question}", q)
        judge = msearth_tasks.oe_judge_prompt(r, "Tang dynasty")
        # the judge sees the raw query (with "<image>" and the raw caption) and the refined caption
        assert f"Question: {r['query']}\n" in judge and f"Image Caption: {r['caption']}\n" in judge
        assert f"Standard Answer: {r['response']}\n    Generated Answer: Tang dynasty\n" in judge


def test_released_breakdown_counts():
    records = _open_records()
    spheres = collections.Counter(msearth_tasks.sphere_of(r) for r in records)
    assert spheres == {"Geology": 306, "Atmospheric Sciences": 267, "Hydrology": 260, "Geography": 180, "Oceanography": 134, "Solid Earth Geophysics": 115, "Ecology and Biosciences": 103, "Polar Science": 43, "Other": 3}
    images = collections.Counter(msearth_tasks.image_type_of(r) for r in records)
    assert images == {"SINGLE": 679, "MULTI": 619, "CROSS": 113}
    # the same records with the dict columns as JSON strings (HF) or Python literals (repo file)
    r = records[0]
    for form in (json.dumps, repr):
        alt = {**r, "classification_result": form(r["classification_result"]), "vqa_type": form(r["vqa_type"])}
        assert (msearth_tasks.sphere_of(alt), msearth_tasks.image_type_of(alt)) == (msearth_tasks.sphere_of(r), msearth_tasks.image_type_of(r))


def test_mcq_prompt_with_and_without_caption():
    doc = msearth_rows("mcq")[1]  # "Caption:\n..." form
    q = doc["query"].replace("<image>", "")
    assert msearth_tasks.build_prompt(doc, "mcq") == msearth_tasks.MCQ_PROMPT.replace("{question}", q)
    nocap = msearth_tasks.build_prompt(doc, "mcq", with_caption=False)
    assert "Caption:" not in nocap and "Groundwater levels" not in nocap
    assert "Question:\nWhat drives the rise after 2010?\nOptions:\nA. Pumping stopped\n" in nocap
    assert msearth_tasks.option_lines(doc) == ["A. Pumping stopped", "B. Sea-level rise", "C. Drought", "D. Irrigation"]
    assert msearth_rows("mcq")[0]["query"].startswith("<image>Caption:Monthly")  # no newline after "Caption:" also occurs


def test_closed_model_prompt_variants():
    closed = msearth_tasks.build_prompt(msearth_rows("mcq")[0], "mcq", "closed")
    assert "```" not in closed and "\n            You are tasked with answering a multiple-choice question" in closed
    assert "structure below:\n\n            {\n" in closed
    assert '"answer": "Detailed and insightful caption' in msearth_tasks.CAPTION_PROMPT_CLOSED and '"caption"' not in msearth_tasks.CAPTION_PROMPT_CLOSED
    assert msearth_tasks.build_prompt(msearth_rows("caption")[0], "caption") == msearth_tasks.CAPTION_PROMPT  # the dataset query is ignored
    with pytest.raises(ValueError, match="open_source"):
        msearth_tasks.build_prompt(msearth_rows("mcq")[0], "mcq", "gpt")


GOLD_B = {"question_id": "X1", "query": "<image>Caption:c\nQuestion:\nq?\nOptions:\nA. Cold and dry air\nB. Warm and humid air\nC. Dust\nD. Smoke", "response": "B. Warm and humid air"}


@pytest.mark.parametrize(
    "response, strict, paper, paper_rule",
    [
        ('{"answer": "B", "Explanation": "x"}', True, True, "letter"),
        ('```json\n{"answer": "B. Warm and humid air",}\n```', True, True, "letter"),
        ('{"answer": "b"}', False, True, "letter"),  # official: lower-case letters never match
        ('{"answer": "Warm and humid air"}', True, True, "content"),  # exact content
        ('{"answer": "warm and humid air"}', False, True, "similarity"),  # case differs: fallback
        ('{"answer": "A brief period of warm humid air"}', False, False, "letter"),  # the "A " article quirk
        ('{"answer": "The answer is B"}', False, None, "similarity"),
        ('{"answer": "a warm and humid air mass"}', False, True, "similarity"),  # lower-case article, not option A
        ("B", True, True, "letter"),  # no JSON: the raw text
        ("The warm and humid air mass.", False, True, "similarity"),
        ('{"answer": 2}', False, False, "no-answer"),  # non-string answer: wrong, counted
        ('{"Explanation": "no answer key"}', False, False, "no-answer"),
        ("", False, False, "none"),
        ('{"answer": "B. $\\alpha$ rises"}', True, True, "letter"),  # invalid JSON escape: backslashes are deleted first
    ],
)
def test_mcq_strict_and_paper_verdicts(response, strict, paper, paper_rule):
    out = msearth_tasks.process_results_mcq(GOLD_B, [response])
    assert out["msearth_acc_strict"]["correct"] is strict
    assert out["msearth_acc"]["rule"] == paper_rule
    if paper is not None:
        assert out["msearth_acc"]["correct"] is paper
    assert out["msearth_acc"]["score"] in (0.0, 100.0)


def test_mcq_breakdowns_and_both_schemas():
    for variant in ("official", "reupload"):
        rows = msearth_rows("mcq", variant)
        out = msearth_tasks.process_results_mcq(rows[5], ['{"answer": "A"}'])  # "Energy Systems": a stray discipline
        assert out["msearth_sphere_other"] == 100.0 and out["msearth_sphere_geology"] is None
        assert out["msearth_image_single"] == 100.0 and out["msearth_category_discovery"] == 100.0
        out = msearth_tasks.process_results_mcq(rows[2], ['{"answer": "A"}'])
        assert out["msearth_image_cross"] == 0.0 and out["msearth_sphere_solid_earth_geophysics"] == 0.0


def test_bad_gold_names_record_and_field():
    with pytest.raises(RecordError, match=r"'X9'.*'response'"):
        msearth_tasks.process_results_mcq({**GOLD_B, "question_id": "X9", "response": "Warm air"}, ["B"])
    with pytest.raises(RecordError, match="classification_result"):
        msearth_tasks.sphere_of({"question_id": "X8", "classification_result": "{not json"})


@pytest.mark.parametrize(
    "response",
    ["{" * 10000, "x" * 1_000_000, '{"answer": "\\ud800"}', "\udcff\udcfe", '```json\n{"answer": [1, {"b": null}]}\n```', None, 42, '{"answer": {"nested": "B"}}', "\x00\x01B"],
)
def test_malformed_outputs_never_raise(response):
    out = msearth_tasks.process_results_mcq(GOLD_B, [response])
    assert out["msearth_acc"]["score"] in (0.0, 100.0) and out["msearth_acc_strict"]["score"] in (0.0, 100.0)


def test_batch_preparation_matches_one_at_a_time():
    rows = msearth_rows("mcq")
    answers = ['{"answer": "January"}', '{"answer": "pumping has stopped"}', "at 10-20 km", '{"answer": "C"}', "unit four", "urban areas"]
    alone = [msearth_tasks.process_results_mcq(d, [a])["msearth_acc"] for d, a in zip(rows, answers)]
    msearth_tasks.prepare_mcq(list(zip(rows, answers)))
    batched = [msearth_tasks.process_results_mcq(d, [a])["msearth_acc"] for d, a in zip(rows, answers)]
    assert [(a["correct"], a["rule"], a.get("option")) for a in alone] == [(b["correct"], b["rule"], b.get("option")) for b in batched]
    assert sum(a["rule"] == "similarity" for a in alone) == 5


def test_oe_and_caption_judge_parsers():
    assert msearth_tasks.parse_oe_verdict('```json\n{"is_correct": true}\n```') is True
    assert msearth_tasks.parse_oe_verdict('{"is_correct": "True"}') is True and msearth_tasks.parse_oe_verdict('{"is_correct": 1}') is True
    assert msearth_tasks.parse_oe_verdict('{"is_correct": false}') is False and msearth_tasks.parse_oe_verdict("{}") is False
    with pytest.raises(ValueError):
        msearth_tasks.parse_oe_verdict("The answer is correct.")
    assert msearth_tasks.parse_caption_score('{"score": 4}') == 4.0 and msearth_tasks.parse_caption_score('{"score": "3"}') == 3.0
    for bad in ('{"score": 7}', '{"score": "good"}', "Score: 4", "{}"):
        with pytest.raises(ValueError):
            msearth_tasks.parse_caption_score(bad)


def test_generated_answer_keys():
    assert msearth_tasks.CAPTION_JUDGE.text_of('{"caption": "A map."}') == "A map."
    assert msearth_tasks.CAPTION_JUDGE.text_of('{"answer": "A chart."}') == "A chart."  # closed-model key
    assert msearth_tasks.CAPTION_JUDGE.text_of("Just text") == "Just text"
    assert msearth_tasks.OE_JUDGE.text_of('```json\n{"answer": "Tang dynasty", "Explanation": "..."}\n```') == "Tang dynasty"


def test_oe_without_judge_keeps_text_metrics(monkeypatch):
    for k in ("EARTHSCI_JUDGE_BASE_URL", "EARTHSCI_JUDGE_MODEL", "OPENAI_API_URL", "MODEL_VERSION", "DEPLOYMENT_NAME"):
        monkeypatch.delenv(k, raising=False)
    doc = msearth_rows("open")[1]  # gold "Han and Tang dynasties"
    out = msearth_tasks.process_results_open(doc, ['{"answer": "Tang dynasty"}'])
    assert "score" not in out["msearth_oe_acc"] and "judge" not in out["msearth_oe_acc"] and out["msearth_oe_judge_failed"] is None
    assert out["msearth_oe_acc"]["id"] == "OE000202"  # the record id is logged even without a judge
    assert out["msearth_oe_rouge1"] == pytest.approx(100 * 2 * (1 / 2) * (1 / 4) / (1 / 2 + 1 / 4))  # "tang" of 2 vs 4 tokens
    assert out["msearth_oe_bertscore"] == {"reference": "Han and Tang dynasties", "candidate": "Tang dynasty"}
    empty = msearth_tasks.process_results_open(doc, ['{"answer": "  "}'])
    assert empty["msearth_oe_rouge1"] is None and empty["msearth_oe_bertscore"] is None  # skipped, as the authors do


def test_similarity_pick_logs_best_and_runner_up():
    out = msearth_tasks.process_results_mcq(GOLD_B, ['{"answer": "warm and humid air"}'])["msearth_acc"]
    assert out["rule"] == "similarity" and out["route"] == "simple"
    assert 0 <= out["runner_up_similarity"] < out["similarity"] <= 1  # how clear the pick was


def test_cot_prompt_is_the_mini_ablation_prompt():
    doc = msearth_rows("mcq")[0]
    prompt = msearth_tasks.build_prompt(doc, "mcq", "cot")
    assert prompt.startswith("You are tasked with answering a multiple-choice question about the given input image using Chain-of-Thought (CoT) reasoning.\n\nCaption:Monthly rainfall")
    assert "\nD. October\n\nBased on the image, provide a short reasoning process to derive the correct answer. Then, state the final answer.\n\n" in prompt
    assert prompt.endswith('```json\n{\n    "short reasoning": "short explanation",\n    "answer": "Correct option or short answer"\n}\n```')
    spec = open(shared_path("specs", "msearth.md")).read()
    printed = spec[spec.index("~~~text\n") + len("~~~text\n") : spec.index("\n~~~", spec.index("~~~text"))]
    assert msearth_tasks.MCQ_COT_PROMPT == printed.replace("{query}", "{question}")


def test_cot_votes_and_curves():
    doc = msearth_rows("mcq")[0]  # gold C. July
    cands = ['{"short reasoning": "wet", "answer": "C. July"}', '{"answer": "c"}', '{"answer": "July"}', '{"answer": "A. January"}', "no json, no answer", '{"reason": "x"}']
    assert [msearth_tasks.vote_of(c) for c in cands] == ["C", "C", "July", "A", "no json, no answer", None]
    assert msearth_tasks.vote_correct(doc, "C") and msearth_tasks.vote_correct(doc, "July") and not msearth_tasks.vote_correct(doc, "A")
    assert msearth_tasks.vote_of('{"answer": "a warm front"}') == "a warm front"  # the article, not option A
    out = msearth_tasks.process_results_mcq_cot(doc, [cands[:4] + ['{"answer": "A"}', '{"answer": "B"}', '{"answer": "B"}', '{"answer": "D"}']])
    assert out["msearth_acc"]["score"] == 100.0 and out["msearth_acc"]["votes"][:4] == ["C", "C", "July", "A"]
    # T = 8, in subset order (1, 0, 5, 2, 7, 6, 4, 3): C, C, B, July, D, B, A, A: three answers tie at 2, the
    # seeded tie-break takes position 2 of 3 (first-occurrence order): A, wrong although C tied
    nums = [1, 0, 5, 2, 7, 6, 4, 3]
    assert out["msearth_maj@8"]["tied"] == ["C", "B", "A"] and out["msearth_maj@8"]["pick"] == "A" and out["msearth_maj@8"]["score"] == 0.0
    assert out["msearth_maj@4"]["n"] == 4 and out["msearth_pass@8"]["score"] == 100.0 and out["msearth_maj@16"] is None
    assert [out["msearth_acc"]["votes"][i] for i in nums[:2]] == ["C", "C"] and out["msearth_maj@2"]["pick"] == "C"
    assert out["msearth_pass_unbiased@1"]["score"] == pytest.approx(100 * 3 / 8)
    # one response (no --repeats): the curves at N = 1 only, msearth_acc as the plain task's
    one = msearth_tasks.process_results_mcq_cot(doc, ['{"answer": "B. April"}'])
    assert one["msearth_acc"]["score"] == 0.0 and one["msearth_maj@1"]["pick"] == "B" and one["msearth_maj@2"] is None


def test_the_batch_step_prepares_the_first_candidate_of_each_doc():
    """Under --repeats the hook hands every candidate; process_results scores the first: nothing else is kept."""
    docs = msearth_rows("mcq")[:2]
    pairs = [(docs[0], '{"answer": "July"}'), (docs[0], '{"answer": "A"}'), (docs[1], '{"answer": "Pumping"}'), (docs[1], '{"answer": "B"}')]
    before = set(msearth_tasks._prepared())
    msearth_tasks.prepare_mcq(pairs)
    added = set(msearth_tasks._prepared()) - before
    assert {r for _, r in added} == {'{"answer": "July"}', '{"answer": "Pumping"}'}
    for doc, response in (pairs[0], pairs[2]):
        msearth_tasks.process_results_mcq(doc, [response])
    assert set(msearth_tasks._prepared()) == before
