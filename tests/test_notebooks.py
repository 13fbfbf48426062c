"""The notebooks a class downloads (`make notebooks`) are the chapters, cell for cell.

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


def _code(notebook):
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


@pytest.mark.parametrize("doc", CHAPTERS)
def test_the_class_notebook_is_the_chapter(doc):
    path = ROOT / "_build" / "notebooks" / f"{Path(doc).name}.ipynb"
    assert path.exists(), f"{path} is missing: run `make notebooks`"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    chapter = jupytext.read(ROOT / f"{doc}.md")
    assert _code(notebook) == _code(chapter), f"{path} is older than {doc}.md"
    assert notebook.metadata["kernelspec"]["name"] == "python3"
