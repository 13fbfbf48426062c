"""One printer per target (core/printing.py): the only place that prints a formula for a
machine, and each printer's code computes the library's numbers."""

import ast
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic.core import printing
from inference_arithmetic.core.numeric import numeric
from inference_arithmetic.core.symbols import B, D, L, L_w, O, S, T, W, b
from inference_arithmetic.formulas import kernels, latency, mlp

PACKAGE = Path(ia.__file__).parent

# SymPy's printers and code generators: calling one anywhere but core/printing.py would be a
# second printer for a target.
PRINTERS = {"jscode", "lambdify", "pycode", "ccode", "cxxcode", "octave_code", "rust_code"}
PRINTERS |= {"JavascriptCodePrinter", "NumPyPrinter", "PythonCodePrinter", "MpmathPrinter"}
PRINTERS |= {"cse", "numbered_symbols"}


def printer_calls(source: str) -> int:
    """How many calls of one of SymPy's printers ``source`` makes (``PRINTERS``)."""
    calls = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else None
            name = function.id if isinstance(function, ast.Name) else name
            calls += name in PRINTERS
    return calls


def test_printing_is_the_only_module_that_prints_a_formula():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        calls = printer_calls(path.read_text())
        if calls and where != "core/printing.py":
            found[where] = calls
    assert found == {}


@pytest.mark.parametrize(
    ("source", "calls"),
    [
        ("import sympy\nsympy.jscode(x)", 1),
        ("from sympy import lambdify\nf = lambdify(args, expr, 'math')", 1),
        ("replacements, reduced = sympy.cse(exprs)", 1),
        ("printing.javascript(expr); printing.scalar(args, expr)", 0),
    ],
)
def test_a_printer_called_elsewhere_is_found(source, calls):
    assert printer_calls(source) == calls


CONTEXT = (L - L_w) * S + L_w * sympy.Min(S, W - 1)  # the KV cache's, with sliding windows
FORMULAS = {
    "forward": mlp.forward_flops(),
    "memory": b * sympy.Max(B * D, T) + b * B * CONTEXT,
    "bound": sympy.Piecewise((1, B * D >= b * T), (0, True)),
    "mean": latency.mean_context(),
    "rounds": sympy.floor(D / B) + sympy.Max(O - 2, 0) / 2,
}
VALUES = {"batch": 8, "d_model": 4096, "seq_len": 2048, "context_len": 3000, "n_layers": 32,
          "bytes_per_number": 2, "n_window_layers": 16, "window": 1024, "output_len": 300,
          "d_1": 4096, "d_2": 14336, "d_3": 4096}  # fmt: skip


def run_javascript(functions: dict, values: dict) -> dict:
    """Each printed function (``printing.javascript``'s) called in node at ``values``."""
    program = (
        f"const printed = {json.dumps(functions)}, values = {json.dumps(values)};\n"
        "const out = {};\n"
        "for (const [name, f] of Object.entries(printed)) {\n"
        "  out[name] = new Function(f.args.join(','), f.body)(...f.args.map(a => values[a]));\n"
        "}\n"
        "console.log(JSON.stringify(out));\n"
    )
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (the browser tests run the same code in Chromium)")
    done = subprocess.run([node, "-e", program], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_javascript_printer_computes_the_librarys_numbers():
    printed = {name: printing.javascript(expr) for name, expr in FORMULAS.items()}
    step = kernels.step(ia.model("llama-3.1-8b"))  # tens of kernels, each a roofline
    sizes = {**ia.model("llama-3.1-8b").sizes(), **ia.gpu("h100-sxm").figures("bf16")}
    scenario = ia.Scenario("llama-3.1-8b", "h100-sxm").values()
    at = {**scenario, **sizes, **VALUES, "decoding": 12, "prefill_tokens": 1500}
    printed["step"] = printing.javascript(step)
    # Several formulas in one function, their common parts once: an object by name.
    printed["both"] = printing.javascript({"step": step, "memory": FORMULAS["memory"]})
    assert "var _c0=" in printed["step"]["body"] and '"memory":(' in printed["both"]["body"]
    shown = run_javascript(printed, at)
    for name, expr in [*FORMULAS.items(), ("step", step)]:
        expected = numeric(expr).from_values(at)
        assert printed[name]["args"] == list(numeric(expr).args)
        assert math.isclose(shown[name], expected, rel_tol=1e-12), name
    assert shown["both"]["step"] == shown["step"] and shown["both"]["memory"] == shown["memory"]


def test_the_javascript_printer_prints_each_formula_once():
    first = printing.javascript(FORMULAS["memory"])
    first["body"] = "changed by its caller"
    again = printing.javascript(FORMULAS["memory"])
    assert again["body"] != first["body"] and again == printing.javascript(FORMULAS["memory"])


def test_the_scalar_printer_is_plain_python_with_the_librarys_numbers():
    step = kernels.step(ia.model("llama-3.1-8b"))
    values = ia.Scenario("llama-3.1-8b", "h100-sxm").values()
    known = {x: sympy.sympify(values[x.name]) for x in step.free_symbols if x.name in values}
    assert not {"decoding", "context_len", "prefill_tokens"} & set(values)
    by_name = {s.name: s for s in step.free_symbols}
    free = [by_name[name] for name in ("decoding", "context_len", "prefill_tokens")]
    function = printing.scalar(free, step.xreplace(known))
    for decoding, prefill_tokens in ((12, 0), (0, 4096), (64, 512)):
        at = {**values, "decoding": decoding, "context_len": 3000, "prefill_tokens": prefill_tokens}
        expected = numeric(step).from_values(at)
        result = function(float(decoding), 3000.0, float(prefill_tokens))
        assert type(result) is float and math.isclose(result, expected, rel_tol=1e-12)


def test_the_numpy_printer_defines_one_function_for_arrays_and_for_numbers():
    memory = FORMULAS["memory"].subs({L: 32, L_w: 0, S: T, b: 2})
    source = printing.numpy_code((B, D, T), memory)
    on_arrays = printing.define(source)[printing.GENERATED]
    on_numbers = printing.define(source, numbers=True)[printing.GENERATED]
    import numpy as np

    batch = np.array([1.0, 8.0, 64.0])
    arrays = on_arrays(batch, 4096.0, 2048.0)
    numbers = [on_numbers(x, 4096.0, 2048.0) for x in batch]
    np.testing.assert_array_equal(arrays, numbers)


def test_a_formula_is_printed_for_numpy_once_per_process():
    # The Llamas' reports are the same expressions of their sizes: the second is not printed.
    from inference_arithmetic import serving

    small, large = (serving.report_formulas(ia.model(n)) for n in ("llama-3.1-8b", "llama-3.1-70b"))
    assert small == large
    args = sorted(small["memory"].free_symbols, key=lambda s: s.name)
    first = printing.numpy_code(tuple(args), small["memory"])
    printed = printing._numpy_code.cache_info().hits
    assert printing.numpy_code(args, large["memory"]) == first  # a list of them, as well
    assert printing._numpy_code.cache_info().hits == printed + 1
