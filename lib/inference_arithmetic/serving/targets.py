"""Targets: judging a steady state against a time to first token and a time per output token
(on their means or a percentile), and the highest rate that meets them, its goodput.

>>> g = goodput("llama-3.1-8b", "h100-sxm", prompt_len=1024, output_len=128,
...             ttft_target=1.0, tpot_target=0.02, percentile=90)
>>> g["binds"], g["percentile"], g["tpot"] <= 0.02  # each request's p90 TPOT binds
('tpot', 90, True)

A rate meets its targets where its steady state (``continuous.steady_state_of``) does; the
times grow with the rate, so the highest rate that meets them is a search from a trickle up to
the saturation rate (``goodput_of``), which ``ia.plan``'s search and ``ia.goodput`` share.
"""

from __future__ import annotations

import functools

from inference_arithmetic.core import checks
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.serving.continuous import (
    check_decodes,
    saturation_rate,
    steady_state_of,
    workload,
)
from inference_arithmetic.serving.engine import stream_scenario
from inference_arithmetic.serving.queueing import PERCENTILES
from inference_arithmetic.serving.scenario import Scenario, deployment_keywords

__all__ = ["goodput", "highest_rate", "goodput_of", "MOST_SECONDS", "TARGET_CHECKS"]
__all__ += ["DEFAULT_PERCENTILE"]

DEFAULT_PERCENTILE = None
"""What every function with targets judges them on by default (``goodput``, ``ia.plan``,
``planning.plan_colocated``, ``disaggregated.fewest_gpus``): each request's mean TTFT and
TPOT. The steady state's headline times are means, so an answer on the defaults agrees with
``ia.steady_state`` at its rate; a target on the tail is a choice the caller states
(``percentile=90`` or ``99``; DistServe's goodput is on p90), not one the library assumes."""


@deployment_keywords
def goodput(
    model,
    gpu,
    *,
    prompt_len,
    output_len,
    ttft_target,
    tpot_target,
    n_gpus=1,
    dtype=AUTO,
    percentile=DEFAULT_PERCENTILE,
    **deployment,
) -> dict:
    """Goodput: the most requests a second the deployment serves with the ``percentile`` (one
    of ``PERCENTILES``, or None for the mean) of each request's TTFT and TPOT within the
    targets (seconds), its steady state's (``steady_state``, of requests of ``prompt_len`` and
    ``output_len``, each a length or a sequence of them), the measure DistServe and capacity
    planners maximise. Returns ``requests_per_s``, ``per_gpu`` (over every GPU of
    every replica), ``binds`` ("saturation", "ttft" or "tpot": what stops a higher rate),
    ``percentile``, and the ``ttft`` and ``tpot`` judged at that rate (None at a goodput of 0).

    By default the targets are on each request's mean times (``DEFAULT_PERCENTILE``), as
    ``ia.plan``'s are: the steady state's headline times are means, so the defaults agree with
    ``ia.steady_state``. A target on the tail is the caller's to state (``percentile=90``, as
    DistServe's goodput is, or ``99``), not one the library assumes.
    """
    check_targets(ttft_target, tpot_target)
    percentile = check_percentile(percentile)
    prompt_len, output_len, lengths = workload(prompt_len, output_len)
    s = stream_scenario(model, gpu, prompt_len, output_len, n_gpus, dtype, deployment)
    check_decodes(s.output_len)
    rate, binds = goodput_of(s, ttft_target, tpot_target, percentile, 1e-4, lengths)
    rate = float(rate)
    state = steady_state_of(s, rate, percentile is not None, lengths) if rate > 0 else None
    judged = judged_times(state, percentile) if rate > 0 else {}
    return {
        "requests_per_s": rate,
        "per_gpu": rate / (s.n_gpus * s.replicas),
        "binds": binds,
        "percentile": percentile,
        "ttft": judged.get("ttft"),
        "tpot": judged.get("tpot"),
    }


def highest_rate(s: Scenario, tpot_target: float) -> float:
    """The most requests a second whose steady state (``steady_state_of``) keeps a mean time
    per output token of ``tpot_target`` seconds: the saturation rate if a saturated engine
    keeps it, 0 if a trickle (a thousandth of that rate) does not, else found by bisection
    (the time per token grows with the rate) to a billionth of the range."""
    check_targets(None, tpot_target)
    return goodput_of(s, None, tpot_target, None, 2.0**-30)[0]


@functools.lru_cache(maxsize=256)  # plan's search and goodput share a replica's answer
def goodput_of(s: Scenario, ttft_target, tpot_target, percentile, tolerance, lengths=None):
    """The most requests a second whose steady state (of requests of ``lengths``) meets the
    targets (``judge``), and the limit that binds there: "saturation" if a saturated engine
    meets them, else the target missed just above it (0 and that target if a trickle, a
    thousandth of the saturation rate, misses it). Found to ``tolerance`` of the range by the
    Illinois method on how far the worse target is missed (``_excess``), which grows with the
    rate. On a p90 or p99, up to the means' answer: no higher rate meets them (``judge``)."""
    # Regula falsi rather than bisection: on means it needs a third of the steady states; an
    # excess that bends (Mixtral's p90 TPOT is not monotone in the rate) gains less.
    saturation = saturation_rate(s, lengths)
    high, above = saturation, "saturation"  # the highest rate tried, and what binds past it
    if percentile is not None and percentile > 50:
        high, above = goodput_of(s, ttft_target, tpot_target, None, tolerance, lengths)
        if high == 0.0:
            return high, above

    def over(rate):
        excess = judge(s, rate, ttft_target, tpot_target, percentile, lengths)[1]
        return max(excess.values()), first_missed(excess)

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


def judge(s: Scenario, rate, ttft_target, tpot_target, percentile, lengths=None):
    """The steady state of ``s`` at ``rate`` (of requests of ``lengths``) and its ``_excess``
    over the targets. A p90 or p99 is at least the mean (the TPOT is normal about it, the TTFT
    skewed above it), so where the means already miss, their excess answers and the
    percentiles, most of a steady state's cost near saturation, are not worked out."""
    state = steady_state_of(s, rate, percentiles=False, lengths=lengths)
    if percentile is None:
        return state, _excess(state, ttft_target, tpot_target, None)
    if percentile > 50:
        excess = _excess(state, ttft_target, tpot_target, None)
        if first_missed(excess) is not None:
            return state, excess
    state = steady_state_of(s, rate, lengths=lengths)
    return state, _excess(state, ttft_target, tpot_target, percentile)


def judged_times(state, percentile) -> dict:
    """The ``ttft`` and ``tpot`` of a steady ``state`` that targets on ``percentile`` judge:
    that percentile of them, or their means for None."""
    if percentile is None:
        return {key: state[key] for key in ("ttft", "tpot")}
    return {key: state["percentiles"][key][f"p{percentile}"] for key in ("ttft", "tpot")}


def first_missed(excess) -> str | None:
    """The first target of ``excess`` (``_excess``) past 0, or None."""
    return next((key for key, x in excess.items() if x > 0), None)


def _excess(state, ttft_target, tpot_target, percentile) -> dict:
    """How far a steady ``state`` is past each target it is given, as a share of it (below 0
    while it meets it): "ttft" then "tpot", judged as ``judged_times`` says."""
    judged = judged_times(state, percentile)
    targets = {"ttft": ttft_target, "tpot": tpot_target}
    return {key: judged[key] / target - 1 for key, target in targets.items() if target is not None}


MOST_SECONDS = {"ttft_target": 60.0, "tpot_target": 10.0}
"""The longest target of each, in seconds: a service's targets are what a user waits, for a
first token and for each one after it. A longer one was meant in milliseconds (500 for half a
second), and would plan for waits a thousand times too long without a word."""


def check_targets(ttft_target, tpot_target) -> None:
    """Both targets, each a positive number of seconds up to ``MOST_SECONDS`` (None is no
    target, where a caller allows it: ``highest_rate`` judges the TPOT alone)."""
    for name, target in (("ttft_target", ttft_target), ("tpot_target", tpot_target)):
        if target is not None:
            TARGET_CHECKS[name](name, target)


TARGET_CHECKS = {
    name: functools.partial(checks.amount, unit="seconds", positive=True, high=most)
    for name, most in MOST_SECONDS.items()
}
"""Each target's check, ``check(name, value)``: the one the calculator's form makes too."""


def check_percentile(percentile) -> int | None:
    """A percentile a target may be on: one of ``PERCENTILES`` (as that int: 90.0 is 90), or
    None for the mean."""
    if percentile is None:
        return None
    for known in PERCENTILES:
        if checks.is_real(percentile) and percentile == known:
            return known
    raise checks.ArgumentError(
        f"percentile must be one of {', '.join(map(str, PERCENTILES))} (or None, for "
        f"targets on the mean), got {percentile!r}"
    )
