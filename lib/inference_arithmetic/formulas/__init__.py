"""Canonical SymPy expressions, one module per chapter topic.

Each module loads on first use (PEP 562, ``__getattr__``), as ``import inference_arithmetic``
loads its names: a module that only names the parallel layouts (``layouts``) imports no
SymPy, which a warm command line never needs.
"""

__all__ = [
    "basics",
    "continuous",
    "disaggregation",
    "economics",
    "kernels",
    "kv_cache",
    "latency",
    "memory",
    "mlp",
    "parallel",
    "roofline",
    "techniques",
    "transformer",
]


def __getattr__(name):
    # A module of this package by attribute (``ia.formulas.mlp``) before anything imported it.
    import importlib
    import importlib.util

    if importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")  # an attribute of the package now


def __dir__():
    return sorted({*globals(), *__all__})
