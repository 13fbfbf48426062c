"""Dollars per token: hand-worked values, input against output, batching, utilization,
the break-even algebra and bad input (formulas.economics and economics)."""

import math
from dataclasses import replace

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, T, n_gpus
from inference_arithmetic.formulas import economics as formulas
from inference_arithmetic.serving import economics, timing

H100 = ia.gpu("h100-sxm")
SMALL = ia.model("llama-3.1-8b")
BIG = ia.model("llama-3.3-70b")


def PricelessGPU():  # noqa: N802  (a GPU of the registry's kind, without a price)
    return replace(H100, name="priceless", price_per_hour=None, price_date=None)


def test_an_hour_of_one_gpu_at_full_use_over_a_million_tokens_costs_its_price():
    seconds, tokens = sympy.symbols("seconds tokens", positive=True)
    cost = formulas.cost_per_million_tokens(seconds, tokens)
    values = {formulas.c: 2, n_gpus: 4, formulas.u: 1, seconds: 3600, tokens: 10**6}
    assert cost.subs(values) == 8  # 4 GPUs x $2 for one hour, for a million tokens
    assert cost.subs({**values, formulas.u: sympy.Rational(1, 2)}) == 16


def test_input_and_output_costs_are_the_step_times_spread_over_their_tokens():
    step = ia.formulas.latency.prefill_time(SMALL)
    expected = formulas.cost_per_second() * step / formulas.u * 10**6 / (B * T)
    assert sympy.simplify(formulas.input_cost(SMALL) - expected) == 0
    decode = ia.formulas.latency.decode_step_time(SMALL)
    expected = formulas.cost_per_second() * decode / formulas.u * 10**6 / B
    assert sympy.simplify(formulas.output_cost(SMALL) - expected) == 0


def test_token_costs_worked_by_hand():
    costs = economics.token_costs(SMALL, H100, batch=4, prompt_len=512, output_len=64)
    run = timing.generation(SMALL, H100, batch=4, prompt_len=512, output_len=64)
    per_second = H100.price_per_hour / 3600
    assert costs["input"] == pytest.approx(per_second * run["ttft"] / (4 * 512) * 1e6, rel=1e-12)
    assert costs["output"] == pytest.approx(per_second * run["tpot"] / 4 * 1e6, rel=1e-12)
    request = (512 * costs["input"] + 64 * costs["output"]) / 1e6
    assert costs["request"] == pytest.approx(request, rel=1e-12)
    assert costs["price_per_hour"] == H100.price_per_hour
    assert costs["price_date"] == H100.price_date
    assert costs["price_source"] == H100.sources["price_per_hour"]


def test_numeric_costs_equal_the_symbolic_formula():
    # The formulas of chapter 14 price chapter 08's single roofline.
    kw = dict(batch=8, prompt_len=1024, output_len=2, step="roofline")
    costs = economics.token_costs(SMALL, H100, **kw)
    values = ia.Scenario(SMALL, H100, **kw).values()
    values |= dict(context_len=1024, price_per_hour=H100.price_per_hour)
    values |= dict(utilization=1.0)
    assert ia.numeric(formulas.input_cost(SMALL)).from_values(values) == pytest.approx(
        costs["input"], rel=1e-12
    )
    # With two output tokens, one decode step is timed, at the prompt's context.
    assert ia.numeric(formulas.output_cost(SMALL)).from_values(values) == pytest.approx(
        costs["output"], rel=1e-12
    )


@pytest.mark.parametrize(
    ("name", "gpus"), [("llama-3.1-8b", 1), ("llama-3.3-70b", 4), ("mistral-7b-v0.1", 1)]
)
def test_input_tokens_are_cheaper_than_output_tokens_at_batch_one(name, gpus):
    costs = economics.token_costs(ia.model(name), H100, n_gpus=gpus)
    assert costs["input"] * 10 < costs["output"]


def test_output_cost_falls_with_the_batch_and_input_cost_barely_moves():
    runs = [
        economics.token_costs(SMALL, H100, batch=b, step="roofline") for b in (1, 4, 16, 64, 128)
    ]
    outputs = [r["output"] for r in runs]
    assert all(b < a for a, b in zip(outputs, outputs[1:], strict=False))
    inputs = [r["input"] for r in runs]
    assert max(inputs) / min(inputs) < 1.05  # prefill is compute-bound at every batch


def test_cost_scales_as_one_over_utilization_and_with_the_price():
    full = economics.token_costs(SMALL, H100, batch=16)
    quarter = economics.token_costs(SMALL, H100, batch=16, utilization=0.25)
    double = economics.token_costs(SMALL, H100, batch=16, price_per_hour=2 * H100.price_per_hour)
    for key in ("input", "output", "request"):
        assert quarter[key] == pytest.approx(4 * full[key], rel=1e-12)
        assert double[key] == pytest.approx(2 * full[key], rel=1e-12)
    assert double["price_date"] is None and double["price_source"] == "given"


def test_pipeline_batches_in_flight_share_the_gpus():
    tensor = economics.token_costs(BIG, H100, batch=8, n_gpus=4)
    pipeline = economics.token_costs(BIG, H100, batch=8, n_gpus=4, parallel="pipeline")
    run = timing.generation(BIG, H100, batch=8, n_gpus=4, parallel="pipeline")
    per_second = 4 * H100.price_per_hour / 3600
    assert pipeline["output"] == pytest.approx(per_second * run["tpot"] / (4 * 8) * 1e6)
    assert tensor["output"] != pipeline["output"]


def test_break_even_is_cost_at_full_use_over_the_price():
    even = formulas.break_even_utilization(formulas.c / formulas.u, formulas.p_out)
    assert even == formulas.c / formulas.p_out
    full = economics.token_costs(SMALL, H100, batch=32)
    api_in, api_out = 0.2, 0.6
    api_request = (2048 * api_in + 256 * api_out) / 1e6
    got = economics.break_even_utilization(
        SMALL, H100, api_input_price=api_in, api_output_price=api_out, batch=32
    )
    assert got == pytest.approx(full["request"] / api_request, rel=1e-12)
    # At that utilization the self-hosted request costs exactly the API's bill.
    at_even = economics.token_costs(SMALL, H100, batch=32, utilization=got)
    assert at_even["request"] == pytest.approx(api_request, rel=1e-12)


def test_break_even_can_exceed_one_when_the_batch_is_too_small():
    assert (
        economics.break_even_utilization(
            BIG, H100, api_input_price=0.05, api_output_price=0.05, batch=1, n_gpus=4
        )
        > 1
    )


def test_api_prices_are_dated_and_sourced():
    prices = economics.api_prices()
    assert {p["model"] for p in prices} >= {"llama-3.1-8b", "llama-3.3-70b"}
    for entry in prices:
        assert entry["model"] in ia.model_names()
        assert entry["input"] > 0 and entry["output"] > 0
        assert len(entry["date"]) == 10 and entry["date"][4] == "-"
        assert "http" in entry["source"]
    with pytest.raises(KeyError, match="no API price for 'gpt2'"):
        economics.api_prices("gpt2")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"utilization": 0.0}, "utilization must be a number from 0.001 to 1"),
        ({"utilization": 1.5}, "utilization must be a number from 0.001 to 1"),
        ({"utilization": True}, "utilization must be a number"),
        ({"price_per_hour": -1.0}, "price_per_hour must be a positive number of dollars"),
        ({"price_per_hour": math.nan}, "price_per_hour must be a positive number of dollars"),
        ({"batch": 0}, "batch must be a whole number from 1 up"),
        ({"compute_efficiency": 2.0}, "compute_efficiency must be a number from 0.001 to 1"),
    ],
)
def test_bad_input_raises_a_clear_error(options, message):
    with pytest.raises(ValueError, match=message):
        economics.token_costs(SMALL, H100, **options)


def test_a_gpu_name_is_a_gpu():
    assert economics.token_costs(SMALL, "h100-sxm") == economics.token_costs(SMALL, H100)


def test_a_gpu_without_a_price_needs_one():
    with pytest.raises(ValueError, match="no example price per hour"):
        economics.token_costs(SMALL, PricelessGPU())
    costs = economics.token_costs(SMALL, PricelessGPU(), price_per_hour=1.0)
    assert costs["price_date"] is None
    priced = replace(PricelessGPU(), price_per_hour=1.0, price_date="2026-01-01")
    assert economics.token_costs(SMALL, priced)["input"] == costs["input"]


def test_bad_api_prices_raise():
    with pytest.raises(
        ValueError, match="api_output_price must be a non-negative number of dollars"
    ):
        economics.break_even_utilization(SMALL, H100, api_input_price=0.1, api_output_price=-0.1)
    with pytest.raises(ValueError, match="charges nothing"):
        economics.break_even_utilization(SMALL, H100, api_input_price=0, api_output_price=0)


def test_cached_input_tokens_at_an_api_and_self_hosted():
    (deepseek,) = economics.api_prices("deepseek-v3")
    assert deepseek["cached_input"] < deepseek["input"] and "http" in deepseek["source"]
    # (1 - h) p_in + h p_c, by hand at a quarter of the tokens cached.
    blended = 0.75 * deepseek["input"] + 0.25 * deepseek["cached_input"]
    assert economics.api_input_price(deepseek, 0.25) == pytest.approx(blended, rel=1e-12)
    assert economics.api_input_price(deepseek, 0.0) == deepseek["input"]
    # Self-hosted: the prefill's seconds, shorter with hits, over all the prompt tokens.
    plain = economics.token_costs(SMALL, H100, batch=8)
    cached = economics.token_costs(SMALL, H100, batch=8, prefix_hit_rate=0.5)
    assert cached["input"] / plain["input"] == pytest.approx(
        cached["ttft"] / plain["ttft"], rel=1e-12
    )
    assert cached["input"] < 0.6 * plain["input"] and cached["output"] == plain["output"]


def test_cached_input_prices_refuse_what_is_not_there():
    (together, *_) = economics.api_prices("llama-3.1-8b")
    with pytest.raises(KeyError, match="publishes no cached-input price.*deepseek-v3 at DeepSeek"):
        economics.api_input_price(together, 0.5)
    (deepseek,) = economics.api_prices("deepseek-v3")
    with pytest.raises(ia.ArgumentError, match="prefix_hit_rate must be a number from 0 to 1"):
        economics.api_input_price(deepseek, 1.2)
