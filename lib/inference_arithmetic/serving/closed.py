"""The closed loop: C users, each sending its next request as soon as its last one ends, on the
continuously batching engine of ``serving.engine`` (as vLLM's ``bench serve --max-concurrency``,
trtllm-bench and SGLang's bench_serving run it).

>>> s = stream_scenario("llama-3.1-8b", "h100-sxm", 1024, 128)
>>> one = loop_state(s, 1)
>>> round(one["concurrency"]), one["in_engine"], one["queued"]
(1, 1, 0)
>>> many = loop_state(s, 64)
>>> many["throughput"] > 10 * one["throughput"], many["tpot"] > one["tpot"]
(True, True)

No arrival rate is given: it is an output. The engine holds N = min(C, its capacity) of the
users' requests (``engine.capacity``: its memory and its ``max_num_seqs``); the others wait in
a queue. A request is sent at the end of the step that finished its user's last one, and the
next steps prefill it, first come first served, in what the token budget leaves beside the
decodes. As the run starts, all C prompts arrive at once (the burst), so the requests that
finish together are sent again together: they stay in cohorts, as many prompts as a step's
budget takes (or one prompt, in chunks, when it takes more than a step). Over one request's
cycle, its ``n_p`` prefill steps then ``O - 1`` decodes, the engine takes two kinds of step
(each timed by the engine's step, ``Engine.steps``):

- P prefill steps, each a cohort's prompt tokens beside ``N - q`` decodes (q the prompts a step
  holds), P = N / q;
- the rest of the cycle's steps, which only decode: every request not prefilling, their
  decodes in all ``N (O - 1)`` a cycle.

When the prompts need more steps than a request's cycle has (P > n_p + O - 1), prefill bounds
the engine: every step prefills what the budget leaves, ``b - D``, beside D decodes, and the
requests prefilled a step, ``(b - D) / T``, each decode ``O - 1`` steps: D = (O - 1)(b - D) / T,
whatever N. The rest of the N requests wait in the engine for their prefill.

Little's law turns the cycle into a rate: ``requests_per_s = N / request_time`` in the engine, and
the users that wait outside add ``(C - N) / requests_per_s`` to each request's first token. One
user is a single stream: its prompt prefilled alone, then decodes of a batch of one.

``first_wave`` is the burst with which such a run starts: the first min(C, capacity) prompts,
sent at once, prefilled in order in the budget left beside the decodes of those before them;
their mean and last first-token times. ``serving.simulation.loop_phases`` runs the same loop
step by step and checks both.
"""

from __future__ import annotations

import math

import numpy as np

from inference_arithmetic.serving.engine import capacity, engine_of, stream_scenario
from inference_arithmetic.serving.scenario import Scenario
from inference_arithmetic.serving.simulation import stepping_together

__all__ = ["loop_state", "first_wave", "stream_scenario"]


def _step(engine, decodes: float, tokens: float) -> float:
    """One step's time: ``decodes`` decoding requests beside ``tokens`` prompt tokens."""
    return float(engine.steps(float(decodes), np.array([float(tokens)]))[0])


def loop_state(s: Scenario, users: int) -> dict:
    """The steady state of ``users`` concurrent users of the engine of ``s`` (made as
    ``stream_scenario`` makes it; one engine whose GPUs step together, not a pipeline), in the
    module docstring's terms. Returns ``ttft``, ``tpot`` (per output token), ``request_time``
    (seconds, from sending to the last token, the queue's wait included), ``requests_per_s``,
    ``throughput`` (output tokens per second), ``concurrency`` (the users), ``in_engine`` (N),
    ``queued`` (users waiting outside the engine), ``mean_step`` (seconds, the mean over the
    cycle's steps), ``decoding`` (the mean decodes of a step) and ``decoding_variance`` (their
    variance over the cycle's steps), ``prefill_bound`` (whether every step prefills) and
    ``first_wave`` (``first_wave``)."""
    engine = engine_of(stepping_together(s))
    n = min(users, capacity(s))
    steps_each, rows = engine.O - 1, engine.rows  # decode steps of a request; budget per decode
    tokens, budget = float(engine.new), float(engine.budget)
    cycle = steps_each + 1  # steps from sending to the last token, at no wait (one prefill step)
    decodes_p = 0.0  # the decodes beside a prefill step's prompts: a fixed point with its room
    for _ in range(50):
        room = max(budget - rows * decodes_p, 1.0)
        span = math.ceil(tokens / room)  # one prompt's prefill steps, alone
        cycle = span + steps_each
        q = min(room / tokens, n)  # prompts a prefill step takes, when they wait
        alone = span > 1 and n * span <= cycle  # each chunked prompt prefilled by itself
        p = n * span if alone else max(n / q, span)  # prefill steps a cycle
        bound = p > cycle
        new = max(n - max(q, 1.0), 0.0) if not bound else min(steps_each * q, n - q)
        if abs(new - decodes_p) <= 1e-9 * max(new, 1.0):
            break
        decodes_p = new
    if alone:  # span - 1 full chunks, then the step with the rest of the prompt
        rest = tokens - (span - 1) * room
        t_full, t_rest = (_step(engine, decodes_p, x) for x in (room, rest))
        kinds = [(n * (span - 1), decodes_p, t_full), (n, decodes_p, t_rest)]
        first = (span - 1) * t_full + t_rest
    else:
        t_p = _step(engine, decodes_p, min(room, q * tokens))
        kinds, first = [(p, decodes_p, t_p)], span * t_p
    if not bound:  # each request's cycle: its own prefill, and others' among its decodes
        if cycle > p:
            decodes_d = (n * steps_each - p * decodes_p) / (cycle - p)
            kinds.append((cycle - p, decodes_d, _step(engine, decodes_d, 0.0)))
        in_engine_time = sum(k * t for k, _, t in kinds)
        tpot = (in_engine_time - first) / steps_each
    else:  # prefill bounds it: q requests prefilled a step, each step alike
        t_p = kinds[0][2]
        in_engine_time = n / q * t_p
        tpot = t_p
        first = in_engine_time - steps_each * t_p
    shares = np.array([k for k, _, _ in kinds]) / sum(k for k, _, _ in kinds)
    counts = np.array([d for _, d, _ in kinds])
    mean_step = float(shares @ np.array([t for _, _, t in kinds]))
    rate = n / in_engine_time
    wait = (users - n) / rate  # Little's law on the queue outside the engine
    decoding = float(shares @ counts)
    return {
        "ttft": first + wait,
        "tpot": tpot / s.tokens_per_step,
        "request_time": in_engine_time + wait,
        "requests_per_s": rate,
        "throughput": rate * engine.mean_output,
        "concurrency": users,
        "in_engine": n,
        "queued": users - n,
        "mean_step": mean_step,
        "decoding": decoding,
        "decoding_variance": float(shares @ (counts - decoding) ** 2),
        "prefill_bound": bound,
        "first_wave": first_wave(s, users),
    }


def first_wave(s: Scenario, users: int) -> dict:
    """The burst with which a closed loop of ``users`` starts: the first min(``users``,
    capacity) prompts arrive at once and the engine prefills them in order, each step in the
    budget left beside the decodes of those already prefilled (until their last token). Returns
    their mean first-token time ``ttft``, the ``last`` one's, and their number, ``requests``
    (the users past the capacity wait for the first requests to end)."""
    engine = engine_of(s)
    n = min(users, capacity(s))
    tokens, budget, steps_each = float(engine.new), float(engine.budget), engine.O - 1
    # The schedule does not depend on the steps' times: made first, then timed at once.
    left, done, plan, finished_at = n * tokens, [], [], []  # done: the prefilled ones' steps left
    while left > 1e-9:
        decodes = len(done)
        take = min(max(budget - engine.rows * decodes, 1.0), left)
        plan.append((decodes, take))
        before, left = n * tokens - left, left - take
        finished = math.floor((before + take) / tokens + 1e-9) - math.floor(before / tokens + 1e-9)
        done = [d - 1 for d in done if d > 1] + [steps_each] * finished
        finished_at += [len(plan) - 1] * finished
    decodes, prompts = (np.array(x, dtype=float) for x in zip(*plan, strict=True))
    ends = np.cumsum(engine.steps(decodes, prompts))
    firsts = ends[np.array(finished_at)]
    return {"ttft": float(np.mean(firsts)), "last": float(firsts[-1]), "requests": n}
