"""The band every prediction carries: where eight of ten held-out measurements fell.

>>> lo, hi = band("tpot", 0.010)  # a predicted 10 ms per output token
>>> lo < 0.010 < hi
True
>>> band("request", 1000.0, speed=True)[1] > 1000.0 > band("request", 1000.0, speed=True)[0]
True

``data/bands.json`` holds, for each kind of prediction (the first token, each later token, a
whole request or run), the 10th and 90th percentiles of the validation set's residuals: the
measured time over the predicted one, on published runs no number of the library was fitted on
(``validation.residuals.bands`` computes them, ``make bands`` writes the file, and a test
recomputes it). A predicted time t is measured between low t and high t on eight runs of ten; a
predicted speed v between v / high and v / low. The band describes the kernel model at its
defaults (``step="kernels"``); chapter 13 derives it.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from inference_arithmetic.core import cache
from inference_arithmetic.core.errors import UnknownName

__all__ = ["KINDS", "BAND", "PER_TOKEN", "bands", "band", "of", "describe"]

KINDS = ("ttft", "tpot", "request")
"""The kinds of prediction a band is kept for: the time to first token, the time per output
token, and a whole request's time (or a run's throughput)."""

BAND: dict
"""A band's ends, for a predicted time and for a predicted speed, in ``predicted`` and the
kind's factors ``band_low`` and ``band_high``: a speed's run the other way. The library
evaluates them; the calculator's page prints them to JavaScript. Built on first use
(``__getattr__``): a band read back from the disk cache needs no SymPy."""


@functools.cache
def _band() -> dict:
    """``BAND``."""
    import sympy

    predicted = sympy.Symbol("predicted", positive=True)
    low, high = sympy.Symbol("band_low", positive=True), sympy.Symbol("band_high", positive=True)
    return {
        "time": {"low": predicted * low, "high": predicted * high},
        "speed": {"low": predicted / high, "high": predicted / low},
    }


def __getattr__(name):
    if name == "BAND":
        return _band()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PER_TOKEN = {"ttft": ("ttft", False), "tpot": ("tpot", False)}
"""The first token and each later one, as the predictions that carry a band name them: key ->
(kind, whether it is a speed). Each entry point adds its own whole-request keys."""


@functools.cache
def bands() -> dict:
    """The shipped bands: ``quantiles``, and for each of ``KINDS`` its ``low`` and ``high``
    factors and the ``rows`` of the validation set they come from."""
    text = (resources.files("inference_arithmetic.serving") / "data" / "bands.json").read_text()
    return json.loads(text)


def band(kind: str, value: float, speed: bool = False) -> tuple[float, float]:
    """The range, low to high, in which eight of ten held-out measurements fell for a
    prediction ``value`` of ``kind`` (seconds; a speed if ``speed``); ``KeyError`` naming the
    kinds for another."""
    if kind not in KINDS:
        raise UnknownName(f"no band for {kind!r}; the kinds are: {', '.join(KINDS)}")
    b = bands()[kind]
    ends = cache.formulas(_ends)(predicted=value, band_low=b["low"], band_high=b["high"])
    which = "speed" if speed else "time"
    return (ends[f"{which} low"], ends[f"{which} high"])


def _ends() -> dict:
    """Both kinds' ends, compiled together and kept on disk (``core.cache``): compiling them
    would be most of a fresh process's first ``calculate``."""
    return {f"{which} {end}": e for which, both in _band().items() for end, e in both.items()}


def of(result: dict, banded: dict[str, tuple[str, bool]]) -> dict[str, tuple[float, float]]:
    """The band of each prediction of ``result`` that ``banded`` names, as key -> (kind,
    whether it is a speed)."""
    return {key: band(kind, float(result[key]), speed) for key, (kind, speed) in banded.items()}


def describe() -> str:
    """What the bands are, in one sentence (the calculator prints it under its readout)."""
    low, high = bands()["quantiles"]
    rows = sum(bands()[kind]["rows"] for kind in KINDS)
    return (
        f"in brackets, where eight runs of ten would be measured: the {low * 100:.0f}th to "
        f"{high * 100:.0f}th percentile of the model's errors on {rows} published measurements "
        "it was never fitted on"
    )


def warm() -> None:
    """Compile and keep in the disk cache the bands' ends."""
    cache.formulas(_ends)
