"""The book's formulas evaluated for a real model: exact parameter counts, FLOPs, KV cache.

>>> from inference_arithmetic.models import model
>>> m = model("llama-3.1-70b")
>>> param_count(m)
70553706496
>>> kv_cache_bytes(m, batch=1, seq_len=2048, dtype="bf16")  # 2 * 2 * 80 * 128 * 8 * 2048
671088640

Each function evaluates the SymPy formula of ``formulas.transformer`` or
``formulas.kv_cache`` exactly (integers, no float rounding) at the model's sizes.
"""

from __future__ import annotations

import functools

import sympy

from inference_arithmetic.dtypes import bytes_per_number
from inference_arithmetic.formulas import kv_cache, transformer
from inference_arithmetic.models import ModelConfig
from inference_arithmetic.numeric import ArgumentError, evaluate

__all__ = ["param_count", "kv_cache_bytes", "forward_flops", "decode_flops"]


def _at(arch: ModelConfig, expr, **values):
    """``expr`` evaluated exactly at the model's sizes and ``values``; an int when whole."""
    if not isinstance(arch, ModelConfig):
        raise TypeError(f"expected a ModelConfig (ia.model(name)), got {type(arch).__name__}")
    names = {s.name for s in expr.free_symbols}
    sizes = {name: v for name, v in {**arch.sizes(), **values}.items() if name in names}
    result = evaluate(expr, **sizes)
    if result.free_symbols:  # a size the model does not define
        raise ArgumentError(f"{arch.name}: no value for {sorted(map(str, result.free_symbols))}")
    return int(result) if result.is_integer else float(result)


@functools.lru_cache(maxsize=256)
def _formula(builder, arch: ModelConfig, *options):
    """The formula ``builder(arch, *options)``, built once per model: configs are frozen."""
    return builder(arch, *options)


def _positive(**values):
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | sympy.Integer) or value < 1:
            raise ValueError(f"{name} must be a positive whole number, got {value!r}")


def param_count(arch: ModelConfig, active: bool = False) -> int:
    """Parameters of ``arch``, each tensor once; ``active=True``: those one token uses (MoE)."""
    return _at(arch, _formula(transformer.params, arch, active))


def kv_cache_bytes(
    arch: ModelConfig, batch: int = 1, seq_len: int = 2048, dtype: str = "bf16", mla="latent"
) -> int:
    """Bytes of the KV cache holding ``seq_len`` tokens for each of ``batch`` sequences."""
    _positive(batch=batch, seq_len=seq_len)
    expr = _formula(kv_cache.kv_cache_bytes, arch, mla)
    per_number = bytes_per_number(dtype)
    return _at(arch, expr, batch=batch, context_len=seq_len, bytes_per_number=per_number)


def forward_flops(
    arch: ModelConfig,
    batch: int = 1,
    seq_len: int = 2048,
    causal: bool = False,
    last_logits_only: bool = False,
) -> int:
    """FLOPs of a prefill of ``seq_len`` tokens for ``batch`` sequences (convention: module
    docstring of ``formulas.transformer``)."""
    _positive(batch=batch, seq_len=seq_len)
    expr = _formula(transformer.forward_flops, arch, causal, last_logits_only)
    return _at(arch, expr, batch=batch, seq_len=seq_len)


def decode_flops(
    arch: ModelConfig,
    batch: int = 1,
    context_len: int = 2048,
    causal: bool = False,
    mla: str = "reexpand",
) -> int:
    """FLOPs of one decode step: one new token per sequence against ``context_len`` cached.

    ``mla`` (MLA models only): "reexpand" as the reference implementation, "absorbed" as the
    paper and the serving engines.
    """
    _positive(batch=batch, context_len=context_len)
    expr = _formula(transformer.decode_flops, arch, causal, mla)
    return _at(arch, expr, batch=batch, context_len=context_len)
