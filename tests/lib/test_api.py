"""The public API as one: every returned key documented, one name per concept, one error
hierarchy."""

import dataclasses
import inspect
import json
import re
from pathlib import Path

import pytest

import inference_arithmetic as ia
from inference_arithmetic.formulas.economics import COST_KEYS, COSTS
from inference_arithmetic.serving.planning import PLAN_COSTS

M, G = "llama-3.1-8b", "h100-sxm"
# Each function that answers with a dict, called once: its keys must be in its docstring.
ANSWERS = {
    "calculate": lambda: ia.calculate(M, G),
    "steady_state": lambda: ia.steady_state(M, G, requests_per_s=2.0),
    "steady_state of users": lambda: ia.steady_state(M, G, concurrency=8),
    "frontier": lambda: ia.frontier(M, G, most_gpus=1, concurrency=(1, 8))[0],
    "plan": lambda: ia.plan(
        M, G, requests_per_s=2.0, prompt_len=2048, output_len=256, ttft_target=1.0, tpot_target=0.05
    ),
    "generation": lambda: ia.generation(M, G),
    "serve": lambda: ia.serve(M, G, requests=64),
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
    doc = inspect.getdoc(getattr(ia, name.split()[0]))
    missing = [k for k in dict.fromkeys(keys(ANSWERS[name]())) if f"``{k}``" not in doc]
    assert not missing, f"ia.{name}'s docstring does not name {missing}"


# Every function of a model and a GPU calls its first arguments the same.
PUBLIC = [
    "calculate",
    "sweep",
    "steady_state",
    "frontier",
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
    p = ia.plan(
        "llama-3.1-70b",
        G,
        requests_per_s=10,
        prompt_len=2048,
        output_len=256,
        ttft_target=0.5,
        tpot_target=0.05,
    )
    again = ia.steady_state(
        "llama-3.1-70b", G, requests_per_s=10, n_gpus=p["n_gpus"], replicas=p["replicas"]
    )
    assert again["ttft"] == p["ttft"] and p["gpus"] == p["n_gpus"] * p["replicas"]
    r = ia.calculate("llama-3.1-70b", G, n_gpus=4, replicas=3)
    assert r["n_gpus"] == 4 and r["gpus"] == 12


def test_serves_wave_is_not_a_streams_concurrency():
    # concurrency is the requests in the engine of a stream (steady_state); serve named its
    # requests per wave so too (issue 36): now wave_size, the batch a static engine runs.
    served = ia.serve(M, G, requests=10**4, engine="tensorrt-llm@0.9")
    assert "concurrency" not in served and "concurrency" in ia.steady_state(M, G, requests_per_s=2)
    fits = ia.max_batch(M, G, context_len=2048 + 256, engine="tensorrt-llm@0.9")
    assert served["wave_size"] == fits and served["waves"] == -(-(10**4) // fits)


def test_the_same_cost_keys():
    """One meaning per cost key (``formulas.economics.COST_KEYS``): a static batch's
    ``input``, ``output`` and ``blended`` alike in ``calculate``, ``token_costs`` and ``sweep``,
    ``blended`` its request's cost over its output tokens; a plan's ``blended`` its GPUs' rent
    over its rate's output tokens, and the plan no ``input`` or ``output`` split."""
    keys = {"input", "output", "blended", "request", "price_per_hour", "price_date"}
    report, costs = ia.calculate(M, G)["cost"], ia.token_costs(M, G)
    assert keys == set(report) and keys <= set(costs) and set(COST_KEYS) <= keys
    table = ia.sweep(M, G)
    for key in ("input", "output", "blended", "request"):
        assert costs[key] == pytest.approx(report[key], rel=1e-12)
        assert table[f"cost.{key}"][0] == pytest.approx(report[key], rel=1e-12)
    for cost in (report, costs):
        assert cost["blended"] == pytest.approx(cost["request"] / 256 * 1e6, rel=1e-12)
        assert cost["input"] * 2048 / 256 + cost["output"] == pytest.approx(cost["blended"])
    rate = 2.0
    p = ia.plan(
        M,
        G,
        requests_per_s=rate,
        prompt_len=2048,
        output_len=256,
        ttft_target=1.0,
        tpot_target=0.05,
    )
    assert set(p["cost"]) == {"blended", "price_per_hour", "price_date"}
    rent = p["gpus"] * p["cost"]["price_per_hour"] / 3600  # dollars a second, busy or idle
    assert p["cost"]["blended"] == pytest.approx(rent / (rate * 256) * 1e6, rel=1e-12)


@pytest.mark.parametrize(
    "function", [ia.calculate, ia.token_costs, ia.sweep, ia.plan, ia.planning.plan_colocated]
)
def test_every_docstring_names_the_costs_in_the_same_words(function):
    """Each entry point that prices tokens points to ``COST_KEYS`` in ``COSTS``'s words; a
    plan, which has only the blended cost, to ``PLAN_COSTS``, which says why."""
    words = " ".join(function.__doc__.split())
    if function in (ia.plan, ia.planning.plan_colocated):
        assert "``PLAN_COSTS``" in words and "``blended``" in words
        assert "``blended`` as ``formulas.economics.COST_KEYS`` says" in PLAN_COSTS
        assert function is not ia.plan or PLAN_COSTS.removesuffix(".") in words
    else:
        assert COSTS in words


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
        lambda: ia.plan(
            M,
            G,
            requests_per_s=1.0,
            prompt_len=2048,
            output_len=256,
            ttft_target=1.0,
            tpot_target=0.05,
            price_per_hour=0,
        ),
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


# Every entry point takes a model and a GPU as ia.model and ia.gpu do: a config.json as a dict,
# JSON text or a path; a device's figures as a dict or JSON text (issue 36).
LENGTHS = {"prompt_len": 512, "output_len": 64}
TARGETS = {"ttft_target": 1.0, "tpot_target": 0.1}
TAKES = {
    "calculate": lambda f, m, g: f(m, g, batch=4, prompt_len=512, output_len=64),
    "sweep": lambda f, m, g: f(m, g, batch=[1, 4]).tolist(),
    "steady_state": lambda f, m, g: f(m, g, requests_per_s=1.0, prompt_len=512, output_len=64),
    "plan": lambda f, m, g: f(m, g, requests_per_s=1.0, **LENGTHS, **TARGETS),
    "goodput": lambda f, m, g: f(m, g, **LENGTHS, **TARGETS),
    "prefill_time": lambda f, m, g: f(m, g, batch=1, prompt_len=512),
    "decode_step_time": lambda f, m, g: f(m, g, batch=1, context_len=512),
    "generation": lambda f, m, g: f(m, g, batch=2, prompt_len=512, output_len=64),
    "serve": lambda f, m, g: f(m, g, requests=16, prompt_len=512, output_len=64),
    "max_batch": lambda f, m, g: f(m, g, context_len=512),
    "compute_bound_batch": lambda f, m, g: f(m, g, context_len=512),
    "kernels": lambda f, m, g: f(m, g, batch=2, context_len=512),
    "token_costs": lambda f, m, g: f(m, g, batch=8),
    "break_even_utilization": lambda f, m, g: f(m, g, api_input_price=0.1, api_output_price=0.4),
    "weight_formats": lambda f, m, g: f(m),
    "param_count": lambda f, m, g: f(m, active=True),
    "kv_cache_bytes": lambda f, m, g: f(m, batch=2, context_len=512),
    "forward_flops": lambda f, m, g: f(m, batch=1, seq_len=512),
    "decode_flops": lambda f, m, g: f(m, batch=1, context_len=512),
}


@pytest.mark.parametrize("name", sorted(TAKES))
def test_every_entry_point_takes_a_model_and_a_gpu_as_the_command_line_does(name, tmp_path):
    config = json.loads(
        (Path(ia.models.config.__file__).parent / "configs" / "qwen3-8b.json").read_text()
    )["config"]
    folder = tmp_path / "qwen3"  # named as the dict's model is (after its model_type)
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    figures = {"name": "mine", "peak_flop_rate": {"bf16": 400e12}, "memory_bandwidth": 2e12}
    figures |= {"memory_bytes": 80e9, "interconnect_bandwidth": 300e9, "price_per_hour": 2.0}
    as_objects = (ia.model(config), ia.GPU(**figures))
    given = [(config, figures), (json.dumps(config), json.dumps(figures))]
    given += [(folder, figures), (str(folder / "config.json"), json.dumps(figures))]
    call, function = TAKES[name], getattr(ia, name)
    expected = call(function, *as_objects)
    for m, g in given:
        got = call(function, m, g)
        assert repr(got) == repr(expected), (name, type(m), type(g))


def _entry_points():
    """Every public function that takes a model first: ``ia``'s own and those of its public
    modules (``ia.disaggregated.steady_state``, ``ia.simulation.simulate``...)."""
    found = {}
    modules = [ia] + [getattr(ia, n) for n in ia.__all__ if inspect.ismodule(getattr(ia, n))]
    for module in modules:
        prefix = "" if module is ia else module.__name__.rsplit(".", 1)[-1] + "."
        for name in getattr(module, "__all__", ()):
            function = getattr(module, name, None)
            if inspect.isfunction(function):
                parameters = list(inspect.signature(function).parameters)
                if parameters[:1] == ["model"]:
                    found[prefix + name] = function
    return found


def test_model_and_gpu_are_the_only_positional_arguments_of_every_entry_point():
    # One calling convention (DESIGN, issue 36): ia.calculate(m, g, 8) meant 8 GPUs, where
    # ia.generation(m, g, 8) meant a batch of 8 and ia.goodput(m, g, 8) a prompt of 8 tokens.
    entry_points = _entry_points()
    assert {"calculate", "steady_state", "plan", "goodput", "kv_cache_bytes"} <= set(entry_points)
    assert "disaggregated.steady_state" in entry_points and "simulation.simulate" in entry_points
    for name, function in entry_points.items():
        parameters = list(inspect.signature(function).parameters.values())
        lead = 2 if len(parameters) > 1 and parameters[1].name == "gpu" else 1
        for p in parameters[:lead]:
            assert p.kind is p.POSITIONAL_OR_KEYWORD, (name, p.name)
        for p in parameters[lead:]:
            assert p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD), (name, p.name, p.kind)
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
        ia.calculate(M, G, 8)
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        ia.kv_cache_bytes(M, 8)


def test_one_percentile_default_everywhere():
    # plan judged its targets on the means and goodput on p90 by default (issue 36): one
    # default now, the means, for every function that takes a percentile.
    with_percentile = {
        name: inspect.signature(function).parameters["percentile"].default
        for name, function in _entry_points().items()
        if "percentile" in inspect.signature(function).parameters
    }
    assert {"plan", "goodput", "planning.plan_colocated", "disaggregated.fewest_gpus"} <= set(
        with_percentile
    )
    assert set(with_percentile.values()) == {ia.targets.DEFAULT_PERCENTILE}
    assert ia.targets.DEFAULT_PERCENTILE is None
    T = dict(prompt_len=1024, output_len=128, ttft_target=0.5, tpot_target=0.03)
    assert ia.goodput(M, G, **T) == ia.goodput(M, G, **T, percentile=None)


@pytest.mark.slow
def test_the_plan_of_issue_35_answers_with_todays_vllm():
    # Llama 3.1 70B at 10 requests/s within p99 TTFT 0.5 s and TPOT 50 ms on H100s: today's
    # vLLM (the default, "vllm", its newest: vllm@0.11), whose vllm serve steps 8,192 tokens
    # on an H100, needs 16 GPUs; the 2025 profile's fitted 512-token step (vllm@0.7) needs 32
    # (its prefills take 4 steps of 512 where one of 8,192 holds them, so TTFT binds at a
    # lower rate per replica).
    asked = dict(requests_per_s=10, prompt_len=2048, output_len=256, ttft_target=0.5,
                 tpot_target=0.05, percentile=99)  # fmt: skip
    today = ia.plan("llama-3.1-70b", "h100-sxm", **asked)
    assert ia.plan("llama-3.1-70b", "h100-sxm", **asked, engine="vllm@0.11") == today
    assert ia.plan("llama-3.1-70b", "h100-sxm", **asked, engine="vllm") == today
    old = ia.plan("llama-3.1-70b", "h100-sxm", **asked, engine="vllm@0.7")
    assert (today["gpus"], old["gpus"]) == (16, 32)
    assert today["ttft"] <= 0.5 and today["tpot"] <= 0.05
