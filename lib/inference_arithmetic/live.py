"""The same widget without a kernel: HTML and a little JavaScript generated from the formulas.

A published page has no Python behind it, so ipywidgets sliders there would move and compute
nothing. ``live_html(widget)`` turns a ``FormulaWidget``'s declarative description into a
self-contained block: the formulas printed to JavaScript by SymPy's code printer (never
re-typed), the controls, an SVG plot and a readout that recompute in the browser. Each readout
cell carries the exact value in ``data-value``, which the browser test compares with the
library. Jupyter shows the ipywidgets version; the book shows this one (``_config.yml``).
"""

from __future__ import annotations

import html
import itertools
import json

import numpy as np
import sympy

from inference_arithmetic import format as fmt
from inference_arithmetic.controls import Choice, Preset, Range, curve_style

__all__ = ["spec", "live_html", "embed_json", "FORMAT_RUNTIME", "format_name", "CAPTION"]

CAPTION = "at {x} = {value}"
"""The readout's caption: the x control and its value (its label, or ``format.number``)."""

_ids = itertools.count()

# Which of ia.format's functions a widget prints its values with, by name, for the browser.
_FORMATS = {
    fmt.nbytes: "nbytes",
    fmt.seconds: "seconds",
    fmt.flops: "flops",
    fmt.flop_rate: "flop_rate",
    fmt.count: "count",
    fmt.bandwidth: "bandwidth",
}


def format_name(function) -> str:
    """The name under which the page's ``iaShow`` knows one of ia.format's functions."""
    return _FORMATS.get(function, "si")


def embed_json(data) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element (no ``</`` to end it)."""
    return json.dumps(data).replace("</", "<\\/")


def spec(widget) -> dict:
    """The widget's description as JSON-ready data: formulas in JavaScript, controls, grid."""
    controls = []
    for name, control in widget.specs.items():
        if isinstance(control, Range):
            entry = {"name": name, "kind": "range", "min": control.min, "max": control.max,
                     "step": control.step, "value": widget.values[name]}  # fmt: skip
        elif isinstance(control, Preset):
            options = {label: {n: float(v[n]) for n in widget.presets[name]}
                       for label, v in control.options.items()}  # fmt: skip
            entry = {"name": name, "kind": "preset", "options": options,
                     "value": widget.labels[name]}  # fmt: skip
        elif isinstance(control, Choice):
            entry = {"name": name, "kind": "choice", "options": list(control.labels.items()),
                     "value": widget.labels[name]}  # fmt: skip
        controls.append(entry)
    curves = []
    for i, (label, expr) in enumerate(widget.curves.items()):
        args = widget.functions[label].args
        color, dashes = curve_style(i)
        # Dash lengths are in line widths, as matplotlib scales them; the page's lines are 2 px.
        curves.append({"label": label, "args": list(args), "js": sympy.jscode(expr),
                       "sympy": str(expr), "color": color,
                       "dash": " ".join(f"{2 * d:g}" for d in dashes)})  # fmt: skip
    return {
        "x": widget.x,
        "grid": [float(v) for v in np.asarray(widget._grid)],
        "values": {k: float(v) for k, v in widget.values.items()},
        "controls": controls,
        "curves": curves,
        "format": format_name(widget.format),
        "caption": CAPTION,
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
        f'<div class="ia-live-controls"></div><svg class="ia-live-plot" width="640" height="360"'
        f' viewBox="0 0 640 360" role="img" aria-label="{alt}"></svg>'
        f'<table class="ia-live-readout"></table></div>'
        f"<script>{FORMAT_RUNTIME}{_RUNTIME}\n"
        f"iaLive(document.getElementById({json.dumps(element)}));</script>"
    )


_STYLE = (
    ".ia-live-control{display:flex;align-items:center;gap:.5em;margin:.2em 0}"
    ".ia-live-control input[type=range]{width:16em}.ia-live-plot{max-width:100%;height:auto}"
    ".ia-live-plot text{fill:currentColor}.ia-live-readout td{padding:0 .6em}"
    # The theme mutes captions, too faint on the light output area of its dark mode.
    ".ia-live-readout caption{color:inherit}"
)

FORMAT_RUNTIME = fmt.js_runtime()
"""Formatting in the page (``iaShow(value, format, unit)``), shared by every live block."""

_RUNTIME = r"""
var iaLive = window.iaLive || (window.iaLive = function (root) {
  var spec = JSON.parse(root.querySelector(".ia-live-spec").textContent);
  var values = Object.assign({}, spec.values), labels = {};
  var fns = spec.curves.map(function (c) {
    return new Function(c.args.join(","), "return (" + c.js + ");");
  });
  function at(i, x) {
    var c = spec.curves[i];
    return fns[i].apply(null, c.args.map(function (a) { return a === spec.x ? x : values[a]; }));
  }
  function show(v) { return iaShow(v, spec.format, spec.unit); }
  var labels = {};  // the label of each choice's current value, as the Python view shows it
  spec.controls.forEach(function (c) { if (c.kind === "choice") labels[c.name] = c.value; });
  var box = root.querySelector(".ia-live-controls");
  spec.controls.forEach(function (c) {
    var row = document.createElement("label");
    row.className = "ia-live-control";
    row.textContent = c.name + " ";
    var input, out = document.createElement("output");
    if (c.kind === "range") {
      input = document.createElement("input");
      input.type = "range"; input.min = c.min; input.max = c.max; input.step = c.step;
      input.value = c.value; out.textContent = c.value;
      input.addEventListener("input", function () {
        values[c.name] = Number(input.value); out.textContent = input.value; draw();
      });
    } else {
      input = document.createElement("select");
      var names = c.kind === "preset" ? Object.keys(c.options) : c.options.map(function (o) { return o[0]; });
      names.forEach(function (n) {
        var o = document.createElement("option"); o.value = n; o.textContent = n; input.appendChild(o);
      });
      input.value = c.value;
      input.addEventListener("change", function () {
        if (c.kind === "preset") Object.assign(values, c.options[input.value]);
        else values[c.name] = c.options.filter(function (o) { return o[0] === input.value; })[0][1];
        if (c.kind === "choice") labels[c.name] = input.value;
        draw();
      });
    }
    input.name = c.name; input.setAttribute("aria-label", c.name);
    row.appendChild(input); row.appendChild(out); box.appendChild(row);
  });
  var svg = root.querySelector(".ia-live-plot"), NS = "http://www.w3.org/2000/svg";
  var W = 640, H = 360, L = 90, R = 20, T = 30, B = 45;
  function el(name, attrs, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e); return e;
  }
  function scale(lo, hi, log, a, b) {
    var f = log ? Math.log : function (v) { return v; };
    var l = f(lo), h = f(hi); if (h === l) { h = l + 1; }
    return function (v) { return a + (f(v) - l) / (h - l) * (b - a); };
  }
  function draw() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var ys = spec.curves.map(function (c, i) { return spec.grid.map(function (x) { return at(i, x); }); });
    var all = [].concat.apply([], ys).filter(function (v) { return isFinite(v) && (!spec.logy || v > 0); });
    var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all);
    if (!spec.logy) { lo = Math.min(lo, 0); }
    var sx = scale(spec.grid[0], spec.grid[spec.grid.length - 1], spec.logx, L, W - R);
    var sy = scale(lo, hi, spec.logy, H - B, T);
    el("rect", {x: L, y: T, width: W - L - R, height: H - T - B, fill: "none", stroke: "#888"});
    var yl = el("text", {x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "font-size": 12,
                         transform: "rotate(-90 14 " + (T + H - B) / 2 + ")"}, spec.ylabel);
    el("text", {x: W / 2, y: 18, "text-anchor": "middle", "font-size": 14}, spec.title);
    el("text", {x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", "font-size": 12}, spec.xlabel);
    el("text", {x: L - 4, y: T + 10, "text-anchor": "end", "font-size": 11}, show(hi));
    el("text", {x: L - 4, y: H - B, "text-anchor": "end", "font-size": 11}, show(lo));
    el("text", {x: L, y: H - B + 16, "text-anchor": "middle", "font-size": 11}, String(spec.grid[0]));
    el("text", {x: W - R, y: H - B + 16, "text-anchor": "middle", "font-size": 11},
       String(spec.grid[spec.grid.length - 1]));
    var rows = "", xv = values[spec.x];
    spec.curves.forEach(function (c, i) {
      var line = {fill: "none", stroke: c.color, "stroke-width": 2, "stroke-dasharray": c.dash};
      var pts = spec.grid.map(function (x, j) { return sx(x).toFixed(1) + "," + sy(ys[i][j]).toFixed(1); });
      el("polyline", Object.assign({points: pts.join(" ")}, line));
      var v = at(i, xv);
      el("circle", {cx: sx(xv), cy: sy(v), r: 4, fill: c.color});
      // The legend: a sample of the line, and its label in the text colour (readable in light
      // and dark mode, which some palette colours are not on their own).
      var ly = T + 16 + 16 * i;
      el("line", Object.assign({class: "ia-live-key", x1: L + 8, y1: ly - 4, x2: L + 36, y2: ly - 4}, line));
      el("text", {x: L + 42, y: ly, "font-size": 12}, c.label);
      rows += '<tr><td>' + c.label + '</td><td class="ia-live-value" data-curve="' + i +
              '" data-value="' + v + '"><b>' + show(v) + "</b></td></tr>";
    });
    root.querySelector(".ia-live-readout").innerHTML =
      "<caption>" + spec.caption.replace("{x}", spec.x).replace("{value}",
        spec.x in labels ? labels[spec.x] : iaShow(xv, "number")) + "</caption>" + rows;
  }
  draw();
});
"""
