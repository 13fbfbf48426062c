"""Compiled formulas: argument names, validation, broadcasting, caching, exactness."""

import importlib
import inspect
import json
import subprocess
import sys

import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import inference_arithmetic as ia
from inference_arithmetic.core import printing
from inference_arithmetic.core.numeric import (
    ArgumentError,
    CompiledFormula,
    CompiledFormulas,
    evaluate,
    numeric,
)
from inference_arithmetic.core.symbols import NOTATION, B, D, L, L_w, N, O, S, T, W, b, d_1, d_2
from inference_arithmetic.formulas import basics, mlp

# The module itself: ``inference_arithmetic.core.numeric`` as an attribute is the function.
NUMERIC = importlib.import_module("inference_arithmetic.core.numeric")

FORWARD = mlp.forward_flops()
TRAINING_MEMORY = mlp.training_memory()
PARAMETER_BYTES = mlp.inference_memory_terms()["parameters"]  # b*(d_1*d_2 + d_2*d_3): no batch

GOOD = {"batch": 4, "d_1": 8, "d_2": 16, "d_3": 2}


def _forward(batch, d_1, d_2, d_3):
    """The MLP's forward FLOPs written out by hand: two matmuls, 2 FLOPs per multiply-add."""
    return 2 * batch * d_1 * d_2 + 2 * batch * d_2 * d_3


def _parameter_bytes(bytes_per_number, d_1, d_2, d_3):
    return bytes_per_number * (d_1 * d_2 + d_2 * d_3)


# --- arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr", [FORWARD, TRAINING_MEMORY, PARAMETER_BYTES, L * D * T, b * N + B], ids=str
)
def test_args_are_the_symbol_names_sorted(expr):
    compiled = numeric(expr)
    names = [s.name for s in expr.free_symbols]
    assert compiled.args == tuple(sorted(names))
    assert list(compiled.args) == sorted(set(compiled.args))  # no duplicates
    assert all(name in NOTATION for name in compiled.args)


def test_parameter_bytes_take_no_batch():
    assert numeric(PARAMETER_BYTES).args == ("bytes_per_number", "d_1", "d_2", "d_3")


def test_argument_error_is_a_value_error_and_a_type_error():
    assert issubclass(ArgumentError, ValueError)
    assert issubclass(ArgumentError, TypeError)
    assert ia.ArgumentError is ArgumentError
    with pytest.raises(ValueError):
        numeric(FORWARD)(batch=1, d_1=1, d_2=1)
    with pytest.raises(TypeError):
        numeric(FORWARD)(batch=1, d_1=1, d_2=1)


def test_missing_argument_is_named_with_the_valid_ones():
    with pytest.raises(ArgumentError) as info:
        numeric(FORWARD)(batch=1, d_1=2, d_2=3)
    message = str(info.value)
    assert "missing d_3" in message
    for name in numeric(FORWARD).args:
        assert name in message


def test_unknown_argument_is_named_with_the_valid_ones():
    with pytest.raises(ArgumentError) as info:
        numeric(FORWARD)(btach=1, d_1=2, d_2=3, d_3=4)
    message = str(info.value)
    assert "unknown btach" in message
    assert "missing batch" in message
    assert "batch, d_1, d_2, d_3" in message


def test_extra_argument_is_unknown_even_when_all_needed_are_given():
    with pytest.raises(ArgumentError, match="unknown bytes_per_number"):
        numeric(FORWARD)(**GOOD, bytes_per_number=2)


@pytest.mark.parametrize(
    "name, value, reason",
    [
        ("batch", "bf16", "number"),
        ("d_2", None, "number"),
        ("d_1", [1, "x"], "number"),
        ("batch", 0, "positive"),
        ("d_3", -4, "positive"),
        ("batch", np.array([1, 2, 0]), "positive"),
        ("batch", float("nan"), "positive"),
        ("d_1", 2.5, "whole"),
        ("d_2", np.array(16.5), "whole"),
        ("batch", "2", "number"),
        ("batch", True, "number"),
        ("batch", float("inf"), "whole"),
    ],
)
def test_invalid_values_are_named(name, value, reason):
    with pytest.raises(ArgumentError) as info:
        numeric(FORWARD)(**{**GOOD, name: value})
    message = str(info.value)
    assert message.startswith(f"{name} must be")
    assert reason in message


def test_a_bad_array_element_is_located():
    with pytest.raises(ArgumentError, match=r"batch must be positive, got 0\.0 at index 2"):
        numeric(FORWARD)(**{**GOOD, "batch": np.array([1, 2, 0, 3])})


def test_two_and_a_half_layers_are_refused():
    with pytest.raises(ArgumentError, match="n_layers must be a whole number, got 2.5"):
        numeric(L * D)(n_layers=2.5, d_model=4)
    assert float(numeric(L * D)(n_layers=2.0, d_model=4)) == 8.0  # a whole float is fine


@pytest.mark.parametrize("value", [0, -2])
def test_bytes_per_number_must_be_positive(value):
    with pytest.raises(ArgumentError, match="bytes_per_number must be positive"):
        numeric(PARAMETER_BYTES)(bytes_per_number=value, d_1=1, d_2=1, d_3=1)


@given(
    fraction=st.floats(min_value=1e-3, max_value=64, allow_nan=False),
    widths=st.tuples(*[st.integers(1, 10**4)] * 3),
)
def test_bytes_per_number_may_be_fractional(fraction, widths):
    d_1, d_2, d_3 = widths
    result = numeric(PARAMETER_BYTES)(bytes_per_number=fraction, d_1=d_1, d_2=d_2, d_3=d_3)
    assert float(result) == pytest.approx(_parameter_bytes(fraction, d_1, d_2, d_3), rel=1e-12)


def test_int4_half_a_byte_is_accepted():
    half = numeric(PARAMETER_BYTES)(bytes_per_number=0.5, d_1=3, d_2=5, d_3=7)
    assert float(half) == _parameter_bytes(0.5, 3, 5, 7)


# --- values ----------------------------------------------------------------------------------


@given(st.integers(1, 10**6), st.integers(1, 10**4), st.integers(1, 10**4), st.integers(1, 10**4))
def test_forward_matches_a_hand_written_expression(batch, d_1, d_2, d_3):
    result = numeric(FORWARD)(batch=batch, d_1=d_1, d_2=d_2, d_3=d_3)
    assert float(result) == pytest.approx(_forward(batch, d_1, d_2, d_3), rel=1e-15)


def test_scalar_inputs_give_a_scalar_float():
    result = numeric(FORWARD)(**GOOD)
    assert np.ndim(result) == 0
    assert isinstance(result, float)  # a Python float or a numpy float64: both are float64
    assert np.asarray(result).dtype == np.float64
    assert float(result) == _forward(**GOOD)
    assert f"{result:,.0f}" == f"{_forward(**GOOD):,}"  # prints as a number


def test_arrays_may_sweep_sizes_smoothly():
    # Only a single size must be whole; an array is a sweep for a plot (numeric.py documents it).
    d_2 = np.array([16.0, 16.5, 17.0])
    result = numeric(FORWARD)(batch=2, d_1=3, d_2=d_2, d_3=5)
    np.testing.assert_allclose(result, _forward(2, 3, d_2, 5), rtol=1e-15)


def test_results_are_float64_and_do_not_overflow_int64():
    values = {"batch": 10**6, "d_1": 2 * 10**6, "d_2": 2 * 10**6, "d_3": 2 * 10**6}
    exact = _forward(**values)  # Python ints: exact
    assert exact > np.iinfo(np.int64).max
    result = numeric(FORWARD)(**values)
    assert np.asarray(result).dtype == np.float64
    assert float(result) == pytest.approx(exact, rel=1e-15)
    # Integer numpy arrays in, float64 out, still without wrapping around.
    as_arrays = {name: np.array([value], dtype=np.int64) for name, value in values.items()}
    array_result = numeric(FORWARD)(**as_arrays)
    assert array_result.dtype == np.float64
    assert array_result[0] == pytest.approx(exact, rel=1e-15)


# --- broadcasting ----------------------------------------------------------------------------

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


def _broadcastable(data):
    """The MLP's four arguments, drawn in broadcastable parts of a common shape, and the shape
    they broadcast to."""
    shape = data.draw(shapes)
    arg_shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=4, base_shape=shape))
    arrays = {
        name: data.draw(hnp.arrays(np.int64, arg_shape, elements=st.integers(1, 1000)))
        for name, arg_shape in zip(
            ("batch", "d_1", "d_2", "d_3"), arg_shapes.input_shapes, strict=True
        )
    }
    return np.broadcast_shapes(*arg_shapes.input_shapes), arrays


@given(st.data())
def test_arrays_broadcast_like_numpy(data):
    shape, arrays = _broadcastable(data)
    result = numeric(FORWARD)(**arrays)
    expected = _forward(**{name: a.astype(np.float64) for name, a in arrays.items()})
    assert np.shape(result) == shape
    np.testing.assert_allclose(result, expected, rtol=1e-15)


def test_a_batch_free_term_broadcasts_over_its_own_arguments():
    d_2 = np.array([16, 32, 64])
    result = numeric(PARAMETER_BYTES)(bytes_per_number=2, d_1=8, d_2=d_2, d_3=4)
    assert result.shape == (3,)
    np.testing.assert_array_equal(result, _parameter_bytes(2, 8, d_2, 4))
    dtypes = np.array([[4], [2], [0.5]])
    grid = numeric(PARAMETER_BYTES)(bytes_per_number=dtypes, d_1=8, d_2=d_2, d_3=4)
    assert grid.shape == (3, 3)
    np.testing.assert_array_equal(grid, _parameter_bytes(dtypes, 8, d_2, 4))


def test_a_formula_that_compiles_to_a_constant_still_broadcasts():
    # Unexpanded, SymPy keeps all three symbols; compiled (factor_terms), it is the constant 0.
    expr = b * (d_1 + d_2) - b * d_1 - b * d_2
    assert {s.name for s in expr.free_symbols} == {"bytes_per_number", "d_1", "d_2"}
    result = numeric(expr)(bytes_per_number=2, d_1=np.arange(1, 4), d_2=np.ones((2, 1)))
    assert result.shape == (2, 3)
    np.testing.assert_array_equal(result, np.zeros((2, 3)))


def test_a_formula_that_ignores_one_arguments_shape_still_broadcasts():
    expr = B * (D + 1) - B * D  # batch, once compiled: d_model's shape must still count
    batch, d_model = np.arange(1, 4), np.array([[8], [16]])
    result = numeric(expr)(batch=batch, d_model=d_model)
    assert result.shape == (2, 3)
    np.testing.assert_array_equal(result, np.broadcast_to(batch, (2, 3)))


def test_memory_over_a_batch_sweep_has_the_sweeps_shape():
    batch = np.arange(1, 11)
    result = numeric(TRAINING_MEMORY)(batch=batch, d_1=8, d_2=16, d_3=4, bytes_per_number=2)
    assert result.shape == batch.shape
    params = 8 * 16 + 16 * 4
    np.testing.assert_array_equal(result, 2 * (4 * params + batch * (8 + 16 + 4)))


# --- inputs stay the caller's ----------------------------------------------------------------


def test_a_float64_array_is_neither_modified_nor_returned():
    batch = np.arange(1.0, 101.0)
    kept = batch.copy()
    for expr in (FORWARD, B, TRAINING_MEMORY):
        result = numeric(expr).from_values({**GOOD, "bytes_per_number": 2, "batch": batch})
        assert result is not batch and not np.shares_memory(result, batch)
        np.testing.assert_array_equal(batch, kept)
    copy = numeric(B)(batch=batch)  # the formula is its argument: a new array all the same
    copy[0] = -1
    assert batch[0] == 1.0


def test_an_int_array_of_sizes_still_works():
    sizes = {name: np.arange(1, 1001, dtype=np.int64) * (i + 1) for i, name in enumerate(GOOD)}
    kept = {name: array.copy() for name, array in sizes.items()}
    result = numeric(FORWARD)(**sizes)
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, _forward(**{k: v.astype(float) for k, v in kept.items()}))
    for name, array in sizes.items():
        assert array.dtype == np.int64
        np.testing.assert_array_equal(array, kept[name])


# --- large grids: evaluated a block of rows at a time ----------------------------------------


def _at_once(compiled, values):
    """The formula on the whole arrays in one call: what evaluation by blocks must reproduce."""
    arrays = compiled._check(values)
    shape = np.broadcast_shapes(*(array.shape for array in arrays))
    return np.broadcast_to(np.asarray(compiled._function(*arrays), dtype=np.float64), shape)


_RNG = np.random.default_rng(0)
_N = 4 * NUMERIC._BLOCK + 3  # several blocks and a partial one
_TRAINING_ARGS = ("batch", "bytes_per_number", "d_1", "d_2", "d_3")
_GRIDS = {
    "same shape": {name: _RNG.uniform(1, 1e4, _N) for name in _TRAINING_ARGS},
    "arrays and numbers": {"batch": _RNG.integers(1, 1024, _N), "bytes_per_number": 2,
                           "d_1": 4096, "d_2": _RNG.uniform(1, 1e4, _N), "d_3": 1024.0},
    "broadcast 2-D": {"batch": np.arange(1, 401)[:, None], "d_1": np.arange(1, 301),
                      "bytes_per_number": np.array([[0.5]]), "d_2": 64, "d_3": 8},
    "three rows": {"batch": np.arange(1, 4)[:, None, None], "d_1": _RNG.uniform(1, 9, (1, 2, _N)),
                   "bytes_per_number": 2, "d_2": _RNG.uniform(1, 9, _N), "d_3": 3},
    "fortran order": {name: np.asfortranarray(_RNG.uniform(1, 9, (300, 300)))
                      for name in _TRAINING_ARGS},
    "strided": {name: _RNG.uniform(1, 9, 2 * _N)[::2] for name in _TRAINING_ARGS},
}  # fmt: skip


@pytest.mark.parametrize("grid", list(_GRIDS))
def test_a_large_grid_has_the_values_of_one_call_on_whole_arrays(grid):
    values = _GRIDS[grid]
    compiled = numeric(TRAINING_MEMORY)
    result = compiled(**values)
    expected = _at_once(compiled, values)
    assert type(result) is np.ndarray and result.dtype == np.float64
    assert result.shape == expected.shape == np.broadcast_shapes(*map(np.shape, values.values()))
    np.testing.assert_array_equal(result, expected)  # exactly: the formula is elementwise
    assert result.flags.writeable


def test_a_large_grid_of_a_formula_that_ignores_an_argument_has_the_full_shape():
    expr = B * (D + 1) - B * D  # batch, once compiled
    batch, d_model = np.arange(1.0, 8.0)[:, None], np.arange(1.0, 2 * _N + 1)
    result = numeric(expr)(batch=batch, d_model=d_model)
    assert result.shape == (7, 2 * _N)
    np.testing.assert_array_equal(result, np.broadcast_to(batch, (7, 2 * _N)))


@given(st.data())
def test_blocks_of_any_size_broadcast_like_numpy(data):
    shape, arrays = _broadcastable(data)
    block = data.draw(st.integers(1, 8))
    with pytest.MonkeyPatch.context() as patch:  # small blocks: small grids go by blocks too
        patch.setattr(NUMERIC, "_BLOCK", block)
        result = numeric(FORWARD)(**arrays)
    expected = _forward(**{name: a.astype(np.float64) for name, a in arrays.items()})
    assert np.shape(result) == shape
    np.testing.assert_array_equal(result, expected)


def test_a_bad_element_of_a_large_array_is_located():
    batch = np.ones(_N)
    for bad, shown in ((0, r"0\.0"), (-3.5, r"-3\.5"), (np.nan, "nan")):
        batch[_N - 2] = bad
        message = rf"^batch must be positive, got {shown} at index {_N - 2}$"
        with pytest.raises(ArgumentError, match=message):
            numeric(FORWARD)(**{**GOOD, "batch": batch})


# --- compiling ---------------------------------------------------------------------------------


CONTEXT = (L - L_w) * S + L_w * sympy.Min(S, W - 1)  # the KV cache's, with sliding windows


@pytest.mark.parametrize(
    "expr",
    [
        FORWARD,
        TRAINING_MEMORY,
        sympy.Max(B * D, T) + sympy.floor(D / B) + sympy.Min(L, T - 1),
        b * sympy.Max(B * d_1, B * d_2) + b * B * CONTEXT,
        sympy.Max(2 * B * D * T / N, b * (D + B * CONTEXT.subs(S, T + sympy.Max(O - 2, 0) / 2))),
        (O - 1) * sympy.Max(B * D * L, b * CONTEXT) + sympy.Max(B * T * D, b * L * D),
    ],
    ids=str,
)
def test_the_code_is_that_of_lambdify_for_numpy(expr):
    # Compiling skips `from numpy import *` (modules=[numpy]: the same printer) and SymPy's
    # evaluation of every rebuilt Max and Min (held ones): the same code, so the same values.
    compiled = numeric(expr)
    reference = sympy.lambdify(
        compiled.symbols, sympy.factor_terms(expr), modules="numpy", cse=True
    )
    assert compiled.parts()["source"] == inspect.getsource(reference)
    # The held Max and Min stay inside the compile step.
    assert {type(e) for e in compiled.expr.atoms(sympy.Max, sympy.Min)} <= {sympy.Max, sympy.Min}


@pytest.mark.slow
def test_compiling_imports_no_optional_numpy_module():
    code = (
        "import sys\n"
        "import inference_arithmetic as ia\n"
        "from inference_arithmetic.formulas import mlp\n"
        "before = set(sys.modules)\n"
        "ia.numeric(mlp.forward_flops())(batch=1, d_1=2, d_2=3, d_3=2)\n"
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('numpy')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # `from numpy import *` would import testing, f2py, ma...


# --- caching and from_values -----------------------------------------------------------------


def test_numeric_is_cached():
    assert numeric(FORWARD) is numeric(FORWARD)
    assert numeric(mlp.forward_flops()) is numeric(mlp.forward_flops())  # equal expressions
    assert numeric(FORWARD) is not numeric(TRAINING_MEMORY)
    assert isinstance(numeric(FORWARD), CompiledFormula)
    assert "batch" in repr(numeric(FORWARD))


def test_from_values_picks_the_arguments_it_needs():
    values = {**GOOD, "bytes_per_number": 2, "d_model": 4096, "unrelated": "ignored"}
    assert numeric(FORWARD).from_values(values) == numeric(FORWARD)(**GOOD)
    assert float(numeric(PARAMETER_BYTES).from_values(values)) == _parameter_bytes(2, 8, 16, 2)


def test_from_values_still_raises_on_a_missing_argument():
    with pytest.raises(ArgumentError, match="missing bytes_per_number"):
        numeric(PARAMETER_BYTES).from_values(GOOD)


# --- several formulas on single numbers, and a formula bound to values ------------------------

_x, _y = sympy.symbols("x y", real=True)
SEVERAL = {
    "forward": FORWARD,
    "max": sympy.Max(B * D, T) + sympy.Min(L, T - 1) + sympy.Max(_x, 1) + sympy.Min(_y, _x),
    "piecewise": sympy.Piecewise(
        (1, sympy.And(B <= D, sympy.Eq(sympy.Mod(T, L), 0))),
        (2, sympy.Or(B > T, sympy.Ne(L, 3))),
        (0, True),
    ),
    "floor": sympy.floor(D / B) + b * N,
}


@pytest.mark.parametrize("x", [0.5, -3.0, float("nan")])
@pytest.mark.parametrize("kind", [int, float, np.float64, np.int64, sympy.Integer, np.asarray])
def test_several_formulas_on_numbers_are_the_numpy_codes_numbers(kind, x):
    # Single numbers run the code with Python's comparisons for numpy's array functions
    # (printing.define(numbers=True)): the numbers of the same code on numpy arrays, NaN
    # included.
    compiled = NUMERIC.CompiledFormulas(SEVERAL)
    sizes = {"batch": 3, "d_model": 8, "seq_len": 6, "n_layers": 3, "bytes_per_number": 2,
             "n_params": 7, "d_1": 8, "d_2": 16, "d_3": 2}  # fmt: skip
    values = {**{k: kind(v) for k, v in sizes.items() if k in compiled.args}, "x": x, "y": 2.0}
    arrays = compiled._check(values)
    plain = printing.define(compiled.parts()["source"])[printing.GENERATED](*arrays)
    expected = dict(zip(compiled.names, map(float, plain), strict=True))
    result = compiled(**values)
    assert list(result) == list(expected)
    np.testing.assert_array_equal(list(result.values()), list(expected.values()))
    stored = NUMERIC.CompiledFormulas.from_parts(compiled.parts())
    np.testing.assert_array_equal(list(stored(**values).values()), list(result.values()))


@pytest.mark.parametrize(
    ("name", "value"),
    [("batch", 0), ("d_3", -4), ("batch", float("nan")), ("d_1", 2.5), ("batch", "2"),
     ("batch", True), ("batch", float("inf")), ("batch", None)],
)  # fmt: skip
def test_several_formulas_refuse_what_one_refuses_with_its_message(name, value):
    several = NUMERIC.CompiledFormulas({"forward": FORWARD})
    with pytest.raises(ArgumentError) as one:
        numeric(FORWARD)(**{**GOOD, name: value})
    with pytest.raises(ArgumentError) as both:
        several(**{**GOOD, name: value})
    assert str(both.value) == str(one.value)
    with pytest.raises(ArgumentError, match="single numbers"):
        several(**{**GOOD, "batch": np.array([1, 2])})


def test_a_bound_formula_gives_the_numbers_of_from_values():
    from inference_arithmetic.formulas import kernels

    s = ia.Scenario("mixtral-8x7b", "h200", n_gpus=2)
    step = numeric(kernels.step(s.model))
    bound = step.bind(s.values(), "decoding", "context_len", "prefill_tokens", "not_an_argument")
    decoding, prompts = np.arange(64.0)[:, None], np.linspace(0.0, 9000.0, 129)
    point = {**s.values(), "decoding": decoding, "context_len": 2100.0, "prefill_tokens": prompts}
    np.testing.assert_array_equal(bound(decoding, 2100.0, prompts, None), step.from_values(point))
    # The cut kept as text (the disk cache keeps it) binds to the same function, in a process
    # that has not cut it: the text runs alone.
    free = ("decoding", "context_len", "prefill_tokens", "not_an_argument")
    text = json.loads(json.dumps(step.split(*free)))
    NUMERIC._split.cache_clear()
    again = step.bind(s.values(), *free, split=text)
    assert NUMERIC._split.cache_info().currsize == 0
    np.testing.assert_array_equal(again(decoding, 2100.0, prompts, None), step.from_values(point))
    with pytest.raises(ArgumentError, match="n_layers must be positive"):
        step.bind({**s.values(), "n_layers": 0}, "decoding", "context_len", "prefill_tokens")


@given(
    decoding=st.integers(0, 4096),
    context=st.floats(1.0, 1e6),
    prompts=st.sampled_from([0, 1, 511, 512, 513, 8192]),
)
def test_a_function_cut_at_an_argument_gives_its_numbers_to_the_bit(decoding, context, prompts):
    # The simulation's step, values put in, cut at the context: the other arguments are
    # prepared apart, and the rest gives the whole function's number, bit for bit.
    from inference_arithmetic.serving import simulation

    s = ia.Scenario("mixtral-8x7b", "h200", n_gpus=2, prompt_len=1024, output_len=128)
    whole = simulation.scalar_step(s)
    prepare, evaluate = NUMERIC.cut(whole, "context_len")
    assert list(inspect.signature(prepare).parameters) == ["decoding", "prefill_tokens"]
    assert evaluate(*prepare(decoding, prompts), context) == whole(decoding, context, prompts)
    assert simulation.run_step(s)(decoding, context, prompts) == whole(decoding, context, prompts)


# --- evaluate --------------------------------------------------------------------------------


@given(st.integers(1, 10**12), st.integers(1, 10**9), st.integers(1, 10**9), st.integers(1, 10**9))
def test_evaluate_is_exact_for_integers(batch, d_1, d_2, d_3):
    exact = evaluate(FORWARD, batch=batch, d_1=d_1, d_2=d_2, d_3=d_3)
    assert isinstance(exact, sympy.Integer)
    assert int(exact) == _forward(batch, d_1, d_2, d_3)  # exact beyond float64's 2**53


def test_evaluate_keeps_halves_exact():
    exact = evaluate(PARAMETER_BYTES, bytes_per_number=0.5, d_1=1, d_2=1, d_3=2)
    assert exact == sympy.Rational(3, 2)


@pytest.mark.parametrize(
    "values, fragment",
    [
        ({"batch": 1, "d_1": 2, "d_2": 3}, "missing d_3"),
        ({**GOOD, "btach": 1}, "unknown btach"),
        ({**GOOD, "batch": 2.5}, "batch must be a whole number"),
        ({**GOOD, "d_1": -1}, "d_1 must be positive"),
        ({**GOOD, "d_2": "bf16"}, "d_2 must be a number"),
    ],
)
def test_evaluate_raises_argument_error_on_bad_input(values, fragment):
    with pytest.raises(ArgumentError, match=fragment):
        evaluate(FORWARD, **values)


# Exact numbers that numpy stores as objects (a SymPy Integer, which is what ``evaluate``
# returns, a SymPy Rational, a Python int of 2**64 or more) are numbers too.
def test_exact_numbers_are_numbers():
    n_params = evaluate(mlp.params(), d_1=2, d_2=3, d_3=2)  # Integer(12)
    assert isinstance(n_params, sympy.Integer)
    weights = basics.weight_bytes()  # n_params * bytes_per_number
    cases = [
        (evaluate, weights, {"n_params": n_params, "bytes_per_number": 2}, 24),
        (_call, weights, {"n_params": n_params, "bytes_per_number": 2}, 24.0),
        (
            evaluate,
            weights,
            {"n_params": 3, "bytes_per_number": sympy.Rational(1, 2)},
            sympy.Rational(3, 2),
        ),
        (evaluate, FORWARD, {"batch": 10**20, "d_1": 1, "d_2": 1, "d_3": 1}, 4 * 10**20),
    ]
    refused = []
    for function, expr, values, expected in cases:
        try:
            assert function(expr, **values) == expected
        except ArgumentError as error:
            refused.append(f"{function.__name__}: {error}")
    assert refused == []


def _call(expr, **values):
    return numeric(expr)(**values)


# Arrays are valid for numeric but not for exact evaluation: a clear error, not nsimplify's.
def test_evaluate_refuses_arrays_with_an_argument_error():
    with pytest.raises(ArgumentError):
        evaluate(FORWARD, **{**GOOD, "batch": np.array([1, 2])})


@pytest.mark.parametrize("call", [numeric, evaluate, CompiledFormula])
def test_a_function_or_none_where_a_formula_belongs_is_named_at_the_door(call):
    with pytest.raises(ArgumentError) as raised:
        call(mlp.params)
    assert str(raised.value) == (
        "expr must be a SymPy expression, got the function mlp.params: did you mean mlp.params()?"
    )
    with pytest.raises(ArgumentError, match=r"expr must be a SymPy expression .*got None"):
        call(None)
    with pytest.raises(ArgumentError, match=r"got \[1, 2\]"):
        ia.checks.expression("expr", [1, 2])


@pytest.mark.parametrize(
    "value, shown",
    [
        (np.array([1.0, np.inf]), "inf at index 1"),
        (np.array([np.nan, 1.0]), "nan at index 0"),
        (np.full((200, 200), np.inf), "inf at index (0, 0)"),  # computed block by block
        (10**400, "past the largest float64"),
    ],
)
def test_an_infinite_or_too_large_size_is_refused_by_name(value, shown):
    with pytest.raises(ArgumentError) as info:
        numeric(FORWARD)(**{**GOOD, "batch": value})
    assert str(info.value).startswith("batch must be") and shown in str(info.value)
    with pytest.raises(ArgumentError, match="d_1 must be a finite number"):
        evaluate(FORWARD, **{**GOOD, "d_1": 10**400})


def test_a_complex_number_is_no_size():
    for value in (1 + 2j, np.array([1 + 0j, 2 + 0j]), sympy.I):
        with pytest.raises(ArgumentError, match="batch must be a number or an array of numbers"):
            numeric(FORWARD)(**{**GOOD, "batch": value})


def test_values_given_by_position_are_refused_naming_the_arguments():
    for call in (lambda: numeric(FORWARD)(2, 3, 2), lambda: evaluate(FORWARD, 2, 3, 2)):
        with pytest.raises(ArgumentError) as info:
            call()
        message = str(info.value)
        assert "by name, not by position (got 3 positional)" in message
        assert "batch, d_1, d_2, d_3, each as name=value" in message
    both = CompiledFormulas({"forward": FORWARD})
    with pytest.raises(ArgumentError, match="by name, not by position"):
        both(1, 2, 3, 4)


def test_numeric_of_a_list_says_one_formula_at_a_time():
    with pytest.raises(ArgumentError, match="expr must be one SymPy expression, got a list"):
        numeric([FORWARD])
    assert numeric(FORWARD) is numeric(FORWARD)  # still cached


def test_an_infinite_size_stands_only_where_the_formula_has_a_finite_limit():
    # A free link (an infinite bandwidth) is a limit the book draws; an infinite batch is not.
    time, rate = sympy.symbols("time_bytes link_rate", positive=True)
    f = ia.numeric(time / rate + 1)
    assert f(time_bytes=5.0, link_rate=np.inf) == 1.0
    assert list(f(time_bytes=np.array([5.0, 10.0]), link_rate=np.inf)) == [1.0, 1.0]
    for infinite in (np.inf, np.array([1.0, np.inf])):
        with pytest.raises(ArgumentError, match="time_bytes must be a finite number here"):
            f(time_bytes=infinite, link_rate=2.0)
    with pytest.raises(ArgumentError, match="link_rate must be positive, got nan"):
        f(time_bytes=1.0, link_rate=np.array([np.nan]))
    # Where no result is checked (several formulas at once, symbolic evaluation), none is taken.
    with pytest.raises(ArgumentError, match="link_rate must be a finite number"):
        ia.evaluate(time / rate, time_bytes=1, link_rate=np.inf)
