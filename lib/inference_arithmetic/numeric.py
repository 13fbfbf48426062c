"""Turn a SymPy formula into a fast numpy function whose keyword arguments are its symbols.

>>> from inference_arithmetic.formulas import mlp
>>> forward = numeric(mlp.forward_flops())
>>> forward.args
('batch', 'd_1', 'd_2', 'd_3')
>>> float(forward(batch=1, d_1=2, d_2=3, d_3=2))  # 2 * (2*3 + 3*2) = 24
24.0

Derived in chapter 02 (the MLP), used by every chapter after it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
import sympy

__all__ = ["ArgumentError", "CompiledFormula", "numeric", "evaluate"]


class ArgumentError(ValueError, TypeError):
    """A compiled formula got a missing, unknown or invalid argument.

    It is a ``ValueError`` (bad input, as everywhere in the library) and a ``TypeError``
    (what Python raises for a wrong keyword argument), so either ``except`` catches it.
    """


class CompiledFormula:
    """A formula compiled with ``lambdify``; call it with one keyword argument per symbol.

    Arguments may be numbers or numpy arrays (broadcast together); scalars give a Python
    float, arrays a float64 array. Sizes must be positive, and a single size a whole number;
    arrays may sweep sizes smoothly, for plots. Results are floats:
    counts of real models overflow int64 (2·B·T·N passes 9.2e18 easily), so use
    ``evaluate`` when you need an exact integer.
    """

    def __init__(self, expr: sympy.Expr):
        self.expr = sympy.sympify(expr)
        self.symbols = tuple(sorted(self.expr.free_symbols, key=lambda s: s.name))
        self.args = tuple(s.name for s in self.symbols)
        self._rules = tuple(
            (s.name, bool(s.is_positive), bool(s.is_nonnegative), bool(s.is_integer))
            for s in self.symbols
        )
        # factor_terms pulls out common factors without expanding anything: sums of terms
        # built block by block (b*x + b*y) compile to fewer array operations (b*(x + y)).
        compiled = sympy.factor_terms(self.expr)
        self._function = sympy.lambdify(self.symbols, compiled, modules="numpy", cse=True)

    def __repr__(self):
        return f"CompiledFormula({self.expr}; args={', '.join(self.args)})"

    def _check(self, values: Mapping[str, object]) -> list:
        missing = [name for name in self.args if name not in values]
        unknown = [name for name in values if name not in self.args]
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if unknown:
                parts.append(f"unknown {', '.join(unknown)}")
            raise ArgumentError(f"{'; '.join(parts)} (this formula takes: {', '.join(self.args)})")
        arrays = []
        for name, positive, nonnegative, integer in self._rules:
            value = values[name]
            given = np.asarray(value)
            try:
                if given.dtype.kind in "bUS":  # True, "bf16" and "3" are not sizes
                    raise TypeError
                # Objects convert too: SymPy numbers (what evaluate returns), ints past 2**63;
                # but None would turn into NaN.
                array = given.astype(np.float64, copy=False)
                if given.dtype.kind == "O" and np.isnan(array).any():
                    raise TypeError
            except (TypeError, ValueError):
                raise ArgumentError(
                    f"{name} must be a number or an array of numbers, got {value!r}"
                ) from None
            # One reduction per argument keeps the check cheap next to the formula itself.
            if positive or nonnegative:  # positive symbols are nonnegative too: one reduction
                low = array.min(initial=np.inf)
                if positive and not low > 0:
                    raise ArgumentError(f"{name} must be positive, got {_first(array, array <= 0)}")
                if not low >= 0:
                    raise ArgumentError(
                        f"{name} must not be negative, got {_first(array, array < 0)}"
                    )
            # A single fractional size (2.5 layers) is a mistake; an array may sweep a size
            # smoothly for a plot, and testing every element would double the cost of a call.
            if integer and array.ndim == 0 and not float(array).is_integer():
                raise ArgumentError(f"{name} must be a whole number, got {value!r}")
            arrays.append(array)
        return arrays

    def __call__(self, **values):
        arrays = self._check(values)
        result = np.asarray(self._function(*arrays), dtype=np.float64)
        shape = np.broadcast_shapes(*(array.shape for array in arrays))
        if result.shape != shape:  # a formula that ignores the shape of some argument
            result = np.broadcast_to(result, shape)
        # A plain float for scalar inputs: it prints as a number (in glue, in f-strings).
        return float(result) if result.ndim == 0 else result

    def from_values(self, values: Mapping[str, object]):
        """Call with the arguments this formula takes, picked from ``values``.

        Other entries are ignored, so one mapping can feed several formulas; a missing
        argument still raises ``ArgumentError``.
        """
        return self(**{name: values[name] for name in self.args if name in values})


def _first(array: np.ndarray, bad: np.ndarray) -> str:
    """The first offending value, and where it is when the argument is an array."""
    if array.ndim == 0:
        return repr(array.item())
    index = tuple(int(i) for i in np.argwhere(bad | np.isnan(array))[0])
    return f"{array[index].item()!r} at index {index[0] if len(index) == 1 else index}"


@functools.lru_cache(maxsize=512)
def numeric(expr: sympy.Expr) -> CompiledFormula:
    """The compiled, cached numpy function of ``expr`` (see ``CompiledFormula``)."""
    return CompiledFormula(expr)


def evaluate(expr: sympy.Expr, **values) -> sympy.Expr:
    """Substitute exact values into ``expr``: integers stay exact integers.

    >>> from inference_arithmetic.formulas import mlp
    >>> evaluate(mlp.layer_params(bias=False), d_1=2, d_2=3)
    6

    Takes single numbers; ``numeric(expr)`` evaluates arrays.
    """
    expr = sympy.sympify(expr)
    arrays = [name for name, value in values.items() if np.ndim(value) > 0]
    if arrays:
        raise ArgumentError(
            f"evaluate takes single numbers, not arrays ({', '.join(arrays)}); "
            "use numeric(expr) for arrays"
        )
    numeric(expr)._check(values)
    by_name = {s.name: s for s in expr.free_symbols}
    # xreplace puts in every value at once; subs would rebuild Max(...) once per value.
    return expr.xreplace({by_name[name]: sympy.nsimplify(v) for name, v in values.items()})
