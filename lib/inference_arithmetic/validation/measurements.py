"""Published measurements of real serving runs, to hold the library's predictions against.

>>> runs = serving_runs()
>>> len(runs), runs[0].model, runs[0].gpu, runs[0].batch
(20, 'llama-3.3-70b', 'h100-sxm', 1)

The data and their source and license are in ``inference_arithmetic/validation/data/README.md``;
chapter 11 compares every row with ``predict``, fits the efficiencies with ``calibrate`` and
tests them on runs they were not fitted on with ``hold_out``.
"""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass
from importlib import resources

import numpy as np

from inference_arithmetic.core.numeric import numeric
from inference_arithmetic.formulas import latency
from inference_arithmetic.hardware.gpus import gpu
from inference_arithmetic.models.config import model
from inference_arithmetic.serving.scenario import Scenario
from inference_arithmetic.serving.timing import serve

__all__ = [
    "ServingRun",
    "serving_runs",
    "predict",
    "log_errors",
    "calibrate",
    "hold_out",
    "GRID",
    "SOURCE",
]

GRID = {
    "compute_efficiency": np.round(np.arange(0.25, 0.801, 0.05), 2),
    "bandwidth_efficiency": np.round(np.arange(0.40, 0.951, 0.05), 2),
    "link_latency": np.array([0, 1, 2, 3, 5, 10]) * 1e-6,
}
"""The grid ``calibrate`` searches: steps of 0.05 in both efficiencies, six message latencies."""

SOURCE = (
    "tugot17/tokenomics-from-first-principles (GitHub, MIT License, Copyright (c) 2024 Piotr "
    "Mazurek), folder experiments/, behind the post 'LLM Inference Economics from First "
    "Principles' (Tensor Economics, 2025); vLLM, random weights, measured March 2025"
)


@dataclass(frozen=True)
class ServingRun:
    """One measured run: ``batch`` identical requests sent at once to a serving engine."""

    model: str
    gpu: str
    n_gpus: int
    engine: str
    batch: int
    input_tokens: float
    output_tokens: float
    elapsed_s: float
    output_tokens_per_s: float
    runs: int
    source_file: str


def serving_runs(name: str = "vllm_llama_h100") -> list[ServingRun]:
    """The rows of ``data/<name>.csv``, typed; a ``KeyError`` lists the files there are."""
    folder = resources.files("inference_arithmetic.validation") / "data"
    names = sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".csv"))
    if name not in names:
        raise KeyError(f"no measurements named {name!r}; there are: {', '.join(names)}")
    rows = csv.DictReader(io.StringIO((folder / f"{name}.csv").read_text()))
    return [
        ServingRun(
            model=row["model"],
            gpu=row["gpu"],
            n_gpus=int(row["n_gpus"]),
            engine=row["engine"],
            batch=int(row["batch"]),
            input_tokens=float(row["input_tokens"]),
            output_tokens=float(row["output_tokens"]),
            elapsed_s=float(row["elapsed_s"]),
            output_tokens_per_s=float(row["output_tokens_per_s"]),
            runs=int(row["runs"]),
            source_file=row["source_file"],
        )
        for row in rows
    ]


def predict(run: ServingRun, **options) -> dict[str, float]:
    """The library's prediction for a measured run (``ia.serve`` at its sizes; ``options``
    override the defaults: efficiencies, link latency, memory utilization)."""
    return serve(
        model(run.model),
        gpu(run.gpu),
        run.batch,
        prompt_len=round(run.input_tokens),
        output_len=round(run.output_tokens),
        n_gpus=run.n_gpus,
        **options,
    )


@functools.cache
def _formulas(name: str):
    """The compiled time of a static batch and the requests that fit at once, for one model."""
    arch = model(name)
    return numeric(latency.generation_time(arch)), numeric(latency.max_concurrency(arch))


def log_errors(run: ServingRun, **efficiencies) -> np.ndarray:
    """log(predicted / measured) of one run's throughput, in the engine's waves, from the
    closed formula of chapter 11 (``latency.generation_time``). The efficiencies
    (``compute_efficiency``, ``bandwidth_efficiency``, ``link_latency``, each the library's
    default unless given) may be arrays, to score a whole grid at once.

    >>> run = serving_runs()[-1]  # Llama 3.1 8B, a batch of 512 in three waves
    >>> float(np.exp(log_errors(run)) * run.output_tokens_per_s) > 0
    True
    """
    generation_time, fits = _formulas(run.model)
    prompt, output = round(run.input_tokens), round(run.output_tokens)
    workload = dict(batch=run.batch, prompt_len=prompt, output_len=output, in_waves=True)
    values = {**Scenario(run.model, run.gpu, n_gpus=run.n_gpus, **workload).values()}
    values.update(efficiencies)
    wave = min(run.batch, int(fits.from_values({**values, "context_len": prompt + output})))
    full, rest = divmod(run.batch, wave)
    seconds = full * generation_time.from_values({**values, "batch": wave})
    if rest:
        seconds = seconds + generation_time.from_values({**values, "batch": rest})
    return np.log(run.batch * output / seconds / run.output_tokens_per_s)


def calibrate(runs: list[ServingRun], grid: dict | None = None) -> dict[str, float]:
    """The point of ``grid`` (default ``GRID``) with the smallest root-mean-square of
    ``log_errors`` over ``runs``: an error of a factor two counts the same either way. On the
    first of equal scores, so a parameter the runs cannot see keeps its grid's first value.

    >>> calibrate(serving_runs())  # the library's defaults are this fit over all 20 runs
    {'compute_efficiency': 0.4, 'bandwidth_efficiency': 0.6, 'link_latency': 1e-06}
    """
    grid = GRID if grid is None else grid
    mesh = dict(zip(grid, np.meshgrid(*grid.values(), indexing="ij"), strict=True))
    rms = np.sqrt(np.mean([log_errors(run, **mesh) ** 2 for run in runs], axis=0))
    best = np.unravel_index(np.argmin(rms), rms.shape)
    return {name: float(values[i]) for (name, values), i in zip(grid.items(), best, strict=True)}


def hold_out(runs: list[ServingRun] | None = None, grid: dict | None = None) -> dict[str, dict]:
    """Leave one model out: for each model, ``calibrate`` on the other models' runs and
    predict this one's. Returns, per held-out model, ``trained_on`` (the models fitted),
    ``efficiencies`` (the fit) and ``errors`` (predicted over measured throughput minus one,
    one per run of the held-out model, in the order of ``runs``).

    >>> out = hold_out()
    >>> out["llama-3.3-70b"]["trained_on"], len(out["llama-3.3-70b"]["errors"])
    (['llama-3.1-8b'], 10)
    """
    runs = serving_runs() if runs is None else runs
    names = sorted({run.model for run in runs})
    results = {}
    for name in names:
        train = [run for run in runs if run.model != name]
        chosen = calibrate(train, grid)
        test = [run for run in runs if run.model == name]
        errors = np.exp([log_errors(run, **chosen) for run in test]) - 1
        results[name] = dict(
            trained_on=sorted({run.model for run in train}), efficiencies=chosen, errors=errors
        )
    return results
