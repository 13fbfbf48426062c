"""Seconds, from the book's formulas, for a real model on a real GPU.

>>> import inference_arithmetic as ia
>>> m, g = ia.model("llama-3.1-70b"), ia.gpu("h100-sxm")
>>> round(decode_step_time(m, g, batch=1, context_len=2048, n_gpus=2), 3)  # doctest: +SKIP
0.021

Every function evaluates a SymPy formula of ``formulas.latency`` at the model's sizes and the
GPU's figures. ``compute_efficiency`` and ``bandwidth_efficiency`` are the fractions of the
peak FLOP/s and bandwidth a real serving engine reaches, and ``link_latency`` the fixed cost of
one message between GPUs. Their defaults are the one set the whole book uses, calibrated once
in chapter 11 against measured vLLM runs (not fitted per case); ``IDEAL`` gives the ideal
roofline of chapter 08. ``cache_dtype`` stores the KV cache in another dtype than the weights,
and ``compute_dtype`` computes in another than they are stored in: weight-only int4 (AWQ,
GPTQ) is read at half a byte per weight and computed in bf16.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np

from inference_arithmetic.counts import kv_cache_bytes, param_count
from inference_arithmetic.dtypes import bytes_per_number
from inference_arithmetic.formulas import latency, roofline, transformer
from inference_arithmetic.models import ModelConfig
from inference_arithmetic.numeric import numeric
from inference_arithmetic.symbols import n_gpus

__all__ = [
    "PARALLEL",
    "DEFAULT_COMPUTE_EFFICIENCY",
    "DEFAULT_BANDWIDTH_EFFICIENCY",
    "DEFAULT_LINK_LATENCY",
    "DEFAULT_MEMORY_UTILIZATION",
    "IDEAL",
    "prefill_time",
    "decode_step_time",
    "generation",
    "serve",
    "weights_per_gpu",
    "max_batch",
    "compute_bound_batch",
]

PARALLEL = latency.PARALLEL
# Calibrated in chapter 11: the three numbers that bring the roofline closest to 20 measured
# vLLM runs of two models at once (median error a few percent); each is within the range that
# published kernel measurements give, which chapter 11 cites.
DEFAULT_COMPUTE_EFFICIENCY = 0.4
"""Fraction of the peak FLOP/s a serving engine reaches, averaged over a whole run (chapter 11)."""
DEFAULT_BANDWIDTH_EFFICIENCY = 0.65
"""Fraction of the peak memory bandwidth a serving engine reaches in decode (chapter 11)."""
DEFAULT_LINK_LATENCY = 2e-6
"""Seconds per message between GPUs (a ring all-reduce sends 2(n - 1) of them; chapter 10)."""
DEFAULT_MEMORY_UTILIZATION = 0.9
"""Fraction of GPU memory an engine may fill (vLLM's ``gpu_memory_utilization`` default)."""
IDEAL = {"compute_efficiency": 1.0, "bandwidth_efficiency": 1.0}
"""The ideal roofline of chapter 08, peak FLOP/s and peak bandwidth: ``**ia.timing.IDEAL``.
(Messages between GPUs keep their latency: it is not part of the roofline.)"""


@functools.lru_cache(maxsize=256)
def _compiled(builder, arch: ModelConfig, *options):
    return numeric(builder(arch, *options))


def _check(arch, gpu, n_gpus, parallel_mode, **sizes):
    """Clear errors for a wrong model, GPU, parallelism or size, before any formula runs."""
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
            f"which has {fmt.nbytes(gpu.memory_bytes)}: use more GPUs, a smaller batch or "
            "fewer bytes per number"
        )


def _values(
    arch,
    gpu,
    dtype,
    n_gpus,
    compute_efficiency,
    bandwidth_efficiency,
    link_latency,
    cache_dtype=None,
    compute_dtype=None,
):
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
        "kv_bytes_per_number": bytes_per_number(_cache_format(dtype, cache_dtype, compute_dtype)),
        "flop_rate": _flop_rate(gpu, compute_dtype or dtype),
        "bandwidth": gpu.memory_bandwidth,
        "link_bandwidth": gpu.interconnect_bandwidth,
        "link_latency": link_latency,
        "n_gpus": n_gpus,
        "compute_efficiency": compute_efficiency,
        "bandwidth_efficiency": bandwidth_efficiency,
    }


def _cache_format(dtype, cache_dtype=None, compute_dtype=None):
    """The KV cache holds activations: unless told otherwise, in the format they are computed
    in, which is the weights' unless ``compute_dtype`` says another."""
    return cache_dtype or compute_dtype or dtype


def _flop_rate(gpu, dtype):
    try:
        return gpu.flop_rate(dtype)
    except KeyError as error:
        raise KeyError(
            f"{error.args[0]}; for weights stored in {dtype!r} but computed in another format "
            "(weight-only quantization), pass compute_dtype, e.g. compute_dtype='bf16'"
        ) from None


def prefill_time(
    arch: ModelConfig,
    gpu,
    batch: int = 1,
    prompt_len: int = 2048,
    n_gpus: int = 1,
    dtype: str = "bf16",
    parallel: str = "tensor",
    compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY,
    bandwidth_efficiency: float = DEFAULT_BANDWIDTH_EFFICIENCY,
    link_latency: float = DEFAULT_LINK_LATENCY,
    cache_dtype: str | None = None,
    compute_dtype: str | None = None,
) -> float:
    """Seconds to prefill ``batch`` prompts of ``prompt_len`` tokens: the time to first token.

    With ``parallel="pipeline"`` the stages run one after another for a single batch, so the
    time is one GPU's (were it big enough) plus the hand-offs between stages.
    """
    _check(arch, gpu, n_gpus, parallel, batch=batch, prompt_len=prompt_len)
    cache = kv_cache_bytes(
        arch, batch, prompt_len, _cache_format(dtype, cache_dtype, compute_dtype)
    )
    _fits(arch, gpu, n_gpus, dtype, cache)
    options = _Options(
        n_gpus,
        dtype,
        parallel,
        compute_efficiency,
        bandwidth_efficiency,
        link_latency,
        cache_dtype,
        compute_dtype,
    )
    values = options.values(arch, gpu)
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
    compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY,
    bandwidth_efficiency: float = DEFAULT_BANDWIDTH_EFFICIENCY,
    link_latency: float = DEFAULT_LINK_LATENCY,
    cache_dtype: str | None = None,
    compute_dtype: str | None = None,
    mla: str = "reexpand",
) -> float:
    """Seconds of one decode step for ``batch`` requests with ``context_len`` tokens cached:
    the time per output token of each of them."""
    _check(arch, gpu, n_gpus, parallel, batch=batch, context_len=context_len)
    options = _Options(
        n_gpus,
        dtype,
        parallel,
        compute_efficiency,
        bandwidth_efficiency,
        link_latency,
        cache_dtype,
        compute_dtype,
    )
    return float(_decode_times(arch, gpu, batch, np.asarray(context_len), options, mla))


@dataclass(frozen=True)
class _Options:
    """The settings every timing function shares, passed on as one value."""

    n_gpus: int = 1
    dtype: str = "bf16"
    parallel: str = "tensor"
    compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY
    bandwidth_efficiency: float = DEFAULT_BANDWIDTH_EFFICIENCY
    link_latency: float = DEFAULT_LINK_LATENCY
    cache_dtype: str | None = None
    compute_dtype: str | None = None

    def values(self, arch, gpu):
        return _values(
            arch,
            gpu,
            self.dtype,
            self.n_gpus,
            self.compute_efficiency,
            self.bandwidth_efficiency,
            self.link_latency,
            self.cache_dtype,
            self.compute_dtype,
        )

    def keywords(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _decode_times(arch, gpu, batch, contexts, options, mla="reexpand"):
    cache_format = _cache_format(options.dtype, options.cache_dtype, options.compute_dtype)
    cache = kv_cache_bytes(arch, batch, int(np.max(contexts)), cache_format)
    _fits(arch, gpu, options.n_gpus, options.dtype, cache)
    values = options.values(arch, gpu)
    values.update(batch=batch, context_len=contexts)
    return _compiled(latency.decode_step_time, arch, mla, options.parallel).from_values(values)


def generation(
    arch: ModelConfig,
    gpu,
    batch: int = 1,
    prompt_len: int = 2048,
    output_len: int = 256,
    n_gpus: int = 1,
    dtype: str = "bf16",
    parallel: str = "tensor",
    compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY,
    bandwidth_efficiency: float = DEFAULT_BANDWIDTH_EFFICIENCY,
    link_latency: float = DEFAULT_LINK_LATENCY,
    cache_dtype: str | None = None,
    compute_dtype: str | None = None,
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
    options = _Options(
        n_gpus,
        dtype,
        parallel,
        compute_efficiency,
        bandwidth_efficiency,
        link_latency,
        cache_dtype,
        compute_dtype,
    )
    ttft = prefill_time(arch, gpu, batch, prompt_len, **options.keywords())
    # The first output token comes out of the prefill; each further one takes a decode step,
    # with the context growing by one token a step (one step is timed even if none runs).
    contexts = np.arange(prompt_len, prompt_len + max(output_len - 1, 1))
    steps = np.broadcast_to(_decode_times(arch, gpu, batch, contexts, options), contexts.shape)
    total = ttft + float(np.sum(steps[: output_len - 1]))
    in_flight = n_gpus if parallel == "pipeline" else 1
    return {
        "ttft": ttft,
        "tpot": float(np.mean(steps)),
        "total": total,
        "throughput": in_flight * batch * output_len / total,
    }


def serve(
    arch: ModelConfig,
    gpu,
    requests: int,
    prompt_len: int = 2048,
    output_len: int = 256,
    n_gpus: int = 1,
    dtype: str = "bf16",
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    **options,
) -> dict[str, float]:
    """``requests`` identical requests sent at once to an engine whose KV cache holds only so
    many: it runs them in waves of at most ``concurrency`` requests, one after another.

    ``concurrency`` is the number of whole requests (prompt and output) whose cache fits in
    ``memory_utilization`` of the GPUs' memory beside the weights. Returns the waves, the
    concurrency, the elapsed seconds and the throughput in output tokens per second, plus the
    first wave's time to first token and time per output token. ``options`` are those of
    ``generation`` (parallel, efficiencies, link latency, cache and compute dtypes).
    """
    _check(arch, gpu, n_gpus, options.get("parallel", "tensor"), requests=requests)
    if not 0 < memory_utilization <= 1:
        raise ValueError(f"memory_utilization must be in (0, 1], got {memory_utilization!r}")
    cache_dtype = _cache_format(dtype, options.get("cache_dtype"), options.get("compute_dtype"))
    context = prompt_len + output_len
    fit = _concurrency(arch, gpu, context, n_gpus, dtype, cache_dtype, memory_utilization)
    if fit < 1:
        raise ValueError(
            f"no request of {context} tokens fits: {arch.name} in {dtype} on {n_gpus} x "
            f"{gpu.name} at memory_utilization={memory_utilization} leaves no room for its "
            "KV cache; use more GPUs or fewer bytes per number"
        )
    concurrency = min(requests, fit)
    full, rest = divmod(requests, concurrency)
    run = functools.partial(
        generation,
        arch,
        gpu,
        prompt_len=prompt_len,
        output_len=output_len,
        n_gpus=n_gpus,
        dtype=dtype,
        **options,
    )
    first = run(concurrency)
    elapsed = full * first["total"] + (run(rest)["total"] if rest else 0.0)
    return {
        "waves": full + (rest > 0),
        "concurrency": concurrency,
        "elapsed": elapsed,
        "throughput": requests * output_len / elapsed,
        "ttft": first["ttft"],
        "tpot": first["tpot"],
    }


def max_batch(
    arch: ModelConfig,
    gpu,
    context_len: int = 2048,
    n_gpus: int = 1,
    dtype: str = "bf16",
    cache_dtype: str | None = None,
    compute_dtype: str | None = None,
) -> int:
    """The most requests of ``context_len`` tokens whose KV cache fits beside the weights
    (activations and the framework's own memory ignored); 0 if the weights alone do not fit."""
    _check(arch, gpu, n_gpus, "tensor", context_len=context_len)
    cache_dtype = _cache_format(dtype, cache_dtype, compute_dtype)
    return _concurrency(arch, gpu, context_len, n_gpus, dtype, cache_dtype, 1.0)


def _concurrency(arch, gpu, context_len, n_gpus, dtype, cache_dtype, memory_utilization):
    values = {
        **arch.sizes(),
        "bytes_per_number": bytes_per_number(dtype),
        "kv_bytes_per_number": bytes_per_number(cache_dtype),
        "gpu_memory": gpu.memory_bytes,
        "memory_utilization": memory_utilization,
        "n_gpus": n_gpus,
        "context_len": context_len,
    }
    return max(0, int(_compiled(latency.max_concurrency, arch).from_values(values)))


def compute_bound_batch(
    arch: ModelConfig,
    gpu,
    context_len: int = 2048,
    n_gpus: int = 1,
    dtype: str = "bf16",
    compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY,
    bandwidth_efficiency: float = DEFAULT_BANDWIDTH_EFFICIENCY,
    cache_dtype: str | None = None,
    compute_dtype: str | None = None,
    limit: int = 1 << 20,
) -> int | None:
    """The smallest batch at which a decode step's compute time reaches its memory time, or
    None if none up to ``limit`` does (the KV cache grows with the batch as fast as the
    FLOPs, so long contexts may never turn compute-bound)."""
    _check(arch, gpu, n_gpus, "tensor", context_len=context_len)
    values = _values(
        arch,
        gpu,
        dtype,
        n_gpus,
        compute_efficiency,
        bandwidth_efficiency,
        0.0,
        cache_dtype,
        compute_dtype,
    )
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
