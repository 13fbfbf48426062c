"""The built HTML book works offline: local MathJax, vendored widget manager, every image.

`make test` runs the strict build (`make book`: warnings are errors, every chapter executed)
before pytest; these tests read its output in _build/html. They fail, not skip, when the
book has not been built.
"""

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from tests.test_chapters import CHAPTERS, DOCUMENTS

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
VENDORED = {
    "jupyter-widgets/embed-amd.js": (
        "ca87dff57c70ffb2658794fde0eab0e27e5f5472a1f5df7ab2b08e1039fc4b72"
    ),
    "jupyter-widgets/require.js": (
        "8215b90000b571bd241d28512c83f59855cecc3158db94b79b2d974c9923b5d2"
    ),
}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


class Page(HTMLParser):
    """The scripts, stylesheets, images and text of one built page."""

    def __init__(self, path: Path):
        super().__init__()
        self.scripts, self.styles, self.images, self.state = [], [], [], []
        self._in_state = False
        self.feed(path.read_text())

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            if attrs.get("src"):
                self.scripts.append(attrs["src"])
            self._in_state = attrs.get("type") == WIDGET_STATE
        elif tag == "link" and attrs.get("rel") == "stylesheet":
            self.styles.append(attrs["href"])
        elif tag == "img":
            self.images.append(attrs.get("src", ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_state = False

    def handle_data(self, data):
        if self._in_state:
            self.state.append(data)


def _page_path(doc: str) -> Path:
    path = HTML / f"{doc}.html"
    if not path.exists():
        pytest.fail(f"{path} is missing: build the book first (make book)")
    return path


def _local(page: Path, url: str) -> Path | None:
    """The file a relative URL points to, or None for an absolute (network) URL."""
    parsed = urlparse(url)
    if parsed.scheme or url.startswith("//"):
        return None
    return (page.parent / unquote(parsed.path)).resolve()


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_page_loads_nothing_from_the_network(doc):
    path = _page_path(doc)
    page = Page(path)
    remote = [url for url in page.scripts + page.styles if _local(path, url) is None]
    assert not remote, f"{doc} loads from the network: {remote}"
    missing = [url for url in page.scripts + page.styles if not _local(path, url).exists()]
    assert not missing, f"{doc} refers to files the build did not write: {missing}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_math_is_served_locally(doc):
    path = _page_path(doc)
    mathjax = [url for url in Page(path).scripts if "mathjax" in url.lower()]
    assert mathjax, f"{doc} loads no MathJax"
    assert all(_local(path, url) and _local(path, url).exists() for url in mathjax), mathjax


@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_image_exists(doc):
    path = _page_path(doc)
    images = Page(path).images
    assert images, f"{doc} shows no image, but every chapter has a figure"
    for url in images:
        if url.startswith("data:"):
            continue
        local = _local(path, url)
        assert local is not None and local.exists(), f"{doc}: image {url} is missing"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_widgets_render_offline(doc):
    path = _page_path(doc)
    html = path.read_text()
    page = Page(path)
    assert WIDGET_VIEW in html, f"{doc} has no widget view"
    state = json.loads("".join(page.state))
    views = re.findall(r'"model_id": "([0-9a-f]+)"', html)
    assert views and all(view in state["state"] for view in views), "a view without its state"
    for name in VENDORED:
        assert any(url.split("?")[0].endswith(name) for url in page.scripts), (doc, name)


@pytest.mark.parametrize("name", sorted(VENDORED))
def test_vendored_javascript_is_the_pinned_file(name):
    for copy in (ROOT / "_vendor" / name, HTML / "_static" / name):
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == VENDORED[name], copy


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_no_unrendered_markup(doc):
    text = _page_path(doc).read_text()
    for leftover in ("{glue:", "{ref}", "{cite}", ":::{", "```{"):
        assert leftover not in text, f"{doc} shows raw markup {leftover!r}"
