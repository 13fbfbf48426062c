"""The calculator's form: ipywidgets in Jupyter, a live block in the book's page.

>>> c = widget(model="llama-3.1-70b", n_gpus=4, batch=32)
>>> c.result["bound"]["decode"]
'bandwidth'
>>> c.update(n_gpus=3).message.startswith("llama-3.1-70b's 64 attention heads")
True

What it computes is ``ia.calculate`` (``serving``): a ``Scenario``, checked by ``scenario.CHECKS``,
and the formulas of ``serving.report_formulas``. The page cannot run Python, so ``spec()``
gives it the same rules as data: every formula and every check's condition printed to
JavaScript by ``sympy.jscode``, the messages as templates, the readout's rows, and the
formats by name for the page's ``iaShow`` (``format.js_runtime()``, tested against
``format.show``). The page's script below is an interpreter of that data: it holds no formula,
no check and no message of its own.
"""

from __future__ import annotations

import functools
import html
import inspect
import itertools
import json
import math
import numbers

import sympy

from inference_arithmetic import serving
from inference_arithmetic.core import checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.dtypes import (
    ALIASES,
    COMPUTE_FORMATS,
    DTYPE_BYTES,
    activation_bytes,
    compute_format,
)
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.formulas import latency
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.hardware.gpus import gpu_names
from inference_arithmetic.models.config import (
    AUTO,
    model_names,
    weight_formats,
    weight_number_values,
)
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.page.live import FORMAT_RUNTIME, embed_json
from inference_arithmetic.serving import bands, cache, continuous, scenario

__all__ = [
    "Calculator",
    "widget",
    "warm",
    "ranges",
    "cell",
    "readout_html",
    "ROWS",
    "SAME",
    "COMPUTED",
]
__all__ += ["BANDED_CELL", "NOTES", "MODES", "STATIC", "CONTINUOUS", "CONTINUOUS_ROWS", "label"]

STATIC, CONTINUOUS = "static batch", "continuous serving"
MODES = [STATIC, CONTINUOUS]
"""The form's two modes: a batch of ``batch`` requests sent at once (``ia.calculate``), or a
stream of ``requests_per_s`` requests a second on a continuously batching engine
(``ia.steady_state``; ``batch`` is not used)."""

SAME = "as weights"
"""The compute format choice that computes in the weights' format's own (``compute_dtype=None``,
``dtypes.compute_format``); another (bf16 for int4 weights) is weight-only quantization."""
COMPUTES = [c for c in COMPUTE_FORMATS if c != "tf32"]
"""The compute formats the form offers (tf32 is no format to store weights or a cache in)."""
COMPUTED = "as computed"
"""The cache format choice that stores the KV cache in the compute format (``cache_dtype=None``)."""


@functools.cache
def _max_context() -> int:
    return max(registry_model(name).context_window or 0 for name in model_names())


def ranges() -> dict[str, tuple[int, int]]:
    """The form's whole-number inputs and their ranges (an input outside gets a message)."""
    return {
        "n_gpus": (1, 64),
        "replicas": (1, 64),
        "batch": (1, 4096),
        "prompt_len": (1, _max_context()),
        "output_len": (1, _max_context()),
    }


# The rows of the readout: a formula of serving.report_formulas, its label, its kind of
# quantity (ia.format.show). A row of kind "bound" names the bounds of its flags, in order.
_TABLE = """
weights        | weights per GPU                              | nbytes
kv_cache       | KV cache per GPU (prompt + output tokens)    | nbytes
memory         | memory per GPU                               | nbytes
budget         | memory budget per GPU (memory utilization)   | nbytes
capacity       | GPU memory                                   | nbytes
ttft           | time to first token                          | seconds
tpot           | time per output token                        | seconds
total          | time per request                             | seconds
throughput     | throughput (output tokens/s)                 | number
gpus           | GPUs in all (replicas x GPUs each)           | integer
cost_input     | cost per million input tokens                | usd
cost_output    | cost per million output tokens               | usd
cost_request   | cost per request                             | usd
prefill_compute_bound                                  | prefill is bound by | bound
decode_compute_bound_first decode_compute_bound_last   | decode is bound by  | bound
"""


# The readout of the continuous mode: a key of ``ia.steady_state``'s result.
_CONTINUOUS_TABLE = """
ttft            | time to first token                      | seconds
tpot            | time per output token                    | seconds
request_time    | time per request                         | seconds
throughput      | throughput (output tokens/s)             | number
concurrency     | requests in the engine                   | number
utilization     | utilization (rate / saturation rate)     | percent
saturation_rate | saturation rate (requests/s)             | number
"""


def _row(line: str) -> tuple:
    key, label, kind = (part.strip() for part in line.split("|"))
    return (tuple(key.split()) if kind == "bound" else key), label, kind


ROWS = [_row(line) for line in _TABLE.strip().splitlines()]
"""The readout's rows: (formula, label, kind), as ``_TABLE`` lists them."""
CONTINUOUS_ROWS = [_row(line) for line in _CONTINUOUS_TABLE.strip().splitlines()]
"""The continuous mode's rows: (key of ``ia.steady_state``'s result, label, kind)."""


NOTES = {
    "priced": "price ${price_per_hour} per GPU-hour, observed {price_date}",
    "unpriced": "no example price for this GPU",
    "exact": "time per token at the mean context (exact)",
    "approximate": "time per token at the mean context (approximate: the decode bound or "
    "window changes)",
    "continuous": "the steady state of a continuously batching engine (ia.steady_state), "
    "at the library's default efficiencies and token budget",
    "band": bands.describe(),
}
"""The sentence under the readout: its parts joined by "; ", the band's last."""


# The form's controls that are not one of the book's symbols, in words (the keyword in code is
# the control's name, which the messages use).
_WORDS = {
    "mode": "mode",
    "model": "model",
    "gpu": "GPU",
    "dtype": "weights' number format",
    "compute_dtype": "compute format",
    "cache_dtype": "KV cache format",
    "requests_per_s": "request rate (requests/s)",
}


def label(name: str) -> str:
    """A control's label in words: the book's symbol and unit where it is one of the book's
    quantities (``controls.label``), else its words."""
    from inference_arithmetic.page import controls

    if name == "prompt_len":
        return controls.label("seq_len", "prompt length")
    return _WORDS.get(name) or controls.label(name)


BANDED_CELL = "{value} ({low} to {high})"
"""A readout cell with its band (``serving.bands``): the page fills the same template."""


def _banded(values) -> dict:
    """The rows of the readout that carry a band, by mode: key -> (kind, whether a speed)."""
    return continuous.BANDED if "saturation_rate" in values else serving.BANDED


def cell(row, values) -> str:
    """One row of the readout (of ``ROWS``) as text: a formula's value in its kind, and in
    brackets its band where it has one (``serving.bands``), or the bounds of a phase
    (``serving.bound_text``)."""
    key, _, kind = row
    if kind == "bound":
        return serving.bound_text(*(values[k] for k in key))
    text, value = fmt.show(values[key], kind), values[key]
    if key not in _banded(values) or value is None:
        return text
    band_kind, speed = _banded(values)[key]
    low, high = bands.band(band_kind, value, speed)
    return BANDED_CELL.format(value=text, low=fmt.show(low, kind), high=fmt.show(high, kind))


def _note(values, gpu) -> str:
    if "saturation_rate" in values:
        return f"{NOTES['continuous']}; {NOTES['band']}."
    price = gpu.price_per_hour
    priced = NOTES["priced"].format(price_per_hour=price, price_date=gpu.price_date)
    first = priced if price is not None else NOTES["unpriced"]
    return f"{first}; {NOTES['exact' if values['exact'] else 'approximate']}; {NOTES['band']}."


def readout_html(values, gpu, message: str | None = None) -> str:
    """The readout table of ``serving.report_values``, or the message that replaces it."""
    if values is None:
        return f'<p class="ia-calc-message" role="alert"><b>{html.escape(message)}</b></p>'
    rows = "".join(
        f"<tr><td>{row[1]}</td><td><b>{html.escape(cell(row, values))}</b></td></tr>"
        for row in _rows(values)
    )
    return f"<table>{rows}</table><p>{html.escape(_note(values, gpu))}</p>"


def _rows(values) -> list:
    return CONTINUOUS_ROWS if "saturation_rate" in values else ROWS


def rate_message() -> str:
    """The message for a request rate outside its range, as a template of ``{value}``: the
    library's own (``checks.amount``), with the value it names cut out."""
    try:
        checks.amount("requests_per_s", -1.0, "requests per second", positive=True)
    except ValueError as error:
        return str(error).rsplit("got ", 1)[0] + "got {value}"
    raise AssertionError("unreachable")


def _number(name: str, value) -> None:
    """Refuse a value no number field of the form can hold: a whole number field anything but a
    whole number, the rate anything but a finite number (NaN, a string, a bool), each with its
    control's message (``checks``)."""
    # A number out of its range is the form's to answer (a message, as the page shows); a
    # value that is no number is the caller's mistake, which a message would hide.
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if name in ranges() and not (real and math.isfinite(value) and value == int(value)):
        checks.count(name, value, *ranges()[name])  # raises: not a whole number
    if name == "requests_per_s" and not (real and math.isfinite(value)):
        checks.amount(name, value, "requests per second", positive=True)  # raises


class Calculator:
    """The calculator's controls and readout: ipywidgets in Jupyter, a live page in the book.

    ``update(**changes)`` sets controls and recomputes: ``result`` is ``ia.calculate``'s, or
    None with the reason in ``message`` (an input outside its range, or a scenario the library
    refuses). Nothing is clamped: the form answers for what was typed, or says why not. A value
    no field can hold (a string, NaN, 2.5 requests) raises ``ArgumentError`` naming the control.
    """

    def __init__(self, **state):
        self.state = {
            "mode": STATIC,
            "model": "llama-3.1-8b",
            "gpu": "h100-sxm",
            "n_gpus": 1,
            "replicas": 1,
            "dtype": AUTO,
            "compute_dtype": SAME,
            "cache_dtype": COMPUTED,
            "batch": 1,
            "prompt_len": 2048,
            "output_len": 256,
            "requests_per_s": 4.0,
        }
        self._widgets = None
        self._syncing = False
        self.result, self.values, self.message = None, None, None
        self.update(**state)

    @property
    def choices(self) -> dict[str, list[str]]:
        return {
            "mode": MODES,
            "model": model_names(),
            "gpu": gpu_names(),
            "dtype": [AUTO, *DTYPE_BYTES],
            "compute_dtype": [SAME, *COMPUTES],
            "cache_dtype": [COMPUTED, *DTYPE_BYTES],
        }

    def arguments(self) -> dict:
        """The current controls as ``calculate``'s arguments."""
        compute, cache = self.state["compute_dtype"], self.state["cache_dtype"]
        compute, cache = (
            (None if compute == SAME else compute),
            (None if cache == COMPUTED else cache),
        )
        arguments = {**self.state, "compute_dtype": compute, "cache_dtype": cache}
        del arguments["mode"], arguments["requests_per_s"]
        if self.state["mode"] == CONTINUOUS:  # one request at a time enters the engine
            arguments |= {"batch": 1, "in_waves": True}
        return arguments

    def update(self, **changes):
        for name, value in changes.items():
            if value is None and name in ("compute_dtype", "cache_dtype"):
                value = SAME if name == "compute_dtype" else COMPUTED
            if name in self.choices:
                checks.choice(name, value, self.choices[name])
            elif name not in self.state:
                raise ArgumentError(f"no control named {name!r}; controls: {sorted(self.state)}")
            _number(name, value)
            self.state[name] = value
        try:
            for name, (low, high) in ranges().items():
                checks.count(name, self.state[name], low, high)
            if self.state["mode"] == CONTINUOUS:
                rate = self.state["requests_per_s"]
                checks.amount("requests_per_s", rate, "requests per second", positive=True)
                s = scenario.Scenario(**self._scenario_arguments())
                steady = continuous.steady_state_of(s, float(rate))
                self.result, self.values, self.message = steady, steady, None
            else:
                s = scenario.Scenario(**self._scenario_arguments())
                self.result, self.values, self.message = (
                    serving.report(s),
                    serving.report_values(s),
                    None,
                )
        except (ValueError, KeyError) as error:
            self.result, self.values = None, None
            self.message = error.args[0] if isinstance(error, KeyError) else str(error)
        if self._widgets is not None:
            self._syncing = True
            try:
                for name, control in self._widgets.items():
                    control.value = self.state[name]
            finally:
                self._syncing = False
            self._readout.value = self.html()
        return self

    def _scenario_arguments(self):
        arguments = self.arguments()
        return {"model": arguments.pop("model"), **arguments}

    def html(self) -> str:
        return readout_html(self.values, registry_gpu(self.state["gpu"]), self.message)

    def widget(self):
        """The ipywidgets form (built once): dropdowns, number fields, and the readout."""
        if self._widgets is None:
            import ipywidgets as w

            self._widgets = {}
            for name in self.state:
                if name in ranges():
                    control = w.IntText(value=self.state[name])
                elif name == "requests_per_s":
                    control = w.FloatText(value=self.state[name])
                else:
                    control = w.Dropdown(options=self.choices[name], value=self.state[name])
                control.description = label(name)
                control.style = {"description_width": "initial"}
                control.observe(self._on_change(name), names="value")
                self._widgets[name] = control
            self._readout = w.HTML(self.html())
            self._box = w.VBox([w.VBox(list(self._widgets.values())), self._readout])
        return self._box

    def _on_change(self, name):
        def handler(change):
            if not self._syncing:
                self.update(**{name: change["new"]})

        return handler

    def text(self) -> str:
        """The readout as plain text, for outputs that show no HTML (the PDF)."""
        args = ", ".join(f"{k}={v}" for k, v in self.state.items())
        if self.values is None:
            return f"Calculator ({args}): {self.message}"
        lines = [f"Calculator ({args}):"]
        lines += [f"  {row[1]}: {cell(row, self.values)}" for row in _rows(self.values)]
        return "\n".join(lines + [f"  {_note(self.values, registry_gpu(self.state['gpu']))}"])

    def spec(self) -> dict:
        """Everything the page needs, as JSON-ready data (module docstring)."""
        return {"state": self.state, **_page_data()}

    def live_html(self) -> str:
        """A self-contained block (no external script, no network) that recomputes in the page."""
        element = f"ia-calc-{next(_ids)}"
        return (
            f"<style>{_STYLE}</style>"
            f'<div class="ia-calc" id="{element}" role="form" aria-label="Inference calculator">'
            f'<script type="application/json" class="ia-calc-spec">{embed_json(self.spec())}'
            '</script><div class="ia-calc-controls"></div>'
            '<div class="ia-calc-readout" aria-live="polite"></div></div>'
            f"<script>{FORMAT_RUNTIME}{_steady_runtime()}{_RUNTIME}\n"
            f"iaCalc(document.getElementById({json.dumps(element)}));</script>"
        )

    def _repr_mimebundle_(self, **kwargs):
        # Jupyter renders the ipywidgets form; the static book renders the HTML, which
        # recomputes in the browser without a kernel; the PDF prints the text.
        bundle = self.widget()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = self.live_html()
        bundle["text/plain"] = self.text()
        return bundle


def widget(**state) -> Calculator:
    """The calculator, started at ``state`` (``calculate``'s arguments; defaults: Llama 3.1 8B
    on one H100 SXM, bf16, one request of 2,048 + 256 tokens)."""
    return Calculator(**state)


def _js(expr) -> dict:
    """An expression for the page: its arguments (in numeric's order) and the body of a
    JavaScript function of them that returns it (``_js_body``)."""
    expr = sympy.sympify(expr)
    statements, (out,) = _js_body([expr])
    return {
        "args": sorted(s.name for s in expr.free_symbols),
        "body": f"{statements}return ({out});",
    }


def _js_block(exprs: dict) -> dict:
    """Many expressions as one JavaScript function that returns them as an object by name:
    their common parts computed once (``sympy.cse``), which keeps the kernel model's report,
    tens of kernels each a roofline, a few kilobytes a model."""
    exprs = {k: sympy.sympify(e) for k, e in exprs.items()}
    args = sorted({s.name for e in exprs.values() for s in e.free_symbols})
    statements, outs = _js_body(list(exprs.values()))
    fields = ",".join(f"{json.dumps(k)}:({js})" for k, js in zip(exprs, outs, strict=True))
    return {"args": args, "body": statements + "return {" + fields + "};"}


def _js_body(exprs: list) -> tuple[str, list[str]]:
    """``exprs``' common subexpressions as JavaScript ``var`` statements, and each expression
    in terms of them."""
    names = sympy.numbered_symbols("_c")  # no symbol of the library starts with an underscore
    replacements, reduced = sympy.cse(exprs, symbols=names, optimizations=None)
    statements = "".join(f"var {name}=({sympy.jscode(e)});" for name, e in replacements)
    return statements, [sympy.jscode(e) for e in reduced]


def _model_data(arch) -> dict:
    """One model's part of the page's data, printed once and kept in the disk cache (printing
    a model's kernels and their common parts takes about a second)."""
    return cache.data(f"calculator page {arch!r}", lambda: _print_model(arch))


def _print_model(arch) -> dict:
    rules = [c for c in scenario.CHECKS if c.applies(arch, "tensor")]
    return {
        "sizes": arch.sizes(),
        "weights": weight_number_values(arch),  # as the checkpoint ships ("auto")
        "layers_format": weight_formats(arch)["layers"],
        "context_window": arch.context_window,
        "degrees": ", ".join(map(str, scenario.tensor_parallel_degrees(arch))),
        "degree_list": scenario.tensor_parallel_degrees(arch),
        "continuous": {
            "step": _js(continuous.STEP_FORMULAS[scenario.DEFAULT_STEP](arch)),
            "capacity": _js(latency.max_concurrency(arch)),
        },
        "report": _js_block(serving.report_formulas(arch)),
        "checks": [
            {
                "holds": _js(check.holds(arch, "tensor")),
                "message": check.message,
                "fields": {
                    f: {**_js(e(arch, "tensor")), "kind": k} for f, (e, k) in check.fields.items()
                },
            }
            for check in rules
        ],
    }


def warm() -> int:
    """Print the page's data of every registry model into the disk cache (``make`` runs it
    when it sets up the environment); the number of models."""
    return len(_page_data()["models"])


@functools.cache
def _page_data() -> dict:
    """The page's data, the same for every calculator (module docstring)."""
    models = {name: _model_data(registry_model(name)) for name in model_names()}
    default = scenario.Scenario("llama-3.1-8b", "h100-sxm")
    engine, step = default.engine, default.step
    gpus = {}
    for name in gpu_names():
        g = registry_gpu(name)
        figures = {
            k: v for k, v in g.figures(next(iter(g.peak_flop_rate))).items() if k != "flop_rate"
        }
        # The measured figures a step takes, by the compute format, and the weights' stream by
        # theirs (scenario.WEIGHT_FIGURES): the scenario's, for each format the form offers.
        by_compute = {}
        for c in (c for c in g.peak_flop_rate if c in COMPUTES):  # the formats offered
            found = scenario.found_figures(g, engine, c, c, step)
            by_compute[c] = {k: v for k, v in found.items() if k not in scenario.WEIGHT_FIGURES}
            by_compute[c]["activation_bytes_per_number"] = activation_bytes(c)
        some = next(iter(by_compute))
        by_weights = {
            d: {k: scenario.found_figures(g, engine, some, d, step)[k]
                for k in scenario.WEIGHT_FIGURES}
            for d in DTYPE_BYTES
        }  # fmt: skip
        gpus[name] = {
            "flop_rate": dict(g.peak_flop_rate),
            "figures": figures,
            "compute": by_compute,
            "weights": by_weights,
            "price_per_hour": g.price_per_hour,
            "price_date": g.price_date,
        }
    # The numeric settings the form does not offer (the engine's, the link, budgets): the
    # default scenario's values less the model's, the GPU's and the form's own.
    own = set(default.model.sizes()) | set(default.gpu.figures(default.compute_dtype))
    own |= set(gpus[default.gpu.name]["compute"][default.compute_dtype])
    own |= set(scenario.WEIGHT_FIGURES) | set(_FORM_VALUES)
    options = {k: v for k, v in default.values().items() if k not in own}
    controls = [
        {"name": n, "kind": "degrees" if n == "n_gpus" else "range", "min": low, "max": high}
        for n, (low, high) in ranges().items()
    ]
    controls += [{"name": "requests_per_s", "kind": "rate"}]
    choices = Calculator.__new__(Calculator).choices
    controls += [{"name": n, "kind": "choice", "options": o} for n, o in choices.items()]
    for control in controls:
        control["label"] = label(control["name"])
    order = ["mode", "model", "gpu", "n_gpus", "replicas", "dtype", "compute_dtype", "cache_dtype"]
    order += ["batch"]
    order += ["requests_per_s", "prompt_len", "output_len"]
    controls.sort(key=lambda c: order.index(c["name"]))
    return {
        "same": SAME,
        "computed": COMPUTED,
        "controls": controls,
        "models": models,
        "gpus": gpus,
        "dtypes": DTYPE_BYTES,
        "names": ALIASES,  # a compute format's name as a cache's: fp4 is nvfp4
        "computes": {d: compute_format(d) for d in [*DTYPE_BYTES, *COMPUTES]},
        "auto": AUTO,
        "options": options,
        "count_message": checks.COUNT,
        "no_rate": scenario.NO_RATE,
        "rows": [
            {"key": k, "label": label, "kind": kind, "band": serving.BANDED.get(k)}
            for k, label, kind in ROWS
        ],
        "bands": {kind: bands.bands()[kind] for kind in bands.KINDS},
        "band_ends": {which: _js_block(ends) for which, ends in bands.BAND.items()},
        "band_cell": BANDED_CELL,
        "bounds": serving.BOUNDS,
        "then": serving.THEN,
        "notes": NOTES,
        "modes": {"static": STATIC, "continuous": CONTINUOUS},
        "continuous_rows": [
            {"key": k, "label": label, "kind": kind, "band": continuous.BANDED.get(k)}
            for k, label, kind in CONTINUOUS_ROWS
        ],
        "context": _js(latency.mean_context()),
        "steady": {k: _js(e) for k, e in continuous.STEADY.items()},
        "replicas": {k: _js(e) for k, e in continuous.REPLICAS.items()},
        "prompt_counts": continuous.PROMPT_COUNTS,
        "spread": continuous.SPREAD_POINTS,
        "saturated": continuous.SATURATED,
        "saturated_kinds": continuous.SATURATED_KINDS,
        "replicated": continuous.REPLICATED,
        "rate_message": rate_message(),
        "rate_high": inspect.signature(checks.amount).parameters["high"].default,
    }


_FORM_VALUES = ("bytes_per_number", "expert_bytes_per_number", "vocab_bytes_per_number")
_FORM_VALUES += ("kv_bytes_per_number", "n_gpus", "batch", "replicas")
_FORM_VALUES += ("seq_len", "output_len", "context_window")
"""The values the form sets itself (``calculate()`` in the page's script)."""

_ids = itertools.count()


@functools.cache
def _steady_runtime() -> str:
    """``steady.js``: ``iaSteady``, the page's steady state of a continuously batching engine.
    It is ``continuous._Engine``'s procedure over the spec's formulas: a steady state that is a
    Markov chain's fixed point has no closed form SymPy could print, so the page runs the same
    small numerical routine on the library's formulas, and the browser test holds the two equal."""
    import importlib.resources

    files = importlib.resources.files("inference_arithmetic.page")
    return files.joinpath("steady.js").read_text("utf-8")


_STYLE = (
    ".ia-calc-controls{display:grid;grid-template-columns:repeat(auto-fill,minmax(15em,1fr));"
    "gap:.3em 1em;margin:.5em 0}.ia-calc-controls label{display:flex;gap:.5em;"
    "align-items:center;justify-content:space-between}.ia-calc-controls input{width:8em}"
    ".ia-calc-readout td{padding:0 .6em}"
    # The message in the text colour (vermillion text is too faint on white), marked by a bar.
    ".ia-calc-message{border-left:.3em solid #D55E00;padding-left:.5em;font-weight:bold}"
)

# An interpreter of the spec: it fills the spec's templates with its formulas' values, in the
# order the library checks them. Rules and words come from the spec, numbers' text from iaShow.
_RUNTIME = r"""
var iaCalc = window.iaCalc || (window.iaCalc = function (root) {
  var spec = JSON.parse(root.querySelector(".ia-calc-spec").textContent);
  var state = Object.assign({}, spec.state), typed = {}, compiled = {}, saturations = {};
  function compile(f) {
    if (!f.fn) f.fn = new Function(f.args.join(","), f.body);
    return f;
  }
  function call(f, values) {
    compile(f);
    return f.fn.apply(null, f.args.map(function (a) { return values[a]; }));
  }
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, key) { return String(values[key]); });
  }
  function calculate() {  // the Scenario's checks in its order, then the report's formulas
    var names = Object.assign({}, spec.options, state);
    var continuous = state.mode === spec.modes.continuous;
    for (var i = 0; i < spec.controls.length; i++) {
      var c = spec.controls[i];
      if (c.kind !== "range" && c.kind !== "degrees") continue;
      var x = state[c.name];
      if (!(Number.isInteger(x) && x >= c.min && x <= c.max)) {
        return {error: fill(spec.count_message, {name: c.name, low: iaShow(c.min, "integer"),
          upper: " to " + iaShow(c.max, "integer"), value: typed[c.name]})};
      }
    }
    var rate = state.requests_per_s;
    if (continuous && !(isFinite(rate) && rate > 0 && rate <= spec.rate_high)) {
      return {error: fill(spec.rate_message, {value: typed.requests_per_s})};
    }
    var m = spec.models[state.model], g = spec.gpus[state.gpu];
    // The Scenario's defaults: the weights as the checkpoint ships them ("auto"), compute in
    // the layers' format's own, cache in the compute format.
    var auto = state.dtype === spec.auto, layers = auto ? m.layers_format : state.dtype;
    var b = spec.dtypes[state.dtype];
    var weights = auto ? m.weights : {bytes_per_number: b, expert_bytes_per_number: b,
                                      vocab_bytes_per_number: b};
    var compute = spec.computes[state.compute_dtype === spec.same ? layers : state.compute_dtype];
    var cache = state.cache_dtype === spec.computed ? compute : state.cache_dtype;
    cache = spec.names[cache] || cache;
    names.compute_dtype = compute; names.cache_dtype = cache;
    names.rates = Object.keys(g.flop_rate).join(", "); names.degrees = m.degrees;
    if (!(compute in g.flop_rate)) return {error: fill(spec.no_rate, names)};
    var v = Object.assign({}, m.sizes, g.figures, spec.options, g.compute[compute],
                          g.weights[layers], weights, {
      flop_rate: g.flop_rate[compute],
      kv_bytes_per_number: spec.dtypes[cache], n_gpus: state.n_gpus, batch: state.batch,
      replicas: state.replicas,
      seq_len: state.prompt_len, output_len: state.output_len,
      context_window: m.context_window, price_per_hour: g.price_per_hour || 1
    });
    if (continuous) v.batch = 1;  // one request at a time enters the engine
    for (var j = 0; j < m.checks.length; j++) {
      var check = m.checks[j];
      if (!call(check.holds, v)) {
        var shown = Object.assign({}, names);
        for (var f in check.fields) {
          shown[f] = iaShow(call(check.fields[f], v), check.fields[f].kind);
        }
        return {error: fill(check.message, shown)};
      }
    }
    if (continuous) return steadyState(m, v, names, rate);
    var r = call(m.report, v);
    for (var k in r) if (/^cost_/.test(k) && g.price_per_hour === null) r[k] = null;
    var note = (g.price_per_hour !== null ? fill(spec.notes.priced, g) : spec.notes.unpriced) +
      "; " + (r.exact ? spec.notes.exact : spec.notes.approximate) + "; " + spec.notes.band + ".";
    return {rows: spec.rows, values: r, note: note};
  }
  function steadyState(m, v, names, rate) {  // ia.continuous.steady_state_of
    var engine = iaSteady({prompt_counts: spec.prompt_counts, context: spec.context,
      capacity: m.continuous.capacity, step: m.continuous.step, steady: spec.steady,
      spread: spec.spread}, call, v);
    var key = JSON.stringify([state.model, state.gpu, v]);
    if (!(key in saturations)) saturations[key] = engine.saturation();
    // The replicas share the requests: each is one engine at its share (continuous.REPLICAS).
    var one = {requests_per_s: rate, replicas: v.replicas, replica_saturation: saturations[key]};
    var share = call(spec.replicas.share, one);
    var s = share <= one.replica_saturation ? engine.state(share, null) : null;
    if (s === null || !s.ok) {
      var kinds = spec.saturated_kinds, gpus = v.replicas === 1 ? state.n_gpus :
        fill(spec.replicated, {replicas: v.replicas, n_gpus: state.n_gpus});
      var whole = call(spec.replicas.saturation_rate, one);
      return {error: fill(spec.saturated, {rate: iaShow(rate, kinds.rate), model: state.model,
        n_gpus: gpus, gpu: state.gpu, saturation: iaShow(whole, kinds.saturation),
        prompt_len: state.prompt_len, output_len: state.output_len})};
    }
    one.replica_concurrency = s.concurrency;
    return {rows: spec.continuous_rows, note: spec.notes.continuous + "; " + spec.notes.band +
      ".", values: {
      ttft: s.ttft, tpot: s.tpot, request_time: s.request_time,
      concurrency: call(spec.replicas.concurrency, one),
      throughput: call(spec.replicas.throughput, Object.assign({output_len: v.output_len}, one)),
      utilization: call(spec.replicas.utilization, one),
      saturation_rate: call(spec.replicas.saturation_rate, one)}};
  }
  function bounds(r, keys) {
    var seen = [];
    keys.forEach(function (k) {
      var b = spec.bounds[r[k]]; if (seen.indexOf(b) < 0) seen.push(b);
    });
    return seen.join(spec.then);
  }
  var out = root.querySelector(".ia-calc-readout");
  function draw() {
    var r = calculate();
    out.innerHTML = "";
    if (r.error) {
      var p = document.createElement("p");
      p.className = "ia-calc-message"; p.setAttribute("role", "alert");
      var strong = document.createElement("b"); strong.textContent = r.error;
      p.appendChild(strong); out.appendChild(p);
      return;
    }
    var table = document.createElement("table");
    r.rows.forEach(function (row) {
      var tr = document.createElement("tr"), name = document.createElement("td");
      var cell = document.createElement("td"), strong = document.createElement("b");
      name.textContent = row.label;
      cell.className = "ia-calc-value";
      if (row.kind === "bound") {
        cell.dataset.key = row.key.join(","); cell.dataset.text = bounds(r.values, row.key);
        strong.textContent = cell.dataset.text;
      } else {
        var value = r.values[row.key];
        cell.dataset.key = row.key;
        if (value !== null) cell.dataset.value = String(value);
        strong.textContent = iaShow(value, row.kind);
        if (row.band && value !== null) {  // serving.bands.band: a time's, or a speed's
          var b = spec.bands[row.band[0]];
          var ends = call(spec.band_ends[row.band[1] ? "speed" : "time"],
                          {predicted: value, band_low: b.low, band_high: b.high});
          strong.textContent = fill(spec.band_cell, {value: strong.textContent,
            low: iaShow(ends.low, row.kind), high: iaShow(ends.high, row.kind)});
        }
      }
      cell.appendChild(strong); tr.appendChild(name); tr.appendChild(cell); table.appendChild(tr);
    });
    var note = document.createElement("p");
    note.textContent = r.note;
    out.appendChild(table); out.appendChild(note);
  }
  var box = root.querySelector(".ia-calc-controls"), rows = {}, degrees = null;
  function options(select, names) {
    select.innerHTML = "";
    names.forEach(function (n) {
      var o = document.createElement("option");
      o.value = n; o.textContent = n; select.appendChild(o);
    });
  }
  function offerDegrees() {  // the model's degrees, and the one chosen if it is not one: kept
    var list = spec.models[state.model].degree_list.slice();
    if (list.indexOf(state.n_gpus) < 0) list.push(state.n_gpus);
    options(degrees, list.sort(function (a, b) { return a - b; }));
    degrees.value = String(state.n_gpus);
  }
  function showMode() {  // each mode's own input: the batch, or the rate
    var continuous = state.mode === spec.modes.continuous;
    rows.batch.style.display = continuous ? "none" : "";
    rows.requests_per_s.style.display = continuous ? "" : "none";
  }
  spec.controls.forEach(function (c) {
    var row = document.createElement("label"), input;
    row.textContent = c.label + " "; rows[c.name] = row;
    if (c.kind === "range" || c.kind === "rate") {  // what is typed is checked, never clamped
      input = document.createElement("input");
      input.type = "number"; input.step = c.kind === "rate" ? "any" : 1;
      if (c.kind === "range") { input.min = c.min; input.max = c.max; }
      input.value = state[c.name]; typed[c.name] = String(state[c.name]);
      input.addEventListener("change", function () {
        typed[c.name] = input.value;
        state[c.name] = input.value.trim() === "" ? NaN : Number(input.value); draw();
      });
    } else if (c.kind === "degrees") {  // the tensor-parallel degrees that split the heads
      input = degrees = document.createElement("select");
      input.addEventListener("change", function () {
        state[c.name] = Number(input.value); draw();
      });
    } else {
      input = document.createElement("select");
      options(input, c.options);
      input.value = state[c.name];
      input.addEventListener("change", function () {
        state[c.name] = input.value;
        if (c.name === "model") offerDegrees();
        if (c.name === "mode") showMode();
        draw();
      });
    }
    input.name = c.name; input.setAttribute("aria-label", c.label);
    row.appendChild(input); box.appendChild(row);
  });
  offerDegrees(); showMode();
  draw();
});
"""
