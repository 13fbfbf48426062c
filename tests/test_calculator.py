"""The calculator's form: the ipywidgets view and the page, whose data carries the library's
formulas, checks and messages (the page itself is checked in test_browser.py)."""

import json
import re

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic import calculator, scenario, serving, timing
from inference_arithmetic.serving import calculate

M = ia.model("llama-3.1-8b")


def test_widget_shows_a_message_for_impossible_inputs_and_never_clamps():
    w = calculator.widget(batch=8)
    assert w.result["batch"] == 8 and w.message is None
    w.update(batch=-3)
    assert w.state["batch"] == -3 and w.result is None
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
    w = calculator.widget(model="llama-3.1-70b", n_gpus=2, dtype="int4", batch=8)
    assert "no peak FLOP rate for int4" in w.message
    w.update(compute_dtype="bf16")
    assert w.result == calculate("llama-3.1-70b", "h100-sxm", n_gpus=2, dtype="int4",
                                 compute_dtype="bf16", batch=8)  # fmt: skip
    assert w.result["cache_dtype"] == "bf16"  # the cache holds what is computed


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


def test_the_page_carries_the_librarys_formulas_checks_and_messages():
    spec = calculator.Calculator().spec()
    assert set(spec["models"]) == set(ia.model_names())
    assert set(spec["gpus"]) == set(ia.gpu_names())
    page = spec["models"]["llama-3.1-8b"]
    for key, expr in serving.report_formulas(M).items():
        assert page["formulas"][key]["js"] == sympy.jscode(expr), key
        assert page["formulas"][key]["args"] == list(ia.numeric(expr).args), key
    rules = [c for c in scenario.CHECKS if c.applies(M, "tensor")]
    assert [c["message"] for c in page["checks"]] == [c.message for c in rules]
    for shown, rule in zip(page["checks"], rules, strict=True):
        assert shown["holds"]["js"] == sympy.jscode(rule.holds(M, "tensor"))
    assert page["degrees"] == "1, 2, 4, 8, 16, 32"  # 32 heads; 8 KV heads, replicated past 8
    assert spec["no_rate"] == scenario.NO_RATE and spec["count_message"] == ia.checks.COUNT
    assert spec["options"]["link_latency"] == timing.DEFAULT_LINK_LATENCY
    html = calculator.Calculator().live_html()
    data = re.search(r'class="ia-calc-spec">(.*?)</script>', html, re.S).group(1)
    assert json.loads(data)["dtypes"] == ia.DTYPE_BYTES


def test_the_pages_script_holds_no_message_or_formula():
    # Every sentence the page shows comes from the spec: no template text in the script.
    script = calculator._RUNTIME
    for text in ("does not fit", "context window", "FLOP rate", "attention heads", "whole number"):
        assert text not in script
    for kind in ("nbytes", "seconds", "usd"):
        assert kind not in script  # formats are named by the spec's rows
