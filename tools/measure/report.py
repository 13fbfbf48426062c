"""Predicted against measured for a `make measure` result, with the library alone (no torch).

.venv/bin/python tools/measure/report.py [FILE]   # default: the committed measurement
"""

from __future__ import annotations

import sys

from inference_arithmetic.validation import machine


def main(path: str | None = None) -> None:
    measurement = machine.load(path)
    cpu = machine.device(measurement)
    print(f"{cpu.full_name}, measured on {measurement['date']}")
    for key, figure in machine.figures(measurement).items():
        unit = "GFLOP/s" if key.startswith("flop") else "GB/s"
        print(f"  {key:17s} {figure['value'] / 1e9:8.1f} {unit}: {figure['how']}")
    print()
    print(machine.matmul_table(measurement))
    print()
    arch = machine.model_config(measurement)
    print(
        f"model {arch.name}: d={arch.d_model}, {arch.n_layers} layers, {arch.n_heads} heads "
        f"({arch.n_kv_heads} KV), d_ff={arch.d_ff}, vocabulary {arch.vocab_size:,}"
    )
    rows = machine.compare(measurement)
    print()
    print(machine.table(rows))
    print()
    for phase in ("decode", "prefill"):
        for dtype in sorted({r["dtype"] for r in rows}):
            e = machine.errors(rows, phase, dtype)
            print(f"{phase} {dtype}: median |error| {e['median']:.0%}, largest {e['max']:.0%}")
    breakdown = machine.breakdown(measurement)
    if breakdown:
        print()
        print(machine.breakdown_table(breakdown))


if __name__ == "__main__":
    main(*sys.argv[1:2])
