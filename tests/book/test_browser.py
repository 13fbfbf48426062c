"""The built book in a real browser, offline: no console errors, typeset math, every image
loaded, every live widget recomputing what the library computes, and each chapter's layout
(``tests/book/layout.py``, checked on the chapter as it is open).

Drives Debian's Chromium (/usr/bin/chromium, or $CHROMIUM) with Playwright, every host name
unresolvable, pages opened from disk. Without Chromium the tests fail and say how to install
it; IA_SKIP_BROWSER=1 opts out explicitly (they are then reported as skipped, never passed).
"""

import inspect
import json
import math
import os
import shutil
import warnings

import pytest
import sympy

import inference_arithmetic as ia
from inference_arithmetic import formulas
from tests.book import layout
from tests.book.test_book import HTML, _page_path
from tests.book.test_chapters import CHAPTERS

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: the page must need none
]
CALCULATOR = "book/16-calculator"  # chapter 16's calculator: one form over the whole library
SYMBOLS = {name: row.symbol for name, row in ia.symbols.NOTATION.items()}


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("IA_SKIP_BROWSER") == "1":
        pytest.skip("browser tests opted out with IA_SKIP_BROWSER=1")
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"no Chromium at {CHROMIUM}: install it (apt-get install chromium), point $CHROMIUM "
            "at one, or opt out explicitly with IA_SKIP_BROWSER=1"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


def _open(browser, doc, scheme="light"):
    page = browser.new_page(color_scheme=scheme)
    # MathJax typesets before the load event, which takes a few seconds for the pages with
    # the most formulas, and several times that on a busy 2-core machine.
    page.set_default_timeout(120_000)
    errors = []

    def on_console(message):
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(_page_path(doc).as_uri(), wait_until="load")
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    return page, errors


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


# WCAG 2's contrast ratio of each text in the elements matched (its colour, or an SVG text's
# fill, against the background behind it); the lowest few come back.
CONTRAST = r"""(selector) => {
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255;
    return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const behind = (e) => {  // semi-transparent backgrounds blended over what lies below
    const layers = [];
    for (; e; e = e.parentElement) {
      const [r, g, b, a = 1] = rgb(getComputedStyle(e).backgroundColor);
      if (a > 0) layers.push([[r, g, b], a]);
      if (a >= 1) break;
    }
    return layers.reverse().reduce((under, [c, a]) => c.map((v, i) => v * a + under[i] * (1 - a)),
      [255, 255, 255]);
  };
  const rows = [];
  const check = (e) => {
    const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !e.getClientRects().length) return;
    const style = getComputedStyle(e);
    const fg = rgb(e instanceof SVGElement ? style.fill : style.color).slice(0, 3);
    const [a, b] = [lum(fg), lum(behind(e))].sort((x, y) => y - x);
    rows.push([(a + 0.05) / (b + 0.05), e.tagName, e.textContent.trim().slice(0, 40)]);
  };
  document.querySelectorAll(selector).forEach((root) => {
    check(root);
    root.querySelectorAll("*").forEach(check);
  });
  return rows.sort((x, y) => x[0] - y[0]).slice(0, 3);
}"""


def _low_contrast(page, selector):
    """Texts in ``selector`` below WCAG AA's 4.5:1 for normal text."""
    return [row for row in page.evaluate(CONTRAST, selector) if row[0] < 4.5]


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
        expr = sympy.parse_expr(curve["sympy"], local_dict=SYMBOLS)
        expected = float(ia.numeric(expr).from_values(state))
        assert math.isclose(value, expected, rel_tol=1e-9), (curve["label"], value, expected)
    # The key numbers (the balance point, the ridge batch, the crossover): the least x at which
    # the page's copy of the condition holds, by the library (widgets.least_where).
    keys = widget.eval_on_selector_all(
        ".ia-live-keyvalue", "ps => ps.map(p => Number(p.dataset.value))"
    )
    assert len(keys) == len(spec.get("keys") or [])
    for key, value in zip(spec.get("keys") or [], keys, strict=True):
        import numpy as np

        condition = ia.numeric(sympy.parse_expr(key["sympy"], local_dict=SYMBOLS))
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
    import json

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
    import json

    page, errors = _open(browser, doc)
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
    page, errors = _open(browser, doc, scheme)
    assert page.evaluate("() => document.documentElement.dataset.theme") == scheme
    assert page.evaluate(CONTRAST, widget), f"no text found in {widget}"
    assert not _low_contrast(page, f"{widget}, main section > p")  # the widget and the prose
    assert not errors, f"console errors: {errors}"
    page.close()


def test_the_contrast_check_can_fail(browser):
    page = browser.new_page()
    page.set_content('<p style="color:#E69F00;background:#fff">orange on white</p>')
    assert [row[2] for row in _low_contrast(page, "body")] == ["orange on white"]
    page.close()


# In dark mode the figures (PNGs drawn dark on white) are shown inverted, light on the dark page,
# not as light cards: each figure's computed filter.
LIGHT_FIGURES = """() => [...document.querySelectorAll(".bd-content div.cell_output img")]
  .filter((i) => !getComputedStyle(i).filter.includes("invert"))
  .map((i) => i.src.split("/").pop())"""


def test_the_figures_follow_dark_mode(browser):
    page, errors = _open(browser, "book/07-hardware", "dark")
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
    import json
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


# --- Chapter 16's calculator: one form over the whole library ----------------------------------


def _calculator_agrees(page, root):
    """The page's readout (or message) is what the library gives for its controls: the
    Calculator's values, or its message, word for word."""
    from inference_arithmetic.page.calculator import Calculator, RefusedWarning

    state = root.evaluate(
        "r => { const v = {}; r.querySelectorAll('[name]').forEach(e => { v[e.name] = e.value; });"
        " return v; }"
    )
    for name in (*ia.calculator.ranges(), *ia.calculator.AMOUNTS):  # the form's numbers
        if name == ia.calculator.PRICE and not state[name].strip():
            state[name] = None  # blank: the GPU's example price
            continue
        number = float(state[name])
        state[name] = int(number) if number.is_integer() else number
    with warnings.catch_warnings(record=True) as caught:  # a refused form says so once
        warnings.simplefilter("always")
        library = Calculator(**state)
    refusals = [w for w in caught if issubclass(w.category, RefusedWarning)]
    assert len(refusals) == (library.message is not None), (state, caught)
    message = root.evaluate(
        "r => { const m = r.querySelector('.ia-calc-message'); return m && m.textContent; }"
    )
    own = ia.calculator.own_config
    if state["model"] == own.OWN and message is not None and message != library.message:
        # The page reads a pasted config.json by fewer rules than the library's parser: a
        # config it cannot read gets one of its own messages, naming what it cannot read.
        starts = [template.split("{")[0] for template in own.MESSAGES.values()]
        assert any(message.startswith(start) for start in starts), (state, message)
        return state, None
    if library.values is None:
        assert message == library.message, state
        return state, None
    assert message is None, (state, message)
    cells = root.evaluate(
        "r => [...r.querySelectorAll('.ia-calc-value')].map(c => "
        "[c.dataset.key, c.dataset.value ?? null, c.dataset.text ?? null, c.textContent])"
    )
    assert len(cells) >= 6  # the plan has 6 rows, the other modes more
    shown = library.text()
    for key, value, text, words in cells:
        assert words in shown, (key, words)  # the same text as format.show gives
        if text is not None:
            assert text in shown, key
        elif value is None:
            assert library.values[key] is None, key
        else:
            # The steady state (and the plan over it) is a fixed point the page solves itself.
            tolerance = 1e-9 if library.state["mode"] == ia.calculator.STATIC else 1e-6
            assert math.isclose(float(value), library.values[key], rel_tol=tolerance), key
    return state, library.result


def test_the_calculator_recomputes_what_calculate_gives(browser):
    page, errors = _open(browser, CALCULATOR)
    root = page.locator(".ia-calc").first
    _, first = _calculator_agrees(page, root)
    assert first is not None, "the calculator's defaults should fit"
    # A label's first line is its words; the lines after it, a choice's options, are names
    # (llama.cpp's q4_k_m among them).
    words = [t.split("\n")[0] for t in root.locator(".ia-calc-controls label").all_inner_texts()]
    assert len(words) >= 10 and not any("_" in text for text in words), words

    def choose(name, value):
        root.locator(f'select[name="{name}"]').select_option(str(value))
        return _calculator_agrees(page, root)

    def enter(name, value):
        field = root.locator(f'input[name="{name}"]')
        field.fill(str(value))
        field.dispatch_event("change")
        return _calculator_agrees(page, root)

    for name, value in (("gpu", "h100-sxm"), ("dtype", "bf16"), ("model", "llama-3.1-8b")):
        choose(name, value)
    _, small = choose("n_gpus", 1)
    assert small is not None
    _, moved = choose("model", "llama-3.1-70b")
    assert moved is None  # 70B in bf16 on one 80 GB GPU: the message, not numbers
    _, moved = choose("n_gpus", 4)
    assert moved is not None and moved["ttft"] != small["ttft"]
    for name, value in (("gpu", "h200"), ("dtype", "fp8"), ("cache_dtype", "bf16")):
        _, after = choose(name, value)
        assert after is not None and after != moved
        moved = after
    _, twice = enter("replicas", 2)  # a second copy: twice the tokens, each as fast
    assert twice["throughput"] == 2 * moved["throughput"] and twice["tpot"] == moved["tpot"]
    enter("replicas", 1)
    for name, value in (("batch", 48), ("prompt_len", 777), ("output_len", 333)):
        _, after = enter(name, value)
        assert after[name] == value and after["tpot"] != moved["tpot"]
        moved = after
    state, out = enter("batch", -7)  # never clamped: the message names the range
    assert state["batch"] == -7 and out is None
    assert "batch must be a whole number from 1 to 4,096, got -7" in root.inner_text()
    enter("batch", 48)
    offered = root.locator('select[name="n_gpus"] option').all_text_contents()
    assert offered == ["1", "2", "4", "8", "16", "32", "64"]  # the degrees that split 70B's heads
    choose("model", "gpt2")
    choose("n_gpus", 3)  # 12 heads: 3 GPUs split them
    _, out = choose("model", "llama-3.1-70b")  # 64 heads and 8 KV heads: 3 is kept, refused
    assert out is None and "it may be 1, 2, 4, 8" in root.inner_text()
    assert root.locator('select[name="n_gpus"]').input_value() == "3"  # never clamped
    choose("n_gpus", 4)
    _, out = enter("prompt_len", 131_000)  # + 333 output tokens: past the 131,072-token window
    assert out is None and "context window" in root.inner_text()
    enter("prompt_len", 777)
    _, impossible = choose("dtype", "int4")  # no GPU has an int4 FLOP rate
    assert impossible is None and "no peak FLOP rate" in root.inner_text()
    _, weight_only = choose("compute_dtype", "bf16")  # int4 weights computed in bf16
    assert weight_only is not None and weight_only["cache_dtype"] == "bf16"
    choose("compute_dtype", "as weights")
    choose("dtype", "bf16")
    _, impossible = choose("model", "llama-3.1-405b")
    assert impossible is None and "does not fit" in root.inner_text()
    assert not _low_contrast(page, ".ia-calc"), "the message must be readable"
    choose("model", "llama-3.1-70b")
    _, steady = choose("mode", "continuous serving")  # a stream at requests_per_s
    assert steady is not None and "saturation_rate" in steady
    assert not root.locator('input[name="batch"]').is_visible()
    _, slow = enter("requests_per_s", 0.5)
    _, steady = enter("requests_per_s", 2)
    assert steady["tpot"] > slow["tpot"] and steady["ttft"] > slow["ttft"]  # busier, slower
    top = steady["saturation_rate"]
    _, past = enter("requests_per_s", round(2 * top, 3))  # past saturation: the message
    assert past is None and "keeps up with at most" in root.inner_text()
    _, past = enter("requests_per_s", -1)  # never clamped
    assert past is None and "requests_per_s must be a positive number" in root.inner_text()
    enter("requests_per_s", 1)
    for name, value in (("gpu", "h200"), ("prompt_len", 500), ("output_len", 300)):
        _, after = (choose if name == "gpu" else enter)(name, value)
        assert after is not None and after["ttft"] != steady["ttft"]
    _, static = choose("mode", "static batch")
    assert static is not None and "saturation_rate" not in static
    assert not errors, f"console errors: {errors}"
    page.close()


def _readout(root):
    return root.locator(".ia-calc-readout").inner_text()


def _form(page, root):
    """Two hands on the calculator's form: ``choose`` an option of a list, ``enter`` a number;
    each returns the library's result for the form after the change, checked equal to the
    page's readout (``_calculator_agrees``), or None where both give a message."""

    def choose(name, value):
        root.locator(f'select[name="{name}"]').select_option(str(value))
        return _calculator_agrees(page, root)[1]

    def enter(name, value):
        field = root.locator(f'input[name="{name}"]')
        field.fill(str(value))
        field.dispatch_event("change")
        return _calculator_agrees(page, root)[1]

    return choose, enter


def _check_new_controls(page, root):
    """The calculator's modes and assumptions on the page: each control moves the readout as
    the library does (``_calculator_agrees`` after every change), and a value out of its range
    shows the library's message naming the range, never a clamp."""
    choose, enter = _form(page, root)

    for name, value in (("gpu", "h100-sxm"), ("model", "llama-3.1-70b"), ("n_gpus", 4)):
        choose(name, value)
    steady = choose("mode", "continuous serving")
    assert 0.4 < steady["utilization"] < 0.6  # the default rate: half the saturation rate
    keys = root.evaluate("r => [...r.querySelectorAll('.ia-calc-value')].map(c => c.dataset.key)")
    assert {"weights", "kv_cache", "memory", "budget", "cost_blended", "cost_request"} <= set(keys)
    # Each assumption: a value in range changes the readout; one out of range names its range.
    controls = [
        ("memory_utilization", 0.85, 1.5, "memory_utilization must be a number from 0.001 to 1"),
        ("token_budget", 2048, 0, "token_budget must be a whole number from 1 to "),
        ("price_per_hour", 2.5, -1, "price_per_hour must be a positive number of dollars"),
        ("requests_per_s", 1.5, 0, "requests_per_s must be a positive number of requests"),
    ]
    for name, value, bad, words in controls:
        before = _readout(root)
        assert enter(name, value) is not None and _readout(root) != before, name
        assert enter(name, bad) is None and f"{words}" in _readout(root), name
        assert root.locator(f'input[name="{name}"]').input_value() == str(bad)  # kept
        enter(name, value)
    before = _readout(root)
    assert not root.locator('input[name="compute_efficiency"]').is_visible()  # the kernels'
    assert choose("step", "roofline") is not None and _readout(root) != before
    for name, value, bad in (("compute_efficiency", 0.7, 1.2), ("bandwidth_efficiency", 0.8, 0)):
        before = _readout(root)
        assert enter(name, value) is not None and _readout(root) != before, name
        assert enter(name, bad) is None, name
        assert f"{name} must be a number from 0.001 to 1, got {bad}" in _readout(root)
        enter(name, value)
    choose("step", "kernels")
    enter("price_per_hour", "")  # blank: the GPU's example price again
    # Sizing from targets: the plan, and its refusal when no deployment meets them.
    plan = choose("mode", "sizing from targets")
    assert plan is not None and plan["gpus"] == plan["replicas"] * plan["n_gpus"]
    assert not root.locator('select[name="n_gpus"]').is_visible()  # the plan chooses them
    tighter = enter("tpot_target", 0.03)
    assert tighter is None or tighter["gpus"] >= plan["gpus"]
    assert enter("ttft_target", 0.001) is None and "no deployment of up to" in _readout(root)
    assert enter("ttft_target", -1) is None and "ttft_target must be a positive" in _readout(root)
    # The plan over a pipeline's stages (the stream's parallelisms only are offered): looser
    # targets, met by 3 stages, fewer GPUs than tensor parallelism's 2 x 2 and no split of
    # 70B's heads.
    assert root.locator('select[name="parallel"] option').all_text_contents() == list(
        ia.calculator.STREAM_PARALLEL
    )
    enter("ttft_target", 1.0)
    tensor = enter("tpot_target", 0.15)
    staged = choose("parallel", "pipeline")
    assert staged is not None and staged["gpus"] == 3 < tensor["gpus"]
    choose("parallel", "tensor")
    enter("ttft_target", 0.5)
    enter("tpot_target", 0.05)
    # A pipeline (the static mode's): any number of stages up to the layers.
    static = choose("mode", "static batch")
    choose("parallel", "pipeline")
    offered = root.locator('select[name="n_gpus"] option').all_text_contents()
    assert offered == [str(n) for n in range(1, 65)]
    piped = choose("n_gpus", 5)  # 5 stages: not a tensor-parallel degree of 70B
    assert piped is not None and piped["parallel"] == "pipeline" and piped != static
    choose("n_gpus", 4)
    # Its steady state: each request waits for its micro-batch's round (the sum of
    # formulas.continuous.pipeline_wait over the chain's steps), longer than one engine's step.
    piped = choose("mode", "continuous serving")
    tensor = choose("parallel", "tensor")
    assert piped is not None and piped["tpot"] > tensor["tpot"]
    choose("mode", "static batch")
    choose("parallel", "tensor")
    # FP4 where the GPU has an fp4 rate.
    choose("gpu", "b200")
    for dtype in ("nvfp4", "mxfp4"):
        fp4 = choose("dtype", dtype)
        assert fp4 is not None and fp4["compute_dtype"] == "fp4", dtype
    assert choose("gpu", "h100-sxm") is None and "no peak FLOP rate for fp4" in _readout(root)
    choose("dtype", "auto")
    # A config.json pasted in: read by the page's rules, computed as the library's parser reads
    # it; what the page cannot read is named.
    own = ia.calculator.own_config
    assert not root.locator('textarea[name="config"]').is_visible()
    assert choose("model", own.OWN) is None and own.MESSAGES["json"] in _readout(root)

    def paste(config):
        field = root.locator('textarea[name="config"]')
        field.fill(config if isinstance(config, str) else json.dumps(config))
        field.dispatch_event("change")
        return _calculator_agrees(page, root)[1]

    config = own._verbatim("llama-3.1-8b")  # no head_dim: the parser derives it, the page not
    assert paste(config) is None and "it lacks head_dim" in _readout(root)
    config |= {"head_dim": 128, "hidden_size": 3072, "num_attention_heads": 24}
    mine = paste(config)
    assert mine is not None and mine["model"] == own.OWN
    offered = root.locator('select[name="n_gpus"] option').all_text_contents()
    assert "24" in offered and "16" not in offered  # the degrees that split 24 heads
    assert paste({**config, "tie_word_embeddings": True}) is None
    assert "it sets tie_word_embeddings to true" in _readout(root)
    assert paste({**config, "hidden_size": -1}) is None
    assert "config.json's hidden_size must be a positive whole number, got -1" in _readout(root)
    assert paste({"model_type": "t5"}) is None and 'this one is "t5"' in _readout(root)
    paste(config)
    assert choose("mode", "continuous serving") is not None
    choose("mode", "static batch")
    choose("model", "llama-3.1-70b")


def test_the_calculators_modes_and_assumptions_move_its_readout(browser):
    page, errors = _open(browser, CALCULATOR)
    _check_new_controls(page, page.locator(".ia-calc").first)
    assert not errors, f"console errors: {errors}"
    page.close()


def test_the_calculator_offers_expert_parallelism_and_the_serving_options(browser):
    page, errors = _open(browser, CALCULATOR)
    root = page.locator(".ia-calc").first
    choose, enter = _form(page, root)
    moe = "qwen3-30b-a3b"  # 128 experts: small enough for a few GPUs
    # Expert parallelism, for a model with experts; the imbalance where they are spread.
    for name, value in (("model", moe), ("gpu", "h100-sxm"), ("dtype", "auto")):
        choose(name, value)
    enter("batch", 64)
    assert not root.locator('input[name="expert_imbalance"]').is_visible()
    choose("parallel", "expert-dp")
    offered = root.locator('select[name="n_gpus"] option').all_text_contents()
    expected = ia.serving.scenario.expert_parallel_degrees(ia.model(moe), 64)
    assert offered == [str(n) for n in expected]  # the counts that spread 128 experts evenly
    spread = choose("n_gpus", 4)
    assert spread is not None and spread["parallel"] == "expert-dp"
    assert root.locator('input[name="expert_imbalance"]').is_visible()
    wide = choose("n_gpus", 16)  # past H100's link domain: the all-to-all over the network too
    assert wide is not None and wide["tpot"] != spread["tpot"]
    choose("n_gpus", 4)
    busier = enter("expert_imbalance", 2)
    assert busier is not None and busier["tpot"] > spread["tpot"]
    assert enter("expert_imbalance", 0.5) is None
    assert "expert_imbalance must be a number from 1 " in _readout(root)
    enter("expert_imbalance", 1.5)
    assert choose("parallel", "expert") is not None
    assert choose("model", "llama-3.1-8b") is None  # dense: the reason, not a number
    assert ia.formulas.latency.NO_EXPERTS.format(model="llama-3.1-8b") in _readout(root)
    # The stream's steady state is of tensor parallelism or a pipeline: experts are named.
    assert choose("mode", "continuous serving") is None
    assert ia.calculator.not_streamed("expert") in _readout(root)
    choose("mode", "static batch")
    choose("parallel", "tensor")
    choose("n_gpus", 1)
    # A stream with a prefix cache and speculation, and the plan over it.
    plain = choose("mode", "continuous serving")
    assert root.locator('input[name="prefix_hit_rate"]').is_visible()
    cached = enter("prefix_hit_rate", 0.5)
    assert cached is not None and cached["ttft"] < plain["ttft"]  # half of each prompt
    for method in ("eagle3", "ngram"):
        drafted = choose("speculative", method)
        assert drafted is not None and drafted["tpot"] != cached["tpot"], method
    assert choose("speculative", "mtp") is None  # Llama ships no MTP module: the refusal
    assert "ships no multi-token prediction module" in _readout(root)
    assert choose("speculative", "draft") is None  # no defaults: the library's refusal
    assert "speculative method 'draft' has no default" in _readout(root)
    choose("speculative", "eagle3")
    assert enter("prefix_hit_rate", 1.5) is None
    assert "prefix_hit_rate must be a number from 0 to 1, got 1.5" in _readout(root)
    enter("prefix_hit_rate", 0.5)
    assert choose("step", "roofline") is None and "does not model them" in _readout(root)
    choose("step", "kernels")
    planned = choose("mode", "sizing from targets")
    assert planned is not None and planned["gpus"] >= 1
    assert choose("speculative", "draft") is None and "has no default" in _readout(root)
    choose("speculative", "none")
    enter("prefix_hit_rate", 0)
    choose("mode", "static batch")
    assert not errors, f"console errors: {errors}"
    page.close()


def test_the_calculator_plans_on_percentiles_as_ia_plan_does(browser):
    """The plan mode judges its targets on the percentile chosen, as ``ia.plan`` does, and the
    continuous mode shows the percentiles of the steady state, as ``ia.steady_state`` gives
    them, to the digits the readout prints (``_calculator_agrees`` holds every cell)."""
    page, errors = _open(browser, CALCULATOR)
    root = page.locator(".ia-calc").first
    choose, enter = _form(page, root)
    for name, value in (("model", "llama-3.1-70b"), ("gpu", "h100-sxm"), ("dtype", "auto")):
        choose(name, value)
    choose("mode", "sizing from targets")
    assert root.locator('select[name="percentile"]').is_visible()
    assert root.locator('select[name="percentile"] option').all_text_contents() == list(
        ia.calculator.JUDGED
    )
    assert root.locator('select[name="percentile"]').input_value() == "mean"  # ia.plan's default
    asked = {"requests_per_s": 10, "prompt_len": 2048, "output_len": 256}
    asked |= {"ttft_target": 0.5, "tpot_target": 0.05}
    for name, value in asked.items():
        enter(name, value)
    on_means = _calculator_agrees(page, root)[1]
    on_p99 = choose("percentile", "p99")
    expected = ia.plan("llama-3.1-70b", "h100-sxm", **asked, percentile=99)
    for key in ("replicas", "n_gpus", "gpus"):
        assert on_p99[key] == expected[key], key
    assert on_p99["gpus"] > on_means["gpus"]  # the tail costs GPUs the means do not
    assert "its times are each request's p99" in _readout(root)
    # That deployment served continuously: its percentiles, each the library's.
    choose("mode", "continuous serving")
    choose("n_gpus", expected["n_gpus"])
    steady = enter("replicas", expected["replicas"])
    library = ia.steady_state(
        "llama-3.1-70b",
        "h100-sxm",
        requests_per_s=asked["requests_per_s"],
        prompt_len=asked["prompt_len"],
        output_len=asked["output_len"],
        n_gpus=expected["n_gpus"],
        replicas=expected["replicas"],
    )
    shown = root.evaluate(
        "r => Object.fromEntries([...r.querySelectorAll('.ia-calc-value')]"
        ".map(c => [c.dataset.key, c.textContent]))"
    )
    for time, named in library["percentiles"].items():
        for name, value in named.items():
            key = ia.calculator.PERCENTILE_KEY.format(time=time, name=name)
            assert shown[key] == ia.format.seconds(value), key
            assert steady["percentiles"][time][name] == value
    assert library["percentiles"]["ttft"]["p99"] <= asked["ttft_target"]  # as planned
    assert library["percentiles"]["tpot"]["p99"] <= asked["tpot_target"]
    assert not root.locator('select[name="percentile"]').is_visible()  # the plan's alone
    assert not errors, f"console errors: {errors}"
    page.close()


# --- The appendices: the formula reference and the glossary -----------------------------------

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
    page, errors = _open(browser, "book/appendix-formulas")
    yield page, errors
    page.close()


@pytest.mark.parametrize("doc", APPENDICES)
def test_appendix_renders_offline_with_its_math_typeset(browser, request, doc):
    if doc == "book/appendix-formulas":
        page, errors = request.getfixturevalue("formula_reference")
    else:
        page, errors = _open(browser, doc)
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
