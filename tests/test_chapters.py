"""The chapters' sources keep the book's promises: the skeleton, and no number typed by hand.

These read the MyST sources in book/; the strict book build (in `make test`) executes them,
and test_book.py checks what the build made of them.
"""

import ast
import re
from pathlib import Path

import pytest
import yaml

from inference_arithmetic.page.widgets import PALETTE

ROOT = Path(__file__).resolve().parents[1]
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())


def _toc_files(entry):
    if "file" in entry:
        yield entry["file"]
    for key in ("parts", "chapters", "sections"):
        for child in entry.get(key, []):
            yield from _toc_files(child)


DOCUMENTS = [TOC["root"], *_toc_files(TOC)]
CHAPTERS = [doc for doc in DOCUMENTS if re.fullmatch(r"book/\d\d-[\w-]+", doc)]


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


@pytest.mark.parametrize("doc", [*CHAPTERS, "book/appendix-formulas"])
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
