"""The three quantities and the two times every later chapter uses.

Derived in chapter 01 (``book/01-quantities.md``) and the introduction.

>>> from inference_arithmetic.core.numeric import evaluate
>>> evaluate(weight_bytes(), n_params=70 * 10**9, bytes_per_number=2)  # 70e9 * 2 B = 140 GB
140000000000
>>> evaluate(memory_time(weight_bytes()), n_params=10**9, bytes_per_number=2, bandwidth=10**12)
1/500
"""

from __future__ import annotations

from inference_arithmetic.core.symbols import N, T, b, beta, pi

__all__ = [
    "weight_bytes",
    "forward_flops",
    "training_flops",
    "compute_time",
    "memory_time",
    "balanced_tokens",
]


def weight_bytes():
    """Bytes to store N parameters at b bytes each: N*b."""
    return N * b


def forward_flops():
    """FLOPs to push T tokens through N parameters: 2 per parameter per token (chapter 02).

    The transformer chapters refine this with attention; it is the leading term.
    """
    return 2 * N * T


def training_flops():
    """FLOPs to train on T tokens: forward plus a backward pass of twice its cost, 6*N*T."""
    return 3 * forward_flops()


def compute_time(flops):
    """Seconds to do ``flops`` operations at pi FLOP/s."""
    return flops / pi


def memory_time(nbytes):
    """Seconds to read ``nbytes`` from memory at beta bytes per second."""
    return nbytes / beta


def balanced_tokens():
    """Tokens per read of the weights at which compute time equals memory time: b*pi/(2*beta).

    Fewer tokens per read and the device waits for memory; more and it waits for compute.
    """
    return b * pi / (2 * beta)
