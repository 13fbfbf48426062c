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
from inference_arithmetic.core import cache, checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.dtypes import (
    ALIASES,
    COMPUTE_FORMATS,
    DTYPE_BYTES,
    activation_bytes,
    compute_format,
)
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.formulas import continuous as formulas_continuous
from inference_arithmetic.formulas import economics, latency, techniques
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.hardware.gpus import gpu_names
from inference_arithmetic.models.config import (
    AUTO,
    model_names,
    weight_formats,
    weight_number_values,
)
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.page import own_config
from inference_arithmetic.page.live import FORMAT_RUNTIME, embed_json
from inference_arithmetic.serving import (
    bands,
    continuous,
    efficiencies,
    planning,
    queueing,
    scenario,
    speculative,
)
from inference_arithmetic.serving.engine import in_flight
from inference_arithmetic.serving.report import compiled_report

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
__all__ += ["PAGE_PARALLEL", "STREAM_PARALLEL", "NOT_STREAMED", "NO_SPECULATION"]
__all__ += ["SERVING_OPTIONS"]
__all__ += ["PLAN", "PLAN_ROWS", "AMOUNTS", "ONLY", "used", "amount_message", "amount_range"]

STATIC, CONTINUOUS, PLAN = "static batch", "continuous serving", "sizing from targets"
MODES = [STATIC, CONTINUOUS, PLAN]
"""The form's three modes: a batch of ``batch`` requests sent at once (``ia.calculate``); a
stream of ``requests_per_s`` requests a second on a continuously batching engine
(``ia.steady_state``); or the cheapest deployment whose steady state at that rate meets a time
to first token and a time per output token (``ia.plan``, which chooses the GPUs)."""
PAGE_PARALLEL = latency.PARALLEL
"""The parallelisms the page offers, the library's own; expert parallelism
(``latency.EXPERT_PARALLEL``) where the model has experts (a dense one gets
``latency.NO_EXPERTS``)."""
STREAM_PARALLEL = ("tensor", "pipeline")
"""The parallelisms of the page's steady state (the continuous and plan modes): tensor
parallelism, and a pipeline's micro-batches in flight (``serving.engine.Engine.period``, its cycle
``formulas.continuous.pipeline_wait`` printed). Expert parallelism's steady state is the
library's only: its steps would add a fifth to an MoE model's part of the page (25 of
Qwen3-30B-A3B's 112 kB), each evaluated at every step of the chain beside these."""
NOT_STREAMED = (
    "the calculator's continuous and plan modes time {choices}; parallel='{parallel}' is the "
    "static mode's here (ia.steady_state and ia.plan take it)"
)
"""The form's message for a parallelism its steady state does not carry (``STREAM_PARALLEL``)."""
NO_SPECULATION = "none"
"""The speculation choice that decodes one token a step (``speculative=None``)."""
SERVING_OPTIONS = ("prefix_hit_rate", "speculative")
"""The serving options of the continuous and plan modes (``Scenario``'s): each changes the
step kernel by kernel (``kernels.OPTIONS``)."""

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
        "token_budget": (1, _max_context()),
    }


AMOUNTS = {
    "requests_per_s": functools.partial(checks.amount, unit="requests per second", positive=True),
    "ttft_target": functools.partial(checks.amount, unit="seconds", positive=True),
    "tpot_target": functools.partial(checks.amount, unit="seconds", positive=True),
    "compute_efficiency": checks.fraction,
    "bandwidth_efficiency": checks.fraction,
    "memory_utilization": checks.fraction,
    "price_per_hour": functools.partial(checks.amount, unit="dollars", positive=True),
    "expert_imbalance": lambda name, value: scenario.check_imbalance(value),
    "prefix_hit_rate": functools.partial(checks.share),
}
"""The form's other numbers and the library's check of each (``checks``): the check that
``steady_state``, ``plan``, the ``Scenario`` and ``GPU.price`` make of the same argument. A
blank price is the GPU's example (None)."""

ONLY = {
    "batch": {"mode": [STATIC]},
    "n_gpus": {"mode": [STATIC, CONTINUOUS]},
    "replicas": {"mode": [STATIC, CONTINUOUS]},
    "requests_per_s": {"mode": [CONTINUOUS, PLAN]},
    "ttft_target": {"mode": [PLAN]},
    "tpot_target": {"mode": [PLAN]},
    "expert_imbalance": {"mode": [STATIC], "parallel": list(latency.EXPERT_PARALLEL)},
    "prefix_hit_rate": {"mode": [CONTINUOUS, PLAN]},
    "speculative": {"mode": [CONTINUOUS, PLAN]},
    "compute_efficiency": {"step": ["roofline"]},
    "bandwidth_efficiency": {"step": ["roofline"]},
    "config": {"model": [own_config.OWN]},
}
"""The controls that only some settings use, and those settings (every other control is used
everywhere): the batch in the static mode, the rate and targets where the steady state is
asked, the GPUs where the form does not choose them (the plan does), the efficiencies of
chapter 08's single roofline (the kernel model takes the GPU's measured kernels), the
imbalance of experts where they are spread (the static mode's: ``STREAM_PARALLEL``), the
serving options where a stream is served."""


def used(name: str, state: dict) -> bool:
    """Whether the control ``name`` counts in ``state`` (``ONLY``); the page shows only these."""
    return all(state[key] in values for key, values in ONLY.get(name, {}).items())


def amount_message(name: str) -> str:
    """The message for ``name`` (of ``AMOUNTS``) outside its range, as a template of
    ``{value}``: the library's own, with the value it names cut out."""
    try:
        AMOUNTS[name](name, -1.0)
    except ValueError as error:
        return str(error).rsplit("got ", 1)[0] + "got {value}"
    raise AssertionError("unreachable")


def rate_message() -> str:
    """The message for a request rate outside its range (``amount_message``)."""
    return amount_message("requests_per_s")


def amount_range(name: str) -> dict:
    """The range of ``name`` (of ``AMOUNTS``) as its check holds it: ``min`` and ``max``,
    ``above`` where ``min`` itself is refused (a positive amount), ``below`` where ``max`` is."""
    check, ends = AMOUNTS[name], {"above": False, "below": False}
    if check is checks.fraction:
        return {"min": checks.FRACTION[0], "max": checks.FRACTION[1], **ends}
    if name == "expert_imbalance":
        low, high = scenario.IMBALANCE
        return {"min": low, "max": high, **ends}
    if check.func is checks.share:  # 0 to 1, and 1 itself refused where it says ``below_one``
        return {"min": 0, "max": 1, **ends, "below": check.keywords.get("below_one", False)}
    high = inspect.signature(checks.amount).parameters["high"].default
    above = check.keywords["positive"]
    return {"min": 0, "max": check.keywords.get("high", high), **ends, "above": above}


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


# The readout of the continuous mode: a key of ``ia.steady_state``'s result, then the memory of
# the requests in the engine (the report's formulas at that batch) and the cost at the rate.
_CONTINUOUS_TABLE = """
ttft            | time to first token                      | seconds
tpot            | time per output token                    | seconds
request_time    | time per request                         | seconds
throughput      | throughput (output tokens/s)             | number
concurrency     | requests in the engine                   | number
utilization     | utilization (rate / saturation rate)     | percent
saturation_rate | saturation rate (requests/s)             | number
weights         | weights per GPU                          | nbytes
kv_cache | KV cache per GPU (requests in the engine, rounded up; prompt + output tokens) | nbytes
memory          | memory per GPU                           | nbytes
budget          | memory budget per GPU (memory utilization) | nbytes
capacity        | GPU memory                               | nbytes
gpus            | GPUs in all (replicas x GPUs each)       | integer
cost_output     | cost per million output tokens (GPUs paid busy or idle) | usd
cost_request    | cost per request (GPUs paid busy or idle) | usd
"""

# The plan's readout: a key of ``ia.plan``'s result (its output cost as cost_output).
_PLAN_TABLE = """
replicas        | replicas                                 | integer
n_gpus          | GPUs per replica (its parallelism's degree) | integer
gpus            | GPUs in all                              | integer
ttft            | time to first token                      | seconds
tpot            | time per output token                    | seconds
cost_output     | cost per million output tokens (GPUs paid busy or idle) | usd
"""


def _row(line: str) -> tuple:
    key, label, kind = (part.strip() for part in line.split("|"))
    return (tuple(key.split()) if kind == "bound" else key), label, kind


ROWS = [_row(line) for line in _TABLE.strip().splitlines()]
"""The readout's rows: (formula, label, kind), as ``_TABLE`` lists them."""
CONTINUOUS_ROWS = [_row(line) for line in _CONTINUOUS_TABLE.strip().splitlines()]
"""The continuous mode's rows: (key of ``ia.steady_state``'s result, or of the memory and cost
at the rate, label, kind)."""
PLAN_ROWS = [_row(line) for line in _PLAN_TABLE.strip().splitlines()]
"""The plan's rows: (key of ``ia.plan``'s result, label, kind)."""
_MODE_ROWS = {STATIC: ROWS, CONTINUOUS: CONTINUOUS_ROWS, PLAN: PLAN_ROWS}

PRICE = "price_per_hour"  # a number field that may be left blank: the GPU's example price
_rate = sympy.Symbol("requests_per_s", positive=True)  # queueing.STEADY's rate
STREAM = {
    "cost_output": economics.output_cost_at_rate(_rate),
    "cost_request": economics.request_cost_at_rate(_rate),
}
"""The continuous mode's costs: all the GPUs (``n_gpus``: every replica's) paid busy or idle
while they serve the rate (``formulas.economics``)."""


NOTES = {
    "priced": "price ${price_per_hour} per GPU-hour, observed {price_date}",
    "given": "price {price_per_hour} per GPU-hour, as given",
    "unpriced": "no example price for this GPU",
    "exact": "time per token at the mean context (exact)",
    "approximate": "time per token at the mean context (approximate: the decode bound or "
    "window changes)",
    "continuous": "the steady state of a continuously batching engine (ia.steady_state); its "
    "memory is that of the requests in the engine",
    "plan": "the cheapest replicas x degree of the parallelism chosen (up to "
    f"{planning.PLAN_DEGREE}) whose steady state meets both targets (ia.plan)",
    "band": bands.describe(),
}
"""The sentence under the readout: its parts joined by "; ", the band's last (the kernel
model's: chapter 08's single roofline has none)."""
GIVEN_KIND = "usd"
"""How ``NOTES["given"]`` prints a price the reader typed (``format.show``'s kind)."""


# The form's controls that are not one of the book's symbols, in words (the keyword in code is
# the control's name, which the messages use).
_WORDS = {
    "mode": "mode",
    "model": "model",
    "gpu": "GPU",
    "parallel": "parallelism",
    "step": "step model",
    "dtype": "weights' number format",
    "compute_dtype": "compute format",
    "cache_dtype": "KV cache format",
    "requests_per_s": "request rate (requests/s)",
    "ttft_target": "time to first token target (s)",
    "tpot_target": "time per output token target (s)",
    "price_per_hour": "price per GPU-hour ($; blank: the GPU's example)",
    "speculative": "speculative decoding (drafts)",
    "config": "config.json (paste it)",
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


def _mode_of(values) -> str:
    """The mode whose readout ``values`` are: a steady state's, a plan's, or a report's."""
    if "saturation_rate" in values:
        return CONTINUOUS
    return PLAN if "replicas" in values else STATIC


def _banded(values) -> dict:
    """The rows of the readout that carry a band, by mode: key -> (kind, whether a speed)."""
    return serving.BANDED if _mode_of(values) == STATIC else continuous.BANDED


def cell(row, values, banded: bool = True) -> str:
    """One row of the readout (of ``ROWS``) as text: a formula's value in its kind, and in
    brackets its band where it has one (``serving.bands``; none with ``banded`` false, for
    chapter 08's single roofline), or the bounds of a phase (``serving.bound_text``)."""
    key, _, kind = row
    if kind == "bound":
        return serving.bound_text(*(values[k] for k in key))
    text, value = fmt.show(values[key], kind), values[key]
    if not banded or key not in _banded(values) or value is None:
        return text
    band_kind, speed = _banded(values)[key]
    low, high = bands.band(band_kind, value, speed)
    return BANDED_CELL.format(value=text, low=fmt.show(low, kind), high=fmt.show(high, kind))


def _note(values, gpu, price=None, banded=True) -> str:
    mode = _mode_of(values)
    if price is not None:
        parts = [NOTES["given"].format(price_per_hour=fmt.show(price, GIVEN_KIND))]
    elif gpu.price_per_hour is not None:
        given = {"price_per_hour": gpu.price_per_hour, "price_date": gpu.price_date}
        parts = [NOTES["priced"].format(**given)]
    else:
        parts = [NOTES["unpriced"]]
    if mode == STATIC:
        parts.append(NOTES["exact" if values["exact"] else "approximate"])
    else:
        parts.append(NOTES["continuous" if mode == CONTINUOUS else "plan"])
    return "; ".join(parts + [NOTES["band"]] * banded) + "."


def readout_html(values, gpu, message: str | None = None, price=None, banded=True) -> str:
    """The readout table of ``serving.report_values`` (or of a steady state or a plan), or the
    message that replaces it."""
    if values is None:
        return f'<p class="ia-calc-message" role="alert"><b>{html.escape(message)}</b></p>'
    rows = "".join(
        f"<tr><td>{row[1]}</td><td><b>{html.escape(cell(row, values, banded))}</b></td></tr>"
        for row in _MODE_ROWS[_mode_of(values)]
    )
    return f"<table>{rows}</table><p>{html.escape(_note(values, gpu, price, banded))}</p>"


def _number(name: str, value) -> None:
    """Refuse a value no number field of the form can hold: a whole number field anything but a
    whole number, another number field anything but a finite number (NaN, a string, a bool;
    a blank price is the GPU's example), each with its control's message (``checks``)."""
    # A number out of its range is the form's to answer (a message, as the page shows); a
    # value that is no number is the caller's mistake, which a message would hide.
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if name in ranges() and not (real and math.isfinite(value) and value == int(value)):
        checks.count(name, value, *ranges()[name])  # raises: not a whole number
    if name == "config" and not isinstance(value, str):
        raise ArgumentError(f"config must be the text of a config.json, got {value!r}")
    if name == "price_per_hour" and value is None:
        return
    if name in AMOUNTS and not (real and math.isfinite(value)):
        AMOUNTS[name](name, value)  # raises


class Calculator:
    """The calculator's controls and readout: ipywidgets in Jupyter, a live page in the book.

    ``update(**changes)`` sets controls and recomputes: ``result`` is ``ia.calculate``'s (or
    ``ia.steady_state``'s, or ``ia.plan``'s, by the mode), or None with the reason in
    ``message`` (an input outside its range, or a scenario the library refuses). Nothing is
    clamped: the form answers for what was typed, or says why not. A value no field can hold
    (a string, NaN, 2.5 requests) raises ``ArgumentError`` naming the control. Without a
    ``requests_per_s``, the rate starts at half the saturation rate of the deployment the form
    starts with (``default_rate``), where the tail of the wait has not yet exploded.
    """

    def __init__(self, **state):
        self.state = {
            "mode": STATIC,
            "model": "llama-3.1-8b",
            "gpu": "h100-sxm",
            "n_gpus": 1,
            "replicas": 1,
            "parallel": "tensor",
            "dtype": AUTO,
            "compute_dtype": SAME,
            "cache_dtype": COMPUTED,
            "batch": 1,
            "prompt_len": 2048,
            "output_len": 256,
            "requests_per_s": 1.0,
            "ttft_target": 0.5,
            "tpot_target": 0.05,
            "step": scenario.DEFAULT_STEP,
            "compute_efficiency": efficiencies.DEFAULT_COMPUTE_EFFICIENCY,
            "bandwidth_efficiency": efficiencies.DEFAULT_BANDWIDTH_EFFICIENCY,
            "memory_utilization": scenario.DEFAULT_MEMORY_UTILIZATION,
            "token_budget": scenario.default_budget(),
            "price_per_hour": None,
            "expert_imbalance": scenario.DEFAULT_EXPERT_IMBALANCE,
            "prefix_hit_rate": 0.0,
            "speculative": NO_SPECULATION,
            "config": "",
        }
        self._widgets = None
        self._syncing = False
        self.result, self.values, self.message = None, None, None
        self.update(**state)
        if "requests_per_s" not in state:
            self.update(requests_per_s=self.default_rate())

    def default_rate(self) -> float:
        """Half the saturation rate of the steady state of the current controls, to two
        significant digits (the current rate where there is none: a deployment that does not
        fit, or requests that never decode)."""
        try:
            s = scenario.Scenario(**self._scenario_arguments(CONTINUOUS))
            return float(f"{continuous.saturation_rate(s) / 2:.2g}")
        except (ValueError, KeyError):
            return self.state["requests_per_s"]

    @property
    def choices(self) -> dict[str, list[str]]:
        return {
            "mode": MODES,
            "model": [*model_names(), own_config.OWN],
            "gpu": gpu_names(),
            "parallel": list(PAGE_PARALLEL),
            "step": list(scenario.STEPS),
            "dtype": [AUTO, *DTYPE_BYTES],
            "compute_dtype": [SAME, *COMPUTES],
            "cache_dtype": [COMPUTED, *DTYPE_BYTES],
            "speculative": [NO_SPECULATION, *speculative.METHODS],
        }

    def arguments(self, mode: str | None = None) -> dict:
        """The current controls as ``calculate``'s arguments (of ``mode``, default the form's):
        the deployment's and the workload's, without the rate, the targets and the price."""
        mode = mode or self.state["mode"]
        compute, cache = self.state["compute_dtype"], self.state["cache_dtype"]
        compute, cache = (
            (None if compute == SAME else compute),
            (None if cache == COMPUTED else cache),
        )
        arguments = {**self.state, "compute_dtype": compute, "cache_dtype": cache}
        for name in ("mode", "requests_per_s", "ttft_target", "tpot_target", "price_per_hour"):
            del arguments[name]
        del arguments["config"]
        if arguments["speculative"] == NO_SPECULATION:
            arguments["speculative"] = None
        for name in ("expert_imbalance", *SERVING_OPTIONS):  # the library's defaults elsewhere
            if not used(name, {**self.state, "mode": mode}):
                del arguments[name]
        if self.state["model"] == own_config.OWN:  # read by the library's own parser
            arguments["model"] = own_config.model_of(self.state["config"])
        for name in ("compute_efficiency", "bandwidth_efficiency"):
            if not used(name, self.state):  # the kernel model's are the GPU's measured ones
                del arguments[name]
        if mode != STATIC:  # one request at a time enters the engine
            arguments |= {"batch": 1, "in_waves": True}
        return arguments

    def update(self, **changes):
        for name, value in changes.items():
            if value is None and name in ("compute_dtype", "cache_dtype", "speculative"):
                value = {"compute_dtype": SAME, "cache_dtype": COMPUTED}.get(name, NO_SPECULATION)
            if name in self.choices:
                checks.choice(name, value, self.choices[name])
            elif name not in self.state:
                raise ArgumentError(f"no control named {name!r}; controls: {sorted(self.state)}")
            _number(name, value)
            self.state[name] = value
        try:
            self.result, self.values = self._compute()
            self.message = None
        except (ValueError, KeyError) as error:
            self.result, self.values = None, None
            self.message = error.args[0] if isinstance(error, KeyError) else str(error)
        if self._widgets is not None:
            self._syncing = True
            try:
                for name, control in self._widgets.items():
                    value = self.state[name]
                    control.value = "" if value is None else str(value) if name == PRICE else value
                    control.layout.display = None if used(name, self.state) else "none"
            finally:
                self._syncing = False
            self._readout.value = self.html()
        return self

    def _compute(self) -> tuple[dict, dict]:
        """The mode's result and the readout's values, after the form's own checks (each
        number used in its range, in the order the page checks them)."""
        state, mode = self.state, self.state["mode"]
        for name, (low, high) in ranges().items():
            if used(name, state):
                checks.count(name, state[name], low, high)
        for name, check in AMOUNTS.items():
            if used(name, state) and state[name] is not None:
                check(name, state[name])
        if mode != STATIC and state["parallel"] not in STREAM_PARALLEL:
            raise ArgumentError(_not_streamed(state["parallel"]))
        price = state["price_per_hour"]
        if mode == PLAN:
            arguments = self.arguments()
            options = {k: arguments[k] for k in arguments if k in scenario.DEPLOYMENT}
            for name in ("n_gpus", "replicas"):  # the plan chooses them
                del options[name]
            r = planning.plan_colocated(
                arguments["model"], state["gpu"], state["requests_per_s"], state["prompt_len"],
                state["output_len"], state["ttft_target"], state["tpot_target"],
                price_per_hour=price, **options,
            )  # fmt: skip
            return r, {**r, "cost_output": r["cost"]["output"]}
        s = scenario.Scenario(**self._scenario_arguments())
        if mode == STATIC:
            return serving.report(s, price), serving.report_values(s, price)
        rate = state["requests_per_s"]
        steady = continuous.steady_state_of(s, float(rate))
        return steady, {**steady, **_stream_values(s, steady, rate, price)}

    def _scenario_arguments(self, mode: str | None = None):
        arguments = self.arguments(mode)
        return {"model": arguments.pop("model"), **arguments}

    def html(self) -> str:
        gpu, banded = registry_gpu(self.state["gpu"]), self.state["step"] == "kernels"
        return readout_html(self.values, gpu, self.message, self.state["price_per_hour"], banded)

    def widget(self):
        """The ipywidgets form (built once): dropdowns, number fields, and the readout."""
        if self._widgets is None:
            import ipywidgets as w

            self._widgets = {}
            for name in self.state:
                if name in ranges():
                    control = w.IntText(value=self.state[name])
                elif name == PRICE:  # blank: the GPU's example price
                    value = self.state[name]
                    control = w.Text(value="" if value is None else str(value))
                elif name in AMOUNTS:
                    control = w.FloatText(value=self.state[name])
                elif name == "config":
                    control = w.Textarea(value=self.state[name])
                else:
                    control = w.Dropdown(options=self.choices[name], value=self.state[name])
                control.description = label(name)
                control.style = {"description_width": "initial"}
                control.observe(self._on_change(name), names="value")
                control.layout.display = None if used(name, self.state) else "none"
                self._widgets[name] = control
            self._readout = w.HTML(self.html())
            self._box = w.VBox([w.VBox(list(self._widgets.values())), self._readout])
        return self._box

    def _on_change(self, name):
        def handler(change):
            if not self._syncing:
                value = change["new"]
                if name == PRICE:  # a text field: blank, a number, or what it says
                    value = _typed_price(value)
                self.update(**{name: value})

        return handler

    def text(self) -> str:
        """The readout as plain text, for outputs that show no HTML (the PDF)."""
        args = ", ".join(f"{k}={v}" for k, v in self.state.items() if used(k, self.state))
        if self.values is None:
            return f"Calculator ({args}): {self.message}"
        banded = self.state["step"] == "kernels"
        lines = [f"Calculator ({args}):"]
        rows = _MODE_ROWS[_mode_of(self.values)]
        lines += [f"  {row[1]}: {cell(row, self.values, banded)}" for row in rows]
        note = _note(self.values, registry_gpu(self.state["gpu"]), self.state["price_per_hour"],
                     banded)  # fmt: skip
        return "\n".join([*lines, f"  {note}"])

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
            f"<script>{FORMAT_RUNTIME}{_runtime('steady.js')}{_runtime('plan.js')}{_RUNTIME}\n"
            f"iaCalc(document.getElementById({json.dumps(element)}));</script>"
        )

    def _repr_mimebundle_(self, **kwargs):
        # Jupyter renders the ipywidgets form; the static book renders the HTML, which
        # recomputes in the browser without a kernel; the PDF prints the text.
        bundle = self.widget()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = self.live_html()
        bundle["text/plain"] = self.text()
        return bundle


def _not_streamed(parallel) -> str:
    return NOT_STREAMED.format(choices=" or ".join(STREAM_PARALLEL), parallel=parallel)


def _typed_price(text):
    """A price field's text as the form's value: None for a blank, else the number, else the
    text itself (which the form refuses by name)."""
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _stream() -> dict:
    return STREAM


def _stream_values(s, steady: dict, rate: float, price) -> dict:
    """The continuous mode's memory and cost rows: the report's memory formulas at a batch of
    the requests in one replica's engine, rounded up to whole requests (each holding its whole
    cache of T + O tokens, as the engine's capacity counts them; a pipeline's, of each of its
    ``latency.batches_in_flight``), and ``STREAM`` at the rate."""
    price, _, _ = s.gpu.price(price)
    per_batch = math.ceil(steady["concurrency"] / s.replicas / in_flight(s))
    values = {**s.values(), "batch": per_batch, "price_per_hour": price or 1.0}
    r = _report_compiled(s).from_values(values)
    gpus = s.n_gpus * s.replicas
    costs = cache.formulas(_stream).from_values({**values, "n_gpus": gpus, "requests_per_s": rate})
    memory = {k: r[k] for k in ("weights", "kv_cache", "memory", "budget", "capacity")}
    return {**memory, "gpus": gpus, **{k: v if price else None for k, v in costs.items()}}


def _report_compiled(s):
    """The compiled formulas of ``serving.report_values`` for ``s``."""
    return compiled_report(s.model, s.step, s.parallel)


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
    a model's kernels and their common parts takes about a second a parallelism)."""
    return cache.data(_print_model, arch)


def _print_checks(arch, parallel) -> list:
    return [
        {
            "name": check.name,
            "holds": _js(check.holds(arch, parallel)),
            "message": check.message,
            "fields": {
                f: {**_js(e(arch, parallel)), "kind": k} for f, (e, k) in check.fields.items()
            },
        }
        for check in scenario.CHECKS
        if check.applies(arch, parallel)
    ]


def _parallels(arch) -> list[str]:
    """The parallelisms whose formulas the page carries for ``arch``: expert parallelism only
    where it has experts (``latency.NO_EXPERTS``)."""
    return [p for p in PAGE_PARALLEL if arch.is_moe or p not in latency.EXPERT_PARALLEL]


def step_key(options: tuple, draft) -> str:
    """The page's name of a step with ``options`` (``kernels.OPTIONS``, in order) and ``draft``
    (``Speculative.draft``; None without speculation): the page builds the same."""
    return ",".join(options) + ":" + str(draft)


def _drafts() -> list:
    """The drafts of the methods whose defaults the page offers (a draft model is named)."""
    return sorted({m.draft for m in speculative.METHODS.values() if m.draft_len}, key=str)


def _steps(arch, step) -> dict:
    """The continuous step of ``arch`` by ``step_key``: the plain step, and with the kernel
    model each set of serving options (``Scenario.formula_options``); each of tensor
    parallelism and a pipeline's micro-batch (``STREAM_PARALLEL``), printed together: their
    common parts, most of a pipeline's, are carried once (5 kB of JavaScript for both of 70B's
    plain kernel steps, against 3.7 for the tensor step alone and 3.3 for the pipeline's)."""

    def both(**options):
        formulas = scenario.STEP_FORMULAS[step]
        return _js_block({p: formulas(arch, p, **options) for p in STREAM_PARALLEL})

    steps = {step_key((), None): both()}
    if step != "kernels":
        return steps
    for prefix, draft in itertools.product((False, True), [False, *_drafts()]):
        options = ("prefix",) * prefix + ("speculative",) * (draft is not False)
        if options:
            draft = None if draft is False else draft
            steps[step_key(options, draft)] = both(options=options, draft=draft)
    return steps


def _print_model(arch) -> dict:
    parallels = _parallels(arch)
    return {
        "sizes": arch.sizes(),
        "weights": weight_number_values(arch),  # as the checkpoint ships ("auto")
        "layers_format": weight_formats(arch)["layers"],
        "context_window": arch.context_window,
        "degrees": ", ".join(map(str, scenario.tensor_parallel_degrees(arch))),
        "degree_list": scenario.tensor_parallel_degrees(arch),
        "plan_degrees": {  # planning.plan_colocated's: a pipeline's stages, else the heads' split
            "tensor": scenario.tensor_parallel_degrees(arch, planning.PLAN_DEGREE),
            "pipeline": scenario.pipeline_degrees(arch, planning.PLAN_DEGREE),
        },
        "expert_degrees": ", ".join(map(str, scenario.expert_parallel_degrees(arch))),
        "expert_degree_list": scenario.expert_parallel_degrees(arch, ranges()["n_gpus"][1]),
        "continuous": {  # the page's steady state, of each of STREAM_PARALLEL
            "step": {s: _steps(arch, s) for s in scenario.STEPS},
            "capacity": _js_block({p: latency.max_concurrency(arch, p) for p in STREAM_PARALLEL}),
        },
        "report": {
            s: {p: _js_block(serving.report_formulas(arch, s, p)) for p in parallels}
            for s in scenario.STEPS
        },
        "checks": {p: _print_checks(arch, p) for p in parallels},
    }


def warm() -> int:
    """Print the page's data of every registry model into the disk cache (``make`` runs it
    when it sets up the environment); the number of models."""
    return len(_page_data()["models"])


def _gpu_data(g, engine) -> dict:
    """One GPU's part of the page's data: its figures, and for each step model the figures a
    step takes by the compute format, and the weights' stream by theirs
    (``efficiencies.WEIGHT_FIGURES``): the scenario's, for each format the form offers."""
    figures = {k: v for k, v in g.figures(next(iter(g.peak_flop_rate))).items() if k != "flop_rate"}
    by_compute, by_weights = {}, {}
    for step in scenario.STEPS:
        by_compute[step] = {}
        for c in (c for c in g.peak_flop_rate if c in COMPUTES):  # the formats offered
            found = efficiencies.found_figures(g, engine, c, c, step)
            kept = {k: v for k, v in found.items() if k not in efficiencies.WEIGHT_FIGURES}
            by_compute[step][c] = {**kept, "activation_bytes_per_number": activation_bytes(c)}
        some = next(iter(by_compute[step]))
        by_weights[step] = {
            d: {k: efficiencies.found_figures(g, engine, some, d, step)[k]
                for k in efficiencies.WEIGHT_FIGURES}
            for d in DTYPE_BYTES
        }  # fmt: skip
    try:  # the plan's refusal of a GPU without a price, the library's own words
        g.price(required=True)
        no_price = None
    except ValueError as error:
        no_price = str(error)
    return {
        "flop_rate": dict(g.peak_flop_rate),
        "figures": figures,
        "compute": by_compute,
        "weights": by_weights,
        "price_per_hour": g.price_per_hour,
        "price_date": g.price_date,
        "no_price": no_price,
    }


def _controls() -> list[dict]:
    """The form's controls in their order, each with its kind, label, range and where it is
    used (``ONLY``)."""
    controls = [
        {"name": n, "kind": "degrees" if n == "n_gpus" else "range", "min": low, "max": high}
        for n, (low, high) in ranges().items()
    ]
    for name in AMOUNTS:
        control = {"name": name, "kind": "amount", "message": amount_message(name)}
        controls.append({**control, **amount_range(name), "blank": name == "price_per_hour"})
    choices = Calculator.__new__(Calculator).choices
    controls += [{"name": n, "kind": "choice", "options": o} for n, o in choices.items()]
    controls += [{"name": "config", "kind": "text"}]
    for control in controls:
        control["label"] = label(control["name"])
        control["only"] = ONLY.get(control["name"], {})
        # A value of the formulas, which the page sets where the control is used.
        control["value"] = control["name"] in _VALUE_CONTROLS
    order = ["mode", "model", "gpu", "parallel", "n_gpus", "expert_imbalance", "replicas"]
    order += ["dtype", "compute_dtype", "cache_dtype", "batch", "requests_per_s", "ttft_target"]
    order += ["tpot_target", "prompt_len", "output_len", *SERVING_OPTIONS, "step"]
    order += ["compute_efficiency", "bandwidth_efficiency"]
    order += ["memory_utilization", "token_budget", "price_per_hour", "config"]
    return sorted(controls, key=lambda c: order.index(c["name"]))


def _rows_data(rows, banded) -> list[dict]:
    return [
        {"key": k, "label": text, "kind": kind, "band": banded.get(k)} for k, text, kind in rows
    ]


@functools.cache
def _page_data() -> dict:
    """The page's data, the same for every calculator (module docstring)."""
    models = {name: _model_data(registry_model(name)) for name in model_names()}
    default = scenario.Scenario("llama-3.1-8b", "h100-sxm")
    gpus = {name: _gpu_data(registry_gpu(name), default.engine) for name in gpu_names()}
    # The numeric settings the form does not offer (the engine's, the link): the default
    # scenario's values less the model's, the GPU's and the form's own.
    own = set(default.model.sizes()) | set(default.gpu.figures(default.compute_dtype))
    own |= set(gpus[default.gpu.name]["compute"][default.step][default.compute_dtype])
    own |= set(efficiencies.WEIGHT_FIGURES) | set(_FORM_VALUES)
    options = {k: v for k, v in default.values().items() if k not in own}
    plan_signature = inspect.signature(planning.plan_colocated).parameters
    return {
        "same": SAME,
        "computed": COMPUTED,
        "controls": _controls(),
        "models": models,
        "gpus": gpus,
        "dtypes": DTYPE_BYTES,
        "names": ALIASES,  # a compute format's name as a cache's: fp4 is nvfp4
        "computes": {d: compute_format(d) for d in [*DTYPE_BYTES, *COMPUTES]},
        "auto": AUTO,
        "options": options,
        "count_message": checks.COUNT,
        "no_rate": scenario.NO_RATE,
        "no_link": scenario.NO_LINK,
        "no_experts": latency.NO_EXPERTS,
        "not_kernels": {s: scenario.NOT_KERNELS.format(step=s) for s in scenario.STEPS},
        "no_speculation": NO_SPECULATION,
        "speculative": {m: _method(m) for m in speculative.METHODS},
        "serving": {
            "prefilled": _js(techniques.prefilled_tokens()),
            "verified": _js(techniques.verified_tokens()),
            "expected": _js(techniques.expected_tokens()),
        },
        "one_token": continuous.ONE_TOKEN,
        "rows": _rows_data(ROWS, serving.BANDED),
        "bands": {kind: bands.bands()[kind] for kind in bands.KINDS},
        "band_ends": {which: _js_block(ends) for which, ends in bands.BAND.items()},
        "band_cell": BANDED_CELL,
        "bounds": serving.BOUNDS,
        "then": serving.THEN,
        "notes": NOTES,
        "given_kind": GIVEN_KIND,
        "modes": {"static": STATIC, "continuous": CONTINUOUS, "plan": PLAN},
        "continuous_rows": _rows_data(CONTINUOUS_ROWS, continuous.BANDED),
        "plan_rows": _rows_data(PLAN_ROWS, continuous.BANDED),
        "context": _js(latency.mean_context()),
        "steady": {k: _js(e) for k, e in queueing.STEADY.items()},
        "pipeline_wait": _js(formulas_continuous.pipeline_wait()),
        "in_flight": _js_block({p: latency.batches_in_flight(p) for p in STREAM_PARALLEL}),
        "stream_parallel": STREAM_PARALLEL,
        "not_streamed": _not_streamed("{parallel}"),
        "replicas": {k: _js(e) for k, e in continuous.REPLICAS.items()},
        "stream": _js_block(STREAM),
        "prompt_counts": queueing.PROMPT_COUNTS,
        "spread": queueing.SPREAD_POINTS,
        "saturated": continuous.SATURATED,
        "saturated_kinds": continuous.SATURATED_KINDS,
        "replicated": continuous.REPLICATED,
        "own": {
            "name": own_config.OWN,
            "rules": own_config.reading(),
            "messages": own_config.MESSAGES,
        },
        "plan": {
            "degree": planning.PLAN_DEGREE,
            "most_gpus": plan_signature["most_gpus"].default,
            "message": planning.NO_DEPLOYMENT,
            "kinds": planning.NO_DEPLOYMENT_KINDS,
        },
    }


def _method(name: str) -> dict:
    """A speculation method as the page takes it: its draft (``step_key``) and its defaults'
    values, or the library's refusal of a method that has none (a draft model's)."""
    try:
        method = speculative.Speculative(name)
    except ValueError as error:
        return {"error": str(error)}
    return {"draft": str(method.draft), **method.values()}


_VALUE_CONTROLS = ("compute_efficiency", "bandwidth_efficiency", "expert_imbalance")
_VALUE_CONTROLS += ("prefix_hit_rate",)
"""The controls that are values of the formulas (the rest choose the formulas or the values)."""

_FORM_VALUES = ("bytes_per_number", "expert_bytes_per_number", "vocab_bytes_per_number")
_FORM_VALUES += ("kv_bytes_per_number", "n_gpus", "batch", "replicas")
_FORM_VALUES += ("seq_len", "output_len", "context_window", "memory_utilization", "token_budget")
"""The values the form sets itself (``calculate()`` in the page's script)."""

_ids = itertools.count()


@functools.cache
def _runtime(name: str) -> str:
    """A script of the page's, from this folder: ``steady.js`` (``iaSteady``, the page's steady
    state of a continuously batching engine: ``serving.engine.Engine``'s procedure over the spec's
    formulas; a Markov chain's fixed point has no closed form SymPy could print, so the page
    runs the same small numerical routine on the library's formulas, and the browser test holds
    the two equal), ``plan.js`` (``iaPlan``, ``planning.plan_colocated``'s search over it), and
    ``calculator.js`` (``iaCalc``, the interpreter of the spec)."""
    import importlib.resources

    return importlib.resources.files("inference_arithmetic.page").joinpath(name).read_text("utf-8")


def _steady_runtime() -> str:
    return _runtime("steady.js")


_STYLE = (
    ".ia-calc-controls{display:grid;grid-template-columns:repeat(auto-fill,minmax(15em,1fr));"
    "gap:.3em 1em;margin:.5em 0}.ia-calc-controls label{display:flex;gap:.5em;"
    "align-items:center;justify-content:space-between}.ia-calc-controls input{width:8em}"
    ".ia-calc-readout td{padding:0 .6em}"
    # The message in the text colour (vermillion text is too faint on white), marked by a bar.
    ".ia-calc-message{border-left:.3em solid #D55E00;padding-left:.5em;font-weight:bold}"
)

# An interpreter of the spec (calculator.js): it fills the spec's templates with its formulas'
# values, in the order the library checks them. Rules and words come from the spec, numbers'
# text from iaShow.
_RUNTIME = _runtime("calculator.js")
