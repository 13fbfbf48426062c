"""Canonical SymPy expressions, one module per chapter topic."""

from inference_arithmetic.formulas import basics, mlp

__all__ = ["basics", "mlp"]
