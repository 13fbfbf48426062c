"""The band every prediction carries (serving.bands): its arithmetic, and where it appears."""

import pytest

import inference_arithmetic as ia
from inference_arithmetic.serving import bands


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
