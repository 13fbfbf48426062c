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


@pytest.mark.parametrize("dtype", list(DTYPE_BYTES))
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
