"""SymPy's evaluation of the library's formulas (core.evaluation): each Max, Min and inequality
evaluated once while a formula is built, symbols put in at once; the same expressions as
SymPy's own, SymPy left as it was outside."""

import pytest
import sympy
from sympy.functions.elementary.miscellaneous import MinMaxBase

import inference_arithmetic as ia
from inference_arithmetic.core import cache, evaluation
from inference_arithmetic.core.symbols import B, B_d, P_t, S, T
from inference_arithmetic.formulas import kernels

x, y = sympy.symbols("x y", positive=True)


def test_a_max_is_built_once_while_open_and_sympys_own_after():
    own = MinMaxBase.__new__
    with evaluation.once():
        first, again = sympy.Max(x, 2 * y), sympy.Max(x, 2 * y)
        assert first is again and sympy.Min(x, x + 1) == x  # evaluated, as SymPy does
        assert sympy.Ge(x, 2 * y) is sympy.Ge(x, 2 * y) and sympy.Ge(x + 1, x) is sympy.true
        held = sympy.Max(x, x + 1, evaluate=False)
        assert held.args == (x, x + 1)  # unevaluated where asked
        with evaluation.once():  # nested: the outer block still keeps them when this one closes
            pass
        assert sympy.Max(x, 2 * y) is first
    assert MinMaxBase.__new__ is own
    assert first == sympy.Max(x, 2 * y) and sympy.Max(x, 2 * y) is not first
    assert sympy.Ge(x, 2 * y) is not sympy.Ge(x, 2 * y)


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
        with evaluation.once():
            assert _built(arch) == plain, name


@pytest.mark.slow
def test_symbols_put_in_at_once_are_subs_of_the_steps():
    # The substitutions the library makes in a step: a prefill (no decodes), a decode step
    # (no prompt tokens), at a context, in a dense model's step and an MoE model's with MLA.
    for name in ("llama-3.1-8b", "deepseek-v3"):
        step = kernels.step_time(ia.model(name))
        for values in ({B_d: 0, P_t: B * T}, {P_t: 0, B_d: B}, {S: T + 7}):
            assert evaluation.put(step, values) == step.subs(values), (name, values)
    assert evaluation.put(x + y, {x: 0}) == y and evaluation.put(x, {x: 2}) == sympy.Integer(2)


def test_a_formula_missing_from_the_cache_is_built_once(monkeypatch):
    monkeypatch.setenv("IA_CACHE_DIR", "off")
    opened = []
    real = evaluation.once

    def watched():
        opened.append(True)
        return real()

    monkeypatch.setattr(evaluation, "once", watched)
    cache.formula(kernels.prefill_time, ia.model("gpt2"))
    assert opened  # the build ran inside a block
