"""A two-layer network, d_1 -> d_2 -> d_3: parameters, FLOPs and memory.

Derived in chapter 02 (``book/02-mlp.md``). Every function returns a SymPy expression in the
book's symbols; compile it with ``inference_arithmetic.core.numeric``.

>>> from inference_arithmetic.core.numeric import evaluate
>>> evaluate(params(), d_1=2, d_2=3, d_3=2)  # 2*3 + 3*2 = 12
12
>>> evaluate(training_flops(), batch=1, d_1=2, d_2=3, d_3=2)  # 3 * 2 * 12 = 72
72
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core.symbols import B, b, d_1, d_2, d_3

__all__ = [
    "WIDTHS",
    "layer_params",
    "params",
    "layer_forward_flops",
    "forward_flops",
    "input_gradient_flops",
    "weight_gradient_flops",
    "backward_flops",
    "training_flops",
    "activations",
    "inference_memory_terms",
    "inference_memory",
    "training_memory_terms",
    "training_memory",
]

WIDTHS = (d_1, d_2, d_3)
"""The widths of the network's three layers of numbers: input, hidden, output."""


def _layers():
    return list(zip(WIDTHS[:-1], WIDTHS[1:], strict=True))


def layer_params(d_in=d_1, d_out=d_2, bias=False):
    """Parameters of one dense layer: a d_in x d_out weight matrix, plus d_out biases.

    The talk's first network has 2 inputs and 3 outputs: 2*3 = 6 parameters.
    """
    return d_in * d_out + (d_out if bias else 0)


def params(bias=False):
    """Parameters of the two-layer network: d_1*d_2 + d_2*d_3 (+ d_2 + d_3 with biases)."""
    return sum(layer_params(d_in, d_out, bias) for d_in, d_out in _layers())


def layer_forward_flops(d_in=d_1, d_out=d_2):
    """FLOPs of one layer on a batch: B*d_in*d_out multiply-adds, 2 FLOPs each.

    Bias additions (B*d_out) are not matmul FLOPs and, as everywhere in the book, not counted.
    """
    return 2 * B * d_in * d_out


def forward_flops():
    """Forward FLOPs of the network: 2*B*(d_1*d_2 + d_2*d_3)."""
    return sum(layer_forward_flops(d_in, d_out) for d_in, d_out in _layers())


def input_gradient_flops():
    """FLOPs of the gradients with respect to each layer's input: one matmul per layer.

    The first layer's input gradient is not needed when the inputs are data; the book keeps
    it, as the rule "backward = 2 x forward" does (chapter 02, exercise ex-mlp-first-layer).
    """
    return forward_flops()


def weight_gradient_flops():
    """FLOPs of the gradients with respect to the weights: one matmul per layer."""
    return forward_flops()


def backward_flops():
    """Backward FLOPs: input gradients plus weight gradients, twice the forward pass."""
    return input_gradient_flops() + weight_gradient_flops()


def training_flops():
    """One training step (forward and backward): three times the forward pass."""
    return forward_flops() + backward_flops()


def activations():
    """Numbers held at each layer for a batch: B*d_1 (input), B*d_2 (hidden), B*d_3 (output)."""
    return [B * width for width in WIDTHS]


def inference_memory_terms(bias=False):
    """Bytes at inference: the parameters, and the largest activation of the batch.

    A layer's activations can be freed once the next layer has them, so only the largest
    must fit (a lower bound: a layer's input and output coexist while it runs).
    """
    return {
        "parameters": b * params(bias),
        "largest activation": b * sympy.Max(*activations()),
    }


def inference_memory(bias=False):
    """Bytes at inference: b*(params + B*max(d_1, d_2, d_3))."""
    return sum(inference_memory_terms(bias).values())


def training_memory_terms(bias=False):
    """Bytes in training with Adam: parameters, gradients, two moments, every activation.

    The backward pass needs every layer's activations, and Adam keeps a first and a second
    moment per parameter: four numbers per parameter before any activation.
    """
    n_params = params(bias)
    return {
        "parameters": b * n_params,
        "gradients": b * n_params,
        "Adam moments": 2 * b * n_params,
        "activations": b * sum(activations()),
    }


def training_memory(bias=False):
    """Bytes in training with Adam: b*(4*params + B*(d_1 + d_2 + d_3))."""
    return sum(training_memory_terms(bias).values())
