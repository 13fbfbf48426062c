"""Speculative decoding, prefix caching, FlashAttention and quantized decode (chapter 15)."""

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, T, b, b_kv, d_h
from inference_arithmetic.formulas import latency, techniques
from inference_arithmetic.formulas.techniques import P_s, a, c_d, gamma


def test_no_accepted_draft_token_still_yields_the_target_token():
    assert techniques.expected_tokens().subs(a, 0) == 1


def test_always_accepted_drafts_yield_gamma_plus_one_tokens():
    assert sympy.limit(techniques.expected_tokens(), a, 1) == gamma + 1


def test_expected_tokens_by_hand():
    # 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616 for a draft of four tokens.
    value = ia.numeric(techniques.expected_tokens())(acceptance_rate=0.8, draft_len=4)
    assert value == pytest.approx(3.3616)
    one = ia.numeric(techniques.expected_tokens())(acceptance_rate=0.5, draft_len=1)
    assert one == pytest.approx(1.5)


def test_speedup_pays_for_the_draft():
    speedup = techniques.speculative_speedup()
    # 3.3616 tokens for 4 * 0.05 + 1 = 1.2 target steps.
    value = ia.numeric(speedup)(acceptance_rate=0.8, draft_len=4, draft_cost=0.05)
    assert value == pytest.approx(3.3616 / 1.2)
    # A draft that is never accepted only costs: the speedup is below 1.
    assert speedup.subs({a: 0, gamma: 4, c_d: sympy.Rational(1, 10)}) == sympy.Rational(5, 7)


def test_speedup_has_a_best_draft_length():
    f = ia.numeric(techniques.speculative_speedup())
    values = [f(acceptance_rate=0.7, draft_len=g, draft_cost=0.1) for g in range(1, 20)]
    best = max(range(len(values)), key=values.__getitem__)
    assert 0 < best < len(values) - 1  # it rises, then falls


def test_bad_speculative_inputs_raise():
    f = ia.numeric(techniques.expected_tokens())
    with pytest.raises(ValueError, match="acceptance_rate must not be negative"):
        f(acceptance_rate=-0.1, draft_len=4)
    with pytest.raises(ValueError, match="draft_len must be positive"):
        f(acceptance_rate=0.5, draft_len=0)
    with pytest.raises(ValueError, match="draft_len must be a whole number"):
        f(acceptance_rate=0.5, draft_len=2.5)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"])
def test_a_cached_prefix_saves_its_flops_once_per_other_request(name):
    m = ia.model(name)
    saved = techniques.prefix_flops_saved(m)
    assert sympy.simplify(saved - (B - 1) * techniques.prefix_flops(m)) == 0
    assert sympy.simplify(saved.subs(B, 1)) == 0  # one request has nothing to share


def test_prefix_flops_by_hand():
    m = ia.model("llama-3.1-8b")
    sizes = {ia.symbols.by_name(k): v for k, v in m.sizes().items()}
    # A one-token prefix: 2 FLOPs per matmul weight (not the embedding, the unused LM head or
    # the norms), and one query-key pair per layer, 2 H (d_h + d_h) FLOPs.
    matmul = ia.param_count(m) - 2 * m.vocab_size * m.d_model - (2 * m.n_layers + 1) * m.d_model
    pair = 2 * m.n_heads * 2 * m.d_head * m.n_layers
    assert techniques.prefix_flops(m).subs(sizes).subs(P_s, 1) == 2 * matmul + pair


def test_prefix_cache_saving_is_linear_in_the_prefix():
    m = ia.model("llama-3.1-70b")
    saved = techniques.prefix_cache_bytes_saved(m)
    assert sympy.simplify(saved.subs(P_s, 2 * P_s) - 2 * saved) == 0
    assert saved.subs(B, 1) == 0
    # 32 requests sharing a 1,000-token prefix in bf16: 31 copies of 2*2*80*8*128 bytes a token.
    bytes_saved = saved.subs({B: 32, P_s: 1000, b_kv: 2}).subs(
        {ia.symbols.by_name(k): v for k, v in m.sizes().items()}
    )
    assert bytes_saved == 31 * 1000 * ia.kv_cache_bytes(m, batch=1, context_len=1, dtype="bf16")


def test_flash_attention_memory_is_linear_in_length_standard_quadratic():
    flash = techniques.attention_memory_bytes("flash")
    standard = techniques.attention_memory_bytes("standard")
    assert sympy.simplify(flash.subs(T, 2 * T) - 2 * flash) == 0
    assert sympy.degree(sympy.expand(standard), T) == 2
    assert sympy.expand(standard - flash) == b * B * ia.symbols.H * T**2


def test_flash_attention_saves_traffic_by_one_plus_t_over_d_head():
    ratio = techniques.attention_traffic_bytes() / techniques.attention_traffic_bytes("flash")
    assert sympy.simplify(ratio - (1 + T / d_h)) == 0


def test_unknown_attention_form_raises():
    with pytest.raises(ValueError, match="unknown attention form 'paged'"):
        techniques.attention_memory_bytes("paged")
    with pytest.raises(ValueError, match="unknown attention form"):
        techniques.attention_traffic_bytes("Flash")


def test_decode_memory_time_shrinks_with_bytes_per_number():
    m = ia.model("llama-3.1-70b")
    g = ia.gpu("h100-sxm")
    f = ia.numeric(techniques.decode_memory_time(m))
    values = {**m.sizes(), "batch": 1, "context_len": 2048, "bandwidth": g.memory_bandwidth}
    values |= {"bandwidth_efficiency": 1.0, "n_gpus": 1}
    bf16 = f.from_values({**values, "bytes_per_number": 2, "kv_bytes_per_number": 2})
    fp8 = f.from_values({**values, "bytes_per_number": 1, "kv_bytes_per_number": 1})
    assert fp8 == pytest.approx(bf16 / 2)
    # The weights less the embedding rows a step of one token does not gather, and the cache.
    weights = (ia.param_count(m) - (m.vocab_size - 1) * m.d_model) * 2
    expected = (weights + ia.kv_cache_bytes(m, batch=1, context_len=2048)) / g.memory_bandwidth
    assert bf16 == pytest.approx(expected)
    # On one GPU: the step's bytes over the bandwidth.
    memory_bound = latency.decode_bytes(m) / (ia.symbols.eta_m * ia.symbols.beta)
    one_gpu = techniques.decode_memory_time(m).subs(ia.symbols.n_gpus, 1)
    assert sympy.simplify(one_gpu - memory_bound) == 0
    assert b in techniques.decode_memory_time(m).free_symbols


def test_a_prefix_hit_leaves_the_rest_of_the_prompt_and_at_least_one_token():
    from inference_arithmetic.core.symbols import T, h_p

    tokens = ia.numeric(techniques.prefilled_tokens())
    assert tokens(seq_len=2048, prefix_hit_rate=0.0) == 2048
    assert tokens(seq_len=2048, prefix_hit_rate=0.3) == 1434  # ceil(0.7 * 2048) = ceil(1433.6)
    assert tokens(seq_len=2048, prefix_hit_rate=1.0) == 1
    assert techniques.prefilled_tokens().subs(h_p, 0) == T
    assert techniques.verified_tokens().subs(techniques.gamma, 3) == 4
