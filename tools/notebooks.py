"""Write the class notebooks of chapters (MyST Markdown) in two editions, in one process.

    python tools/notebooks.py OUT_DIR book/01-quantities.md ...

writes OUT_DIR/student/NN-slug.ipynb and OUT_DIR/instructor/NN-slug.ipynb. The instructor
edition is the chapter, cell for cell. The student edition is the same chapter with every
exercise's solution (from ``:::{solution-start} LABEL`` to ``:::{solution-end}``) replaced by
an answer cell: ``ia.exercises.student_cell(LABEL)``, which checks the student's answer, or a
markdown cell for an answer in words. The chapters stay the one source.

One process for all: importing jupytext takes seconds, converting a chapter a few tens of
milliseconds. The book's ".ipynb" download (tools/book_html.py) is the student edition,
written by the same ``write``.
"""

import re
import sys
from pathlib import Path

import jupytext
import nbformat

EDITIONS = ("student", "instructor")
START = re.compile(r":::\{solution-start\}\s+(\S+)[^\n]*\n(?::class:[^\n]*\n)?:::\n?")
END = re.compile(r":::\{solution-end\}\s*\n:::\n?")
WORDS = "*Your answer:* (write it here)"


def student(notebook):
    """``notebook`` without its solutions: each replaced by an answer cell."""
    from inference_arithmetic import exercises

    cells, inside = [], None
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            if inside is None:
                cells.append(cell)
            continue  # a solution's code
        text, kept = cell.source, []
        while True:  # a markdown cell may end one solution and start the next
            if inside is None:
                start = START.search(text)
                if not start:
                    kept.append(text)
                    break
                kept.append(text[: start.start()])
                inside, text = start.group(1), text[start.end() :]
            else:
                end = END.search(text)
                if not end:
                    break  # the solution's prose
                _flush(cells, kept, cell)
                cells.append(_answer(exercises, inside))
                inside, text, kept = None, text[end.end() :], []
        _flush(cells, kept, cell)
    if inside is not None:
        raise ValueError(f"the solution of {inside} has no :::{{solution-end}}")
    notebook.cells = cells
    return notebook


def _flush(cells, kept, cell):
    """The markdown kept of ``cell`` so far, as a cell of its own (if there is any)."""
    text = "".join(kept).strip()
    if text:
        cells.append(nbformat.v4.new_markdown_cell(text + "\n", metadata=cell.metadata))
    kept.clear()


def _answer(exercises, label):
    """A cell that checks the answer, or one to write it in (an answer in words)."""
    try:
        return nbformat.v4.new_code_cell(exercises.student_cell(label))
    except KeyError:  # no self-check: the exercise asks for words
        return nbformat.v4.new_markdown_cell(WORDS)


def fold(notebook) -> None:
    """Fold the code of cells the book hides (``hide-input``): JupyterLab reads
    ``jupyter.source_hidden``, not the book's tags, so a reader meets the widget first."""
    for cell in notebook.cells:
        if cell.cell_type == "code" and "hide-input" in cell.metadata.get("tags", []):
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True


def write(source: Path, target: Path, edition: str = "student") -> None:
    """The class notebook of one chapter in ``edition``: its cells, no outputs."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    notebook = jupytext.read(source)
    if edition == "student":
        notebook = student(notebook)
    fold(notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(notebook, target, fmt="ipynb")


def main(out: str, *sources: str) -> None:
    for source in map(Path, sources):
        for edition in EDITIONS:
            write(source, Path(out) / edition / f"{source.stem}.ipynb", edition)


if __name__ == "__main__":
    main(*sys.argv[1:])
