"""The book's named results: the answers that more than one page gives to one question, each
asked once here and computed once.

A page prints a named result by gluing it, ``named.glue(glue, "small_saturation")``: its
value is built once and kept in the disk cache (``core.cache.data``), so every page that
prints it prints the same number, and ``tests/book/test_named.py`` fails where two pages glue
different values under one name. The running example is the calculator's own default
(chapter 16): Llama 3.1 8B on one H100 SXM, requests of 2,048 prompt and 256 output tokens,
every other setting the library's default (the kernel model of a step, the default engine).

>>> sorted(EXAMPLES["small"])
['gpu', 'model', 'n_gpus', 'output_len', 'prompt_len']
>>> disagreements({"09": {"named_x": "8.12"}, "12": {"named_x": "11.0"}})
{'named_x': {'09': '8.12', '12': '11.0'}}
"""

from __future__ import annotations

from collections.abc import Callable

from inference_arithmetic.core import cache
from inference_arithmetic.core.numeric import UnknownName
from inference_arithmetic.serving import continuous, scenario, timing
from inference_arithmetic.serving.report import calculate

__all__ = ["EXAMPLES", "BIG_BATCH", "RESULTS", "PREFIX", "value", "glue", "disagreements"]

EXAMPLES = {
    "small": {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm",
        "n_gpus": 1,
        "prompt_len": 2048,
        "output_len": 256,
    },
    "big": {
        "model": "llama-3.1-70b",
        "gpu": "h100-sxm",
        "n_gpus": 4,
        "prompt_len": 2048,
        "output_len": 256,
    },
}
"""The book's running deployments and workloads, by name: ``small`` is the calculator's
default form (``page.calculator.Calculator``), and the set-up chapters 09 to 11 and 14 run
through; ``big``, the 70B model split four ways with tensor parallelism, runs beside it in
chapters 09 to 12."""

BIG_BATCH = 32
"""The static batch of ``big`` that chapters 12 and 16 time (``big_batch_ttft``, ``_tpot``)."""

PREFIX = "named_"
"""The glue names of the named results: ``PREFIX`` + the result's name."""


def _small_saturation() -> float:
    """Requests per second at which ``small`` saturates, at the library's defaults."""
    return float(continuous.saturation_rate(scenario.Scenario(**EXAMPLES["small"])))


def _small_ceiling() -> int:
    """The most requests of ``small``'s lengths whose KV caches fit at once, at the library's
    defaults (``ia.max_batch``): its memory ceiling."""
    e = EXAMPLES["small"]
    context = e["prompt_len"] + e["output_len"]
    return timing.max_batch(e["model"], e["gpu"], context_len=context, n_gpus=e["n_gpus"])


def _big_comm_share() -> float:
    """The share of the all-reduces in one decode step of ``big`` at batch 1, the prompt's
    tokens cached, kernel by kernel at the library's defaults (``ia.kernels``' rows)."""
    b = EXAMPLES["big"]
    rows = timing.kernels(
        b["model"], b["gpu"], batch=1, context_len=b["prompt_len"], n_gpus=b["n_gpus"]
    )
    collective = sum(row["time"] for row in rows if row["kind"] == "collective")
    return float(collective / sum(row["time"] for row in rows))


def _big_batch(key: str) -> float:
    """``ia.calculate``'s ``key`` for ``big`` serving ``BIG_BATCH`` requests at once, at the
    library's defaults."""
    return float(calculate(**EXAMPLES["big"], batch=BIG_BATCH)[key])


RESULTS: dict[str, Callable[[], float | int]] = {
    "small_saturation": _small_saturation,
    "small_ceiling": _small_ceiling,
    "big_comm_share": _big_comm_share,
    "big_batch_ttft": lambda: _big_batch("ttft"),
    "big_batch_tpot": lambda: _big_batch("tpot"),
}
"""Each named result's computation, by name."""


def value(name: str) -> float:
    """The named result ``name`` (one of ``RESULTS``), computed once and kept."""
    if name not in RESULTS:
        raise UnknownName(f"no named result {name!r}: the book's are {', '.join(RESULTS)}")
    return cache.data(_computed, name)


def _computed(name: str) -> float:
    return RESULTS[name]()


def glue(glue_function: Callable, name: str) -> float:
    """Glue the named result ``name`` on a page (``glue_function`` is myst-nb's ``glue``)
    under ``PREFIX`` + ``name``, not displayed; its value."""
    result = value(name)
    glue_function(PREFIX + name, result, display=False)
    return result


def disagreements(glued: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    """Of ``glued`` (by page: each glue name and what the page glued under it), the named
    results (``PREFIX``) that two pages glue with different values: by name, each page's."""
    by_name: dict[str, dict[str, object]] = {}
    for page, values in glued.items():
        for name, result in values.items():
            if name.startswith(PREFIX):
                by_name.setdefault(name, {})[page] = result
    return {
        name: pages for name, pages in by_name.items() if len({repr(v) for v in pages.values()}) > 1
    }
