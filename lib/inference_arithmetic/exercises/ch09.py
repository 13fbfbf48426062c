"""Chapter 09 (batching): the batch at which a long context's cache outweighs the weights, the
largest batch under a latency promise, the waste of a static batch, and the ideal roofline.

The inputs are the chapter's: Llama 3.1 70B on four H100 SXM with tensor parallelism and
Llama 3.1 8B on one; prompts of 2,048 tokens and answers of 256 in bf16, every step timed by the
library's default (kernel by kernel, the default engine's profile) and within
``ia.timing.DEFAULT_MEMORY_UTILIZATION`` of each GPU's memory (``ia.max_batch``); requests of
32,768 tokens (exercise 1), a promise of 20 ms per output token (exercise 2), static batches of 8
and 256 with exponential output lengths, whose longest of B has mean mu H_B, the chapter's result
(exercise 3), and the ideal roofline (``ia.timing.IDEAL``) against the default (exercise 4).
"""

import functools

import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, b, eta_m
from inference_arithmetic.exercises import EXACT, Part, register
from inference_arithmetic.formulas import kv_cache, transformer

SMALL, LARGE = "llama-3.1-8b", "llama-3.1-70b"
GPU = "h100-sxm"
N_GPUS = 4  # the 70B model's
PROMPT, OUTPUT = 2048, 256  # tokens of every request
LONG = 32_768  # tokens of exercise 1's requests
TARGET_TPOT = 0.020  # seconds per output token, exercise 2's promise
STATIC_BATCHES = (8, 256)  # exercise 3


def _crossover(context_len):
    """Requests whose bf16 cache of ``context_len`` tokens weighs as much as the bf16 weights."""
    weights = ia.param_count(LARGE) * ia.bytes_per_number("bf16")
    return weights / ia.kv_cache_bytes(LARGE, batch=1, context_len=context_len, dtype="bf16")


def _fit(**options):
    return ia.max_batch(LARGE, GPU, context_len=LONG, n_gpus=N_GPUS, **options)


register(
    "09-batching",
    "ex-batching-long-context",
    Part(
        "crossover_batch",
        lambda: _crossover(LONG),
        unit="requests",
        # A batch may be answered as a whole number: the crossing rounded (13) or the first
        # whole batch beyond it (14, 6.5% high) passes, the next ones do not.
        tolerance=0.07,
        hints={LONG / PROMPT: f"that is at {PROMPT:,} tokens; the requests hold {LONG:,}"},
    ),
    Part(
        "max_batch",
        _fit,
        unit="requests",
        tolerance=EXACT,
        hints=(
            lambda: {
                _fit(memory_utilization=1.0) / _fit(): "a serving engine fills "
                f"{ia.timing.DEFAULT_MEMORY_UTILIZATION:.0%} of each GPU's memory, not all of it",
            }
        ),
    ),
)


@functools.cache
def _request(batch, ideal=False):
    """The 70B set-up's static batch: the library's default step, or the ideal roofline."""
    options = ia.timing.IDEAL if ideal else {}
    return ia.generation(
        LARGE, GPU, batch=batch, prompt_len=PROMPT, output_len=OUTPUT, n_gpus=N_GPUS, **options
    )


@functools.cache
def _memory_ceiling():
    return ia.max_batch(LARGE, GPU, context_len=PROMPT + OUTPUT, n_gpus=N_GPUS)


@functools.cache
def _largest_batch(ideal=False):
    """The largest batch that fits and keeps the time per output token within the promise
    (it grows with the batch: bisection between 1 and the memory ceiling)."""
    low, high = 0, _memory_ceiling()  # low keeps the promise (0: none does), high + 1 not
    while low < high:
        middle = (low + high + 1) // 2
        if _request(middle, ideal)["tpot"] <= TARGET_TPOT:
            low = middle
        else:
            high = middle - 1
    return low


def _slo_hints(quantity):
    """Hints for ``quantity(batch, ideal)`` of the largest batch under the promise."""

    def hints():
        right = quantity(_largest_batch(), False)
        wrong = {
            quantity(_memory_ceiling(), False): "that is at the memory ceiling; the promise on "
            "the time per token caps the batch below it",
            quantity(_largest_batch(True), True): "that is at the ideal roofline, a bound no "
            "engine reaches; the chapter times steps with the library's default",
        }
        return {value / right: hint for value, hint in wrong.items()}

    return hints


def _batch(batch, ideal):
    return batch


def _throughput(batch, ideal):
    return _request(batch, ideal)["throughput"]


register(
    "09-batching",
    "ex-batching-slo",
    Part("batch", _largest_batch, unit="requests", tolerance=EXACT, hints=_slo_hints(_batch)),
    Part(
        "throughput",
        lambda: _throughput(_largest_batch(), False),
        unit="tokens per second",
        hints=_slo_hints(_throughput),
    ),
)


def _wasted(batch, longest_over_mean):
    """Share of a static batch's request-steps that do nothing, if its longest output is
    ``longest_over_mean`` times the mean length."""
    return float(1 - 1 / longest_over_mean.subs(B, batch))


def _waste_part(batch):
    exponential = _wasted(batch, sympy.harmonic(B))  # the longest of B: mu H_B
    uniform = _wasted(batch, 2 * B / (B + 1))  # the longest of B uniform on (0, l): l B/(B+1)
    return Part(
        f"wasted_{batch}",
        lambda: _wasted(batch, sympy.harmonic(B)),
        unit="fraction",
        hints={
            uniform / exponential: "that is for uniform lengths; with exponential ones the "
            "longest of B is mu H_B",
            (1 - exponential) / exponential: "that is the share of request-steps used; the "
            "rest is wasted",
        },
    )


register(
    "09-batching",
    "ex-batching-waste",
    *(_waste_part(x) for x in STATIC_BATCHES),
    written=("Why does continuous batching matter more for large batches?",),
)


def _crossover_formula():
    """The batch at which the KV cache a decode step reads weighs as much as the weights."""
    m = ia.model(SMALL)
    per_request = kv_cache.kv_cache_bytes(m).subs(B, 1)
    return sympy.solve(sympy.Eq(B * per_request, b * transformer.params(m)), B)[0]


def _ceiling_throughput(ideal):
    """The 8B set-up's throughput at its memory ceiling: the default step, or the ideal."""
    batch = ia.max_batch(SMALL, GPU, context_len=PROMPT + OUTPUT)
    options = ia.timing.IDEAL if ideal else {}
    return ia.generation(SMALL, GPU, batch=batch, prompt_len=PROMPT, output_len=OUTPUT, **options)[
        "throughput"
    ]


register(
    "09-batching",
    "ex-batching-efficiency",
    Part("crossover_changes", lambda: eta_m in _crossover_formula().free_symbols, kind="yes/no"),
    Part(
        "ceiling_throughput_changes",
        lambda: _ceiling_throughput(True) != _ceiling_throughput(False),
        kind="yes/no",
    ),
)
