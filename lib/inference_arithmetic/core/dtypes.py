"""Bytes per stored number, by dtype name.

>>> bytes_per_number("bf16")
2
>>> bytes_per_number("int4")
0.5

Chapter 01 explains the formats.
"""

from __future__ import annotations

__all__ = ["DTYPE_BYTES", "bytes_per_number"]

DTYPE_BYTES = {
    "fp32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}


def bytes_per_number(dtype: str) -> float:
    """Bytes one number of ``dtype`` takes; ``KeyError`` naming the known dtypes otherwise."""
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise KeyError(f"unknown dtype {dtype!r}; known dtypes: {', '.join(DTYPE_BYTES)}") from None
