"""Chapter 14 (economics): dollars per million tokens, break-even utilizations and prices.

The inputs are the chapter's: H100 SXM GPUs at their dated rental price (``gpu.price_per_hour``),
requests of 2,048 prompt and 256 output tokens, every step timed by the library's default
model (kernel by kernel, for the default engine profile), and the dated API prices of
``ia.api_prices`` (Together AI's for Llama 3.1 8B, Groq's for Llama 3.3 70B). The set-ups are
Llama 3.1 8B on one H100 and Llama 3.3 70B on four, with tensor parallelism; the memory
ceiling is ``ia.max_batch`` at the requests' whole length. A latency promise is kept by the
continuously batching engine of ``ia.steady_state`` up to some rate.
"""

from __future__ import annotations

import functools

import inference_arithmetic as ia
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import economics

GPU, PROMPT, OUTPUT = "h100-sxm", 2048, 256
SMALL, BIG, BIG_GPUS = "llama-3.1-8b", "llama-3.3-70b", 4


def _ceiling(model: str, **deployment) -> int:
    """The memory ceiling: the most whole requests whose KV cache fits beside the weights."""
    return ia.max_batch(model, GPU, context_len=PROMPT + OUTPUT, **deployment)


def _api(model: str, provider: str) -> dict:
    return next(p for p in ia.api_prices(model) if p["provider"] == provider)


# --- ex-economics-fp8: Llama 3.1 8B in fp8 on one H100, at the memory ceiling -----------------

FP8 = {"dtype": "fp8"}  # the weights, and so the arithmetic and the KV cache, in fp8


@functools.cache
def _fp8() -> dict:
    batch = _ceiling(SMALL, **FP8)
    costs = ia.token_costs(SMALL, GPU, batch=batch, prompt_len=PROMPT, output_len=OUTPUT, **FP8)
    together = _api(SMALL, "Together AI")
    even = ia.break_even_utilization(
        SMALL,
        GPU,
        api_input_price=together["input"],
        api_output_price=together["output"],
        batch=batch,
        prompt_len=PROMPT,
        output_len=OUTPUT,
        **FP8,
    )
    return {"batch": batch, **costs, "even": even}


register(
    "14-economics",
    "ex-economics-fp8",
    Part(
        "max_batch",
        lambda: _fp8()["batch"],
        unit="requests",
        tolerance=0,  # a whole number of requests: one fewer is another answer
        hints=(
            lambda: {
                _ceiling(SMALL) / _fp8()["batch"]: (
                    "is that the ceiling in bf16? In fp8 the weights and the cache take half the "
                    "bytes, so more requests fit"
                )
            }
        ),
    ),
    Part("input_cost", lambda: _fp8()["input"], unit="dollars per million tokens"),
    Part("output_cost", lambda: _fp8()["output"], unit="dollars per million tokens"),
    Part(
        "break_even_utilization",
        lambda: _fp8()["even"],
        unit="fraction of the paid time",
    ),
    written=("What changed, and why do output tokens gain less than input tokens?",),
)

# --- ex-economics-price: the rental price at which the 70B set-up matches Groq ----------------

UTILIZATION = 0.5  # half busy


def _matching_price() -> float:
    """Dollars per GPU-hour at which a self-hosted request costs what Groq bills for it: the
    cost is proportional to the price, so the bill over the cost at one dollar an hour."""
    batch = _ceiling(BIG, n_gpus=BIG_GPUS)
    costs = ia.token_costs(
        BIG,
        GPU,
        batch=batch,
        prompt_len=PROMPT,
        output_len=OUTPUT,
        n_gpus=BIG_GPUS,
        price_per_hour=1.0,
        utilization=UTILIZATION,
    )
    groq = _api(BIG, "Groq")
    bill = ia.evaluate(
        economics.api_request_cost(),
        seq_len=PROMPT,
        output_len=OUTPUT,
        api_input_price=groq["input"],
        api_output_price=groq["output"],
    )
    return float(bill) / costs["request"]


register(
    "14-economics",
    "ex-economics-price",
    Part(
        "price_per_hour",
        _matching_price,
        unit="dollars per GPU-hour",
        hints={
            2: "did you take the GPUs as always busy? Half busy, a request carries twice the rent",
            BIG_GPUS: "is that the price of all four GPUs together? The price is per GPU-hour",
        },
    ),
)

# --- ex-economics-latency: the rate a promise of 17 ms or 33 ms per token allows -------------

TIGHT, LOOSE = 1 / 60, 1 / 30  # seconds per output token


@functools.cache
def _engine() -> ia.Scenario:
    """The 70B set-up's continuously batching engine (one request enters at a time)."""
    workload = dict(prompt_len=PROMPT, output_len=OUTPUT, n_gpus=BIG_GPUS, in_waves=True)
    return ia.Scenario(BIG, GPU, **workload)


@functools.cache
def _saturation() -> float:
    return ia.continuous.saturation_rate(_engine())


@functools.cache
def _rate(promise: float) -> float:
    """The most requests a second whose steady-state time per output token keeps
    ``promise`` (0 if none does)."""
    return ia.targets.highest_rate(_engine(), promise)


def _output_cost(rate: float) -> float:
    """Dollars per million output tokens: the four GPUs' rent over the tokens they write."""
    return ia.planning.output_cost(_engine(), rate)


SATURATION = "did you take the saturation rate? The promise caps the rate before the engine does"
register(
    "14-economics",
    "ex-economics-latency",
    Part("rate_tight", lambda: _rate(TIGHT), unit="requests per second"),
    Part(
        "rate_loose",
        lambda: _rate(LOOSE),
        unit="requests per second",
        # The question shows the promise rounded, 33 ms: 0.033 s allows about 1% less than 1/30 s.
        tolerance=0.02,
        hints=(lambda: {_saturation() / _rate(LOOSE): SATURATION}),
    ),
    Part(
        "output_cost_loose",
        lambda: _output_cost(_rate(LOOSE)),
        unit="dollars per million tokens",
        tolerance=0.02,  # the rounded promise of 33 ms gives about 1% more
        hints=(
            lambda: {
                1 / BIG_GPUS: "is that the rent of one GPU? The set-up pays for four",
                _output_cost(_saturation()) / _output_cost(_rate(LOOSE)): SATURATION,
            }
        ),
    ),
)
