"""What serving engines do beyond the basics: speculative decoding, prefix caching,
FlashAttention, and the memory-bound decode time that quantization shrinks.

Derived in chapter 15. Speculative decoding, with a draft of gamma tokens each accepted with
probability a, yields on average

>>> expected_tokens()
(1 - acceptance_rate**(draft_len + 1))/(1 - acceptance_rate)

tokens per step of the target model (at a = 0.8, gamma = 4: (1 - 0.8**5) / 0.2 = 3.36).
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.core.symbols import B, D, H, P_s, S, T, V, a, b, c_d, d_h, gamma, h_p
from inference_arithmetic.formulas import latency, transformer

__all__ = [
    "a",
    "gamma",
    "c_d",
    "P_s",
    "ATTENTION_FORMS",
    "decode_memory_time",
    "expected_tokens",
    "verified_tokens",
    "speculative_speedup",
    "prefilled_tokens",
    "prefix_flops",
    "prefill_flops_with_prefix",
    "prefix_flops_saved",
    "prefix_cache_bytes_saved",
    "attention_memory_bytes",
    "attention_traffic_bytes",
]


def decode_memory_time(arch):
    """Seconds a memory-bound decode step takes on each of n GPUs: its bytes (weights at b,
    cache at b_kv bytes per number) over n eta_m beta, ``latency.decode_memory_time``. Fewer
    bytes per number, less time."""
    return latency.decode_memory_time(arch)


def expected_tokens():
    """Tokens one target step yields with a draft of gamma tokens, each accepted with
    probability a independently (Leviathan et al. 2023): 1 + a + ... + a^gamma; a < 1.

    The first rejected draft token is replaced by the target's own, and if all gamma are
    accepted the target adds one more, so a step yields between 1 and gamma + 1 tokens.
    """
    return (1 - a ** (gamma + 1)) / (1 - a)


def verified_tokens():
    """Tokens a verification step puts through the target for each decoding request: the
    token it decoded last and the gamma drafted after it, gamma + 1 rows of every product
    where plain decoding has one (``kernels.step_kernels`` with ``speculative``)."""
    return gamma + 1


def speculative_speedup():
    """Tokens per unit of time against plain decoding: expected tokens over the time of a
    step, gamma draft steps at c_d each plus one target step that verifies gamma + 1 tokens
    (memory-bound, so it costs about one ordinary step)."""
    return expected_tokens() / (gamma * c_d + 1)


def prefilled_tokens():
    """Tokens of a prompt of T that a prefill computes when a share h_p of them is in the
    prefix cache already: the rest, in whole tokens, and at least one, since the last
    token's logits give the first output token (vLLM recomputes it on a full hit).

    >>> prefilled_tokens()
    Max(1, ceiling(seq_len*(1 - prefix_hit_rate)))
    """
    return sympy.Max(sympy.ceiling((1 - h_p) * T), 1)


def _no_logits(arch):
    """A causal prefill of one prompt, without the logits (a shared prefix needs none)."""
    full = transformer.step_flops(arch, causal=True, last_logits_only=True)
    return full - 2 * B * D * V


def prefix_flops(arch):
    """FLOPs to prefill the shared prefix of P_s tokens once (causal, one sequence)."""
    return _no_logits(arch).subs({S: 0, B: 1}).subs(T, P_s)


def prefill_flops_with_prefix(arch, cached=True):
    """FLOPs to prefill B prompts of T tokens whose first P_s tokens are the same.

    Uncached, every prompt is prefilled in full (causal). Cached, the prefix is prefilled
    once and each prompt prefills only its T - P_s own tokens against the P_s cached ones.
    """
    full = transformer.step_flops(arch, causal=True, last_logits_only=True)
    if not cached:
        return full.subs(S, 0)
    return prefix_flops(arch) + full.subs(T, T - P_s).subs(S, P_s)


def prefix_flops_saved(arch):
    """Prefill FLOPs a shared, cached prefix saves for a batch of B prompts."""
    return prefill_flops_with_prefix(arch, cached=False) - prefill_flops_with_prefix(arch)


def prefix_cache_bytes_saved(arch, mla_cache="latent"):
    """KV-cache bytes saved by storing the prefix once instead of in each of B requests."""
    one = latency.cache_bytes(arch, mla_cache).subs({S: P_s, B: 1})
    return (B - 1) * one


ATTENTION_FORMS = ("standard", "flash")


def _check_form(form):
    if form not in ATTENTION_FORMS:
        raise ArgumentError(
            f"unknown attention form {form!r}; choose one of {', '.join(ATTENTION_FORMS)}"
        )


def attention_memory_bytes(form="standard"):
    """Bytes one layer's attention holds in GPU memory for B sequences of T tokens, H heads:
    queries, keys, values and output (4 T d_h numbers per head), plus, in the standard form,
    the T x T matrix of scores per head. FlashAttention (Dao et al. 2022) keeps its tiles in
    on-chip memory and never writes that matrix: linear in T instead of quadratic.
    Keys and values are counted per query head, as an implementation that repeats them does.
    """
    _check_form(form)
    scores = T**2 if form == "standard" else 0
    return b * B * H * (4 * T * d_h + scores)


def attention_traffic_bytes(form="standard"):
    """Bytes one layer's attention moves between GPU memory and the chip.

    Standard (Dao et al. 2022, algorithm 0): read Q and K, write the scores, read them, write
    the probabilities, read them and V, write the output: 4 T d_h + 4 T^2 numbers per head.
    FlashAttention: read Q, K, V and write the output once, 4 T d_h per head (a lower bound:
    it re-reads K and V once per block of queries that does not fit on chip).
    """
    _check_form(form)
    scores = 4 * T**2 if form == "standard" else 0
    return b * B * H * (4 * T * d_h + scores)
