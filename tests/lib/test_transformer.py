"""The transformer's formulas: special cases, limits and identities between them."""

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from inference_arithmetic.core.symbols import B, D, F, H, H_kv, L, S, T, V, d_h
from inference_arithmetic.formulas import transformer as tf
from inference_arithmetic.models.config import ModelConfig, model, model_names

CLASSIC = ModelConfig(
    name="classic", vocab_size=50000, d_model=768, n_layers=12, n_heads=12, d_ff=3072,
    ffn="classic", tied_embeddings=True,
)  # fmt: skip


def test_classic_approximation_falls_out_as_a_special_case():
    # MHA with H d_h = D, F = 4 D, two matrices per FFN, tied embeddings: 12 L D^2 + V D,
    # plus only the norms' weights, 2 per layer and a final one.
    exact = tf.params(CLASSIC).subs({F: 4 * D, H_kv: H, d_h: D / H})
    assert sympy.simplify(exact - tf.classic_approximation() - (2 * L + 1) * D) == 0


def test_gqa_shrinks_only_keys_and_values():
    mha = ModelConfig(name="a", vocab_size=10, d_model=64, n_layers=1, n_heads=8, d_ff=128)
    gqa = ModelConfig(**{**mha.__dict__, "name": "b", "n_kv_heads": 2})
    difference = tf.attention_params(mha).subs(H_kv, 8) - tf.attention_params(gqa).subs(H_kv, 2)
    assert difference.subs({D: 64, H: 8, d_h: 8}) == 2 * 64 * (8 - 2) * 8


@pytest.mark.parametrize("name", model_names())
def test_prefill_is_linear_weights_plus_attention_plus_logits(name):
    m = model(name)
    forward = tf.forward_flops(m)
    attention = tf.attention_flops(m).subs(S, 0)
    logits = 2 * B * T * D * V
    rest = sympy.expand(forward - attention - logits)
    # What is left is 2 FLOPs per weight per token: no T^2 and no vocabulary term.
    assert sympy.degree(rest, T) == 1
    assert V not in rest.free_symbols


@pytest.mark.parametrize("name", model_names())
def test_causal_counts_about_half_the_pairs_of_a_long_prompt(name):
    m = model(name)
    full = tf.attention_flops(m).subs(S, 0)
    causal = tf.attention_flops(m, causal=True).subs(S, 0)
    ratio = sympy.limit(causal / full, T, sympy.oo)
    assert ratio == sympy.Rational(1, 2)


@pytest.mark.parametrize("name", model_names())
def test_last_logits_only_saves_the_logits_of_all_but_one_position(name):
    m = model(name)
    saved = tf.forward_flops(m) - tf.forward_flops(m, last_logits_only=True)
    assert sympy.simplify(saved - 2 * B * (T - 1) * D * V) == 0


def test_two_n_rule_holds_for_one_token_up_to_the_embedding_norms_and_attention():
    m = model("llama-3.1-8b")  # untied, no biases: every other weight is multiplied once
    n = tf.params(m)
    one_token = tf.forward_flops(m).subs({B: 1, T: 1})
    expected = 2 * (n - V * D - (2 * L + 1) * D) + 4 * L * H * d_h
    assert sympy.simplify(one_token - expected) == 0


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(["mistral-7b-v0.1", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b"]))
def test_a_step_with_an_empty_cache_is_a_prefill(name):
    m = model(name)
    assert sympy.simplify(tf.step_flops(m).subs(S, 0) - tf.forward_flops(m)) == 0
    assert sympy.simplify(tf.decode_flops(m).subs(S, 0) - tf.forward_flops(m).subs(T, 1)) == 0


def test_absorbed_mla_decode_does_not_grow_with_the_expansion_of_the_cache():
    m = model("deepseek-v3")
    reexpand = tf.decode_flops(m)
    absorbed = tf.decode_flops(m, mla="absorbed")
    # Re-expanding the cache costs 2 B r_kv H (d_nope + d_v) per cached token and layer; the
    # absorbed form attends in the compressed space instead.
    growth_reexpand = sympy.diff(reexpand, S)
    growth_absorbed = sympy.diff(absorbed, S)
    values = {s: m.sizes()[s.name] for s in growth_reexpand.free_symbols if s.name in m.sizes()}
    values[B] = 1
    assert growth_absorbed.subs(values) < growth_reexpand.subs(values) / 5
    with pytest.raises(ValueError, match="unknown MLA decode 'latent'"):
        tf.decode_flops(m, mla="latent")


@pytest.mark.parametrize("arch", ["llama-3.1-8b", {"hidden_size": 4096}, None, 3])
def test_a_formula_of_something_but_an_architecture_says_how_to_make_one(arch):
    from inference_arithmetic.core.numeric import ArgumentError
    from inference_arithmetic.formulas import kv_cache

    calls = (tf.params, tf.forward_flops, tf.decode_flops, kv_cache.kv_cache_bytes)
    for call in calls:
        with pytest.raises(ArgumentError) as info:
            call(arch)
        message = str(info.value)
        assert message.startswith("arch must be a model's architecture, a ModelConfig: ia.model(")
        assert f"got {type(arch).__name__}" in message or "got None" in message
    if isinstance(arch, str):  # the call to make is named with the name given
        assert f"ia.model({arch!r})" in message


def test_the_roofline_times_no_negative_infinite_or_complex_work():
    from inference_arithmetic.core.numeric import ArgumentError
    from inference_arithmetic.formulas import roofline

    for flops, nbytes, bad in [(-5, -3, "flops"), (5, float("inf"), "nbytes"),
                               (1 + 2j, 3, "flops"), (5, float("nan"), "nbytes")]:  # fmt: skip
        with pytest.raises(ArgumentError, match=f"{bad} must be a non-negative count"):
            roofline.roofline_time(flops, nbytes)
    assert roofline.roofline_time(5, 3).has(sympy.Max)  # numbers and formulas are taken
    assert roofline.roofline_time(tf.forward_flops(model("gpt2")), B * D).has(sympy.Max)
