"""One printer per target: a SymPy formula as JavaScript for the page, as numpy code for arrays,
and as plain Python for single numbers.

>>> from inference_arithmetic.formulas import mlp
>>> page = javascript(mlp.forward_flops())  # new Function(page.args, page.body) in the page
>>> page["args"], page["body"]
(['batch', 'd_1', 'd_2', 'd_3'], 'var _c0=(2*batch*d_2);return (_c0*d_1 + _c0*d_3);')
>>> import sympy
>>> forward = define(numpy_code(sympy.symbols("batch d_1 d_2 d_3"), mlp.forward_flops()))
>>> float(forward[GENERATED](1, 2, 3, 2))  # 2 * (2*3 + 3*2) = 24
24.0

Every printer computes a formula's common subexpressions once (``sympy.cse``), and nothing
else in the library prints a formula for a machine (``tests/lib/test_printing.py``): the page's
widgets, the calculator's data, ``numeric`` and the simulation's step all print here, so a
rule written once as an expression runs the same everywhere (STYLE.md, "One rule, many
printers").

The printers import SymPy when they print; ``define``, which runs printed code, needs only
numpy: a formula read back from the disk cache runs without SymPy (``core.numeric``).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import json
import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the annotations' types; SymPy itself is imported where it prints
    import sympy

__all__ = ["javascript", "numpy_code", "define", "scalar", "hold", "GENERATED"]

GENERATED = "_lambdifygenerated"
"""The name of the function that ``numpy_code`` defines (lambdify's)."""


@functools.cache
def _lambdify() -> dict:
    """``lambdify``'s options for every Python target."""
    import sympy

    options = {"cse": True}  # every Python target computes common subexpressions once
    if "docstring_limit" in inspect.signature(sympy.lambdify).parameters:  # SymPy 1.13 on
        options["docstring_limit"] = -1  # no docstring: it would print the whole expression
    return options


def _held(cls: type) -> type:
    """``cls`` (Max or Min) built without evaluation: a subclass of the same name."""

    def __new__(held, *args, **assumptions):
        return cls.__new__(held, *args, evaluate=False)

    return type(cls.__name__, (cls,), {"__new__": __new__, "__module__": __name__})


# Printing rebuilds every Max and Min (in factor_terms, then in cse), and SymPy evaluates each
# rebuilt one: it compares the arguments pairwise, symbolically (a third of the compile time
# of the calculator's formulas). A formula comes in evaluated already, so it is printed with
# these instead: the same name, so the same sort order (factor_terms and cse make the same
# choices), and subclasses, so the same printing: the code is that of Max and Min.
@functools.cache
def _held_types() -> dict:
    import sympy

    return {sympy.Max: _held(sympy.Max), sympy.Min: _held(sympy.Min)}


def hold(expr: sympy.Basic) -> sympy.Basic:
    """``expr`` with its Max and Min held: rebuilding them (as ``cse`` and ``factor_terms``
    do) no longer evaluates them again. Built bottom up: ``replace`` would first rebuild a Max
    around a held Min as a Max, with the evaluation."""
    return _held_node(expr)


@functools.lru_cache(maxsize=1 << 16)
def _held_node(node: sympy.Basic) -> sympy.Basic:
    # Kept across formulas (the latest 65,536 nodes): the formulas printed together, a step
    # with and without a serving option or a model's report by step model, share most of
    # their nodes.
    if not node.args:
        return node
    args = tuple(_held_node(arg) for arg in node.args)
    held_types = _held_types()
    if type(node) in held_types:
        return held_types[type(node)](*args)
    if all(new is old for new, old in zip(args, node.args, strict=True)):
        return node
    return node.func(*args)


# --- JavaScript, for the page ----------------------------------------------------------------


def javascript(exprs: sympy.Basic | Mapping[str, sympy.Basic]) -> dict:
    """A formula, or several by name, as the body of a JavaScript function: ``args``, its
    arguments in ``numeric``'s order (their names, sorted), and ``body``, the statements that
    compute their common parts once (``var _c0=(...);``) and return the formula's value (or an
    object of the formulas' values by name). The page runs ``new Function(args, body)``.

    >>> from inference_arithmetic.core.symbols import B, D
    >>> javascript({"twice": 2 * B * D, "thrice": 3 * B * D})["body"]
    'var _c0=(batch*d_model);return {"twice":(2*_c0),"thrice":(3*_c0)};'

    Printed once per distinct formula in a process: models of one family, whose formulas are
    the same expressions of their sizes, share the printing.
    """
    import sympy

    if isinstance(exprs, Mapping):
        return dict(_javascript(tuple(exprs), tuple(map(sympy.sympify, exprs.values()))))
    return dict(_javascript(None, (sympy.sympify(exprs),)))


@functools.lru_cache(maxsize=4096)
def _javascript(names: tuple[str, ...] | None, exprs: tuple[sympy.Basic, ...]) -> dict:
    """``javascript`` of the formulas ``exprs``, of the object of ``names`` or (None) of the
    one formula; SymPy expressions are equal and hash alike when they are the same formula."""
    import sympy

    symbols = sympy.numbered_symbols("_c")  # no symbol of the library starts with an underscore
    held = [hold(e) for e in exprs]
    replacements, reduced = sympy.cse(held, symbols=symbols, optimizations=None)
    js = _javascript_printer().doprint
    statements = "".join(f"var {name}=({js(e)});" for name, e in replacements)
    outs = [js(e) for e in reduced]
    if names is None:
        (out,) = outs
        result = f"return ({out});"
    else:
        fields = ",".join(f"{json.dumps(k)}:({js})" for k, js in zip(names, outs, strict=True))
        result = "return {" + fields + "};"
    args = sorted({s.name for e in exprs for s in e.free_symbols})
    return {"args": args, "body": statements + result}


@functools.cache
def _javascript_printer():
    """SymPy's JavaScript printer, printing the terms of a sum and the factors of a product in
    the order the expression holds them (``order="none"``), which SymPy fixes when it builds
    the expression. Its default sorts them again for each sum it prints, for the eye: more
    than half of the time of printing the calculator's formulas, which no reader sees."""
    from sympy.printing.jscode import JavascriptCodePrinter

    return JavascriptCodePrinter({"order": "none"})


# --- numpy, for arrays (and the same code for single numbers) --------------------------------


def numpy_code(args: Sequence[sympy.Symbol], expr: sympy.Basic, factor: bool = False) -> str:
    """The Python source of ``def _lambdifygenerated(*args)`` (``GENERATED``), which computes
    ``expr`` with numpy's functions (lambdify's NumPy printer), its common subexpressions once;
    ``define`` runs it. ``factor`` pulls common factors out of sums first (``factor_terms``,
    which expands nothing): b*x + b*y computes as b*(x + y), fewer operations on large arrays.

    Printed once per distinct formula in a process: models of one family, whose formulas are
    the same expressions of their sizes, share the printing (as ``javascript``'s)."""
    return _numpy_code(tuple(args), expr, factor)


@functools.lru_cache(maxsize=1024)
def _numpy_code(args: tuple[sympy.Symbol, ...], expr: sympy.Basic, factor: bool) -> str:
    import sympy

    held = sympy.factor_terms(hold(expr)) if factor else hold(expr)
    # modules=[np] prints with the same NumPy printer as modules="numpy", into numpy's own
    # namespace; "numpy" would run `from numpy import *` on first use, which imports
    # numpy.testing, f2py, ma, random, polynomial... (about 0.1 s, once per process).
    return inspect.getsource(sympy.lambdify(args, held, modules=[np], **_lambdify()))


def _minimum(a, b):
    return a if a <= b or a != a else b  # numpy's choice: the first NaN, else the smaller


def _maximum(a, b):
    return a if a >= b or a != a else b


def _select(conditions, choices, default=np.nan):
    return next((c for holds, c in zip(conditions, choices, strict=True) if holds), default)


class _Logical:
    """``logical_and`` or ``logical_or`` of single truth values: its ``reduce``."""

    def __init__(self, reduce):
        self.reduce = reduce


# The names the generated code calls (lambdify's: numpy's and functools.reduce). On single
# numbers numpy's array functions cost a microsecond or more a call (np.select several), most
# of a call of several formulas; these pick the same operand by Python's comparisons.
_NUMPY = {**np.__dict__, "reduce": functools.reduce, "builtins": builtins, "range": range}
_NUMBERS = {
    **_NUMPY,
    "minimum": _minimum,
    "maximum": _maximum,
    "select": _select,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "logical_not": operator.not_,
    "logical_and": _Logical(all),
    "logical_or": _Logical(any),
}


def define(source: str, numbers: bool = False) -> dict:
    """The names that ``source`` (``numpy_code``'s, or code cut from it) defines, run with
    numpy's functions, or with ``numbers`` with functions of single numbers that pick the same
    operands (faster on numbers, wrong on arrays)."""
    namespace = dict(_NUMBERS if numbers else _NUMPY)
    exec(compile(source, "<inference_arithmetic compiled>", "exec"), namespace)
    return namespace


# --- plain Python, for single numbers --------------------------------------------------------


def scalar(args: Sequence[sympy.Symbol], expr: sympy.Basic):
    """``expr`` as a plain Python function of ``args`` (Python's floats and ``math``, common
    subexpressions once): for a formula called once per step of a simulation, where a checked
    array function would cost a hundred times as much.

    >>> import sympy
    >>> from inference_arithmetic.core.symbols import B, D
    >>> scalar((B, D), sympy.Max(B, D) / 2)(3.0, 5.0)
    2.5
    """
    import sympy

    return sympy.lambdify(args, expr, "math", **_lambdify())
