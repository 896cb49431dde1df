"""DAD (Description and Deduction, spec §4): the model under test describes the cover(s) without
answering (stage 1, the lmms-eval generation); a text-only reasoning model reads that description and
answers with the same probability JSON (stage 2, through the judge engine: concurrent per-rank pass,
cache, retries, circuit breaker). Stage 2 has its own endpoint variables, ``EARTHSCI_DAD_BASE_URL``,
``EARTHSCI_DAD_MODEL``, ``EARTHSCI_DAD_API_KEY``, ``EARTHSCI_DAD_MAX_TOKENS``,
``EARTHSCI_DAD_REASONING_EFFORT`` (each falls back to the judge's ``EARTHSCI_JUDGE_*``); only the answer
``content`` is parsed, a reasoning model's ``reasoning_content`` is kept apart and logged.

Prompts: the source literals of ``experiment/method/DAD.py`` (spec Appendix A.2), exact, with their
f-string fields as placeholders. Stage 1 Image2Text joins the question and the options with no
separator (``{question+options}``), as the original does.
"""

from __future__ import annotations

from lmms_eval_earthsci.core.data import record_check
from lmms_eval_earthsci.core.judge.task_pass import UNAVAILABLE, JudgeSpec, judged, outcome_for
from lmms_eval_earthsci.core.prompts.messages import fill_fields, note_chat
from lmms_eval_earthsci.core.scoring.metrics import breakdown_keys
from lmms_eval_earthsci.evals.mac import scoring
from lmms_eval_earthsci.evals.mac import tasks as mac_tasks
from lmms_eval_earthsci.evals.mac.benchmark import BREAKDOWNS

DAD_I2T_SYSTEM = (
    'I will provide you with a scientific journal cover image. Please explain in detail the visual elements of the image. '
    'Faithfully describe the information in the image without making any speculation or judgment. Your answer should begin with “The image shows”. Answer the more the better.'
)
DAD_I2T_USER = (
    "I'm blind. Here is the image. Please think step-by-step and describe the image in detail and present your answer in the form of a Pseudo-CoT. "
    "After you describe the image, please think the question step by step but do not give your final answer: {question+options}"
)
DAD_T2I_SYSTEM = (
    'You are an excellent scientific image reader. I will provide you with 4 scientific journal cover images in the order of A, B, C, and D. '
    'Please explain in detail the visual elements of each image and analyze which image best describes the story. Faithfully describe the information in the image without making any judgment. '
    'Your answer should begin with “The image A shows”, “The image B shows”, “The image C shows”, and “The image D shows”. The Answer the more the better.'
)
DAD_T2I_USER = (
    "I'm blind. Here are the images. Please think step-by-step and describe the images in detail and present your answer in the form of a Pseudo-CoT. "
    "After you describe the images, please think the question step by step but do not give your final answer: {question}. The story is {story}. "
    "The following images provided to you are, in order, A, B, C, and D. DO NOT GIVE YOUR FINAL ANSWER."
)
STAGE2_I2T_SYSTEM = (
    'Following the above image description, think critically step by step and predict the probability that you would choose each option. Answer AS SIMPLE AS POSSIBLE. '
    'Make sure the probabilities add up to 1.\n'
    ' # Response Format\n'
    ' ```json\n'
    ' { "A": probability of choosing the option A, "B": probability of choosing the option B, "C": probability of choosing the option C, "D": probability of choosing the option D }\n'
    '```'
)
STAGE2_I2T_USER = (
    'The image description is: {description}. The answer in image description may be wrong. And you have the following options: {options}. '
    'My question is: Which option best describes the cover image? Please predict the probability that you would choose each option.'
)
STAGE2_T2I_SYSTEM = (
    'Following the image descriptions, think critically step by step and predict the probability that you would choose each option. Answer AS SIMPLE AS POSSIBLE. '
    'Make sure the probabilities add up to 1.\n'
    ' # Response Format\n'
    ' ```json\n'
    ' { "A": probability of choosing the option A, "B": probability of choosing the option B, "C": probability of choosing the option C, "D": probability of choosing the option D }\n'
    '```'
)
STAGE2_T2I_USER = (
    'The options are the images. The image descriptions are: {descriptions}. The answer in image descriptions may be wrong. My question is: Which image best describes the cover story? '
    'The story is: {story}. Please predict the probability that you would choose each option.'
)

FAILED = "mac_dad_failed"
def stage1_text(doc, kw) -> str:
    question = str(doc.get("question") or "")
    if kw["direction"] == "i2t":
        return fill_fields(DAD_I2T_USER, {"question+options": question + mac_tasks.options_text(doc)})
    return fill_fields(DAD_T2I_USER, {"question": question, "story": mac_tasks._text(doc, "cover_image")})


def stage1_system(kw) -> str:
    return DAD_I2T_SYSTEM if kw["direction"] == "i2t" else DAD_T2I_SYSTEM


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    """Stage 1: the DAD system prompt, then the user text and the cover (I2T) or the four covers in A-D
    order (T2I), as the baseline request lays them out."""
    kw = mac_tasks._task_kwargs(lmms_eval_specific_kwargs)
    note_chat(doc)
    content = [{"type": "text", "text": stage1_text(doc, kw)}] + [{"type": "image", "url": img} for img in mac_tasks.images(doc, kw)]
    return [{"role": "system", "content": [{"type": "text", "text": stage1_system(kw)}]}, {"role": "user", "content": content}]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kw = mac_tasks._task_kwargs(lmms_eval_specific_kwargs)
    return stage1_system(kw) + "\n" + stage1_text(doc, kw)


def stage2_messages(doc, description: str) -> list[dict]:
    """Stage 2: the description (and the options, or the story) to the text-only reasoner."""
    if mac_tasks.direction_of(doc) == "t2i":
        user = fill_fields(STAGE2_T2I_USER, {"descriptions": description, "story": mac_tasks._text(doc, "cover_image")})
        return [{"role": "system", "content": STAGE2_T2I_SYSTEM}, {"role": "user", "content": user}]
    user = fill_fields(STAGE2_I2T_USER, {"description": description, "options": mac_tasks.options_text(doc)})
    return [{"role": "system", "content": STAGE2_I2T_SYSTEM}, {"role": "user", "content": user}]


REASONER = JudgeSpec(
    name="mac_dad",
    build=lambda doc, response, images: stage2_messages(doc, response),
    parse=scoring.parse_probabilities,  # never raises: an unparsed answer is wrong, not a stage-2 failure
    env_prefix="EARTHSCI_DAD",
)


@record_check(mac_tasks.check_record, prepare=mac_tasks.prepare, describe=mac_tasks.describe)
@judged(REASONER)
def process_results(doc, results):
    """The baseline metrics on stage 2's answer. A stage-2 request that failed (after retries, or with
    the breaker open) is wrong and counted in ``mac_dad_failed``; with no reasoner configured every
    metric is unavailable (None)."""
    description = results[0] if results else ""
    outcome = outcome_for(REASONER, doc, description if isinstance(description, str) else str(description))
    if outcome.status == UNAVAILABLE:
        names = (*mac_tasks.RECORD_METRICS, mac_tasks.LENIENT, *breakdown_keys(mac_tasks.BREAKDOWN_PREFIX, BREAKDOWNS), FAILED)
        return {name: None for name in names}
    out = mac_tasks.process_results(doc, [outcome.reply if outcome.ok else None])
    for rec in {id(out[n]): out[n] for n in mac_tasks.RECORD_METRICS}.values():  # mac_acc's copy and the shared record
        if not outcome.ok:
            rec["path"] = "stage-2 failed"
        rec["stage2"] = outcome.log()
    out[FAILED] = outcome.failed_item()
    return out

