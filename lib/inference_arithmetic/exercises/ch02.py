"""Chapter 02 (a two-layer network): parameters, FLOPs and memory of d_1 -> d_2 -> d_3.

The inputs are the chapter's example network (1024 -> 4096 -> 1024, at batch 32 for memory)
and the digits network of ex-mlp-mnist (a 28 x 28 image -> 512 -> 10 classes, with biases).
Counts of parameters and FLOPs are exact: a near miss there is a missing term, not rounding.
"""

import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import mlp

EXAMPLE = dict(d_1=1024, d_2=4096, d_3=1024)  # the chapter's running example
DIGITS = dict(d_1=28 * 28, d_2=512, d_3=10)  # ex-mlp-mnist's network
BATCH = 32  # the chapter's batch for memory
# An exact count, to 0.05%: that forgives rounding to 3 digits (813,000 FLOPs is 0.007% off) but
# not a missing or an extra bias term (0.06% to 0.13% off in the digits network).
COUNT = 5e-4


def _at(expr, sizes, **values):
    """``expr`` at the network's ``sizes`` (and any other ``values``) it uses: an int when
    whole (evaluated exactly), a float otherwise."""
    names = {symbol.name for symbol in sympy.sympify(expr).free_symbols}
    result = ia.evaluate(expr, **{k: v for k, v in {**sizes, **values}.items() if k in names})
    return int(result) if result.is_integer else float(result)


# Digits network: parameters without biases, and FLOPs with bias additions or 2 per parameter,
# come within 0.2% of the answer; only an exact count tells them apart.
_digits_weights = _at(mlp.params(), DIGITS)
_digits_params = _at(mlp.params(bias=True), DIGITS)
_biases_share = _digits_weights / _digits_params

register(
    "02-mlp",
    "ex-mlp-mnist",
    Part(
        "params",
        lambda: _at(mlp.params(bias=True), DIGITS),
        unit="parameters",
        tolerance=COUNT,
        hints={_biases_share: "did you add the biases, one per output of each layer?"},
    ),
    Part(
        "flops",
        lambda: _at(mlp.forward_flops(), DIGITS, batch=1),
        unit="FLOPs",
        tolerance=COUNT,
        hints={
            0.5: "a multiply-add is 2 FLOPs",
            1 / _biases_share: "bias additions are not multiply-adds: the forward pass costs 2 "
            "FLOPs per weight, not per parameter",
            3: "that is a training step (forward and backward); inference is the forward pass",
        },
    ),
)


def _crossover():
    """Batch at which all activations take as many bytes as parameters, gradients and moments."""
    terms = mlp.training_memory_terms()
    state = terms["parameters"] + terms["gradients"] + terms["Adam moments"]
    return sympy.solve(sympy.Eq(terms["activations"], state), B)[0]


def _crossover_with(numbers_per_param=4, activations=None):
    """The crossover batch with a mistake (another count of numbers per parameter, or other
    activations), over the right one: the key of a hint. The activations are B times a width,
    so the batch is the state over that width (no solve: importing stays cheap)."""

    def batch(numbers, held):
        return _at(numbers * mlp.params() / sympy.cancel(held / B), EXAMPLE)

    held = sum(mlp.activations()) if activations is None else activations
    return batch(numbers_per_param, held) / batch(4, sum(mlp.activations()))


register(
    "02-mlp",
    "ex-mlp-crossover",
    Part("crossover_batch", _crossover, kind="symbolic", unit="a formula in d_1, d_2, d_3"),
    Part(
        "crossover_example",
        lambda: _at(_crossover(), EXAMPLE),
        unit="inputs per batch",
        hints={
            _crossover_with(2): "Adam keeps two moments per parameter: with the parameters and "
            "the gradients, four numbers per parameter",
            _crossover_with(1): "the state is four numbers per parameter: parameters, "
            "gradients and Adam's two moments",
            _crossover_with(3): "Adam keeps two moments per parameter, not one",
            _crossover_with(activations=B * EXAMPLE["d_2"]): "training keeps every "
            "activation, B (d_1 + d_2 + d_3) numbers, not only the largest",
        },
    ),
)


def _backward_over_forward(sizes):
    """Backward FLOPs without the first layer's input gradient, per forward FLOP."""
    exact_backward = mlp.backward_flops() - mlp.layer_forward_flops()
    return _at(sympy.cancel(exact_backward / mlp.forward_flops()), sizes)


def _first_layer_hints(sizes):
    right = _backward_over_forward(sizes)
    return {
        2 / right: "that is the rule backward = 2 x forward: leave out the first layer's input "
        "gradient, a matmul as large as the first layer's forward product",
        (2 - right) / right: "that is the saving, in forward passes; the question's number is "
        "backward / forward once the unused gradient is left out",
    }


register(
    "02-mlp",
    "ex-mlp-first-layer",
    Part(
        "ratio_example",
        lambda: _backward_over_forward(EXAMPLE),
        unit="backward FLOPs / forward FLOPs",
        hints=_first_layer_hints(EXAMPLE),
    ),
    Part(
        "ratio_digits",
        lambda: _backward_over_forward(DIGITS),
        unit="backward FLOPs / forward FLOPs",
        hints=_first_layer_hints(DIGITS),
    ),
    written=('When is "backward = 2 x forward" a good rule?',),
)

_BF16 = dict(EXAMPLE, batch=BATCH, bytes_per_number=ia.bytes_per_number("bf16"))
_FP32 = dict(_BF16, bytes_per_number=ia.bytes_per_number("fp32"))


def _memory_ratio(values):
    """Training memory over inference memory, evaluated exactly (a ratio of integers)."""
    return _at(mlp.training_memory() / mlp.inference_memory(), values)


# Inference memory with every activation instead of the largest is 0.8% high: its tolerance is
# 0.5%, which still passes the answer rounded to 3 digits (17.0 MB is 0.2% off).
_inference = _at(mlp.inference_memory(), _BF16)
_all_activations = _at(mlp.training_memory_terms()["activations"], _BF16)
_weights_only = _at(mlp.inference_memory_terms()["parameters"], _BF16)
_largest = _inference - _weights_only
_training = _at(mlp.training_memory(), _BF16)
_moments = _at(mlp.training_memory_terms()["Adam moments"], _BF16)
_gradients = _at(mlp.training_memory_terms()["gradients"], _BF16)

register(
    "02-mlp",
    "ex-mlp-bf16",
    Part(
        "inference_memory",
        lambda: _at(mlp.inference_memory(), _BF16),
        unit="bytes",
        tolerance=0.005,
        hints={
            2: "bf16 takes 2 bytes per number, fp32 4",
            (_inference - _largest + _all_activations) / _inference: "inference holds "
            "only the largest activation: a layer's input is dropped once its output exists",
            _weights_only / _inference: "besides the parameters, inference holds the "
            "largest activation of the batch, B max(d_1, d_2, d_3) numbers",
        },
    ),
    Part(
        "training_memory",
        lambda: _at(mlp.training_memory(), _BF16),
        unit="bytes",
        hints={
            2: "bf16 takes 2 bytes per number, fp32 4",
            (_training - _moments) / _training: "Adam keeps two moments per parameter",
            (_training - _gradients) / _training: "training also holds a gradient per parameter",
        },
    ),
    Part("ratio_changes", lambda: _memory_ratio(_BF16) != _memory_ratio(_FP32), kind="yes/no"),
)
