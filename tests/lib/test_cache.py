"""Compiled formulas on disk: the same numbers as compiling, a fresh compile when the entry is
absent, unreadable or the cache is off."""

import json
import subprocess
import sys

import numpy as np
import pytest

import inference_arithmetic as ia
from inference_arithmetic import serving
from inference_arithmetic.core.numeric import CompiledFormulas
from inference_arithmetic.serving import cache

MODELS = ["llama-3.1-8b", "mixtral-8x7b", "mistral-7b-v0.1", "deepseek-v3"]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("IA_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("name", MODELS)
def test_a_cached_report_gives_the_compiled_numbers(folder, name):
    arch = ia.model(name)
    fresh = CompiledFormulas(serving.report_formulas(arch))
    stored = cache.formulas(f"test {name}", lambda: serving.report_formulas(arch))
    again = cache.formulas(f"test {name}", lambda: pytest.fail("should come from the cache"))
    assert len(list(cache.folder().glob("*.json"))) == 1
    values = {**ia.Scenario(arch, "h200", n_gpus=16).values(), "price_per_hour": 3.0}
    assert again.from_values(values) == stored.from_values(values) == fresh.from_values(values)
    assert again.args == fresh.args
    with pytest.raises(ia.ArgumentError, match="batch must be positive"):
        again.from_values({**values, "batch": 0})  # the same checks of its inputs


def test_an_unreadable_entry_is_compiled_again(folder):
    from inference_arithmetic.formulas import mlp

    first = cache.formulas("mlp", lambda: {"f": mlp.forward_flops()})
    (entry,) = cache.folder().glob("*.json")
    entry.write_text("{not json")
    again = cache.formulas("mlp", lambda: {"f": mlp.forward_flops()})
    assert again(batch=2, d_1=3, d_2=4, d_3=5) == first(batch=2, d_1=3, d_2=4, d_3=5)
    assert json.loads(entry.read_text())["names"] == ["f"]  # and written again


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("IA_CACHE_DIR", "off")
    assert cache.folder() is None
    from inference_arithmetic.formulas import mlp

    assert cache.formulas("x", lambda: {"f": mlp.params()})(d_1=2, d_2=3, d_3=2) == {"f": 12.0}


def test_a_fresh_process_reads_what_another_wrote(folder):
    code = (
        "import time, inference_arithmetic as ia; t = time.perf_counter(); "
        "r = ia.calculate('llama-3.1-70b', 'h100-sxm', n_gpus=4); "
        "print(r['tpot'], time.perf_counter() - t)"
    )
    env = {"IA_CACHE_DIR": str(folder), "PATH": ""}
    command = [sys.executable, "-c", code]
    runs = [subprocess.run(command, capture_output=True, text=True, env=env) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    (cold_tpot, _), (warm_tpot, _) = (run.stdout.split() for run in runs)
    assert cold_tpot == warm_tpot  # the same number, to the last digit
    assert len(list(cache.folder().glob("*.json"))) == 3  # the checks, the report, the bands


def test_a_cached_step_gives_the_compiled_numbers_on_arrays(folder):
    from inference_arithmetic.formulas import kernels

    arch = ia.model("mixtral-8x7b")
    fresh = ia.numeric(kernels.step(arch))
    stored = cache.formula("test step", lambda: kernels.step(arch))
    again = cache.formula("test step", lambda: pytest.fail("should come from the cache"))
    values = ia.Scenario(arch, "h200", n_gpus=2).values()
    point = {**values, "decoding": np.arange(0.0, 64.0), "context_len": 2100.0,
             "prefill_tokens": np.linspace(0.0, 8192.0, 64)}  # fmt: skip
    np.testing.assert_array_equal(again.from_values(point), fresh.from_values(point))
    np.testing.assert_array_equal(stored.from_values(point), fresh.from_values(point))
    assert again.args == fresh.args


def test_the_steady_states_formulas_are_warmed_and_read_back(folder):
    code = (
        "import inference_arithmetic as ia; "
        "r = ia.steady_state('llama-3.1-8b', 'h100-sxm', 2.0, 1024, 128); "
        "print(repr(r['ttft']), repr(r['saturation_rate']))"
    )
    command = [sys.executable, "-c", code]
    env = {"IA_CACHE_DIR": str(folder), "PATH": ""}
    runs = [subprocess.run(command, capture_output=True, text=True, env=env) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    assert runs[0].stdout == runs[1].stdout  # compiled, then read: the same numbers


def test_the_fingerprint_follows_the_files_and_is_kept_under_their_signature(tmp_path, monkeypatch):
    package = tmp_path / "package"
    (package / "serving").mkdir(parents=True)
    module = package / "formulas.py"
    module.write_text("x = 1\n")
    monkeypatch.setattr(cache, "__file__", str(package / "serving" / "cache.py"))
    root = tmp_path / "cache"

    def fingerprint():
        cache._fingerprint.cache_clear()
        return cache._fingerprint(root)

    first = fingerprint()
    (kept,) = (root / "signatures").iterdir()
    assert kept.read_text() == first
    kept.write_text("0123456789abcdef")  # a process with the same files reads the kept hash
    assert fingerprint() == "0123456789abcdef"
    module.write_text("x = 22\n")  # another size and time: the files are hashed again
    assert fingerprint() not in (first, "0123456789abcdef")
    module.write_text("x = 1\n")
    assert fingerprint() == first  # the hash is of the contents
    cache._fingerprint.cache_clear()
