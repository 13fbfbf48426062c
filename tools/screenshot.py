"""The README's picture: chapter 02's widget in the built book, moved to a non-default value.

Run after `make book`: .venv/bin/python tools/screenshot.py (needs Debian's chromium).
"""

from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "_build" / "html" / "book" / "02-mlp.html"
OUT = ROOT / "book" / "images" / "widget-mlp.png"
ARGS = ["--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND"]

with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(PAGE.as_uri(), wait_until="load")
    widget = page.locator(".ia-live").first
    slider = widget.locator('input[name="batch"]')
    slider.evaluate("e => { e.value = 512; e.dispatchEvent(new Event('input')); }")
    widget.locator('select[name="bytes_per_number"]').select_option("bf16")
    widget.scroll_into_view_if_needed()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(OUT))
    browser.close()
print(OUT)
