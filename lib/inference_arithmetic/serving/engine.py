"""The engine under a stream of requests: one scenario's continuously batching engine, its
steps as the queueing chain of ``serving.queueing``, as functions of the arrival rate
(``Engine``), which the colocated steady state and the disaggregated pools both build on.

>>> s = stream_scenario("llama-3.1-70b", "h100-sxm", 2048, 256, n_gpus=4)
>>> memory_capacity(s), in_flight(s)  # requests of 2,304 tokens its memory holds; batches
(219, 1)
>>> piped = s.replace(parallel="pipeline")  # four stages: four micro-batches, each of 54
>>> memory_capacity(piped), in_flight(piped)
(54, 4)

The engine (``scenario.STEP_FORMULAS``: ``formulas.kernels.step``, or chapter 08's roofline
``formulas.continuous.step``): every step decodes one token of each running request and
prefills, under the token budget, the prompts that arrived during the steps before (in chunks
of what the budget leaves beside the decodes, ``Engine.macro``). In the steady state of lambda
requests a second, with steps of mean length tau (chapter 10 derives each part):

- a step prefills the K prompts that arrived during the step before, K ~ Poisson(lambda t)
  for a step of t: the steps are a Markov chain on K (``Engine.chain``), and tau is the mean
  of its stationary distribution, a fixed point since lambda (O - 1) tau requests decode at
  once (``Engine.tau``);
- the decoding count's fluctuations and what they do to the time per token are the chain's
  long-run variances, put into ``queueing.STEADY`` (``Engine.state``);
- an arrival meets the engine in proportion to time, when it is busier: its first token takes
  the rest of the step under way (E[t^2] / 2 E[t]) and the steps that prefill it, at the
  time-weighted B_d (``Engine.ttft``; ``Engine.waits`` its distribution).

A pipeline of n stages is n such chains, one a micro-batch in flight at lambda / n, each step
lasting its round's: the slowest of the n micro-batches' steps (``Engine.period``, chapter 12).
The steady state of expert parallelism is one engine whose ranks step together, each step the
kernels' step of the busiest GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from inference_arithmetic.core import cache, checks
from inference_arithmetic.formulas import continuous, latency, techniques
from inference_arithmetic.models.config import AUTO, model_names
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.serving import queueing
from inference_arithmetic.serving.lengths import Lengths, sums
from inference_arithmetic.serving.queueing import (
    COUNTS,
    PERCENTILES,
    RUNAWAY_TAIL,
    TINY,
    future_sums,
    mixture_quantiles,
    named,
    own_tpot,
    poisson,
    runaway_weight,
    skewed_quantiles,
    stationary,
    steady_at,
)
from inference_arithmetic.serving.scenario import STEP_FORMULAS, Scenario

__all__ = ["Engine", "engine_of", "stream_scenario", "EXPERTS_BY_KERNELS"]

EXPERTS_BY_KERNELS = (
    "the steady state of expert parallelism is timed kernel by kernel (step='kernels'): the "
    "roofline's step of a continuous engine is tensor-parallel"
)
"""The message for a steady state of expert parallelism asked of the single roofline."""


def stream_scenario(
    model, gpu, prompt_len, output_len, n_gpus=1, dtype=AUTO, deployment=None
) -> Scenario:
    """The ``Scenario`` of an engine under a stream of requests of ``prompt_len`` and
    ``output_len`` tokens, made as ``batch=1, in_waves=True`` (one request must fit; the
    engine admits as many as its memory holds); ``deployment``, the other settings. Expert
    parallelism is timed kernel by kernel (``EXPERTS_BY_KERNELS``)."""
    workload = dict(batch=1, prompt_len=prompt_len, output_len=output_len, in_waves=True)
    s = Scenario(model, gpu, **workload, n_gpus=n_gpus, dtype=dtype, **(deployment or {}))
    if s.parallel in latency.EXPERT_PARALLEL and s.step != "kernels":
        raise checks.ArgumentError(EXPERTS_BY_KERNELS)
    return s


def compiled_step(arch, step="kernels", parallel="tensor", **options):
    """The step of ``arch`` (``scenario.STEP_FORMULAS[step]`` with ``parallel`` and a
    scenario's ``formula_options``), compiled and kept on disk: building and compiling it is
    most of a model's first steady state (``warm`` fills the cache)."""
    return cache.formula(STEP_FORMULAS[step], arch, parallel, **options)


def _step_split(arch, step, parallel, free, **options) -> str:
    """The cut of ``compiled_step`` for ``bind`` at the arguments ``free``."""
    return compiled_step(arch, step, parallel, **options).split(*free)


def _mean_context_formula() -> dict:
    return {"context": latency.mean_context()}


def _pipeline_wait_formula() -> dict:
    return {"wait": continuous.pipeline_wait(), "square": continuous.pipeline_wait(2)}


def _pipeline_wait_split() -> str:
    """The cut of ``_pipeline_wait_formula`` for ``bind`` at t (the slow part of a bind, which
    each pipeline's ``meet`` makes)."""
    return cache.formulas(_pipeline_wait_formula).split("t")


def _fit_formula(arch, parallel, draft) -> dict:
    return {"n": latency.max_concurrency(arch, parallel, draft)}


def memory_capacity(s: Scenario) -> int:
    """The requests of ``s``'s lengths whose whole caches its memory holds
    (``latency.max_concurrency``: of each batch in flight in a pipeline; a draft model's
    weights and cache take room)."""
    whole = {**s.values(), "context_len": s.prompt_len + s.output_len}
    fit = cache.formulas(_fit_formula, s.model, s.parallel, s.formula_options.get("draft"))
    return int(fit.from_values(whole)["n"])


def capacity(s: Scenario) -> int:
    """The most requests the engine runs at once: what its memory holds, and its engine's
    ``max_num_seqs`` (kernel by kernel: the single roofline knows no engine's cap)."""
    cap = s.engine.max_num_seqs if s.step == "kernels" else None
    held = memory_capacity(s)
    return min(held, cap) if cap else held


def in_flight(s: Scenario) -> int:
    """The batches ``s`` works on at once (``latency.batches_in_flight``): a pipeline's
    micro-batches, one for every other parallelism."""
    flight = latency.batches_in_flight(s.parallel)
    values = s.values()
    return int(flight.xreplace({x: values[x.name] for x in flight.free_symbols}))


def _prefilled_formula() -> dict:
    return {"new": techniques.prefilled_tokens()}


def prefilled(s: Scenario, prompts=None):
    """Tokens of each prompt the engine computes: all of them, or those its prefix cache
    does not hold (``techniques.prefilled_tokens``); of ``s``'s prompt, or of each of an array
    of ``prompts`` (lengths)."""
    if "prefix" not in s.step_options:
        return s.prompt_len if prompts is None else prompts
    if prompts is None:
        return round(cache.formulas(_prefilled_formula).from_values(s.values())["new"])
    values = {**s.values(), "prompt_len": np.asarray(prompts)}
    return np.rint(cache.formulas(_prefilled_formula).from_values(values)["new"]).astype(int)


@dataclass(frozen=True)
class _Cycle:
    """The other micro-batches' steps a pipeline's step waits for (``Engine.slowest``):
    ``terms``, ``pipeline_wait`` and its square bound to them (functions of t, a term for each
    value), and ``values``, theirs, ascending."""

    terms: Callable
    values: np.ndarray

    def mean(self, times):
        """E[max(t, M)] of each step t of ``times``: its cycle."""
        return self.terms(np.asarray(times)[..., None])[0].sum(-1)

    def square(self, times):
        """E[max(t, M)^2] of each step t of ``times``."""
        return self.terms(np.asarray(times)[..., None])[1].sum(-1)

    @functools.cached_property
    def cycles(self):
        """The cycle of a step as long as each of ``values``."""
        return self.mean(self.values)


class Engine:
    """The steady state of one ``Scenario``'s continuously batching engine under a stream of
    requests, as functions of the arrival rate (module docstring): of requests of its lengths,
    or of the ``lengths`` of a workload (``serving.lengths``; the scenario is then of their
    means, rounded). ``engine_of`` makes each once.

    >>> e = engine_of(stream_scenario("llama-3.1-8b", "h100-sxm", 1024, 128))
    >>> e.capacity, e.stages  # requests its memory holds, batches in flight
    (400, 1)
    >>> state = e.state(4.0)  # 4 requests a second
    >>> state["ok"], state["mean_step"] < state["tpot"] < state["ttft"] < state["request_time"]
    (True, True)

    What the colocated steady state (``serving.continuous``) and the disaggregated pools
    (``serving.disaggregated``) read of it: ``s``, the scenario; ``budget``, its token budget;
    ``O``, the steps a request decodes in, plus one (its output length; speculating,
    1 + (O - 1) / E); ``mean_output``, its mean output tokens; ``rows``, the budget's rows
    a decode takes (gamma + 1 speculating, else 1); ``new``, the tokens each prompt computes
    (``prefilled``); ``tokens``, the tokens of K prompts, for each K of ``queueing.COUNTS``,
    at each point of their distribution; ``capacity``, the requests its memory holds
    (``memory_capacity``); ``stages``, its batches in flight (``in_flight``); ``others``, the
    other micro-batches' steps that a pipeline's step waits for (``meet``).

    Its methods: ``steps`` times steps, ``macro`` the steps that prefill K prompts under the
    budget, ``chain`` the Markov chain on K, ``tau`` its fixed point, ``state`` the steady
    state at a rate, ``ttft`` an arrival's mean first token and ``waits`` its distribution,
    ``percentiles`` a state's; a pipeline's ``period``, ``meet`` and ``slowest``.
    """

    def __init__(self, s: Scenario, lengths: Lengths | None = None):
        self.s, self.budget = s, s.token_budget
        self.values = s.values()

        # Speculating, a request decodes in (O - 1) / E steps of E tokens each: the chain
        # counts steps, so it runs as if of 1 + (O - 1) / E tokens (``steady_state_of``
        # divides the time per step by E), and each decode takes gamma + 1 of the budget.
        def in_steps(output):
            return output if s.speculative is None else 1 + (output - 1) / s.tokens_per_step

        self.mean_output = s.output_len if lengths is None else lengths.means[1]
        self.T, self.O = s.prompt_len, in_steps(self.mean_output)
        self.rows = s.speculative.draft_len + 1 if s.speculative else 1
        self.new = prefilled(s)  # each prompt's tokens to compute (prefix cache)
        self.context = cache.formulas(_mean_context_formula).from_values(self.values)["context"]
        # An arrival's own prompt (tokens to compute) and the share of requests of it; the
        # TPOT's output lengths: one each, or the workload's bins.
        self.own, self.outputs = ((self.new,), (1.0,)), ((float(self.O),), (1.0,))
        if lengths is not None:
            own = prefilled(s, np.array(lengths.prompts[0]))
            self.new = float(np.dot(own, lengths.prompts[1]))  # Little's law: the mean
            self.own = (tuple(map(float, own)), lengths.prompts[1])
            self.outputs = (tuple(in_steps(o) for o in lengths.outputs[0]), lengths.outputs[1])
            self.context = lengths.context
        # The tokens of K prompts, at points of their distribution (one, K times the prompt's,
        # for one length): the chain is on K, each K's steps a mixture over these.
        self.loads, self.load_shares = sums(*self.own, COUNTS)
        self.tokens = self.loads.ravel()
        self.capacity = memory_capacity(s)
        # The chain evaluates the step a thousand times at the scenario's values: checked once.
        free = ("decoding", "context_len", "prefill_tokens")
        options = s.formula_options
        step = compiled_step(s.model, s.step, s.parallel, **options)
        split = cache.data(_step_split, s.model, s.step, s.parallel, free, **options)
        self._step = step.bind(self.values, *free, split=split)
        # A pipeline is n micro-batches in flight, each this chain at a share of the rate,
        # whose steps last the cycle's (``period``) once ``tau`` has their spread.
        self.stages = in_flight(s)
        self.others = None  # the other micro-batches' steps (``slowest``), as ``meet`` draws them

    def period(self, times):
        """A pipeline's step: the cycle's, as long as the slowest of the n micro-batches'
        steps (``formulas.continuous.pipeline_cycle``), the others' drawn from the chain's
        steps (``others``): E[max(t, M)], M the largest of n - 1 draws, the sum of
        ``formulas.continuous.pipeline_wait`` over their values."""
        return self.others.mean(times)

    def spread(self, cycles):
        """The variance of a micro-batch's step whose mean is ``cycles`` (its cycle,
        ``period``): the sum of ``pipeline_wait(2)``, E[max(t, M)^2], less the mean's square, at
        the own step t of that cycle. E[max(t, M)] is linear in t between the others' values
        and t itself past the largest, so t is read back exactly by interpolation. An arrival
        lands in a longer step more often (``ttft``, ``waits``). Zero for one engine."""
        cycles = np.asarray(cycles, dtype=float)
        if self.others is None:
            return np.zeros_like(cycles)
        x, at_x = self.others.values, self.others.cycles
        own = np.where(cycles >= at_x[-1], cycles, np.interp(cycles, at_x, x))
        return np.maximum(self.others.square(own) - cycles**2, 0.0)

    def meet(self, rate, decodes):
        """Set ``others`` to the steps of the chain at ``rate`` and ``decodes``: each count's
        own step time (not the cycle's; at each point of its tokens where lengths differ),
        weighted by how often the pipeline takes it, stationary share times steps in the chain
        of the cycle as it stands (``others``: its slower steps let more prompts arrive in
        each); the largest of n - 1 of them (``pipeline_wait`` bound to them, a function of
        t)."""
        _, points = self.chain(rate, [decodes], points=True)
        _, _, at, steps = (x[0] for x in points)
        self.others = None
        _, points = self.chain(rate, [decodes], points=True)
        self.others = self.slowest(points[0][0], at * steps)

    def slowest(self, values, shares):
        """``pipeline_wait`` and its square bound to the other micro-batches' steps,
        ``values`` taken in ``shares``: the cycle of a step t and its second moment as
        functions of t (``period`` and ``spread`` sum them), with the values ascending."""
        order = np.argsort(values)
        shares = np.asarray(shares, dtype=float)[order]
        total = shares.sum()
        drawn = {"x": values[order], "G": np.cumsum(shares) / total, "g": shares / total}
        wait, split = cache.formulas(_pipeline_wait_formula), cache.data(_pipeline_wait_split)
        return _Cycle(wait.bind({**drawn, "n": self.stages}, "t", split=split), drawn["x"])

    def steps(self, decodes, prompts):
        """Step times for ``decodes`` decoding requests and each count of ``prompt tokens``."""
        prompts = np.asarray(prompts, dtype=float)
        decodes, context = np.maximum(decodes, 0.0), np.asarray(self.context)
        times = np.asarray(self._step(decodes, context, prompts), dtype=float)
        times = times if times.shape == prompts.shape else np.broadcast_to(times, prompts.shape)
        return times if self.others is None else self.period(times)

    def macro(self, decodes, rate=0.0):
        """The steps that prefill each count of prompts K (``COUNTS``), chunked under the token
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
        moves = poisson(rate * times)  # moves[k, j]: k prompts, then j
        shape, shares = (len(times), *self.loads.shape), self.load_shares
        mean_times, mean_counts = ((x.reshape(shape) * shares).sum(-1) for x in (times, counts))
        mean_moves = (moves.reshape(*shape, -1) * shares[..., None]).sum(-2)
        weights = stationary(mean_moves)
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
        # that move the same way, the second the shorter, Aitken's extrapolation jumps to where
        # they head. A jump that lands past the fixed point comes back down the same way, from
        # above (where the plain iteration would creep as long again: a hundred steps and more
        # for the 8B at vLLM 0.11's 8,192 tokens, a step far larger than a prompt); one that
        # makes the chain run away is undone, and the plain iteration decides. The answer is a
        # fixed point to the same tolerance, in a few steps at any rate kept up with.
        previous, accelerate = None, True
        for _ in range(1000):
            chain = self.chain(rate, [rate * (self.O - 1) * tau])
            times, _, weights, counts = (part[0] for part in chain)
            mean = float((weights * counts) @ times / (weights @ counts))
            if mean > 1e3 or not np.isfinite(mean) or runaway_weight(weights) > RUNAWAY_TAIL:
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
                if 0 < (mean - last) / (last - before) < 1:  # slowing: a fixed point ahead
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
        ranks = COUNTS + 1
        tokens = COUNTS * float(self.new) + own  # to its own last token, of rank j + 1
        steps = np.ceil(tokens / room)
        left = tokens - (steps - 1) * room
        prompts = np.concatenate([room, np.broadcast_to(tokens, left.shape), left], axis=1)
        evaluated = self.steps(decodes, prompts)
        full, together = evaluated[:, :1], evaluated[:, 1 : 1 + len(COUNTS)]
        last = (steps - 1) * full + evaluated[:, 1 + len(COUNTS) :]
        ranks_before = np.cumsum(steps * full, axis=1)[:, :-1]
        before = np.concatenate([np.zeros_like(full), ranks_before], axis=1)
        done = np.where(tokens <= room, together, (before + last) / ranks)  # a mean over j + 1
        ttfts = []
        for times, moves, weights, counts, row in zip(*chains, done, strict=True):
            spans = times * counts
            picked = weights * spans / (weights @ spans)
            # The rest of the steps it lands in, picked by length: half of them, and in a
            # pipeline, whose steps vary with the others', their variance over twice the mean
            # (n steps: n times a step's variance over twice n steps).
            rest = spans / 2 + self.spread(times) / (2 * times)
            ttfts.append(float(picked @ (rest + moves @ row)))
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
        # The long-run variances are sums over the chain's future (``future_sums``) of its
        # rewards, centred per step: a prefill of K prompts spreads over its n_K steps (K - mu
        # n_K prompts, M_K - tau n_K seconds, mu the prompts a step).
        steps = weights @ counts
        prompts = COUNTS - (weights @ COUNTS) / steps * counts
        seconds = (times - tau) * counts
        zk, zt = future_sums(moves, weights, np.stack([prompts, seconds], 1)).T
        chain = {
            "requests_per_s": rate,
            "output_len": self.O,
            "mean_step": tau,
            "step_slope": max(slope, 1e-300),
            "burst_ratio": float(weights @ (prompts * (2 * zk - prompts)) / (weights @ COUNTS)),
            "burst_covariance": float(weights @ (prompts * (zt - seconds)) / steps),
            "step_noise": max(float(weights @ (seconds * (2 * zt - seconds)) / steps), 0.0),
            # The step of the decodes alone: the rest of a request's mean step is prefill.
            "decode_step": float(self.steps(decodes, np.zeros(1))[0]),
        }
        steady = steady_at(chain)
        if steady["gain"] >= 1:
            return None  # more decodes feed back more than they add: no steady state
        if not (
            self.rows * decodes < self.budget
            and rate * (self.O - 1) * steady["tpot"] <= self.capacity
        ):
            # Not kept up with, whatever the first token's wait (below, at least 0): every
            # caller reads only "ok" of such a state, so its TTFT is not worked out.
            return {"ok": False, "mean_step": tau, **chain, **steady}
        tail = float(runaway_weight(weights))
        # The budget left for prompts, b - B_d, moves with the decodes: an arrival's prefill is
        # the mean over their spread (normal, of the steady state's variance), not at the mean.
        nodes, weights_b = map(np.array, queueing.SPREAD_POINTS)
        spread = np.sqrt(max(steady["variance"], 0.0))
        met = np.clip(steady["busy"] + spread * nodes, 0.0, (self.budget - 1.0) / self.rows)
        ttft = float(weights_b @ self.ttft(rate, met) / weights_b.sum())
        request = ttft + (self.O - 1) * steady["tpot"]
        ok = self.rows * decodes < self.budget and rate * request <= self.capacity
        # How far from each limit, as one number below 0 while all hold (the tail in decades):
        # the saturation search aims with it.
        used = self.rows * decodes / self.budget  # the budget's share the decodes take
        margin = max(
            np.log10(max(tail, 1e-300) / RUNAWAY_TAIL),
            used - 1,
            rate * request / self.capacity - 1,
            steady["gain"] - 1,
        )
        return {
            "ttft": ttft,
            "tpot": steady["tpot"],
            "mean_step": tau,
            "request_time": request,
            "concurrency": self.stages * rate * request,
            "ok": ok,
            "margin": margin,
            "met": met,
            "others": self.others,
            **chain,
            **steady,
        }

    def waits(self, rate, decodes):
        """An arrival's TTFT at ``decodes`` decoding requests, as a mixture of uniform
        distributions: (weights, starts, widths). It lands in a step of the prefill of K prompts
        (picked by time), in each of its steps as likely, and waits for the rest of that step;
        then the tokens still ahead of it (the K prompts' rest, and the prompts that arrived
        before it, its rank among the j + 1 of that prefill) and its own go through at the room
        the budget leaves a step. Its first token comes with the step of its last chunk: full
        steps, then one with its rest and, if it is not the last of its prefill, the mean
        tokens of the prompts behind it, up to the room (a step far larger than a prompt is
        not full). The mean (``ttft``) counts the whole prefill under way as the wait, chapter 10's
        account; the spread needs the place in it (their tails are tested on the simulation)."""
        _, ((times,), (moves,), (weights,), (counts,)) = self.chain(rate, [decodes], True)
        # The room and the prompts' tokens as ``macro`` and ``ttft`` count them: the decodes'
        # rows (speculating, gamma + 1 each) first, and only the tokens a prompt computes.
        room = max(self.budget - self.rows * decodes, 1.0)
        spans = times * counts
        picked = weights * spans / (weights @ spans)
        # Its wait in the step it lands in: uniform up to the step, whose mean in a pipeline
        # is a length-biased one's, the mean plus the variance over the mean (as ``ttft``).
        biased = self.spread(times) / times
        n_steps = np.where(self.tokens > room, np.ceil(self.tokens / room), 1.0)
        last = moves / (COUNTS + 1)  # [K, r - 1]: rank r of j + 1 = r, the last of its prefill
        behind = np.cumsum(last[:, ::-1], axis=1)[:, ::-1] - last  # rank r of j + 1 > r
        # Rank r not the last: the prompts behind it share the step of its last chunk, up to
        # the room (it is full only where they fill it). Their mean count, given j + 1 > r:
        # E[j + 1] over P(j) / (j + 1) for j >= r, less r.
        later = np.cumsum(moves[:, ::-1], axis=1)[:, ::-1] - moves  # P(j > r - 1), by r - 1
        following = np.where(behind > 0, later / np.maximum(behind, TINY) - (COUNTS + 1), 0.0)
        # Tokens up to its own last, of rank r, for each of its own prompt's lengths (a row
        # each) and each point of the sum of the r - 1 prompts' before it (``loads``: where
        # lengths differ, a step that holds them whole lasts as their sum does), and the share
        # of arrivals of each.
        own = self.loads[None] + np.array(self.own[0])[:, None, None]
        of_own = np.array(self.own[1])[:, None, None]
        parts = []
        for k in np.nonzero(picked > TINY)[0]:
            n = int(n_steps[k])
            ahead = np.maximum(self.tokens[k] - np.arange(1, n + 1) * room, 0.0)
            ahead = ahead[:, None, None, None]
            for is_last, w in ((True, last[k]), (False, behind[k])):
                # Parts that cannot reach TINY for any own length are never made.
                keep = picked[k] / n * w * of_own.max() > TINY
                reach = ahead + own[:, keep]
                others = 0.0 if is_last else following[k, keep, None] * float(self.new)
                step = np.broadcast_to(reach + others, reach.shape).ravel()
                share = picked[k] / n * (of_own * (w[keep, None] * self.load_shares[keep]))
                share = np.broadcast_to(share, (n, *share.shape))
                kept = share.ravel() > TINY  # the parts that can move a quantile
                width = spans[k] / n + biased[k]
                parts.append((share.ravel()[kept], reach.ravel()[kept], step[kept], width))
        share, reach, through = (np.concatenate([p[i] for p in parts]) for i in range(3))
        widths = np.concatenate([np.full(p[0].shape, p[3]) for p in parts])
        whole = np.ceil(reach / room)  # steps to its last chunk
        rest = np.minimum(through - (whole - 1) * room, room)  # that step's tokens
        kinds, which = np.unique(np.concatenate([[room], rest]), return_inverse=True)
        times = self.steps(decodes, kinds)
        return share / share.sum(), (whole - 1) * times[which[0]] + times[which[1:]], widths

    def percentiles(self, state) -> dict:
        """p50, p90 and p99 of each request's TTFT and TPOT in the steady ``state``: the TTFT's
        distribution (``waits``) over the spread of the decodes an arrival meets, the TPOT a
        gamma about its mean with ``STEADY["tpot_spread"]`` and ``["tpot_skewness"]``
        (``queueing.skewed_quantiles``), per token as ``steady_state_of`` counts it (a
        speculating step's over the tokens it yields)."""
        node_weights = np.array(queueing.SPREAD_POINTS[1])
        self.others = state["others"]  # the cycle of that state's rate (a pipeline's)
        parts = [self.waits(state["requests_per_s"], d) for d in state["met"]]
        share = np.concatenate(
            [w * p[0] for w, p in zip(node_weights / node_weights.sum(), parts, strict=True)]
        )
        starts, widths = (np.concatenate([p[i] for p in parts]) for i in (1, 2))
        qs = np.array(PERCENTILES) / 100
        ttft = mixture_quantiles(share, starts, widths, qs)
        spreads, skews = [state["tpot_spread"]], [state["tpot_skewness"]]
        if len(self.outputs[0]) > 1:  # a spread and a skew of each output length's requests
            spreads, skews = own_tpot(state, self.outputs[0])
        tpot = skewed_quantiles(state["tpot"], spreads, skews, self.outputs[1])
        return {"ttft": named(ttft), "tpot": named(tpot / self.s.tokens_per_step)}


@functools.lru_cache(maxsize=256)
def engine_of(s: Scenario, lengths: Lengths | None = None) -> Engine:
    """The ``Engine`` of ``s`` (of requests of ``lengths``), made once (its step bound to the
    scenario's values): the saturation search and each rate after it share it."""
    return Engine(s, lengths)


def warm() -> None:
    """Compile and keep in the disk cache the engine's formulas: the step of every registry
    model (kernel by kernel, tensor-parallel), the mean context, the pipeline's wait and the
    prefix cache's prompt."""
    for name in model_names():
        compiled_step(registry_model(name))
    cache.formulas(_mean_context_formula)
    cache.data(_pipeline_wait_split)
    cache.formulas(_prefilled_formula)
