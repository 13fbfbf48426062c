"""The accelerator registry: every figure sourced, validation, look-ups, and anchor numbers."""

import dataclasses
import math

import pytest

import inference_arithmetic as ia
from inference_arithmetic.hardware.gpus import (
    FIGURES,
    FLOP_DTYPES,
    GPU,
    USER_SUPPLIED,
    gpu,
    gpu_names,
)

EXPECTED = {
    "a100-40gb",
    "a100-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "l4",
    "l40s",
    "rtx-4090",
    "mi300x",
    "tpu-v5e",
    # Added for the validation set's published measurements and for current hardware.
    "a10g",
    "a100-pcie-80gb",
    "rtx-3090",
    "gh200",
    "gh200-144gb",
    "apple-m1-max",
    "apple-m2-ultra",
    "apple-m3-max",
    "apple-m4-max",
    "b300",
    "gb200",
    "gb300",
    "mi325x",
    "mi355x",
    "tpu-v6e",
    "tpu-v7",
    "rtx-5090",
    "rtx-pro-6000",
    "dgx-spark",
    # A PC without a GPU: chapter 07's "will it run here".
    "desktop-cpu",
}


def toy(**changes):
    """A valid GPU with round figures, each sourced; ``changes`` break it one way."""
    values = dict(
        name="toy",
        vendor="Nobody",
        peak_flop_rate={"bf16": 1e15, "fp8": 2e15},
        memory_bandwidth=2e12,
        memory_bytes=80e9,
        interconnect="a link",
        interconnect_bandwidth=400e9,
        pcie_bandwidth=64e9,
        price_per_hour=2.0,
        price_date="2026-01-01",
        sources={
            "peak_flop_rate.bf16": "made up",
            "peak_flop_rate.fp8": "made up",
            **{name: "made up" for name in FIGURES},
        },
    )
    return GPU(**{**values, **changes})


def test_the_registry_has_the_accelerators_the_book_uses():
    assert EXPECTED <= set(gpu_names())
    assert ia.gpu is gpu and ia.gpu_names is gpu_names and ia.GPU is GPU


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_figure_of_every_registry_gpu_has_a_source(name):
    g = gpu(name)
    # Every rate and every figure, present or not: a missing one must say why it is missing.
    needed = [f"peak_flop_rate.{dtype}" for dtype in g.peak_flop_rate] + list(FIGURES)
    missing = [key for key in needed if len(g.sources.get(key, "").strip()) < 20]
    assert not missing, f"{name}: no (or a too short) source for {missing}"
    assert g.full_name and g.interconnect
    if g.price_per_hour is None:
        assert "not" in g.sources["price_per_hour"].lower()  # says why there is no price


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_registry_figures_are_in_base_units(name):
    g = gpu(name)
    # FLOP/s, not TFLOP/s; bytes, not GB; B/s, not GB/s.
    assert all(1e12 < rate < 1e17 for rate in g.peak_flop_rate.values())
    # Two channels of DDR5-5600 are 89.6 GB/s; 1e10 still catches a figure left in GB/s.
    assert 1e10 < g.memory_bandwidth < 1e14
    assert 1e10 < g.memory_bytes < 1e12
    # A Mac's Thunderbolt 4 is 5 GB/s each way; 1e9 still catches a figure left in GB/s. A PC
    # has no link (its source says why).
    if g.interconnect_bandwidth is None:
        assert "not" in g.sources["interconnect_bandwidth"].lower()
    else:
        assert 1e9 < g.interconnect_bandwidth < 1e13
    assert g.pcie_bandwidth is None or 1e10 < g.pcie_bandwidth < 1e12
    assert g.price_per_hour is None or 0.1 < g.price_per_hour < 50


def test_a_missing_source_is_user_supplied_and_fails_the_registry_check():
    sources = dict(toy().sources)
    del sources["memory_bandwidth"]
    mine = toy(sources=sources)
    assert mine.sources["memory_bandwidth"] == USER_SUPPLIED
    assert mine.user_supplied == ("memory_bandwidth",) and not toy().user_supplied
    with pytest.raises(ValueError, match="toy: no source for memory_bandwidth"):
        mine.check_sources()
    assert toy().check_sources() == toy()
    with pytest.raises(ValueError, match="price_per_hour and price_date go together"):
        toy(price_date=None).check_sources()
    sources = {**toy().sources, "peak_flop_rate.fp8": "  "}  # given, but empty: a mistake
    with pytest.raises(ValueError, match=r"no source for peak_flop_rate\.fp8"):
        toy(sources=sources)


def test_your_own_device_from_plain_figures():
    a6000 = GPU("a6000", {"bf16": 155e12}, memory_bandwidth=768e9, memory_bytes=48e9)
    given = {"peak_flop_rate.bf16", "memory_bandwidth", "memory_bytes"}
    assert set(a6000.user_supplied) == given
    shown = "GPU('a6000': 155 TFLOP/s bf16, 48 GB at 768 GB/s, no link; user-supplied)"
    assert repr(a6000) == shown
    one = ia.calculate("llama-3.1-8b", a6000, batch=4)
    h100 = dataclasses.replace(gpu("h100-sxm"), name="mine", sources={})
    assert h100.user_supplied and "user-supplied" in repr(h100)
    assert ia.calculate("llama-3.1-8b", h100, batch=4)["tpot"] < one["tpot"]  # 4.4x the bandwidth
    with pytest.raises(ia.ArgumentError, match="a6000 has no interconnect_bandwidth.*n_gpus=2"):
        ia.calculate("llama-3.1-8b", a6000, n_gpus=2)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_registry_gpu_prints_on_one_short_line(name):
    text = repr(gpu(name))
    assert text.startswith(f"GPU({name!r}: ") and "\n" not in text and len(text) < 200
    assert "user-supplied" not in text and "http" not in text


def test_an_absent_figure_needs_no_source():
    sources = {k: v for k, v in toy().sources.items() if k != "pcie_bandwidth"}
    assert toy(pcie_bandwidth=None, sources=sources).pcie_bandwidth is None


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(memory_bandwidth=-2e12), "memory_bandwidth must be positive, got -2"),
        (dict(memory_bytes=0), "memory_bytes must be positive"),
        (dict(interconnect_bandwidth=math.nan), "interconnect_bandwidth must be a number"),
        (dict(pcie_bandwidth="64 GB/s"), "pcie_bandwidth must be a number"),
        (dict(price_per_hour=-1.0), "price_per_hour must be positive"),
        (dict(peak_flop_rate={"bf16": 0}), r"peak_flop_rate\['bf16'\] must be positive"),
        (dict(peak_flop_rate={"bf16": True}), "must be a number"),
        (dict(peak_flop_rate={}), "peak_flop_rate must map dtypes"),
        (dict(peak_flop_rate={"bfloat16": 1e15}), "unknown dtype 'bfloat16'.*known dtypes: fp32"),
        (dict(sources={**toy().sources, "memory_bandwith": "typo"}), "unknown figures"),
        (dict(price_per_hour=None), "price_date without a price_per_hour"),
        (dict(price_date="May 2026"), "price_date must be an ISO date"),
        (dict(interconnect=""), "interconnect must be a non-empty string"),
        # A figure typed in its prefixed unit: 768 meant as GB/s, 155 as TFLOP/s, 80 as GB.
        (dict(memory_bandwidth=768), r"768 B/s is implausibly small: for 768 GB/s write 768e9"),
        (dict(peak_flop_rate={"bf16": 155}), r"for 155 TFLOP/s write 155e12"),
        (dict(memory_bytes=80), r"memory_bytes is in B .*for 80 GB write 80e9"),
        (dict(pcie_bandwidth=64), r"pcie_bandwidth is in B/s"),
    ],
)
def test_invalid_gpus_raise_a_clear_error(changes, message):
    with pytest.raises(ValueError, match=message):
        toy(**changes)


def test_an_optional_count_written_as_a_whole_float_is_that_count():
    # 8.5e10 bytes is a whole number of bytes, as a count anywhere in the library; 132.5 SMs not.
    sources = {**toy().sources, "usable_memory_bytes": "made up", "sm_count": "made up"}
    g = toy(usable_memory_bytes=8.5e10, sm_count=132.0, sources=sources)
    assert (g.usable_memory_bytes, g.sm_count) == (85_000_000_000, 132)
    assert type(g.usable_memory_bytes) is int and type(g.sm_count) is int
    with pytest.raises(ValueError, match="toy: sm_count must be a whole number from 1 up, got"):
        toy(sm_count=132.5, sources=sources)


def test_usable_memory_is_at_most_the_boards_in_binary_units():
    # An "80 GB" board's driver reports at most 80 GiB (about 85.9e9 B): 90e9 is a typo, refused
    # naming both figures. Every registry GPU that gives a usable figure keeps to it.
    sources = {**toy().sources, "usable_memory_bytes": "made up"}
    with pytest.raises(ia.ArgumentError, match=r"usable_memory_bytes=90,000,000,000 is more"):
        toy(usable_memory_bytes=9e10, sources=sources)
    assert toy(usable_memory_bytes=80 * 2**30, sources=sources).usable_memory_bytes == 80 * 2**30
    given = [gpu(n) for n in ia.gpu_names() if gpu(n).usable_memory_bytes is not None]
    assert len(given) >= 10
    assert all(g.usable_memory_bytes <= g.memory_bytes * 2**30 / 1e9 * (1 + 1e-12) for g in given)


def test_unknown_gpu_lists_close_matches():
    with pytest.raises(KeyError, match="unknown gpu 'h100'; close matches: .*h100-sxm"):
        gpu("h100")
    with pytest.raises(KeyError, match="a100-80gb"):
        gpu("a100-80g")


def test_a_dtype_the_gpu_lacks_names_the_ones_it_has():
    with pytest.raises(KeyError, match="a100-80gb has no peak FLOP rate for 'fp8'; it has: fp32"):
        gpu("a100-80gb").flop_rate("fp8")
    with pytest.raises(KeyError, match="it has: bf16, int8"):
        gpu("tpu-v5e").flop_rate("fp32")


def test_the_gpu_is_frozen_and_its_tables_read_only():
    g = gpu("h100-sxm")
    with pytest.raises(AttributeError):
        g.memory_bandwidth = 1.0
    with pytest.raises(TypeError):
        g.peak_flop_rate["bf16"] = 1.0
    assert hash(g) == hash(gpu("h100-sxm"))


def test_h100_sxm_anchor_numbers():
    g = gpu("h100-sxm")
    assert g.flop_rate("bf16") == 989e12  # dense; the datasheet's 1,979 is with sparsity
    assert g.memory_bandwidth == 3.35e12  # HBM3
    assert g.memory_bytes == 80e9
    assert g.interconnect_bandwidth_total == 900e9  # NVLink 4, both directions
    assert g.interconnect_bandwidth == 450e9  # each way: what a ring all-reduce moves
    assert g.pcie_bandwidth == 64e9  # PCIe Gen5 x16, each way
    assert g.ridge_point("bf16") == pytest.approx(295.2, abs=0.1)


def test_a100_80gb_anchor_numbers():
    g = gpu("a100-80gb")
    assert g.flop_rate("bf16") == 312e12
    assert g.memory_bandwidth == 2039e9
    assert g.memory_bytes == 80e9


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dense_convention_and_the_order_of_the_formats(name):
    rates = gpu(name).peak_flop_rate
    if "fp8" in rates and "bf16" in rates:
        assert rates["fp8"] > rates["bf16"]
    if "fp4" in rates and "fp8" in rates:
        assert rates["fp4"] > rates["fp8"]
    if "bf16" in rates and "tf32" in rates:
        assert rates["bf16"] > rates["tf32"]
    assert set(rates) <= set(FLOP_DTYPES)


def test_dense_not_sparse():
    # The sparse figures datasheets print are twice these.
    assert gpu("h100-sxm").flop_rate("bf16") < 1.5e15
    assert gpu("h100-sxm").flop_rate("fp8") < 3e15
    assert gpu("h200").flop_rate("bf16") == gpu("h100-sxm").flop_rate("bf16")
    assert gpu("b200").flop_rate("bf16") < 3e15
    assert gpu("mi300x").flop_rate("bf16") < 2e15
    assert gpu("l4").flop_rate("bf16") < 200e12


def test_prices_have_dates_and_sources():
    for name in gpu_names():
        g = gpu(name)
        if g.price_per_hour is not None:
            assert g.price_date >= "2026-01-01", name
            assert "http" in g.sources["price_per_hour"], name


# --- Achieved figures: the GPUs' measured kernels ------------------------------------------------


def test_achieved_figures_are_sourced_fractions_or_amounts():
    from inference_arithmetic.hardware import gpus

    for name in ia.gpu_names():
        g = ia.gpu(name)
        for key, value in g.achieved.items():
            assert g.sources[f"achieved.{key}"].strip(), (name, key)
            if key not in gpus._AMOUNTS:
                assert 0 < value <= 1, (name, key)


def test_a_gpu_without_a_measurement_takes_its_vendors_median():
    from inference_arithmetic.hardware.gpus import achieved_figure

    value, where = achieved_figure(ia.gpu("l4"), "stream")
    assert "median of" in where and "l4 has" not in where
    nvidia = [ia.gpu(n) for n in ia.gpu_names() if "stream" in ia.gpu(n).achieved]
    assert (
        min(g.achieved["stream"] for g in nvidia)
        <= value
        <= max(g.achieved["stream"] for g in nvidia)
    )
    # A format measured nowhere stands in with the 16-bit figure of the same chip.
    own, where = achieved_figure(ia.gpu("h100-sxm"), "matmul.fp32")
    assert own == ia.gpu("h100-sxm").achieved["matmul.bf16"] and "matmul.bf16" in where
    with pytest.raises(KeyError, match="unknown achieved figure"):
        achieved_figure(ia.gpu("h100-sxm"), "speed")


def test_a_blackwell_datacenter_gpu_multiplies_fp4_at_its_own_measured_rate():
    # Not the workstation cards' median (0.80: RTX PRO 6000, RTX 5090, DGX Spark): the B200's
    # own CUTLASS NVFP4 product, 3,370.423 TFLOP/s at 1,024 x 7,168 x 4,608 (FlashInfer PR
    # 1979), 0.374 of 9 PFLOP/s, read back through the step model's m / (m + m_c) at the
    # 150 rows of m_c the B200 takes: 0.374 x 1,174 / 1,024 = 0.429.
    from inference_arithmetic.hardware.gpus import achieved_figure

    b200 = ia.gpu("b200")
    value, where = achieved_figure(b200, "matmul.fp4")
    assert where == "achieved.matmul.fp4 of b200"
    half = b200.achieved_figure("matmul_half_rows.fp4")
    assert value == pytest.approx(
        3370.423e12 / b200.flop_rate("fp4") * (1024 + half) / 1024, abs=5e-4
    )
    workstations = [ia.gpu(n).achieved["matmul.fp4"] for n in ("rtx-pro-6000", "rtx-5090")]
    assert value < 0.6 * min(workstations)
    # The GB200's GPU is the same die: it takes the B200's fraction, sourced as such.
    gb200 = ia.gpu("gb200")
    assert achieved_figure(gb200, "matmul.fp4") == (value, "achieved.matmul.fp4 of gb200")
    assert "B200's measurement" in gb200.sources["achieved.matmul.fp4"]


def test_usable_memory_is_what_the_driver_reports():
    h100 = ia.gpu("h100-sxm")
    assert h100.usable_memory_bytes == 81559 * 2**20 > h100.memory_bytes
    for step in ("roofline", "kernels"):  # a deployment's memory, however it is timed
        values = ia.Scenario("llama-3.1-8b", h100, step=step).values()
        assert values["gpu_memory"] == h100.usable_memory_bytes
    assert ia.gpu("tpu-v5e").figures()["gpu_memory"] == ia.gpu("tpu-v5e").memory_bytes


def test_an_achieved_figure_out_of_range_is_refused():
    h100 = ia.gpu("h100-sxm")
    sources = {**h100.sources, "achieved.stream": "a test"}
    with pytest.raises(ValueError, match="is a fraction"):
        dataclasses.replace(h100, achieved={"stream": 1.5}, sources=sources)
    with pytest.raises(ValueError, match="no source for achieved.stream"):
        unsourced = {k: v for k, v in h100.sources.items() if k != "achieved.stream"}
        mine = dataclasses.replace(
            h100, achieved={**h100.achieved, "stream": 0.5}, sources=unsourced
        )
        mine.check_sources()


def test_a_registry_reads_an_entry_when_it_is_asked_for():
    from inference_arithmetic.core.registry import Registry

    specs = Registry("inference_arithmetic.hardware.specs", lambda entry: entry["memory_bytes"])
    assert list(specs) == ia.gpu_names() and "h100-sxm" in specs and not specs._made
    assert specs["h100-sxm"] == ia.gpu("h100-sxm").memory_bytes
    assert list(specs._made) == ["h100-sxm"]  # one file read
    specs._paths["h100"] = specs._paths["h200"]  # a file not named after its entry
    with pytest.raises(ValueError, match="holds 'h200', not 'h100'"):
        specs["h100"]


def test_the_desktop_cpu_is_its_two_ddr5_channels_and_its_cores():
    cpu = ia.gpu("desktop-cpu")
    assert cpu.memory_bandwidth == 2 * 8 * 5600e6  # two 64-bit channels at 5,600 MT/s
    assert cpu.flop_rate("fp32") == 16 * 2 * 16 * 2 * 4.3e9  # cores, FMA pipes, lanes, FLOPs
    assert cpu.interconnect_bandwidth is None and list(cpu.peak_flop_rate) == ["fp32"]
    # Decode of one request is far left of its ridge point, as on every GPU.
    assert 10 < cpu.ridge_point("fp32") < 100
    with pytest.raises(ia.ArgumentError, match="desktop-cpu has no interconnect_bandwidth"):
        ia.calculate("llama-3.1-8b", cpu, dtype="q4_k_m", compute_dtype="fp32", n_gpus=2)
