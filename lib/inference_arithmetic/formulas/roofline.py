"""The roofline: a step takes the longer of its compute time and its memory time.

Derived in chapter 07 (hardware). ``compute_efficiency`` (eta_c) and ``bandwidth_efficiency``
(eta_m) are the fractions of the peak a real kernel achieves; 1 gives the ideal roofline.

>>> ridge_point()
flop_rate/bandwidth
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core.numeric import ArgumentError, expression
from inference_arithmetic.core.symbols import B, D, F, b, beta, eta_c, eta_m, pi
from inference_arithmetic.formulas import basics

__all__ = [
    "matmul_flops",
    "matmul_bytes",
    "matmul_intensity",
    "ridge_point",
    "compute_time",
    "memory_time",
    "roofline_time",
]


def matmul_flops():
    """FLOPs of a (B x D) by (D x F) product: 2 B D F."""
    return 2 * B * D * F


def matmul_bytes():
    """Bytes such a product moves at least once: the input, the weights and the output."""
    return b * (B * D + D * F + B * F)


def matmul_intensity():
    """FLOPs per byte moved; for B much smaller than D and F, about 2 B / b."""
    return matmul_flops() / matmul_bytes()


def ridge_point():
    """The intensity at which a device's compute and memory take equally long: pi / beta."""
    return pi / beta


def _amount(name: str, value) -> sympy.Expr:
    """``value`` as an expression of a work's FLOPs or bytes: a formula, or a number that is
    not negative, infinite, undefined or complex (``Max`` would time those). A formula's sign
    is left to its symbols' assumptions: asking SymPy costs tens of ms on a large model's."""
    expr = expression(name, value)
    if expr.is_number and not (expr.is_extended_nonnegative and expr.is_finite):
        raise ArgumentError(
            f"{name} must be a non-negative count or a formula of one, got {value!r}"
        )
    return expr


def compute_time(flops):
    """Seconds for ``flops`` at eta_c of the peak FLOP/s (chapter 01's time, over eta_c)."""
    return basics.compute_time(_amount("flops", flops)) / eta_c


def memory_time(nbytes):
    """Seconds to move ``nbytes`` at eta_m of the peak bandwidth (chapter 01's, over eta_m)."""
    return basics.memory_time(_amount("nbytes", nbytes)) / eta_m


def roofline_time(flops, nbytes):
    """Compute and memory overlap: a step takes the longer of the two (built unevaluated:
    the sides are in different figures of the GPU, so SymPy's comparison finds nothing)."""
    return sympy.Max(compute_time(flops), memory_time(nbytes), evaluate=False)
