"""The README's pictures: the live widgets of chapters 00, 02 and 07, light and dark.

Run after `make book`: .venv/bin/python tools/screenshot.py (needs Debian's chromium). Writes
book/images/widget-{intro,mlp,hardware}-{light,dark}.png. A page built elsewhere (one chapter
built alone) is named by NAME=PATH: tools/screenshot.py intro=/tmp/build/00-intro.html.
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "book" / "images"
ARGS = ["--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND"]

# Each picture: its page, the controls set before it is taken (a log slider by the value of a
# stop) and where the pointer hovers over the plot (a fraction of its width), to show the
# crosshair readout.
WIDGETS = {
    "intro": ("00-intro", {"bytes_per_number": "fp8"}, 0.3),
    "mlp": ("02-mlp", {"batch": 2000, "bytes_per_number": "bf16"}, 0.8),
    "hardware": ("07-hardware", {"batch": 300}, 0.62),
}


def set_controls(widget, values):
    for name, value in values.items():
        control = widget.locator(f'[name="{name}"]')
        if control.evaluate("e => e.tagName") == "SELECT":
            control.select_option(str(value))
            continue
        control.evaluate(
            """(e, v) => {
              const spec = JSON.parse(e.closest('.ia-live').querySelector('.ia-live-spec')
                .textContent).controls.find(c => c.name === e.name);
              e.value = spec.stops ? spec.stops.indexOf(v) : v;
              e.dispatchEvent(new Event('input')); }""",
            value,
        )


def shoot(pages: dict[str, Path]) -> list[Path]:
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for name, (_, values, hover) in WIDGETS.items():
            for theme in ("light", "dark"):
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                page.goto(pages[name].as_uri(), wait_until="load")
                page.evaluate(f"() => {{ document.documentElement.dataset.theme = '{theme}'; }}")
                widget = page.locator(".ia-live").first
                widget.scroll_into_view_if_needed()
                set_controls(widget, values)
                box = widget.locator("svg.ia-live-plot").bounding_box()
                page.mouse.move(box["x"] + box["width"] * hover, box["y"] + box["height"] * 0.5)
                out = IMAGES / f"widget-{name}-{theme}.png"
                widget.screenshot(path=str(out))
                written.append(out)
                page.close()
        browser.close()
    return written


def main(*overrides: str) -> None:
    pages = {name: ROOT / "_build" / "html" / "book" / f"{doc}.html"
             for name, (doc, _, _) in WIDGETS.items()}  # fmt: skip
    for override in overrides:
        name, _, path = override.partition("=")
        pages[name] = Path(path)
    IMAGES.mkdir(parents=True, exist_ok=True)
    for path in shoot(pages):
        print(path)


if __name__ == "__main__":
    main(*sys.argv[1:])
