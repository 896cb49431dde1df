"""Tiny Gemma 3 and Llama 3.2 Vision models (see :mod:`tests.tiny_models`).

* ``gemma3`` (like google/gemma-3-4b-it): ``Gemma3ForConditionalGeneration`` (SigLIP tower + average-pool
  projector + Gemma 3 text model, one sliding and one full attention layer) and ``Gemma3Processor`` with
  ``Gemma3ImageProcessor``; lmms-eval ``--model gemma3`` (which loads it in bfloat16, hard-coded, and passes
  ``max_pixels`` / ``min_pixels`` to ``AutoProcessor``, where Gemma 3 ignores them). Its defaults
  ``device="cuda"``, ``device_map="auto"`` fail on CPU (``generate_until`` moves the inputs with
  ``inputs.to("cuda")`` when ``device_map == "auto"``), hence ``device=cpu,device_map=cpu``.
* ``llama_3_2_vision`` (like meta-llama/Llama-3.2-11B-Vision-Instruct): ``MllamaForConditionalGeneration``
  (tiled vision encoder + Llama text model whose second layer is a gated cross-attention layer) and
  ``MllamaProcessor`` with ``MllamaImageProcessor``; lmms-eval ``--model llama_vision``. Its default
  ``device_map=""`` fails under transformers 5, hence ``device_map=cpu``.

Images are 32 px with patch 8; Gemma 3 pools the 4 x 4 patches to 4 ``<image_soft_token>`` per image, Mllama
splits an image into at most 2 tiles of 32 px and the text holds one ``<|image|>`` token per image (the
vision features enter through cross-attention). Weights: :func:`tiny_models.qwen_internvl._finish` (random,
then greedy answers are a few printable tokens that end with the end token).
"""

from __future__ import annotations

from . import Family, chat_template, register, train_tokenizer
from .llava_smolvlm import _quiet
from .qwen_internvl import _finish

# 32 px images, patch 8: 4 x 4 patches
IMAGE, PATCH = 32, 8

# ----------------------------------------------------------------------------------------------- Gemma 3

# Gemma 3 special tokens (the ones the tokenizer, processor and chat template use)
GEMMA3_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
# the 4 x 4 patches pooled 2 x 2: 4 soft tokens per image (real model: 64 x 64 patches pooled to 256)
GEMMA3_TOKENS = 4


@_quiet
def build_gemma3(out_dir: str) -> None:
    """google/gemma-3-it layout: specials ``<pad> <eos> <bos> <unk> <mask>``, ``<start_of_turn>``,
    ``<end_of_turn>``, padding on the left (as ``GemmaTokenizer``: lmms-eval pads the prompt to a multiple of
    8); the tokenizer's ``boi_token`` / ``eoi_token`` / ``image_token`` are ``<start_of_image>``,
    ``<end_of_image>``, ``<image_soft_token>``. The processor turns each ``<start_of_image>`` of the template
    into ``\\n\\n<start_of_image>`` + 4 ``<image_soft_token>`` + ``<end_of_image>\\n\\n``."""
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
        Gemma3TextConfig,
        SiglipVisionConfig,
    )

    template = chat_template("gemma3")
    tok = train_tokenizer(
        GEMMA3_SPECIALS, bos="<bos>", eos="<eos>", pad="<pad>", unk="<unk>", padding_side="left",
        extra_special_tokens={"image_token": "<image_soft_token>", "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>"},
    )  # fmt: skip
    tok.chat_template = template
    ids = {t: tok.convert_tokens_to_ids(t) for t in GEMMA3_SPECIALS}
    text = Gemma3TextConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, query_pre_attn_scalar=16, sliding_window=512, layer_types=["sliding_attention", "full_attention"], max_position_embeddings=4096,
        bos_token_id=ids["<bos>"], eos_token_id=ids["<eos>"], pad_token_id=ids["<pad>"], tie_word_embeddings=False,
    )  # fmt: skip
    vision = SiglipVisionConfig(
        image_size=IMAGE, patch_size=PATCH, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, vision_use_head=False,
    )  # fmt: skip
    config = Gemma3Config(
        text_config=text, vision_config=vision, mm_tokens_per_image=GEMMA3_TOKENS, boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"], image_token_index=ids["<image_soft_token>"], tie_word_embeddings=False,
    )  # fmt: skip
    model = Gemma3ForConditionalGeneration(config)
    _finish(model, tok, [ids["<start_of_image>"], ids["<end_of_image>"], ids["<image_soft_token>"]], out_dir)

    mean_std = dict(image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    image_processor = Gemma3ImageProcessor(size={"height": IMAGE, "width": IMAGE}, do_pan_and_scan=False, **mean_std)
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tok, chat_template=template, image_seq_length=GEMMA3_TOKENS)
    processor.save_pretrained(out_dir)


# -------------------------------------------------------------------------------------- Llama 3.2 Vision

# Llama 3 special tokens of the Llama 3.2 Vision tokenizer (its reserved tokens left out), <|image|> last
MLLAMA_SPECIALS = [
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
    "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>", "<|image|>",
]  # fmt: skip
# tiles of 32 px, at most 2 an image (real model: 560 px, at most 4)
MLLAMA_TILES = 2


@_quiet
def build_llama_3_2_vision(out_dir: str) -> None:
    """meta-llama/Llama-3.2-11B-Vision-Instruct layout: bos ``<|begin_of_text|>``, eos ``<|eot_id|>``, pad
    ``<|finetune_right_pad_id|>``, ``<|image|>`` one token per image; a 2-layer vision encoder (+ 1 gated
    global layer) over up to 2 tiles of 32 px; text layers: self-attention, then cross-attention (its gates
    opened so the images reach the text)."""
    import torch
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaImageProcessor, MllamaProcessor
    from transformers.models.mllama.image_processing_mllama import get_all_supported_aspect_ratios

    template = chat_template("llama_3_2_vision")
    tok = train_tokenizer(MLLAMA_SPECIALS, bos="<|begin_of_text|>", eos="<|eot_id|>", pad="<|finetune_right_pad_id|>")
    tok.chat_template = template
    ids = {t: tok.convert_tokens_to_ids(t) for t in MLLAMA_SPECIALS}
    config = MllamaConfig(
        text_config=dict(
            vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            cross_attention_layers=[1], max_position_embeddings=4096, rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
            bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<|eot_id|>"], pad_token_id=ids["<|finetune_right_pad_id|>"], tie_word_embeddings=False,
        ),
        vision_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_global_layers=1, attention_heads=2, image_size=IMAGE, patch_size=PATCH,
            max_num_tiles=MLLAMA_TILES, supported_aspect_ratios=[list(r) for r in get_all_supported_aspect_ratios(MLLAMA_TILES)],
            intermediate_layers_indices=[0, 1], vision_output_dim=32 * 3,
        ),
        image_token_index=ids["<|image|>"],
    )  # fmt: skip
    model = MllamaForConditionalGeneration(config)
    with torch.no_grad():  # the cross-attention gates start closed (0): open them, or the images change nothing
        for layer in model.model.language_model.layers:
            if hasattr(layer, "cross_attn_attn_gate"):
                layer.cross_attn_attn_gate.fill_(1.0)
                layer.cross_attn_mlp_gate.fill_(1.0)
    _finish(model, tok, [ids["<|image|>"], ids["<|python_tag|>"]], out_dir)

    clip = dict(image_mean=[0.48145466, 0.4578275, 0.40821073], image_std=[0.26862954, 0.26130258, 0.27577711])  # as the real one
    image_processor = MllamaImageProcessor(size={"height": IMAGE, "width": IMAGE}, max_image_tiles=MLLAMA_TILES, **clip)
    processor = MllamaProcessor(image_processor=image_processor, tokenizer=tok, chat_template=template)
    processor.save_pretrained(out_dir)


register(Family(
    name="gemma3", model="gemma3", build=build_gemma3,
    image_span=r"<start_of_image>(?:<image_soft_token>)+<end_of_image>",
    model_args="device=cpu,device_map=cpu",
))  # fmt: skip
register(Family(
    name="llama_3_2_vision", model="llama_vision", build=build_llama_3_2_vision,
    image_span=r"<\|image\|>",
    model_args="device=cpu,device_map=cpu,dtype=float32",
))  # fmt: skip
