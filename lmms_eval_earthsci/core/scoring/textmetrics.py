"""Text-overlap metrics computed as Hugging Face ``evaluate`` computes them, offline.

``evaluate.load("bleu" | "rouge" | "meteor" | "bertscore")`` fetches metric scripts from the Hub and
NLTK data from the internet. These functions call the same libraries with the same settings, per
sample (MSEarth averages per-sample scores):

- BLEU: the ``evaluate`` "bleu" computation (TensorFlow-NMT ``compute_bleu``: 13a tokenizer, max order
  4, no smoothing, brevity penalty ``exp(1 - r/c)``), with sacrebleu's 13a tokenizer.
- ROUGE-1/2/L/Lsum: ``rouge_score`` F-measure, no stemmer, its default tokenizer (``evaluate``'s defaults).
- METEOR: ``nltk.translate.meteor_score.single_meteor_score(word_tokenize(ref), word_tokenize(hyp),
  alpha=0.9, beta=3, gamma=0.5)`` with WordNet 3.0. WordNet comes from ``$EARTHSCI_WORDNET`` (a WordNet
  3.0 ``dict`` folder), NLTK's data path (``corpora/wordnet``), or Debian/Ubuntu's ``wordnet-base``
  package (``/usr/share/wordnet``, installed from the distribution's package mirror). Tokenisation uses
  NLTK's ``punkt_tab`` when present; without it, sentences are not split first (one warning; only
  multi-sentence texts can differ).
- BERTScore: ``bert_score`` with ``roberta-large`` layer 17, no idf, no baseline rescaling (what
  ``evaluate``'s ``lang="en"`` selects). ``$EARTHSCI_BERTSCORE_MODEL`` names a local copy (or another
  model, with ``$EARTHSCI_BERTSCORE_LAYERS``).

A metric whose resources are missing is reported unavailable (``None``) with one warning naming what is
missing; the others still compute. :func:`available` says which can run.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import shutil
import tempfile
import threading
import warnings
from collections import Counter
from collections.abc import Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from lmms_eval_earthsci.core.data import hub
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.settings import cache_dir, read_setting

if TYPE_CHECKING:
    from bert_score import BERTScorer
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from rouge_score.rouge_scorer import RougeScorer
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

logger = logging.getLogger("lmms_eval_earthsci")

WORDNET_ENV = "EARTHSCI_WORDNET"
BERTSCORE_MODEL_ENV = "EARTHSCI_BERTSCORE_MODEL"
BERTSCORE_LAYERS_ENV = "EARTHSCI_BERTSCORE_LAYERS"
DEBIAN_WORDNET = "/usr/share/wordnet"

_lock = threading.Lock()


def _warn_once(key: str, msg: str) -> None:
    """Said once per run (the runtime remembers)."""
    if current().first_time(f"textmetrics:{key}"):
        logger.warning("lmms_eval_earthsci: %s", msg)


# --------------------------------------------------------------------------- BLEU


@functools.lru_cache(maxsize=1)
def _tokenizer_13a() -> Tokenizer13a:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a  # noqa: PLC0415 - sacrebleu (~60 ms), only when BLEU is computed

    return Tokenizer13a()


def _ngram_counts(tokens: Sequence[str], max_order: int) -> Counter:
    counts: Counter = Counter()
    for n in range(1, max_order + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i : i + n])] += 1
    return counts


def bleu(reference: str, candidate: str, max_order: int = 4, smooth: bool = False) -> float:
    """Sentence BLEU as ``evaluate``'s "bleu" metric gives it for one pair (0..1). Raises
    ZeroDivisionError for an empty candidate, like ``evaluate`` (callers treat that as 0)."""
    tok = _tokenizer_13a()
    ref = tok(reference).split()
    hyp = tok(candidate).split()
    overlap = _ngram_counts(hyp, max_order) & _ngram_counts(ref, max_order)
    matches = [0] * max_order
    for ngram, c in overlap.items():
        matches[len(ngram) - 1] += c
    possible = [max(0, len(hyp) - n + 1) for n in range(1, max_order + 1)]
    if smooth:
        precisions = [(m + 1.0) / (p + 1.0) for m, p in zip(matches, possible)]
    else:
        precisions = [m / p if p > 0 else 0.0 for m, p in zip(matches, possible)]
    geo = math.exp(sum(math.log(p) for p in precisions) / max_order) if min(precisions) > 0 else 0.0
    ratio = len(hyp) / len(ref)
    bp = 1.0 if ratio > 1.0 else math.exp(1 - 1.0 / ratio)
    return geo * bp


# --------------------------------------------------------------------------- ROUGE


@functools.lru_cache(maxsize=1)
def _rouge_scorer() -> RougeScorer:
    from rouge_score import rouge_scorer, tokenizers  # noqa: PLC0415 - heavy (rouge_score loads nltk, ~1 s), only when ROUGE is computed

    # its default tokenizer, passed in: built by RougeScorer itself it is announced through absl's
    # logging.info, whose first call runs logging.basicConfig() (a stderr handler on the root logger) in a
    # process that configured none, and from then on every warning of ours printed twice (loguru's line,
    # then the root handler's "WARNING:lmms_eval_earthsci:...")
    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=False, tokenizer=tokenizers.DefaultTokenizer(use_stemmer=False))


def rouge(reference: str, candidate: str) -> dict[str, float]:
    """``{"rouge1", "rouge2", "rougeL", "rougeLsum"}`` F-measures (0..1) for one pair."""
    scores = _rouge_scorer().score(reference, candidate)
    return {k: v.fmeasure for k, v in scores.items()}


# --------------------------------------------------------------------------- METEOR

# WordNet 3.0's lexicographer files (wndb(5WN) "lexnames"): NLTK's reader needs this small index, which
# Debian's wordnet-base package does not ship.
_LEXNAMES = tuple((
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split())
_POS_NUMBER = MappingProxyType({"noun": 1, "verb": 2, "adj": 3, "adv": 4})
_WORDNET_FILES = ("data.adj", "data.adv", "data.noun", "data.verb", "index.adj", "index.adv", "index.noun", "index.verb", "adj.exc", "adv.exc", "noun.exc", "verb.exc")


def _wordnet_dir() -> str | None:
    """A folder NLTK's WordNet reader can open, or None."""
    env = read_setting(WORDNET_ENV)
    candidates = [os.path.expanduser(env)] if env else []
    try:
        import nltk  # noqa: PLC0415 - heavy (nltk, ~1 s); optional: no WordNet without it

        for p in nltk.data.path:
            candidates.append(os.path.join(p, "corpora", "wordnet"))
    except ImportError:
        return None
    candidates.append(DEBIAN_WORDNET)
    for d in candidates:
        if all(os.path.isfile(os.path.join(d, f)) for f in _WORDNET_FILES):
            if os.path.isfile(os.path.join(d, "lexnames")):
                return d
            return _stage_wordnet(d)
    return None


def _stage_wordnet(src: str) -> str | None:
    """Copy a WordNet dict folder lacking ``lexnames`` (Debian's) into our cache and add the index.
    Built in a temporary folder and renamed into place, so concurrent processes never read a
    half-copied file."""
    dst = cache_dir("wordnet-3.0")  # $EARTHSCI_CACHE_DIR/wordnet-3.0
    if os.path.isfile(os.path.join(dst, "lexnames")):
        return dst
    try:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="wordnet-", dir=os.path.dirname(dst))
        for f in os.listdir(src):
            if os.path.isfile(os.path.join(src, f)):
                shutil.copyfile(os.path.join(src, f), os.path.join(tmp, f))
        with open(os.path.join(tmp, "lexnames"), "w") as fh:
            for i, name in enumerate(_LEXNAMES):
                fh.write(f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n")
        try:
            os.rename(tmp, dst)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
        return dst if os.path.isfile(os.path.join(dst, "lexnames")) else None
    except OSError as exc:
        _warn_once("wordnet-stage", f"could not prepare WordNet from {src} ({exc})")
        return None


_WORDNET_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _wordnet_reader() -> WordNetCorpusReader | None:
    d = _wordnet_dir()
    if d is None:
        return None
    import nltk  # noqa: PLC0415 - heavy (nltk, ~1 s), only when METEOR is computed
    from nltk.corpus.reader.wordnet import WordNetCorpusReader  # noqa: PLC0415 - heavy (nltk, ~1 s), only when METEOR is computed

    class _WordNet30(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:  # no cross-version mapping: only the English synsets are used
            return None

    if d not in nltk.data.path:
        nltk.data.path.append(d)  # NLTK only reads files under its data path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": not needed here
        return _WordNet30(d, None)


def _wordnet() -> WordNetCorpusReader | None:
    with _WORDNET_LOCK:  # loaded once, even when process_results threads ask at the same time
        return _wordnet_reader()


@functools.lru_cache(maxsize=1)
def _has_punkt() -> bool:
    import nltk  # noqa: PLC0415 - heavy (nltk, ~1 s), only when METEOR is computed

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        return True
    except LookupError:
        return False


def _tokens(text: str) -> list[str]:
    from nltk.tokenize import word_tokenize  # noqa: PLC0415 - heavy (nltk, ~1 s), only when METEOR is computed

    if _has_punkt():
        return word_tokenize(text)
    _warn_once("punkt", "NLTK's punkt_tab data is not installed: METEOR tokenises without splitting sentences first (identical for single sentences; multi-sentence texts can differ slightly from `evaluate`)")
    return word_tokenize(text, preserve_line=True)


def meteor(reference: str, candidate: str) -> float | None:
    """METEOR (0..1) as ``evaluate``'s "meteor" gives it for one pair; None without WordNet."""
    wn = _wordnet()
    if wn is None:
        _warn_once("wordnet", f"METEOR is unavailable: no WordNet 3.0 found (install Debian/Ubuntu `wordnet-base`, or NLTK's `wordnet` data, or set {WORDNET_ENV})")
        return None
    from nltk.translate.meteor_score import single_meteor_score  # noqa: PLC0415 - heavy (nltk, ~1 s), only when METEOR is computed

    ref, hyp = _tokens(reference), _tokens(candidate)
    with _WORDNET_LOCK:  # NLTK's WordNet reader seeks shared file handles: not thread-safe
        return single_meteor_score(ref, hyp, wordnet=wn, alpha=0.9, beta=3, gamma=0.5)


# --------------------------------------------------------------------------- BERTScore


def _unavailable() -> dict[str, str | None]:
    """Why a metric is unavailable in this process (None: available, or not asked yet): found when its
    model is loaded, so the runtime holds it beside the other objects the process made once."""
    return current().resource(("textmetrics_unavailable",), lambda: {"bertscore": None})


def unavailable_reason(metric: str) -> str | None:
    """Why ``metric`` (``bertscore``) is unavailable in this process (None: available, or not asked yet)."""
    return _unavailable().get(metric)


def _local_model(model: str) -> tuple[str | None, str]:
    """(a folder to load ``model`` from without waiting on the Hub, or None; why not). A folder is itself;
    a Hub name is its Hugging Face cache snapshot when the Hub is offline, absent or slow (then nothing is
    asked of it), and the name itself when the Hub answers."""
    if os.path.isdir(model):
        return model, ""
    hub_state, seen = hub.state()
    if hub_state == "up":
        return model, ""
    try:
        from huggingface_hub import snapshot_download  # noqa: PLC0415 - huggingface_hub, only when the Hub is down

        return snapshot_download(model, local_files_only=True), ""
    except Exception:
        return None, f"the Hugging Face Hub is {hub_state} ({seen}) and {model!r} is not in the Hugging Face cache"


@functools.lru_cache(maxsize=1)
def _bertscorer() -> BERTScorer | None:
    model = read_setting(BERTSCORE_MODEL_ENV) or "roberta-large"
    path, why = _local_model(model)
    if path is None:
        _unavailable()["bertscore"] = f"{why}; set {BERTSCORE_MODEL_ENV} to a local copy of roberta-large"
        _warn_once("bertscore", f"BERTScore is unavailable: {unavailable_reason('bertscore')}")
        return None
    try:
        layers = int(read_setting(BERTSCORE_LAYERS_ENV) or "17")
        from bert_score import BERTScorer  # noqa: PLC0415 - heavy (bert_score loads torch, seconds), only when BERTScore is computed

        return BERTScorer(model_type=path, num_layers=layers, idf=False, rescale_with_baseline=False, lang="en")
    except Exception as exc:  # model not downloadable here, package missing, bad layer count
        _unavailable()["bertscore"] = f"cannot load {model!r} ({type(exc).__name__}: {str(exc)[:160]}); set {BERTSCORE_MODEL_ENV} to a local copy of roberta-large"
        _warn_once("bertscore", f"BERTScore is unavailable: {unavailable_reason('bertscore')}")
        return None


def bertscore_f1(references: Sequence[str], candidates: Sequence[str], batch_size: int = 32) -> list[float] | None:
    """Per-pair BERTScore F1 (0..1), batched; None when the model cannot be loaded."""
    if not candidates:
        return []
    scorer = _bertscorer()
    if scorer is None:
        return None
    with _lock:
        _, _, f1 = scorer.score(list(candidates), list(references), batch_size=batch_size)
    return [float(x) for x in f1]


# --------------------------------------------------------------------------- per-sample bundle

SAMPLE_METRICS = ("rouge1", "rouge2", "rougeL", "bleu", "meteor")


def sample_scores(reference: str, candidate: str) -> dict[str, float | None] | None:
    """The cheap per-sample metrics (x100) for one pair, as MSEarth computes them: None for an empty
    candidate (skipped, it leaves the denominator); a metric that raises scores 0 (as the authors'
    code does); a metric without its resources is None."""
    if not isinstance(candidate, str) or not candidate.strip():
        return None
    out: dict[str, float | None] = {}
    try:
        r = rouge(reference, candidate)
        out.update({k: 100 * r[k] for k in ("rouge1", "rouge2", "rougeL")})
    except Exception:
        out.update({"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0})
    try:
        out["bleu"] = 100 * bleu(reference, candidate)
    except Exception:
        out["bleu"] = 0.0
    try:
        m = meteor(reference, candidate)
        out["meteor"] = None if m is None else 100 * m
    except Exception:
        out["meteor"] = 0.0
    return out
