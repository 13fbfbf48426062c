"""Every student notebook runs top to bottom with its answers left blank, and each answer cell
says "not answered yet" (the book's build runs the instructor edition, the chapters).

Without running the chapters a second time: the strict build has run every chapter's cells in
order, and the student edition is those cells less the solutions' code, with an answer cell in
place of each solution (test_notebooks.py checks the cells are the chapter's). So what is left
to check is what taking the solutions out changes:

- the answer cells are where the solutions were, one for each exercise with a self-check;
- no cell the student edition keeps reads a name that, in the book, a solution's code bound
  last (in the student edition it would be unbound, or bound to something else), and every
  name a cell reads is bound before it: read off each cell's code, statement by statement
  (Python's own symbol tables say what a statement reads and binds);
- no solution changes in place what the cells kept hold: no item or attribute assigned on, no
  mutating method (``append``, ``update``, ...) called on, a name the solution did not bind;
- each answer cell reads only names that imports bind (``ia``), so it is run here, in one
  process, after those imports, and must say "not answered yet".

A file of its own, so that pytest-xdist (--dist loadfile) runs it beside the other tests.
"""

import ast
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from inference_arithmetic import exercises
from tests.book.test_chapters import CHAPTERS, KERNEL_NAMES, _mutations, _statements

ROOT = Path(__file__).resolve().parents[2]
STUDENT = ROOT / "_build" / "notebooks" / "student"
INSTRUCTOR = ROOT / "_build" / "notebooks" / "instructor"
MARKER = re.compile(r":::\{solution-(start|end)\}[ \t]*(\S*)")
ANSWER = "# Your answer to "
CHECKS = re.compile(r'ia\.exercises\.check\(\s*"([^"]+)"')
# What an IPython kernel's namespace holds before the first cell runs.
# Statements that read everything before they bind anything.


def _read(folder, doc):
    path = folder / f"{Path(doc).name}.ipynb"
    assert path.exists(), f"{path} is missing: run `make notebooks`"
    return nbformat.read(path, as_version=4)


def _answered(source):
    """The label of the exercise an answer cell checks."""
    return CHECKS.search(source)[1]


def _chapter_cells(notebook):
    """The code cells of the chapter (its MyST source), each as (source, label): the
    label of the solution it is part of, or None for a cell the student edition keeps; at
    each solution's end, (None, label): the place of its answer cell."""
    cells, inside = [], None
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cells.append((cell.source, inside))
            continue
        for marker in MARKER.finditer(cell.source):
            kind, label = marker.groups()
            if kind == "start":
                assert inside is None, f"a solution starts inside {inside}'s"
                inside = label
            else:
                assert inside is not None, "a solution ends that did not start"
                cells.append((None, inside))
                inside = None
    assert inside is None, f"the solution of {inside} does not end"
    return cells


def _registered():
    exercises._load()
    return exercises.EXERCISES


def _where_bound(cells):
    """Run over ``cells`` [(id, source)] as a kernel would over names: for each cell, each name
    its statements read and the statement that bound it last (None: unbound)."""
    bound, seen = {}, {}
    for cell_id, source in cells:
        if source is None:
            continue
        seen[cell_id] = []
        for index, (reads, binds, node) in enumerate(_statements(source, str(cell_id))):
            seen[cell_id] += [(name, bound.get(name)) for name in sorted(reads)]
            bound.update({name: (cell_id, index, node) for name in binds})
    return seen


def _problems(chapter, student):
    """What differs, name by name, between the chapter and its student edition ``student``
    (the student's code cells, in order): [(cell, name, where the book bound it, where the
    student's edition did)], the latter "unbound: ..." for a name bound nowhere before."""
    kept = [(i, src) for i, (src, label) in enumerate(chapter) if label is None]
    book = _where_bound([(i, src) for i, (src, _) in enumerate(chapter)])
    # The student's cells, named as the chapter's they are (an answer cell by its label).
    named, queue = [], iter(kept)
    for source in student:
        if source.startswith(ANSWER):
            named.append((_answered(source), source))
        else:
            index, expected = next(queue, (None, None))
            assert source == expected, f"the student's cell differs from the chapter's: {source}"
            named.append((index, source))
    theirs = _where_bound(named)
    problems = []
    for cell_id, reads in theirs.items():
        for read_index, (name, binding) in enumerate(reads):
            if isinstance(cell_id, int):  # a cell of the chapter: the book's binding
                book_binding = book[cell_id][read_index][1]
                same = binding is book_binding or (
                    binding and book_binding and binding[:2] == book_binding[:2]
                )
                if not same:
                    problems.append((cell_id, name, book_binding, binding))
            if binding is None and name not in KERNEL_NAMES:
                problems.append((cell_id, name, None, "unbound: a NameError"))
    return problems, theirs


def _show(chapter, binding):
    if binding is None or isinstance(binding, str):
        return binding or "nothing"
    cell, _, node = binding
    where = "a solution" if isinstance(cell, int) and chapter[cell][1] else "a kept cell"
    return f"{ast.unparse(node)[:60]!r} in {where}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_the_student_notebook_runs_with_blank_answers(doc):
    chapter = _chapter_cells(jupytext.read(ROOT / f"{doc}.md"))
    student = [c.source for c in _read(STUDENT, doc).cells if c.cell_type == "code"]
    # The answer cells stand where the solutions were, one per exercise it can check, each
    # naming its exercise as the book numbers it ("Exercise 6.2", not its label).
    registered, names = _registered(), _book_names(doc)
    expected = [
        exercises.student_cell(label, names[label]) if source is None else source
        for source, label in chapter
        if label is None or (source is None and label in registered)
    ]
    assert student == expected, f"{doc}: the student edition is not the chapter less solutions"
    answers = [source for source in student if source.startswith(ANSWER)]
    assert answers or not any(label in registered for _, label in chapter), doc

    problems, seen = _problems(chapter, student)
    assert not problems, f"{doc}: the student edition reads names the solutions bind:\n" + (
        "\n".join(
            f"  cell {cell}: {name}, in the book {_show(chapter, book)}, here {_show(chapter, it)}"
            for cell, name, book, it in problems
        )
    )
    own = {}  # what each solution binds, cell after cell
    for source, label in chapter:
        if source is not None and label is not None:
            own[label] = own.get(label, set()).union(
                *(binds for _, binds, _ in _statements(source, label))
            )
            changed = _mutations(source, own[label])
            assert not changed, f"{doc}: the solution of {label} changes in place: {changed}"
    # Each answer cell, after the imports that bound what it reads.
    for source in answers:
        label = _answered(source)
        imports = [binding[2] for _, binding in seen[label]]
        assert all(isinstance(node, ast.Import | ast.ImportFrom) for node in imports), (
            f"{label}'s answer cell reads more than imports: {[ast.unparse(n) for n in imports]}"
        )
        namespace = {}
        exec(compile(ast.Module(imports, []), doc, "exec"), namespace)
        shown = repr(eval(compile(source, label, "eval"), namespace))  # the cell's text/plain
        assert "not answered yet" in shown, (doc, source, shown)


# --- The check can fail ---------------------------------------------------------------------

SETUP = "import inference_arithmetic as ia\nx = 2"


def test_a_cell_that_reads_what_a_solution_bound_fails():
    chapter = [(SETUP, None), ("y = x * 3", "ex-a"), (None, "ex-a"), ("print(y)", None)]
    problems, _ = _problems(chapter, [SETUP, "print(y)"])
    assert [(cell, name, book) for cell, name, book, _ in problems] == [
        (3, "y", (1, 0, problems[0][2][2])),
        (3, "y", None),
    ]
    assert problems[1][3].startswith("unbound")


def test_a_cell_that_reads_what_a_solution_rebound_fails():
    # The solution's own x: the kept cell reads 2 in the student edition, 5 in the book.
    chapter = [(SETUP, None), ("x = 5", "ex-a"), (None, "ex-a"), ("def f():\n    return x", None)]
    problems, _ = _problems(chapter, [SETUP, "def f():\n    return x"])
    assert [(cell, name) for cell, name, _, _ in problems] == [(3, "x")]
    assert problems[0][3][:2] == (0, 1)  # the student's x: the kept cell's second statement


def test_a_name_bound_by_the_cell_itself_or_before_passes():
    cells = [
        "import inference_arithmetic as ia\nfor n in range(3):\n    total = n",
        "total = total + sum(k for k in range(n))\nclass C:\n    z = total\n",
        "fig = [print(v) for v in (C.z, len)]",
    ]
    chapter = [(cells[0], None), ("w = 1", "ex-a"), (None, "ex-a"), *((c, None) for c in cells[1:])]
    assert _problems(chapter, cells)[0] == []
    # ... but not a simple statement that reads its own target before any binding.
    problems, _ = _problems([("a = a + 1", None)], ["a = a + 1"])
    assert [(name, book, it) for _, name, book, it in problems] == [
        ("a", None, "unbound: a NameError")
    ]


def test_a_solution_that_changes_what_the_chapter_holds_is_found():
    solution = "rows.append(3)\ntable[0] = 1\nm.name = 'x'\nmine = []\nmine.append(rows)\nlen(rows)"
    assert _mutations(solution, {"mine"}) == ["table[0]", "m.name", "rows.append(3)"]


# --- The student's text: plain Markdown, the book's numbers, a cell for each written answer ---

HTML = ROOT / "_build" / "html"
LEFT = {  # what JupyterLab would show raw
    "a directive": re.compile(r"^\s*(?:>\s*)?(?::{3,}|`{3,})\{", re.M),
    "a role": re.compile(r"\{[a-z][\w:-]*\}`"),
    "a label": re.compile(r"^\([^()\s]+\)=\s*$", re.M),
    "a substitution": re.compile(r"\{\{\s*\w+\s*\}\}"),
}
# A question that only words answer: why, when, where it differs, what sets or changed it
# ("where does the balance point move?" asks for a number).
IN_WORDS = re.compile(
    r"\b(?:why|when is|differ from|what sets|what changed|leave out|compare with (?:what|the)|"
    r"which bound)\b",
    re.I,
)


def _myst_left(notebook):
    """Each piece of MyST left in a Markdown cell: (what, the text around it)."""
    return [
        (what, cell.source[max(0, found.start() - 30) : found.end() + 30])
        for cell in notebook.cells
        if cell.cell_type == "markdown"
        for what, pattern in LEFT.items()
        for found in pattern.finditer(cell.source)
    ]


def _plain(html):
    """The text of an HTML fragment, as words: tags out, entities and quotes plain."""
    import html as html_module

    text = html_module.unescape(re.sub(r"<[^>]+>", "", html)).replace("\u2019", "'")
    return " ".join(text.split())


def _markdown(notebook):
    return "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")


def _words(markdown):
    return " ".join(re.sub(r"[*`$\\]", "", markdown).split())


def _book_exercises(doc):
    """Each exercise of a built page: (label, "Exercise 6.2", its glued values, its text)."""
    page = (HTML / f"{doc}.html").read_text()
    found = re.finditer(
        r'<div class="exercise admonition" id="([^"]+)">\s*<p class="admonition-title">'
        r'<span class="caption-number">([^<]+)</span>.*?<section id="exercise-content">'
        r"(.*?)</section>",
        page,
        re.S,
    )
    return [
        (label, number.strip(), re.findall(r'<span class="pasted-text">([^<]*)</span>', body), body)
        for label, number, body in (m.groups() for m in found)
    ]


def _book_names(doc):
    """Each exercise of a built page by its label, as the page numbers it: "Exercise 6.2"."""
    return {label: number for label, number, _, _ in _book_exercises(doc)}


def _book_solutions(doc):
    """The headings of a built page's solutions, as the page shows them."""
    page = (HTML / f"{doc}.html").read_text()
    titles = re.findall(
        r'<div class="solution dropdown[^"]*"[^>]*>\s*<p class="admonition-title">(.*?)</p>',
        page,
        re.S,
    )
    return [_plain(title) for title in titles]


def _exercise_cells(notebook):
    """The student's exercise cells, by their heading: {"Exercise 6.2": text}."""
    cells = {}
    for cell in notebook.cells:
        heading = re.search(r"^### (Exercise [\d.]+)", cell.source, re.M)
        if cell.cell_type == "markdown" and heading:
            cells[heading[1]] = cell.source[heading.start() :]
    return cells


def _exercise_problems(book, notebook):
    """Where the student's exercises differ from the book's: a number, a glued value, a
    reference's text."""
    cells, problems = _exercise_cells(notebook), []
    for label, number, values, body in book:
        text = cells.get(number)
        if text is None:
            problems.append((label, f"no heading {number!r}"))
            continue
        shown = _words(text)
        for value in values + re.findall(r'<span class="std std-(?:ref|numref)">([^<]*)<', body):
            if _words(_plain(value)) not in shown:
                problems.append((label, f"{_plain(value)!r} is not in {shown!r}"))
    return problems


@pytest.mark.parametrize("edition", [STUDENT, INSTRUCTOR], ids=["student", "instructor"])
@pytest.mark.parametrize("doc", CHAPTERS)
def test_the_notebook_reads_as_plain_markdown_with_the_books_numbers(doc, edition):
    notebook = _read(edition, doc)
    left = _myst_left(notebook)
    assert not left, f"{doc}: MyST that JupyterLab shows raw: {left[:5]}"
    book = _book_exercises(doc)
    assert book, f"{doc}.html has no exercise"
    problems = _exercise_problems(book, notebook)
    assert not problems, f"{doc}: the notebook's exercises differ from the book's: {problems}"
    # The instructor's solutions, each headed as the book heads it; the student's, none.
    headings = re.findall(r"^#### (Solution to .+)$", _markdown(notebook), re.M)
    assert headings == (_book_solutions(doc) if edition == INSTRUCTOR else []), doc
    # Every glued value the page prints (the student's: outside its solutions) is in the text.
    page = (HTML / f"{doc}.html").read_text()
    if edition == STUDENT:
        page = re.sub(r'<div class="solution dropdown.*?</section>\s*</div>', "", page, flags=re.S)
    text = _words(_markdown(notebook))
    missing = [
        value
        for value in re.findall(r'<span class="pasted-text">([^<]*)</span>', page)
        if _words(_plain(value)) not in text
    ]
    assert not missing, f"{doc}: glued values the book prints and the notebook lacks: {missing}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_each_question_answered_in_words_has_a_cell_to_write_in(doc):
    notebook = _read(STUDENT, doc)
    cells, registered = notebook.cells, _registered()
    headings = {number: label for label, number, _, _ in _book_exercises(doc)}
    for number, text in _exercise_cells(notebook).items():
        label, text = headings[number], " ".join(text.split())
        asked = registered[label].written if label in registered else ()
        for question in asked:  # quoted from the exercise, so it cannot drift from it
            assert question in text, f"{label}: {question!r} is not in its text"
        for sentence in re.split(r"(?<=[.?])\s+", text.removeprefix(f"### {number}")):
            if IN_WORDS.search(sentence):
                covered = any(q.rstrip("?") in sentence or sentence.strip() in q for q in asked)
                assert covered, f"{label} asks {sentence.strip()!r} and has no cell to answer it"
        answers = [
            c.source for c in cells if c.cell_type == "markdown" and f"to {number}:" in c.source
        ]
        assert [q for q in asked if not any(q in a for a in answers)] == [], label


def test_myst_left_in_a_notebook_is_found():
    cells = [
        ":::{exercise}\n:label: ex-a\nA GPU has {glue:text}`gpu` of memory.\n:::",
        "(sec-a)=\n## A\nSee {ref}`sec-a`, install with {{ install }}.",
        "> ```{math}\n> x\n> ```",
        "### Exercise 1.1\n\nA GPU has 80 GB of memory ($x$, `code`).",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(c) for c in cells])
    assert sorted({what for what, _ in _myst_left(notebook)}) == [
        "a directive",
        "a label",
        "a role",
        "a substitution",
    ]
    assert len(_myst_left(notebook)) == 6


def test_an_exercise_without_its_number_or_glued_value_is_found():
    book = [("ex-a", "Exercise 6.2", ["80 GB"], 'see <span class="std std-ref">Chapter 1</span>')]
    cell = nbformat.v4.new_markdown_cell
    right = nbformat.v4.new_notebook(
        cells=[cell("### Exercise 6.2\n\nA *80 GB* GPU; see Chapter 1")]
    )
    assert _exercise_problems(book, right) == []
    unnumbered = nbformat.v4.new_notebook(cells=[cell("### Exercise 2\n\nA 80 GB GPU, Chapter 1")])
    assert _exercise_problems(book, unnumbered) == [("ex-a", "no heading 'Exercise 6.2'")]
    unglued = nbformat.v4.new_notebook(cells=[cell("### Exercise 6.2\n\nA `gpu` GPU; Chapter 1")])
    assert [p[1][:8] for p in _exercise_problems(book, unglued)] == ["'80 GB' "]
