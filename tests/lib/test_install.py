"""The package as a user installs it: a wheel built from this checkout, installed with its
dependencies into a fresh environment, answers on the command line."""

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import inference_arithmetic as ia


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_environment_and_its_command_line_answers(tmp_path):
    root = Path(ia.__file__).resolve().parents[2]  # the checkout: lib/inference_arithmetic/..
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", tmp_path / "dist", root], check=True)
    (wheel,) = (tmp_path / "dist").glob("inference_arithmetic-*.whl")
    assert wheel.name.startswith(f"inference_arithmetic-{ia.__version__}-")
    # This pip installs into the fresh environment (--python), which needs no pip of its own
    # (ensurepip took a quarter of the test); no bytecode: compiling SymPy's thousand modules
    # took most of the install, and the command line compiles the few it imports as it runs.
    venv.create(tmp_path / "env", with_pip=False)
    bin = tmp_path / "env" / "bin"
    installed = [*pip, "--python", bin / "python", "install", "--no-compile", wheel]
    subprocess.run(installed, check=True, capture_output=True)
    version = subprocess.run([bin / "ia", "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == f"ia {ia.__version__}"
    done = subprocess.run([bin / "inference-arithmetic", "calculate", "llama-3.1-8b", "h100-sxm",
                           "--batch", "8", "--json"], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        json.loads(done.stdout)["tpot"] == ia.calculate("llama-3.1-8b", "h100-sxm", batch=8)["tpot"]
    )
    code = "import inference_arithmetic as ia; print(ia.__file__)"
    where = subprocess.run([bin / "python", "-c", code], capture_output=True, text=True, check=True)
    assert str(tmp_path / "env") in where.stdout  # the wheel's copy, not this checkout
