"""The validation set scored: each row's error, the terms of the kernel model switched off one at
a time, and the band of held-out residuals that every prediction carries.

>>> rows, _ = published.validation_set()
>>> KIND[rows[0].metric], KIND["ttft_s"], KIND["generation_tokens_per_s"]
('request', 'ttft', 'tpot')

A row's residual is the measured time over the predicted one (``ratio``): for a throughput,
the predicted speed over the measured one. The 10th and 90th percentiles of a kind's residuals
over the validation set, which no number of the library was fitted on, are its band
(``bands``): a prediction p of that kind is measured between 0.1-quantile x p and
0.9-quantile x p on eight held-out runs of ten. ``serving.bands`` ships them; chapter 13
derives them and ``tests/lib/test_residuals.py`` recomputes them.

A term of the kernel model is a few of its symbols (``TERMS``); switched off, they take the
values that make the term vanish (no fixed cost, every KV head read once, every expert's product
at the dense rate, ...) and the rest of the model is unchanged, not refitted. How much worse the
held-out error gets without it is what the term explains (chapter 13).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from inference_arithmetic.core.dtypes import bytes_per_number
from inference_arithmetic.core.numeric import UnknownName
from inference_arithmetic.hardware.gpus import gpu
from inference_arithmetic.models.config import model
from inference_arithmetic.serving.bands import CORE, GROUPS, VALIDATED, groups_of
from inference_arithmetic.serving.scenario import Scenario
from inference_arithmetic.validation import measurements, published
from inference_arithmetic.validation.measurements import Measurement

__all__ = [
    "KIND",
    "SPEEDS",
    "QUANTILES",
    "TERMS",
    "Term",
    "Without",
    "predicted",
    "errors",
    "ratio",
    "validation_errors",
    "bands",
    "row_groups",
]

KIND = {
    "ttft_s": "ttft",
    "prompt_tokens_per_s": "ttft",
    "tpot_s": "tpot",
    "generation_tokens_per_s": "tpot",
    "e2e_latency_s": "request",
    "output_tokens_per_s": "request",
    "output_tokens_per_s_per_gpu": "request",
    "total_tokens_per_s": "request",
}
"""What each metric times: the first token (the prompt's speed is its inverse), each later
token (a stream's generation speed), or whole requests (their latency, or a run's
throughput)."""
assert set(KIND) == set(measurements.METRICS)

SPEEDS = frozenset(m for m in KIND if "_per_s" in m)
"""The metrics that are speeds (larger is faster); the rest are seconds."""

QUANTILES = (0.1, 0.9)
"""The band: from the 10th to the 90th percentile of the held-out residuals."""


@dataclass(frozen=True)
class Term:
    """One term of the kernel model: what it is, and the values of its symbols (by name) that
    switch it off, each a number or a function of the scenario (its own values being
    ``s.values()``)."""

    name: str
    off: Mapping[str, float | Callable]


TERMS = (
    Term("decode attention that reads a KV head once per query head", {"kv_shared": 1.0}),
    Term("a fixed cost per kernel", {"kernel_overhead": 0.0, "decode_attention_latency": 0.0}),
    Term(
        "the engine's cost per step and per request",
        {"step_overhead": 0.0, "request_overhead": 0.0},
    ),
    Term("the host's launches of a step run op by op", {"host_op_cost": 0.0}),
    Term("the latency of all-reduces", {"allreduce_latency": 0.0, "ring_latency": 0.0}),
    # m_c, T_a and d_a are positive sizes: a billionth of a row, a token or a number is none.
    Term("small products' partial tiles", {"matmul_half_rows": 1e-9}),
    Term("grouped expert products below the dense rate", {"grouped_matmul": 1.0}),
    Term("FlashAttention's slower start on short prompts", {"attention_half_len": 1e-9}),
    Term("FlashAttention's slower rate on small heads", {"attention_half_head": 1e-9}),
    Term(
        "activations and messages in the compute format",
        # The layers' weights' format ("auto" names none: a checkpoint's, by group).
        {"activation_bytes_per_number": lambda s: bytes_per_number(s.weight_formats["layers"])},
    ),
    Term(
        "memory as the driver reports it",
        {"gpu_memory": lambda s: float(s.gpu.memory_bytes)},  # the datasheet's decimal bytes
    ),
)
"""The kernel model's terms that chapter 08's single roofline lacks, each a ``Term``."""


@dataclass(frozen=True)
class Without(Scenario):
    """A ``Scenario`` whose formulas take ``settings`` ((name, value or function of the
    scenario) pairs) in place of its own values: a term switched off."""

    settings: tuple = ()

    def values(self) -> dict:
        changed = {k: v(self) if callable(v) else v for k, v in self.settings}
        return {**super().values(), **changed}


def _settings(without) -> tuple:
    names = {t.name: t for t in TERMS}
    unknown = [name for name in without if name not in names]
    if unknown:
        raise UnknownName(f"unknown terms {unknown}; the terms are: {', '.join(names)}")
    return tuple(item for name in without for item in names[name].off.items())


def predicted(m: Measurement, without=(), **options) -> float:
    """``measurements.predicted`` of ``m``, with the ``TERMS`` named in ``without`` switched
    off."""
    if not without:
        return measurements.predicted(m, **options)
    s = m.scenario(**options)
    fields = {f.name: getattr(s, f.name) for f in dataclasses.fields(Scenario)}
    return measurements.predicted(m, scenario=Without(**fields, settings=_settings(without)))


def errors(rows, without=(), **options) -> np.ndarray:
    """Predicted over measured, minus one, of each of ``rows`` (``measurements.errors``), with
    the terms in ``without`` switched off."""
    return np.array([predicted(m, without, **options) / m.value - 1 for m in rows])


def ratio(m: Measurement, prediction: float) -> float:
    """The residual of one row: measured time over predicted time (for a speed, predicted over
    measured), so a band of times multiplies a predicted time and divides a predicted speed."""
    return prediction / m.value if m.metric in SPEEDS else m.value / prediction


@functools.cache
def validation_errors() -> tuple[tuple[Measurement, ...], np.ndarray]:
    """The rows of the validation set the library times, and the error of each at the
    library's defaults (computed once per process)."""
    rows, _ = published.validation_set()
    return rows, errors(rows)


def row_groups(m: Measurement) -> tuple:
    """The ``serving.bands.GROUPS`` a measured row is in, by the rule a prediction's are found
    (``serving.bands.groups_of``): its model, GPU, weights, parallelism and prompt. The rows
    the library times are colocated: the disaggregated ones are set aside."""
    return groups_of(model(m.model), gpu(m.gpu), m.dtype, m.parallel, m.input_tokens)


def _quantiles(rows, predictions) -> dict[str, dict]:
    """For each kind of ``KIND`` with rows among ``rows``, the ``QUANTILES`` of their
    residuals (``ratio``) as ``low`` and ``high``, their ``rows`` and their ``sources``."""
    out = {}
    for kind in dict.fromkeys(KIND.values()):
        mine = [(m, p) for m, p in zip(rows, predictions, strict=True) if KIND[m.metric] == kind]
        if not mine:
            continue
        low, high = np.quantile([ratio(m, p) for m, p in mine], QUANTILES)
        entry = {"low": float(low), "high": float(high), "rows": len(mine)}
        out[kind] = {**entry, "sources": len({m.source for m, _ in mine})}
    return out


def bands(rows=None, predictions=None) -> dict:
    """For each kind of ``KIND``, the ``QUANTILES`` of the residuals (``ratio``) of the rows
    of ``rows`` (default: the validation set at the defaults) in no group (``CORE``) as
    ``low`` and ``high``, and the rows they come from; and ``groups``: for ``CORE`` and each of
    ``serving.bands.GROUPS``, its ``rows``, ``sources`` and ``median_error`` (the median size
    of its rows' errors), and for each kind its ``rows`` and ``sources``, with ``low`` and
    ``high`` where they make a band (``serving.bands.VALIDATED``)."""
    if rows is None:
        rows, errs = validation_errors()
        predictions = [m.value * (1 + e) for m, e in zip(rows, errs, strict=True)]
    member = [row_groups(m) for m in rows]
    core = [i for i, g in enumerate(member) if not g]
    out = {
        kind: {k: v for k, v in entry.items() if k != "sources"}
        for kind, entry in _quantiles(
            [rows[i] for i in core], [predictions[i] for i in core]
        ).items()
    }
    table = {}
    for name in (CORE, *GROUPS):
        mine = core if name == CORE else [i for i, g in enumerate(member) if name in g]
        chosen = [rows[i] for i in mine]
        entry = {"rows": len(mine), "sources": len({m.source for m in chosen})}
        errors_ = [predictions[i] / rows[i].value - 1 for i in mine]
        entry["median_error"] = float(np.median(np.abs(errors_))) if mine else None
        for kind, band in _quantiles(chosen, [predictions[i] for i in mine]).items():
            enough = all(band[k] >= VALIDATED[k] for k in VALIDATED)
            entry[kind] = band if enough else {k: band[k] for k in ("rows", "sources")}
        table[name] = entry
    out["groups"] = table
    return out
