"""The book's Sphinx extension (tools/book_html.py): the repository, source, issues and Binder
buttons link to the repository the book is published from, or are left out.

The book that `make test` builds has whatever origin the clone has (none in CI), so one small
book is built here with a repository URL given, as the Pages workflow gives it.
"""

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from bs4 import BeautifulSoup

from tests.book.test_chapters import CHAPTERS

ROOT = Path(__file__).resolve().parents[2]
# BeautifulSoup's fastest parser, lxml's: the API reference's 2 MB of HTML parse in a third of
# html.parser's time, and each check below parses every page.
PARSER = "lxml"
sys.path.insert(0, str(ROOT / "tools"))
import book_html  # noqa: E402

REPOSITORY = "https://github.com/example/inference-arithmetic"


@pytest.mark.parametrize(
    "remote",
    [
        "https://github.com/example/inference-arithmetic",
        "https://github.com/example/inference-arithmetic.git\n",
        "https://x-access-token:secret@github.com/example/inference-arithmetic.git",
        "git@github.com:example/inference-arithmetic.git",
        "ssh://git@github.com/example/inference-arithmetic",
    ],
)
def test_a_remote_on_github_becomes_its_public_address(remote):
    assert book_html.public_url(remote) == REPOSITORY


@pytest.mark.parametrize(
    "remote", ["/work/main", "file:///srv/book.git", "https://example.org/a/b", "github.com"]
)
def test_a_remote_that_is_not_a_public_repository_gives_none(remote):
    assert book_html.public_url(remote) is None


def test_a_given_url_wins_and_a_bad_one_is_refused(tmp_path):
    environ = {"IA_REPOSITORY_URL": REPOSITORY + ".git"}
    assert book_html.repository_url(tmp_path, environ) == REPOSITORY
    with pytest.raises(ValueError, match="IA_REPOSITORY_URL='https://example.org/a/b'"):
        book_html.repository_url(tmp_path, {"IA_REPOSITORY_URL": "https://example.org/a/b"})
    assert book_html.repository_url(tmp_path, {}) is None  # not a git clone


def test_without_a_repository_no_button_points_elsewhere(tmp_path, monkeypatch):
    monkeypatch.delenv("IA_REPOSITORY_URL", raising=False)
    # What Jupyter Book makes of _config.yml: its default repository is its own.
    options = {
        "repository_url": "https://github.com/executablebooks/jupyter-book",
        "launch_buttons": {"binderhub_url": "https://mybinder.org"},
    }
    config = SimpleNamespace(html_theme_options=options)
    book_html._repository_buttons(SimpleNamespace(srcdir=tmp_path), config)
    assert "repository_url" not in options
    assert options["launch_buttons"]["binderhub_url"] == ""
    assert config.myst_substitutions["install"] == book_html.INSTALL_LOCAL  # no address to give


def test_a_published_page_links_its_repository_source_issues_and_binder(tmp_path):
    book = tmp_path / "book"
    (book / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", book)
    shutil.copy(ROOT / "book" / "references.bib", book / "book")
    (book / "tools").symlink_to(ROOT / "tools")
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/page\n")
    (book / "book" / "page.md").write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n"
        "---\n\n# A page\n\nText. Install with {{ install }}.\n"
    )
    environ = {**os.environ, "IA_REPOSITORY_URL": "git@github.com:example/inference-arithmetic"}
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    build = subprocess.run(
        [jupyter_book, "build", book, "-W", "-n", "-q"], env=environ, capture_output=True, text=True
    )
    assert build.returncode == 0, build.stdout + build.stderr
    page = (book / "_build" / "html" / "book" / "page.html").read_text()
    for link in (
        REPOSITORY,
        f"{REPOSITORY}/blob/main/book/page.md?plain=1",
        f"{REPOSITORY}/issues/new?",
        "https://mybinder.org/v2/gh/example/inference-arithmetic/main"
        "?urlpath=lab/tree/notebooks/student/page.ipynb",
        "../_sources/book/page.ipynb",
        "../_sources/book/page.md",
    ):
        assert f'href="{link}' in page, f"no link to {link}"
    assert "executablebooks/jupyter-book" not in page
    install = '<span class="pre">&quot;inference-arithmetic</span> <span class="pre">&#64;</span> '
    install += f'<span class="pre">git+{REPOSITORY}&quot;</span>'
    assert "Install with <code" in page and install in page  # the intro's pip line


def test_the_built_book_links_the_repository_it_was_built_from_or_none():
    """`make test`'s own build: buttons only for a clone of a public repository."""
    url = book_html.repository_url(ROOT)
    page = (ROOT / "_build" / "html" / "book" / "03-transformer-params.html").read_text()
    assert "executablebooks/jupyter-book" not in page
    intro = (ROOT / "_build" / "html" / "book" / "00-intro.html").read_text()
    if url is None:
        assert "launch-buttons" not in page and "source-repository-button" not in page
        assert "install it with <code" in intro and "in a checkout of the book" in intro
    else:
        assert f'href="{url}"' in page and "mybinder.org/v2/" in page
        assert f"git+{url}&quot;" in intro  # the intro's pip line names the repository


# Prose that stands on its own: a reference in a sentence reads "chapter 08" or
# "§9.6", never the target's full title; an output shows formatted numbers, never a raw float,
# a tuple mixing formatted strings with raw numbers, a SymPy Piecewise or a product of code
# names printed as text.

BOOK_PAGES = ROOT / "_build" / "html" / "book"
CHAPTER_PAGE = re.compile(r"^\d\d-[\w-]+\.html$")


def _built(name: str) -> str:
    path = BOOK_PAGES / name
    if not path.exists():
        pytest.fail(f"{path} is missing: build the book first (make book)")
    return path.read_text()


@functools.lru_cache(maxsize=32)
def _soup(html: str) -> BeautifulSoup:
    """A page parsed once for the checks that only read it (parsing is most of their time)."""
    return BeautifulSoup(html, PARSER)


def _headings(html: str) -> dict[str, str]:
    """Each heading's anchor (its section id and the labels on it) and its title."""
    found = {}
    for heading in _soup(html).select("h1, h2, h3, h4"):
        title = heading.get_text(" ", strip=True).rstrip("#").strip()
        title = re.sub(r"^\d+(\.\d+)*\.?\s+", "", title)  # the section number Sphinx adds
        section = heading.find_parent("section")
        ids = [section.get("id")] if section is not None else []
        ids += [s.get("id") for s in heading.find_all_previous("span", limit=3) if s.get("id")]
        for anchor in filter(None, ids):
            found.setdefault(anchor, title)
    return found


def _titles_in_sentences(html: str, headings: dict[tuple[str, str], str]) -> list[str]:
    """Links inside a paragraph whose text is the full title of what they point to, and links
    to a chapter's opening whose text is not "chapter NN" (or "NN" in a list of chapters)."""
    bad = []
    for link in _soup(html).select("article p a.reference.internal"):
        text = " ".join(link.get_text(" ", strip=True).split())
        page, _, anchor = link.get("href", "").partition("#")
        page = page.rsplit("/", 1)[-1]
        title = headings.get((page, anchor)) or (headings.get((page, "")) if not anchor else None)
        if title is not None and text == title:
            bad.append(f"{text!r} -> {link['href']}")
        elif CHAPTER_PAGE.match(page) and (not anchor or anchor.startswith("ch-")):
            if not re.fullmatch(r"([Cc]hapters? )?\d\d?|(the )?introduction", text):
                bad.append(f"{text!r} -> {link['href']}")
    return bad


def _all_headings() -> dict[tuple[str, str], str]:
    table = {}
    for path in sorted(BOOK_PAGES.glob("*.html")):
        headings = _headings(path.read_text())
        for anchor, title in headings.items():
            table[(path.name, anchor)] = title
        first = next(iter(headings.values()), None)
        if first is not None:
            table[(path.name, "")] = first
    return table


def test_references_in_sentences_read_chapter_numbers_not_titles():
    headings = _all_headings()
    assert headings, "no headings read from the built book"
    bad = {
        path.name: found
        for path in sorted(BOOK_PAGES.glob("*.html"))
        if (found := _titles_in_sentences(path.read_text(), headings))
    }
    assert not bad, bad


def test_a_title_in_a_sentence_is_caught():
    headings = {("02-mlp.html", "ch-mlp"): "A two-layer network", ("02-mlp.html", ""): "A two"}
    page = "<article><p>{} shows why.</p></article>"
    link = '<a class="reference internal" href="02-mlp.html#ch-mlp"><span>{}</span></a>'
    assert _titles_in_sentences(page.format(link.format("A two-layer network")), headings)
    assert _titles_in_sentences(page.format(link.format("Chapter")), headings)
    assert not _titles_in_sentences(page.format(link.format("Chapter 02")), headings)
    assert not _titles_in_sentences(page.format(link.format("02")), headings)


SIGNIFICANT = 7  # digits: a float printed with more than this was not formatted
FLOAT = re.compile(r"(?<![\w.])-?(\d+\.\d+)(?:e[-+]?\d+)?(?![\w.])")


def _raw_outputs(html: str) -> list[str]:
    """Visible text of a page (outputs, prose, tables; not code) that shows a raw value."""
    soup = BeautifulSoup(html, PARSER)
    article = soup.select_one("article") or soup
    for hidden in article.select("script, style, .cell_input, .MathJax, math, .widget-state"):
        hidden.decompose()
    bad = []
    for block in article.select("div.cell_output div.output, p, td"):
        text = block.get_text(" ", strip=True)
        for number in FLOAT.findall(text):
            if len(number.replace(".", "").lstrip("0")) >= SIGNIFICANT:
                bad.append(f"raw float {number} in {text[:80]!r}")
        if "Piecewise(" in text:
            bad.append(f"a printed Piecewise in {text[:80]!r}")
        unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "''", text)
        if text.startswith("(") and "'" in text and FLOAT.search(unquoted):
            bad.append(f"a tuple of formatted and raw values: {text[:80]!r}")
        printed = "stream" in (block.get("class") or [])
        if printed and re.search(r"[A-Za-z_]\*\w|\w\*[A-Za-z_]", text):
            bad.append(f"an expression printed as code: {text[:80]!r}")
    return bad


def test_outputs_and_prose_show_formatted_values():
    pages = sorted(p.name for p in BOOK_PAGES.glob("*.html") if CHAPTER_PAGE.match(p.name))
    assert len(pages) >= 15, pages
    bad = {name: found for name in pages if (found := _raw_outputs(_built(name)))}
    assert not bad, bad


def test_no_page_names_the_folder_it_was_built_in():
    # A default argument such as a path to the library prints the build machine's own folder
    # in the API reference (autodoc shows defaults as their repr).
    pages = sorted(BOOK_PAGES.glob("*.html"))
    assert len(pages) >= 15, pages
    named = [page.name for page in pages if str(ROOT) in re.sub(r"<[^>]+>", "", page.read_text())]
    assert not named, f"pages that name {ROOT}: {named}"


@pytest.mark.parametrize(
    "output",
    [
        '<div class="output text_plain">333.3333333333333</div>',
        "<div class=\"output text_plain\">('2.11 GB', '2.82 GB', 0.25)</div>",
        '<div class="output text_plain">Piecewise((1, x &gt; 0), (0, True))</div>',
        '<div class="output stream">2*n_params*(8*f + 1) | 152 GB</div>',
    ],
)
def test_a_raw_output_is_caught(output):
    page = f'<article><div class="cell_output">{output}</div></article>'
    assert _raw_outputs(page)
    assert not _raw_outputs("<article><p>333 tokens per read; 25% of 2.82 GB</p></article>")


DESCRIPTION = ("meaning", "what it is", "what it counts")


def _notation_rows(html: str) -> list[tuple[str, str]]:
    """(symbol's LaTeX, description) of every table with a symbol and a description column."""
    rows = []
    for table in _soup(html).select("table"):
        header = [th.get_text(" ", strip=True).lower() for th in table.select("thead th")]
        if "symbol" not in header or not any(d in header for d in DESCRIPTION):
            continue
        at = header.index("symbol")
        said = next(header.index(d) for d in DESCRIPTION if d in header)
        for row in table.select("tbody tr"):
            cells = [td.get_text(" ", strip=True) for td in row.select("td")]
            symbol = cells[at].removeprefix(r"\(").removesuffix(r"\)").strip()
            if symbol:
                text = " ".join(cells[said].split()).replace("\u2019", "'")  # smart quotes
                rows.append((symbol, text))
    return rows


def _descriptions(pages: dict[str, str]) -> dict[str, set[str]]:
    said = {}
    for html in pages.values():
        for symbol, description in _notation_rows(html):
            said.setdefault(symbol, set()).add(description)
    return said


def test_each_symbol_of_the_notation_has_one_description():
    """Across the book's notation tables (the introduction's, the appendix's, the chapters'
    tables of symbols, the library reference's), a symbol means one thing, the notation's."""
    from inference_arithmetic.core.symbols import NOTATION

    pages = {path.name: path.read_text() for path in sorted(BOOK_PAGES.glob("*.html"))}
    said = _descriptions(pages)
    assert len(said) >= len(NOTATION), "the appendix's notation table was not found"
    meaning = {row.latex: row.meaning for row in NOTATION.values()}
    wrong = {s: d for s, d in said.items() if d != {meaning.get(s)}}
    assert not wrong, wrong


def test_a_second_description_of_a_symbol_is_caught():
    table = (
        "<table><thead><tr><th>symbol</th><th>meaning</th></tr></thead><tbody>"
        "<tr><td>\\(T\\)</td><td>{}</td></tr></tbody></table>"
    )
    pages = {"a": table.format("sequence length"), "b": table.format("training tokens")}
    assert _descriptions(pages) == {"T": {"sequence length", "training tokens"}}
    assert _descriptions({"a": pages["a"]}) == {"T": {"sequence length"}}


# --- A reading path a reader finishes ------------------------------------------------------------

# A chapter's reading path: its rendered text less code, printed outputs, math, solutions and
# widgets (the words a reader reads through, captions and tables of prose included).
NOT_READ = ["div.cell_input", "div.cell_output pre", "div.output.text_plain", "div.output.stream",
            "span.math", "div.math", "mjx-container", "div.solution", ".ia-live", ".ia-calc",
            "script", "style", "a.headerlink"]  # fmt: skip
MOST_WORDS = 4_500
# The chapters still over the bar, each at most as long as it is now, until it is cut (issue 34):
# none now. A chapter not listed must stay within MOST_WORDS; one listed that gets within it must
# leave the list.
STILL_OVER: dict[str, int] = {}


def reading_words(html: str) -> int:
    """The words of a built page's reading path (``NOT_READ`` taken out)."""
    article = BeautifulSoup(html, PARSER).select_one("article.bd-article")
    for selector in NOT_READ:
        for element in article.select(selector):
            element.decompose()
    return len(re.findall(r"[A-Za-z0-9][\w'’.,-]*", article.get_text(" ")))


@pytest.mark.parametrize("doc", CHAPTERS)
def test_a_chapters_reading_path_stays_within_its_words(doc):
    name = Path(doc).name
    words = reading_words(_built(f"{name}.html"))
    most = STILL_OVER.get(name, MOST_WORDS)
    assert words <= most, f"{doc}: {words:,} words on its reading path, more than {most:,}"
    if name in STILL_OVER:
        assert words > MOST_WORDS, f"{doc} is within {MOST_WORDS:,} words: take it off STILL_OVER"


def test_the_reading_path_leaves_out_code_math_and_solutions():
    page = (
        '<article class="bd-article"><p>Two words.</p><div class="cell_input">x = 1 + 2</div>'
        '<span class="math">\\(a + b\\)</span><div class="solution"><p>hidden answer</p></div>'
        '<div class="cell_output"><pre>42</pre></div><p>Three more words.</p></article>'
    )
    assert reading_words(page) == 5
