"""Canonical SymPy expressions, one module per chapter topic."""

from inference_arithmetic.formulas import basics, kv_cache, memory, mlp, transformer

__all__ = ["basics", "kv_cache", "memory", "mlp", "transformer"]
