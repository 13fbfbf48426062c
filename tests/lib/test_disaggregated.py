"""Disaggregated serving: the two pools' steady state against a SimPy simulation of them (the
oracle), the KV transfer, the search for the best split against the best colocated engine, and
bad input."""

import functools

import numpy as np
import pytest

import inference_arithmetic as ia
from inference_arithmetic.formulas import disaggregation
from inference_arithmetic.serving import continuous, disaggregated, simulation

G = "h100-sxm"
# The steady state's agreement with the simulation, the library's own claim (as the book says it).
MEANS, TAILS = continuous.AGREEMENT["means"], continuous.AGREEMENT["percentiles"]
DENSE = ("llama-3.1-70b", 2048, 256, {"prefill_gpus": 4, "decode_gpus": 4})
MOE = ("mixtral-8x7b", 512, 256, {"prefill_gpus": 2, "decode_gpus": 2})
SPREAD = ("llama-3.1-8b", 1024, 128, {"prefill_replicas": 2, "decode_replicas": 3})


def _saturation(name, prompt, output, sizes):
    return disaggregated.steady_state(
        name, G, requests_per_s=0.01, prompt_len=prompt, output_len=output, **sizes
    )["saturation_rate"]


CASES = {"dense": DENSE, "moe": MOE, "replicas": SPREAD}


@functools.cache
def _compared(case, load):
    """The closed form at ``load`` of the saturation of ``CASES[case]``, and two simulations of
    it: shared by the tests of the means and of the percentiles."""
    name, prompt, output, sizes = CASES[case]
    rate = load * _saturation(*CASES[case])
    closed = disaggregated.steady_state(
        name, G, requests_per_s=rate, prompt_len=prompt, output_len=output, **sizes
    )
    runs = [
        disaggregated.simulate(
            name,
            G,
            requests_per_s=rate,
            prompt_len=prompt,
            output_len=output,
            requests=2_000,
            seed=seed,
            **sizes,
        )
        for seed in range(2)
    ]
    return closed, runs


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("load", [0.3, 0.6, 0.85])
@pytest.mark.slow
def test_the_steady_state_is_within_10_percent_of_the_simulation(case, load):
    closed, runs = _compared(case, load)
    for key in ("ttft", "tpot"):
        simulated = np.mean([run[key] for run in runs])
        assert closed[key] == pytest.approx(simulated, rel=MEANS), (key, closed[key], simulated)


@pytest.mark.parametrize("case", ["dense", "moe"])
@pytest.mark.parametrize("load", [0.3, 0.6, 0.85])
@pytest.mark.slow
def test_the_percentiles_are_within_15_percent_of_the_simulation(case, load):
    # The same runs as the means' (two seeds of 2,000 requests): p90 and p99 of each
    # request's TTFT and TPOT, up to 85% of saturation, a dense and an MoE model.
    closed, runs = _compared(case, load)
    for key in ("ttft", "tpot"):
        for q in ("p90", "p99"):
            simulated = np.mean([run["percentiles"][key][q] for run in runs])
            predicted = closed["percentiles"][key][q]
            assert predicted == pytest.approx(simulated, rel=TAILS), (key, q, predicted, simulated)
        p = closed["percentiles"][key]
        assert p["p50"] <= p["p90"] <= p["p99"]


def test_the_percentile_comparison_sees_an_exponential_tail():
    # A queue's usual guess, an exponential tail of the mean TTFT (p99 = mean ln 100), misses
    # the simulation by more than the tolerance: the comparison tells a wrong tail apart.
    closed, runs = _compared("dense", 0.6)
    simulated = np.mean([run["percentiles"]["ttft"]["p99"] for run in runs])
    assert closed["ttft"] * np.log(100) != pytest.approx(simulated, rel=0.15)


@pytest.mark.slow
def test_a_disaggregated_plan_on_percentiles_is_one_the_simulation_shows_meeting_them():
    # 70B at 10 requests a second of 2,048 + 256 tokens, p99 targets of 1 s and 25 ms: the
    # pools the plan picks meet both in the simulation; one prefill replica fewer misses.
    model = "llama-3.1-70b"
    workload = dict(requests_per_s=10.0, prompt_len=2048, output_len=256)
    targets = dict(ttft_target=1.0, tpot_target=0.025)
    p = ia.plan(model, G, **workload, **targets, percentile=99, layout="disaggregated")
    assert p["layout"] == "disaggregated" and p["percentile"] == 99
    assert p["ttft"] <= 1.0 and p["tpot"] <= 0.025
    pools = {k: p[k] for k in disaggregated.POOL_KEYWORDS}
    on_means = ia.plan(model, G, **workload, **targets, layout="disaggregated")
    assert on_means["gpus"] < p["gpus"]  # the tail asks for more than the mean
    for replicas, meets in ((pools["prefill_replicas"], True),
                            (pools["prefill_replicas"] - 1, False)):  # fmt: skip
        sizes = {**pools, "prefill_replicas": replicas}
        run = disaggregated.simulate(model, G, **workload, requests=2_000, **sizes)
        met = {k: run["percentiles"][k]["p99"] <= targets[f"{k}_target"] for k in ("ttft", "tpot")}
        assert all(met.values()) == meets, (replicas, run["percentiles"])
    with pytest.raises(ia.ArgumentError, match="percentile must be one of 50, 90, 99"):
        disaggregated.fewest_gpus(model, G, **workload, **targets, percentile=95)


@pytest.mark.slow
def test_the_comparison_with_the_simulation_sees_a_transfer_left_out():
    # A slow network (1 GB/s a GPU) makes the transfer a fifth of the TTFT: the simulation
    # and the closed form both carry it, and a closed form without it is caught.
    name, prompt, output, sizes = DENSE
    slow = {**sizes, "transfer": "network", "network_bandwidth": 1e9}
    closed = disaggregated.steady_state(
        name, G, requests_per_s=1.0, prompt_len=prompt, output_len=output, **slow
    )
    simulated = disaggregated.simulate(
        name, G, requests_per_s=1.0, prompt_len=prompt, output_len=output, requests=1_000, **slow
    )
    assert closed["ttft"] == pytest.approx(simulated["ttft"], rel=MEANS)
    assert closed["transfer"] > 0.15 * closed["ttft"]
    without = closed["ttft"] - closed["transfer"]
    assert without != pytest.approx(simulated["ttft"], rel=0.10)


def test_the_transfer_moves_the_prompts_cache_over_the_fewer_gpus_of_either_side():
    for name in ("llama-3.1-70b", "deepseek-v3"):
        arch = ia.model(name)
        s = ia.Scenario(arch, "h200", n_gpus=8, prompt_len=2048, output_len=1, dtype="fp8")
        # Chapter 06's cache of one request of the prompt's tokens, in the cache's format.
        expected = ia.kv_cache_bytes(arch, batch=1, context_len=2048, dtype=s.cache_dtype)
        assert s.evaluate(disaggregation.kv_transfer_bytes(arch)) == pytest.approx(expected)
    # Llama 3 70B from 4 GPUs: each sends its two KV heads' quarter at once over its own link.
    values = {**ia.Scenario("llama-3.1-70b", G, n_gpus=4).values(), "link_latency": 0.0}
    link = ia.numeric(disaggregation.kv_transfer_time(ia.model("llama-3.1-70b"), "link"))
    assert link.from_values(values) == pytest.approx(671_088_640 / (4 * 450e9))
    sizes = dict(prefill_gpus=4, decode_gpus=2, link_latency=0.0)
    state = disaggregated.steady_state(
        *DENSE[:1], G, requests_per_s=1.0, prompt_len=2048, output_len=256, **sizes
    )
    assert state["transfer"] == pytest.approx(671_088_640 / (2 * 450e9))  # the two decode GPUs


def test_a_pair_of_replicas_within_one_link_domain_uses_the_link_else_the_network():
    name, prompt, output, _ = DENSE
    near = disaggregated.steady_state(
        name,
        G,
        requests_per_s=1.0,
        prompt_len=prompt,
        output_len=output,
        prefill_gpus=4,
        decode_gpus=4,
    )
    far = disaggregated.steady_state(
        name,
        G,
        requests_per_s=1.0,
        prompt_len=prompt,
        output_len=output,
        prefill_gpus=4,
        decode_gpus=8,
    )
    assert (near["path"], far["path"]) == ("link", "network")
    assert far["transfer"] > 4 * near["transfer"]  # 50 GB/s a port against 450 GB/s of NVLink
    assert near["ttft"] == pytest.approx(near["prefill"]["ttft"] + near["transfer"])


def test_a_lone_prompt_takes_one_prefill_and_its_transfer():
    name, prompt, output, sizes = DENSE
    budget = {"token_budget": 8192}  # the whole prompt in one step
    state = disaggregated.steady_state(
        name, G, requests_per_s=1e-4, prompt_len=prompt, output_len=output, **sizes, **budget
    )
    s = ia.Scenario(name, G, n_gpus=4, prompt_len=prompt, output_len=1, **budget)
    alone = simulation.scalar_step(s)(0, 1.0, prompt)  # one step of the prompt, no decodes
    assert state["prefill"]["ttft"] == pytest.approx(alone, rel=1e-3)
    assert state["prefill"]["busy"] < 1e-3


@pytest.mark.parametrize("speculative", [None, "eagle3"])
def test_a_lone_request_decodes_as_fast_as_on_a_colocated_engine_speculating_or_not(speculative):
    """Alone, a decode replica's steps are the colocated engine's: the TPOT per token agrees
    (within the half step a cache waits to join, over its O - 1 tokens), a speculating step's
    time divided by the tokens it yields on both sides, percentiles too."""
    name, prompt, output, sizes = DENSE
    options = {"speculative": speculative} if speculative else {}
    apart = disaggregated.steady_state(
        name, G, requests_per_s=1e-3, prompt_len=prompt, output_len=output, **sizes, **options
    )
    together = ia.steady_state(
        name, G, requests_per_s=1e-3, prompt_len=prompt, output_len=output, n_gpus=4, **options
    )
    assert apart["tpot"] == pytest.approx(together["tpot"], rel=0.01)
    for p, tpot in together["percentiles"]["tpot"].items():
        assert apart["percentiles"]["tpot"][p] == pytest.approx(tpot, rel=0.01)


def test_past_either_pools_saturation_is_an_error_naming_it():
    name, prompt, output, _ = DENSE
    sizes = {"prefill_gpus": 4, "decode_gpus": 4, "decode_replicas": 4}
    state = disaggregated.steady_state(
        name, G, requests_per_s=0.1, prompt_len=prompt, output_len=output, **sizes
    )
    assert state["saturation_rate"] == pytest.approx(state["prefill"]["saturation_rate"])
    with pytest.raises(ia.ArgumentError, match="the prefill pool"):
        disaggregated.steady_state(
            name,
            G,
            requests_per_s=1.1 * state["saturation_rate"],
            prompt_len=prompt,
            output_len=output,
            **sizes,
        )
    sizes = {"prefill_gpus": 4, "decode_gpus": 1, "prefill_replicas": 4}
    with pytest.raises(ia.ArgumentError, match="the decode pool"):
        disaggregated.steady_state(
            "llama-3.1-8b", G, requests_per_s=200.0, prompt_len=1024, output_len=256, **sizes
        )


def test_the_simulation_gives_percentiles_in_order():
    name, prompt, output, sizes = MOE
    run = disaggregated.simulate(
        name, G, requests_per_s=5.0, prompt_len=prompt, output_len=output, requests=300, **sizes
    )
    for key in ("ttft", "tpot"):
        p = run["percentiles"][key]
        assert p["p50"] <= p["p90"] <= p["p99"]
        assert p["p50"] < run[key] * 2


@pytest.mark.parametrize(
    "keywords, argument",
    [
        ({"n_gpus": 4}, "prefill_gpus"),
        ({"replicas": 2}, "decode_replicas"),
        ({"prefill_gpus": 0}, "prefill_gpus"),
        ({"decode_replicas": 1.5}, "decode_replicas"),
        ({"transfer": "fast"}, "transfer"),
        ({"parallel": "pipeline"}, "tensor or expert parallelism"),
        ({"token_budget": 0}, "token_budget"),
    ],
)
def test_bad_input_is_refused_by_name(keywords, argument):
    with pytest.raises(ia.ArgumentError, match=argument):
        disaggregated.steady_state(
            "llama-3.1-8b", G, requests_per_s=1.0, prompt_len=1024, output_len=128, **keywords
        )


def test_bad_rates_lengths_targets_and_paths_are_refused_by_name():
    with pytest.raises(ia.ArgumentError, match="requests_per_s"):
        disaggregated.steady_state("llama-3.1-8b", G, requests_per_s=0.0)
    with pytest.raises(ia.ArgumentError, match="output_len"):
        disaggregated.steady_state(
            "llama-3.1-8b", G, requests_per_s=1.0, prompt_len=1024, output_len=1
        )
    with pytest.raises(ia.ArgumentError, match="ttft_target"):
        disaggregated.compare(
            "llama-3.1-8b", G, prompt_len=1024, output_len=128, ttft_target=-1.0, tpot_target=0.05
        )
    with pytest.raises(ia.ArgumentError, match="most_gpus"):
        disaggregated.best_split(
            "llama-3.1-8b",
            G,
            prompt_len=1024,
            output_len=128,
            ttft_target=1.0,
            tpot_target=0.05,
            most_gpus=1,
        )
    with pytest.raises(ia.ArgumentError, match="'link', 'network'"):
        disaggregation.kv_transfer_time(ia.model("llama-3.1-8b"), "pigeon")
    with pytest.raises(ia.ArgumentError, match="interconnect_bandwidth"):
        disaggregated.steady_state(
            "llama-3.1-8b",
            "desktop-cpu",
            requests_per_s=0.01,
            prompt_len=512,
            output_len=64,
            dtype="fp32",
            transfer="link",
        )
    with pytest.raises(ia.UnknownName):
        disaggregated.steady_state("llama-3.1-8b", "h100-sxn", requests_per_s=1.0)


def _meets(state, ttft_target, tpot_target):
    return state["ttft"] <= ttft_target and state["tpot"] <= tpot_target


LONG_TIGHT = ("llama-3.1-70b", 2048, 256, 1.0, 0.025)
SHORT_LOOSE = ("llama-3.1-70b", 512, 512, 1.0, 0.1)  # chapter 11's cases


@pytest.mark.slow
def test_the_best_split_meets_the_targets_at_its_goodput_and_not_past_it():
    name, prompt, output, ttft, tpot = LONG_TIGHT
    best = disaggregated.best_split(
        name,
        G,
        prompt_len=prompt,
        output_len=output,
        ttft_target=ttft,
        tpot_target=tpot,
        most_gpus=24,
    )
    sizes = {k: best[k] for k in disaggregated.POOL_KEYWORDS}
    assert (
        best["gpus"]
        == sizes["prefill_replicas"] * sizes["prefill_gpus"]
        + sizes["decode_replicas"] * sizes["decode_gpus"]
        <= 24
    )
    at = disaggregated.steady_state(
        name,
        G,
        requests_per_s=0.999 * best["goodput"],
        prompt_len=prompt,
        output_len=output,
        **sizes,
    )
    assert _meets(at, ttft, tpot)
    try:
        past = disaggregated.steady_state(
            name,
            G,
            requests_per_s=1.02 * best["goodput"],
            prompt_len=prompt,
            output_len=output,
            **sizes,
        )
        assert not _meets(past, ttft, tpot)
    except ia.ArgumentError:
        pass  # saturated: it misses them too


def test_the_best_colocated_engine_meets_the_targets_at_its_goodput_and_not_past_it():
    name, prompt, output, ttft, tpot = LONG_TIGHT
    best = disaggregated.best_colocated(
        name, G, prompt_len=prompt, output_len=output, ttft_target=ttft, tpot_target=tpot
    )
    n = best["n_gpus"]
    assert _meets(
        ia.steady_state(
            name,
            G,
            requests_per_s=0.999 * best["goodput"],
            prompt_len=prompt,
            output_len=output,
            n_gpus=n,
        ),
        ttft,
        tpot,
    )
    try:
        past = ia.steady_state(
            name,
            G,
            requests_per_s=1.02 * best["goodput"],
            prompt_len=prompt,
            output_len=output,
            n_gpus=n,
        )
        assert not _meets(past, ttft, tpot)
    except ia.ArgumentError:
        pass


@pytest.mark.slow
def test_disaggregation_wins_on_long_prompts_under_a_tight_tpot_and_loses_on_short_loose_ones():
    # Chapter 09's two worked cases: a decode pool that never waits behind a prompt, against
    # prefills that ride along nearly free in memory-bound decode steps. The short, loose case
    # on vLLM 0.7's 512-token step, whose prefills ride along in chunks: at 0.11's 8,192 (the
    # default) the two layouts tie (1.94 against 1.92 requests/s per GPU, disaggregated ahead).
    name, prompt, output, ttft, tpot = LONG_TIGHT
    wins = disaggregated.compare(
        name,
        G,
        prompt_len=prompt,
        output_len=output,
        ttft_target=ttft,
        tpot_target=tpot,
        most_gpus=24,
    )
    assert wins["better"] == "disaggregated" and wins["ratio"] > 1.1
    name, prompt, output, ttft, tpot = SHORT_LOOSE
    loses = disaggregated.compare(
        name,
        G,
        prompt_len=prompt,
        output_len=output,
        ttft_target=ttft,
        tpot_target=tpot,
        most_gpus=24,
        engine="vllm@0.7",
    )
    assert loses["better"] == "colocated" and loses["ratio"] < 1
    assert loses["ratio"] == pytest.approx(
        loses["disaggregated"]["per_gpu"] / loses["colocated"]["per_gpu"]
    )


def test_targets_nothing_meets_give_none():
    result = disaggregated.compare(
        "llama-3.1-70b",
        G,
        prompt_len=2048,
        output_len=256,
        ttft_target=0.01,
        tpot_target=0.001,
        most_gpus=16,
    )
    assert result == {"disaggregated": None, "colocated": None, "ratio": None, "better": None}
