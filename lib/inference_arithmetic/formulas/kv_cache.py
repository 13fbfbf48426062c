"""The KV cache: keys and values kept for every cached token, in every layer.

Derived in chapter 06. Bytes for B sequences of S cached tokens, b bytes per number:

>>> from inference_arithmetic.models.config import model
>>> kv_cache_bytes(model("llama-3.1-70b"))
2*batch*bytes_per_number*context_len*d_head*n_kv_heads*n_layers

Llama 3 70B at 2,048 tokens in bf16: 2 * 2 * 80 * 128 * 8 * 2048 = 671,088,640 bytes.
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core.checks import architecture
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.core.symbols import (
    B,
    H,
    H_kv,
    L,
    L_w,
    S,
    W,
    b,
    d_h,
    d_nope,
    d_rope,
    d_v,
    r_kv,
)

__all__ = ["MLA_FORMS", "numbers_per_token", "cached_tokens", "kv_cache_bytes"]

MLA_FORMS = ("latent", "expanded")


def numbers_per_token(arch, mla_cache="latent"):
    """Numbers one layer caches per token: a key and a value per KV head, 2 H_kv d_h.

    MLA caches its compressed latent, r_kv + d_rope per token (``mla_cache="latent"``), as
    its paper, the serving engines and the reference implementation do; ``"expanded"`` gives
    the cache of keys and values expanded per head, H (d_nope + d_rope + d_v), that MLA
    avoids (and that a naive implementation would keep).
    """
    form = mla_cache
    architecture(arch)
    if form not in MLA_FORMS:
        raise ArgumentError(
            f"unknown MLA cache form {form!r}; choose one of {', '.join(MLA_FORMS)}"
        )
    if arch.is_mla:
        return r_kv + d_rope if form == "latent" else H * (d_nope + d_rope + d_v)
    return 2 * H_kv * d_h


def cached_tokens(arch):
    """Tokens cached per sequence, summed over layers: S per layer, at most W - 1 in a windowed
    one (a token attends to itself and the W - 1 tokens before it)."""
    if not architecture(arch).n_window_layers:
        return L * S
    return (L - L_w) * S + L_w * sympy.Min(S, W - 1)


def kv_cache_bytes(arch, mla_cache="latent"):
    """Bytes of the KV cache of B sequences with S cached tokens each (``mla_cache``: which
    form an MLA model stores, ``numbers_per_token``)."""
    return B * b * cached_tokens(architecture(arch)) * numbers_per_token(arch, mla_cache)
