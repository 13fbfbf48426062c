"""Chapter 11 (planning): the token budget under a promise on the first token, goodput under
percentile targets, and a disaggregated deployment against a colocated one.

The inputs are the chapter's: Llama 3.1 70B on four H100 SXM with tensor parallelism, prompts of
2,048 tokens and answers of 256 in bf16, every step timed by the library's default (kernel by
kernel, the default engine's profile); its continuously batching engine at 2 requests a second with
a promise of 300 ms to the first token, its token budget doubling from 256 to 8,192 (exercise 1);
the same engine's goodput under p90 targets of 1 s to the first token and 50 ms per output token
(exercise 2); prompts of 8,192 tokens within 2 s to the first token and 25 ms a token after it on
up to 24 H100s, disaggregated or colocated (exercise 3).
"""

import functools

import inference_arithmetic as ia
from inference_arithmetic.exercises import EXACT, Part, register

LARGE = "llama-3.1-70b"
GPU = "h100-sxm"
N_GPUS = 4  # the 70B model's
PROMPT, OUTPUT = 2048, 256  # tokens of every request
BUDGET_RATE = 2.0  # requests per second, exercise 1's
TARGET_TTFT = 0.3  # seconds to the first token, exercise 1's promise
BUDGETS = tuple(256 * 2**k for k in range(6))  # exercise 1's token budgets, 256 to 8,192
GOODPUT_TARGETS = {"ttft_target": 1.0, "tpot_target": 0.05}  # seconds, exercise 2's, on p90
LONG_PROMPT, SPLIT_TTFT, SPLIT_TPOT, SPLIT_GPUS = 8192, 2.0, 0.025, 24  # exercise 3


@functools.cache
def _budget_state(budget):
    """The 70B set-up's steady state at exercise 1's rate under a token budget."""
    workload = {"prompt_len": PROMPT, "output_len": OUTPUT, "n_gpus": N_GPUS}
    return ia.steady_state(LARGE, GPU, requests_per_s=BUDGET_RATE, **workload, token_budget=budget)


def _smallest_budget():
    """The smallest of the budgets whose time to first token keeps the promise: a larger one
    only lengthens the time per output token."""
    return min(x for x in BUDGETS if _budget_state(x)["ttft"] <= TARGET_TTFT)


def _hints(right, wrong):
    """A part's hints, computed when a wrong answer first needs them: each wrong answer of
    ``wrong()`` (a mapping to what it says) as its ratio to ``right()``, but one that equals
    the right answer (at these inputs the mistake makes no difference)."""

    def hints():
        answer = right()
        return {value / answer: hint for value, hint in wrong().items() if value != answer}

    return hints


def _budget_hints(quantity):
    """Hints for ``quantity(budget)`` of the smallest budget that keeps the promise."""
    return _hints(
        lambda: quantity(_smallest_budget()),
        lambda: {
            quantity(BUDGETS[-1]): "that is the largest budget, whole prompts: it keeps the "
            "promise, but a smaller one keeps it too, with a shorter time per token",
            quantity(_smallest_budget() // 2): "that budget's time to first token is past the "
            "promise",
        },
    )


register(
    "11-planning",
    "ex-batching-budget",
    Part(
        "token_budget",
        _smallest_budget,
        unit="tokens",
        tolerance=EXACT,
        hints=_budget_hints(lambda x: x),
    ),
    Part(
        "tpot",
        lambda: _budget_state(_smallest_budget())["tpot"],
        unit="seconds",
        hints=_budget_hints(lambda x: _budget_state(x)["tpot"]),
    ),
    written=("Why not simply take the largest budget?",),
)


@functools.cache
def _goodput(percentile=90):
    """The 70B set-up's goodput under exercise 2's targets, on ``percentile`` (None: means)."""
    workload = {"prompt_len": PROMPT, "output_len": OUTPUT, "n_gpus": N_GPUS}
    return ia.goodput(LARGE, GPU, **workload, **GOODPUT_TARGETS, percentile=percentile)


_goodput_hints = _hints(
    lambda: _goodput()["requests_per_s"],
    lambda: {
        _goodput(None)["requests_per_s"]: "that is the rate with the targets on the means: "
        "one request in ten would miss them",
        _goodput(99)["requests_per_s"]: "that is the rate with the targets on p99, a stricter "
        "promise than p90",
    },
)


@functools.cache
def _compared(prompt_len=LONG_PROMPT):
    """Exercise 3's comparison (``ia.disaggregated.compare``) for prompts of ``prompt_len``."""
    return ia.disaggregated.compare(
        LARGE,
        GPU,
        prompt_len=prompt_len,
        output_len=OUTPUT,
        ttft_target=SPLIT_TTFT,
        tpot_target=SPLIT_TPOT,
        most_gpus=SPLIT_GPUS,
    )


def _split_hints(side):
    """Hints for the requests per GPU of ``side`` ("disaggregated" or "colocated")."""
    return _hints(
        lambda: _compared()[side]["per_gpu"],
        lambda: {
            _compared(PROMPT)[side]["per_gpu"]: "that is the section's prompts of 2,048 "
            "tokens; these are four times as long",
            _compared()[side]["goodput"]: "that is the requests a second of the whole "
            "deployment (or of one replica): divide by its GPUs",
        },
    )


register(
    "11-planning",
    "ex-batching-goodput",
    Part(
        "goodput",
        lambda: _goodput()["requests_per_s"],
        unit="requests per second",
        tolerance=0.01,
        hints=_goodput_hints,
    ),
    written=("Which target binds, and why is the goodput below the saturation rate?",),
)


register(
    "11-planning",
    "ex-batching-disaggregated",
    Part(
        "disaggregated_per_gpu",
        lambda: _compared()["disaggregated"]["per_gpu"],
        unit="requests per second per GPU",
        hints=_split_hints("disaggregated"),
    ),
    Part(
        "colocated_per_gpu",
        lambda: _compared()["colocated"]["per_gpu"],
        unit="requests per second per GPU",
        hints=_split_hints("colocated"),
    ),
    written=("Why does the best split give most of its GPUs to prefill?",),
)
