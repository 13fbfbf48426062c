"""Chromium for the book's tests, offline: the ``browser`` fixture (one Chromium per test file,
registered for tests/book by its conftest.py), a built page opened with its math typeset
(``open_page``), and WCAG 2's contrast check (``low_contrast``).

Drives Debian's headless Chromium with Playwright (chromium-headless-shell, else a full
chromium, or $CHROMIUM), every host name unresolvable, pages opened from disk. The shell is
Chromium's Blink without the browser around it, what Playwright itself runs headless: the same
layout and scripts, and a quarter less CPU over the book's tests than the full browser. Without
Chromium the tests fail and say how to install it; IA_SKIP_BROWSER=1 opts out explicitly
(they are then reported as skipped, never passed).
"""

import os
import shutil

import pytest

from tests.book.test_book import _page_path

CHROMIUM = (
    os.environ.get("CHROMIUM")
    or shutil.which("chromium-headless-shell")
    or shutil.which("chromium")
    or "/usr/bin/chromium-headless-shell"
)
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: the page must need none
]


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("IA_SKIP_BROWSER") == "1":
        pytest.skip("browser tests opted out with IA_SKIP_BROWSER=1")
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"no Chromium at {CHROMIUM}: install it (apt-get install chromium-headless-shell), "
            "point $CHROMIUM at one, or opt out explicitly with IA_SKIP_BROWSER=1"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


def open_page(browser, doc, scheme="light"):
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


def low_contrast(page, selector):
    """Texts in ``selector`` below WCAG AA's 4.5:1 for normal text."""
    return [row for row in page.evaluate(CONTRAST, selector) if row[0] < 4.5]
