"""Chapter 10 (streams): Little's law on a continuously batching engine, and the tail of its
first tokens.

The inputs are the chapter's: Llama 3.1 8B on one H100 SXM in bf16, every step timed by the
library's default (kernel by kernel, the default engine's profile); 16 requests a second of prompts
of 1,024 tokens and answers of 128, whole prompts in one step (a token budget of 8,192), the
requests in the engine and those decoding by Little's law (exercise 1); prompts of 2,048 tokens
and answers of 256 at the library's defaults, at 60% of the saturation rate, the median and p99 of
each request's time to first token (exercise 2).
"""

import functools

import inference_arithmetic as ia
from inference_arithmetic.exercises import Part, register

SMALL, GPU = "llama-3.1-8b", "h100-sxm"
STREAM = {"prompt_len": 1024, "output_len": 128, "token_budget": 8192}  # exercise 1's requests
RATE = 16.0  # requests per second, exercise 1's
WORKLOAD = {"prompt_len": 2048, "output_len": 256}  # exercise 2's requests
LOAD = 0.6  # of the saturation rate, exercise 2's


@functools.cache
def _state():
    """Exercise 1's steady state."""
    return ia.steady_state(SMALL, GPU, requests_per_s=RATE, **STREAM)


def _in_engine():
    """Little's law over a whole request: its time to first token and its O - 1 steps after."""
    state = _state()
    return RATE * (state["ttft"] + (STREAM["output_len"] - 1) * state["tpot"])


def _decoding():
    """Little's law over the decoding: O - 1 mean steps."""
    return RATE * (STREAM["output_len"] - 1) * _state()["mean_step"]


register(
    "10-streams",
    "ex-streams-little",
    Part(
        "in_engine",
        _in_engine,
        unit="requests",
        hints=lambda: {
            _decoding() / _in_engine(): "that is the requests decoding; those waiting for their "
            "first token are in the engine too",
        },
    ),
    Part(
        "decoding",
        _decoding,
        unit="requests",
        hints=lambda: {
            RATE * (STREAM["output_len"] - 1) * _state()["tpot"] / _decoding(): "a request "
            "decodes for O - 1 steps of the mean length, not of its time per token",
        },
    ),
)


@functools.cache
def _percentiles():
    """Exercise 2's percentiles of each request's time to first token."""
    engine = ia.Scenario(SMALL, GPU, **WORKLOAD, in_waves=True)
    rate = LOAD * ia.continuous.saturation_rate(engine)
    return ia.steady_state(SMALL, GPU, requests_per_s=rate, **WORKLOAD)["percentiles"]["ttft"]


register(
    "10-streams",
    "ex-streams-tail",
    Part("ttft_p50", lambda: _percentiles()["p50"], unit="seconds"),
    Part(
        "ttft_p99",
        lambda: _percentiles()["p99"],
        unit="seconds",
        hints=lambda: {
            _percentiles()["p90"] / _percentiles()["p99"]: "that is the p90: one request in "
            "ten waits longer, the p99 one in a hundred",
        },
    ),
    written=("Why is the p99 so much further from the median than the TPOT's?",),
)
