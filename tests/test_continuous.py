"""Continuous batching: the steady state against a SimPy simulation of the same engine (the
oracle), its bookkeeping (Little's law, throughput), saturation, and the cheapest plan."""

import numpy as np
import pytest

import inference_arithmetic as ia
from inference_arithmetic import continuous

CASES = [("llama-3.1-8b", 1, 1024, 128), ("mixtral-8x7b", 2, 512, 256)]


def _saturation(name, n, prompt, output):
    s = ia.Scenario(name, "h100-sxm", n_gpus=n, prompt_len=prompt, output_len=output,
                    in_waves=True)  # fmt: skip
    return continuous.saturation_rate(s)


@pytest.mark.parametrize("name, n, prompt, output", CASES)
@pytest.mark.parametrize("load", [0.3, 0.6, 0.85])
def test_the_steady_state_is_within_10_percent_of_the_simulation(name, n, prompt, output, load):
    rate = load * _saturation(name, n, prompt, output)
    closed = ia.steady_state(name, "h100-sxm", rate, prompt, output, n_gpus=n)
    runs = [continuous.simulate(name, "h100-sxm", rate, prompt, output, n_gpus=n,
                                requests=1200, seed=seed) for seed in range(3)]  # fmt: skip
    for key in ("ttft", "tpot"):
        simulated = np.mean([run[key] for run in runs])
        assert closed[key] == pytest.approx(simulated, rel=0.10), (key, closed[key], simulated)


def test_the_bookkeeping_of_a_steady_state():
    rate = 8.0
    r = ia.steady_state("llama-3.1-8b", "h100-sxm", rate, 1024, 128)
    assert r["throughput"] == rate * 128
    assert r["concurrency"] == pytest.approx(rate * r["request_time"])  # Little's law
    assert r["request_time"] == pytest.approx(r["ttft"] + 127 * r["tpot"])
    assert r["utilization"] == pytest.approx(rate / r["saturation_rate"])
    slower = ia.steady_state("llama-3.1-8b", "h100-sxm", 2 * rate, 1024, 128)
    assert slower["tpot"] > r["tpot"] and slower["ttft"] > r["ttft"]  # busier, slower


def test_past_saturation_is_a_clear_error():
    top = _saturation("llama-3.1-8b", 1, 1024, 128)
    with pytest.raises(ValueError, match=rf"keeps up with at most {top:.4g} requests per second"):
        ia.steady_state("llama-3.1-8b", "h100-sxm", 1.05 * top, 1024, 128)
    with pytest.raises(ValueError, match="requests_per_s must be a positive number"):
        ia.steady_state("llama-3.1-8b", "h100-sxm", 0, 1024, 128)
    with pytest.raises(ValueError, match="parallel='tensor'"):
        ia.steady_state("llama-3.1-70b", "h100-sxm", 1, n_gpus=4, parallel="pipeline")


def test_the_plan_meets_both_targets_at_the_fewest_gpus_of_its_degree():
    target = dict(ttft_target=1.0, tpot_target=0.05)
    p = ia.plan("llama-3.1-70b", "h100-sxm", 20, 2048, 256, **target)
    assert (
        p["ttft"] <= 1.0
        and p["tpot"] <= 0.05
        and p["n_gpus"] == p["replicas"] * p["tensor_parallel"]
    )
    price = ia.gpu("h100-sxm").price_per_hour
    assert p["cost_per_million_output_tokens"] == pytest.approx(
        p["n_gpus"] * price / 3600 / (20 * 256) * 1e6
    )
    if p["replicas"] > 1:  # one replica fewer of the same degree misses a target or saturates
        try:
            fewer = ia.steady_state("llama-3.1-70b", "h100-sxm", 20 / (p["replicas"] - 1), 2048,
                                    256, n_gpus=p["tensor_parallel"])  # fmt: skip
            assert fewer["ttft"] > 1.0 or fewer["tpot"] > 0.05
        except ValueError:
            pass
    with pytest.raises(ValueError, match="no deployment of up to 8"):
        ia.plan("llama-3.1-70b", "h100-sxm", 20, 2048, 256, most_gpus=8, **target)
