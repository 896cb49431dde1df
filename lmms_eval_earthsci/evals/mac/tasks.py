"""The MAC-2025 tasks: requests exactly as the official runner builds them (spec §3.1, Appendix A.1),
rows and covers from the dataset repo, per-doc records for :mod:`.scoring`.

Data (``mhjiang0408/MAC_Bench``, CC-BY-NC-SA-4.0: nothing of it is in this package): one CSV per
variant; images are files of the repo named by relative path (``MAC_Bench/ACS/Cover/<Journal>/<id>.png``),
served by :mod:`lmms_eval_earthsci.core.data.repo_files` (mirror or Hub, fetched once per machine). In
Text2Image rows ``cover_image`` holds the story *text* and ``option_A..D`` the cover paths; it is never
opened as an image.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType

from lmms_eval_earthsci.core.data import RecordError, check_image, record_check, require_columns
from lmms_eval_earthsci.core.data.repo_files import DecodedCache, fetch_columns, record_image, record_path, repo_files
from lmms_eval_earthsci.core.prompts.messages import Messages, fill_fields, note_chat, route_of
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.scoring.metrics import breakdown_key, breakdown_scores, percent, slug, with_paired_score
from lmms_eval_earthsci.core.settings import read_setting
from lmms_eval_earthsci.evals.mac import scoring, textfree
from lmms_eval_earthsci.evals.mac.benchmark import BREAKDOWN_PREFIX, CSV, DATASET, DEFAULT_IMAGE_MAX_SIDE, DISTRACTOR_MODELS, IMAGE_MAX_SIDE_ENV, LENIENT, METRIC, PUBLISHERS

logger = logging.getLogger("lmms_eval_earthsci")

# The spec knows the upload commit only as `be000db` (short); the Hub pins by full sha and the repo
# could not be listed here, so the tasks read `main` and record the commit they got.
REVISION: str | None = None
UPLOAD_COMMIT_SHORT = "be000db"
LETTERS = scoring.LETTERS
OPTION_COLUMNS = tuple(f"option_{x}" for x in LETTERS)
REQUIRED = ("journal", "id", "question", "cover_image", "answer", *OPTION_COLUMNS)
PATH_PREFIXES = ("MAC_Bench/",)
# `covers: text_free` (the mac2025_*_textfree tasks): every cover a request shows is its painted copy
COVERS_ORIGINAL, COVERS_TEXT_FREE = "original", "text_free"
# the metrics computed from the per-doc record (``mac_acc``'s value is the record itself)
RECORD_METRICS = (METRIC, "mac_ece", "mac_nll", "mac_rms", "mac_unparsable")

# ---------------------------------------------------------------------------- prompts (Appendix A.1, exact)

I2T_SYSTEM = (
    '# Requirement\n'
    ' You are an excellent scientific image reader. You need to analyze the provided image and choose the most appropriate option based on your understanding. '
    'ONLY based on the image and the options provided above, predict the probability that you would choose each option and answer AS SIMPLE AS POSSIBLE. Make sure the probabilities add up to 1.\n'
    ' # Response Format\n'
    ' ```json\n'
    ' { "A": probability of choosing the option A, "B": probability of choosing the option B, "C": probability of choosing the option C, "D": probability of choosing the option D }\n'
    '```'
)
I2T_USER = "I want to ask you the following question: {question} And you have the following options: {options}. You need to predict the probability that you would choose each option based on the image."
T2I_SYSTEM = (
    '# Requirement\n'
    ' You are an excellent scientific image reader. You need to analyze the provided cover story and choose the most appropriate option images based on your understanding. '
    'ONLY based on the cover story and the options provided above, predict the probability that you would choose each option and answer AS SIMPLE AS POSSIBLE. '
    'Make sure the probabilities add up to 1.\n'
    ' # Response Format\n'
    ' ```json\n'
    ' { "A": probability of choosing the option A, "B": probability of choosing the option B, "C": probability of choosing the option C, "D": probability of choosing the option D }\n'
    '```'
)
T2I_USER = (
    "I want to ask you the following question: {question} And you have the cover story {story}. You need to predict the probability that you would choose each option based on the cover story. "
    "The following images provided to you are, in order, A, B, C, and D."
)

def _task_kwargs(kwargs) -> dict:
    kw = dict(kwargs or {})
    kw.setdefault("direction", "i2t")
    kw.setdefault("domain", "info")
    if (kw["direction"], kw["domain"]) not in CSV:
        raise ValueError(f"MAC direction must be i2t or t2i and domain info or option, got {kw['direction']!r}/{kw['domain']!r}")
    env = read_setting(IMAGE_MAX_SIDE_ENV)
    side = env if env else kw.get("image_max_side", DEFAULT_IMAGE_MAX_SIDE)
    side = side.lower() if isinstance(side, str) else side
    kw["image_max_side"] = None if side in (None, "", "none", "null", 0, "0") else int(side)
    # a snapshot built by `lmms-eval-earthsci mac build`: its folder (the task folder's snapshot.ROOT)
    root = kw.get("snapshot_root")
    kw["snapshot_root"] = os.path.abspath(root) if isinstance(root, str) and root else None
    kw.setdefault("covers", COVERS_ORIGINAL)
    if kw["covers"] not in (COVERS_ORIGINAL, COVERS_TEXT_FREE):
        raise ValueError(f"MAC covers must be {COVERS_ORIGINAL} or {COVERS_TEXT_FREE}, got {kw['covers']!r}")
    return kw


def _rid(doc) -> str:
    return f"{doc.get('journal', '?')}/{doc.get('id', '?')}"


def _text(doc, column: str) -> str:
    value = doc.get(column)
    if not isinstance(value, str) or not value.strip():
        raise RecordError(DATASET, _rid(doc), column, f"expected non-empty text, got {value!r:.60}")
    return value


def options_text(doc) -> str:
    """I2T options as the runner joins them: ``A: <story A>\\nB: ...``."""
    return "\n".join(f"{x}: {_text(doc, f'option_{x}')}" for x in LETTERS)


def user_text(doc, kw) -> str:
    question = str(doc.get("question") or "")
    if kw["direction"] == "i2t":
        return fill_fields(I2T_USER, {"question": question, "options": options_text(doc)})
    return fill_fields(T2I_USER, {"question": question, "story": _text(doc, "cover_image")})


def system_text(kw) -> str:
    return I2T_SYSTEM if kw["direction"] == "i2t" else T2I_SYSTEM


def image_columns(kw) -> tuple[str, ...]:
    return ("cover_image",) if kw["direction"] == "i2t" else OPTION_COLUMNS


# ---------------------------------------------------------------------------- images


def _store(kw=None):
    """The MAC repo's files (mirror or Hub), or a built snapshot's folder."""
    root = (kw or {}).get("snapshot_root")
    return repo_files(root, strip_prefixes=PATH_PREFIXES) if root else repo_files(DATASET, REVISION, strip_prefixes=PATH_PREFIXES)


def _dataset(kw=None) -> str:
    return (kw or {}).get("snapshot_root") or DATASET


def _decoded() -> DecodedCache:
    """The covers this process decoded lately (a request shows four; rows share covers), held by the runtime."""
    return current().resource(("decoded_images", "mac"), lambda: DecodedCache(maxsize=16))


def _shown(doc, column: str, kw=None) -> dict:
    """``doc`` with ``column`` naming the cover a request shows: as the row names it, or (text-free tasks)
    its painted copy, which must be in the repo as given (never found by basename: that could be the
    original); missing, one error naming the row, the column and the step that paints it."""
    if (kw or {}).get("covers") != COVERS_TEXT_FREE:
        return doc
    rel = doc.get(column)
    if not isinstance(rel, str) or not rel.strip():
        raise RecordError(DATASET, _rid(doc), column, f"expected a cover path in the dataset repo, got {rel!r:.60}")
    try:
        painted = textfree.text_free_path(rel)
    except ValueError as exc:
        raise RecordError(DATASET, _rid(doc), column, str(exc)) from exc
    store = _store(kw)
    if painted not in store.listing().files:
        raise RecordError(DATASET, _rid(doc), column, textfree.missing_message(painted, store.root))
    return {**doc, column: painted}


def image_path(doc, column: str, kw=None) -> str:
    return record_path(_store(kw), _shown(doc, column, kw), column, dataset=_dataset(kw), record_id=_rid(doc), what="image")


def images(doc, kw) -> list:
    return [
        record_image(_store(kw), _decoded(), _shown(doc, column, kw), column, dataset=_dataset(kw), record_id=_rid(doc), what="image", max_side=kw["image_max_side"])
        for column in image_columns(kw)
    ]


def direction_of(doc) -> str:
    """``t2i`` when the options are image paths, else ``i2t`` (the scoring side has only the doc)."""
    return "t2i" if _looks_like_path(doc.get("option_A")) else "i2t"


def publisher_of(doc) -> str:
    """The publisher from the first path component after ``MAC_Bench/`` (spec §2.3): of ``cover_image``
    (I2T) or ``option_A`` (T2I); ``other`` when it is none of ACS, Cell, Nature, Science."""
    rel = str(doc.get("cover_image" if direction_of(doc) == "i2t" else "option_A") or "")
    head = _store().candidates(rel)[0].split("/", 1)[0] if rel else ""
    for p in PUBLISHERS:
        if head.lower() == p.lower():
            return p
    return "other"


def _looks_like_path(value) -> bool:
    return isinstance(value, str) and value.lower().endswith((".png", ".jpg", ".jpeg", ".webp"))


def picked_embedding(doc, pred) -> str | None:
    """``option_<pred>_embedding_name`` of the option picked (``groundtruth`` for the right one); None
    when nothing was picked or the column is empty or absent."""
    if not isinstance(pred, str) or pred not in LETTERS:
        return None
    name = doc.get(f"option_{pred}_embedding_name")
    return str(name).strip() if name is not None and str(name).strip() else None


_DISTRACTOR_SLUGS = MappingProxyType({slug(m): m for m in DISTRACTOR_MODELS})
_AVE_RE = re.compile(r"ave_\d+")


def distractor_model(name: str | None) -> str:
    """The slice of :data:`DISTRACTOR_MODELS` an embedding name falls in: itself (by slug), ``ave`` for
    any ``ave_<k>``, else ``other`` (an unknown name, or none)."""
    key = slug(name) if name else ""
    if key in _DISTRACTOR_SLUGS and key != "other":
        return _DISTRACTOR_SLUGS[key]
    return "ave" if _AVE_RE.fullmatch(key) else "other"


def distractor_scores(model: str | None) -> dict:
    """``mac_distractor_<m>``: 100 for the model whose distractor was picked, 0 for the others; every one
    None for a doc with no distractor pick (right, or no answer), so that their mean is each model's share
    of the wrong picks (the paper's Fig. 7 counts the wrong answers by ``option_<pred>_embedding_name``)."""
    return {breakdown_key(BREAKDOWN_PREFIX, "distractor", m): (None if model is None else 100.0 * (m == model)) for m in DISTRACTOR_MODELS}


# ---------------------------------------------------------------------------- lmms-eval hooks


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    """The official request: a system message, then one user turn with the text first and the image(s)
    after it (T2I: the four covers in A-D order, unlabelled, as the prompt's last sentence says)."""
    kw = _task_kwargs(lmms_eval_specific_kwargs)
    note_chat(doc)
    content = [{"type": "text", "text": user_text(doc, kw)}] + [{"type": "image", "url": img} for img in images(doc, kw)]
    return Messages([{"role": "system", "content": [{"type": "text", "text": system_text(kw)}]}, {"role": "user", "content": content}])


def doc_to_visual(doc, lmms_eval_specific_kwargs=None):
    """Simple backends: the cover (I2T) or the four covers in A-D order (T2I)."""
    return images(doc, _task_kwargs(lmms_eval_specific_kwargs))


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """Simple backends have no system message: it is prepended to the user text with a newline (our
    documented variant, spec §6.1)."""
    kw = _task_kwargs(lmms_eval_specific_kwargs)
    return system_text(kw) + "\n" + user_text(doc, kw)


def doc_to_target(doc, model_specific_target_kwargs=None):
    return str(doc.get("answer", ""))


def process_docs(dataset):
    """``id`` as a string (the CSV reader may type it), and each row's position (``_row``: the stable
    order RMS ties are broken in)."""
    if hasattr(dataset, "add_column"):
        import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s): the tasks' import stays cheap

        if "id" in dataset.column_names and dataset.features["id"] != datasets.Value("string"):
            # columns added in memory: a cast_column would write the whole table again into the datasets cache
            ids = [None if i is None else str(i) for i in dataset["id"]]
            dataset = dataset.remove_columns("id").add_column("id", ids, feature=datasets.Value("string"))
        return dataset.add_column("_row", list(range(len(dataset))))
    return [{**d, "id": str(d.get("id")), "_row": i} for i, d in enumerate(dataset)]


# ---------------------------------------------------------------------------- records


def gold_letter(doc) -> str:
    gold = str(doc.get("answer") or "").strip().upper()
    if len(gold) != 1 or gold not in LETTERS:
        raise RecordError(DATASET, _rid(doc), "answer", f"expected one letter A-D, got {doc.get('answer')!r}")
    return gold


def check_columns(dataset) -> None:
    require_columns(dataset, REQUIRED, dataset=DATASET, where="the CSV")


def prepare(dataset, kwargs) -> None:
    """Before the rows are checked: the columns, and every image the split names fetched at once."""
    kw = _task_kwargs(kwargs)
    check_columns(dataset)
    store = _store(kw)
    if kw["covers"] == COVERS_TEXT_FREE:  # the painted copies there are; a missing one is its row's error (check_record)
        table = hasattr(dataset, "column_names")
        paths = [p for c in image_columns(kw) for p in (dataset[c] if table else [r.get(c) for r in dataset])]
        store.fetch(p for p in map(_text_free_or_none, paths) if p in store.listing().files)
        return
    fetch_columns(store, dataset, image_columns(kw))


def _text_free_or_none(path) -> str | None:
    try:
        return textfree.text_free_path(path) if isinstance(path, str) else None
    except ValueError:
        return None


def describe(kwargs=None) -> dict:
    return _store(_task_kwargs(kwargs)).summary()


def check_record(doc, kwargs=None) -> None:
    """What the request and the score read: the gold letter; I2T: four non-empty option texts and the
    cover (found, header readable); T2I: the story text and the four covers."""
    kw = _task_kwargs(kwargs)
    gold_letter(doc)
    user_text(doc, kw)
    for column in image_columns(kw):
        check_image(image_path(doc, column, kw), dataset=_dataset(kw), record_id=_rid(doc), field=column)


@record_check(check_record, prepare=prepare, describe=describe)
def process_results(doc, results):
    """``mac_acc`` (the official parser: an unparsed answer is wrong and counted, never dropped), the
    calibration metrics' inputs, ``mac_unparsable``, per-publisher accuracy and ``mac_acc_lenient``."""
    response = results[0] if results else None
    got = scoring.parse_probabilities(response)
    gold = gold_letter(doc)
    correct = got.pred == gold
    direction = direction_of(doc)
    publisher = publisher_of(doc)
    picked = picked_embedding(doc, got.pred)
    # a distractor pick is a wrong answer the model made: an unparsed one, or an all-zero one (A by our tie
    # rule) picked nothing; a letter beyond D names no option
    chose = got.parsed and not got.all_zero and got.pred in LETTERS
    distractor = distractor_model(picked) if chose and not correct else None
    rec = {
        "journal": doc.get("journal"),
        "id": str(doc.get("id")),
        "publisher": publisher,
        "gold": gold,
        "pred": got.pred,
        "parsed": got.parsed,
        "path": got.path,
        "all_zero": got.all_zero,
        "probs": scoring.normalised(got.probs) if got.probs else None,
        "correct": correct,
        "row": int(doc.get("_row") or 0),
        "route": route_of(doc),
        "picked_embedding": picked if chose else None,
        "distractor": distractor,
    }
    if got.problem:
        rec["problem"] = got.problem
    if got.parsed:
        lenient, rule = got.pred, "official"
    else:
        opts = [str(doc.get(f"option_{x}") or "") for x in LETTERS] if direction == "i2t" else None
        lenient, rule = scoring.lenient_letter(response, opts)
    out = {name: rec for name in RECORD_METRICS}
    # mac_acc's own copy carries the doc's score (lmms-eval's CLT standard error of mac_acc reads it); the
    # calibration metrics' record has none, so no accuracy's error is reported as theirs
    out[METRIC] = {**rec, "score": percent(correct)}
    out[LENIENT] = {"score": percent(lenient == gold), "pred": lenient, "rule": rule}
    known = {"publisher": PUBLISHERS}
    scores, _ = breakdown_scores(BREAKDOWN_PREFIX, percent(correct), {"publisher": [publisher]}, known)
    out.update(scores)
    out.update(distractor_scores(distractor))
    return with_paired_score(out, percent(correct))


# ---------------------------------------------------------------------------- aggregations


def mac_acc(items):
    items = list(items)
    recs = [i for i in items if isinstance(i, Mapping)]
    paths = Counter(r.get("path") for r in recs)
    logger.info(
        "lmms_eval_earthsci: MAC: %d docs; parsed by %s; unparsed %d (counted wrong); all-zero answers %d (argmax A by our tie rule)",
        len(recs), dict(paths), sum(1 for r in recs if not r.get("parsed")), sum(1 for r in recs if r.get("all_zero")),
    )
    return scoring.accuracy(items)


mac_ece = scoring.ece
mac_nll = scoring.nll
mac_rms = scoring.rms
mac_unparsable = scoring.unparsable
