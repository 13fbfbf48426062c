"""The book's formulas evaluated for a real model: exact parameter counts, FLOPs, KV cache.

>>> from inference_arithmetic.models.config import model
>>> m = model("llama-3.1-70b")
>>> param_count(m)
70553706496
>>> kv_cache_bytes(m, batch=1, context_len=2048, dtype="bf16")  # 2 * 2 * 80 * 128 * 8 * 2048
671088640

Each function evaluates the SymPy formula of ``formulas.transformer`` or
``formulas.kv_cache`` exactly (integers, no float rounding) at the model's sizes. A model is
a ``ModelConfig`` or a registry name. Names of sizes follow the notation: ``seq_len`` (T) is
the tokens of one forward pass, ``context_len`` (S) the tokens held in the KV cache.

A parameter count depends on the model alone, so it is kept in the disk cache of compiled
formulas (``core.cache``) once counted: ``ia models`` lists every registry model's without
importing SymPy, which the formulas are built in (imported here only to count).
"""

from __future__ import annotations

import functools

from inference_arithmetic.core import cache
from inference_arithmetic.core.checks import count, removed
from inference_arithmetic.core.dtypes import bytes_per_number, cache_format
from inference_arithmetic.core.numeric import ArgumentError, evaluate
from inference_arithmetic.models.config import ModelConfig
from inference_arithmetic.models.config import model as registry_model

__all__ = ["param_count", "kv_cache_bytes", "forward_flops", "decode_flops", "OLD_NAMES"]

OLD_NAMES = {"seq_len": "context_len", "mla": "mla_cache"}
"""``kv_cache_bytes``' old keywords, refused by their new names: ``seq_len`` is a forward
pass's tokens (``forward_flops``), ``mla`` how an MLA model decodes (``decode_flops``)."""


def _at(arch: ModelConfig, expr, **values):
    """``expr`` evaluated exactly at the model's sizes and ``values``; an int when whole."""
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


def param_count(model: ModelConfig, *, active: bool = False, embeddings: bool = True) -> int:
    """Parameters of ``model``, each tensor once; ``active=True``: those one token uses (MoE).

    Two conventions for "active parameters" are in use: this library's (and the reference
    implementation's) counts the input embedding table; many model cards do not
    (``embeddings=False``, e.g. gpt-oss-20b's 3.6 billion). Chapter 03 shows both.
    """
    model = registry_model(model)
    return cache.data(_params, model, bool(active), bool(embeddings))


def _params(arch: ModelConfig, active: bool, embeddings: bool) -> int:
    """``param_count``, counted exactly (``cache.data`` keeps it)."""
    from inference_arithmetic.formulas import transformer

    return _at(arch, _formula(transformer.params, arch, active, embeddings))


def kv_cache_bytes(
    model: ModelConfig,
    *,
    batch: int = 1,
    context_len: int = 2048,
    dtype: str = "bf16",
    mla_cache: str = "latent",
    **old,
) -> int:
    """Bytes of the KV cache holding ``context_len`` tokens for each of ``batch`` sequences
    (``mla_cache``: the form an MLA model stores, "latent" or "expanded"), at most the model's
    context window (a model that states none: any). The old names ``seq_len`` and ``mla`` are
    refused, naming ``context_len`` and ``mla_cache`` (``OLD_NAMES``)."""
    removed("kv_cache_bytes", old, OLD_NAMES)
    model = registry_model(model)
    form = mla_cache
    window = model.context_window
    values = {"batch": count("batch", batch), "context_len": count("context_len", context_len)}
    if window is not None and values["context_len"] > window:
        raise ArgumentError(
            f"{model.name} reads at most {window:,} tokens (its context window): context_len "
            f"may be at most {window:,}, got {values['context_len']:,}"
        )
    from inference_arithmetic.formulas import kv_cache

    expr = _formula(kv_cache.kv_cache_bytes, model, form)
    return _at(
        model, expr, **values, bytes_per_number=bytes_per_number(cache_format(dtype, "dtype"))
    )


def forward_flops(
    model: ModelConfig,
    *,
    batch: int = 1,
    seq_len: int = 2048,
    causal: bool = False,
    last_logits_only: bool = False,
) -> int:
    """FLOPs of a prefill of ``seq_len`` tokens for ``batch`` sequences (convention: module
    docstring of ``formulas.transformer``)."""
    model = registry_model(model)
    values = {"batch": count("batch", batch), "seq_len": count("seq_len", seq_len)}
    from inference_arithmetic.formulas import transformer

    expr = _formula(transformer.forward_flops, model, bool(causal), bool(last_logits_only))
    return _at(model, expr, **values)


def decode_flops(
    model: ModelConfig,
    *,
    batch: int = 1,
    context_len: int = 2048,
    causal: bool = False,
    mla: str = "reexpand",
) -> int:
    """FLOPs of one decode step: one new token per sequence against ``context_len`` cached.

    ``mla`` (MLA models only): "reexpand" as the reference implementation, "absorbed" as the
    paper and the serving engines.
    """
    model = registry_model(model)
    values = {"batch": count("batch", batch), "context_len": count("context_len", context_len)}
    from inference_arithmetic.formulas import transformer

    expr = _formula(transformer.decode_flops, model, bool(causal), mla)
    return _at(model, expr, **values)
