"""Human-readable quantities: exact strings, rounding carries, bad input, round trips."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

import inference_arithmetic as ia
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.symbols import N, b
from inference_arithmetic.formulas import mlp

DECIMAL = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"]
BINARY = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"]


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: fmt.nbytes(671_088_640), "671 MB"),
        (lambda: fmt.nbytes(671_088_640, binary=True), "640 MiB"),  # 671088640 / 2**20
        (lambda: fmt.nbytes(1.41e11), "141 GB"),
        (lambda: fmt.nbytes(80e9), "80 GB"),
        (lambda: fmt.nbytes(80 * 2**30, binary=True), "80 GiB"),
        (lambda: fmt.nbytes(1536, binary=True), "1.5 KiB"),
        (lambda: fmt.nbytes(512), "512 B"),
        (lambda: fmt.nbytes(0), "0 B"),
        (lambda: fmt.nbytes(1.23456e15), "1.23 PB"),
        (lambda: fmt.nbytes(1.23456e15, digits=5), "1.2346 PB"),
        (lambda: fmt.flops(2.91e14), "291 TFLOPs"),
        (lambda: fmt.flops(6e23), "600 ZFLOPs"),
        (lambda: fmt.flop_rate(1.7e15), "1.7 PFLOP/s"),
        (lambda: fmt.flop_rate(989e12), "989 TFLOP/s"),
        (lambda: fmt.bandwidth(3.35e12), "3.35 TB/s"),
        (lambda: fmt.bandwidth(900e9), "900 GB/s"),
        (lambda: fmt.si(42), "42"),
        (lambda: fmt.si(4.2e6, "tokens"), "4.2 Mtokens"),
        (lambda: fmt.count(70_553_706_496), "70.6 billion"),
        (lambda: fmt.count(7e9), "7 billion"),
        (lambda: fmt.count(1.5e12), "1.5 trillion"),
        (lambda: fmt.count(1234), "1.23 thousand"),
        (lambda: fmt.count(950), "950"),
        (lambda: fmt.integer(671_088_640), "671,088,640"),
        (lambda: fmt.integer(2.0), "2"),
        (lambda: fmt.integer(-1_234_567), "-1,234,567"),
        (lambda: fmt.integer(10**20), "100,000,000,000,000,000,000"),
        (lambda: fmt.integer(sympy.Integer(12345)), "12,345"),
        (lambda: fmt.integer(np.int64(2**62)), f"{2**62:,}"),
        (lambda: fmt.scientific(4.2e23), "4.2 × 10²³"),
        (lambda: fmt.scientific(1.5e-3), "1.5 × 10⁻³"),
        (lambda: fmt.scientific(0), "0"),
    ],
)
def test_representative_values(call, expected):
    assert call() == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (0.29, "0.29 s"),
        (1.5, "1.5 s"),
        (0.1, "0.1 s"),
        (12.34, "12 s"),
        (300, "300 s"),  # not "3e+02 s"
        (3600, "3,600 s"),
        (0.05, "50 ms"),
        (2.5e-3, "2.5 ms"),
        (1e-4, "0.1 ms"),
        (3e-5, "30 µs"),
        (4.2e-7, "0.42 µs"),
        (-0.02, "-20 ms"),
    ],
)
def test_seconds(value, expected):
    assert fmt.seconds(value) == expected


@given(st.floats(min_value=1e-9, max_value=1e9))
def test_seconds_never_print_in_scientific_notation(value):
    text = fmt.seconds(value)
    number, unit = text.split(" ")
    assert unit in {"s", "ms", "µs"}
    assert "e" not in number
    scale = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}[unit]
    # Two significant digits (or a whole number of the unit, for large values).
    parsed = float(number.replace(",", "")) * scale
    assert parsed == pytest.approx(value, rel=0.05, abs=0.5e-8)


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: fmt.nbytes(999_700), "1 MB"),  # not "1e+03 kB"
        (lambda: fmt.si(999.7), "1 k"),
        (lambda: fmt.flops(999.6e12), "1 PFLOPs"),
        (lambda: fmt.count(999_999), "1 million"),
        (lambda: fmt.nbytes(999_700, digits=4), "999.7 kB"),  # no carry at 4 digits
    ],
)
def test_rounding_carries_into_the_next_prefix(call, expected):
    assert call() == expected


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: fmt.nbytes(-671_088_640), "-671 MB"),
        (lambda: fmt.si(-999_700, "B"), "-1 MB"),
        (lambda: fmt.count(-2.5e9), "-2.5 billion"),
        (lambda: fmt.flops(-1e3), "-1 kFLOPs"),
        (lambda: fmt.nbytes(-1536, binary=True), "-1.5 KiB"),
    ],
)
def test_negative_values(call, expected):
    assert call() == expected


FINITE_ONLY = [
    fmt.si,
    fmt.nbytes,
    fmt.flops,
    fmt.flop_rate,
    fmt.bandwidth,
    fmt.seconds,
    fmt.count,
    fmt.scientific,
]


@pytest.mark.parametrize("formatter", FINITE_ONLY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_raise(formatter, value):
    with pytest.raises(ValueError, match="not a finite number"):
        formatter(value)


@pytest.mark.parametrize("value", [2.5, -0.5, math.nan, math.inf])
def test_integer_refuses_non_whole_floats(value):
    with pytest.raises(ValueError):
        fmt.integer(value)


# Non-whole numbers of any type, among them the exact halves that ``ia.evaluate`` returns
# for int4, are refused rather than truncated.
def test_integer_refuses_non_whole_numbers_of_any_type():
    values = [
        np.float32(2.5),
        sympy.Rational(5, 2),
        # The bytes of 3 int4 parameters: exactly 3/2, as evaluate keeps it.
        ia.evaluate(mlp.params() * b, d_1=1, d_2=1, d_3=2, bytes_per_number=0.5),
    ]
    printed = {}
    for value in values:
        try:
            printed[repr(value)] = fmt.integer(value)
        except ValueError:
            pass
    assert printed == {}, f"non-whole numbers printed as integers: {printed}"


def _parse(text, binary):
    """``'1.5 KiB'`` -> 1536.0: the number times its prefix's multiplier."""
    number, unit = text.split(" ") if " " in text else (text, "")
    prefix = unit.removesuffix("B")
    prefixes, base = (BINARY, 1024) if binary else (DECIMAL, 1000)
    return float(number) * base ** prefixes.index(prefix)


magnitudes = st.floats(min_value=1e-2, max_value=1e26, allow_nan=False, allow_infinity=False)


@given(magnitudes, st.booleans(), st.booleans())
def test_si_parses_back_within_rounding(value, binary, negative):
    value = -value if negative else value
    text = fmt.nbytes(value, binary=binary)
    # Three significant digits: off by at most half a unit in the third digit.
    assert _parse(text, binary) == pytest.approx(value, rel=5e-3 * (1 + 1e-9))
    assert text.startswith("-") == negative


@given(st.floats(min_value=1, max_value=9.99e26))
def test_decimal_prefixes_never_print_in_scientific_notation(value):
    number = fmt.si(value).split(" ")[0]
    assert re.fullmatch(r"\d{1,3}(\.\d+)?", number), number
    assert 1 <= float(number) < 1000


# "%.3g" switches to exponent notation at 1000, but binary prefixes step at 1024: 1000 to
# 1023.x of a binary prefix must print in full, or carry (1023.96 MiB is 1 GiB).
def test_binary_prefixes_never_print_in_scientific_notation():
    values = [1000, 1000 * 2**20, 1023.9 * 1024, 1023.96 * 2**20]
    printed = {value: fmt.nbytes(value, binary=True) for value in values}
    exponents = {value: text for value, text in printed.items() if "e" in text.split(" ")[0]}
    assert exponents == {}, f"binary prefixes in exponent notation: {exponents}"


@given(st.floats(min_value=1e-30, max_value=1e30), st.booleans())
def test_scientific_parses_back(value, negative):
    value = -value if negative else value
    text = fmt.scientific(value)
    mantissa, power = text.split(" × 10")
    exponent = int(power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
    assert 1 <= abs(float(mantissa)) < 10
    assert float(mantissa) * 10.0**exponent == pytest.approx(value, rel=0.05 * (1 + 1e-9))


def test_formula_table_prints_the_latex_of_each_formula():
    rows = [("weights", N * b, "basics.weight_bytes()"), ("MLP FLOPs", mlp.forward_flops(), "f")]
    lines = fmt.formula_table(rows).split("\n")
    assert len(lines) == 2 + len(rows)
    for line, (what, expr, name) in zip(lines[2:], rows, strict=True):
        assert line == f"| {what} | ${sympy.latex(expr)}$ | `{name}` |"
    assert "$b N$" in lines[2]  # the book's letters, not the Python names


# --- One table for Python and the page: format.show here, iaShow in test_browser.py -----------

CASES = json.loads((Path(__file__).parents[1] / "format_cases.json").read_text("utf-8"))


def _case_id(case):
    return f"{case['kind']}-{case['value']!r}" + (f"-{case['unit']}" if case.get("unit") else "")


def test_the_case_table_covers_every_kind():
    assert len(CASES) >= 60
    assert {case["kind"] for case in CASES} == set(fmt.KINDS)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_show_prints_each_case_of_the_shared_table(case):
    assert fmt.show(case["value"], case["kind"], case.get("unit", "")) == case["text"]


@pytest.mark.parametrize(
    "value, kind, expected",
    [
        (1.5e-5, "usd", "$0.000015"),  # the page printed this, Python "$1.5e-05"
        (1234.5, "seconds", "1,234 s"),  # the page printed "1200 s"
        (0, "seconds", "0 s"),  # the page printed "0 µs"
        (1e-11, "seconds", "0.00001 µs"),  # not "0 µs" for a nonzero duration
        (np.float64(1453.2), "number", "1,453"),
        (sympy.Float(0.21), "usd", "$0.21"),
        (np.int64(671_088_640), "integer", "671,088,640"),
    ],
)
def test_show_settles_what_python_and_the_page_printed_differently(value, kind, expected):
    assert fmt.show(value, kind) == expected


def test_show_refuses_an_unknown_kind_and_names_the_kinds():
    with pytest.raises(ValueError, match="unknown kind 'bytes'") as error:
        fmt.show(1, "bytes")
    assert all(kind in str(error.value) for kind in fmt.KINDS)


@pytest.mark.parametrize("kind", [k for k in fmt.KINDS if k not in ("text", "integer")])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_show_raises_for_non_finite_values(kind, value):
    with pytest.raises(ValueError, match="not a finite number"):
        fmt.show(value, kind)


@given(st.floats(min_value=1e-9, max_value=1e15), st.booleans())
def test_number_never_prints_an_exponent(value, negative):
    value = -value if negative else value
    text = fmt.number(value)
    assert "e" not in text and "×" not in text
    assert float(text.replace(",", "")) == pytest.approx(value, rel=5e-3 * (1 + 1e-9), abs=0.5)


def test_the_javascript_runtime_ships_with_the_package():
    runtime = fmt.js_runtime()
    assert runtime.startswith("// inference_arithmetic.core.format in the page")
    assert "window.iaShow = window.iaShow ||" in runtime
    assert fmt.js_runtime() is runtime  # read once


def test_a_long_sum_is_broken_into_lines_at_its_own_signs_only():
    import sympy

    x = sympy.symbols("x_0:30")
    tex = sympy.latex(sum(x) + sympy.Max(x[0] + x[1], x[2]))
    broken = fmt.latex_lines(tex, width=40)
    assert broken.startswith(r"\begin{aligned}&") and broken.endswith(r"\end{aligned}")
    lines = broken.removeprefix(r"\begin{aligned}&").removesuffix(r"\end{aligned}").split(r" \\ &")
    assert len(lines) > 3 and all(len(line) <= 40 + 8 for line in lines)
    # Nothing lost, and the sum inside max( ... ) stays on one line.
    assert "".join(lines).replace(" ", "") == tex.replace(" ", "")
    assert any(r"\max\left(x_{2}, x_{0} + x_{1}\right)" in line for line in lines)
    assert fmt.latex_lines("a + b", width=40) == "a + b"


def test_a_formula_table_names_what_it_takes():
    expected = r"rows of \(quantity, SymPy expression, name in the library\), got None"
    with pytest.raises(ia.ArgumentError, match=expected):
        fmt.formula_table(None)
    with pytest.raises(ia.ArgumentError, match=r"got the row \('weights', "):
        fmt.formula_table([("weights", N * b)])
    with pytest.raises(ia.ArgumentError, match=r"did you mean mlp\.params\(\)\?"):
        fmt.formula_table([("parameters", mlp.params, "mlp.params()")])


def test_a_piecewise_formula_shows_its_first_branch_and_condition():
    """Issue 22: nested ``cases`` blocks in the chapters' summary tables; a table shows the
    branch a single-domain deployment takes, with its condition."""
    from inference_arithmetic.core.symbols import beta_link, beta_net, n_gpus, n_link

    link = sympy.Piecewise((1 / beta_link, n_link >= n_gpus), (1 / beta_net, True))
    nested = N * b * link + sympy.Piecewise((link, n_gpus > 1), (0, True))
    line = fmt.formula_table([("time", nested, "t()")]).split("\n")[2]
    assert r"\begin{cases}" not in line and "beta_{net}" not in line
    assert r"for $n > 1 \wedge n_{link} \geq n$" in line or r"n_{link} \geq n \wedge" in line
    plain = fmt.formula_table([("weights", N * b, "w()")]).split("\n")[2]
    assert " for $" not in plain


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: fmt.nbytes(10**400), "past the largest float64"),
        (lambda: fmt.seconds(10**400), "past the largest float64"),
        (lambda: fmt.number(-(10**400)), "past the largest float64"),
        (lambda: fmt.si(5, digits=-1), "digits must be a whole number from 1 to 17, got -1"),
        (lambda: fmt.number(5, digits=0), "digits must be a whole number from 1 to 17, got 0"),
        (lambda: fmt.scientific(5, digits=2.5), "digits must be a whole number"),
        (lambda: fmt.count("many"), "cannot format 'many': not a number"),
    ],
)
def test_what_cannot_be_printed_is_refused_by_name(call, message):
    with pytest.raises(ia.ArgumentError, match=message):
        call()
    assert fmt.si(5, digits=1) == "5" and fmt.nbytes(10**20) == "100 EB"  # big ints print
