"""ia.sweep: every row is what ia.calculate answers for its arguments, or the message it refuses
them with; the grid's order; names refused at once."""

import itertools

import numpy as np
import pytest

import inference_arithmetic as ia

NUMBERS = [key for key in ia.serving.sweep.COLUMNS]


def calculated(**arguments):
    """``calculate``'s answer as the sweep's columns, or its refusal as text."""
    try:
        r = ia.calculate(**arguments)
    except ValueError as error:
        return str(error)
    flat = {
        **{f"memory.{k}": r["memory"][k] for k in ("weights", "kv_cache", "activations", "total")},
        "memory.budget": r["memory"]["budget"],
        **{k: r[k] for k in ("ttft", "tpot", "request_time", "throughput")},
        **{f"cost.{k}": r["cost"][k] for k in ("input", "output", "request")},
        "bound.prefill": r["bound"]["prefill"],
        "bound.decode": r["bound"]["decode"],
    }
    for key, band in (r["band"] or {}).items():  # None where no validated group holds it
        flat[f"band.{key}_low"], flat[f"band.{key}_high"] = band or (None, None)
    return flat


def assert_rows_are_calculate(table, **grid):
    """Each row of ``table`` against ``calculate`` at its arguments."""
    keys = list(grid)
    for row, combo in zip(table, itertools.product(*grid.values()), strict=True):
        arguments = dict(zip(keys, combo, strict=True))
        want = calculated(**arguments)
        if isinstance(want, str):
            assert not row["fits"] and row["reason"] == want, arguments
            assert np.isnan(row["tpot"]) and row["bound.decode"] == ""
            continue
        assert row["fits"] and row["reason"] == "", arguments
        for key, value in want.items():
            if isinstance(value, str):
                assert row[key] == value, (arguments, key)
            elif value is None:
                assert np.isnan(row[key]), (arguments, key)
            else:
                assert row[key] == pytest.approx(value, rel=1e-12), (arguments, key)


def test_rows_are_calculates_answers_and_refusals():
    grid = dict(model=["llama-3.1-70b", "mixtral-8x7b"], gpu=["h100-sxm", "l4"],
                n_gpus=[1, 2, 3, 4], batch=[1, 64], prompt_len=[1024, 131_000],
                output_len=[256])  # fmt: skip
    table = ia.sweep(**grid)
    assert len(table) == 2 * 2 * 4 * 2 * 2
    assert 0 < table["fits"].sum() < len(table)  # some of each
    assert_rows_are_calculate(table, **grid)


def test_the_first_input_out_of_range_is_refused_in_calculates_order():
    # In calculate's order (sweep.CHECKED): the scenario's numbers, then the price.
    grid = dict(model=["llama-3.1-8b"], gpu=["h100-sxm"], batch=[1, 2.5],
                price_per_hour=[2.0, 0.0], memory_utilization=[0.9, 1.5])  # fmt: skip
    for name, message in (
        ("batch", "batch must be a whole number"),
        ("memory_utilization", "memory_utilization must be a number from"),
        ("price_per_hour", "price_per_hour must be a positive number"),
    ):
        with pytest.raises(ia.ArgumentError, match=message):
            ia.sweep(**grid)
        with pytest.raises(ia.ArgumentError, match=message):
            ia.calculate(**{k: v[-1] for k, v in grid.items()})
        grid[name] = grid[name][:1]  # that one right: the next is refused
    assert_rows_are_calculate(ia.sweep(**grid), **grid)


def test_formats_without_a_flop_rate_and_devices_without_a_link_are_rows():
    a6000 = ia.GPU("a6000", {"bf16": 155e12}, memory_bandwidth=768e9, memory_bytes=48e9)
    grid = dict(model=["llama-3.1-8b"], gpu=["h100-sxm", a6000], dtype=["bf16", "int4"],
                n_gpus=[1, 2])  # fmt: skip
    table = ia.sweep(**grid)
    assert table["gpu"].tolist() == ["h100-sxm"] * 4 + ["a6000"] * 4
    assert table["dtype"].tolist() == ["bf16", "bf16", "int4", "int4"] * 2
    assert table["fits"].tolist() == [True, True, False, False, True, False, False, False]
    assert_rows_are_calculate(table, **grid)


def test_the_last_argument_varies_fastest_and_scalars_are_one_value():
    table = ia.sweep("llama-3.1-8b", "h100-sxm", batch=[1, 2], output_len=np.array([10, 20, 30]))
    assert table["batch"].tolist() == [1, 1, 1, 2, 2, 2]
    assert table["output_len"].tolist() == [10, 20, 30] * 2
    assert set(table["prompt_len"].tolist()) == {2048} and set(table["model"]) == {"llama-3.1-8b"}


def test_a_gpu_without_a_price_has_no_costs_unless_one_is_given():
    assert ia.gpu("rtx-3090").price_per_hour is None
    table = ia.sweep("llama-3.1-8b", "rtx-3090", dtype="fp16", price_per_hour=[None, 0.3][0])
    assert np.isnan(table["cost.output"]).all() and table["fits"].all()
    assert np.isnan(table["cost.blended"]).all()
    priced = ia.sweep("llama-3.1-8b", "rtx-3090", dtype="fp16", price_per_hour=[0.2, 0.3])
    assert priced["cost.output"][1] == pytest.approx(1.5 * priced["cost.output"][0], rel=1e-12)
    assert priced["cost.blended"][1] == pytest.approx(1.5 * priced["cost.blended"][0], rel=1e-12)


@pytest.mark.parametrize(
    "arguments, error, message",
    [
        (dict(model=["llama-3.1-8b", "llama-9"]), KeyError, "unknown model 'llama-9'"),
        (dict(gpu=["h100"]), ia.UnknownName, "unknown gpu 'h100'"),
        (dict(dtype=["bf16", "bf17"]), KeyError, "dtype must be one of"),
        (dict(batch=["x"]), ValueError, "batch must be numbers, got 'x'"),
        (dict(batch=[]), ValueError, "batch is an empty list"),
        (dict(batch=np.ones((2, 2))), ValueError, "batch must be a number or a list"),
        (dict(context_len=[1]), ValueError, "sweep takes no argument 'context_len'"),
        (dict(parallel=["tensor", "pipe"]), ValueError, "parallel must be one of"),
    ],
)
def test_bad_arguments_are_refused_at_once(arguments, error, message):
    base = dict(model="llama-3.1-8b", gpu="h100-sxm")
    with pytest.raises(error, match=message):
        ia.sweep(**{**base, **arguments})


def test_the_table_converts_to_a_dataframe_by_its_column_names():
    table = ia.sweep("llama-3.1-8b", "h100-sxm", batch=[1, 8])
    assert isinstance(table, np.ndarray) and table.dtype.names[:2] == ("model", "gpu")
    assert set(NUMBERS) <= set(table.dtype.names)
    records = table.tolist()  # what pandas.DataFrame.from_records takes
    assert records[1][table.dtype.names.index("batch")] == 8


@pytest.mark.slow
def test_prefix_hit_rates_and_speculation_are_rows_as_calculate_answers_them():
    grid = dict(model=["llama-3.1-8b"], gpu=["h100-sxm"], batch=[1, 16],
                prefix_hit_rate=[0.25, 0.9], speculative=["ngram", "eagle3"])  # fmt: skip
    table = ia.sweep(**grid)
    assert table["fits"].all() and len(table) == 8
    assert set(table["speculative"]) == {"ngram", "eagle3"}
    for row in table[table["fits"]]:
        options = {k: row[k].item() for k in ("batch", "prefix_hit_rate")}
        want = ia.calculate(
            "llama-3.1-8b", "h100-sxm", speculative=str(row["speculative"]), **options
        )
        for key in ("ttft", "tpot", "cost.input"):
            got = want["cost"]["input"] if key == "cost.input" else want[key]
            assert row[key] == pytest.approx(got, rel=1e-12), (options, key)


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(batch=[1, -2]), "batch must be a whole number from 1 up, got -2"),
        (
            dict(prefix_hit_rate=[0.25, 1.5]),
            "prefix_hit_rate must be a number from 0 to 1, got 1.5",
        ),
        (dict(n_gpus=[1, 2.5]), "n_gpus must be a whole number"),
        (
            dict(cache_dtype=["bf16", "q4_k_m"]),
            "cache_dtype 'q4_k_m' is a format of weights only, .* one of 'fp32'",
        ),
    ],
)
def test_a_value_no_scenario_takes_is_refused_at_once_not_as_a_row(bad, message):
    # A row of it would read as a capacity answer ("does not fit"): it is a mistake in the input.
    with pytest.raises(ia.ArgumentError, match=message):
        ia.sweep("llama-3.1-8b", "h100-sxm", **bad)
    with pytest.raises(ia.ArgumentError, match=message):  # as calculate refuses it
        ia.calculate("llama-3.1-8b", "h100-sxm", **{k: v[-1] for k, v in bad.items()})
