"""What a token costs: GPU-hours turned into dollars per million tokens.

Derived in chapter 14 (economics). A GPU rented at c dollars an hour costs the same whether it
computes or idles, so a token's price is the GPU time it takes, times the price per second,
divided by the fraction u of the paid time that does useful work. Prefill and decode take very
different times per token (chapters 08 and 09), so input and output tokens get two prices.

Every entry point that prices tokens (``ia.calculate``, ``ia.token_costs``, ``ia.sweep``,
``ia.plan``, the command line, the calculator's page) names its costs as ``COST_KEYS`` says:
``input``, USD per million input tokens, the prefill's GPU time; ``output``, USD per million
output tokens, the decode's GPU time (the split an API's price sheet makes); ``blended``, USD
per million output tokens, all the GPU time paid for (prefill and decode, and in a plan idle
time too) over the output tokens (``blended_cost``; at a rate, ``output_cost_at_rate``).

>>> cost_per_second()
n_gpus*price_per_hour/3600
>>> seconds, tokens = sympy.symbols("seconds tokens", positive=True)
>>> cost_per_million_tokens(seconds, tokens)
2500*n_gpus*price_per_hour*seconds/(9*utilization*tokens)
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core.symbols import B, O, T, c, h_p, n_gpus, p_c, p_in, p_out, u
from inference_arithmetic.formulas import latency

__all__ = [
    "COST_KEYS",
    "COSTS",
    "cost_per_second",
    "cost_per_million_tokens",
    "cost_per_million_input_tokens",
    "cost_per_million_output_tokens",
    "output_cost_at_rate",
    "request_cost_at_rate",
    "input_cost",
    "output_cost",
    "request_cost",
    "blended_cost",
    "api_request_cost",
    "api_input_price_with_cache",
    "break_even_utilization",
]

MILLION = 10**6
SECONDS_PER_HOUR = 3600

COST_KEYS = {
    "input": "USD per million input tokens, the prefill's GPU time",
    "output": "USD per million output tokens, the decode's GPU time (the split an API's price "
    "sheet makes)",
    "blended": "USD per million output tokens, all the GPU time paid for (prefill and decode, "
    "and in a plan idle time too) over the output tokens",
}
"""The one meaning of each cost key, wherever the library returns costs: a static batch
(``ia.calculate``, ``ia.token_costs``, ``ia.sweep``) gives all three, a plan (``ia.plan``)
``blended`` only."""
COSTS = "``input``, ``output`` and ``blended`` as ``formulas.economics.COST_KEYS`` says"
"""The words in which every entry point's docstring points to ``COST_KEYS``."""


def cost_per_second():
    """Dollars per second of n GPUs rented at c dollars per GPU-hour, busy or not."""
    return c * n_gpus / SECONDS_PER_HOUR


def cost_per_million_tokens(seconds, tokens):
    """Dollars per million tokens when ``tokens`` tokens take ``seconds`` of the n GPUs.

    Only a fraction u of the paid time does such work (the rest waits for requests), so each
    busy second carries 1/u seconds of rent.
    """
    return cost_per_second() * seconds / u * MILLION / tokens


def cost_per_million_input_tokens(seconds, parallel="tensor"):
    """Dollars per million prompt tokens when a prefill of the B T prompt tokens of each batch
    in flight (``latency.batches_in_flight``) takes ``seconds``."""
    return cost_per_million_tokens(seconds, latency.batches_in_flight(parallel) * B * T)


def cost_per_million_output_tokens(seconds, parallel="tensor"):
    """Dollars per million output tokens when a decode step, one token for each of the B
    requests of each batch in flight, takes ``seconds``."""
    return cost_per_million_tokens(seconds, latency.batches_in_flight(parallel) * B)


def output_cost_at_rate(rate):
    """Dollars per million output tokens of the n GPUs serving ``rate`` requests a second of O
    output tokens each, their rent paid busy or idle: a second's rent over the rate O tokens
    of that second (the rate says how busy they are, so u = 1).

    >>> output_cost_at_rate(sympy.Symbol("requests_per_s", positive=True))
    2500*n_gpus*price_per_hour/(9*output_len*requests_per_s)
    """
    return cost_per_million_tokens(1, rate * O).subs(u, 1)


def request_cost_at_rate(rate):
    """Dollars per request of the n GPUs serving ``rate`` requests a second, their rent paid
    busy or idle: a million output tokens' cost (``output_cost_at_rate``) over the requests
    that produce them.

    >>> request_cost_at_rate(sympy.Symbol("requests_per_s", positive=True))
    n_gpus*price_per_hour/(3600*requests_per_s)
    """
    return output_cost_at_rate(rate) * O / MILLION


def input_cost(arch, parallel="tensor"):
    """Dollars per million prompt tokens: a prefill of B prompts of T tokens reads the weights
    once for all B T of them and waits on compute (chapter 08)."""
    return cost_per_million_input_tokens(latency.prefill_time(arch, parallel), parallel)


def output_cost(arch, mla="absorbed", parallel="tensor"):
    """Dollars per million output tokens: a decode step reads the weights and every cache for
    only B tokens, one per request (chapter 09)."""
    step = latency.decode_step_time(arch, mla, parallel)
    return cost_per_million_output_tokens(step, parallel)


def request_cost(input_price, output_price):
    """Dollars of one request of T input and O output tokens at the given prices per million
    tokens, the way an API bills it.

    >>> request_cost(p_in, p_out)
    api_input_price*seq_len/1000000 + api_output_price*output_len/1000000
    """
    return (T * input_price + O * output_price) / MILLION


def blended_cost(input_price, output_price):
    """Dollars per million output tokens of all the GPU time a request of T input and O output
    tokens takes, at the given prices per million input and output tokens: its cost
    (``request_cost``) over its O output tokens.

    >>> blended_cost(p_in, p_out)
    (api_input_price*seq_len + api_output_price*output_len)/output_len
    """
    return request_cost(input_price, output_price) * MILLION / O


def api_request_cost():
    """Dollars an API charges for a request of T input and O output tokens."""
    return request_cost(p_in, p_out)


def api_input_price_with_cache():
    """Dollars an API charges for a million input tokens of which a share h_p hit its prompt
    cache: cached tokens at p_c, the rest at p_in (cache writes, which some APIs charge more
    for, are not counted).

    >>> api_input_price_with_cache()
    api_cached_input_price*prefix_hit_rate + api_input_price*(1 - prefix_hit_rate)
    """
    return (1 - h_p) * p_in + h_p * p_c


def break_even_utilization(cost, price):
    """The utilization at which ``cost`` (an expression in u, like ``cost_per_million_tokens``)
    equals ``price``: busier than that, renting GPUs is cheaper than paying ``price``.

    Cost falls as 1/u, so the answer is the cost at full utilization over the price; above 1,
    no utilization reaches the price.

    >>> break_even_utilization(c / u, p_out)
    price_per_hour/api_output_price
    """
    (solution,) = sympy.solve(sympy.Eq(cost, price), u)
    return solution
