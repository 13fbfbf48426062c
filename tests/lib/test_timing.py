"""Seconds from the formulas: the roofline's bounds, batching, parallelism and bad input.

A stand-in GPU with round figures keeps these tests independent of the hardware registry
(test_hardware.py checks that); the source's numbers for an H100 are checked there too. Where
a test holds chapter 08's single roofline to what it derives, it asks for it (``roofline``);
the kernel model, the default, has its own tests (test_kernels.py).
"""

import functools
from dataclasses import replace

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, D, F, S, T, b, n_gpus
from inference_arithmetic.formulas import latency, parallel, roofline, transformer
from inference_arithmetic.serving import timing

GPU = ia.GPU(
    name="round-gpu",
    vendor="none",
    peak_flop_rate={"bf16": 1e15, "fp8": 2e15},
    memory_bandwidth=3e12,
    memory_bytes=80e9,
    interconnect_bandwidth=450e9,
    interconnect="a link",
    sources={
        "peak_flop_rate.bf16": "round",
        "peak_flop_rate.fp8": "round",
        "memory_bandwidth": "round",
        "memory_bytes": "round",
        "interconnect_bandwidth": "round",
    },
)
SMALL = ia.model("llama-3.1-8b")
BIG = ia.model("llama-3.1-70b")


def on_roofline(function):
    """``function`` on chapter 08's single roofline (``step="roofline"``)."""
    return functools.partial(function, step="roofline")


def test_matmul_intensity_tends_to_two_flops_per_byte_per_batch_row():
    small_batch = sympy.limit(roofline.matmul_intensity() / B, D, sympy.oo)
    assert sympy.limit(small_batch, F, sympy.oo) == 2 / b


def test_all_reduce_is_free_on_one_gpu():
    assert parallel.all_reduce_time(1e6).subs(n_gpus, 1) == 0


@settings(max_examples=30, deadline=None)
@given(batch=st.integers(1, 16), context=st.integers(1, 4096))
def test_a_step_is_never_faster_than_either_bound(batch, context):
    step = timing.decode_step_time(SMALL, GPU, batch=batch, context_len=context, link_latency=0.0)
    flops = ia.decode_flops(SMALL, batch=batch, context_len=context)
    weights = ia.param_count(SMALL) * 2
    cache = ia.kv_cache_bytes(SMALL, batch=batch, context_len=context)
    assert step >= flops / GPU.flop_rate("bf16") * (1 - 1e-12)
    assert step >= (weights + cache) / GPU.memory_bandwidth * (1 - 1e-12)


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 32), context=st.integers(128, 4096))
def test_doubling_bandwidth_never_slows_anything(batch, context):
    faster = replace(GPU, memory_bandwidth=2 * GPU.memory_bandwidth)
    step = {"batch": batch, "context_len": context}
    prefill = {"batch": batch, "prompt_len": context}
    for function, sizes in ((timing.decode_step_time, step), (timing.prefill_time, prefill)):
        assert function(SMALL, faster, **sizes) <= function(SMALL, GPU, **sizes)


def test_throughput_does_not_fall_as_the_batch_grows_up_to_the_memory_limit():
    limit = timing.max_batch(SMALL, GPU, context_len=2048 + 128)
    assert limit > 8
    throughputs = [
        timing.generation(SMALL, GPU, batch=batch, prompt_len=2048, output_len=128)["throughput"]
        for batch in sorted({1, 2, 4, 8, 16, 32, limit} & set(range(1, limit + 1)))
    ]
    assert all(b >= a for a, b in zip(throughputs, throughputs[1:], strict=False))


def test_decode_of_one_request_is_memory_bound_by_two_orders_of_magnitude():
    values = dict(batch=1, context_len=2048)
    step = timing.decode_step_time(BIG, GPU, n_gpus=2, link_latency=0.0, **values)
    compute = ia.decode_flops(BIG, batch=1, context_len=2048) / (2 * GPU.flop_rate("bf16"))
    assert step / compute > 100


def test_decode_turns_compute_bound_at_a_few_hundred_requests_for_short_contexts():
    batch = timing.compute_bound_batch(SMALL, GPU, context_len=1)
    assert batch is not None and 100 < batch < 1000
    # Every request brings its own cache, so at long contexts the batch never catches up.
    assert timing.compute_bound_batch(SMALL, GPU, context_len=32768) is None


def test_tensor_parallelism_cuts_latency_and_pipeline_parallelism_does_not():
    one = on_roofline(timing.decode_step_time)(
        SMALL, GPU, batch=1, context_len=2048, link_latency=0.0
    )
    tensor = on_roofline(timing.decode_step_time)(
        SMALL, GPU, batch=1, context_len=2048, n_gpus=4, link_latency=0.0
    )
    pipeline = on_roofline(timing.decode_step_time)(
        SMALL, GPU, batch=1, context_len=2048, n_gpus=4, parallel="pipeline", link_latency=0.0
    )
    assert tensor < one / 2
    assert pipeline >= one
    gen = on_roofline(timing.generation)(
        SMALL, GPU, batch=1, prompt_len=2048, output_len=64, n_gpus=4, parallel="pipeline"
    )
    alone = on_roofline(timing.generation)(SMALL, GPU, batch=1, prompt_len=2048, output_len=64)
    assert gen["throughput"] > 3 * alone["throughput"]  # four batches in flight


def test_generation_adds_up():
    result = timing.generation(SMALL, GPU, batch=4, prompt_len=1000, output_len=3)
    steps = [timing.decode_step_time(SMALL, GPU, batch=4, context_len=c) for c in (1000, 1001)]
    assert result["ttft"] == pytest.approx(
        timing.prefill_time(SMALL, GPU, batch=4, prompt_len=1000)
    )
    assert result["request_time"] == pytest.approx(result["ttft"] + sum(steps))
    assert result["throughput"] == pytest.approx(4 * 3 / result["request_time"])


def test_the_closed_form_of_a_request_is_the_sum_of_its_steps_while_one_bound_holds():
    # Decode at batch 4 stays memory-bound, where a step is linear in its context.
    result = on_roofline(timing.generation)(SMALL, GPU, batch=4, prompt_len=1000, output_len=50)
    scenario = on_roofline(ia.Scenario)(SMALL, GPU, batch=4, prompt_len=1000, output_len=50)
    closed = scenario.evaluate(latency.generation_time(SMALL))
    assert closed == pytest.approx(result["request_time"], rel=1e-12)
    tput = scenario.evaluate(latency.throughput(SMALL))
    assert tput == pytest.approx(result["throughput"], rel=1e-12)
    assert timing.run(scenario) == result


def test_a_batch_larger_than_memory_runs_in_waves():
    fit = on_roofline(timing.max_batch)(SMALL, GPU, context_len=2048 + 100, memory_utilization=1.0)
    assert (
        fit
        == on_roofline(timing.serve)(
            SMALL, GPU, requests=10**6, prompt_len=2048, output_len=100, memory_utilization=1.0
        )["wave_size"]
    )
    one = on_roofline(timing.serve)(
        SMALL, GPU, requests=fit, prompt_len=2048, output_len=100, memory_utilization=1.0
    )
    assert one["waves"] == 1
    alone = on_roofline(timing.generation)(
        SMALL, GPU, batch=fit, prompt_len=2048, output_len=100, memory_utilization=1.0
    )
    assert one["elapsed"] == pytest.approx(alone["request_time"])
    more = on_roofline(timing.serve)(
        SMALL, GPU, requests=2 * fit + 1, prompt_len=2048, output_len=100, memory_utilization=1.0
    )
    single = on_roofline(timing.generation)(SMALL, GPU, batch=1, prompt_len=2048, output_len=100)[
        "request_time"
    ]
    assert more["waves"] == 3
    assert more["elapsed"] == pytest.approx(2 * one["elapsed"] + single)
    # An engine that keeps a tenth of the memory for itself fits fewer requests per wave,
    # and max_batch counts with the same budget.
    budget = on_roofline(timing.serve)(SMALL, GPU, requests=10**6, prompt_len=2048, output_len=100)[
        "wave_size"
    ]
    assert budget < fit and budget == on_roofline(timing.max_batch)(
        SMALL, GPU, context_len=2048 + 100
    )
    with pytest.raises(ValueError, match="does not fit"):
        on_roofline(timing.generation)(
            SMALL, GPU, batch=budget + 1, prompt_len=2048, output_len=100
        )


def test_an_fp8_cache_holds_twice_the_requests_and_reads_half_the_bytes():
    bf16 = on_roofline(timing.max_batch)(SMALL, GPU, context_len=4096)
    fp8 = on_roofline(timing.max_batch)(SMALL, GPU, context_len=4096, cache_dtype="fp8")
    assert fp8 in (2 * bf16, 2 * bf16 + 1)
    slow = on_roofline(timing.decode_step_time)(
        SMALL, GPU, batch=64, context_len=4096, link_latency=0.0
    )
    fast = on_roofline(timing.decode_step_time)(
        SMALL, GPU, batch=64, context_len=4096, link_latency=0.0, cache_dtype="fp8"
    )
    cache = (
        ia.kv_cache_bytes(SMALL, batch=64, context_len=4096, dtype="bf16") / 2
    )  # the bytes fp8 saves
    saved = cache / (GPU.memory_bandwidth * timing.DEFAULT_BANDWIDTH_EFFICIENCY)
    assert slow - fast == pytest.approx(saved)


def test_weight_only_int4_reads_a_quarter_of_the_bytes_and_computes_in_bf16():
    h100 = ia.gpu("h100-sxm")
    with pytest.raises(KeyError, match="compute_dtype"):
        timing.decode_step_time(SMALL, h100, batch=1, context_len=2048, dtype="int4")
    options = dict(link_latency=0.0, **timing.IDEAL)
    int4 = timing.decode_step_time(
        SMALL, h100, batch=1, context_len=2048, dtype="int4", compute_dtype="bf16", **options
    )
    bf16 = timing.decode_step_time(SMALL, h100, batch=1, context_len=2048, **options)
    # Memory-bound: the weights shrink fourfold; the KV cache stays in bf16, the format it is
    # computed in.
    # A step gathers one row of the input embedding, not the whole table (when untied).
    gathered = 0 if SMALL.tied_embeddings else (SMALL.vocab_size - 1) * SMALL.d_model
    weights = (ia.param_count(SMALL) - gathered) * 2 / h100.memory_bandwidth
    assert bf16 - int4 == pytest.approx(weights * 3 / 4)
    # A compute-bound prefill runs at the compute dtype's rate, whatever the weights are.
    prefill = dict(batch=8, prompt_len=4096, **options)
    assert timing.prefill_time(
        SMALL, h100, dtype="int4", compute_dtype="bf16", **prefill
    ) == pytest.approx(timing.prefill_time(SMALL, h100, **prefill), rel=1e-3)


def test_the_defaults_are_one_calibrated_set_and_ideal_is_the_roofline():
    assert 0 < timing.DEFAULT_COMPUTE_EFFICIENCY < 1
    assert 0 < timing.DEFAULT_BANDWIDTH_EFFICIENCY < 1
    ideal = on_roofline(timing.decode_step_time)(
        SMALL, GPU, batch=1, context_len=2048, **timing.IDEAL
    )
    real = on_roofline(timing.decode_step_time)(SMALL, GPU, batch=1, context_len=2048)
    assert real > ideal / timing.DEFAULT_BANDWIDTH_EFFICIENCY * 0.999


def test_moe_decode_reads_only_the_experts_its_tokens_touch():
    mixtral = ia.model("mixtral-8x7b")
    values = {**mixtral.sizes(), "bytes_per_number": 1}
    one = ia.numeric(latency.weight_bytes_read(mixtral, B)).from_values({**values, "batch": 1})
    many = ia.numeric(latency.weight_bytes_read(mixtral, B)).from_values({**values, "batch": 512})
    # The input embedding: one row per token is gathered, not the whole table.
    table = mixtral.vocab_size * mixtral.d_model
    assert ia.param_count(mixtral, active=True) - table + mixtral.d_model == pytest.approx(one)
    assert many - 512 * mixtral.d_model == pytest.approx(ia.param_count(mixtral) - table, rel=1e-6)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: timing.decode_step_time(SMALL, GPU, batch=0), ValueError, "batch must be"),
        (lambda: timing.prefill_time(SMALL, GPU, prompt_len=-5), ValueError, "prompt_len must"),
        (lambda: timing.decode_step_time(BIG, GPU), ValueError, "needs 14\\d GB per GPU"),
        (lambda: timing.decode_step_time(SMALL, GPU, parallel="data"), ValueError, "parallel"),
        (
            lambda: timing.decode_step_time(SMALL, GPU, compute_efficiency=1.5),
            ValueError,
            "from 0.001 to 1",
        ),
        (lambda: timing.decode_step_time("llama", GPU), KeyError, "unknown model 'llama'"),
        (lambda: timing.decode_step_time(None, GPU), TypeError, "ia.model_names()"),
        (lambda: timing.decode_step_time(SMALL, GPU, n_gpus=3), ValueError, "32 attention heads"),
        (
            lambda: timing.prefill_time(SMALL, GPU, n_gpus=64, parallel="pipeline"),
            ValueError,
            "32 layers, too few for 64 pipeline stages",
        ),
        (lambda: timing.prefill_time(SMALL, GPU, prompt_len=300_000), ValueError, "131,072"),
        (
            lambda: timing.decode_step_time(SMALL, GPU, link_latency=float("inf")),
            ValueError,
            "link_latency",
        ),
        (lambda: timing.weights_per_gpu(SMALL, n_gpus=-2), ValueError, "n_gpus must be"),
        (
            lambda: timing.decode_step_time(SMALL, GPU, compute_efficiency="0.4"),
            ValueError,
            "compute_efficiency",
        ),
        (lambda: timing.compute_bound_batch(SMALL, GPU, limit=-5), ValueError, "limit must"),
        (lambda: timing.generation(SMALL, GPU, output_len=10**8), ValueError, "context window"),
        (
            lambda: timing.serve(SMALL, GPU, requests=8, memory_utilization=0),
            ValueError,
            "memory_util",
        ),
        (
            lambda: timing.serve(BIG, GPU, requests=8),
            ValueError,
            "does not fit: needs 14\\d GB .* batch of 1",
        ),
        (lambda: timing.serve(SMALL, GPU, requests=0), ValueError, "requests must be"),
    ],
)
def test_bad_input_raises_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_counts_of_any_integral_type_are_counts():
    import numpy as np

    expected = timing.prefill_time(SMALL, GPU, batch=8, prompt_len=4096)
    assert timing.prefill_time(SMALL, GPU, batch=np.int64(8), prompt_len=4096.0) == expected
    with pytest.raises(ValueError, match="batch must be a whole number"):
        timing.prefill_time(SMALL, GPU, batch=True)


def test_the_sources_numbers_for_llama_3_70b_on_one_h100():
    # A thought experiment of the source post: 141 GB of weights do not fit in 80 GB, so the
    # numbers come from the formulas at the H100's figures, with ideal efficiency.
    m, g = ia.model("llama-3.3-70b"), ia.gpu("h100-sxm")
    assert (g.flop_rate("bf16"), g.memory_bandwidth) == (989e12, 3.35e12)
    weights = ia.param_count(m) * 2
    assert round(weights / 1e9) == 141
    assert round(weights / g.memory_bandwidth, 2) == 0.04
    prefill = ia.forward_flops(m, batch=1, seq_len=2048, last_logits_only=True)
    assert round(prefill / 1e12) == 291 and round(prefill / g.flop_rate("bf16"), 2) == 0.29
    decode_compute = ia.decode_flops(m, batch=1, context_len=2048) / g.flop_rate("bf16")
    assert round(decode_compute, 5) == 0.00015  # the post rounds 2N / 989 TFLOP/s to 0.00014 s
    read = (weights + ia.kv_cache_bytes(m, batch=1, context_len=2048)) / g.memory_bandwidth
    assert read / decode_compute > 100  # memory-bound by two orders of magnitude
    with pytest.raises(ValueError, match=r"needs 14\d GB per GPU"):
        on_roofline(timing.decode_step_time)(m, g, batch=1, context_len=2048)


# --- Serving-time conventions and tensor parallelism as engines do it -------------------------

H100 = ia.gpu("h100-sxm")
LLAMA_70B = ia.model("llama-3.3-70b")


def test_tensor_parallelism_beats_a_pipeline_at_equal_concurrency():
    # 64 requests in flight on 8 GPUs either way: one batch of 64 split by heads, or 8
    # micro-batches of 8, one per stage, each re-reading its stage's weights.
    tensor = on_roofline(ia.generation)(
        LLAMA_70B, H100, batch=64, prompt_len=2048, output_len=256, n_gpus=8
    )
    pipeline = on_roofline(ia.generation)(
        LLAMA_70B, H100, batch=8, prompt_len=2048, output_len=256, n_gpus=8, parallel="pipeline"
    )
    assert tensor["throughput"] > 2 * pipeline["throughput"]
    assert tensor["tpot"] < pipeline["tpot"] / 2


def test_kv_heads_are_copied_not_divided_past_their_count():
    assert LLAMA_70B.n_kv_heads == 8
    per_gpu = {
        n: ia.calculate(LLAMA_70B, H100, n_gpus=n, batch=8)["memory"]["kv_cache"]
        for n in (4, 8, 16)
    }
    assert per_gpu[16] == pytest.approx(per_gpu[8])
    assert per_gpu[4] == pytest.approx(2 * per_gpu[8])


def test_the_mla_latent_is_whole_on_every_tensor_parallel_rank():
    deepseek = ia.model("deepseek-v3")
    whole = ia.kv_cache_bytes(deepseek, batch=4, context_len=2048 + 256, dtype="fp8")
    r = ia.calculate(deepseek, "h200", n_gpus=8, dtype="fp8", batch=4)
    assert r["memory"]["kv_cache"] == pytest.approx(whole)


def test_a_group_past_one_nvlink_domain_talks_over_the_network():
    s = ia.Scenario(LLAMA_70B, H100, n_gpus=16, batch=8)
    assert H100.link_domain == 8
    messages = latency.communication_time(LLAMA_70B, B * T)  # a prefill's, 8 x 2,048 tokens
    over_network = s.evaluate(messages)
    as_if_nvlink = s.evaluate(messages, link_domain=16)
    assert over_network > 2 * as_if_nvlink
    assert s.replace(network_bandwidth=H100.interconnect_bandwidth).evaluate(
        messages
    ) == pytest.approx(as_if_nvlink)


def test_prefill_times_causal_attention_at_its_own_rate():
    # A long prompt: the causal half of T x T, at eta_a, not the counter's full square.
    s = on_roofline(ia.Scenario)(SMALL, H100, prompt_len=127_000, output_len=1)
    counted = ia.forward_flops(SMALL, batch=1, seq_len=127_000)
    seconds = on_roofline(ia.prefill_time)(SMALL, H100, prompt_len=127_000)
    assert seconds < counted / (s.figure("compute_efficiency") * H100.flop_rate("bf16"))
    attention = s.evaluate(transformer.attention_flops(SMALL, causal=True).subs(S, 0))
    rest = s.evaluate(transformer.step_flops(SMALL, causal=True, last_logits_only=True).subs(S, 0))
    expected = (rest - attention) / (0.4 * 989e12) + attention / (0.63 * 989e12)
    assert seconds == pytest.approx(expected, rel=1e-3)


def test_an_mla_model_decodes_absorbed_by_default():
    deepseek = ia.model("deepseek-v3")
    kw = dict(n_gpus=8, dtype="fp8", batch=32, context_len=8192)
    default = ia.decode_step_time(deepseek, "h200", **kw)
    assert default == ia.decode_step_time(deepseek, "h200", mla="absorbed", **kw)
    assert default < ia.decode_step_time(deepseek, "h200", mla="reexpand", **kw)


def test_nothing_that_fits_passes_the_memory_budget():
    for n in (1, 2, 4, 8):
        most = ia.max_batch(LLAMA_70B, H100, context_len=4096, n_gpus=n) if n > 1 else 0
        if not most:
            with pytest.raises(ValueError, match="does not fit"):
                ia.calculate(LLAMA_70B, H100, n_gpus=n, prompt_len=2048, output_len=2048)
            continue
        r = ia.calculate(LLAMA_70B, H100, n_gpus=n, batch=most, prompt_len=2048, output_len=2048)
        assert r["memory"]["total"] <= r["memory"]["budget"]
        with pytest.raises(ValueError, match="does not fit"):
            ia.calculate(
                LLAMA_70B, H100, n_gpus=n, batch=most + 1, prompt_len=2048, output_len=2048
            )


def test_replicas_multiply_throughput_not_the_cost_of_a_token():
    one = ia.generation(SMALL, H100, batch=16, prompt_len=2048, output_len=256)
    three = ia.generation(SMALL, H100, batch=16, prompt_len=2048, output_len=256, replicas=3)
    assert three["throughput"] == pytest.approx(3 * one["throughput"])
    assert three["tpot"] == one["tpot"]
    with pytest.raises(ValueError, match="replicas"):
        ia.generation(SMALL, H100, batch=16, prompt_len=2048, output_len=256, replicas=0)


def test_a_prefill_may_read_the_whole_window_and_names_prompt_len_past_it():
    window = SMALL.context_window
    assert ia.prefill_time(SMALL, H100, prompt_len=window) > 0  # T <= S_max, not T + 1
    with pytest.raises(ia.ArgumentError) as raised:
        ia.prefill_time(SMALL, H100, prompt_len=window + 1)
    message = str(raised.value)
    assert f"prompt_len may be at most {window:,}, got {window + 1:,}" in message
    assert "output_len" not in message and raised.value.check == "window"
    # A whole request keeps its rule, T + O <= S_max, and says so.
    with pytest.raises(ia.ArgumentError, match=r"prompt_len \+ output_len is 131,073"):
        ia.generation(SMALL, H100, prompt_len=window, output_len=1)


def test_a_decode_step_past_the_window_names_context_len():
    window = SMALL.context_window
    assert ia.decode_step_time(SMALL, H100, context_len=window - 1) > 0  # writes token S_max
    with pytest.raises(ia.ArgumentError) as raised:
        ia.decode_step_time(SMALL, H100, context_len=10**7)
    message = str(raised.value)
    assert f"context_len may be at most {window - 1:,}, got 10,000,000" in message
    assert f"at most {window:,} tokens (its context window)" in message
    assert "prompt_len" not in message and "output_len" not in message
    with pytest.raises(ia.ArgumentError, match="prompt_len may be at most"):
        ia.kernels(SMALL, H100, prompt_len=window + 1, phase="prefill")


def test_a_pipeline_stage_holds_whole_layers():
    # 32 layers on 5 stages: the fullest holds 7, not 6.4. It sets the pace (the throughput)
    # and the memory per GPU (weights, and its layers' share of every batch's cache).
    n, layers = 5, SMALL.n_layers
    assert sympy.ceiling(layers / n) == 7
    run = ia.generation(SMALL, H100, batch=8, n_gpus=n, parallel="pipeline")
    assert run["throughput"] == pytest.approx(layers / 7 * 8 * 256 / run["request_time"])
    weights = ia.param_count(SMALL) * 2
    assert ia.timing.weights_per_gpu(SMALL, n_gpus=n, parallel="pipeline") == pytest.approx(
        weights * 7 / layers
    )
    assert ia.timing.weights_per_gpu(SMALL, n_gpus=4, parallel="pipeline") == weights / 4  # 8 each
    s = ia.Scenario(SMALL, H100, n_gpus=n, parallel="pipeline")
    per_request = s.evaluate(latency.cache_bytes_per_gpu(SMALL, "pipeline"), batch=1,
                             context_len=4096)  # fmt: skip
    assert per_request == pytest.approx(
        n * ia.kv_cache_bytes(SMALL, batch=1, context_len=4096) * 7 / layers
    )
    free = s.evaluate(latency.memory_budget() - latency.activation_reserve(SMALL)) - (
        weights * 7 / layers
    )
    assert ia.max_batch(SMALL, H100, context_len=4096, n_gpus=n, parallel="pipeline") == int(
        free // per_request
    )
