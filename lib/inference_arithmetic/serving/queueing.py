"""The queueing chain's mathematics: Poisson arrivals, the chain's stationary distribution, the
steady state's relations, and the quantiles of the times they give.

>>> moves = poisson([0.5] * PROMPT_COUNTS)  # every state: Poisson(0.5) prompts next
>>> round(float(stationary(moves) @ COUNTS), 6)  # the stationary mean of K
0.5
>>> named(normal_quantiles(1.0, 0.0))
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
  engine in proportion to time, when it is busier.

``STEADY`` is SymPy: the library evaluates it, the calculator's page prints it to JavaScript.
The percentiles of each request's TTFT come from a mixture of uniform distributions
(``mixture_quantiles``), its TPOT's from normal ones (``normal_quantiles``).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from inference_arithmetic.core import cache
from inference_arithmetic.core.symbols import O

__all__ = ["PROMPT_COUNTS", "PERCENTILES", "SPREAD_POINTS", "STEADY", "OWN_TPOT_SPREAD"]
__all__ += ["NORMAL_POINTS", "poisson", "stationary", "normal_quantiles", "mixture_quantiles"]

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
OWN_TPOT_SPREAD: sympy.Expr
"""``STEADY["tpot_spread"]`` of a request of ``own_output_len`` tokens (``_relations``)."""


@functools.cache
def _normal_points() -> tuple[float, ...]:
    """``NORMAL_POINTS``: a standard normal's quantile at each of ``PERCENTILES``. A normal
    TPOT's is its mean plus its spread times each (``normal_quantiles``; the calculator's page
    takes them as numbers)."""
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
def _relations() -> tuple[dict, sympy.Expr]:
    """``STEADY``, the steady state's relations (module docstring), SymPy expressions of the
    rate, the output length and the chain's ``mean_step``, ``step_slope``, ``burst_ratio``,
    ``burst_covariance`` and ``step_noise``; and ``OWN_TPOT_SPREAD``, ``STEADY["tpot_spread"]``
    of a request of ``own_output_len`` tokens among requests of a mean ``output_len``
    (``serving.lengths``)."""
    tau = sympy.Symbol("mean_step", positive=True)  # tau, seconds
    slope = sympy.Symbol("step_slope", positive=True)  # dtau/dB_d, s per decoding request
    burst = sympy.Symbol("burst_ratio", positive=True)  # long-run variance of K over its mean
    cross = sympy.Symbol("burst_covariance", real=True)  # sum over j >= 1 of Cov(K_0, t_j)
    noise = sympy.Symbol("step_noise", nonnegative=True)  # long-run variance of t, s^2 a step
    own = sympy.Symbol("own_output_len", positive=True)  # of one request, where lengths differ
    decoding = RATE * (O - 1) * tau
    gain = RATE * (O - 1) * slope
    variance = decoding * burst / (1 - gain)
    covariance = slope * variance + cross

    def tpot_spread(own):
        """A request's own TPOT, the mean of its ``own`` - 1 steps: B_d drifts as slowly as
        a request lives, so its whole spread stays; the prefills' bursts average over its
        steps."""
        return sympy.sqrt(slope**2 * variance + noise / (own - 1))

    steady = {
        "decoding": decoding,  # Little's law: requests decoding in a mean step
        "gain": gain,  # the share of a fluctuation of B_d that comes back
        "variance": variance,  # of B_d
        "tpot": tau + covariance / decoding,  # E[B_d t] / E[B_d]
        "busy": decoding + covariance / tau,  # E[B_d t] / E[t]: B_d an arrival meets
        "tpot_spread": tpot_spread(O),  # of a request of the mean length
    }
    return steady, tpot_spread(own)


_LAZY = {
    "NORMAL_POINTS": _normal_points,
    "SPREAD_POINTS": _spread_points,
    "STEADY": lambda: _relations()[0],
    "OWN_TPOT_SPREAD": lambda: _relations()[1],
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


@functools.cache
def _steady_of_steps():
    """``STEADY`` as a function of its arguments in order, unchecked: a speculating chain
    counts 1 + (O - 1) / E steps a request, a fractional ``output_len`` that the checked
    function would refuse."""
    steady = cache.formulas(_steady_relations)
    return steady.args, steady.bind({}, *steady.args)


def steady_at(chain: dict) -> dict:
    """``STEADY`` at the chain's values (checked, unless its output is counted in steps)."""
    if float(chain["output_len"]).is_integer():
        return cache.formulas(_steady_relations).from_values(chain)
    args, function = _steady_of_steps()
    return dict(zip(_relations()[0], map(float, function(*(chain[a] for a in args))), strict=True))


def _own_spread_formula() -> dict:
    return {"spread": _relations()[1]}


@functools.cache
def _own_spread():
    """``OWN_TPOT_SPREAD`` as a function of its arguments in order, unchecked (a mean length
    is fractional)."""
    spread = cache.formulas(_own_spread_formula)
    return spread.args, spread.bind({}, *spread.args)


def own_tpot_spreads(state: dict, outputs) -> np.ndarray:
    """``OWN_TPOT_SPREAD`` at a steady ``state``'s values for requests of each of ``outputs``
    (output lengths, counted in steps)."""
    args, spread = _own_spread()
    values = {**state, "own_output_len": np.array(outputs)}
    return np.broadcast_to(spread(*(values[a] for a in args))[0], len(outputs))


def named(quantiles) -> dict:
    """Quantiles at ``PERCENTILES`` by name: ``{"p50": ..., "p90": ..., "p99": ...}``."""
    return {f"p{q}": float(x) for q, x in zip(PERCENTILES, quantiles, strict=True)}


def normal_quantiles(mean, spread, weights=(1.0,)) -> np.ndarray:
    """``PERCENTILES`` of how a request's TPOT spreads about its ``mean``: normal, of standard
    deviation ``spread`` (``STEADY["tpot_spread"]``); or, given a spread for each of several
    kinds of request and their shares ``weights``, of that mixture of normal distributions,
    found by bisection on its distribution function to a millionth of the widest spread."""
    import statistics

    normal, qs = statistics.NormalDist(), np.array(PERCENTILES) / 100
    spreads = np.atleast_1d(np.asarray(spread, dtype=float))
    if len(spreads) == 1:
        return mean + spreads[0] * np.array(_normal_points())
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
    cache.formulas(_own_spread_formula)
