"""The engine registry: every property sourced, every fitted one said so, bad entries refused."""

import dataclasses

import pytest

import inference_arithmetic as ia
from inference_arithmetic.hardware import engines
from inference_arithmetic.validation import published

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
    assert {"vllm@0.7", "tensorrt-llm@0.9", "tensorrt-llm@0.21"} <= set(NAMES)
    assert ia.engine("vllm@0.7").batching == "continuous" and ia.engine("vllm@0.7").token_budget
    assert ia.engine("tensorrt-llm@0.9").batching == "static"
    assert ia.engine("tensorrt-llm@0.9").token_budget is None


def test_every_engine_is_versioned_and_a_family_means_its_newest():
    assert all("@" in name for name in NAMES)
    assert ia.engine_versions("vllm") == ["vllm@0.7", "vllm@0.11"]  # 0.11 after 0.7
    assert ia.engine_versions("vllm@0.7") == ia.engine_versions("vllm")
    assert ia.engine_versions("tensorrt-llm") == ["tensorrt-llm@0.9", "tensorrt-llm@0.21"]
    for name in NAMES:
        family = engines.family(name)
        assert ia.engine(family) is ia.engine(ia.engine_versions(family)[-1])
    assert ia.engine("vllm").name == "vllm@0.11"
    # The default is the family's name, so its newest version: the steady state's percentiles
    # are held to the simulation at its step and at 0.7's (scenario.DEFAULT_ENGINE).
    assert ia.scenario.DEFAULT_ENGINE == "vllm"
    assert ia.Scenario("llama-3.1-8b", "h100-sxm").engine.name == "vllm@0.11"


def test_vllm_011_batches_by_the_gpu():
    e = ia.engine("vllm@0.11")
    large = {"token_budget": 8192, "max_num_seqs": 1024}
    other = {"token_budget": 2048, "max_num_seqs": 256}
    for name in ("h100-sxm", "h200", "b200", "mi300x"):  # 70 GiB or more, not an A100
        assert e.batch(ia.gpu(name)) == large, name
    for name in ("a100-80gb", "a100-40gb", "l40s", "a10g", "rtx-4090"):
        assert e.batch(ia.gpu(name)) == other, name
    resolved = e.on(ia.gpu("h100-sxm"))
    assert (resolved.token_budget, resolved.max_num_seqs, resolved.large_gpu) == (8192, 1024, None)
    assert ia.engine("vllm@0.7").on(ia.gpu("h100-sxm")) is ia.engine("vllm@0.7")
    assert ia.engine("vllm@0.7").batch(ia.gpu("h100-sxm")) == {
        "token_budget": 512,
        "max_num_seqs": 256,
    }


def test_an_unknown_engine_names_close_matches():
    with pytest.raises(KeyError, match="close matches: vllm"):
        ia.engine("vlm")
    with pytest.raises(KeyError, match="close matches: vllm@0.7"):
        ia.engine("vllm@0.8")
    with pytest.raises(KeyError):
        ia.engine_versions("vlm")
    assert ia.engine(ia.engine("vllm")) is ia.engine("vllm")


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(kv_shared="yes"), "kv_shared must be true or false"),
        (dict(kernel_overhead=-1e-6), "kernel_overhead must be from 0 to 1 seconds"),
        (dict(step_overhead=2.0), "step_overhead must be from 0 to 1 seconds"),
        (dict(allreduce="mpi"), "allreduce must be one of"),
        (dict(eager="sometimes"), "eager must be one of"),
        (dict(host_op_cost=-1e-6), "host_op_cost must be from 0 to 1 seconds"),
        (dict(batching="dynamic"), "batching must be one of"),
        (dict(token_budget=None), "a continuous engine, and only one, has a token_budget"),
        (dict(max_num_seqs=0), "max_num_seqs must be from 1 up"),
        (dict(fitted=("speed",)), "fitted names unknown properties"),
        (dict(sources={}), "no source for"),
        (dict(large_gpu=dict(memory=0, excluded=(), token_budget=1, max_num_seqs=1)), "memory"),
        (dict(large_gpu=dict(memory=1, excluded=("",), token_budget=1, max_num_seqs=1)), "names"),
        (dict(large_gpu="big"), "large_gpu must be"),
        (dict(large_gpu=None, batching="static", token_budget=None), None),
    ],
)
def test_a_bad_entry_is_refused(change, message):
    e = ia.engine("vllm@0.11")
    if message is None:  # a static engine without large_gpu is fine; with one, refused
        dataclasses.replace(e, **change)
        with pytest.raises(ValueError, match="only a continuous engine has a large_gpu"):
            dataclasses.replace(e, **{**change, "large_gpu": e.large_gpu})
        return
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(e, **change)


def test_which_steps_each_engine_runs_op_by_op():
    # TGI 1.0 had no CUDA graphs; SGLang and the PyTorch backend of TensorRT-LLM replay them for
    # decodes alone; vLLM's V1 engine for every step; the C++ runtimes launch without Python.
    steps = {name: ia.engine(name).eager for name in ia.engine_names()}
    assert steps["tgi@1.0"] == "all" and steps["tgi@2.3"] == "prefill"  # its graphs by default
    assert steps["sglang@0.5"] == steps["tensorrt-llm@0.21"] == "prefill"
    assert steps["vllm@0.11"] == "none"
    for name in ("tensorrt-llm@0.9", "llama.cpp@b2795", "lmdeploy@0.1"):
        assert steps[name] == "none" and ia.engine(name).host_op_cost == 0
    # One figure, SGLang's own eager prefill, stands in wherever the host's launches count.
    assert ia.engine("tgi@1.0").host_op_cost == ia.engine("sglang@0.5").host_op_cost == 5.8e-5


def test_each_validation_row_runs_the_tgi_of_its_release():
    # TGI 1.0.3 on SageMaker (no CUDA graphs) and the ROCm build of October 2024 on MI300X
    # (2.3.1-dev0, graphs of decode batches by default): the same family, two profiles.
    rows, _ = published.validation_set()
    tgi = {(m.source, m.engine) for m in rows if m.engine.startswith("tgi@")}
    assert tgi == {("HF_SM", "tgi@1.0"), ("DSTACK_TGI", "tgi@2.3")}
