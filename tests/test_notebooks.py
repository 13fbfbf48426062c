"""The notebooks a class downloads (`make notebooks`, and each page's ".ipynb" download in
the built book) are the chapters, cell for cell.

The strict book build executes every chapter (a failing cell fails it), so these notebooks
are not executed a second time here: they only have to hold the same code as the chapters
and be valid notebooks that Jupyter opens.
"""

from pathlib import Path

import jupytext
import nbformat
import pytest

from tests.test_chapters import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]
# The pages with code: every chapter and the generated formula reference (the Makefile's list).
PAGES = [*CHAPTERS, "book/appendix-formulas"]


def _code(notebook):
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


@pytest.mark.parametrize("doc", PAGES)
def test_the_class_notebook_is_the_chapter(doc):
    path = ROOT / "_build" / "notebooks" / f"{Path(doc).name}.ipynb"
    assert path.exists(), f"{path} is missing: run `make notebooks`"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    chapter = jupytext.read(ROOT / f"{doc}.md")
    assert _code(notebook) == _code(chapter), f"{path} is older than {doc}.md"
    assert notebook.metadata["kernelspec"]["name"] == "python3"


def _cells(notebook):
    # Cell ids are random on every conversion; everything else must be the same.
    return [(cell.cell_type, cell.source, cell.metadata) for cell in notebook.cells]


@pytest.mark.parametrize("doc", PAGES)
def test_the_book_offers_the_class_notebook_and_the_source(doc):
    page = (ROOT / "_build" / "html" / f"{doc}.html").read_text()
    folder = ROOT / "_build" / "html" / "_sources"
    for suffix in (".ipynb", ".md"):
        href = f"../_sources/{doc}{suffix}"
        assert f'href="{href}"' in page, f"{doc}.html has no {suffix} download"
        assert (folder / f"{doc}{suffix}").exists(), f"{href} is not in the built book"
    downloaded = nbformat.read(folder / f"{doc}.ipynb", as_version=4)
    made = nbformat.read(ROOT / "_build" / "notebooks" / f"{Path(doc).name}.ipynb", as_version=4)
    assert _cells(downloaded) == _cells(made)
    assert not any(cell.get("outputs") for cell in downloaded.cells), "a class runs the cells"
