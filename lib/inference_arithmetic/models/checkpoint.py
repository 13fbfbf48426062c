"""What a Hugging Face config says of its checkpoint rather than of its shape: the weights'
formats (``torch_dtype`` or ``dtype``, a ``quantization_config``) and the constants checked
without being read (``CONSTANTS``, ``ROPE_TYPES``). ``models.huggingface`` reads the shape and
calls these on the same config, a ``huggingface.Keys``, whose ``bad`` words a refusal.

>>> from inference_arithmetic.models.huggingface import Keys
>>> checkpoint_formats(Keys({"model_type": "llama", "torch_dtype": "float32"}), is_moe=False)
(('layers', 'fp32'), ('vocabulary', 'fp32'))
"""

from __future__ import annotations

import math

from inference_arithmetic.core.errors import ArgumentError

__all__ = ["CHECKPOINT_DTYPES", "DTYPE_KEYS", "ROPE_TYPES", "CONSTANTS", "QUANTIZATION"]
__all__ += ["check_constants", "checkpoint_formats"]


CHECKPOINT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
"""The formats a config's ``torch_dtype`` may give its checkpoint's weights (``dtype`` in
configs written by transformers 4.56 and later), by PyTorch's name, with the library's."""

DTYPE_KEYS = ("dtype", "torch_dtype")  # the newer name first: it wins where both are set

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "su", "mrope")
"""The kinds of rotary scaling a ``rope_scaling`` (or transformers 5's ``rope_parameters``)
may name by its ``rope_type`` (older configs: ``type``): transformers' ROPE_INIT_FUNCTIONS
(src/transformers/modeling_rope_utils.py), Phi-3's older "su" for longrope, and Qwen2-VL's
"mrope", which rotates as the default does. None changes a count; a config that names another
is refused, as transformers cannot build it."""

CONSTANTS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "rope_theta")
"""Fields that hold a positive number which changes values, not counts (a norm's epsilon, the
rotary base): not read, but refused when set to anything else (a string, a bool, 0)."""


def check_constants(c) -> None:
    """Refuse a config whose constants (``CONSTANTS``) or rotary scaling (``ROPE_TYPES``) are
    not what transformers can build, naming the field, the value and what is valid. Checked,
    not read: none of them changes a count, so ``FIELDS`` does not list them."""
    for key in CONSTANTS:
        value = c.config.get(key)
        if value is not None and not _positive(value):
            raise c.bad(key, value, "a positive number")
    for key in ("rope_scaling", "rope_parameters"):
        rope = c.config.get(key)
        if rope is None:
            continue
        if not isinstance(rope, dict):
            raise c.bad(key, rope, f"an object with a rope_type ({', '.join(ROPE_TYPES)})")
        kind = rope.get("rope_type", rope.get("type"))
        if kind not in ROPE_TYPES:
            raise c.bad(f"{key}.rope_type", kind, f"one of {', '.join(map(repr, ROPE_TYPES))}")
        for number in ("factor", "rope_theta"):
            if rope.get(number) is not None and not _positive(rope[number]):
                raise c.bad(f"{key}.{number}", rope[number], "a positive number")


def _positive(value) -> bool:
    """A positive finite number, not a bool."""
    real = isinstance(value, int | float) and not isinstance(value, bool)
    return real and 0 < value < math.inf


def _checkpoint_format(c) -> str:
    """The format of the checkpoint's unquantized weights, from ``dtype`` or ``torch_dtype``
    (``CHECKPOINT_DTYPES``): bf16 where the config does not say."""
    given = {key: c.config[key] for key in DTYPE_KEYS if c.config.get(key) is not None}
    if len(set(given.values())) > 1:
        raise ArgumentError(
            f"config of model_type {c.model_type!r}: dtype={given['dtype']!r} and "
            f"torch_dtype={given['torch_dtype']!r} disagree: give one"
        )
    for key, value in given.items():
        if value not in CHECKPOINT_DTYPES:
            valid = f"one of {', '.join(map(repr, CHECKPOINT_DTYPES))} (the weights' format)"
            raise c.bad(key, value, valid)
        return CHECKPOINT_DTYPES[value]
    return "bf16"


def checkpoint_formats(c, is_moe: bool) -> tuple:
    """The weight formats a config gives its checkpoint (``WEIGHT_GROUPS``), () for bf16
    throughout: a quantization block's (``_quantized``), else fp32 for a float32 checkpoint.
    A 16-bit checkpoint, fp16 or bf16, counts as bf16 (two bytes a number either way)."""
    unquantized = _checkpoint_format(c)
    if c.config.get("quantization_config"):
        return _quantized(c.config, is_moe, unquantized)
    if unquantized == "fp32":
        groups = ("layers", "experts", "vocabulary") if is_moe else ("layers", "vocabulary")
        return tuple((group, "fp32") for group in groups)
    return ()


QUANTIZATION = {
    "mxfp4": lambda q: "mxfp4",
    "fp8": lambda q: {None: "fp8", (128, 128): "fp8-block"}.get(
        tuple(q["weight_block_size"]) if q.get("weight_block_size") else None
    ),
    "awq": lambda q: "int4-g128" if (q.get("bits"), q.get("group_size")) == (4, 128) else None,
    "gptq": lambda q: "int4-g128" if (q.get("bits"), q.get("group_size")) == (4, 128) else None,
}
"""The ``quantization_config`` methods the reader knows: each gives the format of the weights
it converts (``FORMATS``), or None for settings the library has no format for."""

# Hugging Face's quantizers convert the linear layers inside the decoder layers and keep the
# embedding and the output head (``lm_head``) in the checkpoint's 16-bit format; a module named
# in ``modules_to_not_convert`` stays there too.
_NOT_CONVERTED = {"layers": "self_attn", "experts": "experts"}


def _quantized(config: dict, is_moe: bool, unconverted: str) -> tuple:
    """The weight formats of a config's ``quantization_config`` (``WEIGHT_GROUPS``): gpt-oss's
    MXFP4 experts with bf16 attention, DeepSeek-V3's fp8 with 128 x 128 block scales;
    ``unconverted``, the checkpoint's format, for the weights it leaves as they are."""
    q = config.get("quantization_config")
    method = q.get("quant_method") if isinstance(q, dict) else None
    if method not in QUANTIZATION:
        raise ArgumentError(
            f"quantization_config: quant_method must be one of {', '.join(QUANTIZATION)}, got "
            f"{method!r}"
        )
    stored = QUANTIZATION[method](q)
    if stored is None:
        raise ArgumentError(
            f"quantization_config: the library has no format for {method} with "
            f"{ {k: v for k, v in q.items() if k != 'quant_method'} }"
        )
    kept = " ".join(q.get("modules_to_not_convert") or ())
    formats = {"vocabulary": unconverted}
    for group, module in _NOT_CONVERTED.items():
        if group != "experts" or is_moe:
            formats[group] = unconverted if module in kept else stored
    return tuple(formats.items())
