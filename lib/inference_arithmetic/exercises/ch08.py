"""Chapter 08 (prefill and decode): when decode catches up with the prefill, the prompt below
which a prefill is memory-bound, a smaller model on one GPU, and, kernel by kernel, the batch
at which decode attention outlasts the matrix products.

The inputs are the chapter's: the post's Llama 3 70B (the registry's Llama 3.3 70B, the same
architecture) on two H100 SXM with tensor parallelism, and Llama 3.1 8B on one; a prompt of
2,048 tokens and an answer of 256, in bf16; the library's default efficiencies
(``ia.timing.DEFAULT_*``) unless the question asks for the ideal roofline (``ia.timing.IDEAL``,
on one imaginary H100 large enough for the model). ``ia.generation`` times a request step by
step.
"""

import functools
import itertools
import math

import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import T, by_name
from inference_arithmetic.exercises import EXACT, Part, register
from inference_arithmetic.formulas import basics, latency

MODEL, SMALL = "llama-3.3-70b", "llama-3.1-8b"
GPU = "h100-sxm"
N_GPUS = 2  # the 70B model's tensor-parallel GPUs
PROMPT, OUTPUT = 2048, 256  # tokens
# Efficiencies as arguments of the cached functions below: the ideal roofline, the defaults.
IDEAL = tuple(ia.timing.IDEAL.items())
DEFAULTS = (
    ("compute_efficiency", ia.timing.DEFAULT_COMPUTE_EFFICIENCY),
    ("bandwidth_efficiency", ia.timing.DEFAULT_BANDWIDTH_EFFICIENCY),
    ("attention_efficiency", ia.timing.DEFAULT_ATTENTION_EFFICIENCY),
)


@functools.cache
def _request(model, n_gpus, output_len=OUTPUT, efficiency=DEFAULTS):
    """``ia.generation`` of one request (the library's efficiencies unless ``efficiency``)."""
    options = dict(prompt_len=PROMPT, output_len=output_len, n_gpus=n_gpus)
    options |= {**ia.timing.ROOFLINE, **dict(efficiency)}  # the chapter's single roofline
    return ia.generation(model, GPU, **options)


@functools.cache
def _decode_catches_up(efficiency=DEFAULTS):
    """The shortest answer whose decode steps take at least as long as its prefill."""
    for length in itertools.count(1):
        run = _request(MODEL, N_GPUS, length, efficiency)
        if run["ttft"] / run["request_time"] <= 0.5:
            return length


def _half_hints():
    right = _decode_catches_up()
    run = _request(MODEL, N_GPUS, right)
    steps = run["ttft"] / run["tpot"]  # decode steps that take as long as the prefill
    first = "the prefill yields the first token itself: O - 1 decode steps follow it"
    return {
        length / right: hint
        for length, hint in {
            steps: first,
            math.ceil(steps): first,
            steps + 1: "a length is a whole number of tokens: the shortest that makes decode "
            "at least as long as the prefill",
            _decode_catches_up(IDEAL): "that is at the ideal roofline; the question asks for "
            "the library's efficiencies, its defaults",
        }.items()
    }


register(
    "08-prefill-decode",
    "ex-prefill-decode-half",
    Part(
        "output_tokens",
        _decode_catches_up,
        unit="tokens",
        tolerance=EXACT,
        hints=(_half_hints),
    ),
)


@functools.cache
def _memory_bound_below(efficiency=IDEAL):
    """The prompt length at which a prefill's compute time equals its memory time, on one
    (imaginary) GPU."""
    m = ia.model(MODEL)
    figures = {k: v for k, v in dict(efficiency).items() if k != "step"}  # the symbols' values
    values = {**m.sizes(), **ia.gpu(GPU).figures("bf16"), **figures}  # at the given efficiencies
    values.update(batch=1, n_gpus=1, bytes_per_number=2, kv_bytes_per_number=2)
    at = {by_name(name): value for name, value in values.items()}
    balance = sympy.Eq(latency.prefill_compute_time(m), latency.prefill_memory_time(m))
    # A prompt shorter than the vocabulary gathers one embedding row per token: min(T, V) = T.
    short = balance.subs(at).subs(sympy.Min(T, m.vocab_size), T)
    length = sympy.Symbol("length", positive=True)  # T as a real number, to solve for
    (crossing,) = sympy.solve(short.subs(T, length), length)
    return float(crossing)


def _rough_estimate():
    """b pi / (2 beta): the weights' FLOPs and bytes alone."""
    values = {**ia.gpu(GPU).figures("bf16"), "bytes_per_number": 2}
    return ia.numeric(basics.balanced_tokens()).from_values(values)


register(
    "08-prefill-decode",
    "ex-prefill-decode-ridge",
    Part(
        "prompt_tokens",
        _memory_bound_below,
        unit="tokens",
        hints=(
            lambda: {
                _rough_estimate() / _memory_bound_below(): "that is the rough estimate "
                "b pi / (2 beta); the attention FLOPs and the cache writes move it a little: "
                "solve compute time = memory time with the whole prefill",
                _memory_bound_below(DEFAULTS)
                / _memory_bound_below(): "that is at the library's efficiencies; the question "
                "asks for the ideal roofline",
            }
        ),
    ),
)


def _small(key, efficiency=DEFAULTS):
    return _request(SMALL, 1, efficiency=efficiency)[key]


def _speedup(key):
    """How many times less the 8B model on one GPU takes than the 70B model on two."""
    return _request(MODEL, N_GPUS)[key] / _small(key)


def _small_part(name, key):
    ideal = "that is at the ideal roofline; the question asks for the library's efficiencies"
    return Part(
        name,
        lambda: _small(key),
        unit="seconds",
        hints=(lambda: {_small(key, IDEAL) / _small(key): ideal}),
    )


def _speedup_part(name, key):
    inverse = "that is the 8B model's time over the 70B model's; the question asks how many "
    inverse += "times faster the 8B model is"
    return Part(
        name,
        lambda: _speedup(key),
        unit="times",
        hints=(lambda: {1 / _speedup(key) ** 2: inverse}),
    )


register(
    "08-prefill-decode",
    "ex-prefill-decode-8b",
    _small_part("ttft", "ttft"),
    _small_part("tpot", "tpot"),
    _small_part("latency", "request_time"),
    _speedup_part("ttft_speedup", "ttft"),
    _speedup_part("tpot_speedup", "tpot"),
    _speedup_part("latency_speedup", "request_time"),
    written=("why is the TPOT ratio close to the ratio of bytes per GPU?",),
)


CACHED = 1024  # tokens cached per request in the kernel-by-kernel exercise


def _kernels(batch):
    """A decode step of the 8B model on one GPU, kernel by kernel (the library's defaults)."""
    return ia.kernels(SMALL, GPU, batch=batch, context_len=CACHED)


def _time_of(rows, kind=None, kernel=None):
    return sum(r["time"] for r in rows if r["kind"] == kind or r["kernel"] == kernel)


@functools.cache
def _attention_overtakes(kernel=None):
    """The smallest batch whose decode attention takes longer than all the step's matrix
    products (or than the one product named)."""
    for batch in itertools.count(1):
        rows = _kernels(batch)
        products = _time_of(rows, kernel=kernel) if kernel else _time_of(rows, kind="matmul")
        if _time_of(rows, kernel="decode attention") > products:
            return batch


def _products_compute_bound():
    rows = _kernels(_attention_overtakes())
    return all(r["bound"] == "compute" for r in rows if r["kind"] == "matmul")


register(
    "08-prefill-decode",
    "ex-prefill-decode-kernels",
    Part(
        "batch",
        _attention_overtakes,
        unit="requests",
        tolerance=EXACT,
        hints=(
            lambda: {
                _attention_overtakes("feed-forward up")
                / _attention_overtakes(): "that is where attention overtakes the largest "
                "product alone; the question asks for all the products of the step together"
            }
        ),
    ),
    Part("products_compute_bound", _products_compute_bound, kind="yes/no"),
    written=("What sets the crossing?",),
)
