"""The appendices keep up with the library: every public formula and every public module.

The formula reference (book/appendix-formulas.md) prints ``reference_page.markdown()``; these
tests call the module in-process, so they need no book build (the strict build checks that
the page executes and renders). The library reference (book/appendix-api.md) lists one
``automodule`` per module; a module added to the library without one fails here.
"""

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import types
from pathlib import Path

import jupytext
import pytest
import sympy

import inference_arithmetic
from inference_arithmetic import formulas
from inference_arithmetic.models.config import model, model_names
from inference_arithmetic.page import reference_page

BOOK = Path(__file__).resolve().parents[2] / "book"


@pytest.fixture(scope="module")
def records():
    """Every entry of the formula reference, by (module, function name)."""
    result = {}
    for entry in reference_page.entries():
        assert (entry.module, entry.name) not in result, f"{entry.call} is listed twice"
        result[entry.module, entry.name] = entry
    return result


@pytest.fixture(scope="module")
def page():
    """What the page prints."""
    return reference_page.markdown()


def _public_functions():
    for module_name in formulas.__all__:
        module = getattr(formulas, module_name)
        for name in module.__all__:
            if inspect.isfunction(getattr(module, name)):
                yield module_name, name


PUBLIC_FUNCTIONS = list(_public_functions())


@pytest.mark.parametrize("module_name, name", PUBLIC_FUNCTIONS)
@pytest.mark.slow
def test_every_public_formula_is_on_the_page_once(records, page, module_name, name):
    assert page.count(f"`formulas.{module_name}.{name}(") == 1
    assert records[module_name, name].call.startswith(f"formulas.{module_name}.{name}(")


@pytest.mark.slow
def test_the_page_lists_only_the_public_functions(records):
    # Constants in __all__ (MLA_FORMS, WIDTHS, ...) and private helpers are not entries.
    assert list(records) == PUBLIC_FUNCTIONS


@pytest.mark.slow
def test_every_formula_module_has_a_section(page):
    for module_name in formulas.__all__:
        assert page.count(f"\n### `formulas.{module_name}`\n") == 1


@pytest.mark.slow
def test_every_formula_module_names_its_chapter(records, page):
    # Each module's docstring says "Derived in chapter NN"; the page links that chapter.
    labels = reference_page.chapter_labels()
    assert labels, "no chapter labels found through _toc.yml"
    for section in page.split("### `formulas.")[1:]:
        heading, introduction = section.split("\n\n")[:2]
        assert "Derived in " in introduction, heading
    assert "{ref}`chapter 06 <ch-kv-cache>`" in page
    for entry in records.values():
        assert entry.chapters and set(entry.chapters) <= set(labels.values()), entry.call
    assert records["basics", "weight_bytes"].chapters == ("ch-intro", "ch-quantities")


@pytest.mark.slow
def test_the_modules_are_grouped_by_the_chapter_that_first_derives_them(records, page):
    # In the book's order, each chapter's group headed by its number and title, and listed with
    # a link at the top: the page can be navigated by chapter.
    labels = reference_page.chapter_labels()
    first = {module: entry.chapters[0] for (module, _), entry in records.items()}
    contents, *groups = page.split("\n## ")
    numbers = []
    for group in groups:
        heading = group.split("\n")[0]
        number = "00" if heading.startswith("Introduction: ") else heading.split()[1].rstrip(":")
        numbers.append(number)
        modules = [part.split("`")[0] for part in group.split("\n### `formulas.")[1:]]
        assert modules and all(first[name] == labels[number] for name in modules), heading
        anchor = f"formulas-{labels[number]}"
        assert f"({anchor})=\n## {heading}" in page and f"<{anchor}>`: " in contents
    assert numbers == sorted(numbers) and numbers[0] == "00" and "06" in numbers
    assert sum(group.count("\n### `formulas.") for group in groups) == len(formulas.__all__)


@pytest.mark.slow
def test_a_formula_is_printed_as_the_library_computes_it(page):
    # Llama 3.1 8B: keys and values for 8 KV heads, in every layer, for every cached token.
    assert "2 B b S d_h H_{kv} L" in page


@pytest.mark.slow
def test_architecture_variants_are_shown(records, page):
    # The KV cache of DeepSeek-V3 (MLA) differs from the dense model's; the page says so.
    kv = page.split("`formulas.kv_cache.kv_cache_bytes(")[1].split("`formulas.")[0]
    assert "Differs by architecture" in kv and "deepseek-v3" in kv
    entry = records["kv_cache", "kv_cache_bytes"]
    (mla,) = [form for form in entry.forms if "deepseek-v3" in form.models]
    assert mla.latex != entry.latex
    assert mla.latex == sympy.latex(formulas.kv_cache.kv_cache_bytes(model("deepseek-v3")))


def test_docstrings_are_escaped_for_markdown():
    def product():
        """Six N T: 6*N*T, at $2 per hour."""

    assert reference_page.summary(product) == r"Six N T: 6\*N\*T, at \$2 per hour."


def _call(module_name, name, arch):
    """The function called as the page calls it: the model, or a placeholder per argument."""
    function = getattr(getattr(formulas, module_name), name)
    return function(**reference_page._arguments(function, arch))


def _example(module_name, call):
    """What the docstring example ``call`` returns, after the docstring's earlier lines."""
    module = getattr(formulas, module_name)
    name = call.split("(")[0]
    namespace = dict(vars(module))
    for line in re.findall(r"^>>> (.*)$", inspect.getdoc(getattr(module, name)), re.M):
        if line == call:
            return eval(line, namespace)
        exec(line, namespace)
    raise AssertionError(f"{call} is not in the docstring of {name}")


def _pieces(value):
    """The expressions a composite result (terms, a tuple, a per-layer function, a kernel's
    time times its count) holds."""
    if isinstance(value, formulas.kernels.Kernel):
        return [value.count * value.time]
    if callable(value) and not isinstance(value, sympy.Basic):
        return _pieces(value(False))
    if isinstance(value, dict):
        return [piece for term in value.values() for piece in _pieces(term)]
    if isinstance(value, list | tuple):
        return [piece for item in value for piece in _pieces(item)]
    return [sympy.sympify(value)]


@pytest.mark.parametrize("module_name, name", PUBLIC_FUNCTIONS)
@pytest.mark.slow
def test_each_formula_is_the_latex_of_what_the_function_returns(records, module_name, name):
    entry = records[module_name, name]
    if entry.example:
        value = _example(module_name, entry.example)
    else:
        value = _call(module_name, name, model(reference_page.REPRESENTATIVE))
    if isinstance(value, sympy.Basic | int | float):
        assert entry.latex == sympy.latex(sympy.sympify(value))
    else:
        for piece in _pieces(value):
            assert sympy.latex(piece) in entry.latex, piece
    if isinstance(value, dict):
        for key in value:
            assert rf"\text{{{key}}}" in entry.latex


@pytest.mark.parametrize("module_name, name", PUBLIC_FUNCTIONS)
@pytest.mark.slow
def test_the_forms_cover_the_registry(records, module_name, name):
    entry = records[module_name, name]
    takes_arch = (
        "arch" in inspect.signature(getattr(getattr(formulas, module_name), name)).parameters
    )
    assert entry.of_architecture == takes_arch
    if not takes_arch:
        return
    shown = [model_name for form in entry.forms for model_name in form.models]
    if name in getattr(getattr(formulas, module_name), "COMPOSED", ()):
        # Composed of formulas shown per model: its own form for the representative only.
        assert shown == [reference_page.REPRESENTATIVE]
        return
    assert sorted(shown) == sorted(model_names()), "every model once"
    assert len({form.latex for form in entry.forms}) == len(entry.forms), "forms are distinct"
    (own,) = [form for form in entry.forms if reference_page.REPRESENTATIVE in form.models]
    assert own.latex == entry.latex
    if entry.example:
        return
    for form in entry.forms:
        value = _call(module_name, name, model(form.models[-1]))
        if isinstance(value, sympy.Basic):
            assert form.latex == sympy.latex(value), form.models


@pytest.fixture
def fresh_module(monkeypatch):
    """A formulas module added to the package: give it a docstring and functions."""

    def add(docstring, **functions):
        module = types.ModuleType("inference_arithmetic.formulas.fresh", docstring)
        module.__all__ = list(functions)
        for name, function in functions.items():
            setattr(module, name, function)
        monkeypatch.setattr(formulas, "fresh", module, raising=False)
        monkeypatch.setattr(formulas, "__all__", [*formulas.__all__, "fresh"])
        return module

    return add


def test_an_entry_read_back_from_the_disk_is_the_one_built_and_new_code_is_built_anew(
    tmp_path, monkeypatch
):
    from inference_arithmetic.core import cache

    monkeypatch.setenv("IA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("IA_CACHE_READ", raising=False)  # not the chapters' entries: this one's
    build = reference_page._entry.__wrapped__  # past the process's own memory of entries
    chapters = ("ch-kv-cache",)
    built = build(formulas.disaggregation, "kv_transfer_bytes", chapters)
    assert len(built.forms) > 1 and list((tmp_path / cache.fingerprint()).glob("*-data.json"))
    cache.forget()  # as a fresh process starts: the entry comes from the disk
    assert build(formulas.disaggregation, "kv_transfer_bytes", chapters) == built

    def tripled():
        """Three times N."""
        return 3 * sympy.Symbol("N")

    def also_tripled():  # the same name and docstring below, other code
        """Three times N."""
        return 4 * sympy.Symbol("N")

    monkeypatch.setattr(formulas.basics, "tripled", tripled, raising=False)
    assert build(formulas.basics, "tripled", chapters).latex == "3 N"
    also_tripled.__name__ = also_tripled.__qualname__ = "tripled"
    monkeypatch.setattr(formulas.basics, "tripled", also_tripled)
    assert build(formulas.basics, "tripled", chapters).latex == "4 N"


def test_a_function_added_to_a_module_appears(monkeypatch):
    def tripled():
        """Three times N."""
        return 3 * sympy.Symbol("N")

    basics = formulas.basics
    monkeypatch.setattr(basics, "tripled", tripled, raising=False)
    monkeypatch.setattr(basics, "__all__", [*basics.__all__, "tripled"])
    text = reference_page.markdown(["basics"])
    assert "`formulas.basics.tripled()`\n: Three times N.\n\n$$\n3 N\n$$" in text


@pytest.mark.slow
def test_a_module_added_to_the_package_appears(fresh_module):
    def square(x):
        """x squared."""
        return x**2

    fresh_module("Fresh formulas.\n\nDerived in chapter 06.", square=square)
    text = reference_page.markdown()
    cited = "Derived in {ref}`chapter 06 <ch-kv-cache>`."
    assert "### `formulas.fresh`\n\nFresh formulas.\n" + cited in text
    assert r"\mathrm{x}^{2}" in text


def test_a_module_without_a_chapter_is_an_error(fresh_module):
    fresh_module("Fresh formulas, derived nowhere.")
    with pytest.raises(ValueError, match=r"formulas\.fresh: its docstring names no chapter"):
        reference_page.markdown(["fresh"])


def test_a_module_derived_in_a_missing_chapter_is_an_error(fresh_module):
    fresh_module("Fresh formulas.\n\nDerived in chapter 99.")
    with pytest.raises(ValueError, match=r"formulas\.fresh: .* chapter 99"):
        reference_page.markdown(["fresh"])


def test_the_page_prints_the_module_and_shows_no_code():
    cells = jupytext.read(BOOK / "appendix-formulas.md").cells
    code = [cell for cell in cells if cell.cell_type == "code"]
    assert code, "the page has no code cell"
    for cell in code:
        tags = cell.metadata.get("tags", [])
        assert "remove-cell" in tags or "remove-input" in tags, cell.source
    assert "reference_page.markdown()" in code[-1].source
    assert "remove-input" in code[-1].metadata["tags"]
    assert sum(len(cell.source.splitlines()) for cell in code) < 10, "code belongs in the library"


@pytest.mark.slow
def test_the_reference_page_is_not_imported_by_the_library():
    # A presentation module, for the book: importing the library and loading its API (its
    # names load on first use) does not load it.
    check = "import sys, inference_arithmetic as ia; ia.calculate; print(sorted(sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True
    )
    assert "inference_arithmetic.formulas" in result.stdout
    assert "inference_arithmetic.page.reference_page" not in result.stdout


def _library_modules():
    """The library's public modules: its layers (the packages directly under it) and every
    module with an ``__all__`` (data folders have none)."""
    yield "inference_arithmetic"
    prefix = "inference_arithmetic."
    for info in pkgutil.walk_packages(inference_arithmetic.__path__, prefix=prefix):
        layer = info.ispkg and "." not in info.name.removeprefix(prefix)
        if layer or hasattr(importlib.import_module(info.name), "__all__"):
            yield info.name


NOT_DOCUMENTED = {
    # The live widgets' page half, the data their script (live.js) reads: ia.widgets is the API,
    # and the reference would print its FORMAT_RUNTIME, a script, whole.
    "inference_arithmetic.page.live",
    # The generator of the formula reference: that appendix is what it documents.
    "inference_arithmetic.page.reference_page",
}


@pytest.mark.parametrize("module", sorted(set(_library_modules()) - NOT_DOCUMENTED))
def test_every_module_is_in_the_library_reference(module):
    text = (BOOK / "appendix-api.md").read_text()
    assert re.search(rf"^\.\. automodule:: {re.escape(module)}$", text, flags=re.M), module


def test_the_glossary_is_a_glossary():
    text = (BOOK / "appendix-glossary.md").read_text()
    assert ":::{glossary}" in text
    terms = re.findall(r"^(\S[^\n]*)\n  \S", text, flags=re.M)
    assert len(terms) >= 30
