"""Number formats as they ship: bits per stored number, block scales included, and the FLOP
rate a product in each runs at.

>>> bytes_per_number("bf16")
2
>>> bytes_per_number("int4")  # the bare 4-bit number
0.5
>>> bytes_per_number("mxfp4")  # 32 four-bit values share one 8-bit scale: 4 + 8 / 32 bits
0.53125
>>> compute_format("mxfp4"), compute_path("int4-g128", "bf16")
('fp4', 'W4A16')
>>> activation_bytes("fp8")  # W8A8: the products run in fp8, the residual stream stays bf16
2
>>> dtype_name("bfloat16")  # Hugging Face's and PyTorch's spelling
'bf16'

Chapter 01 explains the plain formats, chapter 15 the block-scaled ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from inference_arithmetic.core.errors import ArgumentError, UnknownName

__all__ = [
    "Format",
    "FORMATS",
    "DTYPE_BYTES",
    "ALIASES",
    "COMPUTE_FORMATS",
    "CACHE_FORMATS",
    "CACHE_BYTES",
    "dtype_name",
    "cache_format",
    "bytes_per_number",
    "compute_format",
    "compute_path",
    "activation_bytes",
    "fastest_wide",
]


@dataclass(frozen=True)
class Format:
    """A stored number format: ``value_bits`` per number and, where a ``block`` of numbers
    shares a scale, ``scale_bits`` for each block; ``compute`` is the format its matrix
    products run in when the activations are quantized to match (a FLOP-rate name of
    ``COMPUTE_FORMATS``); ``bits`` is a number's share of the storage, scales included;
    ``cache`` False for a layout of weights only, which no engine stores a KV cache in."""

    name: str
    value_bits: float
    compute: str
    source: str
    block: int = 1
    scale_bits: float = 0
    cache: bool = True  # a KV cache may be stored in it (not a weights-only layout)

    @property
    def bits(self) -> float:
        return self.value_bits + self.scale_bits / self.block


_GGUF = "llama.cpp, examples/quantize/README.md (bits per weight of Llama 2 7B)"
_GGML = "llama.cpp, ggml/src/ggml-common.h ({}: a 16-bit scale d and 32 {}-bit values)"
# A GGUF mix's bits are measured over a whole model (the K-quant types give some tensors more
# bits than others), so its value_bits is the README's figure and it has no block of its own.
FORMATS = {
    f.name: f
    for f in (
        Format("fp32", 32, "fp32", "IEEE 754 binary32"),
        Format("fp16", 16, "fp16", "IEEE 754 binary16"),
        Format("bf16", 16, "bf16", "bfloat16: fp32's 8-bit exponent, 7-bit mantissa"),
        Format("fp8", 8, "fp8", "OCP 8-bit floating point (OFP8) E4M3; one scale per tensor"),
        Format("int8", 8, "int8", "8-bit integer; one scale per tensor or channel"),
        Format("int4", 4, "int4", "the bare 4-bit integer, no scale"),
        Format(
            "fp8-block",
            8,
            "fp8",
            "DeepSeek-V3 technical report, section 3.3.2: fp8 E4M3 weights with one fp32 "
            "scale per 128 x 128 block (config: weight_block_size [128, 128])",
            block=128 * 128,
            scale_bits=32,
            cache=False,
        ),
        Format(
            "mxfp4",
            4,
            "fp4",
            "OCP Microscaling Formats (MX) Specification v1.0, 2023: 32 FP4 E2M1 values "
            "share one E8M0 (8-bit power-of-two) scale",
            block=32,
            scale_bits=8,
        ),
        Format(
            "nvfp4",
            4,
            "fp4",
            "NVIDIA, 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' "
            "(2025): 16 FP4 E2M1 values share one FP8 E4M3 scale (and one fp32 scale per "
            "tensor, which the count leaves out)",
            block=16,
            scale_bits=8,
        ),
        Format(
            "int4-g128",
            4,
            "bf16",
            "AutoAWQ and GPTQ's packed layout: 4-bit weights, and per group of 128 an fp16 "
            "scale and a 4-bit zero point; multiplied in 16-bit after unpacking (W4A16)",
            block=128,
            scale_bits=16 + 4,
            cache=False,
        ),
        Format("q8_0", 8, "bf16", _GGML.format("block_q8_0", 8), block=32, scale_bits=16),
        Format("q4_0", 4, "bf16", _GGML.format("block_q4_0", 4), block=32, scale_bits=16),
        Format("q4_k_m", 4.84, "bf16", _GGUF, cache=False),
        Format("q5_k_m", 5.68, "bf16", _GGUF, cache=False),
        Format("q6_k", 6.56, "bf16", _GGUF, cache=False),
    )
}
"""Every format the library knows, by name, each with its source. The GGUF types (q8_0, q4_0,
q4_k_m, ...) compute at the 16-bit rate by default: llama.cpp unpacks them in its kernels."""

DTYPE_BYTES = {name: f.bits / 8 if f.bits % 8 else int(f.bits) // 8 for name, f in FORMATS.items()}
"""Bytes per stored number of each format, its share of the block scales included."""

CACHE_FORMATS = tuple(name for name, f in FORMATS.items() if f.cache)
"""The formats a KV cache may be stored in: the float and integer formats and llama.cpp's q8_0
and q4_0 cache types; not the whole-model GGUF mixes (q4_k_m, ...: bits measured over a
model's weights) nor the weight layouts int4-g128 (AWQ, GPTQ) and fp8-block (DeepSeek-V3)."""

CACHE_BYTES = {name: DTYPE_BYTES[name] for name in CACHE_FORMATS}
"""Bytes per stored number of each cache format: the choices a cache's format offers."""

COMPUTE_FORMATS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")
"""The formats a GPU may have a peak FLOP rate for: a product's inputs, not storage."""

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
    "fp4": "nvfp4",
}
"""Other spellings of the formats: Hugging Face's ``torch_dtype`` and PyTorch's names, and
fp4 for NVFP4, the format Blackwell's fp4 rate is quoted for."""


def dtype_name(dtype: str, argument: str = "dtype") -> str:
    """The library's name of a format (``FORMATS``), also from its ``ALIASES``; else
    ``UnknownName`` naming ``argument`` and the known formats."""
    if isinstance(dtype, str) and (dtype in FORMATS or dtype in ALIASES):
        return ALIASES.get(dtype, dtype)
    raise UnknownName(
        f"{argument} must be one of {', '.join(map(repr, FORMATS))} (or "
        f"{', '.join(map(repr, ALIASES))}), got {dtype!r}"
    )


def cache_format(dtype: str, argument: str = "cache_dtype") -> str:
    """The library's name of a format a KV cache may be stored in (``CACHE_FORMATS``), else
    ``ArgumentError`` naming ``argument``: a weights-only format would give a cache of
    fractional bytes that no engine stores."""
    name = dtype_name(dtype, argument)
    if name not in CACHE_FORMATS:
        raise ArgumentError(
            f"{argument} {dtype!r} is a format of weights only, which no engine stores a KV "
            f"cache in: one of {', '.join(map(repr, CACHE_FORMATS))}"
        )
    return name


def bytes_per_number(dtype: str) -> float:
    """Bytes one number of ``dtype`` takes, block scales included; ``KeyError`` naming the
    known dtypes otherwise."""
    return DTYPE_BYTES[dtype_name(dtype)]


def compute_format(dtype: str, argument: str = "compute_dtype") -> str:
    """The FLOP-rate format products in ``dtype`` run at: "tf32" itself, else the format's
    ``compute`` (mxfp4 and nvfp4 at the fp4 rate, fp8-block at fp8, weight-only int4 and the
    GGUF types at bf16)."""
    if dtype == "tf32":
        return dtype
    return FORMATS[dtype_name(dtype, argument)].compute


def compute_path(dtype: str, compute_dtype: str) -> str:
    """The usual name of a product of ``dtype`` weights by ``compute_dtype`` activations:
    W<weight bits>A<activation bits>, e.g. "W4A16" for int4 weights multiplied in bf16."""
    weights = FORMATS[dtype_name(dtype)].value_bits
    activations = FORMATS[dtype_name(compute_format(compute_dtype))].value_bits
    return f"W{int(weights)}A{int(activations)}"


def activation_bytes(compute_dtype: str) -> float:
    """Bytes per number of the activations between kernels and of the messages between GPUs
    when the matrix products run in ``compute_dtype``: that format, but never under 2. Engines
    that multiply in fp8, int8 or fp4 quantize each product's input on the fly and keep the
    residual stream, the attention's inputs and the all-reduces in bf16 (TensorRT-LLM's and
    vLLM's fp8 paths)."""
    if compute_dtype == "tf32":
        return 4
    return max(bytes_per_number(compute_dtype), 2)


def fastest_wide(rates: Mapping[str, float]) -> str | None:
    """Of a GPU's peak FLOP rates (``GPU.peak_flop_rate``), the format of 16 bits or more with
    the highest, of equal rates the narrowest (it moves fewer bytes), else the first: what a
    refusal of a compute format suggests (``serving.scenario.NO_RATE``), as the calculator's
    script does. Apple's GPUs, fp32 and fp16 at one rate: fp16."""
    wide = [d for d in rates if DTYPE_BYTES.get(d, 0) >= 2]
    return max(wide, key=lambda d: (rates[d], -DTYPE_BYTES[d]), default=None)
