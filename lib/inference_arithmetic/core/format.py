"""Human-readable quantities with decimal prefixes, as GPU spec sheets use them.

>>> nbytes(671_088_640)
'671 MB'
>>> nbytes(671_088_640, binary=True)  # 671088640 / 2**20 = 640
'640 MiB'
>>> flops(2.91e14)
'291 TFLOPs'
>>> flop_rate(1.7e15)
'1.7 PFLOP/s'
>>> seconds(0.29)
'0.29 s'
>>> count(70_553_706_496)
'70.6 billion'
>>> integer(671_088_640)
'671,088,640'
>>> scientific(4.2e23)
'4.2 × 10²³'
>>> show(1.5e-5, "usd")
'$0.000015'

The book's static pages print with ``iaShow(value, kind, unit)``, the same rules in JavaScript
(``format.js``, loaded by ``js_runtime()``); tests/format_cases.json holds both to one table.
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import re
from collections.abc import Iterable

from inference_arithmetic.core import checks
from inference_arithmetic.core.errors import ArgumentError

__all__ = [
    "si",
    "nbytes",
    "flops",
    "flop_rate",
    "bandwidth",
    "seconds",
    "count",
    "integer",
    "number",
    "usd",
    "percent",
    "scientific",
    "show",
    "KINDS",
    "formula_table",
    "first_branch",
    "latex_lines",
]

_DECIMAL = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"]
_BINARY = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"]
_WORDS = ["", "thousand", "million", "billion", "trillion", "quadrillion"]


def _real(value, digits: int) -> float:
    """``value`` as a float to print with ``digits`` significant digits (1 to 17, what a
    float64 holds), else an ``ArgumentError`` naming what is wrong: a past-float64 integer
    (10**400) or a digit count Python's format has no precision for (-1)."""
    checks.count("digits", digits, high=17)
    try:
        return float(value)
    except OverflowError:
        raise ArgumentError(
            f"cannot format {value!r:.40}...: past the largest float64 (1.8e308)"
        ) from None
    except (TypeError, ValueError):
        raise ArgumentError(f"cannot format {value!r}: not a number") from None


def _scaled(value: float, base: int, prefixes: list[str], digits: int) -> tuple[str, str]:
    value = _real(value, digits)
    if not math.isfinite(value):
        raise ArgumentError(f"cannot format {value!r}: not a finite number")
    magnitude = abs(value)
    step = 0
    while magnitude >= base and step < len(prefixes) - 1:
        magnitude /= base
        step += 1
    text = _digits(magnitude, digits)
    # Rounding can carry into the next prefix: 999.7 kB at 3 digits is 1 MB, not "1e+03 kB".
    if float(text) >= base and step < len(prefixes) - 1:
        magnitude /= base
        step += 1
        text = _digits(magnitude, digits)
    if "e" in text:  # beyond the last prefix, or below one unit with no prefix to take
        return scientific(value, digits), ""
    sign = "-" if value < 0 else ""
    return sign + text, prefixes[step]


def _digits(magnitude: float, digits: int) -> str:
    """``digits`` significant digits, but whole numbers up to 9999 in full (1000 KiB)."""
    text = f"{magnitude:.{digits}g}"
    if "e" in text and 1 <= magnitude < 10**4:
        text = f"{magnitude:.0f}"
    return text


# The units of counted things, plural, and their singular: one of them is "1 token/s", not
# "1 tokens/s" (with a prefix the count is a thousand or more: "1 ktokens/s").
SINGULAR = {"tokens": "token", "requests": "request", "FLOPs": "FLOP"}


def si(value: float, unit: str = "", digits: int = 3, binary: bool = False) -> str:
    """``value`` with a decimal (or binary) prefix and ``digits`` significant digits; a unit
    of counted things is singular for exactly one (``SINGULAR``): ``'1 token/s'``."""
    number, prefix = _scaled(
        value, 1024 if binary else 1000, _BINARY if binary else _DECIMAL, digits
    )
    if number in ("1", "-1") and not prefix:
        word = re.match(r"[A-Za-z]*", unit)[0]
        unit = SINGULAR.get(word, word) + unit[len(word) :]
    return f"{number} {prefix}{unit}".rstrip()


def nbytes(value: float, digits: int = 3, binary: bool = False) -> str:
    """Bytes: ``nbytes(1.41e11) == '141 GB'``; ``binary=True`` gives GiB."""
    return si(value, "B", digits, binary)


def flops(value: float, digits: int = 3) -> str:
    """Floating-point operations (a count, not a rate): ``'291 TFLOPs'``."""
    return si(value, "FLOPs", digits)


def flop_rate(value: float, digits: int = 3) -> str:
    """Floating-point operations per second: ``'989 TFLOP/s'``."""
    return si(value, "FLOP/s", digits)


def bandwidth(value: float, digits: int = 3) -> str:
    """Bytes per second: ``'3.35 TB/s'``."""
    return si(value, "B/s", digits)


def seconds(value: float, digits: int = 2) -> str:
    """A duration: seconds from 0.1 s up, milliseconds or microseconds below.

    The number is ``number(value / scale, digits)``: whole with separators from 100 of the unit
    up (``'1,234 s'``; an exact half goes to the even neighbour, as Python's format rounds, and
    the page does the same), so a duration never prints as an exponent, nor a tiny nonzero one
    as ``'0 µs'``. Zero is ``'0 s'`` (the page printed ``'0 µs'``): zero needs no smaller unit.
    """
    value = _real(value, digits)
    if not math.isfinite(value):
        raise ArgumentError(f"cannot format {value!r}: not a finite number")
    if value == 0:
        return "0 s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= 0.1 * scale or unit == "µs":
            return f"{number(value / scale, digits)} {unit}"
    raise AssertionError("unreachable")


def count(value: float, digits: int = 3) -> str:
    """A large count in words: ``'70.6 billion'``."""
    number, word = _scaled(value, 1000, _WORDS, digits)
    return f"{number} {word}".rstrip()


def integer(value: int) -> str:
    """An exact integer with thousands separators: ``'671,088,640'``."""
    if not math.isfinite(value) or value != int(value):  # floats, numpy, SymPy alike
        raise ArgumentError(f"{value!r} is not a whole number")
    return f"{int(value):,}"


def _positional(text: str) -> str:
    """``%g`` text in full: ``'1.5e-05'`` -> ``'0.000015'``, ``'1e+02'`` -> ``'100'``."""
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    sign = "-" if mantissa.startswith("-") else ""
    figures = mantissa.lstrip("-").replace(".", "")
    point = int(exponent) + 1  # how many figures stand before the decimal point
    if point <= 0:
        return f"{sign}0.{'0' * -point}{figures}"
    if point >= len(figures):
        return sign + figures + "0" * (point - len(figures))
    return f"{sign}{figures[:point]}.{figures[point:]}"


def number(value: float, digits: int = 3) -> str:
    """A plain number for a readout: whole with thousands separators from 100 up, else
    ``digits`` significant digits, written out in full (no exponent) down to 1e-9.

    >>> number(1453.2)
    '1,453'
    >>> number(12.54)
    '12.5'
    >>> number(0.5)
    '0.5'
    >>> number(1.5e-5)
    '0.000015'
    >>> number(-99.96)
    '-100'
    >>> number(2.5e-12)  # below 1e-9 a string of zeros would hide the digits
    '2.50 × 10⁻¹²'
    """
    value = _real(value, digits)
    if not math.isfinite(value):
        raise ArgumentError(f"cannot format {value!r}: not a finite number")
    magnitude = abs(value)
    sign = "-" if value < 0 else ""
    if magnitude >= 100:
        return sign + f"{magnitude:,.0f}"  # an exact half rounds to even: 1234.5 -> 1,234
    if magnitude == 0:
        return "0"
    if magnitude < 1e-9:
        return scientific(value, digits)
    return sign + _positional(f"{magnitude:.{digits}g}")


def usd(value: float, digits: int = 3) -> str:
    """Dollars: ``'$'`` and ``number(value)``; a negative amount is ``'-$5'``.

    >>> usd(1234.4)
    '$1,234'
    >>> usd(0.2149)
    '$0.215'
    >>> usd(1.5e-5)
    '$0.000015'
    """
    text = number(value, digits)
    return "-$" + text[1:] if text.startswith("-") else "$" + text


def percent(value: float, digits: int = 3) -> str:
    """A fraction as a percentage: ``number(100 * value)`` and ``'%'``.

    >>> percent(0.35)
    '35%'
    >>> percent(0.0125)
    '1.25%'
    """
    return number(100 * _real(value, digits), digits) + "%"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(value: float, digits: int = 2) -> str:
    """Scientific notation for prose: ``'4.2 × 10²³'``."""
    value = _real(value, digits)
    if not math.isfinite(value):
        raise ArgumentError(f"cannot format {value!r}: not a finite number")
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


# The kinds of quantity ``show`` (and the page's ``iaShow``) prints, by name.
KINDS = (
    "nbytes",
    "seconds",
    "flops",
    "flop_rate",
    "bandwidth",
    "count",
    "integer",
    "number",
    "usd",
    "percent",
    "si",
    "text",
)

_BY_KIND = {
    "nbytes": nbytes,
    "seconds": seconds,
    "flops": flops,
    "flop_rate": flop_rate,
    "bandwidth": bandwidth,
    "count": count,
    "integer": integer,
    "number": number,
    "usd": usd,
    "percent": percent,
}


def show(value, kind: str, unit: str = "") -> str:
    """``value`` printed as the kind of quantity named by ``kind``, one of ``KINDS``.

    ``"si"`` puts a decimal prefix before ``unit`` (the other kinds have their own unit and
    ignore it), ``"text"`` is ``str(value)``, and ``None`` is ``'unavailable'`` for every kind.
    The page's ``iaShow(value, kind, unit)`` prints the same, from ``js_runtime()``.

    >>> show(999.7e3, "nbytes")
    '1 MB'
    >>> show(1234.5, "seconds")
    '1,234 s'
    >>> show(4.2e6, "si", "tokens")
    '4.2 Mtokens'
    >>> show(None, "usd")
    'unavailable'
    """
    if kind not in KINDS:
        raise ArgumentError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    if value is None:
        return "unavailable"
    if kind == "si":
        return si(value, unit)
    if kind == "text":
        return str(value)
    return _BY_KIND[kind](value)


@functools.cache
def js_runtime() -> str:
    """The JavaScript of ``format.js``: defines ``window.iaShow(value, kind, unit)`` once a page."""
    return (
        importlib.resources.files("inference_arithmetic.core")
        .joinpath("format.js")
        .read_text("utf-8")
    )


def formula_table(rows) -> str:
    """A Markdown table of formulas: rows of (quantity, SymPy expression, name in the library).

    Chapters end with one, generated from the library so that it cannot drift from the code.

    >>> from inference_arithmetic.core.symbols import N, b
    >>> print(formula_table([("weights", N * b, "basics.weight_bytes()")]))
    | quantity | formula | in the library |
    |---|---|---|
    | weights | $b N$ | `basics.weight_bytes()` |
    """
    import sympy  # here: formatting a number imports no SymPy (the command line's listings)

    triple = "rows of (quantity, SymPy expression, name in the library)"
    if isinstance(rows, str) or not isinstance(rows, Iterable):
        raise checks.ArgumentError(f"formula_table takes {triple}, got {rows!r}")
    lines = ["| quantity | formula | in the library |", "|---|---|---|"]
    for row in rows:
        if isinstance(row, str) or not isinstance(row, Iterable) or len(row := tuple(row)) != 3:
            raise checks.ArgumentError(f"formula_table takes {triple}, got the row {row!r}")
        what, expr, name = row
        expr = checks.expression(f"the formula of {what!r}", expr)
        expr, conditions = first_branch(expr)
        formula = f"${latex_lines(sympy.latex(expr), TABLE_LINE)}$"
        if conditions:
            condition = sympy.latex(sympy.And(*conditions))
            formula += f" for ${condition}$ (the library has the other cases)"
        lines.append(f"| {what} | {formula} | `{name}` |")
    return "\n".join(lines)


def first_branch(expr):
    """``expr`` with each ``Piecewise`` replaced by its first branch, and the conditions that
    branch holds under: a table shows one readable case, not nested ``cases`` blocks.

    >>> import sympy
    >>> from inference_arithmetic.core.symbols import n_gpus, n_link, beta_link, beta_net
    >>> first_branch(sympy.Piecewise((beta_link, n_link >= n_gpus), (beta_net, True)))
    (link_bandwidth, [link_domain >= n_gpus])
    """
    import sympy

    conditions = []
    while pieces := sorted(expr.atoms(sympy.Piecewise), key=sympy.count_ops, reverse=True):
        value, condition = pieces[0].args[0]
        expr = expr.xreplace({pieces[0]: value})
        if condition != sympy.true and condition not in conditions:
            conditions.append(condition)
    return expr, conditions


TABLE_LINE = 40
"""Characters of LaTeX on one line of a formula in a table's cell (a third of the column)."""


def latex_lines(latex: str, width: int = 80) -> str:
    """``latex`` broken before its top-level + and - signs into lines of about ``width``
    characters, as an ``aligned`` block: a long sum fits the column instead of running past
    it. Signs inside braces or \\left ... \\right pairs stay where they are."""
    if len(latex) <= width:
        return latex
    terms, depth, start = [], 0, 0
    i = 0
    while i < len(latex):
        if latex.startswith(r"\left", i):
            depth, i = depth + 1, i + 5
        elif latex.startswith(r"\right", i):
            depth, i = depth - 1, i + 6
        else:
            char = latex[i]
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth == 0 and char in "+-" and i > start and latex[i - 1] == " ":
                terms.append(latex[start:i].rstrip())
                start = i
            i += 1
    terms.append(latex[start:])
    lines = [""]
    for term in terms:
        if lines[-1] and len(lines[-1]) + len(term) > width:
            lines.append("")
        lines[-1] = f"{lines[-1]} {term}".strip()
    if len(lines) == 1:
        return latex
    return r"\begin{aligned}&" + r" \\ &".join(lines) + r"\end{aligned}"
