"""Chapter 10 (parallelism): a decode step of Llama 3.1 70B split over H100 SXM GPUs.

The inputs are the chapter's: Llama 3.1 70B in bf16 on H100 SXM GPUs with 2,048 tokens of
context, timed on the ideal roofline (``ia.timing.IDEAL``, as the whole chapter) with the
library's message latency ``ia.timing.DEFAULT_LINK_LATENCY``, over NVLink unless an exercise
puts the GPUs on PCIe (the GPU's ``pcie_bandwidth``). Each exercise sets the GPUs, the batch and
the parallelism it asks about. Hints whose ratios depend on the model and the GPU are functions,
which the library calls when a check first needs them. The expert-parallel exercise is
DeepSeek-V3's, timed kernel by kernel as the chapter's section on it is (the library's default).
"""

from __future__ import annotations

import functools

import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, alpha
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import latency

MODEL, GPU, CONTEXT = "llama-3.1-70b", "h100-sxm", 2048
IDEAL = ia.timing.IDEAL
DEFAULTS = {
    "compute_efficiency": ia.timing.DEFAULT_COMPUTE_EFFICIENCY,
    "bandwidth_efficiency": ia.timing.DEFAULT_BANDWIDTH_EFFICIENCY,
}
DEFAULT_EFFICIENCIES = (
    "did you use the library's default efficiencies? The chapter times the ideal roofline "
    "(**ia.timing.IDEAL)"
)


def _scenario(batch: int, n_gpus: int, **options) -> ia.Scenario:
    """A decode step of ``batch`` requests at the chapter's context, on the ideal roofline."""
    options = {**IDEAL, **options}
    return ia.Scenario(
        MODEL, GPU, n_gpus=n_gpus, batch=batch, prompt_len=CONTEXT, output_len=1, **options
    )


# --- ex-par-pcie: eight H100 over PCIe, batch 1 and 64 ---------------------------------------

PCIE_GPUS = 8


def _communication_share(batch: int, link: str = "pcie", **options) -> float:
    """The share of a tensor-parallel decode step that is messages between the GPUs."""
    s = _scenario(batch, PCIE_GPUS, **options)
    at = {"context_len": CONTEXT}
    if link == "pcie":
        at["link_bandwidth"] = s.gpu.pcie_bandwidth
    talk = s.evaluate(latency.communication_time(s.model, B), **at)
    return talk / s.evaluate(latency.decode_step_time(s.model), **at)


def _pcie_hints(batch: int):
    def build():
        right = _communication_share(batch)
        return {
            _communication_share(batch, link="nvlink") / right: (
                "did you use NVLink's bandwidth? Here the GPUs talk over PCIe (pcie_bandwidth)"
            ),
            _communication_share(batch, link_latency=0.0) / right: (
                "did you count only the bytes? Each of the 4L(n - 1) messages of a step also "
                "waits the latency alpha"
            ),
            _communication_share(batch, **DEFAULTS) / right: DEFAULT_EFFICIENCIES,
        }

    return build


register(
    "10-parallelism",
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

# --- ex-par-alpha: the message latency at which talking takes as long as the roofline ---------

ALPHA_GPUS, ALPHA_BATCH = 4, 1


def _even_latency(**options) -> float:
    """alpha where the step's communication (linear in alpha) equals its roofline time."""
    s = _scenario(ALPHA_BATCH, ALPHA_GPUS, **options)
    talk = latency.communication_time(s.model, B)
    roof = s.evaluate(latency.decode_step_time(s.model) - talk, context_len=CONTEXT)
    per_second_of_alpha = s.evaluate(sympy.diff(talk, alpha))  # the messages of a step
    return (roof - s.evaluate(talk, link_latency=0.0)) / per_second_of_alpha


register(
    "10-parallelism",
    "ex-par-alpha",
    Part(
        "link_latency",
        _even_latency,
        unit="seconds",
        hints=(
            lambda: {
                2: "did you count both all-reduces of a layer, and 2(n - 1) messages in each?",
                _even_latency(**DEFAULTS) / _even_latency(): DEFAULT_EFFICIENCIES,
            }
        ),
    ),
)

# --- ex-par-pipeline: 32 requests in flight on eight H100, one tensor batch or a pipeline ------

PIPELINE_GPUS, PIPELINE_BATCH = 8, 32  # requests in flight, either way


def _batch(parallel: str) -> int:
    """One batch of all of them (tensor), or a micro-batch for each stage (pipeline)."""
    return PIPELINE_BATCH // (PIPELINE_GPUS if parallel == "pipeline" else 1)


def _step(parallel: str) -> float:
    m, g = ia.model(MODEL), ia.gpu(GPU)
    return ia.decode_step_time(
        m, g, _batch(parallel), CONTEXT, n_gpus=PIPELINE_GPUS, parallel=parallel, **IDEAL
    )


def _tokens_per_second(parallel: str) -> float:
    """Output tokens per second: a token for each request of each batch in flight, per step."""
    s = _scenario(_batch(parallel), PIPELINE_GPUS, parallel=parallel)
    in_flight = s.evaluate(latency.batches_in_flight(parallel))
    return in_flight * _batch(parallel) / _step(parallel)


PER_REQUEST = "did you count a token for each of the 32 requests of a step?"
register(
    "10-parallelism",
    "ex-par-pipeline",
    Part("tensor_time_per_token", lambda: _step("tensor"), unit="seconds"),
    Part("pipeline_time_per_token", lambda: _step("pipeline"), unit="seconds"),
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
    rows = ia.kernels(EXPERT_MODEL, gpu, PER_GPU * EXPERT_GPUS, CONTEXT, **work)
    talk = sum(r["time"] for r in rows if r["kernel"].startswith("all-to-all"))
    return talk / sum(r["time"] for r in rows)


ONE_WAY = "did you count both all-to-alls of a MoE layer, the dispatch and the combine?"
register(
    "10-parallelism",
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
