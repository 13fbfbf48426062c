"""ModelConfig validation, the registry, and reading Hugging Face config.json files."""

import dataclasses
import json
from pathlib import Path

import pytest

import inference_arithmetic as ia
from inference_arithmetic.models.config import MODEL_TYPES, ModelConfig, model, model_names

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
        (dict(n_heads=5), "n_heads=5 does not divide d_model=64"),
        (dict(n_kv_heads=3), "n_kv_heads=3 must divide n_heads=4"),
        (dict(d_model=0), "d_model must be positive"),
        (dict(n_layers=-2), "n_layers must be positive"),
        (dict(d_ff=256.0), "d_ff must be an integer"),
        (dict(ffn="swiglu"), "ffn must be one of"),
        (dict(norm="batch"), "norm must be one of"),
        (dict(n_experts=8, n_active_experts=9, d_ff_expert=32), "n_active_experts <= n_experts"),
        (dict(n_active_experts=2), "expert settings without n_experts"),
        (dict(kv_lora_rank=512), "multi-head latent attention needs kv_lora_rank"),
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


def test_every_supported_model_type_has_a_real_model_or_a_family_reference():
    from tests.lib.test_families import FAMILIES

    registry = {model(name).model_type for name in model_names()}
    assert registry <= set(MODEL_TYPES) <= registry | set(FAMILIES)
    # Today's families with a real model in the registry, each exact (test_counts.py).
    assert {
        "qwen3",
        "qwen3_moe",
        "gpt_oss",
        "gemma3_text",
        "llama4_text",
        "deepseek_v2",
    } <= registry


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


# --- Reading config.json: inputs, families, strictness ------------------------------------------

QWEN3 = {
    "model_type": "qwen3",
    "vocab_size": 151936,
    "hidden_size": 4096,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 12288,
    "max_position_embeddings": 40960,
    "tie_word_embeddings": False,
}


def test_a_config_may_be_a_dict_a_path_json_text_or_a_transformers_config(tmp_path):
    import json as _json
    from types import SimpleNamespace

    folder = tmp_path / "Qwen3-8B"
    folder.mkdir()
    (folder / "config.json").write_text(_json.dumps(QWEN3))
    from_dict = ModelConfig.from_hf_config(QWEN3)
    assert from_dict.name == "qwen3"  # no name given, none in the config: the model type
    from_path = ModelConfig.from_hf_config(folder / "config.json")
    assert from_path.name == "Qwen3-8B"  # the file's folder
    assert ModelConfig.from_hf_config(str(folder / "config.json")) == from_path
    assert ModelConfig.from_hf_config(_json.dumps(QWEN3), name="mine").name == "mine"
    wrapped = SimpleNamespace(to_dict=lambda: {**QWEN3, "_name_or_path": "Qwen/Qwen3-8B"})
    assert ModelConfig.from_hf_config(wrapped).name == "Qwen3-8B"  # its _name_or_path's name
    assert ia.param_count(from_path) == ia.param_count(from_dict)
    with pytest.raises(ValueError, match="no config.json at"):
        ModelConfig.from_hf_config(tmp_path / "nothing.json")
    with pytest.raises(ValueError, match="not valid JSON"):
        ModelConfig.from_hf_config('{"model_type": ')
    with pytest.raises(ValueError, match="a config is a dict"):
        ModelConfig.from_hf_config(42)


def test_the_reader_gives_the_fields_the_model_is_built_from():
    # models.huggingface reads; ModelConfig validates what it read, and nothing else.
    from inference_arithmetic.models import checkpoint, config, huggingface

    values = huggingface.read_hf_config(QWEN3, name="mine")
    assert (values["name"], values["model_type"], values["qk_norm"]) == ("mine", "qwen3", "head")
    assert ModelConfig(**values) == ModelConfig.from_hf_config(QWEN3, name="mine")
    with pytest.raises(ValueError, match="unsupported model_type 'bert'"):
        huggingface.read_hf_config({**QWEN3, "model_type": "bert"})
    # The reader's tables, also where the page's form and readers' notes read them.
    for name in ("MODEL_TYPES", "FIELDS", "WRAPPERS", "UNMODELED"):
        assert getattr(config, name) is getattr(huggingface, name) is getattr(ia.models, name)
    assert config.QUANTIZATION is checkpoint.QUANTIZATION is ia.models.QUANTIZATION


def test_a_multimodal_wrapper_counts_its_text_model():
    text = {**QWEN3, "model_type": "gemma3_text", "sliding_window": 1024}
    text["layer_types"] = ["sliding_attention"] * 30 + ["full_attention"] * 6
    wrapper = {"model_type": "gemma3", "text_config": text, "vision_config": {"hidden_size": 1}}
    m = ModelConfig.from_hf_config(wrapper, name="g")
    assert m.model_type == "gemma3_text" and m.n_window_layers == 30 and m.window == 1024


@pytest.mark.parametrize(
    "change, message",
    [
        ({"tie_word_embeddings": "false"}, "tie_word_embeddings must be true or false"),
        ({"attention_bias": "false"}, "attention_bias must be true or false"),
        ({"head_dim": 0}, "head_dim must be a positive whole number, got 0"),
        ({"hidden_size": 4096.0}, "hidden_size must be a positive whole number"),
        ({"use_sliding_window": "false"}, "use_sliding_window must be true or false"),
        ({"layer_types": ["full_attention"] * 35}, "layer_types has 35 entries for 36 layers"),
        ({"layer_types": ["linear_attention"] * 36}, "linear_attention, which the library"),
        ({"num_nextn_predict_layers": 2}, "multi-token prediction"),
    ],
)
def test_a_field_of_the_wrong_kind_or_not_modeled_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig.from_hf_config({**QWEN3, **change})


def test_latent_attention_without_query_compression_says_what_null_means():
    config = {k: v for k, v in ia.model("deepseek-v3").sizes().items()}  # noqa: F841
    v3 = {
        "model_type": "deepseek_v3", "vocab_size": 1000, "hidden_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96,
        "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
        "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
    }  # fmt: skip
    with pytest.raises(KeyError, match="null means queries are projected without compression"):
        ModelConfig.from_hf_config(v3)
    m = ModelConfig.from_hf_config({**v3, "q_lora_rank": None})
    assert m.is_mla and m.q_lora_rank is None
    with pytest.raises(ValueError, match="missing v_head_dim"):
        ModelConfig(**{**_fields(m), "v_head_dim": None})


def _fields(m):
    import dataclasses

    return {f.name: getattr(m, f.name) for f in dataclasses.fields(m)}


def test_every_family_lists_the_fields_it_reads():
    from inference_arithmetic.models.config import FIELDS

    assert set(FIELDS) | set(ia.models.WRAPPERS) == set(MODEL_TYPES)
    assert "mlp_only_layers" in FIELDS["qwen3_moe"] and "decoder_sparse_step" in FIELDS["qwen3_moe"]
    assert "layer_types" in FIELDS["gpt_oss"] and "no_rope_layers" in FIELDS["llama4_text"]


FALCON = {
    "model_type": "falcon", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4,
}  # fmt: skip


@pytest.mark.parametrize(
    "change, kv_heads, norms",
    [
        ({}, 1, 1),  # FalconConfig's defaults: 7B's multi-query attention, parallel blocks
        ({"multi_query": False}, 4, 1),
        ({"multi_query": False, "parallel_attn": False, "alibi": True}, 4, 2),  # RW-1B
        ({"new_decoder_architecture": True, "num_kv_heads": 2}, 2, 2),  # 40B, 180B
        ({"new_decoder_architecture": True}, 4, 2),
        ({"new_decoder_architecture": True, "num_ln_in_parallel_attn": 1}, 4, 1),  # 11B
        ({"num_kv_heads": 2}, 1, 1),  # ignored by multi-query attention, as transformers does
    ],
)
def test_falcon_variants_have_their_heads_and_norms(change, kv_heads, norms):
    m = ModelConfig.from_hf_config({**FALCON, **change})
    assert (m.n_kv_heads, m.norms_per_layer) == (kv_heads, norms)
    assert (m.ffn, m.norm, m.d_ff, m.tied_embeddings, m.context_window) == (
        "classic",
        "layer",
        256,
        True,
        2048,
    )


@pytest.mark.parametrize(
    "change, message",
    [
        ({"new_decoder_architecture": True, "parallel_attn": False}, "cannot run them"),
        ({"multi_query": False, "num_kv_heads": 2}, "num_kv_heads=2 without"),
        ({"num_ln_in_parallel_attn": 2}, "num_ln_in_parallel_attn=2 needs new_decoder"),
        ({"num_ln_in_parallel_attn": 3}, "num_ln_in_parallel_attn must be 1 or 2"),
        ({"alibi": "true"}, "alibi must be true or false"),
        ({"bias": 1}, "bias must be true or false"),
    ],
)
def test_falcon_refuses_what_transformers_cannot_run(change, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig.from_hf_config({**FALCON, **change})


def test_falcon_biases_every_projection_or_none():
    m = ModelConfig.from_hf_config({**FALCON, "bias": True, "n_embed": 32})
    assert (m.qkv_bias, m.out_bias, m.ffn_bias, m.d_model) == (True, True, True, 32)


def test_gptj_reads_its_own_names_and_the_ones_transformers_maps_onto_them():
    gptj = {"model_type": "gptj", "vocab_size": 1000, "n_embd": 64, "n_layer": 2, "n_head": 4}
    m = ModelConfig.from_hf_config(gptj)
    assert (m.d_ff, m.norms_per_layer, m.lm_head_bias, m.tied_embeddings) == (256, 1, True, False)
    assert (m.qkv_bias, m.out_bias, m.ffn_bias, m.max_positions) == (False, False, True, None)
    # GPTJConfig's attribute_map: hidden_size is n_embd, and wins over it, as in transformers.
    aliased = ModelConfig.from_hf_config({**gptj, "hidden_size": 128, "n_inner": 96})
    assert (aliased.d_model, aliased.d_ff) == (128, 96)


def test_a_config_without_max_position_embeddings_takes_its_familys_default():
    # What transformers builds such a config with (LlamaConfig's 2048, MistralConfig's
    # 4096 * 32, Qwen2Config's 32768), not "no context window", which would check nothing.
    assert ModelConfig.from_hf_config(LLAMA).context_window == 2048
    assert ModelConfig.from_hf_config({**LLAMA, "model_type": "mistral"}).context_window == 131072
    assert ModelConfig.from_hf_config({**LLAMA, "model_type": "qwen2"}).context_window == 32768
    given = {**LLAMA, "max_position_embeddings": 8192}
    assert ModelConfig.from_hf_config(given).context_window == 8192
    m = ModelConfig.from_hf_config(LLAMA)
    with pytest.raises(ia.ArgumentError, match="context window"):
        ia.prefill_time(m, "h100-sxm", prompt_len=2049)


def test_a_config_is_read_from_its_folder_and_named_after_it(tmp_path):
    import json as _json

    folder = tmp_path / "Meta-Llama-3-8B"
    folder.mkdir()
    # A saved config often names where it was converted, not the model: the folder wins.
    (folder / "config.json").write_text(_json.dumps({**LLAMA, "_name_or_path": "/tmp/ckpt"}))
    from_folder = ModelConfig.from_hf_config(folder)
    assert from_folder.name == "Meta-Llama-3-8B"
    assert ModelConfig.from_hf_config(str(folder)) == from_folder
    assert ModelConfig.from_hf_config(folder / "config.json").name == "Meta-Llama-3-8B"
    # In the Hugging Face cache the folder is a commit and the file a link into blobs/.
    snapshot = tmp_path / "models--meta-llama--Llama-3.1-8B" / "snapshots" / "0e9e39f2"
    snapshot.mkdir(parents=True)
    blob = tmp_path / "blob"
    blob.write_text(_json.dumps(LLAMA))
    (snapshot / "config.json").symlink_to(blob)
    assert ModelConfig.from_hf_config(snapshot).name == "Llama-3.1-8B"
    with pytest.raises(ValueError, match="no config.json at"):
        ModelConfig.from_hf_config(tmp_path)  # a folder without one
    # Read as a dict, the last part of _name_or_path names it.
    named = {**LLAMA, "_name_or_path": "meta-llama/Meta-Llama-3-8B/"}
    assert ModelConfig.from_hf_config(named).name == "Meta-Llama-3-8B"


@pytest.mark.parametrize("field", ["tied_embeddings", "qkv_bias", "out_bias", "router_bias"])
@pytest.mark.parametrize("value", ["false", "no", 0, 1, None])
def test_a_switch_of_a_model_is_true_or_false_only(field, value):
    with pytest.raises(ia.ArgumentError) as raised:
        small(**{field: value})
    assert f"small: {field} must be True or False, got {value!r}" == str(raised.value)


def test_numpy_bools_are_switches():
    import numpy as np

    m = small(tied_embeddings=np.True_, qkv_bias=np.False_)
    assert m.tied_embeddings is True and m.qkv_bias is False
    assert m == small(tied_embeddings=True)


# Formats per group of weights, read from a config's quantization block.
def test_gpt_oss_ships_mxfp4_experts_and_bf16_attention():
    m = ia.model("gpt-oss-120b")
    assert dict(m.weight_formats) == {"layers": "bf16", "experts": "mxfp4", "vocabulary": "bf16"}
    # The model card's checkpoint of 60.8 GiB (arXiv:2508.10925, table 1), within 1%; the
    # 20b's 12.8 GiB likewise. In bf16 the 120b would take more than three times as much.
    for name, gib in (("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)):
        shipped = ia.timing.weights_per_gpu(name)
        assert shipped == pytest.approx(gib * 2**30, rel=0.01)
    assert ia.timing.weights_per_gpu(m, dtype="bf16") > 3.5 * ia.timing.weights_per_gpu(m)


def test_deepseek_v3_ships_fp8_with_block_scales_and_a_bf16_vocabulary():
    m = ia.model("deepseek-v3")
    assert dict(m.weight_formats) == {
        "layers": "fp8-block",
        "experts": "fp8-block",
        "vocabulary": "bf16",
    }


def test_a_model_without_a_quantization_block_is_bf16_throughout():
    m = ia.model("llama-3.1-8b")
    assert m.weight_formats == ()
    assert ia.timing.weights_per_gpu(m) == 2 * ia.param_count(m)


def _oss_config(**quantization):
    config = json.loads(
        (Path(ia.models.config.__file__).parent / "configs" / "gpt-oss-20b.json").read_text()
    )["config"]
    return {**config, "quantization_config": quantization}


def test_modules_not_converted_keep_the_16_bit_format():
    everything = ia.ModelConfig.from_hf_config(_oss_config(quant_method="mxfp4"))
    assert dict(everything.weight_formats)["layers"] == "mxfp4"
    kept = ia.ModelConfig.from_hf_config(
        _oss_config(quant_method="mxfp4", modules_to_not_convert=["model.layers.*.self_attn"])
    )
    assert dict(kept.weight_formats)["layers"] == "bf16"


@pytest.mark.parametrize(
    "quantization, named",
    [({"quant_method": "bitsandbytes"}, "quant_method"),
     ({"quant_method": "awq", "bits": 3, "group_size": 128}, "awq")],
)  # fmt: skip
def test_a_quantization_the_library_has_no_format_for_is_refused(quantization, named):
    with pytest.raises(ia.ArgumentError) as info:
        ia.ModelConfig.from_hf_config(_oss_config(**quantization))
    assert named in str(info.value) and "quantization_config" in str(info.value)


def test_weight_formats_are_checked_where_they_enter():
    with pytest.raises(ia.ArgumentError, match="experts"):
        dataclasses.replace(ia.model("llama-3.1-8b"), weight_formats={"experts": "mxfp4"})
    with pytest.raises(ia.UnknownName, match=r"weight_formats\['layers'\]"):
        dataclasses.replace(ia.model("llama-3.1-8b"), weight_formats={"layers": "fp5"})


def test_a_model_is_taken_as_the_command_line_takes_it(tmp_path):
    # A name, or a config.json as a dict, its JSON text, its path or its folder: the same model,
    # and every entry point takes it (calculate reads it through ia.model).
    folder = tmp_path / "my-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    read = ModelConfig.from_hf_config(LLAMA, name="my-llama")
    for given in (LLAMA, json.dumps(LLAMA), folder / "config.json", folder, str(folder)):
        got = model(given)
        assert got.sizes() == read.sizes(), type(given)
    assert model(folder).name == "my-llama"
    short = dict(batch=8, prompt_len=1024, output_len=256)  # within its 2,048-token window
    by_path = ia.calculate(str(folder), "h100-sxm", **short)["tpot"]
    assert by_path == ia.calculate(read, "h100-sxm", **short)["tpot"]
    assert model("llama-3.1-8b") is model("llama-3.1-8b")  # a registry name first


def test_an_unknown_model_or_gpu_says_how_to_pass_ones_own():
    with pytest.raises(KeyError, match=r"close matches: llama-3\.1-8b.*config\.json"):
        model("llama-3-8b")
    with pytest.raises(KeyError, match=r"'zzzz'; ia\.model_names\(\) lists them all; a model of"):
        model("zzzz")  # no close match: not the whole registry
    with pytest.raises(KeyError, match=r"'zzzz'; ia\.gpu_names\(\) lists them all; .*ia\.GPU\("):
        ia.gpu("zzzz")


def test_a_gpu_is_taken_as_the_command_line_takes_it(tmp_path):
    figures = dict(name="mine", peak_flop_rate={"bf16": 155e12}, memory_bandwidth=768e9,
                   memory_bytes=48e9)  # fmt: skip
    (tmp_path / "mine.json").write_text(json.dumps(figures))
    made = ia.GPU(**figures)
    for given in (figures, json.dumps(figures), str(tmp_path / "mine.json")):
        assert ia.gpu(given) == made
    assert ia.calculate("llama-3.1-8b", figures, batch=8)["tpot"] > 0
    with pytest.raises(ia.ArgumentError, match="gpu: .*missing .*'memory_bytes'"):
        ia.gpu({k: v for k, v in figures.items() if k != "memory_bytes"})
    with pytest.raises(ia.ArgumentError, match="gpu: not valid JSON"):
        ia.gpu("{not json")


def _config_of(name):
    """A registry model's config.json, as a dict."""
    path = Path(ia.models.config.__file__).parent / "configs" / f"{name}.json"
    return json.loads(path.read_text())["config"]


# A config is checked, not silently taken (issue 36): its weights' format, its constants, its
# rotary scaling, and a rule of the model that its fields break, named as the config names it.
def test_a_float32_checkpoint_counts_four_bytes_a_weight():
    m = ModelConfig.from_hf_config({**LLAMA, "torch_dtype": "float32"})
    assert ia.weight_formats(m) == {"layers": "fp32", "experts": "bf16", "vocabulary": "fp32"}
    assert ia.timing.weights_per_gpu(m) == 4 * ia.param_count(m)
    assert ModelConfig.from_hf_config({**LLAMA, "dtype": "float32"}) == m  # transformers 4.56+
    for sixteen in ("bfloat16", "float16", None):  # two bytes, as every registry model reads
        same = ModelConfig.from_hf_config({**LLAMA, "torch_dtype": sixteen})
        assert same.weight_formats == () and ia.timing.weights_per_gpu(same) == 2 * 8030261248
    moe = _config_of("mixtral-8x7b")
    fp32 = ModelConfig.from_hf_config({**moe, "torch_dtype": "float32"})
    assert set(ia.weight_formats(fp32).values()) == {"fp32"}  # the experts too


def test_a_quantized_checkpoint_keeps_its_unconverted_weights_in_its_own_format():
    config = {**_oss_config(quant_method="mxfp4"), "torch_dtype": "float32"}
    formats = dict(ModelConfig.from_hf_config(config).weight_formats)
    assert formats == {"vocabulary": "fp32", "layers": "mxfp4", "experts": "mxfp4"}


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"torch_dtype": "banana"},
            r"torch_dtype must be one of 'bfloat16', 'float16', 'float32' .*got 'banana'",
        ),
        ({"dtype": "float64"}, r"dtype must be one of 'bfloat16'.*got 'float64'"),
        (
            {"dtype": "float32", "torch_dtype": "bfloat16"},
            r"dtype='float32' and torch_dtype='bfloat16' disagree: give one",
        ),
        (
            {"rope_scaling": {"type": "weird"}},
            r"rope_scaling.rope_type must be one of 'default', .*'yarn'.*got 'weird'",
        ),
        ({"rope_scaling": {"rope_type": "weird", "factor": 8.0}}, r"rope_scaling.*got 'weird'"),
        ({"rope_scaling": {"factor": 8.0}}, r"rope_scaling.rope_type must be .*got None"),
        ({"rope_scaling": "yarn"}, r"rope_scaling must be an object with a rope_type"),
        (
            {"rope_scaling": {"rope_type": "linear", "factor": "x"}},
            r"rope_scaling.factor must be a positive number, got 'x'",
        ),
        ({"rope_parameters": {"rope_type": "weird"}}, r"rope_parameters.rope_type"),
        ({"rms_norm_eps": "x"}, r"rms_norm_eps must be a positive number, got 'x'"),
        ({"rms_norm_eps": 0}, r"rms_norm_eps must be a positive number, got 0"),
        ({"rms_norm_eps": True}, r"rms_norm_eps must be a positive number, got True"),
        ({"rope_theta": "500000"}, r"rope_theta must be a positive number, got '500000'"),
    ],
)
def test_a_setting_that_counts_nothing_is_still_checked(change, message):
    with pytest.raises(ia.ArgumentError, match=r"config of model_type 'llama': " + message):
        ModelConfig.from_hf_config({**LLAMA, **change})


def test_the_settings_it_checks_are_valid_in_every_registry_model_and_not_read():
    from inference_arithmetic.models.checkpoint import CONSTANTS
    from inference_arithmetic.models.huggingface import FIELDS

    for family, fields in FIELDS.items():  # checked, never read: no count depends on them
        assert not {"torch_dtype", "dtype", "rope_scaling", *CONSTANTS} & set(fields), family
    gpt2 = _config_of("gpt2")
    with pytest.raises(ia.ArgumentError, match="layer_norm_epsilon must be a positive number"):
        ModelConfig.from_hf_config({**gpt2, "layer_norm_epsilon": "1e-5"})
    for typed in ({"type": "yarn", "factor": 4.0}, {"rope_type": "llama3", "factor": 8}):
        assert ModelConfig.from_hf_config({**LLAMA, "rope_scaling": typed}) == model(LLAMA)


def test_a_rule_the_fields_break_is_named_as_the_config_names_it():
    moe = _config_of("mixtral-8x7b")
    with pytest.raises(ia.ArgumentError) as info:
        ModelConfig.from_hf_config({**moe, "num_experts_per_tok": 9})
    assert "n_active_experts <= n_experts" in str(info.value)
    assert "num_experts_per_tok=9 (n_active_experts)" in str(info.value)
    assert "num_local_experts=8 (n_experts)" in str(info.value)
    with pytest.raises(ia.ArgumentError, match=r"in the config: .*num_key_value_heads=5 \(n_kv"):
        ModelConfig.from_hf_config({**LLAMA, "num_key_value_heads": 5})
    with pytest.raises(ia.ArgumentError, match=r"config: .*num_attention_heads=3 \(n_heads\)"):
        ModelConfig.from_hf_config({**LLAMA, "num_attention_heads": 3})
    values = ia.models.read_hf_config(LLAMA)
    assert values["n_layers"].field == "num_hidden_layers"
    assert type(ModelConfig(**values).n_layers) is int  # the model keeps plain ints
    # A default is no field's value: multi-head attention's n_kv_heads is not num_attention_heads.
    mha = ia.models.read_hf_config({k: v for k, v in LLAMA.items() if k != "num_key_value_heads"})
    assert mha["n_kv_heads"] == 32 and not isinstance(mha["n_kv_heads"], ia.models.Read)


def test_a_multimodal_wrapper_s_format_holds_for_its_text_model():
    text = {k: v for k, v in LLAMA.items() if k != "model_type"}
    wrapper = {"model_type": "mistral3", "text_config": text, "torch_dtype": "float32"}
    assert ModelConfig.from_hf_config(wrapper).weight_formats[0] == ("layers", "fp32")
    with pytest.raises(ia.ArgumentError, match="torch_dtype must be one of"):
        ModelConfig.from_hf_config({**wrapper, "torch_dtype": "banana"})


def test_a_gpu_file_is_a_path_of_any_name(tmp_path):
    figures = {"name": "mine", "peak_flop_rate": {"bf16": 155e12}, "memory_bandwidth": 768e9}
    figures["memory_bytes"] = 48e9
    (tmp_path / "mine.gpu").write_text(json.dumps(figures))
    for given in (tmp_path / "mine.gpu", str(tmp_path / "mine.gpu")):
        assert ia.gpu(given) == ia.GPU(**figures)
    with pytest.raises(ia.ArgumentError, match=r"gpu: no file at '.*absent\.json'; .*ia\.GPU\("):
        ia.gpu(tmp_path / "absent.json")
    with pytest.raises(ia.UnknownName, match="unknown gpu"):  # text that is no file: a name
        ia.gpu(str(tmp_path / "absent.json"))


def test_an_unknown_name_gets_a_few_close_matches_and_a_non_name_the_ways_to_pass_one():
    for asked, names in ((model, model_names()), (ia.gpu, ia.gpu_names())):
        with pytest.raises(ia.UnknownName) as info:
            asked("h100-llama-3")
        listed = [n for n in names if n in str(info.value)]
        assert 1 <= len(listed) <= 3, listed
    with pytest.raises(ia.ArgumentError, match=r"got 42; .*ModelConfig\.from_hf_config"):
        model(42)
    with pytest.raises(ia.ArgumentError, match=r"got 42; .*ia\.GPU\("):
        ia.gpu(42)
