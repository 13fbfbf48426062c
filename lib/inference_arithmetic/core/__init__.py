"""The core: the book's symbols, number formats, SymPy -> numpy compilation and the cache of
compiled formulas (each Max and Min evaluated once while they are built), the printers of a
formula for each place it runs (JavaScript, numpy, plain Python), printing of numbers, the
rules every input is checked by, what a build reads of a model, and the registries' shared
machinery.

It imports nothing else of the library; every other layer stands on it.
"""


def __getattr__(name):
    # A module of this package by attribute (``ia.core.numeric``) before anything imported it:
    # ``import inference_arithmetic`` loads its modules on first use, not all at once.
    import importlib
    import importlib.util

    if importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
