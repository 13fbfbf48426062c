"""The engine run step by step: a discrete-event simulation of the continuously batching engine
under Poisson arrivals, a burst or a closed loop, which checks the steady state.

>>> r = simulate("llama-3.1-8b", "h100-sxm", requests_per_s=4.0, prompt_len=1024, output_len=128,
...              requests=200)
>>> r["tpot"] < r["ttft"], sorted(r["percentiles"]["ttft"])
(True, ['p50', 'p90', 'p99'])

Each step decodes one token of every running request and prefills, first come first served,
the waiting prompts in the tokens left under the token budget; a request is admitted while the
memory holds its whole cache (and the engine's ``max_num_seqs``); a step takes the scenario's
step formula (``scenario.STEP_FORMULAS``) for its decodes, their mean context and its prompt
tokens (``scalar_step``). ``simulate`` runs it on a stream; ``burst`` and ``closed_loop`` (and
``loop_phases``, its burst and its steady part) on requests sent at once or as others finish,
timing one schedule of steps (``burst_schedule``) under any setting of the step's figures.
``run_limits`` runs the engine (one class of an engine's queues): one engine alone in a loop of
its own, with SimPy's order of events (``_run_alone``, checked against SimPy), and engines that
share their arrivals or a pipeline's stages under SimPy; ``run_decodes`` is an engine that only
decodes (under SimPy): the disaggregated pools' simulation runs both.
"""

from __future__ import annotations

import functools
import heapq
from collections import deque

import numpy as np
import sympy

from inference_arithmetic.core import checks, numeric, printing
from inference_arithmetic.core.symbols import B_d, P_t, S
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.serving.engine import (
    capacity,
    compiled_step,
    memory_capacity,
    prefilled,
    stream_scenario,
)
from inference_arithmetic.serving.lengths import sequences
from inference_arithmetic.serving.queueing import PERCENTILES, named
from inference_arithmetic.serving.scenario import STEP_FORMULAS, Scenario

__all__ = ["simulate", "burst", "burst_schedule", "closed_loop", "loop_phases"]
__all__ += ["NO_PIPELINE", "NO_SPECULATION"]

NO_PIPELINE = (
    "a burst, a closed loop, ia.serve of a continuous engine and a disaggregated pool each "
    "schedule one engine whose GPUs step together (tensor or expert parallelism), not a "
    "pipeline's n micro-batches in flight, which wait for each other at its stages. A "
    "pipeline's steady state is ia.steady_state(..., parallel='pipeline') (and ia.plan's and "
    "ia.goodput's); ia.simulation.simulate(..., parallel='pipeline') runs one under a stream; "
    "its batch is timed by ia.calculate(..., parallel='pipeline') or ia.generation, its "
    "batches in waves by ia.serve(..., parallel='pipeline', engine=a static engine)"
)
"""The message for a burst, a closed loop or a disaggregated pool asked of a pipeline."""


def stepping_together(s: Scenario) -> Scenario:
    """``s``, if it is of one engine whose GPUs step together, not a pipeline
    (``NO_PIPELINE``): a burst's schedule and a disaggregated pool are of one such engine."""
    if s.parallel == "pipeline":
        raise checks.ArgumentError(NO_PIPELINE)
    return s


def simulate(
    model,
    gpu,
    *,
    requests_per_s,
    prompt_len=2048,
    output_len=256,
    n_gpus=1,
    dtype=AUTO,
    requests=400,
    seed=0,
    **deployment,
) -> dict:
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
    s = stream_scenario(model, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
    owners = rng.integers(0, s.n_gpus, len(arrivals)) if s.parallel == "pipeline" else None
    kept = [r for r in run(s, arrivals, lengths=lengths, owners=owners) if r["i"] >= warm]
    ttfts = np.array([r["first"] - r["arrived"] for r in kept])
    decoded = [r for r in kept if r["output"] > 1]  # a request of one token has no TPOT
    tpots = np.array([(r["last"] - r["first"]) / (r["output"] - 1) for r in decoded])
    if not len(tpots):  # no decode step: no time per output token
        tpots = np.full(1, np.nan)
    return {
        "ttft": float(ttfts.mean()),
        "tpot": float(tpots.mean()),
        "percentiles": {
            name: named(np.percentile(times, PERCENTILES))
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
    arrays, to time one schedule under many settings at once (chapter 13's fit)."""
    key = _schedule_key(s)
    _, first, last, _, _ = _schedule(*key)
    values = {**s.values(), **figures}
    ends = _step_ends(s, key, figures)
    elapsed = ends[-1]
    ttft = ends[first].mean(axis=0)
    tpot = ((ends[last] - ends[first]) / max(s.output_len - 1, 1)).mean(axis=0)
    if s.output_len == 1:  # no decode step runs: one is timed, at the batch and the prompt
        one = {
            **values,
            "decoding": min(s.batch, capacity(s)),
            "context_len": s.prompt_len,
            "prefill_tokens": 0,
        }
        tpot = compiled_step(s.model, s.step, s.parallel, **s.formula_options).from_values(one)
        tpot = tpot + 0 * elapsed
    return {
        "elapsed": elapsed,
        "throughput": s.batch * s.output_len / elapsed,
        "ttft": ttft,
        "tpot": tpot,
        "concurrency": min(s.batch, capacity(s)),
    }


def burst_schedule(s: Scenario, users: int | None = None, total: int | None = None):
    """The steps the engine takes for ``s``'s burst (or, with ``users`` and ``total``, for a
    closed loop of ``users`` clients sending ``total`` requests), an array of a row per step
    (decodes, their mean context, prompt tokens), and for each request the step of its first
    and last token and the steps done when it arrived. With every request there from the
    start, or sent when another finishes, at the end of a step, what a step does depends on
    the steps before, not on how long they take, so one schedule serves every setting of the
    step's figures. Requests in the order they finished, with ``i`` the order they were sent;
    the arrays are read-only (the schedule is cached)."""
    return _schedule(*_schedule_key(s, users, total))


def _schedule_key(s: Scenario, users: int | None = None, total: int | None = None) -> tuple:
    """What ``burst_schedule``'s schedule depends on (``_schedule``'s arguments)."""
    capacity, *lengths = limits(stepping_together(s))
    sent = s.batch if users is None else users
    # No more than the requests sent at once (or the users) are ever in the engine: a capacity
    # past them takes the same steps, and shares their schedule (a term that adds memory).
    return (min(capacity, sent), *lengths, sent, total)


@functools.lru_cache(maxsize=1024)
def _schedule(capacity, token_budget, prompt_len, output_len, computed, sent, total):
    """``burst_schedule`` of what a schedule depends on, and nothing else (a term of the model
    switched off, a figure changed: the same schedule)."""
    plan = []

    def record(decodes, context, prompts):
        plan.append((decodes, context, prompts))
        return 1.0  # each step one time unit: its index is its end

    bounds = (capacity, token_budget, prompt_len, output_len, computed)
    done = _run_alone(bounds, np.zeros(sent), record, total)
    first = np.array([round(r["first"]) - 1 for r in done])
    last = np.array([round(r["last"]) - 1 for r in done])
    arrived = np.array([round(r["arrived"]) for r in done])  # steps done before it came
    sent = np.array([r["i"] for r in done])
    # The plan as one array, made once here: every timing of the cached schedule reads it.
    plan = np.array(plan, dtype=float).reshape(len(plan), 3)
    for array in (plan, first, last, arrived, sent):
        array.flags.writeable = False  # shared by every caller of the cache
    return plan, first, last, arrived, sent


@functools.lru_cache(maxsize=1024)
def _distinct_steps(*key) -> tuple[np.ndarray, np.ndarray]:
    """The distinct steps of the schedule of ``key`` (``_schedule``'s arguments), as rows of
    its plan, and each step's row: a closed loop's steps come round again and again (the same
    decodes, mean context and prompt tokens), a quarter of them distinct in the validation
    set's runs, so each is timed once. Read-only, as the schedule is."""
    plan = _schedule(*key)[0]
    # Sorted by decodes, then context, then prompt tokens (np.unique's rows compare as bytes,
    # several times slower): each run of equal rows is one distinct step.
    order = np.lexsort(plan.T[::-1])
    ordered = plan[order]
    first = np.ones(len(plan), dtype=bool)
    first[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    rows, index = ordered[first], np.empty(len(plan), dtype=np.intp)
    index[order] = np.cumsum(first) - 1
    for array in (rows, index):
        array.flags.writeable = False
    return rows, index


def _step_ends(s: Scenario, key: tuple, figures):
    """The end of each step of the schedule of ``key`` (``_schedule_key``), in seconds from the
    start: each distinct step timed once by ``s``'s step formula at its values and ``figures``
    (arrays broadcast: one column per setting), then the steps' times summed in their order."""
    rows, index = _distinct_steps(*key)
    values = {**s.values(), **figures}
    shape = np.broadcast(*[np.asarray(v) for v in figures.values()]).shape if figures else ()
    columns = rows.reshape(len(rows), 3, *[1] * len(shape))
    point = {
        **values,
        "decoding": columns[:, 0],
        "context_len": columns[:, 1],
        "prefill_tokens": columns[:, 2],
    }
    times = compiled_step(s.model, s.step, s.parallel, **s.formula_options).from_values(point)
    return np.cumsum(np.broadcast_to(times, (len(rows), *shape))[index], axis=0)


def closed_loop(s: Scenario, users: int, requests: int) -> dict:
    """``users`` clients, each sending its next request of the scenario's lengths as soon as
    its last one finishes, ``requests`` in all, to the engine of ``simulate`` (a benchmark at
    fixed concurrency). Returns the mean ``ttft`` and ``tpot`` of the requests after the first
    ``users`` (the warm-up), and the output ``throughput`` of the whole run: its schedule
    (``burst_schedule``) timed step by step. ``loop_phases`` splits the same run into its
    burst and its steady part."""
    users, requests, ends, first, last, start, sent = _timed_loop(s, users, requests)
    kept = sent >= users if np.any(sent >= users) else np.ones(len(sent), dtype=bool)
    elapsed = float(ends[last].max())
    spans = (ends[last] - ends[first]) / max(s.output_len - 1, 1)
    return {
        "ttft": float(np.mean((ends[first] - start)[kept])),
        "tpot": float(np.mean(spans[kept])),
        "throughput": requests * s.output_len / elapsed,
        "elapsed": elapsed,
    }


def loop_phases(s: Scenario, users: int, requests: int) -> dict:
    """The run of ``closed_loop`` in its two parts, what ``ia.steady_state(...,
    concurrency=users)`` predicts of each. ``steady``: the loop with every user busy, the mean
    ``ttft``, ``tpot`` and ``request_time`` of the requests sent after the first ``users`` and
    before the last ``users`` (none of the burst, none of the end, when fewer users are left),
    and the ``throughput`` (output tokens per second) by Little's law, each user's request out
    all the time: users times the output tokens over the mean request time (None of each when
    ``requests`` is at most twice ``users``). ``first_wave``: the burst the run starts with,
    the mean ``ttft`` of the first ``requests`` sent (as many as the engine holds at once),
    and the ``last`` one's."""
    users, requests, ends, first, last, start, sent = _timed_loop(s, users, requests)
    spans = (ends[last] - ends[first]) / max(s.output_len - 1, 1)
    ttfts, times = ends[first] - start, ends[last] - start
    steady = {"ttft": None, "tpot": None, "request_time": None, "throughput": None}
    busy = (sent >= users) & (sent < requests - users)
    if np.any(busy):
        steady = {
            "ttft": float(np.mean(ttfts[busy])),
            "tpot": float(np.mean(spans[busy])),
            "request_time": float(np.mean(times[busy])),
            "throughput": users * s.output_len / float(np.mean(times[busy])),
        }
    wave = sent < min(users, capacity(s))
    first_wave = {
        "ttft": float(np.mean(ttfts[wave])),
        "last": float(np.max(ttfts[wave])),
        "requests": int(wave.sum()),
    }
    return {"steady": steady, "first_wave": first_wave}


def _timed_loop(s: Scenario, users, requests):
    """A closed loop's schedule (``burst_schedule``) timed: the counts checked, each step's
    end, each request's first and last token's step, its arrival's time and its order sent."""
    users = checks.count("users", users)
    requests = checks.count("requests", requests, low=users)
    key = _schedule_key(s, users, requests)
    _, first, last, arrived, sent = _schedule(*key)
    ends = _step_ends(s, key, {})
    start = np.concatenate([[0.0], ends])[arrived]  # a request arrives at a step's end
    return users, requests, ends, first, last, start, sent


def run(s: Scenario, arrivals, step=None, total=None, lengths=None, owners=None):
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
    step = run_step(s) if step is None else step
    stages = {"owners": owners, "stages": s.n_gpus if s.parallel == "pipeline" else 1}
    bounds = limits(s)  # (and the refusal of what it does not simulate)
    if lengths is None:
        return run_limits(*bounds, arrivals, step, total, **stages)
    # The memory holds the caches of so many requests of the mean lengths: so many tokens.
    cap = s.engine.max_num_seqs if s.step == "kernels" else None
    tokens = memory_capacity(s) * (s.prompt_len + s.output_len)
    prompts, outputs = lengths
    return run_limits(
        cap or len(arrivals),
        s.token_budget,
        prompts,
        outputs,
        prefilled(s, prompts),
        arrivals,
        step,
        total,
        tokens,
        **stages,
    )


NO_SPECULATION = (
    "the engine run step by step (simulate, burst, closed_loop, and ia.serve of a continuous "
    "engine) decodes one token a step; speculative decoding is modeled by ia.steady_state "
    "and ia.calculate"
)
"""The message for a step-by-step run of a speculating scenario."""


def limits(s: Scenario) -> tuple:
    """What the engine's schedule depends on: the requests it holds at once, its token
    budget, the requests' lengths and the tokens each prompt computes (``engine.prefilled``)."""
    if s.speculative is not None:  # each step's tokens would be random: not simulated
        raise checks.ArgumentError(NO_SPECULATION)
    return (capacity(s), s.token_budget, s.prompt_len, s.output_len, prefilled(s))


def run_limits(
    capacity,
    token_budget,
    prompt_len,
    output_len,
    computed,
    arrivals,
    step,
    total=None,
    tokens=None,
    owners=None,
    stages=1,
):
    """``run`` of the limits it runs under: at most ``capacity`` requests at once and, if
    ``tokens`` is given, requests whose whole caches (prompt and output) hold at most that
    many tokens; ``prompt_len`` and ``output_len`` each a length, or an array of each
    request's (by its index), a prompt computing ``computed`` of its tokens (the rest in the
    prefix cache; a number, or an array too) and cached whole. With ``owners`` (each request's
    engine, 0 up), engines share the arrivals, each with its own queues and cache; with
    ``stages``, every engine's step passes through that many stages in turn, one step in a
    stage at a time, each taking an equal part of it: a pipeline's micro-batches in flight,
    which wait for each other. One engine whose steps no other shares runs without SimPy
    (``_run_alone``, the same events in the same order)."""
    if owners is None and stages == 1:
        bounds = (capacity, token_budget, prompt_len, output_len, computed)
        return _run_alone(bounds, arrivals, step, total, tokens)
    simpy = load_simpy()

    env = simpy.Environment()
    run = _Run(capacity, token_budget, prompt_len, output_len, computed, arrivals, total, tokens)
    count = 1 if owners is None else int(np.max(owners)) + 1
    engines = [_Queues(run) for _ in range(count)]
    wakes = [None] * count
    pipe = [simpy.Resource(env, capacity=1) for _ in range(stages)] if stages > 1 else None

    def arrive():
        for i, at in enumerate(arrivals):
            yield env.timeout(at - env.now)
            mine = 0 if owners is None else owners[i]
            engines[mine].waiting.append(run.request(i, at))
            if wakes[mine] is not None and not wakes[mine].triggered:
                wakes[mine].succeed()  # an idle engine starts a step at once

    def serve(mine):
        engine = engines[mine]
        while not run.over():
            chunks = engine.plan()
            if chunks is None:  # nothing to do until a request arrives
                wakes[mine] = env.event()
                yield wakes[mine]
                continue
            seconds = step(*engine.sizes(chunks))
            if pipe is None:
                yield env.timeout(seconds)
            else:
                for stage in pipe:
                    with stage.request() as turn:
                        yield turn
                        yield env.timeout(seconds / stages)
            engine.end(chunks, env.now)

    env.process(arrive())
    for mine in range(count):
        env.process(serve(mine))
    env.run()
    return run.done


def _run_alone(bounds, arrivals, step, total=None, tokens=None):
    """``run_limits`` of one engine whose steps no other shares, under its ``bounds`` (capacity,
    token budget, lengths, tokens computed), without SimPy, each step taking ``step(...)``
    seconds, more than none. The same events in the same order as under SimPy, which has two
    to order: the next arrival, and the engine's next step (or its wake, when a request arrives
    at an idle engine); of two at one instant, the one scheduled first goes first. So the idle
    engine starts its first step when the first request arrives, and those arriving at the
    same instant arrive while that step runs. A step of decodes alone (no prompt chunk: none
    waits, or the budget is spent) is followed by the same step, a token further on, until one
    of them ends or a request arrives: those steps are taken without the queues
    (``decodes_alone``), most of a burst's steps and many of a light stream's. The same times
    to the bit as SimPy's, without its machinery of events: a quarter less time for a stream
    near saturation, more than half less for a light one."""
    run = _Run(*bounds, arrivals, total, tokens)
    engine, at = _Queues(run), [float(x) for x in arrivals]
    # Each clock: the time of its next event and the order it was scheduled in (SimPy's).
    arrival, arrival_order = (at[0], 0) if at else (np.inf, 0)
    turn, turn_order, order, chunks, i = np.inf, 0, 1, None, 0
    while not run.over():
        if (arrival, arrival_order) < (turn, turn_order):  # request i arrives
            now = arrival
            engine.waiting.append(run.request(i, at[i]))
            i += 1
            if chunks is None and turn == np.inf:  # the idle engine wakes at once
                turn, turn_order, order = now, order, order + 1
            arrival = now + (at[i] - now) if i < len(at) else np.inf  # as SimPy adds it
            arrival_order, order = order, order + 1
            continue
        now = turn
        if chunks is not None:  # the step ends
            engine.end(chunks, now)
            if run.over():
                break
        chunks = engine.plan()
        if chunks is None:  # idle until a request arrives
            turn = np.inf
            continue
        if chunks == []:  # decodes alone: the steps before the next arrival
            now = engine.decodes_alone(step, now, arrival)
        turn, turn_order, order = now + step(*engine.sizes(chunks)), order, order + 1
    return run.done


class _Run:
    """What the engines of one run share: the requests' lengths, the limits, the finished
    requests (``done``) and, in a closed loop, the requests sent so far."""

    def __init__(self, capacity, budget, prompt_len, output_len, computed, arrivals, total, tokens):
        self.capacity, self.budget, self.tokens, self.total = capacity, budget, tokens, total
        # Each request's lengths: its own, where they are arrays, else the one of all.
        self.lengths = [
            (lambda i, x=x: int(x[i])) if np.ndim(x) else (lambda i, x=x: x)
            for x in (prompt_len, output_len, computed)
        ]
        self.done, self.issued = [], len(arrivals)
        self.wanted = len(arrivals) if total is None else total

    def request(self, i, at) -> dict:
        prompt, output, computed = self.lengths
        return {
            "i": i,
            "arrived": at,
            "prefilled": 0,
            "prompt": prompt(i),
            "output": output(i),
            "computed": computed(i),
        }

    def over(self) -> bool:
        return len(self.done) >= self.wanted


class _Queues:
    """One engine's queues: admitted requests prefill in their order and decode until their
    last token (a queue, and a heap by the step of that token, in the order they began among
    those of one step), with the sum of the decodes' contexts. ``plan`` admits what fits and
    chooses the next step's prompt chunks; ``sizes`` are what the step is timed by; ``end``
    finishes the step at ``now``."""

    def __init__(self, run: _Run):
        self.run, self.waiting, self.prefilling, self.decoding = run, deque(), deque(), []
        self.held = 0  # tokens of the admitted requests' whole caches
        self.steps, self.contexts, self.began = 0, 0, 0  # steps taken; decodes' cached tokens

    def plan(self):
        """The step's chunks, (request, tokens) pairs; None when there is nothing to do."""
        run, waiting, prefilling, decoding = self.run, self.waiting, self.prefilling, self.decoding
        while waiting and len(prefilling) + len(decoding) < run.capacity:
            size = waiting[0]["prompt"] + waiting[0]["output"]
            if (
                run.tokens is not None
                and self.held + size > run.tokens
                and (prefilling or decoding)
            ):
                break
            self.held += size
            prefilling.append(waiting.popleft())
        left, chunks = run.budget - len(decoding), []
        for r in prefilling:
            if left <= 0:
                break
            take = min(r["computed"] - r["prefilled"], left)
            chunks.append((r, take))
            left -= take
        return None if not decoding and not chunks else chunks

    def sizes(self, chunks) -> tuple:
        """The step's decodes, their mean context and its prompt tokens."""
        decodes = len(self.decoding)
        context = self.contexts / decodes if decodes else 1.0
        return decodes, context, sum(take for _, take in chunks)

    def decodes_alone(self, step, now, until) -> float:
        """After a plan of no prompt chunk, the steps of the same decodes, each a token further
        on, before the step in which the first of them ends, each taking ``step(...)`` from
        ``now`` and ending before ``until`` (the next arrival, which could change the plan);
        the time they end."""
        decodes = len(self.decoding)
        for _ in range(self.decoding[0][0] - self.steps - 1):
            ahead = now + step(decodes, self.contexts / decodes, 0)
            if ahead >= until:
                break
            now, self.steps, self.contexts = ahead, self.steps + 1, self.contexts + decodes
        return now

    def end(self, chunks, now) -> None:
        """The step's chunks prefilled and its decodes' tokens out, at ``now``: a prompt done
        gives its first token, a request at its last leaves (and in a closed loop, its user
        sends the next request)."""
        run, decoding = self.run, self.decoding
        self.steps, self.contexts = self.steps + 1, self.contexts + len(decoding)
        for r, take in chunks:
            r["prefilled"] += take
            if r["prefilled"] == r["computed"]:  # its first token
                self.prefilling.popleft()
                r["first"], r["first_step"] = now, self.steps
                heapq.heappush(decoding, (self.steps + r["output"] - 1, self.began, r))
                self.began += 1
                self.contexts += r["prompt"]
        while decoding and decoding[0][0] <= self.steps:
            r = heapq.heappop(decoding)[2]  # its last token
            r["last"] = now
            self.contexts -= r["prompt"] + r["output"] - 1
            self.held -= r["prompt"] + r["output"]
            run.done.append(r)
            if run.issued < run.wanted and run.total is not None:  # its user sends the next one
                self.waiting.append(run.request(run.issued, now))
                run.issued += 1


def run_decodes(capacity, s: Scenario, arrivals, step) -> np.ndarray:
    """An engine that only decodes (a disaggregated deployment's decode replica), on caches of
    ``s``'s requests arriving at ``arrivals`` (in order): at each step's start it takes those
    that have arrived (up to ``capacity`` at once), and each step decodes one token of every
    request it holds, at their mean context, taking ``step(decodes, context, 0)`` seconds; a
    request leaves with its O - 1th. Each request's last token's time, in the order of
    ``arrivals``."""
    simpy = load_simpy()
    env, idle = simpy.Environment(), {"wake": None}
    waiting, running, last = [], [], np.empty(len(arrivals))
    prompt, steps_each = s.prompt_len, s.output_len - 1

    def arrive():
        for i, at in enumerate(arrivals):
            yield env.timeout(at - env.now)
            waiting.append(i)
            if idle["wake"] is not None and not idle["wake"].triggered:
                idle["wake"].succeed()

    def serve():
        done, written = 0, {}
        while done < len(arrivals):
            while waiting and len(running) < capacity:
                running.append(waiting.pop(0))
                written[running[-1]] = 0
            if not running:
                idle["wake"] = env.event()
                yield idle["wake"]
                continue
            context = prompt + sum(written[i] for i in running) / len(running)
            yield env.timeout(step(len(running), context, 0))
            for i in list(running):
                written[i] += 1
                if written[i] == steps_each:
                    running.remove(i)
                    last[i], done = env.now, done + 1

    env.process(arrive())
    env.process(serve())
    env.run()
    return last


def load_simpy():
    """SimPy, which runs engines that share their arrivals or their stages step by step:
    imported on use, so that the library imports without it (a dependency all the same: a
    pipeline's and a disaggregated deployment's simulations run on it)."""
    try:
        import simpy
    except ImportError as error:
        raise ImportError(
            "simulating engines that share their arrivals or their stages step by step (a "
            "pipeline's micro-batches, ia.simulation.simulate(..., parallel='pipeline'); a "
            "disaggregated deployment's pools, ia.disaggregated.simulate) needs SimPy, a "
            "dependency of inference-arithmetic that is missing here: pip install simpy"
        ) from error
    return simpy


def run_step(s: Scenario):
    """``scalar_step(s)`` for one run, the same number to the bit, in a third of its time: the
    decodes' mean context moves at every step, while the decodes and the prompt tokens repeat,
    so what does not depend on the context is computed once for each pair of them
    (``numeric.cut``) and kept for the run. Made anew for each run, so that none keeps them
    after."""
    prepare, evaluate = _cut_step(s)
    prepared = {}

    def step(decodes, context, tokens):
        found = prepared.get((decodes, tokens))
        if found is None:
            found = prepared[decodes, tokens] = prepare(decodes, tokens)
        return evaluate(*found, context)

    return step


@functools.lru_cache(maxsize=32)
def _cut_step(s: Scenario) -> tuple:
    """``scalar_step(s)`` cut at the context (``numeric.cut``), kept as it is."""
    return numeric.cut(scalar_step(s), S.name)


@functools.lru_cache(maxsize=32)
def scalar_step(s: Scenario):
    """The step of ``s``'s model with its values put in, as a plain function of the decodes,
    their mean context and the prompt tokens: the simulation calls it once a step, where the
    checked array function would cost a hundred times as much. Kept per scenario: a run's seeds
    and loads share it (making it costs about as much as running a thousand requests)."""
    expr = STEP_FORMULAS[s.step](s.model, s.parallel, **s.formula_options)
    values = s.values()
    known = {x: sympy.sympify(values[x.name]) for x in expr.free_symbols if x.name in values}
    # The scalar printer computes common subexpressions once: a step's kernels share their
    # terms, and a call takes half the time for a second more of compiling, repaid within a few
    # thousand steps.
    return printing.scalar((B_d, S, P_t), expr.xreplace(known))
