"""The throughput-interactivity frontier: output tokens per second per GPU against tokens per
second per user, swept over concurrency and parallel layouts, and its Pareto set.

>>> points = frontier("llama-3.1-8b", "h100-sxm", most_gpus=2, concurrency=(1, 16, 256))
>>> [(p["n_gpus"], p["concurrency"]) for p in points][:2]  # the most interactive first
[(2, 1), (1, 1)]
>>> all(a["tokens_per_s_per_user"] > b["tokens_per_s_per_user"] for a, b in zip(points, points[1:]))
True

What capacity planners look at (InferenceX publishes it for each GPU): each point a deployment
under C users in a closed loop (``steady_state(..., concurrency=C)``, ``serving.closed``), as
benchmark tools run them. The layouts are those of one engine whose GPUs step together that fit
on up to ``most_gpus``: every tensor-parallel degree that splits the heads
(``scenario.tensor_parallel_degrees``) and, for an MoE model, every degree that spreads its
experts evenly (``scenario.expert_parallel_degrees``) with attention split by heads
(``"expert"``, if the heads split too) or data-parallel (``"expert-dp"``). A point is on the
frontier if no other point is at least as fast for each user and serves at least as many
tokens per GPU, one of them faster.

Not swept: replicas (data parallelism), whose throughput per GPU and per user are one
replica's; a pipeline, which the closed loop does not model (``simulation.NO_PIPELINE``); and
disaggregated pools.
"""

from __future__ import annotations

from inference_arithmetic.core import checks
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.serving.continuous import closed_loop_of
from inference_arithmetic.serving.engine import stream_scenario
from inference_arithmetic.serving.scenario import (
    deployment_keywords,
    expert_parallel_degrees,
    tensor_parallel_degrees,
)

__all__ = ["frontier", "layouts", "CONCURRENCY", "POINT_KEYS", "NO_LAYOUT", "MOST_GPUS"]
__all__ += ["REQUEST_CHECK"]

CONCURRENCY = tuple(2**k for k in range(10))
"""The users ``frontier`` sweeps unless told: 1 to 512, doubling (a benchmark's sweep)."""

POINT_KEYS = (
    "n_gpus",
    "parallel",
    "concurrency",
    "throughput_per_gpu",
    "tokens_per_s_per_user",
    "throughput",
    "ttft",
    "tpot",
)
"""The keys of each point of ``frontier``, in order."""

NO_LAYOUT = (
    "no layout of {model} fits on up to {most_gpus} x {gpu} for requests of {prompt_len} + "
    "{output_len} tokens: raise most_gpus"
)
"""The message when nothing ``frontier`` sweeps fits."""

MOST_GPUS = 512
"""The most GPUs ``frontier`` takes for one deployment: a wide expert-parallel one over many
nodes (``scenario.expert_parallel_degrees`` looks as far)."""

REQUEST_CHECK = "window"
"""The rule of ``scenario.CHECKS`` that refuses the requests themselves, whatever the layout:
``frontier`` raises it (and any error that names no rule), where it passes over a layout that
another rule refuses (it does not fit, or does not split the heads or spread the experts)."""

SWEPT = ("n_gpus", "parallel", "replicas")
"""Deployment settings ``frontier`` chooses itself, which it refuses as arguments."""


def layouts(model, most_gpus: int = 8) -> list[tuple[int, str]]:
    """The (n_gpus, parallel) that ``frontier`` tries for ``model`` on up to ``most_gpus``
    GPUs: tensor parallelism at each degree that splits its heads, and for an MoE model expert
    parallelism at each degree that spreads its experts ("expert" where the heads split as well,
    "expert-dp" everywhere). Whether each fits the memory is the scenario's to say."""
    arch = registry_model(model)
    tensor = tensor_parallel_degrees(arch, most_gpus)
    found = [(n, "tensor") for n in tensor]
    for n in expert_parallel_degrees(arch, most_gpus):
        if n == 1:
            continue  # one GPU holds every expert: tensor parallelism of degree 1
        if n in tensor:
            found.append((n, "expert"))
        found.append((n, "expert-dp"))
    return found


@deployment_keywords
def frontier(
    model,
    gpu,
    *,
    prompt_len=2048,
    output_len=256,
    most_gpus=8,
    concurrency=CONCURRENCY,
    dtype=AUTO,
    **deployment,
) -> list[dict]:
    """The Pareto set of (output tokens per second per GPU, tokens per second per user) over
    closed loops of each of ``concurrency`` users (``CONCURRENCY`` unless given) on each layout
    of ``layouts(model, most_gpus)`` that fits (module docstring), each request of
    ``prompt_len`` and ``output_len`` tokens, on up to ``most_gpus`` GPUs (``MOST_GPUS`` at
    most); ``deployment``, the other settings (not
    ``n_gpus``, ``parallel`` or ``replicas``, which it sweeps or need not).

    Returns the points on the frontier, the most tokens per second per user first, each a dict
    (``POINT_KEYS``): the deployment, ``n_gpus``, ``parallel`` and ``concurrency`` (the users);
    ``throughput_per_gpu`` (output tokens per second per GPU), ``tokens_per_s_per_user`` (one
    over the TPOT), ``throughput`` (output tokens per second, all its GPUs), and the ``ttft``
    and ``tpot`` (seconds) of ``steady_state(..., concurrency=...)`` of that deployment, whose
    numbers each point's are. Of points equal in both, the one of fewer GPUs, then fewer users,
    is kept."""
    if taken := sorted(set(deployment).intersection(SWEPT)):
        raise checks.ArgumentError(
            f"frontier sweeps {', '.join(taken)} itself: leave {', '.join(taken)} out"
        )
    most_gpus = checks.count("most_gpus", most_gpus, high=MOST_GPUS)
    users = _users(concurrency)
    prompt_len = checks.count("prompt_len", prompt_len)
    output_len = checks.count("output_len", output_len, low=2)
    arch, device = registry_model(model), registry_gpu(gpu)
    candidates = []
    for n_gpus, parallel in layouts(arch, most_gpus):
        options = {**deployment, "parallel": parallel}
        try:
            s = stream_scenario(arch, device, prompt_len, output_len, n_gpus, dtype, options)
        except ValueError as error:
            if getattr(error, "check", REQUEST_CHECK) == REQUEST_CHECK:
                raise  # a setting or a request refused, not a layout that does not fit
            continue
        for c in users:
            r = closed_loop_of(s, c)
            candidates.append(
                {
                    "n_gpus": n_gpus,
                    "parallel": parallel,
                    "concurrency": c,
                    "throughput_per_gpu": r["throughput"] / n_gpus,
                    "tokens_per_s_per_user": 1 / r["tpot"],
                    "throughput": r["throughput"],
                    "ttft": r["ttft"],
                    "tpot": r["tpot"],
                }
            )
    if not candidates:
        raise checks.ArgumentError(
            NO_LAYOUT.format(
                model=arch.name,
                most_gpus=most_gpus,
                gpu=device.name,
                prompt_len=prompt_len,
                output_len=output_len,
            )
        )
    return pareto(candidates)


def _users(concurrency) -> tuple[int, ...]:
    """``concurrency`` checked: a count of users, or a sequence of them (sorted, once each)."""
    if isinstance(concurrency, str) or not hasattr(concurrency, "__iter__"):
        concurrency = (concurrency,)
    users = sorted({checks.count("concurrency", c) for c in concurrency})
    if not users:
        raise checks.ArgumentError("concurrency must name at least one count of users")
    return tuple(users)


def pareto(points: list[dict]) -> list[dict]:
    """The points of ``points`` that no other dominates, in ``throughput_per_gpu`` and
    ``tokens_per_s_per_user`` (both more is better), the most tokens per user first; of points
    equal in both, the first of fewer GPUs, then fewer users."""
    order = sorted(
        points,
        key=lambda p: (
            -p["tokens_per_s_per_user"],
            -p["throughput_per_gpu"],
            p["n_gpus"],
            p["concurrency"],
        ),
    )
    kept, best = [], -1.0
    for p in order:
        if p["throughput_per_gpu"] > best:
            kept.append(p)
            best = p["throughput_per_gpu"]
    return kept
