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
"""

from __future__ import annotations

import math

import sympy

__all__ = [
    "si",
    "nbytes",
    "flops",
    "flop_rate",
    "bandwidth",
    "seconds",
    "count",
    "integer",
    "scientific",
    "formula_table",
]

_DECIMAL = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"]
_BINARY = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"]
_WORDS = ["", "thousand", "million", "billion", "trillion", "quadrillion"]


def _scaled(value: float, base: int, prefixes: list[str], digits: int) -> tuple[str, str]:
    if not math.isfinite(value):
        raise ValueError(f"cannot format {value!r}: not a finite number")
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


def si(value: float, unit: str = "", digits: int = 3, binary: bool = False) -> str:
    """``value`` with a decimal (or binary) prefix and ``digits`` significant digits."""
    number, prefix = _scaled(
        float(value), 1024 if binary else 1000, _BINARY if binary else _DECIMAL, digits
    )
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
    """A duration: seconds from 0.1 s up, milliseconds or microseconds below."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"cannot format {value!r}: not a finite number")
    if value == 0:
        return "0 s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= 0.1 * scale or unit == "µs":
            text = f"{value / scale:.{digits}g}"
            if "e" in text:  # 300 s at 2 digits would print as 3e+02
                text = f"{value / scale:,.0f}"
            return f"{text} {unit}"
    raise AssertionError("unreachable")


def count(value: float, digits: int = 3) -> str:
    """A large count in words: ``'70.6 billion'``."""
    number, word = _scaled(float(value), 1000, _WORDS, digits)
    return f"{number} {word}".rstrip()


def integer(value: int) -> str:
    """An exact integer with thousands separators: ``'671,088,640'``."""
    if not math.isfinite(value) or value != int(value):  # floats, numpy, SymPy alike
        raise ValueError(f"{value!r} is not a whole number")
    return f"{int(value):,}"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(value: float, digits: int = 2) -> str:
    """Scientific notation for prose: ``'4.2 × 10²³'``."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"cannot format {value!r}: not a finite number")
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def formula_table(rows) -> str:
    """A Markdown table of formulas: rows of (quantity, SymPy expression, name in the library).

    Chapters end with one, generated from the library so that it cannot drift from the code.

    >>> from inference_arithmetic.symbols import N, b
    >>> print(formula_table([("weights", N * b, "basics.weight_bytes()")]))
    | quantity | formula | in the library |
    |---|---|---|
    | weights | $b N$ | `basics.weight_bytes()` |
    """
    lines = ["| quantity | formula | in the library |", "|---|---|---|"]
    lines += [f"| {what} | ${sympy.latex(expr)}$ | `{name}` |" for what, expr, name in rows]
    return "\n".join(lines)
