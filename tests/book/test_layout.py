"""Every page of the built book fits its text column, on a laptop and on a phone
(``tests/book/layout.py`` states the rule and checks it): here on the pages that
``test_browser.py`` does not open (the API reference, the tables, the references), each chapter
and each appendix with math being checked where that test opens it; and the check, shown
finding what it is for.

Reads the book built in _build/html (``make book``), or the folder named by $IA_LAYOUT_HTML,
for example a single page built with
``jupyter-book build book/03-transformer-params.md --config _config.yml --path-output DIR``
(then ``IA_LAYOUT_HTML=DIR/_build/_page/03-transformer-params/html``): there, every page.
"""

import os
from pathlib import Path

import pytest

from inference_arithmetic.page import figures
from tests.book.layout import (
    FIGURE_TEXT,
    WIDTHS,
    check,
    open_everything,
    problems,
    small_figure_text,
)
from tests.book.test_book import HTML
from tests.book.test_browser import APPENDICES
from tests.book.test_chapters import CHAPTERS

ROOT = Path(os.environ.get("IA_LAYOUT_HTML") or HTML)
NOT_PAGES = {"genindex.html", "search.html", "index.html", "py-modindex.html"}
PAGES = sorted(
    path.relative_to(ROOT).as_posix()
    for path in ROOT.rglob("*.html")
    if path.name not in NOT_PAGES and not path.relative_to(ROOT).parts[0].startswith("_")
)
# test_browser.py opens each chapter of the built book and the appendices with math, and checks
# their layout there.
OPENED_ELSEWHERE = {f"{doc}.html" for doc in [*CHAPTERS, *APPENDICES]}
if os.environ.get("IA_LAYOUT_HTML"):
    OPENED_ELSEWHERE = set()


def _open_page(browser, path):
    page = browser.new_page(viewport={"width": WIDTHS["laptop"], "height": 900})
    page.set_default_timeout(180_000)  # MathJax on a busy 2-core machine
    page.goto((ROOT / path).as_uri(), wait_until="load")
    # A page without math (the bibliography) loads no MathJax.
    if page.query_selector("script[src*='mathjax'], script[src*='MathJax']"):
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise")
    return page


@pytest.mark.parametrize("path", [p for p in PAGES if p not in OPENED_ELSEWHERE] or ["(no pages)"])
def test_nothing_overflows_the_text_column_and_figures_are_sharp_and_legible(browser, path):
    if not PAGES:
        pytest.fail(f"no built pages under {ROOT}: build the book first (make book)")
    page = _open_page(browser, path)
    check(page, path)
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


def test_the_check_finds_a_wide_table_and_a_long_equation(browser):
    if not PAGES:
        pytest.fail(f"no built pages under {ROOT}: build the book first (make book)")
    page = _open_page(browser, PAGES[0])
    open_everything(page)
    before = problems(page)
    page.evaluate(BROKEN)
    after = problems(page)
    added = [row for row in after["laptop"] if row not in before.get("laptop", [])]
    assert [(problem, kind) for problem, kind, _ in added] == [("scrolls", "equation")]
    # A raw wide block, with no box of its own to scroll in, sticks out of the column.
    page.evaluate(
        "() => { const t = document.querySelector('article.bd-article table');"
        " t.parentElement.style.overflowX = 'visible'; }"
    )
    assert ["outside the column", "table", "column_number_0column_number_1"] in [
        [p, k, w[:30]] for p, k, w in problems(page)["laptop"]
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
    phone = [(problem, kind) for problem, kind, _ in problems(page)["phone"]]
    assert ("scrolls sideways", "page") in phone and ("cut off", "inline math") in phone
    page.close()


# Figures as the book shows them (a PNG at half its pixels, shrunk to a 342 px column): the
# check must find the text that a wide figure shrinks too far, a PNG drawn without the book's
# renderer, and SVG text scaled down by its viewBox; and pass what is legible.
def test_the_check_finds_small_figure_text(browser, tmp_path):
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
