"""Chapter 05 (memory: training versus serving): accelerators to fine-tune and to serve a model,
the state of LoRA, and the state without mixed precision.

The inputs are the chapter's: Llama 3.1 70B and its workload, four sequences of 2,048 tokens
in bf16; accelerators of 80 GB over which the state and the activations spread evenly, each
filled to the last byte (as exercise 1 says); LoRA training a fraction f = 0.01 of the
parameters. Mixed-precision training with Adam keeps 16 bytes per parameter, training in one
format of b bytes 4 b (``formulas.memory``).
"""

import math

import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import N, b
from inference_arithmetic.exercises import EXACT, Part, register
from inference_arithmetic.formulas import memory

MODEL = "llama-3.1-70b"
WORKLOAD = dict(batch=4, seq_len=2048, context_len=2048, bytes_per_number=2)  # the chapter's
CAPACITY = 80e9  # bytes of one accelerator (exercise 1)
LORA_FRACTION = 0.01  # f of exercise 2

f = sympy.Symbol("f", positive=True)  # the fraction of the parameters LoRA trains


def _bytes(expr):
    """``expr`` at the model's sizes, its parameter count and the workload."""
    m = ia.model(MODEL)
    return ia.numeric(expr).from_values({**m.sizes(), "n_params": ia.param_count(m), **WORKLOAD})


def _accelerators(expr, rounding=math.ceil):
    return rounding(_bytes(expr) / CAPACITY)


def _fine_tuning(recompute=True, state=None):
    state = memory.training_state_bytes() if state is None else state
    return state + memory.training_activation_bytes(ia.model(MODEL), recompute=recompute)


def _ratios_to(right, wrong):
    """{the ratio of each wrong count to the right one: its hint}."""
    return {count / right: hint for count, hint in wrong}


_no_master_copy = (
    memory.training_state_bytes() - memory.training_state_terms()["fp32 master weights"]
)

register(
    "05-memory",
    "ex-memory-gpus",
    Part(
        "fine_tuning_gpus",
        lambda: _accelerators(_fine_tuning()),
        unit="accelerators",
        tolerance=EXACT,
        hints=(
            lambda: _ratios_to(
                _accelerators(_fine_tuning()),
                [
                    (
                        _accelerators(_fine_tuning(recompute=False)),
                        "with full recomputation only each layer's input is kept, not every "
                        "activation",
                    ),
                    (
                        _accelerators(_fine_tuning(), math.floor),
                        "a part of an accelerator is a whole one: round up",
                    ),
                    (
                        _accelerators(_fine_tuning(state=_no_master_copy)),
                        "did you count the fp32 master weights? 16 bytes per parameter",
                    ),
                ],
            )
        ),
    ),
    Part(
        "serving_gpus",
        lambda: _accelerators(memory.inference_bytes(ia.model(MODEL))),
        unit="accelerators",
        tolerance=EXACT,
        hints=(
            lambda: _ratios_to(
                _accelerators(memory.inference_bytes(ia.model(MODEL))),
                [
                    (
                        _accelerators(memory.inference_bytes(ia.model(MODEL)), math.floor),
                        "a part of an accelerator is a whole one: round up",
                    ),
                ],
            )
        ),
    ),
)

_lora_state = memory.training_state_terms()["weights"] + memory.training_state_bytes().subs(
    N, f * N
)
_lora_saved = memory.training_state_bytes() - _lora_state
_trained_only = memory.training_state_bytes() - memory.training_state_bytes().subs(N, f * N)


def _per_saved(expr):
    """``expr`` over the bytes LoRA saves, at the exercise's f (a ratio: N cancels)."""
    return float((expr / _lora_saved).subs({f: LORA_FRACTION, N: 1}))


register(
    "05-memory",
    "ex-memory-lora",
    Part("state", lambda: _lora_state, kind="symbolic", unit="bytes, a formula in f and N"),
    Part(
        "saved",
        lambda: _bytes(_lora_saved.subs(f, LORA_FRACTION)),
        unit="bytes",
        hints={
            _per_saved(_trained_only): "the frozen weights stay, in bf16: 2 bytes each",
            _per_saved(_lora_state): "that is LoRA's state; the question asks what it saves "
            "against full fine-tuning's",
        },
    ),
)

_one_format = memory.training_state_bytes(mixed_precision=False)

register(
    "05-memory",
    "ex-memory-precision",
    Part(
        "state_fp32",
        lambda: _one_format.subs(b, ia.bytes_per_number("fp32")),
        kind="symbolic",
        unit="bytes, a formula in N",
    ),
    Part(
        "state_bf16",
        lambda: _one_format.subs(b, ia.bytes_per_number("bf16")),
        kind="symbolic",
        unit="bytes, a formula in N",
    ),
    written=("What, then, does mixed precision save?",),
)
