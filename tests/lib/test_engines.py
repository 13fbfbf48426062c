"""The engine registry: every property sourced, every fitted one said so, bad entries refused."""

import dataclasses

import pytest

import inference_arithmetic as ia
from inference_arithmetic.hardware import engines

NAMES = ia.engine_names()


@pytest.mark.parametrize("name", NAMES)
def test_every_property_has_its_source(name):
    e = ia.engine(name)
    for prop in engines.PROPERTIES:
        if getattr(e, prop) is not None:
            assert e.sources[prop].strip(), prop
    for prop in e.fitted:
        assert "fit" in e.sources[prop].lower(), prop  # a fitted one names its fit


def test_the_engines_of_the_fit_set_are_there():
    assert {"vllm", "tensorrt-llm"} <= set(NAMES)
    assert ia.engine("vllm").batching == "continuous" and ia.engine("vllm").token_budget
    assert ia.engine("tensorrt-llm").batching == "static"
    assert ia.engine("tensorrt-llm").token_budget is None


def test_an_unknown_engine_names_close_matches():
    with pytest.raises(KeyError, match="close matches: vllm"):
        ia.engine("vlm")
    assert ia.engine(ia.engine("vllm")) is ia.engine("vllm")


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(kv_shared="yes"), "kv_shared must be true or false"),
        (dict(kernel_overhead=-1e-6), "kernel_overhead must be from 0 to 1 seconds"),
        (dict(step_overhead=2.0), "step_overhead must be from 0 to 1 seconds"),
        (dict(allreduce="mpi"), "allreduce must be one of"),
        (dict(batching="dynamic"), "batching must be one of"),
        (dict(token_budget=None), "a continuous engine, and only one, has a token_budget"),
        (dict(max_num_seqs=0), "max_num_seqs must be from 1 up"),
        (dict(fitted=("speed",)), "fitted names unknown properties"),
        (dict(sources={}), "no source for"),
    ],
)
def test_a_bad_entry_is_refused(change, message):
    e = ia.engine("vllm")
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(e, **change)
