"""SymPy's evaluation of the library's large formulas, in affordable time: each comparison
evaluated once (``once``), and symbols put in without ``subs``'s checks (``put``).

>>> import sympy
>>> x, y = sympy.symbols("x y", positive=True)
>>> with once():
...     first, again = sympy.Max(x, 2 * y), sympy.Max(x, 2 * y)
>>> first is again, first == sympy.Max(x, 2 * y)
(True, True)
>>> put(sympy.Max(x, 2 * y) + x, {x: 3})
Max(3, 2*y) + 3

Evaluating a Max, a Min or an inequality compares its sides symbolically (SymPy's
``_find_localzeros``, ``is_ge``), and every substitution rebuilds each one in an expression.
The roofline puts a Max and an inequality (which side bounds it) in every kernel, so this is
most of the time of building the library's formulas: a step is rebuilt for each phase (a
prefill is the step with no decodes, a decode step the step with no prompt tokens),
parallelism and serving option, and the models of one family share their kernels. SymPy keeps
the results of its own constructors (Add, Mul, Pow) in its cache, not these, which are
functions of their arguments as much: ``once`` keeps them (the ``KEPT`` latest), so the same
expressions come out in a fraction of the time. Outside ``once`` SymPy is left as it is: a
user's own Max is SymPy's.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from sympy import Max, sympify
from sympy.core.parameters import global_parameters
from sympy.core.relational import _Inequality
from sympy.functions.elementary.miscellaneous import MinMaxBase

__all__ = ["once", "put", "longer", "KEPT"]

KEPT = 1 << 16
"""The evaluated comparisons kept, the most recently used."""

# Each class whose evaluation ``once`` keeps, with SymPy's own constructor.
_OWN = {MinMaxBase: MinMaxBase.__new__, _Inequality: _Inequality.__new__}
_lock = threading.Lock()
_open = 0  # the ``once`` blocks open, in every thread


@functools.lru_cache(maxsize=KEPT)
def _evaluated(base, cls, args):
    return _OWN[base](cls, *args)


def _keeping(base):
    def kept(cls, *args, **options):
        if options or not global_parameters.evaluate:  # held (evaluate=False): built as asked
            return _OWN[base](cls, *args, **options)
        return _evaluated(base, cls, tuple(sympify(a) for a in args))

    return kept


_KEEPING = {base: _keeping(base) for base in _OWN}


@contextlib.contextmanager
def once():
    """While open (in any thread; blocks may nest), each Max, Min and inequality SymPy
    evaluates is built once and shared: the same arguments give the same object."""
    global _open
    with _lock:
        _open += 1
        for base, kept in _KEEPING.items():
            base.__new__ = kept
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if not _open:
                for base, own in _OWN.items():
                    base.__new__ = own


def put(expr, values: dict):
    """``expr`` with each symbol of ``values`` replaced by its value, all at once (SymPy's
    ``xreplace``). Where no value holds another key's symbol, that is ``expr.subs(values)``:
    ``subs`` also matches products and powers, so it checks each argument it rebuilds against
    the old one, which on a step's deep expression takes most of the time."""
    return sympify(expr).xreplace({sympify(k): sympify(v) for k, v in values.items()})


def _longer_new(cls, *args, **assumptions):
    args = [sympify(a) for a in args]
    if all(a.is_number for a in args):
        return Max(*args)
    return Max.__new__(cls, *args, evaluate=False)


# Named Max, so that every printer prints it as one.
_Longer = type("Max", (Max,), {"__new__": _longer_new, "__module__": __name__})


def longer(*times):
    """The longest of ``times``: SymPy's Max, compared only once they are all numbers. SymPy's
    own compares its sides symbolically each time a substitution rebuilds it; in
    ``formulas.kernels.step_time`` one side is the whole step's kernels and the other the
    host's launches, a comparison no symbol decides, which took most of the time of building
    the calculator's formulas.

    >>> import sympy
    >>> x, y = sympy.symbols("x y", positive=True)
    >>> longer(x, 2 * y), longer(x, 2 * y).subs({x: 3, y: 1})
    (Max(x, 2*y), 3)
    """
    return _Longer(*times)
