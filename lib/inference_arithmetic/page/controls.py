"""The controls of the book's interactive figures, as data: sliders, choices, presets.

>>> Range(1, 8192, 512, log=True).grid(5).tolist()
[1.0, 10.0, 91.0, 861.0, 8192.0]
>>> Range(1, 30, 10, log=True).stops()  # a log slider steps through nice values
[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0, 25.0, 30.0]
>>> label("bandwidth"), show("bandwidth", 3e12)
('memory bandwidth β', '3 TB/s')
>>> label("n_params"), show("n_params", 70e9)
('model size N (parameters)', '70 billion')

``widgets`` builds the ipywidgets view from them and ``live`` the page's; both import them
from here, so neither imports the other's internals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from inference_arithmetic.core import checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.numeric import ArgumentError

__all__ = [
    "label",
    "label_html",
    "display",
    "show",
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


# How a control's value prints, by the unit of its symbol (symbols.NOTATION): a kind of
# ia.format.show and the words after it. Counts print in full ("8,192"), their unit in the label.
_DISPLAY = {
    "parameters": ("count", ""),
    "bytes": ("nbytes", ""),
    "FLOP/s": ("flop_rate", ""),
    "B/s": ("bandwidth", ""),
    "s": ("seconds", ""),
    "fraction": ("percent", ""),
    "$/GPU-hour": ("usd", " per GPU-hour"),
    "$": ("usd", " per million tokens"),
}
_SUBSCRIPT = dict(zip("aehijklmnoprstuvx0123456789", "ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ₀₁₂₃₄₅₆₇₈₉", strict=True))
_GREEK = {r"\pi": "π", r"\beta": "β", r"\eta": "η", r"\mu": "μ", r"\alpha": "α", r"\gamma": "γ"}
_GREEK[r"\lambda"] = "λ"


def display(name: str) -> tuple[str, str]:
    """How the value of the control ``name`` prints: (a kind of ``format.show``, a suffix)."""
    from inference_arithmetic.core.symbols import NOTATION

    row = NOTATION.get(name)
    return _DISPLAY.get(row.unit, ("number", "")) if row else ("number", "")


def show(name: str, value: float) -> str:
    """The value of the control ``name`` as the widgets print it: ``show("batch", 8192)`` is
    ``'8,192'``; the page prints the same with ``iaShow`` and ``display(name)``."""
    kind, suffix = display(name)
    return fmt.show(value, kind) + suffix


def _symbol(name: str) -> tuple[str, str] | None:
    """The book's letter for ``name``: (its base, its subscript), from its LaTeX."""
    from inference_arithmetic.core.symbols import NOTATION

    row = NOTATION.get(name)
    if row is None:
        return None
    text = row.latex
    for command, letter in _GREEK.items():
        text = text.replace(command, letter)
    base, _, sub = text.replace("{", "").replace("}", "").partition("_")
    return base.strip(), sub.strip()


def _words(name: str, words: str | None = None) -> tuple[str, str]:
    """The control's words and the unit its label names (when its value does not print it)."""
    from inference_arithmetic.core.symbols import LABELS, NOTATION

    row = NOTATION.get(name)
    if row is None:
        # A preset is named by its words, GPU in capitals: "gpu and link" is "GPU and link".
        named = " ".join("GPU" if w == "gpu" else w for w in name.replace("_", " ").split(" "))
        return words or named, ""
    words = words or LABELS.get(name) or row.meaning.split(":")[0].split("(")[0].strip()
    kind, _ = display(name)
    # The unit when the value does not print it, and the words do not already say it ("GPUs n").
    named = kind in ("number", "count") and row.unit.lower() not in words.lower()
    return words, (row.unit if named else "")


def label(name: str, words: str | None = None) -> str:
    """A control's label in words, with the book's symbol and the unit: ``'batch B
    (sequences)'``; ``words`` replaces the words (a chapter's own name for the quantity)."""
    words, unit = _words(name, words)
    symbol = _symbol(name)
    if symbol is not None:
        base, sub = symbol
        # Unicode's subscript letters where it has them all (Sₘₐₓ, Hₖᵥ), else the letters.
        if all(c in _SUBSCRIPT for c in sub):
            sub = "".join(_SUBSCRIPT[c] for c in sub)
        words += f" {base}{sub}"
    return f"{words} ({unit})" if unit else words


def label_html(name: str, words: str | None = None) -> str:
    """``label`` in HTML: the symbol in italics, its subscript lowered (``η<sub>c</sub>``)."""
    import html

    words, unit = _words(name, words)
    symbol = _symbol(name)
    text = html.escape(words)
    if symbol is not None:
        base, sub = symbol
        text += f" <i>{html.escape(base)}</i>" + (f"<sub>{html.escape(sub)}</sub>" if sub else "")
    return f"{text} ({html.escape(unit)})" if unit else text


def curve_style(i: int) -> tuple[str, tuple[float, ...]]:
    """The colour and dash pattern of a widget's i-th curve (the live page draws the same)."""
    return PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]


_MANTISSAS = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8)


@dataclass(frozen=True)
class Range:
    """A slider from ``min`` to ``max`` in steps of ``step``; ``log`` spaces the x-axis;
    ``only``, where given, the values the slider may take (the tensor-parallel degrees that
    split a model's heads: ``Range(1, 8, 4, only=(1, 2, 4, 8))``), one a step."""

    min: float
    max: float
    value: float
    step: float = 1
    log: bool = False
    only: tuple[float, ...] = ()

    def __post_init__(self):
        for name in ("min", "max", "value", "step"):  # "a" < "z" would pass what follows
            number = getattr(self, name)
            if not checks.is_real(number) or not math.isfinite(number):
                raise ArgumentError(f"a Range's {name} must be a finite number, got {number!r}")
        if not self.min < self.max:
            raise ArgumentError(f"Range needs min < max, got {self.min} and {self.max}")
        if self.step <= 0:
            raise ArgumentError(f"Range needs a positive step, got {self.step}")
        if self.log and self.min <= 0:
            raise ArgumentError(f"a log Range needs min > 0, got {self.min}")
        if not self.min <= self.value <= self.max:
            raise ArgumentError(f"Range value {self.value} is outside [{self.min}, {self.max}]")
        if self.log and self._snap(self.value) != self.value:
            raise ArgumentError(f"a log Range's value {self.value} must lie on its step grid")
        if self.only and (
            list(self.only) != sorted(set(self.only))
            or not self.min <= self.only[0] <= self.only[-1] <= self.max
            or self.value not in self.only
        ):
            raise ArgumentError(
                f"a Range's only values must be increasing, within [{self.min}, {self.max}] "
                f"and hold its value {self.value}, got {self.only}"
            )

    def clamp(self, value: float) -> float:
        """The nearest value the control can take: a step of the grid, or a log slider's stop."""
        if self.log or self.only:
            stops = np.asarray(self.stops())
            return float(stops[np.argmin(np.abs(np.log(stops / max(float(value), 1e-300))))])
        return self._snap(value)

    def _snap(self, value: float) -> float:
        value = min(max(float(value), self.min), self.max)
        value = self.min + round((value - self.min) / self.step) * self.step
        # 12 significant digits drop float noise: 0.1 * 3 is 0.3, not 0.30000000000000004.
        return float(f"{min(value, self.max):.12g}")

    def stops(self) -> list[float]:
        """The values a log slider steps through: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a
        power of ten (on the step grid), and ``min``, ``max`` and the default; a step moves the
        value by a ratio (at most 2, where the step grid is coarse), not by a fixed amount."""
        if self.only:
            return [float(v) for v in self.only]
        if not self.log:
            raise ArgumentError("only a log Range has stops; a linear one moves by its step")
        low, high = math.floor(math.log10(self.min)), math.ceil(math.log10(self.max))
        nice = [m * 10.0**e for e in range(low, high + 1) for m in _MANTISSAS]
        kept = [self.min, self.max, self.value]
        # A nice value within 10% of one kept is left out: no step of x1.02 (8,000 to 8,192).
        inside = [v for v in nice if all(not 1 / 1.1 < v / k < 1.1 for k in kept)]
        inside = [v for v in inside if self.min < v < self.max]
        return sorted({self._snap(v) for v in [*kept, *inside]})

    def grid(self, points: int = 200) -> np.ndarray:
        if self.only:
            return np.asarray(self.stops())
        space = np.geomspace if self.log else np.linspace
        return np.unique([self._snap(v) for v in space(self.min, self.max, points)])


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
        if isinstance(self.options, str) or not isinstance(self.options, Iterable):
            raise ArgumentError(
                "Choice options must be a mapping label -> value or a list of values, got "
                f"{self.options!r}"
            )
        items = dict(self.options) if isinstance(self.options, Mapping) else _labelled(self.options)
        if not items:
            raise ArgumentError("Choice needs at least one option")
        object.__setattr__(self, "labels", items)
        if isinstance(self.value, str):
            if self.value not in items:
                raise ArgumentError(f"Choice label {self.value!r} is not one of {list(items)}")
            label = self.value
        elif self.value in items.values():
            label = next(key for key, v in items.items() if v == self.value)
        else:
            raise ArgumentError(f"Choice value {self.value} is not one of {list(items.values())}")
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "value", items[label])

    def label_for(self, value: float | str, current: str | None = None) -> str:
        """The label of ``value`` (a label, or the nearest value; ``current`` if it ties)."""
        if isinstance(value, str):
            if value not in self.labels:
                raise ArgumentError(f"{value!r} is not one of {list(self.labels)}")
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
            raise ArgumentError("Preset needs at least one option")
        if self.value not in self.options:
            raise ArgumentError(f"Preset default {self.value!r} is not one of {list(self.options)}")

    @property
    def label(self) -> str:
        return self.value

    def names(self, used: set[str]) -> set[str]:
        """The symbols (of ``used``) every option sets; an option lacking one is an error."""
        for label, values in self.options.items():
            lacking = sorted(set().union(*(o.keys() for o in self.options.values())) - set(values))
            if lacking and used & set(lacking):
                raise ArgumentError(f"Preset option {label!r} lacks {sorted(used & set(lacking))}")
        return used & set(next(iter(self.options.values())))


def _labelled(values: Sequence[float]) -> dict[str, float]:
    """Labels for a list of values, with as many digits as it takes to tell them apart."""
    for digits in range(3, 16):
        labels = {fmt.si(v, digits=digits): v for v in values}
        if len(labels) == len(set(values)):
            return labels
    raise ArgumentError(f"Choice options must be distinct, got {list(values)}")


def model_preset(value: str, names: Sequence[str] | None = None) -> Preset:
    """A preset per registry model (``names``, default all), setting its sizes."""
    from inference_arithmetic.models.config import model, model_names

    return Preset({n: model(n).sizes() for n in names or model_names()}, value)


def gpu_preset(
    value: str = "h100-sxm",
    names: Sequence[str] | None = None,
    dtype="bf16",
    arch=None,
    used: set[str] | None = None,
) -> Preset:
    """A preset per registry GPU (``names``, default every GPU with a FLOP rate in ``dtype``),
    setting its figures (``GPU.figures``): the one GPU control of the chapters' widgets.

    For a widget over the library's default step of a model ``arch``, each option is what that
    step takes of the GPU (``Scenario(arch, gpu).values()``: its peaks, its measured kernels,
    the engine's fixed costs, its links), and its dated ``price_per_hour``; ``used`` keeps only
    those names (the widget's symbols less its sliders, so that no option moves a slider's
    value). ``arch``'s own sizes are never set: a model control sets them."""
    from inference_arithmetic.hardware.gpus import gpu, gpu_names

    names = names or [n for n in gpu_names() if dtype in gpu(n).peak_flop_rate]
    if arch is None:
        return Preset({n: gpu(n).figures(dtype) for n in names}, value)
    from inference_arithmetic.serving.scenario import Scenario

    keep = set(used) - set(arch.sizes()) if used is not None else None

    def step_values(name):
        values = {**Scenario(arch, name).values(), "price_per_hour": gpu(name).price_per_hour}
        return {k: v for k, v in values.items() if keep is None or k in keep}

    return Preset({n: step_values(n) for n in names}, value)
