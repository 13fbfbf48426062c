"""The public API as one: every returned key documented, one name per concept, one error
hierarchy."""

import dataclasses
import inspect
import re

import pytest

import inference_arithmetic as ia

M, G = "llama-3.1-8b", "h100-sxm"
# Each function that answers with a dict, called once: its keys must be in its docstring.
ANSWERS = {
    "calculate": lambda: ia.calculate(M, G),
    "steady_state": lambda: ia.steady_state(M, G, 2.0),
    "plan": lambda: ia.plan(M, G, 2.0, 2048, 256, 1.0, 0.05),
    "generation": lambda: ia.generation(M, G),
    "serve": lambda: ia.serve(M, G, 64),
    "token_costs": lambda: ia.token_costs(M, G),
    "kernels": lambda: ia.kernels(M, G)[0],
}


def keys(answer, prefix=""):
    """Every key of ``answer``, nested ones too."""
    for key, value in answer.items():
        yield key
        if isinstance(value, dict) and key != "band":  # a band's keys are the predictions'
            yield from keys(value)


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_every_returned_key_is_in_the_docstring(name):
    doc = inspect.getdoc(getattr(ia, name))
    missing = [k for k in dict.fromkeys(keys(ANSWERS[name]())) if f"``{k}``" not in doc]
    assert not missing, f"ia.{name}'s docstring does not name {missing}"


# Every function of a model and a GPU calls its first arguments the same.
PUBLIC = [
    "calculate",
    "sweep",
    "steady_state",
    "plan",
    "prefill_time",
    "decode_step_time",
    "generation",
    "serve",
    "max_batch",
    "compute_bound_batch",
    "kernels",
    "token_costs",
    "break_even_utilization",
]


@pytest.mark.parametrize("name", PUBLIC)
def test_one_name_for_the_model_and_the_gpu(name):
    first = list(inspect.signature(getattr(ia, name)).parameters)[:2]
    assert first == ["model", "gpu"], (name, first)


@pytest.mark.parametrize("name", ["param_count", "kv_cache_bytes", "forward_flops", "decode_flops"])
def test_counts_take_the_model_first(name):
    assert next(iter(inspect.signature(getattr(ia, name)).parameters)) == "model"


@pytest.mark.parametrize("name", ["calculate", "sweep", "plan", "token_costs"])
def test_every_cost_takes_a_price_per_hour(name):
    assert "price_per_hour" in inspect.signature(getattr(ia, name)).parameters


def test_n_gpus_counts_one_replica_everywhere():
    p = ia.plan("llama-3.1-70b", G, 10, 2048, 256, 0.5, 0.05)
    again = ia.steady_state("llama-3.1-70b", G, 10, n_gpus=p["n_gpus"], replicas=p["replicas"])
    assert again["ttft"] == p["ttft"] and p["gpus"] == p["n_gpus"] * p["replicas"]
    r = ia.calculate("llama-3.1-70b", G, n_gpus=4, replicas=3)
    assert r["n_gpus"] == 4 and r["gpus"] == 12


def test_the_same_cost_keys():
    costs = ia.token_costs(M, G)
    assert {"input", "output", "request"} <= set(ia.calculate(M, G)["cost"]) & set(costs)
    assert set(ia.plan(M, G, 2.0, 2048, 256, 1.0, 0.05)["cost"]) == {
        "output", "price_per_hour", "price_date"}  # fmt: skip


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ia.calculate("llama-3.1-8", G), "unknown model 'llama-3.1-8'"),
        (lambda: ia.calculate(M, "h100"), "unknown gpu 'h100'"),
        (lambda: ia.calculate(M, G, engine="vlm"), "unknown engine 'vlm'"),
        (lambda: ia.calculate(M, G, dtype="bf17"), "dtype must be one of"),
        (lambda: ia.calculate(M, G, dtype="int4"), "no peak FLOP rate for int4"),
        (lambda: ia.gpu("h100-sxm").flop_rate("fp4"), "no peak FLOP rate for 'fp4'"),
        (lambda: ia.engine("vlm"), "unknown engine"),
        (lambda: ia.api_prices("no-such-model"), "no API price"),
    ],
)
def test_an_unknown_name_is_an_unknown_name(call, message):
    with pytest.raises(ia.UnknownName, match=message) as error:
        call()
    assert isinstance(error.value, KeyError) and isinstance(error.value, ia.ArgumentError)
    assert not str(error.value).startswith(('"', "'"))  # the message, not a KeyError's repr


@pytest.mark.parametrize(
    "call",
    [
        lambda: ia.calculate(M, G, batch=0),
        lambda: ia.calculate(M, G, price_per_hour=-1),
        lambda: ia.plan(M, G, 1.0, 2048, 256, 1.0, 0.05, price_per_hour=0),
        lambda: ia.GPU("x", {"bf16": -1.0}, memory_bandwidth=1e12, memory_bytes=1e10),
        lambda: dataclasses.replace(ia.engine("vllm"), batching="sometimes"),
        lambda: ia.token_costs(M, G, utilization=2),
    ],
)
def test_every_refusal_is_an_argument_error(call):
    with pytest.raises(ia.ArgumentError) as error:
        call()
    assert re.search(r"\w+ must|must be|unknown|no ", str(error.value))


# Functions that take the deployment settings as keywords (``deployment_keywords``).
DEPLOYED = [
    name
    for name in PUBLIC
    if "memory_utilization" in inspect.signature(getattr(ia, name)).parameters
]


@pytest.mark.parametrize("name", DEPLOYED)
def test_an_argument_a_function_does_not_take_is_named(name):
    function = getattr(ia, name)
    wrong = "prompt_len" if "prompt_len" not in inspect.signature(function).parameters else "bogus"
    with pytest.raises(
        TypeError, match=rf"^{name}\(\) takes no argument {wrong}; it takes model, gpu"
    ):
        function(M, G, **{wrong: 3})


def test_max_batch_names_context_len_past_the_window():
    with pytest.raises(ia.ArgumentError, match=r"context_len may be at most 131,072, got 131,073"):
        ia.max_batch(M, G, context_len=131_073)
    assert ia.max_batch(M, G, context_len=131_072) >= 1
