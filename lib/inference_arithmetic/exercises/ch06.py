"""Chapter 06 (the KV cache): one conversation's cache under three kinds of attention, the
conversations that fit beside the weights, an int8 cache, and a sliding window's saving.

The inputs are the chapter's: conversations of 8,192 tokens, in bf16 unless an exercise says
otherwise; Llama 3.1 70B (64 query heads, 8 key/value heads), Llama 3.1 8B and Gemma 2 9B
(every other layer windowed); a GPU of 80 GB, of which a serving engine fills
``ia.timing.DEFAULT_MEMORY_UTILIZATION`` (90%, vLLM's default). The cache holds
2 b L H_kv d_h bytes per token (``formulas.kv_cache``); what fits is the budget less the
weights, over one conversation's cache.
"""

import functools

import inference_arithmetic as ia
from inference_arithmetic.exercises import EXACT, Part, register
from inference_arithmetic.formulas import kv_cache

CONTEXT = 8192  # tokens of one conversation
LARGE, SMALL, WINDOWED = "llama-3.1-70b", "llama-3.1-8b", "gemma-2-9b"
GPU_MEMORY = 80e9  # bytes
UTILIZATION = ia.timing.DEFAULT_MEMORY_UTILIZATION


def _cache(model, dtype="bf16", **changes):
    """Bytes of one conversation's cache; ``changes``: sizes other than the model's."""
    m = ia.model(model)
    if not changes:
        return ia.kv_cache_bytes(m, batch=1, context_len=CONTEXT, dtype=dtype)
    values = {**m.sizes(), "batch": 1, "context_len": CONTEXT, **changes}
    return ia.numeric(kv_cache.kv_cache_bytes(m)).from_values(
        {**values, "bytes_per_number": ia.bytes_per_number(dtype)}
    )


_large = ia.model(LARGE)
_heads, _kv_heads, _layers = _large.n_heads, _large.n_kv_heads, _large.n_layers
_BOTH = {0.5: "a token keeps a key and a value in every layer: did you count both?"}
_EACH_LAYER = {1 / _layers: f"every one of the {_layers} layers keeps its own keys and values"}

register(
    "06-kv-cache",
    "ex-kv-mqa",
    Part(
        "gqa_cache",
        lambda: _cache(LARGE),
        unit="bytes",
        hints={
            **_BOTH,
            **_EACH_LAYER,
            _heads / _kv_heads: f"only the {_kv_heads} key/value heads keep keys and values, "
            f"not the {_heads} query heads",
        },
    ),
    Part(
        "mha_cache",
        lambda: _cache(LARGE, n_kv_heads=_heads),
        unit="bytes",
        hints={
            **_BOTH,
            **_EACH_LAYER,
            _kv_heads / _heads: f"multi-head attention keeps a key and a value for each of the "
            f"{_heads} query heads",
        },
    ),
    Part(
        "mqa_cache",
        lambda: _cache(LARGE, n_kv_heads=1),
        unit="bytes",
        hints={
            **_BOTH,
            **_EACH_LAYER,
            _kv_heads: "multi-query attention keeps one key and one value for all the heads",
        },
    ),
)


def _conversations(model, dtype, cache_dtype, utilization=UTILIZATION):
    """Conversations whose cache fits beside the weights in ``utilization`` of the memory. The
    exercise leaves out the activations' reserve of chapter 08 (``ia.max_batch`` keeps it)."""
    weights = ia.param_count(model) * ia.bytes_per_number(dtype)
    return int((utilization * GPU_MEMORY - weights) // _cache(model, cache_dtype))


def _fit_hints(model, dtype, cache_dtype, other_cache=None):
    """Hints for the conversations that fit: the ratio each mistake gives to the right count."""

    def hints():
        right = _conversations(model, dtype, cache_dtype)
        weights = ia.param_count(model) * ia.bytes_per_number(dtype)
        budget, per_conversation = UTILIZATION * GPU_MEMORY, _cache(model, cache_dtype)
        wrong = {
            _conversations(model, dtype, cache_dtype, utilization=1.0): "the engine fills "
            f"{UTILIZATION:.0%} of the memory, not all of it",
            budget // per_conversation: "the weights take their share of the budget too",
            (budget - weights) // (per_conversation / 2): "a token keeps a key and a value",
        }
        if other_cache:
            wrong[_conversations(model, dtype, other_cache)] = (
                f"the cache is in {cache_dtype}, {ia.bytes_per_number(cache_dtype)} byte per "
                f"number, not {ia.bytes_per_number(other_cache)}"
            )
        return {count / right: hint for count, hint in wrong.items()}

    return hints


def _fitting(name, model, dtype, cache_dtype, other_cache=None):
    """The part of an exercise that counts the conversations that fit."""
    count = functools.partial(_conversations, model, dtype, cache_dtype)
    hints = _fit_hints(model, dtype, cache_dtype, other_cache=other_cache)
    return Part(name, count, unit="conversations", tolerance=EXACT, hints=hints)


register("06-kv-cache", "ex-kv-fit", _fitting("conversations", SMALL, "bf16", "bf16"))
register(
    "06-kv-cache",
    "ex-kv-int8",
    _fitting("conversations_8b", SMALL, "bf16", "int8", other_cache="bf16"),
    _fitting("conversations_70b", LARGE, "fp8", "int8", other_cache="bf16"),
)

_windowed = ia.model(WINDOWED)


def _window_saving():
    return _cache(WINDOWED, n_window_layers=0) - _cache(WINDOWED)


register(
    "06-kv-cache",
    "ex-kv-window",
    Part(
        "saved",
        _window_saving,
        unit="bytes",
        hints=(
            lambda: {
                _windowed.n_layers / _windowed.n_window_layers: f"only "
                f"{_windowed.n_window_layers} of the {_windowed.n_layers} layers have a window",
                _cache(WINDOWED) / _window_saving(): "that is the windowed cache; the question "
                "asks how much less it is than the cache with every layer global",
            }
        ),
    ),
)
