"""What ``import inference_arithmetic`` leaves for first use: no data file is read, and no SymPy
sum is built (SymPy's first imports its tensor and combinatorics modules, a tenth of a second),
each checked in a fresh process."""

import functools
import json
import subprocess
import sys

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
    assert queueing.OWN_TPOT_SPREAD is queueing.OWN_TPOT_SPREAD
    assert queueing.NORMAL_POINTS is queueing.NORMAL_POINTS
    assert queueing.SPREAD_POINTS is queueing.SPREAD_POINTS
    assert lengths.LENGTHS is lengths.LENGTHS
    assert set(STEADY) == {"decoding", "gain", "variance", "tpot", "busy", "tpot_spread"}
