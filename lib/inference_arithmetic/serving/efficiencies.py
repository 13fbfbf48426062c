"""What a step achieves: the efficiencies and fixed costs a scenario's step takes, each given,
measured on its GPU and engine, or, for chapter 08's single roofline, its fitted defaults.

>>> import inference_arithmetic as ia
>>> f = found_figures(ia.gpu("h100-sxm"), ia.engine("vllm"), "bf16", "bf16")
>>> 0 < f["compute_efficiency"] < 1, f["step_overhead"] == ia.engine("vllm").step_overhead
(True, True)
>>> roofline = found_figures(ia.gpu("h100-sxm"), ia.engine("vllm"), "bf16", "bf16", "roofline")
>>> roofline["compute_efficiency"], roofline["kernel_overhead"]  # fitted; no fixed cost
(0.4, 0.0)

The kernel model (``step="kernels"``) times each kernel at the rate the GPU achieves on it
(``GPU.achieved_figure``: its own measurement, else the registry's median) and adds the engine's
fixed costs; the single roofline takes one efficiency for the whole step's compute and one for
its memory traffic, fitted in chapter 13, and no fixed cost. A figure given to a ``Scenario``
replaces the found one (``Scenario.figure``).
"""

from __future__ import annotations

import functools

from inference_arithmetic.core.dtypes import dtype_name

__all__ = ["EFFICIENCIES", "OVERHEADS", "FIGURES", "WEIGHT_FIGURES", "found_figures"]
__all__ += ["DEFAULT_COMPUTE_EFFICIENCY", "DEFAULT_BANDWIDTH_EFFICIENCY"]
__all__ += ["DEFAULT_ATTENTION_EFFICIENCY"]


def _stream(dtype):
    """The achieved figure weights of ``dtype`` stream at (``GPU.achieved``)."""
    name = dtype_name(dtype)
    return "stream" if name in ("bf16", "fp16") else f"stream.{name}"


EFFICIENCIES = (
    "compute_efficiency",
    "bandwidth_efficiency",
    "attention_efficiency",
    "decode_attention_efficiency",
)
"""The fractions of a peak rate a step takes: compute, memory, a prompt's and a decode's
attention."""
OVERHEADS = ("kernel_overhead", "step_overhead", "request_overhead", "allreduce_latency")
"""The fixed costs a step takes, seconds: a kernel's launch, a step's and a request's
scheduling, an all-reduce's latency."""
FIGURES = (*EFFICIENCIES, *OVERHEADS)
"""The efficiencies and fixed costs a step takes (``Scenario.figure``): given, or found."""

# The single roofline's efficiencies (step="roofline"), fitted in chapter 13 on the 20 vLLM
# runs as the first approximation; the kernel model takes the GPU's measured kernels instead.
DEFAULT_COMPUTE_EFFICIENCY = 0.4
"""Fraction of the peak FLOP/s one roofline of a whole step reaches, averaged over a run
(``step="roofline"``; chapter 13's first fit)."""
DEFAULT_BANDWIDTH_EFFICIENCY = 0.6
"""Fraction of the peak memory bandwidth one roofline of a whole decode step reaches
(``step="roofline"``; chapter 13's first fit)."""
DEFAULT_ATTENTION_EFFICIENCY = round(620.73 / 989, 2)
"""Fraction of the peak FLOP/s attention reaches where the GPU has no measurement of its
own: FlashAttention-3's forward pass on an H100 SXM, 16,384 tokens, head size 128, 620.73
TFLOP/s of 989 (PyTorch's benchmark suite, pytorch/benchmark PR 2391); its paper reports up
to 75%, FlashAttention-2's 50-73% on an A100. Taken from kernel benchmarks, never fitted to
serving runs (chapter 13)."""

WEIGHT_FIGURES = ("bandwidth_efficiency",)
"""The found figures that depend on the weights' format (the rest on the compute format)."""


def found_figures(g, e, compute_dtype: str, dtype: str, step: str = "kernels") -> dict:
    """The efficiencies and fixed costs a step takes on GPU ``g`` with engine ``e`` unless
    given, keyed by their symbols' names: for the kernel model, the GPU's measured kernels
    (``GPU.achieved_figure``, in the compute format; the weights' stream in theirs,
    ``WEIGHT_FIGURES``) and the engine's properties; for the single roofline, its fitted
    efficiencies and no fixed costs."""
    return dict(_found_figures(g, e, compute_dtype, dtype, step))


# Every scenario finds its figures, and each achieved figure a GPU has not measured is a
# median over the registry: kept per GPU, engine and formats (frozen, so hashable).
@functools.lru_cache(maxsize=256)
def _found_figures(g, e, compute_dtype: str, dtype: str, step: str) -> dict:
    nvlink = (g.link_domain or 1) > 1
    reduce = e.allreduce if nvlink else "nccl"  # one-shot kernels need a peer link
    found = {
        "compute_efficiency": g.achieved_figure(f"matmul.{compute_dtype}"),
        "bandwidth_efficiency": g.achieved_figure(_stream(dtype)),
        "attention_efficiency": g.achieved_figure(f"prompt_attention.{compute_dtype}"),
        "decode_attention_efficiency": g.achieved_figure(f"decode_attention.{compute_dtype}"),
        "kernel_overhead": e.kernel_overhead,
        "step_overhead": e.step_overhead,
        "request_overhead": e.request_overhead,
        "host_op_cost": e.host_op_cost,
        "allreduce_latency": g.achieved_figure(f"allreduce_latency.{reduce}"),
        "allreduce_bandwidth": g.achieved_figure(f"allreduce_bandwidth.{reduce}"),
        "ring_latency": g.achieved_figure("allreduce_latency.nccl"),
        "ring_bandwidth": g.achieved_figure("allreduce_bandwidth.nccl"),
        "matmul_half_rows": g.achieved_figure(f"matmul_half_rows.{compute_dtype}"),
        "grouped_matmul": g.achieved_figure("grouped_matmul"),
        "attention_half_len": g.achieved_figure("attention_half_len"),
        "attention_half_head": g.achieved_figure("attention_half_head"),
        "decode_attention_latency": g.achieved_figure("decode_attention_latency"),
        "kv_reread_hits": g.achieved_figure("kv_reread_hits"),
    }
    if step == "roofline":  # chapter 08's single roofline: no kernel, no fixed cost
        found.update(
            compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY,
            bandwidth_efficiency=DEFAULT_BANDWIDTH_EFFICIENCY,
            attention_efficiency=DEFAULT_ATTENTION_EFFICIENCY,
            decode_attention_efficiency=DEFAULT_BANDWIDTH_EFFICIENCY,
            kernel_overhead=0.0,
            step_overhead=0.0,
            request_overhead=0.0,
            host_op_cost=0.0,
            allreduce_latency=0.0,
        )
    return found
