"""Many scenarios at once, each checked as ``ia.calculate`` checks one: ``ia.sweep``.

>>> t = sweep("llama-3.1-70b", "h100-sxm", n_gpus=[1, 2, 4], batch=[1, 256])
>>> t["n_gpus"].tolist(), t["batch"].tolist()
([1, 1, 2, 2, 4, 4], [1, 256, 1, 256, 1, 256])
>>> t["fits"].tolist()
[False, False, True, False, True, False]
>>> str(t["reason"][5])[:45]
'llama-3.1-70b does not fit: needs 83.8 GB per'
>>> import inference_arithmetic as ia
>>> bool(t["tpot"][4] == ia.calculate("llama-3.1-70b", "h100-sxm", n_gpus=4)["tpot"])
True

Every argument of ``calculate`` may be a list: the table has a row for each combination, the
arguments taken in the order of ``calculate``'s signature (then the deployment's keywords as
given), the last varying fastest. A row that ``calculate`` would
refuse has ``fits`` False, the refusal's message as its ``reason`` and NaN for its numbers: a
format the GPU has no FLOP rate for, heads that do not split, a request past the context window,
memory past the budget. A mistake in the input is refused at once, not as a row that would read
as an answer: a name that is no model, GPU, engine or format, a ``cache_dtype`` that is a
format of weights only (``core.dtypes.CACHE_FORMATS`` are a cache's), and a value no scenario
takes (a batch of -2, a hit rate of 1.5, an ``output_len`` of 1), with ``calculate``'s
message. ``parallel`` ("tensor",
"pipeline", "expert" or "expert-dp", as ``calculate`` takes it) is a name too. The rows of one
model, GPU, parallelism, format, engine and step are evaluated together, as arrays, by the
formulas ``calculate`` evaluates one at a time.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from inference_arithmetic.core import checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.dtypes import cache_format, dtype_name
from inference_arithmetic.core.numeric import ArgumentError, CompiledFormulas, numeric
from inference_arithmetic.formulas.latency import PARALLEL
from inference_arithmetic.hardware.engines import engine as registry_engine
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.models.config import AUTO
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.serving import bands
from inference_arithmetic.serving.efficiencies import EFFICIENCIES, OVERHEADS
from inference_arithmetic.serving.report import BANDED, BOUNDS, THEN, compiled_report
from inference_arithmetic.serving.scenario import (
    CHECKS,
    DEFAULT_ENGINE,
    DEFAULT_STEP,
    MAX_TOKENS,
    NO_LINK,
    NO_WINDOW,
    Scenario,
    check_decodes,
    check_imbalance,
    rules_of,
)

__all__ = ["sweep", "NAMES", "COLUMNS"]

NAMES = ("model", "gpu", "parallel", "dtype", "cache_dtype", "compute_dtype", "engine", "step")
NAMES += ("speculative",)
"""The arguments that are names: each combination of them is one group of rows
(``speculative``: a method's name, a dict of ``Speculative``'s arguments, or None)."""
COUNTS = ("n_gpus", "batch", "prompt_len", "output_len", "replicas", "token_budget")
FRACTIONS = (*EFFICIENCIES, "memory_utilization")
SHARES = ("prefix_hit_rate",)
AMOUNTS = {  # argument -> (unit, positive, highest): as the Scenario checks each
    **{name: ("seconds", False, 1.0) for name in (*OVERHEADS, "link_latency")},
    "network_bandwidth": ("bytes per second", True, 1e15),
    "price_per_hour": ("dollars", True, 1e6),
}
RATIOS = {"expert_imbalance": check_imbalance}  # argument -> the Scenario's own check
CHECKED = (
    "n_gpus",
    "batch",
    "prompt_len",
    "output_len",
    "link_latency",
    "network_bandwidth",
    "replicas",
    "prefix_hit_rate",
    "expert_imbalance",
    *FRACTIONS,
    *OVERHEADS,
    "token_budget",
    "price_per_hour",
)
"""The numbers in the order ``calculate`` checks them (the ``Scenario``'s, then the price)."""
_SYMBOL = {"prompt_len": "seq_len"}  # an argument's name in the formulas, where it differs
COLUMNS = {
    "memory.weights": "weights",
    "memory.kv_cache": "kv_cache",
    "memory.activations": "activations",
    "memory.total": "memory",
    "memory.budget": "budget",
    "ttft": "ttft",
    "tpot": "tpot",
    "request_time": "request_time",
    "throughput": "throughput",
    "cost.input": "cost_input",
    "cost.output": "cost_output",
    "cost.blended": "cost_blended",
    "cost.request": "cost_request",
}
"""The table's numbers: column -> the ``report_formulas`` entry it is; named as the keys of
``calculate``'s answer, nested keys joined by dots (as the command line's CSV)."""


class _Grid(Scenario):
    """A scenario of a group's names, its rules left to the sweep, which checks them row by
    row."""

    _unchecked = (*(check.name for check in CHECKS), "window")


def _axis(name: str, value) -> list:
    """An argument's values: a list, tuple or 1-d array as it is, anything else alone."""
    if isinstance(value, list | tuple | range):
        values = list(value)
    elif isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise ArgumentError(
                f"{name} must be a number or a list of them, got a {value.ndim}-d array"
            )
        values = value.tolist()
    else:
        values = [value]
    if not values:
        raise ArgumentError(f"{name} is an empty list: give it at least one value")
    return values


def _numbers(name: str, values: list) -> np.ndarray:
    """A numeric argument's values as floats; ``ArgumentError`` for one that is no number."""
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int | float | np.number)]
    if bad:
        raise ArgumentError(f"{name} must be numbers, got {bad[0]!r}")
    return np.asarray(values, dtype=float)


def _refusals(name: str, values: list) -> np.ndarray:
    """For each of an argument's values, the message ``calculate`` refuses it with, or "":
    the same checks (``core.checks``), called once per value, not per row."""
    if name in COUNTS:
        check = functools.partial(checks.count, name)
    elif name in FRACTIONS:
        check = functools.partial(checks.fraction, name)
    elif name in SHARES:
        check = functools.partial(checks.share, name)
    elif name in RATIOS:
        check = RATIOS[name]
    else:
        unit, positive, high = AMOUNTS[name]
        check = functools.partial(checks.amount, name, unit=unit, positive=positive, high=high)
    reasons = np.full(len(values), "", dtype=object)
    for i, value in enumerate(values):
        try:
            check(value)
        except ArgumentError as error:
            reasons[i] = str(error)
    return reasons


@functools.cache
def _band_ends(which: str) -> CompiledFormulas:
    return CompiledFormulas(bands.BAND[which])


def sweep(
    model,
    gpu,
    *,
    n_gpus=1,
    dtype=AUTO,
    cache_dtype=None,
    batch=1,
    prompt_len=2048,
    output_len=256,
    price_per_hour=None,
    **deployment,
) -> np.ndarray:
    """``calculate`` over every combination of its arguments, any of them a list: a numpy
    structured array with a row per scenario (module docstring).

    Its columns: the names (model, gpu, parallel, the formats, engine, step), the numbers
    given (and
    ``calculate``'s defaults), ``fits`` (True where ``calculate`` would answer), ``reason`` (its
    refusal, else ""), then ``COLUMNS`` (bytes per GPU, seconds, output tokens per second, USD
    per million tokens, ``cost.input``, ``cost.output`` and ``cost.blended``: ``input``,
    ``output`` and ``blended`` as ``formulas.economics.COST_KEYS`` says; NaN where the scenario
    does not fit, costs NaN where the GPU has no price and none is given), ``bound.prefill``
    and ``bound.decode``, and the bands' ends
    (``band.ttft_low``, ..., NaN with ``step="roofline"`` and where no validated group holds the
    row: ``serving.bands.factors``).

    A structured array, not a DataFrame: the same type wherever the library runs (it needs
    only numpy), indexed by column name as a DataFrame is; ``pandas.DataFrame(table)`` or
    ``polars.from_numpy(table)`` takes it as it is.
    """
    given = dict(
        model=model,
        gpu=gpu,
        n_gpus=n_gpus,
        dtype=dtype,
        cache_dtype=cache_dtype,
        batch=batch,
        prompt_len=prompt_len,
        output_len=output_len,
        price_per_hour=price_per_hour,
        **deployment,
    )
    taken = (*NAMES, *COUNTS, *FRACTIONS, *SHARES, *AMOUNTS, *RATIOS)
    unknown = [k for k in given if k not in taken]
    if unknown:
        valid = ", ".join(taken)
        raise ArgumentError(f"sweep takes no argument {unknown[0]!r}; it takes {valid}")
    given.setdefault("step", DEFAULT_STEP)
    given.setdefault("parallel", "tensor")
    for value in _axis("parallel", given["parallel"]):  # a typo, not a row's refusal
        checks.choice("parallel", value, PARALLEL)
    for value in _axis("cache_dtype", given["cache_dtype"]):  # a weights-only format: a mistake
        if value is not None:
            cache_format(value, "cache_dtype")
    axes = {k: _axis(k, v) for k, v in given.items() if v is not None or k in NAMES}
    names = {k: v for k, v in axes.items() if k in NAMES}
    numbers = {k: _numbers(k, v) for k, v in axes.items() if k not in NAMES}
    # The numbers' grid, in argument order, the last varying fastest, flattened: each row's
    # index into each argument's values.
    grid = np.meshgrid(*(np.arange(len(axes[k])) for k in numbers), indexing="ij")
    index = {k: g.ravel() for k, g in zip(numbers, grid, strict=True)}
    flat = {k: numbers[k][i] for k, i in index.items()}
    # A value no scenario takes (a batch of -2, a hit rate of 1.5) is a mistake in the input, not
    # a row: refused at once, as calculate refuses it, the first in calculate's order. The rows
    # refuse only what a deployment cannot do (the model does not fit, its heads do not split).
    for name in sorted(flat, key=CHECKED.index):
        refused = [reason for reason in _refusals(name, axes[name]) if reason]
        if refused:
            raise ArgumentError(refused[0])
    for value in axes["output_len"]:  # one output token has no time per output token
        check_decodes(value)
    reasons = np.full(next(iter(flat.values())).size, "", dtype=object)
    parts = [
        _group(dict(zip(names, combo, strict=True)), flat, reasons.copy())
        for combo in itertools.product(*names.values())
    ]
    return _table(parts, list(flat))


def _group(chosen: dict, flat: dict, reasons: np.ndarray) -> dict:
    """The columns of the rows of one combination of names."""
    arch, device = registry_model(chosen["model"]), registry_gpu(chosen["gpu"])
    engine = registry_engine(chosen["engine"]) if chosen.get("engine") else None
    settings = {
        k: dtype_name(v, k) if k.endswith("dtype") and v != AUTO else v
        for k, v in chosen.items()
        if k not in ("model", "gpu") and v is not None
    }
    # Rows with a prefix cache take its formula, which gives every row its own hit rate.
    hits = flat.get("prefix_hit_rate")
    if hits is not None and np.any(hits > 0):
        settings["prefix_hit_rate"] = float(np.max(hits))
    if engine is not None:
        settings["engine"] = engine
    size = reasons.size
    columns = {"model": arch.name, "gpu": device.name}
    try:
        s = _Grid(arch, device, **settings)
    except ArgumentError as error:  # no FLOP rate for the compute format: every row
        reasons = np.where(reasons == "", str(error), reasons)
        compute = settings.get("compute_dtype", settings.get("dtype", AUTO))
        columns.update(
            dtype=settings.get("dtype", AUTO),
            compute_dtype=compute,
            cache_dtype=settings.get("cache_dtype", compute),
            engine=(engine or registry_engine(DEFAULT_ENGINE)).name,
            step=settings["step"],
            parallel=settings["parallel"],
            speculative=_speculation_name(settings.get("speculative")),
        )
        return {"columns": columns, "flat": flat, "reasons": reasons, "size": size}
    named = ("parallel", "dtype", "cache_dtype", "compute_dtype", "step")
    columns.update({k: getattr(s, k) for k in named})
    columns["speculative"] = _speculation_name(s.speculative)
    columns["engine"] = s.engine.name
    values = s.values()
    values.update({_SYMBOL.get(k, k): v for k, v in flat.items() if k != "price_per_hour"})
    reasons = _rows_refused(s, values, flat, reasons)
    price = flat.get("price_per_hour", s.gpu.price_per_hour or 1.0)
    r = compiled_report(arch, s.step, s.parallel, **s.formula_options)
    r = r.over({**values, "price_per_hour": price})
    r = {k: np.broadcast_to(v, (size,)) for k, v in r.items()}
    no_price = "price_per_hour" not in flat and s.gpu.price_per_hour is None
    for column, key in COLUMNS.items():
        columns[column] = np.full(size, np.nan) if no_price and key.startswith("cost") else r[key]
    bound = np.array(BOUNDS, dtype=object)
    columns["bound.prefill"] = bound[r["prefill_compute_bound"].astype(int)]
    first, last = (bound[r[f"decode_compute_bound_{e}"].astype(int)] for e in ("first", "last"))
    columns["bound.decode"] = np.where(first == last, first, first + THEN + last)
    # Each row's band from its own groups: the prompt alone may differ between the rows.
    prompt = np.broadcast_to(flat.get("prompt_len", s.prompt_len), (size,))
    for key, (kind, speed) in BANDED.items():
        low, high = np.full(size, np.nan), np.full(size, np.nan)
        if s.step == "kernels":
            for long in (False, True):
                rows = (prompt >= bands.LONG_PROMPT) == long
                length = bands.LONG_PROMPT if long else 1
                found = bands.factors(kind, bands.scenario_groups(s, prompt_len=length))
                if not rows.any() or found is None:
                    continue
                ends = _band_ends("speed" if speed else "time").over(
                    {"predicted": r[key], "band_low": found[0], "band_high": found[1]}
                )
                low = np.where(rows, ends["low"], low)
                high = np.where(rows, ends["high"], high)
        columns[f"band.{key}_low"], columns[f"band.{key}_high"] = low, high
    return {"columns": columns, "flat": flat, "reasons": reasons, "size": size}


def _speculation_name(value) -> str:
    """A row's ``speculative`` as a name: its method, or "none"."""
    if value is None:
        return "none"
    return value.method if hasattr(value, "method") else str(value.get("method", value))


def _rows_refused(s: Scenario, values: dict, flat: dict, reasons: np.ndarray) -> np.ndarray:
    """``reasons`` with each row's first refusal put in where it has none yet, in the order a
    ``Scenario`` checks: no link for more GPUs, no window stated, then its rules (``CHECKS``)."""
    shape = reasons.shape
    n_gpus = np.broadcast_to(values["n_gpus"], shape)
    if s.gpu.interconnect_bandwidth is None:
        for i in np.flatnonzero((reasons == "") & (n_gpus > 1)):
            reasons[i] = NO_LINK.format(gpu=s.gpu.name, n_gpus=int(n_gpus[i]))
    tokens = np.broadcast_to(values["seq_len"] + values["output_len"], shape)
    if s.model.context_window is None:
        for i in np.flatnonzero((reasons == "") & (tokens > MAX_TOKENS)):
            reasons[i] = NO_WINDOW.format(model=s.model.name, tokens=int(tokens[i]))
    draft = s.formula_options.get("draft")  # a draft model's memory counts in the fit
    rules, conditions = rules_of(s.model, s.parallel, draft)
    holds = conditions.over(values)
    names = s.named_settings()
    for check in rules:
        failing = np.flatnonzero((reasons == "") & (np.broadcast_to(holds[check.name], shape) == 0))
        if not failing.size:
            continue
        fields = _fields(check, s.model, s.parallel, draft)
        shown = {
            name: np.broadcast_to(f.from_values(values), shape) for name, (f, _) in fields.items()
        }
        kinds = {name: kind for name, (_, kind) in fields.items()}
        for i in failing:
            row = {k: int(v[i]) if k in COUNTS else float(v[i]) for k, v in flat.items()}
            text = {k: fmt.show(float(shown[k][i]), kinds[k]) for k in shown}
            reasons[i] = check.message.format(**{**names, **row, **text})
    return reasons


@functools.lru_cache(maxsize=256)
def _fields(check, arch, parallel, draft=None) -> dict:
    """The compiled fields of ``check``'s message: name -> (formula, ``format.show`` kind)."""
    return {
        name: (numeric(expr(arch, parallel, draft)), kind)
        for name, (expr, kind) in check.fields.items()
    }


def _table(parts: list[dict], numbers: list[str]) -> np.ndarray:
    """The groups' rows as one structured array, groups in order."""
    columns = {}
    for key in NAMES:
        columns[key] = np.concatenate(
            [np.full(p["size"], p["columns"][key], dtype=object) for p in parts]
        )
    for key in numbers:
        values = np.concatenate([p["flat"][key] for p in parts])
        # A count as integers, unless a refused one is no whole number: then as given.
        whole = np.isfinite(values).all() and (values == np.floor(values)).all()
        columns[key] = values.astype(np.int64) if key in COUNTS and whole else values
    reasons = np.concatenate([p["reasons"] for p in parts])
    columns["fits"] = reasons == ""
    columns["reason"] = reasons
    results = [k for p in parts for k in p["columns"] if k not in columns]
    for key in dict.fromkeys(results):
        text = key.startswith("bound.")
        blank = "" if text else np.nan
        pieces = [
            p["columns"].get(key, np.full(p["size"], blank, dtype=object if text else float))
            for p in parts
        ]
        values = np.concatenate(pieces)
        columns[key] = (
            np.where(columns["fits"], values, blank)
            if text
            else np.where(columns["fits"], values.astype(float), np.nan)
        )
    dtype = []
    for key, values in columns.items():
        if values.dtype == object:
            width = max((len(str(v)) for v in values), default=1)
            dtype.append((key, f"U{max(width, 1)}"))
        else:
            dtype.append((key, values.dtype))
    table = np.empty(len(reasons), dtype=dtype)
    for key, values in columns.items():
        table[key] = values
    return table
