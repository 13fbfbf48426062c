"""The band every prediction carries (serving.bands): its arithmetic, and where it appears."""

import numpy as np
import pytest

import inference_arithmetic as ia
from inference_arithmetic.serving import bands
from inference_arithmetic.serving.report import BANDED as CALCULATE_BANDED
from inference_arithmetic.serving.timing import SERVE_BANDED


def test_a_band_multiplies_a_time_and_divides_a_speed():
    b = bands.bands()["tpot"]
    assert bands.band("tpot", 0.02) == (0.02 * b["low"], 0.02 * b["high"])
    assert bands.band("tpot", 50.0, speed=True) == (50.0 / b["high"], 50.0 / b["low"])
    for kind in bands.KINDS:  # a wider band for a later percentile, from the same rows
        assert bands.bands()[kind]["low"] < bands.bands()[kind]["high"]
        assert bands.bands()[kind]["rows"] >= 20
    assert bands.bands()["quantiles"] == [0.1, 0.9]


def test_an_unknown_kind_names_the_kinds():
    with pytest.raises(KeyError, match="ttft, tpot, request"):
        bands.band("prefill", 1.0)


def test_calculate_serve_and_the_steady_state_carry_their_bands():
    r = ia.calculate("llama-3.1-8b", "h100-sxm", batch=16)
    assert r["band"]["ttft"] == bands.band("ttft", r["ttft"])
    assert r["band"]["request_time"] == bands.band("request", r["request_time"])
    assert r["band"]["throughput"] == bands.band("request", r["throughput"], speed=True)
    served = ia.serve("llama-3.1-8b", "h100-sxm", requests=64)
    assert served["band"]["elapsed"] == bands.band("request", served["elapsed"])
    steady = ia.steady_state("llama-3.1-8b", "h100-sxm", requests_per_s=4.0)
    assert steady["band"]["tpot"] == bands.band("tpot", steady["tpot"])
    low, high = steady["band"]["saturation_rate"]
    assert low < steady["saturation_rate"] / bands.bands()["request"]["low"] + 1e-9
    assert high == pytest.approx(steady["saturation_rate"] / bands.bands()["request"]["low"])
    assert set(steady["band"]) == set(ia.continuous.BANDED)


def test_the_single_roofline_has_no_band():
    # The bands are the kernel model's residuals; chapter 08's roofline is not that model.
    assert ia.calculate("llama-3.1-8b", "h100-sxm", step="roofline")["band"] is None
    assert ia.serve("llama-3.1-8b", "h100-sxm", requests=8, step="roofline")["band"] is None


def test_the_calculator_shows_the_band_and_says_what_it_is():
    c = ia.calculator.widget()
    text = c.text()
    low, high = bands.band("tpot", c.values["tpot"])
    shown = f"({ia.format.show(low, 'seconds')} to {ia.format.show(high, 'seconds')})"
    assert shown in text and bands.describe() in text
    rows = sum(bands.bands()[kind]["rows"] for kind in bands.KINDS)
    assert f"{rows} published measurements" in bands.describe()


def test_groups_come_from_the_deployment():
    every = bands.groups_of(
        ia.model("gpt-oss-120b"), ia.gpu("b200"), "mxfp4", "expert", 8000, disaggregated=True
    )
    assert every == tuple(bands.GROUPS)
    # AMD's FP4 rate is not Blackwell's; a prompt one token short of the long ones is not one.
    assert bands.groups_of(ia.model("llama-3.1-8b"), ia.gpu("mi355x"), "fp8", "tensor", 7999) == ()
    assert bands.groups_of(ia.model("llama-3.1-8b"), ia.gpu("rtx-pro-6000"), "bf16", "tensor", 1)
    assert bands.groups_of(ia.model("qwen3-30b-a3b"), ia.gpu("h100-sxm"), "bf16", "tensor", 1) == (
        "moe",
    )
    # gpt-oss as it ships keeps its experts in MXFP4: FP4 weights, whatever the products run in.
    as_shipped = bands.groups_of(ia.model("gpt-oss-20b"), ia.gpu("h100-sxm"), "auto", "tensor", 1)
    assert as_shipped == ("fp4", "moe")
    assert "fp4" not in bands.groups_of(
        ia.model("gpt-oss-20b"), ia.gpu("h100-sxm"), "bf16", "tensor", 1
    )


def test_a_prediction_outside_every_validated_group_says_so_instead_of_borrowing_a_band():
    # The validation set holds too few Blackwell rows of any kind for a band of its own.
    assert all(
        "low" not in bands.bands()["groups"]["blackwell"].get(kind, {}) for kind in bands.KINDS
    )
    r = ia.calculate("llama-3.1-8b", "b200", batch=16)
    assert r["band"] == dict.fromkeys(CALCULATE_BANDED)
    assert "blackwell" in r["band_note"] and r["band_note"] not in r["notes"]
    served = ia.serve("llama-3.1-8b", "b200", requests=64)
    assert served["band"] == dict.fromkeys(SERVE_BANDED) and "blackwell" in served["band_note"]
    steady = ia.steady_state("llama-3.1-8b", "b200", requests_per_s=4.0)
    assert steady["band"] == dict.fromkeys(ia.continuous.BANDED) and steady["band_note"]
    loop = ia.steady_state("llama-3.1-8b", "b200", concurrency=8)
    assert loop["band"] == dict.fromkeys(ia.continuous.CLOSED_BANDED) and loop["band_note"]
    # A dense model on a Hopper GPU with a short prompt is in no group: the core's band.
    hopper = ia.calculate("llama-3.1-8b", "h100-sxm", batch=16)
    assert None not in hopper["band"].values() and "band_note" not in hopper


def test_a_prediction_takes_the_band_of_its_own_group():
    table = bands.bands()["groups"]
    r = ia.calculate("qwen3-30b-a3b", "h100-sxm", batch=16)
    for key, (kind, speed) in CALCULATE_BANDED.items():
        entry = table["moe"].get(kind, {})
        if "low" not in entry:
            assert r["band"][key] is None and bands.WORDS[kind] in r["band_note"].split(":")[0]
            continue
        value = r[key]
        expected = (
            (value / entry["high"], value / entry["low"])
            if speed
            else (value * entry["low"], value * entry["high"])
        )
        assert r["band"][key] == pytest.approx(expected)
        assert r["band"][key] != pytest.approx(bands.band(kind, value, speed)), key  # not CORE's
    assert any(r["band"][key] is not None for key in CALCULATE_BANDED)  # the MoE rows make one


def test_the_narrowest_of_the_validated_groups_gives_the_band():
    table = bands.bands()["groups"]
    for kind in bands.KINDS:
        held = [g for g in bands.GROUPS if "low" in table[g].get(kind, {})]
        for a in held:
            for b in held:
                narrow = min((a, b), key=lambda g: table[g][kind]["rows"])
                low, high = bands.factors(kind, (a, b))
                assert (low, high) == (table[narrow][kind]["low"], table[narrow][kind]["high"])
    assert any(
        len([g for g in bands.GROUPS if "low" in table[g].get(kind, {})]) >= 2
        for kind in bands.KINDS
    )  # the rule is exercised: some kind has two validated groups


def test_a_sweeps_bands_follow_each_rows_group():
    t = ia.sweep("llama-3.1-8b", "h100-sxm", prompt_len=[1024, 16000], output_len=64)
    arch, gpu = ia.model("llama-3.1-8b"), ia.gpu("h100-sxm")
    for i, prompt in enumerate(t["prompt_len"].tolist()):
        groups = bands.groups_of(arch, gpu, "bf16", "tensor", prompt)
        for key, (kind, speed) in CALCULATE_BANDED.items():
            expected = bands.band(kind, float(t[key][i]), speed, groups)
            got = (float(t[f"band.{key}_low"][i]), float(t[f"band.{key}_high"][i]))
            if expected is None:
                assert all(np.isnan(got)), (prompt, key)
            else:
                assert got == pytest.approx(expected), (prompt, key)
    blackwell = ia.sweep("llama-3.1-8b", "b200", batch=[1, 8])
    assert all(np.isnan(blackwell[f"band.{key}_low"]).all() for key in CALCULATE_BANDED)
