"""Every page of the built book fits its text column, on a laptop and on a phone.

The rule tested, at 1280 px and at 390 px wide, with every collapsed input and solution opened:

- no display equation, table or code block sticks out of the text column, and none is cut off
  by a box that hides what does not fit;
- at 1280 px, the display equations of the text fit the column as they are, with no
  scrolling; tables (the chapters' summaries of the library's formulas), code blocks and the
  formulas a code cell prints may scroll sideways inside their own box, as the issue allows;
- at 390 px (a phone), equations, tables and code may all scroll inside their own box;
- inline math wider than its line scrolls in its own box, never cut off;
- the page itself never scrolls sideways, at either width (a long URL, a signature);
- the formula reference (generated, hundreds of formulas) breaks long sums into lines; what
  still does not fit (a long fraction) may scroll inside its own box at 1280 px too;
- every figure has at least twice the pixels it is displayed at (sharp on high-density
  screens);
- at 390 px, every figure's smallest text is at least 9 CSS px: a PNG's as its renderer
  recorded it (``page.figures``: a PNG without the record fails), scaled to the width the
  image is shown at; an SVG's (the widgets') as its font size times the SVG's scale.

Reads the book built in _build/html (``make book``), or the folder named by $IA_LAYOUT_HTML,
for example a single page built with
``jupyter-book build book/03-transformer-params.md --config _config.yml --path-output DIR``
(then ``IA_LAYOUT_HTML=DIR/_build/_page/03-transformer-params/html``).
"""

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from inference_arithmetic.page import figures
from tests.book.test_book import HTML
from tests.book.test_browser import browser  # noqa: F401  (the Chromium fixture, launched once)

ROOT = Path(os.environ.get("IA_LAYOUT_HTML") or HTML)
NOT_PAGES = {"genindex.html", "search.html", "index.html", "py-modindex.html"}
PAGES = sorted(
    path.relative_to(ROOT).as_posix()
    for path in ROOT.rglob("*.html")
    if path.name not in NOT_PAGES and not path.relative_to(ROOT).parts[0].startswith("_")
)
WIDTHS = {"laptop": 1280, "phone": 390}

# Opens what a reader can open: hidden code (details), solutions (togglebutton) and the
# formula reference's per-architecture boxes, whose math is typeset on first click. Each box is
# clicked, and its click handler hands its math to MathJax; what the handlers hand over is
# typeset in one pass rather than a pass per box (the same output, measured: the article's HTML
# is identical, in half the time, as MathJax measures the page once per pass). That a click
# alone typesets its box is checked in test_browser.py (a collapsed form, opened).
OPEN_EVERYTHING = """async () => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  document.querySelectorAll(".toggle-hidden").forEach((e) => e.classList.remove("toggle-hidden"));
  const boxes = document.querySelectorAll(".admonition.ia-lazy-math");
  if (!(window.MathJax && MathJax.typesetPromise)) return boxes.forEach((box) => box.click());
  const typeset = MathJax.typesetPromise, handed = [];
  MathJax.typesetPromise = (elements) => {
    handed.push(...(elements || [document.body]));
    return Promise.resolve();
  };
  try { boxes.forEach((box) => box.click()); } finally { MathJax.typesetPromise = typeset; }
  if (handed.length) await MathJax.typesetPromise(handed);
  await MathJax.typesetPromise();
}"""

# [problem, kind, what] for each display equation, table and code block of the article.
# ``strict``: the text's display equations may not scroll either.
CHECK = r"""(strict) => {
  const article = document.querySelector("article.bd-article");
  const column = article.getBoundingClientRect();
  const targets = [
    ["equation", 'mjx-container[display="true"]'],
    ["table", "table"],
    ["code", "div.highlight pre"],
    ["inline math", "span.math"],
  ];
  const problems = [];
  const name = (e) => (e.textContent || "").replace(/\s+/g, " ").trim().slice(0, 70);
  for (const [kind, selector] of targets) {
    for (const e of article.querySelectorAll(selector)) {
      if (!e.getClientRects().length) continue;  // not displayed
      let box = null;  // the nearest box that scrolls sideways: e itself or an ancestor
      let outermost = null;  // and the outermost (a formula in a table that scrolls)
      // Inline math's scrollWidth counts MathJax's hidden copy for screen readers: the width
      // of what is typeset is what must fit.
      const typeset = kind === "inline math" && e.querySelector("mjx-math");
      const wide = (p) =>
        p === e && typeset ? typeset.getBoundingClientRect().width : p.scrollWidth;
      for (let p = e; p && p !== article; p = p.parentElement) {
        const overflow = getComputedStyle(p).overflowX;
        if ((overflow === "hidden" || overflow === "clip") && wide(p) > p.clientWidth + 1) {
          problems.push(["cut off", kind, name(e)]);
          break;
        }
        if (overflow === "auto" || overflow === "scroll") {
          box = box || p;
          outermost = p;
        }
      }
      const outer = (outermost || e).getBoundingClientRect();
      if (outer.right > column.right + 1 || outer.left < column.left - 1) {
        problems.push(["outside the column", kind, name(e)]);
      } else if (strict && kind === "equation" && !e.closest(".cell_output")
                 && box && box.scrollWidth > box.clientWidth + 1) {
        problems.push(["scrolls", kind, name(e)]);
      }
    }
  }
  // The page itself never scrolls sideways: a long string, a signature or a table that no box
  // holds widens the whole page, the theme's bars with it.
  const page = document.scrollingElement;
  if (page.scrollWidth > window.innerWidth + 1) {
    problems.push(["scrolls sideways", "page", `${page.scrollWidth} px wide`]);
  }
  return problems;
}"""

# [src, natural width, displayed width] of each figure with fewer than twice the pixels shown.
BLURRED = """() => [...document.querySelectorAll("article.bd-article .cell_output img")]
  .filter((i) => i.getClientRects().length && i.naturalWidth < 1.95 * i.clientWidth)
  .map((i) => [i.src.split("/").pop(), i.naturalWidth, i.clientWidth])"""

# [src, displayed width] of each figure image; [text, font size in CSS px] of each SVG text
# (the font size times the scale from the SVG's units to the screen's, rotation aside).
FIGURE_TEXT = """() => {
  const article = document.querySelector("article.bd-article");
  const shown = (e) => e.getClientRects().length;
  const images = [...article.querySelectorAll("img")].filter(shown)
    .map((i) => [i.src, i.getBoundingClientRect().width]);
  const texts = [...article.querySelectorAll("svg text")]
    .filter((t) => shown(t) && t.textContent.trim())
    .map((t) => {
      const m = t.getScreenCTM(), size = parseFloat(getComputedStyle(t).fontSize);
      return [t.textContent.trim(), size * Math.hypot(m.a, m.b)];
    });
  return [images, texts];
}"""
LEAST_TEXT_PX = 9  # the least legible size at phone width


def small_figure_text(images, texts):
    """[problem, figure, size] for each figure whose smallest text is under LEAST_TEXT_PX CSS
    px as shown: ``images`` [src, shown width], ``texts`` [text, px] (``FIGURE_TEXT``)."""
    problems = []
    for src, width in images:
        px = figures.shown_text_px(Path(unquote(urlparse(src).path)).read_bytes(), width)
        name = src.split("/")[-1]
        if px is None:
            problems.append(["no record of its smallest text", name, None])
        elif px < LEAST_TEXT_PX:
            problems.append(["text too small", name, round(px, 1)])
    problems += [
        ["text too small", f"svg: {t[:40]}", round(px, 1)] for t, px in texts if px < LEAST_TEXT_PX
    ]
    return problems


def _open_page(browser, path):  # noqa: F811
    page = browser.new_page(viewport={"width": WIDTHS["laptop"], "height": 900})
    page.set_default_timeout(180_000)  # MathJax on a busy 2-core machine
    page.goto((ROOT / path).as_uri(), wait_until="load")
    # A page without math (the bibliography) loads no MathJax.
    if page.query_selector("script[src*='mathjax'], script[src*='MathJax']"):
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise")
    page.evaluate(OPEN_EVERYTHING)
    assert not page.locator(".ia-math-later").count(), "math left untypeset in a closed box"
    return page


GENERATED = "book/appendix-formulas.html"  # may scroll its longest formulas at 1280 px too


# Resolves two frames after a resize: by then the browser has dispatched the resize to the
# page's handlers and run a frame's animation callbacks (what a fixed 200 ms wait was for). The
# theme moves its sidebars with CSS media queries, which the check's own layout reads apply.
FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def _problems(page, strict=True):
    """The layout problems of the open page at each width, by width (the page is left at the
    last width: a resize of the formula reference lays out hundreds of formulas again)."""
    found = {}
    for device, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.evaluate(FRAMES)
        found[device] = page.evaluate(CHECK, strict and width == WIDTHS["laptop"])
    return {device: rows for device, rows in found.items() if rows}


@pytest.mark.parametrize("path", PAGES or ["(no pages)"])
def test_nothing_overflows_the_text_column_and_figures_are_sharp_and_legible(browser, path):  # noqa: F811
    if not PAGES:
        pytest.fail(f"no built pages under {ROOT}: build the book first (make book)")
    page = _open_page(browser, path)
    assert not page.evaluate(BLURRED)  # at the laptop's width, where figures show widest
    assert not _problems(page, strict=path != GENERATED)
    assert not small_figure_text(*page.evaluate(FIGURE_TEXT))  # at the phone's width
    page.close()


# A wide table and a long equation, put into a real page: the check must catch the equation
# that scrolls, and the table once it has no box of its own to scroll in.
BROKEN = r"""async () => {
  const article = document.querySelector("article.bd-article");
  const wrap = document.createElement("div");
  wrap.className = "pst-scrollable-table-container";
  const cells = Array.from({length: 14}, (_, i) => `<td>column_number_${i}</td>`).join("");
  wrap.innerHTML = `<table class="table"><tbody><tr>${cells}</tr></tbody></table>`;
  const math = document.createElement("div");
  math.className = "math notranslate nohighlight";
  math.textContent = "\\[" + Array.from({length: 40}, (_, i) => `x_{${i}}`).join(" + ") + "\\]";
  article.prepend(wrap, math);
  await MathJax.typesetPromise([math]);
}"""


def test_the_check_finds_a_wide_table_and_a_long_equation(browser):  # noqa: F811
    if not PAGES:
        pytest.fail(f"no built pages under {ROOT}: build the book first (make book)")
    page = _open_page(browser, PAGES[0])
    before = _problems(page)
    page.evaluate(BROKEN)
    after = _problems(page)
    added = [row for row in after["laptop"] if row not in before.get("laptop", [])]
    assert [(problem, kind) for problem, kind, _ in added] == [("scrolls", "equation")]
    # A raw wide block, with no box of its own to scroll in, sticks out of the column.
    page.evaluate(
        "() => { const t = document.querySelector('article.bd-article table');"
        " t.parentElement.style.overflowX = 'visible'; }"
    )
    assert ["outside the column", "table", "column_number_0column_number_1"] in [
        [p, k, w[:30]] for p, k, w in _problems(page)["laptop"]
    ]
    # A word too long for a phone, with nothing to break it, widens the page; an inline
    # formula in a box that hides what does not fit is cut off.
    page.evaluate(
        "() => { const a = document.querySelector('article.bd-article');"
        " const p = document.createElement('p'); p.style.overflowWrap = 'normal';"
        " p.textContent = 'https://example.org/' + 'x'.repeat(80); a.prepend(p);"
        " const m = document.createElement('span'); a.querySelector('p').appendChild(m);"
        " m.className = 'math'; m.style.display = 'inline-block'; m.style.overflow = 'hidden';"
        " m.style.maxWidth = '3em'; m.textContent = 'x'.repeat(40); }"
    )
    phone = [(problem, kind) for problem, kind, _ in _problems(page)["phone"]]
    assert ("scrolls sideways", "page") in phone and ("cut off", "inline math") in phone
    page.close()


# Figures as the book shows them (a PNG at half its pixels, shrunk to a 342 px column): the
# check must find the text that a wide figure shrinks too far, a PNG drawn without the book's
# renderer, and SVG text scaled down by its viewBox; and pass what is legible.
def test_the_check_finds_small_figure_text(browser, tmp_path):  # noqa: F811
    from matplotlib.figure import Figure

    def drawn(width, record=True):
        figure = Figure(figsize=(width, 2), dpi=100)
        figure.add_subplot().set_title("twelve points", fontsize=12)  # ticks at 10 pt
        if record:
            return figures.png(figure)[0]
        figure.savefig(tmp_path / "plain.png", dpi=200)
        return (tmp_path / "plain.png").read_bytes()

    # 10 pt is 13.9 CSS px at 100 px an inch: as much from a 4-inch figure (cropped to its
    # drawing, it fits the column), about 7 px from an 8-inch one shrunk to the column.
    images = {"legible.png": drawn(4), "wide.png": drawn(8), "plain.png": drawn(4, False)}
    tags = []
    for name, data in images.items():
        (tmp_path / name).write_bytes(data)
        width = int.from_bytes(data[16:20], "big") // 2
        tags.append(f'<img src="{name}" width="{width}" style="max-width:100%;height:auto">')
    svg = (
        '<svg width="300" height="60" viewBox="0 0 600 120"><text x="5" y="40" font-size="14">'
        'halved</text><text x="5" y="100" font-size="22">legible</text></svg>'
    )
    html = f'<article class="bd-article" style="width:342px">{"".join(tags)}{svg}</article>'
    (tmp_path / "page.html").write_text(html)
    page = browser.new_page(viewport={"width": WIDTHS["phone"], "height": 900})
    page.goto((tmp_path / "page.html").as_uri(), wait_until="load")
    problems = small_figure_text(*page.evaluate(FIGURE_TEXT))
    page.close()
    assert [(problem, name) for problem, name, _ in problems] == [
        ("text too small", "wide.png"),
        ("no record of its smallest text", "plain.png"),
        ("text too small", "svg: halved"),
    ]
    assert 6 < problems[0][2] < 8 and problems[2][2] == 7  # 14 px at half scale
