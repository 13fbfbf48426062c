"""Bytes per stored number, by dtype name.

>>> bytes_per_number("bf16")
2
>>> bytes_per_number("int4")
0.5
>>> activation_bytes("fp8")  # W8A8: the products run in fp8, the residual stream stays bf16
2

Chapter 01 explains the formats.
"""

from __future__ import annotations

__all__ = ["DTYPE_BYTES", "bytes_per_number", "activation_bytes"]

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


def activation_bytes(compute_dtype: str) -> float:
    """Bytes per number of the activations between kernels and of the messages between GPUs
    when the matrix products run in ``compute_dtype``: that format, but never under 2. Engines
    that multiply in fp8 or int8 quantize each product's input on the fly and keep the
    residual stream, the attention's inputs and the all-reduces in bf16 (TensorRT-LLM's and
    vLLM's fp8 paths)."""
    return max(bytes_per_number(compute_dtype), 2)
