"""Bytes per stored number, by dtype name.

>>> bytes_per_number("bf16")
2
>>> bytes_per_number("int4")
0.5
>>> activation_bytes("fp8")  # W8A8: the products run in fp8, the residual stream stays bf16
2
>>> dtype_name("bfloat16")  # Hugging Face's and PyTorch's spelling
'bf16'

Chapter 01 explains the formats.
"""

from __future__ import annotations

from inference_arithmetic.core.numeric import UnknownName

__all__ = ["DTYPE_BYTES", "ALIASES", "dtype_name", "bytes_per_number", "activation_bytes"]

DTYPE_BYTES = {
    "fp32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}


ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "e4m3": "fp8",
}
"""Other spellings of the formats: Hugging Face's ``torch_dtype`` and PyTorch's names."""


def dtype_name(dtype: str, argument: str = "dtype") -> str:
    """The library's name of a format (``DTYPE_BYTES``), also from its ``ALIASES``; else
    ``UnknownName`` naming ``argument`` and the known formats."""
    if isinstance(dtype, str) and (dtype in DTYPE_BYTES or dtype in ALIASES):
        return ALIASES.get(dtype, dtype)
    raise UnknownName(
        f"{argument} must be one of {', '.join(map(repr, DTYPE_BYTES))} (or "
        f"{', '.join(map(repr, ALIASES))}), got {dtype!r}"
    )


def bytes_per_number(dtype: str) -> float:
    """Bytes one number of ``dtype`` takes; ``KeyError`` naming the known dtypes otherwise."""
    return DTYPE_BYTES[dtype_name(dtype)]


def activation_bytes(compute_dtype: str) -> float:
    """Bytes per number of the activations between kernels and of the messages between GPUs
    when the matrix products run in ``compute_dtype``: that format, but never under 2. Engines
    that multiply in fp8 or int8 quantize each product's input on the fly and keep the
    residual stream, the attention's inputs and the all-reduces in bf16 (TensorRT-LLM's and
    vLLM's fp8 paths)."""
    return max(bytes_per_number(compute_dtype), 2)
