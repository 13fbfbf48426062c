"""The chapters' sources keep the book's promises: the skeleton, and no number typed by hand.

These read the MyST sources in book/; the strict book build (in `make test`) executes them,
and test_book.py checks what the build made of them.
"""

import ast
import builtins
import re
import symtable
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import execute  # noqa: E402

from inference_arithmetic.page.widgets import PALETTE

ROOT = Path(__file__).resolve().parents[2]
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())


def _toc_files(entry):
    if "file" in entry:
        yield entry["file"]
    for key in ("parts", "chapters", "sections"):
        for child in entry.get(key, []):
            yield from _toc_files(child)


DOCUMENTS = [TOC["root"], *_toc_files(TOC)]
CHAPTERS = [doc for doc in DOCUMENTS if re.fullmatch(r"book/\d\d-[\w-]+", doc)]
# The pages with code, as the Makefile lists them (the pages it executes): every page of the
# table of contents with a code cell (the chapters, the formula reference, the reference tables).
CODE_PAGES = [doc for doc in DOCUMENTS if "{code-cell}" in (ROOT / f"{doc}.md").read_text()]


def _source(doc):
    return (ROOT / f"{doc}.md").read_text()


def _prose(text):
    """The Markdown outside code cells, front matter and directive options."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"^```\{code-cell\}.*?^```$", "", text, flags=re.S | re.M)
    text = re.sub(r"\{glue:text\}`[^`]*`", "", text)
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", "", text, flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.startswith(":"))


def test_every_chapter_file_is_in_the_toc():
    on_disk = {f"book/{p.stem}" for p in (ROOT / "book").glob("[0-9][0-9]-*.md")}
    assert on_disk == set(CHAPTERS)
    assert CHAPTERS, "no chapters found in _toc.yml"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_has_the_skeleton(doc):
    text = _source(doc)
    missing = [
        what
        for what, pattern in [
            ("jupytext header", r"\A---\njupytext:"),
            ("a label for cross-references", r"^\(ch-[\w-]+\)=$"),
            ("learning objectives", r":::\{admonition\} Learning objectives"),
            ("a takeaway box", r":::\{admonition\} Takeaway"),
            ("a hidden cell asserting a derivation", r"tags: \[remove-cell\]\n(?:.*\n)*?assert "),
            ("a derivation checked against the library", r"assert sympy\.simplify\("),
            ("a glued number", r"\{glue:text\}`"),
            (
                "a figure with a caption",
                r"mystnb:\n(?:  .*\n(?:    .*\n)*)*?  figure:\n    caption:",
            ),
            ("alt text for a figure", r"mystnb:\n  image:\n    alt: \S"),
            ("a widget", r"ia\.widgets\.formula_widget\("),
            ("an exercise", r":::\{exercise\}"),
            ("a solution", r":::\{solution-start\}"),
            ("a summary", r"^## Summary$"),
        ]
        if not re.search(pattern, text, flags=re.M)
    ]
    assert not missing, f"{doc} lacks: {', '.join(missing)}"


# A number with a unit of the book's quantities (GB, TFLOPs, ms, %, ...) typed into prose
# instead of glued from a computation. Definitions without a prefix ("2 FLOPs per
# multiply-add") are conventions, not results, and pass.
TYPED = re.compile(
    r"\b\d[\d,.]*\s?(?:[kMGTPE]i?B|[kMGTPE]FLOPs?|[kMGTPE]?FLOP/s|[kMGTPE]?B/s|ms|µs|s|%"
    r"|tokens/s)(?![\w/])"
)


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_no_quantity_typed_into_prose(doc):
    typed = [
        f"line {n}: {line.strip()}"
        for n, line in enumerate(_prose(_source(doc)).splitlines(), 1)
        if TYPED.search(line)
    ]
    assert not typed, "glue these from a computation:\n" + "\n".join(typed)


def test_the_typed_quantity_check_can_fail():
    prose = _prose("The model is 141 GB and decode takes 42 ms, {glue:text}`x` is fine.")
    assert [m.group(0) for m in TYPED.finditer(prose)] == ["141 GB", "42 ms"]


# Matplotlib calls that draw in a colour; without one they take matplotlib's default cycle,
# whose red and green many colour-blind readers cannot tell apart.
DRAWING = {"plot", "loglog", "semilogx", "semilogy", "bar", "barh", "scatter", "step", "stem",
           "fill_between", "fill_betweenx", "errorbar", "hist", "stackplot", "axhline", "axvline",
           "hlines", "vlines", "pie"}  # fmt: skip


def _code(text):
    """The code of every code cell, cell options removed."""
    for cell in re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```$", text, flags=re.S | re.M):
        cell = re.sub(r"\A---\n.*?\n---\n", "", cell, flags=re.S)
        yield "\n".join(line for line in cell.splitlines() if not line.startswith((":", "%")))


def _colour_problems(text):
    problems = []
    for code in _code(text):
        for node in ast.walk(ast.parse(code)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in DRAWING
                and not {k.arg for k in node.keywords} & {"color", "colors", None}
            ):
                problems.append(f"no color= in {ast.unparse(node)[:80]}")
        problems += [
            f"{colour} is not in the Okabe-Ito palette"
            for colour in re.findall(r"#[0-9A-Fa-f]{6}\b", code)
            if colour.upper() not in PALETTE
        ]
    return problems


@pytest.mark.parametrize("doc", CODE_PAGES)
def test_every_plot_draws_in_colour_blind_safe_colours(doc):
    problems = _colour_problems(_source(doc))
    assert not problems, "\n".join(problems)


def test_the_colour_check_can_fail():
    text = (
        '```{code-cell} ipython3\n:tags: [x]\nax.plot(x, y)\nax.bar(x, y, color="#FF0000")\n```\n'
    )
    assert _colour_problems(text) == [
        "no color= in ax.plot(x, y)",
        "#FF0000 is not in the Okabe-Ito palette",
    ]


# Tags under which the book shows a cell's code to nobody, or only behind a click.
SOLUTION_MARK = re.compile(r":::\{solution-(start|end)\}[ \t]*(\S*)")
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```$", re.S | re.M)
# Names an IPython kernel holds before the first cell runs.
KERNEL_NAMES = set(dir(builtins)) | {"get_ipython", "display", "In", "Out", "exit", "quit"}
KERNEL_NAMES |= {"_", "__"}


def _cells_in_order(text):
    """Each code cell as (code, tags, solution label or None), in the order of the page."""
    inside, at = None, 0
    for cell in CELL.finditer(text):
        for mark in SOLUTION_MARK.finditer(text, at, cell.start()):
            inside = mark.group(2) if mark.group(1) == "start" else None
        at = cell.end()
        body, options = cell.group(1), {}
        front = re.match(r"\A---\n(.*?)\n---\n", body, flags=re.S)
        if front:
            options, body = yaml.safe_load(front.group(1)) or {}, body[front.end() :]
        lines = body.splitlines()
        while lines and lines[0].startswith(":"):
            key, _, value = lines.pop(0)[1:].partition(":")
            options[key.strip()] = yaml.safe_load(value)
        code = "\n".join(line for line in lines if not line.startswith("%"))
        yield code, set(options.get("tags") or []), inside


SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.Assert, ast.Raise)


def _statements(source, where):
    """What each top-level statement of a cell reads and binds, in order: (reads, binds, node).

    A statement's reads are the names its own code reads and the global names its functions,
    lambdas, classes and comprehensions read (counted when it runs, the earliest they could
    be). A simple statement reads before it binds (``x = x + 1`` needs an ``x``); a compound
    one (a loop, a ``with``, a ``def``) may read what it binds itself."""
    tree = ast.parse(source, where)
    for node in tree.body:
        table = symtable.symtable(ast.unparse(node), where, "exec")
        reads = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
        binds = {
            s.get_name()
            for s in table.get_symbols()
            if s.is_assigned() or s.is_imported() or s.is_namespace()
        }
        stack = list(table.get_children())
        while stack:
            child = stack.pop()
            stack += child.get_children()
            for symbol in child.get_symbols():
                if symbol.is_global() and symbol.is_referenced():
                    reads.add(symbol.get_name())
                if symbol.is_declared_global() and symbol.is_assigned():
                    binds.add(symbol.get_name())
        yield (reads if isinstance(node, SIMPLE) else reads - binds), binds, node


MUTATING = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear"}
MUTATING |= {"remove", "add", "discard", "sort", "reverse", "__setitem__", "__delitem__"}


def _mutations(source, own):
    """What a cell changes in place of names it did not bind (``own``): items or attributes
    assigned or deleted, mutating methods called; a function's own local names aside."""

    def base(node):
        while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
            node = node.func if isinstance(node, ast.Call) else node.value
        return node.id if isinstance(node, ast.Name) else None

    tree = ast.parse(source)
    local = {}  # a node inside functions: the names local to them (arguments, assignments)
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = function.args
            names = {
                a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            }
            names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a}
            names |= {
                n.id
                for n in ast.walk(function)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            for node in ast.walk(function):
                local[node] = local.get(node, set()) | names
    found = []
    for node in ast.walk(tree):
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            found += [t for t in targets if isinstance(t, ast.Attribute | ast.Subscript)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found += [node] if node.func.attr in MUTATING else []
    return [
        ast.unparse(node)
        for node in found
        if base(node) not in own | local.get(node, set()) | {None}
    ]


# The tags that take a cell's code off the page (tools/execute.py's, which runs those cells
# apart); a cell with any other (hide-input: behind a click) shows its code, and a reader may
# run it.
REMOVED = execute.REMOVED


def _shown_cell_problems(text):
    """Why the cells whose code a reader sees would not run alone, in a fresh kernel, from the
    shown cells above them, as they run in the book: a name a shown cell reads that, in the
    book, a removed cell bound last (an import too), or that no cell bound before; a removed
    cell that changes in place what a shown cell bound (its list, a module's settings).
    Read off the code, statement by statement (``_statements``), so that checking it runs no
    chapter a second time; the removed cells only glue, assert or draw. The book's execution
    checks the names again as it runs (tools/shown_alone.py: the removed cells run apart, and a
    shown cell that needs their names fails the page); what a removed cell changes in place,
    only this sees."""
    bound, problems = {}, []  # a name: (shown?, the statement that bound it last)
    for n, (code, tags, _) in enumerate(_cells_in_order(text)):
        shown, own = not tags & REMOVED, set()
        for reads, binds, node in _statements(code, f"cell {n}"):
            for name in sorted(reads - KERNEL_NAMES if shown else ()):
                if name not in bound:
                    problems.append(f"cell {n}: {name} (bound by no cell before it)")
                elif not bound[name][0]:
                    problems.append(f"cell {n}: {name} (bound by a removed cell: {bound[name][1]})")
            bound.update({name: (shown, ast.unparse(node)[:70]) for name in binds})
            own |= binds
        if not shown:  # what it changes of its own and the other removed cells' is its own
            own |= {name for name, (by_shown, _) in bound.items() if not by_shown}
            problems += [f"cell {n} (removed) changes in place: {m}" for m in _mutations(code, own)]
    return problems


@pytest.mark.parametrize("doc", CODE_PAGES)
def test_the_shown_cells_run_alone(doc):
    problems = _shown_cell_problems(_source(doc))
    assert not problems, (
        f"{doc}: a shown cell would fail, or compute something else, without the removed ones "
        "(show the code it needs, or move it into a shown cell):\n" + "\n".join(problems)
    )


def test_the_shown_cell_check_can_fail():
    text = (
        "```{code-cell} ipython3\nimport math\nshown = [2]\n```\n"
        "```{code-cell} ipython3\n:tags: [remove-cell]\nimport json\nsecret = 3\n"
        "shown.append(1)\nglue('x', shown, display=False)\n```\n"
        "```{code-cell} ipython3\n---\ntags: [hide-input]\n---\nalso_shown = 4\n```\n"
        "```{code-cell} ipython3\nok = [math.pi * also_shown for _ in range(2)]\n"
        "def f():\n    return secret + ok + json.dumps(ok) + later\n```\n"
        "```{code-cell} ipython3\n:tags: [remove-input]\nok = 5\n"
        "def mine():\n    kept = {}\n    kept.setdefault(1, []).append(2)\n    return kept\n```\n"
        "```{code-cell} ipython3\nlater = ok\n```\n"
    )
    assert _shown_cell_problems(text) == [
        "cell 1 (removed) changes in place: shown.append(1)",
        "cell 3: json (bound by a removed cell: import json)",
        "cell 3: later (bound by no cell before it)",
        "cell 3: secret (bound by a removed cell: secret = 3)",
        "cell 5: ok (bound by a removed cell: ok = 5)",
    ]


# --- Bold marks a term the glossary defines --------------------------------------------------

BOLD = re.compile(r"\*\*([^*\n]+?)\*\*")


def _glossary_terms():
    """The glossary's terms, lower case: the lines of its glossary directive that start a
    definition (not indented)."""
    text = _source("book/appendix-glossary")
    body = text[text.index(":::{glossary}") :].split("\n:::", 1)[0]
    return {line.strip().lower() for line in body.splitlines()[1:] if line[:1] not in " :"}


def _undefined_bold(text, terms):
    """The bold phrases of a chapter's prose that are not a glossary term (nor its plural); a
    bold run-in heading, ending in a period ("**Embedding.**"), is a heading, not a term."""
    found = []
    for phrase in BOLD.findall(_prose(text)):
        words = " ".join(phrase.split()).lower()
        if words.endswith(".") or any(words in (t, t + "s", t + "es") for t in terms):
            continue
        found.append(phrase)
    return found


@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_bold_term_is_in_the_glossary(doc):
    undefined = _undefined_bold(_source(doc), _glossary_terms())
    assert not undefined, (
        f"{doc} sets in bold what the glossary does not define (define it in "
        f"book/appendix-glossary.md, or use italics for emphasis): {undefined}"
    )


def test_the_bold_term_check_can_fail():
    terms = {"kv cache", "all-to-all"}
    text = "The **KV cache** and two **all-to-alls**; **Embedding.** A **made-up term**."
    assert _undefined_bold(text, terms) == ["made-up term"]
    assert "token budget" in _glossary_terms() and "little's law" in _glossary_terms()
