"""Time of a prefill and of a decode step of a transformer, on n GPUs, by the roofline.

Derived in chapters 08 (prefill and decode), 09 (batching) and 10 (parallelism). Each step
moves the weights it uses once and, in decode, every request's KV cache; its FLOPs are those
of chapter 04. The cache is counted at b_kv bytes per number, so that it can be stored in
another dtype than the weights (chapter 13); with one dtype for both, b_kv = b. Split over
n GPUs with tensor parallelism, both shrink n-fold and every layer adds two all-reduces of
the activations (``formulas.parallel``).
"""

from __future__ import annotations

import sympy

from inference_arithmetic.formulas import kv_cache, roofline, transformer
from inference_arithmetic.formulas import parallel as parallelism
from inference_arithmetic.symbols import B, D, E, F_e, M, O, S, T, b, b_kv, k, mu, n_gpus

__all__ = [
    "PARALLEL",
    "experts_touched",
    "weight_bytes_read",
    "cache_bytes",
    "prefill_bytes",
    "decode_bytes",
    "prefill_time",
    "decode_step_time",
    "mean_context",
    "generation_time",
    "throughput",
    "max_concurrency",
]


def experts_touched(tokens):
    """Experts of one MoE layer that ``tokens`` tokens use between them, on average.

    Each token picks k of E experts; if the picks were uniform and independent, an expert is
    missed by all of them with probability (1 - k/E)^tokens. One token reads k experts; a
    large batch reads nearly all E.
    """
    return E * (1 - (1 - k / E) ** tokens)


def weight_bytes_read(arch, tokens):
    """Bytes of weights one forward pass over ``tokens`` tokens reads: all of a dense model;
    for an MoE model, only the experts the tokens touch."""
    total = transformer.params(arch)
    if not arch.is_moe:
        return b * total
    matrices = 3 if arch.ffn == "gated" else 2
    expert = matrices * D * F_e
    unread = transformer.over_layers(
        arch, lambda moe: (E - experts_touched(tokens)) * expert if moe else 0
    )
    return b * (total - unread)


def cache_bytes(arch, mla="latent"):
    """Chapter 06's KV cache of B requests of S tokens, at b_kv bytes per number."""
    return kv_cache.kv_cache_bytes(arch, mla).subs(b, b_kv)


def prefill_bytes(arch, mla="latent"):
    """A prefill of B sequences of T tokens reads the weights and writes their KV cache."""
    return weight_bytes_read(arch, B * T) + cache_bytes(arch, mla).subs(S, T)


def decode_bytes(arch, mla="latent"):
    """A decode step reads the weights and the KV cache of every one of the B requests."""
    return weight_bytes_read(arch, B) + cache_bytes(arch, mla)


PARALLEL = ("tensor", "pipeline")


def _split(flops, nbytes, arch, tokens, mode):
    """Tensor parallelism: each GPU does 1/n of the work, plus the all-reduces. Pipeline: the
    n stages of 1/n run in turn, one GPU's time in all, plus the hand-offs between them."""
    if mode not in PARALLEL:
        raise ValueError(f"parallel must be one of {PARALLEL}, got {mode!r}")
    if mode == "tensor":
        step = roofline.roofline_time(flops / n_gpus, nbytes / n_gpus)
        return step + parallelism.tensor_parallel_comm_time(arch, tokens)
    hand_offs = parallelism.pipeline_parallel_comm_time(arch, tokens)
    return roofline.roofline_time(flops, nbytes) + hand_offs


def prefill_time(arch, parallel="tensor"):
    """Seconds of a prefill of B sequences of T tokens (logits of the last position only)."""
    flops = transformer.forward_flops(arch, last_logits_only=True)
    return _split(flops, prefill_bytes(arch), arch, B * T, parallel)


def decode_step_time(arch, mla="reexpand", parallel="tensor"):
    """Seconds of one decode step of B requests with S tokens cached each."""
    flops = transformer.decode_flops(arch, mla=mla)
    return _split(flops, decode_bytes(arch), arch, B, parallel)


def mean_context():
    """The mean context of a request's O - 1 decode steps, S = T, ..., T + O - 2 (a single
    output token is timed at one step of S = T, as ``ia.generation`` does)."""
    return T + sympy.Max(O - 2, 0) / 2


def generation_time(arch, parallel="tensor"):
    """Seconds from the prompts to the last of O output tokens of B requests, in closed form.

    The prefill gives the first token; O - 1 decode steps follow. Each step is linear in its
    context while one bound holds, so O - 1 steps at the mean context take exactly as long as
    the sum (``ia.generation`` sums them).
    """
    mean_step = decode_step_time(arch, parallel=parallel).subs(S, mean_context())
    return prefill_time(arch, parallel) + (O - 1) * mean_step


def throughput(arch, parallel="tensor"):
    """Output tokens per second of a batch of B requests (pipeline: n batches in flight)."""
    in_flight = n_gpus if parallel == "pipeline" else 1
    return in_flight * B * O / generation_time(arch, parallel)


def max_concurrency(arch):
    """Requests of S cached tokens whose KV cache fits beside the weights in a fraction mu of
    the memory M of n GPUs (a serving engine keeps the rest for activations and itself)."""
    free = mu * M * n_gpus - transformer.params(arch) * b
    return sympy.floor(free / cache_bytes(arch).subs(B, 1))
