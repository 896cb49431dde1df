"""Tiny LLaVA-1.5, LLaVA-OneVision and SmolVLM models (see :mod:`tests.tiny_models`).

* ``llava_1_5`` (like llava-hf/llava-1.5-7b-hf): ``LlavaForConditionalGeneration`` (CLIP vision tower + Llama)
  and ``LlavaProcessor``; lmms-eval ``--model llava_hf``.
* ``llava_onevision`` (like llava-hf/llava-onevision-qwen2-0.5b-ov-hf):
  ``LlavaOnevisionForConditionalGeneration`` (SigLIP + Qwen2, anyres with a 2x2 grid at most) and
  ``LlavaOnevisionProcessor``; lmms-eval ``--model llava_hf`` (its ``model_map`` picks the class from the
  config's ``model_type``).
* ``smolvlm`` (like HuggingFaceTB/SmolVLM-256M-Instruct): ``SmolVLMForConditionalGeneration`` (SigLIP-style
  tower + pixel-shuffle connector + Llama) and ``SmolVLMProcessor`` with image splitting into 32 px tiles;
  lmms-eval ``--model huggingface`` (which loads it with ``AutoModelForImageTextToText``).

Images are 32 px with patch 8 (16 patches); weights are random (std 0.2) with the output rows of tokens
that decode to noise zeroed, as in :mod:`lmms_eval_earthsci.tinyvlm`.
"""

from __future__ import annotations

from . import Family, chat_template, register, train_tokenizer

_STD = 0.2


def _init(model, tokenizer, never: list[int]) -> None:
    """Random weights of std :data:`_STD`; tokens in ``never`` and tokens that decode to a lone byte or a
    control character get zero output weight (greedy decoding then prefers printable corpus pieces)."""
    import torch

    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, _STD)
        lm_head = model.get_output_embeddings().weight
        for i in range(lm_head.shape[0]):
            piece = tokenizer.decode([i]) if i < len(tokenizer) else "\ufffd"
            if i in never or "\ufffd" in piece or not piece.isprintable():
                lm_head[i].zero_()


def _quiet(fn):
    def wrapped(out_dir: str) -> None:
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            fn(out_dir)
        finally:
            hf_logging.set_verbosity(verbosity)
            hf_logging.enable_progress_bar()

    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


def _text_kwargs(tokenizer) -> dict:
    return dict(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        max_position_embeddings=4096, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def _finish(model, tokenizer, processor, out_dir: str) -> None:
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)


# --------------------------------------------------------------------------------------------- LLaVA-1.5


@_quiet
def build_llava_1_5(out_dir: str) -> None:
    """llava-hf/llava-1.5 layout: Llama tokenizer specials ``<unk> <s> </s>``, ``<image>``, ``<pad>``;
    CLIP 32 px / patch 8 -> 16 ``<image>`` tokens per image (CLS dropped: ``default`` strategy)."""
    from transformers import CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    template = chat_template("llava_1_5")
    tokenizer = train_tokenizer(["<unk>", "<s>", "</s>", "<image>", "<pad>"], bos="<s>", eos="</s>", pad="<pad>", unk="<unk>", extra_special_tokens={"image_token": "<image>"})
    tokenizer.chat_template = template
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    vision = CLIPVisionConfig(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, projection_dim=32)
    config = LlavaConfig(
        vision_config=vision, text_config=LlamaConfig(**_text_kwargs(tokenizer)), image_token_index=image_id,
        vision_feature_layer=-2, vision_feature_select_strategy="default", projector_hidden_act="gelu",
    )
    model = LlavaForConditionalGeneration(config)
    _init(model, tokenizer, [tokenizer.unk_token_id, tokenizer.pad_token_id, tokenizer.bos_token_id, image_id])
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}, do_center_crop=True)
    processor = LlavaProcessor(
        image_processor=image_processor, tokenizer=tokenizer, patch_size=8, vision_feature_select_strategy="default",
        chat_template=template, image_token="<image>", num_additional_image_tokens=1,
    )
    _finish(model, tokenizer, processor, out_dir)


# ------------------------------------------------------------------------------------- LLaVA-OneVision

# anyres: the base 32 px view plus a grid of 32 px tiles, at most 2x2 (real model: 384 px tiles up to 6x6)
_OV_PINPOINTS = [[32, 32], [32, 64], [64, 32], [64, 64]]


@_quiet
def build_llava_onevision(out_dir: str) -> None:
    """llava-hf/llava-onevision-qwen2 layout: Qwen2 specials ``<|endoftext|>`` (pad), ``<|im_start|>``,
    ``<|im_end|>`` (eos), ``<image>``, ``<video>``; SigLIP 32 px / patch 8 -> 16 tokens per view, anyres
    up to 2x2 tiles plus one newline embedding per row (each counted as an ``<image>`` token)."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
        Qwen2Config,
        SiglipVisionConfig,
    )

    template = chat_template("llava_onevision")
    tokenizer = train_tokenizer(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"], eos="<|im_end|>", pad="<|endoftext|>",
        extra_special_tokens={"image_token": "<image>", "video_token": "<video>"},
    )
    tokenizer.chat_template = template
    image_id, video_id = tokenizer.convert_tokens_to_ids(["<image>", "<video>"])
    vision = SiglipVisionConfig(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, vision_use_head=False)
    config = LlavaOnevisionConfig(
        vision_config=vision, text_config=Qwen2Config(**_text_kwargs(tokenizer)), image_token_index=image_id, video_token_index=video_id,
        vision_feature_layer=-1, vision_feature_select_strategy="full", vision_aspect_ratio="anyres_max_9",
        image_grid_pinpoints=_OV_PINPOINTS, use_image_newline_parameter=True, projector_hidden_act="gelu",
    )
    model = LlavaOnevisionForConditionalGeneration(config)
    _init(model, tokenizer, [tokenizer.pad_token_id, image_id, video_id, tokenizer.convert_tokens_to_ids("<|im_start|>")])
    mean, std = [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]
    image_processor = LlavaOnevisionImageProcessor(size={"height": 32, "width": 32}, image_grid_pinpoints=_OV_PINPOINTS, image_mean=mean, image_std=std, do_pad=True)
    video_processor = LlavaOnevisionVideoProcessor(size={"height": 32, "width": 32}, image_mean=mean, image_std=std)
    processor = LlavaOnevisionProcessor(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor, num_image_tokens=16,
        vision_feature_select_strategy="full", chat_template=template, image_token="<image>", video_token="<video>",
        vision_aspect_ratio="anyres_max_9",
    )
    _finish(model, tokenizer, processor, out_dir)


# ---------------------------------------------------------------------------------------------- SmolVLM

_SMOL_ROWS_COLS = [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]


@_quiet
def build_smolvlm(out_dir: str) -> None:
    """HuggingFaceTB/SmolVLM-256M-Instruct layout: SmolLM2 specials ``<|endoftext|>`` (unk),
    ``<|im_start|>`` (bos), ``<|im_end|>`` (pad), plus ``<fake_token_around_image>``, ``<image>``,
    ``<end_of_utterance>`` (eos), ``<global-img>`` and ``<row_R_col_C>`` (R, C in 1..6). Images are resized
    to a longest edge of 64 px and split into 32 px tiles (at most 2x2) plus a global view; pixel shuffle 2
    -> 4 ``<image>`` tokens per tile."""
    from transformers import (
        LlamaConfig,
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
        SmolVLMVisionConfig,
    )

    template = chat_template("smolvlm")
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>", *_SMOL_ROWS_COLS]
    tokenizer = train_tokenizer(
        specials, bos="<|im_start|>", eos="<end_of_utterance>", pad="<|im_end|>", unk="<|endoftext|>",
        extra_special_tokens={"fake_image_token": "<fake_token_around_image>", "image_token": "<image>", "end_of_utterance_token": "<end_of_utterance>", "global_image_token": "<global-img>"},
    )
    tokenizer.chat_template = template
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    vision = SmolVLMVisionConfig(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
    text = LlamaConfig(**_text_kwargs(tokenizer))
    config = SmolVLMConfig(vision_config=vision.to_dict(), text_config=text.to_dict(), scale_factor=2, image_token_id=image_id, tie_word_embeddings=False, pad_token_id=tokenizer.pad_token_id)
    model = SmolVLMForConditionalGeneration(config)
    never = [tokenizer.convert_tokens_to_ids(t) for t in specials if t not in ("<end_of_utterance>",)]
    _init(model, tokenizer, never)
    image_processor = SmolVLMImageProcessor(do_image_splitting=True, size={"longest_edge": 64}, max_image_size={"longest_edge": 32})
    video_processor = SmolVLMVideoProcessor(size={"longest_edge": 32}, max_image_size={"longest_edge": 32})
    processor = SmolVLMProcessor(image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor, image_seq_len=4, chat_template=template)
    _finish(model, tokenizer, processor, out_dir)


register(Family(name="llava_1_5", model="llava_hf", build=build_llava_1_5, image_span=r"(?:<image>)+", model_args="device=cpu,device_map=cpu,dtype=float32"))
# every anyres tile row's newline is an <image> token too (an embedding, no text token), so one image is one run
register(Family(name="llava_onevision", model="llava_hf", build=build_llava_onevision, image_span=r"(?:<image>)+", model_args="device=cpu,device_map=cpu,dtype=float32"))
# split images: one <fake_token_around_image><row_R_col_C><image>... per tile, "\n" after each row of tiles,
# then "\n<fake_token_around_image><global-img><image>...<fake_token_around_image>"; unsplit: the global part only
register(
    Family(
        name="smolvlm",
        model="huggingface",
        build=build_smolvlm,
        image_span=r"(?:(?:<fake_token_around_image><row_\d+_col_\d+>(?:<image>)+)+\n)*\n?<fake_token_around_image><global-img>(?:<image>)+<fake_token_around_image>",
        model_args="device=cpu,device_map=cpu",
    )
)
