"""One interactive figure from a declarative description: formulas, controls, a plot.

>>> from inference_arithmetic.formulas import mlp
>>> w = formula_widget(
...     {"inference": mlp.inference_memory(), "training": mlp.training_memory()},
...     x="batch",
...     controls={
...         "batch": Range(1, 1024, 32),
...         "d_1": Range(16, 4096, 1024, step=16),
...         "d_2": Range(16, 16384, 4096, step=16),
...         "d_3": Range(16, 4096, 1024, step=16),
...         "bytes_per_number": Choice({"fp32": 4, "bf16": 2}, 4),
...     },
...     unit="B",
... )
>>> w.update(batch=64)["training"] > w.update(batch=64)["inference"]
True

Chapters describe a widget (which formulas, which symbol runs along the x-axis, one control
per symbol); this module builds it, so no chapter repeats widget code. The x symbol's control
moves a marker along the curves, and the readout shows every curve's value at the marker.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Mapping

import numpy as np
import sympy

from inference_arithmetic.core import checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.numeric import ArgumentError, numeric
from inference_arithmetic.page import figures
from inference_arithmetic.page.controls import (  # noqa: F401  (re-exported: ia.widgets.Range, ...)
    DASHES,
    PALETTE,
    Choice,
    Preset,
    Range,
    curve_style,
    gpu_preset,
    label_html,
    model_preset,
    show,
)
from inference_arithmetic.page.controls import label as control_label
from inference_arithmetic.page.live import CAPTION, KEY, KEY_NONE, NOTE, live_html

# Range, Choice, Preset, curve_style, model_preset and gpu_preset are ``controls``'s, used here
# and by the chapters as ``ia.widgets.Range``; they are documented there.
__all__ = [
    "FormulaWidget",
    "formula_widget",
    "in_region",
    "first_where",
    "least_where",
    "memory_budget",
    "memory_limit",
]


class FormulaWidget:
    """Controls, a plot that updates in place, and a readout; see ``formula_widget``."""

    def __init__(self, curves, x, controls, unit="", value_format=None, title="",
                 xlabel=None, ylabel=None, logx=False, logy=False, labels=None,
                 beyond=None, below=None, keys=None):  # fmt: skip
        self.curves = {
            label: checks.expression(f"the curve {label!r}", expr) for label, expr in curves.items()
        }
        # Named regions of x: above a bound (beyond=) or below one (below=).
        regions = [(r, e, "above") for r, e in (beyond or {}).items()]
        regions += [(r, e, "below") for r, e in (below or {}).items()]
        self.bounds = {region: sympy.sympify(expr) for region, expr, _ in regions}
        self.sides = {region: side for region, _, side in regions}
        self.x = x
        self.specs = dict(controls)
        # The widget's key numbers: each the least x at which a condition holds (keys=).
        self.keys = {label: sympy.sympify(cond) for label, cond in (keys or {}).items()}
        for label, cond in self.keys.items():
            if not isinstance(cond, sympy.core.relational.Relational) or x not in {
                s.name for s in cond.free_symbols
            }:
                raise ArgumentError(
                    f"the key {label!r} must be a condition on {x!r} (a SymPy relational such "
                    f"as compute >= memory), got {cond}"
                )
        needed = set().union(
            *(
                e.free_symbols
                for e in [*self.curves.values(), *self.bounds.values(), *self.keys.values()]
            )
        )
        needed_names = {s.name for s in needed}
        self.presets = {
            name: spec.names(needed_names)
            for name, spec in self.specs.items()
            if isinstance(spec, Preset)
        }
        direct = {name for name in self.specs if name not in self.presets}
        covered = direct.union(*self.presets.values())
        missing = sorted(needed_names - covered)
        unknown = sorted(direct - needed_names)
        twice = sorted(direct.intersection(*self.presets.values())) if self.presets else []
        if missing or unknown or twice:
            raise ArgumentError(
                f"controls must match the formulas' symbols: missing {missing}, "
                f"unknown {unknown}, set twice {twice}"
            )
        if x not in direct:
            raise ArgumentError(f"x={x!r} must be one of the controls: {sorted(direct)}")
        if any(x in {s.name for s in e.free_symbols} for e in self.bounds.values()):
            raise ArgumentError(f"a bound on {x!r} may not depend on {x!r} itself")
        words = dict(labels or {})
        if set(words) - set(self.specs):
            raise ArgumentError(f"labels for no control: {sorted(set(words) - set(self.specs))}")
        # Each control's label in words, with its symbol and unit (controls.label).
        self.control_labels = {n: control_label(n, words.get(n)) for n in self.specs}
        self.control_html = {n: label_html(n, words.get(n)) for n in self.specs}
        self.functions = {label: numeric(expr) for label, expr in self.curves.items()}
        self.bound_functions = {r: numeric(expr) for r, expr in self.bounds.items()}
        self.key_functions = {label: numeric(cond) for label, cond in self.keys.items()}
        if self.keys and not isinstance(self.specs[x], Range):
            raise ArgumentError(f"keys need x={x!r} to be a Range: they search its step grid")
        self.unit = unit
        self.format = value_format or (lambda v: fmt.si(v, unit))
        self.values = {name: self.specs[name].value for name in direct}
        # A Choice is set by its label: bf16 and fp16 have the same value but are two buttons.
        self.labels = {n: s.label for n, s in self.specs.items() if isinstance(s, Choice | Preset)}
        for name in self.presets:
            self._set(name, self.labels[name])
        self._grid = self.specs[x].grid()
        self._build_figure(title, xlabel or self.control_labels[x], ylabel or unit, logx, logy)
        self._widgets = None
        self._syncing = False

    def show_control(self, name: str, value=None) -> str:
        """A control's value as the widgets print it (its label for a choice or a preset)."""
        if name in self.labels:
            return self.labels[name]
        return show(name, self.values[name] if value is None else value)

    def _build_figure(self, title, xlabel, ylabel, logx, logy):
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter

        # Fixed margins, not a layout engine: constrained layout draws the figure twice per
        # frame, and a slider redraw must stay well under 100 ms.
        self.figure = Figure(figsize=(6.4, 3.6), dpi=100)
        self.figure.subplots_adjust(left=0.16, right=0.95, bottom=0.14, top=0.9)
        ax = self.axes = self.figure.add_subplot()
        ax.set_xscale("log" if logx else "linear")
        ax.set_yscale("log" if logy else "linear")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.set_xlim(self._grid[0], self._grid[-1])
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: self.format(v) if v else "0"))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: show(self.x, v)))
        ax.xaxis.set_major_locator(_locator(logx, self._grid[0], self._grid[-1]))
        ax.grid(True, alpha=0.3)
        self.lines, self.markers, self.regions = {}, {}, {}
        for i, label in enumerate(self.curves):
            color, dashes = curve_style(i)
            style = (0, dashes) if dashes else "-"
            (self.lines[label],) = ax.plot([], [], color=color, ls=style, lw=2, label=label)
            (self.markers[label],) = ax.plot([], [], "o", color=color)
        for region in self.bounds:
            # x past the bound: shaded grey and named (a blended transform: x in data, y in
            # the axes' own 0-1, so the band spans the height whatever the y range).
            band = ax.axvspan(self._grid[-1], self._grid[-1], color="0.5", alpha=0.2, lw=0)
            text = ax.text(0, 0.97, region, transform=ax.get_xaxis_transform(), ha="right",
                           va="top", fontsize=9, color="0.25")  # fmt: skip
            self.regions[region] = (band, text)
        ax.legend(loc="upper left")

    def evaluate(self, values: Mapping[str, float] | None = None) -> dict[str, float]:
        """Each curve's value at the current (or given) control values."""
        values = self.values if values is None else values
        return {label: float(f.from_values(values)) for label, f in self.functions.items()}

    def limits(self, values: Mapping[str, float] | None = None) -> dict[str, float]:
        """Each named region's bound on x at the current (or given) values: x above it is in
        the region (past the context window, more than fits in memory)."""
        values = self.values if values is None else values
        return {r: float(f.from_values(values)) for r, f in self.bound_functions.items()}

    def key_grid(self) -> np.ndarray:
        """Every value of x on its control's step grid, from ``min`` to ``max``, or its only
        values (``Range.only``): where the keys are looked for (the page builds the same list
        from the same numbers)."""
        r = self.specs[self.x]
        if r.only:  # a degree the slider cannot take is no answer (3 GPUs of 1, 2, 4, 8)
            return np.asarray(r.only, dtype=float)
        n = int(np.floor((r.max - r.min) / r.step + 1e-9)) + 1
        return r.min + r.step * np.arange(n)

    def key_values(self, values: Mapping[str, float] | None = None) -> dict[str, float]:
        """Each key number at the current (or given) values: the least x at which its
        condition holds (``least_where``), NaN where none does up to the control's ``max``."""
        values = self.values if values is None else values
        grid, whole = self.key_grid(), self.key_whole()
        return {
            label: least_where(f, values, self.x, grid, whole)
            for label, f in self.key_functions.items()
        }

    def key_whole(self) -> bool | None:
        """Whether x is a count (its control's ``min`` and ``step`` whole numbers: tokens,
        requests, parameters), whose key is a whole number; None for a control with only some
        values (``Range.only``), whose key is one of them."""
        r = self.specs[self.x]
        return None if r.only else float(r.min).is_integer() and float(r.step).is_integer()

    def key_lines(self, found: Mapping[str, float] | None = None) -> list[str]:
        """The readout's key numbers as sentences (``KEY``, or ``KEY_NONE`` where none)."""
        found = self.key_values() if found is None else found
        x_label, high = self.control_labels[self.x], show(self.x, self.specs[self.x].max)
        return [
            KEY.format(key=label, x=x_label, value=show(self.x, v))
            if np.isfinite(v)
            else KEY_NONE.format(key=label, x=x_label, max=high)
            for label, v in found.items()
        ]

    def notes(self, limits: Mapping[str, float] | None = None) -> list[str]:
        """The readout's notes: one for each region the marked x lies in (``NOTE``)."""
        limits = self.limits() if limits is None else limits
        here = self.values[self.x]
        return [
            NOTE.format(x=self.control_labels[self.x], value=show(self.x, here), region=region,
                        bound=show(self.x, bound) if np.isfinite(bound) else str(bound))
            for region, bound in limits.items()
            if in_region(here, bound, self.sides[region])
        ]  # fmt: skip

    def update(self, **changes) -> dict[str, float]:
        """Set controls (clamped to their ranges), redraw, and return the readout values."""
        for name, value in changes.items():
            if name not in self.specs:
                raise ArgumentError(f"no control named {name!r}; controls: {sorted(self.specs)}")
            self._set(name, value)
        if self._widgets is not None:
            self._syncing = True  # one redraw below, not one per control moved
            try:
                for name, widget in self._widgets.items():
                    widget.value = self.labels[name] if name in self.labels else self.values[name]
                    if name in self._outputs:
                        self._outputs[name].value = self.show_control(name)
            finally:
                self._syncing = False
        return self.redraw()

    def _set(self, name: str, value: float | str) -> None:
        spec = self.specs[name]
        if isinstance(spec, Preset):
            if value not in spec.options:
                raise ArgumentError(f"{value!r} is not one of {list(spec.options)}")
            self.labels[name] = value
            self.values.update({n: spec.options[value][n] for n in self.presets[name]})
        elif isinstance(spec, Choice):
            self.labels[name] = spec.label_for(value, self.labels[name])
            self.values[name] = spec.labels[self.labels[name]]
        else:  # a slider takes any finite number (clamped), not text or NaN
            if not checks.is_real(value) or not math.isfinite(value):
                raise ArgumentError(
                    f"{name} must be a number (its slider goes from {spec.min:g} to "
                    f"{spec.max:g}), got {value!r}"
                )
            self.values[name] = spec.clamp(value)

    def redraw(self) -> dict[str, float]:
        """Recompute the curves for the current values, update the plot and the readout."""
        current = self.evaluate()
        sweep = {**self.values, self.x: self._grid}
        for label, f in self.functions.items():
            # A curve that does not depend on x is drawn flat across the sweep.
            y = np.broadcast_to(f.from_values(sweep), self._grid.shape)
            self.lines[label].set_data(self._grid, y)
            self.markers[label].set_data([self.values[self.x]], [current[label]])
        limits = self.limits()
        low, high = self._grid[0], self._grid[-1]
        for region, bound in limits.items():
            band, text = self.regions[region]
            edge = min(max(bound, low), high) if np.isfinite(bound) else high
            start, end = (edge, high) if self.sides[region] == "above" else (low, edge)
            if not np.isfinite(bound) and self.sides[region] == "above":
                start = low  # no bound to read: every x is shaded, none silently answered
            band.set_x(start)
            band.set_width(end - start)
            text.set_x(end)
            text.set_visible(start < end)
        self.axes.relim()
        self.axes.autoscale_view(scalex=False)
        if self.axes.get_yscale() == "log":
            self.axes.yaxis.set_major_locator(_locator(True, *self.axes.get_ylim()))
        if self._widgets is not None:
            self._image.value = self.png()
            self._readout.value = self.readout_html(current, limits)
        return current

    def png(self) -> bytes:
        buffer = io.BytesIO()
        # Light compression: a few kB larger, several times faster to encode.
        self.figure.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        return buffer.getvalue()

    def readout_html(self, current: Mapping[str, float], limits=None) -> str:
        caption = CAPTION.format(x=self.control_labels[self.x], value=self.show_control(self.x))
        rows = "".join(
            f"<tr><td>{label}</td><td><b>{self.format(value)}</b></td></tr>"
            for label, value in current.items()
        )
        notes = "".join(f"<p>{note}</p>" for note in self.notes(limits))
        keys = "".join(f"<p><b>{line}</b></p>" for line in self.key_lines())
        return f"{keys}<table><caption>{caption}</caption>{rows}</table>{notes}"

    def widget(self):
        """The ipywidgets box (built once): controls, the plot as an image, the readout."""
        if self._widgets is None:
            import ipywidgets as w

            self._widgets, self._outputs, rows = {}, {}, []
            for name, spec in self.specs.items():
                if isinstance(spec, Range) and (spec.log or spec.only):
                    # A log slider steps through nice values, each shown with its unit.
                    options = [(show(name, v), v) for v in spec.stops()]
                    control = w.SelectionSlider(options=options, value=self.values[name])
                elif isinstance(spec, Range):
                    cls = w.IntSlider if float(spec.step).is_integer() else w.FloatSlider
                    control = cls(min=spec.min, max=spec.max, step=spec.step,
                                  value=self.values[name], readout=False)  # fmt: skip
                    self._outputs[name] = w.HTML(self.show_control(name))
                elif isinstance(spec, Preset):
                    control = w.Dropdown(options=list(spec.options), value=spec.label)
                elif isinstance(spec.options, Mapping):
                    control = w.ToggleButtons(options=list(spec.labels), value=spec.label)
                else:
                    control = w.SelectionSlider(options=list(spec.labels), value=spec.label)
                control.description = self.control_html[name]
                control.description_allow_html = True
                control.style = {"description_width": "initial"}
                control.observe(self._on_change(name), names="value")
                self._widgets[name] = control
                output = self._outputs.get(name)
                rows.append(w.HBox([control, output]) if output else control)
            self._image = w.Image(format="png")
            self._readout = w.HTML()
            self.redraw()
            self._box = w.VBox([w.VBox(rows), self._image, self._readout])
        return self._box

    def _on_change(self, name: str) -> Callable:
        def handler(change):
            if not self._syncing:
                self._set(name, change["new"])
                if name in self._outputs:
                    self._outputs[name].value = self.show_control(name)
                self.redraw()

        return handler

    def _repr_mimebundle_(self, **kwargs):
        # Jupyter renders the ipywidgets view; the static book renders the HTML, which
        # recomputes in the browser without a kernel (inference_arithmetic.page.live).
        bundle = self.widget()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = live_html(self)
        # The plot at the defaults, for outputs that can show neither (the PDF), through the
        # book's renderer as every figure (page.figures).
        data, size = figures.png(self.figure)
        bundle["image/png"] = base64.b64encode(data).decode("ascii")
        return bundle, {"image/png": size}


def memory_budget(gpu=None) -> dict:
    """The library's memory budget by symbol, for a widget's bounds: the memory utilization
    and the token budget (which sizes the activations' reserve) of a default scenario on
    ``gpu`` (the default engine's budget there, ``scenario.default_budget``)."""
    from inference_arithmetic.core.symbols import P_max, mu
    from inference_arithmetic.serving.scenario import DEFAULT_MEMORY_UTILIZATION, default_budget

    return {mu: DEFAULT_MEMORY_UTILIZATION, P_max: default_budget(gpu)}


def memory_limit(arch, gpu="h100-sxm", **values):
    """The most requests whose caches fit beside the weights and the activations' reserve, at
    the library's memory budget on ``gpu`` (``latency.max_concurrency``, never below 0): a
    bound for ``beyond=``. ``values`` put in more, by keyword name, e.g.
    ``kv_bytes_per_number=b``. The GPU is the book's (an H100 SXM) unless given: the default
    engine's token budget, which sizes the activations' reserve, is the GPU's
    (``Engine.batch``)."""
    from inference_arithmetic.core.symbols import by_name
    from inference_arithmetic.formulas import latency

    limit = latency.max_concurrency(arch).subs(memory_budget(gpu))
    return sympy.Max(0, limit.subs({by_name(name): v for name, v in values.items()}))


def in_region(x: float, bound: float, side: str) -> bool:
    """Whether x lies in a region ``side`` ("above" or "below") of ``bound``; a bound that is
    not a number (NaN) puts every x in the region."""
    return not x <= bound if side == "above" else not x >= bound


def first_where(condition, values: Mapping[str, float], grid: np.ndarray) -> float:
    """The first value of ``grid`` at which ``condition`` (a compiled relational, evaluated at
    ``values``, whose x is ``grid``) holds; NaN where it holds nowhere."""
    held = np.broadcast_to(np.asarray(condition.from_values(values), dtype=bool), grid.shape)
    return float(grid[np.argmax(held)]) if held.any() else float("nan")


def least_where(condition, values: Mapping[str, float], x: str, grid, whole: bool | None) -> float:
    """The least ``x`` at which ``condition`` holds (a key's: false below one value of x, true
    from it on), NaN where it holds nowhere on ``grid``: the first value of ``grid`` where it
    holds (``first_where``) and, between it and the value before, the crossing itself, by
    bisection: the least whole number where ``whole``, else the least float (a readout then
    agrees with the formula, not with the slider's steps). ``whole`` None: ``grid`` holds the
    only values x takes, and the first of them is the key. The page's ``key`` does the same,
    operation for operation."""
    grid = np.asarray(grid, dtype=float)
    found = first_where(condition, {**values, x: grid}, grid)
    if whole is None or not np.isfinite(found) or found == grid[0]:
        return found

    def holds(at):
        return bool(condition.from_values({**values, x: at}))

    low, high = float(grid[np.searchsorted(grid, found) - 1]), found
    if whole:
        low, high = math.floor(low), math.ceil(high)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if holds(middle) else (middle, high)
        return float(high)
    while True:  # halve until no float lies between the two
        middle = low + (high - low) / 2
        if not low < middle < high:
            return high
        low, high = (low, middle) if holds(middle) else (middle, high)


def _locator(log: bool, low: float, high: float):
    """Ticks for an axis from ``low`` to ``high``: 4 to 8 of them; on a log axis decades, and
    1-2-5 within them when the axis spans under three decades."""
    from matplotlib.ticker import LogLocator, MaxNLocator

    if not log:
        return MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10])
    decades = np.log10(high / low) if low > 0 and high > low else 0
    if decades < 1:
        return LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0))
    return LogLocator(subs=(1.0, 2.0, 5.0) if decades < 3 else (1.0,), numticks=8)


def formula_widget(curves, x, controls, **options) -> FormulaWidget:
    """A plot of ``curves`` (label -> SymPy formula) against the symbol ``x``, one control per
    symbol (``Range`` or ``Choice``), that redraws in place when a control moves.

    Options: ``unit`` or ``value_format`` (how values print), ``title``, ``xlabel`` (by
    default the x control's label), ``ylabel``, ``logx``, ``logy``; ``labels``, a control's
    name in words where the chapter has its own (``{"seq_len": "prompt length"}``: the symbol
    and unit are added, ``controls.label``); ``beyond``, regions of x to shade and name: region
    -> SymPy bound, x above the bound being in the region (``{"past the context window":
    S_max}``), and the readout says so when the marker is there; ``below``, the same for x
    below a bound (``{"does not fit": least_gpus}``); ``keys``, the numbers the widget is
    about, each label -> a SymPy condition on x (``{"balance point": compute >= memory}``):
    the readout shows the least x of the x control's step grid at which it holds (``KEY``).
    Every symbol of every formula
    and bound needs a control, and every control a symbol: a mismatch raises ``ValueError``.
    """
    return FormulaWidget(curves, x, controls, **options)
