"""Every student notebook runs top to bottom with its answers left blank, and each answer
cell says "not answered yet" (the book's build runs the instructor edition, the chapters).

A file of its own, so that pytest-xdist (--dist loadfile) runs it beside the other tests.
"""

from pathlib import Path

import nbclient
import nbformat
import pytest

from tests.test_chapters import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("doc", CHAPTERS)
def test_the_student_notebook_runs_with_blank_answers(doc):
    path = ROOT / "_build" / "notebooks" / "student" / f"{Path(doc).name}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, resources={"metadata": {"path": str(ROOT / "book")}}
    )
    client.execute()  # a failing cell raises CellExecutionError, naming the cell
    answers = [c for c in notebook.cells if c.source.startswith("# Your answer to ")]
    for cell in answers:
        shown = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert "not answered yet" in shown, (doc, cell.source, shown)
