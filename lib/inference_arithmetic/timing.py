"""Seconds, from the book's formulas, for a real model on a real GPU.

>>> import inference_arithmetic as ia
>>> m, g = ia.model("llama-3.1-70b"), ia.gpu("h100-sxm")
>>> round(decode_step_time(m, g, batch=1, context_len=2048, n_gpus=2), 3)  # doctest: +SKIP
0.021

Every function evaluates a SymPy formula of ``formulas.latency`` at the model's sizes and the
GPU's figures. ``compute_efficiency`` and ``bandwidth_efficiency`` are the fractions of the
peak FLOP/s and bandwidth that real kernels reach: the defaults, 1.0, give the ideal roofline
(chapter 08); chapter 11 measures realistic values. ``link_latency`` is the fixed cost of one
message between GPUs, an assumption of the model (chapter 10), not a figure of the hardware.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from inference_arithmetic.counts import kv_cache_bytes, param_count
from inference_arithmetic.dtypes import bytes_per_number
from inference_arithmetic.formulas import latency, roofline, transformer
from inference_arithmetic.models import ModelConfig
from inference_arithmetic.numeric import numeric
from inference_arithmetic.symbols import n_gpus

__all__ = [
    "PARALLEL",
    "DEFAULT_LINK_LATENCY",
    "prefill_time",
    "decode_step_time",
    "generation",
    "weights_per_gpu",
    "max_batch",
    "compute_bound_batch",
]

PARALLEL = latency.PARALLEL
DEFAULT_LINK_LATENCY = 10e-6
"""Seconds per message between GPUs: the order of a small NCCL all-reduce step over NVLink.
An assumption of the model, varied in chapter 10."""


@functools.lru_cache(maxsize=256)
def _compiled(builder, arch: ModelConfig, *options):
    return numeric(builder(arch, *options))


def _check(arch, gpu, n_gpus, parallel_mode, **sizes):
    if not isinstance(arch, ModelConfig):
        raise TypeError(f"expected a ModelConfig (ia.model(name)), got {type(arch).__name__}")
    for name, value in {"n_gpus": n_gpus, **sizes}.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive whole number, got {value!r}")
    if parallel_mode not in PARALLEL:
        raise ValueError(f"parallel must be one of {PARALLEL}, got {parallel_mode!r}")
    for name in ("flop_rate", "memory_bandwidth", "memory_bytes"):
        if not hasattr(gpu, name):
            raise TypeError(f"expected a GPU (ia.gpu(name)), got {type(gpu).__name__}")


def weights_per_gpu(arch: ModelConfig, n_gpus: int = 1, dtype: str = "bf16") -> float:
    """Bytes of weights each of ``n_gpus`` GPUs holds (split evenly, either parallelism)."""
    return param_count(arch) * bytes_per_number(dtype) / n_gpus


def _fits(arch, gpu, n_gpus, dtype, cache_bytes=0.0):
    need = weights_per_gpu(arch, n_gpus, dtype) + cache_bytes / n_gpus
    if need > gpu.memory_bytes:
        from inference_arithmetic import format as fmt

        raise ValueError(
            f"{arch.name} in {dtype} needs {fmt.nbytes(need)} per GPU "
            f"(weights{' and KV cache' if cache_bytes else ''}) on {n_gpus} x {gpu.name}, "
            f"which has {fmt.nbytes(gpu.memory_bytes)}: use more GPUs or fewer bytes per number"
        )


def _values(arch, gpu, dtype, n_gpus, compute_efficiency, bandwidth_efficiency, link_latency):
    for name, value in (
        ("compute_efficiency", compute_efficiency),
        ("bandwidth_efficiency", bandwidth_efficiency),
    ):
        if not 0 < value <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    if link_latency < 0:
        raise ValueError(f"link_latency must not be negative, got {link_latency!r}")
    return {
        **arch.sizes(),
        "bytes_per_number": bytes_per_number(dtype),
        "flop_rate": gpu.flop_rate(dtype),
        "bandwidth": gpu.memory_bandwidth,
        "link_bandwidth": gpu.interconnect_bandwidth,
        "link_latency": link_latency,
        "n_gpus": n_gpus,
        "compute_efficiency": compute_efficiency,
        "bandwidth_efficiency": bandwidth_efficiency,
    }


def prefill_time(
    arch: ModelConfig,
    gpu,
    batch: int = 1,
    prompt_len: int = 2048,
    n_gpus: int = 1,
    dtype: str = "bf16",
    parallel: str = "tensor",
    compute_efficiency: float = 1.0,
    bandwidth_efficiency: float = 1.0,
    link_latency: float = DEFAULT_LINK_LATENCY,
) -> float:
    """Seconds to prefill ``batch`` prompts of ``prompt_len`` tokens: the time to first token.

    With ``parallel="pipeline"`` the stages run one after another for a single batch, so the
    time is one GPU's (were it big enough) plus the hand-offs between stages.
    """
    _check(arch, gpu, n_gpus, parallel, batch=batch, prompt_len=prompt_len)
    cache = kv_cache_bytes(arch, batch, prompt_len, dtype)
    _fits(arch, gpu, n_gpus, dtype, cache)
    values = _values(
        arch, gpu, dtype, n_gpus, compute_efficiency, bandwidth_efficiency, link_latency
    )
    values.update(batch=batch, seq_len=prompt_len)
    return float(_compiled(latency.prefill_time, arch, parallel).from_values(values))


def decode_step_time(
    arch: ModelConfig,
    gpu,
    batch: int = 1,
    context_len: int = 2048,
    n_gpus: int = 1,
    dtype: str = "bf16",
    parallel: str = "tensor",
    compute_efficiency: float = 1.0,
    bandwidth_efficiency: float = 1.0,
    link_latency: float = DEFAULT_LINK_LATENCY,
    mla: str = "reexpand",
) -> float:
    """Seconds of one decode step for ``batch`` requests with ``context_len`` tokens cached:
    the time per output token of each of them."""
    _check(arch, gpu, n_gpus, parallel, batch=batch, context_len=context_len)
    return float(
        _decode_times(
            arch,
            gpu,
            batch,
            np.asarray(context_len),
            n_gpus,
            dtype,
            parallel,
            compute_efficiency,
            bandwidth_efficiency,
            link_latency,
            mla,
        )
    )


def _decode_times(
    arch,
    gpu,
    batch,
    contexts,
    n_gpus,
    dtype,
    parallel_mode,
    compute_efficiency,
    bandwidth_efficiency,
    link_latency,
    mla,
):
    cache = kv_cache_bytes(arch, batch, int(np.max(contexts)), dtype)
    _fits(arch, gpu, n_gpus, dtype, cache)
    values = _values(
        arch, gpu, dtype, n_gpus, compute_efficiency, bandwidth_efficiency, link_latency
    )
    values.update(batch=batch, context_len=contexts)
    return _compiled(latency.decode_step_time, arch, mla, parallel_mode).from_values(values)


def generation(
    arch: ModelConfig,
    gpu,
    batch: int = 1,
    prompt_len: int = 2048,
    output_len: int = 256,
    n_gpus: int = 1,
    dtype: str = "bf16",
    parallel: str = "tensor",
    compute_efficiency: float = 1.0,
    bandwidth_efficiency: float = 1.0,
    link_latency: float = DEFAULT_LINK_LATENCY,
) -> dict[str, float]:
    """A batch of identical requests from prompt to last token.

    Returns the time to first token (the prefill), the mean time per output token after the
    first (decode steps with the context growing from ``prompt_len`` to
    ``prompt_len + output_len - 2``),
    the end-to-end latency of a request, and the throughput in output tokens per second.
    With pipeline parallelism and as many batches in flight as stages, the stages are all
    busy: throughput is n times one batch's, latency unchanged.
    """
    _check(arch, gpu, n_gpus, parallel, batch=batch, prompt_len=prompt_len, output_len=output_len)
    options = dict(
        n_gpus=n_gpus,
        dtype=dtype,
        parallel=parallel,
        compute_efficiency=compute_efficiency,
        bandwidth_efficiency=bandwidth_efficiency,
        link_latency=link_latency,
    )
    ttft = prefill_time(arch, gpu, batch, prompt_len, **options)
    # The first output token comes out of the prefill; each further one takes a decode step,
    # with the context growing by one token a step (one step is timed even if none runs).
    contexts = np.arange(prompt_len, prompt_len + max(output_len - 1, 1))
    steps = _decode_times(
        arch,
        gpu,
        batch,
        contexts,
        n_gpus,
        dtype,
        parallel,
        compute_efficiency,
        bandwidth_efficiency,
        link_latency,
        "reexpand",
    )
    steps = np.broadcast_to(steps, contexts.shape)
    total = ttft + float(np.sum(steps[: output_len - 1]))
    in_flight = n_gpus if parallel == "pipeline" else 1
    return {
        "ttft": ttft,
        "tpot": float(np.mean(steps)),
        "total": total,
        "throughput": in_flight * batch * output_len / total,
    }


def max_batch(
    arch: ModelConfig, gpu, context_len: int = 2048, n_gpus: int = 1, dtype: str = "bf16"
) -> int:
    """The most requests of ``context_len`` tokens whose KV cache fits beside the weights
    (activations and the framework's own memory ignored); 0 if the weights alone do not fit."""
    _check(arch, gpu, n_gpus, "tensor", context_len=context_len)
    free = gpu.memory_bytes * n_gpus - param_count(arch) * bytes_per_number(dtype)
    per_request = kv_cache_bytes(arch, 1, context_len, dtype)
    return max(0, math.floor(free / per_request))


def compute_bound_batch(
    arch: ModelConfig,
    gpu,
    context_len: int = 2048,
    n_gpus: int = 1,
    dtype: str = "bf16",
    compute_efficiency: float = 1.0,
    bandwidth_efficiency: float = 1.0,
    limit: int = 1 << 20,
) -> int | None:
    """The smallest batch at which a decode step's compute time reaches its memory time, or
    None if none up to ``limit`` does (the KV cache grows with the batch as fast as the
    FLOPs, so long contexts may never turn compute-bound)."""
    _check(arch, gpu, n_gpus, "tensor", context_len=context_len)
    values = _values(arch, gpu, dtype, n_gpus, compute_efficiency, bandwidth_efficiency, 0.0)
    batches = np.unique(np.geomspace(1, limit, 2000).astype(int))
    values.update(batch=batches, context_len=context_len)
    compute = _compiled(_decode_compute, arch).from_values(values)
    memory = _compiled(_decode_memory, arch).from_values(values)
    bound = np.nonzero(compute >= memory)[0]
    if not bound.size:
        return None
    # Refine between the last memory-bound sample and the first compute-bound one.
    high = int(batches[bound[0]])
    low = int(batches[bound[0] - 1]) if bound[0] else 1
    grid = np.arange(low, high + 1)
    values.update(batch=grid)
    c = _compiled(_decode_compute, arch).from_values(values)
    m = _compiled(_decode_memory, arch).from_values(values)
    return int(grid[np.nonzero(c >= m)[0][0]])


def _decode_compute(arch):
    return roofline.compute_time(transformer.decode_flops(arch)) / n_gpus


def _decode_memory(arch):
    return roofline.memory_time(latency.decode_bytes(arch)) / n_gpus
