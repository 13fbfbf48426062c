"""Training and inference memory formulas."""

import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, D, L, N, T, b
from inference_arithmetic.formulas import kv_cache, memory


def test_mixed_precision_adam_is_sixteen_bytes_per_parameter():
    assert memory.training_state_bytes() == 16 * N
    assert memory.training_state_bytes(mixed_precision=False) == 4 * b * N


def test_full_recomputation_keeps_one_input_per_layer():
    m = ia.model("llama-3.1-8b")
    kept = memory.training_activation_bytes(m, recompute=True)
    assert sympy.simplify(kept - b * B * T * L * D) == 0
    full = memory.training_activation_bytes(m)
    values = {s: m.sizes().get(s.name, 1) for s in full.free_symbols}
    assert full.subs(values) > 10 * kept.subs(values)


def test_storing_attention_scores_adds_a_term_quadratic_in_length():
    m = ia.model("llama-3.1-8b")
    with_scores = memory.training_activation_bytes(m, attention_scores=True)
    without = memory.training_activation_bytes(m)
    assert sympy.degree(sympy.expand(with_scores - without), T) == 2


def test_inference_terms_are_weights_cache_and_a_peak_activation():
    m = ia.model("llama-3.1-70b")
    terms = memory.inference_terms(m)
    assert set(terms) == {"weights", "KV cache", "peak activation"}
    assert terms["weights"] == b * N
    assert sympy.simplify(terms["KV cache"] - kv_cache.kv_cache_bytes(m)) == 0
    total = memory.inference_bytes(m)
    assert sympy.simplify(total - sum(terms.values())) == 0
