"""Controls, the formula widget's plot and readout, and the ipywidgets it builds."""

import math

import ipywidgets
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import inference_arithmetic as ia
from inference_arithmetic import format as fmt
from inference_arithmetic.formulas import mlp
from inference_arithmetic.widgets import Choice, FormulaWidget, Range, formula_widget

INFERENCE = mlp.inference_memory()
TRAINING = mlp.training_memory()
TERMS = mlp.inference_memory_terms()


def _controls():
    return {
        "batch": Range(1, 1024, 32),
        "d_1": Range(16, 4096, 1024, step=16),
        "d_2": Range(16, 16384, 4096, step=16),
        "d_3": Range(16, 4096, 1024, step=16),
        "bytes_per_number": Choice({"fp32": 4, "bf16": 2, "int4": 0.5}, 4),
    }


def _widget(**options):
    curves = {"inference": INFERENCE, "training": TRAINING}
    return formula_widget(curves, x="batch", controls=_controls(), unit="B", **options)


def _expected(expr, values):
    return float(ia.numeric(expr).from_values(values))


# --- Range -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"min": 10, "max": 10, "value": 10}, "min < max"),
        ({"min": 10, "max": 1, "value": 5}, "min < max"),
        ({"min": 1, "max": 10, "value": 5, "step": 0}, "positive step"),
        ({"min": 1, "max": 10, "value": 5, "step": -1}, "positive step"),
        ({"min": 1, "max": 10, "value": 0}, "outside"),
        ({"min": 1, "max": 10, "value": 11}, "outside"),
        ({"min": 0, "max": 10, "value": 5, "log": True}, "log Range needs min > 0"),
        ({"min": -1, "max": 10, "value": 5, "log": True}, "log Range needs min > 0"),
    ],
)
def test_range_validation(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        Range(**kwargs)


def test_valid_ranges_construct():
    assert Range(1, 10, 1).value == 1
    assert Range(1, 10, 10, log=True).log is True
    assert Range(0.5, 4, 2, step=0.5).step == 0.5


# (min, max, step): max need not be on the step grid.
ranges = st.builds(
    lambda low, span, step: (low, low + span, step),
    st.integers(-100, 1000),
    st.integers(1, 5000),
    st.integers(1, 64),
)


@given(ranges, st.floats(min_value=-1e5, max_value=1e5, allow_nan=False))
def test_range_clamp_stays_in_range_and_snaps_to_the_step_grid(bounds, value):
    low, high, step = bounds
    spec = Range(low, high, low, step=step)
    clamped = spec.clamp(value)
    assert low <= clamped <= high
    on_grid = (clamped - low) % step == 0
    assert on_grid or clamped == high
    target = min(max(value, low), high)
    # The nearest grid point, or max when that lies past it.
    assert abs(clamped - target) <= step / 2 or (clamped == high and target > high - step)
    assert spec.clamp(clamped) == clamped  # idempotent


@pytest.mark.parametrize(
    "value, expected",
    [(10**9, 1024), (-5, 1), (1, 1), (1024, 1024), (500.4, 500), (500.6, 501)],
)
def test_range_clamp_examples(value, expected):
    assert Range(1, 1024, 32).clamp(value) == expected


def test_range_clamp_snaps_to_a_coarse_step():
    spec = Range(16, 4096, 1024, step=16)
    assert spec.clamp(1001) == 16 * round(1001 / 16)  # the grid is 16, 32, ..., 4096
    assert spec.clamp(1001) == 1008
    assert spec.clamp(17) == 16
    assert spec.clamp(10**9) == 4096


@pytest.mark.parametrize("log", [False, True])
def test_range_grid_covers_the_range_on_the_step_grid(log):
    spec = Range(1, 10**6, 10, log=log)
    grid = spec.grid()
    assert grid[0] == 1 and grid[-1] == 10**6
    assert np.all(np.diff(grid) > 0)
    assert np.all(grid == np.round(grid))
    if log:  # geometric spacing: as many points below 1000 as above
        assert abs(np.sum(grid < 1000) - np.sum(grid > 1000)) < 40
    else:
        assert np.sum(grid < 1000) <= 2


# --- Choice ----------------------------------------------------------------------------------


def test_choice_with_a_mapping_keeps_the_labels():
    choice = Choice({"fp32": 4, "bf16": 2, "int4": 0.5}, 2)
    assert choice.labels == {"fp32": 4, "bf16": 2, "int4": 0.5}
    np.testing.assert_array_equal(choice.grid(), [0.5, 2, 4])


def test_choice_with_a_list_labels_each_option_with_its_si_form():
    options = [1, 8, 64, 1024, 32768]
    choice = Choice(options, 64)
    assert list(choice.labels.values()) == options
    assert list(choice.labels) == [fmt.si(v) for v in options]


@pytest.mark.parametrize("options", [{"fp32": 4, "bf16": 2}, [1, 2, 4]])
def test_choice_bad_default_raises(options):
    with pytest.raises(ValueError, match="not one of"):
        Choice(options, 3)


@pytest.mark.parametrize("options", [{}, []])
def test_choice_needs_an_option(options):
    with pytest.raises(ValueError, match="at least one option"):
        Choice(options, 1)


@given(
    st.lists(st.integers(1, 10**6), min_size=1, max_size=8, unique=True),
    st.floats(min_value=-1e7, max_value=1e7, allow_nan=False),
)
def test_choice_clamp_picks_the_nearest_option(options, value):
    labels = {f"option {i}": v for i, v in enumerate(options)}
    choice = Choice(labels, options[0])
    clamped = choice.clamp(value)
    assert clamped in options
    assert abs(clamped - value) == min(abs(v - value) for v in options)


def test_choice_default_may_be_a_label():
    choice = Choice(ia.DTYPE_BYTES, "bf16")
    assert choice.label == "bf16"
    assert choice.value == ia.bytes_per_number("bf16")
    by_value = Choice(ia.DTYPE_BYTES, 2)  # a value shared by two labels: the first one
    assert by_value.label == next(k for k, v in ia.DTYPE_BYTES.items() if v == 2)
    with pytest.raises(ValueError, match="'bf17' is not one of"):
        Choice(ia.DTYPE_BYTES, "bf17")


def test_choice_label_for():
    choice = Choice(ia.DTYPE_BYTES, "bf16")
    assert choice.label_for("int4") == "int4"
    assert choice.label_for(0.6) == "int4"
    assert choice.label_for(2, current="bf16") == "bf16"  # a tie keeps the current label
    assert choice.label_for(2, current="fp32") in {"fp16", "bf16"}
    assert choice.clamp("int8") == 1
    with pytest.raises(ValueError, match="not one of"):
        choice.label_for("int3")


def test_choice_clamp_examples():
    choice = Choice([1, 2, 4, 8], 2)
    assert choice.clamp(5) == 4
    assert choice.clamp(7) == 8
    assert choice.clamp(100) == 8
    assert choice.clamp(-3) == 1


# List options are labelled with as many digits as it takes to tell them apart.
def test_choice_keeps_list_options_that_print_alike():
    choice = Choice([1000, 1001], 1000)
    assert sorted(choice.labels.values()) == [1000, 1001]


# --- formula_widget: construction ------------------------------------------------------------


def test_a_formula_symbol_without_a_control_raises():
    controls = _controls()
    del controls["d_3"]
    with pytest.raises(ValueError, match=r"missing \['d_3'\]"):
        formula_widget({"inference": INFERENCE}, x="batch", controls=controls)


def test_a_control_without_a_symbol_raises():
    controls = {**_controls(), "d_model": Range(1, 10, 1)}
    with pytest.raises(ValueError, match=r"unknown \['d_model'\]"):
        formula_widget({"inference": INFERENCE}, x="batch", controls=controls)


def test_x_must_be_a_control():
    with pytest.raises(ValueError, match="x='seq_len' must be one of the controls"):
        formula_widget({"inference": INFERENCE}, x="seq_len", controls=_controls())


def test_formula_widget_builds_a_formula_widget():
    w = _widget()
    assert isinstance(w, FormulaWidget)
    assert set(w.lines) == {"inference", "training"}
    assert w.values == {name: spec.value for name, spec in _controls().items()}


def test_curves_differ_in_colour_and_dashes_here_and_in_the_page():
    w = _widget()
    drawn = [(line.get_color(), line.get_linestyle()) for line in w.lines.values()]
    assert len(set(drawn)) == len(drawn) and len({ls for _, ls in drawn}) == len(drawn)
    page = [(c["color"], c["dash"]) for c in ia.live.spec(w)["curves"]]
    assert [color for color, _ in page] == [color for color, _ in drawn]
    assert len({dash for _, dash in page}) == len(page)


# --- update and the plot ---------------------------------------------------------------------


def test_update_clamps_instead_of_crashing_and_returns_the_librarys_values():
    w = _widget()
    current = w.update(batch=10**9, d_2=1001)
    assert w.values["batch"] == 1024
    assert w.values["d_2"] == 16 * round(1001 / 16)
    assert current == {
        "inference": _expected(INFERENCE, w.values),
        "training": _expected(TRAINING, w.values),
    }
    assert current["training"] > current["inference"]


def test_update_with_a_choice_picks_the_nearest_option():
    w = _widget()
    current = w.update(bytes_per_number=1.9)
    assert w.values["bytes_per_number"] == 2
    assert current["inference"] == _expected(INFERENCE, w.values)


def test_update_of_an_unknown_control_raises():
    w = _widget()
    with pytest.raises(ValueError, match="no control named 'btach'"):
        w.update(btach=3)


def test_plotted_lines_are_the_formulas_over_the_x_grid():
    w = _widget()
    w.update(d_1=512, bytes_per_number=2)
    grid = _controls()["batch"].grid()
    for label, expr in {"inference": INFERENCE, "training": TRAINING}.items():
        x, y = w.lines[label].get_data()
        np.testing.assert_array_equal(x, grid)
        expected = ia.numeric(expr).from_values({**w.values, "batch": grid})
        np.testing.assert_allclose(y, expected, rtol=1e-12)
        # The marker sits on the curve, at the current batch.
        mx, my = w.markers[label].get_data()
        assert list(mx) == [w.values["batch"]]
        assert my[0] == pytest.approx(_expected(expr, w.values), rel=1e-12)


def test_a_curve_that_does_not_depend_on_x_is_drawn_flat():
    w = formula_widget(TERMS, x="batch", controls=_controls(), unit="B")
    current = w.update(batch=64)
    assert current == {label: _expected(term, w.values) for label, term in TERMS.items()}
    x, y = w.lines["parameters"].get_data()
    assert len(y) == len(x) and np.all(y == current["parameters"])
    _, rising = w.lines["largest activation"].get_data()
    assert np.all(np.diff(rising) > 0)


# --- the ipywidgets box ----------------------------------------------------------------------


def _parts(w):
    box = w.widget()
    controls_box, image, readout = box.children
    return box, {c.description: c for c in controls_box.children}, image, readout


def test_widget_is_a_vbox_of_controls_image_and_readout():
    w = _widget()
    box, controls, image, readout = _parts(w)
    assert isinstance(box, ipywidgets.VBox)
    assert set(controls) == {s.name for s in INFERENCE.free_symbols | TRAINING.free_symbols}
    assert isinstance(image, ipywidgets.Image)
    assert bytes(image.value).startswith(b"\x89PNG\r\n\x1a\n")
    assert isinstance(readout, ipywidgets.HTML)
    for label, expr in {"inference": INFERENCE, "training": TRAINING}.items():
        assert f"<td>{label}</td><td><b>{fmt.si(_expected(expr, w.values), 'B')}</b>" in (
            readout.value
        )
    assert "batch = 32" in readout.value
    assert w.widget() is box  # built once


def test_control_kinds_follow_the_specs():
    controls = {
        **_controls(),
        "d_1": Range(0.5, 64, 2, step=0.5),
        "bytes_per_number": Choice([0.5, 1, 2, 4], 2),
    }
    w = formula_widget({"inference": INFERENCE}, x="batch", controls=controls, unit="B")
    _, parts, _, _ = _parts(w)
    assert isinstance(parts["batch"], ipywidgets.IntSlider)
    assert isinstance(parts["d_1"], ipywidgets.FloatSlider)
    assert isinstance(parts["bytes_per_number"], ipywidgets.SelectionSlider)
    assert isinstance(_parts(_widget())[1]["bytes_per_number"], ipywidgets.ToggleButtons)
    for name, spec in controls.items():
        # Sliders hold the value; a Choice's buttons hold its label (bf16 and fp16 differ).
        expected = spec.label if isinstance(spec, Choice) else spec.value
        assert parts[name].value == expected
    assert parts["bytes_per_number"].options == tuple(fmt.si(v) for v in [0.5, 1, 2, 4])


def test_moving_a_control_redraws_with_the_librarys_values():
    w = _widget()
    _, controls, image, readout = _parts(w)
    before_png, before_html = image.value, readout.value
    _, before_y = w.lines["training"].get_data()

    controls["d_2"].value = 8192  # as a reader's slider would
    assert w.values["d_2"] == 8192
    for expr in (INFERENCE, TRAINING):
        assert fmt.si(_expected(expr, w.values), "B") in readout.value
    _, after_y = w.lines["training"].get_data()
    grid = _controls()["batch"].grid()
    np.testing.assert_allclose(
        after_y, ia.numeric(TRAINING).from_values({**w.values, "batch": grid}), rtol=1e-12
    )
    assert not np.array_equal(after_y, before_y)
    assert readout.value != before_html
    assert bytes(image.value) != bytes(before_png)
    assert bytes(image.value).startswith(b"\x89PNG")

    controls["batch"].value = 100  # the marker moves along the curves
    assert "batch = 100" in readout.value
    assert fmt.si(_expected(TRAINING, w.values), "B") in readout.value


def test_update_moves_the_ipywidgets_controls_too():
    w = _widget()
    _, controls, _, readout = _parts(w)
    current = w.update(batch=10**9, bytes_per_number=2)
    assert controls["batch"].value == 1024
    assert controls["bytes_per_number"].value == "bf16"
    assert "batch = 1,024" in readout.value
    assert fmt.si(current["inference"], "B") in readout.value


def test_choices_with_equal_values_stay_distinct():
    controls = {**_controls(), "bytes_per_number": Choice(ia.DTYPE_BYTES, "bf16")}
    w = formula_widget({"inference": INFERENCE}, x="batch", controls=controls, unit="B")
    _, parts, _, readout = _parts(w)
    assert parts["bytes_per_number"].value == "bf16"
    parts["bytes_per_number"].value = "fp16"  # same bytes, other button
    assert w.labels["bytes_per_number"] == "fp16" and w.values["bytes_per_number"] == 2
    parts["bytes_per_number"].value = "int4"
    assert w.values["bytes_per_number"] == 0.5
    assert fmt.si(_expected(INFERENCE, w.values), "B") in readout.value
    w.update(bytes_per_number=2)  # by value, from int4: the first label of that value
    assert parts["bytes_per_number"].value == next(
        label for label, value in ia.DTYPE_BYTES.items() if value == 2
    )
    w.update(bytes_per_number="bf16")
    assert parts["bytes_per_number"].value == "bf16"
    w.update(bytes_per_number=2.1)  # near bf16's value: the current label stays
    assert parts["bytes_per_number"].value == "bf16"


def test_value_format_controls_the_readout():
    w = _widget(value_format=lambda v: f"{v / 2**20:.1f} MiB!")
    _, _, _, readout = _parts(w)
    expected = _expected(INFERENCE, w.values) / 2**20
    assert f"{expected:.1f} MiB!" in readout.value
    assert not math.isnan(expected)


@given(batch=st.integers(1, 1024), d_1=st.integers(1, 256).map(lambda n: 16 * n))
def test_update_agrees_with_numeric_anywhere(batch, d_1):
    w = WIDGET
    current = w.update(batch=batch, d_1=d_1)
    assert w.values["batch"] == batch and w.values["d_1"] == d_1
    assert current["inference"] == _expected(INFERENCE, w.values)
    assert current["training"] == _expected(TRAINING, w.values)


WIDGET = _widget()  # no ipywidgets box: update() recomputes without drawing a PNG


def test_a_preset_sets_several_symbols_at_once():
    import inference_arithmetic as ia
    from inference_arithmetic.formulas import kv_cache

    names = ["llama-3.1-8b", "llama-3.1-70b"]
    expr = kv_cache.kv_cache_bytes(ia.model(names[0]))
    widget = ia.widgets.formula_widget(
        {"cache": expr},
        x="context_len",
        controls={
            "context_len": Range(1, 8192, 2048),
            "batch": Range(1, 64, 1),
            "bytes_per_number": Choice(ia.DTYPE_BYTES, "bf16"),
            "model": ia.widgets.Preset({n: ia.model(n).sizes() for n in names}, "llama-3.1-70b"),
        },
    )
    assert widget.evaluate()["cache"] == ia.kv_cache_bytes(ia.model("llama-3.1-70b"))
    widget.widget()
    widget._widgets["model"].value = "llama-3.1-8b"  # what a reader's click does
    assert widget.evaluate()["cache"] == ia.kv_cache_bytes(ia.model("llama-3.1-8b"))
    with pytest.raises(ValueError, match="'gpt2' is not one of"):
        widget.update(model="gpt2")


def test_a_preset_and_a_control_may_not_set_the_same_symbol():
    import inference_arithmetic as ia
    from inference_arithmetic.formulas import kv_cache

    expr = kv_cache.kv_cache_bytes(ia.model("llama-3.1-8b"))
    controls = {
        "context_len": Range(1, 8192, 2048),
        "batch": Range(1, 64, 1),
        "bytes_per_number": Choice(ia.DTYPE_BYTES, "bf16"),
        "n_layers": Range(1, 100, 32),
        "model": ia.widgets.Preset({"a": ia.model("llama-3.1-8b").sizes()}, "a"),
    }
    with pytest.raises(ValueError, match=r"set twice \['n_layers'\]"):
        ia.widgets.formula_widget({"cache": expr}, x="context_len", controls=controls)
