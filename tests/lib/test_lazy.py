"""What ``import inference_arithmetic`` leaves for first use: no data file is read, and no SymPy
sum is built (SymPy's first imports its tensor and combinatorics modules, a tenth of a second),
each checked in a fresh process; and a warm command line (its formulas compiled on disk) never
imports SymPy."""

import functools
import json
import subprocess
import sys

import pytest

# Run in a fresh process: the files opened while the library imports, and the modules it leaves
# imported.
_IMPORT = """
import json, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
import inference_arithmetic
print(json.dumps({"opened": opened, "modules": sorted(sys.modules)}))
"""


@functools.cache  # one fresh process for both tests
def _fresh_import() -> dict:
    done = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_library_reads_no_data_file_at_import():
    import inference_arithmetic

    package = inference_arithmetic.__file__.rsplit("/", 1)[0]
    opened = _fresh_import()["opened"]
    read = [p for p in opened if p.startswith(package) and not p.endswith((".py", ".pyc"))]
    assert read == [], "read at import; read them on first use instead"


def test_the_library_builds_no_sympy_sum_and_no_unused_module_at_import():
    modules = set(_fresh_import()["modules"])
    # SymPy's Add imports sympy.tensor.tensor, which imports sympy.combinatorics; numpy's
    # polynomials and statistics serve only queueing's constants, built on first use.
    for name in ("sympy.tensor.tensor", "sympy.combinatorics", "numpy.polynomial", "statistics"):
        assert name not in modules, f"{name} is imported by import inference_arithmetic"


def test_what_is_built_on_first_use_is_built_once_and_stays_public():
    from inference_arithmetic.serving import lengths, queueing
    from inference_arithmetic.serving.queueing import STEADY

    assert queueing.STEADY is STEADY is queueing.STEADY
    assert queueing.OWN_TPOT is queueing.OWN_TPOT
    assert queueing.TPOT_QUANTILE is queueing.TPOT_QUANTILE
    assert queueing.NORMAL_POINTS is queueing.NORMAL_POINTS
    assert queueing.SPREAD_POINTS is queueing.SPREAD_POINTS
    assert lengths.LENGTHS is lengths.LENGTHS
    assert set(STEADY) == {
        *("decoding", "gain", "variance", "tpot", "busy", "tpot_spread", "tpot_skewness")
    }


def test_the_package_imports_no_sympy_until_a_formula_is_built():
    # Every name of ``ia`` loads on first use (PEP 562): the command line's listings answer
    # without SymPy and NumPy, half a second of a fresh process (issue 36). The API's modules
    # load without SymPy too: a formula compiled on disk runs on numpy alone, and SymPy comes
    # in where a formula is built.
    modules = set(_fresh_import()["modules"])
    assert "sympy" not in modules and "numpy" not in modules
    done = subprocess.run([sys.executable, "-c", _USED], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == [False, True, True, True]


_USED = """
import json, sys
import inference_arithmetic as ia
first = ia.calculate  # the API
loaded = "sympy" in sys.modules
ia.formulas.mlp.params()  # a formula
print(json.dumps([loaded, "sympy" in sys.modules, first is ia.calculate, ia.validation.published
                  is sys.modules["inference_arithmetic.validation.published"]]))
"""


def test_every_public_name_is_there_and_dir_lists_them():
    import inference_arithmetic as ia

    for name in ia.__all__:
        assert getattr(ia, name) is not None, name
    assert set(ia.__all__) <= set(dir(ia))
    assert {"core", "validation", "__version__"} <= set(dir(ia))
    assert ia.ArgumentError is ia.core.numeric.ArgumentError is ia.checks.ArgumentError
    assert ia.checks.expression is ia.core.numeric.expression
    # A package that another import loaded in part has its other modules all the same.
    reaches = (
        "ia.gpu_names(); ia.core.numeric.numeric",
        "ia.measurements.predict; ia.validation.published.validation_set",
    )
    for reach in reaches:
        code = f"import inference_arithmetic as ia; {reach}"
        subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    with pytest.raises(AttributeError, match="no attribute 'calculat'"):
        ia.calculat  # noqa: B018


# A listing of the command line, in a fresh process: the modules it imported.
_COMMAND = """
import json, sys
from inference_arithmetic.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("argv", [["--help"], ["gpus"], ["gpus", "--json"], ["--version"]])
def test_the_command_lines_listings_import_no_sympy(argv):
    done = subprocess.run(
        [sys.executable, "-c", _COMMAND, *argv], capture_output=True, text=True, check=True
    )
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert "sympy" not in modules, argv
    assert "inference_arithmetic.cli" in modules


# A command line's answer, in a fresh process: what it printed, then the modules it imported.
_ANSWER = """
import json, sys
from inference_arithmetic.cli import main
main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.slow  # compiles a model's report, counts every registry model's parameters
@pytest.mark.parametrize("argv", [["models"], ["calculate", "llama-3.1-8b", "h100-sxm"]])
def test_a_warm_command_line_answers_without_sympy(argv, tmp_path, monkeypatch, capsys):
    # The first answer in under half a second (issue 36), of which SymPy's import alone would
    # take more than half: what this process compiles into the disk cache, a fresh one reads.
    from inference_arithmetic.cli import main
    from inference_arithmetic.core import cache

    monkeypatch.setenv("IA_CACHE_DIR", str(tmp_path))  # the fresh process's too
    monkeypatch.delenv("IA_CACHE_READ", raising=False)  # compiled here, read back here
    cache.forget()
    assert main(argv) == 0
    compiled = capsys.readouterr().out
    done = subprocess.run(
        [sys.executable, "-c", _ANSWER, *argv], capture_output=True, text=True, check=True
    )
    *printed, modules = done.stdout.splitlines()
    assert "sympy" not in json.loads(modules), argv
    assert "\n".join(printed) + "\n" == compiled  # the same answer, to the byte
    cache.forget()
