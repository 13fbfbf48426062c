"""Published measurements of real serving runs, to hold the library's predictions against.

>>> runs = serving_runs()
>>> len(runs), runs[0].model, runs[0].gpu, runs[0].batch
(20, 'llama-3.3-70b', 'h100-sxm', 1)

The data and their source and license are in ``inference_arithmetic/validation/data/README.md``;
chapter 13 compares every row with ``predict``, fits the efficiencies with ``calibrate`` and
tests them on runs they were not fitted on with ``hold_out``.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import itertools
import math
from dataclasses import dataclass
from importlib import resources

import numpy as np

from inference_arithmetic.core.numeric import UnknownName, numeric
from inference_arithmetic.formulas import kernels, latency
from inference_arithmetic.hardware.engines import engine as registry_engine
from inference_arithmetic.hardware.gpus import gpu
from inference_arithmetic.models.config import model
from inference_arithmetic.models.counts import param_count
from inference_arithmetic.serving import simulation
from inference_arithmetic.serving.scenario import Scenario
from inference_arithmetic.serving.timing import in_waves, run, serve

__all__ = [
    "METRICS",
    "MODES",
    "Measurement",
    "fit_set",
    "predicted",
    "errors",
    "ServingRun",
    "serving_runs",
    "RUN_ENGINES",
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


RUN_ENGINES = {"vllm": "vllm@0.7"}
"""The engines of ``serving_runs``' files, in the registry's profiles: the runs of
``vllm_llama_h100.csv`` are vLLM 0.7-0.8's of March 2025, whose profile is ``vllm@0.7`` (the
library's default engine, the newest vLLM, is not what they ran)."""


def serving_runs(name: str = "vllm_llama_h100") -> list[ServingRun]:
    """The rows of ``data/<name>.csv``, typed, each run's engine its registry profile
    (``RUN_ENGINES``); a ``KeyError`` lists the files there are."""
    folder = resources.files("inference_arithmetic.validation") / "data"
    names = sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".csv"))
    if name not in names:
        raise UnknownName(f"no measurements named {name!r}; there are: {', '.join(names)}")
    rows = csv.DictReader(io.StringIO((folder / f"{name}.csv").read_text()))
    return [
        ServingRun(
            model=row["model"],
            gpu=row["gpu"],
            n_gpus=int(row["n_gpus"]),
            engine=RUN_ENGINES[row["engine"]],
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
    """The library's prediction for a measured run (``ia.serve`` at its sizes, on its engine;
    ``options`` override the defaults: the step model, efficiencies, link latency, memory
    utilization)."""
    return serve(
        model(run.model),
        gpu(run.gpu),
        requests=run.batch,
        prompt_len=round(run.input_tokens),
        output_len=round(run.output_tokens),
        n_gpus=run.n_gpus,
        **{"engine": run.engine, **options},
    )


@functools.cache
def _formulas(name: str):
    """The compiled time of a static batch and the requests that fit at once, for one model."""
    arch = model(name)
    return numeric(latency.generation_time(arch)), numeric(latency.max_concurrency(arch))


def log_errors(run: ServingRun, **efficiencies) -> np.ndarray:
    """log(predicted / measured) of one run's throughput, in the engine's waves, from the
    closed formula of chapter 08's single roofline (``latency.generation_time``). The
    efficiencies (``compute_efficiency``, ``bandwidth_efficiency``, ``link_latency``, each the
    roofline's default unless given) may be arrays, to score a whole grid at once.

    >>> run = serving_runs()[-1]  # Llama 3.1 8B, a batch of 512 in three waves
    >>> float(np.exp(log_errors(run)) * run.output_tokens_per_s) > 0
    True
    """
    generation_time, fits = _formulas(run.model)
    prompt, output = round(run.input_tokens), round(run.output_tokens)
    workload = dict(batch=run.batch, prompt_len=prompt, output_len=output, in_waves=True)
    s = Scenario(
        run.model, run.gpu, n_gpus=run.n_gpus, engine=run.engine, **workload, step="roofline"
    )
    values = s.values()
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


# --- Every published measurement: the fit set and the validation set ------------------------

METRICS = (
    "output_tokens_per_s",
    "total_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "e2e_latency_s",
    "ttft_s",
    "tpot_s",
    "prompt_tokens_per_s",
    "generation_tokens_per_s",
)
"""What a measurement measured: output tokens per second of the whole run (or per GPU), a
request's end-to-end seconds, its time to first token, its mean time per output token, and
the prompt and generation speeds of a single stream (llama.cpp's ``llama-bench``)."""

MODES = ("static", "waves", "closed", "single")
"""How the requests ran: ``static``, a batch of ``batch`` requests all at once (an engine's
static-batch benchmark); ``waves``, ``batch`` requests sent at once to an engine that admits as
many as its memory holds; ``closed``, ``batch`` clients each sending its next request when the
last one finishes, ``requests`` in all; ``single``, one stream, timed phase by phase."""


@dataclass(frozen=True)
class Measurement:
    """One published measured number and the run it measures, in the registry's names."""

    source: str
    engine: str
    engine_version: str
    gpu: str
    n_gpus: int
    model: str
    dtype: str
    batch: int
    input_tokens: int
    output_tokens: int
    metric: str
    value: float
    mode: str = "static"
    parallel: str = "tensor"
    cache_dtype: str | None = None
    compute_dtype: str | None = None
    split: str = "fit"
    requests: int | None = None
    note: str = ""
    memory_utilization: float | None = None
    token_budget: int | None = None
    max_num_seqs: int | None = None

    def scenario(self, **options) -> Scenario:
        """The run as a ``Scenario`` timed kernel by kernel (``options`` override its
        settings); ``token_budget`` and ``max_num_seqs``, where the run states them, in place
        of the engine profile's."""
        settings = dict(
            n_gpus=self.n_gpus,
            parallel=self.parallel,
            dtype=self.dtype,
            cache_dtype=self.cache_dtype,
            compute_dtype=self.compute_dtype,
            engine=self.engine,
            batch=self.batch,
            prompt_len=self.input_tokens,
            output_len=self.output_tokens,
            in_waves=self.mode in ("waves", "closed"),
            step="kernels",
        )
        if self.memory_utilization is not None:  # else the Scenario's default share
            settings["memory_utilization"] = self.memory_utilization
        if self.token_budget is not None:  # else the profile's
            settings["token_budget"] = self.token_budget
        if self.max_num_seqs is not None:  # the profile on its GPU, with the run's own cap
            profile = registry_engine(self.engine).on(gpu(self.gpu))
            settings["engine"] = dataclasses.replace(profile, max_num_seqs=self.max_num_seqs)
        arch = model(self.model)
        tokens = self.input_tokens + self.output_tokens
        if arch.context_window and tokens > arch.context_window:
            # The engine ran past the config's window (TensorRT-LLM builds an engine for the
            # lengths it is given; GPT-J's rotary positions do not stop at 2,048): time it.
            arch = dataclasses.replace(arch, context_window=tokens)
        return Scenario(arch, self.gpu, **{**settings, **options})


# TensorRT-LLM's performance page names its models; its reproduction commands build these.
_TRTLLM_MODELS = {
    "GPT-J 6B": "gpt-j-6b",
    "LLaMA 7B": "llama-2-7b",
    "LLaMA 70B": "llama-2-70b",
    "Mistral 7B": "mistral-7b-v0.1",
    "Mixtral 8x7B": "mixtral-8x7b",
    "Falcon 180B": "falcon-180b",
}


def _read(name):
    folder = resources.files("inference_arithmetic.validation") / "data"
    return list(csv.DictReader(io.StringIO((folder / name).read_text())))


# TensorRT-LLM 0.21's maximum-load tables (docs/source/performance/perf-overview.md as it stood
# for v0.21), in the registry's names. Llama 4 Maverick has no registry model: left out.
_TRTLLM_021 = {
    "models": {
        "Llama 3.1 8B": "llama-3.1-8b",
        "Llama 3.3 70B": "llama-3.3-70b",
        "Llama 3.1 405B": "llama-3.1-405b",
    },
    # "H100 SXM 80GB (DGX H100)", "H200 SXM 141GB (DGX H200)", "GH200 96GB HBM3 (480GB
    # LPDDR5X)", "B200 180GB (DGX B200)", "GB200 192GB (GB200 NVL72)", as the page lists them.
    "gpus": {
        "H100": "h100-sxm",
        "H200": "h200",
        "GH200": "gh200",
        "B200": "b200",
        "GB200": "gb200",
    },
    # NVIDIA's ModelOpt checkpoints (nvidia/Llama-3.3-70B-Instruct-FP4, ...-FP8): NVFP4 or FP8
    # weights and products; the KV cache in FP8 (assumed: the page names none).
    "formats": {"FP8": "fp8", "FP4": "nvfp4"},
}

TRTLLM_021_REQUESTS = {
    (128, 128): 30000,
    (128, 2048): 3000,
    (128, 4096): 1500,
    (1000, 2000): 1500,
    (2048, 128): 3000,
    (2048, 2048): 1500,
    (5000, 500): 1500,
    (1000, 1000): 3000,
    (500, 2000): 3000,
    (20000, 2000): 1000,
    (1024, 2048): 1500,
}
"""The requests trtllm-bench sent at once for each (input, output) length of TensorRT-LLM
0.21's tables: the page's ``$num_requests`` ("For shorter input and output lengths, a larger
number of messages were used to guarantee that the system hit a steady state"). The page gives
none for 1024/2048: 1000/2000's 1,500 is taken."""

TRTLLM_BENCH = {
    "kv_cache_fraction": 0.95,
    "most_requests": 4096,
    "most_tokens": 32768,
    "bytes_per_element": {"fp8": 1.0, "nvfp4": 0.5},
    "kv_bytes_per_element": 1.0,
}
"""What trtllm-bench's ``throughput`` takes to choose each run's ``max_batch_size`` and
``max_num_tokens`` when the command leaves them out, as the v0.21 tables were run
(``tensorrt_llm/bench/build/tuning.py`` of NVIDIA/TensorRT-LLM, ``calc_engine_setting`` and
``finetune_setting``): the cache's share of the memory left beside the weights
(``kv_cache_gpu_mem_fraction``, 0.95), the most requests (4,096) and tokens a step (32,768) it
sets, bytes per weight (``BYTES_PER_ELEM``: FP8 1, NVFP4 0.5) and per cached number (FP8, 1).
The same 0.95 is the share of the free memory the page's runs gave the KV cache
("``--kv_cache_free_gpu_mem_fraction 0.95`` ... We fall back to 0.90 or lower if out-of-memory
errors are encountered")."""


def trtllm_bench_settings(arch, g, tp: int, input_tokens: int, output_tokens: int, dtype: str):
    """The ``max_num_seqs`` (trtllm-bench's ``max_batch_size``) and ``token_budget``
    (``max_num_tokens``) trtllm-bench 0.21 chooses for ``arch`` over ``tp`` GPUs ``g`` and a
    data set of one length (``TRTLLM_BENCH``), as its ``tuning.py`` computes them: the
    requests whose whole cache fits in 0.95 of the memory (the driver's, in GiB) beside the
    weights, at most 4,096, rounded up; the tokens of as many prompts and outputs' worth per
    step, ``requests * (1 + input / output)``, at most 32,768, rounded up, at least 2,048.

    >>> from inference_arithmetic.hardware.gpus import gpu
    >>> trtllm_bench_settings(model("llama-3.1-8b"), gpu("h100-sxm"), 1, 128, 128, "fp8")
    {'max_num_seqs': 4096, 'token_budget': 8192}
    """
    gib = 1024**3
    kv = TRTLLM_BENCH["kv_bytes_per_element"]
    per_token = 2 * arch.n_layers * max(tp, arch.n_kv_heads) * arch.d_head * kv / gib
    engine_size = param_count(arch) * TRTLLM_BENCH["bytes_per_element"][dtype] / gib
    memory = (g.usable_memory_bytes or g.memory_bytes) / gib * tp
    cache_memory = (memory - engine_size) * TRTLLM_BENCH["kv_cache_fraction"]
    requests = cache_memory / (per_token * (input_tokens + output_tokens))
    raw_bs = min(requests, TRTLLM_BENCH["most_requests"])
    raw_tokens = min(raw_bs * (1 + input_tokens / output_tokens), TRTLLM_BENCH["most_tokens"])
    return {
        "max_num_seqs": _rounded_up(raw_bs, ((256, 32), (1024, 128), (math.inf, 256)), 64),
        "token_budget": _rounded_up(raw_tokens, ((4096, 256), (8192, 512), (math.inf, 1024)), 2048),
    }


def _rounded_up(value: float, ladder, least: int) -> int:
    """``value`` rounded up to the step of the first rung it is under (``ladder``: (bound,
    step) pairs), at least ``least``, as ``tuning.py`` rounds a batch size and a budget."""
    step = next(step for bound, step in ladder if value < bound)
    return max(least, step * math.ceil(value / step))


def trtllm_021_rows() -> tuple[list[Measurement], list[tuple[dict, str]]]:
    """TensorRT-LLM 0.21's maximum-load rows (``data/trtllm_v021_throughput.csv``) as
    ``Measurement``s of the engine ``tensorrt-llm@0.21``, and the rows set aside with why (a
    model the registry lacks). Each is ``TRTLLM_021_REQUESTS`` requests of one length sent at
    once (``waves``: the engine admits what its memory and ``max_num_seqs`` hold), timed with
    the settings trtllm-bench chose (``trtllm_bench_settings``; a prompt is computed whole,
    chunked context being off, so a step holds at least one), the KV cache in FP8 and 0.95 of
    the memory the engine's. The value is the output tokens per second of the whole engine,
    its ``tp`` GPUs together ("Total Output Throughput"), so the metric is
    ``output_tokens_per_s`` over ``n_gpus = tp``."""
    rows, left = [], []
    for row in _read("trtllm_v021_throughput.csv"):
        name = _TRTLLM_021["models"].get(row["model"])
        if name is None:
            left.append((row, f"no registry model for {row['model']!r}"))
            continue
        g = gpu(_TRTLLM_021["gpus"][row["gpu"]])
        dtype = _TRTLLM_021["formats"][row["precision"]]
        tp, isl, osl = int(row["tp"]), int(row["input_tokens"]), int(row["output_tokens"])
        settings = trtllm_bench_settings(model(name), g, tp, isl, osl, dtype)
        settings["token_budget"] = max(settings["token_budget"], isl)
        if row["metric"] != "output_tokens_per_s_per_tp_group":
            raise ValueError(f"unknown metric {row['metric']!r}")
        rows.append(
            Measurement(
                "trtllm-0.21-max-load",
                "tensorrt-llm@0.21",
                row["engine_version"],
                g.name,
                tp,
                name,
                dtype,
                TRTLLM_021_REQUESTS[isl, osl],
                isl,
                osl,
                "output_tokens_per_s",
                float(row["value"]),
                mode="waves",
                cache_dtype="fp8",
                note=f"{row['gpu']} {row['precision']}, TP {tp}",
                memory_utilization=TRTLLM_BENCH["kv_cache_fraction"],
                **settings,
            )
        )
    return rows, left


@functools.cache
def fit_set() -> tuple[Measurement, ...]:
    """The measurements the engines' few fitted properties are fitted on, and nothing else:
    the 20 vLLM runs (``serving_runs``), TensorRT-LLM 0.9.0's static-batch tables for the
    H100 SXM (fp8 weights, cache and products) and the A100 SXM 80GB (fp16), 48 rows, and
    TensorRT-LLM 0.21's maximum-load tables (``trtllm_021_rows``: B200 and GB200 in NVFP4,
    H100, H200 and GH200 in FP8), the 120 rows of the registry's models.

    >>> rows = fit_set()
    >>> len(rows), sum(m.engine == "tensorrt-llm@0.21" for m in rows)
    (188, 120)
    """
    rows = [
        Measurement(
            "tokenomics-vllm",
            "vllm@0.7",
            "0.7-0.8",
            run.gpu,
            run.n_gpus,
            run.model,
            "bf16",
            run.batch,
            round(run.input_tokens),
            round(run.output_tokens),
            "output_tokens_per_s",
            run.output_tokens_per_s,
            mode="waves",
        )
        for run in serving_runs()
    ]
    for row in _read("trtllm_static_v090_h100_a100.csv"):
        rows.append(
            Measurement(
                "trtllm-0.9.0-static",
                "tensorrt-llm@0.9",
                row["engine_version"],
                row["gpu"],
                int(row["tensor_parallel"]),
                _TRTLLM_MODELS[row["model_as_published"]],
                row["precision"],
                int(row["batch"]),
                int(row["input_tokens"]),
                int(row["output_tokens"]),
                "output_tokens_per_s_per_gpu",
                float(row["output_tokens_per_s_per_gpu"]),
                mode="static",
            )
        )
    rows.extend(trtllm_021_rows()[0])
    return tuple(rows)


def predicted(m: Measurement, scenario: Scenario | None = None, **options) -> float:
    """The library's prediction of what ``m`` measured, at the library's defaults unless
    ``options`` (any ``Scenario`` setting) override them, or of ``scenario`` (the run's own,
    changed)."""
    s = m.scenario(**options) if scenario is None else scenario
    if m.mode == "closed":
        r = simulation.closed_loop(s.replace(batch=1, in_waves=False), m.batch, m.requests)
        seconds, done = r["elapsed"], m.requests
    elif _bursts(m, s):
        r = simulation.burst(s)
        seconds, done = r["elapsed"], m.batch
    elif m.mode == "waves":
        r = in_waves(s)
        seconds, done = r["elapsed"], m.batch
    else:
        r = run(s)
        seconds, done = r["request_time"], m.batch
    per_stream = {"ttft_s": r["ttft"], "tpot_s": r["tpot"]}
    if m.metric in per_stream:
        return float(per_stream[m.metric])
    if m.metric == "e2e_latency_s":
        return float(seconds)
    if m.metric == "prompt_tokens_per_s":
        return m.batch * m.input_tokens / r["ttft"]
    if m.metric == "generation_tokens_per_s":
        return m.batch / r["tpot"]
    if m.metric == "total_tokens_per_s":
        return done * (m.input_tokens + m.output_tokens) / seconds
    tokens_per_s = done * m.output_tokens / seconds
    if m.metric == "output_tokens_per_s_per_gpu":
        return tokens_per_s / m.n_gpus
    return tokens_per_s


def errors(rows, **options) -> np.ndarray:
    """Predicted over measured, minus one, of each of ``rows``, in each metric's own terms
    (a positive error is a throughput predicted too high, or a latency too long)."""
    return np.array([predicted(m, **options) / m.value - 1 for m in rows])


# --- The engines' fitted properties ------------------------------------------------------------

FIT_GRID = {
    "vllm@0.7": {
        "token_budget": (512, 2048, 8192, 16384),
        "step_overhead": np.round(np.arange(0, 10.01, 0.25) * 1e-3, 6),
        "request_overhead": np.round(np.arange(0, 100.1, 2.5) * 1e-6, 8),
    },
    "tensorrt-llm@0.9": {
        "kv_shared": (False, True),
        "step_overhead": np.round(np.arange(0, 10.01, 0.25) * 1e-3, 6),
        "request_overhead": np.round(np.arange(0, 100.1, 2.5) * 1e-6, 8),
    },
    "tensorrt-llm@0.21": {
        "step_overhead": np.round(np.arange(0, 5.01, 0.25) * 1e-3, 6),
        "request_overhead": np.round(np.arange(0, 50.1, 2.5) * 1e-6, 8),
    },
}
"""What ``fit`` searches for each engine of the fit set: its structural properties (a token
budget vLLM's versions default to; which attention kernel TensorRT-LLM runs), each tried in
turn, and its two fixed costs, a step's and a scheduled request's, on a grid. TensorRT-LLM
0.21's rows state their budgets and caps (``trtllm_bench_settings``), so only its two fixed
costs are fitted, on a grid half as wide as the others' (its bursts run thousands of steps,
each timed at every point of the grid)."""

_CONTINUOUS = ("step_overhead", "request_overhead")


def _speeds(m: Measurement, structural: dict, figures: dict) -> np.ndarray:
    """The predicted metric of ``m`` (a throughput) at ``structural`` settings (one each)
    and ``figures`` (arrays: the fixed costs), on the kernel model."""
    chosen = dict(structural)
    if "kv_shared" in chosen:  # an engine property: a copy of the engine with it changed
        e = registry_engine(m.engine)
        chosen["engine"] = dataclasses.replace(e, kv_shared=chosen.pop("kv_shared"))
    s = m.scenario(**chosen)
    speed = m.batch * m.output_tokens / _affine_seconds(m, s, figures)
    return speed / m.n_gpus if m.metric == "output_tokens_per_s_per_gpu" else speed


def _affine_seconds(m: Measurement, s: Scenario, figures: dict) -> np.ndarray:
    """``_seconds`` at every point of ``figures``, from its values at a few. A step's fixed
    costs are added to its kernels' time (its own once, a request's for each it schedules),
    and what a step does depends on the steps before, not on how long they took, so a run's
    time is an affine function of them: it is timed with each cost alone at the grid's
    largest, and at all of them there, where the function must agree (else, and for any
    other figure, at every point). A burst of thousands of steps is then timed four times,
    not once per point of the grid."""
    top = {name: float(np.max(values)) for name, values in figures.items()}
    if not figures or any(name not in _CONTINUOUS for name in figures):
        return _seconds(m, s, figures)
    # The corners, timed together: none of the costs, each alone at its largest, all of them.
    names = list(top)
    alone = np.eye(len(names))
    corners = np.vstack([np.zeros(len(names)), alone, np.ones(len(names))])
    timed = _seconds(m, s, {n: corners[:, i] * top[n] for i, n in enumerate(names)})
    base, far = timed[0], timed[-1]
    slopes = {n: (timed[1 + i] - base) / top[n] if top[n] else 0.0 for i, n in enumerate(names)}
    if not np.isclose(base + sum(slopes[n] * v for n, v in top.items()), far, rtol=1e-9, atol=0):
        return _seconds(m, s, figures)
    return base + sum(slopes[n] * np.asarray(figures[n], dtype=float) for n in figures)


def _bursts(m: Measurement, s: Scenario) -> bool:
    """Whether ``m``'s run is timed as its engine's burst, step by step (``simulation.burst``,
    as ``in_waves`` follows it, of a published run's size even past ``serve``'s BURST_LIMIT:
    trtllm-bench's 30,000 requests): requests sent at once to a continuous engine, on the
    kernel model."""
    return m.mode == "waves" and s.step == "kernels" and s.engine.batching == "continuous"


def _seconds(m: Measurement, s: Scenario, figures: dict):
    """The seconds ``s`` (of ``m``) takes on the kernel model at ``figures`` (numbers or
    arrays, broadcast)."""
    if _bursts(m, s):
        return simulation.burst(s, **figures)["elapsed"]
    return _generation(s.model, s.parallel).from_values({**s.values(), **figures})


@functools.cache
def _generation(arch, parallel):
    return numeric(kernels.generation_time(arch, parallel=parallel))


def fit(engine: str, rows=None, grid=None) -> dict:
    """The engine's fitted properties: the point of ``grid`` (default ``FIT_GRID[engine]``)
    with the smallest root-mean-square log error over the fit set's rows of that engine
    (``rows`` to fit others), on the first of equal scores. Structural properties are tried in
    turn; the fixed costs on the whole grid at once."""
    grid = FIT_GRID[engine] if grid is None else grid
    rows = [m for m in fit_set() if m.engine == engine] if rows is None else rows
    rows = [m for m in rows if m.metric in ("output_tokens_per_s", "output_tokens_per_s_per_gpu")]
    continuous_names = [name for name in grid if name in _CONTINUOUS]
    structural_names = [name for name in grid if name not in _CONTINUOUS]
    mesh = np.meshgrid(*[np.asarray(grid[n], dtype=float) for n in continuous_names], indexing="ij")
    figures = dict(zip(continuous_names, mesh, strict=True))
    best, best_score = None, np.inf
    for values in itertools.product(*[grid[n] for n in structural_names]):
        structural = dict(zip(structural_names, values, strict=True))
        logs = [np.log(_speeds(m, structural, figures) / m.value) for m in rows]
        rms = np.sqrt(np.mean(np.square(logs), axis=0))
        i = np.unravel_index(np.argmin(rms), rms.shape)
        if rms[i] < best_score - 1e-12:
            best_score = float(rms[i])
            best = {**structural, **{n: float(figures[n][i]) for n in continuous_names}}
    return best
