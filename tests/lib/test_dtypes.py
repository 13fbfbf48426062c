"""Bytes per number by dtype name."""

import re

import numpy as np
import pytest

import inference_arithmetic as ia
from inference_arithmetic.core.dtypes import DTYPE_BYTES, bytes_per_number
from inference_arithmetic.core.symbols import D, b

EXPECTED = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}


@pytest.mark.parametrize("dtype, nbytes", EXPECTED.items())
def test_known_dtypes(dtype, nbytes):
    assert bytes_per_number(dtype) == nbytes
    assert ia.bytes_per_number(dtype) == nbytes
    assert ia.DTYPE_BYTES[dtype] == nbytes


PLAIN = [name for name in DTYPE_BYTES if re.fullmatch(r"(fp|bf|int)\d+", name)]


@pytest.mark.parametrize("dtype", PLAIN)
def test_bytes_are_the_bits_in_the_name_over_eight(dtype):
    bits = int(re.search(r"\d+$", dtype).group())
    assert bytes_per_number(dtype) == bits / 8


@pytest.mark.parametrize(
    "dtype, numpy_dtype", [("fp32", np.float32), ("fp16", np.float16), ("int8", np.int8)]
)
def test_bytes_match_numpy_itemsize(dtype, numpy_dtype):
    assert bytes_per_number(dtype) == np.dtype(numpy_dtype).itemsize


@pytest.mark.parametrize("dtype", ["bfloat", "BF16", "fp64", "", "int"])
def test_unknown_dtype_raises_key_error_listing_known_ones(dtype):
    with pytest.raises(ia.UnknownName) as info:
        bytes_per_number(dtype)
    message = str(info.value)
    assert repr(dtype) in message
    for known in DTYPE_BYTES:
        assert re.search(rf"\b{known}\b", message), known


@pytest.mark.parametrize("dtype", [None, 2, ["bf16"]])
def test_non_string_raises_key_error(dtype):
    with pytest.raises(KeyError) as info:
        bytes_per_number(dtype)
    assert str(info.value).startswith("dtype must be one of 'fp32', 'fp16', 'bf16'")


ALIASED = [("bfloat16", "bf16"), ("float16", "fp16"), ("float32", "fp32"), ("float8_e4m3fn", "fp8")]


@pytest.mark.parametrize("alias, name", ALIASED)
def test_hugging_faces_spellings_are_the_same_formats(alias, name):
    assert bytes_per_number(alias) == bytes_per_number(name)
    r = ia.calculate("llama-3.1-8b", "h100-sxm", dtype=alias, cache_dtype=alias)
    assert r["dtype"] == r["cache_dtype"] == name
    assert r == ia.calculate("llama-3.1-8b", "h100-sxm", dtype=name, cache_dtype=name)


@pytest.mark.parametrize("dtype", list(DTYPE_BYTES))
def test_every_dtype_is_a_valid_bytes_per_number(dtype):
    # int4's 0.5 is fractional: the symbol b must accept it.
    value = bytes_per_number(dtype)
    assert float(ia.numeric(b * D)(bytes_per_number=value, d_model=8)) == 8 * value


# Formats as they ship: a number's bits are its value's and its share of its block's scale.
SHIPPED_BITS = {
    "mxfp4": 4 + 8 / 32,  # OCP MX: 32 E2M1 values, one E8M0 scale
    "nvfp4": 4 + 8 / 16,  # NVFP4: 16 E2M1 values, one E4M3 scale
    "int4-g128": 4 + (16 + 4) / 128,  # AWQ/GPTQ: fp16 scale and 4-bit zero per 128
    "fp8-block": 8 + 32 / (128 * 128),  # DeepSeek-V3: one fp32 scale per 128 x 128
    "q8_0": (2 + 32) * 8 / 32,  # ggml block_q8_0: 34 bytes per 32 weights
    "q4_0": (2 + 16) * 8 / 32,  # ggml block_q4_0: 18 bytes per 32 weights
}


@pytest.mark.parametrize("dtype, bits", SHIPPED_BITS.items())
def test_block_scaled_formats_count_their_scales(dtype, bits):
    assert bytes_per_number(dtype) == pytest.approx(bits / 8, rel=1e-12)
    assert bytes_per_number(dtype) > ia.FORMATS[dtype].value_bits / 8


@pytest.mark.parametrize("name", list(ia.FORMATS))
def test_every_format_names_its_source_and_a_rate(name):
    f = ia.FORMATS[name]
    assert len(f.source) > 10
    assert f.compute in ia.dtypes.COMPUTE_FORMATS


def test_fp4_is_nvfp4_and_computes_at_the_fp4_rate():
    assert ia.dtypes.dtype_name("fp4") == "nvfp4"
    assert ia.dtypes.compute_format("fp4") == ia.dtypes.compute_format("mxfp4") == "fp4"
    r = ia.calculate("llama-3.1-8b", "b200", dtype="fp4")
    assert (r["dtype"], r["compute_dtype"]) == ("nvfp4", "fp4")


@pytest.mark.parametrize(
    "weights, compute, path",
    [("bf16", "bf16", "W16A16"), ("int4-g128", "bf16", "W4A16"), ("fp8", "fp8", "W8A8"),
     ("nvfp4", "fp4", "W4A4"), ("q4_k_m", "bf16", "W4A16")],
)  # fmt: skip
def test_compute_paths_are_named_by_their_bits(weights, compute, path):
    assert ia.compute_path(weights, compute) == path


def test_each_path_runs_at_the_rate_it_uses():
    # A prefill is compute-bound: W4A4 at B200's fp4 rate beats W4A16 at its bf16 rate by
    # about the ratio of the rates; both read the same bytes.
    one = dict(batch=1, prompt_len=8192, step="roofline")
    w4a16 = ia.prefill_time("llama-3.1-8b", "b200", dtype="nvfp4", compute_dtype="bf16", **one)
    w4a4 = ia.prefill_time("llama-3.1-8b", "b200", dtype="nvfp4", **one)
    rates = ia.gpu("b200").flop_rate("fp4") / ia.gpu("b200").flop_rate("bf16")
    assert rates * 0.7 < w4a16 / w4a4 <= rates


def test_w4a4_is_refused_where_the_gpu_has_no_fp4_rate():
    with pytest.raises(ia.UnknownName) as info:
        ia.calculate("llama-3.1-8b", "h100-sxm", dtype="nvfp4")
    message = str(info.value)
    assert "no peak FLOP rate for fp4" in message and "Give compute_dtype, one of those" in message
    assert "it has: " in message and "bf16" in message.split("it has: ")[1]
    # The W4A16 path it names works.
    assert ia.calculate("llama-3.1-8b", "h100-sxm", dtype="nvfp4", compute_dtype="bf16")


def test_the_refusal_of_a_compute_format_names_only_the_gpus_own():
    # A GGUF type computes at bf16 by default; an Apple GPU has fp16 and fp32 only, and the
    # message offers those, not bf16 (which it said before).
    with pytest.raises(ia.UnknownName) as info:
        ia.calculate("qwen3-8b", "apple-m3-max", dtype="q4_k_m")
    rates = str(info.value).split("it has: ")[1].split(".")[0]
    assert set(rates.split(", ")) == set(ia.gpu("apple-m3-max").peak_flop_rate)
    assert "bf16" not in rates and "compute_dtype='bf16'" not in str(info.value)
    given = dict(dtype="q4_k_m", compute_dtype=rates.split(", ")[-1])
    assert ia.calculate("qwen3-8b", "apple-m3-max", **given)["tpot"] > 0
    # It suggests the one to take, derived from the GPU's rates: its fastest of 16 bits or
    # more, of equal rates the narrowest (fp16 on Apple's GPUs, where fp32 runs at its rate).
    assert "fp16 is its fastest of 16 bits or more" in str(info.value)
    for name in ia.gpu_names():
        g = ia.gpu(name)
        fastest = ia.dtypes.fastest_wide(g.peak_flop_rate)
        wide = {d: r for d, r in g.peak_flop_rate.items() if ia.DTYPE_BYTES.get(d, 0) >= 2}
        assert fastest in wide and wide[fastest] == max(wide.values()), name
    assert ia.dtypes.fastest_wide(ia.gpu("apple-m3-max").peak_flop_rate) == "fp16"


@pytest.mark.parametrize("dtype", ["q4_k_m", "q5_k_m", "q6_k", "int4-g128", "fp8-block"])
def test_a_kv_cache_in_a_weights_only_format_is_refused_by_name(dtype):
    # A whole-model GGUF mix's bits are measured over weights (4.84 for q4_k_m): a cache in it
    # would be fractional bytes no engine stores.
    arch = ia.model("llama-3.1-8b")
    with pytest.raises(ia.ArgumentError, match=f"dtype {dtype!r} is a format of weights only"):
        ia.kv_cache_bytes(arch, batch=1, context_len=1024, dtype=dtype)
    with pytest.raises(ia.ArgumentError, match=f"cache_dtype {dtype!r} is a format of weights"):
        ia.calculate(arch, "h100-sxm", cache_dtype=dtype)
    assert ia.calculate(arch, "h100-sxm", dtype=dtype)["tpot"] > 0  # weights in it: as before


def test_llama_cpps_cache_types_are_cache_formats():
    from inference_arithmetic.core.dtypes import CACHE_FORMATS

    assert {"q8_0", "q4_0", "fp8", "bf16", "nvfp4"} <= set(CACHE_FORMATS)
    arch = ia.model("llama-3.1-8b")
    assert (
        ia.kv_cache_bytes(arch, batch=1, context_len=1024, dtype="q8_0")
        == ia.kv_cache_bytes(arch, batch=1, context_len=1024) * 17 / 32
    )
