"""The library's input checks, written once: whole counts, fractions, amounts, names, formulas.

>>> count("batch", 8.0)  # an integral float, or a numpy integer, is a count
8
>>> count("batch", True)
Traceback (most recent call last):
...
inference_arithmetic.core.numeric.ArgumentError: batch must be a whole number from 1 up, got True
>>> fraction("utilization", 1.5)
Traceback (most recent call last):
...
inference_arithmetic.core.numeric.ArgumentError: utilization must be a number from 0.001 to 1, ...

Every message names the argument, the value and the valid range (a registry name:
``registry.lookup``). The errors are
``ArgumentError``, which is both a ``ValueError`` and a ``TypeError``: a string where a number
belongs is caught by either ``except``. Each keyword function of the library, the scenario
(``ia.Scenario``) and the page's calculator use these, so the same input gets the same answer
everywhere.
"""

from __future__ import annotations

import math
import numbers

from inference_arithmetic.core.errors import ArgumentError

__all__ = ["ArgumentError", "count", "fraction", "share", "amount", "choice", "removed"]
__all__ += ["expression", "is_real", "architecture"]  # noqa: F822 (expression: __getattr__)

FRACTION = (0.001, 1.0)
"""The range of every fraction the library takes."""
COUNT = "{name} must be a whole number from {low}{upper}, got {value}"
"""The message for a count outside its range (``upper``: " to <high>", or " up"); the
calculator's page fills the same template."""


def is_real(value) -> bool:
    """A real number that is not a bool (True is an int in Python, but never a size): the test
    every check of a number here starts with, and checks of their own elsewhere
    (``serving.scenario.check_imbalance``) too."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def count(name: str, value, low: int = 1, high: int | None = None) -> int:
    """``value`` as an ``int`` if it is a whole number from ``low`` to ``high`` (no upper limit
    if None): ints, numpy integers and integral floats (4096.0) are counts; bools are not."""
    whole = is_real(value) and math.isfinite(value) and value == int(value)
    if not whole or not low <= value <= (math.inf if high is None else high):
        upper = f" to {high:,}" if high is not None else " up"
        message = COUNT.format(name=name, low=f"{low:,}", upper=upper, value=repr(value))
        raise ArgumentError(message)
    return int(value)


def fraction(name: str, value) -> float:
    """A fraction of a peak or of a whole, from 0.001 to 1: an efficiency, a utilization.
    (A thousandth is no GPU at work, and smaller values only overflow the times.)"""
    if not is_real(value) or not FRACTION[0] <= value <= FRACTION[1]:
        low, high = FRACTION
        raise ArgumentError(f"{name} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


SHARE = "{name} must be a number from 0 to 1{below}, got {value}"
"""The message for a share outside its range (``below``: " (not 1)" where 1 is excluded)."""


def share(name: str, value, below_one: bool = False) -> float:
    """A share of a whole, from 0 to 1 (below 1 if ``below_one``): a prefix-cache hit rate,
    an acceptance rate. Unlike ``fraction`` it may be 0: none of the prompt cached."""
    if not is_real(value) or not 0 <= value <= 1 or (below_one and value == 1):
        below = " (not 1)" if below_one else ""
        raise ArgumentError(SHARE.format(name=name, below=below, value=repr(value)))
    return float(value)


def amount(name: str, value, unit: str, positive: bool = False, high: float = 1e6) -> float:
    """A non-negative (or positive) real amount of ``unit`` up to ``high``: seconds, dollars.
    (A bound keeps the times and prices that follow from it finite.)"""
    sign = "positive" if positive else "non-negative"
    if not is_real(value) or not 0 <= value <= high or (positive and value == 0):
        raise ArgumentError(
            f"{name} must be a {sign} number of {unit} up to {high:g}, got {value!r}"
        )
    return float(value)


def choice(name: str, value, choices):
    """``value`` if it is one of ``choices``; else an error listing them."""
    if not isinstance(value, str) or value not in choices:
        raise ArgumentError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def removed(function: str, given: dict, names: dict[str, str]) -> None:
    """Refuse the keywords ``given`` to ``function`` beyond its own: an old name of one of its
    arguments (``names``: old -> new) by an ``ArgumentError`` naming the new one, any other as
    Python would (``TypeError``)."""
    # A removed name is refused, not taken as an alias: a keyword with two names is read two
    # ways, and its old spelling would live on in the code that copies it.
    for old in given:
        if old in names:
            raise ArgumentError(f"{function}: {old}= is now called {names[old]}=")
        raise TypeError(f"{function}() got an unexpected keyword argument {old!r}")


ARCHITECTURE = (
    "{name} must be a model's architecture, a ModelConfig: {made} makes one of a registry "
    "name, a config.json's path, folder, text or dict; got {kind}"
)
"""The refusal of something else where a formula takes an architecture (``architecture``)."""


def architecture(value, name: str = "arch"):
    """``value`` if it is an architecture (a ``ModelConfig``, or anything with its fields:
    the formulas read ``n_layers`` and ``is_moe`` of every one), else an ``ArgumentError``
    that says how to make one: a formula of ``formulas`` is built from an architecture, and a
    name or a dict there failed deep inside with an ``AttributeError``. (The formulas sit below
    the models, so they name ``ia.model`` rather than call it.)"""
    # The class first: asking a model for a field would count as reading it (core.reads),
    # and the calculator's page shares a family's formulas only over what they read.
    if not hasattr(type(value), "is_moe") and not (
        hasattr(value, "n_layers") and hasattr(value, "is_moe")
    ):
        kind = f"{type(value).__name__} {value!r:.60}" if value is not None else "None"
        made = f"ia.model({value!r:.60})" if isinstance(value, str | dict) else "ia.model(name)"
        raise ArgumentError(ARCHITECTURE.format(name=name, made=made, kind=kind))
    return value


def __getattr__(name):
    # ``expression`` is ``core.numeric``'s, which imports SymPy: loaded on first use, so that
    # checking a number (the command line's listings) imports none.
    if name == "expression":
        from inference_arithmetic.core.numeric import expression

        return expression
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
