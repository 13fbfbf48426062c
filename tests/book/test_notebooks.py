"""The notebooks a class gets (`make notebooks`, and each page's ".ipynb" download in the built
book): the instructor edition is the chapter, cell for cell; the student edition is the chapter
without its solutions, an answer cell in place of each.

The strict book build executes every chapter, which is the instructor edition (a failing cell,
or a solution whose answer its exercise's check refuses, fails it); test_student_notebooks.py
checks that the student edition runs too, without the solutions, and runs its answer cells.
"""

import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from inference_arithmetic import exercises
from tests.book.test_chapters import CHAPTERS, CODE_PAGES
from tests.book.test_student_notebooks import _book_names

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "_build" / "notebooks"
PAGES = CODE_PAGES  # the pages with code (the Makefile's list)
SOLUTION = re.compile(r":::\{solution-start\} (\S+).*?:::\{solution-end\}", re.S)
WORDS = re.compile(r"\*Your answer to Exercise \d+\.\d+:\* \(write it here\)")


def _code(notebook):
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def _edition(doc, edition):
    path = NOTEBOOKS / edition / f"{Path(doc).name}.ipynb"
    assert path.exists(), f"{path} is missing: run `make notebooks`"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    return notebook


@pytest.mark.parametrize("doc", PAGES)
def test_the_instructor_notebook_is_the_chapter(doc):
    chapter = jupytext.read(ROOT / f"{doc}.md")
    assert _code(_edition(doc, "instructor")) == _code(chapter), f"older than {doc}.md"


# The book's tags that hide a cell's code (and its output), and the cells that only glue
# numbers for the prose or assert, which the student should not have to scroll past.
HIDES_CODE = {"hide-input", "remove-input", "remove-cell", "hide-cell"}
HIDES_OUTPUT = {"remove-cell", "hide-cell", "remove-output", "hide-output"}
BOOKKEEPING = re.compile(r"^(?:assert\b|glue\(|\s|\)|#|$)")


def _should_fold(cell):
    """(code, output) that JupyterLab should fold, by the book's tags and by what the cell is:
    every line a glue call's, an assert's, or a continuation of one, or blank."""
    if cell.cell_type != "code":
        return False, False
    tags = set(cell.metadata.get("tags", []))
    lines = cell.source.splitlines()
    bookkeeping = any(line.startswith(("assert", "glue(")) for line in lines) and all(
        BOOKKEEPING.match(line) for line in lines
    )
    return bool(tags & HIDES_CODE) or bookkeeping, bool(tags & HIDES_OUTPUT) or bookkeeping


def _folded(cell):
    jupyter = cell.metadata.get("jupyter", {})
    return jupyter.get("source_hidden", False), jupyter.get("outputs_hidden", False)


def _fold_problems(notebook):
    return [
        (cell.source[:60], _folded(cell), _should_fold(cell))
        for cell in notebook.cells
        if _folded(cell) != _should_fold(cell)
    ]


@pytest.mark.parametrize("edition", ["instructor", "student"])
def test_code_the_book_hides_is_folded_in_jupyterlab(edition):
    folded = shown = 0
    for doc in PAGES:
        notebook = _edition(doc, edition)
        assert not _fold_problems(notebook), f"{doc}: (cell, folded, should be)"
        for cell in notebook.cells:
            is_folded = _folded(cell)[0]
            folded, shown = folded + is_folded, shown + (not is_folded and cell.cell_type == "code")
    assert folded and shown  # the book hides some cells (set-up, glue, asserts), not all


def test_a_visible_glue_or_assert_cell_is_found():
    glue = nbformat.v4.new_code_cell('glue("x", 1, display=False)\nassert (\n    1\n)')
    hidden = nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["remove-cell"]})
    shown = nbformat.v4.new_code_cell("x = 1\nassert x")
    notebook = nbformat.v4.new_notebook(cells=[glue, hidden, shown])
    assert [problem[2] for problem in _fold_problems(notebook)] == [(True, True), (True, True)]


def _solutions(doc):
    """Each solution of a chapter: its label and its text (prose and code)."""
    return [(m.group(1), m.group(0)) for m in SOLUTION.finditer((ROOT / f"{doc}.md").read_text())]


@pytest.mark.parametrize("doc", CHAPTERS)
def test_the_student_notebook_holds_no_solution(doc):
    text = "\n".join(cell.source for cell in _edition(doc, "student").cells)
    solutions = _solutions(doc)
    assert solutions, f"{doc} has no exercise"
    # A line the chapter also has outside its solutions (an `except ValueError:`) proves nothing.
    outside = SOLUTION.sub("", (ROOT / f"{doc}.md").read_text())
    for label, solution in solutions:
        # The book's check of the solution shares its call with the student's answer cell.
        asked = exercises.student_cell(label) if label in _registered() else ""
        for line in solution.splitlines():
            line = line.strip()
            if len(line) > 12 and not line.startswith((":::", ":class:", "```")):
                if line not in outside and line not in asked:
                    assert line not in text, f"{doc}: the solution of {label} shows: {line!r}"
        # One answer cell per exercise: a check of its answer, or a cell for words.
        cells = [c for c in _edition(doc, "student").cells if f'"{label}"' in c.source]
        if label in _registered():
            name = _book_names(doc)[label]
            assert [c.source for c in cells] == [exercises.student_cell(label, name)], label
        else:
            assert not cells, label


def _registered():
    exercises._load()
    return exercises.EXERCISES


@pytest.mark.parametrize("doc", CHAPTERS)
def test_the_student_notebook_is_the_chapter_less_its_solutions(doc):
    student = _edition(doc, "student")
    instructor = _code(_edition(doc, "instructor"))
    solved = "\n".join(solution for _, solution in _solutions(doc))
    kept = [code for code in instructor if code not in solved]
    answers = [c for c in _code(student) if c.startswith("# Your answer to ")]
    assert [c for c in _code(student) if c not in answers] == kept
    words = [c for c in student.cells if WORDS.fullmatch(c.source.strip())]
    assert len(answers) + len(words) == len(_solutions(doc))


def test_every_checked_exercise_is_in_the_book_and_checks_its_solution():
    labels = {label: doc for doc in CHAPTERS for label, _ in _solutions(doc)}
    for label, exercise in _registered().items():
        assert label in labels, f"{label} is registered but no chapter has it"
        assert labels[label].split("/")[-1] == exercise.chapter, label
        solution = dict(_solutions(labels[label]))[label]
        checked = re.search(rf'ia\.exercises\.check\(\s*"{re.escape(label)}"', solution)
        assert checked, f"{label}: the book never checks it"


def _cells(notebook):
    # Cell ids are random on every conversion; everything else must be the same.
    return [(cell.cell_type, cell.source, cell.metadata) for cell in notebook.cells]


@pytest.mark.parametrize("doc", PAGES)
def test_the_book_offers_the_student_notebook_and_the_source(doc):
    page = (ROOT / "_build" / "html" / f"{doc}.html").read_text()
    folder = ROOT / "_build" / "html" / "_sources"
    for suffix in (".ipynb", ".md"):
        href = f"../_sources/{doc}{suffix}"
        assert f'href="{href}"' in page, f"{doc}.html has no {suffix} download"
        assert (folder / f"{doc}{suffix}").exists(), f"{href} is not in the built book"
    downloaded = nbformat.read(folder / f"{doc}.ipynb", as_version=4)
    assert _cells(downloaded) == _cells(_edition(doc, "student"))
    assert not any(cell.get("outputs") for cell in downloaded.cells), "a class runs the cells"


def test_the_intro_and_the_teaching_page_state_the_prerequisites_from_one_source():
    import html

    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    said = config["parse"]["myst_substitutions"]["prerequisites"]
    for doc in ("book/00-intro", "book/teaching"):
        source = (ROOT / f"{doc}.md").read_text()
        assert "{{ prerequisites }}" in source, f"{doc} states its own prerequisites"
        page = html.unescape((ROOT / "_build" / "html" / f"{doc}.html").read_text())
        assert said in " ".join(re.sub(r"<[^>]+>", "", page).split()), doc
    intro = _edition("book/00-intro", "student")
    assert any(said in cell.source for cell in intro.cells if cell.cell_type == "markdown")


def test_a_renamed_chapter_leaves_no_notebook_behind(tmp_path):
    # The code-only notebooks of one page, beside one of a page the book no longer has (the
    # renumbering's 10-parallelism) and one of a page it has: only the stale one goes.
    import sys

    sys.path.insert(0, str(ROOT / "tools"))  # as the Makefile runs it, beside its helpers
    import notebooks

    for edition in notebooks.EDITIONS:
        (tmp_path / edition).mkdir()
        (tmp_path / edition / "10-parallelism.ipynb").write_text("{}")
        (tmp_path / edition / "00-intro.ipynb").write_text("{}")
    notebooks.main("--code", str(tmp_path), "book/02-mlp.md")
    for edition in notebooks.EDITIONS:
        kept = sorted(p.name for p in (tmp_path / edition).glob("*.ipynb"))
        assert kept == ["00-intro.ipynb", "02-mlp.ipynb"], (edition, kept)
