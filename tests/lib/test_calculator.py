"""The calculator's form: the ipywidgets view and the page, whose data carries the library's
formulas, checks and messages (the page itself is checked in
tests/book/test_calculator_page.py)."""

import dataclasses
import inspect
import itertools
import json
import math
import re
import warnings

import pytest

import inference_arithmetic as ia
from inference_arithmetic import serving
from inference_arithmetic.core import printing
from inference_arithmetic.page import calculator, calculator_data
from inference_arithmetic.page.scripts import script
from inference_arithmetic.serving import scenario, timing
from inference_arithmetic.serving.report import calculate

M = ia.model("llama-3.1-8b")


def test_widget_shows_a_message_for_impossible_inputs_and_never_clamps():
    w = calculator.widget(batch=8)
    assert w.result["batch"] == 8 and w.message is None
    w.update(batch=-3)
    assert w.state["batch"] == -3 and w.message is not None
    assert w.message == "batch must be a whole number from 1 to 4,096, got -3"
    w.update(batch=8, prompt_len=10**9)
    assert w.message.startswith("prompt_len must be a whole number from 1 to ")
    w.update(prompt_len=2048, model="llama-3.1-405b")
    assert "does not fit" in w.message and "does not fit" in w.html()
    w.update(model="llama-3.1-8b", n_gpus=3)
    assert "32 attention heads" in w.message
    with pytest.raises(ValueError, match="model must be one of"):
        w.update(model="llama-3-8b")


def test_weight_only_int4_is_a_choice_of_the_form():
    with pytest.warns(calculator.RefusedWarning, match="no peak FLOP rate for int4"):
        w = calculator.widget(model="llama-3.1-70b", n_gpus=2, dtype="int4", batch=8)
    assert "no peak FLOP rate for int4" in w.message
    w.update(compute_dtype="bf16")
    assert w.result == calculate("llama-3.1-70b", "h100-sxm", n_gpus=2, dtype="int4",
                                 compute_dtype="bf16", batch=8)  # fmt: skip
    assert w.result["cache_dtype"] == "bf16"  # the cache holds what is computed


@pytest.mark.slow
def test_widget_controls_drive_the_readout():
    w = calculator.widget()
    box = w.widget()
    w._widgets["model"].value = "llama-3.1-70b"  # what a reader's click does
    w._widgets["n_gpus"].value = 2
    assert w.result == calculate("llama-3.1-70b", "h100-sxm", n_gpus=2)
    assert "time per output token" in w._readout.value
    bundle = w._repr_mimebundle_()
    assert 'class="ia-calc"' in bundle["text/html"] and "llama-3.1-70b" in bundle["text/plain"]
    assert box is w.widget()


def test_the_readout_formats_with_format_show():
    w = calculator.widget(batch=8)
    text = w.text()
    assert f"time to first token: {ia.format.seconds(w.result['ttft'])}" in text
    assert f"cost per request: {ia.format.usd(w.result['cost']['request'])}" in text
    assert "decode is bound by: bandwidth" in text


@pytest.mark.slow
def test_the_page_carries_the_librarys_formulas_checks_and_messages():
    spec = calculator.Calculator().spec()
    assert set(spec["models"]) == set(ia.model_names())
    assert spec["band_groups"] == calculator_data.band_groups()
    assert set(spec["gpus"]) == set(ia.gpu_names())
    page = spec["models"]["llama-3.1-8b"]
    # The report's formulas, their common parts computed once: the library's formulas printed.
    # One set per step model and parallelism, each the report's.
    assert set(page["report"]) == set(scenario.STEPS)
    assert calculator_data.parallels(M) == ["tensor", "pipeline"]  # dense: no experts to spread
    for step, parallel in itertools.product(scenario.STEPS, calculator_data.parallels(M)):
        formulas = serving.report_formulas(M, step, parallel)
        printed = page["report"][step][parallel]
        assert printed == printing.javascript(formulas)
        assert set(printed["args"]) == {a for e in formulas.values() for a in ia.numeric(e).args}
        for key in formulas:
            assert f'"{key}":(' in printed["body"], key
    assert page["report"]["kernels"]["tensor"] != page["report"]["roofline"]["tensor"]
    for parallel in calculator_data.parallels(M):  # a pipeline checks its layers, not its heads
        rules = [c for c in scenario.CHECKS if c.applies(M, parallel)]
        assert [c["message"] for c in page["checks"][parallel]] == [c.message for c in rules]
        for shown, rule in zip(page["checks"][parallel], rules, strict=True):
            assert shown["holds"] == printing.javascript(rule.holds(M, parallel))
    assert "layers" in str(page["checks"]["pipeline"]) and "heads" in str(page["checks"]["tensor"])
    assert page["degrees"] == "1, 2, 4, 8, 16, 32"  # 32 heads; 8 KV heads, replicated past 8
    assert spec["no_rate"] == scenario.NO_RATE and spec["count_message"] == ia.checks.COUNT
    assert spec["options"]["link_latency"] == timing.DEFAULT_LINK_LATENCY
    html = calculator.Calculator().live_html()
    data = re.search(r'class="ia-calc-spec">(.*?)</script>', html, re.S).group(1)
    assert json.loads(data)["dtypes"] == ia.DTYPE_BYTES


def test_the_pages_script_holds_no_message_or_formula():
    # Every sentence the page shows comes from the spec: no template text in the script.
    runtime = script("calculator.js") + script("closed.js") + script("frontier.js")
    for text in ("does not fit", "context window", "FLOP rate", "attention heads", "whole number"):
        assert text not in runtime
    for kind in ("nbytes", "seconds", "usd"):
        assert kind not in runtime  # formats are named by the spec's rows


def test_the_continuous_mode_is_the_steady_state_of_the_library():
    w = calculator.widget(mode=calculator.CONTINUOUS, requests_per_s=3.0, prompt_len=1024)
    expected = ia.steady_state(
        "llama-3.1-8b", "h100-sxm", requests_per_s=3.0, prompt_len=1024, output_len=256
    )
    assert w.result == expected and w.message is None
    assert "requests in the engine" in w.text() and "utilization" in w.text()
    w.update(model="llama-3.1-70b", n_gpus=4, dtype="int4", compute_dtype="bf16")
    assert w.result == ia.steady_state(
        "llama-3.1-70b",
        "h100-sxm",
        requests_per_s=3.0,
        prompt_len=1024,
        output_len=256,
        n_gpus=4,
        dtype="int4",
        compute_dtype="bf16",
    )
    top = w.result["saturation_rate"]
    w.update(requests_per_s=2 * top)  # past saturation: the message names the most it takes
    assert w.message.startswith(f"{ia.format.number(2 * top)} requests")
    assert f"keeps up with at most {ia.format.number(top)} requests per second" in w.message
    w.update(requests_per_s=-2)  # never clamped
    assert w.state["requests_per_s"] == -2 and w.message is not None
    assert w.message == calculator.rate_message().format(value=-2)
    assert w.message.startswith("requests_per_s must be a positive number of requests per second")
    w.update(mode=calculator.STATIC, requests_per_s=-2)  # the static mode ignores the rate
    assert w.result == calculate("llama-3.1-70b", "h100-sxm", n_gpus=4, dtype="int4",
                                 compute_dtype="bf16", prompt_len=1024)  # fmt: skip


@pytest.mark.slow
def test_the_page_carries_the_steady_states_formulas_and_messages():
    spec = calculator.Calculator().spec()
    for key, expr in ia.queueing.STEADY.items():
        assert spec["steady"][key] == printing.javascript(expr), key
    page = spec["models"]["llama-3.1-70b"]
    for name in scenario.STEPS:  # a step of each parallelism the stream offers, printed together
        formula = ia.scenario.STEP_FORMULAS[name]
        steps = {p: formula(ia.model("llama-3.1-70b"), p) for p in calculator.STREAM_PARALLEL}
        plain = calculator.step_key((), None)
        assert page["continuous"]["step"][name][plain] == printing.javascript(steps)
    assert spec["pipeline_wait"] == printing.javascript(ia.formulas.continuous.pipeline_wait())
    assert page["degree_list"] == scenario.tensor_parallel_degrees(ia.model("llama-3.1-70b"))
    assert spec["models"]["gpt2"]["degree_list"] == [1, 2, 3, 4, 6, 12]  # 12 heads
    assert spec["saturated"] == ia.continuous.SATURATED
    modes = {"static": calculator.STATIC, "continuous": calculator.CONTINUOUS}
    assert spec["modes"] == {**modes, "plan": calculator.PLAN, "frontier": calculator.FRONTIER}
    runtime = script("steady.js") + script("calculator.js")
    for text in ("saturate ", "keeps up", "positive number", "requests per second"):
        assert text not in runtime


def test_replicas_are_a_control_in_both_modes():
    one = calculator.widget(model="llama-3.1-8b", batch=16)
    three = calculator.widget(model="llama-3.1-8b", batch=16, replicas=3)
    assert three.values["throughput"] == pytest.approx(3 * one.values["throughput"])
    assert three.values["tpot"] == one.values["tpot"] and three.values["gpus"] == 3
    assert "GPUs in all (replicas x GPUs each)" in three.html()
    mode = calculator.CONTINUOUS
    single = calculator.widget(mode=mode, requests_per_s=2.0)
    double = calculator.widget(mode=mode, requests_per_s=4.0, replicas=2)
    assert double.values["ttft"] == pytest.approx(single.values["ttft"])
    assert double.values["saturation_rate"] == pytest.approx(2 * single.values["saturation_rate"])
    with pytest.warns(calculator.RefusedWarning, match="replicas must be"):
        assert calculator.widget(replicas=0).message.startswith("replicas must be")


@pytest.mark.slow
def test_every_control_of_the_form_is_labelled_in_words():
    controls = calculator.widget().spec()["controls"]
    assert {c["name"] for c in controls} >= {"n_gpus", "requests_per_s", "prompt_len"}
    for control in controls:
        assert "_" not in control["label"], control
    assert calculator.label("prompt_len") == "prompt length T (tokens)"
    # The same words in Jupyter's form.
    form = calculator.widget().widget()
    descriptions = [child.description for child in form.children[0].children]
    assert "GPUs n" in descriptions and not any("_" in d for d in descriptions)


@pytest.mark.slow
def test_the_pages_figures_are_the_scenarios_for_every_gpu_and_format():
    # The page assembles a step's values from the GPU's figures by compute and weights format
    # and the spec's options; for every registry GPU and format they are the Scenario's.
    spec = calculator.Calculator().spec()
    checked = 0
    for name, step in itertools.product(ia.gpu_names(), scenario.STEPS):
        g = spec["gpus"][name]
        for compute in g["compute"][step]:
            for dtype in ("bf16", "int4", compute):
                try:
                    s = ia.Scenario(
                        "gpt2", name, prompt_len=512, dtype=dtype, compute_dtype=compute, step=step
                    )
                except (KeyError, ValueError):
                    continue  # a format the GPU cannot compute, or a model that does not fit
                page = {**g["figures"], **spec["options"], **g["compute"][step][compute]}
                page |= g["weights"][step][ia.dtypes.dtype_name(dtype)]  # fp4: nvfp4
                expected = s.values()
                assert {k: expected[k] for k in page} == page, (name, step, compute, dtype)
                checked += 1
    assert checked > 4 * len(ia.gpu_names())


@pytest.mark.parametrize(
    "name, bad, words",
    [
        ("batch", "x", "batch must be a whole number from 1 to 4,096, got 'x'"),
        ("batch", float("nan"), "batch must be a whole number from 1 to 4,096, got nan"),
        ("batch", 2.5, "batch must be a whole number from 1 to 4,096, got 2.5"),
        ("n_gpus", True, "n_gpus must be a whole number from 1 to 64, got True"),
        ("replicas", None, "replicas must be a whole number from 1 to 64, got None"),
        ("prompt_len", float("inf"), "prompt_len must be a whole number from 1 to "),
        ("output_len", "256", "output_len must be a whole number from 1 to "),
        ("requests_per_s", float("nan"), "requests_per_s must be a positive number of requests"),
        ("requests_per_s", "4", "requests_per_s must be a positive number of requests"),
    ],
)
def test_a_value_no_field_can_hold_is_refused_by_name(name, bad, words):
    # A number out of range is the form's message (never clamped); a value that is no number
    # at all is the caller's mistake: an error, at once and on update.
    with pytest.raises(ia.ArgumentError) as raised:
        calculator.Calculator(**{name: bad})
    assert str(raised.value).startswith(words)
    w = calculator.widget(batch=8)
    with pytest.raises(ia.ArgumentError, match=name):
        w.update(**{name: bad})
    assert w.state["batch"] == 8 and w.result["batch"] == 8  # unchanged


def test_the_default_rate_is_half_the_saturation_rate():
    w = calculator.widget(model="llama-3.1-70b", n_gpus=4, mode=calculator.CONTINUOUS)
    top = ia.steady_state("llama-3.1-70b", "h100-sxm", requests_per_s=1.0, n_gpus=4)[
        "saturation_rate"
    ]
    assert w.state["requests_per_s"] == float(f"{top / 2:.2g}")
    assert 0.45 < w.values["utilization"] < 0.55  # not at the saturation rate's edge
    given = calculator.widget(model="llama-3.1-70b", n_gpus=4, requests_per_s=3.0)
    assert given.state["requests_per_s"] == 3.0  # a rate given is kept
    # A deployment that does not fit has no saturation rate: the rate stays the form's.
    with pytest.warns(calculator.RefusedWarning, match="llama-3.1-405b does not fit"):
        assert calculator.widget(model="llama-3.1-405b").state["requests_per_s"] == 1.0


def test_the_continuous_mode_shows_memory_and_cost_at_the_rate():
    w = calculator.widget(model="llama-3.1-70b", n_gpus=4, replicas=2, requests_per_s=3.0)
    w.update(mode=calculator.CONTINUOUS)
    v, s = w.values, ia.Scenario("llama-3.1-70b", "h100-sxm", n_gpus=4, replicas=2)
    in_engine = math.ceil(v["concurrency"] / 2)  # one replica's requests, whole
    static = calculate("llama-3.1-70b", "h100-sxm", n_gpus=4, batch=in_engine)["memory"]
    assert (v["weights"], v["kv_cache"], v["budget"]) == (
        static["weights"], static["kv_cache"], static["budget"]
    )  # fmt: skip
    assert v["memory"] == pytest.approx(v["weights"] + v["kv_cache"] + static["activations"])
    assert v["cost_blended"] == pytest.approx(ia.planning.output_cost(s, 3.0))
    gpu_seconds = 8 / 3.0  # 8 GPUs paid for each second, which serves 3 requests
    assert v["cost_request"] == pytest.approx(
        gpu_seconds * ia.gpu("h100-sxm").price_per_hour / 3600
    )
    assert "KV cache per GPU (requests in the engine" in w.html() and "$" in w.text()
    w.update(gpu="b300")  # no example price: the costs are unavailable, the rest stands
    assert w.values["cost_blended"] is None and w.values["ttft"] > 0
    w.update(price_per_hour=4.0)  # a price typed in: every cost at it
    rent = calculator.STREAM["cost_blended"]
    at_four = ia.numeric(rent).from_values(
        {"price_per_hour": 4.0, "n_gpus": 8, "requests_per_s": 3.0, "output_len": 256}
    )
    assert w.values["cost_blended"] == pytest.approx(at_four)
    assert f"price {ia.format.usd(4.0)} per GPU-hour, as given" in w.text()


@pytest.mark.parametrize(
    "name, bad, words",
    [
        ("memory_utilization", 1.5, "memory_utilization must be a number from 0.001 to 1, got 1.5"),
        ("price_per_hour", -2.0, "price_per_hour must be a positive number of dollars up to "),
        ("token_budget", 0, "token_budget must be a whole number from 1 to "),
        ("compute_efficiency", 0.0, "compute_efficiency must be a number from 0.001 to 1, got 0.0"),
        ("bandwidth_efficiency", 2, "bandwidth_efficiency must be a number from 0.001 to 1, got 2"),
    ],
)
def test_the_assumptions_are_controls_with_their_ranges(name, bad, words):
    w = calculator.widget(batch=8, step="roofline")
    w.update(**{name: bad})  # never clamped: the message names the range
    assert w.state[name] == bad and w.message.startswith(words)
    if name in calculator.AMOUNTS:  # the page fills the same template
        assert w.message == calculator.amount_message(name).format(value=bad)


@pytest.mark.slow
def test_each_assumption_moves_the_readout_as_the_library_does():
    w = calculator.widget(model="llama-3.1-70b", n_gpus=4, batch=8)
    base = dict(n_gpus=4, batch=8)
    for change in (
        {"memory_utilization": 0.6},
        {"token_budget": 2048},
        {"price_per_hour": 2.0},
        {"step": "roofline"},
        {"step": "roofline", "compute_efficiency": 0.7, "bandwidth_efficiency": 0.8},
        {"parallel": "pipeline"},
        {"parallel": "pipeline", "n_gpus": 5},  # any count of stages up to the layers
    ):
        w.update(**calculator.widget().state | {"model": "llama-3.1-70b", **base, **change})
        price = change.pop("price_per_hour", None)
        expected = calculate("llama-3.1-70b", "h100-sxm", **{**base, **change},
                             price_per_hour=price)  # fmt: skip
        assert w.result == expected, change
    # The efficiencies are the single roofline's: the kernel model takes the GPU's kernels.
    assert not calculator.used("compute_efficiency", {**w.state, "step": "kernels"})
    w.update(step="kernels", compute_efficiency=0.7)
    assert w.result == calculate("llama-3.1-70b", "h100-sxm", n_gpus=5, batch=8,
                                 parallel="pipeline")  # fmt: skip
    w.update(model="gpt2", parallel="pipeline", n_gpus=13)  # more stages than layers
    assert w.message.startswith("gpt2 has 12 layers, too few for 13 pipeline stages")


def test_fp4_formats_are_choices_where_the_gpu_has_an_fp4_rate():
    w = calculator.widget(model="llama-3.1-70b", gpu="b200", dtype="nvfp4", batch=8)
    assert w.result == calculate("llama-3.1-70b", "b200", dtype="nvfp4", batch=8)
    assert w.result["compute_dtype"] == "fp4"
    w.update(dtype="mxfp4")  # a scale per 32 numbers, not per 16: fewer bytes
    nvfp4 = calculate("llama-3.1-70b", "b200", dtype="nvfp4", batch=8)["memory"]["weights"]
    assert w.result["memory"]["weights"] < nvfp4
    w.update(gpu="h100-sxm")  # no fp4 rate: the library's refusal
    assert "no peak FLOP rate for fp4" in w.message


@pytest.mark.slow
def test_the_plan_is_a_mode_of_the_form():
    w = calculator.widget(model="llama-3.1-70b", mode=calculator.PLAN, requests_per_s=10.0)
    expected = ia.planning.plan_colocated(
        "llama-3.1-70b",
        "h100-sxm",
        requests_per_s=10.0,
        prompt_len=2048,
        output_len=256,
        ttft_target=0.5,
        tpot_target=0.05,
    )
    assert w.result == expected and w.values["cost_blended"] == expected["cost"]["blended"]
    assert "GPUs per replica (its parallelism's degree)" in w.html()
    w.update(ttft_target=0.001)  # no deployment meets it: the library's message
    assert w.message.startswith("no deployment of up to 64 x h100-sxm")
    assert "within ttft 1 ms and tpot 50 ms" in w.message
    w.update(ttft_target=0.5, gpu="b300")  # no example price: the plan asks for one
    assert w.message == "'b300' has no example price per hour: pass price_per_hour (USD per " \
        "GPU-hour)"  # fmt: skip
    w.update(price_per_hour=5.0)
    assert w.result == ia.planning.plan_colocated(
        "llama-3.1-70b",
        "b300",
        requests_per_s=10.0,
        prompt_len=2048,
        output_len=256,
        ttft_target=0.5,
        tpot_target=0.05,
        price_per_hour=5.0,
    )
    w.update(ttft_target=-1)
    assert w.message == calculator.amount_message("ttft_target").format(value=-1)


@pytest.mark.slow
def test_jupyters_form_shows_the_controls_each_mode_uses_and_reads_a_typed_price():
    w = calculator.widget(model="llama-3.1-70b", n_gpus=4, batch=8)
    w.widget()
    shown = {name for name, c in w._widgets.items() if c.layout.display != "none"}
    assert "batch" in shown and "requests_per_s" not in shown and "ttft_target" not in shown
    assert "compute_efficiency" not in shown  # the kernel model's: the GPU's measured kernels
    w._widgets["step"].value = "roofline"  # what a reader's click does
    assert w._widgets["compute_efficiency"].layout.display != "none"
    w._widgets["price_per_hour"].value = "2.5"
    assert w.state["price_per_hour"] == 2.5 and w.result["cost"]["price_per_hour"] == 2.5
    w._widgets["price_per_hour"].value = " "  # blank: the GPU's example price
    assert w.state["price_per_hour"] is None
    assert w.result["cost"]["price_per_hour"] == ia.gpu("h100-sxm").price_per_hour
    w._widgets["mode"].value = calculator.PLAN
    assert w._widgets["n_gpus"].layout.display == "none" and w.result["replicas"] >= 1
    assert "GPUs per replica" in w._readout.value


def test_the_single_rooflines_readout_carries_no_band():
    # The bands are the kernel model's held-out errors: the roofline's readout drops them.
    kernels, roofline = calculator.widget(batch=8), calculator.widget(batch=8, step="roofline")
    assert ia.bands.describe() in kernels.text() and ia.bands.describe() not in roofline.text()
    assert " to " in calculator.cell(calculator.ROWS[5], kernels.values)  # time to first token
    assert " to " not in calculator.cell(calculator.ROWS[5], roofline.values, groups=None)


@pytest.mark.parametrize("model, gpu", [("llama-3.1-8b", "b200"), ("qwen3-30b-a3b", "h100-sxm")])
def test_the_readout_bands_a_prediction_by_its_group_as_the_library_does(model, gpu):
    # A Blackwell GPU (no validated group: no band at all) and an MoE model (a band for the
    # request only): each cell carries ia.calculate's band or none, and the note says which
    # kinds have none in ia.calculate's words; the page reads the same from band_groups.
    w = calculator.widget(model=model, gpu=gpu, batch=8)
    r = ia.calculate(model, gpu, batch=8)
    groups = ia.bands.scenario_groups(ia.Scenario(model, gpu))
    assert r["band_note"] in w.text()
    for row in calculator.ROWS:
        key, _, kind = row
        if key in ia.serving.BANDED and r[key] is not None:
            band = r["band"][key]
            shown = calculator.cell(row, w.values, groups)
            assert (" to " in shown) == (band is not None), (key, shown)
            if band is not None:
                assert ia.format.show(band[0], kind) in shown, key
    entry = calculator_data.band_groups()["table"][",".join(groups)]  # the page data's
    assert entry["withheld"]["static"] == r["band_note"]
    # The sentence on the bands counts the runs of the bands shown: none for Blackwell, whose
    # readout shows no bracket, and the MoE request band's runs for the MoE model.
    described = ia.bands.describe(groups)
    assert entry["describe"] == described and (described is None) == (gpu == "b200")
    assert ("in brackets" in w.text()) == (described is not None)
    assert described is None or described in w.text()
    if described is not None:
        rows = ia.bands.bands()["groups"]["moe"]["request"]["rows"]
        assert f"on {rows} published measurements" in described
    for kind in ia.bands.KINDS:
        factors = entry["factors"][kind]
        assert (None if factors is None else tuple(factors)) == ia.bands.factors(kind, groups)


def test_a_pasted_config_is_read_by_the_librarys_parser():
    own = calculator.own_config
    config = own._verbatim("llama-3.1-8b") | {"hidden_size": 3072, "num_hidden_layers": 28,
                                               "num_attention_heads": 24}  # fmt: skip
    w = calculator.widget(model=own.OWN, config=json.dumps(config), batch=8)
    arch = ia.ModelConfig.from_hf_config(config, name=own.OWN)
    assert w.result == calculate(arch, "h100-sxm", batch=8) and w.result["model"] == own.OWN
    w.update(config="not json")
    assert w.message == own.MESSAGES["json"]
    w.update(config=json.dumps({**config, "num_attention_heads": 0}))  # the parser's words
    assert w.message.startswith("config of model_type 'llama': num_attention_heads must be")
    with pytest.raises(ia.ArgumentError, match="config must be the text of a config.json"):
        w.update(config={"model_type": "llama"})


MOE = "qwen3-30b-a3b"  # 128 experts, 32 heads and 4 KV heads: small enough for a few GPUs


@pytest.mark.slow
def test_expert_parallelism_is_a_choice_of_the_form_for_moe_models():
    w = calculator.widget(model=MOE, n_gpus=4, batch=16, parallel="expert-dp")
    want = dict(n_gpus=4, batch=16, parallel="expert-dp")
    assert w.result == calculate(MOE, "h100-sxm", **want)
    w.update(expert_imbalance=1.5)  # the busiest GPU's experts: slower than the default's
    assert w.result == calculate(MOE, "h100-sxm", **want, expert_imbalance=1.5)
    assert w.result["tpot"] > calculate(MOE, "h100-sxm", **want)["tpot"]
    w.update(parallel="expert")
    assert w.result == calculate(MOE, "h100-sxm", **{**want, "parallel": "expert"},
                                 expert_imbalance=1.5)  # fmt: skip
    w.update(expert_imbalance=0.5)  # out of its range: the library's words, never clamped
    assert w.message == calculator.amount_message("expert_imbalance").format(value=0.5)
    assert w.message.startswith("expert_imbalance must be a number from 1 ")
    w.update(expert_imbalance=1.5, n_gpus=3, parallel="expert-dp")  # 128 experts over 3: no
    assert "128 experts cannot be spread evenly over 3 GPUs" in w.message
    w.update(n_gpus=4, model="llama-3.1-8b")  # dense: the reason, in the library's words
    assert w.message == ia.formulas.latency.NO_EXPERTS.format(model="llama-3.1-8b")
    w.update(parallel="tensor", expert_imbalance=0.5)  # unused by tensor parallelism
    assert w.result == calculate("llama-3.1-8b", "h100-sxm", n_gpus=4, batch=16)
    spec = w.spec()
    page = spec["models"][MOE]
    assert set(page["report"]["kernels"]) == set(ia.formulas.latency.PARALLEL)
    assert page["expert_degree_list"] == scenario.expert_parallel_degrees(ia.model(MOE), 64)
    imbalance = [c for c in spec["controls"] if c["name"] == "expert_imbalance"][0]
    assert (imbalance["min"], imbalance["max"]) == scenario.IMBALANCE


@pytest.mark.slow
def test_the_serving_options_are_controls_of_the_stream_and_the_plan():
    w = calculator.widget(mode=calculator.CONTINUOUS, requests_per_s=4.0, prefix_hit_rate=0.5)
    assert w.result == ia.steady_state(
        "llama-3.1-8b", "h100-sxm", requests_per_s=4.0, prefix_hit_rate=0.5
    )
    for method in ("eagle3", "ngram"):
        w.update(speculative=method)
        assert w.result == ia.steady_state(
            "llama-3.1-8b", "h100-sxm", requests_per_s=4.0, prefix_hit_rate=0.5, speculative=method
        ), method
    w.update(speculative="mtp")  # Llama ships no MTP module: the library's refusal, as the page's
    refusal = calculator_data.method("mtp")["refusal"].format(model="llama-3.1-8b")
    assert w.message == refusal
    with pytest.raises(ia.ArgumentError) as refused:
        ia.steady_state("llama-3.1-8b", "h100-sxm", requests_per_s=4.0, speculative="mtp")
    assert str(refused.value) == refusal
    w.update(speculative="draft")  # no defaults: the library's refusal, word for word
    assert w.message == calculator_data.method("draft")["error"]
    assert w.message.startswith("speculative method 'draft' has no default")
    w.update(speculative="none", prefix_hit_rate=1.5)
    assert w.message == calculator.amount_message("prefix_hit_rate").format(value=1.5)
    w.update(prefix_hit_rate=0.5, step="roofline")  # the single roofline has no such kernel
    assert w.message == scenario.NOT_KERNELS.format(step="roofline")
    w.update(step="kernels", mode=calculator.PLAN, speculative="eagle3", requests_per_s=10.0)
    options = dict(prefix_hit_rate=0.5, speculative="eagle3")
    assert w.result == ia.planning.plan_colocated(
        "llama-3.1-8b",
        "h100-sxm",
        requests_per_s=10.0,
        prompt_len=2048,
        output_len=256,
        ttft_target=0.5,
        tpot_target=0.05,
        **options,
    )
    w.update(speculative="draft")  # refused by name, not "no deployment" (every one skipped)
    assert w.message == calculator_data.method("draft")["error"]
    w.update(mode=calculator.STATIC)  # the static mode's batch has no serving options
    assert w.result == calculate("llama-3.1-8b", "h100-sxm")
    page = w.spec()["models"]["llama-3.1-8b"]["continuous"]["step"]
    assert set(page["roofline"]) == {calculator.step_key((), None)}
    arch, drafts = ia.model("llama-3.1-8b"), calculator_data.drafts()
    assert drafts == [None, "head"]  # n-gram lookups on the host; EAGLE-3's and MTP's heads
    both = ("prefix", "speculative")
    for draft in drafts:
        steps = {p: ia.scenario.STEP_FORMULAS["kernels"](arch, p, options=both, draft=draft)
                 for p in calculator.STREAM_PARALLEL}  # fmt: skip
        assert page["kernels"][calculator.step_key(both, draft)] == printing.javascript(steps)


@pytest.mark.slow
def test_a_pipeline_is_a_choice_of_the_stream_and_the_plan():
    # The steady state of n micro-batches in flight, its memory of each batch in flight.
    big = dict(model="llama-3.1-70b", n_gpus=4, parallel="pipeline")
    w = calculator.widget(mode=calculator.CONTINUOUS, requests_per_s=2.0, **big)
    assert w.result == ia.steady_state("llama-3.1-70b", "h100-sxm", requests_per_s=2.0, n_gpus=4,
                                       parallel="pipeline")  # fmt: skip
    tensor = calculator.widget(mode=calculator.CONTINUOUS, requests_per_s=2.0,
                               **{**big, "parallel": "tensor"})  # fmt: skip
    assert w.values["tpot"] > tensor.values["tpot"]  # each request waits for the round
    in_batch = math.ceil(w.values["concurrency"] / 4)  # one of the 4 batches in flight
    static = calculate("llama-3.1-70b", "h100-sxm", n_gpus=4, parallel="pipeline",
                       batch=in_batch)["memory"]  # fmt: skip
    assert (w.values["kv_cache"], w.values["memory"]) == (static["kv_cache"], static["total"])
    assert w.values["memory"] <= w.values["budget"]  # the engine's capacity holds them
    # The plan searches the pipeline's stages: 3, which do not split 70B's heads (the search
    # itself is test_continuous's; one run of it here, not two, for the test's time).
    w.update(mode=calculator.PLAN, requests_per_s=1.5, ttft_target=1.0, tpot_target=0.15)
    assert (w.result["replicas"], w.result["n_gpus"]) == (1, 3)
    chosen = ia.steady_state(
        "llama-3.1-70b", "h100-sxm", requests_per_s=1.5, n_gpus=3, parallel="pipeline"
    )
    assert (w.result["ttft"], w.result["tpot"]) == (chosen["ttft"], chosen["tpot"])
    page = w.spec()["models"]["llama-3.1-70b"]["plan_degrees"]
    assert page["pipeline"] == scenario.pipeline_degrees(ia.model("llama-3.1-70b"), 8)
    # Expert parallelism's steady state is the library's only: the form says so, by name.
    w.update(model=MOE, parallel="expert-dp")
    assert w.message == calculator.NOT_STREAMED.format(
        choices="tensor or pipeline", parallel="expert-dp"
    )
    assert calculator.widget(model=MOE, parallel="expert-dp", n_gpus=4).message is None


@pytest.mark.slow
def test_models_share_the_pages_formulas_only_where_the_library_reads_the_same(monkeypatch):
    # Printed once for a family (core.reads.shared): the Llamas' formulas are the same
    # expressions of their sizes; a bias on the attention's products is another formula.
    monkeypatch.setenv("IA_CACHE_DIR", "off")
    llama = ia.model("llama-3.1-8b")
    biased = dataclasses.replace(llama, name="llama-biased", qkv_bias=True)
    plain, other = calculator_data.model_data(llama), calculator_data.model_data(biased)
    assert plain["report"] is calculator_data.model_data(ia.model("llama-3.1-70b"))["report"]
    assert plain["checks"] is calculator_data.model_data(ia.model("llama-3.3-70b"))["checks"]
    assert other["report"] != plain["report"] and other["sizes"] == plain["sizes"]
    for step in scenario.STEPS:
        expected = printing.javascript(serving.report_formulas(biased, step, "tensor"))
        assert other["report"][step]["tensor"] == expected


def test_the_continuous_mode_shows_the_percentiles_of_the_steady_state():
    w = calculator.widget(mode=calculator.CONTINUOUS, requests_per_s=3.0, prompt_len=1024)
    expected = ia.steady_state(
        "llama-3.1-8b", "h100-sxm", requests_per_s=3.0, prompt_len=1024, output_len=256
    )["percentiles"]
    keys = [row[0] for row in calculator.CONTINUOUS_ROWS]
    for time, named in expected.items():
        assert list(named) == list(calculator.PERCENTILE_NAMES)  # the library's names, in order
        for name, value in named.items():
            key = calculator.PERCENTILE_KEY.format(time=time, name=name)
            assert key in keys and w.values[key] == value
            assert f", {name}: {ia.format.seconds(value)}" in w.text()
    # Without skew a request's TPOT is normal; with it, a gamma's: its tail longer than its
    # head, its median below its mean (the same printed formula the page evaluates).
    normal = ia.queueing.skewed_quantiles(1.0, 2.0)
    assert list(normal) == pytest.approx([1.0 + 2.0 * z for z in ia.queueing.NORMAL_POINTS])
    p50, p90, p99 = ia.queueing.skewed_quantiles(1.0, 2.0, 0.8)
    assert p50 < 1.0 and p99 - p90 > normal[2] - normal[1]
    runtime = script("quantiles.js") + script("steady.js")
    for number in ("4096", "1e-9", "1e-6", "0.99", "1.28", "2.32", "p99"):
        assert number not in runtime, number


@pytest.mark.slow
def test_the_plan_is_judged_on_the_percentile_chosen():
    w = calculator.widget(model="llama-3.1-70b", mode=calculator.PLAN, requests_per_s=10.0)
    # The page takes the numbers its quantiles need from the library's own names.
    spec = w.spec()
    assert spec["quantiles"] == {
        "percentiles": ia.queueing.PERCENTILES,
        "names": calculator.PERCENTILE_NAMES,
        "normal": ia.queueing.NORMAL_POINTS,
        "tpot": printing.javascript(ia.queueing.TPOT_QUANTILE),
        "tiny": ia.queueing.TINY,
        "grid": ia.queueing.GRID,
    }
    # And where a chain runs away, as the library's steady state judges it.
    assert spec["runaway"] == [ia.queueing.RUNAWAY_COUNTS, ia.queueing.RUNAWAY_TAIL]
    # The form offers what ia.plan's percentile takes (a tail: the mean and p90, p99), starting
    # at its default; the page carries the same choices.
    assert calculator.JUDGED == {"mean": None, "p90": 90, "p99": 99}
    for percentile in calculator.JUDGED.values():
        assert ia.targets.check_percentile(percentile) == percentile
    assert calculator.JUDGED[w.state["percentile"]] is None  # ia.plan's default: the mean
    assert spec["plan"]["judged"] == calculator.JUDGED
    control = next(c for c in spec["controls"] if c["name"] == "percentile")
    assert control["options"] == list(calculator.JUDGED) and control["only"] == {
        "mode": [calculator.PLAN]
    }
    assert not calculator.used("percentile", {"mode": calculator.CONTINUOUS})
    mean = w.result
    pair = ("llama-3.1-70b", "h100-sxm")
    asked = dict(requests_per_s=10.0, prompt_len=2048, output_len=256)
    asked |= dict(ttft_target=0.5, tpot_target=0.05)
    w.update(percentile="p99")
    assert {"layout": "colocated", **w.result} == ia.plan(*pair, **asked, percentile=99)
    assert w.result["percentile"] == 99
    assert w.result["gpus"] > mean["gpus"]  # the tail costs GPUs the means do not
    assert "its times are each request's p99" in w.text()
    assert "its times are each" not in calculator.widget(mode=calculator.PLAN).text()
    w.update(tpot_target=0.005)  # no deployment meets it: the library's message, on the p99
    with pytest.raises(ValueError) as refused:
        ia.plan(*pair, **{**asked, "tpot_target": 0.005}, percentile=99)
    assert w.message == str(refused.value) and w.message.endswith(" (on each request's p99)")
    with pytest.raises(ValueError, match="percentile must be one of"):
        w.update(percentile="p50")


def test_a_calculator_made_with_refused_settings_says_so_in_code():
    # On the page the readout says why; made in code, a warning and the repr carry the
    # library's refusal, and reading the result it has not raises it (it was None, and
    # result["tpot"] said "'NoneType' object is not subscriptable", issue 36).
    with pytest.warns(calculator.RefusedWarning) as caught:
        w = calculator.Calculator(batch=-5)
    assert w.message == "batch must be a whole number from 1 to 4,096, got -5"
    assert w.message in str(caught[0].message) and w.message in repr(w)
    assert w.values is None
    with pytest.raises(ia.ArgumentError, match="no result: batch must be a whole number"):
        w.result["tpot"]
    with pytest.warns(calculator.RefusedWarning, match="cannot be split over 3 GPUs"):
        three = calculator.Calculator(n_gpus=3)
    with pytest.raises(ia.ArgumentError, match="cannot be split over 3 GPUs"):
        three.result["tpot"]
    assert three.update(n_gpus=2).result["tpot"] > 0 and three.message is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "result=" in repr(calculator.Calculator())  # a good one warns of nothing


def _frontier_arguments(**changes):
    """``ia.frontier``'s arguments for the calculator's defaults, with ``changes``."""
    start = calculator.Calculator().state
    asked = {name: start[name] for name in ("prompt_len", "output_len", "token_budget")}
    return {"memory_utilization": start["memory_utilization"], **asked, **changes}


@pytest.mark.slow
def test_the_frontier_is_a_mode_whose_rows_are_ia_frontiers_points():
    w = calculator.widget(mode=calculator.FRONTIER)
    expected = ia.frontier("llama-3.1-8b", "h100-sxm", **_frontier_arguments())
    assert w.result == expected and len(expected) > 3  # one source: the library's points
    lines = [line.strip() for line in w.text().splitlines()]
    assert lines[1].split(" | ")[0] == "deployment" and len(lines) == len(expected) + 3
    for point, (p, line) in enumerate(zip(expected, lines[2:], strict=False), start=1):
        key = calculator.FRONTIER_KEY.format(key="tpot", point=point)
        assert w.values[key] == p["tpot"]
        users = calculator.FRONTIER_KEY.format(key="concurrency", point=point)
        assert w.values[users] == p["concurrency"]
        per_gpu = ia.format.number(p["throughput_per_gpu"])
        deployment = f"{p['n_gpus']} x h100-sxm, {p['parallel']}"
        assert line.split(" | ") == [
            deployment,
            str(p["concurrency"]),
            per_gpu,
            ia.format.number(p["tokens_per_s_per_user"]),
            ia.format.seconds(p["tpot"]),
        ]
    assert "<th>output tokens/s per GPU</th>" in w.html()
    assert "closed loops of 1, 2, 4, " in lines[-1] and "up to 8 GPUs" in lines[-1]
    # An MoE model: its experts spread over the GPUs are among the layouts, as ia.frontier's.
    w.update(model="qwen3-30b-a3b")
    expected = ia.frontier("qwen3-30b-a3b", "h100-sxm", **_frontier_arguments())
    assert w.result == expected
    assert {p["parallel"] for p in expected} & set(ia.formulas.latency.EXPERT_PARALLEL)
    # It chooses the GPUs, their parallelism and the users, and shows no cost.
    for name in ("n_gpus", "replicas", "parallel", "batch", "requests_per_s", "price_per_hour"):
        assert not calculator.used(name, w.state), name
    assert calculator.used("parallel", {"mode": calculator.STATIC})


@pytest.mark.slow
def test_the_frontiers_refusals_are_ia_frontiers():
    with pytest.warns(calculator.RefusedWarning):
        w = calculator.widget(mode=calculator.FRONTIER, model="qwen3-30b-a3b", step="roofline")
    with pytest.raises(ValueError) as refused:  # expert parallelism is timed kernel by kernel
        ia.frontier("qwen3-30b-a3b", "h100-sxm", **_frontier_arguments(step="roofline"))
    assert w.message == str(refused.value) == ia.serving.engine.EXPERTS_BY_KERNELS
    w.update(step="kernels", output_len=1)
    with pytest.raises(ValueError) as refused:
        ia.frontier("qwen3-30b-a3b", "h100-sxm", **_frontier_arguments(output_len=1))
    assert w.message == str(refused.value) == w.spec()["frontier"]["one_token"]
    w.update(output_len=256, model="llama-3.1-405b", gpu="l40s")  # 810 GB on 8 x 48 GB
    with pytest.raises(ValueError) as refused:
        ia.frontier("llama-3.1-405b", "l40s", **_frontier_arguments())
    assert w.message == str(refused.value) and "no layout of llama-3.1-405b fits" in w.message


@pytest.mark.slow
def test_the_frontier_takes_no_serving_option_and_the_page_carries_its_sweep():
    # The serving options set in another mode are not the frontier's: its steps are plain.
    w = calculator.widget(mode=calculator.CONTINUOUS, prefix_hit_rate=0.5, speculative="ngram")
    w.update(mode=calculator.FRONTIER)
    assert w.result == ia.frontier("llama-3.1-8b", "h100-sxm", **_frontier_arguments())
    spec = w.spec()
    sweep = spec["frontier"]
    signature = inspect.signature(ia.frontier).parameters
    assert list(sweep["concurrency"]) == list(ia.serving.frontier.CONCURRENCY)
    assert sweep["most_gpus"] == signature["most_gpus"].default
    assert sweep["request_check"] == ia.serving.frontier.REQUEST_CHECK
    # The default engine's cap on each GPU (Engine.batch: one GPU's as another's for vLLM 0.7).
    default = ia.engine(ia.scenario.DEFAULT_ENGINE)
    for name in ("h100-sxm", "a100-80gb"):
        assert spec["gpus"][name]["batch"] == default.batch(ia.gpu(name))
    assert spec["gpus"]["a100-80gb"]["batch"]["max_num_seqs"] == 256
    assert "max_num_seqs" not in sweep
    # The form starts at the default engine's budget on its GPU, as ia.calculate takes it.
    for name in ("h100-sxm", "a100-80gb"):
        budget = default.batch(ia.gpu(name))["token_budget"]
        assert calculator.widget(gpu=name).state["token_budget"] == budget
    # An MoE model's expert-parallel steps, the plain kernel step, printed for the frontier
    # alone; a dense model has none.
    moe = ia.model("qwen3-30b-a3b")
    experts = ia.formulas.latency.EXPERT_PARALLEL
    steps = {p: ia.scenario.STEP_FORMULAS["kernels"](moe, p) for p in experts}
    assert spec["models"][moe.name]["experts"]["step"] == printing.javascript(steps)
    assert "experts" not in spec["models"]["llama-3.1-8b"]
