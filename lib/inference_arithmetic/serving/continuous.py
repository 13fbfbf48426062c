"""Serving under an arrival rate: the steady state of a continuously batching engine, and a
discrete-event simulation of the same engine to check it.

>>> r = steady_state("llama-3.1-8b", "h100-sxm", 4.0, prompt_len=1024, output_len=128)
>>> round(r["throughput"])  # output tokens per second: 4 requests/s x 128 tokens
512
>>> r["tpot"] < r["ttft"] < r["request_time"]
True

The engine (``formulas.continuous.step``): every step decodes one token of each running
request and prefills the prompts that arrived during the step before. In the steady state of
lambda requests a second, with steps of mean length tau (chapter 09 derives each relation):

- a step prefills the K prompts that arrived during the step before, K ~ Poisson(lambda t)
  for a step of t: the steps are a Markov chain on K (``_Engine.chain``), and tau is the mean
  of its stationary distribution, a fixed point since lambda (O - 1) tau requests decode at
  once (Little's law: each decodes for O - 1 steps);
- the decoding count B_d is the prompts of the last O - 1 steps, and prompts come in bursts
  (a step with prompts is long and gathers more): its variance is B_d r / (1 - g), r the
  chain's long-run variance of K over its mean, g = lambda (O - 1) dtau/dB_d the share of a
  fluctuation that more decodes feed back (``STEADY``);
- a request meets steps in proportion to their decodes, so its time per output token is
  E[B_d t] / E[B_d] = tau + Cov(B_d, t) / B_d, longer than the mean step; an arrival meets
  the engine in proportion to time, when it is busier: its first token takes the rest of the
  step under way (E[t^2] / 2 E[t]) and the step that prefills it, at the time-weighted B_d.

A pipeline of n stages is n such chains, one a micro-batch in flight at lambda / n, each step
lasting its round's: the slowest of the n micro-batches' steps (``_Engine.period``, chapter 10).

The chain is solved exactly (linear equations on 64 prompt counts); the fluctuations of B_d
to first order (``STEADY``, SymPy, printed to JavaScript for the calculator's page). Past the
rate at which no steady state exists (g reaches 1), or the memory cannot hold the running
requests' caches, or a step would need more than the token budget, ``steady_state`` raises
``ValueError`` naming the saturation rate. ``simulate`` runs the same engine with SimPy on
Poisson arrivals.
"""

from __future__ import annotations

import functools
import heapq
import math
import statistics
from collections import deque

import numpy as np
import sympy

from inference_arithmetic.core import cache, checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.symbols import B_d, O, P_t, R, S
from inference_arithmetic.formulas import continuous, economics, kernels, latency, techniques
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.serving import bands
from inference_arithmetic.serving.lengths import Lengths, sequences, sums
from inference_arithmetic.serving.scenario import (
    DEFAULT_TOKEN_BUDGET,
    Scenario,
    deployment_keywords,
)

__all__ = ["DEFAULT_TOKEN_BUDGET", "PROMPT_COUNTS", "PERCENTILES", "SPREAD_POINTS"]
__all__ += ["STEADY", "REPLICAS"]
__all__ += ["SATURATED", "ONE_TOKEN", "NO_PIPELINE", "EXPERTS_BY_KERNELS"]
__all__ += ["NO_DEPLOYMENT", "PLAN_DEGREE", "NO_DEPLOYMENT_KINDS"]
__all__ += ["steady_state"]
__all__ += ["steady_state_of", "saturation_rate", "saturated_message", "plan", "simulate"]
__all__ += ["highest_rate", "goodput", "output_cost"]
__all__ += ["burst", "burst_schedule", "closed_loop", "STEP_FORMULAS", "BANDED"]

PROMPT_COUNTS = 64
"""Prompts per step the chain keeps, 0 to 63: far past any Poisson mean below saturation (40
cut the chain's tail before the memory set the saturation)."""
_K = np.arange(PROMPT_COUNTS)
PERCENTILES = (50, 90, 99)
"""The percentiles ``steady_state`` and ``simulate`` report of each request's TTFT and TPOT."""
TINY = 1e-9
"""Weight below which a case of an arrival's wait is dropped from its distribution (of
thousands, their sum stays far below the 1% a p99 leaves)."""
GRID = 4096
"""Points on which the TTFT's distribution is summed (twice: the second over its body)."""
SPREAD_POINTS = tuple(tuple(map(float, a)) for a in np.polynomial.hermite_e.hermegauss(5))
"""Gauss-Hermite nodes and weights (of a standard normal) over which an arrival's prefill is
averaged across the spread of the decoding count (``_Engine.state``; the page's too)."""

# The steady state's relations, once: the library evaluates them, the calculator's page prints
# them to JavaScript. Inputs: the rate, and what the chain gives at the fixed point.
_rate = sympy.Symbol("requests_per_s", positive=True)
_tau = sympy.Symbol("mean_step", positive=True)  # tau, seconds
_slope = sympy.Symbol("step_slope", positive=True)  # dtau/dB_d, seconds per decoding request
_burst = sympy.Symbol("burst_ratio", positive=True)  # long-run variance of K over its mean
_cross = sympy.Symbol("burst_covariance", real=True)  # sum over j >= 1 of Cov(K_0, t_j)
_noise = sympy.Symbol("step_noise", nonnegative=True)  # long-run variance of t, s^2 a step
_decoding = _rate * (O - 1) * _tau
_gain = _rate * (O - 1) * _slope
_variance = _decoding * _burst / (1 - _gain)
_covariance = _slope * _variance + _cross
_own = sympy.Symbol("own_output_len", positive=True)  # of one request, where lengths differ


def _tpot_spread(own):
    """A request's own TPOT, the mean of its ``own`` - 1 steps: B_d drifts as slowly as a
    request lives, so its whole spread stays; the prefills' bursts average over its steps."""
    return sympy.sqrt(_slope**2 * _variance + _noise / (own - 1))


STEADY = {
    "decoding": _decoding,  # Little's law: requests decoding in a mean step
    "gain": _gain,  # the share of a fluctuation of B_d that comes back
    "variance": _variance,  # of B_d
    "tpot": _tau + _covariance / _decoding,  # E[B_d t] / E[B_d]
    "busy": _decoding + _covariance / _tau,  # E[B_d t] / E[t]: B_d an arrival meets
    "tpot_spread": _tpot_spread(O),  # of a request of the mean length
}
"""The steady state's relations (module docstring), SymPy expressions of the rate, the output
length and the chain's ``mean_step``, ``step_slope``, ``burst_ratio``, ``burst_covariance`` and
``step_noise``."""

_one_saturation = sympy.Symbol("replica_saturation", positive=True)
_one_concurrency = sympy.Symbol("replica_concurrency", positive=True)
REPLICAS = {
    "share": _rate / R,  # each of R replicas serves an equal share of the requests
    "concurrency": R * _one_concurrency,
    "saturation_rate": R * _one_saturation,
    "utilization": _rate / (R * _one_saturation),
    "throughput": _rate * O,  # output tokens per second: every request's O tokens
}
"""R replicas of one engine: the rate each serves, and the whole deployment's concurrency,
saturation rate, utilization and throughput from one replica's (``replica_concurrency``,
``replica_saturation``). The library evaluates them; the calculator's page prints them."""

SATURATED = (
    "{rate} requests per second saturate {model} on {n_gpus} x {gpu}: it keeps up with at most "
    "{saturation} requests per second of {prompt_len} + {output_len} tokens"
)
"""The message past saturation (the page fills the same template)."""
SATURATED_KINDS = {"rate": "number", "saturation": "number"}
"""How ``SATURATED`` prints its two rates (``format.show``'s kinds; the page's ``iaShow``)."""
REPLICATED = "{replicas} replicas of {n_gpus}"
"""How ``SATURATED`` names the GPUs of more than one replica."""
NO_DEPLOYMENT = (
    "no deployment of up to {most_gpus} x {gpu} serves {rate} requests per second within "
    "ttft {ttft_target} and tpot {tpot_target}"
)
"""``plan``'s message when no deployment meets the targets (the calculator's page fills the
same template), its numbers printed as ``NO_DEPLOYMENT_KINDS`` says."""
NO_DEPLOYMENT_KINDS = {"rate": "number", "ttft_target": "seconds", "tpot_target": "seconds"}
PLAN_DEGREE = 8
"""The largest tensor-parallel (or pipeline) degree ``plan`` tries: one NVLink domain of eight
GPUs."""


BANDED = {
    **bands.PER_TOKEN,
    "request_time": ("request", False),
    "saturation_rate": ("request", True),
}
"""The predictions of ``steady_state`` that carry a band (``serving.bands``): key -> (kind,
whether it is a speed). Its throughput is the rate's, not a prediction."""


STEP_FORMULAS = {"kernels": kernels.step, "roofline": continuous.step}
"""A step of B_d decodes and P_t prompt tokens, by the scenario's step model: each a function
of the model and its ``parallel`` (a pipeline's step is one micro-batch's, stage by stage)."""


# Building a model's step and compiling it is most of a first steady state (a second or so):
# kept on disk, as the calculator's formulas are (``ia.serving.warm`` fills it).
def _step(arch, step="kernels", parallel="tensor", **options):
    """``options``: a scenario's ``formula_options``. Expert parallelism's step lives in the
    kernels' step (the chain is the same: its ranks step together, in lockstep at every MoE
    layer)."""
    return cache.formula(STEP_FORMULAS[step], arch, parallel, **options)


def _steady_relations() -> dict:
    return STEADY


def _steady():
    return cache.formulas(_steady_relations)


OWN_TPOT_SPREAD = _tpot_spread(_own)
"""``STEADY["tpot_spread"]`` of a request of ``own_output_len`` tokens among requests of a mean
``output_len`` (``serving.lengths``)."""


def _own_spread_formula() -> dict:
    return {"spread": OWN_TPOT_SPREAD}


@functools.cache
def _own_spread():
    """``OWN_TPOT_SPREAD`` as a function of its arguments in order, unchecked (a mean length
    is fractional)."""
    spread = cache.formulas(_own_spread_formula)
    return spread.args, spread.bind({}, *spread.args)


@functools.cache
def _steady_of_steps():
    """``STEADY`` as a function of its arguments in order, unchecked: a speculating chain
    counts 1 + (O - 1) / E steps a request, a fractional ``output_len`` that the checked
    function would refuse."""
    steady = _steady()
    return steady.args, steady.bind({}, *steady.args)


def _steady_at(chain: dict) -> dict:
    """``STEADY`` at the chain's values (checked, unless its output is counted in steps)."""
    if float(chain["output_len"]).is_integer():
        return _steady().from_values(chain)
    args, function = _steady_of_steps()
    return dict(zip(STEADY, map(float, function(*(chain[a] for a in args))), strict=True))


_EYE = np.eye(PROMPT_COUNTS)
RUNAWAY_COUNTS, RUNAWAY_TAIL = 8, 1e-6
"""The chain runs away when its last RUNAWAY_COUNTS counts of prompts hold more than
RUNAWAY_TAIL of its weight: the range kept no longer holds a step's prompts."""


def _stationary(moves):
    """The stationary distribution of a chain of transition matrix ``moves`` (or of each of
    a stack of them): pi (I - P) = 0, its last equation replaced by sum(pi) = 1."""
    system = _EYE - np.swapaxes(moves, -1, -2)
    system[..., -1, :] = 1.0
    return np.linalg.solve(system, _EYE[-1])


def _poisson(means):
    """P(K = k) for k in _K, a row per mean, of an array of any shape (normalized over the
    range kept)."""
    means = np.asarray(means, dtype=float)[..., None]
    log = _K * np.log(np.maximum(means, 1e-300)) - means - _LOG_FACTORIALS
    weights = np.exp(log)
    # A mean far past the range kept leaves no weight in it: NaN, which the chain reads as
    # running away (a high prefix-hit rate takes the saturation search there), without a
    # warning of 0 / 0.
    total = weights.sum(axis=-1, keepdims=True)
    return np.divide(weights, total, out=np.full_like(weights, np.nan), where=total > 0)


_LOG_FACTORIALS = np.cumsum(np.log(np.maximum(_K, 1)))  # log k! for k in _K
_COUNTS = _K.astype(float)


def _pipeline_wait_formula() -> dict:
    return {"wait": continuous.pipeline_wait()}


def _pipeline_wait_split() -> str:
    """The cut of ``_pipeline_wait_formula`` for ``bind`` at t (the slow part of a bind, which
    each pipeline's ``meet`` makes)."""
    return cache.formulas(_pipeline_wait_formula).split("t")


def _mean_context_formula() -> dict:
    return {"context": latency.mean_context()}


def _mean_context():
    return cache.formulas(_mean_context_formula)


def _fit_formula(arch, parallel, draft) -> dict:
    """The requests of a scenario's lengths whose whole caches its memory holds (of one batch
    in flight in a pipeline; a draft model's weights and cache take room)."""
    return {"n": latency.max_concurrency(arch, parallel, draft)}


def _step_split(arch, step, parallel, free, **options) -> str:
    """The cut of ``_step`` for ``bind`` at the arguments ``free``."""
    return _step(arch, step, parallel, **options).split(*free)


def _in_flight(s: Scenario) -> int:
    """The batches ``s`` works on at once (``latency.batches_in_flight``): a pipeline's
    micro-batches, one for every other parallelism."""
    flight = latency.batches_in_flight(s.parallel)
    values = s.values()
    return int(flight.xreplace({x: values[x.name] for x in flight.free_symbols}))


class _Engine:
    """The steady-state equations of one Scenario, as functions of the arrival rate; of
    requests of its lengths, or of the ``lengths`` of a workload (``serving.lengths``: the
    scenario is then of their means, rounded)."""

    def __init__(self, s: Scenario, lengths: Lengths | None = None):
        self.s, self.budget = s, s.token_budget
        self.values = s.values()

        # Speculating, a request decodes in (O - 1) / E steps of E tokens each: the chain
        # counts steps, so it runs as if of 1 + (O - 1) / E tokens (``steady_state_of``
        # divides the time per step by E), and each decode takes gamma + 1 of the budget.
        def in_steps(output):
            return output if s.speculative is None else 1 + (output - 1) / s.tokens_per_step

        # (the plain engine's count, exactly, without speculation)
        self.mean_output = s.output_len if lengths is None else lengths.means[1]
        self.T, self.O = s.prompt_len, in_steps(self.mean_output)
        self.rows = s.speculative.draft_len + 1 if s.speculative else 1
        self.new = _prefilled(s)  # each prompt's tokens to compute (prefix cache)
        self.context = _mean_context().from_values(self.values)["context"]
        # An arrival's own prompt (tokens to compute) and the share of requests of it; the
        # TPOT's output lengths: one each, or the workload's bins.
        self.own, self.outputs = ((self.new,), (1.0,)), ((float(self.O),), (1.0,))
        if lengths is not None:
            own = _prefilled(s, np.array(lengths.prompts[0]))
            self.new = float(np.dot(own, lengths.prompts[1]))  # Little's law: the mean
            self.own = (tuple(map(float, own)), lengths.prompts[1])
            self.outputs = (tuple(in_steps(o) for o in lengths.outputs[0]), lengths.outputs[1])
            self.context = lengths.context
        # The tokens of K prompts, at points of their distribution (one, K times the prompt's,
        # for one length): the chain is on K, each K's steps a mixture over these.
        self.loads, self.load_shares = sums(*self.own, _K)
        self.tokens = self.loads.ravel()
        whole = {**self.values, "context_len": self.T + s.output_len}
        draft = s.formula_options.get("draft")
        fit = cache.formulas(_fit_formula, s.model, s.parallel, draft)
        self.capacity = int(fit.from_values(whole)["n"])
        # The chain evaluates the step a thousand times at the scenario's values: checked once.
        free = ("decoding", "context_len", "prefill_tokens")
        options = s.formula_options
        step = _step(s.model, s.step, s.parallel, **options)
        split = cache.data(_step_split, s.model, s.step, s.parallel, free, **options)
        self._step = step.bind(self.values, *free, split=split)
        # A pipeline is n micro-batches in flight, each this chain at a share of the rate,
        # whose steps last the cycle's (``_Engine.period``) once ``tau`` has their spread.
        self.stages = _in_flight(s)
        self.others = None  # the other micro-batches' steps: (times, P(the slowest is each))

    def period(self, times):
        """A pipeline's step: the cycle's, as long as the slowest of the n micro-batches'
        steps (``formulas.continuous.pipeline_cycle``), the others' drawn from the chain's
        steps (``others``): E[max(t, M)], M the largest of n - 1 draws, the sum of
        ``formulas.continuous.pipeline_wait`` over their values."""
        return self.others(np.asarray(times)[..., None])[0].sum(-1)

    def meet(self, rate, decodes):
        """Set ``others`` to the steps of the chain at ``rate`` and ``decodes``: each count's
        own step time (not the cycle's; at each point of its tokens where lengths differ),
        weighted by how often it is taken, stationary share times steps; the largest of n - 1
        of them (``pipeline_wait`` bound to them, a function of t)."""
        self.others = None
        _, points = self.chain(rate, [decodes], points=True)
        own, _, at, steps = (x[0] for x in points)
        self.others = self.slowest(own, at * steps)

    def slowest(self, values, shares):
        """``pipeline_wait`` bound to the other micro-batches' steps, ``values`` taken in
        ``shares``: the cycle of a step t as a function of t (``period`` sums it)."""
        order = np.argsort(values)
        shares = np.asarray(shares, dtype=float)[order]
        total = shares.sum()
        drawn = {"x": values[order], "G": np.cumsum(shares) / total, "g": shares / total}
        wait, split = cache.formulas(_pipeline_wait_formula), cache.data(_pipeline_wait_split)
        return wait.bind({**drawn, "n": self.stages}, "t", split=split)

    def steps(self, decodes, prompts):
        """Step times for ``decodes`` decoding requests and each count of ``prompt tokens``."""
        prompts = np.asarray(prompts, dtype=float)
        decodes, context = np.maximum(decodes, 0.0), np.asarray(self.context)
        times = np.asarray(self._step(decodes, context, prompts), dtype=float)
        times = times if times.shape == prompts.shape else np.broadcast_to(times, prompts.shape)
        return times if self.others is None else self.period(times)

    def macro(self, decodes, rate=0.0):
        """The steps that prefill each count of prompts K (``_K``), chunked under the token
        budget, for each of ``decodes`` (an array, a row each): what the budget leaves beside
        the decodes, b, a step. Prompts of more than b tokens take tokens / b full steps, and
        the room their last step leaves goes to the next prompts if one has arrived by then (at
        ``rate``), else it is lost: the rest of that step with the probability that none did.
        Fewer take one step of their own. Returns the steps' time and their number. Without a
        budget it is that one step."""
        decodes, tokens = np.asarray(decodes, dtype=float)[:, None], self.tokens
        room = np.maximum(self.budget - self.rows * decodes, 1.0)
        fluid = np.maximum(tokens / room, 1.0)
        whole = np.ceil(fluid)
        before = whole - 1  # full steps before the last
        # The three kinds of step evaluated together (one call costs what one does): a full
        # step, the last step of each count's prompts, and each count's prompts in one step.
        rest, one = tokens - before * room, np.minimum(tokens, room)
        steps = self.steps(decodes, np.concatenate([room, rest, one], axis=1))
        full, last, own = steps[:, :1], steps[:, 1 : 1 + len(tokens)], steps[:, 1 + len(tokens) :]
        # Without an arrival the last step holds only the prompts' rest: a shorter step.
        alone = before * full + last
        none = np.exp(-rate * fluid * full)  # no arrival during the prefill
        some = 1 - none
        time = none * alone + some * fluid * full
        n = none * whole + some * fluid
        chunked = tokens > room
        return np.where(chunked, time, own), np.where(chunked, n, 1.0)

    def chain(self, rate, decodes, points=False):
        """The prefills as a Markov chain on the prompts K that arrived during the steps
        before: those steps prefill them (in n_K steps under the budget, ``macro``), and the
        prompts that arrive meanwhile, Poisson(lambda M_K) for the steps' time M_K, are the
        next K. Returns each K's time per step (M_K / n_K), the transition matrix, its
        stationary distribution over K, and each K's steps n_K: for each of ``decodes`` (an
        array), a row (a matrix for the transitions). Where prompts' lengths differ, M_K and
        n_K are means over the K prompts' tokens (``loads``; the chain stays one on K, the new
        prompts' lengths independent of the past); with ``points``, the same four of each K
        at each point of its tokens too, the weights the stationary ones times the points'."""
        times, counts = self.macro(decodes, rate)
        moves = _poisson(rate * times)  # moves[k, j]: k prompts, then j
        shape, shares = (len(times), *self.loads.shape), self.load_shares
        mean_times, mean_counts = ((x.reshape(shape) * shares).sum(-1) for x in (times, counts))
        mean_moves = (moves.reshape(*shape, -1) * shares[..., None]).sum(-2)
        weights = _stationary(mean_moves)
        chain = mean_times / mean_counts, mean_moves, weights, mean_counts
        if not points:
            return chain
        at = (weights[..., None] * shares).reshape(times.shape)
        return chain, (times / counts, moves, at, counts)

    def tau(self, rate, start=None):
        """The fixed point tau = E[step] of the chain at lambda (O - 1) tau decodes, from
        below (``start``: a step time known to be below it, a lower rate's); None if it runs
        away."""
        self.others = None  # a pipeline's cycle is worked out afresh at each rate
        tau = start or float(self.steps(0.0, np.zeros(1))[0])
        # The iteration creeps (its slope nears 1 towards saturation): after each two steps
        # that rise, Aitken's extrapolation jumps to where they head. A jump that lands past
        # the fixed point comes back down; one that makes the chain run away is undone, and
        # the plain iteration decides. The answer is a fixed point to the same tolerance.
        previous, accelerate = None, True
        for _ in range(200):  # converges in tens of steps below saturation; creeps at it
            chain = self.chain(rate, [rate * (self.O - 1) * tau])
            times, _, weights, counts = (part[0] for part in chain)
            mean = float((weights * counts) @ times / (weights @ counts))
            tail = weights[-RUNAWAY_COUNTS:].sum()
            if mean > 1e3 or not np.isfinite(mean) or tail > RUNAWAY_TAIL:
                if previous is not None and previous[2]:  # a jump went too far: undo it
                    tau, previous, accelerate = previous[1], None, False
                    continue
                return None  # a step's prompts beyond the range kept: it runs away
            if self.stages > 1:  # the cycle of the steps kept up with (not of a jump undone)
                self.meet(rate, rate * (self.O - 1) * tau)
            if abs(mean - tau) <= 1e-10 * mean:
                return mean
            jump = None
            if accelerate and previous is not None and not previous[2]:
                before, last = previous[0], tau  # three iterates: before -> last -> mean
                bend = (mean - last) - (last - before)
                if bend < 0 < mean - last:  # rising, and slowing: a fixed point ahead
                    jump = mean - (mean - last) ** 2 / bend
            if jump is not None and np.isfinite(jump):
                previous, tau = (tau, mean, True), jump
            else:
                previous, tau = (tau, mean, False), mean
        return None

    def ttft(self, rate, decodes):
        """An arrival falls in a prefill's steps picked by their length, waits for the rest of
        them, then is prefilled with the others that arrived meanwhile, in their order: its
        first token comes with the step that takes its last chunk. One for each of
        ``decodes`` (an array): the mean over the arrival's own prompt (``own``)."""
        _, chains = self.chain(rate, decodes, points=True)
        decodes = np.asarray(decodes, dtype=float)[:, None]
        own = zip(*self.own, strict=True)
        return sum(share * self._ttft(chains, decodes, tokens) for tokens, share in own)

    def _ttft(self, chains, decodes, own):
        """``ttft`` of an arrival of ``own`` prompt tokens, the others of the mean."""
        room = np.maximum(self.budget - self.rows * decodes, 1.0)
        # j others arrived with it: ranks 1..j+1, each as likely, (j + 1) T tokens in all,
        # all in one step if they fit; else each rank's last chunk is in the step that reaches
        # its tokens: a full step, but for the last prompt, whose last step holds only what is
        # left of it.
        ranks = _K + 1
        tokens = _K * float(self.new) + own  # to its own last token, of rank j + 1
        steps = np.ceil(tokens / room)
        left = tokens - (steps - 1) * room
        prompts = np.concatenate([room, np.broadcast_to(tokens, left.shape), left], axis=1)
        evaluated = self.steps(decodes, prompts)
        full, together = evaluated[:, :1], evaluated[:, 1 : 1 + len(_K)]
        last = (steps - 1) * full + evaluated[:, 1 + len(_K) :]
        ranks_before = np.cumsum(steps * full, axis=1)[:, :-1]
        before = np.concatenate([np.zeros_like(full), ranks_before], axis=1)
        done = np.where(tokens <= room, together, (before + last) / ranks)  # a mean over j + 1
        ttfts = []
        for times, moves, weights, counts, row in zip(*chains, done, strict=True):
            spans = times * counts
            picked = weights * spans / (weights @ spans)
            ttfts.append(float(picked @ (spans / 2 + moves @ row)))
        return np.array(ttfts)

    def state(self, rate, start=None):
        """The steady state at ``rate`` requests a second (a pipeline's micro-batch: at a
        share of it, ``stages`` of them in ``concurrency``); None if the chain runs away."""
        rate = rate / self.stages
        tau = self.tau(rate, start)
        if tau is None:
            return None
        decodes = rate * (self.O - 1) * tau
        chains = self.chain(rate, [decodes, decodes + 1])  # the slope's too, in one evaluation
        times, moves, weights, counts = (part[0] for part in chains)
        more, _, more_weights, more_counts = (part[1] for part in chains)
        slope = float((more_weights * more_counts) @ more / (more_weights @ more_counts)) - tau
        # Sums over the chain's future: Z f = sum_j>=0 P^j f for centred f (Z, the
        # fundamental matrix (I - P + 1 pi)^-1).
        # A prefill of K prompts spreads over its n_K steps: the chain's rewards are centred
        # per step (K - mu n_K prompts, M_K - tau n_K seconds, mu the prompts a step).
        fundamental = _EYE - moves + weights
        steps = weights @ counts
        prompts = _K - (weights @ _K) / steps * counts
        seconds = (times - tau) * counts
        zk, zt = np.linalg.solve(fundamental, np.stack([prompts, seconds], 1)).T
        chain = {"requests_per_s": rate, "output_len": self.O, "mean_step": tau,
                 "step_slope": max(slope, 1e-300),
                 "burst_ratio": float(weights @ (prompts * (2 * zk - prompts)) / (weights @ _K)),
                 "burst_covariance": float(weights @ (prompts * (zt - seconds)) / steps),
                 "step_noise": max(float(weights @ (seconds * (2 * zt - seconds)) / steps), 0.0),
                 }  # fmt: skip
        steady = _steady_at(chain)
        if steady["gain"] >= 1:
            return None  # more decodes feed back more than they add: no steady state
        if not (self.rows * decodes < self.budget
                and rate * (self.O - 1) * steady["tpot"] <= self.capacity):  # fmt: skip
            # Not kept up with, whatever the first token's wait (below, at least 0): every
            # caller reads only "ok" of such a state, so its TTFT is not worked out.
            return {"ok": False, "mean_step": tau, **chain, **steady}
        tail = float(weights[-RUNAWAY_COUNTS:].sum())
        # The budget left for prompts, b - B_d, moves with the decodes: an arrival's prefill is
        # the mean over their spread (normal, of the steady state's variance), not at the mean.
        nodes, weights_b = map(np.array, SPREAD_POINTS)
        spread = np.sqrt(max(steady["variance"], 0.0))
        met = np.clip(steady["busy"] + spread * nodes, 0.0, (self.budget - 1.0) / self.rows)
        ttft = float(weights_b @ self.ttft(rate, met) / weights_b.sum())
        request = ttft + (self.O - 1) * steady["tpot"]
        ok = self.rows * decodes < self.budget and rate * request <= self.capacity
        # How far from each limit, as one number below 0 while all hold (the tail in decades):
        # the saturation search aims with it.
        used = self.rows * decodes / self.budget  # the budget's share the decodes take
        margin = max(np.log10(max(tail, 1e-300) / RUNAWAY_TAIL), used - 1,
                     rate * request / self.capacity - 1, steady["gain"] - 1)  # fmt: skip
        return {"ttft": ttft, "tpot": steady["tpot"], "mean_step": tau, "request_time": request,
                "concurrency": self.stages * rate * request, "ok": ok, "margin": margin,
                "met": met, "others": self.others, **chain, **steady}  # fmt: skip

    def waits(self, rate, decodes):
        """An arrival's TTFT at ``decodes`` decoding requests, as a mixture of uniform
        distributions: (weights, starts, widths). It lands in a step of the prefill of K prompts
        (picked by time), in each of its steps as likely, and waits for the rest of that step;
        then the tokens still ahead of it (the K prompts' rest, and the prompts that arrived
        before it, its rank among the j + 1 of that prefill) and its own go through at the room
        the budget leaves a step. Its first token comes with the step of its last chunk: full
        steps, then one with its rest (if it is the last of its prefill) or full (others fill
        it). The mean (``ttft``) counts the whole prefill under way as the wait, chapter 09's
        account; the spread needs the place in it (their tails are tested on the simulation)."""
        _, ((times,), (moves,), (weights,), (counts,)) = self.chain(rate, [decodes], True)
        # The room and the prompts' tokens as ``macro`` and ``ttft`` count them: the decodes'
        # rows (speculating, gamma + 1 each) first, and only the tokens a prompt computes.
        room = max(self.budget - self.rows * decodes, 1.0)
        spans = times * counts
        picked = weights * spans / (weights @ spans)
        n_steps = np.where(self.tokens > room, np.ceil(self.tokens / room), 1.0)
        last = moves / (_K + 1)  # [K, r - 1]: rank r of j + 1 = r, the last of its prefill
        behind = np.cumsum(last[:, ::-1], axis=1)[:, ::-1] - last  # rank r of j + 1 > r
        # Tokens up to its own last, of rank r, for each of its own prompt's lengths (a row
        # each; the r - 1 before it of the mean), and the share of arrivals of each.
        own = _K * float(self.new) + np.array(self.own[0])[:, None]
        of_own = np.array(self.own[1])[:, None]
        parts = []
        for k in np.nonzero(picked > TINY)[0]:
            n = int(n_steps[k])
            ahead = np.maximum(self.tokens[k] - np.arange(1, n + 1) * room, 0.0)[:, None, None]
            for is_last, w in ((True, last[k]), (False, behind[k])):
                # Parts that cannot reach TINY for any own length are never made.
                keep = picked[k] / n * w * of_own.max() > TINY
                reach = (ahead + own[:, keep]).ravel()
                share = picked[k] / n * (of_own * w[keep])
                share = np.broadcast_to(share, (n, *share.shape))
                kept = share.ravel() > TINY  # the parts that can move a quantile
                parts.append((share.ravel()[kept], reach[kept], np.full(kept.sum(), is_last),
                              spans[k] / n))  # fmt: skip
        share, reach, is_last = (np.concatenate([p[i] for p in parts]) for i in range(3))
        widths = np.concatenate([np.full(p[0].shape, p[3]) for p in parts])
        whole = np.ceil(reach / room)  # steps to its last chunk
        rest = np.where(is_last, reach - (whole - 1) * room, room)
        kinds, which = np.unique(np.concatenate([[room], rest]), return_inverse=True)
        times = self.steps(decodes, kinds)
        return share / share.sum(), (whole - 1) * times[which[0]] + times[which[1:]], widths

    def percentiles(self, state) -> dict:
        """p50, p90 and p99 of each request's TTFT and TPOT in the steady ``state``: the TTFT's
        distribution (``waits``) over the spread of the decodes an arrival meets, the TPOT
        normal about its mean with ``STEADY["tpot_spread"]``, per token as ``steady_state_of``
        counts it (a speculating step's over the tokens it yields)."""
        node_weights = np.array(SPREAD_POINTS[1])
        self.others = state["others"]  # the cycle of that state's rate (a pipeline's)
        parts = [self.waits(state["requests_per_s"], d) for d in state["met"]]
        share = np.concatenate([w * p[0] for w, p in zip(node_weights / node_weights.sum(),
                                                         parts, strict=True)])  # fmt: skip
        starts, widths = (np.concatenate([p[i] for p in parts]) for i in (1, 2))
        qs = np.array(PERCENTILES) / 100
        ttft = _mixture_quantiles(share, starts, widths, qs)
        spreads = [state["tpot_spread"]]
        if len(self.outputs[0]) > 1:  # a spread of each output length's requests
            args, spread = _own_spread()
            values = {**state, "own_output_len": np.array(self.outputs[0])}
            spreads = np.broadcast_to(spread(*(values[a] for a in args))[0], len(self.outputs[0]))
        tpot = _normal_quantiles(state["tpot"], spreads, self.outputs[1])
        return {"ttft": _named(ttft), "tpot": _named(tpot / self.s.tokens_per_step)}


def _named(quantiles) -> dict:
    """Quantiles at ``PERCENTILES`` by name: ``{"p50": ..., "p90": ..., "p99": ...}``."""
    return {f"p{q}": float(x) for q, x in zip(PERCENTILES, quantiles, strict=True)}


def _normal_quantiles(mean, spread, weights=(1.0,)) -> np.ndarray:
    """``PERCENTILES`` of how a request's TPOT spreads about its ``mean``: normal, of standard
    deviation ``spread`` (``STEADY["tpot_spread"]``); or, given a spread for each of several
    kinds of request and their shares ``weights``, of that mixture of normal distributions,
    found by bisection on its distribution function to a millionth of the widest spread."""
    normal, qs = statistics.NormalDist(), np.array(PERCENTILES) / 100
    spreads = np.atleast_1d(np.asarray(spread, dtype=float))
    if len(spreads) == 1:
        return mean + spreads[0] * np.array([normal.inv_cdf(q) for q in qs])
    weights, spreads = np.asarray(weights) / np.sum(weights), np.maximum(spreads, 1e-300)
    cdf = np.vectorize(normal.cdf)
    found = []
    for q in qs:
        low, high = mean - 10 * max(spreads), mean + 10 * max(spreads)
        while high - low > 1e-6 * max(spreads):
            middle = (low + high) / 2
            low, high = (
                (middle, high) if weights @ cdf((middle - mean) / spreads) < q else (low, middle)
            )
        found.append((low + high) / 2)
    return np.array(found)


def _mixture_quantiles(weights, starts, widths, qs):
    """Quantiles ``qs`` of a mixture of uniform distributions on [start, start + width]. Its
    distribution function's second derivative is weight / width at each start, minus as much
    at each end: put on a grid (each split between the points either side) and summed twice.
    A first grid to the last end finds where all but a thousandth of the top quantile's tail
    lies; the second is laid up to there, fine where the quantiles are."""
    ends, top = starts + widths, float((starts + widths).max())
    for _ in range(2):
        step = top / GRID
        curve = np.zeros(GRID + 2)
        for at, sign in ((starts, 1.0), (ends, -1.0)):
            x = np.minimum(at / step, GRID)
            i = x.astype(int)
            f = x - i
            height = sign * weights / widths
            curve += np.bincount(i, height * (1 - f), GRID + 2)
            curve += np.bincount(i + 1, height * f, GRID + 2)
        cdf = np.cumsum(np.cumsum(curve)) * step
        grid = np.arange(GRID + 2) * step
        past = np.searchsorted(cdf, 1 - (1 - qs.max()) / 1000)
        top = grid[min(past + 1, GRID + 1)]
    return np.interp(qs, cdf, grid)


def _prefilled_formula() -> dict:
    return {"new": techniques.prefilled_tokens()}


def _prefilled(s: Scenario, prompts=None):
    """Tokens of each prompt the engine computes: all of them, or those its prefix cache
    does not hold (``techniques.prefilled_tokens``); of ``s``'s prompt, or of each of an array
    of ``prompts`` (lengths)."""
    if "prefix" not in s.step_options:
        return s.prompt_len if prompts is None else prompts
    if prompts is None:
        return round(cache.formulas(_prefilled_formula).from_values(s.values())["new"])
    values = {**s.values(), "prompt_len": np.asarray(prompts)}
    return np.rint(cache.formulas(_prefilled_formula).from_values(values)["new"]).astype(int)


@functools.lru_cache(maxsize=256)
def _engine_of(s: Scenario, lengths: Lengths | None = None) -> _Engine:
    """The engine of ``s`` (of requests of ``lengths``), made once (its step bound to the
    scenario's values): the saturation search and each rate after it share it."""
    return _Engine(s, lengths)


def _scenario(arch, gpu, prompt_len, output_len, n_gpus, dtype, deployment):
    workload = dict(batch=1, prompt_len=prompt_len, output_len=output_len, in_waves=True)
    s = Scenario(arch, gpu, **workload, n_gpus=n_gpus, dtype=dtype, **deployment)
    if s.parallel in latency.EXPERT_PARALLEL and s.step != "kernels":
        raise checks.ArgumentError(EXPERTS_BY_KERNELS)
    return s


NO_PIPELINE = (
    "a burst, a closed loop, ia.serve of a continuous engine and a disaggregated pool each "
    "schedule one engine whose GPUs step together (tensor or expert parallelism), not a "
    "pipeline's n micro-batches in flight, which wait for each other at its stages. A "
    "pipeline's steady state is ia.steady_state(..., parallel='pipeline') (and ia.plan's and "
    "ia.goodput's); ia.continuous.simulate(..., parallel='pipeline') runs one under a stream; "
    "its batch is timed by ia.calculate(..., parallel='pipeline') or ia.generation, its "
    "batches in waves by ia.serve(..., parallel='pipeline', engine=a static engine)"
)
"""The message for a burst, a closed loop or a disaggregated pool asked of a pipeline."""


def _tensor(s: Scenario) -> Scenario:
    """``s``, if it is of one engine whose GPUs step together, not a pipeline
    (``NO_PIPELINE``): a burst's schedule and a disaggregated pool are of one such engine."""
    if s.parallel == "pipeline":
        raise checks.ArgumentError(NO_PIPELINE)
    return s


EXPERTS_BY_KERNELS = (
    "the steady state of expert parallelism is timed kernel by kernel (step='kernels'): the "
    "roofline's step of a continuous engine is tensor-parallel"
)
"""The message for a steady state of expert parallelism asked of the single roofline."""


ONE_TOKEN = (
    "output_len must be a whole number from 2 up for a steady state, got {output_len}: a "
    "request of one output token is only a prefill, with no decode step and no time per "
    "output token (ia.prefill_time times it)"
)
"""The message for a steady state of requests of one output token."""


def _decoding(output_len) -> None:
    """Refuse a steady state whose requests never decode (``ONE_TOKEN``)."""
    # Refused rather than answered with an undefined time per token: the steady state is that
    # of the decoding requests (Little's law counts lambda (O - 1) tau of them), none here.
    if checks.count("output_len", output_len) < 2:
        raise checks.ArgumentError(ONE_TOKEN.format(output_len=output_len))


def saturation_rate(s: Scenario, lengths=None) -> float:
    """The highest arrival rate (requests per second) the deployment of ``s`` keeps up with,
    its replicas' together (``output_len`` of 2 up: ``ONE_TOKEN``); of requests of ``lengths``
    (``serving.lengths``; ``s`` of their means) if given."""
    _decoding(s.output_len)
    saturation = _one(s, lengths)
    return _replicas("saturation_rate", {"replicas": s.replicas, "replica_saturation": saturation})


def _one(s: Scenario, lengths: Lengths | None = None) -> float:
    """The saturation rate of one replica of ``s``."""
    return float(_saturation(s.replace(replicas=1) if s.replicas > 1 else s, lengths))


@functools.lru_cache(maxsize=256)
def _saturation(s: Scenario, lengths: Lengths | None = None) -> float:
    engine = _engine_of(s, lengths)
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
                bent = (x0 * m1 * m2 / ((m0 - m1) * (m0 - m2)) + x1 * m0 * m2 / ((m1 - m0)
                        * (m1 - m2)) + x2 * m0 * m1 / ((m2 - m0) * (m2 - m1)))  # fmt: skip
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
    return SATURATED.format(**rates, model=s.model.name, n_gpus=n_gpus, gpu=s.gpu.name,
                            prompt_len=s.prompt_len, output_len=s.output_len)  # fmt: skip


@deployment_keywords
def steady_state(
    model, gpu, requests_per_s, prompt_len=2048, output_len=256, n_gpus=1, dtype=AUTO,
    **deployment
) -> dict:  # fmt: skip
    """The steady state of ``requests_per_s`` requests a second, each of ``prompt_len`` and
    ``output_len`` tokens, on a continuously batching engine (module docstring); its token
    budget per step is the deployment's ``token_budget``. ``prompt_len`` and ``output_len`` may
    be sequences of lengths, each request one pair (as ``simulate`` draws them): the steady
    state of that distribution (``serving.lengths`` says which terms need more than its means),
    on the scenario of the mean lengths.

    Returns ``ttft``, ``tpot``, ``request_time`` (seconds), ``throughput`` (output tokens per
    second), ``concurrency`` (requests in the engine), ``utilization`` (the rate over the
    saturation rate), ``saturation_rate``, the chain's ``mean_step``, ``decoding`` (requests
    decoding in a mean step) and ``decoding_variance``, ``percentiles`` of each request's
    TTFT and TPOT (``{"ttft": {...}, "tpot": {...}}``, each of ``p50``, ``p90`` and ``p99``, as
    ``simulate`` gives them: ``_Engine.percentiles``), and ``band``: for ttft, tpot,
    request_time and saturation_rate, the range in which eight of ten held-out measurements
    fell (``serving.bands``; None with ``step="roofline"``). ``ValueError`` past saturation,
    and for requests of one output token, which never decode (``ONE_TOKEN``). A pipeline
    (``parallel="pipeline"``) is n micro-batches in flight, each the chain at a share of the
    rate, each step lasting the cycle's (``_Engine.period``; chapter 10). Expert parallelism
    is one engine, its ranks stepping together, each step timed by the kernels' step of the
    busiest GPU (with ``parallel="expert-dp"`` the token budget is the whole deployment's,
    shared by its data-parallel ranks).
    """
    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    prompt_len, output_len, lengths = _workload(prompt_len, output_len)
    s = _scenario(model, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
    return steady_state_of(s, rate, lengths=lengths)


def _workload(prompt_len, output_len):
    """The scenario's lengths and the workload's ``Lengths`` (None) of two single lengths or
    of sequences of them (``serving.lengths``: the scenario of their means)."""
    if (lengths := Lengths.of(prompt_len, output_len, _decoding)) is None:  # one length each
        return (*(x if np.ndim(x) == 0 else np.ravel(x)[0] for x in (prompt_len, output_len)), None)
    return (*lengths.scenario_lengths(), lengths)


def _replica_formula(key) -> dict:
    return {key: REPLICAS[key]}


def _replica(key):
    return cache.formulas(_replica_formula, key)


def _replicas(key, values) -> float:
    """``REPLICAS[key]`` at ``values`` (checked, unless its output is a workload's mean
    length, ``serving.lengths``)."""
    formula = _replica(key)
    if float(values.get("output_len", 1)).is_integer():
        return formula.from_values(values)[key]
    return float(formula.bind({}, *formula.args)(*(values[a] for a in formula.args))[0])


def steady_state_of(s: Scenario, rate: float, percentiles: bool = True, lengths=None) -> dict:
    """``steady_state`` of a Scenario (made with ``batch=1, in_waves=True``) at ``rate``, of
    requests of its lengths or of ``lengths`` (``serving.lengths``; ``s`` of their means). Its
    ``replicas`` share the requests evenly: each is one engine at ``rate / replicas``. Without
    ``percentiles`` (a search on means) their distribution is not worked out: None."""
    _decoding(s.output_len)
    one = s.replace(replicas=1) if s.replicas > 1 else s
    values = {"requests_per_s": rate, "replicas": s.replicas}
    values["replica_saturation"] = saturation = _one(s, lengths)
    share = _replicas("share", values)
    engine = _engine_of(one, lengths)
    state = engine.state(share) if share <= saturation else None
    if state is None or not state["ok"]:
        whole = _replicas("saturation_rate", values)
        raise checks.ArgumentError(saturated_message(s, rate, whole))
    values["replica_concurrency"] = state["concurrency"]
    result = {
        "ttft": state["ttft"],
        "tpot": state["tpot"] / one.tokens_per_step,  # a step's time over the tokens it yields
        "request_time": state["request_time"],
        "throughput": _replicas("throughput", {**values, "output_len": engine.mean_output}),
        **{key: _replicas(key, values) for key in ("concurrency", "utilization")},
        "saturation_rate": _replicas("saturation_rate", values),
        "mean_step": state["mean_step"],
        # A pipeline's micro-batches decode apart: their counts and variances add.
        "decoding": state["decoding"] * engine.stages,
        "decoding_variance": state["variance"] * engine.stages,
        "percentiles": engine.percentiles(state) if percentiles else None,
    }
    result["band"] = bands.of(result, BANDED) if s.step == "kernels" else None
    return result


def _missed(excess) -> str | None:
    """The first target of ``excess`` (``_excess``) past 0, or None."""
    return next((key for key, x in excess.items() if x > 0), None)


def _excess(state, ttft_target, tpot_target, percentile) -> dict:
    """How far a steady ``state`` is past each target it is given, as a share of it (below 0
    while it meets it): "ttft" then "tpot", judged as ``_judged`` says."""
    judged = _judged(state, percentile)
    targets = {"ttft": ttft_target, "tpot": tpot_target}
    return {key: judged[key] / target - 1 for key, target in targets.items() if target is not None}


def _judge(s: Scenario, rate, ttft_target, tpot_target, percentile, lengths=None):
    """The steady state of ``s`` at ``rate`` (of requests of ``lengths``) and its ``_excess``
    over the targets. A p90 or p99 is at least the mean (the TPOT is normal about it, the TTFT
    skewed above it), so where the means already miss, their excess answers and the
    percentiles, most of a steady state's cost near saturation, are not worked out."""
    state = steady_state_of(s, rate, percentiles=False, lengths=lengths)
    if percentile is None:
        return state, _excess(state, ttft_target, tpot_target, None)
    if percentile > 50:
        excess = _excess(state, ttft_target, tpot_target, None)
        if _missed(excess) is not None:
            return state, excess
    state = steady_state_of(s, rate, lengths=lengths)
    return state, _excess(state, ttft_target, tpot_target, percentile)


def _judged(state, percentile) -> dict:
    """The ``ttft`` and ``tpot`` of a steady ``state`` that targets on ``percentile`` judge:
    that percentile of them, or their means for None."""
    if percentile is None:
        return {key: state[key] for key in ("ttft", "tpot")}
    return {key: state["percentiles"][key][f"p{percentile}"] for key in ("ttft", "tpot")}


def _percentile(percentile) -> int | None:
    """A percentile a target may be on: one of ``PERCENTILES``, or None for the mean."""
    if percentile is not None and percentile not in PERCENTILES:
        raise checks.ArgumentError(
            f"percentile must be one of {', '.join(map(str, PERCENTILES))} (or None, for "
            f"targets on the mean), got {percentile!r}"
        )
    return percentile


def plan(
    model, gpu, requests_per_s, prompt_len, output_len, ttft_target, tpot_target, *,
    percentile=None, most_gpus=64, price_per_hour=None, **options
) -> dict:  # fmt: skip
    """The cheapest deployment, replicas x tensor-parallel degree (up to 8, one NVLink
    domain; with ``parallel="pipeline"``, pipeline stages), whose steady state meets both
    targets (seconds), each replica taking an equal share of the requests: targets on the
    mean of each request's TTFT and TPOT, or with ``percentile`` (one of ``PERCENTILES``) on
    that percentile of them, as service-level objectives are written. ``prompt_len`` and
    ``output_len`` may be sequences, a workload's lengths (as ``steady_state`` takes them; its
    cost is of their mean output length). Returns ``replicas``,
    ``n_gpus`` (per replica, its tensor-parallel or pipeline degree, as every deployment
    argument counts them), ``gpus`` (in all), ``ttft`` and ``tpot`` (the means, or the
    percentile judged), ``percentile``, ``binds`` (what one replica fewer of that degree
    misses: "saturation", "ttft" or "tpot"; None for one replica) and ``cost`` (``output``:
    USD per million output tokens, the GPUs paid busy or idle, at ``price_per_hour`` or the
    GPU's example price; ``price_per_hour``; ``price_date``, None for a given price);
    ``ValueError`` if no deployment of ``most_gpus`` GPUs meets them.

    An MoE model's experts may be spread over each replica's GPUs
    (``parallel="expert"`` or ``"expert-dp"``), its degrees those of tensor parallelism."""
    from inference_arithmetic.hardware.gpus import gpu as registry_gpu
    from inference_arithmetic.models.config import model as registry_model
    from inference_arithmetic.serving.scenario import (
        DEPLOYMENT,
        UNEXPECTED,
        pipeline_degrees,
        tensor_parallel_degrees,
    )

    chosen = ("n_gpus", "replicas")  # what the plan chooses
    if unknown := sorted(set(options) - set(DEPLOYMENT).difference(chosen)):
        own = "model, gpu, requests_per_s, prompt_len, output_len, ttft_target, tpot_target, "
        own += "percentile, most_gpus, price_per_hour, "
        valid = own + ", ".join(x for x in DEPLOYMENT if x not in chosen)
        raise TypeError(UNEXPECTED.format(function="plan", names=", ".join(unknown), valid=valid))
    pipeline = options.get("parallel", "tensor") == "pipeline"
    degrees = pipeline_degrees if pipeline else tensor_parallel_degrees
    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    prompt_len, output_len, lengths = _workload(prompt_len, output_len)
    _decoding(output_len)  # else every deployment would be skipped as if it saturated
    dtype = options.pop("dtype", AUTO)
    checks.amount("ttft_target", ttft_target, "seconds", positive=True)
    checks.amount("tpot_target", tpot_target, "seconds", positive=True)
    percentile = _percentile(percentile)
    model, device = registry_model(model), registry_gpu(gpu)
    price, date, _ = device.price(price_per_hour, required=True)
    # A setting no deployment changes (a speculation method without defaults, an option the
    # step model lacks) is refused by name here, not skipped below as if each one saturated;
    # a rule of a deployment (it does not fit, its heads do not split) is the search's.
    try:
        _scenario(model, device, prompt_len, output_len, 1, dtype, options)
    except ValueError as error:
        if not hasattr(error, "check"):
            raise
    best = None
    for degree in degrees(model, PLAN_DEGREE):
        missed, first = None, 1  # why one replica fewer of this degree fails; the fewest tried
        if best is not None and degree >= best["gpus"]:
            continue  # one replica of it costs as much as the best (the costs go as the GPUs)
        if percentile is not None:
            # A percentile costs most near saturation, where one replica after another would
            # be tried: start at as many as one replica's goodput (``_highest``, searched from
            # below) needs; fewer would each take more than it meets.
            try:
                one = _scenario(model, device, prompt_len, output_len, degree, dtype, options)
                most, missed = _highest(one, ttft_target, tpot_target, percentile, 1e-4, lengths)
            except ValueError:
                continue  # does not fit: nor do more replicas of it
            if most == 0.0:
                continue  # a trickle misses: so does any share of the rate
            first = max(math.ceil(rate / most * (1 - 1e-9)), 1)
            missed = missed if first > 1 else None
        for replicas in range(first, most_gpus // degree + 1):
            try:
                s = _scenario(model, device, prompt_len, output_len, degree, dtype,
                              {"replicas": replicas, **options})  # fmt: skip
                state, excess = _judge(s, rate, ttft_target, tpot_target, percentile, lengths)
            except ValueError:
                missed = "saturation"
                continue  # does not fit, or saturates: more replicas
            if (miss := _missed(excess)) is not None:
                missed = miss
                continue
            gpus = replicas * degree
            cost = _output_cost(price, gpus, rate, output_len)
            if best is None or cost < best["cost"]["output"]:
                judged = _judged(state, percentile)
                best = {"replicas": replicas, "n_gpus": degree, "gpus": gpus,
                        "ttft": judged["ttft"], "tpot": judged["tpot"],
                        "percentile": percentile, "binds": missed,
                        "cost": {"output": cost, "price_per_hour": price,
                                 "price_date": date}}  # fmt: skip
            break  # more replicas of this degree only cost more
    return _planned(best, most_gpus, device, rate, ttft_target, tpot_target, percentile)


def _planned(best, most_gpus, device, rate, ttft_target, tpot_target, percentile) -> dict:
    """``plan``'s answer, or its message when no deployment meets the targets."""
    if best is None:
        numbers = {"rate": rate, "ttft_target": ttft_target, "tpot_target": tpot_target}
        shown = {k: fmt.show(x, NO_DEPLOYMENT_KINDS[k]) for k, x in numbers.items()}
        on = "" if percentile is None else f" (on each request's p{percentile})"
        raise checks.ArgumentError(
            NO_DEPLOYMENT.format(most_gpus=most_gpus, gpu=device.name, **shown) + on
        )
    return best


@functools.lru_cache(maxsize=256)  # plan's search and goodput share a replica's answer
def _highest(s: Scenario, ttft_target, tpot_target, percentile, tolerance, lengths=None):
    """The most requests a second whose steady state (of requests of ``lengths``) meets the
    targets (``_judge``), and the limit that binds there: "saturation" if a saturated engine
    meets them, else the target missed just above it (0 and that target if a trickle, a
    thousandth of the saturation rate, misses it). Found to ``tolerance`` of the range by the
    Illinois method on how far the worse target is missed (``_excess``), which grows with the
    rate. On a p90 or p99, up to the means' answer: no higher rate meets them (``_judge``)."""
    # Regula falsi rather than bisection: on means it needs a third of the steady states; an
    # excess that bends (Mixtral's p90 TPOT is not monotone in the rate) gains less.
    saturation = saturation_rate(s, lengths)
    high, above = saturation, "saturation"  # the highest rate tried, and what binds past it
    if percentile is not None and percentile > 50:
        high, above = _highest(s, ttft_target, tpot_target, None, tolerance, lengths)
        if high == 0.0:
            return high, above

    def over(rate):
        excess = _judge(s, rate, ttft_target, tpot_target, percentile, lengths)[1]
        return max(excess.values()), _missed(excess)

    low = saturation / 1000
    span = high - low
    if percentile is None:
        f_high, binds = over(high)
        if binds is None:
            return high, above
    f_low, miss = over(low)
    if miss is not None:
        return 0.0, miss
    # A percentile costs most near saturation (an arrival's wait has more parts), where the
    # top of the range lies: walk up from the trickle to a rate that misses, and search
    # between. Each try is the line through the last two rates met, which overshoots the
    # excess as it steepens (at most halfway to the top).
    below = None  # the rate met before ``low``, and its excess
    while percentile is not None:
        rate = (low + high) / 2
        if below is not None and f_low > below[1]:
            rate = min(rate, low - f_low * (low - below[0]) / (f_low - below[1]))
        rate = high if high - low <= tolerance * span else rate
        f, binds = over(rate)
        if binds is not None:
            high, f_high = rate, f
            break
        if rate == high:
            return high, above
        below, low, f_low = (low, f_low), rate, f
    kept = 0  # +1 (-1) while the new point replaces high (low)
    for _ in range(200):
        if high - low <= tolerance * span:
            break
        middle = high - f_high * (high - low) / (f_high - f_low)
        middle = min(max(middle, low + tolerance * span / 4), high - tolerance * span / 4)
        f, miss = over(middle)
        if miss is not None:
            high, f_high, binds = middle, f, miss
            f_low = f_low / 2 if kept == 1 else f_low  # Illinois: move the stuck end
            kept = 1
        else:
            low, f_low = middle, f
            f_high = f_high / 2 if kept == -1 else f_high
            kept = -1
    return low, binds


def highest_rate(s: Scenario, tpot_target: float) -> float:
    """The most requests a second whose steady state (``steady_state_of``) keeps a mean time
    per output token of ``tpot_target`` seconds: the saturation rate if a saturated engine
    keeps it, 0 if a trickle (a thousandth of that rate) does not, else found by bisection
    (the time per token grows with the rate) to a billionth of the range."""
    checks.amount("tpot_target", tpot_target, "seconds", positive=True)
    return _highest(s, None, tpot_target, None, 2.0**-30)[0]


@deployment_keywords
def goodput(
    model, gpu, prompt_len, output_len, ttft_target, tpot_target, n_gpus=1, dtype=AUTO, *,
    percentile=90, **deployment
) -> dict:  # fmt: skip
    """Goodput: the most requests a second the deployment serves with the ``percentile`` (one
    of ``PERCENTILES``, or None for the mean) of each request's TTFT and TPOT within the
    targets (seconds), its steady state's (``steady_state``, of requests of ``prompt_len`` and
    ``output_len``, each a length or a sequence of them), the measure DistServe and capacity
    planners maximise. Returns ``requests_per_s``, ``per_gpu`` (over every GPU of
    every replica), ``binds`` ("saturation", "ttft" or "tpot": what stops a higher rate),
    ``percentile``, and the ``ttft`` and ``tpot`` judged at that rate (None at a goodput of 0).
    """
    checks.amount("ttft_target", ttft_target, "seconds", positive=True)
    checks.amount("tpot_target", tpot_target, "seconds", positive=True)
    percentile = _percentile(percentile)
    prompt_len, output_len, lengths = _workload(prompt_len, output_len)
    s = _scenario(model, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
    _decoding(s.output_len)
    rate, binds = _highest(s, ttft_target, tpot_target, percentile, 1e-4, lengths)
    rate = float(rate)
    state = steady_state_of(s, rate, percentile is not None, lengths) if rate > 0 else None
    judged = _judged(state, percentile) if rate > 0 else {}
    return {"requests_per_s": rate, "per_gpu": rate / (s.n_gpus * s.replicas), "binds": binds,
            "percentile": percentile, "ttft": judged.get("ttft"),
            "tpot": judged.get("tpot")}  # fmt: skip


def _stream_cost_formula() -> dict:
    return {"cost": economics.output_cost_at_rate(_rate)}


def _stream_cost():
    return cache.formulas(_stream_cost_formula)


def _output_cost(price_per_hour, gpus, rate, output_len) -> float:
    values = {"price_per_hour": price_per_hour, "n_gpus": gpus, "requests_per_s": rate}
    return _stream_cost().from_values({**values, "output_len": output_len})["cost"]


def output_cost(s: Scenario, rate: float) -> float:
    """Dollars per million output tokens of ``s``'s GPUs (every replica's) serving ``rate``
    requests a second, at the GPU's example price, paid busy or idle
    (``formulas.economics.output_cost_at_rate``); ``ValueError`` for a GPU without a price."""
    price, _, _ = s.gpu.price(required=True)
    rate = checks.amount("requests_per_s", rate, "requests per second", positive=True)
    return _output_cost(price, s.n_gpus * s.replicas, rate, s.output_len)


def simulate(
    model, gpu, requests_per_s, prompt_len=2048, output_len=256, n_gpus=1, dtype=AUTO, *,
    requests=400, seed=0, **deployment
) -> dict:  # fmt: skip
    """The engine step by step with SimPy: Poisson arrivals at ``requests_per_s``; each step
    decodes one token of every running request and prefills, first come first served, the
    waiting prompts in the tokens left under the deployment's ``token_budget``; a request is
    admitted while the memory holds its whole cache; a step takes ``formulas.continuous.step``
    for its own decodes, their mean context and its prefill tokens. Returns the mean ``ttft`` and
    ``tpot`` (seconds) of ``requests`` requests after a warm-up of a fifth as many, and their
    ``percentiles``: ``{"ttft": {"p50": ..., "p90": ..., "p99": ...}, "tpot": {...}}``, each
    request's TPOT being the mean gap between its own tokens (what a service-level objective
    on inter-token time per request measures).

    ``prompt_len`` and ``output_len`` may be sequences of lengths (a trace's, or draws from a
    distribution): each request takes the lengths at an index drawn at random, so sequences of
    one length keep their pairs. The memory then admits requests while it holds their whole
    caches, in tokens; it and the steps' figures are those of the mean lengths' scenario, as in
    ``steady_state`` of the same sequences. A pipeline's n micro-batches in flight are n engines,
    each request going to one at random, whose steps take the stages in turn."""
    rng = np.random.default_rng(seed)
    warm = requests // 5
    arrivals = np.cumsum(rng.exponential(1 / requests_per_s, requests + warm))
    lengths = _draw_lengths(prompt_len, output_len, requests + warm, rng)
    if lengths is not None:  # the scenario of the means of the pairs drawn
        prompt_len, output_len = (max(round(float(np.mean(x))), 1) for x in lengths)
    s = _scenario(model, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
    owners = rng.integers(0, s.n_gpus, len(arrivals)) if s.parallel == "pipeline" else None
    kept = [r for r in _engine(s, arrivals, lengths=lengths, owners=owners) if r["i"] >= warm]
    ttfts = np.array([r["first"] - r["arrived"] for r in kept])
    decoded = [r for r in kept if r["output"] > 1]  # a request of one token has no TPOT
    tpots = np.array([(r["last"] - r["first"]) / (r["output"] - 1) for r in decoded])
    if not len(tpots):  # no decode step: no time per output token
        tpots = np.full(1, np.nan)
    return {
        "ttft": float(ttfts.mean()),
        "tpot": float(tpots.mean()),
        "percentiles": {
            name: _named(np.percentile(times, PERCENTILES))
            for name, times in (("ttft", ttfts), ("tpot", tpots))
        },
    }


def _draw_lengths(prompt_len, output_len, n, rng):
    """Each of ``n`` requests' (prompt, output) lengths, two integer arrays, drawn from the
    sequences given (an index drawn at random for each request, the same in both where both
    are sequences of one length); None when both are single lengths."""
    pairs = sequences(prompt_len, output_len)
    if pairs is None:
        return None
    index = rng.integers(0, len(pairs[0]), n)
    return tuple(x[index] for x in pairs)


def burst(s: Scenario, **figures) -> dict:
    """The scenario's ``batch`` requests sent at once to the engine of ``simulate``: it admits
    as many as its memory (and its ``max_num_seqs``) holds and prefills them in chunks of its
    token budget while it decodes the others. Returns the ``elapsed`` seconds to the last
    token, the output ``throughput``, the mean ``ttft`` and ``tpot``, and the most requests it
    ran at once (``concurrency``). ``figures`` override the scenario's values and may be
    arrays, to time one schedule under many settings at once (chapter 11's fit)."""
    plan, first, last, _, _ = burst_schedule(s)
    values = {**s.values(), **figures}
    ends = _step_ends(s, plan, figures)
    elapsed = ends[-1]
    ttft = ends[first].mean(axis=0)
    tpot = ((ends[last] - ends[first]) / max(s.output_len - 1, 1)).mean(axis=0)
    if s.output_len == 1:  # no decode step runs: one is timed, at the batch and the prompt
        one = {**values, "decoding": min(s.batch, _capacity(s)), "context_len": s.prompt_len,
               "prefill_tokens": 0}  # fmt: skip
        tpot = _step(s.model, s.step, s.parallel, **s.formula_options).from_values(one)
        tpot = tpot + 0 * elapsed
    return {
        "elapsed": elapsed,
        "throughput": s.batch * s.output_len / elapsed,
        "ttft": ttft,
        "tpot": tpot,
        "concurrency": min(s.batch, _capacity(s)),
    }


def burst_schedule(s: Scenario, users: int | None = None, total: int | None = None):
    """The steps the engine takes for ``s``'s burst (or, with ``users`` and ``total``, for a
    closed loop of ``users`` clients sending ``total`` requests), as (decodes, their mean
    context, prompt tokens) each, and for each request the step of its first and last token
    and the steps done when it arrived. With every request there from the start, or sent
    when another finishes, at the end of a step, what a step does depends on the steps
    before, not on how long they take, so one schedule serves every setting of the step's
    figures. Requests in the order they finished, with ``i`` the order they were sent."""
    return _schedule(*_limits(_tensor(s)), s.batch if users is None else users, total)


@functools.lru_cache(maxsize=1024)
def _schedule(capacity, token_budget, prompt_len, output_len, computed, sent, total):
    """``burst_schedule`` of what a schedule depends on, and nothing else (a term of the model
    switched off, a figure changed: the same schedule)."""
    plan = []

    def record(decodes, context, prompts):
        plan.append((decodes, context, prompts))
        return 1.0  # each step one time unit: its index is its end

    limits = (capacity, token_budget, prompt_len, output_len, computed)
    done = _run(*limits, np.zeros(sent), record, total)
    first = np.array([round(r["first"]) - 1 for r in done])
    last = np.array([round(r["last"]) - 1 for r in done])
    arrived = np.array([round(r["arrived"]) for r in done])  # steps done before it came
    sent = np.array([r["i"] for r in done])
    return tuple(plan), first, last, arrived, sent


def _step_ends(s: Scenario, plan, figures):
    """The end of each step of ``plan`` (seconds from the start), each step timed by ``s``'s
    step formula at its values and ``figures`` (arrays broadcast: one column per setting)."""
    values = {**s.values(), **figures}
    shape = np.broadcast(*[np.asarray(v) for v in figures.values()]).shape if figures else ()
    columns = np.asarray(plan, dtype=float).reshape(len(plan), 3, *[1] * len(shape))
    point = {**values, "decoding": columns[:, 0], "context_len": columns[:, 1],
             "prefill_tokens": columns[:, 2]}  # fmt: skip
    times = _step(s.model, s.step, s.parallel, **s.formula_options).from_values(point)
    return np.cumsum(np.broadcast_to(times, (len(plan), *shape)), axis=0)


def closed_loop(s: Scenario, users: int, requests: int) -> dict:
    """``users`` clients, each sending its next request of the scenario's lengths as soon as
    its last one finishes, ``requests`` in all, to the engine of ``simulate`` (a benchmark at
    fixed concurrency). Returns the mean ``ttft`` and ``tpot`` of the requests after the first
    ``users`` (the warm-up), and the output ``throughput`` of the whole run: its schedule
    (``burst_schedule``) timed step by step."""
    users = checks.count("users", users)
    requests = checks.count("requests", requests, low=users)
    plan, first, last, arrived, sent = burst_schedule(s, users, requests)
    ends = _step_ends(s, plan, {})
    start = np.concatenate([[0.0], ends])[arrived]  # a request arrives at a step's end
    kept = sent >= users if np.any(sent >= users) else np.ones(len(sent), dtype=bool)
    elapsed = float(ends[last].max())
    spans = (ends[last] - ends[first]) / max(s.output_len - 1, 1)
    return {
        "ttft": float(np.mean((ends[first] - start)[kept])),
        "tpot": float(np.mean(spans[kept])),
        "throughput": requests * s.output_len / elapsed,
        "elapsed": elapsed,
    }


def _capacity(s: Scenario) -> int:
    """The most requests the engine runs at once: what its memory holds, and its cap."""
    cap = s.engine.max_num_seqs if s.step == "kernels" else None
    held = _Engine(s).capacity
    return min(held, cap) if cap else held


def _engine(s: Scenario, arrivals, step=None, total=None, lengths=None, owners=None):
    """The engine of ``simulate`` on requests arriving at ``arrivals`` (seconds, in order):
    each step decodes one token of every running request and prefills, first come first
    served, the waiting prompts in the tokens left under the token budget; a request is
    admitted while the memory holds its whole cache (and the engine's ``max_num_seqs``); a step
    takes ``step(decodes, their mean context, prompt tokens)`` seconds (default: the
    scenario's step formula). With ``total``, a closed loop: each of ``len(arrivals)`` users
    sends its next request as its last one finishes, ``total`` requests in all. With
    ``lengths`` (each request's prompt and output lengths, ``_draw_lengths``), the memory
    admits requests by the tokens of their whole caches. A pipeline runs its n micro-batches
    in flight as n engines (``owners``: each request's), whose steps share its n stages. Each
    finished request, with its arrival, first and last token times and its lengths."""
    step = _scalar_step(s) if step is None else step
    stages = {"owners": owners, "stages": s.n_gpus if s.parallel == "pipeline" else 1}
    limits = _limits(s)  # (and the refusal of what it does not simulate)
    if lengths is None:
        return _run(*limits, arrivals, step, total, **stages)
    # The memory holds the caches of so many requests of the mean lengths: so many tokens.
    cap = s.engine.max_num_seqs if s.step == "kernels" else None
    tokens = _Engine(s).capacity * (s.prompt_len + s.output_len)
    prompts, outputs = lengths
    return _run(cap or len(arrivals), s.token_budget, prompts, outputs, _prefilled(s, prompts),
                arrivals, step, total, tokens, **stages)  # fmt: skip


NO_SPECULATION = (
    "the engine run step by step (simulate, burst, closed_loop, and ia.serve of a continuous "
    "engine) decodes one token a step; speculative decoding is modeled by ia.steady_state "
    "and ia.calculate"
)
"""The message for a step-by-step run of a speculating scenario."""


def _limits(s: Scenario) -> tuple:
    """What the engine's schedule depends on: the requests it holds at once, its token
    budget, the requests' lengths and the tokens each prompt computes (``_prefilled``)."""
    if s.speculative is not None:  # each step's tokens would be random: not simulated
        raise checks.ArgumentError(NO_SPECULATION)
    return (_capacity(s), s.token_budget, s.prompt_len, s.output_len, _prefilled(s))


def _run(capacity, token_budget, prompt_len, output_len, computed, arrivals, step, total=None,
         tokens=None, owners=None, stages=1):  # fmt: skip
    """``_engine`` of the limits it runs under: at most ``capacity`` requests at once and, if
    ``tokens`` is given, requests whose whole caches (prompt and output) hold at most that
    many tokens; ``prompt_len`` and ``output_len`` each a length, or an array of each
    request's (by its index), a prompt computing ``computed`` of its tokens (the rest in the
    prefix cache; a number, or an array too) and cached whole. With ``owners`` (each request's
    engine, 0 up), engines share the arrivals, each with its own queues and cache; with
    ``stages``, every engine's step passes through that many stages in turn, one step in a
    stage at a time, each taking an equal part of it: a pipeline's micro-batches in flight,
    which wait for each other."""
    simpy = _simpy()

    env, done = simpy.Environment(), []
    # Admitted requests prefill in their order and decode until their last token: a queue, a
    # heap by the step of that token (in the order they began, among those of one step), and
    # a sum of the decodes' contexts.
    count = 1 if owners is None else int(np.max(owners)) + 1
    engines = [{"waiting": deque(), "wake": None} for _ in range(count)]
    pipe = [simpy.Resource(env, capacity=1) for _ in range(stages)] if stages > 1 else None

    def request(i, at):
        prompt = int(prompt_len[i]) if np.ndim(prompt_len) else prompt_len
        output = int(output_len[i]) if np.ndim(output_len) else output_len
        new = int(computed[i]) if np.ndim(computed) else computed
        return {"i": i, "arrived": at, "prefilled": 0, "prompt": prompt, "output": output,
                "computed": new}  # fmt: skip

    def arrive():
        for i, at in enumerate(arrivals):
            yield env.timeout(at - env.now)
            engine = engines[0 if owners is None else owners[i]]
            engine["waiting"].append(request(i, at))
            if engine["wake"] is not None and not engine["wake"].triggered:
                engine["wake"].succeed()  # an idle engine starts a step at once

    wanted = len(arrivals) if total is None else total
    issued = [len(arrivals)]

    def serve(engine):
        waiting, prefilling, decoding = engine["waiting"], deque(), []
        held = 0  # tokens of the admitted requests' whole caches
        steps, contexts, began = 0, 0, 0  # steps taken; the decodes' cached tokens, summed
        while len(done) < wanted:
            while waiting and len(prefilling) + len(decoding) < capacity:
                size = waiting[0]["prompt"] + waiting[0]["output"]
                if tokens is not None and held + size > tokens and (prefilling or decoding):
                    break
                held += size
                prefilling.append(waiting.popleft())
            left, chunks = token_budget - len(decoding), []
            for r in prefilling:
                if left <= 0:
                    break
                chunks.append((r, min(r["computed"] - r["prefilled"], left)))
                left -= chunks[-1][1]
            if not decoding and not chunks:  # nothing to do until a request arrives
                engine["wake"] = env.event()
                yield engine["wake"]
                continue
            context = contexts / len(decoding) if decoding else 1.0
            seconds = step(len(decoding), context, sum(take for _, take in chunks))
            if pipe is None:
                yield env.timeout(seconds)
            else:
                for stage in pipe:
                    with stage.request() as turn:
                        yield turn
                        yield env.timeout(seconds / stages)
            steps, contexts = steps + 1, contexts + len(decoding)
            for r, take in chunks:
                r["prefilled"] += take
                if r["prefilled"] == r["computed"]:  # its first token
                    prefilling.popleft()
                    r["first"], r["first_step"] = env.now, steps
                    heapq.heappush(decoding, (steps + r["output"] - 1, began, r))
                    began += 1
                    contexts += r["prompt"]
            while decoding and decoding[0][0] <= steps:
                r = heapq.heappop(decoding)[2]  # its last token
                r["last"] = env.now
                contexts -= r["prompt"] + r["output"] - 1
                held -= r["prompt"] + r["output"]
                done.append(r)
                if issued[0] < wanted and total is not None:  # its user sends the next one
                    waiting.append(request(issued[0], env.now))
                    issued[0] += 1

    env.process(arrive())
    for engine in engines:
        env.process(serve(engine))
    env.run()
    return done


def _simpy():
    """SimPy, which runs the engine step by step: imported on use, so that the library imports
    without it (a dependency all the same: ``ia.serve`` of a continuous engine runs on it)."""
    try:
        import simpy
    except ImportError as error:
        raise ImportError(
            "running the engine step by step (ia.continuous.simulate, burst and closed_loop, "
            "and ia.serve on a continuously batching engine) needs SimPy, a dependency of "
            "inference-arithmetic that is missing here: pip install simpy"
        ) from error
    return simpy


@functools.lru_cache(maxsize=32)
def _scalar_step(s: Scenario):
    """The step of ``s``'s model with its values put in, as a plain function of the decodes,
    their mean context and the prompt tokens: the simulation calls it once a step, where the
    checked array function would cost a hundred times as much. Kept per scenario: a run's seeds
    and loads share it (making it costs about as much as running a thousand requests)."""
    expr = STEP_FORMULAS[s.step](s.model, s.parallel, **s.formula_options)
    values = s.values()
    known = {x: sympy.sympify(values[x.name]) for x in expr.free_symbols if x.name in values}
    # Common subexpressions once (cse): a step's kernels share their terms, and a call takes
    # half the time for a second more of compiling, repaid within a few thousand steps.
    return sympy.lambdify((B_d, S, P_t), expr.xreplace(known), "math", cse=True)
