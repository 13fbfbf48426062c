"""The cheapest deployment for a rate and two targets, laid out as one engine doing prefill and
decode (``continuous.plan``) or as pools of each (``disaggregated.fewest_gpus``): ``ia.plan``.
A module of its own because it reads both, and the disaggregated pools are built on the
continuous engine.

>>> p = plan("llama-3.1-8b", "h100-sxm", 2.0, 1024, 128, 1.0, 0.05)
>>> p["layout"], p["gpus"]
('colocated', 1)
"""

from __future__ import annotations

from inference_arithmetic.core import checks
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.serving import continuous, disaggregated
from inference_arithmetic.serving.lengths import sequences

__all__ = ["LAYOUTS", "POOLS_OF_ONE_LENGTH", "plan"]

_NONE_MEETS = continuous.NO_DEPLOYMENT.split("{", 1)[0]
LAYOUTS = ("colocated", "disaggregated", "either")
"""How ``plan`` may lay a deployment out: one engine doing prefill and decode, pools of each
(``ia.disaggregated``), or the cheaper of the two."""
POOLS_OF_ONE_LENGTH = (
    "prompt_len and output_len given as sequences are planned for one engine doing prefill and "
    "decode (layout='colocated'): the disaggregated pools' steady state (ia.disaggregated) is of "
    "requests of one length, so layout={layout!r} cannot weigh them"
)
"""``plan``'s message for a workload's lengths (``serving.lengths``) laid out in pools."""


def plan(
    model, gpu, requests_per_s, prompt_len, output_len, ttft_target, tpot_target, *,
    percentile=None, layout="colocated", most_gpus=64, price_per_hour=None, **options
) -> dict:  # fmt: skip
    """The cheapest deployment serving ``requests_per_s`` within both targets (seconds), laid
    out as ``layout`` (``LAYOUTS``) says: ``"colocated"``, one engine doing prefill and decode
    (``continuous.plan``: its arguments, ``percentile`` on a percentile of each request's
    times, and its search; ``prompt_len`` and ``output_len`` may be sequences, a workload's
    lengths, as ``ia.steady_state`` takes them); ``"disaggregated"``, pools of each
    (``disaggregated.fewest_gpus``, on the same percentile, of one length each:
    ``POOLS_OF_ONE_LENGTH``); or ``"either"``, the cheaper.

    Returns ``layout``, ``replicas`` and ``n_gpus`` (per replica; None for pools), the pools'
    sizes for a disaggregated answer (``disaggregated.POOL_KEYWORDS``), ``gpus`` (in all),
    ``ttft`` and ``tpot`` (the means, or the percentile judged), ``percentile``, ``binds``
    (what one replica fewer misses; None for pools and for one replica) and ``cost``
    (``output``: USD per million output tokens, the GPUs paid busy or idle; ``price_per_hour``;
    ``price_date``, None for a given price); ``ValueError`` if no deployment of ``most_gpus``
    GPUs meets the targets."""
    layout = checks.choice("layout", layout, LAYOUTS)
    if layout != "colocated" and sequences(prompt_len, output_len) is not None:
        raise checks.ArgumentError(POOLS_OF_ONE_LENGTH.format(layout=layout))
    targets = (model, gpu, requests_per_s, prompt_len, output_len, ttft_target, tpot_target)
    costs = dict(most_gpus=most_gpus, price_per_hour=price_per_hour)
    found = []
    # Pools are of engines whose GPUs step together (continuous.NO_PIPELINE): "either" leaves
    # a pipeline to the colocated engine, and "disaggregated" refuses it in the pools' words.
    pools = layout == "disaggregated" or options.get("parallel", "tensor") != "pipeline"
    if layout != "disaggregated":
        try:
            one = continuous.plan(*targets, percentile=percentile, **costs, **options)
            found.append({"layout": "colocated", **one})
        except checks.ArgumentError as error:
            # Only "none meets the targets" leaves the pools to try: the template's first words.
            if layout == "colocated" or not str(error).startswith(_NONE_MEETS) or not pools:
                raise
    if layout != "colocated" and pools:
        device = registry_gpu(gpu)
        price, date, _ = device.price(price_per_hour, required=True)
        degree = continuous.PLAN_DEGREE
        split = disaggregated.fewest_gpus(*targets, percentile=percentile, most_gpus=most_gpus,
                                          most_degree=degree, **options)  # fmt: skip
        if split is not None:
            cost = continuous._output_cost(price, split["gpus"], requests_per_s, output_len)
            paid = {"output": cost, "price_per_hour": price, "price_date": date}
            found.append({"layout": "disaggregated", "replicas": None, "n_gpus": None, **split,
                          "percentile": percentile, "binds": None, "cost": paid})  # fmt: skip
        elif not found:
            return continuous._planned(None, most_gpus, device, requests_per_s, ttft_target,
                                       tpot_target, percentile)  # fmt: skip
    return min(found, key=lambda p: p["cost"]["output"])
