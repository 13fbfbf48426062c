"""Chapter 01 (parameters, FLOPs and bytes): GB and GiB, and the balance point of a device.

The inputs are the chapter's: a 70-billion-parameter model, an accelerator sold with 80 GB of
memory, and the round device of 10^15 bf16 FLOP/s reading 3 TB/s. Compute and memory take
equally long at b pi / (2 beta) tokens per read of the weights.
"""

import math

import inference_arithmetic as ia
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas.basics import balanced_tokens, weight_bytes

N_PARAMS = 70e9  # the chapter's model
CAPACITY = 80e9  # bytes: the accelerator of the chapter's figure
FLOP_RATE, BANDWIDTH = 1e15, 3e12  # the round device, bf16 FLOP/s and bytes per second
GIB = 2**30
GB_PER_GIB = GIB / 1e9

_weights = ia.numeric(weight_bytes())
_balance = ia.numeric(balanced_tokens())

register(
    "01-quantities",
    "ex-q-gib",
    Part(
        "capacity_gib",
        lambda: CAPACITY / GIB,
        unit="GiB (2^30 bytes)",
        hints={
            GB_PER_GIB**2: "a GiB is larger than a GB, so there are fewer of them: did you "
            "multiply by 2^30 / 10^9 instead of dividing?",
            GB_PER_GIB / 1.024: "a GiB is 1024^3 bytes and a GB 1000^3: the factor is "
            "(1024 / 1000)^3, not 1024 / 1000",
        },
    ),
    Part(
        "fits",
        lambda: bool(
            _weights(n_params=N_PARAMS, bytes_per_number=ia.bytes_per_number("fp8")) <= CAPACITY
        ),
        kind="yes/no",
    ),
)

register(
    "01-quantities",
    "ex-q-fp8-balance",
    Part(
        "balance_point",
        lambda: _balance(
            bytes_per_number=ia.bytes_per_number("fp8"),
            flop_rate=2 * FLOP_RATE,  # fp8 runs at twice the bf16 FLOP/s
            bandwidth=BANDWIDTH,
        ),
        unit="tokens per read of the weights",
        hints={
            2: "fp8 takes 1 byte per number, not 2, and a token costs 2 FLOPs per parameter: "
            "the balance is b pi / (2 beta)",
            0.5: "the fp8 device also does twice the bf16 FLOP/s: pi doubles while b halves",
        },
    ),
)


def _bf16_balance():
    """The balance point of bf16 weights on the round device, in tokens per read."""
    return _balance(
        bytes_per_number=ia.bytes_per_number("bf16"), flop_rate=FLOP_RATE, bandwidth=BANDWIDTH
    )


def _batch():
    """The smallest whole number of requests at or above the balance point."""
    return math.ceil(_bf16_balance())


register(
    "01-quantities",
    "ex-q-batch",
    Part(
        "requests",
        _batch,
        unit="requests",
        tolerance=0,  # a whole number of requests: one fewer still leaves the step memory-bound
        hints=lambda: {
            2: "a token costs 2 FLOPs per parameter: the balance is b pi / (2 beta), not "
            "b pi / beta",
            0.5: "bf16 takes 2 bytes per number: b = 2 in b pi / (2 beta)",
            # Within 2% of the answer either way: one request fewer or more.
            (_batch() - 1) / _batch(): f"the smallest whole number of requests at or above the "
            f"balance point, {_bf16_balance():.2f} tokens per read: one fewer leaves the step "
            "memory-bound",
        },
    ),
    written=(
        "And what does the balance point leave out once the tokens belong to different requests?",
    ),
)
