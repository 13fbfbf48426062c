"""Accelerators: a validated ``GPU`` and a registry of real ones, every figure with its source.

>>> g = gpu("h100-sxm")
>>> g.flop_rate("bf16")  # dense: NVIDIA's datasheet prints 1,979 TFLOPS "with sparsity"
989000000000000.0
>>> g.memory_bandwidth, g.memory_bytes
(3350000000000.0, 80000000000)
>>> round(g.ridge_point("bf16"))  # FLOPs per byte read at which compute and memory tie
295
>>> g.interconnect_bandwidth, g.interconnect_bandwidth_total  # each way; both ways
(450000000000.0, 900000000000.0)
>>> gpu("h100")
Traceback (most recent call last):
...
inference_arithmetic.core.numeric.UnknownName: unknown gpu 'h100'; close matches: ...

Conventions, the same for every accelerator (chapter 07 explains them):

- Peak FLOP/s are *dense*. Datasheets print, next to them or instead of them, figures "with
  sparsity" (2:4 structured sparsity), twice as large; those are halved here, and each source
  says which figure was read and how it was turned into the one recorded.
- ``memory_bytes`` is the vendor's marketing figure in decimal bytes ("80 GB" is 80e9 B), not
  what a framework reports as free memory.
- ``interconnect_bandwidth`` and ``pcie_bandwidth`` are bytes per second *in each direction*,
  what a ring all-reduce moves per GPU; vendors usually print the sum of both directions
  (NVLink "900 GB/s" is 450 GB/s each way), which ``interconnect_bandwidth_total`` gives back.
  ``interconnect`` says which link it is (a card without NVLink talks over PCIe).
- ``link_domain`` is how many GPUs that link joins (8 on an HGX board, through NVSwitch); a
  larger group also talks over the network between boards (``formulas.parallel``). Not
  given, it is 1.
- ``price_per_hour`` is one example rental price, in USD per GPU-hour, observed on
  ``price_date``; prices move, so it is an illustration, not a constant.
- ``usable_memory_bytes`` is the memory as the driver reports it (``nvidia-smi``'s total,
  ``torch.cuda.mem_get_info``): HBM is sized in binary units, so an "80 GB" H100 shows
  81,559 MiB, about 85.5e9 B. Every memory budget applies to it (``figures``); the
  marketing figure stays for prose. Not given, the marketing figure stands in.
- ``achieved`` holds what the GPU's kernels were measured to reach (``ACHIEVED``), each with
  its kernel benchmark: the fraction of the peak FLOP/s of large matrix products per format,
  of the peak bandwidth when streaming weights and in decode attention, of the peak FLOP/s in
  FlashAttention, and the latency of the smallest all-reduce over its link, by NCCL and by an
  engine's own one-shot kernel. ``achieved_figure`` gives one, or for a GPU that has none
  measured, the median of the registry's GPUs of the same vendor that do (say so in prose).
- ``ON_CHIP`` figures (the L2 cache, the SMs and their shared memory) are optional and given
  for a few GPUs only; they are in bytes as the CUDA runtime reports them (NVIDIA's "50 MB" of
  L2 is 50 MiB), and the chapter on hardware uses them to show why the weights cannot stay on
  the chip.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from inference_arithmetic.core import checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.dtypes import COMPUTE_FORMATS, DTYPE_BYTES
from inference_arithmetic.core.errors import ArgumentError, UnknownName
from inference_arithmetic.core.registry import Registry, lookup

__all__ = ["GPU", "gpu", "gpu_names", "FLOP_DTYPES", "FIGURES", "ON_CHIP", "ACHIEVED"]
__all__ += ["achieved_figure"]

FLOP_DTYPES = COMPUTE_FORMATS
"""The dtypes a peak FLOP rate may be given for (``dtypes.COMPUTE_FORMATS``): the plain formats,
tf32 (a tensor-core input format for fp32 data) and fp4 (MXFP4 and NVFP4 products)."""

USER_SUPPLIED = "user-supplied"
"""The source of a figure given without one: your own device's."""

FIGURES = (
    "memory_bandwidth",
    "memory_bytes",
    "interconnect_bandwidth",
    "link_domain",
    "pcie_bandwidth",
    "price_per_hour",
)
"""The figures besides the peak FLOP rates; each present one needs a source, keyed by its name
(the rates are keyed ``peak_flop_rate.<dtype>``)."""

ON_CHIP = ("l2_cache_bytes", "sm_count", "shared_memory_per_sm")
"""Optional figures of the chip's own memory: the L2 cache (bytes), the streaming
multiprocessors (SMs), and the shared memory one SM can use (bytes). Each present one needs a
source; an absent one needs none."""

OPTIONAL = (*ON_CHIP, "usable_memory_bytes")
BINARY = 2**30 / 1e9
"""A GiB over a GB: ``usable_memory_bytes`` (binary units, as the driver reports) is at most
``memory_bytes`` (the board's decimal figure) times this."""
"""Every optional whole-number figure: the on-chip ones and the memory the driver reports."""

_PER_FORMAT = ("matmul_half_rows", "decode_attention", "prompt_attention")
"""Figures a device may have measured per format (``<name>.<dtype>``), the plain name standing
in for a format it has not."""

ACHIEVED = (
    *(f"matmul.{dtype}" for dtype in FLOP_DTYPES),
    "matmul_half_rows",
    "grouped_matmul",
    "stream",
    *(f"stream.{dtype}" for dtype in DTYPE_BYTES),
    "decode_attention",
    "decode_attention_latency",
    "kv_reread_hits",
    "prompt_attention",
    "attention_half_len",
    "attention_half_head",
    "allreduce_latency.nccl",
    "allreduce_latency.custom",
    "allreduce_bandwidth.nccl",
    "allreduce_bandwidth.custom",
    *(f"{name}.{dtype}" for name in _PER_FORMAT for dtype in FLOP_DTYPES),
)
"""What a GPU's kernels were measured to reach, each a fraction of a peak unless it says so:
``matmul.<dtype>``, of the peak FLOP/s in large matrix products; ``matmul_half_rows``, the
token rows at which a product reaches half of that; ``grouped_matmul``, of a single product's
rate that a grouped product over an MoE layer's experts reaches; ``stream``, of the peak
bandwidth a product reads 16-bit weights at (``stream.<dtype>``: weights of another format);
``decode_attention``, of the peak bandwidth in decode attention, and
``decode_attention_latency``, its fixed seconds; ``kv_reread_hits``, of a kernel's repeated
reads of a KV head (once per query head) that the L2 cache serves; ``prompt_attention``, of
the peak FLOP/s FlashAttention reaches on long prompts (at heads of 128 numbers, as measured),
``attention_half_len``, the prompt length at which it reaches half of that, and
``attention_half_head``, the head size at which it would (its exponentials per query-key pair
taking as long as its products); ``allreduce_latency.<nccl|custom>`` and
``allreduce_bandwidth.<nccl|custom>``, the seconds of the smallest all-reduce over the GPU's
link and the bytes per second its time grows by. ``matmul_half_rows``, ``decode_attention``
and ``prompt_attention`` may also be given per format (``decode_attention.fp32``). Each present
one needs a source, keyed ``achieved.<name>``."""
_AMOUNTS = ("matmul_half_rows", "attention_half_len", "attention_half_head")
_AMOUNTS += ("decode_attention_latency",)
_AMOUNTS += tuple(f"matmul_half_rows.{dtype}" for dtype in FLOP_DTYPES)
_AMOUNTS += tuple(
    f"allreduce_{k}.{a}" for k in ("latency", "bandwidth") for a in ("nccl", "custom")
)


@dataclass(frozen=True)
class GPU:
    """One accelerator's peak figures, in base SI units, each with its source.

    ``peak_flop_rate`` maps a dtype name (``FLOP_DTYPES``) to dense FLOP/s (ops/s for int8).
    ``sources`` maps ``"peak_flop_rate.<dtype>"`` and the names in ``FIGURES`` to where the
    figure comes from. The registry's devices have a source for every figure present
    (``check_sources``); your own device needs none: a figure without one is marked
    ``USER_SUPPLIED`` (``user_supplied`` lists them). ``pcie_bandwidth`` and
    ``price_per_hour`` may be None where no figure could be established (say why in
    ``sources``); ``price_date`` (ISO ``YYYY-MM-DD``) goes with a registry price. A device
    without ``interconnect_bandwidth`` (a laptop, a CPU) serves on one device only.

    >>> a6000 = GPU("a6000", {"bf16": 155e12}, memory_bandwidth=768e9, memory_bytes=48e9)
    >>> a6000
    GPU('a6000': 155 TFLOP/s bf16, 48 GB at 768 GB/s, no link; user-supplied)
    """

    name: str
    peak_flop_rate: Mapping[str, float] = field(hash=False)
    memory_bandwidth: float
    memory_bytes: float
    vendor: str = "unknown"
    interconnect_bandwidth: float | None = None
    interconnect: str = "none"
    link_domain: int | None = None
    pcie_bandwidth: float | None = None
    pcie: str = ""
    price_per_hour: float | None = None
    price_date: str | None = None
    l2_cache_bytes: int | None = None
    sm_count: int | None = None
    shared_memory_per_sm: int | None = None
    usable_memory_bytes: int | None = None
    achieved: Mapping[str, float] = field(default_factory=dict, hash=False)
    sources: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    full_name: str = field(default="", compare=False)
    notes: str = field(default="", compare=False)

    def __post_init__(self):
        for name in ("name", "vendor", "interconnect"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ArgumentError(f"GPU {self.name!r}: {name} must be a non-empty string")
        if not isinstance(self.peak_flop_rate, Mapping) or not self.peak_flop_rate:
            raise ArgumentError(f"{self.name}: peak_flop_rate must map dtypes to FLOP/s")
        unknown = [d for d in self.peak_flop_rate if d not in FLOP_DTYPES]
        if unknown:
            raise ArgumentError(
                f"{self.name}: unknown dtype {', '.join(map(repr, unknown))} in peak_flop_rate; "
                f"known dtypes: {', '.join(FLOP_DTYPES)}"
            )
        for dtype, rate in self.peak_flop_rate.items():
            _positive(self.name, f"peak_flop_rate[{dtype!r}]", rate)
            _in_base_units(self.name, f"peak_flop_rate[{dtype!r}]", rate)
        for name in ("memory_bandwidth", "memory_bytes"):
            _positive(self.name, name, getattr(self, name))
            _in_base_units(self.name, name, getattr(self, name))
        if self.link_domain is not None:
            if isinstance(self.link_domain, bool) or not isinstance(self.link_domain, int):
                raise ArgumentError(f"{self.name}: link_domain must be a whole number of GPUs")
            _positive(self.name, "link_domain", self.link_domain)
        for name in ("interconnect_bandwidth", "pcie_bandwidth", "price_per_hour", *OPTIONAL):
            if getattr(self, name) is not None:
                _positive(self.name, name, getattr(self, name))
                if name in _LEAST:
                    _in_base_units(self.name, name, getattr(self, name))
        for name in OPTIONAL:  # counts: 8.5e10 is 85,000,000,000 bytes, kept as an int
            if getattr(self, name) is not None:
                whole = checks.count(f"{self.name}: {name}", getattr(self, name))
                object.__setattr__(self, name, whole)
        # The driver counts in binary units what the board's figure counts in decimal ones: an
        # "80 GB" board holds at most 80 GiB, which is all it can report.
        most = self.memory_bytes * BINARY
        if self.usable_memory_bytes is not None and self.usable_memory_bytes > most * (1 + 1e-12):
            raise ArgumentError(
                f"{self.name}: usable_memory_bytes={self.usable_memory_bytes:,} is more than "
                f"the board holds: memory_bytes={self.memory_bytes:,.0f} read in binary units "
                f"(x 2^30/10^9) is {most:,.0f}, the most a driver reports"
            )
        if not isinstance(self.achieved, Mapping):
            raise ArgumentError(f"{self.name}: achieved must map kernel figures to numbers")
        for key, value in self.achieved.items():
            if key not in ACHIEVED:
                raise ArgumentError(
                    f"{self.name}: unknown achieved figure {key!r}; known: {', '.join(ACHIEVED)}"
                )
            _positive(self.name, f"achieved[{key!r}]", value)
            if key not in _AMOUNTS and value > 1:
                raise ArgumentError(f"{self.name}: achieved[{key!r}] is a fraction, got {value}")
        if self.price_per_hour is None and self.price_date is not None:
            raise ArgumentError(f"{self.name}: price_date without a price_per_hour")
        if self.price_date is not None:
            try:
                datetime.date.fromisoformat(self.price_date)
            except (TypeError, ValueError):
                raise ArgumentError(
                    f"{self.name}: price_date must be an ISO date (YYYY-MM-DD), "
                    f"got {self.price_date!r}"
                ) from None
        # Your own figures need no citation: each without a source is marked user-supplied.
        sources = self._known_sources()
        sources.update({key: USER_SUPPLIED for key in self._present() if key not in sources})
        # Read-only views: a frozen GPU should not change behind the registry's back.
        object.__setattr__(self, "peak_flop_rate", MappingProxyType(dict(self.peak_flop_rate)))
        object.__setattr__(self, "sources", MappingProxyType(sources))
        object.__setattr__(self, "achieved", MappingProxyType(dict(self.achieved)))

    def _present(self) -> list[str]:
        """The keys of the figures this device has (``sources``' keys)."""
        present = [f"peak_flop_rate.{dtype}" for dtype in self.peak_flop_rate]
        present += [name for name in FIGURES + OPTIONAL if getattr(self, name) is not None]
        return present + [f"achieved.{name}" for name in self.achieved]

    def _known_sources(self) -> dict[str, str]:
        """``sources`` as given, checked: known figures, each a non-empty text."""
        if not isinstance(self.sources, Mapping):
            raise ArgumentError(f"{self.name}: sources must map figures to their sources")
        keys = [f"peak_flop_rate.{dtype}" for dtype in FLOP_DTYPES] + list(FIGURES + OPTIONAL)
        keys += [f"achieved.{name}" for name in ACHIEVED]
        unknown = [key for key in self.sources if key not in keys]
        if unknown:
            raise ArgumentError(
                f"{self.name}: sources for unknown figures {', '.join(map(repr, unknown))}; "
                f"figures are peak_flop_rate.<dtype>, achieved.<name> and "
                f"{', '.join(FIGURES + OPTIONAL)}"
            )
        empty = [k for k, v in self.sources.items() if not isinstance(v, str) or not v.strip()]
        if empty:
            raise ArgumentError(f"{self.name}: no source for {', '.join(empty)} (an empty text)")
        return dict(self.sources)

    @property
    def user_supplied(self) -> tuple[str, ...]:
        """The figures given without a source (``USER_SUPPLIED``): none in the registry."""
        return tuple(key for key, text in self.sources.items() if text == USER_SUPPLIED)

    def check_sources(self) -> GPU:
        """This device, if every figure it has names a source (as the registry's must); else
        ``ValueError`` naming those that do not, and a price without its date."""
        if self.user_supplied:
            raise ArgumentError(f"{self.name}: no source for {', '.join(self.user_supplied)}")
        if self.price_per_hour is not None and self.price_date is None:
            raise ArgumentError(f"{self.name}: price_per_hour and price_date go together")
        return self

    def __repr__(self) -> str:
        """One line: the rates, memory, link and price (``sources`` has the citations)."""
        formats = {}  # formats of the same rate together, the fastest first
        for dtype, rate in self.peak_flop_rate.items():
            formats.setdefault(rate, []).append(dtype)
        fastest_first = sorted(formats, reverse=True)
        rates = ", ".join(f"{fmt.flop_rate(r)} {'/'.join(formats[r])}" for r in fastest_first)
        memory = f"{fmt.nbytes(self.memory_bytes)} at {fmt.bandwidth(self.memory_bandwidth)}"
        link = "no link"
        if self.interconnect_bandwidth is not None:
            # The link's name, without the parenthesis or the notes that explain it.
            name = self.interconnect.split("(")[0].split(";")[0].strip()
            link = f"{name} {fmt.bandwidth(self.interconnect_bandwidth)} each way"
            link += f" x {self.link_domain}" if (self.link_domain or 1) > 1 else ""
        parts = [rates, memory, link]
        if self.price_per_hour is not None:
            dated = f" ({self.price_date})" if self.price_date else ""
            parts.append(f"${self.price_per_hour:g}/h{dated}")
        mark = "; user-supplied" if self.user_supplied else ""
        return f"GPU({self.name!r}: {', '.join(parts)}{mark})"

    def flop_rate(self, dtype: str) -> float:
        """Peak dense FLOP/s in ``dtype``; ``KeyError`` naming the dtypes this GPU has."""
        try:
            return float(self.peak_flop_rate[dtype])
        except (KeyError, TypeError):
            raise UnknownName(
                f"{self.name} has no peak FLOP rate for {dtype!r}; "
                f"it has: {', '.join(self.peak_flop_rate)}"
            ) from None

    @property
    def usable_memory(self) -> float:
        """The memory every budget is taken from, in bytes: the driver's figure
        (``usable_memory_bytes``) where known, else the board's (``memory_bytes``)."""
        return float(self.usable_memory_bytes or self.memory_bytes)

    def figures(self, dtype: str = "bf16") -> dict[str, float]:
        """The figures the book's formulas take, keyed by their symbols' names: the peak FLOP/s
        in ``dtype`` (``KeyError`` if it has none), the memory bandwidth and size, the link.

        >>> gpu("h100-sxm").figures()["flop_rate"]
        989000000000000.0
        """
        return {
            "flop_rate": self.flop_rate(dtype),
            "bandwidth": float(self.memory_bandwidth),
            "gpu_memory": self.usable_memory,
            # A device without a link serves alone (the scenario refuses more): the figure
            # is then unused, every exchange being multiplied by n - 1 = 0.
            "link_bandwidth": float(self.interconnect_bandwidth or self.memory_bandwidth),
            "link_domain": self.link_domain or 1,  # unknown: the link joins no other GPU
        }

    def achieved_figure(self, name: str) -> float:
        """``achieved_figure(self, name)``: this GPU's measured figure, or its stand-in."""
        return achieved_figure(self, name)[0]

    def price(self, price_per_hour: float | None = None, required: bool = False) -> tuple:
        """The price to cost this GPU at, its date and its source: ``price_per_hour`` (USD per
        GPU-hour, checked; no date, source "given") if given, else the example price (all
        three None where it has none; with ``required``, an error naming price_per_hour)."""
        if price_per_hour is not None:
            given = checks.amount("price_per_hour", price_per_hour, "dollars", positive=True)
            return given, None, "given"
        if required and self.price_per_hour is None:
            raise ArgumentError(
                f"{self.name!r} has no example price per hour: pass price_per_hour (USD per "
                "GPU-hour)"
            )
        return self.price_per_hour, self.price_date, self.sources.get("price_per_hour")

    def ridge_point(self, dtype: str) -> float:
        """FLOPs per byte of memory traffic at which compute time equals memory time
        (``formulas.roofline.ridge_point`` at this GPU's figures)."""
        # The formula's SymPy, imported here: a GPU's figures (``ia gpus``) need none.
        from inference_arithmetic.core.numeric import numeric
        from inference_arithmetic.formulas import roofline

        return numeric(roofline.ridge_point()).from_values(self.figures(dtype))

    @property
    def interconnect_bandwidth_total(self) -> float:
        """Both directions together, the way vendors usually print link bandwidth."""
        return None if self.interconnect_bandwidth is None else 2 * self.interconnect_bandwidth


# The least plausible value of each figure in SI base units, and its unit and usual prefix: a
# figure below it was written in the prefixed unit (a bandwidth of 768, meant as GB/s, would
# give a time to first token of 56 million seconds). Every device of the registry, a laptop's
# CPU included, is a hundred times above each.
_LEAST = {
    "peak_flop_rate": (1e9, "FLOP/s", "T", 1e12),
    "memory_bandwidth": (1e9, "B/s", "G", 1e9),
    "memory_bytes": (1e8, "B", "G", 1e9),
    "interconnect_bandwidth": (1e8, "B/s", "G", 1e9),
    "pcie_bandwidth": (1e8, "B/s", "G", 1e9),
}


def _in_base_units(gpu_name, name, value):
    least, unit, prefix, scale = _LEAST[name.split("[")[0]]
    if value < least:
        power = round(math.log10(scale))
        raise ArgumentError(
            f"{gpu_name}: {name} is in {unit} (SI base units), and {value:g} {unit} is "
            f"implausibly small: for {value:g} {prefix}{unit} write {value:g}e{power}"
        )


def _positive(gpu_name, name, value):
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ArgumentError(f"{gpu_name}: {name} must be a number, got {value!r}")
    if value <= 0:
        raise ArgumentError(f"{gpu_name}: {name} must be positive, got {value!r}")


@functools.cache
def _registry() -> Registry:
    return Registry("inference_arithmetic.hardware.specs", lambda e: GPU(**e).check_sources())


def achieved_figure(device: GPU, name: str) -> tuple[float, str]:
    """An achieved figure (``ACHIEVED``) of ``device`` and where it comes from: its own
    measurement, else the median of the registry's GPUs of the same vendor that have one, else
    of every GPU that has one. A format no GPU was measured in stands in with the chip's 16-bit
    figure (``matmul.bf16``, ``stream``), found the same way. ``KeyError`` for a name not in
    ``ACHIEVED``.

    >>> achieved_figure(gpu("h100-sxm"), "stream")[1]
    'achieved.stream of h100-sxm'
    """
    if name not in ACHIEVED:
        raise UnknownName(f"unknown achieved figure {name!r}; known: {', '.join(ACHIEVED)}")
    keys = [name]
    if name.startswith("matmul.") and name != "matmul.bf16":
        keys.append("matmul.bf16")
    if name.startswith("stream."):
        keys.append("stream")
    if name.split(".")[0] in _PER_FORMAT:
        keys.append(name.split(".")[0])
    for key in keys:
        if key in device.achieved:
            return float(device.achieved[key]), f"achieved.{key} of {device.name}"
        registry = list(_registry().values())  # every GPU read: only for a stand-in
        measured = [g for g in registry if key in g.achieved]
        kin = [g for g in measured if g.vendor == device.vendor]
        if kin:
            return _median(kin, key), f"achieved.{key}: median of {', '.join(g.name for g in kin)}"
    for key in keys:
        measured = [g for g in registry if key in g.achieved]
        if measured:
            names = ", ".join(g.name for g in measured)
            return _median(measured, key), f"achieved.{key}: median of {names}"
    raise UnknownName(f"no GPU of the registry has a measured {name}")


def _median(gpus, key) -> float:
    values = sorted(float(g.achieved[key]) for g in gpus)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def gpu_names() -> list[str]:
    """The names of the registry's accelerators."""
    return list(_registry())


OWN_GPU = (
    "a device of your own is ia.GPU(name, peak_flop_rate, memory_bandwidth, memory_bytes, ...), "
    "or a dict, JSON text or .json file of those figures"
)
"""How to pass a device the registry does not hold: the end of an unknown name's message."""


def gpu(name) -> GPU:
    """An accelerator: a registry name, or a device's figures (``GPU``'s arguments) as a dict,
    JSON text or a file of it (a path, as text or a ``Path``), as the command line takes them;
    a ``GPU`` is returned as it is. A registry name wins over a file of the same name.
    ``KeyError`` with close matches for an unknown name, ``ArgumentError`` for anything else
    (an unknown or missing figure named)."""
    if isinstance(name, GPU):
        return name
    if isinstance(name, os.PathLike) or (isinstance(name, str) and name not in _registry()):
        path = Path(name)
        if isinstance(name, str) and name.lstrip().startswith("{"):
            text = name
        elif path.is_file():
            text = path.read_text()
        elif isinstance(name, os.PathLike):
            raise ArgumentError(f"gpu: no file at {str(path)!r}; {OWN_GPU}")
        else:
            text = None  # an unknown name (lookup)
        if text is not None:
            try:
                name = json.loads(text)
            except json.JSONDecodeError as error:
                raise ArgumentError(f"gpu: not valid JSON ({error})") from None
            if not isinstance(name, Mapping):
                raise ArgumentError("gpu: the JSON must be an object of the device's figures")
    if isinstance(name, Mapping):
        try:
            return GPU(**name)
        except TypeError as error:  # an unknown or missing figure
            raise ArgumentError(f"gpu: {error}; {OWN_GPU}") from None
    return lookup("gpu", name, _registry(), "ia.gpu_names()", OWN_GPU)
