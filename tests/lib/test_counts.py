"""The library's counts against the reference implementation, model by model.

ia.measured() is lib/inference_arithmetic/models/reference/measured.json, made by
tests/reference/make_reference.py (`make reference`):
every registry model built with Hugging Face transformers on PyTorch's meta device, its unique
parameters counted, its forward passes run under torch.utils.flop_counter.FlopCounterMode, and
its KV cache tensors measured. These tests need no torch: they compare with the committed file.
Parameter counts, FLOPs and cache bytes must be equal, not close.
"""

import dataclasses

import pytest

import inference_arithmetic as ia
from inference_arithmetic.core.registry import entries
from inference_arithmetic.formulas import transformer as tf

REFERENCE = ia.measured()["models"]
NAMES = sorted(REFERENCE)
CONFIGS = {
    entry["name"]: entry["config"] for entry in entries("inference_arithmetic.models.configs")
}


def test_the_reference_covers_every_registry_model():
    assert set(REFERENCE) == set(ia.model_names())


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts_equal_the_reference(name):
    m, params = ia.model(name), REFERENCE[name]["params"]
    assert ia.param_count(m) == params["total"]
    assert ia.param_count(m, active=True) == params["active"]
    assert params["tied_embeddings"] == m.tied_embeddings
    without = params["total"] - params["embed_tokens"] - params["embed_positions"]
    assert (
        ia.evaluate(tf.non_embedding_params(m), **_sizes(m, tf.non_embedding_params(m))) == without
    )


def _sizes(m, expr):
    return {s.name: m.sizes()[s.name] for s in expr.free_symbols}


def every_expert(arch, tokens):
    """The FLOPs the convention does not count where the reference does: Llama 4's reference
    multiplies every token by all E experts of a MoE layer (it zeroes the unused ones'
    weights in the sum), where the convention counts the k a token is routed to."""
    if arch.model_type != "llama4_text":
        return 0
    unused = arch.n_experts - arch.n_active_experts
    moe_layers = arch.n_layers - arch.n_dense_layers
    return 2 * tokens * moe_layers * unused * 3 * arch.d_model * arch.d_ff_expert


def cached_heads(arch, config):
    """The heads whose keys and values the reference caches: the H_kv the model computes, but
    all H in transformers' Falcon with the new decoder architecture, which repeats each
    key/value head for the H / H_kv query heads of its group before caching it (the
    broadcast in FalconAttention._split_heads). The convention counts the H_kv heads, the
    ones the model has and serving engines keep; the tests scale by the repetition."""
    repeats = config.get("model_type") == "falcon" and config.get("new_decoder_architecture")
    return arch.n_heads if repeats else arch.n_kv_heads


@pytest.mark.parametrize("name", NAMES)
def test_prefill_flops_equal_the_flop_counter(name):
    m, prefill = ia.model(name), REFERENCE[name]["flops"]["prefill"]
    assert prefill, f"{name}: no prefill measured"
    for seq_len, measured in prefill.items():
        t = int(seq_len)
        extra = every_expert(m, t)
        assert ia.forward_flops(m, batch=1, seq_len=t) + extra == measured["all_logits"]["total"], t
        last = ia.forward_flops(m, batch=1, seq_len=t, last_logits_only=True)
        assert last + extra == measured["last_logit"]["total"], t


@pytest.mark.parametrize("name", NAMES)
def test_decode_step_flops_equal_the_flop_counter(name):
    m, decode = ia.model(name), REFERENCE[name]["flops"]["decode"]
    assert decode["new_tokens"] == 1
    flops = ia.decode_flops(m, batch=1, context_len=decode["context_len"])
    assert flops + every_expert(m, 1) == decode["total"]


@pytest.mark.parametrize("name", NAMES)
def test_kv_cache_bytes_equal_the_cache_tensors(name):
    m, cache = ia.model(name), REFERENCE[name]["kv_cache"]
    assert cache["dtype"] == "bfloat16" and cache["batch"] == 1
    heads = cached_heads(m, CONFIGS[name])
    for seq_len, measured in cache["after_prefill"].items():
        # DeepSeek-V3's reference implementation caches the compressed latent of MLA.
        bytes_ = ia.kv_cache_bytes(
            m, batch=1, context_len=int(seq_len), dtype="bf16", mla_cache="latent"
        )
        assert bytes_ * heads // m.n_kv_heads == measured["bytes"], seq_len
        if not m.is_mla:
            assert {layer["key_shape"][1] for layer in measured["layers"]} == {heads}


def test_a_kv_cache_past_the_context_window_is_refused():
    m = ia.model("llama-3.1-8b")
    whole = ia.kv_cache_bytes(m, batch=1, context_len=m.context_window, dtype="bf16")
    assert whole == m.context_window * ia.kv_cache_bytes(m, context_len=1)  # the window: fine
    with pytest.raises(ia.ArgumentError) as raised:
        ia.kv_cache_bytes(m, batch=1, context_len=10**9, dtype="bf16")
    assert "context_len may be at most 131,072, got 1,000,000,000" in str(raised.value)
    assert "context window" in str(raised.value)
    # A model that states no window: any context.
    unbounded = dataclasses.replace(m, context_window=None)
    assert ia.kv_cache_bytes(unbounded, context_len=10**9) == 10**9 * ia.kv_cache_bytes(
        m, batch=1, context_len=1
    )
