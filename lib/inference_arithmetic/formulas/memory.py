"""Memory of a transformer in training and at inference.

Derived in chapter 05. Sizes in numbers times bytes per number; N is the parameter count.

>>> training_state_bytes()
16*n_params
>>> training_state_bytes(mixed_precision=False)
4*bytes_per_number*n_params
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core import symbols as sym
from inference_arithmetic.core.symbols import B, D, E_s, F, F_e, H, H_kv, L, N, T, V, b, d_h, k
from inference_arithmetic.formulas import kv_cache, transformer

__all__ = [
    "FP32",
    "training_state_terms",
    "training_state_bytes",
    "activation_numbers_per_layer",
    "training_activation_bytes",
    "inference_terms",
    "inference_bytes",
]

FP32 = 4
"""Bytes of the fp32 copies mixed-precision training keeps (master weights, Adam moments)."""


def training_state_terms(mixed_precision=True):
    """Bytes per parameter set, with Adam: weights, gradients and optimizer state.

    Mixed precision (the usual recipe) computes with bf16 weights and gradients (2 bytes
    each) and keeps an fp32 master copy of the weights and both Adam moments in fp32:
    2 + 2 + 4 + 4 + 4 = 16 bytes per parameter. Without it, all four sets are b bytes.
    """
    if not mixed_precision:
        return {"weights": b * N, "gradients": b * N, "Adam moments": 2 * b * N}
    return {
        "weights": 2 * N,
        "gradients": 2 * N,
        "fp32 master weights": FP32 * N,
        "Adam moments": 2 * FP32 * N,
    }


def training_state_bytes(mixed_precision=True):
    """Sum of ``training_state_terms``: 16 N bytes in bf16 mixed precision."""
    return sum(training_state_terms(mixed_precision).values())


def activation_numbers_per_layer(arch, attention_scores=False, moe=None):
    """Numbers one layer keeps from the forward pass for the backward pass, per token.

    The inputs of the two norms (2 D); for attention, the normalized input the projections
    multiply (D), the queries, keys and values, and the attention output before its
    projection; for the FFN, its normalized input (D) and intermediate results (gated: gate,
    up and their product, 3 F; classic: 2 F; in an MoE layer, for each of the k routed and
    E_s shared experts a token visits). With ``attention_scores=True`` also the H x T softmax
    matrix per token, which FlashAttention recomputes instead of storing. ``moe`` picks the
    kind of layer of an MoE model (default: an MoE layer).
    """
    if arch.is_mla:  # both compressed forms, then queries, keys and values per head
        query = sym.r_q if arch.q_lora_rank else 0  # the compressed query, where there is one
        qkv = query + sym.r_kv + sym.d_rope + 2 * H * (sym.d_nope + sym.d_rope) + H * sym.d_v
        output = H * sym.d_v
    else:
        qkv = (H + 2 * H_kv) * d_h
        output = H * d_h
    attention = D + qkv + output
    moe = arch.is_moe if moe is None else moe
    if moe:
        width, visits = F_e, k + (E_s if arch.n_shared_experts else 0)
    else:
        width, visits = F, 1
    ffn = D + visits * (3 if arch.ffn == "gated" else 2) * width
    scores = H * T if attention_scores else 0
    return 2 * D + attention + ffn + scores


def training_activation_bytes(arch, recompute=False, attention_scores=False):
    """Bytes of activations kept for the backward pass of B sequences of T tokens.

    With full recomputation only each layer's input is kept (B T D per layer), and the
    forward pass of a layer is recomputed during the backward pass: about a third more FLOPs.
    Not counted: the logits the loss reads (B T V), and, with recomputation, the one layer
    whose activations exist again while its backward pass runs.
    """
    if recompute:
        return b * B * T * L * D

    def per_layer(moe):
        return activation_numbers_per_layer(arch, attention_scores, moe)

    return b * B * T * transformer.over_layers(arch, per_layer)


def inference_terms(arch, mla_cache="latent", last_logits_only=True):
    """Bytes at inference: weights, the KV cache of B sequences of S tokens, and the largest
    activation of a prefill of T tokens (the FFN's intermediate results or the logits)."""
    cache = kv_cache.kv_cache_bytes(arch, mla_cache)
    width = F_e * k if arch.is_moe else F
    intermediate = T * (2 if arch.ffn == "gated" else 1) * width
    logits = (1 if last_logits_only else T) * V
    return {
        "weights": b * N,
        "KV cache": cache,
        "peak activation": b * B * sympy.Max(intermediate, logits),
    }


def inference_bytes(arch, mla_cache="latent", last_logits_only=True):
    """Sum of ``inference_terms``."""
    return sum(inference_terms(arch, mla_cache, last_logits_only).values())
