"""This machine as a lab: the committed ``make measure`` result, read by the library without
torch, and the harness's measuring functions, run tiny with numpy alone."""

import importlib.util
import math
import sys
from pathlib import Path

import pytest

import inference_arithmetic as ia
from inference_arithmetic.validation import machine

HARNESS = Path(__file__).resolve().parents[2] / "tools" / "measure" / "machine.py"
MEASUREMENT = machine.load()


def _harness():
    """tools/measure/machine.py, which imports torch only inside ``torch_backend``."""
    spec = importlib.util.spec_from_file_location("measure_machine", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _positive(value):
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def test_the_committed_measurement_is_complete():
    m = MEASUREMENT
    assert not m["quick"]
    assert m["threads"]["torch_intra_op"] >= 1
    assert "hostname" not in str(m).lower()
    for kind in ("read", "copy", "triad"):
        assert _positive(m["bandwidth"]["torch"][kind]["bandwidth"])
    assert {row["dtype"] for row in m["matmul"]} >= {"fp32"}
    assert all(_positive(row["flop_rate"]) for row in m["matmul"])
    phases = {(c["phase"], c["dtype"]) for c in m["cases"]}
    assert {("prefill", "fp32"), ("decode", "fp32")} <= phases
    for case in m["cases"]:
        assert _positive(case["median_s"]) and case["best_s"] <= case["median_s"]
        assert case["repeats"] == len(case["times_s"]) >= 3


def test_the_device_entry_holds_the_measured_figures_with_their_sources():
    cpu = machine.device(MEASUREMENT)
    assert isinstance(cpu, ia.GPU) and cpu.name == "this-cpu"
    chosen = machine.figures(MEASUREMENT)
    assert cpu.memory_bandwidth == chosen["memory_bandwidth"]["value"]
    for dtype, rate in cpu.peak_flop_rate.items():
        assert rate == chosen[f"flop_rate.{dtype}"]["value"]
        # The best sustained rate at LLM-like shapes, not the best of any shape.
        rows = [r for r in MEASUREMENT["matmul"] if r["dtype"] == dtype]
        assert rate == max(r["flop_rate"] for r in rows if r["m"] >= machine.LLM_LIKE_M)
    date = MEASUREMENT["date"]
    assert all(f"measured by make measure on {date}" in cpu.sources[f"peak_flop_rate.{d}"]
               for d in cpu.peak_flop_rate)  # fmt: skip
    assert date in cpu.sources["memory_bandwidth"]


def test_the_model_is_the_one_timed_and_a_scaled_llama():
    arch = machine.model_config(MEASUREMENT)
    base = ia.model(MEASUREMENT["model"]["base"])
    assert arch.d_head == base.d_head and arch.vocab_size == base.vocab_size
    assert arch.n_heads // arch.n_kv_heads == base.n_heads // base.n_kv_heads
    assert arch.d_ff / arch.d_model == base.d_ff / base.d_model
    counted = {v["parameters"] for v in MEASUREMENT["model"].values() if isinstance(v, dict)
               and "parameters" in v}  # fmt: skip
    assert counted == {ia.param_count(arch)}
    # Decode memory-bound: the weights a step reads are well past the last-level cache.
    llc = max(c["bytes"] for c in MEASUREMENT["cpu"]["caches"])
    assert 2 * (ia.param_count(arch) - arch.vocab_size * arch.d_model) > 2 * llc


def test_every_case_is_predicted_and_compared():
    rows = machine.compare(MEASUREMENT)
    assert len(rows) == len(MEASUREMENT["cases"])
    for row in rows:
        assert _positive(row["predicted_s"]) and _positive(row["measured_s"])
        assert row["error"] == pytest.approx(row["predicted_s"] / row["measured_s"] - 1)
        assert row["bound"] in ("compute", "memory")
    assert {r["bound"] for r in rows if r["phase"] == "decode"} == {"memory"}
    text = machine.table(rows)
    assert len(text.splitlines()) == len(rows) + 1 and "%" in text
    for phase in ("prefill", "decode"):
        assert _positive(machine.errors(rows, phase)["median"])


def test_predict_is_the_one_place_a_case_is_predicted():
    calls = []

    def halved(config, device, case, harness):
        calls.append(case["phase"])
        return machine.predict(config, device, case, harness) / 2

    rows = machine.compare(MEASUREMENT, predict=halved)
    assert len(calls) == len(rows)
    plain = machine.compare(MEASUREMENT)
    assert [r["predicted_s"] for r in rows] == pytest.approx([r["predicted_s"] / 2 for r in plain])


def test_the_profiled_cases_add_up():
    rows = machine.breakdown(MEASUREMENT)
    assert rows, "make measure profiles a few cases"
    for row in rows:
        parts = row["products_s"] + row["attention_s"] + row["other_ops_s"]
        assert 0.5 * row["measured_s"] < parts < 2 * row["measured_s"]
        assert _positive(row["weights_bandwidth"]) and _positive(row["products_flop_rate"])
    assert len(machine.breakdown_table(rows).splitlines()) == len(rows) + 1
    products = machine.matmul_table(MEASUREMENT).splitlines()
    assert len(products) == len(MEASUREMENT["matmul"]) + 1


def test_a_result_missing_a_part_is_refused(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"date": "2026-01-01"}')
    with pytest.raises(ValueError, match="not a make measure result"):
        machine.load(path)


def test_the_harness_measures_with_numpy_alone():
    harness = _harness()
    # Never wait for a quiet machine here: the other test worker keeps a core busy.
    harness.QUIET = math.inf
    assert "torch" not in vars(harness)  # torch only inside torch_backend
    rate = harness.matmul_rate(harness.NUMPY, "fp32", 8, 128, 128, 1 << 18, seconds=0.002)
    assert _positive(rate["flop_rate"]) and _positive(rate["weight_bandwidth"])
    assert rate["pool_bytes"] >= 1 << 18 and rate["repeats"] == 5
    moved = harness.bandwidth(harness.NUMPY, 1 << 20, kinds=("read", "copy"), repeats=3)
    assert moved["copy"]["bytes_moved"] == 2 * moved["read"]["bytes_moved"]
    assert all(_positive(r["bandwidth"]) for r in moved.values())
    cpu = harness.cpu_description()
    assert cpu["logical_cpus"] >= 1 and isinstance(cpu["caches"], list)
    assert "hostname" not in cpu and "node" not in cpu


def test_this_cpu_is_predicted_by_the_kernel_model_from_its_own_measured_kernels():
    # The target: every decode step within 25%, from the machine's own figures.
    rows = machine.compare(MEASUREMENT)
    decode = machine.errors(rows, "decode")
    assert decode["max"] < 0.25
    assert machine.errors(rows, "prefill")["median"] < 0.25
    cpu = machine.device(MEASUREMENT)
    assert {"stream", "decode_attention.bf16", "matmul_half_rows.bf16"} <= set(cpu.achieved)
    assert all("measured by make measure" in cpu.sources[f"achieved.{k}"] for k in cpu.achieved)
    harness = machine.engine(MEASUREMENT)
    assert 0 < harness.step_overhead < 0.05 and harness.batching == "static"
