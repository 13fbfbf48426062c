"""Chapter 16 (calculator): whole deployments through ``ia.calculate``.

The inputs are the chapter's: Llama 3.1 70B in bf16 serving a batch of 32 requests of 2,048
prompt and 256 output tokens, on four H100 SXM or on any registry GPU (``ia.gpu_names()``) at
its dated price, with the library's default efficiencies and memory budget; and DeepSeek-V3 in
fp8 on eight H200, batch 64, prompts of 500 tokens and 3,000 output tokens, where the
calculator's closed form is compared with the step-by-step ``ia.generation``, and, as the
naive contrast, with the steps had each re-expanded the latent cache (``mla="reexpand"``).
"""

from __future__ import annotations

import functools

import numpy as np

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import O, T
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import latency

MODEL, GPU, GPUS = "llama-3.1-70b", "h100-sxm", 4
WORKLOAD = dict(batch=32, prompt_len=2048, output_len=256)

# --- ex-calculator-cheapest: the registry GPU and count with the cheapest output tokens -------

COUNTS = (1, 2, 4, 8)


@functools.cache
def _output_costs() -> dict[tuple[str, int], float]:
    """Dollars per million output tokens of every registry GPU and count that holds the
    batch and has a price; a GPU without a bf16 rate (an Apple GPU) cannot run the exercise's
    bf16 model."""
    costs = {}
    for name in ia.gpu_names():
        if "bf16" not in ia.gpu(name).peak_flop_rate:
            continue
        for n in COUNTS:
            try:
                cost = ia.calculate(MODEL, name, n_gpus=n, **WORKLOAD)["cost"]["output"]
            except ValueError:  # does not fit, or cannot be split so
                continue
            if cost is not None:
                costs[name, n] = cost
    return costs


def _cheapest() -> tuple[tuple[str, int], float]:
    return min(_output_costs().items(), key=lambda item: item[1])


def _cheapest_on(gpu: str) -> float:
    return min(cost for (name, _), cost in _output_costs().items() if name == gpu)


register(
    "16-calculator",
    "ex-calculator-cheapest",
    Part("n_gpus", lambda: _cheapest()[0][1], unit="GPUs"),
    Part(
        "output_cost",
        lambda: _cheapest()[1],
        unit="dollars per million tokens",
        hints=(
            lambda: {
                _cheapest_on(GPU) / _cheapest()[1]: (
                    "that is the cheapest on H100 SXM: compare every GPU of ia.gpu_names()"
                )
            }
        ),
    ),
)

# --- ex-calculator-fp8-cache: the bf16 model with its KV cache in fp8 -------------------------

CACHES = ("bf16", "fp8")


@functools.cache
def _fp8_cache() -> dict:
    """The batch that fits with each cache dtype, and the output price at the fp8 one's."""
    context = WORKLOAD["prompt_len"] + WORKLOAD["output_len"]
    fits = {
        c: ia.max_batch(MODEL, GPU, context_len=context, n_gpus=GPUS, cache_dtype=c) for c in CACHES
    }
    workload = {**WORKLOAD, "batch": fits["fp8"]}

    def cost(cache_dtype, **changes):
        result = ia.calculate(
            MODEL, GPU, n_gpus=GPUS, cache_dtype=cache_dtype, **{**workload, **changes}
        )
        return result["cost"]["output"]

    return {
        "fits": fits,
        "cost": cost("fp8"),
        "bf16 batch": cost("fp8", batch=fits["bf16"]),
        "bf16 cache": cost("bf16", batch=fits["bf16"]),
    }


def _more() -> int:
    fits = _fp8_cache()["fits"]
    return fits["fp8"] - fits["bf16"]


register(
    "16-calculator",
    "ex-calculator-fp8-cache",
    Part(
        "more_requests",
        _more,
        unit="requests",
        tolerance=0,  # a whole number of requests: one fewer is another answer
        hints=(
            lambda: {
                _fp8_cache()["fits"]["fp8"] / _more(): (
                    "is that the batch that fits with the fp8 cache? The question asks how many "
                    "more than with the bf16 cache"
                )
            }
        ),
    ),
    Part(
        "output_cost",
        lambda: _fp8_cache()["cost"],
        unit="dollars per million tokens",
        hints=(
            lambda: {
                _fp8_cache()["bf16 batch"] / _fp8_cache()["cost"]: (
                    "did you keep the bf16 cache's batch? Price the larger batch that now fits"
                ),
                _fp8_cache()["bf16 cache"] / _fp8_cache()["cost"]: (
                    "that is the price with the bf16 cache; store the cache in fp8 (cache_dtype)"
                ),
            }
        ),
    ),
)

# --- ex-calculator-exact: DeepSeek-V3 on eight H200, closed form against step by step ----------

EXACT = dict(n_gpus=8, dtype="fp8", batch=64, prompt_len=500, output_len=3000)


def _closed_over_steps() -> float:
    """The calculator's time per output token over ia.generation's mean, minus one."""
    closed = ia.calculate("deepseek-v3", "h200", **EXACT)
    steps = ia.generation("deepseek-v3", "h200", **EXACT)
    return closed["tpot"] / steps["tpot"] - 1


def _reexpanded_over_steps(**timing) -> float:
    """The same closed form over the step-by-step mean, minus one, had every decode step
    re-expanded the latent cache (the reference implementation's way, not the engines'),
    each step timed by the library's default (or ``timing``, e.g. ``ia.timing.ROOFLINE``)."""
    s = ia.Scenario("deepseek-v3", "h200", **EXACT, **timing)
    step = ia.numeric(s.timing.decode_step_time(s.model, "reexpand"))
    contexts = np.arange(s.prompt_len, s.prompt_len + s.output_len - 1)
    mean_context = float(latency.mean_context().subs({T: s.prompt_len, O: s.output_len}))
    steps = step.from_values({**s.values(), "context_len": contexts})
    return float(step.from_values({**s.values(), "context_len": mean_context}) / steps.mean() - 1)


register(
    "16-calculator",
    "ex-calculator-exact",
    Part(
        "relative_difference",
        _closed_over_steps,
        unit="fraction (calculator / step by step - 1)",
    ),
    Part(
        "relative_difference_reexpand",
        _reexpanded_over_steps,
        unit="fraction (step at the mean context / mean step - 1)",
    ),
    written=("which bound limits its decode?",),
)
