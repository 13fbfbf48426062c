"""The reader of Hugging Face ``config.json`` files: the fields of a ``ModelConfig``, read typed
from the config of each supported family (``MODEL_TYPES``), with what each family reads
(``FIELDS``) and what the library refuses (``UNMODELED``); what a config says of its
checkpoint (the weights' formats, the constants checked without being read) is
``models.checkpoint``'s.

>>> values = read_hf_config({
...     "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096,
...     "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
...     "head_dim": 128, "intermediate_size": 12288,
... })
>>> values["name"], values["n_kv_heads"], values["qk_norm"], values["context_window"]
('qwen3', 8, 'head', 32768)

``ModelConfig.from_hf_config`` builds the validated model from these fields; chapter 03 walks
one ``config.json`` through them field by field.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from inference_arithmetic.core.errors import ArgumentError, UnknownName
from inference_arithmetic.models.checkpoint import DTYPE_KEYS, check_constants, checkpoint_formats

__all__ = ["read_hf_config", "MODEL_TYPES", "FIELDS", "WRAPPERS", "UNMODELED", "Keys", "Read"]
__all__ += ["as_read"]


def read_hf_config(config, name: str | None = None) -> dict:
    """The keyword arguments of a ``ModelConfig`` that a Hugging Face config describes, read
    as ``ModelConfig.from_hf_config`` says (which takes the same ``config`` and ``name``): a
    dict, a path or folder, JSON text or an object with ``to_dict()``; a wrapper's
    ``text_config``; every field type-checked, an unmodeled one refused."""
    config, folder = _as_dict(config)
    wrapper = config.get("model_type")
    if wrapper in WRAPPERS and isinstance(config.get("text_config"), dict):
        text = {"model_type": WRAPPERS[wrapper], **config["text_config"]}
        # What the wrapper says of the whole checkpoint holds for its text model too.
        for key in ("_name_or_path", *DTYPE_KEYS, "quantization_config"):
            if text.get(key) is None and config.get(key) is not None:
                text[key] = config[key]
        config = text
    model_type = config.get("model_type")
    if model_type not in MODEL_TYPES:
        raise ArgumentError(
            f"unsupported model_type {model_type!r}; supported: {', '.join(MODEL_TYPES)}"
        )
    # The folder first: the _name_or_path a saved config.json holds is often the path it
    # was trained or converted at, not the model's name.
    name = name or folder or _last_part(config.get("_name_or_path")) or model_type
    keys = Keys(config)
    values = _READERS[model_type](keys)
    keys.refuse_unread(UNMODELED)
    check_constants(keys)
    formats = checkpoint_formats(keys, is_moe=bool(values.get("n_experts")))
    # A multi-token prediction module (0 or 1 get past ``refuse_unread``) adds nothing the
    # library counts; it is kept as ``mtp_modules``, for what speculative="mtp" drafts with.
    if config.get("num_nextn_predict_layers"):
        values["mtp_modules"] = int(config["num_nextn_predict_layers"])
    return dict(name=name, model_type=model_type, weight_formats=formats, **values)


class Read(int):
    """A whole number as read from a config's field: an ``int`` that remembers the field
    (``field``), so that a rule of ``ModelConfig`` that refuses it names the field as the
    config spells it (``as_read``). ``ModelConfig`` keeps plain ``int``s; a number computed
    from one (a sum, a default) is a plain ``int``."""

    field: str

    def __new__(cls, value: int, field: str):
        number = super().__new__(cls, value)
        number.field = field
        return number

    def __getnewargs__(self):  # a copy or a pickle keeps the field
        return int(self), self.field


def as_read(message: str, values: dict) -> str:
    """``message``, a refusal of ``ModelConfig``'s built from ``values`` (``read_hf_config``'s),
    with the config's field and value for each of its arguments that the message names and a
    field set: "...; in the config: num_experts_per_tok=9 (n_active_experts), ...")."""
    named = [
        f"{value.field}={int(value)!r} ({argument})"
        for argument, value in values.items()
        if isinstance(value, Read) and re.search(rf"\b{argument}\b", message)
    ]
    return f"{message}; in the config: {', '.join(named)}" if named else message


WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral"}
"""Multimodal model types whose ``text_config`` is the language model the library counts."""

UNMODELED = {
    "num_nextn_predict_layers": "multi-token prediction layers (DeepSeek-V3's; transformers does "
    "not build them either)",
    "moe_layer_freq": "MoE layers every n layers other than 1",
    "cross_attention_layers": "cross-attention layers (vision)",
    "altup_num_inputs": "Gemma 3n's AltUp",
    "laurel_rank": "Gemma 3n's LAuReL blocks",
}
"""Fields that change the architecture in ways the library does not model, and what they are:
a config that sets one (to other than its neutral value) is refused."""

_NEUTRAL = {"num_nextn_predict_layers": (0, 1), "moe_layer_freq": (1,)}


def _as_dict(config) -> tuple[dict, str | None]:
    """A config given as a dict, a path (to config.json or its folder), JSON text or a
    transformers config, as a dict and the name of the model's folder (None if not from a
    file)."""
    if hasattr(config, "to_dict") and not isinstance(config, dict):
        config = config.to_dict()
    if isinstance(config, os.PathLike) or (
        isinstance(config, str) and not config.lstrip().startswith("{")
    ):
        path = Path(config)
        if path.is_dir():  # a model's folder, as downloaded
            path = path / "config.json"
        if not path.is_file():
            raise ArgumentError(f"no config.json at {str(path)!r}")
        return _parsed(path.read_text(), str(path)), _folder_name(path)
    if isinstance(config, str):
        return _parsed(config, "the JSON text"), None
    if not isinstance(config, dict):
        raise ArgumentError(
            "a config is a dict, a path to config.json, its JSON text or an object with "
            f"to_dict(), got {type(config).__name__}"
        )
    return config, None


def _folder_name(path: Path) -> str:
    """The name of the folder that holds ``path``, or in the Hugging Face cache
    (models--<org>--<name>/snapshots/<commit>/config.json) the model's name."""
    # Not resolved: the cache's files are links to blobs/, which would name every model "blobs".
    folder = Path(os.path.abspath(path)).parent
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.split("--")[-1]
    return folder.name


def _last_part(name_or_path) -> str | None:
    """The last part of a config's ``_name_or_path``: a Hub id's name, a path's folder."""
    if not isinstance(name_or_path, str):
        return None
    return name_or_path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or None


def _parsed(text: str, where: str) -> dict:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ArgumentError(f"{where} is not valid JSON: {error}") from None
    if not isinstance(config, dict):
        raise ArgumentError(f"{where} holds a {type(config).__name__}, not a JSON object")
    return config


class Keys:
    """A config whose fields are read typed: a missing required field, a string where a bool
    belongs or 0 where a size belongs is an error naming the field (never "use the
    default"). Each field read is remembered, for ``FIELDS``."""

    def __init__(self, config: dict, probe: bool = False, present: bool = True):
        self.config, self.read, self.probe, self.present = config, [], probe, present
        self.model_type = config.get("model_type")

    def _get(self, key, required):
        self.read.append(key)
        if self.probe:  # listing the fields a reader reads (FIELDS): any value will do
            return None
        if key not in self.config or self.config[key] is None:
            if required:
                raise UnknownName(f"config of model_type {self.model_type!r} lacks {key!r}")
            return None
        return self.config[key]

    def bad(self, key, value, what):
        return ArgumentError(
            f"config of model_type {self.model_type!r}: {key} must be {what}, got {value!r}"
        )

    def has(self, key) -> bool:
        """Whether the config sets ``key`` (a probe answers each way in turn, see FIELDS)."""
        self.read.append(key)
        if self.probe:
            return self.present
        return self.config.get(key) is not None

    def size(self, key, default=None, required=True):
        """A positive whole number (a missing optional one is ``default``)."""
        value = self._get(key, required and default is None)
        if value is None:
            if self.probe and default is None:
                return 64
            return int(default) if isinstance(default, Read) else default  # not key's
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.bad(key, value, "a positive whole number")
        return Read(value, key)

    def count(self, key, default=0):
        """A whole number that may be zero."""
        value = self._get(key, False)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.bad(key, value, "a whole number, 0 or more")
        return Read(value, key)

    def flag(self, key, default=False):
        """A JSON true or false (a string "false" is refused, not taken as true)."""
        value = self._get(key, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.bad(key, value, "true or false")
        return value

    def names(self, key):
        """A list of strings (``layer_types``), or None."""
        value = self._get(key, False)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise self.bad(key, value, "a list of strings")
        return value

    def numbers(self, key):
        """A list of whole numbers (layer indices), or an empty list."""
        value = self._get(key, False) or []
        if not isinstance(value, list) or any(
            isinstance(v, bool) or not isinstance(v, int) for v in value
        ):
            raise self.bad(key, value, "a list of layer indices")
        return value

    def refuse_unread(self, unmodeled):
        for key, what in unmodeled.items():
            value = self.config.get(key)
            if key not in self.read and value not in (None, *_NEUTRAL.get(key, (0, False))):
                raise ArgumentError(
                    f"config of model_type {self.model_type!r} sets {key}={value!r}: "
                    f"{what}, which the library does not model"
                )


def _llama_like(c: Keys, tied_default=False, qkv_bias=None) -> dict:
    heads = c.size("num_attention_heads")
    bias = c.flag("attention_bias")
    return dict(
        vocab_size=c.size("vocab_size"),
        d_model=c.size("hidden_size"),
        n_layers=c.size("num_hidden_layers"),
        n_heads=heads,
        n_kv_heads=c.size("num_key_value_heads", heads),
        d_head=c.size("head_dim", required=False),
        d_ff=c.size("intermediate_size"),
        qkv_bias=bias if qkv_bias is None else qkv_bias,
        out_bias=bias,
        ffn_bias=c.flag("mlp_bias"),
        tied_embeddings=c.flag("tie_word_embeddings", tied_default),
        # Absent, transformers' default for the family; None for a family not in the table.
        context_window=c.size(
            "max_position_embeddings", CONTEXT_DEFAULTS.get(c.model_type), required=False
        ),
    )


CONTEXT_DEFAULTS = {
    "llama": 2048,
    "mistral": 4096 * 32,
    "mixtral": 4096 * 32,
    "qwen2": 32768,
    "qwen3": 32768,
    "qwen3_moe": 32768,
    "gemma2": 8192,
    "gemma3_text": 131_072,
    "olmo2": 2048,
    "phi3": 4096,
    "phimoe": 4096 * 32,
    "gpt_oss": 131_072,
    "llama4_text": 4096 * 32,
    "granite": 2048,
    "starcoder2": 4096,
    "cohere2": 8192,
    "deepseek_v2": 2048,
    "deepseek_v3": 4096,
}
"""The context window of a config without ``max_position_embeddings``, by model_type: the
default of its transformers config class (``LlamaConfig``'s 2048, ``MistralConfig``'s
4096 * 32, ...; huggingface/transformers, src/transformers/models/<family>/configuration_*.py,
read for transformers 5), which is what transformers builds such a config with. gpt2, gptj
and falcon read their own fields (``n_positions``: required for gpt2; 2048 for the others)."""


LAYER_KINDS = ("full_attention", "sliding_attention", "chunked_attention")
"""The attention of one layer in ``layer_types``: full, over a sliding window, or over chunks.
A chunked layer's cache keeps the last chunk of tokens, as a sliding window of the chunk's
length does; the library counts both as windowed layers."""


def _windows(c: Keys, layers: int, pattern=None) -> dict:
    """Windowed layers, from ``layer_types`` (any model that lists them), else from
    ``pattern(layers)``: which layers a family's rule windows, as a list of kinds."""
    kinds = c.names("layer_types")
    if c.probe:  # a layer of each kind, so that FIELDS lists every window field
        kinds, layers = list(LAYER_KINDS), len(LAYER_KINDS)
    if kinds is None:
        kinds = pattern(layers) if pattern else []
    elif len(kinds) != layers:
        raise ArgumentError(f"layer_types has {len(kinds)} entries for {layers} layers")
    unknown = sorted(set(kinds) - set(LAYER_KINDS))
    if unknown:
        raise ArgumentError(
            f"layer_types has {', '.join(unknown)}, which the library does not model"
        )
    sizes = {
        kind: c.size(key)
        for kind, key in (
            ("sliding_attention", "sliding_window"),
            ("chunked_attention", "attention_chunk_size"),
        )
        if kind in kinds
    }
    if len(set(sizes.values())) > 1:
        raise ArgumentError(f"windows of different lengths ({sizes}) are not modeled")
    windowed = sum(kind != "full_attention" for kind in kinds)
    return dict(window=next(iter(sizes.values())), n_window_layers=windowed) if windowed else {}


def _every(layers: int, kind: str, global_every: int | None = None) -> list[str]:
    """Every layer of ``kind``, but every ``global_every``-th attends fully."""
    full = {i for i in range(layers) if global_every and (i + 1) % global_every == 0}
    return ["full_attention" if i in full else kind for i in range(layers)]


def _window_on_every_layer(c: Keys, values: dict) -> dict:
    """``values`` with a window on every layer where the config sets ``sliding_window``
    (Mistral, Phi-3, StarCoder 2), none where it does not; as ``layer_types`` lists them where
    it does."""
    pattern = (lambda n: _every(n, "sliding_attention")) if c.has("sliding_window") else None
    return {**values, **_windows(c, values["n_layers"], pattern)}


def _global_every(c: Keys, values: dict, every: int) -> dict:
    """``values`` with windows as ``layer_types`` lists them, else on every layer but every
    ``sliding_window_pattern``-th (``every`` where the config does not say), which attends
    globally (Gemma 3, Cohere 2)."""
    pattern = None
    if not c.has("layer_types"):
        every = c.size("sliding_window_pattern", every)
        pattern = lambda n: _every(n, "sliding_attention", every)  # noqa: E731
    return {**values, **_windows(c, values["n_layers"], pattern)}


def _classic(bias: bool) -> dict:
    """GPT-2's kind of block: an up and a down projection, LayerNorm (a weight and a bias),
    and a bias on every projection or on none."""
    return dict(ffn="classic", norm="layer", qkv_bias=bias, out_bias=bias, ffn_bias=bias)


def _mistral(c: Keys) -> dict:
    return _window_on_every_layer(c, _llama_like(c))


def _experts(c: Keys, values: dict, experts="num_local_experts", width="intermediate_size"):
    values.update(
        n_experts=c.size(experts),
        n_active_experts=c.size("num_experts_per_tok"),
        d_ff_expert=c.size(width),
    )
    return values


def _mixtral(c: Keys) -> dict:
    return _experts(c, _mistral(c))


def _qwen2(c: Keys) -> dict:
    values = _llama_like(c, qkv_bias=True)  # Qwen2 biases q, k and v, not the output
    values["out_bias"] = False
    return {**values, **_qwen_windows(c, values["n_layers"])}


def _qwen_windows(c: Keys, layers: int) -> dict:
    """Qwen's windows: as layer_types lists them, else with use_sliding_window on the layers
    from max_window_layers on."""
    if not c.flag("use_sliding_window") and not c.has("layer_types"):
        return {}
    first = min(c.count("max_window_layers"), layers)
    rule = lambda n: ["full_attention"] * first + ["sliding_attention"] * (n - first)  # noqa: E731
    return _windows(c, layers, rule)


def _qwen3(c: Keys) -> dict:
    values = _llama_like(c)  # Qwen 3: no q, k, v bias; a norm on each head's queries and keys
    return {**values, "qk_norm": "head", **_qwen_windows(c, values["n_layers"])}


def _qwen3_moe(c: Keys) -> dict:
    values = _qwen3(c)
    layers, step = values["n_layers"], c.size("decoder_sparse_step", 1)
    dense = set(c.numbers("mlp_only_layers"))
    moe = [i for i in range(layers) if i not in dense and (i + 1) % step == 0]
    values.update(n_dense_layers=layers - len(moe))
    return _experts(c, values, experts="num_experts", width="moe_intermediate_size")


def _gemma2(c: Keys) -> dict:
    values = _llama_like(c, tied_default=True)
    values.update(norms_per_layer=4)  # before and after both attention and the FFN
    # Gemma 2 alternates: even layers use the window, odd layers attend globally.
    return {
        **values,
        **_windows(c, values["n_layers"], lambda n: _every(n, "sliding_attention", 2)),
    }


def _gemma3(c: Keys) -> dict:
    # Gemma 3's published configs leave out what Gemma3TextConfig defaults: a vocabulary of
    # 262,208, a context of 131,072 tokens and a global layer every 6.
    c.config = {"vocab_size": 262_208, "max_position_embeddings": 131_072, **c.config}
    values = _llama_like(c, tied_default=True)
    values.update(norms_per_layer=4, qk_norm="head")  # Gemma 2's four norms, and q/k norms
    return _global_every(c, values, 6)


def _olmo2(c: Keys) -> dict:
    values = _llama_like(c)  # norms after attention and the FFN, and over all queries and keys
    return {**values, "qk_norm": "full"}


def _phi3(c: Keys) -> dict:
    return _mistral(c)  # Phi-3 windows every layer, like Mistral (2047 tokens for mini-4k)


def _phimoe(c: Keys) -> dict:
    values = _experts(c, _mistral(c))
    values.update(norm="layer", lm_head_bias=c.flag("lm_head_bias"))
    return values


def _gpt_oss(c: Keys) -> dict:
    values = _experts(c, _llama_like(c))
    values.update(attention_sinks=True, router_bias=True, ffn_bias=True)  # experts' biases too
    return {**values, **_windows(c, values["n_layers"])}


def _llama4_text(c: Keys) -> dict:
    values = _llama_like(c)
    layers, step = values["n_layers"], c.size("interleave_moe_layer_step", 1)
    values.update(d_ff=c.size("intermediate_size_mlp"), n_shared_experts=1)
    values.update(n_dense_layers=layers - layers // step)
    # RoPE layers attend in chunks, NoPE layers (a 0 in no_rope_layers) to everything.
    rope = c.numbers("no_rope_layers")
    if not rope:
        every = c.size("no_rope_layer_interval", 4)
        rope = [int((i + 1) % every != 0) for i in range(layers)]
    chunked = c.has("attention_chunk_size")
    kinds = ["chunked_attention" if r and chunked else "full_attention" for r in rope[:layers]]
    return {**_experts(c, values), **_windows(c, layers, lambda n: kinds)}


def _granite(c: Keys) -> dict:
    return _llama_like(c)  # Llama's blocks; its multipliers scale activations, not weights


def _starcoder2(c: Keys) -> dict:
    values = _llama_like(c, tied_default=True)
    values.update(_classic(c.flag("use_bias", True)))
    return _window_on_every_layer(c, values)


def _cohere2(c: Keys) -> dict:
    values = _llama_like(c, tied_default=True)
    # Attention and the FFN run in parallel after one norm (a LayerNorm without bias).
    values.update(norms_per_layer=1)
    return _global_every(c, values, 4)


def _gpt2(c: Keys) -> dict:
    width = c.size("n_embd")
    return dict(
        vocab_size=c.size("vocab_size"),
        d_model=width,
        n_layers=c.size("n_layer"),
        n_heads=c.size("n_head"),
        d_ff=c.size("n_inner", 4 * width),
        **_classic(True),
        tied_embeddings=c.flag("tie_word_embeddings", True),
        max_positions=c.size("n_positions"),
        context_window=c.size("n_positions"),
    )


def _named(c: Keys, key: str, alias: str) -> str:
    """The name to read a field by: ``alias`` where the config sets it (transformers takes it
    for ``key``, and it wins over ``key``), else the family's own ``key``."""
    c.has(key)  # FIELDS lists the family's own name first
    return alias if c.has(alias) else key


def _gptj(c: Keys) -> dict:
    # GPTJConfig also takes Llama's names for its sizes (its attribute_map).
    width = c.size(_named(c, "n_embd", "hidden_size"))
    return dict(
        vocab_size=c.size("vocab_size"),
        d_model=width,
        n_layers=c.size(_named(c, "n_layer", "num_hidden_layers")),
        n_heads=c.size(_named(c, "n_head", "num_attention_heads")),
        d_ff=c.size("n_inner", 4 * width),
        ffn="classic",
        ffn_bias=True,  # fc_in and fc_out have biases; q, k, v and out_proj none
        norm="layer",
        norms_per_layer=1,  # attention and the MLP in parallel, after one LayerNorm (ln_1)
        tied_embeddings=c.flag("tie_word_embeddings", False),
        lm_head_bias=True,  # the output head has a bias, tied or not
        context_window=c.size(_named(c, "n_positions", "max_position_embeddings"), 2048),
    )


def _falcon(c: Keys) -> dict:
    """Falcon: 7B's multi-query attention, or 40B's and 180B's "new decoder architecture"
    with grouped keys and values; one fused query/key/value projection either way (its
    weights are those of separate ones). ALiBi's biases are computed from the positions, not
    learned, and add to the scores: nothing to count."""
    width = c.size(_named(c, "hidden_size", "n_embed"))  # FalconConfig's old name
    heads = c.size("num_attention_heads")
    new, parallel = c.flag("new_decoder_architecture"), c.flag("parallel_attn", True)
    multi_query, kv_heads = c.flag("multi_query", True), c.size("num_kv_heads", required=False)
    norms, bias = c.size("num_ln_in_parallel_attn", required=False), c.flag("bias")
    c.flag("alibi")
    values = dict(
        vocab_size=c.size("vocab_size"),
        d_model=width,
        n_layers=c.size("num_hidden_layers"),
        n_heads=heads,
        d_ff=c.size("ffn_hidden_size", 4 * width),
        **_classic(bias),
        tied_embeddings=c.flag("tie_word_embeddings", True),
        # FalconConfig's default, which Falcon-180B's config leaves to it.
        context_window=c.size("max_position_embeddings", 2048),
    )
    refuse = lambda why: ValueError(f"config of model_type 'falcon': {why}")  # noqa: E731
    if norms not in (None, 1, 2):
        raise refuse(f"num_ln_in_parallel_attn must be 1 or 2, got {norms!r}")
    if new:  # multi_query is ignored; num_kv_heads (default H) key/value heads
        if not parallel:
            raise refuse(
                "new_decoder_architecture with parallel_attn false: transformers builds its "
                "layers without the norms their forward uses, and cannot run them"
            )
        # One norm before attention and one before the MLP, unless told one is shared.
        return values | dict(n_kv_heads=kv_heads or heads, norms_per_layer=1 if norms == 1 else 2)
    if not multi_query and kv_heads not in (None, heads):
        raise refuse(
            f"num_kv_heads={kv_heads} without new_decoder_architecture or multi_query: the "
            f"fused projection makes keys and values for all {heads} heads, which transformers "
            "cannot split into that many"
        )
    if parallel and norms == 2:
        raise refuse(
            "num_ln_in_parallel_attn=2 needs new_decoder_architecture: transformers builds "
            "two norms that the old architecture's forward does not use, and cannot run it"
        )
    # Parallel attention and MLP share one norm; in sequence, each has its own.
    return values | dict(n_kv_heads=1 if multi_query else heads, norms_per_layer=1 + (not parallel))


def _deepseek(c: Keys) -> dict:
    values = _llama_like(c)
    rank = c.size("q_lora_rank", required=False)
    if rank is None and "q_lora_rank" not in c.config and not c.probe:
        raise UnknownName(
            f"config of model_type {c.model_type!r} lacks 'q_lora_rank' (null means queries "
            "are projected without compression, as in DeepSeek-V2-Lite and Moonlight)"
        )
    values.update(
        d_head=None,
        n_kv_heads=None,
        n_experts=c.size("n_routed_experts"),
        n_active_experts=c.size("num_experts_per_tok"),
        d_ff_expert=c.size("moe_intermediate_size"),
        n_shared_experts=c.count("n_shared_experts"),
        n_dense_layers=c.count("first_k_dense_replace"),
        q_lora_rank=rank,
        kv_lora_rank=c.size("kv_lora_rank"),
        qk_nope_head_dim=c.size("qk_nope_head_dim"),
        qk_rope_head_dim=c.size("qk_rope_head_dim"),
        v_head_dim=c.size("v_head_dim"),
    )
    if c.count("moe_layer_freq", 1) != 1:
        raise ArgumentError("moe_layer_freq other than 1 (MoE every n layers) is not modeled")
    # MLA heads have their own widths; d_head is the query/key width, for display only.
    values["d_head"] = values["qk_nope_head_dim"] + values["qk_rope_head_dim"]
    return values


_READERS = {
    "llama": _llama_like,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3,
    "olmo2": _olmo2,
    "phi3": _phi3,
    "phimoe": _phimoe,
    "gpt_oss": _gpt_oss,
    "llama4_text": _llama4_text,
    "gpt2": _gpt2,
    "gptj": _gptj,
    "falcon": _falcon,
    "granite": _granite,
    "starcoder2": _starcoder2,
    "cohere2": _cohere2,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
}

MODEL_TYPES = (*_READERS, *WRAPPERS)


def _fields() -> dict[str, tuple[str, ...]]:
    """The fields each family's reader reads (a reader run on a probe that answers every field)."""
    fields_of = {}
    for model_type, reader in _READERS.items():
        read = []
        for present in (True, False):  # each optional field set, then each left out
            keys = Keys({"model_type": model_type}, probe=True, present=present)
            try:
                reader(keys)
            except (KeyError, ValueError):
                pass  # a reader that refuses the probe's answers still read what came before
            read += keys.read
        # Every family reads a quantization block where a config has one
        # (``checkpoint.checkpoint_formats``).
        fields_of[model_type] = tuple(dict.fromkeys([*read, "quantization_config"]))
    return fields_of


FIELDS = _fields()
"""The ``config.json`` fields each model_type's reader reads, in order."""
