"""Compiled formulas on disk: the same numbers as compiling, a fresh compile when the entry is
absent, unreadable or the cache is off."""

import json
import subprocess
import sys

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
    assert len(list(cache.folder().glob("*.json"))) == 2  # the checks and the report
