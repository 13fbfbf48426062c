"""Turn a SymPy formula into a fast numpy function whose keyword arguments are its symbols.

>>> from inference_arithmetic.formulas import mlp
>>> forward = numeric(mlp.forward_flops())
>>> forward.args
('batch', 'd_1', 'd_2', 'd_3')
>>> float(forward(batch=1, d_1=2, d_2=3, d_3=2))  # 2 * (2*3 + 3*2) = 24
24.0

Derived in chapter 02 (the MLP), used by every chapter after it.

SymPy is imported where a formula is compiled or evaluated exactly, not when this module is:
a compiled formula read back from the disk cache (``from_parts``, ``core.cache``) runs on
numpy alone, so that the command line answers without SymPy's half a second of import.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from inference_arithmetic.core import printing
from inference_arithmetic.core.errors import ArgumentError, UnknownName

if TYPE_CHECKING:  # the annotations' types; SymPy itself is imported where it compiles
    import sympy

__all__ = [
    "ArgumentError",
    "UnknownName",
    "CompiledFormula",
    "CompiledFormulas",
    "numeric",
    "evaluate",
    "cut",
]

_BLOCK = 8192
"""Elements per block when a large grid is evaluated block by block (``CompiledFormula``):
64 KiB of float64 per argument or temporary, so that a block's all stay in cache, and each
temporary is under malloc's 128 KiB threshold for mapping memory from the system (a mapped
one costs page faults at every operation). 8192 to 32768 measured alike in `make bench`."""


def _run(source: str, numbers: bool = False):
    """The function that ``source`` (``printing.numpy_code``'s) defines, on arrays or, with
    ``numbers``, on single numbers (``printing.define``)."""
    return printing.define(source, numbers)[printing.GENERATED]


def expression(name: str, value) -> sympy.Basic:
    """``value`` as a SymPy expression (a formula of ``inference_arithmetic.formulas``, a
    number, or text SymPy reads), else an ``ArgumentError`` naming ``name``; a function where
    its formula belongs is named with the call it lacks ("did you mean mlp.params()?").
    ``checks.expression`` is this one."""
    import sympy

    if callable(value) and not isinstance(value, sympy.Basic):
        called = _called(value)
        raise ArgumentError(
            f"{name} must be a SymPy expression, got the function {called}: "
            f"did you mean {called}()?"
        )
    try:
        expr = sympy.sympify(value)
    except (sympy.SympifyError, TypeError, ValueError, SyntaxError):
        expr = None
    if not isinstance(expr, sympy.Basic):
        raise ArgumentError(
            f"{name} must be a SymPy expression (a formula of inference_arithmetic.formulas), "
            f"got {value!r}"
        )
    return expr


def _called(function) -> str:
    """A function as the chapters call it: ``mlp.params`` for a formula, else its name."""
    name = getattr(function, "__name__", type(function).__name__)
    module = getattr(function, "__module__", None) or ""
    formulas = "inference_arithmetic.formulas."
    return f"{module.removeprefix(formulas)}.{name}" if module.startswith(formulas) else name


_BY_NAME = (
    "a formula takes its values by name, not by position (got {count} positional): "
    "{args}, each as name=value"
)
"""The refusal of a formula's values given by position (a compiled formula, ``evaluate``)."""


class CompiledFormula:
    """A formula compiled with ``lambdify``; call it with one keyword argument per symbol.

    Arguments may be numbers or numpy arrays (broadcast together); scalars give a Python
    float, arrays a float64 array. Sizes must be positive, and a single size a whole number;
    arrays may sweep sizes smoothly, for plots. Results are floats:
    counts of real models overflow int64 (2·B·T·N passes 9.2e18 easily), so use
    ``evaluate`` when you need an exact integer.

    A large grid is evaluated block by block along its first axis (``_BLOCK`` elements at a
    time): each block's temporaries stay in the processor's cache, where whole-grid
    temporaries would go through memory once per operation. The formula is elementwise, so
    the values are those of one call on the whole arrays.
    """

    _numbers = False  # the code runs on arrays (``printing.define``)

    def __init__(self, expr: sympy.Expr, factor: bool = True):
        self.expr = expression("expr", expr)  # None, a function: named at the door
        self.symbols = tuple(sorted(self.expr.free_symbols, key=lambda s: s.name))
        self.args = tuple(s.name for s in self.symbols)
        self._rules = tuple(
            (s.name, bool(s.is_positive), bool(s.is_nonnegative), bool(s.is_integer))
            for s in self.symbols
        )
        # Sums of terms built block by block (b*x + b*y) compile to fewer array operations
        # with their common factors pulled out (b*(x + y)).
        self._source = printing.numpy_code(self.symbols, self.expr, factor=factor)
        self._function = _run(self._source, self._numbers)

    def __repr__(self):
        return f"CompiledFormula({self.expr}; args={', '.join(self.args)})"

    def parts(self) -> dict:
        """What ``from_parts`` needs to make this function again: argument rules and the
        generated Python source (JSON-ready)."""
        return {"rules": [list(r) for r in self._rules], "source": self._source}

    @classmethod
    def from_parts(cls, parts: dict):
        """The function of ``parts()``, without SymPy: the source runs in the namespace that
        ``lambdify`` gives it (``printing.define``)."""
        self = cls.__new__(cls)
        self._rules = tuple(tuple(rule) for rule in parts["rules"])
        self.args = tuple(rule[0] for rule in self._rules)
        self.expr = self.symbols = None  # not kept: the source is the formula
        self._source = parts["source"]
        self._function = _run(self._source, self._numbers)
        return self

    def bind(self, values: Mapping[str, object], *free: str, split: str | None = None):
        """This formula at ``values``, checked once here, as a function of the arguments
        named ``free``, given in that order and not checked: for a caller that evaluates it
        many times at the same values (the steady state's chain). It returns what the code
        does (an array where an argument is one). ``split`` is ``self.split(*free)``, where a
        caller has kept it (the disk cache): the cut is the slow part of a first bind."""
        wanted = [name for name in self.args if name in free or name in values]
        given = {name: 1.0 if name in free else values[name] for name in wanted}
        arrays = dict(zip(self.args, self._check(given), strict=True))
        prepare, evaluate = _run_split(split or self.split(*free))
        # What does not depend on the free arguments is computed here, once, as a call would.
        prepared = prepare(**{name: arrays[name] for name in _others(prepare)})
        return functools.partial(evaluate, *map(np.asarray, prepared))

    def split(self, *free: str) -> str:
        """The source of ``bind``'s two functions for the arguments ``free`` (JSON-ready)."""
        return _split(self.parts()["source"], tuple(free))

    def _check(self, values: Mapping[str, object], result_checked: bool = False) -> list:
        """The arguments as float64 arrays, each checked against its symbol's assumptions and
        finite. ``result_checked=True`` (``__call__``, which checks its result, ``_finite``)
        takes an infinite one, where the formula has a finite limit there, and one reduction
        of each array, not two."""
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
                if given.dtype.kind in "bUSc":  # True, "bf16", "3" and 1+2j are not sizes
                    raise TypeError
                # Objects convert too: SymPy numbers (what evaluate returns), ints past 2**63;
                # but None would turn into NaN.
                array = given.astype(np.float64, copy=False)
                if given.dtype.kind == "O" and np.isnan(array).any():
                    raise TypeError
            except OverflowError:  # an int past float64's range, 10**400
                raise ArgumentError(
                    f"{name} must be a finite number, got {value!r:.40}: past the largest "
                    "float64 (1.8e308)"
                ) from None
            except (TypeError, ValueError):
                raise ArgumentError(
                    f"{name} must be a number or an array of numbers, got {value!r}"
                ) from None
            # A reduction or two per argument keeps the check cheap next to the formula itself.
            if array.ndim == 0:  # a single number: no reduction (a scalar call's cost)
                low = high = float(array)
            else:
                low = high = np.minimum.reduce(array, axis=None, initial=np.inf)
                if not result_checked:
                    high = np.maximum.reduce(array, axis=None, initial=-np.inf)
            if positive and not low > 0:
                raise ArgumentError(f"{name} must be positive, got {_first(array, array <= 0)}")
            if (positive or nonnegative) and not low >= 0:
                raise ArgumentError(f"{name} must not be negative, got {_first(array, array < 0)}")
            # A single fractional size (2.5 layers) is a mistake; an array may sweep a size
            # smoothly for a plot, and testing every element would double the cost of a call.
            if integer and array.ndim == 0 and not float(array).is_integer():
                raise ArgumentError(f"{name} must be a whole number, got {value!r}")
            # NaN, which both reductions carry, is no size. An infinite one is taken where
            # the formula has a finite limit there (a free link: its bandwidth infinite) and
            # refused, naming it, where it carries into the result (``_finite``). A symbol
            # without a sign (a test's real x) takes what numpy does.
            if (positive or nonnegative) and not low <= high:
                raise ArgumentError(
                    f"{name} must be a number, got {_first(array, np.isnan(array))}"
                )
            if (positive or nonnegative) and not result_checked and high == np.inf:
                bad = _first(array, ~np.isfinite(array))
                raise ArgumentError(f"{name} must be a finite number, got {bad}")
            arrays.append(array)
        return arrays

    def __call__(self, *positional, **values):
        if positional:
            raise ArgumentError(_BY_NAME.format(count=len(positional), args=", ".join(self.args)))
        arrays = self._check(values, result_checked=True)
        shape = _broadcast_shape(arrays)
        cut = _cut(arrays, shape)
        if cut is not None:
            return self._finite(self._by_blocks(arrays, shape, cut), arrays)
        result = np.asarray(self._function(*arrays), dtype=np.float64)
        if result.shape != shape:  # a formula that ignores the shape of some argument
            result = np.broadcast_to(result, shape)
        elif any(result is array for array in arrays):  # a formula that is one argument
            result = result.copy()  # a float64 array comes in uncopied: it stays the caller's
        result = self._finite(result, arrays)
        # A plain float for scalar inputs: it prints as a number (in glue, in f-strings).
        return float(result) if result.ndim == 0 else result

    def _finite(self, result: np.ndarray, arrays: list) -> np.ndarray:
        """``result``, unless a size that is infinite (``_check``) made it infinite or NaN:
        one sum of it finds that; only then are the sizes searched, for the one to name."""
        if result.size and not np.isfinite(np.add.reduce(result, axis=None)):
            for (name, positive, nonnegative, _), array in zip(self._rules, arrays, strict=True):
                bad = ~np.isfinite(array)
                if (positive or nonnegative) and bad.any():
                    raise ArgumentError(
                        f"{name} must be a finite number here, got {_first(array, bad)}"
                    )
        return result

    def _by_blocks(self, arrays: list, shape: tuple, cut: list) -> np.ndarray:
        """The result on a large ``shape``, computed a block of rows of its first axis at a time:
        the arguments marked in ``cut`` are cut into the same blocks, the others broadcast."""
        rows = max(1, _BLOCK * shape[0] // math.prod(shape))
        result = np.empty(shape)
        for start in range(0, shape[0], rows):
            block = slice(start, start + rows)
            parts = [a[block] if by_rows else a for a, by_rows in zip(arrays, cut, strict=True)]
            result[block] = self._function(*parts)
        return result

    def from_values(self, values: Mapping[str, object]):
        """Call with the arguments this formula takes, picked from ``values``.

        Other entries are ignored, so one mapping can feed several formulas; a missing
        argument still raises ``ArgumentError``.
        """
        return self(**{name: values[name] for name in self.args if name in values})


# A generated function's work that does not depend on the free arguments of ``bind``: each
# statement, and each largest part of a statement, in its variables and numbers only.
_HOISTED = (ast.BinOp, ast.UnaryOp, ast.Call, ast.Compare)


@functools.lru_cache(maxsize=64)
def _split(source: str, free: tuple[str, ...]) -> str:
    """The generated code ``source`` cut in two (``bind``), as source: ``_prepare(**others)``
    computes what does not depend on the ``free`` arguments, and
    ``_lambdifygenerated(*prepared, *free)`` the rest, with the same operations on the same
    operands as the whole code."""
    function = _Reduced().visit(ast.parse(source)).body[0]
    varying, prepared, body, names = set(free), [], [], {}

    def names_in(node) -> set:
        if id(node) not in names:  # each node once: a statement's parts are asked in turn
            found = {node.id} if isinstance(node, ast.Name) else set()
            names[id(node)] = found.union(*map(names_in, ast.iter_child_nodes(node)))
        return names[id(node)]

    def constant(node):
        return bool(names_in(node)) and varying.isdisjoint(names_in(node))

    class Hoist(ast.NodeTransformer):
        def visit(self, node):
            if isinstance(node, _HOISTED) and constant(node):
                name = f"_c{len(prepared)}"
                prepared.append(ast.Assign([ast.Name(name, ast.Store())], node, lineno=0))
                return ast.Name(name, ast.Load())
            return self.generic_visit(node)

    for statement in function.body:
        if isinstance(statement, ast.Assign) and constant(statement.value):
            prepared.append(statement)
            continue
        if isinstance(statement, ast.Assign):
            varying.update(target.id for target in statement.targets)
        body.append(Hoist().visit(statement))
    used = {n.id for statement in body for n in ast.walk(statement) if isinstance(n, ast.Name)}
    others = [a.arg for a in function.args.args if a.arg not in free]
    kept = [name for name in [*others, *(s.targets[0].id for s in prepared)] if name in used]
    lines = [f"def _prepare({', '.join(others)}):"]
    lines += [f"    {ast.unparse(statement)}" for statement in prepared]
    lines += [f"    return ({''.join(f'{name}, ' for name in kept)})"]
    lines += [f"def _lambdifygenerated({', '.join([*kept, *free])}):"]
    lines += [f"    {ast.unparse(statement)}" for statement in body]
    return "\n".join(lines) + "\n"


def cut(function, *free: str) -> tuple:
    """A generated function of single numbers (``printing.scalar``'s) cut in two as ``bind``
    cuts a compiled formula: ``prepare(*others)``, its other arguments in order, computes what
    does not depend on the arguments ``free``, and ``evaluate(*prepared, *free)`` the rest. The
    same operations on the same operands, in the function's own namespace, so the same number
    to the bit: for a caller that varies ``free`` at every call and the others seldom (the
    simulation's step, whose decodes' mean context moves at every step).

    >>> import sympy
    >>> from inference_arithmetic.core.symbols import B, D
    >>> prepare, evaluate = cut(printing.scalar((B, D), sympy.Max(B, 2) * B + D), "d_model")
    >>> evaluate(*prepare(3.0), 5.0)
    14.0
    """
    import inspect

    namespace = dict(function.__globals__)
    source = _split(inspect.getsource(function), tuple(free))
    exec(compile(source, "<inference_arithmetic compiled>", "exec"), namespace)
    return namespace["_prepare"], namespace[printing.GENERATED]


@functools.lru_cache(maxsize=64)
def _run_split(source: str):
    """The two functions of a ``_split`` source."""
    namespace = printing.define(source)
    return namespace["_prepare"], namespace[printing.GENERATED]


class _Reduced(ast.NodeTransformer):
    """``reduce(f, [a, b, c])`` written out, ``f(f(a, b), c)``: what ``functools.reduce`` calls,
    without building a list and calling it (a tenth of a step's evaluation in the chain)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        function, arguments = node.func, node.args
        listed = len(arguments) == 2 and isinstance(arguments[1], ast.List) and arguments[1].elts
        if not (isinstance(function, ast.Name) and function.id == "reduce" and listed):
            return node
        first, *rest = arguments[1].elts
        for item in rest:
            first = ast.Call(arguments[0], [first, item], [])
        return first


def _others(function) -> tuple[str, ...]:
    """The names of ``function``'s arguments."""
    return function.__code__.co_varnames[: function.__code__.co_argcount]


def _broadcast_shape(arrays: list) -> tuple:
    """The shape numpy broadcasts the arguments to (a single shape or none needs no work)."""
    shapes = [shape for shape in dict.fromkeys(array.shape for array in arrays) if shape]
    if len(shapes) <= 1:
        return shapes[0] if shapes else ()
    return np.broadcast_shapes(*shapes)


def _cut(arrays: list, shape: tuple) -> list | None:
    """Which arguments to cut into blocks of rows of ``shape``, or None to evaluate at once.

    Blocks pay on a grid of several blocks. The arguments that vary along the first axis are
    cut; the others (a single number, an axis of length 1, fewer dimensions) broadcast against
    every block. A block of rows must lie together in memory, so an argument in another order
    (Fortran order, a transposed view) is evaluated at once.
    """
    if not shape or shape[0] < 2 or math.prod(shape) < 4 * _BLOCK:
        return None
    cut = [array.ndim == len(shape) and array.shape[0] > 1 for array in arrays]
    rows_together = [array.ndim == 1 or array.flags.c_contiguous for array in arrays]
    return cut if all(t for t, by_rows in zip(rows_together, cut, strict=True) if by_rows) else None


def _first(array: np.ndarray, bad: np.ndarray) -> str:
    """The first offending value, and where it is when the argument is an array."""
    if array.ndim == 0:
        return repr(array.item())
    index = tuple(int(i) for i in np.argwhere(bad | np.isnan(array))[0])
    return f"{array[index].item()!r} at index {index[0] if len(index) == 1 else index}"


_NUMBERS = (float, int, np.float64)
"""The types of argument ``CompiledFormulas`` checks itself (anything else: ``_check``)."""


class CompiledFormulas(CompiledFormula):
    """Several formulas of the same inputs compiled as one function, for single numbers: their
    common subexpressions are computed once (``cse``), and one ``lambdify`` costs a fraction
    of one per formula. Called like a ``CompiledFormula``, it returns a dict of floats.

    >>> from inference_arithmetic.formulas import mlp
    >>> both = CompiledFormulas({"forward": mlp.forward_flops(), "training": mlp.training_flops()})
    >>> both(batch=1, d_1=2, d_2=3, d_3=2)
    {'forward': 24.0, 'training': 72.0}
    """

    _numbers = True  # the code runs on single numbers (``printing.define``)

    def __init__(self, exprs: dict[str, sympy.Expr]):
        import sympy

        self.names = tuple(exprs)
        # No factor_terms: it serves large arrays, and costs several times the compile here.
        super().__init__(sympy.Tuple(*exprs.values()), factor=False)

    def __repr__(self):
        return f"CompiledFormulas({', '.join(self.names)}; args={', '.join(self.args)})"

    def parts(self) -> dict:
        """What ``from_parts`` needs to make this function again: names, argument rules and
        the generated Python source (JSON-ready)."""
        return {"names": list(self.names), **super().parts()}

    @classmethod
    def from_parts(cls, parts: dict) -> CompiledFormulas:
        """The function of ``parts()``, without SymPy (``CompiledFormula.from_parts``)."""
        self = super().from_parts(parts)
        self.names = tuple(parts["names"])
        return self

    def _numbers(self, values: Mapping[str, object]) -> list | None:
        """The arguments as numpy numbers where each is an int or a float that passes its
        checks (a calculation's values); None for anything else, which ``_check`` checks as
        it always has (and raises for)."""
        if len(values) != len(self.args):
            return None
        numbers = []
        for name, positive, nonnegative, integer in self._rules:
            value = values.get(name)
            if type(value) not in _NUMBERS:
                return None
            try:
                number = float(value)
            except OverflowError:
                return None
            if (positive and not number > 0) or ((positive or nonnegative) and not number >= 0):
                return None
            if integer and not number.is_integer():
                return None
            numbers.append(number)
        return list(np.array(numbers))  # float64 numbers: numpy's arithmetic, as arrays had

    def __call__(self, *positional, **values) -> dict[str, float]:
        if positional:
            raise ArgumentError(_BY_NAME.format(count=len(positional), args=", ".join(self.args)))
        numbers = self._numbers(values)
        if numbers is None:
            arrays = self._check(values)
            if any(array.ndim for array in arrays):
                message = "CompiledFormulas takes single numbers; numeric(expr) takes arrays"
                raise ArgumentError(message)
            numbers = [array[()] for array in arrays]
        return dict(zip(self.names, map(float, self._function(*numbers)), strict=True))

    def over(self, values: Mapping[str, object]) -> dict[str, np.ndarray]:
        """Every formula at ``values`` (picked as ``from_values`` does), which may be arrays:
        each a float64 array of their broadcast shape. For a grid of scenarios (``ia.sweep``)."""
        arrays = self._check({name: values[name] for name in self.args if name in values})
        shape = np.broadcast_shapes(*(array.shape for array in arrays))
        if getattr(self, "_arrays", None) is None:  # the same code, with numpy's functions
            self._arrays = _run(self._source)
        results = self._arrays(*(np.broadcast_to(array, shape) for array in arrays))
        return {
            name: np.broadcast_to(np.asarray(result, dtype=float), shape)
            for name, result in zip(self.names, results, strict=True)
        }


def numeric(expr: sympy.Expr) -> CompiledFormula:
    """The compiled, cached numpy function of ``expr`` (see ``CompiledFormula``)."""
    if not isinstance(expr, Hashable):  # a list of formulas: one at a time (or CompiledFormulas)
        raise ArgumentError(
            f"expr must be one SymPy expression, got a {type(expr).__name__}: compile each "
            "with numeric(expr), or several of the same inputs as CompiledFormulas({name: expr})"
        )
    return _numeric(expr)


@functools.lru_cache(maxsize=512)
def _numeric(expr: sympy.Expr) -> CompiledFormula:
    return CompiledFormula(expr)


def evaluate(expr: sympy.Expr, *positional, **values) -> sympy.Expr:
    """Substitute exact values into ``expr``: integers stay exact integers.

    >>> from inference_arithmetic.formulas import mlp
    >>> evaluate(mlp.layer_params(bias=False), d_1=2, d_2=3)
    6

    Takes single numbers; ``numeric(expr)`` evaluates arrays.
    """
    import sympy

    expr = expression("expr", expr)
    if positional:
        names = ", ".join(sorted(s.name for s in expr.free_symbols))
        raise ArgumentError(_BY_NAME.format(count=len(positional), args=names))
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
