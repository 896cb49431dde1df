"""Tiny Qwen2.5-VL, Qwen3-VL and InternVL (HF-native, like ``OpenGVLab/InternVL3-1B-hf``) models for
lmms-eval's ``qwen2_5_vl``, ``qwen3_vl`` and ``internvl_hf`` model classes.

Each one: the family's real config, model and processor classes (with their real special tokens), a
2-layer text model of hidden 64, a 2-layer vision tower of hidden 32, a byte-level BPE tokenizer trained
by :func:`train_tokenizer`, and the family's published chat template (:func:`chat_template`). Images are
kept small (a handful of image tokens each), so a whole evaluation runs in seconds on CPU.

lmms-eval loads all three in bfloat16 (hard-coded in their ``__init__``; there is no dtype argument).
"""

from __future__ import annotations

from . import Family, chat_template, register, train_tokenizer

# Qwen2.5-VL / Qwen3-VL special tokens (the ones the processors and chat templates use)
QWEN_SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
    "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]  # fmt: skip
# InternVL3 (Qwen2.5 tokenizer + InternVL's image tokens)
INTERNVL_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<quad>", "</quad>", "<ref>", "</ref>", "<box>", "</box>", "<video>"]

# text model: 2 layers, hidden 64, 2 heads of 32 (vLLM's CPU attention has no kernel for heads of 16 on AVX2
# machines: the vLLM tier runs these models too); M-RoPE sections sum to head_dim / 2
TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096)
MROPE = [4, 6, 6]

# Qwen image budget: 4..16 merged tokens (28 x 28 px each for Qwen2.5-VL, 32 x 32 px for Qwen3-VL)
QWEN25_MIN_PIXELS, QWEN25_MAX_PIXELS = 4 * 28 * 28, 16 * 28 * 28
QWEN3_MIN_PIXELS, QWEN3_MAX_PIXELS = 4 * 32 * 32, 16 * 32 * 32


def _tokenizer(specials: list[str], template: str, **kwargs):
    tok = train_tokenizer(specials, **kwargs)
    tok.chat_template = template
    return tok


def _finish(model, tokenizer, banned_ids: list[int], out_dir: str, seed: int = 0, std: float = 0.2, level: float = 0.5, stop: float = 42.0) -> None:
    """Random weights, then two touches so greedy answers are short printable noise that ends by itself:

    * dim 0 of the text residual stream is a constant ``level`` (every token embedding has it, no
      attention or MLP output writes to it), so after the final norm it is a steady positive feature;
    * the output head reads it: ``stop`` for the end token (it wins once the other logits are low: answers
      end after a few tokens instead of running to ``max_new_tokens``), strongly negative for the other
      special tokens, image tokens and byte fragments (never generated), 0 for ordinary tokens. The end
      token is suppressed at the first step (``begin_suppress_tokens``), so every answer has a token."""
    import torch  # noqa: PLC0415 - heavy, only when a model is built

    torch.manual_seed(seed)
    lm = model.model.language_model
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, std)
        model.get_input_embeddings().weight[:, 0] = level
        for name, module in lm.named_modules():
            if name.endswith(("o_proj", "down_proj")):
                module.weight[0, :] = 0.0
        lm_head = model.get_output_embeddings().weight
        lm_head[:, 0] = 0.0
        eos = tokenizer.eos_token_id
        for i in range(len(tokenizer)):
            piece = tokenizer.decode([i])
            if i != eos and (i in tokenizer.all_special_ids or i in banned_ids or "\ufffd" in piece or not piece.isprintable()):
                lm_head[i].zero_()
                lm_head[i, 0] = -stop
        lm_head[eos].zero_()
        lm_head[eos, 0] = stop
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = eos
    model.generation_config.bos_token_id = None
    model.generation_config.begin_suppress_tokens = [eos]
    model.save_pretrained(out_dir)


# the family's real preprocessor config (Qwen/Qwen2.5-VL-*-Instruct: min_pixels 3136, max_pixels 12845056): what a
# checkpoint that has it makes of a large figure, on each backend
QWEN25_REAL_MIN_PIXELS, QWEN25_REAL_MAX_PIXELS = 3136, 12845056


def build_qwen2_5_vl(out_dir: str, min_pixels: int = QWEN25_MIN_PIXELS, max_pixels: int = QWEN25_MAX_PIXELS, positions: int = 4096) -> None:
    """``Qwen2_5_VLForConditionalGeneration`` + ``Qwen2_5_VLProcessor`` (image processor: patch 14, merge 2)."""
    from transformers import (  # noqa: PLC0415
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    template = chat_template("qwen2_5_vl")
    tok = _tokenizer(QWEN_SPECIALS, template, eos="<|im_end|>", pad="<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIALS}
    config = Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=len(tok), **{**TEXT, "max_position_embeddings": positions}, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": MROPE},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=dict(
            depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=14, spatial_merge_size=2,
            temporal_patch_size=2, window_size=56, fullatt_block_indexes=[1],
        ),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )  # fmt: skip
    model = Qwen2_5_VLForConditionalGeneration(config)
    _finish(model, tok, [ids["<|image_pad|>"], ids["<|video_pad|>"]], out_dir)

    size = {"shortest_edge": min_pixels, "longest_edge": max_pixels}
    image_processor = Qwen2VLImageProcessor(size=size, patch_size=14, merge_size=2, temporal_patch_size=2)
    video_processor = Qwen2VLVideoProcessor(size=size, patch_size=14, merge_size=2, temporal_patch_size=2)
    processor = Qwen2_5_VLProcessor(image_processor=image_processor, tokenizer=tok, video_processor=video_processor, chat_template=template)
    processor.save_pretrained(out_dir)


# a template that accepts a system turn only as the first message (as a current family's does): lmms-eval's qwen3_vl class
# inserts a default system turn of its own, so a request that carried one more would fail
FIRST_SYSTEM_ONLY = ("{%- for m in messages %}{%- if m.role == 'system' and not loop.first %}"
                     "{{- raise_exception('System message must be at the beginning.') }}{%- endif %}{%- endfor %}")


def build_qwen3_vl(out_dir: str, strict: bool = False) -> None:
    """``Qwen3VLForConditionalGeneration`` + ``Qwen3VLProcessor`` (image processor: patch 16, merge 2); ``strict``:
    its template raises on a system turn that is not the first (:data:`FIRST_SYSTEM_ONLY`)."""
    from transformers import (  # noqa: PLC0415
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    template = (FIRST_SYSTEM_ONLY if strict else "") + chat_template("qwen3_vl")
    tok = _tokenizer(QWEN_SPECIALS, template, eos="<|im_end|>", pad="<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIALS}
    config = Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tok), **TEXT, head_dim=32,
            rope_parameters={"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": MROPE, "mrope_interleaved": True},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=dict(
            depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=16, spatial_merge_size=2,
            temporal_patch_size=2, num_position_embeddings=256, deepstack_visual_indexes=[0],
        ),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )  # fmt: skip
    model = Qwen3VLForConditionalGeneration(config)
    _finish(model, tok, [ids["<|image_pad|>"], ids["<|video_pad|>"]], out_dir)

    size = {"shortest_edge": QWEN3_MIN_PIXELS, "longest_edge": QWEN3_MAX_PIXELS}
    mean_std = dict(image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    image_processor = Qwen2VLImageProcessor(size=size, patch_size=16, merge_size=2, temporal_patch_size=2, **mean_std)
    video_processor = Qwen3VLVideoProcessor(size={"shortest_edge": QWEN3_MIN_PIXELS, "longest_edge": 4 * QWEN3_MAX_PIXELS}, patch_size=16, merge_size=2, temporal_patch_size=2, **mean_std)
    processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tok, video_processor=video_processor, chat_template=template)
    processor.save_pretrained(out_dir)


# InternVL tile: 56 x 56 px, patch 14 -> 4 x 4 patches, pixel-shuffled (downsample 0.5) to 4 tokens a tile
INTERNVL_TILE, INTERNVL_PATCH = 56, 14
INTERNVL_TOKENS = (INTERNVL_TILE // INTERNVL_PATCH) ** 2 // 4


def build_internvl(out_dir: str) -> None:
    """``InternVLForConditionalGeneration`` + ``InternVLProcessor`` (``GotOcr2ImageProcessor`` tiles, as in InternVL3-*-hf)."""
    from transformers import (  # noqa: PLC0415
        GotOcr2ImageProcessor,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
        InternVLVideoProcessor,
    )

    template = chat_template("internvl")
    image_tokens = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"}
    tok = _tokenizer(INTERNVL_SPECIALS, template, eos="<|im_end|>", pad="<|endoftext|>", extra_special_tokens=image_tokens)
    ids = {t: tok.convert_tokens_to_ids(t) for t in INTERNVL_SPECIALS}
    config = InternVLConfig(
        text_config=dict(
            model_type="qwen2", vocab_size=len(tok), **TEXT, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False,
        ),
        vision_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=[INTERNVL_TILE, INTERNVL_TILE],
            patch_size=[INTERNVL_PATCH, INTERNVL_PATCH], use_absolute_position_embeddings=True,
        ),
        image_token_id=ids["<IMG_CONTEXT>"], image_seq_length=INTERNVL_TOKENS, downsample_ratio=0.5, tie_word_embeddings=False,
    )  # fmt: skip
    model = InternVLForConditionalGeneration(config)
    _finish(model, tok, [ids[t] for t in ("<img>", "</img>", "<IMG_CONTEXT>", "<video>")], out_dir)

    tile = {"height": INTERNVL_TILE, "width": INTERNVL_TILE}
    mean_std = dict(image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    image_processor = GotOcr2ImageProcessor(size=tile, crop_to_patches=True, min_patches=1, max_patches=4, **mean_std)
    video_processor = InternVLVideoProcessor(size=tile, **mean_std)
    processor = InternVLProcessor(image_processor=image_processor, tokenizer=tok, video_processor=video_processor, image_seq_length=INTERNVL_TOKENS, chat_template=template)
    processor.save_pretrained(out_dir)


register(Family(
    name="qwen2_5_vl", model="qwen2_5_vl", build=build_qwen2_5_vl,
    image_span=r"<\|vision_start\|>(?:<\|image_pad\|>)+<\|vision_end\|>",
    model_args=f"device=cpu,device_map=cpu,attn_implementation=eager,min_pixels={QWEN25_MIN_PIXELS},max_pixels={QWEN25_MAX_PIXELS}",
))  # fmt: skip
register(Family(
    name="qwen2_5_vl_real", model="qwen2_5_vl", build=lambda out: build_qwen2_5_vl(out, QWEN25_REAL_MIN_PIXELS, QWEN25_REAL_MAX_PIXELS, positions=32768),
    image_span=r"<\|vision_start\|>(?:<\|image_pad\|>)+<\|vision_end\|>",
    model_args="device=cpu,device_map=cpu,attn_implementation=eager",  # the class's own max_pixels (its default): what a lab runs
))  # fmt: skip
register(Family(
    name="qwen3_vl", model="qwen3_vl", build=build_qwen3_vl,
    image_span=r"<\|vision_start\|>(?:<\|image_pad\|>)+<\|vision_end\|>",
    model_args=f"device=cpu,device_map=cpu,attn_implementation=eager,min_pixels={QWEN3_MIN_PIXELS},max_pixels={QWEN3_MAX_PIXELS}",
))  # fmt: skip
register(Family(
    name="qwen3_vl_strict", model="qwen3_vl", build=lambda out: build_qwen3_vl(out, strict=True),
    image_span=r"<\|vision_start\|>(?:<\|image_pad\|>)+<\|vision_end\|>",
    model_args=f"device=cpu,device_map=cpu,attn_implementation=eager,min_pixels={QWEN3_MIN_PIXELS},max_pixels={QWEN3_MAX_PIXELS}",
))  # fmt: skip
register(Family(
    name="internvl", model="internvl_hf", build=build_internvl,
    image_span=r"<img>(?:<IMG_CONTEXT>)+</img>",
    model_args="device=cpu,device_map=cpu,attn_implementation=eager,max_patches=4",
))  # fmt: skip
