"""Ground truth for every config family, including those without a registry model: small
synthetic configs of each model_type, built by `transformers` on the meta device and measured
like the registry models (tests/reference/make_reference.py).

Written to lib/inference_arithmetic/models/reference/families.json: unique parameters, the bytes of
the KV cache after a prefill of 40 tokens (bf16), and the FLOP counter's totals of a prefill of
32 tokens and of one decode step with those 32 cached. Small sizes keep it to seconds and make
every structural choice (a window of 16, a layer of each kind) show in the numbers.

    tests/reference/.venv/bin/python tests/reference/families.py   (run by `make reference`)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_reference as mr  # noqa: E402

OUTPUT = mr.OUTPUT.with_name("families.json")
PREFILL, CACHED = 32, 40
BASE = dict(
    vocab_size=1000, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
    num_key_value_heads=2, intermediate_size=96, max_position_embeddings=4096,
)  # fmt: skip
MLA = dict(
    num_key_value_heads=4, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
    v_head_dim=16, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=24,
    first_k_dense_replace=1, n_group=1, topk_group=1,
)  # fmt: skip
LAYERS = ["sliding_attention"] * 3 + ["full_attention"]
# Falcon's own names (no num_key_value_heads or intermediate_size), and its variants: 7B's
# multi-query attention, 40B's and 180B's new decoder architecture (grouped keys and values,
# a norm before attention and one before the MLP; 11B's one shared norm), and RW-1B's
# sequential blocks with ALiBi and biases.
FALCON = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
              max_position_embeddings=4096, model_type="falcon")  # fmt: skip
CONFIGS = {
    "qwen3": dict(BASE, model_type="qwen3", head_dim=32),
    "qwen3_moe": dict(
        BASE, model_type="qwen3_moe", head_dim=32, num_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=24, decoder_sparse_step=1, mlp_only_layers=[1],
    ),
    "olmo2": dict(BASE, model_type="olmo2"),
    "gemma3_text": dict(BASE, model_type="gemma3_text", head_dim=16, sliding_window=16,
                        layer_types=LAYERS),
    "gemma3": dict(model_type="gemma3", vision_config={"model_type": "siglip_vision_model"},
                   text_config=dict(BASE, head_dim=16, sliding_window=16,
                                    sliding_window_pattern=2)),
    "phimoe": dict(BASE, model_type="phimoe", num_local_experts=4, num_experts_per_tok=2,
                   attention_bias=True, lm_head_bias=True, sliding_window=None),
    "gpt_oss": dict(BASE, model_type="gpt_oss", head_dim=16, num_local_experts=4,
                    num_experts_per_tok=2, sliding_window=16, attention_bias=True,
                    layer_types=["sliding_attention", "full_attention"] * 2),
    "llama4_text": dict(BASE, model_type="llama4_text", head_dim=16, num_local_experts=4,
                        num_experts_per_tok=1, intermediate_size_mlp=128,
                        interleave_moe_layer_step=2, attention_chunk_size=16,
                        no_rope_layers=[1, 1, 1, 0]),
    "llama4": dict(model_type="llama4", vision_config={"model_type": "llama4_vision_model"},
                   text_config=dict(BASE, head_dim=16, num_local_experts=4,
                                    num_experts_per_tok=1, intermediate_size_mlp=128,
                                    interleave_moe_layer_step=1, attention_chunk_size=16)),
    "deepseek_v2": dict(BASE, model_type="deepseek_v2", q_lora_rank=None, n_shared_experts=2,
                        moe_layer_freq=1, **MLA),
    "deepseek_v3": dict(BASE, model_type="deepseek_v3", q_lora_rank=None, n_shared_experts=1,
                        **MLA),
    "granite": dict(BASE, model_type="granite", attention_bias=True, tie_word_embeddings=True,
                    embedding_multiplier=12.0, logits_scaling=8.0),
    "starcoder2": dict(BASE, model_type="starcoder2", use_bias=True, sliding_window=16,
                       tie_word_embeddings=True),
    "cohere2": dict(BASE, model_type="cohere2", head_dim=16, sliding_window=16,
                    layer_types=LAYERS, tie_word_embeddings=True),
    "gptj": dict(model_type="gptj", vocab_size=1000, n_embd=64, n_layer=4, n_head=4, n_inner=96,
                 n_positions=4096, rotary_dim=8, tie_word_embeddings=True),
    "falcon": dict(FALCON, multi_query=True, parallel_attn=True, new_decoder_architecture=False),
    "falcon_new_decoder": dict(FALCON, new_decoder_architecture=True, multi_query=True,
                               num_kv_heads=2, ffn_hidden_size=96),
    "falcon_one_norm": dict(FALCON, new_decoder_architecture=True, num_kv_heads=1,
                            num_ln_in_parallel_attn=1, ffn_hidden_size=128),
    "falcon_sequential": dict(FALCON, multi_query=False, parallel_attn=False, alibi=True,
                              bias=True, tie_word_embeddings=False),
    "mistral3": dict(model_type="mistral3", vision_config={"model_type": "pixtral"},
                     text_config=dict(BASE, model_type="mistral", head_dim=16,
                                      sliding_window=None)),
}  # fmt: skip


def ids(n: int) -> torch.Tensor:
    return torch.zeros((1, n), dtype=torch.long, device="meta")


def measure(config: dict) -> dict:
    model = mr.build(config)
    with torch.no_grad():
        cache = model(input_ids=ids(CACHED), use_cache=True).past_key_values
        kv = sum(
            t.numel() * t.element_size()
            for layer in cache.layers
            for t in (layer.keys, layer.values)
            if t is not None
        )
        with FlopCounterMode(display=False) as counter:
            model(input_ids=ids(PREFILL))
        prefill = counter.get_total_flops()
        cache = model(input_ids=ids(PREFILL), use_cache=True).past_key_values
        with FlopCounterMode(display=False) as counter:
            model(input_ids=ids(1), past_key_values=cache, use_cache=True)
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "kv_cache_bytes": {str(CACHED): kv},
        "prefill_flops": {str(PREFILL): prefill},
        "decode_flops": {str(PREFILL): counter.get_total_flops()},
    }


def main() -> None:
    families = {}
    for model_type, config in CONFIGS.items():
        mr.log(f"{model_type} ...")
        families[model_type] = {"config": config, **measure(config)}
    record = {"versions": {"torch": torch.__version__, "transformers": mr.transformers.__version__},
              "families": families}  # fmt: skip
    OUTPUT.write_text(json.dumps(record, indent=1) + "\n")
    mr.log(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
