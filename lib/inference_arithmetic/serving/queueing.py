"""The queueing chain's mathematics: Poisson arrivals, the chain's stationary distribution, the
steady state's relations, and the quantiles of the times they give.

>>> moves = poisson([0.5] * PROMPT_COUNTS)  # every state: Poisson(0.5) prompts next
>>> round(float(stationary(moves) @ COUNTS), 6)  # the stationary mean of K
0.5
>>> named(skewed_quantiles(1.0, 0.0))
{'p50': 1.0, 'p90': 1.0, 'p99': 1.0}

The engine (``serving.engine``) is a Markov chain on K, the prompts that arrived during the step
before: each state's steps last a time that the step formula gives, and Poisson(lambda t)
prompts arrive meanwhile (``poisson``). The chain is kept on ``PROMPT_COUNTS`` counts and
solved exactly (``stationary``; ``future_sums`` for its long-run variances). At its fixed point,
lambda requests a second with steps of mean length tau (chapter 10 derives each relation):

- lambda (O - 1) tau requests decode at once (Little's law: each decodes for O - 1 steps);
- the decoding count B_d is the prompts of the last O - 1 steps, and prompts come in bursts (a
  step with prompts is long and gathers more): its variance is B_d r / (1 - g), r the chain's
  long-run variance of K over its mean, g = lambda (O - 1) dtau/dB_d the share of a fluctuation
  that more decodes feed back (``STEADY``);
- a request meets steps in proportion to their decodes, so its time per output token is
  E[B_d t] / E[B_d] = tau + Cov(B_d, t) / B_d, longer than the mean step; an arrival meets the
  engine in proportion to time, when it is busier;
- a request's own TPOT, the mean of its O - 1 steps, spreads with B_d's drift and with the
  prefill time its steps carry, the chain's long-run noise over O - 1 steps fed back as B_d's
  count is (1 / (1 - g)); that prefill time is a sum of a random count of prompts' prefills,
  skewed as a gamma is (``tpot_skewness``): where a step far larger than a prompt holds whole
  prompts (vLLM's 8,192 tokens), a few long steps among short ones make its tail.

``STEADY`` is SymPy: the library evaluates it, the calculator's page prints it to JavaScript.
The percentiles of each request's TTFT come from a mixture of uniform distributions
(``mixture_quantiles``), its TPOT's from a gamma's by Wilson and Hilferty's cube
(``TPOT_QUANTILE``, ``skewed_quantiles``), printed to JavaScript too.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from inference_arithmetic.core import cache
from inference_arithmetic.core.symbols import O

__all__ = ["PROMPT_COUNTS", "PERCENTILES", "SPREAD_POINTS", "STEADY", "OWN_TPOT"]
__all__ += ["TPOT_QUANTILE", "TPOT_POINT", "NORMAL_POINTS", "poisson", "stationary"]
__all__ += ["skewed_quantiles", "mixture_quantiles"]

PROMPT_COUNTS = 64
"""Prompts per step the chain keeps, 0 to 63: far past any Poisson mean below saturation
(fewer, 40, would cut the chain's tail before the memory sets the saturation)."""
COUNTS = np.arange(PROMPT_COUNTS)
"""The chain's states: each count of prompts K it keeps, 0 up, as a numpy array."""
PERCENTILES = (50, 90, 99)
"""The percentiles ``steady_state`` and ``simulate`` report of each request's TTFT and TPOT."""
TINY = 1e-9
"""Weight below which a case of an arrival's wait is dropped from its distribution (of
thousands, their sum stays far below the 1% a p99 leaves)."""
GRID = 4096
"""Points on which the TTFT's distribution is summed (twice: the second over its body)."""
RUNAWAY_COUNTS, RUNAWAY_TAIL = 8, 1e-6
"""The chain runs away when its last RUNAWAY_COUNTS counts of prompts hold more than
RUNAWAY_TAIL of its weight: the range kept no longer holds a step's prompts."""

RATE = sympy.Symbol("requests_per_s", positive=True)
"""The arrival rate, requests a second, in ``STEADY`` (and ``continuous.REPLICAS``)."""

# Built on first use (``__getattr__``), once, not at import: SymPy's first sum imports its
# tensor and combinatorics modules, and numpy.polynomial and statistics serve only these.
NORMAL_POINTS: tuple[float, ...]
"""A standard normal's quantile at each of ``PERCENTILES`` (``_normal_points``)."""
SPREAD_POINTS: tuple[tuple[float, ...], ...]
"""Gauss-Hermite nodes and weights of a standard normal (``_spread_points``)."""
STEADY: dict[str, sympy.Expr]
"""The steady state's relations (module docstring; ``_relations``)."""
OWN_TPOT: dict[str, sympy.Expr]
"""``STEADY["tpot_spread"]`` and ``["tpot_skewness"]`` of a request of ``own_output_len``
tokens, as ``"spread"`` and ``"skewness"`` (``_relations``)."""
TPOT_QUANTILE: sympy.Expr
"""A TPOT's value at a standard normal's ``z``: a gamma's of its mean, spread and skewness
(``_skewed``)."""
TPOT_POINT: sympy.Expr
"""The inverse of ``TPOT_QUANTILE``: the ``z`` of a TPOT's ``value`` (``_skewed``)."""


@functools.cache
def _normal_points() -> tuple[float, ...]:
    """``NORMAL_POINTS``: a standard normal's quantile at each of ``PERCENTILES``. A TPOT's is
    ``TPOT_QUANTILE`` at each (``skewed_quantiles``; the calculator's page takes them as
    numbers)."""
    import statistics

    return tuple(statistics.NormalDist().inv_cdf(q / 100) for q in PERCENTILES)


@functools.cache
def _spread_points() -> tuple[tuple[float, ...], ...]:
    """``SPREAD_POINTS``: Gauss-Hermite nodes and weights (of a standard normal) over which an
    arrival's prefill is averaged across the spread of the decoding count (``Engine.state``;
    the page's too)."""
    from numpy.polynomial import hermite_e

    return tuple(tuple(map(float, a)) for a in hermite_e.hermegauss(5))


@functools.cache
def _relations() -> tuple[dict, dict]:
    """``STEADY``, the steady state's relations (module docstring), SymPy expressions of the
    rate, the output length and the chain's ``mean_step``, ``step_slope``, ``burst_ratio``,
    ``burst_covariance``, ``step_noise`` and ``decode_step``; and ``OWN_TPOT``,
    ``STEADY["tpot_spread"]`` and ``STEADY["tpot_skewness"]`` of a request of
    ``own_output_len`` tokens among requests of a mean ``output_len`` (``serving.lengths``)."""
    tau = sympy.Symbol("mean_step", positive=True)  # tau, seconds
    slope = sympy.Symbol("step_slope", positive=True)  # dtau/dB_d, s per decoding request
    burst = sympy.Symbol("burst_ratio", positive=True)  # long-run variance of K over its mean
    cross = sympy.Symbol("burst_covariance", real=True)  # sum over j >= 1 of Cov(K_0, t_j)
    noise = sympy.Symbol("step_noise", nonnegative=True)  # long-run variance of t, s^2 a step
    alone = sympy.Symbol("decode_step", positive=True)  # a step of the B_d decodes alone, s
    own = sympy.Symbol("own_output_len", positive=True)  # of one request, where lengths differ
    decoding = RATE * (O - 1) * tau
    gain = RATE * (O - 1) * slope
    variance = decoding * burst / (1 - gain)
    covariance = slope * variance + cross
    tpot = tau + covariance / decoding

    def prefills(own):
        """The variance of the prefill time a request's ``own`` - 1 steps carry, per step: the
        chain's long-run noise averaged over them, fed back as B_d's count is (the prompts
        that arrive in its life join the decodes, whose longer steps gather more prompts)."""
        return noise / ((own - 1) * (1 - gain))

    def tpot_spread(own):
        """A request's own TPOT, the mean of its ``own`` - 1 steps: B_d drifts as slowly as
        a request lives, so its whole spread stays; the prefills' bursts average over its
        steps (``prefills``)."""
        return sympy.sqrt(slope**2 * variance + prefills(own))

    def tpot_skewness(own):
        """The skewness of a request's own TPOT: the prefill time its steps carry is a sum of
        a random count of prompts' prefills, an over-dispersed count whose skewness is a
        gamma's, twice its spread over its mean (tpot less the step of the decodes alone);
        B_d's drift adds spread but no skew."""
        share = prefills(own) / (slope**2 * variance + prefills(own))  # of the variance
        mean = sympy.Max(tpot - alone, TINY)  # the prefill time a step carries
        return 2 * share**2 * tpot_spread(own) / mean

    steady = {
        "decoding": decoding,  # Little's law: requests decoding in a mean step
        "gain": gain,  # the share of a fluctuation of B_d that comes back
        "variance": variance,  # of B_d
        "tpot": tpot,  # E[B_d t] / E[B_d]
        "busy": decoding + covariance / tau,  # E[B_d t] / E[t]: B_d an arrival meets
        "tpot_spread": tpot_spread(O),  # of a request of the mean length
        "tpot_skewness": tpot_skewness(O),
    }
    return steady, {"spread": tpot_spread(own), "skewness": tpot_skewness(own)}


@functools.cache
def _skewed() -> dict:
    """``TPOT_QUANTILE`` and ``TPOT_POINT``: a request's TPOT of mean m, spread s and
    skewness g as a gamma's (Pearson type III), by Wilson and Hilferty's cube: the value at a
    standard normal's z is m + s y, y = (2 / g) ((1 + g z / 6 - g^2 / 36)^3 - 1), written
    without dividing by g (so g = 0 is the normal's y = z); and its inverse, the z of a value
    (``skewed_quantiles`` bisects a mixture on it), with the cube root's difference written
    the same way."""
    mean = sympy.Symbol("tpot", positive=True)
    spread = sympy.Symbol("tpot_spread", nonnegative=True)
    skew = sympy.Symbol("tpot_skewness", real=True)
    z, value = sympy.Symbol("z", real=True), sympy.Symbol("value", real=True)
    a = skew * z / 6 - skew**2 / 36
    quantile = mean + spread * (z / 3 - skew / 18) * (3 + 3 * a + a**2)
    y = (value - mean) / sympy.Max(spread, TINY)
    cube = 1 + skew * y / 2
    root = sympy.sign(cube) * sympy.Abs(cube) ** sympy.Rational(1, 3)  # the real cube root
    point = 3 * y / (root**2 + root + 1) + skew / 6
    return {"quantile": quantile, "point": point}


_LAZY = {
    "NORMAL_POINTS": _normal_points,
    "SPREAD_POINTS": _spread_points,
    "STEADY": lambda: _relations()[0],
    "OWN_TPOT": lambda: _relations()[1],
    "TPOT_QUANTILE": lambda: _skewed()["quantile"],
    "TPOT_POINT": lambda: _skewed()["point"],
}


def __getattr__(name):
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def poisson(means):
    """P(K = k) for each k of ``COUNTS``, a row per mean, of an array of any shape (normalized
    over the range kept)."""
    means = np.asarray(means, dtype=float)[..., None]
    log = COUNTS * np.log(np.maximum(means, 1e-300)) - means - _LOG_FACTORIALS
    weights = np.exp(log)
    # A mean far past the range kept leaves no weight in it: NaN, which the chain reads as
    # running away (a high prefix-hit rate takes the saturation search there), without a
    # warning of 0 / 0.
    total = weights.sum(axis=-1, keepdims=True)
    return np.divide(weights, total, out=np.full_like(weights, np.nan), where=total > 0)


_LOG_FACTORIALS = np.cumsum(np.log(np.maximum(COUNTS, 1)))  # log k! for k in COUNTS
_EYE = np.eye(PROMPT_COUNTS)


def stationary(moves):
    """The stationary distribution of a chain of transition matrix ``moves`` (or of each of
    a stack of them): pi (I - P) = 0, its last equation replaced by sum(pi) = 1."""
    system = _EYE - np.swapaxes(moves, -1, -2)
    system[..., -1, :] = 1.0
    return np.linalg.solve(system, _EYE[-1])


def future_sums(moves, weights, rewards):
    """Sums over the chain's future, Z f = sum_j>=0 P^j f, of each column of ``rewards`` (each
    centred on the stationary ``weights``): Z the fundamental matrix (I - P + 1 pi)^-1."""
    return np.linalg.solve(_EYE - moves + weights, rewards)


def runaway_weight(weights):
    """The weight of the last ``RUNAWAY_COUNTS`` counts of a chain's stationary ``weights``:
    past ``RUNAWAY_TAIL``, it runs away."""
    return weights[-RUNAWAY_COUNTS:].sum()


def _steady_relations() -> dict:
    return _relations()[0]


def steady_at(chain: dict) -> dict:
    """``STEADY`` at the chain's values, checked, unless its output is counted in steps: a
    speculating chain counts 1 + (O - 1) / E steps a request, a fractional ``output_len`` that
    the checked function would refuse."""
    if float(chain["output_len"]).is_integer():
        return cache.formulas(_steady_relations).from_values(chain)
    args, function = _unchecked(_steady_relations)
    return dict(zip(_relations()[0], map(float, function(*(chain[a] for a in args))), strict=True))


def _own_tpot_formula() -> dict:
    return _relations()[1]


def own_tpot(state: dict, outputs) -> tuple[np.ndarray, np.ndarray]:
    """``OWN_TPOT`` at a steady ``state``'s values for requests of each of ``outputs`` (output
    lengths, counted in steps): their TPOTs' spreads and skewnesses."""
    args, own = _unchecked(_own_tpot_formula)  # a mean length is fractional
    values = {**state, "own_output_len": np.array(outputs)}
    found = own(*(values[a] for a in args))
    return tuple(np.broadcast_to(x, len(outputs)) for x in found)


def named(quantiles) -> dict:
    """Quantiles at ``PERCENTILES`` by name: ``{"p50": ..., "p90": ..., "p99": ...}``."""
    return {f"p{q}": float(x) for q, x in zip(PERCENTILES, quantiles, strict=True)}


def _quantile_formula() -> dict:
    return {"quantile": _skewed()["quantile"]}


def _point_formula() -> dict:
    return {"point": _skewed()["point"]}


@functools.cache
def _unchecked(build):
    """The formulas ``build`` makes as a function of their arguments in order, unchecked: of
    arrays (a spread and a skewness for each kind of request) or of a fractional length."""
    found = cache.formulas(build)
    return found.args, found.bind({}, *found.args)


def skewed_quantiles(mean, spread, skewness=0.0, weights=(1.0,)) -> np.ndarray:
    """``PERCENTILES`` of how a request's TPOT spreads about its ``mean``: a gamma of standard
    deviation ``spread`` and ``skewness`` (``STEADY["tpot_spread"]``, ``["tpot_skewness"]``;
    ``TPOT_QUANTILE`` at each of ``NORMAL_POINTS``, as the calculator's page evaluates it), a
    normal where the skewness is 0; or, given a spread and a skewness for each of several kinds
    of request and their shares ``weights``, of that mixture, found by bisection on its
    distribution function (``TPOT_POINT``) to a millionth of the widest spread."""
    import statistics

    spreads = np.atleast_1d(np.asarray(spread, dtype=float))
    skews = np.broadcast_to(np.asarray(skewness, dtype=float), spreads.shape)
    if len(spreads) == 1:
        one = {"tpot": mean, "tpot_spread": spreads[0], "tpot_skewness": float(skews[0])}
        quantile = cache.formulas(_quantile_formula)
        at = [quantile.from_values({**one, "z": z})["quantile"] for z in _normal_points()]
        return np.array(at, dtype=float)
    weights, spreads = np.asarray(weights) / np.sum(weights), np.maximum(spreads, 1e-300)
    cdf = np.vectorize(statistics.NormalDist().cdf)
    kinds = {"tpot": mean, "tpot_spread": spreads, "tpot_skewness": skews}

    def evaluate(build, **more):
        args, function = _unchecked(build)
        return np.asarray(function(*({**kinds, **more}[a] for a in args))[0], dtype=float)

    def below(x):  # the share of requests whose TPOT is below x
        return weights @ cdf(evaluate(_point_formula, value=x))

    reach = [evaluate(_quantile_formula, z=z) for z in (-6.0, 6.0)]
    found = []
    for q in np.array(PERCENTILES) / 100:
        low, high = float(np.min(reach[0])), float(np.max(reach[1]))
        while high - low > 1e-6 * max(spreads):
            middle = (low + high) / 2
            low, high = (middle, high) if below(middle) < q else (low, middle)
        found.append((low + high) / 2)
    return np.array(found)


def mixture_quantiles(weights, starts, widths, qs):
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


def warm() -> None:
    """Compile and keep in the disk cache the steady state's relations."""
    cache.formulas(_steady_relations)
    for build in (_own_tpot_formula, _quantile_formula, _point_formula):
        cache.formulas(build)
