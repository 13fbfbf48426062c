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
from collections.abc import Callable, Mapping

import numpy as np
import sympy

from inference_arithmetic import format as fmt
from inference_arithmetic.controls import (  # noqa: F401  (re-exported: ia.widgets.Range, ...)
    DASHES,
    PALETTE,
    Choice,
    Preset,
    Range,
    curve_style,
    gpu_preset,
    model_preset,
)
from inference_arithmetic.live import CAPTION, live_html
from inference_arithmetic.numeric import numeric

# Range, Choice, Preset, curve_style, model_preset and gpu_preset are ``controls``'s, used here
# and by the chapters as ``ia.widgets.Range``; they are documented there.
__all__ = ["FormulaWidget", "formula_widget"]


class FormulaWidget:
    """Controls, a plot that updates in place, and a readout; see ``formula_widget``."""

    def __init__(self, curves, x, controls, unit="", value_format=None, title="",
                 xlabel=None, ylabel=None, logx=False, logy=False):  # fmt: skip
        self.curves = {label: sympy.sympify(expr) for label, expr in curves.items()}
        self.x = x
        self.specs = dict(controls)
        needed = set().union(*(e.free_symbols for e in self.curves.values()))
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
            raise ValueError(
                f"controls must match the formulas' symbols: missing {missing}, "
                f"unknown {unknown}, set twice {twice}"
            )
        if x not in direct:
            raise ValueError(f"x={x!r} must be one of the controls: {sorted(direct)}")
        self.functions = {label: numeric(expr) for label, expr in self.curves.items()}
        self.unit = unit
        self.format = value_format or (lambda v: fmt.si(v, unit))
        self.values = {name: self.specs[name].value for name in direct}
        # A Choice is set by its label: bf16 and fp16 have the same value but are two buttons.
        self.labels = {n: s.label for n, s in self.specs.items() if isinstance(s, Choice | Preset)}
        for name in self.presets:
            self._set(name, self.labels[name])
        self._grid = self.specs[x].grid()
        self._build_figure(title, xlabel or x, ylabel or unit, logx, logy)
        self._widgets = None
        self._syncing = False

    def _build_figure(self, title, xlabel, ylabel, logx, logy):
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter

        # Fixed margins, not a layout engine: constrained layout draws the figure twice per
        # frame, and a slider redraw must stay well under 100 ms.
        self.figure = Figure(figsize=(6.4, 3.6), dpi=100)
        self.figure.subplots_adjust(left=0.16, right=0.97, bottom=0.14, top=0.9)
        ax = self.axes = self.figure.add_subplot()
        ax.set_xscale("log" if logx else "linear")
        ax.set_yscale("log" if logy else "linear")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: self.format(v) if v else "0"))
        ax.grid(True, alpha=0.3)
        self.lines, self.markers = {}, {}
        for i, label in enumerate(self.curves):
            color, dashes = curve_style(i)
            style = (0, dashes) if dashes else "-"
            (self.lines[label],) = ax.plot([], [], color=color, ls=style, lw=2, label=label)
            (self.markers[label],) = ax.plot([], [], "o", color=color)
        ax.legend(loc="upper left")

    def evaluate(self, values: Mapping[str, float] | None = None) -> dict[str, float]:
        """Each curve's value at the current (or given) control values."""
        values = self.values if values is None else values
        return {label: float(f.from_values(values)) for label, f in self.functions.items()}

    def update(self, **changes) -> dict[str, float]:
        """Set controls (clamped to their ranges), redraw, and return the readout values."""
        for name, value in changes.items():
            if name not in self.specs:
                raise ValueError(f"no control named {name!r}; controls: {sorted(self.specs)}")
            self._set(name, value)
        if self._widgets is not None:
            self._syncing = True  # one redraw below, not one per control moved
            try:
                for name, widget in self._widgets.items():
                    widget.value = self.labels[name] if name in self.labels else self.values[name]
            finally:
                self._syncing = False
        return self.redraw()

    def _set(self, name: str, value: float | str) -> None:
        spec = self.specs[name]
        if isinstance(spec, Preset):
            if value not in spec.options:
                raise ValueError(f"{value!r} is not one of {list(spec.options)}")
            self.labels[name] = value
            self.values.update({n: spec.options[value][n] for n in self.presets[name]})
        elif isinstance(spec, Choice):
            self.labels[name] = spec.label_for(value, self.labels[name])
            self.values[name] = spec.labels[self.labels[name]]
        else:
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
        self.axes.relim()
        self.axes.autoscale_view()
        if self._widgets is not None:
            self._image.value = self.png()
            self._readout.value = self.readout_html(current)
        return current

    def png(self) -> bytes:
        buffer = io.BytesIO()
        # Light compression: a few kB larger, several times faster to encode.
        self.figure.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        return buffer.getvalue()

    def readout_html(self, current: Mapping[str, float]) -> str:
        value = self.labels.get(self.x) or fmt.number(self.values[self.x])
        caption = CAPTION.format(x=self.x, value=value)
        rows = "".join(
            f"<tr><td>{label}</td><td><b>{self.format(value)}</b></td></tr>"
            for label, value in current.items()
        )
        return f"<table><caption>{caption}</caption>{rows}</table>"

    def widget(self):
        """The ipywidgets box (built once): controls, the plot as an image, the readout."""
        if self._widgets is None:
            import ipywidgets as w

            self._widgets = {}
            for name, spec in self.specs.items():
                if isinstance(spec, Range):
                    cls = w.IntSlider if float(spec.step).is_integer() else w.FloatSlider
                    control = cls(min=spec.min, max=spec.max, step=spec.step, value=spec.value)
                    if spec.max >= 1e5:  # d3-format SI prefixes: 7e10 reads "70.0G"
                        control.readout_format = ".3s"
                elif isinstance(spec, Preset):
                    control = w.Dropdown(options=list(spec.options), value=spec.label)
                elif isinstance(spec.options, Mapping):
                    control = w.ToggleButtons(options=list(spec.labels), value=spec.label)
                else:
                    control = w.SelectionSlider(options=list(spec.labels), value=spec.label)
                control.description = name
                control.style = {"description_width": "initial"}
                control.observe(self._on_change(name), names="value")
                self._widgets[name] = control
            self._image = w.Image(format="png")
            self._readout = w.HTML()
            self.redraw()
            self._box = w.VBox([w.VBox(list(self._widgets.values())), self._image, self._readout])
        return self._box

    def _on_change(self, name: str) -> Callable:
        def handler(change):
            if not self._syncing:
                self._set(name, change["new"])
                self.redraw()

        return handler

    def _repr_mimebundle_(self, **kwargs):
        # Jupyter renders the ipywidgets view; the static book renders the HTML, which
        # recomputes in the browser without a kernel (inference_arithmetic.live).
        bundle = self.widget()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = live_html(self)
        # The plot at the defaults, for outputs that can show neither (the PDF).
        bundle["image/png"] = base64.b64encode(self.png()).decode("ascii")
        return bundle


def formula_widget(curves, x, controls, **options) -> FormulaWidget:
    """A plot of ``curves`` (label -> SymPy formula) against the symbol ``x``, one control per
    symbol (``Range`` or ``Choice``), that redraws in place when a control moves.

    Options: ``unit`` or ``value_format`` (how values print), ``title``, ``xlabel``,
    ``ylabel``, ``logx``, ``logy``. Every symbol of every formula needs a control, and every
    control a symbol: a mismatch raises ``ValueError`` naming it.
    """
    return FormulaWidget(curves, x, controls, **options)
