"""Published measurements of real serving runs, to hold the library's predictions against.

>>> runs = serving_runs()
>>> len(runs), runs[0].model, runs[0].gpu, runs[0].batch
(20, 'llama-3.3-70b', 'h100-sxm', 1)

The data and their source and license are in ``inference_arithmetic/data/README.md``;
chapter 11 compares every row with ``predict``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from importlib import resources

from inference_arithmetic.hardware import gpu
from inference_arithmetic.models import model
from inference_arithmetic.timing import serve

__all__ = ["ServingRun", "serving_runs", "predict", "SOURCE"]

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
    folder = resources.files("inference_arithmetic") / "data"
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
