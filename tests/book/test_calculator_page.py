"""Chapter 16's calculator in a real browser, offline: one form over the whole library, whose
readout (or message) is what ``Calculator`` gives for its controls, in every mode.

Its own file, so that xdist runs it beside the other pages' browser tests: each file runs on
one worker with its own Chromium (tests/book/browser.py), and the two together are the longest
of the book's tests.
"""

import json
import math
import warnings

import inference_arithmetic as ia
from tests.book.browser import low_contrast, open_page
from tests.book.test_browser import CALCULATOR


def _calculator_agrees(page, root):
    """The page's readout (or message) is what the library gives for its controls: the
    Calculator's values, or its message, word for word."""
    from inference_arithmetic.page.calculator import Calculator, RefusedWarning

    state = root.evaluate(
        "r => { const v = {}; r.querySelectorAll('[name]').forEach(e => { v[e.name] = e.value; });"
        " return v; }"
    )
    for name in (*ia.calculator.ranges(), *ia.calculator.AMOUNTS):  # the form's numbers
        if name == ia.calculator.PRICE and not state[name].strip():
            state[name] = None  # blank: the GPU's example price
            continue
        number = float(state[name])
        state[name] = int(number) if number.is_integer() else number
    with warnings.catch_warnings(record=True) as caught:  # a refused form says so once
        warnings.simplefilter("always")
        library = Calculator(**state)
    refusals = [w for w in caught if issubclass(w.category, RefusedWarning)]
    assert len(refusals) == (library.message is not None), (state, caught)
    message = root.evaluate(
        "r => { const m = r.querySelector('.ia-calc-message'); return m && m.textContent; }"
    )
    own = ia.calculator.own_config
    if state["model"] == own.OWN and message is not None and message != library.message:
        # The page reads a pasted config.json by fewer rules than the library's parser: a
        # config it cannot read gets one of its own messages, naming what it cannot read.
        starts = [template.split("{")[0] for template in own.MESSAGES.values()]
        assert any(message.startswith(start) for start in starts), (state, message)
        return state, None
    if library.values is None:
        assert message == library.message, state
        return state, None
    assert message is None, (state, message)
    cells = root.evaluate(
        "r => [...r.querySelectorAll('.ia-calc-value')].map(c => "
        "[c.dataset.key, c.dataset.value ?? null, c.dataset.text ?? null, c.textContent])"
    )
    assert len(cells) >= 6  # the plan has 6 rows, the other modes more
    shown = library.text()
    for key, value, text, words in cells:
        assert words in shown, (key, words)  # the same text as format.show gives
        if text is not None:
            assert text in shown, key
        elif value is None:
            assert library.values[key] is None, key
        else:
            # The steady state (and the plan over it) is a fixed point the page solves itself.
            tolerance = 1e-9 if library.state["mode"] == ia.calculator.STATIC else 1e-6
            assert math.isclose(float(value), library.values[key], rel_tol=tolerance), key
    return state, library.result


def test_the_calculator_recomputes_what_calculate_gives(browser):
    page, errors = open_page(browser, CALCULATOR)
    root = page.locator(".ia-calc").first
    _, first = _calculator_agrees(page, root)
    assert first is not None, "the calculator's defaults should fit"
    # A label's first line is its words; the lines after it, a choice's options, are names
    # (llama.cpp's q4_k_m among them).
    words = [t.split("\n")[0] for t in root.locator(".ia-calc-controls label").all_inner_texts()]
    assert len(words) >= 10 and not any("_" in text for text in words), words

    def choose(name, value):
        root.locator(f'select[name="{name}"]').select_option(str(value))
        return _calculator_agrees(page, root)

    def enter(name, value):
        field = root.locator(f'input[name="{name}"]')
        field.fill(str(value))
        field.dispatch_event("change")
        return _calculator_agrees(page, root)

    for name, value in (("gpu", "h100-sxm"), ("dtype", "bf16"), ("model", "llama-3.1-8b")):
        choose(name, value)
    _, small = choose("n_gpus", 1)
    assert small is not None
    _, moved = choose("model", "llama-3.1-70b")
    assert moved is None  # 70B in bf16 on one 80 GB GPU: the message, not numbers
    _, moved = choose("n_gpus", 4)
    assert moved is not None and moved["ttft"] != small["ttft"]
    for name, value in (("gpu", "h200"), ("dtype", "fp8"), ("cache_dtype", "bf16")):
        _, after = choose(name, value)
        assert after is not None and after != moved
        moved = after
    _, twice = enter("replicas", 2)  # a second copy: twice the tokens, each as fast
    assert twice["throughput"] == 2 * moved["throughput"] and twice["tpot"] == moved["tpot"]
    enter("replicas", 1)
    for name, value in (("batch", 48), ("prompt_len", 777), ("output_len", 333)):
        _, after = enter(name, value)
        assert after[name] == value and after["tpot"] != moved["tpot"]
        moved = after
    state, out = enter("batch", -7)  # never clamped: the message names the range
    assert state["batch"] == -7 and out is None
    assert "batch must be a whole number from 1 to 4,096, got -7" in root.inner_text()
    enter("batch", 48)
    offered = root.locator('select[name="n_gpus"] option').all_text_contents()
    assert offered == ["1", "2", "4", "8", "16", "32", "64"]  # the degrees that split 70B's heads
    choose("model", "gpt2")
    choose("n_gpus", 3)  # 12 heads: 3 GPUs split them
    _, out = choose("model", "llama-3.1-70b")  # 64 heads and 8 KV heads: 3 is kept, refused
    assert out is None and "it may be 1, 2, 4, 8" in root.inner_text()
    assert root.locator('select[name="n_gpus"]').input_value() == "3"  # never clamped
    choose("n_gpus", 4)
    _, out = enter("prompt_len", 131_000)  # + 333 output tokens: past the 131,072-token window
    assert out is None and "context window" in root.inner_text()
    enter("prompt_len", 777)
    _, impossible = choose("dtype", "int4")  # no GPU has an int4 FLOP rate
    assert impossible is None and "no peak FLOP rate" in root.inner_text()
    _, weight_only = choose("compute_dtype", "bf16")  # int4 weights computed in bf16
    assert weight_only is not None and weight_only["cache_dtype"] == "bf16"
    choose("compute_dtype", "as weights")
    choose("dtype", "bf16")
    _, impossible = choose("model", "llama-3.1-405b")
    assert impossible is None and "does not fit" in root.inner_text()
    assert not low_contrast(page, ".ia-calc"), "the message must be readable"
    choose("model", "llama-3.1-70b")
    _, steady = choose("mode", "continuous serving")  # a stream at requests_per_s
    assert steady is not None and "saturation_rate" in steady
    assert not root.locator('input[name="batch"]').is_visible()
    _, slow = enter("requests_per_s", 0.5)
    _, steady = enter("requests_per_s", 2)
    assert steady["tpot"] > slow["tpot"] and steady["ttft"] > slow["ttft"]  # busier, slower
    top = steady["saturation_rate"]
    _, past = enter("requests_per_s", round(2 * top, 3))  # past saturation: the message
    assert past is None and "keeps up with at most" in root.inner_text()
    _, past = enter("requests_per_s", -1)  # never clamped
    assert past is None and "requests_per_s must be a positive number" in root.inner_text()
    enter("requests_per_s", 1)
    for name, value in (("gpu", "h200"), ("prompt_len", 500), ("output_len", 300)):
        _, after = (choose if name == "gpu" else enter)(name, value)
        assert after is not None and after["ttft"] != steady["ttft"]
    _, static = choose("mode", "static batch")
    assert static is not None and "saturation_rate" not in static
    assert not errors, f"console errors: {errors}"
    page.close()


def _readout(root):
    return root.locator(".ia-calc-readout").inner_text()


def _form(page, root):
    """Two hands on the calculator's form: ``choose`` an option of a list, ``enter`` a number;
    each returns the library's result for the form after the change, checked equal to the
    page's readout (``_calculator_agrees``), or None where both give a message."""

    def choose(name, value):
        root.locator(f'select[name="{name}"]').select_option(str(value))
        return _calculator_agrees(page, root)[1]

    def enter(name, value):
        field = root.locator(f'input[name="{name}"]')
        field.fill(str(value))
        field.dispatch_event("change")
        return _calculator_agrees(page, root)[1]

    return choose, enter


def _check_new_controls(page, root):
    """The calculator's modes and assumptions on the page: each control moves the readout as
    the library does (``_calculator_agrees`` after every change), and a value out of its range
    shows the library's message naming the range, never a clamp."""
    choose, enter = _form(page, root)

    for name, value in (("gpu", "h100-sxm"), ("model", "llama-3.1-70b"), ("n_gpus", 4)):
        choose(name, value)
    steady = choose("mode", "continuous serving")
    assert 0.4 < steady["utilization"] < 0.6  # the default rate: half the saturation rate
    keys = root.evaluate("r => [...r.querySelectorAll('.ia-calc-value')].map(c => c.dataset.key)")
    assert {"weights", "kv_cache", "memory", "budget", "cost_blended", "cost_request"} <= set(keys)
    # Each assumption: a value in range changes the readout; one out of range names its range.
    controls = [
        ("memory_utilization", 0.85, 1.5, "memory_utilization must be a number from 0.001 to 1"),
        ("token_budget", 2048, 0, "token_budget must be a whole number from 1 to "),
        ("price_per_hour", 2.5, -1, "price_per_hour must be a positive number of dollars"),
        ("requests_per_s", 1.5, 0, "requests_per_s must be a positive number of requests"),
    ]
    for name, value, bad, words in controls:
        before = _readout(root)
        assert enter(name, value) is not None and _readout(root) != before, name
        assert enter(name, bad) is None and f"{words}" in _readout(root), name
        assert root.locator(f'input[name="{name}"]').input_value() == str(bad)  # kept
        enter(name, value)
    before = _readout(root)
    assert not root.locator('input[name="compute_efficiency"]').is_visible()  # the kernels'
    assert choose("step", "roofline") is not None and _readout(root) != before
    for name, value, bad in (("compute_efficiency", 0.7, 1.2), ("bandwidth_efficiency", 0.8, 0)):
        before = _readout(root)
        assert enter(name, value) is not None and _readout(root) != before, name
        assert enter(name, bad) is None, name
        assert f"{name} must be a number from 0.001 to 1, got {bad}" in _readout(root)
        enter(name, value)
    choose("step", "kernels")
    enter("price_per_hour", "")  # blank: the GPU's example price again
    # Sizing from targets: the plan, and its refusal when no deployment meets them.
    plan = choose("mode", "sizing from targets")
    assert plan is not None and plan["gpus"] == plan["replicas"] * plan["n_gpus"]
    assert not root.locator('select[name="n_gpus"]').is_visible()  # the plan chooses them
    tighter = enter("tpot_target", 0.03)
    assert tighter is None or tighter["gpus"] >= plan["gpus"]
    assert enter("ttft_target", 0.001) is None and "no deployment of up to" in _readout(root)
    assert enter("ttft_target", -1) is None and "ttft_target must be a positive" in _readout(root)
    # The plan over a pipeline's stages (the stream's parallelisms only are offered): looser
    # targets, met by 3 stages, fewer GPUs than tensor parallelism's 2 x 2 and no split of
    # 70B's heads.
    assert root.locator('select[name="parallel"] option').all_text_contents() == list(
        ia.calculator.STREAM_PARALLEL
    )
    enter("ttft_target", 1.0)
    tensor = enter("tpot_target", 0.15)
    staged = choose("parallel", "pipeline")
    assert staged is not None and staged["gpus"] == 3 < tensor["gpus"]
    choose("parallel", "tensor")
    enter("ttft_target", 0.5)
    enter("tpot_target", 0.05)
    # A pipeline (the static mode's): any number of stages up to the layers.
    static = choose("mode", "static batch")
    choose("parallel", "pipeline")
    offered = root.locator('select[name="n_gpus"] option').all_text_contents()
    assert offered == [str(n) for n in range(1, 65)]
    piped = choose("n_gpus", 5)  # 5 stages: not a tensor-parallel degree of 70B
    assert piped is not None and piped["parallel"] == "pipeline" and piped != static
    choose("n_gpus", 4)
    # Its steady state: each request waits for its micro-batch's round (the sum of
    # formulas.continuous.pipeline_wait over the chain's steps), longer than one engine's step.
    piped = choose("mode", "continuous serving")
    tensor = choose("parallel", "tensor")
    assert piped is not None and piped["tpot"] > tensor["tpot"]
    choose("mode", "static batch")
    choose("parallel", "tensor")
    # FP4 where the GPU has an fp4 rate.
    choose("gpu", "b200")
    for dtype in ("nvfp4", "mxfp4"):
        fp4 = choose("dtype", dtype)
        assert fp4 is not None and fp4["compute_dtype"] == "fp4", dtype
    assert choose("gpu", "h100-sxm") is None and "no peak FLOP rate for fp4" in _readout(root)
    choose("dtype", "auto")
    # A config.json pasted in: read by the page's rules, computed as the library's parser reads
    # it; what the page cannot read is named.
    own = ia.calculator.own_config
    assert not root.locator('textarea[name="config"]').is_visible()
    assert choose("model", own.OWN) is None and own.MESSAGES["json"] in _readout(root)

    def paste(config):
        field = root.locator('textarea[name="config"]')
        field.fill(config if isinstance(config, str) else json.dumps(config))
        field.dispatch_event("change")
        return _calculator_agrees(page, root)[1]

    config = own._verbatim("llama-3.1-8b")  # no head_dim: the parser derives it, the page not
    assert paste(config) is None and "it lacks head_dim" in _readout(root)
    config |= {"head_dim": 128, "hidden_size": 3072, "num_attention_heads": 24}
    mine = paste(config)
    assert mine is not None and mine["model"] == own.OWN
    offered = root.locator('select[name="n_gpus"] option').all_text_contents()
    assert "24" in offered and "16" not in offered  # the degrees that split 24 heads
    assert paste({**config, "tie_word_embeddings": True}) is None
    assert "it sets tie_word_embeddings to true" in _readout(root)
    assert paste({**config, "hidden_size": -1}) is None
    assert "config.json's hidden_size must be a positive whole number, got -1" in _readout(root)
    assert paste({"model_type": "t5"}) is None and 'this one is "t5"' in _readout(root)
    paste(config)
    assert choose("mode", "continuous serving") is not None
    choose("mode", "static batch")
    choose("model", "llama-3.1-70b")


def _opened(browser, model):
    """The calculator's page opened, its ``root`` and the hands on its form (``_form``), with
    ``model`` on an H100 in the weights' own format: (page, errors, root, choose, enter)."""
    page, errors = open_page(browser, CALCULATOR)
    root = page.locator(".ia-calc").first
    choose, enter = _form(page, root)
    for name, value in (("model", model), ("gpu", "h100-sxm"), ("dtype", "auto")):
        choose(name, value)
    return page, errors, root, choose, enter


def test_the_calculators_modes_and_assumptions_move_its_readout(browser):
    page, errors = open_page(browser, CALCULATOR)
    _check_new_controls(page, page.locator(".ia-calc").first)
    assert not errors, f"console errors: {errors}"
    page.close()


def test_the_calculator_offers_expert_parallelism_and_the_serving_options(browser):
    moe = "qwen3-30b-a3b"  # 128 experts: small enough for a few GPUs
    # Expert parallelism, for a model with experts; the imbalance where they are spread.
    page, errors, root, choose, enter = _opened(browser, moe)
    enter("batch", 64)
    assert not root.locator('input[name="expert_imbalance"]').is_visible()
    choose("parallel", "expert-dp")
    offered = root.locator('select[name="n_gpus"] option').all_text_contents()
    expected = ia.serving.scenario.expert_parallel_degrees(ia.model(moe), 64)
    assert offered == [str(n) for n in expected]  # the counts that spread 128 experts evenly
    spread = choose("n_gpus", 4)
    assert spread is not None and spread["parallel"] == "expert-dp"
    assert root.locator('input[name="expert_imbalance"]').is_visible()
    wide = choose("n_gpus", 16)  # past H100's link domain: the all-to-all over the network too
    assert wide is not None and wide["tpot"] != spread["tpot"]
    choose("n_gpus", 4)
    busier = enter("expert_imbalance", 2)
    assert busier is not None and busier["tpot"] > spread["tpot"]
    assert enter("expert_imbalance", 0.5) is None
    assert "expert_imbalance must be a number from 1 " in _readout(root)
    enter("expert_imbalance", 1.5)
    assert choose("parallel", "expert") is not None
    assert choose("model", "llama-3.1-8b") is None  # dense: the reason, not a number
    assert ia.formulas.latency.NO_EXPERTS.format(model="llama-3.1-8b") in _readout(root)
    # The stream's steady state is of tensor parallelism or a pipeline: experts are named.
    assert choose("mode", "continuous serving") is None
    assert ia.calculator.not_streamed("expert") in _readout(root)
    choose("mode", "static batch")
    choose("parallel", "tensor")
    choose("n_gpus", 1)
    # A stream with a prefix cache and speculation, and the plan over it.
    plain = choose("mode", "continuous serving")
    assert root.locator('input[name="prefix_hit_rate"]').is_visible()
    cached = enter("prefix_hit_rate", 0.5)
    assert cached is not None and cached["ttft"] < plain["ttft"]  # half of each prompt
    for method in ("eagle3", "ngram"):
        drafted = choose("speculative", method)
        assert drafted is not None and drafted["tpot"] != cached["tpot"], method
    assert choose("speculative", "mtp") is None  # Llama ships no MTP module: the refusal
    assert "ships no multi-token prediction module" in _readout(root)
    assert choose("speculative", "draft") is None  # no defaults: the library's refusal
    assert "speculative method 'draft' has no default" in _readout(root)
    choose("speculative", "eagle3")
    assert enter("prefix_hit_rate", 1.5) is None
    assert "prefix_hit_rate must be a number from 0 to 1, got 1.5" in _readout(root)
    enter("prefix_hit_rate", 0.5)
    assert choose("step", "roofline") is None and "does not model them" in _readout(root)
    choose("step", "kernels")
    planned = choose("mode", "sizing from targets")
    assert planned is not None and planned["gpus"] >= 1
    assert choose("speculative", "draft") is None and "has no default" in _readout(root)
    choose("speculative", "none")
    enter("prefix_hit_rate", 0)
    choose("mode", "static batch")
    assert not errors, f"console errors: {errors}"
    page.close()


def test_the_calculator_plans_on_percentiles_as_ia_plan_does(browser):
    """The plan mode judges its targets on the percentile chosen, as ``ia.plan`` does, and the
    continuous mode shows the percentiles of the steady state, as ``ia.steady_state`` gives
    them, to the digits the readout prints (``_calculator_agrees`` holds every cell)."""
    page, errors, root, choose, enter = _opened(browser, "llama-3.1-70b")
    choose("mode", "sizing from targets")
    assert root.locator('select[name="percentile"]').is_visible()
    assert root.locator('select[name="percentile"] option').all_text_contents() == list(
        ia.calculator.JUDGED
    )
    assert root.locator('select[name="percentile"]').input_value() == "mean"  # ia.plan's default
    asked = {"requests_per_s": 10, "prompt_len": 2048, "output_len": 256}
    asked |= {"ttft_target": 0.5, "tpot_target": 0.05}
    for name, value in asked.items():
        enter(name, value)
    on_means = _calculator_agrees(page, root)[1]
    on_p99 = choose("percentile", "p99")
    expected = ia.plan("llama-3.1-70b", "h100-sxm", **asked, percentile=99)
    for key in ("replicas", "n_gpus", "gpus"):
        assert on_p99[key] == expected[key], key
    assert on_p99["gpus"] > on_means["gpus"]  # the tail costs GPUs the means do not
    assert "its times are each request's p99" in _readout(root)
    # That deployment served continuously: its percentiles, each the library's.
    choose("mode", "continuous serving")
    choose("n_gpus", expected["n_gpus"])
    steady = enter("replicas", expected["replicas"])
    library = ia.steady_state(
        "llama-3.1-70b",
        "h100-sxm",
        requests_per_s=asked["requests_per_s"],
        prompt_len=asked["prompt_len"],
        output_len=asked["output_len"],
        n_gpus=expected["n_gpus"],
        replicas=expected["replicas"],
    )
    shown = root.evaluate(
        "r => Object.fromEntries([...r.querySelectorAll('.ia-calc-value')]"
        ".map(c => [c.dataset.key, c.textContent]))"
    )
    for time, named in library["percentiles"].items():
        for name, value in named.items():
            key = ia.calculator.PERCENTILE_KEY.format(time=time, name=name)
            assert shown[key] == ia.format.seconds(value), key
            assert steady["percentiles"][time][name] == value
    assert library["percentiles"]["ttft"]["p99"] <= asked["ttft_target"]  # as planned
    assert library["percentiles"]["tpot"]["p99"] <= asked["tpot_target"]
    assert not root.locator('select[name="percentile"]').is_visible()  # the plan's alone
    assert not errors, f"console errors: {errors}"
    page.close()


def test_the_calculators_frontier_is_ia_frontiers(browser):
    """The frontier mode: the page sweeps the closed loops of ``ia.frontier`` itself (closed.js,
    frontier.js), and each cell of its table is the library's, for a dense model and an MoE
    model whose experts are spread; its refusals are the library's words."""
    page, errors, root, choose, enter = _opened(browser, "llama-3.1-70b")
    # A stream's serving options are not the frontier's (its steps are plain).
    choose("mode", "continuous serving")
    enter("prefix_hit_rate", 0.5)
    dense = choose("mode", ia.calculator.FRONTIER)
    assert dense is not None and len({p["n_gpus"] for p in dense}) > 1  # several layouts
    assert [p["n_gpus"] for p in dense] == sorted((p["n_gpus"] for p in dense), reverse=True)
    for name in ("n_gpus", "parallel", "price_per_hour", "batch", "requests_per_s"):
        assert not root.locator(f'[name="{name}"]').is_visible(), name
    header = root.locator(".ia-calc-readout th").all_text_contents()
    assert header == [label for _, label, _ in ia.calculator.FRONTIER_COLUMNS]
    shorter = enter("prompt_len", 500)
    assert shorter is not None and shorter != dense
    moe = choose("model", "qwen3-30b-a3b")  # 128 experts, spread over 2 to 8 H100s
    assert {p["parallel"] for p in moe} & set(ia.formulas.latency.EXPERT_PARALLEL)
    wider = enter("token_budget", 2048)
    assert wider is not None and wider != moe
    # Its refusals, each ia.frontier's (``_calculator_agrees`` holds the words).
    assert choose("step", "roofline") is None
    assert ia.serving.engine.EXPERTS_BY_KERNELS in _readout(root)
    assert choose("model", "llama-3.1-8b") is not None  # a dense model's roofline loops
    choose("step", "kernels")
    assert enter("output_len", 1) is None and "output_len must be a whole number from 2" in (
        _readout(root)
    )
    enter("output_len", 256)
    assert enter("prompt_len", 131_000) is None and "context window" in _readout(root)
    enter("prompt_len", 2048)
    choose("gpu", "l40s")
    assert choose("model", "llama-3.1-405b") is None and "no layout of" in _readout(root)
    choose("gpu", "h100-sxm")
    choose("model", "llama-3.1-70b")
    enter("token_budget", 512)
    choose("mode", "continuous serving")
    enter("prefix_hit_rate", 0)
    choose("mode", "static batch")
    assert not errors, f"console errors: {errors}"
    page.close()


# --- The appendices: the formula reference and the glossary -----------------------------------
