"""The calculator's form: its modes, its controls with their choices, ranges, checks and labels,
and where each is used.

>>> used("batch", {"mode": STATIC}), used("batch", {"mode": CONTINUOUS})
(True, False)
>>> ranges()["n_gpus"]
(1, 64)

The widget (``calculator.Calculator``) checks what a reader types with these, and the page's
data (``calculator_data``) carries them to the browser (``page_controls()``), so that the page
refuses what the library refuses, with the library's words.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers

from inference_arithmetic.core import checks
from inference_arithmetic.core.dtypes import CACHE_FORMATS, COMPUTE_FORMATS, DTYPE_BYTES
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.formulas import latency
from inference_arithmetic.hardware.gpus import gpu_names
from inference_arithmetic.models.config import AUTO, model_names
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.page import controls as widget_controls
from inference_arithmetic.page import own_config
from inference_arithmetic.serving import queueing, scenario, speculative, targets

__all__ = ["STATIC", "CONTINUOUS", "PLAN", "FRONTIER", "MODES", "PAGE_PARALLEL", "STREAM_PARALLEL"]
__all__ += ["NOT_STREAMED", "not_streamed", "NO_SPECULATION", "SERVING_OPTIONS"]
__all__ += ["SAME", "COMPUTES", "COMPUTED", "PRICE", "ranges", "AMOUNTS", "ONLY", "used"]
__all__ += ["amount_message", "rate_message", "amount_range", "label", "choices"]
__all__ += ["check_number", "page_controls", "MEAN", "JUDGED"]

STATIC, CONTINUOUS, PLAN = "static batch", "continuous serving", "sizing from targets"
FRONTIER = "users: the frontier"
MODES = [STATIC, CONTINUOUS, PLAN, FRONTIER]
"""The form's four modes: a batch of ``batch`` requests sent at once (``ia.calculate``); a
stream of ``requests_per_s`` requests a second on a continuously batching engine
(``ia.steady_state``); the cheapest deployment whose steady state at that rate meets a time
to first token and a time per output token (``ia.plan``, which chooses the GPUs); or the
Pareto set of output tokens per second per GPU against tokens per second per user, over closed
loops of users and the layouts that fit (``ia.frontier``, which chooses the GPUs, their
parallelism and the users; at the plain step, without the serving options)."""
PAGE_PARALLEL = latency.PARALLEL
"""The parallelisms the page offers, the library's own; expert parallelism
(``latency.EXPERT_PARALLEL``) where the model has experts (a dense one gets
``latency.NO_EXPERTS``)."""
STREAM_PARALLEL = ("tensor", "pipeline")
"""The parallelisms of the page's steady state (the continuous and plan modes): tensor
parallelism, and a pipeline's micro-batches in flight (``serving.engine.Engine.period``, its cycle
``formulas.continuous.pipeline_wait`` printed). Expert parallelism's steady state is the
library's only: its steps would add a fifth to an MoE model's part of the page (25 of
Qwen3-30B-A3B's 112 kB), each evaluated at every step of the chain beside these. The frontier's
closed loops take it, at the plain step only (``calculator_data``)."""
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

MEAN = "mean"
"""The plan's choice that judges the targets on the mean of each request's times
(``percentile=None``, ``ia.plan``'s default)."""
JUDGED = {
    MEAN: None,
    **{
        name: q
        for name, q in zip(queueing.named(queueing.PERCENTILES), queueing.PERCENTILES, strict=True)
        if q > 50
    },
}
"""What the plan may judge its targets on, by the name the form shows: the mean, or a tail
percentile of each request's times (``ia.plan``'s ``percentile``; its search, and
``targets.judge``, hold a p90 or a p99 to be at least the mean: a tail, as service-level
objectives are written, not the median)."""

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
    **targets.TARGET_CHECKS,  # the targets' own checks, bounds included
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
    "parallel": {"mode": [STATIC, CONTINUOUS, PLAN]},
    "requests_per_s": {"mode": [CONTINUOUS, PLAN]},
    "ttft_target": {"mode": [PLAN]},
    "tpot_target": {"mode": [PLAN]},
    "percentile": {"mode": [PLAN]},
    "expert_imbalance": {"mode": [STATIC], "parallel": list(latency.EXPERT_PARALLEL)},
    "prefix_hit_rate": {"mode": [CONTINUOUS, PLAN]},
    "speculative": {"mode": [CONTINUOUS, PLAN]},
    "price_per_hour": {"mode": [STATIC, CONTINUOUS, PLAN]},
    "compute_efficiency": {"step": ["roofline"]},
    "bandwidth_efficiency": {"step": ["roofline"]},
    "config": {"model": [own_config.OWN]},
}
"""The controls that only some settings use, and those settings (every other control is used
everywhere): the batch in the static mode, the rate and targets where the steady state is
asked, the GPUs where the form does not choose them (the plan does, and the frontier chooses
their parallelism too), the price where a cost is shown (the frontier shows none), the
efficiencies of chapter 08's single roofline (the kernel model takes the GPU's measured
kernels), the imbalance of experts where they are spread (the static mode's:
``STREAM_PARALLEL``), the serving options where a stream at a rate is served."""


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


PRICE = "price_per_hour"  # a number field that may be left blank: the GPU's example price


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
    "percentile": "targets judged on",
    "price_per_hour": "price per GPU-hour ($; blank: the GPU's example)",
    "speculative": "speculative decoding (drafts)",
    "config": "config.json (paste it)",
}


def label(name: str) -> str:
    """A control's label in words: the book's symbol and unit where it is one of the book's
    quantities (``controls.label``), else its words."""
    if name == "prompt_len":
        return widget_controls.label("seq_len", "prompt length")
    return _WORDS.get(name) or widget_controls.label(name)


def choices() -> dict[str, list[str]]:
    """The form's choices: each dropdown's options, in order."""
    return {
        "mode": MODES,
        "model": [*model_names(), own_config.OWN],
        "gpu": gpu_names(),
        "parallel": list(PAGE_PARALLEL),
        "step": list(scenario.STEPS),
        "dtype": [AUTO, *DTYPE_BYTES],
        "compute_dtype": [SAME, *COMPUTES],
        "cache_dtype": [COMPUTED, *CACHE_FORMATS],  # none of weights only
        "speculative": [NO_SPECULATION, *speculative.METHODS],
        "percentile": list(JUDGED),
    }


def not_streamed(parallel) -> str:
    """The form's message for ``parallel`` in a mode that times a stream (``NOT_STREAMED``)."""
    return NOT_STREAMED.format(choices=" or ".join(STREAM_PARALLEL), parallel=parallel)


def check_number(name: str, value) -> None:
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


_VALUE_CONTROLS = ("compute_efficiency", "bandwidth_efficiency", "expert_imbalance")
_VALUE_CONTROLS += ("prefix_hit_rate",)
"""The controls that are values of the formulas (the rest choose the formulas or the values)."""


def page_controls() -> list[dict]:
    """The form's controls in their order, each with its kind, label, range and where it is
    used (``ONLY``): JSON-ready, for the page."""
    controls = [
        {"name": n, "kind": "degrees" if n == "n_gpus" else "range", "min": low, "max": high}
        for n, (low, high) in ranges().items()
    ]
    for name in AMOUNTS:
        control = {"name": name, "kind": "amount", "message": amount_message(name)}
        controls.append({**control, **amount_range(name), "blank": name == "price_per_hour"})
    controls += [{"name": n, "kind": "choice", "options": o} for n, o in choices().items()]
    controls += [{"name": "config", "kind": "text"}]
    for control in controls:
        control["label"] = label(control["name"])
        control["only"] = ONLY.get(control["name"], {})
        # A value of the formulas, which the page sets where the control is used.
        control["value"] = control["name"] in _VALUE_CONTROLS
    order = ["mode", "model", "gpu", "parallel", "n_gpus", "expert_imbalance", "replicas"]
    order += ["dtype", "compute_dtype", "cache_dtype", "batch", "requests_per_s", "ttft_target"]
    order += ["tpot_target", "percentile", "prompt_len", "output_len", *SERVING_OPTIONS, "step"]
    order += ["compute_efficiency", "bandwidth_efficiency"]
    order += ["memory_utilization", "token_budget", "price_per_hour", "config"]
    return sorted(controls, key=lambda c: order.index(c["name"]))
