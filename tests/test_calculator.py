"""The calculator: closed forms that agree with the step-by-step library, clear errors, and a
widget whose page carries the same formulas."""

import json
import math
import re

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic import calculator, timing
from inference_arithmetic.calculator import calculate
from inference_arithmetic.economics import token_costs
from inference_arithmetic.formulas import latency

M, G = ia.model("llama-3.1-8b"), ia.gpu("h100-sxm")


def _close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel)


@pytest.mark.parametrize(
    "name, gpu, n, dtype, cache, batch",
    [
        ("llama-3.1-8b", "h100-sxm", 1, "bf16", None, 16),
        ("llama-3.1-70b", "h200", 4, "fp8", "fp8", 64),
        ("mixtral-8x7b", "a100-80gb", 2, "bf16", "int8", 8),
    ],
)
def test_one_bound_throughout_gives_the_librarys_numbers_exactly(name, gpu, n, dtype, cache, batch):
    m, g = ia.model(name), ia.gpu(gpu)
    r = calculate(name, gpu, n, dtype, cache, batch, 2048, 256)
    assert r["exact"] and r["bound"] == {"prefill": "compute", "decode": "bandwidth"}
    run = ia.generation(m, g, batch, 2048, 256, n_gpus=n, dtype=dtype, cache_dtype=cache)
    for key in ("ttft", "tpot", "total", "throughput"):
        assert _close(r[key], run[key]), key
    weights = ia.param_count(m) * ia.bytes_per_number(dtype) / n
    cache_bytes = ia.kv_cache_bytes(m, batch, 2048 + 256, cache or dtype) / n
    assert _close(r["memory"]["weights"], weights)
    assert _close(r["memory"]["kv_cache"], cache_bytes)
    assert r["memory"]["total"] == r["memory"]["weights"] + r["memory"]["kv_cache"]
    costs = token_costs(m, g, batch, 2048, 256, n, dtype, cache_dtype=cache)
    for key in ("input", "output", "request"):
        assert _close(r["cost"][key], costs[key]), key
    assert r["cost"]["price_date"] == g.price_date


def test_costs_by_hand():
    r = calculate(M, G, batch=8)
    per_second = G.price_per_hour / 3600
    assert _close(r["cost"]["input"], per_second * r["ttft"] / (8 * 2048) * 1e6)
    assert _close(r["cost"]["output"], per_second * r["tpot"] / 8 * 1e6)


def test_tpot_is_the_step_at_the_mean_context():
    r = calculate(M, G, batch=4, prompt_len=1000, output_len=101)
    assert r["mean_context"] == 1000 + 99 / 2  # steps at 1000, ..., 1099
    step = ia.decode_step_time(M, G, 4, 1000) + ia.decode_step_time(M, G, 4, 1099)
    assert _close(r["tpot"], step / 2)
    one = calculate(M, G, output_len=1)  # one token: ia.generation times one step at S = T
    assert one["mean_context"] == 2048
    assert one["total"] == one["ttft"] and _close(one["throughput"], 1 / one["ttft"])


def test_defaults_are_the_librarys_and_follow_it(monkeypatch):
    r = calculate(M, G)
    assert r["compute_efficiency"] == timing.DEFAULT_COMPUTE_EFFICIENCY
    assert r["bandwidth_efficiency"] == timing.DEFAULT_BANDWIDTH_EFFICIENCY
    monkeypatch.setattr(
        timing, "DEFAULT_BANDWIDTH_EFFICIENCY", timing.DEFAULT_BANDWIDTH_EFFICIENCY / 2
    )
    slower = calculate(M, G)
    assert slower["tpot"] > 1.9 * r["tpot"]  # decode is bandwidth-bound at batch 1
    ideal = calculate(M, G, **timing.IDEAL)
    assert _close(ideal["tpot"], ia.generation(M, G, **timing.IDEAL)["tpot"])


def test_a_bound_that_changes_during_the_output_is_flagged():
    # DeepSeek-V3 re-expands its cache at every step: the FLOPs of a long output overtake.
    r = calculate("deepseek-v3", "h200", 8, "fp8", batch=64, prompt_len=500, output_len=3000)
    assert r["bound"]["decode"] == "bandwidth, then compute" and not r["exact"]
    # A sliding window that fills up during the output makes the mean approximate too.
    w = calculate("mistral-7b-v0.1", "h100-sxm", prompt_len=3000, output_len=3000)
    assert not w["exact"]
    assert calculate("mistral-7b-v0.1", "h100-sxm", prompt_len=1000, output_len=1000)["exact"]


def test_memory_grows_with_the_batch_and_shrinks_with_gpus():
    one, two = calculate(M, G, batch=1), calculate(M, G, batch=2)
    assert _close(two["memory"]["kv_cache"], 2 * one["memory"]["kv_cache"])
    split = calculate(M, G, n_gpus=2)
    assert _close(split["memory"]["weights"], one["memory"]["weights"] / 2)
    assert calculate(M, G, dtype="fp8")["memory"]["weights"] == one["memory"]["weights"] / 2


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"model": "llama-3-8b"}, KeyError, "unknown model 'llama-3-8b'; the registry has: "),
        ({"gpu": "h100"}, KeyError, "unknown gpu 'h100'; the registry has: .*h100-sxm"),
        ({"dtype": "bf8"}, KeyError, "unknown dtype 'bf8'"),
        ({"batch": 0}, ValueError, "batch must be a positive whole number, got 0"),
        ({"prompt_len": -5}, ValueError, "prompt_len must be a positive whole number"),
        ({"output_len": 2.5}, ValueError, "output_len must be a positive whole number"),
        ({"n_gpus": True}, ValueError, "n_gpus must be a positive whole number"),
        ({"dtype": "int4"}, ValueError, "h100-sxm has no peak FLOP rate for int4 weights"),
        ({"model": "gpt2"}, ValueError, r"gpt2 reads at most 1,024 tokens.*is 2,304"),
        (
            {"model": "llama-3.1-405b"},
            ValueError,
            r"llama-3.1-405b does not fit: needs 81\d GB per GPU .* has 80 GB",
        ),
        ({"batch": 4096, "prompt_len": 100_000}, ValueError, "does not fit"),
    ],
)
def test_impossible_inputs_say_why(kwargs, error, fragment):
    arguments = {"model": M, "gpu": G, **kwargs}
    with pytest.raises(error, match=fragment):
        calculate(**arguments)


def test_every_model_on_every_gpu_gives_numbers_or_a_clear_error():
    answered = 0
    for name in ia.model_names():
        for gpu in ia.gpu_names():
            try:
                r = calculate(name, gpu, batch=8, prompt_len=512, output_len=128)
            except ValueError as error:
                assert re.search("does not fit|no peak FLOP rate|context window", str(error))
                continue
            answered += 1
            assert r["memory"]["total"] <= r["memory"]["capacity"]
            assert 0 < r["tpot"] < r["total"] and r["throughput"] > 0
            assert r["cost"]["output"] > r["cost"]["input"] > 0
    assert answered > len(ia.model_names())


def test_roofline_parts_are_the_two_sides_of_the_librarys_time():
    expr = latency.decode_step_time(M)
    compute, memory = calculator.roofline_parts(expr)
    rest = expr - sympy.Max(compute, memory)
    assert ia.symbols.pi in compute.free_symbols and ia.symbols.beta in memory.free_symbols
    assert ia.symbols.pi not in rest.free_symbols and ia.symbols.beta not in rest.free_symbols


# --- The widget ------------------------------------------------------------------------------


def test_widget_clamps_and_shows_a_message_for_impossible_choices():
    w = calculator.widget(batch=8)
    assert w.result["batch"] == 8 and w.message is None
    w.update(batch=-3, prompt_len=10**9)
    assert w.state["batch"] == 1 and w.state["prompt_len"] == calculator.MAX_CONTEXT
    assert w.result is None and "context window" in w.message
    w.update(prompt_len=2048, model="llama-3.1-405b")
    assert "does not fit" in w.message and "does not fit" in calculator.readout_html(
        None, w.message
    )
    with pytest.raises(ValueError, match="model must be one of"):
        w.update(model="llama-3-8b")


def test_widget_controls_drive_the_readout():
    w = calculator.widget()
    box = w.widget()
    w._widgets["model"].value = "llama-3.1-70b"  # what a reader's click does
    w._widgets["n_gpus"].value = 2
    assert w.result == calculate("llama-3.1-70b", "h100-sxm", n_gpus=2)
    assert "time per output token" in w._readout.value
    bundle = w._repr_mimebundle_()
    assert 'class="ia-calc"' in bundle["text/html"] and "llama-3.1-70b" in bundle["text/plain"]
    assert box is w.widget()


def test_the_page_carries_every_models_formulas_as_printed_by_sympy():
    spec = calculator.Calculator().spec()
    assert set(spec["models"]) == set(ia.model_names())
    assert set(spec["gpus"]) == set(ia.gpu_names())
    decode = spec["models"]["llama-3.1-8b"]["formulas"]["decode"]
    assert decode["js"] == sympy.jscode(latency.decode_step_time(M))
    assert decode["args"] == list(ia.numeric(latency.decode_step_time(M)).args)
    assert spec["options"]["link_latency"] == timing.DEFAULT_LINK_LATENCY
    html = calculator.Calculator().live_html()
    data = re.search(r'class="ia-calc-spec">(.*?)</script>', html, re.S).group(1)
    assert json.loads(data)["dtypes"] == ia.DTYPE_BYTES
