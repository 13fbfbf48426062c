"""Write the class notebooks of chapters (MyST Markdown) in two editions, in one process.

    python tools/notebooks.py OUT_DIR book/01-quantities.md ...

writes OUT_DIR/student/NN-slug.ipynb and OUT_DIR/instructor/NN-slug.ipynb. The instructor
edition is the chapter, cell for cell, its solutions each headed "Solution to Exercise 6.4".
The student edition is the same chapter with every exercise's solution (from
``:::{solution-start} LABEL`` to ``:::{solution-end}``) replaced by an answer cell:
``ia.exercises.student_cell(LABEL, "Exercise 6.4")``, which checks the student's answer, or a
markdown cell for an answer in words. The chapters stay the one source.

Both editions are for JupyterLab, which has no MyST renderer: their Markdown is plain
(tools/myst_plain.py: "Exercise 6.4" headings, references as the book prints them, each glued
value as the number the book shows). In the student edition each exercise's written questions
get a cell of their own. In both editions the cells the book hides are folded (``fold``).

One process for all: importing jupytext takes seconds, converting a chapter a few tens of
milliseconds. The book's ".ipynb" download (tools/book_html.py) is the student edition,
written by the same ``write``.

    python tools/notebooks.py --code OUT_DIR book/01-quantities.md ...

writes the same two editions with their Markdown left as it is (``Unrendered``): their code
cells, which `make lint` checks, are those of the class notebooks, and need no glued value, so
no chapter has to run first.
"""

import ast
import re
import sys
from pathlib import Path

import jupytext
import nbformat
from myst_plain import Book, citations

ROOT = Path(__file__).resolve().parents[1]
# The glued values are read from the execution cache that `make book` fills (jupyter-cache,
# keyed on each chapter's code), not computed here: running the chapters again would double
# the time of `make test`, and the cache holds exactly the outputs the book's pages show.
CACHE = ROOT / "_build" / ".jupyter_cache"
EDITIONS = ("student", "instructor")
START = re.compile(r":::\{solution-start\}\s+(\S+)[^\n]*\n(?::class:[^\n]*\n)?:::\n?")
END = re.compile(r":::\{solution-end\}\s*\n:::\n?")
WORDS = "*Your answer to {name}:* (write it here)"
WRITTEN = "**Your answer** to {name}: *{question}*\n\n(write it here)"


def student(notebook, doc: str, book: Book):
    """``notebook`` (chapter ``doc``) without its solutions, each replaced by an answer cell
    (and a cell for each question it asks in words), its Markdown plain (``book.render``)."""
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
                _flush(cells, kept, cell, doc, book)
                cells += _answer(exercises, inside, book.exercise(inside, doc))
                inside, text, kept = None, text[end.end() :], []
        _flush(cells, kept, cell, doc, book)
    if inside is not None:
        raise ValueError(f"the solution of {inside} has no :::{{solution-end}}")
    notebook.cells = cells
    return notebook


def instructor(notebook, doc: str, book: Book):
    """``notebook`` (chapter ``doc``) with its Markdown plain, its solutions kept, each under a
    heading (``book.render``); a cell that held only a solution's end is left out."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = book.render(cell.source + "\n", doc, solutions=True).strip() + "\n"
            if not cell.source.strip():
                continue
        cells.append(cell)
    notebook.cells = cells
    return notebook


def _flush(cells, kept, cell, doc, book):
    """The markdown kept of ``cell`` so far, as a cell of its own (if there is any)."""
    text = "".join(kept).strip()
    if text:
        text = book.render(text + "\n", doc).strip()
        cells.append(nbformat.v4.new_markdown_cell(text + "\n", metadata=cell.metadata))
    kept.clear()


def _answer(exercises, label, name):
    """A cell that checks the answer and one for each question asked in words, or only one to
    write in (an exercise without a self-check); each names the exercise as the book does
    (``name``, "Exercise 6.4")."""
    try:
        cells = [nbformat.v4.new_code_cell(exercises.student_cell(label, name))]
    except KeyError:  # no self-check: the exercise asks for words
        return [nbformat.v4.new_markdown_cell(WORDS.format(name=name))]
    for question in exercises.written(label):
        text = WRITTEN.format(name=name, question=question)
        cells.append(nbformat.v4.new_markdown_cell(text))
    return cells


# The book's tags, and what JupyterLab folds for each: the code ("source_hidden") and what it
# prints ("outputs_hidden"). A cell the book removes whole is folded whole.
FOLDS = {
    "remove-cell": ("source_hidden", "outputs_hidden"),
    "remove-input": ("source_hidden",),
    "hide-input": ("source_hidden",),
    "hide-cell": ("source_hidden", "outputs_hidden"),
    "remove-output": ("outputs_hidden",),
    "hide-output": ("outputs_hidden",),
}


def folds(cell) -> set[str]:
    """What JupyterLab should fold of a code cell: as the book hides it (its tags), and a cell
    that only glues numbers for the prose or asserts, tagged or not, whole."""
    if cell.cell_type != "code":
        return set()
    folded = {what for tag in cell.metadata.get("tags", []) for what in FOLDS.get(tag, ())}
    if _bookkeeping(cell.source):
        folded |= {"source_hidden", "outputs_hidden"}
    return folded


def _bookkeeping(source: str) -> bool:
    """Whether every statement of a cell is an ``assert`` or a ``glue(...)`` call."""
    try:
        body = ast.parse(source).body
    except SyntaxError:  # IPython magics: not bookkeeping
        return False

    def glue(node):
        call = node.value if isinstance(node, ast.Expr) else None
        return isinstance(call, ast.Call) and getattr(call.func, "id", None) == "glue"

    return bool(body) and all(isinstance(node, ast.Assert) or glue(node) for node in body)


def fold(notebook) -> None:
    """Fold what the book hides (``folds``): JupyterLab reads ``jupyter.source_hidden`` and
    ``jupyter.outputs_hidden``, not the book's tags, so a reader meets the prose, the code the
    book shows and the widgets, not the set-up of the numbers in the text."""
    for cell in notebook.cells:
        for what in sorted(folds(cell)):
            cell.metadata.setdefault("jupyter", {})[what] = True


def executed_glue(cache: Path = CACHE):
    """``glue(doc)``: the values chapter ``doc`` glued, from its execution in ``cache``
    (myst-nb marks each glued output with its name)."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import myst_nb_reader_plugin

    def glue(doc: str) -> dict:
        source = Path(doc).with_suffix(".md")
        try:
            _, executed = get_cache(str(cache)).merge_match_into_notebook(
                myst_nb_reader_plugin(str(source))
            )
        except KeyError:
            raise LookupError(
                f"{source} has no execution of its current code in {cache}, so its glued "
                "numbers are unknown: run `make book` (or `make notebooks`) first"
            ) from None
        glued = {}
        for cell in executed.cells:
            for output in cell.get("outputs", []):
                mark = output.get("metadata", {}).get("scrapbook")
                if mark:  # each type recorded as "application/papermill.record/text/plain"
                    prefix = mark.get("mime_prefix", "")
                    data = output["data"].items()
                    glued[mark["name"]] = {kind.removeprefix(prefix): v for kind, v in data}
        return glued

    return glue


def book(sources=None, cache: Path = CACHE, substitutions=None) -> Book:
    """What the chapters' references and glued values resolve to: every page of book/ (a
    chapter may refer to the appendices), the glued values from ``cache``."""
    if substitutions is None:  # as the build has them: the configuration's, then the buttons'
        import yaml
        from book_html import substitutions as book_substitutions

        config = yaml.safe_load((ROOT / "_config.yml").read_text())
        given = config.get("parse", {}).get("myst_substitutions", {})
        substitutions = {**given, **book_substitutions(ROOT)}
    return Book(
        sources or sorted((ROOT / "book").glob("*.md")),
        glue=executed_glue(cache),
        substitutions=substitutions,
        citations=citations(ROOT / "book" / "references.bib"),
    )


def write(source: Path, target: Path, edition: str = "student", pages: Book | None = None) -> None:
    """The class notebook of one chapter in ``edition``: its cells, no outputs. ``pages``
    resolves the references and glued values (``book()`` when not given)."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    notebook = jupytext.read(source)
    pages = pages or book()
    doc = str(Path(source).resolve().with_suffix(""))
    notebook = (student if edition == "student" else instructor)(notebook, doc, pages)
    fold(notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(notebook, target, fmt="ipynb")


class Unrendered:
    """A ``Book`` that leaves Markdown as it is and names exercises as the book does: the
    class notebooks' code cells without their Markdown's glued values (what lint reads)."""

    def __init__(self, sources):
        self.exercise = Book(sources, glue=_no_glue).exercise

    @staticmethod
    def render(text: str, doc: str, solutions: bool = False) -> str:
        return text


def _no_glue(doc: str) -> dict:
    raise LookupError(f"{doc}: no glued value is read for the notebooks' code alone")


def main(*arguments: str) -> None:
    code_only = arguments[0] == "--code"
    out, *sources = arguments[code_only:]
    pages = Unrendered(sorted((ROOT / "book").glob("*.md"))) if code_only else book()
    for source in map(Path, sources):
        for edition in EDITIONS:
            write(source, Path(out) / edition / f"{source.stem}.ipynb", edition, pages)
    # A chapter renamed or removed leaves no notebook behind (the book's renumbering would
    # otherwise publish both numberings); notebooks of pages that exist are left alone.
    for edition in EDITIONS:
        for notebook in (Path(out) / edition).glob("*.ipynb"):
            if not (ROOT / "book" / f"{notebook.stem}.md").exists():
                notebook.unlink()


if __name__ == "__main__":
    main(*sys.argv[1:])
