"""Compiled formulas kept in a process and on disk: the same numbers as compiling, a fresh
compile when the entry is absent, unreadable or the cache is off; keys derived from the builder
and every input it is given, so that changing any input changes the key."""

import copy
import dataclasses
import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic import cli, serving
from inference_arithmetic.core import cache
from inference_arithmetic.core.numeric import CompiledFormulas
from inference_arithmetic.formulas import kernels, mlp

MODELS = ["llama-3.1-8b", "mixtral-8x7b", "mistral-7b-v0.1", "deepseek-v3"]
BUILT = []  # what the builders below were called with: a second call reads what was kept


def report_of(name):
    BUILT.append(("report", name))
    return serving.report_formulas(ia.model(name))


def step_of(name):
    BUILT.append(("step", name))
    return kernels.step(ia.model(name))


def forward():
    return {"f": mlp.forward_flops()}


def params():
    return {"f": mlp.params()}


def three(first, second=2, *rest, third=3, **more):
    """A builder of every kind of argument, for the keys (never called)."""
    raise AssertionError("keys do not call the builder")


def other(first, second=2, *rest, third=3, **more):
    raise AssertionError("keys do not call the builder")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty cache, and no other read: each formula is built here."""
    monkeypatch.setenv("IA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("IA_CACHE_READ", raising=False)
    cache.forget()
    BUILT.clear()
    yield tmp_path
    cache.forget()


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.slow
def test_a_cached_report_gives_the_compiled_numbers(folder, name):
    fresh = CompiledFormulas(serving.report_formulas(ia.model(name)))
    stored = cache.formulas(report_of, name)
    assert cache.formulas(report_of, name) is stored  # kept in the process
    cache.forget()  # as a fresh process: read from the disk, not built
    again = cache.formulas(report_of, name)
    assert BUILT == [("report", name)]
    assert len(list(cache.folder().glob("*.json"))) == 1
    values = {**ia.Scenario(name, "h200", n_gpus=16).values(), "price_per_hour": 3.0}
    assert again.from_values(values) == stored.from_values(values) == fresh.from_values(values)
    assert again.args == fresh.args
    with pytest.raises(ia.ArgumentError, match="batch must be positive"):
        again.from_values({**values, "batch": 0})  # the same checks of its inputs


def test_an_unreadable_entry_is_compiled_again(folder):
    first = cache.formulas(forward)
    (entry,) = cache.folder().glob("*.json")
    entry.write_text("{not json")
    cache.forget()
    again = cache.formulas(forward)
    assert again(batch=2, d_1=3, d_2=4, d_3=5) == first(batch=2, d_1=3, d_2=4, d_3=5)
    assert json.loads(entry.read_text())["names"] == ["f"]  # and written again


def test_another_cache_is_read_where_this_one_lacks_an_entry_and_never_written(folder, monkeypatch):
    other, own = folder / "other", folder / "own"
    monkeypatch.setenv("IA_CACHE_DIR", str(other))
    built = cache.formulas(report_of, "gpt2")  # compiled into the other cache
    written = sorted(other.rglob("*"))
    cache.forget()  # as a fresh process
    monkeypatch.setenv("IA_CACHE_DIR", str(own))
    monkeypatch.setenv("IA_CACHE_READ", str(other))
    read = cache.formulas(report_of, "gpt2")
    assert BUILT == [("report", "gpt2")]  # read from the other, not built again
    values = {**ia.Scenario("gpt2", "h100-sxm", prompt_len=512).values(), "price_per_hour": 3.0}
    assert read.from_values(values) == built.from_values(values)
    assert sorted(other.rglob("*")) == written  # the other cache is never written
    assert not {p.name for p in written if p.is_file()} & {p.name for p in own.rglob("*")}
    cache.forget()
    monkeypatch.delenv("IA_CACHE_READ")
    cache.formulas(report_of, "gpt2")
    assert BUILT == [("report", "gpt2")] * 2  # without it, this cache lacks the entry


def test_the_cache_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("IA_CACHE_DIR", "off")
    assert cache.folder() is None
    assert cache.formulas(params)(d_1=2, d_2=3, d_3=2) == {"f": 12.0}


@pytest.mark.slow
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
    arch = ia.model("mixtral-8x7b")
    fresh = ia.numeric(kernels.step(arch))
    stored = cache.formula(step_of, "mixtral-8x7b")
    cache.forget()
    again = cache.formula(step_of, "mixtral-8x7b")
    assert BUILT == [("step", "mixtral-8x7b")]
    values = ia.Scenario(arch, "h200", n_gpus=2).values()
    point = {**values, "decoding": np.arange(0.0, 64.0), "context_len": 2100.0,
             "prefill_tokens": np.linspace(0.0, 8192.0, 64)}  # fmt: skip
    np.testing.assert_array_equal(again.from_values(point), fresh.from_values(point))
    np.testing.assert_array_equal(stored.from_values(point), fresh.from_values(point))
    assert again.args == fresh.args


@pytest.mark.slow
def test_the_steady_states_formulas_are_warmed_and_read_back(folder):
    code = (
        "import inference_arithmetic as ia; "
        "r = ia.steady_state('llama-3.1-8b', 'h100-sxm', requests_per_s=2.0, prompt_len=1024, "
        "output_len=128); "
        "print(repr(r['ttft']), repr(r['saturation_rate']))"
    )
    command = [sys.executable, "-c", code]
    env = {"IA_CACHE_DIR": str(folder), "PATH": ""}
    runs = [subprocess.run(command, capture_output=True, text=True, env=env) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    assert runs[0].stdout == runs[1].stdout  # compiled, then read: the same numbers


def test_the_fingerprint_follows_the_code_and_is_kept_under_the_files_signature(tmp_path):
    package = tmp_path / "package"
    (package / "data").mkdir(parents=True)
    module, table = package / "formulas.py", package / "data" / "sizes.json"
    module.write_text("x = 1\n")
    table.write_text('{"d": 1}')
    root = tmp_path / "cache"

    def fingerprint():
        cache.fingerprint.cache_clear()
        return cache.fingerprint(package, root)

    first = fingerprint()
    (kept,) = (root / "signatures").iterdir()
    assert kept.read_text() == first
    kept.write_text("0123456789abcdef")  # a process with the same files reads the kept hash
    assert fingerprint() == "0123456789abcdef"
    module.write_text("x = 22\n")  # another size and time: the files are hashed again
    assert fingerprint() not in (first, "0123456789abcdef")
    module.write_text("x = 1\n")
    assert fingerprint() == first  # the hash is of the contents
    module.write_text('"""A module."""\n\n# x is one\nx = (\n    1\n)\n"""What x is."""\n')
    assert fingerprint() == first  # docstrings, comments and the layout are not the code
    module.write_text("x = 1.0\n")
    assert fingerprint() != first
    module.write_text("x = 1\n")
    table.write_text('{"d": 2}')  # a data file counts whole
    assert fingerprint() != first
    table.write_text('{"d": 1}')
    assert fingerprint() == first
    cache.fingerprint.cache_clear()


@pytest.mark.slow
def test_the_librarys_fingerprint_is_public_and_names_the_folder(folder):
    assert cache.folder() == folder / cache.fingerprint()
    assert len(cache.fingerprint()) == 16


MODEL, GPU = ia.model("deepseek-v3"), ia.gpu("h100-sxm")
ARGUMENTS = [None, True, 0, 1, 1.0, -0.0, "bf16", (1, 2), [1, 2], {"a": 1, "b": (2,)}, {3, 1}]
ARGUMENTS += [np.float64(1.0), np.int64(1), sympy.Symbol("x", positive=True), kernels.step]
ARGUMENTS += [MODEL, GPU, ia.Speculative("mtp"), ia.model("llama-3.1-8b"), ia.gpu("h200")]


def test_equal_inputs_give_equal_keys_and_defaults_count_as_given():
    assert cache.key(three, MODEL) == cache.key(three, MODEL, 2, third=3)
    assert cache.key(three, MODEL, 5) == cache.key(three, first=MODEL, second=5)
    assert cache.key(three, {"a": 1, "b": 2}) == cache.key(three, {"b": 2, "a": 1})
    assert cache.key(three, 1, more=1, most=2) == cache.key(three, 1, most=2, more=1)


def test_changing_any_input_changes_the_key():
    keys = [cache.key(three, value) for value in ARGUMENTS]
    assert len(set(keys)) == len(keys)  # 0, False, 0.0 and -0.0, 1 and 1.0, (1, 2) and [1, 2]
    base = cache.key(three, 1, 2, 3, third=3, more=4)
    changed = [
        cache.key(three, 9, 2, 3, third=3, more=4),  # each positional argument
        cache.key(three, 1, 9, 3, third=3, more=4),
        cache.key(three, 1, 2, 9, third=3, more=4),
        cache.key(three, 1, 2, 3, 4, third=3, more=4),
        cache.key(three, 1, 2, 3, third=9, more=4),  # each keyword
        cache.key(three, 1, 2, 3, third=3, more=9),
        cache.key(three, 1, 2, 3, third=3, most=4),
        cache.key(three, 1, 2, 3, third=3),
        cache.key(other, 1, 2, 3, third=3, more=4),  # the builder itself
    ]
    assert base not in changed and len(set(changed)) == len(changed)


@pytest.mark.parametrize("thing", [MODEL, GPU], ids=["ModelConfig", "GPU"])
def test_changing_any_field_changes_the_key(thing):
    base = cache.key(three, thing)
    # Only a field no formula reads is left out, marked so where it is declared; there is one.
    unkeyed = {f.name for f in dataclasses.fields(thing) if not f.metadata.get("key", True)}
    assert unkeyed == ({"mtp_modules"} if thing is MODEL else set())
    for field in dataclasses.fields(thing):
        if field.name in unkeyed:
            continue  # test_a_field_no_formula_reads_leaves_the_key_as_it_was
        value = getattr(thing, field.name)
        if isinstance(value, bool):
            other_value = not value
        elif isinstance(value, int | float):
            other_value = value + 1
        elif isinstance(value, str):
            other_value = value + "x"
        elif value is None:
            other_value = 1
        elif isinstance(value, tuple):
            other_value = (*value, ("x", "y"))
        else:  # a mapping
            other_value = {**value, "x": 1.0}
        changed = copy.copy(thing)
        object.__setattr__(changed, field.name, other_value)  # the key reads; it does not check
        assert cache.key(three, changed) != base, field.name


@pytest.mark.slow
def test_keys_are_the_same_in_another_process():
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "import test_cache as t; from inference_arithmetic.core import cache; "
        "from inference_arithmetic.formulas import kernels; "
        "print([cache.key(kernels.step, v, draft=v) for v in t.ARGUMENTS])"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str([cache.key(kernels.step, v, draft=v) for v in ARGUMENTS])


# A process that has not imported SymPy (a warm command line's): the folder it reads and the
# key of a model's report, and whether SymPy came in while it derived them.
_PLAIN_KEYS = """
import json, sys
import inference_arithmetic as ia
from inference_arithmetic.core import cache
from inference_arithmetic.serving.report import report_formulas
key = cache.key(report_formulas, ia.model("llama-3.1-8b"), parallel="pipeline")
print(json.dumps([str(cache.folder()), key, "sympy" in sys.modules]))
"""


@pytest.mark.slow
def test_keys_and_the_folder_are_derived_without_sympy_as_with_it():
    # This process has imported SymPy (the formulas built in it); the other reads what it wrote.
    assert "sympy" in sys.modules
    run = subprocess.run([sys.executable, "-c", _PLAIN_KEYS], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    key = cache.key(serving.report_formulas, ia.model("llama-3.1-8b"), parallel="pipeline")
    assert json.loads(run.stdout) == [str(cache.folder()), key, False]


# Every registry model's first calculation and parameter count, in a fresh process reading the
# disk cache: the answers as the command line's --json prints them, and whether SymPy came in.
_READ_BACK = """
import json, sys
import inference_arithmetic as ia
from inference_arithmetic import cli
answers = {
    name: [ia.param_count(name), cli.render(ia.calculate(name, "h200", **asked), None, "json")]
    for name, asked in json.loads(sys.argv[1]).items()
}
print(json.dumps([answers, "sympy" in sys.modules]))
"""


@pytest.mark.slow  # compiles every registry model's report and checks: half a minute
def test_the_disk_cache_answers_as_sympy_does_for_every_registry_model(folder):
    # Here each formula is built in SymPy and compiled (the folder is empty); a fresh process
    # reads the compiled code back by its key, with numpy alone: the same numbers, to the digit.
    asked, answers = {}, {}
    for name in ia.model_names():
        workload = {"n_gpus": 1, "prompt_len": 512, "output_len": 128}
        while True:  # the fewest H200s that hold it
            try:
                report = ia.calculate(name, "h200", **workload)
                break
            except ia.ArgumentError:
                assert workload["n_gpus"] < 64, name
                workload["n_gpus"] *= 2
        asked[name] = workload
        answers[name] = [ia.param_count(name), cli.render(report, None, "json")]
    run = subprocess.run(
        [sys.executable, "-c", _READ_BACK, json.dumps(asked)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [answers, False]


def test_a_builder_must_be_a_named_function_at_the_top_of_a_module():
    def nested():
        return {"f": mlp.params()}

    method = ia.Scenario("gpt2", "h100-sxm", prompt_len=64).values
    for build in (lambda: {"f": mlp.params()}, nested, method):
        with pytest.raises(TypeError, match="a function defined at the top of a module"):
            cache.formulas(build)
    with pytest.raises(TypeError, match="a function defined at the top of a module"):
        cache.key(three, lambda: 1)  # as an argument too


@pytest.mark.parametrize("value", [object(), np.zeros(3), 1j, b"bytes"])
def test_an_argument_of_an_unknown_type_is_refused_by_its_type(value):
    with pytest.raises(TypeError, match=f"an argument of type [a-z.]*{type(value).__name__}"):
        cache.key(three, value)
    with pytest.raises(TypeError, match=type(value).__name__):
        cache.key(three, 1, more=[value])  # however deep it lies


def test_each_serving_module_warms_its_own_and_serving_warms_them_all(monkeypatch):
    # What make runs at install: every module that compiles formulas warms its own.
    names = ("bands", "scenario", "report", "queueing", "engine", "continuous", "planning")
    # Imported by name: the serving package imports only what its report needs.
    modules = [importlib.import_module(f"inference_arithmetic.serving.{name}") for name in names]
    warmed = []
    for module in modules:
        monkeypatch.setattr(module, "warm", lambda name=module.__name__: warmed.append(name))
    assert serving.warm() == len(ia.model_names())
    assert sorted(warmed) == sorted(module.__name__ for module in modules)


def test_a_field_no_formula_reads_leaves_the_key_as_it_was():
    # ModelConfig.mtp_modules and Speculative.hypothetical are marked {"key": False}: a model
    # with an MTP module keys as the same model without, so no compiled formula is made again.
    deepseek = ia.model("deepseek-v3")
    assert deepseek.mtp_modules == 1
    without = dataclasses.replace(deepseek, mtp_modules=0)
    assert cache.canonical(deepseek) == cache.canonical(without)
    assert "mtp_modules" not in cache.canonical(deepseek)
    what_if = ia.Speculative("mtp", hypothetical=True)
    assert cache.canonical(what_if) == cache.canonical(ia.Speculative("mtp"))
