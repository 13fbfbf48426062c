"""The book's formula reference (``book/appendix-formulas.md``), generated from the library.

Walks the modules of ``inference_arithmetic.formulas``, calls every public function (a
function of an architecture with the representative model and then every model of the
registry, a function of an expression with placeholders) and writes what it returns as LaTeX.
A function added to a formulas module's ``__all__`` appears on the page with no other change.

>>> from inference_arithmetic import reference_page
>>> entry = {e.name: e for e in reference_page.entries(["basics"])}["weight_bytes"]
>>> entry.call, entry.latex, entry.chapters
('formulas.basics.weight_bytes()', 'b N', ('ch-intro', 'ch-quantities'))
>>> print(*(line for line in reference_page.markdown(["basics"]).splitlines() if "#" in line))
## Introduction: Inference Arithmetic ### `formulas.basics`

Each formulas module names the chapters that derive it in its docstring ("Derived in chapter
06."); the page links them. A module whose docstring names no chapter, or a chapter the book
does not have, is an error that names the module: the page has no section without its chapter.
The chapters' labels are read from the book's sources (``_toc.yml`` and the chapters it lists),
so this module works in the book's repository, not from an installed library alone.

A presentation module: ``import inference_arithmetic`` does not import it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import sympy

from inference_arithmetic import formulas
from inference_arithmetic.core import cache
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.models.config import model, model_names

__all__ = [
    "REPRESENTATIVE",
    "Entry",
    "Form",
    "chapter_labels",
    "entries",
    "markdown",
    "summary",
]

# The model a function of an architecture is shown for: a plain dense model.
REPRESENTATIVE = "llama-3.1-8b"


class Placeholder(sympy.Symbol):
    """An expression argument (a positive quantity), printed as its name in upright type."""

    def __new__(cls, name):
        return super().__new__(cls, name, positive=True)

    def _latex(self, printer):
        return r"\mathrm{" + self.name.replace("_", r"\_") + "}"


def _block(moe):
    """A stand-in for a per-layer quantity, for the functions that sum one over the layers."""
    return sympy.Function("block")(Placeholder("MoE" if moe else "dense"))


# Arguments that are functions, not expressions: the stand-in each is shown with.
CALLABLE_ARGUMENTS = {"block": _block}


@dataclass(frozen=True)
class Form:
    """One form of a function of an architecture, and the registry models that have it."""

    latex: str
    models: tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    """One public formula function, as the page shows it.

    ``latex`` is the formula for the representative model (or placeholders); ``example`` the
    docstring call shown instead of the plain one, if any; ``forms`` every distinct form over
    the registry's models (a function of an architecture), in the registry's order, the
    representative's included; ``chapters`` the labels of the chapters deriving its module.
    """

    module: str
    name: str
    call: str
    sentence: str
    latex: str
    example: str | None
    forms: tuple[Form, ...]
    chapters: tuple[str, ...]

    @property
    def of_architecture(self) -> bool:
        """Whether the function takes an architecture (and so has a form per model)."""
        return bool(self.forms)


def _arguments(function, arch):
    """The required arguments of a formula function: the architecture, or placeholders."""
    kwargs = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.default is not parameter.empty:
            continue
        if parameter.name == "arch":
            kwargs["arch"] = arch
        elif parameter.name in CALLABLE_ARGUMENTS:
            kwargs[parameter.name] = CALLABLE_ARGUMENTS[parameter.name]
        else:
            kwargs[parameter.name] = Placeholder(parameter.name)
    return kwargs


def _docstring_example(module, name):
    """The function's own docstring example, ``>>> name(...)``, evaluated like the doctest
    (earlier ``>>>`` lines first): the call, and what it returns. None if it has none."""
    namespace = dict(vars(module))
    for line in re.findall(r"^>>> (.*)$", _docstring(getattr(module, name)), re.M):
        if line.startswith(f"{name}("):
            return line, eval(line, namespace)
        exec(line, namespace)
    return None


def _latex(value, arch=None):
    """LaTeX of what a formula function returns: an expression, a tuple, a dict of terms, a
    kernel of a step (its time, times its count) or a function of the kind of layer (dense or
    mixture of experts)."""
    if isinstance(value, formulas.kernels.Kernel):
        return sympy.latex(value.count * value.time)
    if isinstance(value, tuple) and value and isinstance(value[0], formulas.kernels.Kernel):
        return _latex({kernel.name: kernel for kernel in value})
    if callable(value) and not isinstance(value, sympy.Basic):
        layers = {"dense layer": value(False)}
        if arch is not None and arch.is_moe:
            layers["MoE layer"] = value(True)
        return _latex(layers)
    if isinstance(value, dict):
        rows = [rf"\text{{{key}}} &: {_latex(term)}" for key, term in value.items()]
        return r"\begin{aligned}" + r" \\ ".join(rows) + r"\end{aligned}"
    if isinstance(value, list | tuple):
        return r"\left(" + ", ".join(_latex(item) for item in value) + r"\right)"
    return sympy.latex(sympy.sympify(value))


def _shown(module, name, arch):
    """The formula's LaTeX for ``arch``, and the example call used, if not the plain one."""
    function = getattr(module, name)
    try:
        return _latex(function(**_arguments(function, arch)), arch), None
    except Exception as error:
        # An argument a placeholder cannot stand for (an expression in a given symbol, say):
        # show the function as its own docstring example calls it.
        example = _docstring_example(module, name)
        if example is None:
            raise RuntimeError(
                f"formulas.{_short(module)}.{name}: cannot be shown with placeholder"
                f" arguments ({error}) and its docstring has no example call; give it one, or"
                " teach _arguments() in inference_arithmetic.page.reference_page what to pass"
            ) from error
        return _latex(example[1], arch), example[0]


def _short(module):
    return module.__name__.rsplit(".", 1)[1]


def _docstring(obj) -> str:
    """``obj``'s docstring (a module's or a function's), read from its module's file: the page
    that prints it reads that file, and the book's executor (tools/execute.py), which keys the
    pages on the library's code without its docstrings and on the files each page reads, runs
    this page again when a docstring changes. An object made at run time, with no file, gives
    its ``__doc__``."""
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        return inspect.getdoc(obj) or ""
    tree = ast.parse(textwrap.dedent(source))
    return ast.get_docstring(tree if inspect.ismodule(obj) else tree.body[0]) or ""


def _first_paragraph(obj):
    """The first paragraph of a docstring, on one line."""
    return " ".join(_docstring(obj).split("\n\n")[0].split())


def _escape(text):
    # Docstrings are plain text: "6*N*T" is a product, not emphasis, and "$" is not math.
    return text.replace("\\", "\\\\").replace("*", r"\*").replace("$", r"\$")


def summary(obj) -> str:
    """The first paragraph of a docstring, on one line, safe to print as Markdown.

    >>> def product():
    ...     '''Six N T: 6*N*T, at $2 per hour.'''
    >>> print(summary(product))
    Six N T: 6\\*N\\*T, at \\$2 per hour.
    """
    return _escape(_first_paragraph(obj))


def _book_root():
    """The folder holding _toc.yml: above the working directory, or above the library."""
    for start in (Path.cwd(), Path(__file__).resolve()):
        for folder in (start, *start.parents):
            if (folder / "_toc.yml").exists():
                return folder
    raise FileNotFoundError(
        "the formula reference links the book's chapters, but no _toc.yml was found above the"
        f" working directory ({Path.cwd()}) or the library ({Path(__file__).parent}):"
        " run it in the book's repository"
    )


def chapter_labels() -> dict[str, str]:
    """Chapter number ("06") -> its cross-reference label ("ch-kv-cache"), from the book."""
    return {number: label for number, (label, _) in _chapter_heads().items()}


def _chapter_heads() -> dict[str, tuple[str, str]]:
    """Chapter number -> (its label, its title), read from the chapters the book's _toc.yml
    lists."""
    root = _book_root()
    text = (root / "_toc.yml").read_text()
    files = re.findall(r"file:\s*(\S+)", text) + re.findall(r"^root:\s*(\S+)", text, re.M)
    heads = {}
    for file in files:
        number = re.match(r"book/(\d\d)-", file)
        source = root / f"{file}.md"
        if number and source.exists():
            head = re.search(r"^\((ch-[\w-]+)\)=\n# (.+)$", source.read_text(), flags=re.M)
            if head:
                heads[number.group(1)] = head.groups()
    return heads


def _cite(label, labels):
    """A chapter cited in a sentence: "chapter 06" (linked), not its full title."""
    number = next(n for n, known in labels.items() if known == label)
    what = "the introduction" if number == "00" else f"chapter {number}"
    return f"{{ref}}`{what} <{label}>`"


def _chapters(module, labels):
    """The labels of the chapters a module's docstring says derive it ("Derived in ...")."""
    where = f"formulas.{_short(module)}"
    sentence = re.search(r"Derived in (.*?)\.(?:\s|$)", _docstring(module), re.S)
    numbers = re.findall(r"\b(\d\d)\b", sentence.group(1)) if sentence else []
    if sentence and "introduction" in sentence.group(1):
        numbers.insert(0, "00")
    if not numbers:
        raise ArgumentError(
            f"{where}: its docstring names no chapter; say which chapters derive it, in a"
            ' sentence like "Derived in chapter 06." (the formula reference links them)'
        )
    unknown = [n for n in numbers if n not in labels]
    if unknown:
        raise ArgumentError(
            f"{where}: its docstring says it is derived in chapter {', '.join(unknown)}, but"
            f" the book has no such chapter with a label (it has {', '.join(sorted(labels))})"
        )
    return tuple(labels[n] for n in dict.fromkeys(numbers))


def _public_functions(module):
    """The names of the functions a module exports (its constants are left out)."""
    return [name for name in module.__all__ if inspect.isfunction(getattr(module, name))]


# Each entry once a process: the page and the tests that read it ask for the same entries, and
# an entry of a function of an architecture prints it for every registry model.
@functools.cache
def _entry(module, name, chapters):
    function = getattr(module, name)
    takes_arch = "arch" in inspect.signature(function).parameters
    models = tuple(model(model_name) for model_name in model_names()) if takes_arch else ()
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):  # made at run time, with no file: not kept
        shown = _shown_forms(_short(module), name, None, models)
    else:
        shown = cache.data(_shown_forms, _short(module), name, source, models)
    return Entry(
        module=_short(module),
        name=name,
        call=f"formulas.{_short(module)}.{name}{inspect.signature(function)}",
        sentence=_first_paragraph(function),
        latex=shown["latex"],
        example=shown["example"],
        forms=tuple(Form(form, tuple(names)) for form, names in shown["forms"]),
        chapters=chapters,
    )


def _shown_forms(module_name, name, source, models) -> dict:
    """A function's LaTeX on the page, kept in the disk cache (``core.cache.data``): the
    formula for the representative model (or placeholders), the example call shown instead of
    the plain one, if any, and for a function of an architecture each of its forms over
    ``models`` (the registry's) with the names of the models that have it: the LaTeX of every
    model's form of every formula, seconds of SymPy that the page and the library's tests of it
    print alike. ``source`` is the function's, in the key: its docstring's example may be what
    is shown (the cache's key leaves docstrings out of the library's code), and a function put
    in a module at run time (a test's) is keyed by its own code."""
    module = getattr(formulas, module_name)
    tex, example = _shown(module, name, model(REPRESENTATIVE) if models else None)
    forms = {}
    # A formula composed of others on the page (a step's sum of its kernels) is shown for the
    # representative model only: its forms are those of its parts.
    if models and name in getattr(module, "COMPOSED", ()):
        forms[tex] = [REPRESENTATIVE]
    else:
        for arch in models:
            forms.setdefault(_shown(module, name, arch)[0], []).append(arch.name)
    return {"latex": tex, "example": example, "forms": [[f, names] for f, names in forms.items()]}


def _modules(names):
    return [
        (name, getattr(formulas, name)) for name in (formulas.__all__ if names is None else names)
    ]


def entries(modules: list[str] | None = None) -> list[Entry]:
    """One ``Entry`` per public function of the given formulas modules (default: all)."""
    return list(_entries(tuple(_modules(modules))))


@functools.cache
def _entries(modules: tuple[tuple[str, object], ...]) -> tuple[Entry, ...]:
    # Built once in a process for the same modules, by name and object (frozen entries, a
    # tuple): ``markdown`` and whoever reads the entries beside it (the appendix's tests)
    # share them, each the LaTeX of every registry model's form of every formula.
    labels = chapter_labels()
    return tuple(
        _entry(module, name, _chapters(module, labels))
        for _, module in modules
        for name in _public_functions(module)
    )


def _math(tex):
    """A display equation; a long sum on several lines (``format.latex_lines``)."""
    return ["$$", tex if tex.startswith(r"\begin") else fmt.latex_lines(tex), "$$", ""]


def _entry_markdown(entry):
    """One function: its call, its docstring's first paragraph, its formula and, for a
    function of an architecture, the other forms it takes across the registry."""
    lines = [f"`{entry.call}`", f": {_escape(entry.sentence)}", ""]
    if entry.example:
        lines += [f"Shown as its docstring example calls it, `{entry.example}`:", ""]
    lines += _math(entry.latex)
    if not entry.of_architecture:
        return lines
    others = [form for form in entry.forms if form.latex != entry.latex]
    if not others and len(entry.forms[0].models) == 1:
        return lines  # composed of formulas above, whose forms differ by architecture
    if not others:
        return lines + ["The same for every model of the registry.", ""]
    count = f"{len(others)} other form" + ("s" if len(others) > 1 else "")
    lines += [
        f":::{{admonition}} Differs by architecture: {count}",
        ":class: dropdown ia-lazy-math",
    ]
    same = [
        name
        for form in entry.forms
        if form.latex == entry.latex
        for name in form.models
        if name != REPRESENTATIVE
    ]
    if same:
        lines += [f"The form above holds for: {', '.join(same)}.", ""]
    for form in others:
        lines += [f"**{', '.join(form.models)}**", ""] + _math(form.latex)
    return lines + [":::", ""]


def markdown(modules: list[str] | None = None) -> str:
    """The page's MyST text: every public formula function, by module, the modules under the
    chapter that derives them first (in the book's order), with a list of those chapters."""
    heads = _chapter_heads()
    labels = {number: label for number, (label, _) in heads.items()}
    arch = model(REPRESENTATIVE)
    by_chapter = {}  # the chapter's number: its modules, in the package's order
    for module_name, module in _modules(modules):
        first = _chapters(module, labels)[0]
        number = next(n for n, label in labels.items() if label == first)
        by_chapter.setdefault(number, []).append((module_name, module))
    order = sorted(by_chapter)
    lines = [
        f'Functions of an architecture are shown for `ia.model("{REPRESENTATIVE}")`: a'
        f" {arch.ffn} feed-forward block, {arch.n_kv_heads} key/value heads for"
        f" {arch.n_heads} query heads, {'tied' if arch.tied_embeddings else 'untied'}"
        f" embeddings, {arch.norm.upper()}Norm. Its source is in its `.source`.",
        "",
        "The formulas by the chapter that first derives them:",
        "",
        *(
            f"- {{ref}}`{_heading(number, heads)} <{_anchor(labels[number])}>`: "
            + ", ".join(f"`formulas.{name}`" for name, _ in by_chapter[number])
            for number in order
        ),
        "",
    ]
    records = entries(modules)
    for number in order:
        lines += [f"({_anchor(labels[number])})=", f"## {_heading(number, heads)}", ""]
        for module_name, module in by_chapter[number]:
            references = ", ".join(_cite(label, labels) for label in _chapters(module, labels))
            lines += [
                f"### `formulas.{module_name}`",
                "",
                summary(module),
                f"Derived in {references}.",
                "",
            ]
            for entry in records:
                if entry.module == module_name:
                    lines += _entry_markdown(entry)
    return "\n".join(lines)


def _heading(number, heads) -> str:
    """A chapter's group on the page: "Chapter 06: The KV cache" (the introduction's, 00)."""
    what = "Introduction" if number == "00" else f"Chapter {number}"
    return f"{what}: {heads[number][1]}"


def _anchor(label) -> str:
    """The page's label of a chapter's group of formulas: ``formulas-ch-kv-cache``."""
    return f"formulas-{label}"
