"""What this machine achieves: its CPU and caches, matrix-product FLOP/s and memory bandwidth.

>>> rate = matmul_rate(NUMPY, "fp32", m=8, k=256, n=256, pool_bytes=1 << 20, seconds=0.01)
>>> rate["flop_rate"] > 0
True

Every measurement runs on a backend, numpy or torch, so that the same function is what
`make measure` times with torch and what `make test` runs, in a tiny size, with numpy alone.
Rates are medians over repeats after a warm-up; the best repeat is kept beside it.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "Backend",
    "NUMPY",
    "torch_backend",
    "timed",
    "others_busy",
    "wait_for_quiet",
    "matmul_rate",
    "bandwidth",
    "cpu_description",
    "last_level_cache_bytes",
]

MIB = 1 << 20


@dataclass(frozen=True)
class Backend:
    """How to make arrays and run the measured operations with one array library."""

    name: str
    empty: Callable  # (shape, dtype name) -> an uninitialized array
    random: Callable  # (shape, dtype name) -> standard-normal numbers
    matmul: Callable  # (a, b) -> a @ b.T: the (out, in) weight layout of a linear layer
    copy: Callable  # (dst, src): dst[...] = src
    read: Callable  # (x): a reduction that reads every element once
    triad: Callable  # (dst, a, b, scalar): dst = a + scalar * b in one pass
    itemsize: Callable  # (array) -> bytes per element
    dtypes: tuple[str, ...]
    threads: int


def _numpy_backend() -> Backend:
    def empty(shape, dtype):
        return np.empty(shape, dtype=np.float32 if dtype == "fp32" else dtype)

    def random(shape, dtype):
        return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)

    def triad(dst, a, b, scalar):
        # numpy has no one-pass a + s * b; two passes would count the bytes wrongly.
        raise NotImplementedError("numpy has no one-pass triad")

    return Backend(
        name=f"numpy {np.__version__}",
        empty=empty,
        random=random,
        matmul=lambda a, b: a @ b.T,
        copy=lambda dst, src: np.copyto(dst, src),
        read=lambda x: x.sum(),
        triad=triad,
        itemsize=lambda x: x.itemsize,
        dtypes=("fp32",),
        threads=1,
    )


NUMPY = _numpy_backend()
"""numpy: single-threaded for copies and sums; its BLAS picks its own threads."""


def torch_backend(threads: int) -> Backend:
    """torch on the CPU with ``threads`` intra-op threads (set here, explicitly)."""
    import torch

    torch.set_num_threads(threads)
    kinds = {"fp32": torch.float32, "bf16": torch.bfloat16}

    def random(shape, dtype):
        return torch.empty(shape, dtype=kinds[dtype]).normal_()

    return Backend(
        name=f"torch {torch.__version__}",
        empty=lambda shape, dtype: torch.empty(shape, dtype=kinds[dtype]),
        random=random,
        matmul=torch.nn.functional.linear,
        copy=lambda dst, src: dst.copy_(src),
        read=lambda x: x.sum(),
        triad=lambda dst, a, b, scalar: torch.add(a, b, alpha=scalar, out=dst),
        itemsize=lambda x: x.element_size(),
        dtypes=tuple(kinds),
        threads=torch.get_num_threads(),
    )


def _cpu_seconds() -> tuple[float, float, float]:
    """Busy and stolen CPU-seconds of the whole machine so far (/proc/stat), and this
    process's own (all its threads)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except OSError:
        fields = [0] * 8
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    tick = os.sysconf("SC_CLK_TCK")
    own = os.times()
    return (user + nice + system + irq + softirq) / tick, steal / tick, own.user + own.system


def others_busy(function: Callable) -> tuple[float, float]:
    """Run ``function()``; return the cores other processes kept busy meanwhile, on average,
    and the cores the hypervisor stole."""
    busy, stolen, own = _cpu_seconds()
    start = time.perf_counter()
    function()
    wall = time.perf_counter() - start
    busy2, stolen2, own2 = _cpu_seconds()
    return max(0.0, (busy2 - busy) - (own2 - own)) / wall, (stolen2 - stolen) / wall


QUIET = 0.25
"""Cores of other processes' work above which a measurement is taken again: on a shared
machine of two cores, one busy core halves what two threads achieve."""


def wait_for_quiet(most_seconds: float = 120.0, window: float = 1.0) -> float:
    """Wait (up to ``most_seconds``) until other processes keep less than ``QUIET`` cores busy
    over ``window`` seconds; return what they last kept busy."""
    deadline = time.perf_counter() + most_seconds
    while True:
        others, _ = others_busy(lambda: time.sleep(window))
        if others < QUIET or time.perf_counter() > deadline:
            return others


def timed(function: Callable, repeats: int = 5, warmup: int = 1, tries: int = 3) -> dict:
    """Seconds of each of ``repeats`` calls of ``function()``, after ``warmup`` untimed ones,
    with the cores other processes kept busy meanwhile (``others_cpu``). Taken again, after
    the machine quietens, while others kept more than ``QUIET`` cores busy (``tries`` in all)."""
    times: list[float] = []

    def run():
        for _ in range(repeats):
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)

    for attempt in range(1, tries + 1):
        for _ in range(warmup):
            function()
        times.clear()
        others, stolen = others_busy(run)
        if others < QUIET or attempt == tries:
            break
        wait_for_quiet()
    return {
        "median_s": statistics.median(times),
        "best_s": min(times),
        "repeats": len(times),
        "times_s": times,
        "others_cpu": round(others, 3),
        "stolen_cpu": round(stolen, 3),
        "tries": attempt,
    }


def _calls(function: Callable, seconds: float) -> int:
    """How many calls of ``function`` take about ``seconds`` (at least one), judged after a
    first call that may set things up (oneDNN builds its kernel for a shape on first use)."""
    function()
    count, start = 0, time.perf_counter()
    while count < 3 or time.perf_counter() - start < seconds / 20:
        function()
        count += 1
    once = (time.perf_counter() - start) / count
    return max(1, math.ceil(seconds / once))


def matmul_rate(
    backend: Backend,
    dtype: str,
    m: int,
    k: int,
    n: int,
    pool_bytes: int,
    seconds: float = 0.3,
    repeats: int = 5,
) -> dict:
    """FLOP/s of ``x @ W.T`` with x of (m, k) and W of (n, k), as a linear layer computes it.

    The weights come from a pool of distinct matrices of at least ``pool_bytes`` together,
    used in turn, so that with a pool past the last-level cache every product reads its
    weights from memory, as a model's decode step does; a small m then measures the rate at
    which the product streams its weights (``weight_bandwidth``). Each repeat is as many
    products as take about ``seconds``.
    """
    x = backend.random((m, k), dtype)
    size = backend.itemsize(x)
    count = max(1, math.ceil(pool_bytes / (n * k * size)))
    pool = [backend.random((n, k), dtype) for _ in range(count)]
    turn = iter(range(1 << 62))

    def product():
        backend.matmul(x, pool[next(turn) % count])

    calls = _calls(product, seconds)

    def products():
        for _ in range(calls):
            product()

    result = timed(products, repeats)
    flops = 2 * m * k * n * calls
    return {
        "dtype": dtype,
        "m": m,
        "k": k,
        "n": n,
        "products_per_repeat": calls,
        "pool_bytes": count * n * k * size,
        **result,
        "flop_rate": flops / result["median_s"],
        "flop_rate_best": flops / result["best_s"],
        "weight_bandwidth": n * k * size * calls / result["median_s"],
    }


def bandwidth(
    backend: Backend, nbytes: int, kinds=("read", "copy", "triad"), repeats: int = 5
) -> dict:
    """Bytes per second of a sum (reads ``nbytes``), a copy and a triad (``a = b + s c``) over
    fp32 arrays of ``nbytes`` each, in the STREAM convention: a copy moves 2 ``nbytes`` (read
    and write), a triad 3 (the extra read a write-allocate cache may add is not counted)."""
    count = nbytes // 4
    a, b, c = (backend.empty((count,), "fp32") for _ in range(3))
    for array in (a, b, c):  # touch every page before the clock starts
        array[...] = 1.0
    moved = {"read": 1, "copy": 2, "triad": 3}
    run = {
        "read": lambda: backend.read(b),
        "copy": lambda: backend.copy(a, b),
        "triad": lambda: backend.triad(a, b, c, 2.0),
    }
    results = {}
    for kind in kinds:
        result = timed(run[kind], repeats)
        results[kind] = {
            "array_bytes": count * 4,
            "bytes_moved": moved[kind] * count * 4,
            **result,
            "bandwidth": moved[kind] * count * 4 / result["median_s"],
            "bandwidth_best": moved[kind] * count * 4 / result["best_s"],
        }
    return results


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _size(text: str) -> int:
    """Bytes of a sysfs cache size such as "2048K"."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text and text[-1] in units else int(text or 0)


def cpu_description(root: Path = Path("/")) -> dict:
    """The CPU as /proc and /sys describe it, with no host name: model, logical CPUs,
    the instruction-set extensions that matter for matrix products, caches, memory."""
    info, flags = {}, []
    for line in _read(root / "proc/cpuinfo").splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "vendor_id", "cpu family", "model") and key not in info:
            info[key] = value
        if key == "flags" and not flags:
            flags = value.split()
    wanted = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile")
    caches = []
    for index in sorted((root / "sys/devices/system/cpu/cpu0/cache").glob("index*")):
        caches.append(
            {
                "level": int(_read(index / "level") or 0),
                "type": _read(index / "type"),
                "bytes": _size(_read(index / "size")),
                "shared_cpu_list": _read(index / "shared_cpu_list"),
            }
        )
    memory = 0
    for line in _read(root / "proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            memory = int(line.split()[1]) * 1024
    return {
        "model_name": info.get("model name", platform.processor()),
        "vendor": info.get("vendor_id", ""),
        "family_model": f"{info.get('cpu family', '?')}/{info.get('model', '?')}",
        "machine": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "flags": [flag for flag in wanted if flag in flags],
        "caches": caches,
        "memory_bytes": memory,
        "hypervisor": "hypervisor" in flags,
        "load_average": list(os.getloadavg()),
    }


def last_level_cache_bytes(cpu: dict) -> int:
    """The largest cache's bytes (0 if none is listed)."""
    return max((cache["bytes"] for cache in cpu["caches"]), default=0)
