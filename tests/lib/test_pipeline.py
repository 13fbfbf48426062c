"""A pipeline under a stream: its steady state (n micro-batches whose steps last the cycle's,
``Engine.period``) against the SimPy engine that runs its stages step by step, the cycle's
formula, and the plan and goodput of a pipeline."""

import functools
import itertools

import numpy as np
import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic.formulas import continuous as formulas
from inference_arithmetic.serving import continuous, simulation
from inference_arithmetic.serving.engine import Engine
from inference_arithmetic.serving.scenario import pipeline_degrees

CASES = [("llama-3.1-70b", 4), ("llama-3.1-8b", 2)]
LOADS = (0.3, 0.6, 0.85)
PROMPT, OUTPUT = 1024, 128
RUNS = {0.3: (1500, 1), 0.6: (4000, 2), 0.85: (4000, 2)}
"""Requests a simulated run and runs (seeds) by load: the fewest whose p99 holds still to a
few percent. A run costs a step per request or so near saturation and more at a light load,
but near saturation the TTFT wanders for long stretches, and one seed's p99 by 20%."""


# The agreement is held on vLLM 0.7's 512-token step. At 0.11's 8,192 (the default), where a
# micro-batch's step prefills whole prompts and holds every other one up, the means of TTFT
# hold (``test_at_8192_tokens_a_pipelines_mean_ttft_counts_its_steps_spread``) but the cycle's
# account misses the simulation's TPOT and the TTFT's tail (the 70B at 0.6 of saturation: TPOT
# 0.169 s against 0.150 s, p99 TTFT 24% short; ``test_at_8192_tokens_a_pipeline_is_not_yet_held``):
# each stage is a queue, so a long step delays the steps behind it through the stages (a
# max-plus recursion over the stages, which independent draws of the others' steps do not
# follow).
HELD = "vllm@0.7"


def _scenario(name, n, engine=None):
    return ia.Scenario(name, "h100-sxm", n_gpus=n, prompt_len=PROMPT, output_len=OUTPUT,
                       in_waves=True, parallel="pipeline",
                       **({} if engine is None else {"engine": engine}))  # fmt: skip


@functools.cache
def _rate(name, n, load, engine=None):
    return load * continuous.saturation_rate(_scenario(name, n, engine))


@functools.cache
def _simulated(name, n, load, engine=None):
    """The simulation's means and percentiles (over ``RUNS``' seeds), shared by the tests."""
    requests, seeds = RUNS[load]
    runs = [
        simulation.simulate(
            name,
            "h100-sxm",
            requests_per_s=_rate(name, n, load, engine),
            prompt_len=PROMPT,
            output_len=OUTPUT,
            n_gpus=n,
            parallel="pipeline",
            requests=requests,
            seed=seed,
            **({} if engine is None else {"engine": engine}),
        )
        for seed in range(seeds)
    ]
    return {key: np.mean([run[key] for run in runs]) for key in ("ttft", "tpot")} | {
        "percentiles": {
            key: {tail: np.mean([run["percentiles"][key][tail] for run in runs])
                  for tail in ("p90", "p99")}
            for key in ("ttft", "tpot")
        }
    }  # fmt: skip


@pytest.mark.parametrize("name, n", CASES)
@pytest.mark.parametrize("load", LOADS)
@pytest.mark.slow
def test_a_pipelines_steady_state_is_the_simulations(name, n, load, engine=HELD):
    closed = ia.steady_state(
        name,
        "h100-sxm",
        requests_per_s=_rate(name, n, load, engine),
        prompt_len=PROMPT,
        output_len=OUTPUT,
        n_gpus=n,
        parallel="pipeline",
        **({} if engine is None else {"engine": engine}),
    )
    run = _simulated(name, n, load, engine)
    for key in ("ttft", "tpot"):
        assert closed[key] == pytest.approx(run[key], rel=0.10), (key, closed[key], run[key])
        for tail in ("p90", "p99"):
            mine, simulated = closed["percentiles"][key][tail], run["percentiles"][key][tail]
            assert mine == pytest.approx(simulated, rel=0.15), (key, tail, mine, simulated)


@pytest.mark.slow
def test_at_8192_tokens_a_pipeline_keeps_up_at_085_of_its_saturation_rate():
    """The others' steps are weighed as the pipeline takes them (``Engine.meet``: in the
    cycle's chain, whose slower steps let more prompts arrive in each). Weighed as one engine
    takes them, the 70B's saturation rate on 4 stages was past the simulation's: at 0.85 of it
    the simulated queue grew without bound (a mean TTFT of 16 s against 0.51 s)."""
    closed = ia.steady_state(
        "llama-3.1-70b",
        "h100-sxm",
        requests_per_s=_rate("llama-3.1-70b", 4, 0.85),
        prompt_len=PROMPT,
        output_len=OUTPUT,
        n_gpus=4,
        parallel="pipeline",
    )
    run = _simulated("llama-3.1-70b", 4, 0.85)
    assert run["ttft"] < 1.5 * closed["ttft"], (run["ttft"], closed["ttft"])


@pytest.mark.parametrize("load", (0.6, 0.85))  # the two the tests above simulate
@pytest.mark.slow
def test_at_8192_tokens_a_pipelines_mean_ttft_counts_its_steps_spread(load):
    """An arrival lands in a longer step more often: a pipeline's step varies with the other
    micro-batches' (``Engine.spread``), and the rest of the steps it lands in is half their
    length plus their variance over twice it. Without the variance the 70B's mean TTFT was
    14% short at 0.6 and 12% at 0.85."""
    closed = ia.steady_state(
        "llama-3.1-70b",
        "h100-sxm",
        requests_per_s=_rate("llama-3.1-70b", 4, load),
        prompt_len=PROMPT,
        output_len=OUTPUT,
        n_gpus=4,
        parallel="pipeline",
    )
    run = _simulated("llama-3.1-70b", 4, load)
    assert closed["ttft"] == pytest.approx(run["ttft"], rel=0.10), (closed["ttft"], run["ttft"])


@pytest.mark.xfail(strict=True, reason="the cycle at an 8,192-token step: HELD says why")
@pytest.mark.slow
def test_at_8192_tokens_a_pipeline_is_not_yet_held():
    test_a_pipelines_steady_state_is_the_simulations("llama-3.1-70b", 4, 0.6, engine=None)


def _independent(name, n, load):
    """The account before the cycle: n engines at a share of the rate, each step its own."""
    engine = Engine(_scenario(name, n))
    engine.meet = lambda *args: None  # the other micro-batches never stretch a step
    return engine.state(_rate(name, n, load))


@pytest.mark.parametrize("name, n", CASES)
@pytest.mark.slow
def test_as_independent_engines_a_pipeline_falls_short_of_the_simulation(name, n):
    # The companion of the 10%: without the cycle each micro-batch steps at its own pace, and
    # its time per token falls short of the simulation's by more than the tolerance where a
    # prefill is in a cycle often (everywhere for the 70B, from 0.6 for the 8B's short steps).
    for load in LOADS:
        simulated = _simulated(name, n, load)["tpot"]
        apart = _independent(name, n, load)["tpot"]
        closed = ia.steady_state(
            name,
            "h100-sxm",
            requests_per_s=_rate(name, n, load),
            prompt_len=PROMPT,
            output_len=OUTPUT,
            n_gpus=n,
            parallel="pipeline",
        )["tpot"]
        assert abs(apart / simulated - 1) > abs(closed / simulated - 1)
        if name == "llama-3.1-70b" or load > 0.3:
            assert apart < 0.9 * simulated, (load, apart, simulated)


def test_a_cycle_is_its_slowest_micro_batchs_step():
    for n in (2, 3, 4):
        steps, cycle = formulas.pipeline_cycle(n)
        rounds = sympy.lambdify(steps, cycle, "numpy")
        times = np.random.default_rng(n).uniform(0.01, 1.0, (n, 200))
        assert np.allclose(rounds(*times), times.max(axis=0))
        assert (times.mean(axis=0) < times.max(axis=0)).all()  # the stages' busy time: below
    t = sympy.Symbol("t", positive=True)
    assert formulas.pipeline_period(1) == t  # one stage: its own step
    assert formulas.pipeline_period().has(sympy.Integral)  # n stages: the others' tail


def test_the_period_is_the_mean_of_the_slowest_of_n_steps():
    # The engine's order statistic against every draw of the n - 1 others, enumerated.
    engine = Engine(_scenario("llama-3.1-8b", 4))
    values, weights = np.array([0.03, 0.2, 0.01]), np.array([0.25, 0.05, 0.7])
    engine.others = engine.slowest(values, weights)  # formulas.pipeline_wait, summed
    for t in (0.005, 0.02, 0.5):
        exact = sum(np.prod(weights[list(draw)]) * max(t, *values[list(draw)])
                    for draw in itertools.product(range(3), repeat=3))  # fmt: skip
        assert engine.period(np.array(t)) == pytest.approx(exact, rel=1e-12)
    engine.others = None


def test_a_pipelines_decodes_and_concurrency_count_every_micro_batch():
    name, n, load = CASES[0][0], CASES[0][1], 0.6
    r = ia.steady_state(
        name,
        "h100-sxm",
        requests_per_s=_rate(name, n, load),
        prompt_len=PROMPT,
        output_len=OUTPUT,
        n_gpus=n,
        parallel="pipeline",
    )
    rate = _rate(name, n, load)
    assert r["concurrency"] == pytest.approx(rate * r["request_time"])  # Little's law, whole
    # Each of n micro-batches decodes lambda / n (O - 1) of its mean steps.
    assert r["decoding"] == pytest.approx(rate * (OUTPUT - 1) * r["mean_step"])
    assert r["utilization"] == pytest.approx(load)


def test_a_plan_and_goodput_of_a_pipeline():
    # The plan searches pipeline degrees when asked for a pipeline; its answer meets both
    # targets in its steady state, and on the same GPUs tensor parallelism's shorter steps
    # serve more within the same targets.
    name, targets = "llama-3.1-70b", dict(ttft_target=1.0, tpot_target=0.1)
    p = ia.plan(
        name,
        "h100-sxm",
        requests_per_s=4.0,
        prompt_len=PROMPT,
        output_len=OUTPUT,
        **targets,
        parallel="pipeline",
        most_gpus=4,
    )
    assert p["n_gpus"] in pipeline_degrees(ia.model(name), 4)
    state = ia.steady_state(
        name,
        "h100-sxm",
        requests_per_s=4.0 / p["replicas"],
        prompt_len=PROMPT,
        output_len=OUTPUT,
        n_gpus=p["n_gpus"],
        parallel="pipeline",
    )
    assert state["ttft"] <= 1.0 and state["tpot"] <= 0.1
    assert (p["ttft"], p["tpot"]) == (state["ttft"], state["tpot"])
    piped = ia.goodput(
        name,
        "h100-sxm",
        prompt_len=PROMPT,
        output_len=OUTPUT,
        **targets,
        n_gpus=4,
        percentile=None,
        parallel="pipeline",
    )
    assert 0 < piped["requests_per_s"] <= continuous.saturation_rate(_scenario(name, 4))
    assert piped["tpot"] <= 0.1 and piped["ttft"] <= 1.0
    tensor = ia.goodput(
        name, "h100-sxm", prompt_len=PROMPT, output_len=OUTPUT, **targets, n_gpus=4, percentile=None
    )
    assert tensor["requests_per_s"] > piped["requests_per_s"]
    # Pools step their GPUs together: "either" leaves a pipeline to the one engine, and
    # "disaggregated" refuses it by name.
    piped_plan = dict(requests_per_s=4.0, prompt_len=PROMPT, output_len=OUTPUT, **targets)
    piped_plan.update(parallel="pipeline", most_gpus=4)
    either = ia.plan(name, "h100-sxm", **piped_plan, layout="either")
    assert either == {"layout": "colocated", **p}
    with pytest.raises(ia.ArgumentError) as error:
        ia.plan(name, "h100-sxm", **piped_plan, layout="disaggregated")
    assert str(error.value) == simulation.NO_PIPELINE


def test_a_burst_of_a_pipeline_is_still_refused_by_name():
    with pytest.raises(ia.ArgumentError) as error:
        simulation.burst_schedule(_scenario("llama-3.1-8b", 2).replace(batch=8))
    assert str(error.value) == simulation.NO_PIPELINE
