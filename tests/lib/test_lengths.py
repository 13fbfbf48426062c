"""Requests of many lengths in the steady state (``serving.lengths``): the closed form of a
workload's distribution of lengths against the SimPy engine drawing the same pairs, and one
length given as a sequence against the scalars."""

import functools
import math

import numpy as np
import pytest

import inference_arithmetic as ia
from inference_arithmetic.serving import continuous, lengths, simulation
from inference_arithmetic.serving.lengths import Lengths, sums


def _log_normal(mean, sigma, low, seed):
    draws = np.random.default_rng(seed).lognormal(0.0, sigma, 4000)
    return np.maximum(np.round(mean * draws / draws.mean()), low).astype(int)


# Chapter 09's spread (log-normal, sigma 0.8, about its prompt and answer), and a chat-like one
# (ShareGPT's shape: short prompts, longer answers, both long-tailed; chosen, not fitted).
SPREADS = {
    "chapter 10": ((1024, 0.8), (128, 0.8)),
    "chat": ((256, 1.0), (320, 0.9)),
}
MODELS = {"dense": ("llama-3.1-8b", 1), "moe": ("mixtral-8x7b", 2)}
LOADS = (0.3, 0.6, 0.85)
# The chat spread at every load; chapter 10's up to 0.6 (at 0.85 its closed form alone takes
# half a minute, and the chat spread's longer tail is the harder case there).
CASES = [(m, "chat", load) for m in MODELS for load in LOADS]
CASES += [(m, "chapter 10", load) for m in MODELS for load in LOADS[:2]]
REQUESTS = {0.3: 2_000, 0.6: 4_000, 0.85: 10_000}


@functools.cache
def _workload(spread):
    (prompt, p_sigma), (output, o_sigma) = SPREADS[spread]
    return _log_normal(prompt, p_sigma, 1, 1), _log_normal(output, o_sigma, 2, 2)


def _lengths(spread):
    prompts, outputs = _workload(spread)
    return dict(prompt_len=prompts, output_len=outputs)


def _engine(engine):
    """The keyword that names ``engine``, none for the default."""
    return {} if engine is None else {"engine": engine}


@functools.cache
def _rate(model, spread, load, engine=None):
    name, n = MODELS[model]
    workload = Lengths.of(*_workload(spread))
    prompt, output = workload.scenario_lengths()
    s = ia.Scenario(name, "h100-sxm", n_gpus=n, in_waves=True, prompt_len=prompt, output_len=output,
                    **_engine(engine))  # fmt: skip
    return load * continuous.saturation_rate(s, workload)


@functools.cache
def _case(model, spread, load, engine=None):
    name, n = MODELS[model]
    prompts, outputs = _workload(spread)
    rate = _rate(model, spread, load, engine)
    closed = ia.steady_state(
        name, "h100-sxm", requests_per_s=rate, prompt_len=prompts, output_len=outputs, n_gpus=n,
        **_engine(engine),
    )  # fmt: skip
    runs = [
        simulation.simulate(
            name,
            "h100-sxm",
            requests_per_s=rate,
            prompt_len=prompts,
            output_len=outputs,
            n_gpus=n,
            seed=seed,
            requests=REQUESTS[load],
            **_engine(engine),
        )
        for seed in range(2)
    ]
    return closed, runs


# Not yet held: Mixtral's p99 TTFT of the chat spread at 0.85 of saturation on vLLM 0.11's
# 8,192-token step is a quarter short of the simulation (0.197 s against 0.264 s; its mean,
# p50 and p90 within 3%). The tail is the wait for memory: the simulation admits a request
# while its whole cache fits in the tokens held, and with the memory unbounded its p99 is
# 0.201 s. The closed form has no such wait (the memory only sets where it saturates).
MISSED = {("moe", "chat", 0.85)}
MISSED_WHY = "Mixtral's chat p99 TTFT at 0.85 at 8,192 tokens: the wait for memory"


@pytest.mark.parametrize(
    ("model", "spread", "load"),
    [
        pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=MISSED_WHY))
        if case in MISSED
        else case
        for case in CASES
    ],
)
@pytest.mark.slow
def test_the_steady_state_of_many_lengths_is_the_simulations(model, spread, load):
    # The chat spread's p99 TTFT was 17-30% short from 0.6 while its sums and bins were cut by
    # their share of requests, not of tokens (``serving.lengths.NODES``).
    closed, runs = _case(model, spread, load)
    for key in ("ttft", "tpot"):
        simulated = np.mean([run[key] for run in runs])
        assert closed[key] == pytest.approx(simulated, rel=0.10), (key, closed[key], simulated)
        for tail in ("p90", "p99"):
            simulated = np.mean([run["percentiles"][key][tail] for run in runs])
            mine = closed["percentiles"][key][tail]
            assert mine == pytest.approx(simulated, rel=0.15), (key, tail, mine, simulated)


@pytest.mark.slow
def test_without_the_distribution_the_steady_state_misses_the_tail():
    # The companion of the 15%: the steady state of the mean lengths (the closed form before
    # it took a distribution) puts the first token's p99 far short of the simulation's.
    name, n = MODELS["dense"]
    closed, runs = _case("dense", "chapter 10", 0.6)
    rate = 0.6 * continuous.saturation_rate(
        ia.Scenario(name, "h100-sxm", n_gpus=n, in_waves=True, prompt_len=1024, output_len=128),
        Lengths.of(*_workload("chapter 10")),
    )
    means = ia.steady_state(
        name, "h100-sxm", requests_per_s=rate, prompt_len=1024, output_len=128, n_gpus=n
    )["percentiles"]
    simulated = np.mean([run["percentiles"]["ttft"]["p99"] for run in runs])
    assert abs(means["ttft"]["p99"] / simulated - 1) > 0.3, (means["ttft"]["p99"], simulated)
    assert closed["percentiles"]["ttft"]["p99"] == pytest.approx(simulated, rel=0.15)


@pytest.mark.slow
def test_cut_by_requests_the_chat_spreads_tail_is_short(monkeypatch):
    # The companion of the 15% for the chat spread: its sums and bins cut by their share of
    # requests (``lengths.cut`` without the tokens' mass), the first token's p99 is a fifth short.
    # On vLLM 0.7's 512-token step, where the long prompts queue in chunks: at 0.11's 8,192
    # (the default) they go through whole and the cut by requests is 12% short.
    name, n = MODELS["dense"]
    engine = "vllm@0.7"
    closed, runs = _case("dense", "chat", 0.6, engine)
    by_tokens = lengths.cut
    monkeypatch.setattr(lengths, "cut", lambda v, s, groups, mass=None: by_tokens(v, s, groups))
    rate = _rate("dense", "chat", 0.6, engine)
    by_requests = ia.steady_state(
        name, "h100-sxm", requests_per_s=rate, **_lengths("chat"), n_gpus=n, engine=engine
    )
    simulated = np.mean([run["percentiles"]["ttft"]["p99"] for run in runs])
    assert by_requests["percentiles"]["ttft"]["p99"] < 0.85 * simulated
    assert closed["percentiles"]["ttft"]["p99"] == pytest.approx(simulated, rel=0.15)


def test_one_length_given_as_a_sequence_is_the_steady_state_of_that_length():
    args = ("llama-3.1-8b", "h100-sxm")
    assert Lengths.of(1024, 128) is None  # two lengths: the engine of one length, untouched
    assert ia.steady_state(
        *args, requests_per_s=4.0, prompt_len=[1024] * 3, output_len=[128] * 3
    ) == ia.steady_state(*args, requests_per_s=4.0, prompt_len=1024, output_len=128)
    assert ia.steady_state(
        *args, requests_per_s=4.0, prompt_len=[1024] * 3, output_len=128
    ) == ia.steady_state(*args, requests_per_s=4.0, prompt_len=1024, output_len=128)


def test_the_distribution_enters_where_the_means_do_not_suffice():
    # Two requests, of 512 + 64 and 1536 + 192 tokens: means 1024 + 128, but the decodes hold
    # the long answer three times as often, so their mean context is the long one's nearer.
    w = Lengths.of([512, 1536], [64, 192])
    assert w.means == (1024.0, 128.0) and w.scenario_lengths() == (1024, 128)
    assert w.context == pytest.approx((63 * (512 + 31) + 191 * (1536 + 95)) / (63 + 191))
    assert w.prompts == ((512.0, 1536.0), (0.5, 0.5))
    # Sums of K prompts keep their mean K x 1024 at every K; one length is K times it.
    points, shares = sums(*w.prompts, range(6))
    assert np.allclose((points * shares).sum(axis=1), 1024 * np.arange(6))
    assert np.allclose(shares.sum(axis=1), 1.0) and points.shape == (6, 6)
    points, shares = sums((700.0,), (1.0,), range(3))
    assert points.tolist() == [[0.0], [700.0], [1400.0]] and shares.tolist() == [[1.0]] * 3
    # Cut by their tokens, four or more of the chat prompts' 16 groups lie past their 99th
    # percentile, where the first token's p99 reads them (two, cut by requests), and the groups
    # keep the mean.
    chat = _workload("chat")[0]
    groups, shares = Lengths.of(*_workload("chat")).prompts
    assert (np.array(groups) > np.percentile(chat, 99)).sum() >= 4
    assert np.dot(groups, shares) == pytest.approx(chat.mean())
    # The same means at one rate: the spread lengthens the first token's tail and widens the
    # time per token (short answers average fewer steps).
    args = ("llama-3.1-8b", "h100-sxm")
    one = ia.steady_state(*args, requests_per_s=4.0, prompt_len=1024, output_len=128)["percentiles"]
    spread = ia.steady_state(*args, requests_per_s=4.0, **_lengths("chapter 10"))["percentiles"]
    assert spread["ttft"]["p99"] > 1.3 * one["ttft"]["p99"]
    assert spread["tpot"]["p99"] - spread["tpot"]["p50"] > one["tpot"]["p99"] - one["tpot"]["p50"]


def test_bad_lengths_are_refused_by_name():
    args = ("llama-3.1-8b", "h100-sxm")
    with pytest.raises(ia.ArgumentError, match="of one length, to keep their pairs"):
        ia.steady_state(
            *args, requests_per_s=4.0, prompt_len=[1024, 2048], output_len=[128, 256, 512]
        )
    with pytest.raises(ia.ArgumentError, match="prompt_len must be a whole number of tokens"):
        ia.steady_state(*args, requests_per_s=4.0, prompt_len=[1024, 0], output_len=128)
    with pytest.raises(ia.ArgumentError, match="output_len must be a whole number from 2 up"):
        ia.steady_state(*args, requests_per_s=4.0, prompt_len=[1024, 2048], output_len=[128, 1])


# A chat service on one H100 per replica: the p99 of each request's TTFT and TPOT within 100 ms
# and 30 ms. The spread's long prompts make the first token's tail, which its means do not have.
TARGETS = {"ttft_target": 0.1, "tpot_target": 0.03, "percentile": 99}
# On vLLM 0.7's 512-token step, whose chunks make the long prompts' TTFT bind: at 0.11's 8,192
# (the default) the chat spread's goodput binds on the TPOT instead, 16.3 requests/s against
# 17.5 for its mean lengths.
TARGETS |= {"engine": "vllm@0.7"}
PLANNED_RATE = 14.4  # requests a second: one replica's goodput (9.6) times 1.5
# (two replicas then take three quarters of it each, which the simulation's p99 meets with a
# tenth to spare over three seeds; one takes 1.5 times it, which misses by two thirds).


@functools.cache
def _spread_goodput():
    name, _ = MODELS["dense"]
    return ia.goodput(name, "h100-sxm", **_lengths("chat"), **TARGETS)


@pytest.mark.slow
def test_a_spread_lowers_the_goodput_of_the_same_means():
    name, _ = MODELS["dense"]
    spread = _spread_goodput()
    means = Lengths.of(*_workload("chat")).scenario_lengths()
    one_length = ia.goodput(name, "h100-sxm", prompt_len=means[0], output_len=means[1], **TARGETS)
    assert spread["binds"] == "ttft" and spread["ttft"] == pytest.approx(0.1, rel=1e-3)
    assert spread["requests_per_s"] < 0.7 * one_length["requests_per_s"], (spread, one_length)


@pytest.mark.slow
def test_a_plan_on_a_spread_meets_its_targets_in_the_simulation():
    # The plan's replicas, each serving an equal share, meet both p99s in the simulation of the
    # same lengths; one replica fewer misses them there (the plan is not wasteful either).
    name, _ = MODELS["dense"]
    prompts, outputs = _workload("chat")
    p = ia.plan(
        name,
        "h100-sxm",
        requests_per_s=PLANNED_RATE,
        prompt_len=prompts,
        output_len=outputs,
        **TARGETS,
    )
    assert (p["n_gpus"], p["binds"]) == (1, "ttft")
    assert p["replicas"] == math.ceil(PLANNED_RATE / _spread_goodput()["requests_per_s"]) > 1
    for replicas, meets in ((p["replicas"], True), (p["replicas"] - 1, False)):
        run = simulation.simulate(
            name,
            "h100-sxm",
            requests_per_s=PLANNED_RATE / replicas,
            prompt_len=prompts,
            output_len=outputs,
            requests=10_000,
            engine=TARGETS["engine"],
        )
        judged = {key: run["percentiles"][key]["p99"] for key in ("ttft", "tpot")}
        within = judged["ttft"] <= 0.1 and judged["tpot"] <= 0.03
        assert within == meets, (replicas, judged)


def test_pools_do_not_plan_a_workloads_lengths():
    args = ("llama-3.1-8b", "h100-sxm")
    asked = dict(requests_per_s=4.0, prompt_len=[512, 1536], output_len=[64, 192])
    asked |= dict(ttft_target=1.0, tpot_target=0.05)
    for layout in ("disaggregated", "either"):
        with pytest.raises(ia.ArgumentError, match=f"so layout='{layout}' cannot weigh them"):
            ia.plan(*args, **asked, layout=layout)
