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
if "sympy" not in _sys.modules and "SYMPY_CACHE_SIZE" not in _os.environ:
    _os.environ["SYMPY_CACHE_SIZE"] = "20000"
    import sympy  # noqa: F401 (imported here to read the size)

    del _os.environ["SYMPY_CACHE_SIZE"]  # this process's SymPy only, not its children's

# The layers, bottom up (README.md and tests/lib/test_layers.py): core < formulas < models,
# hardware < serving < validation, page; this file sits on top, and exercises, the answer key
# written against the public API as the chapters are, above it.
from inference_arithmetic import formulas, hardware, models, serving
from inference_arithmetic.core import cache, checks, dtypes, format, registry, symbols
from inference_arithmetic.core.dtypes import DTYPE_BYTES, FORMATS, bytes_per_number, compute_path
from inference_arithmetic.core.numeric import ArgumentError, UnknownName, evaluate, numeric
from inference_arithmetic.hardware.engines import Engine, engine, engine_names
from inference_arithmetic.hardware.gpus import GPU, gpu, gpu_names
from inference_arithmetic.models import counts
from inference_arithmetic.models.config import (
    AUTO,
    ModelConfig,
    measured,
    model,
    model_names,
    weight_formats,
)
from inference_arithmetic.models.counts import (
    decode_flops,
    forward_flops,
    kv_cache_bytes,
    param_count,
)
from inference_arithmetic.serving import (
    bands,
    continuous,
    disaggregated,
    economics,
    efficiencies,
    planning,
    queueing,
    scenario,
    simulation,
    speculative,
    targets,
    timing,
)
from inference_arithmetic.serving.continuous import steady_state
from inference_arithmetic.serving.economics import (
    api_prices,
    break_even_utilization,
    token_costs,
)
from inference_arithmetic.serving.frontier import frontier
from inference_arithmetic.serving.planning import plan
from inference_arithmetic.serving.report import calculate
from inference_arithmetic.serving.scenario import Scenario
from inference_arithmetic.serving.speculative import Speculative
from inference_arithmetic.serving.sweep import sweep
from inference_arithmetic.serving.targets import goodput
from inference_arithmetic.serving.timing import (
    compute_bound_batch,
    decode_step_time,
    generation,
    kernels,
    max_batch,
    prefill_time,
    serve,
)
from inference_arithmetic.validation import measurements

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


# The page layer and the exercises, by the name ``ia`` gives them: loaded on first use.
_LAZY = {
    "page": "inference_arithmetic.page",
    "widgets": "inference_arithmetic.page.widgets",
    "live": "inference_arithmetic.page.live",
    "controls": "inference_arithmetic.page.controls",
    "calculator": "inference_arithmetic.page.calculator",
    "diagrams": "inference_arithmetic.page.diagrams",
    "reference_page": "inference_arithmetic.page.reference_page",
    "exercises": "inference_arithmetic.exercises",
    "residuals": "inference_arithmetic.validation.residuals",
}


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
    # The presentation layer (matplotlib and ipywidgets cost about 0.3 s to import) loads on
    # first use: only chapters with widgets pay it.
    if name in _LAZY:
        import importlib

        return importlib.import_module(_LAZY[name])
    raise AttributeError(f"module 'inference_arithmetic' has no attribute {name!r}")
