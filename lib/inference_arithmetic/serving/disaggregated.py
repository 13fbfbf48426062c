"""Prefill and decode on separate GPUs (disaggregated serving): the steady state of a prefill
pool and a decode pool under an arrival rate, a simulation of both to check it, and the split
that serves the most requests per GPU within a TTFT and a TPOT target, against the best
colocated engine (``compare``).

>>> r = steady_state("llama-3.1-70b", "h100-sxm", requests_per_s=1.0, prompt_len=2048,
...                  output_len=256, prefill_gpus=4, decode_gpus=4)
>>> r["path"], r["gpus"]
('link', 8)
>>> r["prefill"]["ttft"] < r["ttft"] < r["prefill"]["ttft"] + 0.001  # + 0.37 ms of NVLink
True

A request (chapter 11 derives each part; DistServe, Splitwise and Mooncake built it):

- waits for its prefill replica and is prefilled there, in steps of prompt tokens only (P_t
  tokens under the token budget, no decodes). The replica runs busy periods: the K prompts that
  arrived during the last one, in their chunks (``Engine.macro`` with no decodes),
  or it idles until one arrives. The periods are a Markov chain on K, an arrival meets a period
  in proportion to its length, waits for the rest of it, then is prefilled with the others
  that arrived meanwhile, in their order (``_Prefill``);
- its cache moves to a decode replica (``formulas.disaggregation.kv_transfer_time``): over the
  GPUs' link when a prefill and a decode replica fit one link domain, else over the network.
  The prefill's first token reaches the user then: TTFT = wait + prefill + transfer;
- it joins the decode replica's batch at its next step and decodes its O - 1 other tokens, one
  a step, in steps of decodes only (P_t = 0): the colocated ``Engine``'s steady state of arrivals
  with no prompt tokens to prefill but their cache present (``_Decode``). Its TPOT is the wait
  to join (half a step) and its O - 1 steps, over O - 1.

Each replica of a pool takes an equal share of the requests, a Poisson stream of its own (as a
random router makes it). The percentiles of each request's TTFT and TPOT come from the same
chains: the TTFT's as a mixture of uniform distributions (``_Prefill._waits``, summed as
``queueing.mixture_quantiles`` sums the colocated engine's), shifted by the transfer; the
TPOT's about its mean with the decode replica's ``STEADY["tpot_spread"]`` (a normal: its steps
carry no prefill, so no skew).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from inference_arithmetic.core import cache, checks
from inference_arithmetic.formulas import disaggregation
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.serving import queueing, simulation, targets
from inference_arithmetic.serving.continuous import check_decodes
from inference_arithmetic.serving.engine import Engine, capacity, engine_of, stream_scenario
from inference_arithmetic.serving.scenario import Scenario, tensor_parallel_degrees

__all__ = ["PATHS", "POOL_KEYWORDS", "SATURATED", "NOT_HERE"]
__all__ += ["steady_state", "simulate", "best_split", "best_colocated", "compare", "fewest_gpus"]

PATHS = ("auto", *disaggregation.TRANSFER_PATHS)
"""How a cache moves: ``"auto"`` over the link when a prefill replica and a decode replica fit
one link domain together (their GPUs on one NVLink board), else over the network; or as named."""
POOL_KEYWORDS = ("prefill_gpus", "decode_gpus", "prefill_replicas", "decode_replicas")
"""The sizes of the two pools: each replica's tensor-parallel degree, and how many replicas."""
NOT_HERE = (
    "a disaggregated deployment sizes its pools with {pools}, not {names}: each pool has its "
    "own tensor-parallel degree and its own replicas"
)
"""The message for a colocated deployment's size given to a disaggregated one."""
SATURATED = (
    "{rate:g} requests per second saturate the {pool} pool ({replicas} x {n_gpus} x {gpu}): it "
    "keeps up with at most {saturation:.3g} requests per second of {prompt_len} + {output_len} "
    "tokens"
)
"""The message past either pool's saturation rate."""
LANDINGS = 8
"""Slices of a prefill replica's busy period in which an arrival may land, for its TTFT's
percentiles (``_Prefill._waits``)."""
_GROWTH, _HALVINGS = 2.0, 30  # the rate searches: doubling to a bracket, then halving it


def _highest(meets, start=1.0) -> float:
    """The highest rate at which ``meets(rate)`` holds (it holds up to a rate, not past it): a
    bracket by doubling (or halving, 0 if it fails at a millionth of ``start``), then halved
    thirty times. Every pool saturates, so the doubling ends; a billion times ``start`` stops
    it all the same."""
    low, high = 0.0, start
    if meets(high):
        while meets(high * _GROWTH):
            high *= _GROWTH
            if high > start * 1e9:
                return high
        low, high = high, high * _GROWTH
    else:
        while not meets(high / _GROWTH):
            high /= _GROWTH
            if high < start * 1e-6:
                return 0.0
        low = high / _GROWTH
    for _ in range(_HALVINGS):
        middle = (low + high) / 2
        low, high = (middle, high) if meets(middle) else (low, middle)
    return low


class _Prefill:
    """A prefill replica's steady state (module docstring): the chain of its busy periods."""

    def __init__(self, s: Scenario):
        self.engine = engine = engine_of(s)
        room, prompt = float(s.token_budget), float(s.prompt_len)
        # n = j + 1 prompts prefilled together, in order: rank r's last chunk is in step
        # ceil(r T / b), a full step of b tokens unless it is the period's last, which holds
        # what is left. done[j]: the mean over the n ranks of the time their first token takes.
        ranks = queueing.COUNTS + 1.0
        steps = np.ceil(ranks * prompt / room)
        left = ranks * prompt - (steps - 1) * room
        times = engine.steps(0.0, np.concatenate([[room], left]))
        full, last = times[0], (steps - 1) * times[0] + times[1:]
        own, whole = steps[:, None], steps[None, :]  # rank r (rows) of n prompts (columns)
        self.ends = np.triu(np.where(own < whole, own * full, last[None, :]))
        self.done = self.ends.sum(axis=0) / ranks

    def state(self, rate: float, percentiles: bool = False) -> dict | None:
        """The mean TTFT of the replica at ``rate`` requests a second and its busy share, and
        with ``percentiles`` those of its TTFT (``queueing.PERCENTILES``, ``_waits``); None if
        its chain runs away (saturated)."""
        times, _ = self.engine.macro(np.zeros(1), rate)
        periods = times[0].copy()
        periods[0] = 1 / rate  # idle until the next arrival, which starts a period of one
        moves = queueing.poisson(rate * periods)
        moves[0] = np.eye(len(periods))[1]
        weights = queueing.stationary(moves)
        if queueing.runaway_weight(weights) > queueing.RUNAWAY_TAIL:
            return None
        share = weights * periods / (weights @ periods)  # of the time, each kind of period
        waits = np.concatenate([[self.done[0]], periods[1:] / 2 + moves[1:] @ self.done])
        state = {"ttft": float(share @ waits), "busy": float(1 - share[0])}
        if percentiles:
            qs = np.array(queueing.PERCENTILES) / 100
            waits = self._waits(share, periods, moves, rate)
            quantiles = queueing.mixture_quantiles(*waits, qs)
            state["percentiles"] = queueing.named(quantiles)
        return state

    def _waits(self, share, periods, moves, rate):
        """An arrival's TTFT as a mixture of uniform distributions (weights, starts, widths),
        as ``Engine.waits`` lays out the colocated engine's: it lands in a busy period of K
        prompts (picked by time), at a point u of it, waits for the rest, then is prefilled
        with those that arrived in that period, Poisson(lambda u) before it and
        Poisson(lambda (t - u)) after, done at ``ends[rank, count]``. Where it lands sets both
        its wait and its rank, so the two are drawn together: a late arrival waits less and is
        prefilled later, and drawn apart they would pair long waits with late ranks, a tail
        past the simulation's. The point is one of ``LANDINGS`` slices of the period; one that
        lands while the replica idles is prefilled alone at once."""
        kinds = np.flatnonzero(share[1:] > queueing.TINY) + 1
        slices = (np.arange(LANDINGS) + 0.5) / LANDINGS
        landed = periods[kinds, None] * slices  # [k, i]: the middle of each slice
        before = queueing.poisson(rate * landed)  # [k, i, rank - 1]
        after = queueing.poisson(rate * (periods[kinds, None] - landed))  # [k, i, later]
        # Only the ranks and counts the Poisson weights reach (the arrays are k x i x r x n).
        ranks, laters = (
            int(np.flatnonzero(p.max(axis=(0, 1)) > queueing.TINY).max()) + 1
            for p in (before, after)
        )
        counts = min(ranks + laters - 1, len(self.done))
        later = np.arange(counts)[None, :] - np.arange(ranks)[:, None]  # [rank - 1, count - 1]
        weights = share[kinds, None, None, None] / LANDINGS * before[..., :ranks, None]
        reached = (later >= 0) & (later < laters)
        weights = weights * np.where(reached, after[..., np.clip(later, 0, laters - 1)], 0.0)
        left = periods[kinds, None] * (1 - (np.arange(LANDINGS) + 1) / LANDINGS)
        starts = left[..., None, None] + self.ends[:ranks, :counts]
        widths = np.broadcast_to((periods[kinds] / LANDINGS)[:, None, None, None], starts.shape)
        keep = weights > queueing.TINY
        # Alone: a point, a uniform a millionth of its time wide (the grid sums it as a step).
        alone = self.ends[0, 0]
        return (
            np.append(weights[keep], share[0]),
            np.append(starts[keep], alone),
            np.append(widths[keep], alone * 1e-6),
        )


class _Decode(Engine):
    """A decode replica: the colocated ``Engine`` whose arrivals bring their cache and no
    prompt tokens to prefill, so that every step decodes only (P_t = 0). Its ``ttft`` is the
    wait to join the batch: the rest of the step under way. It holds at most what its memory
    and its engine's ``max_num_seqs`` allow, as the simulation does: a pool of decodes alone
    reaches that cap before its steps grow long."""

    def __init__(self, s: Scenario):
        super().__init__(s)
        self.tokens = np.zeros_like(self.tokens)
        self.capacity = capacity(s)

    def ttft(self, rate, decodes):
        decodes = np.asarray(decodes, dtype=float)
        return self.steps(decodes, np.zeros_like(decodes)) / 2


@functools.lru_cache(maxsize=256)
def _prefill(s: Scenario) -> _Prefill:
    return _Prefill(s)


@functools.lru_cache(maxsize=256)
def _decode(s: Scenario) -> _Decode:
    return _Decode(s)


def _decode_state(s: Scenario, rate: float) -> dict | None:
    """The decode replica's steady state at ``rate``, with each request's TPOT (its wait to
    join and its steps, over its O - 1 tokens: a speculating step yields ``tokens_per_step``)
    and its percentiles: about it with the spread and skewness of the colocated engine's
    (``STEADY["tpot_spread"]``, ``["tpot_skewness"]``: here the decoding count's, a normal,
    its steps having no prompts), per token too; None if saturated."""
    state = _decode(s).state(rate)
    if state is None or not state["ok"]:
        return None
    tokens = s.tokens_per_step
    tpot = state["tpot"] / tokens + state["ttft"] / (s.output_len - 1)
    skew = state["tpot_skewness"]
    spread = queueing.skewed_quantiles(tpot, state["tpot_spread"] / tokens, skew)
    return {**state, "join": state["ttft"], "tpot": tpot, "percentiles": queueing.named(spread)}


@functools.lru_cache(maxsize=256)
def _saturation(s: Scenario, pool: str) -> float:
    """The highest rate one replica of ``pool`` keeps up with."""
    if pool == "prefill":
        return _highest(lambda rate: _prefill(s).state(rate) is not None)
    return _highest(lambda rate: _decode_state(s, rate) is not None)


class _Pools:
    """The two pools' scenarios (one replica each) and the transfer between them."""

    def __init__(self, model, gpu, prompt_len, output_len, sizes, transfer, dtype, deployment):
        given = sorted(set(deployment) & {"n_gpus", "replicas"})
        if given:
            raise checks.ArgumentError(
                NOT_HERE.format(pools=", ".join(POOL_KEYWORDS), names=", ".join(given))
            )
        self.sizes = {name: checks.count(name, sizes[name]) for name in POOL_KEYWORDS}
        check_decodes(output_len)

        def scenario(n_gpus, output):
            return simulation.stepping_together(
                stream_scenario(model, gpu, prompt_len, output, n_gpus, dtype, deployment)
            )

        # The prefill replica holds a prompt's cache only until it is sent: one output token.
        self.prefill = scenario(self.sizes["prefill_gpus"], 1)
        self.decode = scenario(self.sizes["decode_gpus"], output_len)
        domain = self.decode.gpu.link_domain or 1
        paired = self.sizes["prefill_gpus"] + self.sizes["decode_gpus"]
        self.path = checks.choice("transfer", transfer, PATHS)
        if self.path == "auto":
            linked = self.decode.gpu.interconnect_bandwidth is not None and paired <= domain
            self.path = "link" if linked else "network"
        if self.path == "link" and self.decode.gpu.interconnect_bandwidth is None:
            raise checks.ArgumentError(
                f"{self.decode.gpu.name} has no interconnect_bandwidth: its caches move over "
                "the network (transfer='network' or 'auto')"
            )
        # Each side's GPUs send or receive their parts at once: the fewer of them set the lanes.
        lanes = min(self.sizes["prefill_gpus"], self.sizes["decode_gpus"])
        values = {**self.decode.values(), "n_gpus": lanes}
        transfer = disaggregation.kv_transfer_time
        self.transfer = float(
            cache.formula(transfer, self.decode.model, self.path).from_values(values)
        )

    @property
    def gpus(self) -> int:
        n = self.sizes
        return n["prefill_replicas"] * n["prefill_gpus"] + n["decode_replicas"] * n["decode_gpus"]

    def saturated(self, rate, pool, saturation) -> str:
        s = getattr(self, pool)
        return SATURATED.format(
            rate=rate,
            pool=pool,
            replicas=self.sizes[f"{pool}_replicas"],
            n_gpus=s.n_gpus,
            gpu=s.gpu.name,
            saturation=saturation,
            prompt_len=s.prompt_len,
            output_len=self.decode.output_len,
        )


def _pools(model, gpu, prompt_len, output_len, dtype, keywords) -> _Pools:
    """The pools of a keyword function's arguments (``keywords``: the pools' sizes, ``transfer``
    and the deployment settings)."""
    sizes = {name: keywords.pop(name, 1) for name in POOL_KEYWORDS}
    transfer = keywords.pop("transfer", "auto")
    return _Pools(model, gpu, prompt_len, output_len, sizes, transfer, dtype, keywords)


def steady_state(
    model, gpu, *, requests_per_s, prompt_len=2048, output_len=256, dtype=AUTO, **deployment
) -> dict:
    """The steady state of ``requests_per_s`` requests a second on a disaggregated deployment:
    ``prefill_replicas`` x ``prefill_gpus`` prefill, ``decode_replicas`` x ``decode_gpus``
    decode (tensor parallel each; 1 by default), the caches moved over ``transfer`` (``PATHS``);
    the other keywords are ``Scenario``'s deployment settings (``token_budget``, ``engine``, ...)
    for both pools.

    Returns the mean ``ttft`` and ``tpot`` (seconds; module docstring), their ``percentiles``
    (``{"ttft": {...}, "tpot": {...}}``, each of ``p50``, ``p90`` and ``p99``, as ``simulate``
    gives them and ``ia.steady_state`` does), ``transfer`` (seconds
    per request) and its ``path``, ``gpus`` (in all), ``saturation_rate`` (the lower of the
    pools'), and per pool: ``prefill`` (``ttft``: its wait and prefill; ``busy``: the share of
    the time a replica prefills; ``saturation_rate``) and ``decode`` (``tpot``: each request's;
    ``mean_step``, ``join``: the wait to join, ``decoding``: requests per replica;
    ``saturation_rate``). ``ArgumentError`` past either pool's saturation, naming it."""
    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    return _steady(_pools(model, gpu, prompt_len, output_len, dtype, dict(deployment)), rate)


def _steady(pools: _Pools, rate: float) -> dict:
    per = {pool: rate / pools.sizes[f"{pool}_replicas"] for pool in ("prefill", "decode")}
    saturation = {pool: _saturation(getattr(pools, pool), pool) for pool in per}
    prefill = _prefill(pools.prefill).state(per["prefill"], percentiles=True)
    decode = _decode_state(pools.decode, per["decode"])
    for pool, state in (("prefill", prefill), ("decode", decode)):
        if state is None:
            whole = saturation[pool] * pools.sizes[f"{pool}_replicas"]
            raise checks.ArgumentError(pools.saturated(rate, pool, whole))
    ttfts = prefill.pop("percentiles")
    return {
        "ttft": prefill["ttft"] + pools.transfer,
        "tpot": decode["tpot"],
        "percentiles": {
            "ttft": {p: ttft + pools.transfer for p, ttft in ttfts.items()},
            "tpot": decode["percentiles"],
        },
        "transfer": pools.transfer,
        "path": pools.path,
        "gpus": pools.gpus,
        "saturation_rate": min(saturation[p] * pools.sizes[f"{p}_replicas"] for p in per),
        "prefill": {**prefill, "saturation_rate": saturation["prefill"]},
        "decode": {
            "tpot": decode["tpot"],
            "mean_step": decode["mean_step"],
            "join": decode["join"],
            "decoding": decode["decoding"],
            "saturation_rate": saturation["decode"],
        },
    }


def simulate(
    model,
    gpu,
    *,
    requests_per_s,
    prompt_len=2048,
    output_len=256,
    dtype=AUTO,
    requests=400,
    seed=0,
    **deployment,
) -> dict:
    """The deployment of ``steady_state`` step by step with SimPy: Poisson arrivals, each sent
    to a prefill replica and then a decode replica at random; a prefill replica is
    ``ia.simulation.simulate``'s engine with requests of one token (prompts only, under the
    token budget); the cache arrives ``transfer`` seconds after the prefill; a decode replica
    takes it at its next step and decodes every request it holds, one token a step, until each
    has written its O - 1. ``requests`` (400) after a warm-up of a fifth as many, ``seed`` (0).
    Returns the mean ``ttft`` and ``tpot`` and their ``percentiles`` (p50, p90, p99), as
    ``ia.simulation.simulate`` does."""
    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    pools = _pools(model, gpu, prompt_len, output_len, dtype, dict(deployment))
    requests = checks.count("requests", requests)
    rng, warm = np.random.default_rng(seed), requests // 5
    arrivals = np.cumsum(rng.exponential(1 / rate, requests + warm))
    first = np.empty_like(arrivals)
    prefill, decode = pools.prefill, pools.decode
    step = simulation.run_step(prefill)
    limits = simulation.limits(prefill)  # its prompts, of one output token each
    to_prefill = rng.integers(pools.sizes["prefill_replicas"], size=len(arrivals))
    for replica in range(pools.sizes["prefill_replicas"]):
        mine = np.flatnonzero(to_prefill == replica)
        for r in simulation.run_limits(*limits, arrivals[mine], step):
            first[mine[r["i"]]] = r["first"]
    handed = first + pools.transfer
    last = np.empty_like(arrivals)
    to_decode = rng.integers(pools.sizes["decode_replicas"], size=len(arrivals))
    step = simulation.run_step(decode)
    for replica in range(pools.sizes["decode_replicas"]):
        mine = np.flatnonzero(to_decode == replica)
        order = mine[np.argsort(handed[mine], kind="stable")]
        last[order] = simulation.run_decodes(capacity(decode), decode, handed[order], step)
    kept = slice(warm, None)
    ttfts = (handed - arrivals)[kept]
    tpots = ((last - handed) / (output_len - 1))[kept]
    return {
        "ttft": float(ttfts.mean()),
        "tpot": float(tpots.mean()),
        "percentiles": {
            name: queueing.named(np.percentile(times, queueing.PERCENTILES))
            for name, times in (("ttft", ttfts), ("tpot", tpots))
        },
    }


def _judged(state, key, percentile):
    """A pool's ``key`` ("ttft" or "tpot") that a target judges: its mean, or with
    ``percentile`` that percentile of it (``targets.judged_times``'s rule)."""
    return state[key] if percentile is None else state["percentiles"][f"p{percentile}"]


def _prefill_rate(pools: _Pools, ttft_target: float, percentile=None) -> float:
    """The most requests a second one prefill replica serves within ``ttft_target`` (on its
    mean, or with ``percentile`` that percentile)."""
    engine = _prefill(pools.prefill)

    def meets(rate):
        state = engine.state(rate, percentiles=percentile is not None)
        return state is not None and _judged(state, "ttft", percentile) <= ttft_target

    return _highest(meets) if ttft_target > 0 else 0.0


def _decode_rate(s: Scenario, tpot_target: float, percentile=None) -> float:
    """The most requests a second one decode replica serves within ``tpot_target`` (on its
    mean, or with ``percentile`` that percentile)."""

    def meets(rate):
        state = _decode_state(s, rate)
        return state is not None and _judged(state, "tpot", percentile) <= tpot_target

    return _highest(meets)


def _splits(
    model,
    gpu,
    prompt_len,
    output_len,
    ttft_target,
    tpot_target,
    most_gpus,
    most_degree,
    dtype,
    deployment,
    percentile=None,
):
    """For each pair of tensor-parallel degrees (up to ``most_degree``, both within
    ``most_gpus``) whose replicas hold the model: the degrees, the most requests a second one
    prefill replica serves within the TTFT target less the transfer, one decode replica's within
    the TPOT target (each a search on its steady state, targets on the means or on
    ``percentile``), and the pools."""
    targets.check_targets(ttft_target, tpot_target)
    degrees = tensor_parallel_degrees(registry_model(model), most_degree)
    decode_rates = {}
    for n_p in degrees:
        for n_d in degrees:
            if n_p + n_d > most_gpus:
                continue
            sizes = {"prefill_gpus": n_p, "decode_gpus": n_d}
            try:
                pools = _pools(model, gpu, prompt_len, output_len, dtype, {**deployment, **sizes})
            except checks.ArgumentError as error:
                if getattr(error, "check", None) != "fit":
                    raise
                continue  # a pool's replica does not hold the model
            r_p = _prefill_rate(pools, ttft_target - pools.transfer, percentile)
            if n_d not in decode_rates:
                decode_rates[n_d] = _decode_rate(pools.decode, tpot_target, percentile)
            if r_p > 0 and decode_rates[n_d] > 0:
                yield n_p, n_d, r_p, decode_rates[n_d], pools


def best_split(
    model,
    gpu,
    *,
    prompt_len,
    output_len,
    ttft_target,
    tpot_target,
    most_gpus=64,
    most_degree=8,
    dtype=AUTO,
    **deployment,
) -> dict | None:
    """The disaggregated deployment of at most ``most_gpus`` GPUs that serves the most
    requests a second per GPU with a mean TTFT within ``ttft_target`` and a mean TPOT within
    ``tpot_target`` (seconds): for each tensor-parallel degree of each pool (up to
    ``most_degree``), the most a prefill replica serves within the TTFT target less the
    transfer, and a decode replica within the TPOT target (each a search on its steady state),
    then the replicas of each whose lower total is the most per GPU. Returns the pools' sizes
    (``POOL_KEYWORDS``), ``gpus``, ``goodput`` (requests a second), ``per_gpu``, ``transfer``
    and ``path``; None if no split meets the targets."""
    checks.count("most_gpus", most_gpus, low=2)
    best = None
    for n_p, n_d, r_p, r_d, pools in _splits(
        model,
        gpu,
        prompt_len,
        output_len,
        ttft_target,
        tpot_target,
        most_gpus,
        most_degree,
        dtype,
        deployment,
    ):
        for R_p in range(1, (most_gpus - n_d) // n_p + 1):
            # The decode replicas that keep up with these prefill replicas, or one fewer.
            enough = math.ceil(R_p * r_p / r_d)
            for R_d in {enough, max(enough - 1, 1)}:
                gpus = R_p * n_p + R_d * n_d
                goodput = float(min(R_p * r_p, R_d * r_d))
                if gpus > most_gpus:
                    continue
                if best is None or goodput / gpus > best["per_gpu"] * (1 + 1e-9):
                    best = {
                        "prefill_gpus": n_p,
                        "prefill_replicas": R_p,
                        "decode_gpus": n_d,
                        "decode_replicas": R_d,
                        "gpus": gpus,
                        "goodput": goodput,
                        "per_gpu": goodput / gpus,
                        "transfer": pools.transfer,
                        "path": pools.path,
                    }
    return best


def fewest_gpus(
    model,
    gpu,
    *,
    requests_per_s,
    prompt_len,
    output_len,
    ttft_target,
    tpot_target,
    percentile=targets.DEFAULT_PERCENTILE,
    most_gpus=64,
    most_degree=8,
    dtype=AUTO,
    **deployment,
) -> dict | None:
    """The disaggregated deployment of the fewest GPUs (at most ``most_gpus``) that serves
    ``requests_per_s`` with a mean TTFT and TPOT within the targets, or with ``percentile``
    (one of ``queueing.PERCENTILES``) that percentile of each request's: for each pair of
    degrees (``_splits``), as many prefill and decode replicas as their rates within the
    targets need. Returns the pools' sizes (``POOL_KEYWORDS``), ``gpus``, and the ``ttft``
    and ``tpot`` of its steady state at that rate (the means, or the percentile judged); None
    if none of ``most_gpus`` GPUs does."""
    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    percentile = targets.check_percentile(percentile)
    best = None
    for n_p, n_d, r_p, r_d, _ in _splits(
        model,
        gpu,
        prompt_len,
        output_len,
        ttft_target,
        tpot_target,
        most_gpus,
        most_degree,
        dtype,
        deployment,
        percentile,
    ):
        # Replicas whose rates just reach the demand (a hair of rounding forgiven).
        R_p, R_d = (max(math.ceil(rate / r * (1 - 1e-9)), 1) for r in (r_p, r_d))
        gpus = R_p * n_p + R_d * n_d
        if gpus <= most_gpus and (best is None or gpus < best["gpus"]):
            best = {
                "prefill_gpus": n_p,
                "prefill_replicas": R_p,
                "decode_gpus": n_d,
                "decode_replicas": R_d,
                "gpus": gpus,
            }
    if best is not None:
        sizes = {k: best[k] for k in POOL_KEYWORDS}
        state = steady_state(
            model,
            gpu,
            requests_per_s=rate,
            prompt_len=prompt_len,
            output_len=output_len,
            dtype=dtype,
            **sizes,
            **deployment,
        )
        best.update(targets.judged_times(state, percentile))
    return best


def best_colocated(
    model,
    gpu,
    *,
    prompt_len,
    output_len,
    ttft_target,
    tpot_target,
    most_degree=8,
    dtype=AUTO,
    **deployment,
) -> dict | None:
    """The colocated engine (``ia.steady_state``) that serves the most requests a second per
    GPU with a mean TTFT and TPOT within the targets: for each tensor-parallel degree up to
    ``most_degree``, the highest rate one replica serves within both (replicas add their
    rates, so the rate per GPU is one replica's over its GPUs). Returns ``n_gpus``, ``goodput``
    (one replica's requests a second) and ``per_gpu``; None if no degree meets the targets."""
    targets.check_targets(ttft_target, tpot_target)
    check_decodes(output_len)
    best = None
    for n in tensor_parallel_degrees(registry_model(model), most_degree):
        try:
            s = stream_scenario(model, gpu, prompt_len, output_len, n, dtype, deployment)
        except checks.ArgumentError as error:
            if getattr(error, "check", None) != "fit":
                raise
            continue  # one replica of n GPUs does not hold the model
        # ia.goodput's search, on the means: the highest rate whose steady state meets both.
        rate, _ = targets.goodput_of(s, ttft_target, tpot_target, None, 2.0**-30)
        if rate > 0 and (best is None or rate / n > best["per_gpu"]):
            best = {"n_gpus": n, "goodput": float(rate), "per_gpu": float(rate / n)}
    return best


def compare(
    model,
    gpu,
    *,
    prompt_len,
    output_len,
    ttft_target,
    tpot_target,
    most_gpus=64,
    most_degree=8,
    dtype=AUTO,
    **deployment,
) -> dict:
    """Disaggregated against colocated serving of one workload within a mean TTFT and TPOT
    target: ``disaggregated`` (``best_split``), ``colocated`` (``best_colocated``), each None
    where nothing meets the targets, ``ratio`` (the first's requests per GPU over the second's;
    None unless both meet them) and ``better`` ("disaggregated", "colocated", or None where
    neither does). The call for a planner choosing between the two.

    >>> targets = dict(ttft_target=0.5, tpot_target=0.05)
    >>> c = compare("llama-3.1-8b", "h100-sxm", prompt_len=512, output_len=128, **targets,
    ...             most_gpus=4, most_degree=1)
    >>> c["better"] in ("disaggregated", "colocated")
    True
    """
    keywords = dict(most_degree=most_degree, dtype=dtype, **deployment)
    split = best_split(
        model,
        gpu,
        prompt_len=prompt_len,
        output_len=output_len,
        ttft_target=ttft_target,
        tpot_target=tpot_target,
        most_gpus=most_gpus,
        **keywords,
    )
    engine = best_colocated(
        model,
        gpu,
        prompt_len=prompt_len,
        output_len=output_len,
        ttft_target=ttft_target,
        tpot_target=tpot_target,
        **keywords,
    )
    ratio = split["per_gpu"] / engine["per_gpu"] if split and engine else None
    if ratio is None:
        better = "disaggregated" if split else "colocated" if engine else None
    else:
        better = "disaggregated" if ratio > 1 else "colocated"
    return {"disaggregated": split, "colocated": engine, "ratio": ratio, "better": better}
