"""The built HTML book works offline: local MathJax, live widgets with no kernel, every image.

`make test` runs the strict build (`make book`: warnings are errors, every chapter executed)
before pytest; these tests read its output in _build/html. They fail, not skip, when the
book has not been built. The glossary's definitions of the latencies, which no computation
stands behind, are checked in its source.
"""

import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from tests.book.test_chapters import CHAPTERS, DOCUMENTS

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


class Page(HTMLParser):
    """The scripts, stylesheets, images and text of one built page."""

    def __init__(self, path: Path):
        super().__init__()
        self.scripts, self.styles, self.images, self.alts = [], [], [], []
        self.feed(path.read_text())

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            if attrs.get("src"):
                self.scripts.append(attrs["src"])
        elif tag == "link" and attrs.get("rel") == "stylesheet":
            self.styles.append(attrs["href"])
        elif tag == "img":
            self.images.append(attrs.get("src", ""))
            self.alts.append(attrs.get("alt") or "")


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
def test_every_image_has_alt_text_not_a_file_name(doc):
    page = Page(_page_path(doc))
    bad = [src for src, alt in zip(page.images, page.alts, strict=True) if not alt or src in alt]
    assert not bad, f"{doc}: images without alt text (mystnb: image: alt:): {bad}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_widgets_are_live_html_not_kernel_widgets(doc):
    html = _page_path(doc).read_text()
    # Each widget is the HTML form generated from its formulas (inference_arithmetic.page.live),
    # which recomputes in the page; an ipywidgets view would need a kernel and a CDN.
    assert 'class="ia-live"' in html, f"{doc} has no live widget"
    assert 'class="ia-live-spec"' in html
    scripts = " ".join(Page(_page_path(doc)).scripts)
    assert "embed-amd" not in scripts and "require" not in scripts, "a widget manager is loaded"


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_no_unrendered_markup(doc):
    text = _page_path(doc).read_text()
    for leftover in ("{glue:", "{ref}", "{cite}", ":::{", "```{"):
        assert leftover not in text, f"{doc} shows raw markup {leftover!r}"


# The glossary is plain MyST, not executed: its definitions of the two latencies are checked
# here, against the book's own sources, since no computation stands behind them.
GLOSSARY = ROOT / "book" / "appendix-glossary.md"


def _glossary_entry(term: str) -> str:
    """The definition of ``term`` in the glossary: the indented lines under its term lines,
    with {term}`...` and {ref}`...` markup reduced to their text, on one line."""
    text = GLOSSARY.read_text()
    for entry in re.split(r"\n\n+", text):
        lines = entry.splitlines()
        terms = [line for line in lines if line and not line.startswith(" ")]
        if term in terms:
            body = " ".join(line.strip() for line in lines if line.startswith("  "))
            return re.sub(r"\{(?:term|ref)\}`([^`]*)`", r"\1", body)
    pytest.fail(f"the glossary has no entry {term!r}")


def _one_decode_step(entry: str) -> list[str]:
    """The sentences of ``entry`` that call the TPOT a decode step without saying when: "one
    decode step" holds only when a request decodes alone."""
    sentences = re.split(r"(?<=[.;:])\s+", entry.lower())
    return [s for s in sentences if "decode step" in s and "only" not in s]


def test_glossary_ttft_counts_the_wait_before_the_prefill():
    entry = _glossary_entry("TTFT").lower()
    assert not re.search(r"\bno queue\b|\bwithout (?:a )?queue\b|\bno wait", entry), entry
    assert re.search(r"\bwait", entry) and "prefill" in entry, entry


def test_glossary_tpot_is_not_one_decode_step():
    entry = _glossary_entry("TPOT").lower()
    assert "mean" in entry, entry
    assert not _one_decode_step(entry), _one_decode_step(entry)


@pytest.mark.parametrize(
    "entry, right",
    [
        ("The time between two tokens of one request after the first: one decode step.", False),
        ("The mean time between tokens. It is one decode step only when it decodes alone.", True),
    ],
)
def test_the_tpot_check_can_fail(entry, right):
    assert (not _one_decode_step(entry)) is right


# --- The chapters' source: prose wrapped at the code's line length ---------------------------

# One limit for the chapters' prose and code: ruff's line length (pyproject.toml).
WIDTH = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["line-length"]
# What a line break may not split: a role, inline code or math, a link; else a word.
UNIT = re.compile(
    r"(?:\{[\w:-]+\}`[^`]*`|`[^`]*`"  # a role, inline code
    r"|(?<!\\)\$[^$\n]+?(?<!\\)\$|\[[^\]]*\]\([^)]*\)|\S)+"  # inline math, a link, a character
)


def _long_prose(text: str) -> list[int]:
    """The numbers of the lines of prose over ``WIDTH`` characters that a break could shorten:
    not code, a math block, a table row, a heading or the jupytext header, nor one unbreakable
    unit (a long address alone on its line)."""
    lines = text.splitlines()
    start = lines.index("---", 1) + 1 if lines[:1] == ["---"] else 0
    long, fence, math = [], None, False
    for number, line in enumerate(lines[start:], start + 1):
        stripped = line.strip()
        if fence or stripped.startswith("```"):
            opening = re.match(r"`{3,}", stripped)
            if fence is None:
                fence = opening[0]
            elif stripped == fence:
                fence = None
            continue
        if stripped.startswith("$$"):
            math ^= not (len(stripped) > 2 and stripped.endswith("$$"))
            continue
        if math or stripped.startswith(("|", "#")) or len(line) <= WIDTH:
            continue
        if len(UNIT.findall(re.sub(r"^(?:[-*+]|\d+\.)\s+", "", stripped))) > 1:
            long.append(number)
    return long


@pytest.mark.parametrize("source", sorted((ROOT / "book").glob("*.md")), ids=lambda p: p.name)
def test_the_prose_is_wrapped_at_the_line_length(source):
    long = _long_prose(source.read_text())
    assert not long, f"{source.name}: prose lines over {WIDTH} characters: {long}"


def test_the_line_length_check_can_fail():
    word = "word " * 30
    text = "\n".join(
        [
            "---",
            f"title: {word}",  # the header
            "---",
            f"{word}",  # 1: prose
            f"- {word}",  # 2: a list item
            f"| {word} |",  # a table row
            "```{code-cell} ipython3",
            f"x = '{word}'",  # code
            "```",
            "$$",
            f"{word}",  # a math block
            "$$",
            "https://example.com/" + "a" * 120,  # an address alone
            "{ref}`" + word + "`",  # one role
        ]
    )
    assert _long_prose(text) == [4, 5]


# --- What the reader is shown: every solution's code with its output -------------------------


def _without_output(html: str) -> list[str]:
    """The exercises and solutions of a built page with a code cell that shows no output."""
    found = []
    for match in re.finditer(
        r'<div class="(?:exercise|solution)[^"]*" id="([^"]+)">(.*?)</section>\s*</div>', html, re.S
    ):
        cells = match[2].split('<div class="cell ')[1:]
        if any("tag_remove-output" not in c and "cell_output" not in c for c in cells):
            found.append(match[1])
    return found


@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_solution_shows_the_output_of_its_code(doc):
    missing = _without_output(_page_path(doc).read_text())
    assert not missing, f"{doc}: exercises or solutions whose code shows no output: {missing}"


def test_a_solution_without_its_output_is_found():
    cell = '<div class="cell docutils container"><div class="cell_input">x</div>{}</div>'
    shown = cell.format('<div class="cell_output">2.11 GB</div>')
    page = (
        '<div class="solution dropdown admonition" id="s-1"><section>'
        + cell.format("")
        + shown
        + "</section>\n</div>"
        + '<div class="solution dropdown admonition" id="s-2"><section>'
        + shown
        + "</section>\n</div>"
    )
    assert _without_output(page) == ["s-1"]
