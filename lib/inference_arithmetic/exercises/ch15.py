"""Chapter 15 (beyond the basics): quantization, mixture of experts, speculative decoding.

The inputs are the chapter's: H100 SXM GPUs, each holding what fits in its memory budget
(``ia.timing.DEFAULT_MEMORY_UTILIZATION`` of its memory), requests of 8,192 tokens and the
library's default step model (kernel by kernel, the default engine's profile); Llama 3.1 405B
for the weights' formats, Mixtral 8x7B's experts under uniform routing
(``latency.experts_touched``), and Llama 3.1 8B drafting for Llama 3.1 70B, both on four H100s,
with a draft of 4 tokens (``techniques.speculative_speedup``).
"""

from __future__ import annotations

import math

import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import E, a, c_d, gamma, k
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import latency, techniques

GPU, CONTEXT = "h100-sxm", 8192

# --- ex-beyond-405b: the H100s that hold Llama 3.1 405B, and its time per token on eight ------

HUGE, HUGE_GPUS = "llama-3.1-405b", 8


def _gpus_to_hold(dtype: str, utilization: float = ia.timing.DEFAULT_MEMORY_UTILIZATION) -> int:
    """The fewest H100s whose memory budgets hold the weights in ``dtype``."""
    budget = ia.evaluate(
        latency.memory_budget(),
        memory_utilization=utilization,
        gpu_memory=ia.gpu(GPU).figures()["gpu_memory"],
    )  # the memory the driver reports
    return math.ceil(ia.timing.weights_per_gpu(HUGE, n_gpus=1, dtype=dtype) / float(budget))


def _holding(dtype: str, mistaken: str, bytes_per_number: str) -> Part:
    """The part for ``dtype``, with the hints of the whole memory and of ``mistaken``'s bytes."""

    def build():
        right = _gpus_to_hold(dtype)
        return {
            _gpus_to_hold(dtype, utilization=1.0) / right: (
                "did you fill each GPU's whole memory? An engine fills only its budget, "
                f"{ia.timing.DEFAULT_MEMORY_UTILIZATION:.0%} of it"
            ),
            _gpus_to_hold(mistaken) / right: f"{dtype} takes {bytes_per_number} per number",
        }

    return Part(f"gpus_{dtype}", lambda: _gpus_to_hold(dtype), unit="GPUs", hints=(build))


def _time_per_token(**formats) -> float:
    formats = {"dtype": "fp8", "cache_dtype": "fp8", **formats}
    return ia.decode_step_time(HUGE, GPU, batch=1, context_len=CONTEXT, n_gpus=HUGE_GPUS, **formats)


register(
    "15-beyond",
    "ex-beyond-405b",
    _holding("bf16", "fp8", "2 bytes"),
    _holding("fp8", "bf16", "1 byte"),
    _holding("int4", "fp8", "half a byte"),
    Part(
        "time_per_token",
        _time_per_token,
        unit="seconds",
        hints=(
            lambda: {
                _time_per_token(cache_dtype="bf16") / _time_per_token(): (
                    "did you keep the KV cache in bf16? The question stores it in fp8"
                ),
                _time_per_token(**ia.timing.IDEAL) / _time_per_token(): (
                    "did you time the ideal roofline? The chapter times each step kernel by "
                    "kernel, the library's default"
                ),
                _time_per_token(**ia.timing.ROOFLINE) / _time_per_token(): (
                    "did you time chapter 08's single roofline? The chapter times each step "
                    "kernel by kernel, the library's default"
                ),
            }
        ),
    ),
)

# --- ex-beyond-moe: the batch at which Mixtral reads half its routed experts ------------------

MIXTRAL = "mixtral-8x7b"


def _half_the_experts() -> float:
    """The (real) number of tokens whose picks touch E/2 experts on average."""
    m = ia.model(MIXTRAL)
    tokens = sympy.Symbol("tokens", positive=True)
    touched = latency.experts_touched(tokens).subs({E: m.n_experts, k: m.n_active_experts})
    (solution,) = sympy.solve(sympy.Eq(touched, sympy.Rational(m.n_experts, 2)), tokens)
    return float(solution)


register(
    "15-beyond",
    "ex-beyond-moe",
    Part(
        "batch",
        _half_the_experts,
        unit="requests (a real number, not rounded)",
        hints=(
            lambda: {
                rounded(_half_the_experts()) / _half_the_experts(): (
                    "did you round to a whole batch? Give the real B at which the expected "
                    "experts read reach E/2"
                )
                for rounded in (math.floor, math.ceil)
            }
        ),
    ),
    written=("compare with the uniform-routing figure above",),
)

# --- ex-beyond-speculative: the acceptance rate below which speculation is slower -------------

TARGET, DRAFT, SPEC_GPUS, DRAFT_LEN = "llama-3.1-70b", "llama-3.1-8b", 4, 4


def _break_even_acceptance() -> float:
    """The acceptance rate at which the speedup is 1, with the chapter's draft cost: one pass
    of the draft, as the library times it inside a verification step, over an ordinary step
    of the target, both at batch 1 on four H100s (the acceptance rate times no step)."""
    drafting = ia.Speculative("draft", DRAFT_LEN, acceptance_rate=0.8, draft_model=DRAFT)
    rows = ia.kernels(
        TARGET, GPU, batch=1, context_len=CONTEXT, n_gpus=SPEC_GPUS, speculative=drafting
    )
    (draft,) = [row["time"] for row in rows if row["kind"] == "draft"]
    target = ia.decode_step_time(TARGET, GPU, batch=1, context_len=CONTEXT, n_gpus=SPEC_GPUS)
    cost = draft / DRAFT_LEN / target  # c_d, a pass of the draft in target steps
    speedup = techniques.speculative_speedup().subs({gamma: DRAFT_LEN, c_d: cost})
    return float(sympy.nsolve(speedup - 1, a, (1e-9, 1 - 1e-9), solver="bisect"))


register(
    "15-beyond",
    "ex-beyond-speculative",
    Part("acceptance_rate", _break_even_acceptance, unit="probability"),
)
