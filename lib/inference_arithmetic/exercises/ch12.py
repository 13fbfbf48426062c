"""Chapter 12 (parallelism): a decode step of Llama 3.1 70B split over H100 SXM GPUs.

The inputs are the chapter's: Llama 3.1 70B in bf16 on H100 SXM GPUs with 2,048 tokens of
context, each step timed as the library does by default (kernel by kernel, with the default
engine: ``ia.decode_step_time``, ``ia.kernels``), over NVLink unless an exercise puts the GPUs
on PCIe (the GPU's ``pcie_bandwidth``, one GPU to a link domain, as the registry's PCIe cards).
Each exercise sets the GPUs, the batch and the parallelism it asks about. Hints whose ratios
depend on the model and the GPU are functions, which the library calls when a check first needs
them. The expert-parallel exercise is DeepSeek-V3's.
"""

from __future__ import annotations

import dataclasses
import functools

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import latency

MODEL, GPU, CONTEXT = "llama-3.1-70b", "h100-sxm", 2048
ROOFLINE = (
    "did you time the step with chapter 08's single roofline (step='roofline')? The chapter "
    "times it kernel by kernel, the library's default"
)


def _pcie_gpu() -> ia.GPU:
    """The H100 without NVLink: its link is PCIe, and each GPU is a link domain of its own."""
    g = ia.gpu(GPU)
    return dataclasses.replace(g, interconnect_bandwidth=g.pcie_bandwidth, link_domain=1)


def _talk(batch: int, n_gpus: int, gpu=GPU, **options) -> tuple[float, float, int]:
    """A tensor-parallel decode step's all-reduces (seconds), the whole step, and how many."""
    rows = ia.kernels(MODEL, gpu, batch=batch, context_len=CONTEXT, n_gpus=n_gpus, **options)
    reduces = [row for row in rows if row["kind"] == "collective"]
    talk = sum(row["time"] for row in reduces)
    return talk, sum(row["time"] for row in rows), sum(row["count"] for row in reduces)


# --- ex-par-pcie: eight H100 over PCIe, batch 1 and 64 ---------------------------------------

PCIE_GPUS = 8


def _communication_share(batch: int, link: str = "pcie", latency: bool = True, **opts) -> float:
    """The share of a tensor-parallel decode step that is messages between the GPUs."""
    gpu = _pcie_gpu() if link == "pcie" else GPU
    talk, total, count = _talk(batch, PCIE_GPUS, gpu, **opts)
    if not latency:  # the bytes alone: without NCCL's latency, once an all-reduce
        waited = count * ia.Scenario(MODEL, gpu, n_gpus=PCIE_GPUS).figure("ring_latency")
        talk, total = talk - waited, total - waited
    return talk / total


def _roofline_share(batch: int) -> float:
    """The same share with chapter 08's single roofline: the ring at the library's alpha."""
    s = ia.Scenario(MODEL, _pcie_gpu(), n_gpus=PCIE_GPUS, batch=batch, step="roofline")
    talk = s.evaluate(latency.communication_time(s.model, B), context_len=CONTEXT)
    return talk / s.evaluate(latency.decode_step_time(s.model), context_len=CONTEXT)


def _pcie_hints(batch: int):
    def build():
        right = _communication_share(batch)
        return {
            _communication_share(batch, link="nvlink") / right: (
                "did you keep NVLink? Here the GPUs talk over PCIe (pcie_bandwidth), one to a "
                "link domain, so the engine falls back on NCCL's ring"
            ),
            _communication_share(batch, latency=False) / right: (
                "did you count only the bytes? Each all-reduce also waits NCCL's latency"
            ),
            _roofline_share(batch) / right: ROOFLINE,
        }

    return build


register(
    "12-parallelism",
    "ex-par-pcie",
    *(
        Part(
            f"comm_share_batch_{batch}",
            functools.partial(_communication_share, batch),
            unit="fraction of the decode step",
            hints=_pcie_hints(batch),
        )
        for batch in (1, 64)
    ),
)

# --- ex-par-alpha: the all-reduce latency at which talking takes as long as the rest ----------

ALPHA_GPUS, ALPHA_BATCH = 4, 1


def _even_latency(messages: int = 1) -> float:
    """alpha_ar where the step's one-shot all-reduces (linear in it, ``messages`` latencies
    each) take as long as the rest of the step."""
    s = ia.Scenario(MODEL, GPU, n_gpus=ALPHA_GPUS, batch=ALPHA_BATCH, prompt_len=CONTEXT)
    talk, total, count = _talk(ALPHA_BATCH, ALPHA_GPUS)  # at batch 1, the one-shot kernel's
    rest, moving = total - talk, talk - count * s.figure("allreduce_latency")
    return (rest - moving) / (count * messages)


register(
    "12-parallelism",
    "ex-par-alpha",
    Part(
        "allreduce_latency",
        _even_latency,
        unit="seconds",
        hints=(
            lambda: {
                2: "did you count both all-reduces of a layer?",
                _even_latency(2 * (ALPHA_GPUS - 1)) / _even_latency(): (
                    "did you count the ring's 2(n - 1) messages? The one-shot kernel waits its "
                    "latency once an all-reduce"
                ),
            }
        ),
    ),
)

# --- ex-par-pipeline: 32 requests in flight on eight H100, one tensor batch or a pipeline ------

PIPELINE_GPUS, PIPELINE_BATCH = 8, 32  # requests in flight, either way


def _batch(parallel: str) -> int:
    """One batch of all of them (tensor), or a micro-batch for each stage (pipeline)."""
    return PIPELINE_BATCH // (PIPELINE_GPUS if parallel == "pipeline" else 1)


def _step(parallel: str, **options) -> float:
    m, g = ia.model(MODEL), ia.gpu(GPU)
    batch = _batch(parallel)
    return ia.decode_step_time(
        m, g, batch=batch, context_len=CONTEXT, n_gpus=PIPELINE_GPUS, parallel=parallel, **options
    )


def _tokens_per_second(parallel: str) -> float:
    """Output tokens per second: a token for each request of each batch in flight, per step."""
    return PIPELINE_BATCH / _step(parallel)


PER_REQUEST = "did you count a token for each of the 32 requests of a step?"
register(
    "12-parallelism",
    "ex-par-pipeline",
    Part(
        "tensor_time_per_token",
        lambda: _step("tensor"),
        unit="seconds",
        hints=lambda: {_step("tensor", step="roofline") / _step("tensor"): ROOFLINE},
    ),
    Part(
        "pipeline_time_per_token",
        lambda: _step("pipeline"),
        unit="seconds",
        hints=lambda: {_step("pipeline", step="roofline") / _step("pipeline"): ROOFLINE},
    ),
    Part(
        "tensor_tokens_per_second",
        lambda: _tokens_per_second("tensor"),
        unit="tokens per second",
        hints={
            1 / PIPELINE_BATCH: PER_REQUEST,
            PIPELINE_GPUS: "a tensor-parallel group works on one batch at a time, not eight",
        },
    ),
    Part(
        "pipeline_tokens_per_second",
        lambda: _tokens_per_second("pipeline"),
        unit="tokens per second",
        hints={
            1 / PIPELINE_GPUS: "did you count the eight micro-batches in flight, one per stage?",
            PIPELINE_GPUS / PIPELINE_BATCH: "did you count a token for each of the 4 requests "
            "of a micro-batch?",
        },
    ),
)


# --- ex-par-experts: DeepSeek-V3's experts over 64 GPUs, on H200 boards or in one NVL72 rack ---

EXPERT_MODEL, EXPERT_GPUS, PER_GPU = "deepseek-v3", 64, 64  # requests decoding on each GPU


def _all_to_all_share(gpu: str) -> float:
    """The share of a decode step, experts spread and attention data-parallel, that is the
    all-to-alls of its MoE layers (``ia.kernels``' rows)."""
    work = dict(n_gpus=EXPERT_GPUS, parallel="expert-dp")
    rows = ia.kernels(EXPERT_MODEL, gpu, batch=PER_GPU * EXPERT_GPUS, context_len=CONTEXT, **work)
    talk = sum(r["time"] for r in rows if r["kernel"].startswith("all-to-all"))
    return talk / sum(r["time"] for r in rows)


ONE_WAY = "did you count both all-to-alls of a MoE layer, the dispatch and the combine?"
register(
    "12-parallelism",
    "ex-par-experts",
    *(
        Part(
            f"{gpu}_all_to_all_share",
            functools.partial(_all_to_all_share, gpu),
            unit="fraction of the decode step",
            hints={0.5: ONE_WAY},
        )
        for gpu in ("h200", "gb200")
    ),
)
