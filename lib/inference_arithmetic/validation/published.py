"""The validation set: published measurements of real serving runs, never fitted on.

>>> rows, left = validation_set()
>>> len(rows) + len(left) == len(published_rows())
True
>>> sorted({m.split for m in rows})
['validation']

``data/published.csv`` holds every number as its source prints it, one measured number a row,
with the source's own names for the model, the GPU, the engine and the formats;
``data/published_sources.csv`` says where each source is and how it was read (the data README
tells the methodology of each). ``validation_set`` turns each row into a ``Measurement`` in the
registry's names, or, where the library cannot yet time it (a GPU, model or weight format the
registries lack, a setup the source does not state), sets it aside with the reason. Chapter 13
reports the error on every row it can time: the book's headline.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from importlib import resources

from inference_arithmetic.core.dtypes import compute_format, fastest_wide
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.hardware.gpus import gpu_names
from inference_arithmetic.models.config import AUTO, model_names, weight_formats
from inference_arithmetic.validation.measurements import Measurement

__all__ = [
    "GPUS",
    "MODELS",
    "ENGINES",
    "LLAMA_CPP",
    "LAYOUTS",
    "VLLM_V1",
    "batch_settings",
    "SOURCES_2026",
    "joined_late",
    "published_rows",
    "validation_set",
    "sources",
]

SOURCES_2026 = (
    "GPUSTACK_MOE",
    "MILLSTONE",
    "BENHAMM_B200",
    "LMSYS_NVL72",
    "SGLANG_COOKBOOK",
)
"""The sources gathered for 2026's serving (issue 35: Blackwell GPUs, FP4 weights, MoE
models), reported group by group (``residuals.bands``)."""


def joined_late(m: Measurement) -> bool:
    """Whether the run ``m`` joined the set after its bar (15% on the median) was set: the runs
    of llama.cpp's 4-bit files, of Llama 2 13B and Qwen3 14B, and of ``SOURCES_2026``. They are
    reported (chapter 13), not held to the bar, and were never fitted on."""
    return (
        m.dtype == "q4_k_m" or m.model in ("llama-2-13b", "qwen3-14b") or m.source in SOURCES_2026
    )


GPUS = {
    "H100-SXM5-80GB": "h100-sxm",
    "H100-80GB (form factor not stated)": "h100-sxm",
    "H100-PCIe-80GB": "h100-pcie",
    "H200-SXM-141GB": "h200",
    "H200 (form factor not stated)": "h200",
    "A100-SXM4-40GB": "a100-40gb",
    "A100-SXM4-80GB": "a100-80gb",
    "A100-80GB (form factor not stated)": "a100-80gb",
    "A100-PCIe-80GB": "a100-pcie-80gb",
    "A10G-24GB": "a10g",
    "L40S-48GB": "l40s",
    "GH200": "gh200",
    "RTX-4090-24GB": "rtx-4090",
    "RTX-3090-24GB": "rtx-3090",
    "MI300X-192GB": "mi300x",
    "Apple M1 Max (32-core GPU, 64GB)": "apple-m1-max",
    "Apple M2 Ultra (76-core GPU, 192GB)": "apple-m2-ultra",
    "Apple M3 Max (40-core GPU, 64GB)": "apple-m3-max",
    "RTX-PRO-6000-Blackwell-96GB": "rtx-pro-6000",
    "B200-183GB (8x, NVSwitch)": "b200",
    "GB200 NVL72": "gb200",
    "GB300 NVL72": "gb300",
}
"""The sources' GPU names, in the registry's. Where a source does not state the form factor,
the datacenter SXM part is taken (the rows say so in their note)."""

MODELS = {
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Llama-2-13b-hf": "llama-2-13b",
    # Llama 3 and 3.1 share every size (the later one only stretches RoPE to 128k positions).
    "meta-llama/Meta-Llama-3-8B": "llama-3.1-8b",
    'meta-llama/Meta-Llama-3-8B (page says "llama-3.1 8B")': "llama-3.1-8b",
    "meta-llama/Meta-Llama-3-70B": "llama-3.1-70b",
    'meta-llama/Meta-Llama-3-70B-Instruct (page says "llama-3 70B")': "llama-3.1-70b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3.3-70b",
    "meta-llama/Llama-3.1-405B": "llama-3.1-405b",
    "meta-llama/Llama-3.1-405B-FP8": "llama-3.1-405b",
    "meta-llama/Llama-3.1-405B-Instruct": "llama-3.1-405b",
    "amd/Llama-3.1-405B-Instruct-FP8-KV": "llama-3.1-405b",
    "EleutherAI/gpt-j-6b": "gpt-j-6b",
    "mistralai/Mistral-7B-v0.1": "mistral-7b-v0.1",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    "Qwen/Qwen3-14B": "qwen3-14b",
    "Qwen/Qwen3-14B-FP8": "qwen3-14b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    # The 2507 release and its FP8 checkpoint keep the architecture (a longer RoPE window).
    "Qwen/Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": "qwen3-235b-a22b",
    # DeepSeek-R1 (and its 0528 update) is DeepSeek-V3's architecture, trained further.
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-v3",
    "nvidia/DeepSeek-R1-0528-FP4": "deepseek-v3",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-v3",
    "deepseek-ai/DeepSeek-V3 / R1": "deepseek-v3",
}
"""The sources' model names, in the registry's (fine-tunes and checkpoints of one
architecture are that architecture)."""

ENGINES = {
    "vLLM": "vllm@0.7",
    "SGLang": "sglang@0.5",
    "TGI": "tgi@1.0",
    "LMDeploy (TurboMind)": "lmdeploy@0.1",
    "llama.cpp": "llama.cpp@b2795",
    "TensorRT-LLM": "tensorrt-llm@0.9",
    "NVIDIA NIM (llama-3.3-70b-instruct container)": "tensorrt-llm@0.9",
}
"""The sources' engines, in the registry's profiles (``_engine`` picks the version a row's
engine_version, GPU and mode call for: vLLM 0.10 and 0.11, vLLM and TGI on ROCm, in-flight
batching)."""

ROCM = {"vllm@0.7": "vllm-rocm@0.6", "tgi@1.0": "tgi@2.3"}
"""The profile of each engine's ROCm build that the MI300X rows ran: vLLM 0.6.1 and 0.6.4,
and TGI's build sha-11d7af7 (2.3.1-dev0)."""

VLLM_V1 = {(0, 10): "vllm@0.11", (0, 11): "vllm@0.11", (0, 19): "vllm@0.11"}
"""The vLLM releases whose rows the V1 profile times, by (major, minor): those whose batch
defaults ``vllm@0.11`` states (its ``large_gpu`` batch, whose source says why 0.19's are
0.10-0.11's); the 0.19 rows (VLLM_FP8KV) name V1's FlashAttention-3 backend. Timed as V0's
512-token steps, their 20,000-token prompts took 40 steps each, not 3. A vLLM row of another
release, or of none stated, keeps ``vllm@0.7``: the rows of 2024 (0.5-0.6) ran the V0 engine
it was fitted for, and the few "not stated" of 2026 name no release."""

_MODES = {
    "static_batch": "waves",
    "request_rate": "waves",
    "concurrency": "closed",
    "llama_bench": "single",
    "single_request": "single",
}

_FORMATS = {
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8": "fp8",
    "fp8 (block-wise, HF checkpoint)": "fp8-block",  # Qwen3-14B-FP8: weight_block_size 128 x 128
    "GGUF F16": "fp16",
    "GGUF Q4_K_M": "q4_k_m",
    "f16 (llama-bench default)": "fp16",
    "auto (bf16)": "bf16",
    # gpt-oss as released: its experts in MXFP4, the rest in bf16, as the registry's config
    # says (``models.config.weight_formats``): the checkpoint's own formats, "auto".
    "mxfp4 (MoE experts; attention and the rest bf16, as released)": AUTO,
    # NVIDIA's ModelOpt checkpoints: the experts in NVFP4 (most of the weights), the rest fp8;
    # timed as NVFP4 throughout, the registry holding no such mixture.
    "nvfp4": "nvfp4",
}

LAYOUTS = {
    "": None,
    "expert": "expert",
    "expert-dp": "expert-dp",
}
"""The sources' ``layout`` (blank: the tensor and pipeline columns say it all), in the
``Scenario``'s ``parallel``; a layout missing here (data-parallel attention with the experts
split by tensor parallelism, or prefill and decode disaggregated over several nodes) is one the
``Measurement`` of a row cannot time, and the row is set aside saying so."""

LLAMA_CPP = {"compute_dtype": "fp16", "memory_utilization": 1.0}
"""How llama.cpp's CUDA and Metal builds of May 2024 ran the llama-bench rows, in the
``Measurement``'s settings (the cache follows the products: fp16, llama-bench's f16 default).

``compute_dtype``: ggml multiplies in fp16 whatever the weights' format. In
``ggml_cuda_mul_mat`` (ggml-cuda.cu of ggerganov/llama.cpp, commit 005de593, the same dispatch
as the builds 2795-2843 of the rows) a single token (tg) takes ``mul_mat_vec_q``, which reads
the Q4_K blocks as stored and dots them with the activations quantized to q8_1: the 4.84 bits
a weight the format registry gives (``dtypes.FORMATS``). A prompt of more than
``MMQ_MAX_BATCH_SIZE`` (32) tokens on a GPU with tensor cores takes
``ggml_cuda_op_mul_mat_cublas``: each Q4_K matrix unpacked into an fp16 copy (``to_fp16_cuda``),
then ``cublasGemmEx`` on fp16 inputs (``CUBLAS_COMPUTE_16F``); on a Mac, ``kernel_mul_mm`` of
ggml-metal.metal unpacks each weight tile into half-precision threadgroup memory
(``dequantize_func``, ``simdgroup_half8x8``) and sums in fp32. So both run at the fp16 rate: the
registry's bf16 for GGUF types would be wrong here, and the M1 and M2 have no bf16 rate.

``memory_utilization``: llama.cpp reserves no share of the memory, as vLLM's 0.9 does: it
allocates the weights, the cache of the test's tokens and a compute buffer, and fails only when
the driver has no more. Its limit is the memory the driver reports, whole."""


def _version(text: str) -> tuple[int, int] | None:
    found = re.match(r"\s*v?(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def batch_settings(row) -> dict:
    """The ``token_budget`` a vLLM run of ``row`` served with where its serve command states
    it (``--max-num-batched-tokens``); an empty mapping where it does not: the engine
    profile's batch for the GPU (``Engine.batch``: ``vllm@0.11``'s defaults by GPU)."""
    if not _engine(row).startswith("vllm"):
        return {}
    stated = re.search(r"--max-num-batched-tokens (\d+)", row["notes"])
    return {"token_budget": int(stated.group(1))} if stated else {}


def _read(name):
    folder = resources.files("inference_arithmetic.validation") / "data"
    return list(csv.DictReader(io.StringIO((folder / name).read_text())))


@functools.cache
def published_rows() -> tuple[dict, ...]:
    """Every row of ``data/published.csv``, as its source prints it."""
    return tuple(_read("published.csv"))


@functools.cache
def sources() -> dict[str, dict]:
    """Each source of the validation set by its id: title, where it is, how it was read."""
    return {row["source_id"]: row for row in _read("published_sources.csv")}


def _number(text: str) -> float | None:
    """The number a length or count cell states, first (``'~20000 (+/-15%)'`` is 20000)."""
    found = re.match(r"\s*~?\s*(\d+(?:\.\d+)?)", text)
    return float(found.group(1)) if found else None


def _format(text: str) -> str | None:
    """The registry dtype of a source's weights or cache format, or None if it has none."""
    if text in _FORMATS:
        return _FORMATS[text]
    return _FORMATS.get(text.split(" ")[0])


def _engine(row) -> str:
    """The profile of ``row``'s engine, in its version (``ENGINES``, ``VLLM_V1``)."""
    name = ENGINES[row["engine"]]
    if row["gpu"].startswith("MI300X") and name in ROCM:
        return ROCM[name]
    if name == "vllm@0.7":
        return VLLM_V1.get(_version(row["engine_version"]), name)
    if name == "tensorrt-llm@0.9" and row["mode"] != "static_batch":
        # in-flight batching (trtllm-serve, NIM), not gptSessionBenchmark
        return "tensorrt-llm-serve@1.2"
    return name


_LAYOUT_WHY = {
    "dp-attention": "attention data-parallel, experts split by tensor parallelism",
    "disaggregated+expert-dp": "prefill and decode disaggregated over several nodes",
}


def _weight_only(gpu: str, arch: str, dtype: str) -> str | None:
    """The format the products multiply in where the GPU has no rate for the format of the
    weights of ``arch``'s layers (``models.config.weight_formats``; FP8 on an A100, FP4 before
    Blackwell): the engines run such checkpoints weight-only, the
    weights widened to the GPU's fastest format of 16 bits or more (vLLM's Marlin kernels for
    FP8 and MXFP4; TensorRT-LLM's "Default quantization for MXFP4 checkpoints on Hopper is
    W4A16_MXFP4", docs/source/blogs/tech_blog/blog9_Deploying_GPT_OSS_on_TRTLLM.md). None
    where the GPU has the rate: the ``Scenario``'s own choice."""
    rates = registry_gpu(gpu).peak_flop_rate
    if compute_format(weight_formats(arch, dtype)["layers"]) in rates:
        return None
    return fastest_wide(rates)


def _measurement(row) -> Measurement:
    """The row as a ``Measurement`` in the registry's names; ``ValueError`` saying why not."""
    layout = row.get("layout", "")
    if layout not in LAYOUTS:
        raise ValueError(f"the library times no {layout} layout ({_LAYOUT_WHY[layout]})")
    gpu = GPUS.get(row["gpu"])
    if gpu not in gpu_names():
        raise ValueError(f"no registry GPU for {row['gpu']!r}")
    arch = MODELS.get(row["model"])
    if arch not in model_names():
        raise ValueError(f"no registry model for {row['model']!r}")
    dtype = _format(row["weights_dtype"])
    if dtype is None:
        raise ValueError(f"no registry format for the weights' {row['weights_dtype']!r}")
    mode = _MODES.get(row["mode"])
    if mode is None:
        raise ValueError(f"the source does not state the batch ({row['mode']})")
    tp, pp = (_number(row[k]) for k in ("tensor_parallel", "pipeline_parallel"))
    if tp is None or pp is None:
        raise ValueError("the source does not state the parallelism")
    batch = _number(row["batch_or_concurrency"])
    tokens = [_number(row[k]) for k in ("input_tokens", "output_tokens")]
    if batch is None or None in tokens:
        raise ValueError("the source does not state the batch or the lengths")
    prompt, output = (max(round(t), 1) for t in tokens)  # llama-bench's tg: from one token
    if row["input_tokens"].strip() == "0":
        output += 1  # tg N decodes N tokens after the first
    cache = _format(row["kv_dtype"])  # None where not stated: the products' format
    requests = None
    if mode == "closed":
        requests = max(4 * round(batch), 100)  # enough to pass the warm-up (not stated)
    engine = LLAMA_CPP if row["engine"] == "llama.cpp" else {}
    if not engine:
        engine = {"compute_dtype": _weight_only(gpu, arch, dtype)}
    note = row["notes"]
    if "not stated" in row["gpu"]:
        note = f"form factor assumed SXM; {note}"
    return Measurement(
        row["source_id"],
        _engine(row),
        row["engine_version"],
        gpu,
        int(row["n_gpus"]),
        arch,
        dtype,
        round(batch),
        prompt,
        output,
        row["metric"],
        float(row["value"]),
        mode=mode,
        parallel=LAYOUTS[layout] or ("pipeline" if pp > 1 else "tensor"),
        cache_dtype=cache,
        split="validation",
        requests=requests,
        note=note,
        **engine,
        **batch_settings(row),
    )


@functools.cache
def validation_set() -> tuple[tuple[Measurement, ...], tuple[tuple[dict, str], ...]]:
    """The rows the library can time, each a ``Measurement``, and the rest with the reason each
    is set aside (a registry the library lacks, a setup the source leaves unstated)."""
    rows, left = [], []
    for row in published_rows():
        try:
            rows.append(_measurement(row))
        except ValueError as why:
            left.append((row, str(why)))
    return tuple(rows), tuple(left)
