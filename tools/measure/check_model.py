"""Check tools/measure/model.py against transformers' LlamaForCausalLM: same weights, same logits.

Needs transformers, which the timing environment leaves out; `make reference` has both:

    tests/reference/.venv/bin/python tools/measure/check_model.py

A small Llama config (three layers, grouped-query attention, plain rotary embeddings) is built
both ways with the hand-written model's random weights; the last position's logits of a
prefill, and of one decode step on its cache, must agree to fp32 rounding, and so must the
parameter counts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model import LlamaDecoder  # noqa: E402

CONFIG = dict(
    model_type="llama",
    vocab_size=1000,
    hidden_size=256,
    intermediate_size=896,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    rms_norm_eps=1e-5,
    rope_theta=500000.0,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
    attention_bias=False,
    mlp_bias=False,
)
NAMES = {
    "attn_norm": "input_layernorm",
    "q": "self_attn.q_proj",
    "k": "self_attn.k_proj",
    "v": "self_attn.v_proj",
    "o": "self_attn.o_proj",
    "mlp_norm": "post_attention_layernorm",
    "gate": "mlp.gate_proj",
    "up": "mlp.up_proj",
    "down": "mlp.down_proj",
}


def main():
    mine = LlamaDecoder(CONFIG, "fp32")
    reference = LlamaForCausalLM(LlamaConfig(**CONFIG)).eval()
    state = {
        "model.embed_tokens.weight": mine.embed,
        "model.norm.weight": mine.final_norm,
        "lm_head.weight": mine.lm_head,
    }
    for index, layer in enumerate(mine.layers):
        for name, tensor in layer.items():
            state[f"model.layers.{index}.{NAMES[name]}.weight"] = tensor
    reference.load_state_dict(state, strict=True)
    assert mine.parameter_count() == sum(p.numel() for p in reference.parameters())
    tokens = torch.randint(
        CONFIG["vocab_size"], (2, 37), generator=torch.Generator().manual_seed(1)
    )
    following = torch.randint(
        CONFIG["vocab_size"], (2, 1), generator=torch.Generator().manual_seed(2)
    )
    with torch.inference_mode():
        cache = mine.cache(2, 38)
        prefill = (mine.forward(tokens, cache, 0) - reference(tokens).logits[:, -1:]).abs().max()
        step = mine.forward(following, cache, 37)
        whole = reference(torch.cat([tokens, following], 1)).logits[:, -1:]
        decode = (step - whole).abs().max()
    print(f"largest difference of the logits: prefill {prefill:.1e}, decode {decode:.1e}")
    assert prefill < 1e-5 and decode < 1e-5


if __name__ == "__main__":
    main()
