"""The calculator's readout: its rows by mode, each cell's text with its band, and the note
under them, as HTML or as text.

>>> from inference_arithmetic.serving.scenario import Scenario
>>> values = serving.report_values(Scenario("llama-3.1-8b", "h100-sxm"))
>>> cell(ROWS[0], values)
'16.1 GB'

The rows of the static mode are formulas of ``serving.report_formulas``; the continuous
mode's, keys of ``ia.steady_state``'s result and the memory and cost at the rate
(``stream_values``); the plan's, keys of ``ia.plan``'s. The frontier's readout is a table of
``ia.frontier``'s points, a row each, its columns ``FRONTIER_COLUMNS`` (``frontier_values``).
The page's script fills the same rows and templates (``calculator_data``).
"""

from __future__ import annotations

import html
import inspect
import math

import sympy

from inference_arithmetic import serving
from inference_arithmetic.core import cache
from inference_arithmetic.core import format as fmt
from inference_arithmetic.formulas import economics
from inference_arithmetic.page.calculator_form import CONTINUOUS, FRONTIER, PLAN, STATIC
from inference_arithmetic.serving import bands, continuous, frontier, planning, queueing
from inference_arithmetic.serving.engine import in_flight
from inference_arithmetic.serving.report import compiled_report

__all__ = ["ROWS", "CONTINUOUS_ROWS", "PLAN_ROWS", "STREAM", "NOTES", "GIVEN_KIND"]
__all__ += ["BANDED_CELL", "cell", "readout_html", "readout_lines", "stream_values"]
__all__ += ["PERCENTILE_KEY", "PERCENTILE_NAMES", "percentile_values"]
__all__ += ["FRONTIER_COLUMNS", "FRONTIER_KEY", "DEPLOYMENT", "frontier_values", "users_text"]

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
request_time   | time per request                             | seconds
throughput     | throughput (output tokens/s)                 | number
gpus           | GPUs in all (replicas x GPUs each)           | integer
cost_input     | cost per million input tokens (prefill)      | usd
cost_output    | cost per million output tokens (decode)      | usd
cost_blended   | blended cost per million output tokens       | usd
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
cost_blended    | blended cost per million output tokens (GPUs paid busy or idle) | usd
cost_request    | cost per request (GPUs paid busy or idle) | usd
"""

# The plan's readout: a key of ``ia.plan``'s result (its blended cost as cost_blended).
_PLAN_TABLE = """
replicas        | replicas                                 | integer
n_gpus          | GPUs per replica (its parallelism's degree) | integer
gpus            | GPUs in all                              | integer
ttft            | time to first token                      | seconds
tpot            | time per output token                    | seconds
cost_blended    | blended cost per million output tokens (GPUs paid busy or idle) | usd
"""


# The frontier's columns: a key of each point of ``ia.frontier`` (its deployment in words,
# ``DEPLOYMENT``), its label, its kind.
_FRONTIER_TABLE = """
deployment            | deployment                | text
concurrency           | users                     | integer
throughput_per_gpu    | output tokens/s per GPU   | number
tokens_per_s_per_user | tokens/s per user         | number
tpot                  | time per output token     | seconds
"""


def _row(line: str) -> tuple:
    key, label, kind = (part.strip() for part in line.split("|"))
    return (tuple(key.split()) if kind == "bound" else key), label, kind


ROWS = [_row(line) for line in _TABLE.strip().splitlines()]
"""The readout's rows: (formula, label, kind), as ``_TABLE`` lists them."""
PERCENTILE_KEY = "{time}_{name}"
"""The readout's key of a percentile of a request's time: ``ttft_p99`` is
``ia.steady_state(...)["percentiles"]["ttft"]["p99"]``."""
PERCENTILE_NAMES = tuple(queueing.named(queueing.PERCENTILES))
"""The percentiles' names in ``ia.steady_state``'s result: p50, p90, p99."""
_TIMED = ("ttft", "tpot")  # the times whose percentiles the steady state gives


def _percentile_rows(rows) -> list:
    """A row for each percentile of each of ``_TIMED``, after the row of its mean: its label
    the mean's, and the percentile's name."""
    labels = {key: text for key, text, _ in rows}
    return [
        (PERCENTILE_KEY.format(time=time, name=name), f"{labels[time]}, {name}", "seconds")
        for time in _TIMED
        for name in PERCENTILE_NAMES
    ]


_STREAM_ROWS = [_row(line) for line in _CONTINUOUS_TABLE.strip().splitlines()]
CONTINUOUS_ROWS = _STREAM_ROWS[:3] + _percentile_rows(_STREAM_ROWS) + _STREAM_ROWS[3:]
"""The continuous mode's rows: (key of ``ia.steady_state``'s result, of its percentiles
(``PERCENTILE_KEY``), or of the memory and cost at the rate, label, kind)."""
PLAN_ROWS = [_row(line) for line in _PLAN_TABLE.strip().splitlines()]
"""The plan's rows: (key of ``ia.plan``'s result, label, kind)."""
_MODE_ROWS = {STATIC: ROWS, CONTINUOUS: CONTINUOUS_ROWS, PLAN: PLAN_ROWS}
FRONTIER_COLUMNS = [_row(line) for line in _FRONTIER_TABLE.strip().splitlines()]
"""The frontier's columns: (key of a point of ``ia.frontier``, or ``deployment``, label, kind)."""
FRONTIER_KEY = "{key}_{point}"
"""The readout's key of a cell of the frontier's table: ``tpot_2`` is the TPOT of
``ia.frontier``'s second point (counted from 1, the most tokens per second per user)."""
DEPLOYMENT = "{n_gpus} x {gpu}, {parallel}"
"""A frontier point's deployment in words: its GPUs and their parallelism."""

_rate = sympy.Symbol("requests_per_s", positive=True)  # continuous.STEADY's rate
STREAM = {
    "cost_blended": economics.output_cost_at_rate(_rate),
    "cost_request": economics.request_cost_at_rate(_rate),
}
"""The continuous mode's costs: all the GPUs (``n_gpus``: every replica's) paid busy or idle
while they serve the rate (``formulas.economics``), per million output tokens the ``blended``
cost of ``formulas.economics.COST_KEYS``."""


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
    "judged": "its times are each request's {percentile}, on which the targets are judged",
    "frontier": "the deployments on the frontier of output tokens/s per GPU against tokens/s "
    "per user (ia.frontier), the most tokens/s per user first: closed loops of {users} users "
    "on each layout of up to {most_gpus} GPUs that fits, without prefix caching or speculation",
}
"""The sentence under the readout: its parts joined by "; ", then the band's
(``serving.bands.describe``, of the deployment's groups; chapter 08's single roofline has
none)."""
GIVEN_KIND = "usd"
"""How ``NOTES["given"]`` prints a price the reader typed (``format.show``'s kind)."""


BANDED_CELL = "{value} ({low} to {high})"
"""A readout cell with its band (``serving.bands``): the page fills the same template."""


def _mode_of(values) -> str:
    """The mode whose readout ``values`` are: a steady state's, a plan's, a frontier's, or a
    report's."""
    if "points" in values:
        return FRONTIER
    if "saturation_rate" in values:
        return CONTINUOUS
    return PLAN if "replicas" in values else STATIC


def _banded(values) -> dict:
    """The rows of the readout that carry a band, by mode: key -> (kind, whether a speed)."""
    return serving.BANDED if _mode_of(values) == STATIC else continuous.BANDED


def cell(row, values, groups=()) -> str:
    """One row of the readout (of ``ROWS``) as text: a formula's value in its kind, and in
    brackets its band where it has one (``serving.bands``, of the deployment's ``groups``: ``()``
    for the core's; none where ``groups`` is None, for chapter 08's single roofline, or where no
    validated group holds it), or the bounds of a phase (``serving.bound_text``)."""
    key, _, kind = row
    if kind == "bound":
        return serving.bound_text(*(values[k] for k in key))
    text, value = fmt.show(values[key], kind), values[key]
    if groups is None or key not in _banded(values) or value is None:
        return text
    band_kind, speed = _banded(values)[key]
    band = bands.band(band_kind, value, speed, groups)
    if band is None:
        return text
    low, high = band
    return BANDED_CELL.format(value=text, low=fmt.show(low, kind), high=fmt.show(high, kind))


def withheld(mode: str, groups) -> str | None:
    """Why the readout of ``mode`` has no band for some kind, in a deployment in ``groups``
    (``serving.bands.note``), or None where every kind has one."""
    return bands.note(serving.BANDED if mode == STATIC else continuous.BANDED, groups)


def users_text(users=frontier.CONCURRENCY) -> str:
    """The users ``ia.frontier`` sweeps, as the frontier's note names them."""
    return ", ".join(fmt.show(c, "integer") for c in users)


def _note(values, gpu, price=None, groups=()) -> str:
    mode = _mode_of(values)
    if mode == FRONTIER:  # no cost and no band: ia.frontier gives neither
        most = inspect.signature(frontier.frontier).parameters["most_gpus"].default
        return NOTES["frontier"].format(users=users_text(), most_gpus=most) + "."
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
    if mode == PLAN and values["percentile"] is not None:
        name = PERCENTILE_NAMES[queueing.PERCENTILES.index(values["percentile"])]
        parts.append(NOTES["judged"].format(percentile=name))
    if groups is not None:  # what the band is, and which kinds have none
        parts += [note for note in (bands.describe(groups), withheld(mode, groups)) if note]
    return "; ".join(parts) + "."


def _frontier_cells(values) -> list[list[str]]:
    """The frontier's table as text: a row of each point's cells (``FRONTIER_COLUMNS``)."""
    return [
        [
            fmt.show(values[FRONTIER_KEY.format(key=key, point=point)], kind)
            for key, _, kind in FRONTIER_COLUMNS
        ]
        for point in range(1, len(values["points"]) + 1)
    ]


def readout_html(values, gpu, message: str | None = None, price=None, groups=()) -> str:
    """The readout table of ``serving.report_values`` (or of a steady state, a plan or a
    frontier), or the message that replaces it."""
    if values is None:
        return f'<p class="ia-calc-message" role="alert"><b>{html.escape(message)}</b></p>'
    note = f"<p>{html.escape(_note(values, gpu, price, groups))}</p>"
    if _mode_of(values) == FRONTIER:
        head = "".join(f"<th>{label}</th>" for _, label, _ in FRONTIER_COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td><b>{html.escape(text)}</b></td>" for text in row) + "</tr>"
            for row in _frontier_cells(values)
        )
        return f'<table class="ia-calc-frontier"><tr>{head}</tr>{body}</table>{note}'
    rows = "".join(
        f"<tr><td>{row[1]}</td><td><b>{html.escape(cell(row, values, groups))}</b></td></tr>"
        for row in _MODE_ROWS[_mode_of(values)]
    )
    return f"<table>{rows}</table>{note}"


def readout_lines(values, gpu, price=None, groups=()) -> list[str]:
    """The readout as lines of text (``readout_html``'s rows and note), for outputs that show
    no HTML (the PDF): the frontier's, a line of its columns' labels, then a line a point."""
    if _mode_of(values) == FRONTIER:
        lines = [" | ".join(row) for row in _frontier_cells(values)]
        head = " | ".join(label for _, label, _ in FRONTIER_COLUMNS)
        return [head, *lines, _note(values, gpu, price, groups)]
    rows = _MODE_ROWS[_mode_of(values)]
    lines = [f"{row[1]}: {cell(row, values, groups)}" for row in rows]
    return [*lines, _note(values, gpu, price, groups)]


def percentile_values(steady: dict) -> dict:
    """The percentiles of a steady state's times by their readout keys (``PERCENTILE_KEY``)."""
    return {
        PERCENTILE_KEY.format(time=time, name=name): steady["percentiles"][time][name]
        for time in _TIMED
        for name in PERCENTILE_NAMES
    }


def _stream() -> dict:
    """The continuous mode's cost formulas (``STREAM``), which the disk cache compiles."""
    return STREAM


def stream_values(s, steady: dict, rate: float, price) -> dict:
    """The continuous mode's memory and cost rows: the report's memory formulas at a batch of
    the requests in one replica's engine, rounded up to whole requests (each holding its whole
    cache of T + O tokens, as the engine's capacity counts them; a pipeline's, of each of its
    ``latency.batches_in_flight``), and ``STREAM`` at the rate."""
    price, _, _ = s.gpu.price(price)
    per_batch = math.ceil(steady["concurrency"] / s.replicas / in_flight(s))
    values = {**s.values(), "batch": per_batch, "price_per_hour": price or 1.0}
    r = compiled_report(s.model, s.step, s.parallel).from_values(values)
    gpus = s.n_gpus * s.replicas
    costs = cache.formulas(_stream).from_values({**values, "n_gpus": gpus, "requests_per_s": rate})
    memory = {k: r[k] for k in ("weights", "kv_cache", "memory", "budget", "capacity")}
    return {**memory, "gpus": gpus, **{k: v if price else None for k, v in costs.items()}}


def frontier_values(points: list[dict], gpu) -> dict:
    """The frontier's readout values: ``ia.frontier``'s ``points`` (on ``gpu``, a name), and
    each cell of its table by its key (``FRONTIER_KEY``), the deployment in words
    (``DEPLOYMENT``)."""
    values = {"points": points}
    for point, p in enumerate(points, start=1):
        cells = {**p, "deployment": DEPLOYMENT.format(**p, gpu=gpu)}
        for key, _, _ in FRONTIER_COLUMNS:
            values[FRONTIER_KEY.format(key=key, point=point)] = cells[key]
    return values
