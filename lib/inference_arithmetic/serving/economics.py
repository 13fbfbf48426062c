"""Dollars, from the book's formulas, for a real model on a real, rented GPU.

>>> import inference_arithmetic as ia
>>> m, g = ia.model("llama-3.1-8b"), ia.gpu("h100-sxm")
>>> costs = token_costs(m, g, batch=64)
>>> costs["input"] < costs["output"]  # dollars per million tokens
True
>>> costs["price_per_hour"] == g.price_per_hour, costs["price_date"] == g.price_date
(True, True)

``token_costs`` times a batch of identical requests with ``timing.generation`` (same arguments,
same checks, same default efficiencies) and prices the GPU time with ``formulas.economics``:
the prefill's seconds spread over its B T prompt tokens, a decode step's over its B output
tokens. The price is the GPU's dated example price unless ``price_per_hour`` is given.
Derived in chapter 14.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

import sympy

from inference_arithmetic.core import checks
from inference_arithmetic.core.numeric import ArgumentError, UnknownName, numeric
from inference_arithmetic.formulas import economics
from inference_arithmetic.serving import timing
from inference_arithmetic.serving.scenario import Scenario, deployment_keywords

__all__ = ["token_costs", "break_even_utilization", "api_prices", "api_input_price"]

# Stand-ins for the times that timing.run measures and the prices they give.
_seconds = sympy.Symbol("seconds", positive=True)
_input, _output = sympy.symbols("input_cost output_cost", positive=True)


@functools.lru_cache(maxsize=8)
def _formulas(parallel):
    per_input = economics.cost_per_million_input_tokens(_seconds, parallel)
    per_output = economics.cost_per_million_output_tokens(_seconds, parallel)
    request = economics.request_cost(_input, _output)
    # The self-hosted request at full utilization against the API's bill for the same request.
    full = economics.request_cost(_input / economics.u, _output / economics.u)
    even = economics.break_even_utilization(full, economics.api_request_cost())
    return numeric(per_input), numeric(per_output), numeric(request), numeric(even)


def _price(gpu, price_per_hour):
    """The price per GPU-hour to use, its date and its source (``GPU.price``, required)."""
    price, date, source = gpu.price(price_per_hour, required=True)
    return float(price), date, source


@deployment_keywords
def token_costs(
    model,
    gpu,
    *,
    batch: int = 1,
    prompt_len: int = 2048,
    output_len: int = 256,
    price_per_hour: float | None = None,
    utilization: float = 1.0,
    **deployment,
) -> dict:
    """Dollars per million input tokens, per million output tokens and per request, for a batch
    of ``batch`` identical requests served on rented GPUs (``n_gpus`` of them).

    ``price_per_hour`` is USD per GPU-hour (default: the GPU's dated example price);
    ``utilization`` the fraction of paid hours the GPUs do such work; the other settings are the
    ``Scenario``'s, as in ``timing.generation``. With ``prefix_hit_rate`` the prefill computes
    only the uncached tokens, and its seconds are spread over all the prompt tokens, cached or
    not, as an API counts them. Returns
    ``input`` and ``output`` ($ per million tokens), ``request`` ($ per request, its T input
    and O output tokens priced at those rates), ``price_per_hour``, ``price_date`` (None for a
    given price), ``price_source``, ``utilization``, and the ``ttft`` and ``tpot`` the costs
    come from (seconds).
    """
    utilization = checks.fraction("utilization", utilization)
    workload = dict(batch=batch, prompt_len=prompt_len, output_len=output_len)
    s = Scenario(model, gpu, **workload, **deployment)
    price, date, source = _price(s.gpu, price_per_hour)
    run = timing.run(s)
    per_input, per_output, request, _ = _formulas(s.parallel)
    values = {**s.values(), "price_per_hour": price, "utilization": utilization}
    per_input = per_input.from_values({**values, "seconds": run["ttft"]})
    per_output = per_output.from_values({**values, "seconds": run["tpot"]})
    return {
        "input": per_input,
        "output": per_output,
        "request": request.from_values(
            {**values, "input_cost": per_input, "output_cost": per_output}
        ),
        "price_per_hour": price,
        "price_date": date,
        "price_source": source,
        "utilization": float(utilization),
        "ttft": run["ttft"],
        "tpot": run["tpot"],
    }


@deployment_keywords
def break_even_utilization(
    model,
    gpu,
    *,
    api_input_price: float,
    api_output_price: float,
    batch: int = 1,
    prompt_len: int = 2048,
    output_len: int = 256,
    price_per_hour: float | None = None,
    **deployment,
) -> float:
    """The fraction of paid GPU time that must do work for self-hosting a request of
    ``prompt_len`` input and ``output_len`` output tokens to cost what an API charges for it
    (``api_input_price`` and ``api_output_price``, USD per million tokens).

    Busier than this, the GPUs are cheaper; a value above 1 means no utilization is enough at
    this batch and price. The other arguments are ``token_costs``'s.
    """
    checks.amount("api_input_price", api_input_price, "dollars")
    checks.amount("api_output_price", api_output_price, "dollars")
    if api_input_price == 0 and api_output_price == 0:
        raise ArgumentError("an API that charges nothing cannot be beaten: give a positive price")
    request = dict(batch=batch, prompt_len=prompt_len, output_len=output_len)
    full = token_costs(model, gpu, **request, price_per_hour=price_per_hour, **deployment)
    *_, even = _formulas(deployment.get("parallel", "tensor"))
    return even(
        seq_len=prompt_len,
        output_len=output_len,
        input_cost=full["input"],
        output_cost=full["output"],
        api_input_price=api_input_price,
        api_output_price=api_output_price,
    )


@functools.cache
def _api_prices() -> tuple:
    data = resources.files("inference_arithmetic.serving") / "data"
    text = data.joinpath("api_prices.json").read_text()
    return tuple(json.loads(text)["prices"])


def api_prices(model: str | None = None) -> list[dict]:
    """Dated list prices of hosted APIs (USD per million tokens), each with its source;
    only those of the registry model ``model`` if given (``KeyError`` if there are none)."""
    prices = [dict(entry) for entry in _api_prices()]
    if model is None:
        return prices
    chosen = [entry for entry in prices if entry["model"] == model]
    if not chosen:
        known = sorted({entry["model"] for entry in prices})
        raise UnknownName(f"no API price for {model!r}; prices exist for: {', '.join(known)}")
    return chosen


@functools.cache
def _cached_input():
    return numeric(economics.api_input_price_with_cache())


def api_input_price(entry: dict, prefix_hit_rate: float) -> float:
    """Dollars a million input tokens cost at an API price ``entry`` (``api_prices``) when a
    share ``prefix_hit_rate`` of them hit its prompt cache
    (``formulas.economics.api_input_price_with_cache``); ``KeyError`` for a price without a
    cached-input rate."""
    rate = checks.share("prefix_hit_rate", prefix_hit_rate)
    if "cached_input" not in entry:
        with_cache = [
            f"{e['model']} at {e['provider']}" for e in _api_prices() if "cached_input" in e
        ]
        raise UnknownName(
            f"{entry.get('provider')} publishes no cached-input price for {entry.get('model')}; "
            f"prices with one: {', '.join(with_cache)}"
        )
    prices = {"api_input_price": entry["input"], "api_cached_input_price": entry["cached_input"]}
    return _cached_input()(**prices, prefix_hit_rate=rate)
