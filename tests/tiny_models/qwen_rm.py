"""A tiny, randomly initialised scalar reward model of the Qwen2.5-Math-RM family (``Qwen2ForRewardModel``: a
Qwen2 text model and a score head ``Linear(h, h) -> ReLU -> Linear(h, 1)`` read at every token), for the vLLM
tier's ``/pooling`` test of EMMA's Table 7 protocol. transformers has no class for it (the real checkpoint ships
remote code; vLLM has its own), so the weights are written as tensors under the checkpoint's names.

2 layers of hidden 64 with 2 heads of 32 (vLLM's CPU attention has kernels for heads of 32, 64, 80, ...); the
byte-level BPE tokenizer of :func:`tiny_models.train_tokenizer` and Qwen2.5's chat template (the VL family's,
which renders text turns as Qwen2.5's does: ``<|im_start|>role\\ncontent<|im_end|>\\n``).
"""

from __future__ import annotations

import json
import os

from . import chat_template, train_tokenizer

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
HIDDEN, LAYERS, HEADS, KV_HEADS, INTERMEDIATE = 64, 2, 2, 1, 128


def build_reward_model(root: str, seed: int = 0) -> str:
    """Write the checkpoint under ``root/qwen2_rm`` once (a marker says it is complete); its folder."""
    out = os.path.join(root, "qwen2_rm")
    if os.path.exists(os.path.join(out, ".built")):
        return out
    import torch  # noqa: PLC0415 - heavy, only when the model is built
    from safetensors.torch import save_file  # noqa: PLC0415

    os.makedirs(out, exist_ok=True)
    tok = train_tokenizer(SPECIALS, eos="<|im_end|>", pad="<|endoftext|>")
    tok.chat_template = chat_template("qwen2_5_vl")
    tok.save_pretrained(out)
    vocab = len(tok)
    pad, eos = tok.convert_tokens_to_ids("<|endoftext|>"), tok.convert_tokens_to_ids("<|im_end|>")
    config = {
        "architectures": ["Qwen2ForRewardModel"], "model_type": "qwen2", "hidden_size": HIDDEN, "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "hidden_act": "silu",
        "max_position_embeddings": 4096, "max_window_layers": LAYERS, "use_sliding_window": False, "sliding_window": None,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False, "vocab_size": vocab, "bos_token_id": pad,
        "eos_token_id": eos, "pad_token_id": pad, "num_labels": 1, "torch_dtype": "float32", "initializer_range": 0.02,
        "attention_dropout": 0.0, "use_cache": False,
    }  # fmt: skip
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    g = torch.Generator().manual_seed(seed)
    head = HIDDEN // HEADS

    def rnd(*shape: int, s: float = 0.5):
        return (torch.randn(*shape, generator=g) * s).contiguous()

    w = HIDDEN**-0.5
    sd = {"model.embed_tokens.weight": rnd(vocab, HIDDEN, s=1.0), "model.norm.weight": torch.ones(HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        sd.update({
            p + "input_layernorm.weight": torch.ones(HIDDEN), p + "post_attention_layernorm.weight": torch.ones(HIDDEN),
            p + "self_attn.q_proj.weight": rnd(HEADS * head, HIDDEN, s=w), p + "self_attn.q_proj.bias": rnd(HEADS * head, s=0.1),
            p + "self_attn.k_proj.weight": rnd(KV_HEADS * head, HIDDEN, s=w), p + "self_attn.k_proj.bias": rnd(KV_HEADS * head, s=0.1),
            p + "self_attn.v_proj.weight": rnd(KV_HEADS * head, HIDDEN, s=w), p + "self_attn.v_proj.bias": rnd(KV_HEADS * head, s=0.1),
            p + "self_attn.o_proj.weight": rnd(HIDDEN, HEADS * head, s=w),
            p + "mlp.gate_proj.weight": rnd(INTERMEDIATE, HIDDEN, s=w), p + "mlp.up_proj.weight": rnd(INTERMEDIATE, HIDDEN, s=w),
            p + "mlp.down_proj.weight": rnd(HIDDEN, INTERMEDIATE, s=INTERMEDIATE**-0.5),
        })  # fmt: skip
    sd.update({"score.0.weight": rnd(HIDDEN, HIDDEN, s=w), "score.0.bias": rnd(HIDDEN, s=0.1), "score.2.weight": rnd(1, HIDDEN, s=w), "score.2.bias": rnd(1, s=0.1)})
    save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    open(os.path.join(out, ".built"), "w").close()
    return out
