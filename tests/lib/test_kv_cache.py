"""The KV cache formulas: the source's number, proportionality, windows and MLA."""

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, S, W, b
from inference_arithmetic.formulas import kv_cache

STANDARD = ["llama-2-7b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b"]


def test_llama_3_70b_at_2048_tokens_is_the_sources_number():
    m = ia.model("llama-3.1-70b")
    # 2 (K and V) * 2 bytes * 80 layers * 128 head width * 8 KV heads * 2048 tokens
    expected = 2 * 2 * m.n_layers * m.d_head * m.n_kv_heads * 2048
    assert ia.kv_cache_bytes(m, batch=1, context_len=2048, dtype="bf16") == expected == 671_088_640


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(STANDARD),
    batch=st.integers(1, 512),
    data=st.data(),
    dtype=st.sampled_from(sorted(ia.dtypes.CACHE_FORMATS)),
)
def test_cache_is_linear_in_batch_and_length(name, batch, data, dtype):
    m = ia.model(name)
    seq = data.draw(st.integers(1, m.context_window), label="seq")  # past it: refused
    one = ia.kv_cache_bytes(m, batch=1, context_len=1, dtype=dtype)
    # Exact for whole and binary-fraction bytes; q8_0's 1.0625 bytes may round in the last bit.
    expected = pytest.approx(one * batch * seq, rel=1e-12)
    assert ia.kv_cache_bytes(m, batch=batch, context_len=seq, dtype=dtype) == expected


@settings(max_examples=40, deadline=None)
@given(seq=st.integers(1, 32768))
def test_a_window_caps_what_windowed_layers_keep(seq):
    m = ia.model("mistral-7b-v0.1")  # every layer has a 4096-token window, of 32,768 in all
    per_token_layer = 2 * 2 * m.n_kv_heads * m.d_head
    kept = min(seq, m.window - 1)  # the new token attends to itself and W - 1 cached ones
    assert ia.kv_cache_bytes(m, context_len=seq) == m.n_layers * kept * per_token_layer


def test_gemma_2_windows_every_other_layer():
    m = ia.model("gemma-2-9b")
    per_layer = 2 * 2 * m.n_kv_heads * m.d_head
    long = m.context_window  # twice the window
    assert long == 2 * m.window
    global_layers = m.n_layers - m.n_window_layers
    expected = per_layer * (global_layers * long + m.n_window_layers * (m.window - 1))
    assert ia.kv_cache_bytes(m, context_len=long) == expected


def test_mla_latent_and_expanded_forms():
    m = ia.model("deepseek-v3")
    latent = ia.kv_cache_bytes(m, context_len=1, mla_cache="latent")
    expanded = ia.kv_cache_bytes(m, context_len=1, mla_cache="expanded")
    assert latent == 2 * m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    heads = m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim
    assert expanded == 2 * m.n_layers * m.n_heads * heads
    assert expanded > 50 * latent  # the point of MLA


def test_mla_form_is_ignored_by_standard_attention_and_checked():
    m = ia.model("llama-3.1-8b")
    assert ia.kv_cache_bytes(m, mla_cache="latent") == ia.kv_cache_bytes(m, mla_cache="expanded")
    with pytest.raises(ValueError, match="unknown MLA cache form 'compressed'"):
        ia.kv_cache_bytes(m, mla_cache="compressed")


@pytest.mark.parametrize("bad", [dict(batch=0), dict(context_len=-1), dict(batch=1.5)])
def test_bad_sizes_raise(bad):
    with pytest.raises(ValueError, match="must be a whole number from 1 up"):
        ia.kv_cache_bytes(ia.model("llama-3.1-8b"), **bad)


def test_old_keywords_are_refused_by_their_new_names():
    # seq_len and mla mean a forward pass's tokens and how an MLA model decodes elsewhere:
    # kv_cache_bytes took them for its context_len and mla_cache, and refuses them now.
    m = ia.model("deepseek-v3")
    with pytest.raises(ia.ArgumentError, match="seq_len= is now called context_len="):
        ia.kv_cache_bytes(m, seq_len=4096)
    with pytest.raises(ia.ArgumentError, match="mla= is now called mla_cache="):
        ia.kv_cache_bytes(m, mla="expanded")
    with pytest.raises(TypeError, match="unexpected keyword argument 'mla'"):
        kv_cache.kv_cache_bytes(m, mla="expanded")  # the formula: mla_cache only
    with pytest.raises(TypeError, match="unexpected keyword argument 'sequence'"):
        ia.kv_cache_bytes(m, sequence=10)


def test_unknown_dtype_lists_the_known_ones():
    with pytest.raises(KeyError, match="dtype must be one of .*'bf16'.*got 'fp64'"):
        ia.kv_cache_bytes(ia.model("llama-3.1-8b"), dtype="fp64")


def test_formula_is_symbolic_in_batch_length_and_bytes():
    expr = kv_cache.kv_cache_bytes(ia.model("mistral-7b-v0.1"))
    assert {B, S, b, W} <= expr.free_symbols
    assert sympy.diff(expr, B) == expr / B
