"""The package as a user installs it: a wheel built from this checkout, installed with its
dependencies into a fresh environment, answers on the command line."""

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import inference_arithmetic as ia


def _installers(root: Path) -> tuple[list, list, dict]:
    """How to build the wheel and install it: with uv where the environment has it (``make``
    installs it beside this Python), as the Makefile installs the requirements, else with pip.
    uv is handed pip's package indexes (tools/uv_env.py); the whole test takes a third of pip's
    time. Either way no bytecode: compiling SymPy's thousand modules would take most of the
    install, and the command line compiles the few it imports as it runs. The commands and their
    environment."""
    uv = Path(sys.executable).with_name("uv")
    if uv.is_file():
        sys.path.insert(0, str(root))
        try:
            from tools.uv_env import uv_settings
        finally:
            sys.path.remove(str(root))
        build = [uv, "build", "--quiet", "--wheel", "--out-dir"]
        install = [uv, "pip", "install", "--quiet", "--index-strategy", "unsafe-best-match"]
        return build, install, {**os.environ, **uv_settings()}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    return [*pip, "wheel", "--no-deps", "-w"], [*pip, "install", "--no-compile"], dict(os.environ)


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_environment_and_its_command_line_answers(tmp_path):
    root = Path(ia.__file__).resolve().parents[2]  # the checkout: lib/inference_arithmetic/..
    build, install, env = _installers(root)
    subprocess.run([*build, tmp_path / "dist", root], check=True, env=env)
    (wheel,) = (tmp_path / "dist").glob("inference_arithmetic-*.whl")
    assert wheel.name.startswith(f"inference_arithmetic-{ia.__version__}-")
    # The fresh environment needs no pip of its own (ensurepip took a quarter of the test).
    venv.create(tmp_path / "env", with_pip=False)
    bin = tmp_path / "env" / "bin"
    installed = [*install, "--python", bin / "python", wheel]
    subprocess.run(installed, check=True, capture_output=True, env=env)
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
