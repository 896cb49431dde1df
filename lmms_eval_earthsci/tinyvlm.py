"""A tiny, randomly initialised LLaVA-style model that lmms-eval's ``llava_hf`` backend loads with
``pretrained=<dir>``: built here in seconds, without any download, for the offline demo.

CLIP vision tower (32 px images, patch 8: 16 image tokens) + a 2-layer Llama (hidden 64), a byte-level
BPE tokenizer trained on a fixed text with ``<image>`` added, and a chat template that keeps text and
images in message order. About 0.2 M parameters. Its answers are noise: it exists to run the real
pipeline (lmms-eval -> our tasks -> scoring -> report) on a machine with no GPU and no Hub.
"""

from __future__ import annotations

import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] != 'system' %}{{ message['role'].upper() + ': ' }}{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<image>' }}{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)
# the fixed text the tokenizer is trained on (answers drawn from it look vaguely like answers)
_CORPUS = (
    "The answer is A. The answer is B. The answer is C. The answer is D. The answer is E. "
    '{"answer": "B", "Explanation": "The figure shows a rising trend."} '
    "\\boxed{A} \\boxed{B} \\boxed{C} \\boxed{D} \\boxed{3} \\boxed{11} "
    "A) B) C) D) E) Option A Option B caption image figure plot chart map curve "
    "temperature precipitation river glacier sediment ocean atmosphere seismic velocity "
    "Let's think step by step. Answer: "
) * 20
MARKER = "earthsci-tiny-llava.txt"
VERSION = "2"


def build(out_dir: str, seed: int = 0, std: float = 0.2) -> str:
    """Write the tiny model to ``out_dir`` (reused if already built with this version)."""
    marker = os.path.join(out_dir, MARKER)
    if os.path.exists(marker) and open(marker).read().strip() == VERSION:
        return out_dir
    from transformers.utils import logging as hf_logging  # noqa: PLC0415 - heavy (transformers, ~0.5 s), only when the model is built

    # torchvision is removed on purpose on CPU machines (README, "Install"): transformers' warning that
    # CLIPImageProcessor falls back to its PIL backend, and the shard-writing progress bar, say nothing
    # to a demo user
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        return _build(out_dir, marker, seed, std)
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()


def _build(out_dir: str, marker: str, seed: int, std: float) -> str:
    import torch  # noqa: PLC0415 - heavy (torch, ~0.8 s), only when the model is built
    from transformers import CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor, PreTrainedTokenizerFast  # noqa: PLC0415 - heavy (transformers, ~0.5 s), only when the model is built

    os.makedirs(out_dir, exist_ok=True)
    specials = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([_CORPUS], trainers.BpeTrainer(vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>", extra_special_tokens={"image_token": "<image>"})
    tokenizer.chat_template = CHAT_TEMPLATE
    image_id = tokenizer.convert_tokens_to_ids("<image>")

    vision = CLIPVisionConfig(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, projection_dim=32)
    text = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8192,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False,
    )
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=image_id, vision_feature_layer=-1, vision_feature_select_strategy="default", projector_hidden_act="gelu")
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    with torch.no_grad():  # small default std makes every greedy answer the same token
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, std)
        # tokens that decode to a lone byte fragment or a control character read as "\ufffd" noise:
        # give them zero output weight so greedy decoding prefers printable pieces of the corpus
        lm_head = model.get_output_embeddings().weight
        for i in range(len(tokenizer)):
            piece = tokenizer.decode([i])
            if i in (tokenizer.unk_token_id, tokenizer.pad_token_id, image_id) or "\ufffd" in piece or not piece.isprintable():
                lm_head[i].zero_()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(out_dir)

    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}, do_center_crop=True)
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=8, vision_feature_select_strategy="default", chat_template=CHAT_TEMPLATE, image_token="<image>", num_additional_image_tokens=1)
    processor.save_pretrained(out_dir)
    with open(marker, "w") as f:
        f.write(VERSION + "\n")
    return out_dir


if __name__ == "__main__":  # python -m lmms_eval_earthsci.tinyvlm OUT_DIR
    import sys

    print(build(sys.argv[1] if len(sys.argv) > 1 else "tiny-llava"))
