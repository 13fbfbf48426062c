"""Continuous batching: an engine that schedules every step anew.

Every step decodes one token of each of the B_d running requests (S tokens cached each, on
average) and prefills P_t prompt tokens of the requests that arrived (chunked prefill, under
a token budget). Its time is the roofline of its compute and memory, plus tensor
parallelism's messages, by the serving conventions of ``formulas.latency``; ``ia.continuous``
puts the steady state of an arrival rate into it. Derived in chapter 10, whose static
batches (chapter 09) it extends to a stream of requests.

>>> from inference_arithmetic.models.config import model
>>> sorted(s.name for s in step(model("llama-3.1-8b")).free_symbols)[:4]
['attention_efficiency', 'bandwidth', 'bandwidth_efficiency', 'bytes_per_number']
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core.symbols import B, B_d, D, P_t, S, T, V
from inference_arithmetic.formulas import latency, roofline, transformer

__all__ = ["step_sides", "step", "pipeline_cycle", "pipeline_period", "pipeline_wait"]


def step_sides(arch, parallel="tensor"):
    """A step of B_d decoding requests and P_t prompt tokens: its compute time, memory time
    and message time (a pipeline's: the whole model's work, stage after stage, and the
    hand-offs between them, ``latency.communication_time``).

    Compute: every token through the weights (k experts of an MoE layer), each decoding
    request's attention over its S cached tokens, each prompt token's over the tokens of its
    prompt of T before it (causal: P_t (T + 1) / 2 pairs), logits for the decodes; attention
    at its own rate (``latency.serving_compute_time``). Memory: the weights the step's tokens
    read (``latency.weight_bytes_read``) and every decoding request's cache, split over the
    GPUs as ``latency.kv_split`` says. Without a prompt it is ``latency.decode_step_time``.
    """
    per_token = 2 * transformer.over_layers(arch, transformer.matmul_weights(arch, "absorbed"))
    decoding = transformer.attention_flops(arch, mla="absorbed").subs({B: B_d, T: 1})
    prompts = transformer.attention_flops(arch, causal=True, mla="absorbed").subs(S, 0)
    attention = decoding + prompts.subs(B, P_t / T)  # P_t / T prompts of T tokens
    flops = per_token * (B_d + P_t) + attention + 2 * D * V * B_d
    split = latency.work_split(parallel)  # n with tensor parallelism, 1 in a pipeline
    compute = latency.serving_compute_time(flops, attention) / split  # 1/n each
    weights = latency.weight_bytes_read(arch, B_d + P_t) / split
    cache = latency.cache_bytes(arch).subs(B, B_d)
    if latency.check_parallel(parallel) == "tensor":
        cache = cache / latency.kv_split(arch)
    memory = roofline.memory_time(weights + cache)
    return compute, memory, latency.communication_time(arch, B_d + P_t, parallel)


def step(arch, parallel="tensor"):
    """Seconds of one step: the roofline of its compute and memory, plus its messages."""
    compute, memory, messages = step_sides(arch, parallel)
    return latency.roof(compute, memory) + messages


def pipeline_cycle(n: int):
    """A pipeline of n stages with n micro-batches in flight, their steps t_1..t_n (each through
    every stage, an equal part of it per stage): the cycle in which each takes one step. Each
    stage serves the n in turn, so a cycle is at least the sum of their stage times, t_i / n
    summed (the mean step); a micro-batch's next step waits for it to pass all n stages, so
    at least its own t_i too. The first is the mean of the t_i, never above the largest: the
    cycle is the slowest micro-batch's step. Returns (the steps' symbols, the cycle).

    >>> pipeline_cycle(2)[1]
    Max(t_1, t_2, t_1/2 + t_2/2)
    """
    steps = sympy.symbols(f"t_1:{n + 1}", positive=True)
    return steps, sympy.Max(sum(steps) / n, *steps)


def pipeline_period(n=None):
    """A micro-batch's mean step in a steady pipeline of n stages (``pipeline_cycle``): its own
    step t, or longer when the slowest of the other n - 1, each drawn from the distribution G
    of the steps, is longer: E[max(t, M)] = t + the integral from t up of P(M > x), with
    P(M <= x) = G(x)^(n - 1) (n symbolic if not given). ``serving.engine`` sums it over the
    steps of its chain (``Engine.period``).

    >>> pipeline_period(1)
    t
    """
    t, x = sympy.symbols("t x", positive=True)
    n = sympy.Symbol("n", positive=True, integer=True) if n is None else n
    below = sympy.Function("G")(x)
    slower = 1 - below ** (n - 1)  # P(M > x); none with one stage
    return t + (sympy.Integral(slower, (x, t, sympy.oo)) if slower != 0 else 0)


def pipeline_wait(moment=1):
    """``pipeline_period`` where G takes finitely many values, as a chain's steps do: the
    other micro-batches' steps are x_j (ascending) with shares g_j, G = g_1 + ... + g_j at x_j.
    The slowest of n - 1 draws is x_j with probability G^(n - 1) - (G - g)^(n - 1), and a
    micro-batch of step t then lasts Max(t, x_j): this term, summed over j, is E[max(t, M)]
    (``serving.engine.Engine.period``, and the calculator's page, printed to JavaScript). With
    ``moment`` 2 the sum is E[max(t, M)^2], whence the spread of the step (``Engine.spread``).

    >>> pipeline_wait()
    (G**(n - 1) - (G - g)**(n - 1))*Max(t, x)
    """
    t, x = sympy.symbols("t x", positive=True)
    below, share = sympy.symbols("G g", real=True)  # a stationary share may be -1e-19
    n = sympy.Symbol("n", positive=True, integer=True)
    return (below ** (n - 1) - (below - share) ** (n - 1)) * sympy.Max(t, x) ** moment
