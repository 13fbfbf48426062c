"""The calculator: its form and readout as ipywidgets in Jupyter, and as a live block in the
book's page.

>>> c = widget(model="llama-3.1-70b", n_gpus=4, batch=32)
>>> c.result["bound"]["decode"]
'bandwidth'
>>> c.update(n_gpus=3).message.startswith("llama-3.1-70b's 64 attention heads")
True

What it computes is ``ia.calculate`` (``serving``): a ``Scenario``, checked by ``scenario.CHECKS``,
and the formulas of ``serving.report_formulas``; in its other modes ``ia.steady_state``,
``ia.plan`` and ``ia.frontier``. The form's controls are ``calculator_form``'s, the readout
``calculator_readout``'s. The page cannot run Python, so the live block carries the same
rules as data (``calculator_data``) and a script that interprets them (``calculator.js``): it
holds no formula, no check and no message of its own.
"""

from __future__ import annotations

import inspect
import itertools
import json
import warnings

from inference_arithmetic import serving
from inference_arithmetic.core import checks
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.page import named, own_config
from inference_arithmetic.page.calculator_data import page_data, step_key, warm
from inference_arithmetic.page.calculator_form import (
    AMOUNTS,
    COMPUTED,
    CONTINUOUS,
    FRONTIER,
    JUDGED,
    MODES,
    NO_SPECULATION,
    NOT_STREAMED,
    ONLY,
    PAGE_PARALLEL,
    PLAN,
    PRICE,
    SAME,
    SERVING_OPTIONS,
    STATIC,
    STREAM_PARALLEL,
    amount_message,
    amount_range,
    check_number,
    choices,
    label,
    not_streamed,
    ranges,
    rate_message,
    used,
)
from inference_arithmetic.page.calculator_readout import (
    BANDED_CELL,
    CONTINUOUS_ROWS,
    FRONTIER_COLUMNS,
    FRONTIER_KEY,
    NOTES,
    PERCENTILE_KEY,
    PERCENTILE_NAMES,
    PLAN_ROWS,
    ROWS,
    STREAM,
    cell,
    frontier_values,
    percentile_values,
    readout_html,
    readout_lines,
    stream_values,
)
from inference_arithmetic.page.live import FORMAT_RUNTIME, embed_json
from inference_arithmetic.page.scripts import script
from inference_arithmetic.serving import bands, continuous, efficiencies, planning, scenario
from inference_arithmetic.serving.frontier import frontier

# The calculator's front door (ia.calculator): the widget, and the names of the form, the
# readout and the page data that chapter 16 and readers use.
__all__ = ["Calculator", "widget", "warm", "ranges", "cell", "readout_html", "ROWS", "SAME"]
__all__ += ["COMPUTED", "BANDED_CELL", "NOTES", "MODES", "STATIC", "CONTINUOUS"]
__all__ += ["CONTINUOUS_ROWS", "label", "PAGE_PARALLEL", "STREAM_PARALLEL", "NOT_STREAMED"]
__all__ += ["NO_SPECULATION", "SERVING_OPTIONS", "PLAN", "PLAN_ROWS", "AMOUNTS", "ONLY"]
__all__ += ["used", "amount_message", "amount_range", "rate_message", "not_streamed", "PRICE"]
__all__ += ["STREAM", "step_key", "JUDGED", "PERCENTILE_KEY", "PERCENTILE_NAMES"]
__all__ += ["FRONTIER", "FRONTIER_COLUMNS", "FRONTIER_KEY"]


class RefusedWarning(UserWarning):
    """A ``Calculator`` made with settings the library refuses: it has no ``result``, and
    this says why (``message``) to a reader who made it in code, not on the page."""


REFUSED = "the calculator has no result: {message} (its message; update() to change it)"
"""The warning of a ``Calculator`` made with refused settings (``RefusedWarning``), and the
``ArgumentError`` of reading its ``result``."""


class Calculator:
    """The calculator's controls and readout: ipywidgets in Jupyter, a live page in the book.

    ``update(**changes)`` sets controls and recomputes: ``result`` is ``ia.calculate``'s (or
    ``ia.steady_state``'s, ``ia.plan``'s or ``ia.frontier``'s, by the mode), and ``message``
    None; or, for an
    input outside its range or a scenario the library refuses, ``message`` says why and reading
    ``result`` raises ``ArgumentError`` with it (``values`` is None). Nothing is clamped: the
    form answers for what was typed, or says why not. A value no field can hold (a string, NaN,
    2.5 requests) raises ``ArgumentError`` naming the control. Without a ``requests_per_s``, the
    rate starts at half the saturation rate of the deployment the form starts with
    (``default_rate``), where the tail of the wait has not yet exploded.
    """

    def __init__(self, **state):
        self.state = {
            "mode": STATIC,
            # The book's running example (``named.EXAMPLES``), its workload below.
            "model": named.EXAMPLES["small"]["model"],
            "gpu": named.EXAMPLES["small"]["gpu"],
            "n_gpus": named.EXAMPLES["small"]["n_gpus"],
            "replicas": 1,
            "parallel": "tensor",
            "dtype": AUTO,
            "compute_dtype": SAME,
            "cache_dtype": COMPUTED,
            "batch": 1,
            "prompt_len": named.EXAMPLES["small"]["prompt_len"],
            "output_len": named.EXAMPLES["small"]["output_len"],
            "requests_per_s": 1.0,
            "ttft_target": 0.5,
            "tpot_target": 0.05,
            "percentile": _judged(_PLAN_PERCENTILE),  # ia.plan's default: the mean
            "step": scenario.DEFAULT_STEP,
            "compute_efficiency": efficiencies.DEFAULT_COMPUTE_EFFICIENCY,
            "bandwidth_efficiency": efficiencies.DEFAULT_BANDWIDTH_EFFICIENCY,
            "memory_utilization": scenario.DEFAULT_MEMORY_UTILIZATION,
            # The default engine's on the starting GPU (vLLM 0.11's 8,192 on an H100), what
            # ia.calculate takes there; a control, it stays as set when the GPU changes.
            "token_budget": scenario.default_budget(
                state.get("gpu", named.EXAMPLES["small"]["gpu"])
            ),
            "price_per_hour": None,
            "expert_imbalance": scenario.DEFAULT_EXPERT_IMBALANCE,
            "prefix_hit_rate": 0.0,
            "speculative": NO_SPECULATION,
            "config": "",
        }
        self._widgets = None
        self._syncing = False
        self._result, self.values, self.message = None, None, None
        self.update(**state)
        if "requests_per_s" not in state:
            self.update(requests_per_s=self.default_rate())
        if self.message is not None:  # made in code, not on the page: say why, where it is read
            warnings.warn(REFUSED.format(message=self.message), RefusedWarning, stacklevel=2)

    def __repr__(self):
        shown = f"message={self.message!r}" if self.message else f"result={self._result!r}"
        return f"Calculator(mode={self.state['mode']!r}, {shown:.300})"

    @property
    def result(self) -> dict:
        """The mode's answer for the current controls; ``ArgumentError`` with ``message`` where
        the library refuses them."""
        # Raised rather than None: c.result["tpot"] of refused settings failed as Python's
        # "'NoneType' object is not subscriptable", far from the reason, which this error
        # carries. ``message`` (None when answered) is the question "was it refused?".
        if self.message is not None:
            raise ArgumentError(REFUSED.format(message=self.message))
        return self._result

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
        """Each dropdown's options (``calculator_form.choices``)."""
        return choices()

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
        asked = ("mode", "requests_per_s", "ttft_target", "tpot_target", "percentile")
        for name in (*asked, "price_per_hour"):
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
            check_number(name, value)
            self.state[name] = value
        try:
            self._result, self.values = self._compute()
            self.message = None
        except (ValueError, KeyError) as error:
            self._result, self.values = None, None
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
        if mode in (CONTINUOUS, PLAN) and state["parallel"] not in STREAM_PARALLEL:
            raise ArgumentError(not_streamed(state["parallel"]))
        if mode == FRONTIER:  # ia.frontier chooses the GPUs, their parallelism and the users
            arguments = self.arguments()
            for name in ("n_gpus", "replicas", "parallel", "batch", "in_waves"):
                del arguments[name]
            points = frontier(arguments.pop("model"), **arguments)
            return points, frontier_values(points, state["gpu"])
        price = state["price_per_hour"]
        if mode == PLAN:
            arguments = self.arguments()
            options = {k: arguments[k] for k in arguments if k in scenario.DEPLOYMENT}
            for name in ("n_gpus", "replicas"):  # the plan chooses them
                del options[name]
            asked = ("requests_per_s", "prompt_len", "output_len", "ttft_target", "tpot_target")
            workload = {name: state[name] for name in asked}
            r = planning.plan_colocated(
                arguments["model"],
                state["gpu"],
                **workload,
                percentile=JUDGED[state["percentile"]],
                price_per_hour=price,
                **options,
            )
            return r, {**r, "cost_blended": r["cost"]["blended"]}
        s = scenario.Scenario(**self._scenario_arguments())
        if mode == STATIC:
            return serving.report(s, price), serving.report_values(s, price)
        rate = state["requests_per_s"]
        steady = continuous.steady_state_of(s, float(rate))
        values = {**steady, **percentile_values(steady), **stream_values(s, steady, rate, price)}
        return steady, values

    def _scenario_arguments(self, mode: str | None = None):
        arguments = self.arguments(mode)
        return {"model": arguments.pop("model"), **arguments}

    def html(self) -> str:
        gpu, groups = registry_gpu(self.state["gpu"]), self._band_groups()
        return readout_html(self.values, gpu, self.message, self.state["price_per_hour"], groups)

    def _band_groups(self) -> tuple | None:
        """The deployment's groups of ``serving.bands`` (its band's), or None where the readout
        has no band: chapter 08's single roofline, a refused form, the frontier."""
        if self.state["step"] != "kernels" or self.values is None:
            return None
        if self.state["mode"] == FRONTIER:
            return None
        arguments = self.arguments()
        arch, gpu = registry_model(arguments["model"]), registry_gpu(arguments["gpu"])
        dtype, parallel = arguments["dtype"], arguments["parallel"]
        return bands.groups_of(arch, gpu, dtype, parallel, arguments["prompt_len"])

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
        gpu, groups = registry_gpu(self.state["gpu"]), self._band_groups()
        lines = readout_lines(self.values, gpu, self.state["price_per_hour"], groups)
        return "\n".join([f"Calculator ({args}):", *(f"  {line}" for line in lines)])

    def spec(self) -> dict:
        """Everything the page needs, as JSON-ready data: the form's state and the page's data
        (``calculator_data.page_data``), the same for every calculator."""
        return {"state": self.state, **page_data()}

    def live_html(self) -> str:
        """A self-contained block (no external script, no network) that recomputes in the page."""
        element = f"ia-calc-{next(_ids)}"
        return (
            f"<style>{_STYLE}</style>"
            f'<div class="ia-calc" id="{element}" role="form" aria-label="Inference calculator">'
            f'<script type="application/json" class="ia-calc-spec">{embed_json(self.spec())}'
            '</script><div class="ia-calc-controls"></div>'
            '<div class="ia-calc-readout" aria-live="polite"></div></div>'
            f"<script>{FORMAT_RUNTIME}{script('quantiles.js')}{script('steady.js')}"
            f"{script('plan.js')}{script('closed.js')}{script('frontier.js')}"
            f"{script('calculator.js')}\n"
            f"iaCalc(document.getElementById({json.dumps(element)}));</script>"
        )

    def _repr_mimebundle_(self, **kwargs):
        # Jupyter renders the ipywidgets form; the static book renders the HTML, which
        # recomputes in the browser without a kernel; the PDF prints the text.
        bundle = self.widget()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = self.live_html()
        bundle["text/plain"] = self.text()
        return bundle


_PLAN_PERCENTILE = inspect.signature(planning.plan_colocated).parameters["percentile"].default


def _judged(percentile) -> str:
    """The form's name (``JUDGED``) of a plan's ``percentile``."""
    return next(name for name, q in JUDGED.items() if q == percentile)


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


def widget(**state) -> Calculator:
    """The calculator, started at ``state`` (``calculate``'s arguments; defaults: Llama 3.1 8B
    on one H100 SXM, bf16, one request of 2,048 + 256 tokens)."""
    return Calculator(**state)


_ids = itertools.count()

_STYLE = (
    ".ia-calc-controls{display:grid;grid-template-columns:repeat(auto-fill,minmax(15em,1fr));"
    "gap:.3em 1em;margin:.5em 0}.ia-calc-controls label{display:flex;gap:.5em;"
    "align-items:center;justify-content:space-between}.ia-calc-controls input{width:8em}"
    ".ia-calc-readout td,.ia-calc-readout th{padding:0 .6em}.ia-calc-readout th{text-align:left}"
    # The frontier's table: a deployment on one line, numbers aligned, scrolled on a phone.
    ".ia-calc-frontier{display:block;overflow-x:auto}.ia-calc-frontier td{white-space:nowrap}"
    ".ia-calc-frontier th+th,.ia-calc-frontier td+td{text-align:right}"
    # The message in the text colour (vermillion text is too faint on white), marked by a bar.
    ".ia-calc-message{border-left:.3em solid #D55E00;padding-left:.5em;font-weight:bold}"
)
