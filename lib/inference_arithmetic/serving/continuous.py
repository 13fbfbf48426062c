"""The colocated steady state: one engine that prefills and decodes under an arrival rate, its
times and their percentiles, and the highest rate it keeps up with.

>>> r = steady_state("llama-3.1-8b", "h100-sxm", requests_per_s=4.0, prompt_len=1024,
...                  output_len=128)
>>> round(r["throughput"])  # output tokens per second: 4 requests/s x 128 tokens
512
>>> r["tpot"] < r["ttft"] < r["request_time"]
True

``steady_state`` makes the stream's scenario (``engine.stream_scenario``), finds its replicas'
saturation rate (``saturation_rate``: the rate at which the engine's chain no longer keeps up)
and evaluates one replica's engine (``serving.engine``) at its share of the rate: the chain's
fixed point, the steady state's relations (``queueing.STEADY``) and the percentiles of each
request's times. Past the rate at which no steady state exists (the decodes' fluctuations feed
back as much as they add), or the memory cannot hold the running requests' caches, or a step
would need more than the token budget, it raises ``ValueError`` naming the saturation rate
(``SATURATED``). ``serving.simulation`` runs the same engine step by step to check it.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from inference_arithmetic.core import cache, checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.symbols import O, R
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.serving import bands, closed
from inference_arithmetic.serving.engine import engine_of, stream_scenario
from inference_arithmetic.serving.lengths import Lengths
from inference_arithmetic.serving.queueing import RATE
from inference_arithmetic.serving.scenario import (
    ONE_TOKEN,
    Scenario,
    check_decodes,
    deployment_keywords,
)

__all__ = ["steady_state", "steady_state_of", "saturation_rate", "REPLICAS", "SATURATED"]
__all__ += ["ONE_TOKEN", "BANDED", "CLOSED_BANDED", "AGREEMENT", "closed_loop_of"]
__all__ += ["ONE_LOAD", "ONE_REPLICA"]

ONE_LOAD = (
    "requests_per_s (an arrival rate: an open loop) or concurrency must be given, not both "
    "(concurrency: users each sending the next request when the last one ends, a closed loop)"
)
"""The message of ``steady_state`` given both loads, or neither."""
ONE_REPLICA = (
    "a closed loop (concurrency) runs on one replica: give its users to each replica, "
    "replicas=1 (the throughput per GPU is one replica's)"
)
"""The message of a closed loop asked of several replicas."""

AGREEMENT = {"means": 0.10, "percentiles": 0.15, "percentiles_up_to": 0.85}
"""How close ``steady_state`` comes to ``serving.simulation``'s run of the same engine, as the
library's tests hold it (tests/lib/test_continuous.py, test_disaggregated.py) and the book
says: each mean, TTFT and TPOT, within ``means`` (relative) of the simulation's up to 0.9 of
the saturation rate, and each p90 and p99 within ``percentiles`` up to ``percentiles_up_to``
of it. Held at vLLM 0.11's 8,192-token step (the default) and at 0.7's 512; a pipeline's at
0.7's only (tests/lib/test_pipeline.py says why)."""

SATURATED = (
    "{rate} requests per second saturate {model} on {n_gpus} x {gpu}: it keeps up with at most "
    "{saturation} requests per second of {prompt_len} + {output_len} tokens"
)
"""The message past saturation (the page fills the same template)."""
SATURATED_KINDS = {"rate": "number", "saturation": "number"}
"""How ``SATURATED`` prints its two rates (``format.show``'s kinds; the page's ``iaShow``)."""
REPLICATED = "{replicas} replicas of {n_gpus}"
"""How ``SATURATED`` names the GPUs of more than one replica."""
BANDED = {
    **bands.PER_TOKEN,
    "request_time": ("request", False),
    "saturation_rate": ("request", True),
}
"""The predictions of ``steady_state`` that carry a band (``serving.bands``): key -> (kind,
whether it is a speed). Its throughput is the rate's, not a prediction."""
CLOSED_BANDED = {key: kind for key, kind in BANDED.items() if key != "ttft"}
"""Those of a closed loop (``steady_state(..., concurrency=...)``): all but its TTFT. The loop's
first token waits on how its users' requests bunch into cohorts, which neither the simulation
holds it to (its tests hold the throughput and the time per token) nor the validation set
measured, so the open loop's band would be a borrowed one."""

_one_saturation = sympy.Symbol("replica_saturation", positive=True)
_one_concurrency = sympy.Symbol("replica_concurrency", positive=True)
REPLICAS = {
    "share": RATE / R,  # each of R replicas serves an equal share of the requests
    "concurrency": R * _one_concurrency,
    "saturation_rate": R * _one_saturation,
    "utilization": RATE / (R * _one_saturation),
    "throughput": RATE * O,  # output tokens per second: every request's O tokens
}
"""R replicas of one engine: the rate each serves, and the whole deployment's concurrency,
saturation rate, utilization and throughput from one replica's (``replica_concurrency``,
``replica_saturation``). The library evaluates them; the calculator's page prints them."""


def _replica_formula(key) -> dict:
    return {key: REPLICAS[key]}


def replicas(key: str, values: dict) -> float:
    """``REPLICAS[key]`` at ``values`` (checked, unless its output is a workload's mean
    length, ``serving.lengths``)."""
    formula = cache.formulas(_replica_formula, key)
    if float(values.get("output_len", 1)).is_integer():
        return formula.from_values(values)[key]
    return float(formula.bind({}, *formula.args)(*(values[a] for a in formula.args))[0])


@deployment_keywords
def steady_state(
    model,
    gpu,
    *,
    requests_per_s=None,
    concurrency=None,
    prompt_len=2048,
    output_len=256,
    n_gpus=1,
    dtype=AUTO,
    **deployment,
) -> dict:
    """The steady state of ``requests_per_s`` requests a second (an open loop), or of
    ``concurrency`` users in a closed loop (``closed_loop_of``; exactly one of the two), each
    request of ``prompt_len`` and ``output_len`` tokens, on a continuously batching engine
    (module docstring); its token budget per step is the deployment's ``token_budget``.
    ``prompt_len`` and ``output_len`` may be sequences of lengths, each request one pair (as
    ``simulate`` draws them): the steady state of that distribution (``serving.lengths`` says
    which terms need more than its means), on the scenario of the mean lengths.

    Returns ``ttft``, ``tpot``, ``request_time`` (seconds), ``throughput`` (output tokens per
    second), ``concurrency`` (requests in the engine), ``utilization`` (the rate over the
    saturation rate), ``saturation_rate``, the chain's ``mean_step``, ``decoding`` (requests
    decoding in a mean step) and ``decoding_variance``, ``percentiles`` of each request's
    TTFT and TPOT (``{"ttft": {...}, "tpot": {...}}``, each of ``p50``, ``p90`` and ``p99``, as
    ``simulate`` gives them: ``Engine.percentiles``), and ``band``: for ttft, tpot,
    request_time and saturation_rate, the range in which eight of ten held-out measurements
    fell among its group's (``serving.bands``; None with ``step="roofline"``; a key's None
    where no validated group holds the deployment, ``band_note`` saying why). ``ValueError``
    past saturation,
    and for requests of one output token, which never decode (``ONE_TOKEN``). A pipeline
    (``parallel="pipeline"``) is n micro-batches in flight, each the chain at a share of the
    rate, each step lasting the cycle's (``Engine.period``; chapter 12). Expert parallelism
    is one engine, its ranks stepping together, each step timed by the kernels' step of the
    busiest GPU (with ``parallel="expert-dp"`` the token budget is the whole deployment's,
    shared by its data-parallel ranks).

    With ``concurrency``, C users each send their next request as soon as their last one ends
    (as vLLM's ``bench serve --max-concurrency``, trtllm-bench and SGLang's bench_serving run
    them; ``serving.closed``): the same keys, and the rate an output, ``requests_per_s``. Then
    ``concurrency`` is the users, ``in_engine`` those the engine holds (its memory and
    ``max_num_seqs``) and ``queued`` those waiting outside it, whose wait is in ``ttft`` and
    ``request_time``; ``mean_step`` is the mean over a request's cycle of steps, ``decoding``
    and ``decoding_variance`` the mean and variance of a step's decodes over it, and
    ``prefill_bound`` whether every step prefills (the budget, not the memory, bounds the
    engine). ``percentiles`` is None: the loop's steady cycle is the same for every request
    (the simulation's spread comes from the burst's cohorts, which it does not follow).
    ``first_wave`` is the burst with which such a run starts, all C prompts at once: the mean
    first-token time ``ttft`` of its first ``requests`` (as many as the engine holds) and the
    ``last`` one's. Its ``band`` leaves out the TTFT (``CLOSED_BANDED``). One prompt and output
    length (no sequences), one replica, and not a pipeline (``simulation.NO_PIPELINE``).
    """
    if (requests_per_s is None) == (concurrency is None):
        raise checks.ArgumentError(ONE_LOAD)
    if concurrency is not None:
        users = checks.count("concurrency", concurrency)
        prompt_len, output_len = (
            checks.count(name, x)
            for name, x in (("prompt_len", prompt_len), ("output_len", output_len))
        )
        s = stream_scenario(model, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
        return closed_loop_of(s, users)
    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    prompt_len, output_len, lengths = workload(prompt_len, output_len)
    s = stream_scenario(model, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
    return steady_state_of(s, rate, lengths=lengths)


def closed_loop_of(s: Scenario, users: int) -> dict:
    """``steady_state(..., concurrency=users)`` of a Scenario (made with ``batch=1,
    in_waves=True``, one replica): ``closed.loop_state``, with the engine's
    ``saturation_rate``, the ``utilization`` (the loop's rate over it) and the ``band``."""
    check_decodes(s.output_len)
    if s.replicas > 1:
        raise checks.ArgumentError(ONE_REPLICA)
    result = closed.loop_state(s, users)
    result["saturation_rate"] = saturation = saturation_rate(s)
    result["utilization"] = result["requests_per_s"] / saturation
    result["percentiles"] = None
    result["band"] = None
    if s.step == "kernels":
        bands.noted(result, CLOSED_BANDED, bands.scenario_groups(s))
    return result


def workload(prompt_len, output_len):
    """The scenario's lengths and the workload's ``Lengths`` (None) of two single lengths or
    of sequences of them (``serving.lengths``: the scenario of their means)."""
    if (lengths := Lengths.of(prompt_len, output_len, check_decodes)) is None:  # one length each
        return (*(x if np.ndim(x) == 0 else np.ravel(x)[0] for x in (prompt_len, output_len)), None)
    return (*lengths.scenario_lengths(), lengths)


def steady_state_of(s: Scenario, rate: float, percentiles: bool = True, lengths=None) -> dict:
    """``steady_state`` of a Scenario (made with ``batch=1, in_waves=True``) at ``rate``, of
    requests of its lengths or of ``lengths`` (``serving.lengths``; ``s`` of their means). Its
    ``replicas`` share the requests evenly: each is one engine at ``rate / replicas``. Without
    ``percentiles`` (a search on means) their distribution is not worked out: None."""
    check_decodes(s.output_len)
    one = s.replace(replicas=1) if s.replicas > 1 else s
    values = {"requests_per_s": rate, "replicas": s.replicas}
    values["replica_saturation"] = saturation = _one(s, lengths)
    share = replicas("share", values)
    engine = engine_of(one, lengths)
    state = engine.state(share) if share <= saturation else None
    if state is None or not state["ok"]:
        whole = replicas("saturation_rate", values)
        raise checks.ArgumentError(saturated_message(s, rate, whole))
    values["replica_concurrency"] = state["concurrency"]
    result = {
        "ttft": state["ttft"],
        "tpot": state["tpot"] / one.tokens_per_step,  # a step's time over the tokens it yields
        "request_time": state["request_time"],
        "throughput": replicas("throughput", {**values, "output_len": engine.mean_output}),
        **{key: replicas(key, values) for key in ("concurrency", "utilization")},
        "saturation_rate": replicas("saturation_rate", values),
        "mean_step": state["mean_step"],
        # A pipeline's micro-batches decode apart: their counts and variances add.
        "decoding": state["decoding"] * engine.stages,
        "decoding_variance": state["variance"] * engine.stages,
        "percentiles": engine.percentiles(state) if percentiles else None,
    }
    result["band"] = None
    if s.step == "kernels":
        bands.noted(result, BANDED, bands.scenario_groups(s))
    return result


def saturation_rate(s: Scenario, lengths=None) -> float:
    """The highest arrival rate (requests per second) the deployment of ``s`` keeps up with,
    its replicas' together (``output_len`` of 2 up: ``ONE_TOKEN``); of requests of ``lengths``
    (``serving.lengths``; ``s`` of their means) if given."""
    check_decodes(s.output_len)
    saturation = _one(s, lengths)
    return replicas("saturation_rate", {"replicas": s.replicas, "replica_saturation": saturation})


def _one(s: Scenario, lengths: Lengths | None = None) -> float:
    """The saturation rate of one replica of ``s``."""
    return float(_saturation(s.replace(replicas=1) if s.replicas > 1 else s, lengths))


@functools.lru_cache(maxsize=256)
def _saturation(s: Scenario, lengths: Lengths | None = None) -> float:
    engine = engine_of(s, lengths)
    low, high, below = 0.0, 1.0, None  # below: the mean step at ``low``, to start from
    kept = []  # (rate, margin) of the rates kept up with, rising
    while (state := engine.state(high, below)) is not None and state["ok"]:
        kept.append((high, state["margin"]))
        low, high, below = high, 2 * high, state["mean_step"]
    # To a billionth of the range, as thirty halvings would. Where the margins of the rates
    # kept up with point to the rate at which the margin reaches 0 (a line through the last
    # two; a parabola, the margin's bend, through the last three), the rates either side of
    # it, as far as line and parabola disagree, are tried: a bracket that closes faster than
    # halving. A guess outside the bracket is a halving.
    tolerance = (high - low) * 2.0**-30
    while high - low > tolerance:
        rates = [(low + high) / 2]
        if len(kept) > 1 and kept[-1][1] > kept[-2][1]:
            (x0, m0), (x1, m1) = kept[-2:]
            aim = x1 - m1 * (x1 - x0) / (m1 - m0)
            side = abs(aim - x1) / 8
            if len(kept) > 2 and kept[-2][1] > kept[-3][1]:
                (x0, m0), (x1, m1), (x2, m2) = kept[-3:]
                bent = (
                    x0 * m1 * m2 / ((m0 - m1) * (m0 - m2))
                    + x1 * m0 * m2 / ((m1 - m0) * (m1 - m2))
                    + x2 * m0 * m1 / ((m2 - m0) * (m2 - m1))
                )
                side, aim = min(side, 2 * abs(bent - aim)), bent
            side = max(side, tolerance / 4)
            if low < aim - side and aim + side < high:
                rates = [aim - side, aim + side]
        for rate in rates:
            state = engine.state(rate, below)
            if state is None or not state["ok"]:
                high = rate
                break
            kept.append((rate, state["margin"]))
            low, below = rate, state["mean_step"]
    return low


def saturated_message(s: Scenario, rate: float, saturation: float) -> str:
    """``SATURATED`` filled for ``s``: the rate, and the most it keeps up with."""
    rates = {
        k: fmt.show(x, SATURATED_KINDS[k]) for k, x in (("rate", rate), ("saturation", saturation))
    }
    n_gpus = s.n_gpus if s.replicas == 1 else REPLICATED.format(**vars(s))
    return SATURATED.format(
        **rates,
        model=s.model.name,
        n_gpus=n_gpus,
        gpu=s.gpu.name,
        prompt_len=s.prompt_len,
        output_len=s.output_len,
    )


def warm() -> None:
    """Compile and keep in the disk cache the replicas' relations."""
    for key in REPLICAS:
        cache.formulas(_replica_formula, key)
