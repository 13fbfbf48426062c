"""Max and Min evaluated once while the library builds formulas (core.minmax): the same
expressions as SymPy's own, SymPy left as it was outside."""

import pytest
import sympy
from sympy.functions.elementary.miscellaneous import MinMaxBase

import inference_arithmetic as ia
from inference_arithmetic.core import cache, minmax
from inference_arithmetic.formulas import kernels

x, y = sympy.symbols("x y", positive=True)


def test_a_max_is_built_once_while_open_and_sympys_own_after():
    own = MinMaxBase.__new__
    with minmax.once():
        first, again = sympy.Max(x, 2 * y), sympy.Max(x, 2 * y)
        assert first is again and sympy.Min(x, x + 1) == x  # evaluated, as SymPy does
        held = sympy.Max(x, x + 1, evaluate=False)
        assert held.args == (x, x + 1)  # unevaluated where asked
        with minmax.once():  # nested: the outer block still keeps them when this one closes
            pass
        assert sympy.Max(x, 2 * y) is first
    assert MinMaxBase.__new__ is own
    assert first == sympy.Max(x, 2 * y) and sympy.Max(x, 2 * y) is not first


def _built(arch):
    for built in (kernels.step_kernels, kernels.step_time, kernels.draft_time):
        built.cache_clear()  # built again, not read from the library's own caches
    return kernels.prefill_time.__wrapped__(arch), kernels.decode_step_time.__wrapped__(arch)


@pytest.mark.slow
def test_the_formulas_built_once_are_sympys():
    # A dense model, one with MLA and many experts, and an MoE model of one family.
    for name in ("llama-3.1-8b", "deepseek-v3", "qwen3-30b-a3b"):
        arch = ia.model(name)
        plain = _built(arch)
        with minmax.once():
            assert _built(arch) == plain, name


def test_a_formula_missing_from_the_cache_is_built_once(monkeypatch):
    monkeypatch.setenv("IA_CACHE_DIR", "off")
    opened = []
    real = minmax.once

    def watched():
        opened.append(True)
        return real()

    monkeypatch.setattr(minmax, "once", watched)
    cache.formula(kernels.prefill_time, ia.model("gpt2"))
    assert opened  # the build ran inside a block
