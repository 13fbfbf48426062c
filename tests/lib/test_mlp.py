"""The two-layer MLP's formulas, checked against independent counts and against each other."""

import math

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, d_1, d_2, d_3
from inference_arithmetic.formulas import mlp

# Every public formula of the module, with and without biases where it takes the option.
FORMULAS = {
    "layer_params": mlp.layer_params(),
    "layer_params(bias)": mlp.layer_params(bias=True),
    "params": mlp.params(),
    "params(bias)": mlp.params(bias=True),
    "layer_forward_flops": mlp.layer_forward_flops(),
    "forward_flops": mlp.forward_flops(),
    "input_gradient_flops": mlp.input_gradient_flops(),
    "weight_gradient_flops": mlp.weight_gradient_flops(),
    "backward_flops": mlp.backward_flops(),
    "training_flops": mlp.training_flops(),
    "inference_memory": mlp.inference_memory(),
    "inference_memory(bias)": mlp.inference_memory(bias=True),
    "training_memory": mlp.training_memory(),
    "training_memory(bias)": mlp.training_memory(bias=True),
}
for _bias in (False, True):
    for _name, _term in mlp.inference_memory_terms(_bias).items():
        FORMULAS[f"inference_memory_terms({_bias})[{_name}]"] = _term
    for _name, _term in mlp.training_memory_terms(_bias).items():
        FORMULAS[f"training_memory_terms({_bias})[{_name}]"] = _term
for _i, _activation in enumerate(mlp.activations()):
    FORMULAS[f"activations()[{_i}]"] = _activation

# Built once: SymPy's Max is slow to construct, too slow to rebuild for every example.
MEMORY = {
    bias: {
        "inference": mlp.inference_memory(bias),
        "training": mlp.training_memory(bias),
        "inference_terms": mlp.inference_memory_terms(bias),
        "training_terms": mlp.training_memory_terms(bias),
    }
    for bias in (False, True)
}

FLOPS = [mlp.forward_flops, mlp.backward_flops, mlp.training_flops]

sizes = st.integers(min_value=1, max_value=4096)
batches = st.integers(min_value=1, max_value=10**6)
dtype_bytes = st.sampled_from(sorted(set(ia.DTYPE_BYTES.values())))


@st.composite
def inputs(draw):
    return {
        "batch": draw(batches),
        "d_1": draw(sizes),
        "d_2": draw(sizes),
        "d_3": draw(sizes),
        "bytes_per_number": draw(dtype_bytes),
    }


def _exact(expr, values):
    """The exact value of ``expr`` at the entries of ``values`` it takes.

    ``xreplace`` with exact rationals, written here rather than calling ``ia.evaluate``, so
    that the tests of ``numeric`` against it have a reference independent of the library.
    """
    return expr.xreplace({s: sympy.Rational(str(values[s.name])) for s in expr.free_symbols})


# --- parameters ------------------------------------------------------------------------------


def test_talks_first_network_has_six_parameters():
    weights = np.zeros((2, 3))  # 2 inputs, 3 outputs
    assert ia.evaluate(mlp.layer_params(), d_1=2, d_2=3) == weights.size == 6


@given(sizes, sizes, sizes)
def test_params_count_the_weight_matrices(n_in, n_hidden, n_out):
    weights = [np.zeros((n_in, n_hidden)), np.zeros((n_hidden, n_out))]
    biases = [np.zeros(n_hidden), np.zeros(n_out)]
    values = {"d_1": n_in, "d_2": n_hidden, "d_3": n_out}
    assert _exact(mlp.params(), values) == sum(w.size for w in weights)
    assert _exact(mlp.params(bias=True), values) == sum(a.size for a in weights + biases)


def test_biases_add_one_number_per_output_of_each_layer():
    assert sympy.expand(mlp.params(bias=True) - mlp.params(bias=False) - (d_2 + d_3)) == 0
    assert sympy.expand(mlp.layer_params(bias=True) - mlp.layer_params(bias=False) - d_2) == 0


# --- FLOPs -----------------------------------------------------------------------------------


def _matmul_counting(a, b):
    """``a @ b`` by explicit loops, returning the product and the multiply-adds done."""
    rows, inner = a.shape
    inner_b, cols = b.shape
    assert inner == inner_b
    out = np.zeros((rows, cols))
    multiply_adds = 0
    for i in range(rows):
        for j in range(cols):
            for k in range(inner):
                out[i, j] += a[i, k] * b[k, j]
                multiply_adds += 1
    np.testing.assert_allclose(out, a @ b)
    return out, multiply_adds


small = st.integers(min_value=1, max_value=4)


@given(small, small, small, small)
def test_flops_match_multiply_adds_of_actual_matmuls(batch, n_in, n_hidden, n_out):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, n_in))
    w1 = rng.standard_normal((n_in, n_hidden))
    w2 = rng.standard_normal((n_hidden, n_out))

    h, count_1 = _matmul_counting(x, w1)
    y, count_2 = _matmul_counting(h, w2)
    forward_multiply_adds = count_1 + count_2

    # Backward from some output gradient: each layer's input gradient and weight gradient.
    dy = rng.standard_normal(y.shape)
    dh, c_dh = _matmul_counting(dy, w2.T)
    _, c_dw2 = _matmul_counting(h.T, dy)
    _, c_dx = _matmul_counting(dh, w1.T)
    _, c_dw1 = _matmul_counting(x.T, dh)

    values = {"batch": batch, "d_1": n_in, "d_2": n_hidden, "d_3": n_out}
    assert ia.evaluate(mlp.forward_flops(), **values) == 2 * forward_multiply_adds
    assert ia.evaluate(mlp.input_gradient_flops(), **values) == 2 * (c_dh + c_dx)
    assert ia.evaluate(mlp.weight_gradient_flops(), **values) == 2 * (c_dw2 + c_dw1)
    assert ia.evaluate(mlp.backward_flops(), **values) == 2 * (c_dh + c_dw2 + c_dx + c_dw1)
    assert ia.evaluate(mlp.training_flops(), **values) == 2 * (
        forward_multiply_adds + c_dh + c_dw2 + c_dx + c_dw1
    )
    assert ia.evaluate(mlp.layer_forward_flops(), d_1=n_in, d_2=n_hidden, batch=batch) == (
        2 * count_1
    )


@given(batches, sizes, sizes, sizes)
def test_forward_flops_match_shape_arithmetic(batch, n_in, n_hidden, n_out):
    # A matmul of (m, k) by (k, n) does m*k*n multiply-adds, 2 FLOPs each.
    shapes = [((batch, n_in), (n_in, n_hidden)), ((batch, n_hidden), (n_hidden, n_out))]
    expected = sum(2 * a[0] * a[1] * b[1] for a, b in shapes)
    values = {"batch": batch, "d_1": n_in, "d_2": n_hidden, "d_3": n_out}
    assert _exact(mlp.forward_flops(), values) == expected
    assert float(ia.numeric(mlp.forward_flops())(**values)) == pytest.approx(expected, rel=1e-15)


def test_forward_is_two_flops_per_parameter_per_sequence():
    assert sympy.simplify(mlp.forward_flops() - 2 * B * mlp.params(bias=False)) == 0


def test_backward_is_twice_and_training_three_times_forward_symbolically():
    forward = mlp.forward_flops()
    assert sympy.simplify(mlp.backward_flops() - 2 * forward) == 0
    assert sympy.simplify(mlp.training_flops() - 3 * forward) == 0
    assert sympy.simplify(mlp.training_flops() - forward - mlp.backward_flops()) == 0


@given(inputs())
def test_backward_is_twice_and_training_three_times_forward_numerically(values):
    forward = ia.numeric(mlp.forward_flops()).from_values(values)
    backward = ia.numeric(mlp.backward_flops()).from_values(values)
    training = ia.numeric(mlp.training_flops()).from_values(values)
    assert backward == pytest.approx(2 * forward, rel=1e-15)
    assert training == pytest.approx(3 * forward, rel=1e-15)
    assert _exact(mlp.backward_flops(), values) == 2 * _exact(mlp.forward_flops(), values)
    assert _exact(mlp.training_flops(), values) == 3 * _exact(mlp.forward_flops(), values)


@pytest.mark.parametrize("flops", FLOPS, ids=lambda f: f.__name__)
def test_flops_are_linear_in_batch_symbolically(flops):
    expr = flops()
    b_1, b_2 = sympy.symbols("b_1 b_2", positive=True, integer=True)
    assert sympy.simplify(expr.subs(B, 2 * B) - 2 * expr) == 0
    assert sympy.simplify(expr.subs(B, b_1 + b_2) - expr.subs(B, b_1) - expr.subs(B, b_2)) == 0


@pytest.mark.parametrize("flops", FLOPS, ids=lambda f: f.__name__)
@given(batches, batches, sizes, sizes, sizes)
def test_flops_are_linear_in_batch_numerically(flops, batch_1, batch_2, n_in, n_hidden, n_out):
    f = ia.numeric(flops())
    widths = {"d_1": n_in, "d_2": n_hidden, "d_3": n_out}
    one, two = f(batch=batch_1, **widths), f(batch=batch_2, **widths)
    assert f(batch=2 * batch_1, **widths) == pytest.approx(2 * one, rel=1e-15)
    assert f(batch=batch_1 + batch_2, **widths) == pytest.approx(one + two, rel=1e-15)
    exact = [_exact(flops(), {"batch": n, **widths}) for n in (batch_1, batch_2, batch_1 + batch_2)]
    assert exact[2] == exact[0] + exact[1]


# --- numeric against exact -------------------------------------------------------------------


def _check_numeric_equals_evaluate(expr, values, name=""):
    exact = ia.evaluate(expr, **{s.name: values[s.name] for s in expr.free_symbols})
    assert exact.is_Rational, name  # integers, or halves with int4
    assert exact == _exact(expr, values), name
    compiled = ia.numeric(expr)
    assert float(compiled.from_values(values)) == pytest.approx(float(exact), rel=1e-12), name


# One test per distinct expression (input_gradient_flops is forward_flops, and so on).
DISTINCT = list({expr: name for name, expr in reversed(FORMULAS.items())}.values())
WITH_MAX = [name for name in DISTINCT if FORMULAS[name].has(sympy.Max)]
WITHOUT_MAX = [name for name in DISTINCT if name not in WITH_MAX]


def test_the_largest_activation_formulas_are_the_ones_with_max():
    assert len(WITH_MAX) == 3 and all("inference_memory" in name for name in WITH_MAX)


@settings(max_examples=40)
@given(values=inputs())
@pytest.mark.slow
def test_numeric_equals_exact_evaluation(values):
    for name in WITHOUT_MAX:  # each draw checks every formula: one draw costs less than many
        _check_numeric_equals_evaluate(FORMULAS[name], values, name)


@settings(max_examples=15)  # ia.evaluate takes about 0.05 s on a Max
@given(name=st.sampled_from(WITH_MAX), values=inputs())
def test_numeric_equals_exact_evaluation_with_max(name, values):
    _check_numeric_equals_evaluate(FORMULAS[name], values, name)


# --- memory ----------------------------------------------------------------------------------


@given(values=inputs(), bias=st.booleans())
def test_inference_memory_never_exceeds_training_memory(values, bias):
    inference, training = MEMORY[bias]["inference"], MEMORY[bias]["training"]
    assert _exact(inference, values) <= _exact(training, values)
    compiled_inference = ia.numeric(inference).from_values(values)
    assert compiled_inference <= ia.numeric(training).from_values(values)


@pytest.mark.parametrize("bias", [False, True])
def test_memory_terms_sum_to_the_totals_symbolically(bias):
    memory = MEMORY[bias]
    training_terms, inference_terms = memory["training_terms"], memory["inference_terms"]
    assert sympy.simplify(sum(training_terms.values()) - memory["training"]) == 0
    assert sympy.simplify(sum(inference_terms.values()) - memory["inference"]) == 0
    assert set(training_terms) == {"parameters", "gradients", "Adam moments", "activations"}


@given(values=inputs(), bias=st.booleans())
def test_memory_terms_sum_to_the_totals_numerically(values, bias):
    memory = MEMORY[bias]
    for terms, total in [
        (memory["training_terms"], memory["training"]),
        (memory["inference_terms"], memory["inference"]),
    ]:
        parts = [ia.numeric(term).from_values(values) for term in terms.values()]
        assert math.fsum(parts) == pytest.approx(ia.numeric(total).from_values(values), rel=1e-12)
        assert sum(_exact(term, values) for term in terms.values()) == _exact(total, values)


NUMPY_DTYPES = {"fp32": np.float32, "fp16": np.float16, "int8": np.int8}


@given(
    dtype=st.sampled_from(list(NUMPY_DTYPES)),
    bias=st.booleans(),
    batch=small,
    n_in=sizes,
    n_hidden=sizes,
    n_out=small,
)
def test_memory_matches_bytes_of_numpy_arrays(dtype, bias, batch, n_in, n_hidden, n_out):
    def zeros(*shape):
        return np.zeros(shape, dtype=NUMPY_DTYPES[dtype])

    params = [zeros(n_in, n_hidden), zeros(n_hidden, n_out)]
    if bias:
        params += [zeros(n_hidden), zeros(n_out)]
    activations = [zeros(batch, n_in), zeros(batch, n_hidden), zeros(batch, n_out)]
    param_bytes = sum(p.nbytes for p in params)

    values = {
        "batch": batch,
        "d_1": n_in,
        "d_2": n_hidden,
        "d_3": n_out,
        "bytes_per_number": ia.bytes_per_number(dtype),
    }
    # Inference: the weights and the largest activation alive at once.
    assert _exact(MEMORY[bias]["inference"], values) == param_bytes + max(
        a.nbytes for a in activations
    )
    # Training with Adam: weights, gradients and two moments, and every activation.
    assert _exact(MEMORY[bias]["training"], values) == 4 * param_bytes + sum(
        a.nbytes for a in activations
    )
    assert _exact(mlp.activations()[1], values) == activations[1].size


@given(values=inputs())
def test_int4_halves_the_bytes_of_int8(values):
    int8 = {**values, "bytes_per_number": ia.bytes_per_number("int8")}
    int4 = {**values, "bytes_per_number": ia.bytes_per_number("int4")}
    for expr in (MEMORY[False]["inference"], MEMORY[False]["training"]):
        assert 2 * _exact(expr, int4) == _exact(expr, int8)


def test_widths_are_the_three_layers():
    assert mlp.WIDTHS == (d_1, d_2, d_3)
    assert mlp.activations() == [B * d_1, B * d_2, B * d_3]
