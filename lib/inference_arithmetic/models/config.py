"""Model configurations: the validated ``ModelConfig``, the registry of real models, what the
reference implementation measured of them, and the formats their weights are stored in.

>>> m = model("llama-3.1-8b")
>>> m.d_model, m.n_layers, m.n_heads, m.n_kv_heads, m.d_head
(4096, 32, 32, 8, 128)
>>> model("llama-3-8b")
Traceback (most recent call last):
...
inference_arithmetic.core.numeric.UnknownName: unknown model 'llama-3-8b'; close matches: ...

``ModelConfig.from_hf_config`` reads a Hugging Face ``config.json`` with the reader of
``models.huggingface``. Chapter 03 (the transformer's parameters) explains every field.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path

import numpy as np

from inference_arithmetic.core.dtypes import bytes_per_number, dtype_name
from inference_arithmetic.core.errors import ArgumentError
from inference_arithmetic.core.registry import Registry, lookup
from inference_arithmetic.models.checkpoint import QUANTIZATION  # noqa: F401

# The reader's tables are importable from here too (``models.config.FIELDS``), where the page's
# own-config form and readers' notes look for them beside ``ModelConfig``.
from inference_arithmetic.models.huggingface import (  # noqa: F401
    CONTEXT_DEFAULTS,
    FIELDS,
    LAYER_KINDS,
    MODEL_TYPES,
    UNMODELED,
    WRAPPERS,
    as_read,
    read_hf_config,
)

__all__ = ["ModelConfig", "model", "model_names", "measured", "WEIGHT_GROUPS", "AUTO"]
__all__ += ["weight_formats", "weight_number_values"]

WEIGHT_GROUPS = ("layers", "experts", "vocabulary")
"""The groups of weights a checkpoint may store in formats of their own: the experts of MoE
layers (routed and shared), the vocabulary (the token embedding, learned positions, the output
head), and the layers' other weights (attention, dense feed-forward blocks, routers, norms)."""

AUTO = "auto"
"""The weight format that means "as the checkpoint ships": each group in the format its config's
quantization block gives it, bf16 where it gives none (vLLM's ``--dtype auto``)."""


@dataclass(frozen=True)
class ModelConfig:
    """The architecture of a decoder-only transformer, as the book's formulas need it.

    Sizes are in numbers (not bytes). ``d_head`` defaults to ``d_model // n_heads`` (which
    must then divide) and ``n_kv_heads`` to ``n_heads`` (multi-head attention).
    """

    name: str
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    n_kv_heads: int | None = None
    d_head: int | None = None
    ffn: str = "gated"  # "gated": gate, up, down (SwiGLU, GeGLU); "classic": up, down
    qkv_bias: bool = False
    out_bias: bool = False
    ffn_bias: bool = False
    norm: str = "rms"  # "rms": a weight per number; "layer": a weight and a bias
    norms_per_layer: int = 2
    # Norms of the queries and keys inside attention: "" none, "head" a d_head-wide weight for
    # each (Qwen 3, Gemma 3), "full" over all heads, (H + H_kv) d_head weights (OLMo 2).
    qk_norm: str = ""
    attention_sinks: bool = False  # a learned logit per head (gpt-oss)
    tied_embeddings: bool = False
    lm_head_bias: bool = False
    max_positions: int | None = None  # learned position embeddings, when set
    # Mixture of experts: n_experts > 0. The first n_dense_layers keep a dense FFN of d_ff.
    n_experts: int = 0
    n_active_experts: int = 0
    d_ff_expert: int | None = None
    n_shared_experts: int = 0
    n_dense_layers: int = 0
    router_bias: bool = False
    # Multi-head latent attention (DeepSeek): the four key/value sizes set, or none; queries
    # are compressed to q_lora_rank, or projected directly when it is None (V2-Lite, Moonlight).
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # Sliding-window attention on n_window_layers of the layers.
    window: int | None = None
    n_window_layers: int = 0
    context_window: int | None = None  # the longest context the model was made for
    # ((group, format), ...) of a quantized checkpoint (WEIGHT_GROUPS), () for one format
    weight_formats: tuple = ()
    model_type: str = ""
    # Multi-token prediction modules the checkpoint ships beside the model (DeepSeek-V3's one,
    # its config's num_nextn_predict_layers): what speculative="mtp" drafts with. They are not
    # counted (the reference implementation does not build them), so no formula reads this.
    mtp_modules: int = field(default=0, compare=False, metadata={"key": False})
    source: str = field(default="", compare=False)
    published_params: str = field(default="", compare=False)

    def __post_init__(self):
        # A switch is True or False, nothing truthy: "false" and "no" are true in Python and
        # would add biases or tie the embeddings unseen. numpy's bools are kept as Python's.
        for switch in (f.name for f in fields(self) if f.type == "bool"):
            value = getattr(self, switch)
            if not isinstance(value, bool | np.bool_):
                raise ArgumentError(f"{self.name}: {switch} must be True or False, got {value!r}")
            object.__setattr__(self, switch, bool(value))
        positive = ["vocab_size", "d_model", "n_layers", "n_heads", "d_ff"]
        optional = ["n_kv_heads", "d_head", "max_positions", "d_ff_expert", "window"]
        optional += ["context_window"]
        optional += ["q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"]
        optional += ["v_head_dim"]
        counts = ["n_experts", "n_active_experts", "n_shared_experts", "n_dense_layers"]
        counts += ["n_window_layers", "norms_per_layer", "mtp_modules"]
        for name in positive + optional + counts:
            value = getattr(self, name)
            if value is None and name in optional:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentError(f"{self.name}: {name} must be an integer, got {value!r}")
            if value < (0 if name in counts else 1):
                raise ArgumentError(f"{self.name}: {name} must be positive, got {value}")
            object.__setattr__(self, name, int(value))  # a plain int (a reader's may be Read)
        if self.d_head is None:
            if self.d_model % self.n_heads:
                raise ArgumentError(
                    f"{self.name}: n_heads={self.n_heads} does not divide d_model={self.d_model}; "
                    "give d_head explicitly"
                )
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        if self.n_heads % self.n_kv_heads:
            raise ArgumentError(
                f"{self.name}: n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads}"
            )
        choices_of = [("ffn", ("gated", "classic")), ("norm", ("rms", "layer"))]
        choices_of += [("qk_norm", ("", "head", "full"))]
        for name, choices in choices_of:
            if getattr(self, name) not in choices:
                raise ArgumentError(f"{self.name}: {name} must be one of {choices}")
        if self.n_experts:
            if not 1 <= self.n_active_experts <= self.n_experts or self.d_ff_expert is None:
                raise ArgumentError(
                    f"{self.name}: an MoE model needs 1 <= n_active_experts <= n_experts "
                    f"and d_ff_expert, got n_active_experts={self.n_active_experts}, "
                    f"n_experts={self.n_experts}, d_ff_expert={self.d_ff_expert}"
                )
            if self.n_dense_layers >= self.n_layers:
                raise ArgumentError(f"{self.name}: n_dense_layers must be below n_layers")
        elif self.n_active_experts or self.n_shared_experts or self.n_dense_layers:
            raise ArgumentError(f"{self.name}: expert settings without n_experts")
        mla = {"kv_lora_rank": self.kv_lora_rank, "qk_nope_head_dim": self.qk_nope_head_dim}
        mla |= {"qk_rope_head_dim": self.qk_rope_head_dim, "v_head_dim": self.v_head_dim}
        missing = [name for name, value in mla.items() if value is None]
        if missing and (len(missing) < len(mla) or self.q_lora_rank is not None):
            raise ArgumentError(
                f"{self.name}: multi-head latent attention needs kv_lora_rank, qk_nope_head_dim, "
                f"qk_rope_head_dim and v_head_dim (q_lora_rank may be None: queries projected "
                f"without compression); missing {', '.join(missing)}"
            )
        if (self.window is None) != (self.n_window_layers == 0):
            raise ArgumentError(f"{self.name}: window and n_window_layers go together")
        if self.n_window_layers > self.n_layers:
            raise ArgumentError(f"{self.name}: n_window_layers exceeds n_layers")
        formats = dict(self.weight_formats)  # a mapping or pairs, kept as pairs (hashable)
        groups = [g for g in WEIGHT_GROUPS if g != "experts" or self.is_moe]
        if set(formats) - set(groups):
            raise ArgumentError(
                f"{self.name}: weight_formats groups must be among {', '.join(groups)}, got "
                f"{', '.join(map(repr, set(formats) - set(groups)))}"
            )
        named = [g for g in groups if g in formats]
        pairs = tuple((g, dtype_name(formats[g], f"weight_formats[{g!r}]")) for g in named)
        object.__setattr__(self, "weight_formats", pairs)

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    def sizes(self) -> dict[str, int]:
        """The model's sizes keyed by symbol name, to evaluate the book's formulas."""
        values = {
            "vocab_size": self.vocab_size,
            "d_model": self.d_model,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            "d_head": self.d_head,
            "d_ff": self.d_ff,
            "max_positions": self.max_positions,
            "n_experts": self.n_experts,
            "n_active_experts": self.n_active_experts,
            "d_ff_expert": self.d_ff_expert,
            "n_shared_experts": self.n_shared_experts,
            "n_dense_layers": self.n_dense_layers,
            "q_lora_rank": self.q_lora_rank,
            "kv_lora_rank": self.kv_lora_rank,
            "d_nope": self.qk_nope_head_dim,
            "d_rope": self.qk_rope_head_dim,
            "d_v": self.v_head_dim,
            "window": self.window,
            "n_window_layers": self.n_window_layers,
        }
        return {name: value for name, value in values.items() if value is not None}

    @classmethod
    def from_hf_config(cls, config, name: str | None = None) -> ModelConfig:
        """Read a Hugging Face ``config.json`` of a supported ``model_type`` (``MODEL_TYPES``).

        ``config`` is a dict, a path to the file or to the model's folder that holds it, its
        JSON text, or an object with ``to_dict()`` (a ``transformers`` config). A multimodal
        wrapper's ``text_config`` is read (the vision tower is not counted). The model is named
        ``name``, else after the folder that holds the file (in the Hugging Face cache, the
        model's name), else the last part of the config's ``_name_or_path`` ("Qwen/Qwen3-8B":
        "Qwen3-8B"), else its model_type. Every field read is type-checked (``FIELDS`` lists
        them per family); a field that would change the architecture in a way the library
        does not model raises ``ArgumentError`` (a ``ValueError``) naming it, and so does a
        constant that is not a positive number or a rotary scaling transformers cannot build
        (``checkpoint.CONSTANTS``, ``ROPE_TYPES``). ``torch_dtype`` (or ``dtype``) gives the
        unquantized weights' format (``checkpoint.CHECKPOINT_DTYPES``): a float32 checkpoint's
        are fp32 (``weight_formats``). A rule of the model's that the fields break is refused
        with the config's own names and values ("num_experts_per_tok=9").
        The reader is ``models.huggingface.read_hf_config``.
        """
        values = read_hf_config(config, name)
        try:
            return cls(**values)
        except ArgumentError as error:  # named as ModelConfig's arguments: add the config's
            raise type(error)(as_read(str(error), values)) from None


def weight_formats(arch, dtype: str = AUTO) -> dict[str, str]:
    """The format each group of ``arch``'s weights is stored in (``WEIGHT_GROUPS``): ``dtype``
    for every group, or with ``dtype="auto"`` as the checkpoint ships (its config's
    quantization block, else its ``torch_dtype``: fp32 for a float32 checkpoint, bf16 for a
    16-bit one or one that does not say). ``arch`` is what ``model`` takes.

    >>> weight_formats(model("gpt-oss-120b"))
    {'layers': 'bf16', 'experts': 'mxfp4', 'vocabulary': 'bf16'}
    """
    arch = model(arch)
    if dtype == AUTO:
        return {**dict.fromkeys(WEIGHT_GROUPS, "bf16"), **dict(arch.weight_formats)}
    return dict.fromkeys(WEIGHT_GROUPS, dtype_name(dtype))


WEIGHT_SYMBOLS = {
    "layers": "bytes_per_number",
    "experts": "expert_bytes_per_number",
    "vocabulary": "vocab_bytes_per_number",
}
"""The symbol (by name) of each group's bytes per number in the formulas (b, b_e, b_v)."""


def weight_number_values(arch, dtype: str = AUTO) -> dict[str, float]:
    """``weight_formats`` as the formulas take them: bytes per number keyed by symbol name
    (``arch``: what ``model`` takes).

    >>> weight_number_values(model("gpt-oss-120b"))["expert_bytes_per_number"]  # 4.25 / 8
    0.53125
    """
    formats = weight_formats(arch, dtype)
    return {WEIGHT_SYMBOLS[g]: bytes_per_number(formats[g]) for g in WEIGHT_GROUPS}


def _entry(entry: dict) -> ModelConfig:
    published = entry.get("published_params", {})
    config = ModelConfig.from_hf_config(entry["config"], name=entry["name"])
    return _with(
        config,
        source=entry["source"],
        published_params=published.get("text", "") if isinstance(published, dict) else "",
    )


@functools.cache
def _registry() -> Registry:
    return Registry("inference_arithmetic.models.configs", _entry)


def _with(config: ModelConfig, **changes) -> ModelConfig:
    values = {f.name: getattr(config, f.name) for f in fields(config)}
    return ModelConfig(**{**values, **changes})


def model_names() -> list[str]:
    """The names of the registry's models."""
    return list(_registry())


@functools.cache
def _measured() -> dict:
    path = resources.files("inference_arithmetic.models.reference").joinpath("measured.json")
    return json.loads(path.read_text())


def measured(name: str | None = None) -> dict:
    """What the reference implementation measured for a registry model (or all of them).

    Unique parameter counts, FLOP-counter totals of prefills and a decode step, KV-cache
    bytes: ``measured("llama-3.1-70b")["params"]["total"] == 70553706496``. Made by
    ``tests/reference/make_reference.py`` (``make reference``) with Hugging Face
    ``transformers`` on PyTorch's meta device; ``measured()["versions"]`` says which.
    """
    data = _measured()
    if name is None:
        return data
    model(name)  # a KeyError with close matches for an unknown name
    return data["models"][name]


OWN_MODEL = (
    "a model of your own is a Hugging Face config.json: its path, its folder, its JSON text or "
    "a dict of it (ModelConfig.from_hf_config)"
)
"""How to pass a model the registry does not hold: the end of an unknown name's message."""


def model(name) -> ModelConfig:
    """A model: a registry name, or a Hugging Face ``config.json`` given as a dict, its JSON
    text, a path to it or to the folder that holds it (``ModelConfig.from_hf_config``), as
    the command line takes it; a ``ModelConfig`` is returned as it is. A registry name wins
    over a file of the same name. ``KeyError`` with close matches for an unknown name,
    ``ArgumentError`` for anything else."""
    if isinstance(name, ModelConfig):
        return name
    if isinstance(name, Mapping):
        return ModelConfig.from_hf_config(dict(name))
    if isinstance(name, os.PathLike):
        return ModelConfig.from_hf_config(Path(name))
    if isinstance(name, str) and name not in _registry():
        if name.lstrip().startswith("{"):
            return ModelConfig.from_hf_config(name)
        if Path(name).exists():
            return ModelConfig.from_hf_config(Path(name))
    return lookup("model", name, _registry(), "ia.model_names()", OWN_MODEL)
