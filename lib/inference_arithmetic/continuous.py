"""Serving under an arrival rate: the steady state of a continuously batching engine, and a
discrete-event simulation of the same engine to check it.

>>> r = steady_state("llama-3.1-8b", "h100-sxm", 4.0, prompt_len=1024, output_len=128)
>>> round(r["throughput"])  # output tokens per second: 4 requests/s x 128 tokens
512
>>> r["tpot"] < r["ttft"] < r["request_time"]
True

The engine (``formulas.continuous.step``): every step decodes one token of each running
request and prefills the prompts that arrived during the step before. In the steady state of
lambda requests a second, with steps of mean length tau:

- lambda (O - 1) tau requests decode at once (Little's law: each decodes for O - 1 steps);
- a step prefills the K prompts that arrived during the step before, K ~ Poisson(lambda tau);
- tau is the mean over K of the step's time, a fixed point: tau = E_K[step(lambda (O - 1) tau,
  K T)]. A step with a prompt in it is usually compute-bound, one without bandwidth-bound, so
  the mean of the steps, not the step of the mean prefill, sets the pace (max is convex).

The time per output token is tau; the time to first token is the rest of the step under way
when the request arrives (E[tau^2] / 2 E[tau], the steps being of unequal length) plus the
step that prefills it; Little's law gives the concurrency. Past the rate at which no fixed
point exists, or the memory cannot hold the running requests' caches, or a step would need
more than the token budget, ``steady_state`` raises ``ValueError`` naming the saturation rate.
``simulate`` runs the same engine with SimPy on Poisson arrivals.
"""

from __future__ import annotations

import functools

import numpy as np

from inference_arithmetic import cache, checks
from inference_arithmetic.formulas import continuous, latency
from inference_arithmetic.numeric import numeric
from inference_arithmetic.scenario import Scenario, deployment_keywords

__all__ = ["DEFAULT_TOKEN_BUDGET", "steady_state", "saturation_rate", "plan", "simulate"]

DEFAULT_TOKEN_BUDGET = 8192
"""Tokens one step may put through the model (vLLM's ``max_num_batched_tokens`` under chunked
prefill)."""

_K = np.arange(64)  # prompts per step, far past any Poisson mean below saturation


@functools.lru_cache(maxsize=64)
def _step(arch):
    return numeric(continuous.step(arch))


class _Engine:
    """The steady-state equations of one Scenario, as functions of the arrival rate."""

    def __init__(self, s: Scenario, budget: int):
        self.s, self.budget = s, budget
        self.values = s.values()
        self.T, self.O = s.prompt_len, s.output_len
        self.context = float(s.evaluate(latency.mean_context()))
        whole = {**self.values, "context_len": self.T + self.O}
        fit = cache.formulas(f"fit {s.model!r}", lambda: {"n": latency.max_concurrency(s.model)})
        self.capacity = int(fit.from_values(whole)["n"])

    def steps(self, decodes, prompts):
        """Step times for ``decodes`` decoding requests and each count of ``prompts``."""
        point = {**self.values, "decoding": np.maximum(decodes, 0.0) + 0 * prompts,
                 "context_len": np.full(np.shape(prompts), self.context),
                 "prefill_tokens": prompts * self.T}  # fmt: skip
        return _step(self.s.model).from_values(point)

    def chain(self, rate, tau):
        """The steps as a Markov chain on the prompts K a step prefills: the prompts that
        arrive during a step of k prompts, Poisson(lambda tau_k), are the next step's. Returns
        each k's step time and the chain's stationary distribution, at the decodes a mean
        step of ``tau`` gives."""
        times = self.steps(rate * (self.O - 1) * tau, _K.astype(float))
        moves = np.array([_poisson(rate * t) for t in times])  # moves[k, j]: k prompts, then j
        values, vectors = np.linalg.eig(moves.T)
        stationary = np.abs(np.real(vectors[:, np.argmin(np.abs(values - 1))]))
        return times, stationary / stationary.sum()

    def tau(self, rate, start=None):
        """The fixed point tau = E[step] of the chain, from below (``start``: a step time
        known to be below it, a lower rate's); None if it runs away."""
        tau = start or float(self.steps(0.0, np.zeros(1))[0])
        for _ in range(200):  # converges in tens of steps below saturation; creeps at it
            times, weights = self.chain(rate, tau)
            mean = float(weights @ times)
            if mean > 1e3 or not np.isfinite(mean) or weights[-8:].sum() > 1e-6:
                return None  # a step's prompts beyond the range kept: it runs away
            if abs(mean - tau) <= 1e-10 * mean:
                return mean
            tau = mean
        return None

    def state(self, rate, start=None):
        tau = self.tau(rate, start)
        if tau is None:
            return None
        times, weights = self.chain(rate, tau)
        decodes = rate * (self.O - 1) * tau
        # An arrival falls in a step picked by its length, waits for the rest of it, then is
        # prefilled in the next step, with the others that arrived in the same step.
        picked = weights * times / (weights @ times)
        after = self.steps(decodes, _K.astype(float) + 1)
        own = np.array([_poisson(rate * t) @ after for t in times])
        ttft = float(picked @ (times / 2 + own))
        request = ttft + (self.O - 1) * tau
        most = decodes + float(weights @ (_K * self.T))
        ok = most <= self.budget and rate * request <= self.capacity
        return {"ttft": ttft, "tpot": tau, "request_time": request,
                "concurrency": rate * request, "ok": ok}  # fmt: skip


_LOG_FACTORIALS = np.cumsum(np.log(np.maximum(_K, 1)))  # log k! for k in _K


def _poisson(mean):
    """P(K = k) for k in _K (normalized over the range kept)."""
    log = _K * np.log(max(mean, 1e-300)) - mean - _LOG_FACTORIALS
    weights = np.exp(log)
    return weights / weights.sum()


def _scenario(arch, gpu, prompt_len, output_len, n_gpus, dtype, deployment):
    workload = dict(batch=1, prompt_len=prompt_len, output_len=output_len, in_waves=True)
    s = Scenario(arch, gpu, **workload, n_gpus=n_gpus, dtype=dtype, **deployment)
    if s.parallel != "tensor":
        raise checks.ArgumentError("continuous batching is modeled with parallel='tensor'")
    return s


def saturation_rate(s: Scenario, token_budget: int = DEFAULT_TOKEN_BUDGET) -> float:
    """The highest arrival rate (requests per second) the engine keeps up with."""
    return _saturation(s, checks.count("token_budget", token_budget))


@functools.lru_cache(maxsize=256)
def _saturation(s: Scenario, token_budget: int) -> float:
    engine = _Engine(s, token_budget)
    low, high, below = 0.0, 1.0, None  # below: the step time at ``low``, to start from
    while (state := engine.state(high, below)) is not None and state["ok"]:
        low, high, below = high, 2 * high, state["tpot"]
    for _ in range(30):  # to a billionth of the range
        middle = (low + high) / 2
        state = engine.state(middle, below)
        if state is not None and state["ok"]:
            low, below = middle, state["tpot"]
        else:
            high = middle
    return low


@deployment_keywords
def steady_state(
    arch, gpu, requests_per_s, prompt_len=2048, output_len=256, n_gpus=1, dtype="bf16",
    *, token_budget=DEFAULT_TOKEN_BUDGET, **deployment
) -> dict:  # fmt: skip
    """The steady state of ``requests_per_s`` requests a second, each of ``prompt_len`` and
    ``output_len`` tokens, on a continuously batching engine (module docstring).

    Returns ``ttft``, ``tpot``, ``request_time`` (seconds), ``throughput`` (output tokens per
    second), ``concurrency`` (requests in the engine), ``utilization`` (the rate over the
    saturation rate) and ``saturation_rate``. ``ValueError`` past saturation.
    """
    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    s = _scenario(arch, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
    budget = checks.count("token_budget", token_budget)
    saturation = saturation_rate(s, budget)
    state = _Engine(s, budget).state(rate)
    if rate > saturation or state is None or not state["ok"]:
        raise checks.ArgumentError(
            f"{rate:g} requests per second saturate {s.model.name} on {s.n_gpus} x "
            f"{s.gpu.name}: it keeps up with at most {saturation:.4g} requests per second of "
            f"{s.prompt_len} + {s.output_len} tokens"
        )
    return {
        "ttft": state["ttft"],
        "tpot": state["tpot"],
        "request_time": state["request_time"],
        "throughput": rate * s.output_len,
        "concurrency": state["concurrency"],
        "utilization": rate / saturation,
        "saturation_rate": saturation,
    }


def plan(
    arch, gpu, requests_per_s, prompt_len, output_len, ttft_target, tpot_target, *,
    most_gpus=64, **options
) -> dict:  # fmt: skip
    """The cheapest deployment, replicas x tensor-parallel degree (up to 8, one NVLink
    domain), whose steady state meets both targets (seconds), each replica taking an equal
    share of the requests. Returns ``replicas``, ``tensor_parallel``, ``n_gpus``, ``ttft``,
    ``tpot`` and ``cost_per_million_output_tokens`` (dollars at the GPU's example price, the
    GPUs paid busy or idle); ``ValueError`` if no deployment of ``most_gpus`` meets them."""
    from inference_arithmetic.hardware import gpu as registry_gpu
    from inference_arithmetic.models import model as registry_model
    from inference_arithmetic.scenario import tensor_parallel_degrees

    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    checks.amount("ttft_target", ttft_target, "seconds", positive=True)
    checks.amount("tpot_target", tpot_target, "seconds", positive=True)
    arch, device = registry_model(arch), registry_gpu(gpu)
    if device.price_per_hour is None:
        raise checks.ArgumentError(f"{device.name} has no example price: plan needs one")
    best = None
    for degree in tensor_parallel_degrees(arch, 8):
        for replicas in range(1, most_gpus // degree + 1):
            try:
                share = rate / replicas
                state = steady_state(arch, device, share, prompt_len, output_len,
                                     n_gpus=degree, **options)  # fmt: skip
            except ValueError:
                continue  # does not fit, or saturates: more replicas
            if state["ttft"] <= ttft_target and state["tpot"] <= tpot_target:
                gpus = replicas * degree
                cost = gpus * device.price_per_hour / 3600 / (rate * output_len) * 1e6
                if best is None or cost < best["cost_per_million_output_tokens"]:
                    best = {"replicas": replicas, "tensor_parallel": degree, "n_gpus": gpus,
                            "ttft": state["ttft"], "tpot": state["tpot"],
                            "cost_per_million_output_tokens": cost}  # fmt: skip
                break  # more replicas of this degree only cost more
    if best is None:
        raise checks.ArgumentError(
            f"no deployment of up to {most_gpus} x {device.name} serves {rate:g} requests "
            f"per second within ttft {ttft_target:g} s and tpot {tpot_target:g} s"
        )
    return best


def simulate(
    arch, gpu, requests_per_s, prompt_len=2048, output_len=256, n_gpus=1, dtype="bf16", *,
    requests=400, token_budget=DEFAULT_TOKEN_BUDGET, seed=0, **deployment
) -> dict:  # fmt: skip
    """The engine step by step with SimPy: Poisson arrivals at ``requests_per_s``; each step
    decodes one token of every running request and prefills, first come first served, the
    waiting prompts in the tokens left under ``token_budget``; a request is admitted while
    the memory holds its whole cache; a step takes ``formulas.continuous.step`` for its own
    decodes, their mean context and its prefill tokens. Returns the mean ``ttft`` and
    ``tpot`` (seconds) of ``requests`` requests after a warm-up of a fifth as many."""
    import simpy

    s = _scenario(arch, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
    engine = _Engine(s, checks.count("token_budget", token_budget))
    step = _step(s.model)
    rng = np.random.default_rng(seed)
    warm = requests // 5
    arrivals = np.cumsum(rng.exponential(1 / requests_per_s, requests + warm))
    env, waiting, running, done, idle = simpy.Environment(), [], [], [], {"wake": None}

    def arrive():
        for i, at in enumerate(arrivals):
            yield env.timeout(at - env.now)
            waiting.append({"i": i, "arrived": at, "prefilled": 0, "times": []})
            if idle["wake"] is not None and not idle["wake"].triggered:
                idle["wake"].succeed()  # an idle engine starts a step at once

    def serve():
        while len(done) < len(arrivals):
            while waiting and len(running) < engine.capacity:
                running.append(waiting.pop(0))
            decodes = [r for r in running if r["prefilled"] == prompt_len]
            left, chunks = token_budget - len(decodes), []
            for r in running:
                if r["prefilled"] < prompt_len and left > 0:
                    chunks.append((r, min(prompt_len - r["prefilled"], left)))
                    left -= chunks[-1][1]
            if not decodes and not chunks:  # nothing to do until a request arrives
                idle["wake"] = env.event()
                yield idle["wake"]
                continue
            context = np.mean([prompt_len + len(r["times"]) - 1 for r in decodes] or [1.0])
            point = {**engine.values, "decoding": len(decodes),
                     "context_len": np.array([context]),
                     "prefill_tokens": sum(take for _, take in chunks)}  # fmt: skip
            yield env.timeout(float(step.from_values(point)[0]))
            for r, take in chunks:
                r["prefilled"] += take
            first = [r for r, take in chunks if r["prefilled"] == prompt_len]
            for r in decodes + first:
                r["times"].append(env.now)
            for r in [r for r in running if len(r["times"]) >= output_len]:
                running.remove(r)
                done.append(r)

    env.process(arrive())
    env.process(serve())
    env.run()
    kept = [r for r in done if r["i"] >= warm]
    ttft = np.mean([r["times"][0] - r["arrived"] for r in kept])
    tpot = np.mean([np.mean(np.diff(r["times"])) for r in kept if len(r["times"]) > 1])
    return {"ttft": float(ttft), "tpot": float(tpot)}
