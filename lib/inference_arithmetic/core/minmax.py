"""SymPy's Max and Min, each evaluated once per process while the library builds formulas.

>>> import sympy
>>> x, y = sympy.symbols("x y", positive=True)
>>> with once():
...     first, again = sympy.Max(x, 2 * y), sympy.Max(x, 2 * y)
>>> first is again, first == sympy.Max(x, 2 * y)
(True, True)

Evaluating a Max or a Min compares its arguments pairwise, symbolically (SymPy's
``_find_localzeros``), and every ``subs`` of an expression rebuilds each Max and Min in it.
The roofline puts one in every kernel's time, so this is most of the time of building the
library's formulas: a step is rebuilt for each phase (a prefill is the step with no decodes, a
decode step the step with no prompt tokens), parallelism and serving option, and the models of
one family share their kernels. SymPy keeps the results of its own constructors (Add, Mul, Pow)
in its cache; it does not keep Max's and Min's, which are functions of their arguments as much:
``once`` keeps them (the ``KEPT`` latest), so the same expressions come out in a fraction of
the time. Outside ``once`` SymPy is left as it is: a user's own Max is SymPy's.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from sympy import sympify
from sympy.core.parameters import global_parameters
from sympy.functions.elementary.miscellaneous import MinMaxBase

__all__ = ["once", "KEPT"]

KEPT = 1 << 16
"""The evaluated Max and Min kept, the most recently used."""

_new = MinMaxBase.__new__
_lock = threading.Lock()
_open = 0  # the ``once`` blocks open, in every thread


@functools.lru_cache(maxsize=KEPT)
def _evaluated(cls, args):
    return _new(cls, *args)


def _kept(cls, *args, **options):
    if options or not global_parameters.evaluate:  # held (evaluate=False): built as asked
        return _new(cls, *args, **options)
    return _evaluated(cls, tuple(sympify(a) for a in args))


@contextlib.contextmanager
def once():
    """While open (in any thread; blocks may nest), each Max and Min SymPy evaluates is built
    once and shared: the same arguments give the same object."""
    global _open
    with _lock:
        _open += 1
        MinMaxBase.__new__ = _kept
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if not _open:
                MinMaxBase.__new__ = _new
