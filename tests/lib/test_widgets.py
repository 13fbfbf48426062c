"""Controls, the formula widget's plot and readout, and the ipywidgets it builds."""

import math

import ipywidgets
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import inference_arithmetic as ia
from inference_arithmetic.core import format as fmt
from inference_arithmetic.formulas import mlp
from inference_arithmetic.page.widgets import Choice, FormulaWidget, Range, formula_widget

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
    assert choice.label_for(0.45) == "int4"  # the nearest value: int4's bare half byte
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
    # A slider's row is the slider and its value, printed with its unit.
    rows = [
        row.children[0] if isinstance(row, ipywidgets.HBox) else row
        for row in controls_box.children
    ]
    by_label = {c.description: c for c in rows}
    return box, {name: by_label[w.control_html[name]] for name in w.specs}, image, readout


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
    assert "at batch B (sequences) = 32" in readout.value
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
    assert "batch B (sequences) = 100" in readout.value
    assert fmt.si(_expected(TRAINING, w.values), "B") in readout.value


def test_update_moves_the_ipywidgets_controls_too():
    w = _widget()
    _, controls, _, readout = _parts(w)
    current = w.update(batch=10**9, bytes_per_number=2)
    assert controls["batch"].value == 1024
    assert controls["bytes_per_number"].value == "bf16"
    assert "batch B (sequences) = 1,024" in readout.value
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


# --- Widgets a reader can use: labels in words, log sliders by ratio, ticks, regions ----------


def label_problems(text: str) -> list[str]:
    """What keeps a control's label from reading as words: a code identifier's underscore, or
    no word of three letters or more."""
    problems = []
    if "_" in text:
        problems.append(f"{text!r} has an underscore (a code identifier)")
    if not any(len(word) >= 3 and word.isalpha() for word in text.replace("/", " ").split()):
        problems.append(f"{text!r} has no word")
    return problems


def test_the_label_check_can_fail():
    assert label_problems("n_params") and label_problems("B") and label_problems("eta_c (s)")
    assert not label_problems("model size N (parameters)")


def test_every_symbol_and_every_control_is_labelled_in_words():
    from inference_arithmetic.core.symbols import NOTATION
    from inference_arithmetic.page.controls import label, label_html

    for name in NOTATION:
        assert not label_problems(label(name)), name
        assert "_" not in label_html(name), name
    assert label("batch") == "batch B (sequences)"
    assert label("n_params") == "model size N (parameters)"
    assert label("bandwidth") == "memory bandwidth β"  # its value prints the unit: 3 TB/s
    assert label("seq_len", "prompt length") == "prompt length T (tokens)"
    assert label("gpu and link") == "GPU and link"
    w = _widget()
    page = ia.live.spec(w)
    for control in page["controls"]:
        assert not label_problems(control["label"]), control["name"]
    _, parts, _, _ = _parts(w)
    for name, control in parts.items():
        assert "_" not in control.description and control.description_allow_html, name


@pytest.mark.parametrize(
    "name, value, text",
    [
        ("n_params", 70e9, "70 billion"),
        ("bandwidth", 3e12, "3 TB/s"),
        ("batch", 8192, "8,192"),
        ("compute_efficiency", 0.35, "35%"),
        ("link_latency", 5e-6, "5 µs"),
        ("price_per_hour", 2.5, "$2.5 per GPU-hour"),
        ("flop_rate", 9.89e14, "989 TFLOP/s"),
    ],
)
def test_control_values_print_with_units_and_separators(name, value, text):
    assert ia.controls.show(name, value) == text
    kind, suffix = ia.controls.display(name)
    assert fmt.show(value, kind) + suffix == text  # what the page prints with iaShow


def ratio_problems(stops) -> list[str]:
    """What keeps a slider's stops from moving by a ratio: a step of more than twice the value
    or under 3%, or (over three decades) steps at the top not far larger than at the bottom."""
    stops = np.asarray(stops, dtype=float)
    ratios = stops[1:] / stops[:-1]
    problems = [f"a step of x{r:.3g}" for r in ratios if not 1.03 <= r <= 2.0 + 1e-12]
    steps = np.diff(stops)
    if stops[-1] / stops[0] >= 1000 and steps.max() < 100 * steps.min():
        problems.append("the steps are a fixed increment, not a ratio")
    return problems


def test_the_ratio_check_can_fail():
    assert ratio_problems(np.linspace(1, 8192, 256))  # ch 07's slider, as it was: 1, 33, 65...
    assert ratio_problems([1, 3, 4])  # a step of x3


@pytest.mark.parametrize(
    "spec",
    [
        Range(1, 8192, 64, log=True),
        Range(1e9, 1e12, 70e9, step=1e8, log=True),
        Range(256, 2**18, 8192, step=256, log=True),
        Range(128, 131072, 2048, log=True),
        Range(1, 20000, 32, log=True),
        Range(0.01, 1, 0.2, step=0.01, log=True),
    ],
)
def test_a_log_slider_steps_through_nice_values_by_a_ratio(spec):
    stops = spec.stops()
    assert not ratio_problems(stops)
    assert stops[0] == spec.min and stops[-1] == spec.max and spec.value in stops
    assert all(spec.clamp(v) == v for v in stops)  # every stop is a value the control takes
    assert 15 <= len(stops) <= 12 * math.log10(spec.max / spec.min) + 3


def test_a_log_slider_is_a_selection_of_its_stops_in_jupyter_and_on_the_page():
    controls = {**_controls(), "batch": Range(1, 8192, 64, log=True)}
    w = formula_widget({"inference": INFERENCE}, x="batch", controls=controls, unit="B")
    _, parts, _, readout = _parts(w)
    slider = parts["batch"]
    assert isinstance(slider, ipywidgets.SelectionSlider)
    assert [v for _, v in slider.options] == controls["batch"].stops()
    assert ("8,192", 8192) in slider.options  # each stop shown with separators
    index = [v for _, v in slider.options].index(64)
    slider.value = slider.options[index + 1][1]  # one step to the right: x1.25, not +1
    assert w.values["batch"] == 80 and "batch B (sequences) = 80" in readout.value
    page = next(c for c in ia.live.spec(w)["controls"] if c["name"] == "batch")
    assert page["stops"] == controls["batch"].stops()
    assert w.update(batch=310)["inference"] == _expected(INFERENCE, {**w.values, "batch": 300})


def test_a_log_range_default_must_be_on_its_step_grid():
    with pytest.raises(ValueError, match="step grid"):
        Range(1e9, 1e12, 70.5e9, step=1e9, log=True)


def test_the_python_plot_has_ticks_labelled_with_units_on_both_axes():
    w = _widget(logx=True, logy=True)
    w.widget()
    w.figure.canvas.draw()
    for axis in (w.axes.xaxis, w.axes.yaxis):
        low, high = axis.get_view_interval()
        at = 0 if axis is w.axes.xaxis else 1
        shown = [
            t.get_text()
            for t in axis.get_ticklabels()
            if t.get_text() and low <= t.get_position()[at] <= high
        ]
        assert len(shown) >= 3, shown
    assert any(text.endswith("B") for text in (t.get_text() for t in w.axes.get_yticklabels()))


def _window_widget(**options):
    from inference_arithmetic.core.symbols import S_max
    from inference_arithmetic.formulas import kv_cache

    names = ["llama-2-7b", "llama-3.1-8b"]
    sizes = {n: ia.model(n).sizes() | {"context_window": ia.model(n).context_window} for n in names}
    return formula_widget(
        {"cache": kv_cache.kv_cache_bytes(ia.model(names[1]))},
        x="context_len",
        controls={
            "context_len": Range(256, 2**18, 8192, step=256, log=True),
            "batch": Range(1, 64, 1),
            "bytes_per_number": Choice(ia.DTYPE_BYTES, "bf16"),
            "model": ia.widgets.Preset(sizes, "llama-2-7b"),
        },
        beyond={"past the context window": S_max},
        **options,
    )


def test_x_past_the_context_window_is_shaded_named_and_said():
    w = _window_widget()
    _, parts, _, readout = _parts(w)
    assert w.limits() == {"past the context window": 4096}
    band, text = w.regions["past the context window"]
    x0, x1 = band.get_x(), band.get_x() + band.get_width()
    assert (x0, x1) == (4096, 2**18) and text.get_visible()
    assert text.get_text() == "past the context window"
    # The marker at 8,192 tokens is past Llama 2's 4,096: the readout says so, and the limit.
    assert "context length S (tokens) = 8,192 is past the context window: the limit is 4,096" in (
        readout.value
    )
    parts["model"].value = "llama-3.1-8b"  # 131,072 tokens: the marker is inside again
    assert w.limits()["past the context window"] == 131072
    assert "past the context window" not in readout.value
    assert w.regions["past the context window"][0].get_x() == 131072
    spec = ia.live.spec(w)
    assert [(b["region"], b["side"], b["body"]) for b in spec["bounds"]] == [
        ("past the context window", "above", "return (context_window);")
    ]


def test_a_region_below_a_bound_and_a_bound_that_is_not_a_number():
    from inference_arithmetic.core.symbols import S_max

    with pytest.raises(ValueError, match=r"missing \['context_window'\]"):
        formula_widget(
            {"inference": INFERENCE}, x="batch", controls=_controls(), below={"small": S_max}
        )
    w = formula_widget(
        {"inference": INFERENCE},
        x="batch",
        controls=_controls(),
        below={"below the hidden width / 64": ia.symbols.by_name("d_2") / 64},
        labels={"batch": "rows"},
        unit="B",
    )
    assert w.control_labels["batch"] == "rows B (sequences)"
    assert w.limits() == {"below the hidden width / 64": 64}
    assert w.notes() == ["rows B (sequences) = 32 is below the hidden width / 64: the limit is 64."]
    band, _ = w.regions["below the hidden width / 64"]
    w.redraw()
    assert (band.get_x(), band.get_x() + band.get_width()) == (1, 64)
    assert w.update(batch=100) and w.notes() == []
    assert ia.widgets.in_region(5, float("nan"), "above")  # no bound to read: shaded
    assert ia.widgets.in_region(5, float("nan"), "below")
    with pytest.raises(ValueError, match="labels for no control"):
        formula_widget({"inference": INFERENCE}, x="batch", controls=_controls(), labels={"b": "x"})


def test_the_memory_limit_of_a_widget_is_the_librarys_max_batch():
    m = ia.model("llama-3.1-70b")
    limit = ia.numeric(ia.widgets.memory_limit(m, kv_bytes_per_number=ia.symbols.b))
    values = {**m.sizes(), **ia.gpu("h100-sxm").figures("bf16"), "bytes_per_number": 2}
    for n, context in ((1, 4096), (2, 4096), (4, 4096), (8, 32768)):
        at = {**values, "n_gpus": n, "context_len": context}
        assert limit.from_values(at) == ia.max_batch(m, "h100-sxm", context_len=context, n_gpus=n)
    assert limit.from_values({**values, "n_gpus": 1, "context_len": 4096}) == 0  # never below


def test_a_widgets_parts_are_checked_at_the_door():
    with pytest.raises(ia.ArgumentError, match="Choice options must be a mapping label -> value"):
        Choice(None, 1)
    with pytest.raises(ia.ArgumentError, match="got 'bf16'"):
        Choice("bf16", "b")  # a string is not a list of options
    with pytest.raises(ia.ArgumentError, match=r"widget must be a FormulaWidget .*got None"):
        ia.live.spec(None)
    with pytest.raises(ia.ArgumentError, match=r"did you mean mlp\.inference_memory\(\)\?"):
        formula_widget({"inference": mlp.inference_memory}, x="batch", controls={})


# --- Key numbers: the least x at which a condition holds, in the readout ---------------------


def _key_widget():
    import sympy

    passes = sympy.GreaterThan(TRAINING, 140 * 10**6, evaluate=False)  # past 140 MB
    return _widget(keys={"training past 140 MB": passes})


def _least_batch(values):
    """The least batch of the slider (1 to 1,024) whose training memory reaches 140 MB."""
    for batch in range(1, 1025):
        if _expected(TRAINING, {**values, "batch": batch}) >= 140e6:
            return batch
    return math.nan


def test_a_key_is_the_least_x_at_which_its_condition_holds():
    w = _key_widget()
    (found,) = w.key_values().values()
    assert found == _least_batch(w.values) and 1 < found < 1024
    assert w.key_lines() == [f"training past 140 MB: {w.control_labels['batch']} = {found:,.0f}"]
    assert f"<b>{w.key_lines()[0]}</b>" in w.readout_html(w.evaluate())
    # It follows the controls: a narrower hidden layer, fewer weights, a larger batch.
    w.update(d_2=3584)
    (moved,) = w.key_values().values()
    assert moved == _least_batch(w.values) and moved > found
    # Where no batch on the slider reaches it, the readout says so.
    w.update(bytes_per_number="int4")
    assert math.isnan(w.key_values()["training past 140 MB"])
    assert w.key_lines() == [f"training past 140 MB: no {w.control_labels['batch']} up to 1,024"]


def test_a_key_is_printed_to_the_page_as_its_formula():
    spec = ia.live.spec(_key_widget())
    (key,) = spec["keys"]
    assert key["label"] == "training past 140 MB" and ">=" in key["body"]
    assert spec["key_grid"] == [1, 1024, 1]
    assert spec["key"] == ia.live.KEY and spec["key_none"] == ia.live.KEY_NONE


def test_a_key_on_a_control_with_only_some_values_is_one_of_them():
    # A batch of 1, 2, 4 or 8 only: 33,645,000 bytes are reached at 6 on the step grid, which
    # the slider cannot take; the key is the least value it can, 8.
    import sympy

    controls = _controls() | {"batch": Range(1, 8, 4, only=(1, 2, 4, 8))}
    passes = sympy.GreaterThan(INFERENCE, 33_645_000, evaluate=False)
    w = formula_widget({"inference": INFERENCE}, x="batch", controls=controls, keys={"k": passes})
    grid = np.arange(1, 9)
    on_grid = ia.widgets.first_where(ia.numeric(passes), {**w.values, "batch": grid}, grid)
    assert on_grid == 6
    assert w.key_grid().tolist() == [1, 2, 4, 8]
    assert w.key_values() == {"k": 8}


def test_a_key_between_the_sliders_steps_is_the_crossing_itself():
    # The hidden width d_1 in steps of 16: its key is the least whole width past 140 MB of
    # training memory, not the step of the slider after it.
    import sympy

    passes = sympy.GreaterThan(TRAINING, 140 * 10**6, evaluate=False)
    controls = _controls() | {"batch": Range(1, 1024, 300)}
    w = formula_widget({"training": TRAINING}, x="d_1", controls=controls, keys={"k": passes})
    assert w.key_whole() is True
    (found,) = w.key_values().values()
    below = [_expected(TRAINING, {**w.values, "d_1": d}) for d in (found - 1, found)]
    assert below[0] < 140e6 <= below[1] and found % 16 != 0  # between two steps of the slider
    # A quantity that is not a count (a step of 0.5): the float where the condition turns.
    x = sympy.Symbol("x")
    half = formula_widget({"y": x}, x="x", controls={"x": Range(0.5, 10, 1, step=0.5)},
                          keys={"k": sympy.GreaterThan(x**2, 2, evaluate=False)})  # fmt: skip
    assert half.key_whole() is False
    (root,) = half.key_values().values()
    assert root**2 >= 2 > math.nextafter(root, 0) ** 2  # the least float with x² >= 2


@pytest.mark.parametrize("key", [TRAINING, INFERENCE.subs(ia.symbols.B, 8) >= 1])
def test_a_key_must_be_a_condition_on_x(key):
    with pytest.raises(ValueError, match="must be a condition on 'batch'"):
        _widget(keys={"bad": key})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((1, 10, 5), None),
        ((1, 10, 5, float("nan")), "a Range's step must be a finite number, got nan"),
        (("a", "z", "m"), "a Range's min must be a finite number, got 'a'"),
        ((1, float("inf"), 5), "a Range's max must be a finite number, got inf"),
        ((1, 10, True), "a Range's value must be a finite number, got True"),
    ],
)
def test_a_range_is_of_finite_numbers(arguments, message):
    if message is None:
        assert Range(*arguments).step == 1
        return
    with pytest.raises(ia.ArgumentError, match=message):
        Range(*arguments)


@pytest.mark.parametrize("value", ["x", float("nan"), None, [2]])
def test_a_slider_refuses_what_is_no_number_by_name(value):
    w = _widget()
    with pytest.raises(ia.ArgumentError, match=r"d_1 must be a number \(its slider goes from"):
        w.update(d_1=value)
