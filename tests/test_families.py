"""Every config family, exact against the reference implementation on small synthetic configs
(lib/inference_arithmetic/models/reference/families.json, made by tests/reference/families.py): the
parameters, the KV cache, and the FLOP counter's prefill and decode."""

import json
from importlib import resources

import pytest

import inference_arithmetic as ia
from inference_arithmetic.models.config import MODEL_TYPES, ModelConfig
from tests.test_counts import every_expert

FAMILIES = json.loads(
    resources.files("inference_arithmetic.models.reference").joinpath("families.json").read_text()
)["families"]


def test_every_model_type_has_a_reference():
    assert set(FAMILIES) | {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "gemma2",
        "phi3",
        "gpt2",
    } >= set(MODEL_TYPES)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_is_exact(family):
    measured = FAMILIES[family]
    arch = ModelConfig.from_hf_config(measured["config"], name=family)
    assert ia.param_count(arch) == measured["params"]
    for tokens, nbytes in measured["kv_cache_bytes"].items():
        assert ia.kv_cache_bytes(arch, 1, int(tokens)) == nbytes
    extra = every_expert
    for tokens, flops in measured["prefill_flops"].items():
        assert ia.forward_flops(arch, 1, int(tokens)) + extra(arch, int(tokens)) == flops
    for context, flops in measured["decode_flops"].items():
        assert ia.decode_flops(arch, 1, int(context)) + extra(arch, 1) == flops


def _text(config):
    """The part of a config the family's reader reads (a wrapper's text_config)."""
    return config["text_config"] if "text_config" in config else config


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_refuses_a_field_of_the_wrong_kind(family):
    config = FAMILIES[family]["config"]
    for key, bad, says in (
        ("hidden_size", 0, "hidden_size must be a positive whole number, got 0"),
        ("num_hidden_layers", "36", "num_hidden_layers must be a positive whole number"),
        ("tie_word_embeddings", "false", "tie_word_embeddings must be true or false"),
    ):
        broken = json.loads(json.dumps(config))
        _text(broken)[key] = bad
        with pytest.raises(ValueError, match=says):
            ModelConfig.from_hf_config(broken)
    missing = json.loads(json.dumps(config))
    del _text(missing)["num_attention_heads"]
    with pytest.raises(KeyError, match="lacks 'num_attention_heads'"):
        ModelConfig.from_hf_config(missing)
