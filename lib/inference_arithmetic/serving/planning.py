"""Planning: the cheapest deployment for a rate and two targets, laid out as one engine doing
prefill and decode (``plan_colocated``: replicas x a tensor-parallel or pipeline degree) or as
pools of each (``disaggregated.fewest_gpus``), and what it costs: ``ia.plan``.

>>> p = plan("llama-3.1-8b", "h100-sxm", requests_per_s=2.0, prompt_len=1024, output_len=128,
...          ttft_target=1.0, tpot_target=0.05)
>>> p["layout"], p["gpus"]
('colocated', 1)

A deployment meets its targets where its steady state does (``serving.targets``): on the mean
of each request's TTFT and TPOT, or on a percentile of them. Its cost is its GPUs' rent over
the output tokens the rate asks for, paid busy or idle (``output_cost``): its ``blended``
cost, as ``formulas.economics.COST_KEYS`` says.
"""

from __future__ import annotations

import math

from inference_arithmetic.core import cache, checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.formulas import economics
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.serving import disaggregated, targets
from inference_arithmetic.serving.continuous import check_decodes, workload
from inference_arithmetic.serving.engine import stream_scenario
from inference_arithmetic.serving.lengths import sequences
from inference_arithmetic.serving.queueing import RATE
from inference_arithmetic.serving.scenario import (
    DEPLOYMENT,
    UNEXPECTED,
    Scenario,
    pipeline_degrees,
    tensor_parallel_degrees,
)

__all__ = ["plan", "plan_colocated", "output_cost", "LAYOUTS", "PLAN_DEGREE", "NO_DEPLOYMENT"]
__all__ += ["POOLS_OF_ONE_LENGTH", "PLAN_COSTS"]

LAYOUTS = ("colocated", "disaggregated", "either")
"""How ``plan`` may lay a deployment out: one engine doing prefill and decode, pools of each
(``ia.disaggregated``), or the cheaper of the two."""
POOLS_OF_ONE_LENGTH = (
    "prompt_len and output_len given as sequences are planned for one engine doing prefill and "
    "decode (layout='colocated'): the disaggregated pools' steady state (ia.disaggregated) is of "
    "requests of one length, so layout={layout!r} cannot weigh them"
)
"""``plan``'s message for a workload's lengths (``serving.lengths``) laid out in pools."""
PLAN_COSTS = (
    "A plan's cost is ``blended`` as ``formulas.economics.COST_KEYS`` says, and a plan reports "
    "the blended cost only. In its steady state a step computes prompt chunks and decode tokens "
    "together, and the library has no documented attribution of such a step's time to prefill "
    "and decode, so the input and output split is ``ia.calculate``'s, of a static batch."
)
"""What a plan's cost is, and why it has no ``input`` and ``output`` split (``plan`` says it in
these words)."""
PLAN_DEGREE = 8
"""The largest tensor-parallel (or pipeline) degree ``plan`` tries: one NVLink domain of eight
GPUs."""
NO_DEPLOYMENT = (
    "no deployment of up to {most_gpus} x {gpu} serves {rate} requests per second within "
    "ttft {ttft_target} and tpot {tpot_target}"
)
"""``plan``'s message when no deployment meets the targets (the calculator's page fills the
same template), its numbers printed as ``NO_DEPLOYMENT_KINDS`` says."""
NO_DEPLOYMENT_KINDS = {"rate": "number", "ttft_target": "seconds", "tpot_target": "seconds"}
NO_DEPLOYMENT_ON = " (on each request's p{percentile})"
"""What ``NO_DEPLOYMENT`` adds for targets on a percentile (the page adds the same)."""
_NONE_MEETS = NO_DEPLOYMENT.split("{", 1)[0]


def plan(
    model,
    gpu,
    *,
    requests_per_s,
    prompt_len,
    output_len,
    ttft_target,
    tpot_target,
    percentile=targets.DEFAULT_PERCENTILE,
    layout="colocated",
    most_gpus=64,
    price_per_hour=None,
    **options,
) -> dict:
    """The cheapest deployment serving ``requests_per_s`` within both targets (seconds), laid
    out as ``layout`` (``LAYOUTS``) says: ``"colocated"``, one engine doing prefill and decode
    (``plan_colocated``: its arguments, ``percentile`` on a percentile of each request's
    times, and its search; ``prompt_len`` and ``output_len`` may be sequences, a workload's
    lengths, as ``ia.steady_state`` takes them); ``"disaggregated"``, pools of each
    (``disaggregated.fewest_gpus``, on the same percentile, of one length each:
    ``POOLS_OF_ONE_LENGTH``); or ``"either"``, the cheaper. The targets are on each request's
    mean times unless ``percentile`` says otherwise (``targets.DEFAULT_PERCENTILE``, as
    ``ia.goodput``'s): the steady state's headline times are means, so the defaults agree with
    ``ia.steady_state``; a target on the tail is the caller's to state (``percentile=99``).

    Returns ``layout``, ``replicas`` and ``n_gpus`` (per replica; None for pools), the pools'
    sizes for a disaggregated answer (``disaggregated.POOL_KEYWORDS``), ``gpus`` (in all),
    ``ttft`` and ``tpot`` (the means, or the percentile judged), ``percentile``, ``binds``
    (what one replica fewer misses; None for pools and for one replica) and ``cost``
    (``blended``: USD per million output tokens, the GPUs paid busy or idle; ``price_per_hour``;
    ``price_date``, None for a given price); ``ValueError`` if no deployment of ``most_gpus``
    GPUs meets the targets. The cheapest is the one of least ``blended`` cost.

    A plan's cost is ``blended`` as ``formulas.economics.COST_KEYS`` says, and a plan reports
    the blended cost only. In its steady state a step computes prompt chunks and decode tokens
    together, and the library has no documented attribution of such a step's time to prefill
    and decode, so the input and output split is ``ia.calculate``'s, of a static batch
    (``PLAN_COSTS``)."""
    layout = checks.choice("layout", layout, LAYOUTS)
    most_gpus = checks.count("most_gpus", most_gpus)
    if layout != "colocated" and sequences(prompt_len, output_len) is not None:
        raise checks.ArgumentError(POOLS_OF_ONE_LENGTH.format(layout=layout))
    asked = dict(requests_per_s=requests_per_s, prompt_len=prompt_len, output_len=output_len)
    asked.update(ttft_target=ttft_target, tpot_target=tpot_target)
    costs = dict(most_gpus=most_gpus, price_per_hour=price_per_hour)
    found = []
    # Pools are of engines whose GPUs step together (simulation.NO_PIPELINE): "either" leaves
    # a pipeline to the colocated engine, and "disaggregated" refuses it in the pools' words.
    pools = layout == "disaggregated" or options.get("parallel", "tensor") != "pipeline"
    if layout != "disaggregated":
        try:
            one = plan_colocated(model, gpu, **asked, percentile=percentile, **costs, **options)
            found.append({"layout": "colocated", **one})
        except checks.ArgumentError as error:
            # Only "none meets the targets" leaves the pools to try: the template's first words.
            if layout == "colocated" or not str(error).startswith(_NONE_MEETS) or not pools:
                raise
    if layout != "colocated" and pools:
        device = registry_gpu(gpu)
        price, date, _ = device.price(price_per_hour, required=True)
        degree = PLAN_DEGREE
        split = disaggregated.fewest_gpus(
            model,
            gpu,
            **asked,
            percentile=percentile,
            most_gpus=most_gpus,
            most_degree=degree,
            **options,
        )
        if split is not None:
            cost = _output_cost(price, split["gpus"], requests_per_s, output_len)
            paid = {"blended": cost, "price_per_hour": price, "price_date": date}
            found.append(
                {
                    "layout": "disaggregated",
                    "replicas": None,
                    "n_gpus": None,
                    **split,
                    "percentile": percentile,
                    "binds": None,
                    "cost": paid,
                }
            )
        elif not found:
            return _planned(
                None, most_gpus, device, requests_per_s, ttft_target, tpot_target, percentile
            )
    return min(found, key=lambda p: p["cost"]["blended"])


def plan_colocated(
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
    price_per_hour=None,
    **options,
) -> dict:
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
    misses: "saturation", "ttft" or "tpot"; None for one replica) and ``cost`` (``blended``:
    USD per million output tokens, the GPUs paid busy or idle, at ``price_per_hour`` or the
    GPU's example price, ``PLAN_COSTS``; ``price_per_hour``; ``price_date``, None for a given
    price); ``ValueError`` if no deployment of ``most_gpus`` GPUs meets them.

    An MoE model's experts may be spread over each replica's GPUs
    (``parallel="expert"`` or ``"expert-dp"``), its degrees those of tensor parallelism."""
    chosen = ("n_gpus", "replicas")  # what the plan chooses
    if unknown := sorted(set(options) - set(DEPLOYMENT).difference(chosen)):
        own = "model, gpu, requests_per_s, prompt_len, output_len, ttft_target, tpot_target, "
        own += "percentile, most_gpus, price_per_hour, "
        valid = own + ", ".join(x for x in DEPLOYMENT if x not in chosen)
        raise TypeError(UNEXPECTED.format(function="plan", names=", ".join(unknown), valid=valid))
    pipeline = options.get("parallel", "tensor") == "pipeline"
    degrees = pipeline_degrees if pipeline else tensor_parallel_degrees
    rate = checks.amount("requests_per_s", requests_per_s, "requests per second", positive=True)
    most_gpus = checks.count("most_gpus", most_gpus)
    prompt_len, output_len, lengths = workload(prompt_len, output_len)
    check_decodes(output_len)  # else every deployment would be skipped as if it saturated
    dtype = options.pop("dtype", AUTO)
    targets.check_targets(ttft_target, tpot_target)
    percentile = targets.check_percentile(percentile)
    model, device = registry_model(model), registry_gpu(gpu)
    price, date, _ = device.price(price_per_hour, required=True)
    # A setting no deployment changes (a speculation method without defaults, an option the
    # step model lacks, requests longer than the context window) is refused by name here, not
    # skipped below as if each one saturated; a rule of a deployment (it does not fit, its
    # heads do not split) is the search's.
    try:
        stream_scenario(model, device, prompt_len, output_len, 1, dtype, options)
    except ValueError as error:
        if getattr(error, "check", "window") == "window":
            raise
    best = None
    for degree in degrees(model, PLAN_DEGREE):
        missed, first = None, 1  # why one replica fewer of this degree fails; the fewest tried
        if best is not None and degree >= best["gpus"]:
            continue  # one replica of it costs as much as the best (the costs go as the GPUs)
        if percentile is not None:
            # A percentile costs most near saturation, where one replica after another would
            # be tried: start at as many as one replica's goodput (``targets.goodput_of``,
            # searched from below) needs; fewer would each take more than it meets.
            try:
                one = stream_scenario(model, device, prompt_len, output_len, degree, dtype, options)
                most, missed = targets.goodput_of(
                    one, ttft_target, tpot_target, percentile, 1e-4, lengths
                )
            except ValueError:
                continue  # does not fit: nor do more replicas of it
            if most == 0.0:
                continue  # a trickle misses: so does any share of the rate
            first = max(math.ceil(rate / most * (1 - 1e-9)), 1)
            missed = missed if first > 1 else None
        for replicas in range(first, most_gpus // degree + 1):
            try:
                s = stream_scenario(
                    model,
                    device,
                    prompt_len,
                    output_len,
                    degree,
                    dtype,
                    {"replicas": replicas, **options},
                )
                state, excess = targets.judge(
                    s, rate, ttft_target, tpot_target, percentile, lengths
                )
            except ValueError:
                missed = "saturation"
                continue  # does not fit, or saturates: more replicas
            if (miss := targets.first_missed(excess)) is not None:
                missed = miss
                continue
            gpus = replicas * degree
            cost = _output_cost(price, gpus, rate, output_len)
            if best is None or cost < best["cost"]["blended"]:
                judged = targets.judged_times(state, percentile)
                best = {
                    "replicas": replicas,
                    "n_gpus": degree,
                    "gpus": gpus,
                    "ttft": judged["ttft"],
                    "tpot": judged["tpot"],
                    "percentile": percentile,
                    "binds": missed,
                    "cost": {"blended": cost, "price_per_hour": price, "price_date": date},
                }
            break  # more replicas of this degree only cost more
    return _planned(best, most_gpus, device, rate, ttft_target, tpot_target, percentile)


def _planned(best, most_gpus, device, rate, ttft_target, tpot_target, percentile) -> dict:
    """A plan's answer, or its message when no deployment meets the targets."""
    if best is None:
        numbers = {"rate": rate, "ttft_target": ttft_target, "tpot_target": tpot_target}
        shown = {k: fmt.show(x, NO_DEPLOYMENT_KINDS[k]) for k, x in numbers.items()}
        on = "" if percentile is None else NO_DEPLOYMENT_ON.format(percentile=percentile)
        raise checks.ArgumentError(
            NO_DEPLOYMENT.format(most_gpus=most_gpus, gpu=device.name, **shown) + on
        )
    return best


def output_cost(s: Scenario, rate: float) -> float:
    """Dollars per million output tokens of ``s``'s GPUs (every replica's) serving ``rate``
    requests a second, at the GPU's example price, paid busy or idle: a plan's ``blended`` cost
    (``PLAN_COSTS``)
    (``formulas.economics.output_cost_at_rate``); ``ValueError`` for a GPU without a price."""
    price, _, _ = s.gpu.price(required=True)
    rate = checks.amount("requests_per_s", rate, "requests per second", positive=True)
    return _output_cost(price, s.n_gpus * s.replicas, rate, s.output_len)


def _output_cost(price_per_hour, gpus, rate, output_len) -> float:
    values = {"price_per_hour": price_per_hour, "n_gpus": gpus, "requests_per_s": rate}
    cost = cache.formulas(_stream_cost_formula)
    return cost.from_values({**values, "output_len": output_len})["cost"]


def _stream_cost_formula() -> dict:
    return {"cost": economics.output_cost_at_rate(RATE)}


def warm() -> None:
    """Compile and keep in the disk cache the cost of a stream's output tokens."""
    cache.formulas(_stream_cost_formula)
