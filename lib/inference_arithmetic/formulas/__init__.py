"""Canonical SymPy expressions, one module per chapter topic."""

from inference_arithmetic.formulas import (
    basics,
    continuous,
    disaggregation,
    economics,
    kernels,
    kv_cache,
    latency,
    memory,
    mlp,
    parallel,
    roofline,
    techniques,
    transformer,
)

__all__ = [
    "basics",
    "continuous",
    "disaggregation",
    "economics",
    "kernels",
    "kv_cache",
    "latency",
    "memory",
    "mlp",
    "parallel",
    "roofline",
    "techniques",
    "transformer",
]
