"""The controls of the book's interactive figures, as data: sliders, choices, presets.

>>> Range(1, 8192, 512, log=True).grid(5).tolist()
[1.0, 10.0, 91.0, 861.0, 8192.0]

``widgets`` builds the ipywidgets view from them and ``live`` the page's; both import them
from here, so neither imports the other's internals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from inference_arithmetic import format as fmt

__all__ = [
    "Range",
    "Choice",
    "Preset",
    "PALETTE",
    "DASHES",
    "curve_style",
    "model_preset",
    "gpu_preset",
]

# Okabe-Ito: distinguishable with the common forms of colour blindness.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
# And each curve its own dash pattern (on/off lengths, in line widths), so that curves stay apart
# in print and for readers who tell none of the colours apart: solid, dashed, dash-dot, dotted.
DASHES = [(), (3, 1.5), (3, 1.5, 1, 1.5), (1, 1.5)]


def curve_style(i: int) -> tuple[str, tuple[float, ...]]:
    """The colour and dash pattern of a widget's i-th curve (the live page draws the same)."""
    return PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]


@dataclass(frozen=True)
class Range:
    """A slider from ``min`` to ``max`` in steps of ``step``; ``log`` spaces the x-axis."""

    min: float
    max: float
    value: float
    step: float = 1
    log: bool = False

    def __post_init__(self):
        if not self.min < self.max:
            raise ValueError(f"Range needs min < max, got {self.min} and {self.max}")
        if self.step <= 0:
            raise ValueError(f"Range needs a positive step, got {self.step}")
        if self.log and self.min <= 0:
            raise ValueError(f"a log Range needs min > 0, got {self.min}")
        if not self.min <= self.value <= self.max:
            raise ValueError(f"Range value {self.value} is outside [{self.min}, {self.max}]")

    def clamp(self, value: float) -> float:
        value = min(max(float(value), self.min), self.max)
        value = self.min + round((value - self.min) / self.step) * self.step
        # 12 significant digits drop float noise: 0.1 * 3 is 0.3, not 0.30000000000000004.
        return float(f"{min(value, self.max):.12g}")

    def grid(self, points: int = 200) -> np.ndarray:
        space = np.geomspace if self.log else np.linspace
        return np.unique([self.clamp(v) for v in space(self.min, self.max, points)])


@dataclass(frozen=True)
class Choice:
    """One of a few values: a list (a selection slider) or a mapping label -> value.

    ``value`` is the default: one of the values, or, for a mapping, one of the labels (so
    that ``Choice(DTYPE_BYTES, "bf16")`` starts at bf16, not at fp16 of the same size).
    """

    options: Mapping[str, float] | Sequence[float]
    value: float | str
    labels: dict = field(init=False, repr=False, compare=False)
    label: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        items = dict(self.options) if isinstance(self.options, Mapping) else _labelled(self.options)
        if not items:
            raise ValueError("Choice needs at least one option")
        object.__setattr__(self, "labels", items)
        if isinstance(self.value, str):
            if self.value not in items:
                raise ValueError(f"Choice label {self.value!r} is not one of {list(items)}")
            label = self.value
        elif self.value in items.values():
            label = next(key for key, v in items.items() if v == self.value)
        else:
            raise ValueError(f"Choice value {self.value} is not one of {list(items.values())}")
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "value", items[label])

    def label_for(self, value: float | str, current: str | None = None) -> str:
        """The label of ``value`` (a label, or the nearest value; ``current`` if it ties)."""
        if isinstance(value, str):
            if value not in self.labels:
                raise ValueError(f"{value!r} is not one of {list(self.labels)}")
            return value
        nearest = min(self.labels.values(), key=lambda v: abs(v - float(value)))
        if current is not None and self.labels[current] == nearest:
            return current
        return next(key for key, v in self.labels.items() if v == nearest)

    def clamp(self, value: float | str) -> float:
        return self.labels[self.label_for(value)]

    def grid(self, points: int = 200) -> np.ndarray:
        return np.unique(np.asarray(list(self.labels.values()), dtype=float))


@dataclass(frozen=True)
class Preset:
    """Named sets of values that move several symbols at once: a model, a GPU.

    ``Preset({m: ia.model(m).sizes() for m in names}, "llama-3.1-8b")`` sets D, L, H_kv, ...
    together; keys the formulas do not use are ignored.
    """

    options: Mapping[str, Mapping[str, float]]
    value: str

    def __post_init__(self):
        if not self.options:
            raise ValueError("Preset needs at least one option")
        if self.value not in self.options:
            raise ValueError(f"Preset default {self.value!r} is not one of {list(self.options)}")

    @property
    def label(self) -> str:
        return self.value

    def names(self, used: set[str]) -> set[str]:
        """The symbols (of ``used``) every option sets; an option lacking one is an error."""
        for label, values in self.options.items():
            lacking = sorted(set().union(*(o.keys() for o in self.options.values())) - set(values))
            if lacking and used & set(lacking):
                raise ValueError(f"Preset option {label!r} lacks {sorted(used & set(lacking))}")
        return used & set(next(iter(self.options.values())))


def _labelled(values: Sequence[float]) -> dict[str, float]:
    """Labels for a list of values, with as many digits as it takes to tell them apart."""
    for digits in range(3, 16):
        labels = {fmt.si(v, digits=digits): v for v in values}
        if len(labels) == len(set(values)):
            return labels
    raise ValueError(f"Choice options must be distinct, got {list(values)}")


def model_preset(value: str, names: Sequence[str] | None = None) -> Preset:
    """A preset per registry model (``names``, default all), setting its sizes."""
    from inference_arithmetic.models import model, model_names

    return Preset({n: model(n).sizes() for n in names or model_names()}, value)


def gpu_preset(value: str = "h100-sxm", names: Sequence[str] | None = None, dtype="bf16") -> Preset:
    """A preset per registry GPU (``names``, default every GPU with a FLOP rate in ``dtype``),
    setting its figures (``GPU.figures``): the one GPU control of the chapters' widgets."""
    from inference_arithmetic.hardware import gpu, gpu_names

    names = names or [n for n in gpu_names() if dtype in gpu(n).peak_flop_rate]
    return Preset({n: gpu(n).figures(dtype) for n in names}, value)
