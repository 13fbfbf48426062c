"""Model configurations: a validated ``ModelConfig``, a registry of real models, and a reader
for Hugging Face ``config.json`` files.

>>> m = model("llama-3.1-8b")
>>> m.d_model, m.n_layers, m.n_heads, m.n_kv_heads, m.d_head
(4096, 32, 32, 8, 128)
>>> model("llama-3-8b")
Traceback (most recent call last):
...
KeyError: "unknown model 'llama-3-8b'; close matches: llama-3.1-8b, ..."

Chapter 03 (the transformer's parameters) explains every field.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, fields
from importlib import resources

from inference_arithmetic.registry import entries, lookup

__all__ = ["ModelConfig", "model", "model_names", "measured", "MODEL_TYPES"]

MODEL_TYPES = ("llama", "mistral", "mixtral", "qwen2", "gemma2", "phi3", "gpt2", "deepseek_v3")


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
    tied_embeddings: bool = False
    max_positions: int | None = None  # learned position embeddings, when set
    # Mixture of experts: n_experts > 0. The first n_dense_layers keep a dense FFN of d_ff.
    n_experts: int = 0
    n_active_experts: int = 0
    d_ff_expert: int | None = None
    n_shared_experts: int = 0
    n_dense_layers: int = 0
    router_bias: bool = False
    # Multi-head latent attention (DeepSeek): all five set, or none.
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # Sliding-window attention on n_window_layers of the layers.
    window: int | None = None
    n_window_layers: int = 0
    context_window: int | None = None  # the longest context the model was made for
    model_type: str = ""
    source: str = field(default="", compare=False)
    published_params: str = field(default="", compare=False)

    def __post_init__(self):
        positive = ["vocab_size", "d_model", "n_layers", "n_heads", "d_ff"]
        optional = ["n_kv_heads", "d_head", "max_positions", "d_ff_expert", "window"]
        optional += ["context_window"]
        optional += ["q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"]
        optional += ["v_head_dim"]
        counts = ["n_experts", "n_active_experts", "n_shared_experts", "n_dense_layers"]
        counts += ["n_window_layers", "norms_per_layer"]
        for name in positive + optional + counts:
            value = getattr(self, name)
            if value is None and name in optional:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{self.name}: {name} must be an integer, got {value!r}")
            if value < (0 if name in counts else 1):
                raise ValueError(f"{self.name}: {name} must be positive, got {value}")
        if self.d_head is None:
            if self.d_model % self.n_heads:
                raise ValueError(
                    f"{self.name}: {self.n_heads} heads do not divide d_model={self.d_model}; "
                    "give d_head explicitly"
                )
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"{self.name}: n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads}"
            )
        for name, choices in (("ffn", ("gated", "classic")), ("norm", ("rms", "layer"))):
            if getattr(self, name) not in choices:
                raise ValueError(f"{self.name}: {name} must be one of {choices}")
        if self.n_experts:
            if not 1 <= self.n_active_experts <= self.n_experts or self.d_ff_expert is None:
                raise ValueError(
                    f"{self.name}: an MoE model needs 1 <= n_active_experts <= n_experts "
                    "and d_ff_expert"
                )
            if self.n_dense_layers >= self.n_layers:
                raise ValueError(f"{self.name}: n_dense_layers must be below n_layers")
        elif self.n_active_experts or self.n_shared_experts or self.n_dense_layers:
            raise ValueError(f"{self.name}: expert settings without n_experts")
        mla = [self.q_lora_rank, self.kv_lora_rank, self.qk_nope_head_dim]
        mla += [self.qk_rope_head_dim, self.v_head_dim]
        if any(v is not None for v in mla) and any(v is None for v in mla):
            raise ValueError(f"{self.name}: multi-head latent attention needs all five sizes")
        if (self.window is None) != (self.n_window_layers == 0):
            raise ValueError(f"{self.name}: window and n_window_layers go together")
        if self.n_window_layers > self.n_layers:
            raise ValueError(f"{self.name}: n_window_layers exceeds n_layers")

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
    def from_hf_config(cls, config: dict, name: str | None = None) -> ModelConfig:
        """Read a Hugging Face ``config.json`` (as a dict) of a supported ``model_type``.

        Raises ``ValueError`` for an unsupported model_type and ``KeyError`` naming a
        missing key.
        """
        model_type = config.get("model_type")
        if model_type not in MODEL_TYPES:
            raise ValueError(
                f"unsupported model_type {model_type!r}; supported: {', '.join(MODEL_TYPES)}"
            )
        name = name or config.get("_name_or_path") or model_type
        return cls(name=name, model_type=model_type, **_READERS[model_type](_Keys(config)))


class _Keys:
    """A config dict whose missing keys raise a KeyError naming the key and the model_type."""

    def __init__(self, config: dict):
        self.config = config

    def __getitem__(self, key):
        try:
            return self.config[key]
        except KeyError:
            raise KeyError(
                f"config of model_type {self.config.get('model_type')!r} lacks {key!r}"
            ) from None

    def get(self, key, default=None):
        value = self.config.get(key, default)
        return default if value is None else value


def _llama_like(c: _Keys, tied_default=False, qkv_bias=None) -> dict:
    heads = c["num_attention_heads"]
    bias = c.get("attention_bias", False)
    return dict(
        vocab_size=c["vocab_size"],
        d_model=c["hidden_size"],
        n_layers=c["num_hidden_layers"],
        n_heads=heads,
        n_kv_heads=c.get("num_key_value_heads", heads),
        d_head=c.get("head_dim") or None,
        d_ff=c["intermediate_size"],
        qkv_bias=bias if qkv_bias is None else qkv_bias,
        out_bias=bias,
        ffn_bias=c.get("mlp_bias", False),
        tied_embeddings=c.get("tie_word_embeddings", tied_default),
        context_window=c.get("max_position_embeddings") or None,
    )


def _mistral(c: _Keys) -> dict:
    values = _llama_like(c)
    if c.get("sliding_window"):
        values.update(window=c["sliding_window"], n_window_layers=c["num_hidden_layers"])
    return values


def _mixtral(c: _Keys) -> dict:
    values = _mistral(c)
    values.update(
        n_experts=c["num_local_experts"],
        n_active_experts=c["num_experts_per_tok"],
        d_ff_expert=c["intermediate_size"],
    )
    return values


def _qwen2(c: _Keys) -> dict:
    values = _llama_like(c, qkv_bias=True)  # Qwen2 biases q, k and v, not the output
    values["out_bias"] = False
    if c.get("use_sliding_window", False) and c.get("sliding_window"):
        windowed = c["num_hidden_layers"] - c.get("max_window_layers", 0)
        if windowed > 0:
            values.update(window=c["sliding_window"], n_window_layers=windowed)
    return values


def _gemma2(c: _Keys) -> dict:
    values = _llama_like(c, tied_default=True)
    layers = c["num_hidden_layers"]
    values.update(norms_per_layer=4)  # before and after both attention and the FFN
    if c.get("sliding_window"):
        # Gemma 2 alternates: even layers use the window, odd layers attend globally.
        values.update(window=c["sliding_window"], n_window_layers=(layers + 1) // 2)
    return values


def _gpt2(c: _Keys) -> dict:
    width = c["n_embd"]
    return dict(
        vocab_size=c["vocab_size"],
        d_model=width,
        n_layers=c["n_layer"],
        n_heads=c["n_head"],
        d_ff=c.get("n_inner") or 4 * width,
        ffn="classic",
        qkv_bias=True,
        out_bias=True,
        ffn_bias=True,
        norm="layer",
        tied_embeddings=c.get("tie_word_embeddings", True),
        max_positions=c["n_positions"],
        context_window=c["n_positions"],
    )


def _deepseek_v3(c: _Keys) -> dict:
    values = _llama_like(c)
    values.update(
        d_head=None,
        n_kv_heads=None,
        n_experts=c["n_routed_experts"],
        n_active_experts=c["num_experts_per_tok"],
        d_ff_expert=c["moe_intermediate_size"],
        n_shared_experts=c.get("n_shared_experts", 0),
        n_dense_layers=c.get("first_k_dense_replace", 0),
        q_lora_rank=c["q_lora_rank"],
        kv_lora_rank=c["kv_lora_rank"],
        qk_nope_head_dim=c["qk_nope_head_dim"],
        qk_rope_head_dim=c["qk_rope_head_dim"],
        v_head_dim=c["v_head_dim"],
    )
    # MLA heads have their own widths; d_head is the query/key width, for display only.
    values["d_head"] = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
    return values


_READERS = {
    "llama": _llama_like,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "gemma2": _gemma2,
    "phi3": _mistral,  # Phi-3 windows every layer, like Mistral (2047 tokens for mini-4k)
    "gpt2": _gpt2,
    "deepseek_v3": _deepseek_v3,
}


@functools.cache
def _registry() -> dict[str, ModelConfig]:
    registry = {}
    for entry in entries("inference_arithmetic.model_configs"):
        published = entry.get("published_params", {})
        config = ModelConfig.from_hf_config(entry["config"], name=entry["name"])
        registry[entry["name"]] = _with(
            config,
            source=entry["source"],
            published_params=published.get("text", "") if isinstance(published, dict) else "",
        )
    return registry


def _with(config: ModelConfig, **changes) -> ModelConfig:
    values = {f.name: getattr(config, f.name) for f in fields(config)}
    return ModelConfig(**{**values, **changes})


def model_names() -> list[str]:
    """The names of the registry's models."""
    return list(_registry())


@functools.cache
def _measured() -> dict:
    path = resources.files("inference_arithmetic.reference").joinpath("measured.json")
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


def model(name: str | ModelConfig) -> ModelConfig:
    """A registry model by name (a ``ModelConfig`` is returned as it is); ``KeyError`` listing
    close matches for an unknown name, ``ArgumentError`` for something that is not a name."""
    if isinstance(name, ModelConfig):
        return name
    return lookup("model", name, _registry(), "ia.model_names()")
