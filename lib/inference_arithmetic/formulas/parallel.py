"""Splitting a model over n GPUs: tensor and pipeline parallelism, and what they cost.

Derived in chapter 12. Tensor parallelism splits every layer's matrices over the n GPUs, so
each reads 1/n of the weights and the cache and does 1/n of the FLOPs, but the partial results
must be summed across GPUs twice per layer (after attention and after the feed-forward block).
Pipeline parallelism gives each GPU whole layers, L/n of them when n divides L (else the fullest
stage holds ceil(L/n): ``layers_per_stage``): little communication, but one request still
passes through every stage in turn.

The fast link (NVLink) joins only the GPUs of one board, n_link of them (8 on an HGX
board). A group larger than that sends its messages over the network between boards too, at
beta_net per GPU, and the slowest link sets the pace of a ring: ``link_bandwidth_used``.

Expert parallelism gives each of the n GPUs E/n of an MoE layer's routed experts: each token
is sent to the GPUs of its k experts and its results sent back, two all-to-alls a MoE layer
(dispatch and combine), the busiest GPU taking lambda_e times the mean GPU's tokens
(``expert_parallel_bytes``, ``all_to_all_time``).
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core.symbols import (
    D,
    L,
    alpha,
    b,
    beta_link,
    beta_net,
    k,
    lambda_e,
    n_gpus,
    n_link,
)

__all__ = [
    "ALL_REDUCES_PER_LAYER",
    "link_bandwidth_used",
    "all_reduce_time",
    "tensor_parallel_comm_time",
    "pipeline_parallel_comm_time",
    "layers_per_stage",
    "ALL_TO_ALLS_PER_MOE_LAYER",
    "busiest_share",
    "expert_parallel_bytes",
    "all_to_all_time",
]

ALL_TO_ALLS_PER_MOE_LAYER = 2
"""Expert parallelism sends each token to its experts' GPUs and the results back (dispatch and
combine) in every MoE layer."""

ALL_REDUCES_PER_LAYER = 2
"""Megatron-style tensor parallelism sums partial results after attention and after the FFN."""


def link_bandwidth_used():
    """Bytes per second between the GPUs of a group of n: the fast link within one domain of
    n_link GPUs, the slower of it and the network beyond (a ring is as fast as its slowest
    hop)."""
    network = sympy.Min(beta_link, beta_net)
    return sympy.Piecewise((beta_link, n_gpus <= n_link), (network, True))


def all_reduce_time(nbytes):
    """A ring all-reduce of ``nbytes`` over n GPUs: each sends and receives 2 (n - 1) / n of
    the data, in 2 (n - 1) messages of fixed latency alpha each. Zero for one GPU."""
    return 2 * (n_gpus - 1) * (nbytes / (n_gpus * link_bandwidth_used()) + alpha)


def tensor_parallel_comm_time(arch, tokens):
    """Two all-reduces per layer of the activations of ``tokens`` tokens (D numbers each)."""
    return L * ALL_REDUCES_PER_LAYER * all_reduce_time(b * tokens * D)


def pipeline_parallel_comm_time(arch, tokens):
    """n - 1 hand-offs of the activations of ``tokens`` tokens from one stage to the next."""
    return (n_gpus - 1) * (b * tokens * D / link_bandwidth_used() + alpha)


def layers_per_stage():
    """Layers on the fullest of n pipeline stages: a stage holds whole layers, so where n does
    not divide L some stages hold one more than others, ceil(L / n). The fullest stage is the
    slowest and holds the most: it sets a pipeline's pace and its memory per GPU."""
    return sympy.ceiling(L / n_gpus)


def busiest_share():
    """The share of an MoE layer's token-expert pairs the busiest of n expert-parallel GPUs
    takes: lambda_e times the mean, 1/n, and at most all of them, min(lambda_e, n) / n (so
    one GPU, which holds every expert, takes them all whatever lambda_e)."""
    return sympy.Min(lambda_e, n_gpus) / n_gpus


def expert_parallel_bytes(tokens, nbytes=b):
    """Bytes the busiest of n expert-parallel GPUs receives in one dispatch (and sends back in
    the combine) for a step of ``tokens`` tokens: each token goes to its k experts, D numbers
    of ``nbytes`` each, the busiest GPU's share of them (``busiest_share``)."""
    return busiest_share() * tokens * k * D * nbytes


def all_to_all_time(nbytes):
    """An all-to-all in which each of n GPUs exchanges ``nbytes`` with all of them (its own
    share, 1/n, stays put): the min(n, n_link) - 1 peers of its link domain over the link, the
    rest over the network at the slower of the two, both at once, so the slower part sets the
    time, plus one message latency alpha (the messages to every peer go out together, not in a
    ring's 2 (n - 1) steps). Zero on one GPU."""
    inside = sympy.Min(n_gpus, n_link)
    near = nbytes * (inside - 1) / n_gpus / beta_link
    far = nbytes * (n_gpus - inside) / n_gpus / sympy.Min(beta_link, beta_net)
    return sympy.Max(near, far) + alpha * sympy.Min(n_gpus - 1, 1)
