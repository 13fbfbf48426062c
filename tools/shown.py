"""Write each page's shown code as a notebook of its own, for nbval to run as a reader would.

    python tools/shown.py OUT_DIR book/01-quantities.md ...

writes OUT_DIR/NN-slug.ipynb: the page's code cells without those the book removes
(``execute.REMOVED``: their code is hidden, so a reader who runs the page's code has not got
it), and its Markdown, in order. ``make shown`` runs them with ``pytest --nbval-lax``: every
shown cell must run in a fresh kernel from the shown cells above it.

The book's own execution already checks the names (tools/shown_alone.py: a shown cell sees only
what shown cells bound), at no cost; this runs every page a second time, so it is a target of
its own, outside ``make test``. It also catches what names do not: a removed cell's side
effect (a setting, a file written) that a shown cell needs.
"""

import sys
from pathlib import Path

import nbformat
from execute import REMOVED, read


def shown(page: Path):
    """The page as a notebook of its shown cells (``REMOVED`` left out), with no outputs."""
    notebook = read(page)
    notebook.cells = [
        cell
        for cell in notebook.cells
        if cell.cell_type != "code" or not set(cell.metadata.get("tags", ())) & REMOVED
    ]
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook


def main(out: str, *pages: str) -> None:
    Path(out).mkdir(parents=True, exist_ok=True)
    for page in map(Path, pages):
        nbformat.write(shown(page), Path(out) / f"{page.stem}.ipynb")


if __name__ == "__main__":
    main(*sys.argv[1:])
