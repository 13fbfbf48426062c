"""The same widget without a kernel: HTML and a little JavaScript generated from the formulas.

A published page has no Python behind it, so ipywidgets sliders there would move and compute
nothing. ``live_html(widget)`` turns a ``FormulaWidget``'s declarative description into a
self-contained block: the formulas printed to JavaScript (``printing.javascript``, never
re-typed), the controls, an SVG plot and a readout that recompute in the browser. Each readout
cell carries the exact value in ``data-value``, which the browser test compares with the
library. Jupyter shows the ipywidgets version; the book shows this one (``_config.yml``).
"""

from __future__ import annotations

import html
import itertools
import json

import numpy as np

from inference_arithmetic.core import format as fmt
from inference_arithmetic.core import printing
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.page.controls import Choice, Preset, Range, curve_style, display
from inference_arithmetic.page.scripts import script

__all__ = [
    "spec",
    "live_html",
    "embed_json",
    "FORMAT_RUNTIME",
    "format_name",
    "CAPTION",
    "NOTE",
    "KEY",
    "KEY_NONE",
]

CAPTION = "at {x} = {value}"
"""The readout's caption: the x control's label and its value (its label, or as it prints)."""

NOTE = "{x} = {value} is {region}: the limit is {bound}."
"""The readout's note when the marked x lies in a named region (``formula_widget(beyond=)``)."""

KEY = "{key}: {x} = {value}"
"""A key number of the widget (``formula_widget(keys=)``): the least x at which its condition
holds."""

KEY_NONE = "{key}: no {x} up to {max}"
"""The same where the condition holds nowhere on the x control's range."""

_ids = itertools.count()

# Which of ia.format's functions a widget prints its values with, by name, for the browser.
_FORMATS = {
    fmt.nbytes: "nbytes",
    fmt.seconds: "seconds",
    fmt.flops: "flops",
    fmt.flop_rate: "flop_rate",
    fmt.count: "count",
    fmt.bandwidth: "bandwidth",
    fmt.usd: "usd",
    fmt.percent: "percent",
}


def format_name(function) -> str:
    """The name under which the page's ``iaShow`` knows one of ia.format's functions."""
    return _FORMATS.get(function, "si")


def embed_json(data) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element (no ``</`` to end it)."""
    return json.dumps(data).replace("</", "<\\/")


def _js(expr):
    """A formula for the page: the body of a JavaScript function of its arguments, in
    ``numeric``'s order (``printing.javascript``), and its SymPy text, which the browser test
    reads back."""
    return {**printing.javascript(expr), "sympy": str(expr)}


def spec(widget) -> dict:
    """The widget's description as JSON-ready data: formulas in JavaScript, controls, grid."""
    # What a FormulaWidget has (not the class: widgets imports this module, not the reverse).
    if not all(hasattr(widget, part) for part in ("specs", "curves", "functions", "axes")):
        raise ArgumentError(
            f"widget must be a FormulaWidget (ia.widgets.formula_widget(...)), got {widget!r}"
        )
    controls = []
    for name, control in widget.specs.items():
        common = {
            "name": name,
            "label": widget.control_labels[name],
            "html": widget.control_html[name],
            "show": list(display(name)),
        }
        if isinstance(control, Range):
            entry = {
                "kind": "range",
                "min": control.min,
                "max": control.max,
                "step": control.step,
                "value": widget.values[name],
            }
            if control.log or control.only:  # the slider moves through these, a stop a step
                entry["stops"] = control.stops()
                entry["only"] = bool(control.only)
        elif isinstance(control, Preset):
            options = {
                label: {n: float(v[n]) for n in widget.presets[name]}
                for label, v in control.options.items()
            }
            entry = {"kind": "preset", "options": options, "value": widget.labels[name]}
        elif isinstance(control, Choice):
            entry = {
                "kind": "choice",
                "options": list(control.labels.items()),
                "value": widget.labels[name],
            }
        controls.append(common | entry)
    curves = []
    for i, (label, expr) in enumerate(widget.curves.items()):
        color, dashes = curve_style(i)
        # Dash lengths are in line widths, as matplotlib scales them; the page's lines are 2 px.
        curves.append(
            {
                "label": label,
                **_js(expr),
                "color": color,
                "dash": " ".join(f"{2 * d:g}" for d in dashes),
            }
        )
    bounds = [
        {
            "region": region,
            "side": widget.sides[region],
            **_js(expr),
        }
        for region, expr in widget.bounds.items()
    ]
    keys = [{"label": label, **_js(cond)} for label, cond in getattr(widget, "keys", {}).items()]
    x_range = widget.specs[widget.x]
    return {
        "x": widget.x,
        "keys": keys,
        # The x control's step grid, where the keys are looked for (FormulaWidget.key_grid);
        # a control with only some values (Range.only) gives its stops instead.
        "key_grid": [x_range.min, x_range.max, x_range.step] if keys else None,
        "key_whole": widget.key_whole() if keys else None,  # the crossing: a count or a float
        "key": KEY,
        "key_none": KEY_NONE,
        "grid": [float(v) for v in np.asarray(widget._grid)],
        "values": {k: float(v) for k, v in widget.values.items()},
        "controls": controls,
        "curves": curves,
        "bounds": bounds,
        "format": format_name(widget.format),
        "caption": CAPTION,
        "note": NOTE,
        "unit": widget.unit,
        "title": widget.axes.get_title(),
        "xlabel": widget.axes.get_xlabel(),
        "ylabel": widget.axes.get_ylabel(),
        "logx": widget.axes.get_xscale() == "log",
        "logy": widget.axes.get_yscale() == "log",
    }


def live_html(widget) -> str:
    """A self-contained block (no external script, no network) that recomputes in the page."""
    element = f"ia-live-{next(_ids)}"
    data = embed_json(spec(widget))
    alt = html.escape(f"Interactive plot: {widget.axes.get_title() or ', '.join(widget.curves)}")
    return (
        f"<style>{_STYLE}</style>"
        f'<div class="ia-live" id="{element}" role="figure" aria-label="{alt}">'
        f'<script type="application/json" class="ia-live-spec">{data}</script>'
        f'<div class="ia-live-controls"></div><div class="ia-live-legend"></div>'
        f'<svg class="ia-live-plot" width="640" height="340" role="img" aria-label="{alt}"></svg>'
        '<div class="ia-live-keys" role="status"></div><table class="ia-live-readout"></table>'
        '<div class="ia-live-notes" role="status"></div>'
        f"</div><script>{FORMAT_RUNTIME}{script('live.js')}\n"
        f"iaLive(document.getElementById({json.dumps(element)}));</script>"
    )


_STYLE = (
    ".ia-live{margin:.5em 0 1em}"
    # The controls in three aligned columns (label, input, value); one row each on a phone.
    ".ia-live-controls{display:grid;grid-template-columns:max-content minmax(8em,16em) auto;"
    "gap:.3em .8em;align-items:center}.ia-live-control{display:contents}"
    "@media (max-width:600px){.ia-live-controls{display:block}.ia-live-control{display:flex;"
    "flex-wrap:wrap;align-items:center;gap:.2em .6em;margin:.3em 0}"
    ".ia-live-name{flex-basis:100%}.ia-live-control input[type=range]{flex:1 1 8em}}"
    ".ia-live-control input[type=range]{width:100%;min-width:0}"
    ".ia-live-control output{font-variant-numeric:tabular-nums;min-width:7em}"
    ".ia-live-plot{display:block;max-width:100%;touch-action:pan-y}"
    ".ia-live-plot text{fill:currentColor}.ia-live-readout td{padding:0 .6em}"
    ".ia-live-legend{display:flex;flex-wrap:wrap;gap:.2em 1.2em;font-size:.9em}"
    ".ia-live-tip{stroke:#888}"
    ".ia-live-notes p{margin:.3em 0;font-weight:600}"
    ".ia-live-keys p{margin:.4em 0;font-weight:600}"
    # The theme mutes captions, too faint on the light output area of its dark mode.
    ".ia-live-readout caption{color:inherit;caption-side:top;text-align:left;"
    "white-space:nowrap}"
)

FORMAT_RUNTIME = fmt.js_runtime()
"""Formatting in the page (``iaShow(value, format, unit)``), shared by every live block."""
