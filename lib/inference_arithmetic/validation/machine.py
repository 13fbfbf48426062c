"""This machine as a lab: what ``make measure`` measured, read as a device and a model, and
the library's prediction of every case it timed.

>>> measurement = load()  # the committed run, data/this_machine.json
>>> cpu = device(measurement)
>>> cpu.name, sorted(cpu.peak_flop_rate)
('this-cpu', ['bf16', 'fp32'])
>>> arch = model_config(measurement)
>>> arch.d_model, arch.n_layers, arch.n_heads, arch.n_kv_heads, arch.d_ff  # llama-3.1-8b scaled
(2048, 8, 16, 4, 7168)
>>> rows = compare(measurement)
>>> rows[0]["phase"], rows[0]["predicted_s"] > 0
('prefill', True)

``make measure`` (``tools/measure/``, with torch) writes the JSON; this module needs none.
``device`` turns the machine's achieved figures into a ``GPU`` entry, each figure's source
"measured by make measure on <date>"; ``model_config`` reads the exact config that was
timed; ``predict`` is the one place the library's prediction of a case is made, so that a
finer step model can replace it; ``compare`` and ``table`` hold every case against it.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path

from inference_arithmetic.core.numeric import numeric
from inference_arithmetic.core.symbols import B, S, T
from inference_arithmetic.formulas import latency, transformer
from inference_arithmetic.hardware.engines import Engine
from inference_arithmetic.hardware.gpus import GPU
from inference_arithmetic.models.config import ModelConfig
from inference_arithmetic.models.counts import param_count
from inference_arithmetic.serving.scenario import Scenario
from inference_arithmetic.serving.timing import IDEAL, decode_step_time, prefill_time

__all__ = [
    "load",
    "figures",
    "device",
    "model_config",
    "achieved",
    "engine",
    "predict",
    "roofline_sides",
    "compare",
    "errors",
    "table",
    "matmul_table",
    "breakdown",
    "breakdown_table",
]

DATA = "this_machine.json"
"""The committed measurement of the machine the book was last measured on, in ``data/``."""

LLM_LIKE_M = 512
"""Rows of a product at least this many, against K = N of 2048 or more, are "LLM-like": a
prompt of hundreds of tokens through a layer's weights. The device's FLOP rate is the best
sustained (median) rate among them."""


def load(path=None) -> dict:
    """A ``make measure`` result: the file at ``path``, or the committed ``data/`` one."""
    if path is None:
        text = (resources.files("inference_arithmetic.validation") / "data" / DATA).read_text()
    else:
        text = Path(path).read_text()
    measurement = json.loads(text)
    for key in ("date", "cpu", "bandwidth", "matmul", "model", "cases"):
        if key not in measurement:
            raise ValueError(f"not a make measure result: no {key!r}")
    return measurement


def figures(measurement: Mapping) -> dict[str, dict]:
    """The figures a device entry takes from a measurement, each ``{"value", "how"}``.

    - ``flop_rate.<dtype>``: the best median FLOP/s of ``x @ W.T`` at LLM-like shapes
      (M >= ``LLM_LIKE_M``, K = N >= 2048) in that dtype;
    - ``memory_bandwidth``: the read (a sum over an array four times the last-level cache):
      a decode step reads its weights and cache and writes almost nothing;
    - ``copy_bandwidth``: a copy, for the one-CPU "link" (never used on one device).
    """
    threads = measurement["threads"]["torch_intra_op"]
    found = {}
    for row in measurement["matmul"]:
        if row["m"] < LLM_LIKE_M or min(row["k"], row["n"]) < 2048:
            continue
        best = found.get(row["dtype"])
        if best is None or row["flop_rate"] > best["flop_rate"]:
            found[row["dtype"]] = row
    result = {}
    for dtype, row in sorted(found.items()):
        result[f"flop_rate.{dtype}"] = {
            "value": row["flop_rate"],
            "how": f"torch.nn.functional.linear in {dtype}, M={row['m']}, K={row['k']}, "
            f"N={row['n']}, {threads} threads, median of {row['repeats']} repeats: the best of "
            f"the shapes with M >= {LLM_LIKE_M}",
        }
    read, copy = (
        measurement["bandwidth"]["torch"]["read"],
        measurement["bandwidth"]["torch"]["copy"],
    )
    result["memory_bandwidth"] = {
        "value": read["bandwidth"],
        "how": f"torch sum over {read['array_bytes']:,} bytes of fp32, {threads} threads, "
        f"median of {read['repeats']} repeats (the triad: "
        f"{measurement['bandwidth']['torch']['triad']['bandwidth'] / 1e9:.1f} GB/s)",
    }
    result["copy_bandwidth"] = {
        "value": copy["bandwidth"],
        "how": f"torch copy_ of {copy['array_bytes']:,} bytes (2 bytes moved per byte copied)",
    }
    return result


def _half_rows(rows, peak) -> float:
    """The M_half of ``rate = peak M / (M + M_half)`` that fits products of several M best (a
    least-squares fit of M / rate, which is linear in M: (M + M_half) / peak)."""
    ms = [r["m"] for r in rows]
    ys = [r["m"] / r["flop_rate"] * peak - r["m"] for r in rows]  # = M_half for each, ideally
    return max(statistics.median(ys), 1e-3) if ms else 1.0


def achieved(measurement: Mapping) -> dict[str, dict]:
    """The device's kernel figures (``GPU.achieved``), each ``{"value", "how"}``, from the
    machine's own products and the profile of its timed steps: per format, the large-product
    rate (1: the peak recorded is the best sustained), the rows at half of it (fitted to the
    products of M >= 4 at the widest K = N, where they are compute-bound), the rate a product
    of one row streams its weights at, and what decode and prompt attention reached in the
    profiled cases."""
    chosen = figures(measurement)
    bandwidth = chosen["memory_bandwidth"]["value"]
    result = {}
    for key in [k for k in chosen if k.startswith("flop_rate.")]:
        dtype, peak = key.split(".")[1], chosen[key]["value"]
        rows = [r for r in measurement["matmul"] if r["dtype"] == dtype]
        widest = max(r["k"] for r in rows)
        rows = [r for r in rows if r["k"] == r["n"] == widest]
        result[f"matmul.{dtype}"] = {"value": 1.0, "how": chosen[key]["how"]}
        bound = [r for r in rows if r["m"] >= 4]
        result[f"matmul_half_rows.{dtype}"] = {
            "value": _half_rows(bound, peak),
            "how": f"the median over M = {', '.join(str(r['m']) for r in bound)} (K = N = "
            f"{widest}) of M (peak / rate - 1), so that rate = peak M / (M + M_half)",
        }
        (one,) = [r for r in rows if r["m"] == 1]
        key = "stream" if dtype in ("bf16", "fp16") else f"stream.{dtype}"
        result[key] = {
            "value": min(one["weight_bandwidth"] / bandwidth, 1.0),
            "how": f"a product of one row by K = N = {widest} weights in {dtype} streams them "
            f"at {one['weight_bandwidth'] / 1e9:.1f} GB/s, of the {bandwidth / 1e9:.1f} read",
        }
    for row in breakdown(measurement, with_achieved=False):
        dtype = row["dtype"]
        if row["phase"] == "decode":
            value = row["cache_bandwidth"] / bandwidth
            name, how = f"decode_attention.{dtype}", "reads the KV cache"
        else:
            value = row["attention_flop_rate"] / row["flop_rate"]
            name, how = f"prompt_attention.{dtype}", "reaches, of the peak FLOP/s,"
        if name not in result or row["length"] * row["batch"] > result[name]["size"]:
            result[name] = {  # the largest profiled case: the least fixed cost in it
                "value": min(value, 1.0),
                "size": row["length"] * row["batch"],
                "how": f"attention {how} {value:.2f} in the profiled {row['phase']} of batch "
                f"{row['batch']} at {row['length']} tokens (torch's profiler)",
            }
    for entry in result.values():
        entry.pop("size", None)
    return result


def engine(measurement: Mapping) -> Engine:
    """The harness's own decoder as an engine: PyTorch eager, scaled_dot_product_attention on
    the cache (one read per KV head, fused), one stream; its fixed cost per step is the
    profiled time outside the products and attention (Python, dispatch, the small operators),
    the median over the profiled decode steps."""
    fixed = [
        r["python_s"] + r["other_ops_s"]
        for r in breakdown(measurement, with_achieved=False)
        if r["phase"] == "decode"
    ]
    measured = f"measured by make measure on {measurement['date']}"
    step = statistics.median(fixed)
    sources = {
        "kv_shared": "tools/measure/model.py stacks a group's queries against its KV head "
        "(scaled_dot_product_attention with enable_gqa): no key or value is repeated",
        "flash_attention": "scaled_dot_product_attention: one fused kernel",
        "kernel_overhead": "counted in the step's fixed cost (the profile does not split it)",
        "step_overhead": f"{measured}: the profiled decode steps' time outside products and "
        f"attention, median {step * 1e3:.1f} ms",
        "request_overhead": "one stream: none apart from the step",
        "eager": "PyTorch eager: every operator dispatched by Python, no CUDA graph",
        "host_op_cost": "counted in the step's fixed cost (the profile's Python and dispatch)",
        "allreduce": "one device: unused",
        "batching": "the harness times one batch at a time",
    }
    return Engine(
        name="this-harness",
        full_name="make measure's decoder (PyTorch eager, CPU)",
        kv_shared=True,
        flash_attention=True,
        kernel_overhead=0.0,
        step_overhead=step,
        request_overhead=0.0,
        eager="all",
        host_op_cost=0.0,
        allreduce="nccl",
        batching="static",
        sources=sources,
    )


def device(measurement: Mapping) -> GPU:
    """The measured machine as a ``GPU`` entry of its achieved figures (not a datasheet's):
    its peaks are the best it sustained, and its kernel figures (``achieved``) what its
    products and attention reached."""
    return _device(measurement, achieved(measurement))


def _bare_device(measurement: Mapping) -> GPU:
    """The device without its kernel figures (which ``achieved`` derives from it)."""
    return _device(measurement, {})


def _device(measurement: Mapping, kernels: Mapping) -> GPU:
    cpu = measurement["cpu"]
    measured = f"measured by make measure on {measurement['date']}"
    chosen = figures(measurement)
    rates = {key.split(".")[1]: f["value"] for key, f in chosen.items() if key.startswith("flop")}
    sources = {
        f"peak_flop_rate.{d}": f"{measured}: {chosen[f'flop_rate.{d}']['how']}" for d in rates
    }
    sources["memory_bandwidth"] = f"{measured}: {chosen['memory_bandwidth']['how']}"
    sources["memory_bytes"] = f"{measured}: MemTotal of /proc/meminfo"
    sources["interconnect_bandwidth"] = (
        f"{measured}: no link, one CPU; its memory copy stands in (a message between two "
        f"processes of one machine is a copy), unused on one device: "
        f"{chosen['copy_bandwidth']['how']}"
    )
    sources["link_domain"] = "one CPU: no other device to talk to"
    sources.update({f"achieved.{k}": f"{measured}: {v['how']}" for k, v in kernels.items()})
    vendors = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}
    threads = measurement["threads"]["torch_intra_op"]
    caches = ", ".join(
        f"L{c['level']} {c['type'].lower()} {c['bytes'] // 1024:,} KiB" for c in cpu["caches"]
    )
    return GPU(
        name="this-cpu",
        vendor=vendors.get(cpu["vendor"], cpu["vendor"] or "unknown"),
        full_name=f"{cpu['model_name']}, {threads} threads",
        peak_flop_rate=rates,
        memory_bandwidth=chosen["memory_bandwidth"]["value"],
        memory_bytes=cpu["memory_bytes"],
        interconnect="none (one CPU)",
        interconnect_bandwidth=chosen["copy_bandwidth"]["value"],
        link_domain=1,
        achieved={k: v["value"] for k, v in kernels.items()},
        sources=sources,
        notes=f"{cpu['logical_cpus']} logical CPUs; caches per core and shared: {caches}; "
        f"extensions {', '.join(cpu['flags'])}",
    )


def model_config(measurement: Mapping) -> ModelConfig:
    """The exact model that was timed, read from its Hugging Face config; ``ValueError`` if
    the library's parameter count differs from the one the harness counted."""
    entry = measurement["model"]
    config = ModelConfig.from_hf_config(entry["config"])
    counted = {
        info["parameters"]
        for info in entry.values()
        if isinstance(info, dict) and "parameters" in info
    }
    if counted and counted != {param_count(config)}:
        raise ValueError(
            f"{config.name}: the harness counted {sorted(counted)} parameters, the library "
            f"{param_count(config)}"
        )
    return config


def _length(case: Mapping) -> int:
    return case["prompt_len"] if case["phase"] == "prefill" else case["context_len"]


def predict(config: ModelConfig, device: GPU, case: Mapping, harness: Engine | None = None):
    """Seconds the library predicts for one timed ``case`` (a prefill of ``batch`` prompts of
    ``prompt_len`` tokens, or a decode step of ``batch`` sequences at ``context_len``): the
    kernel-level step model at the device's measured kernels and the harness's fixed cost
    (``harness``, default: the one of the committed measurement)."""
    harness = engine(load()) if harness is None else harness
    options = dict(batch=case["batch"], dtype=case["dtype"], step="kernels", engine=harness)
    if case["phase"] == "prefill":
        return prefill_time(config, device, prompt_len=case["prompt_len"], **options)
    return decode_step_time(config, device, context_len=case["context_len"], **options)


@functools.lru_cache(maxsize=16)
def _sides(config: ModelConfig, phase: str):
    if phase == "prefill":
        sides = latency.prefill_compute_time(config), latency.prefill_memory_time(config)
    else:
        sides = latency.decode_compute_time(config), latency.decode_memory_time(config)
    return tuple(numeric(side) for side in sides)


def _ideal_values(config: ModelConfig, device: GPU, case: Mapping) -> dict:
    """The values of the formulas for one timed ``case`` on ``device``, at the ideal roofline
    (``IDEAL``), its length as the prompt and as the context."""
    length = _length(case)
    s = Scenario(
        config,
        device,
        batch=case["batch"],
        prompt_len=length,
        output_len=1,
        dtype=case["dtype"],
        **IDEAL,
    )
    return {**s.values(), "context_len": length}


def roofline_sides(config: ModelConfig, device: GPU, case: Mapping) -> tuple[float, float]:
    """The compute and the memory seconds of the roofline ``predict`` takes the longer of."""
    values = _ideal_values(config, device, case)
    return tuple(float(side.from_values(values)) for side in _sides(config, case["phase"]))


def compare(
    measurement: Mapping, predict: Callable[[ModelConfig, GPU, Mapping, Engine], float] = predict
) -> list[dict]:
    """Every timed case with its prediction: phase, dtype, batch, length (prompt or context),
    ``predicted_s``, ``measured_s`` (the median), ``error`` (predicted / measured - 1) and
    ``bound`` (the side of the roofline that is longer)."""
    config, cpu, harness = model_config(measurement), device(measurement), engine(measurement)
    rows = []
    for case in measurement["cases"]:
        predicted = predict(config, cpu, case, harness)
        compute, memory = roofline_sides(config, cpu, case)
        rows.append(
            {
                "phase": case["phase"],
                "dtype": case["dtype"],
                "batch": case["batch"],
                "length": _length(case),
                "predicted_s": predicted,
                "measured_s": case["median_s"],
                "error": predicted / case["median_s"] - 1,
                "bound": "compute" if compute >= memory else "memory",
            }
        )
    return rows


def errors(rows: list[dict], phase: str, dtype: str | None = None) -> dict[str, float]:
    """The median and the largest absolute error of the ``phase`` rows (of one dtype)."""
    chosen = [abs(r["error"]) for r in rows if r["phase"] == phase and dtype in (None, r["dtype"])]
    if not chosen:
        return {"median": math.nan, "max": math.nan}
    return {"median": statistics.median(chosen), "max": max(chosen)}


def table(rows: list[dict]) -> str:
    """The rows as a text table: case, predicted, measured, error %."""
    lines = [
        f"{'case':34s} {'bound':>7s} {'predicted':>11s} {'measured':>11s} {'error':>8s}",
    ]
    for r in rows:
        what = "prompt" if r["phase"] == "prefill" else "context"
        case = f"{r['phase']} {r['dtype']} batch {r['batch']} {what} {r['length']}"
        lines.append(
            f"{case:34s} {r['bound']:>7s} {r['predicted_s'] * 1e3:8.2f} ms "
            f"{r['measured_s'] * 1e3:8.2f} ms {r['error'] * 100:+7.1f}%"
        )
    return "\n".join(lines)


def matmul_table(measurement: Mapping) -> str:
    """The measured products as text: FLOP/s, and the rate they stream their weights at,
    for each dtype, K = N and M (the rate at small M is what a decode step's products get)."""
    lines = [f"{'product':26s} {'GFLOP/s':>9s} {'weights GB/s':>13s}"]
    for r in measurement["matmul"]:
        sides = f"K=N={r['k']}" if r["k"] == r["n"] else f"K={r['k']} N={r['n']}"
        shape = f"{r['dtype']} M={r['m']} {sides}"
        lines.append(f"{shape:26s} {r['flop_rate'] / 1e9:9.1f} {r['weight_bandwidth'] / 1e9:13.1f}")
    return "\n".join(lines)


@functools.lru_cache(maxsize=16)
def _work(config: ModelConfig, phase: str):
    """The bytes of weights and of KV cache a step of ``phase`` moves, and its FLOPs in
    products and in attention, as the serving formulas count them, compiled."""
    if phase == "prefill":
        weights = latency.weight_bytes_read(config, B * T)
        cache = latency.cache_bytes(config).subs(S, T)
        attention = transformer.attention_flops(config, causal=True).subs(S, 0)
        flops = transformer.step_flops(config, causal=True, last_logits_only=True).subs(S, 0)
    else:
        weights = latency.weight_bytes_read(config, B)
        cache = latency.cache_bytes(config)
        attention = transformer.attention_flops(config, mla="absorbed").subs(T, 1)
        flops = transformer.decode_flops(config, mla="absorbed")
    parts = {"weights": weights, "cache": cache, "products": flops - attention}
    return {name: numeric(expr) for name, expr in (parts | {"attention": attention}).items()}


def breakdown(measurement: Mapping, with_achieved: bool = True) -> list[dict]:
    """Where the time of each profiled case went, against what the roofline assumes.

    For each case ``make measure`` profiled: the seconds in the matrix products, in attention
    and in the other operators (torch's profiler), the rest of the profiled call (Python and
    dispatch), and what each part achieved: a decode step's products stream the weights at
    ``weights_bandwidth`` and its attention reads the cache at ``cache_bandwidth`` (against
    the device's ``memory_bandwidth``); a prefill's products reach ``products_flop_rate``
    (against its peak FLOP rate).
    """
    config = model_config(measurement)
    cpu = device(measurement) if with_achieved else _bare_device(measurement)
    rows = []
    for case in measurement["cases"]:
        if "profile" not in case:
            continue
        p, values = case["profile"], _ideal_values(config, cpu, case)
        work = {
            name: float(f.from_values(values)) for name, f in _work(config, case["phase"]).items()
        }
        parts = p["products"] + p["attention"] + p["other_ops"]
        rows.append(
            {
                "phase": case["phase"],
                "dtype": case["dtype"],
                "batch": case["batch"],
                "length": _length(case),
                "measured_s": case["median_s"],
                "products_s": p["products"],
                "attention_s": p["attention"],
                "other_ops_s": p["other_ops"],
                "python_s": max(0.0, p["profiled_wall"] - parts),
                "weights_bandwidth": work["weights"] / p["products"],
                "cache_bandwidth": work["cache"] / p["attention"],
                "products_flop_rate": work["products"] / p["products"],
                "attention_flop_rate": work["attention"] / p["attention"],
                "memory_bandwidth": cpu.memory_bandwidth,
                "flop_rate": cpu.flop_rate(case["dtype"]),
            }
        )
    return rows


def breakdown_table(rows: list[dict]) -> str:
    """The profiled cases as text: the parts of a step, in ms, and what they achieved."""
    lines = [
        f"{'profiled case':34s} {'products':>9s} {'attention':>9s} {'other':>7s} "
        f"{'python':>7s}  achieved (the device's figure)"
    ]
    for r in rows:
        what = "prompt" if r["phase"] == "prefill" else "context"
        case = f"{r['phase']} {r['dtype']} batch {r['batch']} {what} {r['length']}"
        if r["phase"] == "decode":
            achieved = (
                f"weights {r['weights_bandwidth'] / 1e9:.1f} GB/s, cache "
                f"{r['cache_bandwidth'] / 1e9:.1f} GB/s ({r['memory_bandwidth'] / 1e9:.1f})"
            )
        else:
            achieved = (
                f"products {r['products_flop_rate'] / 1e9:.0f} GFLOP/s, attention "
                f"{r['attention_flop_rate'] / 1e9:.0f} ({r['flop_rate'] / 1e9:.0f})"
            )
        lines.append(
            f"{case:34s} {r['products_s'] * 1e3:6.1f} ms {r['attention_s'] * 1e3:6.1f} ms "
            f"{r['other_ops_s'] * 1e3:4.1f} ms {r['python_s'] * 1e3:4.1f} ms  {achieved}"
        )
    return "\n".join(lines)
