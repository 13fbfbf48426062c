"""Serving engines: what a software stack's kernels do, each property with its source.

>>> e = engine("vllm")
>>> e.kv_shared, e.allreduce
(True, 'custom')
>>> engine("vlm")
Traceback (most recent call last):
...
inference_arithmetic.core.numeric.UnknownName: unknown engine 'vlm'; close matches: vllm...

The kernel-level step model (``formulas.kernels``) takes the GPU's achieved figures (its
kernels' measured rates, ``GPU.achieved``) and an engine's properties: whether its decode
attention reads each KV head once for its query group (``kv_shared``), whether its prompt
attention is one fused kernel (``flash_attention``), its fixed cost per
kernel (``kernel_overhead``: a launch, from a CUDA graph or not, and its ramp), its fixed cost
per step (``step_overhead``: scheduling, sampling, the host's synchronisation) and per request
in a step (``request_overhead``: the host's work for each sequence it schedules), which
all-reduce it uses for small messages (``allreduce``: its own one-shot kernels, ``"custom"``,
or ``"nccl"``), and how it batches (``batching``, ``token_budget``, ``max_num_seqs``). A
property measured by a kernel benchmark cites it; one fitted on the fit set (chapter 13) says
so in ``fitted``, and its source names the fit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from inference_arithmetic.core.errors import ArgumentError
from inference_arithmetic.core.registry import entries, lookup

__all__ = ["Engine", "engine", "engine_names", "ALLREDUCE", "BATCHING", "PROPERTIES"]

BATCHING = ("continuous", "static")
"""How an engine runs requests sent at once: ``continuous``, admitting what its memory and
``max_num_seqs`` allow and prefilling in chunks of its ``token_budget`` while it decodes the
others (vLLM, SGLang); ``static``, the whole batch's prefill, then its decode steps (a
static-batch benchmark such as TensorRT-LLM's gptSessionBenchmark)."""

ALLREDUCE = ("custom", "nccl")
"""The all-reduce an engine uses for small messages: its own one-shot kernel (vLLM's and
TensorRT-LLM's custom all-reduce over NVLink) or NCCL's."""

PROPERTIES = (
    "kv_shared",
    "flash_attention",
    "kernel_overhead",
    "step_overhead",
    "request_overhead",
    "allreduce",
    "batching",
    "token_budget",
    "max_num_seqs",
)
"""The properties every engine states, each with a source."""


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
    allreduce: str
    batching: str
    token_budget: int | None = None
    max_num_seqs: int | None = None
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
        for name in ("kernel_overhead", "step_overhead", "request_overhead"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ArgumentError(f"{self.name}: {name} must be a number of seconds")
            if not math.isfinite(value) or not 0 <= value < 1:
                raise ArgumentError(f"{self.name}: {name} must be from 0 to 1 seconds, got {value}")
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


@functools.cache
def _registry() -> dict[str, Engine]:
    return {e["name"]: Engine(**e) for e in entries("inference_arithmetic.hardware.profiles")}


def engine_names() -> list[str]:
    """The names of the registry's engines."""
    return list(_registry())


def engine(name: str | Engine) -> Engine:
    """A registry engine by name (an ``Engine`` is returned as it is); ``KeyError`` listing
    close matches for an unknown name."""
    if isinstance(name, Engine):
        return name
    return lookup("engine", name, _registry(), "ia.engine_names()")
