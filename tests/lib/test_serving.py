"""The report of a served model (ia.calculate): closed forms that agree with the step-by-step
library, and clear errors."""

import importlib
import math
import re

import pytest

import inference_arithmetic as ia
from inference_arithmetic import serving
from inference_arithmetic.serving import timing
from inference_arithmetic.serving.economics import token_costs
from inference_arithmetic.serving.report import calculate

M, G = ia.model("llama-3.1-8b"), ia.gpu("h100-sxm")


def _close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel)


@pytest.mark.parametrize(
    "name, gpu, n, dtype, cache, batch",
    [
        ("llama-3.1-8b", "h100-sxm", 1, "bf16", None, 16),
        ("llama-3.1-70b", "h200", 4, "fp8", "fp8", 64),
        ("mixtral-8x7b", "a100-80gb", 2, "bf16", "int8", 8),
    ],
)
def test_one_bound_throughout_gives_the_librarys_numbers_exactly(name, gpu, n, dtype, cache, batch):
    m, g = ia.model(name), ia.gpu(gpu)
    r = calculate(
        name,
        gpu,
        n_gpus=n,
        dtype=dtype,
        cache_dtype=cache,
        batch=batch,
        prompt_len=2048,
        output_len=256,
    )
    assert r["exact"] and r["bound"] == {"prefill": "compute", "decode": "bandwidth"}
    run = ia.generation(
        m, g, batch=batch, prompt_len=2048, output_len=256, n_gpus=n, dtype=dtype, cache_dtype=cache
    )
    for key in ("ttft", "tpot", "request_time", "throughput"):
        assert _close(r[key], run[key]), key
    weights = ia.param_count(m) * ia.bytes_per_number(dtype) / n
    cache_bytes = (
        ia.kv_cache_bytes(m, batch=batch, context_len=2048 + 256, dtype=cache or dtype) / n
    )
    assert _close(r["memory"]["weights"], weights)
    assert _close(r["memory"]["kv_cache"], cache_bytes)
    parts = ("weights", "kv_cache", "activations")
    assert _close(r["memory"]["total"], sum(r["memory"][part] for part in parts))
    costs = token_costs(
        m, g, batch=batch, prompt_len=2048, output_len=256, n_gpus=n, dtype=dtype, cache_dtype=cache
    )
    for key in ("input", "output", "request"):
        assert _close(r["cost"][key], costs[key]), key
    assert r["cost"]["price_date"] == g.price_date


def test_costs_by_hand():
    r = calculate(M, G, batch=8)
    per_second = G.price_per_hour / 3600
    assert _close(r["cost"]["input"], per_second * r["ttft"] / (8 * 2048) * 1e6)
    assert _close(r["cost"]["output"], per_second * r["tpot"] / 8 * 1e6)


def test_tpot_is_the_step_at_the_mean_context():
    r = calculate(M, G, batch=4, prompt_len=1000, output_len=101)
    assert r["mean_context"] == 1000 + 99 / 2  # steps at 1000, ..., 1099
    step = ia.decode_step_time(M, G, batch=4, context_len=1000) + ia.decode_step_time(
        M, G, batch=4, context_len=1099
    )
    assert _close(r["tpot"], step / 2)
    two = calculate(M, G, output_len=2)  # one decode step, at S = T
    assert two["mean_context"] == 2048
    assert _close(two["tpot"], ia.decode_step_time(M, G, batch=1, context_len=2048))
    one = ia.generation(M, G, output_len=1)  # one token: the prefill's, no decode step
    assert one["request_time"] == one["ttft"] and _close(one["throughput"], 1 / one["ttft"])


ONE_TOKEN = "output_len must be a whole number from 2 up, got 1: a request of one output token"


def test_a_report_of_one_output_token_is_refused_as_the_steady_state_refuses_it():
    # One output token is a prefill alone: no time per output token to report (ONE_TOKEN).
    for answer in (
        lambda: calculate(M, G, output_len=1),
        lambda: ia.steady_state(M, G, requests_per_s=1.0, output_len=1),
        lambda: ia.sweep(M, G, output_len=[256, 1]),
    ):
        with pytest.raises(ia.ArgumentError, match=ONE_TOKEN):
            answer()


def test_defaults_are_the_librarys():
    r = calculate(M, G)
    s = ia.Scenario(M, G)
    assert r["step"] == "kernels" and r["engine"] == "vllm@0.11"  # the newest vLLM
    assert r["compute_efficiency"] == s.figure("compute_efficiency") == G.achieved["matmul.bf16"]
    assert r["bandwidth_efficiency"] == G.achieved["stream"]
    assert r["memory_utilization"] == timing.DEFAULT_MEMORY_UTILIZATION
    slower = calculate(M, G, bandwidth_efficiency=r["bandwidth_efficiency"] / 2)
    assert slower["tpot"] > 1.6 * r["tpot"]  # decode is bandwidth-bound at batch 1
    roof = calculate(M, G, step="roofline")
    assert roof["compute_efficiency"] == timing.DEFAULT_COMPUTE_EFFICIENCY
    ideal = calculate(M, G, **timing.IDEAL)
    assert _close(ideal["tpot"], ia.generation(M, G, **timing.IDEAL)["tpot"])


@pytest.mark.slow
def test_a_bound_that_changes_during_the_output_is_flagged():
    # A large batch starts compute-bound; as its caches grow, reading them overtakes.
    r = calculate("llama-3.1-8b", "h100-sxm", batch=256, prompt_len=100, output_len=1000,
                  step="roofline")  # fmt: skip
    assert r["bound"]["decode"] == "compute, then bandwidth" and not r["exact"]
    # A sliding window that fills up during the output makes the mean approximate too.
    w = calculate("mistral-7b-v0.1", "h100-sxm", prompt_len=3000, output_len=3000)
    assert not w["exact"]
    assert calculate("mistral-7b-v0.1", "h100-sxm", prompt_len=1000, output_len=1000)["exact"]


def test_memory_grows_with_the_batch_and_shrinks_with_gpus():
    one, two = calculate(M, G, batch=1), calculate(M, G, batch=2)
    assert _close(two["memory"]["kv_cache"], 2 * one["memory"]["kv_cache"])
    split = calculate(M, G, n_gpus=2)
    assert _close(split["memory"]["weights"], one["memory"]["weights"] / 2)
    assert calculate(M, G, dtype="fp8")["memory"]["weights"] == one["memory"]["weights"] / 2


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"model": "llama-3-8b"}, KeyError, "unknown model 'llama-3-8b'; close matches: "),
        ({"gpu": "h100"}, KeyError, "unknown gpu 'h100'; close matches: .*h100-sxm"),
        ({"dtype": "bf8"}, ValueError, "dtype must be one of .*'bf16'.*got 'bf8'"),
        ({"batch": 0}, ValueError, "batch must be a whole number from 1 up, got 0"),
        ({"prompt_len": -5}, ValueError, "prompt_len must be a whole number from 1 up"),
        ({"output_len": 2.5}, ValueError, "output_len must be a whole number from 1 up"),
        ({"n_gpus": True}, ValueError, "n_gpus must be a whole number from 1 up"),
        ({"n_gpus": 3}, ValueError, "32 attention heads and 8 KV heads .* 3 GPUs.*1, 2, 4, 8"),
        ({"dtype": "int4"}, KeyError, "h100-sxm has no peak FLOP rate for int4.*compute_dtype"),
        (
            {"compute_efficiency": 5},
            ValueError,
            r"compute_efficiency must be a number from 0.001 to 1",
        ),
        ({"model": "gpt2"}, ValueError, r"gpt2 reads at most 1,024 tokens.*is 2,304"),
        (
            {"model": "llama-3.1-405b"},
            ValueError,
            r"llama-3.1-405b does not fit: needs 81\d GB per GPU .* budget is 77 GB "
            r"\(0.9 of 85.5 GB\)",
        ),
        ({"batch": 4096, "prompt_len": 100_000}, ValueError, "does not fit"),
        ({"prefix_hit_rate": 1.5}, ValueError, "prefix_hit_rate must be a number from 0 to 1, got"),
        ({"prefix_hit_rate": -0.1}, ValueError, "prefix_hit_rate must be a number from 0 to 1"),
        ({"prefix_hit_rate": "half"}, ValueError, "prefix_hit_rate must be a number from 0 to 1"),
        (
            {"prefix_hit_rate": 0.5, "step": "roofline"},
            ValueError,
            r"prefix_hit_rate and speculative change the step kernel by kernel.*'roofline'",
        ),
        ({"speculative": {"method": "eagle3", "draft_len": 0}}, ValueError, "draft_len must be"),
    ],
)
def test_impossible_inputs_say_why(kwargs, error, fragment):
    arguments = {"model": M, "gpu": G, **kwargs}
    with pytest.raises(error, match=fragment):
        calculate(**arguments)


@pytest.mark.slow
def test_every_model_on_every_gpu_gives_numbers_or_a_clear_error():
    answered = 0
    for name in ia.model_names():
        for gpu in ia.gpu_names():
            try:
                r = calculate(name, gpu, batch=8, prompt_len=512, output_len=128)
            except (ValueError, KeyError) as error:
                assert re.search("does not fit|no peak FLOP rate|context window", str(error))
                continue
            answered += 1
            assert r["memory"]["total"] <= r["memory"]["budget"] < r["memory"]["capacity"]
            assert 0 < r["tpot"] < r["request_time"] and r["throughput"] > 0
            if r["cost"]["price_per_hour"] is None:  # a GPU with no dated price: no cost
                assert r["cost"]["output"] is None and r["cost"]["input"] is None
            else:
                assert r["cost"]["output"] > r["cost"]["input"] > 0
    assert answered > len(ia.model_names())


def test_int4_weights_computed_in_bf16():
    r = calculate(M, G, dtype="int4", compute_dtype="bf16")
    assert r["cache_dtype"] == "bf16" and r["compute_dtype"] == "bf16"
    assert _close(r["tpot"], ia.generation(M, G, dtype="int4", compute_dtype="bf16")["tpot"])


def test_the_bound_text():
    assert serving.bound_text(0) == "bandwidth"
    assert serving.bound_text(0, 1) == "bandwidth, then compute"
    assert serving.bound_text(1, 1) == "compute"


def test_a_report_refuses_a_scenario_in_waves():
    # 1,000 requests in waves: at once they would need far more than the budget, so a report
    # of the batch at once would be false, and one of a wave would not be of that batch.
    s = ia.Scenario(M, G, batch=1000, in_waves=True)
    with pytest.raises(ia.ArgumentError, match=r"in_waves=True, batch=1000.*ia\.serve"):
        serving.report(s)
    assert serving.report(s.replace(in_waves=False, batch=8))["batch"] == 8


def test_fits_is_computed_from_the_memory_and_the_budget(monkeypatch):
    s = ia.Scenario(M, G, batch=8)
    assert serving.report(s)["memory"]["fits"] is True
    values = serving.report_values(s)
    over = {**values, "memory": 2 * values["budget"]}  # what the report is handed decides
    module = importlib.import_module("inference_arithmetic.serving.report")
    monkeypatch.setattr(module, "report_values", lambda *args: over)
    assert serving.report(s)["memory"]["fits"] is False


def test_found_figures_are_kept_and_each_caller_gets_its_own_copy():
    g, e = ia.gpu("h100-sxm"), ia.engine("vllm")
    first = ia.efficiencies.found_figures(g, e, "bf16", "fp8")
    first["compute_efficiency"] = -1.0
    again = ia.efficiencies.found_figures(g, e, "bf16", "fp8")
    assert again is not first
    assert again["compute_efficiency"] == g.achieved_figure("matmul.bf16")
    assert again["bandwidth_efficiency"] == g.achieved_figure("stream.fp8")


# --- A pipeline, and tensor parallelism past one link domain ------------------------------------


@pytest.mark.parametrize(
    "name, gpu, n, batch",
    [("llama-3.1-70b", "h100-sxm", 4, 8), ("llama-3.1-8b", "h100-sxm", 3, 16)],
)
def test_a_pipeline_reports_generations_numbers_and_its_stages_memory(name, gpu, n, batch):
    m, g = ia.model(name), ia.gpu(gpu)
    r = calculate(name, gpu, n_gpus=n, batch=batch, parallel="pipeline")
    assert r["parallel"] == "pipeline" and r["exact"]
    run = ia.generation(
        m, g, batch=batch, prompt_len=2048, output_len=256, n_gpus=n, parallel="pipeline"
    )
    for key in ("ttft", "tpot", "request_time", "throughput"):
        assert _close(r[key], run[key]), key
    # The fullest stage holds ceil(L / n) of the L layers (11 of 32 for the 8B on three GPUs),
    # and n batches in flight keep each stage's layers of every batch's cache.
    layers = -(-m.n_layers // n)
    assert _close(
        r["memory"]["weights"], ia.timing.weights_per_gpu(m, n_gpus=n, parallel="pipeline")
    )
    cache = ia.kv_cache_bytes(m, batch=batch, context_len=2048 + 256)
    assert _close(r["memory"]["kv_cache"], n * cache * layers / m.n_layers)
    # A batch passes every stage in turn: no faster per token than one GPU would be, but the
    # stages work on L / ceil(L / n) batches' worth at once.
    assert _close(r["throughput"], m.n_layers / layers * batch * 256 / r["request_time"])
    tensor = calculate(name, gpu, n_gpus=n if n != 3 else 2, batch=batch)
    assert r["tpot"] > tensor["tpot"] and r["notes"] == []


def test_the_sweep_takes_a_pipeline():
    t = ia.sweep("llama-3.1-70b", "h100-sxm", n_gpus=[2, 4], batch=8, parallel="pipeline")
    want = calculate("llama-3.1-70b", "h100-sxm", n_gpus=4, batch=8, parallel="pipeline")
    assert t["parallel"].tolist() == ["pipeline", "pipeline"]
    assert t["tpot"][1] == want["tpot"] and t["throughput"][1] == want["throughput"]


def _one_domain(g, n):
    """``g`` with a link domain of ``n`` GPUs: its link reaching every GPU of a group of n."""
    import dataclasses

    return dataclasses.replace(g, name=f"{g.name}-{n}", link_domain=n)


def test_tensor_parallelism_past_the_link_domain_says_what_the_network_costs():
    h100 = ia.gpu("h100-sxm")
    r = calculate("llama-3.1-70b", h100, n_gpus=16, batch=8)
    wide = calculate("llama-3.1-70b", _one_domain(h100, 16), n_gpus=16, batch=8)
    extra = r["tpot"] - wide["tpot"]
    assert extra > 0.1 * r["tpot"]  # sixteen ring all-reduces a layer pair over 50 GB/s
    (note,) = r["notes"]
    assert "16 GPUs spans more than one h100-sxm link domain (8 GPUs)" in note
    assert f"adds {ia.format.seconds(extra)} to each decode step" in note
    assert "parallel='pipeline'" in note
    assert (
        wide["notes"] == [] and calculate("llama-3.1-70b", h100, n_gpus=8, batch=8)["notes"] == []
    )
    # A GB200 NVL72 joins 72 GPUs by NVLink: sixteen are inside one domain.
    assert ia.gpu("gb200").link_domain == 72
    assert calculate("llama-3.1-70b", "gb200", n_gpus=16, batch=8)["notes"] == []
    # A pipeline over two boards hands off once a stage: no note.
    assert calculate("llama-3.1-70b", h100, n_gpus=16, batch=8, parallel="pipeline")["notes"] == []
    # PCIe cards join no domain to leave: their link is the slow one throughout.
    assert calculate("llama-3.1-8b", "l40s", n_gpus=2, batch=8)["notes"] == []


def test_no_prefix_cache_and_no_speculation_are_todays_numbers_exactly():
    plain = calculate(M, G, batch=8)
    assert calculate(M, G, batch=8, prefix_hit_rate=0.0, speculative=None) == plain
    assert plain["prefix_hit_rate"] == 0.0 and plain["speculative"] is None


def test_a_prefix_cache_shortens_the_prefill_and_cheapens_input_tokens_alike():
    plain, cached = calculate(M, G, batch=8), calculate(M, G, batch=8, prefix_hit_rate=0.75)
    assert _close(
        cached["ttft"], ia.prefill_time(M, G, batch=8, prompt_len=2048, prefix_hit_rate=0.75)
    )
    assert cached["ttft"] < plain["ttft"] / 2
    # The prefill's seconds over all 8 x 2,048 input tokens, cached or not: the same ratio.
    ratio = cached["cost"]["input"] / plain["cost"]["input"]
    assert ratio == pytest.approx(cached["ttft"] / plain["ttft"], rel=1e-12)
    assert cached["tpot"] == plain["tpot"]  # decoding reads the whole cache all the same


@pytest.mark.slow
def test_speculation_divides_the_verification_step_by_the_tokens_it_yields():
    spec = {"method": "eagle3", "draft_len": 3}
    r = calculate(M, G, batch=4, speculative=spec)
    assert r["exact"]
    assert r["tpot"] == pytest.approx(
        ia.generation(M, G, batch=4, speculative=spec)["tpot"], rel=1e-9
    )
    tokens = r["speculative"]["tokens_per_step"]
    step = ia.decode_step_time(M, G, batch=4, context_len=r["mean_context"], speculative=spec)
    assert r["tpot"] == pytest.approx(step / tokens, rel=1e-9)
    # The gain shrinks as the batch turns the verification step compute-bound: Llama 3.1 70B
    # on four H100s turns so well before its memory fills.
    big = dict(model="llama-3.1-70b", gpu=G, n_gpus=4, prompt_len=1024)
    gains = [calculate(**big, batch=b)["tpot"] / calculate(**big, batch=b, speculative=spec)["tpot"]
             for b in (1, 128)]  # fmt: skip
    assert gains[0] > 1.5 and gains[1] < 0.75 * gains[0]


# --- Expert parallelism ------------------------------------------------------------------------


EXPERT_CASES = [("deepseek-v3", 16), ("deepseek-v3", 64), ("qwen3-235b-a22b", 8)]


def _routed_params(m):
    """The routed experts' parameters, counted from the config by hand (gated: 3 matrices)."""
    return (m.n_layers - m.n_dense_layers) * m.n_experts * 3 * m.d_model * m.d_ff_expert


@pytest.mark.parametrize("name, n", EXPERT_CASES)
@pytest.mark.slow
def test_expert_parallelism_holds_its_share_of_the_experts_and_of_the_requests(name, n):
    m = ia.model(name)
    work = dict(batch=64, prompt_len=1024, output_len=256, dtype="bf16", memory_utilization=1.0)
    tensor = calculate(name, "b200", n_gpus=n, parallel="tensor", **work)["memory"]
    heads = calculate(name, "b200", n_gpus=n, parallel="expert", **work)["memory"]
    dp = calculate(name, "b200", n_gpus=n, parallel="expert-dp", **work)["memory"]
    everything = 2 * ia.param_count(m)  # bf16
    # Attention split by heads: every weight 1/n, as tensor parallelism; the same cache.
    assert _close(heads["weights"], everything / n) and _close(heads["weights"], tensor["weights"])
    assert _close(heads["kv_cache"], tensor["kv_cache"])
    # Data-parallel attention: all but the routed experts other GPUs hold, (n - 1) / n of them.
    assert _close(dp["weights"], everything - 2 * _routed_params(m) * (n - 1) / n)
    # ... and the whole cache of its own 64 / n requests.
    whole = ia.kv_cache_bytes(m, batch=64, context_len=1024 + 256, dtype="bf16")
    assert _close(dp["kv_cache"], whole / n)
    if m.is_mla:  # MLA's latent is kept whole by every GPU that splits attention by heads
        assert _close(tensor["kv_cache"], whole) and dp["kv_cache"] < tensor["kv_cache"] / 4


def test_data_parallel_attention_holds_more_requests_of_an_mla_model():
    # The point of DP attention for DeepSeek-V3: the latent is not copied to every GPU.
    most = {p: ia.max_batch("deepseek-v3", "h200", context_len=8192, n_gpus=8, parallel=p)
            for p in ("tensor", "expert-dp")}  # fmt: skip
    assert most["expert-dp"] > 2 * most["tensor"] > 0


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(model="llama-3.1-70b", parallel="expert"), "MoE model; llama-3.1-70b is dense"),
        (dict(model="mixtral-8x7b", parallel="expert-dp", n_gpus=3), "8 experts cannot be spread"),
        (dict(model="deepseek-v3", parallel="expert-dp", n_gpus=12), "it may be 1, 2, 4, 8, 16"),
        (dict(model="deepseek-v3", parallel="expert", expert_imbalance=0.9), "expert_imbalance"),
        (dict(model="deepseek-v3", parallel="tense"), "parallel must be one of"),
    ],
)
def test_bad_expert_parallelism_says_why(kwargs, fragment):
    kwargs = {"gpu": "h200", "n_gpus": 8, **kwargs}
    with pytest.raises(ia.ArgumentError, match=re.escape(fragment)):
        calculate(**kwargs)


@pytest.mark.slow
def test_expert_parallelism_past_the_link_domain_costs_its_network():
    # DeepSeek-V3 on 16 H200s (two 8-GPU boards) against the same 16 in one domain.
    work = dict(batch=256, prompt_len=2048, output_len=256, parallel="expert-dp")
    boards = calculate("deepseek-v3", "h200", n_gpus=16, **work)["tpot"]
    one_domain = _one_domain(ia.gpu("h200"), 16)
    assert boards > 1.05 * calculate("deepseek-v3", one_domain, n_gpus=16, **work)["tpot"]
    (note,) = calculate("deepseek-v3", "h200", n_gpus=16, **work)["notes"]
    assert "expert parallelism over 16 GPUs" in note and "all-to-alls" in note
    assert calculate("deepseek-v3", "gb200", n_gpus=16, **work)["notes"] == []  # one NVL72 rack


@pytest.mark.slow
def test_the_sweep_and_the_steady_state_take_expert_parallelism():
    t = ia.sweep("deepseek-v3", "h200", n_gpus=8, batch=16, parallel=["expert", "expert-dp"])
    want = calculate("deepseek-v3", "h200", n_gpus=8, batch=16, parallel="expert-dp")
    assert t["parallel"].tolist() == ["expert", "expert-dp"]
    assert _close(t["tpot"][1], want["tpot"]) and _close(
        t["memory.weights"][1], want["memory"]["weights"]
    )
    state = ia.steady_state(
        "deepseek-v3",
        "h200",
        requests_per_s=1.0,
        prompt_len=1024,
        output_len=128,
        n_gpus=8,
        parallel="expert-dp",
    )
    assert 0 < state["utilization"] < 1 and state["tpot"] > 0


def test_serve_of_a_billion_requests_is_waves_in_closed_form_or_refused_by_its_limit():
    # Waves: a billion requests are whole waves of the most that fit, each as long as the first.
    static = ia.serve(M, G, requests=10**9, engine="tensorrt-llm@0.9")
    one = ia.serve(M, G, requests=static["wave_size"], engine="tensorrt-llm@0.9")
    assert static["waves"] == -(-(10**9) // static["wave_size"])
    full, rest = divmod(10**9, static["wave_size"])
    last = ia.serve(M, G, requests=rest, engine="tensorrt-llm@0.9")["elapsed"] if rest else 0.0
    assert _close(static["elapsed"], full * one["elapsed"] + last)
    roof = ia.serve(M, G, requests=10**9, step="roofline")
    assert roof["waves"] == -(-(10**9) // roof["wave_size"])
    # A continuous engine's schedule is followed step by step: refused past its limit, by name.
    most = timing.BURST_LIMIT["requests"]
    for requests, output_len in ((10**9, 256), (most + 1, 2), (most, 4096)):
        with pytest.raises(
            ia.ArgumentError, match=r"requests must be at most 25,000.*steady_state"
        ):
            ia.serve(M, G, requests=requests, output_len=output_len)
    assert ia.serve(M, G, requests=64)["waves"] == 1  # within it, as before
