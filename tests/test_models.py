"""ModelConfig validation, the registry, and reading Hugging Face config.json files."""

import pytest

import inference_arithmetic as ia
from inference_arithmetic.models import MODEL_TYPES, ModelConfig, model, model_names

LLAMA = {
    "model_type": "llama",
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
}


def small(**changes):
    values = dict(name="small", vocab_size=100, d_model=64, n_layers=2, n_heads=4, d_ff=256)
    return ModelConfig(**{**values, **changes})


def test_defaults_follow_from_the_widths():
    m = small()
    assert (m.d_head, m.n_kv_heads) == (16, 4)  # 64 / 4 heads; MHA unless told otherwise


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(n_heads=5), "5 heads do not divide d_model=64"),
        (dict(n_kv_heads=3), "n_kv_heads=3 must divide n_heads=4"),
        (dict(d_model=0), "d_model must be positive"),
        (dict(n_layers=-2), "n_layers must be positive"),
        (dict(d_ff=256.0), "d_ff must be an integer"),
        (dict(ffn="swiglu"), "ffn must be one of"),
        (dict(norm="batch"), "norm must be one of"),
        (dict(n_experts=8, n_active_experts=9, d_ff_expert=32), "n_active_experts <= n_experts"),
        (dict(n_active_experts=2), "expert settings without n_experts"),
        (dict(kv_lora_rank=512), "needs all five sizes"),
        (dict(window=4096), "window and n_window_layers go together"),
    ],
)
def test_invalid_configs_raise_a_clear_error(changes, message):
    with pytest.raises(ValueError, match=message):
        small(**changes)


def test_heads_that_do_not_divide_are_fine_with_an_explicit_head_width():
    assert small(n_heads=5, d_head=32).d_head == 32  # Gemma-style: H * d_h != D


def test_registry_has_the_models_the_book_uses():
    expected = {
        "gpt2",
        "llama-2-7b",
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.3-70b",
        "llama-3.1-405b",
        "mistral-7b-v0.1",
        "mixtral-8x7b",
        "deepseek-v3",
    }
    assert expected <= set(model_names())


@pytest.mark.parametrize("name", model_names())
def test_every_registry_model_names_its_source(name):
    m = model(name)
    assert m.source.strip() and m.published_params.strip()
    assert m.model_type in MODEL_TYPES


def test_supported_model_types_are_all_in_the_registry():
    assert {model(name).model_type for name in model_names()} == set(MODEL_TYPES)


def test_unknown_model_lists_close_matches():
    with pytest.raises(KeyError, match="unknown model 'llama-3-70b'.*llama-3.1-70b"):
        ia.model("llama-3-70b")


def test_from_hf_config_reads_a_llama_config():
    m = ModelConfig.from_hf_config(LLAMA, name="x")
    assert (m.d_model, m.n_kv_heads, m.d_head, m.ffn, m.tied_embeddings) == (
        4096,
        8,
        128,
        "gated",
        False,
    )


def test_unsupported_model_type_is_named():
    with pytest.raises(ValueError, match="unsupported model_type 'bert'.*llama"):
        ModelConfig.from_hf_config({**LLAMA, "model_type": "bert"})


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "vocab_size"])
def test_missing_key_is_named(key):
    config = {k: v for k, v in LLAMA.items() if k != key}
    with pytest.raises(KeyError, match=f"model_type 'llama' lacks '{key}'"):
        ModelConfig.from_hf_config(config)


def test_configs_are_frozen():
    with pytest.raises(AttributeError):
        small().d_model = 128


def test_a_name_is_a_model_and_anything_else_is_refused_clearly():
    assert ia.param_count("llama-3.1-8b") == ia.param_count(ia.model("llama-3.1-8b"))
    assert ia.model(ia.model("gpt2")) is ia.model("gpt2")
    for bad in (None, 3, ["llama-3.1-8b"]):
        with pytest.raises(ia.ArgumentError, match=r"a model is a name from ia.model_names\(\)"):
            ia.model(bad)
    with pytest.raises(ia.ArgumentError, match=r"a gpu is a name from ia.gpu_names\(\)"):
        ia.gpu(None)
