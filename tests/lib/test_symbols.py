"""The book's notation: names, LaTeX letters, assumptions, lookup by name."""

import re

import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

from inference_arithmetic.core import symbols
from inference_arithmetic.core.symbols import NOTATION, B, D, Sym, b, by_name

ROWS = list(NOTATION.values())
# Quantities that are not counts: bytes per number (int4 is 0.5), rates and efficiencies.
FRACTIONAL = {
    "bytes_per_number",
    "kv_bytes_per_number",
    "expert_bytes_per_number",
    "vocab_bytes_per_number",
    "flop_rate",
    "bandwidth",
    "compute_efficiency",
    "bandwidth_efficiency",
    "link_bandwidth",
    "network_bandwidth",
    "attention_efficiency",
    "gpu_memory",
    "memory_utilization",
    "price_per_hour",
    "utilization",
    "draft_cost",
    "activation_bytes_per_number",
    "decode_attention_efficiency",
    "allreduce_bandwidth",
    "ring_bandwidth",
    "matmul_half_rows",
    "attention_half_len",
    "attention_half_head",
    "grouped_matmul",
    "expert_imbalance",
}
# Counts that may be zero: an MoE model with no dense layer, a model without shared experts.
MAY_BE_ZERO = {
    "n_shared_experts",
    "n_dense_layers",
    "n_window_layers",
    "decoding",
    "prefill_tokens",
}
# Quantities that may be zero (an ideal link, a draft never accepted) and so cannot be
# declared "not an integer".
ZERO_TIMES = {"link_latency", "acceptance_rate", "api_input_price", "api_output_price"}
# The kernel model's fixed costs and shares, each of which may be zero (the ideal roofline has
# none; a kernel that shares its KV reads has no re-reads for the L2 to serve).
ZERO_TIMES |= {
    "kernel_overhead",
    "step_overhead",
    "request_overhead",
    "allreduce_latency",
    "ring_latency",
    "decode_attention_latency",
    "kv_shared",
    "kv_reread_hits",
    "attention_fused",
    "host_op_cost",
    "eager_prefill",
    "eager_decode",
}
# A prefix cache may hold none of a prompt; an API may give cached tokens away.
ZERO_TIMES |= {"prefix_hit_rate", "api_cached_input_price"}
SIZE_ROWS = [row for row in ROWS if row.symbol.name not in FRACTIONAL | MAY_BE_ZERO | ZERO_TIMES]
ZERO_ROWS = [row for row in ROWS if row.symbol.name in MAY_BE_ZERO]
FRACTIONAL_ROWS = [row for row in ROWS if row.symbol.name in FRACTIONAL]


@pytest.mark.parametrize("symbol", [symbols.alpha, symbols.p_in, symbols.p_out])
def test_a_time_or_price_that_may_be_zero_is_nonnegative(symbol):
    # A message may cost no time; an API may give one kind of token away.
    assert symbol.is_nonnegative is True and symbol.is_positive is None
    assert symbol.is_integer is None


def test_notation_keys_are_the_symbol_names_and_unique():
    names = [row.symbol.name for row in ROWS]
    assert names == list(NOTATION)
    assert len(set(names)) == len(names)
    assert len({row.latex for row in ROWS}) == len(ROWS)
    assert len({row.symbol for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.symbol.name)
def test_latex_of_each_symbol_is_its_notation_letter(row):
    assert isinstance(row.symbol, Sym)
    assert sympy.latex(row.symbol) == row.latex
    assert row.meaning and row.unit


@pytest.mark.parametrize("row", SIZE_ROWS, ids=lambda row: row.symbol.name)
def test_sizes_are_positive_integers(row):
    assert row.symbol.is_positive is True
    assert row.symbol.is_integer is True
    assert sympy.Max(row.symbol, 0) == row.symbol  # SymPy uses the assumption to simplify


@pytest.mark.parametrize("row", ZERO_ROWS, ids=lambda row: row.symbol.name)
def test_counts_that_may_be_zero_are_nonnegative_integers(row):
    assert row.symbol.is_nonnegative is True
    assert row.symbol.is_positive is None
    assert row.symbol.is_integer is True


def test_bytes_per_number_is_positive_and_fractional():
    assert b.is_positive is True
    assert b.is_integer is False
    assert NOTATION["bytes_per_number"].symbol is b


@pytest.mark.parametrize("row", FRACTIONAL_ROWS, ids=lambda row: row.symbol.name)
def test_rates_are_positive_and_fractional(row):
    assert row.symbol.is_positive is True
    assert row.symbol.is_integer is False


def test_every_exported_symbol_is_in_the_notation():
    exported = [getattr(symbols, name) for name in symbols.__all__]
    syms = [s for s in exported if isinstance(s, Sym)]
    # S (the context length) is imported by name only: a star import keeps SymPy's S.
    assert {s.name for s in syms} | {"context_len"} == set(NOTATION)
    assert "S" not in symbols.__all__ and symbols.S.name == "context_len"
    namespace = {}
    exec("from sympy import *\nfrom inference_arithmetic.core.symbols import *", namespace)
    assert namespace["S"] is sympy.S
    for s in syms:
        assert NOTATION[s.name].symbol is s


@pytest.mark.parametrize("name", list(NOTATION))
def test_by_name_returns_the_symbol(name):
    assert by_name(name) is NOTATION[name].symbol
    assert by_name(name).name == name


def test_by_name_unknown_raises_key_error_listing_known_names():
    with pytest.raises(KeyError) as info:
        by_name("btach")
    message = str(info.value)
    assert "btach" in message
    for name in NOTATION:
        assert re.search(rf"\b{re.escape(name)}\b", message), name


def test_product_prints_with_the_short_letters():
    assert sympy.latex(B * D) == "B D"
    assert str(B * D) == "batch*d_model"  # the Python names, for keyword arguments


@given(st.lists(st.sampled_from(ROWS), min_size=2, max_size=4, unique_by=lambda r: r.latex))
def test_latex_of_any_product_uses_only_the_letters(rows):
    product = sympy.Mul(*(row.symbol for row in rows))
    assert sorted(sympy.latex(product).split(" ")) == sorted(row.latex for row in rows)
