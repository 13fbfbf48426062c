"""One calculator over the whole library: memory, time, throughput and cost of a served model.

>>> r = calculate("llama-3.1-8b", "h100-sxm", batch=16)
>>> r["memory"]["fits"], r["bound"]["prefill"], r["bound"]["decode"]
(True, 'compute', 'bandwidth')
>>> r["throughput"] == 16 * 256 / r["total"]  # B O tokens in one request's time
True
>>> calculate("llama-3.1-405b", "h100-sxm")
Traceback (most recent call last):
...
ValueError: llama-3.1-405b does not fit: needs 813 GB per GPU (weights 812 GB, KV cache 1.19 GB) ...

Every number comes from a closed-form SymPy formula, evaluated by ``numeric`` here and printed
to JavaScript by ``sympy.jscode`` for the book's page, so that the page and the library compute
the same numbers. The time to first token is ``latency.prefill_time``. The time per output
token is ``latency.decode_step_time`` at the mean context of the O - 1 decode steps,
S = T + max(O - 2, 0) / 2 (they run at S = T, T + 1, ..., T + O - 2): a step's time is linear
in S while one bound (compute or bandwidth) holds and no sliding window fills up, so this is
the exact mean of ``ia.generation`` then (``exact`` says whether it is), and close otherwise.
Costs are ``formulas.economics`` at full utilization and the GPU's dated example price. The
efficiencies and link latency are the library's defaults (``ia.timing.DEFAULT_*``). Memory
counts the weights and the KV cache of B requests of T + O tokens, split evenly over n GPUs
with tensor parallelism, against the GPU's whole memory. Chapter 14 presents it; chapters 06
(KV cache), 08 (prefill and decode), 09 (batching), 10 (parallelism) and 12 (economics)
derive its formulas.
"""

from __future__ import annotations

import functools
import html
import itertools
import json
import numbers
from collections.abc import Mapping

import numpy as np
import sympy

from inference_arithmetic import format as fmt
from inference_arithmetic import timing
from inference_arithmetic.dtypes import DTYPE_BYTES, bytes_per_number
from inference_arithmetic.formulas import economics, latency, transformer
from inference_arithmetic.hardware import GPU, gpu_names
from inference_arithmetic.hardware import gpu as registry_gpu
from inference_arithmetic.live import FORMAT_RUNTIME, embed_json
from inference_arithmetic.models import ModelConfig, model_names
from inference_arithmetic.models import model as registry_model
from inference_arithmetic.numeric import numeric
from inference_arithmetic.symbols import B, T, b, n_gpus, pi
from inference_arithmetic.widgets import Range

__all__ = [
    "calculate",
    "mean_context",
    "model_formulas",
    "roofline_parts",
    "request_formulas",
    "Calculator",
    "widget",
]

O = economics.O  # noqa: E741  (output tokens per request, the book's O)
# Stand-ins for the two times and the two prices that the request formulas combine.
ttft, tpot = sympy.symbols("ttft tpot", positive=True)
input_cost, output_cost = sympy.symbols("input_cost output_cost", positive=True)

MAX_CONTEXT = max(registry_model(name).context_window or 0 for name in model_names())
"""The longest context window of the registry's models: the inputs' upper bound."""

# The page fills the same templates (with the same formatting), so its messages are these.
MESSAGES = {
    "no_rate": (
        "{gpu} has no peak FLOP rate for {dtype} weights; it has: {rates}. "
        "Choose one of those dtypes"
    ),
    "window": (
        "{model} reads at most {window} tokens (its context window); "
        "prompt_len + output_len is {context}"
    ),
    "fit": (
        "{model} does not fit: needs {need} per GPU (weights {weights}, KV cache {cache}) "
        "on {n_gpus} x {gpu}, has {memory}. Use more GPUs, a smaller batch, shorter requests "
        "or fewer bytes per number"
    ),
}


mean_context = latency.mean_context  # the one definition, in formulas.latency


def last_context():
    """The context of a request's last decode step."""
    return T + sympy.Max(O - 2, 0)


def roofline_parts(step_time) -> tuple[sympy.Expr, sympy.Expr]:
    """The compute time and the memory time of a step, read off the library's step time
    (the two sides of its roofline ``Max``), so that the bound agrees with the time."""
    terms = step_time.args if isinstance(step_time, sympy.Add) else (step_time,)
    (roof,) = [term for term in terms if isinstance(term, sympy.Max)]
    compute, memory = sorted(roof.args, key=lambda side: pi not in side.free_symbols)
    if pi not in compute.free_symbols or pi in memory.free_symbols:
        raise ValueError(f"expected a roofline Max(compute, memory), got {roof}")
    return compute, memory


def model_formulas(arch) -> dict[str, sympy.Expr]:
    """The formulas that depend on the architecture, per GPU of n (tensor parallelism), in
    the library's own form (S free: ``request_formulas`` gives the contexts to put in):
    memory, the two step times, and the compute and memory sides of each, for its bound."""
    prefill, decode = latency.prefill_time(arch), latency.decode_step_time(arch)
    prefill_compute, prefill_memory = roofline_parts(prefill)
    decode_compute, decode_memory = roofline_parts(decode)
    return {
        "weights": b * transformer.params(arch) / n_gpus,
        "kv_cache": latency.cache_bytes(arch) / n_gpus,
        "prefill": prefill,
        "decode": decode,
        "prefill_compute": prefill_compute,
        "prefill_memory": prefill_memory,
        "decode_compute": decode_compute,
        "decode_memory": decode_memory,
    }


def request_formulas() -> dict[str, sympy.Expr]:
    """The formulas every model shares: contexts, a request's time, throughput and costs
    (``formulas.economics`` at full utilization), from the two times ``ttft`` and ``tpot``."""
    total = ttft + (O - 1) * tpot
    full = {economics.u: 1}
    return {
        "cache_context": T + O,
        "mean_context": mean_context(),
        "last_context": last_context(),
        "total": total,
        "throughput": B * O / total,
        "cost_input": economics.cost_per_million_tokens(ttft, B * T).subs(full),
        "cost_output": economics.cost_per_million_tokens(tpot, B).subs(full),
        "cost_request": economics.request_cost(input_cost, output_cost),
    }


@functools.lru_cache(maxsize=64)
def _formulas(arch: ModelConfig) -> dict:
    return model_formulas(arch)


@functools.lru_cache(maxsize=64)
def _compiled(arch: ModelConfig) -> dict:
    return {key: numeric(expr) for key, expr in _formulas(arch).items()}


def _js(expr) -> dict:
    """A formula for the page: its arguments (in numeric's order), JavaScript and SymPy text."""
    args = sorted(symbol.name for symbol in expr.free_symbols)
    return {"args": args, "js": sympy.jscode(expr), "sympy": str(expr)}


@functools.cache
def _shared() -> dict:
    return {key: numeric(expr) for key, expr in request_formulas().items()}


def _resolve(what, value, cls, names, lookup):
    if isinstance(value, cls):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a name or an ia.{what}(name), got {type(value).__name__}")
    if value not in names():
        raise KeyError(f"unknown {what} {value!r}; the registry has: {', '.join(names())}")
    return lookup(value)


def _efficiencies(compute_efficiency, bandwidth_efficiency, link_latency) -> dict:
    # Read at call time: the library's defaults are the book's one calibrated set.
    return {
        "compute_efficiency": timing.DEFAULT_COMPUTE_EFFICIENCY
        if compute_efficiency is None
        else compute_efficiency,
        "bandwidth_efficiency": timing.DEFAULT_BANDWIDTH_EFFICIENCY
        if bandwidth_efficiency is None
        else bandwidth_efficiency,
        "link_latency": timing.DEFAULT_LINK_LATENCY if link_latency is None else link_latency,
    }


def _bound(compute: float, memory: float) -> str:
    return "compute" if compute >= memory else "bandwidth"


def calculate(
    model,
    gpu,
    n_gpus: int = 1,
    dtype: str = "bf16",
    cache_dtype: str | None = None,
    batch: int = 1,
    prompt_len: int = 2048,
    output_len: int = 256,
    *,
    compute_efficiency: float | None = None,
    bandwidth_efficiency: float | None = None,
    link_latency: float | None = None,
) -> dict:
    """Memory per GPU, time to first token, time per output token, throughput, cost per
    million tokens and the limiting bound of ``batch`` identical requests of ``prompt_len``
    prompt and ``output_len`` output tokens, on ``n_gpus`` GPUs with tensor parallelism.

    ``model`` and ``gpu`` are registry names or objects (``KeyError`` listing the registry
    for an unknown name); ``dtype`` is the weights', ``cache_dtype`` the KV cache's (None:
    the weights'). Closed forms throughout (module docstring): the time per output token is
    one decode step at the mean context, exact when one bound holds over the whole output.
    ``ValueError`` names the problem for a size that is not a positive whole number, a dtype
    the GPU has no FLOP rate for, a request longer than the model's context window, and a
    model that does not fit ("does not fit: needs X per GPU, ..., has Y").

    Returns ``memory`` (bytes per GPU: weights, kv_cache at prompt_len + output_len tokens,
    total, capacity, fits), ``ttft``, ``tpot``, ``total`` (seconds), ``throughput`` (output
    tokens per second), ``cost`` (USD per million input and output tokens, per request, and
    the price per GPU-hour with its date; None where the GPU has no price), ``bound`` (compute
    or bandwidth, for prefill and decode; "bandwidth, then compute" if decode changes bound
    during the output), ``mean_context``, ``exact``, and the settings it used.
    """
    arch = _resolve("model", model, ModelConfig, model_names, registry_model)
    device = _resolve("gpu", gpu, GPU, gpu_names, registry_gpu)
    sizes = {"n_gpus": n_gpus, "batch": batch, "prompt_len": prompt_len, "output_len": output_len}
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive whole number, got {value!r}")
    cache_dtype = cache_dtype or dtype
    per_number, kv_per_number = bytes_per_number(dtype), bytes_per_number(cache_dtype)
    if dtype not in device.peak_flop_rate:
        rates = ", ".join(device.peak_flop_rate)
        raise ValueError(MESSAGES["no_rate"].format(gpu=device.name, dtype=dtype, rates=rates))
    context = prompt_len + output_len
    if arch.context_window and context > arch.context_window:
        raise ValueError(
            MESSAGES["window"].format(
                model=arch.name,
                window=fmt.integer(arch.context_window),
                context=fmt.integer(context),
            )
        )
    options = _efficiencies(compute_efficiency, bandwidth_efficiency, link_latency)
    values = {
        **arch.sizes(),
        **options,
        "bytes_per_number": per_number,
        "kv_bytes_per_number": kv_per_number,
        "flop_rate": device.flop_rate(dtype),
        "bandwidth": device.memory_bandwidth,
        "link_bandwidth": device.interconnect_bandwidth,
        "n_gpus": int(n_gpus),
        "batch": int(batch),
        "seq_len": int(prompt_len),
        "output_len": int(output_len),
        "price_per_hour": device.price_per_hour or 1.0,  # no price: costs are dropped below
    }
    own, shared = _compiled(arch), _shared()

    def at(key, context):  # a formula of S, at a context given by a shared formula
        # The mean context is a half-integer when O is odd; numeric takes a size that is not
        # whole only inside an array (a smooth sweep), so it goes in as one.
        return float(own[key].from_values({**values, "context_len": np.array([context])})[0])

    contexts = {k: shared[f"{k}_context"].from_values(values) for k in ("cache", "mean", "last")}
    weights = own["weights"].from_values(values)
    cache = at("kv_cache", contexts["cache"])
    if weights + cache > device.memory_bytes:
        raise ValueError(
            MESSAGES["fit"].format(
                model=arch.name,
                need=fmt.nbytes(weights + cache),
                weights=fmt.nbytes(weights),
                cache=fmt.nbytes(cache),
                n_gpus=n_gpus,
                gpu=device.name,
                memory=fmt.nbytes(device.memory_bytes),
            )
        )
    values["ttft"] = own["prefill"].from_values(values)
    values["tpot"] = at("decode", contexts["mean"])
    first, last = prompt_len, contexts["last"]
    decode = [_bound(at("decode_compute", s), at("decode_memory", s)) for s in (first, last)]
    window = arch.window or 0
    crosses_window = arch.n_window_layers and first < window - 1 < last
    cost = {"input": None, "output": None, "request": None}
    if device.price_per_hour is not None:
        cost["input"] = shared["cost_input"].from_values(values)
        cost["output"] = shared["cost_output"].from_values(values)
        cost["request"] = shared["cost_request"].from_values(
            {**values, "input_cost": cost["input"], "output_cost": cost["output"]}
        )
    return {
        "model": arch.name,
        "gpu": device.name,
        "n_gpus": n_gpus,
        "dtype": dtype,
        "cache_dtype": cache_dtype,
        "batch": batch,
        "prompt_len": prompt_len,
        "output_len": output_len,
        "memory": {
            "weights": weights,
            "kv_cache": cache,
            "total": weights + cache,
            "capacity": float(device.memory_bytes),
            "fits": True,
        },
        "ttft": values["ttft"],
        "tpot": values["tpot"],
        "total": shared["total"].from_values(values),
        "throughput": shared["throughput"].from_values(values),
        "cost": {
            **cost,
            "price_per_hour": device.price_per_hour,
            "price_date": device.price_date,
        },
        "bound": {
            "prefill": _bound(
                own["prefill_compute"].from_values(values),
                own["prefill_memory"].from_values(values),
            ),
            "decode": decode[0] if decode[0] == decode[1] else ", then ".join(decode),
        },
        "mean_context": contexts["mean"],
        "exact": decode[0] == decode[1] and not crosses_window,
        **options,
    }


# --- The widget ------------------------------------------------------------------------------

SAME = "as weights"
"""The cache dtype choice that stores the KV cache like the weights (``cache_dtype=None``)."""

RANGES = {
    "n_gpus": Range(1, 64, 1),
    "batch": Range(1, 4096, 1),
    "prompt_len": Range(1, MAX_CONTEXT, 2048),
    "output_len": Range(1, MAX_CONTEXT, 256),
}

# (key in the result, label, format): the rows of the readout, in the page and in Jupyter.
ROWS = [
    ("memory.weights", "weights per GPU", "nbytes"),
    ("memory.kv_cache", "KV cache per GPU (prompt + output tokens)", "nbytes"),
    ("memory.total", "memory per GPU", "nbytes"),
    ("memory.capacity", "GPU memory", "nbytes"),
    ("ttft", "time to first token", "seconds"),
    ("tpot", "time per output token", "seconds"),
    ("total", "time per request", "seconds"),
    ("throughput", "throughput (output tokens/s)", "rate"),
    ("cost.input", "cost per million input tokens", "usd"),
    ("cost.output", "cost per million output tokens", "usd"),
    ("cost.request", "cost per request", "usd"),
    ("bound.prefill", "prefill is bound by", "text"),
    ("bound.decode", "decode is bound by", "text"),
]


def _lookup(result: Mapping, key: str):
    for part in key.split("."):
        result = result[part]
    return result


def _show(value, kind: str) -> str:
    """A readout value, as the page's runtime prints it."""
    if value is None:
        return "unavailable (no price)"
    if kind == "nbytes":
        return fmt.nbytes(value)
    if kind == "seconds":
        return fmt.seconds(value)
    if kind == "rate":
        return f"{value:,.0f}" if value >= 100 else f"{float(f'{value:.3g}'):g}"
    if kind == "usd":
        return f"${value:,.0f}" if value >= 1000 else f"${float(f'{value:.3g}'):g}"
    return str(value)


def readout_html(result: Mapping | None, message: str | None = None) -> str:
    """The readout table of a result, or the message that replaces it."""
    if result is None:
        return f'<p class="ia-calc-message" role="alert"><b>{html.escape(message)}</b></p>'
    rows = "".join(
        f"<tr><td>{label}</td><td><b>{html.escape(_show(_lookup(result, key), kind))}</b></td></tr>"
        for key, label, kind in ROWS
    )
    return f"<table>{rows}</table><p>{html.escape(_note(result))}</p>"


def _note(result: Mapping) -> str:
    price = result["cost"]["price_per_hour"]
    priced = (
        f"price ${price:g} per GPU-hour, observed {result['cost']['price_date']}"
        if price is not None
        else "no example price for this GPU"
    )
    exact = "exact" if result["exact"] else "approximate: the decode bound or window changes"
    return f"{priced}; time per token at the mean context ({exact})."


class Calculator:
    """The calculator's controls and readout: ipywidgets in Jupyter, a live page in the book.

    ``update(**changes)`` clamps sizes to their ranges, recomputes and returns the result of
    ``calculate`` (or None, with the reason in ``message``, for impossible inputs).
    """

    def __init__(self, **state):
        self.state = {
            "model": "llama-3.1-8b",
            "gpu": "h100-sxm",
            "n_gpus": 1,
            "dtype": "bf16",
            "cache_dtype": SAME,
            "batch": 1,
            "prompt_len": 2048,
            "output_len": 256,
        }
        self._widgets = None
        self._syncing = False
        self.result, self.message = None, None
        self.update(**state)

    @property
    def choices(self) -> dict[str, list[str]]:
        return {
            "model": model_names(),
            "gpu": gpu_names(),
            "dtype": list(DTYPE_BYTES),
            "cache_dtype": [SAME, *DTYPE_BYTES],
        }

    def _set(self, name, value):
        if name in RANGES:
            self.state[name] = int(RANGES[name].clamp(value))
        elif name in self.choices:
            value = SAME if value is None and name == "cache_dtype" else value
            if value not in self.choices[name]:
                raise ValueError(f"{name} must be one of {self.choices[name]}, got {value!r}")
            self.state[name] = value
        else:
            raise ValueError(f"no control named {name!r}; controls: {sorted(self.state)}")

    def arguments(self) -> dict:
        """The current controls as ``calculate``'s arguments."""
        cache = self.state["cache_dtype"]
        return {**self.state, "cache_dtype": None if cache == SAME else cache}

    def update(self, **changes):
        for name, value in changes.items():
            self._set(name, value)
        try:
            self.result, self.message = calculate(**self.arguments()), None
        except ValueError as error:
            self.result, self.message = None, str(error)
        if self._widgets is not None:
            self._syncing = True
            try:
                for name, control in self._widgets.items():
                    control.value = self.state[name]
            finally:
                self._syncing = False
            self._readout.value = readout_html(self.result, self.message)
        return self.result

    def widget(self):
        """The ipywidgets form (built once): dropdowns, sliders, and the readout."""
        if self._widgets is None:
            import ipywidgets as w

            self._widgets = {}
            for name in self.state:
                if name in RANGES:
                    spec = RANGES[name]
                    control = w.IntSlider(min=spec.min, max=spec.max, value=self.state[name])
                    control.continuous_update = False
                else:
                    control = w.Dropdown(options=self.choices[name], value=self.state[name])
                control.description = name
                control.style = {"description_width": "initial"}
                control.observe(self._on_change(name), names="value")
                self._widgets[name] = control
            self._readout = w.HTML(readout_html(self.result, self.message))
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
        if self.result is None:
            return f"Calculator ({args}): {self.message}"
        lines = [f"Calculator ({args}):"]
        lines += [f"  {label}: {_show(_lookup(self.result, k), kind)}" for k, label, kind in ROWS]
        return "\n".join(lines + [f"  {_note(self.result)}"])

    def spec(self) -> dict:
        """Everything the page needs, as JSON-ready data: per-model formulas in JavaScript,
        GPU figures and dtype sizes as data, the controls, the rows and the messages."""
        models = {}
        for name in model_names():
            arch = registry_model(name)
            formulas = {key: _js(expr) for key, expr in _formulas(arch).items()}
            models[name] = {
                "sizes": arch.sizes(),
                "context_window": arch.context_window,
                "formulas": formulas,
            }
        gpus = {
            name: {
                "flop_rate": dict(g.peak_flop_rate),
                "bandwidth": g.memory_bandwidth,
                "link_bandwidth": g.interconnect_bandwidth,
                "memory_bytes": g.memory_bytes,
                "price_per_hour": g.price_per_hour,
                "price_date": g.price_date,
            }
            for name, g in ((n, registry_gpu(n)) for n in gpu_names())
        }
        shared = {key: _js(expr) for key, expr in request_formulas().items()}
        controls = [
            {"name": n, "kind": "range", "min": s.min, "max": s.max} for n, s in RANGES.items()
        ]
        controls += [{"name": n, "kind": "choice", "options": o} for n, o in self.choices.items()]
        order = list(self.state)
        controls.sort(key=lambda c: order.index(c["name"]))
        return {
            "state": self.state,
            "same": SAME,
            "controls": controls,
            "models": models,
            "gpus": gpus,
            "dtypes": DTYPE_BYTES,
            "options": _efficiencies(None, None, None),
            "shared": shared,
            "rows": [{"key": k, "label": label, "format": kind} for k, label, kind in ROWS],
            "messages": MESSAGES,
        }

    def live_html(self) -> str:
        """A self-contained block (no external script, no network) that recomputes in the page."""
        element = f"ia-calc-{next(_ids)}"
        return (
            f"<style>{_STYLE}</style>"
            f'<div class="ia-calc" id="{element}" role="form" aria-label="Inference calculator">'
            f'<script type="application/json" class="ia-calc-spec">{embed_json(self.spec())}'
            '</script><div class="ia-calc-controls"></div>'
            '<div class="ia-calc-readout" aria-live="polite"></div></div>'
            f"<script>{FORMAT_RUNTIME}{_RUNTIME}\n"
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


_ids = itertools.count()

_STYLE = (
    ".ia-calc-controls{display:grid;grid-template-columns:repeat(auto-fill,minmax(15em,1fr));"
    "gap:.3em 1em;margin:.5em 0}.ia-calc-controls label{display:flex;gap:.5em;"
    "align-items:center;justify-content:space-between}.ia-calc-controls input{width:8em}"
    ".ia-calc-readout td{padding:0 .6em}"
    # The message in the text colour (vermillion text is too faint on white), marked by a bar.
    ".ia-calc-message{border-left:.3em solid #D55E00;padding-left:.5em;font-weight:bold}"
)

_RUNTIME = r"""
var iaCalc = window.iaCalc || (window.iaCalc = function (root) {
  var spec = JSON.parse(root.querySelector(".ia-calc-spec").textContent);
  var state = Object.assign({}, spec.state), compiled = {};
  function compile(f) {
    return {args: f.args, fn: new Function(f.args.join(","), "return (" + f.js + ");")};
  }
  function call(f, values) {
    return f.fn.apply(null, f.args.map(function (a) { return values[a]; }));
  }
  function formulas(name) {  // compiled on first use: one set of functions per model
    if (!compiled[name]) {
      compiled[name] = {};
      var given = spec.models[name].formulas;
      for (var k in given) compiled[name][k] = compile(given[k]);
    }
    return compiled[name];
  }
  var shared = {};
  for (var k in spec.shared) shared[k] = compile(spec.shared[k]);
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, key) { return values[key]; });
  }
  function whole(v) { return Math.round(v).toLocaleString("en-US"); }
  function sig(v) { return String(Number(v.toPrecision(3))); }
  function show(v, kind) {
    if (v === null) return "unavailable (no price)";
    if (kind === "nbytes" || kind === "seconds") return iaShow(v, kind);
    if (kind === "rate") return v >= 100 ? whole(v) : sig(v);
    if (kind === "usd") return "$" + (v >= 1000 ? whole(v) : sig(v));
    return String(v);
  }
  function bound(compute, memory) { return compute >= memory ? "compute" : "bandwidth"; }
  function calculate() {  // the same steps, checks and messages as calculator.calculate
    var m = spec.models[state.model], g = spec.gpus[state.gpu];
    var cache = state.cache_dtype === spec.same ? state.dtype : state.cache_dtype;
    if (!(state.dtype in g.flop_rate)) {
      return {error: fill(spec.messages.no_rate, {gpu: state.gpu, dtype: state.dtype,
                                                  rates: Object.keys(g.flop_rate).join(", ")})};
    }
    var context = state.prompt_len + state.output_len;
    if (m.context_window && context > m.context_window) {
      return {error: fill(spec.messages.window, {model: state.model,
        window: whole(m.context_window), context: whole(context)})};
    }
    var v = Object.assign({}, m.sizes, spec.options, {
      bytes_per_number: spec.dtypes[state.dtype], kv_bytes_per_number: spec.dtypes[cache],
      flop_rate: g.flop_rate[state.dtype], bandwidth: g.bandwidth, link_bandwidth: g.link_bandwidth,
      n_gpus: state.n_gpus, batch: state.batch, seq_len: state.prompt_len,
      output_len: state.output_len, price_per_hour: g.price_per_hour === null ? 1 : g.price_per_hour
    });
    var f = formulas(state.model);
    function at(key, context) { return call(f[key], Object.assign({}, v, {context_len: context})); }
    var last = call(shared.last_context, v);
    var weights = call(f.weights, v), kv = at("kv_cache", call(shared.cache_context, v));
    if (weights + kv > g.memory_bytes) {
      return {error: fill(spec.messages.fit, {model: state.model,
        need: iaShow(weights + kv, "nbytes"), weights: iaShow(weights, "nbytes"),
        cache: iaShow(kv, "nbytes"), n_gpus: state.n_gpus,
        gpu: state.gpu, memory: iaShow(g.memory_bytes, "nbytes")})};
    }
    v.ttft = call(f.prefill, v); v.tpot = at("decode", call(shared.mean_context, v));
    var ends = [state.prompt_len, last].map(function (s) {
      return bound(at("decode_compute", s), at("decode_memory", s));
    });
    var w = m.sizes.window || 0;
    var crosses = m.sizes.n_window_layers && state.prompt_len < w - 1 && w - 1 < last;
    var cost = {input: null, output: null, request: null,
                price_per_hour: g.price_per_hour, price_date: g.price_date};
    if (g.price_per_hour !== null) {
      cost.input = call(shared.cost_input, v); cost.output = call(shared.cost_output, v);
      cost.request = call(shared.cost_request,
                          Object.assign({}, v, {input_cost: cost.input, output_cost: cost.output}));
    }
    return {
      memory: {weights: weights, kv_cache: kv, total: weights + kv, capacity: g.memory_bytes},
      ttft: v.ttft, tpot: v.tpot, total: call(shared.total, v),
      throughput: call(shared.throughput, v), cost: cost,
      bound: {prefill: bound(call(f.prefill_compute, v), call(f.prefill_memory, v)),
              decode: ends[0] === ends[1] ? ends[0] : ends.join(", then ")},
      exact: ends[0] === ends[1] && !crosses
    };
  }
  function lookup(r, key) { key.split(".").forEach(function (p) { r = r[p]; }); return r; }
  var out = root.querySelector(".ia-calc-readout");
  function draw() {
    var r = calculate();
    if (r.error) {
      out.innerHTML = "";
      var p = document.createElement("p");
      p.className = "ia-calc-message"; p.setAttribute("role", "alert");
      var strong = document.createElement("b"); strong.textContent = r.error;
      p.appendChild(strong); out.appendChild(p);
      return;
    }
    var table = document.createElement("table");
    spec.rows.forEach(function (row) {
      var value = lookup(r, row.key), tr = document.createElement("tr");
      var name = document.createElement("td"), cell = document.createElement("td");
      name.textContent = row.label;
      cell.className = "ia-calc-value"; cell.dataset.key = row.key;
      if (row.format === "text") cell.dataset.text = value;
      else if (value !== null) cell.dataset.value = String(value);
      var strong = document.createElement("b"); strong.textContent = show(value, row.format);
      cell.appendChild(strong); tr.appendChild(name); tr.appendChild(cell); table.appendChild(tr);
    });
    var note = document.createElement("p"), c = r.cost;
    note.textContent = (c.price_per_hour !== null ?
      "price $" + c.price_per_hour + " per GPU-hour, observed " + c.price_date :
      "no example price for this GPU") + "; time per token at the mean context (" +
      (r.exact ? "exact" : "approximate: the decode bound or window changes") + ").";
    out.innerHTML = ""; out.appendChild(table); out.appendChild(note);
  }
  var box = root.querySelector(".ia-calc-controls");
  spec.controls.forEach(function (c) {
    var row = document.createElement("label"), input;
    row.textContent = c.name + " ";
    if (c.kind === "range") {  // a number field, clamped to the range as a slider would be
      input = document.createElement("input");
      input.type = "number"; input.min = c.min; input.max = c.max; input.step = 1;
      input.value = state[c.name];
      input.addEventListener("change", function () {
        var x = Math.round(Number(input.value));
        if (!isFinite(x)) x = state[c.name];
        x = Math.min(Math.max(x, c.min), c.max);
        input.value = x; state[c.name] = x; draw();
      });
    } else {
      input = document.createElement("select");
      c.options.forEach(function (n) {
        var o = document.createElement("option");
        o.value = n; o.textContent = n; input.appendChild(o);
      });
      input.value = state[c.name];
      input.addEventListener("change", function () { state[c.name] = input.value; draw(); });
    }
    input.name = c.name; input.setAttribute("aria-label", c.name);
    row.appendChild(input); box.appendChild(row);
  });
  draw();
});
"""
