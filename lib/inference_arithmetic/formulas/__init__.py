"""Canonical SymPy expressions, one module per chapter topic."""

from inference_arithmetic.formulas import (
    basics,
    kv_cache,
    latency,
    memory,
    mlp,
    parallel,
    roofline,
    transformer,
)

__all__ = [
    "basics",
    "kv_cache",
    "latency",
    "memory",
    "mlp",
    "parallel",
    "roofline",
    "transformer",
]
