"""Serving engines: what a software stack's kernels do, each property with its source.

>>> from inference_arithmetic.hardware.gpus import gpu
>>> e = engine("vllm")  # a family alone: its newest version
>>> e.name, e.kv_shared, e.allreduce
('vllm@0.11', True, 'custom')
>>> engine_versions("vllm")
['vllm@0.7', 'vllm@0.11']
>>> e.batch(gpu("h100-sxm")), e.batch(gpu("a100-80gb"))  # vLLM 0.11's defaults by GPU
({'token_budget': 8192, 'max_num_seqs': 1024}, {'token_budget': 2048, 'max_num_seqs': 256})
>>> engine("vlm@0.7")
Traceback (most recent call last):
...
inference_arithmetic.core.numeric.UnknownName: unknown engine 'vlm@0.7'; close matches: vllm@0.7...

Every profile is named ``family@version``: the engine's project and the release whose
defaults and kernels it describes (``vllm@0.7`` is the vLLM of the fit set's runs of March
2025, ``vllm@0.11`` the V1 engine of vLLM 0.10 and 0.11). A family's name alone means its
newest version, so ``engine="vllm"`` follows the newest profile the library ships.

The kernel-level step model (``formulas.kernels``) takes the GPU's achieved figures (its
kernels' measured rates, ``GPU.achieved``) and an engine's properties: whether its decode
attention reads each KV head once for its query group (``kv_shared``), whether its prompt
attention is one fused kernel (``flash_attention``), its fixed cost per
kernel (``kernel_overhead``: a launch, from a CUDA graph or not, and its ramp), its fixed cost
per step (``step_overhead``: scheduling, sampling, the host's synchronisation) and per request
in a step (``request_overhead``: the host's work for each sequence it schedules), which steps
it runs op by op rather than from a CUDA graph (``eager``) and the host's time to dispatch and
launch each kernel of such a step (``host_op_cost``), which
all-reduce it uses for small messages (``allreduce``: its own one-shot kernels, ``"custom"``,
or ``"nccl"``), and how it batches (``batching``, ``token_budget``, ``max_num_seqs``, and
``large_gpu``: the batch it takes on a large GPU where its defaults depend on the GPU). A
property measured by a kernel benchmark cites it; one fitted on the fit set (chapter 13) says
so in ``fitted``, and its source names the fit.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from inference_arithmetic.core.errors import ArgumentError
from inference_arithmetic.core.registry import entries, lookup

__all__ = [
    "Engine",
    "LargeGPU",
    "engine",
    "engine_names",
    "engine_versions",
    "family",
    "ALLREDUCE",
    "BATCHING",
    "EAGER",
    "PROPERTIES",
]

BATCHING = ("continuous", "static")
"""How an engine runs requests sent at once: ``continuous``, admitting what its memory and
``max_num_seqs`` allow and prefilling in chunks of its ``token_budget`` while it decodes the
others (vLLM, SGLang); ``static``, the whole batch's prefill, then its decode steps (a
static-batch benchmark such as TensorRT-LLM's gptSessionBenchmark)."""

ALLREDUCE = ("custom", "nccl")
"""The all-reduce an engine uses for small messages: its own one-shot kernel (vLLM's and
TensorRT-LLM's custom all-reduce over NVLink) or NCCL's."""

EAGER = ("none", "prefill", "all")
"""Which steps an engine runs op by op, each operator dispatched and launched by the host
(PyTorch eager), rather than replayed from a captured CUDA graph: ``none`` (every step from a
graph, or a C++ runtime that launches without Python), ``prefill`` (the steps with prompt
tokens; steps of decodes alone from graphs: vLLM's V0 engine, SGLang), ``all`` (no graph:
TGI 1.0)."""

PROPERTIES = (
    "kv_shared",
    "flash_attention",
    "kernel_overhead",
    "step_overhead",
    "request_overhead",
    "eager",
    "host_op_cost",
    "allreduce",
    "batching",
    "token_budget",
    "max_num_seqs",
    "large_gpu",
)
"""The properties every engine states, each with a source (``large_gpu`` where it has one)."""


@dataclass(frozen=True)
class LargeGPU:
    """The batch an engine takes by default on a large GPU: one of ``memory`` bytes or more
    whose name contains none of ``excluded`` (vLLM 0.10-0.11: 70 GiB, not an A100).

    >>> LargeGPU(memory=70 * 2**30, excluded=("a100",), token_budget=8192, max_num_seqs=1024)
    LargeGPU(memory=75161927680, excluded=('a100',), token_budget=8192, max_num_seqs=1024)
    """

    memory: int
    excluded: tuple[str, ...]
    token_budget: int
    max_num_seqs: int

    def __post_init__(self):
        object.__setattr__(self, "excluded", tuple(self.excluded))
        if not all(isinstance(name, str) and name for name in self.excluded):
            raise ArgumentError(f"large_gpu: excluded must be GPU names, got {self.excluded}")
        for name in ("memory", "token_budget", "max_num_seqs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentError(f"large_gpu: {name} must be a whole number from 1 up")

    def holds(self, gpu) -> bool:
        """Whether ``gpu`` (a ``GPU``) is large: its memory (as its driver reports it, where
        known, as vLLM reads it) at least ``memory``, its name none of ``excluded``."""
        memory = gpu.usable_memory_bytes or gpu.memory_bytes
        return memory >= self.memory and not any(n in gpu.name for n in self.excluded)


@dataclass(frozen=True)
class Engine:
    """One serving engine's kernel properties (module docstring), each with its source."""

    name: str
    full_name: str
    kv_shared: bool
    flash_attention: bool
    kernel_overhead: float
    step_overhead: float
    request_overhead: float
    eager: str
    host_op_cost: float
    allreduce: str
    batching: str
    token_budget: int | None = None
    max_num_seqs: int | None = None
    large_gpu: LargeGPU | None = None
    fitted: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    notes: str = field(default="", compare=False)

    def __post_init__(self):
        for name in ("name", "full_name"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ArgumentError(f"engine {self.name!r}: {name} must be a non-empty string")
        for name in ("kv_shared", "flash_attention"):
            if not isinstance(getattr(self, name), bool):
                raise ArgumentError(f"{self.name}: {name} must be true or false")
        for name in ("kernel_overhead", "step_overhead", "request_overhead", "host_op_cost"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ArgumentError(f"{self.name}: {name} must be a number of seconds")
            if not math.isfinite(value) or not 0 <= value < 1:
                raise ArgumentError(f"{self.name}: {name} must be from 0 to 1 seconds, got {value}")
        if self.eager not in EAGER:
            raise ArgumentError(f"{self.name}: eager must be one of {EAGER}")
        if self.allreduce not in ALLREDUCE:
            raise ArgumentError(f"{self.name}: allreduce must be one of {ALLREDUCE}")
        if self.batching not in BATCHING:
            raise ArgumentError(f"{self.name}: batching must be one of {BATCHING}")
        for name in ("token_budget", "max_num_seqs"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ArgumentError(f"{self.name}: {name} must be a whole number or null")
            if value is not None and value < 1:
                raise ArgumentError(f"{self.name}: {name} must be from 1 up")
        if isinstance(self.large_gpu, Mapping):  # as a profile's JSON states it
            object.__setattr__(self, "large_gpu", LargeGPU(**self.large_gpu))
        if self.large_gpu is not None and not isinstance(self.large_gpu, LargeGPU):
            raise ArgumentError(f"{self.name}: large_gpu must be a LargeGPU, a mapping or null")
        if self.large_gpu is not None and self.batching != "continuous":
            raise ArgumentError(f"{self.name}: only a continuous engine has a large_gpu batch")
        if (self.batching == "continuous") != (self.token_budget is not None):
            raise ArgumentError(
                f"{self.name}: a continuous engine, and only one, has a token_budget"
            )
        object.__setattr__(self, "fitted", tuple(self.fitted))
        unknown = [p for p in self.fitted if p not in PROPERTIES]
        if unknown:
            raise ArgumentError(f"{self.name}: fitted names unknown properties {unknown}")
        stated = [p for p in PROPERTIES if getattr(self, p) is not None]
        missing = [p for p in stated if not str(self.sources.get(p, "")).strip()]
        if missing:
            raise ArgumentError(f"{self.name}: no source for {', '.join(missing)}")
        extra = [key for key in self.sources if key not in PROPERTIES]
        if extra:
            raise ArgumentError(f"{self.name}: sources for unknown properties {extra}")
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    def __repr__(self) -> str:
        shown = ", ".join(f"{p}={getattr(self, p)!r}" for p in PROPERTIES)
        return f"Engine({self.name!r}, {shown})"

    def batch(self, gpu) -> dict:
        """The ``token_budget`` and ``max_num_seqs`` this engine takes by default on ``gpu``
        (a ``GPU``): ``large_gpu``'s where the GPU is large, else its own.

        >>> from inference_arithmetic.hardware.gpus import gpu
        >>> engine("vllm@0.7").batch(gpu("h100-sxm"))
        {'token_budget': 512, 'max_num_seqs': 256}
        """
        chosen = self.large_gpu if self.large_gpu and self.large_gpu.holds(gpu) else self
        return {"token_budget": chosen.token_budget, "max_num_seqs": chosen.max_num_seqs}

    def on(self, gpu) -> Engine:
        """This engine with its batch resolved for ``gpu`` (``batch``) and no ``large_gpu``
        left, so that whatever reads its ``token_budget`` and ``max_num_seqs`` reads the GPU's;
        the engine itself where it states no ``large_gpu`` (nothing to resolve)."""
        if self.large_gpu is None:
            return self
        return dataclasses.replace(self, **self.batch(gpu), large_gpu=None)


def family(name: str) -> str:
    """The family of an engine's name: what comes before its ``@version``.

    >>> family("tensorrt-llm@0.21"), family("vllm")
    ('tensorrt-llm', 'vllm')
    """
    return name.partition("@")[0]


def _version_key(name: str) -> tuple[int, ...]:
    # Release numbers compare number by number (0.11 after 0.7), not as text; a build's tag
    # such as llama.cpp's b2795 compares by its number.
    return tuple(int(part) for part in re.findall(r"\d+", name.partition("@")[2]))


@functools.cache
def _registry() -> dict[str, Engine]:
    found = {e["name"]: Engine(**e) for e in entries("inference_arithmetic.hardware.profiles")}
    unversioned = [name for name in found if "@" not in name]
    if unversioned:
        raise ValueError(f"engine profiles without a @version: {unversioned}")
    return found


@functools.cache
def _names() -> dict[str, Engine]:
    """Every name ``engine`` takes: each profile's, and each family's alone for its newest."""
    names = dict(_registry())
    for name in sorted(_registry(), key=_version_key):  # the newest last, so it stays
        names[family(name)] = _registry()[name]
    return names


def engine_names() -> list[str]:
    """The names of the registry's engines, each ``family@version`` (a family's name alone
    also names its newest: ``engine_versions``)."""
    return list(_registry())


def engine_versions(name: str) -> list[str]:
    """The registry's versions of the family of ``name`` (a family or one of its versions),
    oldest first: the last is what the family's name alone gives.

    >>> engine_versions("tensorrt-llm")
    ['tensorrt-llm@0.9', 'tensorrt-llm@0.21']
    """
    engine(name)  # an unknown name raises, naming close matches
    versions = [n for n in _registry() if family(n) == family(name)]
    return sorted(versions, key=_version_key)


def engine(name: str | Engine) -> Engine:
    """A registry engine by name: ``family@version``, or a family alone for its newest
    version (an ``Engine`` is returned as it is); ``KeyError`` listing close matches for an
    unknown name."""
    if isinstance(name, Engine):
        return name
    return lookup("engine", name, _names(), "ia.engine_names()")
