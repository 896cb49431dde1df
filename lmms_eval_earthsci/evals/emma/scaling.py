"""EMMA's test-time scaling as its authors ran it (paper §4.3, Tables 3 and 7; the development repository's
scripts, step by step in ``shared/specs/emma_test_time_scaling.md``): T candidates per question sampled
with the CoT prompt, N of them chosen (:func:`core.scoring.scaling.subset`), then

- ``emma_maj@N``: their majority vote (no normalisation, empty answers vote, seeded tie-break);
- ``emma_pass@N``: any of the N chosen is correct (the authors' subset; their own Pass@N numbers cannot be
  rebuilt from their files, spec §7), and ``emma_pass_unbiased@N``, the unbiased estimator over all T (ours);
- ``emma_bon@N``: Best-of-N, the pick of a generative reward model given their prompt (below), one request
  per question and N (``EARTHSCI_RM_*``, each falling back to the judge's ``EARTHSCI_JUDGE_*``).

Every candidate is scored with the development repository's extraction and equality test
(:func:`extract_answer_dev`, ``is_equal(..., words=False)``), which scored the released test-time-scaling
files; ``emma_acc`` keeps the current official code (README: they differ on a response such as "B. ..." or
"\\boxed{Two}").
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.core.scoring.extraction import as_text, extract_after_phrase, extract_boxed_answer

# configs/scoring.yaml's `Scoring_prompt` (a YAML literal block: lines 2-8 start with three spaces), sent as it is
SCORING_PROMPT = (
    "You are a fair assessment expert. You were just given a question and some candidate answers. Your task is to score each answer according to the following requirements:\n"
    "   a. You need to evaluate the answers according to the questions and the images provided.\n"
    "   b. You should rate each answer on 5 metrics. For the first 4 metrics, assign a score between 0 and 5, with 5 being the highest:\n"
    '   1. For accuracy, you will score whether the answer is correct. Provide your score and reasoning in the format "\\accuracyscore{response_number}{reason}{score}", '
    "where response_number corresponds to the number of the original question which is in Response{}.\n"
    "   2. For coherence, you will evaluate the answer's structure to determine if the reasoning is logically connected between steps. Provide your score and reasoning in the format "
    '"\\coherencescore{response_number}{reason}{score}", where response_number corresponds to the number of the original question which is in Response{}.\n'
    "   3. For factuality, you will only evaluate whether the answer contains factual errors, especially those that do not match the image. Provide your score and reasoning in the format "
    '"\\factualityscore{response_number}{reason}{score}", where response_number corresponds to the number of the original question which is in Response{}.\n'
    "   4. For comprehensiveness, you will determine if the answer covers multiple aspects of the question. Comprehensiveness should consider whether the solution covers all necessary steps, "
    "uses correct methods, and reaches the correct conclusion. Provide your score and reasoning in the format "
    '"\\comprehensivenessscore{response_number}{reason}{score}", where response_number corresponds to the number of the original question which is in Response{}.\n'
    '   5. Finally, you will provide an overall score between 0 and 5, with 5 being the highest. Provide your score and reasoning in the format "\\finalscore{response_number}{reason}{score}", '
    "where response_number corresponds to the number of the original question which is in Response{}. My instructions on formatting MUST be strictly and literally observed. "
    "There must only be EXACTLY five scores for each response, and it is PARAMOUNT that you provide them using the format I gave you."
)

# the authors' GPT-4o reward model: temperature 0, 2048 tokens (run_close_model_scoring.sh)
RM_DEFAULTS = MappingProxyType({"temperature": 0.0, "max_tokens": 2048})


# ---------------------------------------------------------------------------- one candidate


def extract_answer_dev(response: Any) -> str | None:
    """The development repository's extraction (spec §3): None for a missing or empty response; a bare
    letter (``B``, ``b``, ``B: ...``), a bare number, the last ``\\boxed{}`` (its last ``\\text{}``), the
    text after an answer phrase (lower-cased), else the whole stripped response."""
    if response is None or response == "":
        return None
    r = as_text(response).strip()
    for ch in "ABCDEFGH":
        if r.upper() == ch or r.startswith(ch + ":"):
            return ch
    try:
        float(r)
        return r
    except (ValueError, OverflowError):
        pass
    if "boxed{" in r:
        boxed = extract_boxed_answer(r)
        if boxed.rule != "none":
            return str(boxed.value)
    phrase = extract_after_phrase(r, ["final answer is", "correct answer is", "answer should be", "answer is"])
    if phrase.rule != "none":
        return str(phrase.value)
    return r
