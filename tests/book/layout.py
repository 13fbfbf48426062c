"""The layout rule of the built book's pages, checked in Chromium: every page fits its text
column, on a laptop and on a phone. ``check(page, path)`` checks an open page;
``tests/book/test_layout.py`` runs it on the pages no other test opens and shows that it can fail,
and ``tests/book/test_browser.py`` runs it on each chapter it opens, so that each page is loaded
and typeset once.

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
"""

from pathlib import Path
from urllib.parse import unquote, urlparse

from inference_arithmetic.page import figures

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


GENERATED = "book/appendix-formulas.html"  # may scroll its longest formulas at 1280 px too


# Resolves two frames after a resize: by then the browser has dispatched the resize to the
# page's handlers and run a frame's animation callbacks (what a fixed 200 ms wait was for). The
# theme moves its sidebars with CSS media queries, which the check's own layout reads apply.
FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def problems(page, strict=True):
    """The layout problems of the open page at each width, by width (the page is left at the
    last width: a resize of the formula reference lays out hundreds of formulas again)."""
    found = {}
    for device, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.evaluate(FRAMES)
        found[device] = page.evaluate(CHECK, strict and width == WIDTHS["laptop"])
    return {device: rows for device, rows in found.items() if rows}


def open_everything(page):
    """Opens what a reader can open on the page (``OPEN_EVERYTHING``), its math typeset."""
    page.evaluate(OPEN_EVERYTHING)
    assert not page.locator(".ia-math-later").count(), "math left untypeset in a closed box"


def check(page, path):
    """Asserts the rule on ``page``, open at ``path`` (a page of the book, relative to its
    root), at the laptop's width: it opens what a reader can open first."""
    page.set_viewport_size({"width": WIDTHS["laptop"], "height": 900})
    open_everything(page)
    assert not page.evaluate(BLURRED)  # at the laptop's width, where figures show widest
    assert not problems(page, strict=path != GENERATED)
    assert not small_figure_text(*page.evaluate(FIGURE_TEXT))  # at the phone's width
