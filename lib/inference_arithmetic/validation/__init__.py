"""Validation: published measurements of real serving runs, with their provenance (``data/``),
and the code that holds the serving layer's predictions against them (``measurements``); and
this machine as a lab, what ``make measure`` measured here and the prediction of it
(``machine``).

Reached as ``ia.measurements``; nothing below this layer imports it.
"""


def __getattr__(name):
    # A module of this package by attribute (``ia.core.numeric``) before anything imported it:
    # ``import inference_arithmetic`` loads its modules on first use, not all at once.
    import importlib
    import importlib.util

    if importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
