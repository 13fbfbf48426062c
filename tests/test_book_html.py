"""The book's Sphinx extension (tools/book_html.py): the repository, source, issues and Binder
buttons link to the repository the book is published from, or are left out.

The book that `make test` builds has whatever origin the clone has (none in CI), so one small
book is built here with a repository URL given, as the Pages workflow gives it.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
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
