"""Inference Arithmetic: the memory, compute, time and money of running a language model.

>>> import inference_arithmetic as ia
>>> from inference_arithmetic.formulas import mlp
>>> ia.evaluate(mlp.params(), d_1=2, d_2=3, d_3=2)
12

Every formula is a SymPy expression in ``inference_arithmetic.formulas``, derived in a chapter
of the book; ``numeric`` compiles any of them into a vectorized numpy function.
"""

import os as _os
import sys as _sys

# SymPy keeps what its constructors built (sums, products, substitutions) in caches of 1,000
# entries each, a size it reads from SYMPY_CACHE_SIZE once, when it is imported. A model's step,
# built kernel by kernel and substituted into for each phase and parallelism, makes tens of
# thousands, and a cache of 1,000 forgets them before they come again: with 20,000 the
# calculator's page data of every registry model (page.calculator_data) takes less than half
# the time, the same expressions. A size set in the environment, or SymPy imported first, is kept.
# The package imports SymPy on first use: where a formula is built (a warm disk cache of
# compiled formulas needs none). So the size is set now, and taken back when a name of ``ia``
# loads after SymPy came in; a child process started before that inherits it (a larger cache,
# the same numbers). The book's execution hands the size to each page's kernel itself
# (tools/execute.py), since a chapter imports SymPy before the library.
SYMPY_CACHE_SIZE = 20_000
"""The size of SymPy's caches the library asks for (``SYMPY_CACHE_SIZE`` in the environment)."""
_SIZE_SET = "sympy" not in _sys.modules and "SYMPY_CACHE_SIZE" not in _os.environ
if _SIZE_SET:
    _os.environ["SYMPY_CACHE_SIZE"] = str(SYMPY_CACHE_SIZE)

# The layers, bottom up (README.md and tests/lib/test_layers.py): core < formulas < models,
# hardware < serving < validation, page; this file sits on top, and exercises, the answer key
# written against the public API as the chapters are, above it.
#
# Every name below is loaded on first use (PEP 562, ``__getattr__``): ``import
# inference_arithmetic`` imports neither SymPy nor NumPy (half a second), so that the command
# line answers ``ia --help`` or ``ia gpus`` without them, and ``ia.calculate`` imports what it
# needs (NumPy; SymPy only to build a formula the disk cache does not hold). Each name's
# module, as it was imported here:
_MODULES = {
    **dict.fromkeys(
        ("core", "formulas", "hardware", "models", "serving", "validation"), "inference_arithmetic"
    ),
    **dict.fromkeys(
        ("cache", "checks", "dtypes", "format", "registry", "symbols"), "inference_arithmetic.core"
    ),
    "counts": "inference_arithmetic.models",
    **dict.fromkeys(
        (
            "bands",
            "continuous",
            "disaggregated",
            "economics",
            "efficiencies",
            "planning",
            "queueing",
            "scenario",
            "simulation",
            "speculative",
            "targets",
            "timing",
        ),
        "inference_arithmetic.serving",
    ),
    "measurements": "inference_arithmetic.validation",
    # The page layer and the exercises (matplotlib and ipywidgets cost about 0.3 s to import):
    # only chapters with widgets pay it.
    **dict.fromkeys(("page", "exercises"), "inference_arithmetic"),
    **dict.fromkeys(
        ("widgets", "live", "controls", "calculator", "diagrams", "reference_page"),
        "inference_arithmetic.page",
    ),
    "residuals": "inference_arithmetic.validation",
}
_NAMES = {
    "inference_arithmetic.core.dtypes": (
        "DTYPE_BYTES",
        "FORMATS",
        "bytes_per_number",
        "compute_path",
    ),
    "inference_arithmetic.core.errors": ("ArgumentError", "UnknownName"),  # core.numeric's too
    "inference_arithmetic.core.numeric": ("evaluate", "numeric"),
    "inference_arithmetic.hardware.engines": (
        "Engine",
        "engine",
        "engine_names",
        "engine_versions",
    ),
    "inference_arithmetic.hardware.gpus": ("GPU", "gpu", "gpu_names"),
    "inference_arithmetic.models.config": (
        "AUTO",
        "ModelConfig",
        "measured",
        "model",
        "model_names",
        "weight_formats",
    ),
    "inference_arithmetic.models.counts": (
        "decode_flops",
        "forward_flops",
        "kv_cache_bytes",
        "param_count",
    ),
    "inference_arithmetic.serving.continuous": ("steady_state",),
    "inference_arithmetic.serving.frontier": ("frontier",),
    "inference_arithmetic.serving.economics": (
        "api_prices",
        "break_even_utilization",
        "token_costs",
    ),
    "inference_arithmetic.serving.planning": ("plan",),
    "inference_arithmetic.serving.report": ("calculate",),
    "inference_arithmetic.serving.scenario": ("Scenario",),
    "inference_arithmetic.serving.speculative": ("Speculative",),
    "inference_arithmetic.serving.sweep": ("sweep",),
    "inference_arithmetic.serving.targets": ("goodput",),
    "inference_arithmetic.serving.timing": (
        "compute_bound_batch",
        "decode_step_time",
        "generation",
        "kernels",
        "max_batch",
        "prefill_time",
        "serve",
    ),
}
_WHERE = {name: module for module, names in _NAMES.items() for name in names}

__all__ = [
    "ArgumentError",
    "UnknownName",
    "Scenario",
    "Speculative",
    "speculative",
    "steady_state",
    "frontier",
    "plan",
    "goodput",
    "continuous",
    "disaggregated",
    "planning",
    "queueing",
    "simulation",
    "targets",
    "efficiencies",
    "cache",
    "checks",
    "scenario",
    "serving",
    "api_prices",
    "calculate",
    "sweep",
    "calculator",
    "break_even_utilization",
    "token_costs",
    "measurements",
    "residuals",
    "bands",
    "DTYPE_BYTES",
    "FORMATS",
    "AUTO",
    "weight_formats",
    "compute_path",
    "GPU",
    "ModelConfig",
    "bytes_per_number",
    "compute_bound_batch",
    "decode_step_time",
    "generation",
    "max_batch",
    "prefill_time",
    "serve",
    "decode_flops",
    "forward_flops",
    "kv_cache_bytes",
    "gpu",
    "gpu_names",
    "Engine",
    "engine",
    "engine_names",
    "engine_versions",
    "kernels",
    "model",
    "measured",
    "model_names",
    "param_count",
    "evaluate",
    "format",
    "formulas",
    "numeric",
    "symbols",
    "widgets",
    "exercises",
    "diagrams",
    "hardware",
    "models",
    "dtypes",
    "registry",
    "counts",
    "economics",
    "timing",
]

__version__ = "0.2.0"


def _notebook_figures():
    """Matplotlib figures in a notebook through the book's renderer (``page.figures``): PNG at
    twice their pixels, recording their smallest text. Set here because every chapter imports
    the library before it plots; this imports neither matplotlib nor IPython, and does nothing
    outside IPython.
    """
    import sys

    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if shell is not None:
        from inference_arithmetic.page import figures

        figures.use_in(shell)


_notebook_figures()


def __getattr__(name):
    import importlib

    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
    elif name in _MODULES:
        # A package's modules load as they are used too (``ia.core.numeric``: core.__getattr__).
        value = importlib.import_module(f"{_MODULES[name]}.{name}")
    else:
        raise AttributeError(f"module 'inference_arithmetic' has no attribute {name!r}")
    globals()[name] = value  # found once: the next use is a plain attribute
    if _SIZE_SET and "sympy" in _sys.modules:
        _os.environ.pop("SYMPY_CACHE_SIZE", None)
    return value


def __dir__():
    return sorted({*globals(), *__all__, "core", "validation"})  # both were there before
