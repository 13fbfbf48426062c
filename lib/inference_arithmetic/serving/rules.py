"""A scenario's rules, as data: each a SymPy condition that must hold and the message that says
why when it does not (``Check``), in the order ``CHECKS`` lists them. ``Scenario`` checks them
(``scenario.rules_of`` compiles their conditions together); the calculator's page prints them to
JavaScript and fills the same messages; chapter 16 lists them.

Each condition and each number a message shows is built by a function of the model and the
parallelism, which imports the formulas (and SymPy) where it is called: a scenario whose rules'
compiled conditions the disk cache holds (``core.cache``) is checked without either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from inference_arithmetic.formulas.layouts import EXPERT_PARALLEL

__all__ = ["Check", "CHECKS"]


@dataclass(frozen=True, eq=False)
class Check:
    """One rule of a scenario: ``holds`` (a SymPy condition on the formulas' symbols) must be
    true, else ``message`` is raised, filled with the scenario's settings and ``fields`` (name
    -> (expression, ``format.show`` kind)); each is built by a function of the model and the
    parallelism. ``applies(arch, parallel)`` says where it is checked at all."""

    name: str
    holds: Callable
    message: str
    fields: Mapping[str, tuple[Callable, str]] = dataclasses.field(default_factory=dict)
    applies: Callable = lambda arch, parallel: True


def _symbol(name: str):
    """The formulas' symbol of ``name`` (``core.symbols``)."""
    from inference_arithmetic.core import symbols

    return getattr(symbols, name)


def _latency():
    """``formulas.latency``."""
    from inference_arithmetic.formulas import latency

    return latency


def _request(expr):
    """``expr`` with the context of a request's whole prompt and output, S = T + O."""
    return expr.subs(_symbol("S"), _tokens())


def _tokens():
    """A request's whole prompt and output, T + O."""
    return _symbol("T") + _symbol("O")


def _fits(arch, parallel, draft=None):
    latency = _latency()
    return _request(latency.memory_per_gpu(arch, parallel, draft)) <= latency.memory_budget()


def _weights(arch, parallel, draft=None):
    """Bytes of weights on each GPU, a draft model's with the target's."""
    latency = _latency()
    drafted = latency.draft_bytes_per_gpu(draft).subs(_symbol("B"), 0)
    return latency.weight_bytes_per_gpu(arch, parallel) + drafted


def _cache(arch, parallel, draft=None):
    """Bytes of KV cache on each GPU of a request's whole tokens, a draft model's with the
    target's."""
    latency = _latency()
    drafted = latency.draft_bytes_per_gpu(draft)
    batch = _symbol("B")
    return _request(latency.cache_bytes_per_gpu(arch, parallel) + drafted - drafted.subs(batch, 0))


def _heads_split(arch, parallel, draft=None):
    """n divides the heads, and divides (or is a multiple of) the KV heads."""
    import sympy

    heads, kv_heads, n = _symbol("H"), _symbol("H_kv"), _symbol("n_gpus")
    return sympy.And(
        sympy.Eq(sympy.Mod(heads, n), 0),
        sympy.Or(sympy.Eq(sympy.Mod(kv_heads, n), 0), sympy.Eq(sympy.Mod(n, kv_heads), 0)),
    )


def _experts_split(arch, parallel, draft=None):
    """n divides the experts."""
    import sympy

    return sympy.Eq(sympy.Mod(_symbol("E"), _symbol("n_gpus")), 0)


CHECKS = (
    Check(
        "heads",
        _heads_split,
        "{model}'s {n_heads} attention heads and {n_kv_heads} KV heads cannot be split over "
        "{n_gpus} GPUs with tensor parallelism: n_gpus must divide the heads and divide (or be "
        "a multiple of) the KV heads; it may be {degrees}",
        {
            "n_heads": (lambda arch, parallel, draft=None: _symbol("H"), "integer"),
            "n_kv_heads": (lambda arch, parallel, draft=None: _symbol("H_kv"), "integer"),
        },
        applies=lambda arch, parallel: parallel in ("tensor", "expert"),
    ),
    Check(
        "experts",
        _experts_split,
        "{model}'s {n_experts} experts cannot be spread evenly over {n_gpus} GPUs with expert "
        "parallelism: n_gpus must divide them; it may be {expert_degrees}",
        {"n_experts": (lambda arch, parallel, draft=None: _symbol("E"), "integer")},
        applies=lambda arch, parallel: parallel in EXPERT_PARALLEL and arch.is_moe,
    ),
    Check(
        "layers",
        lambda arch, parallel, draft=None: _symbol("n_gpus") <= _symbol("L"),
        "{model} has {n_layers} layers, too few for {n_gpus} pipeline stages: use at most "
        "{n_layers} GPUs",
        {"n_layers": (lambda arch, parallel, draft=None: _symbol("L"), "integer")},
        applies=lambda arch, parallel: parallel == "pipeline",
    ),
    Check(
        "window",
        lambda arch, parallel, draft=None: _tokens() <= _symbol("S_max"),
        "{model} reads at most {window} tokens (its context window); prompt_len + output_len "
        "is {context}",
        {
            "window": (lambda arch, parallel, draft=None: _symbol("S_max"), "integer"),
            "context": (lambda arch, parallel, draft=None: _tokens(), "integer"),
        },
        applies=lambda arch, parallel: arch.context_window is not None,
    ),
    Check(
        "fit",
        _fits,
        "{model} does not fit: needs {need} per GPU (weights {weights}, KV cache {cache} of a "
        "batch of {batch} at {context} tokens each, activations {activations}) on "
        "{n_gpus} x {gpu}, whose budget is "
        "{budget} ({memory_utilization} of {memory}). Use more GPUs, a smaller batch, shorter "
        "requests or fewer bytes per number",
        {
            "need": (
                lambda arch, parallel, draft=None: _request(
                    _latency().memory_per_gpu(arch, parallel, draft)
                ),
                "nbytes",
            ),
            "weights": (_weights, "nbytes"),
            "cache": (_cache, "nbytes"),
            # The tokens each request's cache holds, in numbers: the entry points name them
            # differently (prompt_len and output_len, context_len).
            "context": (lambda arch, parallel, draft=None: _tokens(), "integer"),
            "activations": (
                lambda arch, parallel, draft=None: _latency().activation_reserve(arch),
                "nbytes",
            ),
            "budget": (lambda arch, parallel, draft=None: _latency().memory_budget(), "nbytes"),
            "memory": (lambda arch, parallel, draft=None: _symbol("M"), "nbytes"),
        },
    ),
)
"""The rules every scenario obeys, in the order they are checked (after each input's own type
and range)."""
