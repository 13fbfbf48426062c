"""Every config family, exact against the reference implementation on small synthetic configs
(lib/inference_arithmetic/models/reference/families.json, made by tests/reference/families.py): the
parameters, the KV cache, and the FLOP counter's prefill and decode."""

import json
from importlib import resources

import pytest

import inference_arithmetic as ia
from inference_arithmetic.models.config import MODEL_TYPES, ModelConfig
from tests.lib.test_counts import cached_heads, every_expert

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
    heads = cached_heads(arch, _text(measured["config"]))
    for tokens, nbytes in measured["kv_cache_bytes"].items():
        assert (
            ia.kv_cache_bytes(arch, batch=1, context_len=int(tokens)) * heads // arch.n_kv_heads
            == nbytes
        )
    extra = every_expert
    for tokens, flops in measured["prefill_flops"].items():
        assert (
            ia.forward_flops(arch, batch=1, seq_len=int(tokens)) + extra(arch, int(tokens)) == flops
        )
    for context, flops in measured["decode_flops"].items():
        assert ia.decode_flops(arch, batch=1, context_len=int(context)) + extra(arch, 1) == flops


def _text(config):
    """The part of a config the family's reader reads (a wrapper's text_config)."""
    return config["text_config"] if "text_config" in config else config


# Families with their own names for the sizes (GPT-J's, as GPT-2's).
OWN_NAMES = {
    "gptj": {
        "hidden_size": "n_embd",
        "num_hidden_layers": "n_layer",
        "num_attention_heads": "n_head",
    }
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_refuses_a_field_of_the_wrong_kind(family):
    config = FAMILIES[family]["config"]
    name = lambda key: OWN_NAMES.get(family, {}).get(key, key)  # noqa: E731
    for key, bad, says in (
        ("hidden_size", 0, "{} must be a positive whole number, got 0"),
        ("num_hidden_layers", "36", "{} must be a positive whole number"),
        ("tie_word_embeddings", "false", "{} must be true or false"),
    ):
        broken = json.loads(json.dumps(config))
        _text(broken)[name(key)] = bad
        with pytest.raises(ValueError, match=says.format(name(key))):
            ModelConfig.from_hf_config(broken)
    missing = json.loads(json.dumps(config))
    del _text(missing)[name("num_attention_heads")]
    with pytest.raises(KeyError, match=f"lacks '{name('num_attention_heads')}'"):
        ModelConfig.from_hf_config(missing)
