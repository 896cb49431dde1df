"""Tiny, randomly initialised models of the families lmms-eval's model classes serve, built in the test
session (no download): each family's real processor and config classes, 2 text layers of hidden 64, a
2-layer vision tower, a byte-level BPE tokenizer trained here on a fixed text, and the family's real chat
template (``tests/data/chat_templates/<family>.jinja``, its source named in its first line).

``FAMILIES[name]`` says how to build one and how lmms-eval loads it; :func:`build` writes it once per
folder. Used by ``tests/models/test_model_classes.py`` (``make test-models``, the vision venv: torch 2.14.1 +
torchvision 0.29.1 + qwen-vl-utils).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(os.path.dirname(HERE), "data", "chat_templates")

# the fixed text the tokenizers are trained on
CORPUS = (
    "The answer is A. The answer is B. The answer is C. The answer is D. The answer is E. "
    '{"answer": "B", "Explanation": "The figure shows a rising trend."} '
    "\\boxed{A} \\boxed{B} \\boxed{C} \\boxed{D} A) B) C) D) E) caption image figure plot chart map "
    "temperature precipitation river glacier ocean atmosphere Let's think step by step. Answer: "
    "system user assistant You are a helpful assistant. "
) * 20


def chat_template(family: str) -> str:
    """The family's real chat template (a Jinja comment on its first line names where it comes from)."""
    with open(os.path.join(TEMPLATES, f"{family}.jinja")) as f:
        return f.read()


def train_tokenizer(specials: list[str], *, bos: str | None = None, eos: str, pad: str, unk: str | None = None, vocab_size: int = 600, **extra):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on :data:`CORPUS`, ``specials`` added as
    special tokens (each one id). ``extra`` goes to the tokenizer (e.g. ``extra_special_tokens``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=unk) if unk else models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([CORPUS], trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    kwargs = {"bos_token": bos, "eos_token": eos, "pad_token": pad, "unk_token": unk, **extra}
    return PreTrainedTokenizerFast(tokenizer_object=tok, **{k: v for k, v in kwargs.items() if v is not None})


@dataclass(frozen=True)
class Family:
    """One model family: ``build(out_dir)`` writes config, weights, tokenizer and processor (with the
    real chat template) to ``out_dir``; ``model``: lmms-eval's ``--model`` name; ``model_args``:
    ``--model_args`` after ``pretrained=<dir>``; ``image_span``: a regex matching one image's tokens in
    the decoded input ids (special tokens kept)."""

    name: str
    model: str
    build: Callable[[str], None]
    image_span: str
    model_args: str = "device=cpu"


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    FAMILIES[family.name] = family
    return family


def build(name: str, root: str) -> str:
    """Build family ``name`` under ``root/name`` (once: a marker file says it is complete)."""
    out = os.path.join(root, name)
    marker = os.path.join(out, ".built")
    if not os.path.exists(marker):
        os.makedirs(out, exist_ok=True)
        FAMILIES[name].build(out)
        open(marker, "w").close()
    return out
