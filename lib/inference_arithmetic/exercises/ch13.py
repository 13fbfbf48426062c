"""Chapter 13 (reality check): the library's predictions against measured serving runs.

The inputs are the chapter's: the 20 measured vLLM runs of ``ia.measurements.serving_runs()``
(Llama 3.1 8B on one H100 SXM, Llama 3.3 70B on four), each predicted by
``ia.measurements.predict`` at the library's defaults unless an exercise changes one, and the
model of Chen's *Transformer Inference Arithmetic* (``CHEN_13B``, as the chapter builds it) on
two A100 40GB in fp16 at batch 1 and 512 tokens of context. A fit minimises the root-mean-square
of log(predicted / measured) over all the runs, as the chapter's calibration does.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import latency

# --- ex-reality-bandwidth-only: eta_m fitted alone, with eta_c = 1 and the default alpha ------


def _rms_log_error(bandwidth_efficiency: float) -> float:
    runs = ia.measurements.serving_runs()
    options = dict(compute_efficiency=1.0, bandwidth_efficiency=bandwidth_efficiency)
    options |= ia.timing.ROOFLINE  # the chapter's single roofline
    logs = [
        math.log(ia.measurements.predict(run, **options)["throughput"] / run.output_tokens_per_s)
        for run in runs
    ]
    return math.sqrt(np.mean(np.square(logs)))


@functools.cache
def _bandwidth_alone() -> float:
    """The best bandwidth efficiency, on a grid of 0.01 and then of 0.001 around its best."""
    coarse = np.round(np.arange(0.30, 0.951, 0.01), 2)
    best = coarse[np.argmin([_rms_log_error(e) for e in coarse])]
    fine = np.round(np.arange(best - 0.01, best + 0.0101, 0.001), 3)
    return float(fine[np.argmin([_rms_log_error(e) for e in fine])])


register(
    "13-reality-check",
    "ex-reality-bandwidth-only",
    Part(
        "bandwidth_efficiency",
        _bandwidth_alone,
        unit="fraction of the peak bandwidth",
        # A fit on a grid: the chapter's grid (steps of 0.05) lands on 0.50, a finer one on
        # 0.48; the error of the fit barely differs between the two.
        tolerance=0.05,
        hints=(
            lambda: {
                ia.timing.DEFAULT_BANDWIDTH_EFFICIENCY / _bandwidth_alone(): (
                    "that is the library's default, fitted together with the compute "
                    "efficiency; fit the bandwidth efficiency alone, with compute_efficiency=1"
                ),
            }
        ),
    ),
    written=("which runs does it miss worst? Why those?",),
)

# --- ex-reality-memory: the 8B model's largest batch with mu = 0.95 ----------------------------

SMALL, MEMORY_UTILIZATION = "llama-3.1-8b", 0.95


@functools.cache
def _memory_runs() -> tuple[dict, dict]:
    """The predictions of the 8B model's largest measured batch: default mu, then 0.95."""
    run = max(
        (r for r in ia.measurements.serving_runs() if r.model == SMALL), key=lambda r: r.batch
    )
    default = ia.measurements.predict(run, **ia.timing.ROOFLINE)
    mu = MEMORY_UTILIZATION
    return default, ia.measurements.predict(run, memory_utilization=mu, **ia.timing.ROOFLINE)


register(
    "13-reality-check",
    "ex-reality-memory",
    Part("throughput", lambda: _memory_runs()[1]["throughput"], unit="tokens per second"),
    Part("waves", lambda: _memory_runs()[1]["waves"], unit="waves"),
    Part(
        "speedup",
        lambda: _memory_runs()[1]["throughput"] / _memory_runs()[0]["throughput"],
        unit="times the throughput at the default memory utilization (1: no faster)",
    ),
)

# --- ex-reality-comm: the communication of Chen's 13B model on two A100 -----------------------

# The chapter's model of Chen (2022): 12 L D^2 weights, a GPT-2 vocabulary, tied embeddings.
CHEN_13B = dict(
    name="gpt-13b (Chen 2022)",
    vocab_size=50257,
    d_model=5120,
    n_layers=40,
    n_heads=40,
    d_ff=4 * 5120,
    ffn="classic",
    norm="layer",
    tied_embeddings=True,
    qkv_bias=True,
    out_bias=True,
    ffn_bias=True,
)
CHEN_GPU, CHEN_GPUS, CHEN_DTYPE, CHEN_CONTEXT = "a100-40gb", 2, "fp16", 512


@functools.cache
def _chen_step() -> tuple[float, float]:
    """Seconds of the communication of a decode step, and of the whole step."""
    arch = ia.ModelConfig(**CHEN_13B)
    workload = dict(batch=1, prompt_len=CHEN_CONTEXT, output_len=1)
    deployment = dict(n_gpus=CHEN_GPUS, dtype=CHEN_DTYPE, **ia.timing.ROOFLINE)
    s = ia.Scenario(arch, CHEN_GPU, **deployment, **workload)
    talk = s.evaluate(latency.communication_time(arch, B))
    step = ia.decode_step_time(arch, CHEN_GPU, batch=1, context_len=CHEN_CONTEXT, **deployment)
    return talk, step


register(
    "13-reality-check",
    "ex-reality-comm",
    Part(
        "communication_time",
        lambda: _chen_step()[0],
        unit="seconds",
        hints={0.5: "did you count both all-reduces of each layer?"},
    ),
    Part(
        "communication_share",
        lambda: _chen_step()[0] / _chen_step()[1],
        unit="fraction of the decode step",
    ),
    written=("Compare with what the post's profile found.",),
)
