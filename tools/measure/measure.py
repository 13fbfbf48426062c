"""Measure this machine and time a small Llama on it: `make measure` (torch, CPU).

Writes one JSON file (default: lib/inference_arithmetic/validation/data/this_machine.json)
with what the machine achieves (memory bandwidth, matrix-product FLOP/s at several shapes,
its CPU and caches) and the times of prefills and decode steps of a scaled-down
llama-3.1-8b with random weights, every case the median of repeats after a warm-up. The
library (``inference_arithmetic.validation.machine``, no torch) predicts the same cases
from the measured figures and prints predicted against measured.

    tools/measure/.venv/bin/python tools/measure/measure.py [--output FILE] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import machine  # noqa: E402
from model import LlamaDecoder, scaled_config  # noqa: E402

REPO = HERE.parents[1]
LIBRARY = REPO / "lib" / "inference_arithmetic"
OUTPUT = LIBRARY / "validation" / "data" / "this_machine.json"
BASE = "llama-3.1-8b"
# Half the width of Llama 3.1 8B (same head size, 4 query heads per KV head, d_ff = 3.5 d)
# and a quarter of its layers: 0.96 B parameters, 1.4 GB read by a bf16 decode step (the
# input embedding is gathered, not read), several times any cache, and a step long enough
# that the per-layer Python and dispatch cost stays a small part of it.
HIDDEN, LAYERS = 2048, 8
DTYPES = ("bf16", "fp32")
MATMUL_M = (1, 4, 16, 64, 512, 2048)
MATMUL_KN = (2048, 4096)
PREFILL = [(1, 128), (1, 512), (1, 2048), (4, 128), (4, 512)]  # (batch, prompt_len)
DECODE = [(b, s) for b in (1, 4, 16) for s in (128, 512, 2048)]  # (batch, context_len)
CASE_SECONDS = 6.0  # about what the repeats of one case take, at most 7 and at least 3
# Where the time of a step goes, by torch's profiler, for the cases that explain the misses.
PROFILE = {"prefill": [(1, 128), (1, 2048)], "decode": [(1, 2048), (16, 2048)]}
QUICK = {"matmul_m": (1, 16, 512), "matmul_kn": (2048,), "prefill": [(1, 128)]}
QUICK |= {"decode": [(1, 128), (4, 512)], "profile": {"prefill": [], "decode": [(4, 512)]}}


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    parser.add_argument("--quick", action="store_true", help="a few cases, to try the harness")
    return parser.parse_args()


def log(*words):
    print(*words, flush=True)


def stream_bytes(cpu: dict) -> int:
    """Bytes of each array (and of each matrix pool): four times the last-level cache, and at
    least 1 GiB, so that what is measured comes from memory, not from a cache."""
    return max(1 << 30, 4 * machine.last_level_cache_bytes(cpu))


def measure_bandwidth(backend, nbytes):
    log(f"bandwidth: {backend.name}, arrays of {nbytes / 2**30:.2f} GiB")
    kinds = ("read", "copy", "triad") if backend is not machine.NUMPY else ("read", "copy")
    result = machine.bandwidth(backend, nbytes, kinds=kinds)
    for kind, r in result.items():
        log(f"  {kind:5s} {r['bandwidth'] / 1e9:6.1f} GB/s")
    gc.collect()
    return result


def measure_matmul(backend, dtypes, ms, kns, pool_bytes):
    rows = []
    for dtype in dtypes:
        for kn in kns:
            for m in ms:
                r = machine.matmul_rate(backend, dtype, m, kn, kn, pool_bytes, repeats=5)
                rows.append(r)
                log(
                    f"matmul {dtype} M={m:5d} K=N={kn}: {r['flop_rate'] / 1e9:8.1f} GFLOP/s, "
                    f"weights at {r['weight_bandwidth'] / 1e9:5.1f} GB/s"
                )
                gc.collect()
    return rows


def base_config() -> dict:
    entry = json.loads((LIBRARY / "models" / "configs" / f"{BASE}.json").read_text())
    return entry["config"]


def kind(name: str) -> str:
    """The part of a step an operator of torch's profiler belongs to."""
    if "scaled_dot_product" in name or "flash_attention" in name:
        return "attention"
    if name in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm") or "mkldnn" in name:
        return "products"
    return "other_ops"


def profile(run, repeats=3):
    """Seconds of one call of ``run`` spent in the matrix products, in attention and in the
    other operators (each operator's own time, by torch.profiler, the median of ``repeats``
    profiled calls after an untimed one), and the profiled call's wall time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiler

    parts = []
    for attempt in range(repeats + 1):
        with profiler(activities=[ProfilerActivity.CPU]) as p:
            start = time.perf_counter()
            run()
            wall = time.perf_counter() - start
        seconds = {"products": 0.0, "attention": 0.0, "other_ops": 0.0}
        calls = 0
        for event in p.key_averages():
            seconds[kind(event.key)] += event.self_cpu_time_total * 1e-6
            calls += event.count
        if attempt:
            parts.append(seconds | {"profiled_wall": wall, "operator_calls": calls})
    return {key: statistics.median(part[key] for part in parts) for key in parts[0]}


def time_case(model, phase, batch, length, profiled, generator):
    """One case of ``model``: a prefill of ``batch`` prompts of ``length`` tokens, or a decode
    step of ``batch`` sequences with ``length`` tokens cached, timed (and maybe profiled)."""
    if phase == "prefill":
        tokens = torch.randint(model.config["vocab_size"], (batch, length), generator=generator)
        cache, start = model.cache(batch, length), 0
    else:
        tokens = torch.randint(model.config["vocab_size"], (batch, 1), generator=generator)
        # The step writes position ``length`` and attends to all length + 1.
        cache, start = model.cache(batch, length + 1), length

    def run():
        model.forward(tokens, cache, start)

    # The first call warms up (oneDNN builds its kernels for new shapes); it also says how
    # long a call takes: 3 to 7 repeats, a few seconds of them, and one more warm-up call
    # for a short one.
    begin = time.perf_counter()
    run()
    once = time.perf_counter() - begin
    repeats, warmup = max(3, min(7, int(CASE_SECONDS / once))), int(once < 1.0)
    result = machine.timed(run, repeats=repeats, warmup=warmup)
    result["warmup"] = warmup + 1
    key = "prompt_len" if phase == "prefill" else "context_len"
    entry = {"phase": phase, "dtype": model.dtype_name, "batch": batch, key: length}
    entry |= {"cache_bytes": cache.nbytes} | result
    log(
        f"  {phase:7s} batch {batch:2d} {key} {length:5d}: {result['median_s'] * 1e3:9.2f} ms"
        f" (best {result['best_s'] * 1e3:.2f}, others {result['others_cpu']:.2f} cores)"
    )
    if (batch, length) in profiled[phase]:
        entry["profile"] = profile(run)
        shown = [
            f"{k} {v * 1e3:.1f} ms" for k, v in entry["profile"].items() if k != "operator_calls"
        ]
        log(f"    profiled: {', '.join(shown)}")
    return entry


def time_model(config, dtype, prefill, decode, profiled):
    """Every case of a model of ``config`` in ``dtype``, and the model's size."""
    log(f"model: {dtype}, building random weights")
    start = time.perf_counter()
    model = LlamaDecoder(config, dtype)
    count = model.parameter_count()
    log(f"  {count / 1e9:.3f} B parameters in {time.perf_counter() - start:.0f} s")
    generator = torch.Generator().manual_seed(0)
    cases = []
    with torch.inference_mode():
        for phase, sizes in (("prefill", prefill), ("decode", decode)):
            for batch, length in sizes:
                cases.append(time_case(model, phase, batch, length, profiled, generator))
                gc.collect()
    return cases, {"parameters": count, "weight_bytes": model.weight_bytes()}


def main():
    args = arguments()
    torch.set_flush_denormal(True)
    backend = machine.torch_backend(args.threads)
    cpu = machine.cpu_description()
    nbytes = stream_bytes(cpu)
    quick = QUICK if args.quick else {}
    started = datetime.datetime.now(datetime.UTC)
    log(f"{cpu['model_name']}, {cpu['usable_cpus']} CPUs, torch threads {backend.threads}")
    log(f"waiting for a quiet machine: others keep {machine.wait_for_quiet():.2f} cores busy")

    bandwidth = {"torch": measure_bandwidth(backend, nbytes)}
    bandwidth["numpy"] = measure_bandwidth(machine.NUMPY, nbytes)
    matmul = measure_matmul(
        backend,
        args.dtypes,
        quick.get("matmul_m", MATMUL_M),
        quick.get("matmul_kn", MATMUL_KN),
        nbytes,
    )
    config = scaled_config(base_config(), hidden_size=HIDDEN, n_layers=LAYERS)
    config["_name_or_path"] = f"{BASE}-scaled-d{HIDDEN}-l{LAYERS}"
    cases, model_info = [], {}
    for dtype in args.dtypes:
        timings, info = time_model(
            config,
            dtype,
            quick.get("prefill", PREFILL),
            quick.get("decode", DECODE),
            quick.get("profile", PROFILE),
        )
        cases += timings
        model_info[dtype] = info
    # And the bandwidth again, after the model: a drift between the two says the machine
    # changed (another tenant, a throttled core) while it was measured.
    bandwidth["torch_after"] = measure_bandwidth(backend, nbytes)

    result = {
        "schema": 1,
        "date": started.date().isoformat(),
        "started_utc": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.datetime.now(datetime.UTC) - started).total_seconds()),
        "quick": args.quick,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "blas": "MKL" if torch.backends.mkl.is_available() else "",
            "onednn": torch.backends.mkldnn.is_available(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        },
        "threads": {
            "torch_intra_op": backend.threads,
            "torch_inter_op": torch.get_num_interop_threads(),
            "usable_cpus": cpu["usable_cpus"],
        },
        "cpu": cpu | {"load_average_end": list(os.getloadavg())},
        "method": {
            "statistic": "each case: the median of its repeats after warm-up calls; best_s is "
            "the fastest repeat. A case is taken again (tries) while other processes keep more "
            f"than {machine.QUIET} cores busy (others_cpu, from /proc/stat).",
            "bandwidth": "torch: sum (read), copy_ and add(alpha=2, out=) (triad) over fp32 "
            f"arrays of {nbytes} bytes each, {backend.threads} threads; numpy: sum and copyto, "
            "one thread. STREAM's convention: copy moves 2 arrays, triad 3.",
            "matmul": "torch.nn.functional.linear(x, W), x of (M, K), W of (N, K), the weights "
            f"taken in turn from a pool of {nbytes} bytes of distinct matrices, so that every "
            "product reads its weights from memory, as a decode step does.",
            "model": "tools/measure/model.py: a hand-written Llama decoder (the products of "
            "transformers' LlamaForCausalLM), random weights, a KV cache allocated once per "
            "case, torch.inference_mode, scaled_dot_product_attention; a prefill starts at "
            "position 0 and computes the last position's logits; a decode step is one token "
            "per sequence at position context_len, attending to context_len + 1 positions.",
            "profile": "torch.profiler over a call of the case (the median of 3 after one "
            "untimed): each operator's own CPU time on the calling thread, grouped as products "
            "(aten::mm, addmm, bmm, oneDNN), attention (scaled_dot_product_attention's kernel) "
            "and other_ops; the step's wall time less their sum is Python and dispatch.",
        },
        "bandwidth": bandwidth,
        "matmul": matmul,
        "model": {
            "base": BASE,
            "scaled": {"hidden_size": HIDDEN, "num_hidden_layers": LAYERS},
            "config": config,
            **{dtype: info for dtype, info in model_info.items()},
        },
        "cases": cases,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1) + "\n")
    log(f"Measured: {args.output}")


if __name__ == "__main__":
    main()
