"""The built book in a real browser, offline (tests/book/browser.py): no console errors, typeset
math, every image loaded, every live widget recomputing what the library computes, and each
chapter's layout (``tests/book/layout.py``, checked on the chapter as it is open). Chapter 16's
calculator has its own file, tests/book/test_calculator_page.py.
"""

import functools
import inspect
import json
import math

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic import formulas
from tests.book import layout
from tests.book.browser import CONTRAST, low_contrast, open_page
from tests.book.test_book import HTML, _page_path
from tests.book.test_chapters import CHAPTERS

CALCULATOR = "book/16-calculator"  # chapter 16's calculator: one form over the whole library
SYMBOLS = {name: row.symbol for name, row in ia.symbols.NOTATION.items()}


def _check_page(page, errors):
    assert page.locator("mjx-container").count() > 0, "no typeset math"
    text = page.evaluate(
        "() => { const c = document.querySelector('main').cloneNode(true);"
        " c.querySelectorAll('mjx-container, script, pre, code, .ia-math-later')"
        ".forEach(e => e.remove());"
        " return c.innerText; }"
    )
    assert "\\[" not in text and "\\(" not in text and "$$" not in text, "raw TeX in the page"
    broken = page.evaluate(
        "() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => i.src)"
    )
    assert not broken, f"images that did not load: {broken}"
    assert not errors, f"console errors: {errors}"


@functools.cache
def _page_formula(text):
    """A formula the page carries (SymPy's text of it), read back with the book's symbols and
    compiled: once for each text (a page's readout is checked before and after its controls
    move, and SymPy takes tenths of a second to read a formula with Max and Min)."""
    return ia.numeric(sympy.parse_expr(text, local_dict=SYMBOLS))


def _check_readout(page, widget, spec):
    values = page.evaluate(
        "([w]) => { const v = {}; w.querySelectorAll('input, select').forEach(e => {"
        " v[e.name] = e.dataset.value ?? e.value; }); return v; }",
        [widget],
    )
    shown = widget.eval_on_selector_all(
        ".ia-live-value", "cells => cells.map(c => Number(c.dataset.value))"
    )
    state = dict(spec["values"])
    for control in spec["controls"]:
        raw = values[control["name"]]
        if control["kind"] == "range":
            state[control["name"]] = float(raw)
        elif control["kind"] == "choice":
            state[control["name"]] = dict(control["options"])[raw]
        else:
            state.update(control["options"][raw])
    for curve, value in zip(spec["curves"], shown, strict=True):
        # The page's own copy of the formula, read back with the book's symbols.
        expected = float(_page_formula(curve["sympy"]).from_values(state))
        assert math.isclose(value, expected, rel_tol=1e-9), (curve["label"], value, expected)
    # The key numbers (the balance point, the ridge batch, the crossover): the least x at which
    # the page's copy of the condition holds, by the library (widgets.least_where).
    keys = widget.eval_on_selector_all(
        ".ia-live-keyvalue", "ps => ps.map(p => Number(p.dataset.value))"
    )
    assert len(keys) == len(spec.get("keys") or [])
    for key, value in zip(spec.get("keys") or [], keys, strict=True):
        import numpy as np

        condition = _page_formula(key["sympy"])
        low, high, step = spec["key_grid"]
        grid = low + step * np.arange(int(np.floor((high - low) / step + 1e-9)) + 1)
        x = next(c for c in spec["controls"] if c["name"] == spec["x"])
        if x.get("only"):  # only the values the slider takes (Range.only)
            grid = np.asarray(x["stops"])
        whole = spec["key_whole"]
        expected = ia.widgets.least_where(condition, state, spec["x"], grid, whole)
        assert value == expected or (math.isnan(value) and math.isnan(expected)), key["label"]


# --- Widgets a reader can use: what each live widget must show ------------------------------

# The problems of one widget as a reader meets it: a control not labelled in words (a code
# identifier's underscore, no word), an axis with fewer than 3 tick labels, a control's value
# printed without separators (a bare 7 digits or more), no key number in words beside the plot
# (what the widget is about: the crossover, the break-even batch, ...).
WIDGET_PROBLEMS = r"""(root) => {
  const problems = [];
  const keys = [...root.querySelectorAll(".ia-live-keyvalue")].map((e) => e.textContent);
  const worded = keys.some((k) => /^[A-Za-z'’ -]{3,}.*: .*\d/.test(k));
  if (!worded) problems.push("no key number in words");
  root.querySelectorAll(".ia-live-name").forEach((e) => {
    const text = e.textContent.trim();
    if (text.includes("_")) problems.push("label with an underscore: " + text);
    if (!/[A-Za-z]{3,}/.test(text)) problems.push("label without a word: " + text);
  });
  for (const axis of ["x", "y"]) {
    const ticks = [...root.querySelectorAll(".ia-live-" + axis + "tick")]
      .map((t) => t.textContent.trim()).filter((t) => t);
    if (ticks.length < 3) problems.push(axis + " axis with " + ticks.length + " tick labels");
  }
  root.querySelectorAll(".ia-live-control output").forEach((e) => {
    if (/\d{7,}/.test(e.textContent)) problems.push("a value without separators: " + e.textContent);
  });
  return problems;
}"""


def _widget_problems(widget):
    return widget.evaluate(WIDGET_PROBLEMS)


def _check_regions(widget, spec):
    """Each named region (past the context window, beyond memory) shaded and named where it
    lies in the plot, and the readout's note when the marker is in it."""
    texts = widget.eval_on_selector_all("svg.ia-live-plot text", "ts => ts.map(t => t.textContent)")
    regions = widget.eval_on_selector_all("rect.ia-live-region", "rs => rs.length")
    notes = widget.eval_on_selector(".ia-live-notes", "n => n.textContent")
    for bound in spec["bounds"]:
        if bound["region"] in notes:  # the marker is in the region: it must be drawn and named
            assert regions >= 1 and bound["region"] in texts, bound["region"]


def test_the_widget_checks_can_fail(browser):
    page = browser.new_page()
    page.set_content(
        '<div class="ia-live"><span class="ia-live-name">n_params</span>'
        '<label class="ia-live-control"><output>70000000000</output></label>'
        '<svg class="ia-live-plot"><text class="ia-live-tick ia-live-xtick">1000000000</text>'
        '<text class="ia-live-tick ia-live-xtick">100000000(</text>'
        '<text class="ia-live-tick ia-live-ytick">0 µs</text></svg></div>'
    )
    problems = _widget_problems(page.locator(".ia-live").element_handle())
    assert "label with an underscore: n_params" in problems
    assert "x axis with 2 tick labels" in problems and "y axis with 1 tick labels" in problems
    assert "a value without separators: 70000000000" in problems
    assert "no key number in words" in problems
    page.close()


def _library_widget():
    """A widget built here, from the library (no book build needed): Llama 2's KV cache against
    a context that runs past its 4,096-token window."""
    from inference_arithmetic.formulas import kv_cache

    names = ["llama-2-7b", "llama-3.1-8b"]
    sizes = {n: ia.model(n).sizes() | {"context_window": ia.model(n).context_window} for n in names}
    cache = kv_cache.kv_cache_bytes(ia.model(names[1]))
    return ia.widgets.formula_widget(
        {"cache": cache, "twice": 2 * cache},
        keys={"past 1 GB": sympy.GreaterThan(cache, 10**9, evaluate=False)},
        x="context_len",
        controls={
            "context_len": ia.widgets.Range(256, 2**18, 8192, step=256, log=True),
            "batch": ia.widgets.Range(1, 64, 1, log=True),
            "bytes_per_number": ia.widgets.Choice(ia.DTYPE_BYTES, "bf16"),
            "model": ia.widgets.Preset(sizes, "llama-2-7b"),
        },
        beyond={"past the context window": SYMBOLS["context_window"]},
        value_format=ia.format.nbytes,
        logx=True,
        logy=True,
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_a_widget_reads_as_the_library_describes_it(browser, width):

    w = _library_widget()
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_content("<!doctype html><meta charset=utf-8><body>" + ia.live.live_html(w))
    root = page.locator(".ia-live").element_handle()
    spec = json.loads(root.eval_on_selector(".ia-live-spec", "s => s.textContent"))
    assert not _widget_problems(root)
    names = root.eval_on_selector_all(".ia-live-name", "ns => ns.map(n => n.textContent)")
    assert names == list(w.control_labels.values())
    outputs = root.eval_on_selector_all(
        ".ia-live-control output", "os => os.map(o => o.textContent)"
    )
    assert outputs[0] == "8,192" and outputs[1] == "1"
    # The marker (8,192 tokens) is past Llama 2's window: shaded, named, and said.
    assert root.eval_on_selector_all("rect.ia-live-region", "rs => rs.length") == 1
    notes = root.eval_on_selector(".ia-live-notes", "n => n.textContent")
    assert notes == w.notes()[0]
    _check_regions(root, spec)
    # The key number: the library's at the defaults, in the same words.
    key = ".ia-live-keyvalue"
    assert root.eval_on_selector_all(key, "ps => ps.map(p => p.textContent)") == w.key_lines()
    start = root.eval_on_selector(key, "p => Number(p.dataset.value)")
    assert start == w.key_values()["past 1 GB"]
    # One step of the log slider moves the value by a ratio, not by a fixed increment.
    slider = root.query_selector('input[name="context_len"]')
    stops = spec["controls"][0]["stops"]
    seen = []
    for index in (0, 1, len(stops) - 2, len(stops) - 1):
        page.evaluate(
            "([e, v]) => { e.value = v; e.dispatchEvent(new Event('input')); }", [slider, index]
        )
        seen.append(float(slider.get_attribute("data-value")))
    assert seen == [stops[0], stops[1], stops[-2], stops[-1]]
    assert seen[3] - seen[2] > 100 * (seen[1] - seen[0])  # steps grow with the value
    assert 1 < seen[1] / seen[0] <= 2 and 1 < seen[3] / seen[2] <= 2
    _check_readout(page, root, spec)
    # Choosing Llama 3.1 (131,072 tokens) moves the region; at 256 tokens no note is left.
    page.evaluate("([e]) => { e.value = 0; e.dispatchEvent(new Event('input')); }", [slider])
    root.query_selector('select[name="model"]').select_option("llama-3.1-8b")
    assert root.eval_on_selector(".ia-live-notes", "n => n.textContent") == ""
    # Grouped-query Llama 3.1 caches a quarter as much: 1 GB comes at a longer context.
    assert root.eval_on_selector(key, "p => Number(p.dataset.value)") > start
    _check_readout(page, root, spec)
    # The crosshair: hovering reads every curve at the x under the pointer.
    box = root.eval_on_selector(
        "svg.ia-live-plot",
        "s => { const r = s.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }",
    )
    page.mouse.move(box[0] + box[2] * 0.6, box[1] + box[3] * 0.5)
    tip = root.eval_on_selector_all(".ia-live-hover text", "ts => ts.map(t => t.textContent)")
    assert tip and tip[0].startswith(w.control_labels["context_len"] + " = ")
    assert [line.split(": ")[0] for line in tip[1:3]] == ["cache", "twice"]
    page.mouse.move(0, 0)
    assert root.eval_on_selector_all(".ia-live-hover text", "ts => ts.length") == 0
    assert not errors, errors
    page.close()


@pytest.mark.parametrize("doc", CHAPTERS)
def test_page_renders_offline_fits_its_column_and_its_widgets_recompute_the_library(browser, doc):

    page, errors = open_page(browser, doc)
    _check_page(page, errors)
    widgets = page.query_selector_all(".ia-live")
    assert widgets, f"{doc} has no live widget"
    for widget in widgets:
        spec = json.loads(widget.eval_on_selector(".ia-live-spec", "s => s.textContent"))
        _check_readout(page, widget, spec)
        # The legend draws a sample of each curve's line: same colour and dashes, all distinct.
        style = "ls => ls.map(l => [l.getAttribute('stroke'), l.getAttribute('stroke-dasharray')])"
        keys = widget.eval_on_selector_all("line.ia-live-key", style)
        assert keys == widget.eval_on_selector_all("polyline", style)
        assert len(set(map(tuple, keys))) == len(keys) == len(spec["curves"])
        assert not _widget_problems(widget), (doc, _widget_problems(widget))
        moved = False
        for control in spec["controls"]:
            handle = widget.query_selector(f'[name="{control["name"]}"]')
            if control["kind"] == "range":
                target = control["min"] + (control["max"] - control["min"]) * 0.37
                if abs(target - control["value"]) < (control.get("step") or 1):
                    target = control["max"]  # 37% of the way rounds to the default: move on
                if "stops" in control:  # a log slider: the index of a stop
                    target = int(0.37 * (len(control["stops"]) - 1))
                    if control["stops"][target] == control["value"]:  # the default: move on
                        target = len(control["stops"]) - 1
                page.evaluate(
                    "([e, v]) => { e.value = v; e.dispatchEvent(new Event('input')); }",
                    [handle, target],
                )
            else:
                options = handle.eval_on_selector_all("option", "os => os.map(o => o.value)")
                handle.select_option(options[-1])
            moved = True
        assert moved
        before = spec["values"][spec["x"]]
        _check_readout(page, widget, spec)  # every control moved to a non-default value
        x_label = next(c["label"] for c in spec["controls"] if c["name"] == spec["x"])
        assert widget.eval_on_selector(".ia-live-readout caption", "c => c.textContent") != (
            f"at {x_label} = {ia.controls.show(spec['x'], before)}"
        )
        assert not _widget_problems(widget), (doc, _widget_problems(widget))
        _check_regions(widget, spec)
    # The page's layout, on the page as it is open (tests/book/layout.py): loaded and typeset
    # once for both checks.
    layout.check(page, f"{doc}.html")
    assert not errors, f"console errors: {errors}"
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("doc, widget", [("book/02-mlp", ".ia-live"), (CALCULATOR, ".ia-calc")])
def test_the_widgets_text_is_readable_in_light_and_dark_mode(browser, scheme, doc, widget):
    page, errors = open_page(browser, doc, scheme)
    assert page.evaluate("() => document.documentElement.dataset.theme") == scheme
    assert page.evaluate(CONTRAST, widget), f"no text found in {widget}"
    assert not low_contrast(page, f"{widget}, main section > p")  # the widget and the prose
    assert not errors, f"console errors: {errors}"
    page.close()


def test_the_contrast_check_can_fail(browser):
    page = browser.new_page()
    page.set_content('<p style="color:#E69F00;background:#fff">orange on white</p>')
    assert [row[2] for row in low_contrast(page, "body")] == ["orange on white"]
    page.close()


# In dark mode the figures (PNGs drawn dark on white) are shown inverted, light on the dark page,
# not as light cards: each figure's computed filter.
LIGHT_FIGURES = """() => [...document.querySelectorAll(".bd-content div.cell_output img")]
  .filter((i) => !getComputedStyle(i).filter.includes("invert"))
  .map((i) => i.src.split("/").pop())"""


def test_the_figures_follow_dark_mode(browser):
    page, errors = open_page(browser, "book/07-hardware", "dark")
    shown = page.evaluate(
        "() => document.querySelectorAll('.bd-content div.cell_output img').length"
    )
    assert shown >= 2, "no figures found on the page"
    assert not page.evaluate(LIGHT_FIGURES)
    assert not errors, f"console errors: {errors}"
    page.close()


def test_the_dark_figure_check_can_fail(browser):
    page = browser.new_page()
    page.set_content(
        '<div class="bd-content"><div class="cell_output"><img src="a.png"></div></div>'
    )
    assert page.evaluate(LIGHT_FIGURES) == ["a.png"]
    page.close()


# Every case of the table test_format.py checks format.show against, through the page's iaShow:
# the JSON text is parsed in the page, so the values are the browser's own reading of it.
SHOW_CASES = r"""(table) => JSON.parse(table).map((c) => {
  let text;
  try { text = iaShow(c.value, c.kind, c.unit); } catch (error) { text = "throws " + error; }
  return [c.kind, c.value, c.unit ?? null, c.text, text];
}).filter((row) => row[3] !== row[4])"""


def test_the_page_formats_every_case_as_the_library_does(browser):
    import random
    from pathlib import Path

    from inference_arithmetic.core import format as fmt

    table = (Path(__file__).parents[1] / "format_cases.json").read_text("utf-8")
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_content("<!doctype html><meta charset=utf-8><title>iaShow</title>")
    page.add_script_tag(content=fmt.js_runtime())
    page.add_script_tag(content=fmt.js_runtime())  # a second block on the page: defined once
    mismatches = page.evaluate(SHOW_CASES, table)
    assert not mismatches, "iaShow differs from format.show:\n" + "\n".join(
        f"  iaShow({value!r}, {kind!r}, {unit!r}) = {got!r}, expected {text!r}"
        for kind, value, unit, text, got in mismatches
    )
    # Beyond the table, seeded random values of every magnitude (short decimals and exact binary
    # halves among them, where rounding ties) through every numeric kind, on both sides.
    rng = random.Random(0)
    values = [0.0, -0.0] + [
        rng.choice([-1, 1, 1, 1])
        * rng.choice(
            [
                10 ** rng.uniform(-16, 32),
                round(rng.uniform(0, 2000), rng.randint(0, 4)) * 10 ** rng.randint(-12, 24),
                rng.randint(0, 20_000) / 2 ** rng.randint(0, 12) * 1000 ** rng.randint(-3, 9),
            ]
        )
        for _ in range(3000)
    ]
    kinds = [k for k in fmt.KINDS if k != "text"]
    cases = [
        {"kind": kind, "value": value, "unit": "x", "text": fmt.show(value, kind, "x")}
        for value in values
        for kind in kinds
        if kind != "integer" or value == int(value)
    ]
    mismatches = page.evaluate(SHOW_CASES, json.dumps(cases))
    assert not mismatches, f"iaShow differs from format.show on {len(mismatches)} values: " + (
        ", ".join(
            f"iaShow({v!r}, {k!r}) = {got!r} not {text!r}" for k, v, _, text, got in mismatches[:10]
        )
    )
    # The one allowed difference: non-finite values print, where Python raises ValueError.
    assert page.evaluate("() => [NaN, Infinity, -Infinity].map(v => iaShow(v, 'nbytes'))") == [
        "NaN",
        "Infinity",
        "-Infinity",
    ]
    # Errors that Python raises, the page throws: an unknown kind, a non-whole integer.
    thrown = page.evaluate(
        "() => [[1, 'bytes'], [2.5, 'integer']].map(([v, k]) => {"
        " try { return iaShow(v, k); } catch (e) { return e.message; } })"
    )
    assert thrown[0].startswith('unknown kind "bytes": one of nbytes, seconds'), thrown
    assert thrown[1] == "2.5 is not a whole number", thrown
    assert not errors, f"page errors: {errors}"
    page.close()


def test_the_built_book_is_there():
    assert (HTML / "index.html").exists(), "build the book first (make book)"


APPENDICES = ["book/appendix-formulas", "book/appendix-glossary"]  # the pages with math


@pytest.mark.parametrize(
    "module_name, name",
    [
        (module_name, name)
        for module_name in formulas.__all__
        for name in getattr(formulas, module_name).__all__
        if inspect.isfunction(getattr(getattr(formulas, module_name), name))
    ],
)
def test_every_public_formula_is_in_the_built_page(module_name, name):
    # What the strict build (make book, before pytest in make test) made of the generated page.
    html = _page_path("book/appendix-formulas").read_text()
    # Inline code breaks after underscores and dots (<wbr>, tools/book_html.py).
    text = html.replace('<span class="pre">', "").replace("<wbr>", "")
    assert f"formulas.{module_name}.{name}(" in text


@pytest.fixture(scope="module")
def formula_reference(browser):
    """The formula reference, loaded once for the two tests below (seconds of MathJax): the
    first only reads it, the second opens one box; its console errors gathered throughout."""
    page, errors = open_page(browser, "book/appendix-formulas")
    yield page, errors
    page.close()


@pytest.mark.parametrize("doc", APPENDICES)
def test_appendix_renders_offline_with_its_math_typeset(browser, request, doc):
    if doc == "book/appendix-formulas":
        page, errors = request.getfixturevalue("formula_reference")
    else:
        page, errors = open_page(browser, doc)
    _check_page(page, errors)
    # MathJax shows TeX it cannot parse as an error box instead of failing loudly.
    assert page.locator("mjx-merror").count() == 0, f"{doc}: TeX that MathJax rejects"
    if doc != "book/appendix-formulas":  # whose layout is checked last (it opens every box)
        layout.check(page, f"{doc}.html")
        assert not errors, f"console errors: {errors}"


def test_math_of_a_collapsed_form_is_typeset_when_it_is_opened(formula_reference):
    # tools/book_html.py defers the math of the collapsed forms until a reader opens one
    # (the page's check above skips math still waiting; this opens a box and checks it).
    page, errors = formula_reference
    box = page.locator(".admonition.ia-lazy-math").first
    assert box.locator(".ia-math-later").count() > 0, "closed forms should wait to be typeset"
    assert box.locator("mjx-container").count() == 0
    box.locator(".admonition-title").click()
    page.wait_for_function(
        "(b) => b.querySelectorAll('mjx-container').length > 0", arg=box.element_handle()
    )
    assert box.locator(".ia-math-later").count() == 0
    assert box.locator("mjx-merror").count() == 0
    assert not errors, f"console errors: {errors}"


def test_the_formula_reference_fits_its_column(formula_reference):
    # The layout of the page loaded above (tests/book/layout.py), every box opened: after the
    # test above, which needs a box still closed.
    page, errors = formula_reference
    layout.check(page, "book/appendix-formulas.html")
    assert not errors, f"console errors: {errors}"
