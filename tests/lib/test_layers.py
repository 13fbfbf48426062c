"""The package's layers: no module imports one of a higher layer, no import cycle is left, and
no module reaches into another module's private names.

The order, bottom up (README.md, "How the repository is organized"): core < formulas <
models, hardware < serving < validation, page < the package's ``__init__`` < exercises and
the command line (``cli``, run by ``__main__``); layers side by side (models and hardware,
validation and page, exercises and cli) import neither. Exercises sit above
``__init__``: they are the answer key, written against the public ``ia.*`` API as the chapters
are, and ``__init__`` loads them by name on first use without importing them. Every import
statement counts, at the top of a module or inside a function.

A leading underscore means "only this file uses it" (STYLE.md): a module that imports
another's ``_name``, or reads it as an attribute of that module (``continuous._Engine``,
``inference_arithmetic.serving.report._compiled``), couples itself to what the other module
may change without a word. What two modules share is public, documented, in ``__all__``.
"""

import ast
import functools
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "lib"
PACKAGE = LIB / "inference_arithmetic"
RANK = {
    "core": 0,
    "formulas": 1,
    "models": 2,
    "hardware": 2,
    "serving": 3,
    "validation": 4,
    "page": 4,
    "__init__": 5,
    "exercises": 6,
    "cli": 6,
    "__main__": 7,
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(LIB).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def layer(module: str) -> str:
    """The layer a module of the package belongs to: the package's first folder under the
    library, or ``__init__`` for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.cache
def _parsed(source: str) -> ast.Module:
    """``source`` parsed once: the tests below read every module's tree several times over
    (the graph three times, the reaches once), and parsing is most of their time. Only read."""
    return ast.parse(source)


def imports(source: str, module: str, is_package: bool) -> set[str]:
    """The modules of the library that ``source`` (the text of ``module``) imports: for
    ``from X import name``, the module ``X.name`` when there is one, else ``X``."""
    found = set()
    for node in ast.walk(_parsed(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("inference_arithmetic"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([base] if base else [])])
            if not base.startswith("inference_arithmetic"):
                continue
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULES else base)
    return found


def _binding(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` in ``module`` imports from."""
    base = node.module or ""
    if node.level:  # relative: from the module's own package
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([base] if base else [])])
    return base


def private(name: str) -> bool:
    """Whether ``name`` is private to its module: a leading underscore, not a dunder."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def reaches(source: str, module: str, is_package: bool) -> list[str]:
    """Every place ``source`` (the text of ``module``) uses another module's private name, as
    'line: module._name': ``from X import _name``, and ``_name`` read as an attribute of a
    name bound to another module of the library (``import X as m; m._name``, ``from P import
    X; X._name``, ``import inference_arithmetic; inference_arithmetic.X._name``)."""
    tree = _parsed(source)
    modules, found = {}, []  # local names bound to a library module -> that module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not alias.name.startswith("inference_arithmetic"):
                    continue
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:  # ``import a.b.c`` binds ``a``
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _binding(module, is_package, node)
            if not base.startswith("inference_arithmetic"):
                continue
            for alias in node.names:
                child = f"{base}.{alias.name}"
                if child in MODULES or child == "inference_arithmetic":
                    modules[alias.asname or alias.name] = child
                if private(alias.name) and base != module:
                    found.append(f"{node.lineno}: {child}")

    def resolved(node):
        """The library module an expression names (``m``, ``m.sub``), or None."""
        if isinstance(node, ast.Name):
            return modules.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = resolved(node.value)
            if parent is not None and f"{parent}.{node.attr}" in MODULES:
                return f"{parent}.{node.attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            owner = resolved(node.value)
            if owner is not None and owner != module:
                found.append(f"{node.lineno}: {owner}.{node.attr}")
    return sorted(set(found), key=lambda line: int(line.split(":")[0]))


def private_reaches(modules: dict[str, Path]) -> list[str]:
    """Every reach into another module's private names, as 'module:line: module._name'."""
    return [
        f"{name}:{line}"
        for name, path in modules.items()
        for line in reaches(path.read_text(), name, path.name == "__init__.py")
    ]


def graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {
        name: imports(path.read_text(), name, path.name == "__init__.py") - {name}
        for name, path in modules.items()
    }


def allowed(a: str, b: str) -> bool:
    """Whether module ``a`` may import module ``b``: from its own layer or a lower one, never
    from a layer beside it (models and hardware, validation and page stand apart)."""
    return layer(a) == layer(b) or RANK[layer(b)] < RANK[layer(a)]


def back_edges(edges: dict[str, set[str]]) -> list[str]:
    """Every import the layers forbid, as 'importer (layer) -> imported (layer)'."""
    return [
        f"{a} ({layer(a)}) -> {b} ({layer(b)})"
        for a, targets in sorted(edges.items())
        for b in sorted(targets)
        if not allowed(a, b)
    ]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of more than one module (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def test_every_module_has_a_layer():
    assert {layer(name) for name in MODULES} <= set(RANK)
    assert len(MODULES) > 40  # the walk found the package


def test_no_module_imports_a_higher_layer():
    assert back_edges(graph(MODULES)) == []


def test_no_import_cycle():
    assert cycles(graph(MODULES)) == []


@pytest.mark.parametrize(
    "module, source, bad",
    [
        # A cycle: a module that warms the report which uses it.
        (
            "inference_arithmetic.serving.scenario",
            "def warm():\n    from inference_arithmetic.serving import report\n",
            "cycle",
        ),
        # The disk cache is the core's: it compiles what it is given, never a report itself.
        (
            "inference_arithmetic.core.cache",
            "def warm():\n    from inference_arithmetic.serving import report\n",
            "back-edge",
        ),
        # Measurements are data: they may be read by serving code, never the other way up.
        (
            "inference_arithmetic.serving.timing",
            "from inference_arithmetic.validation import measurements\n",
            "back-edge",
        ),
        ("inference_arithmetic.core.format", "import inference_arithmetic.page\n", "back-edge"),
        ("inference_arithmetic.formulas.latency", "from ..models import config\n", "back-edge"),
        # Side by side is not below: hardware may not read a model, nor a page the validation.
        (
            "inference_arithmetic.hardware.gpus",
            "from inference_arithmetic import models\n",
            "back-edge",
        ),
        ("inference_arithmetic.page.live", "import inference_arithmetic.validation\n", "back-edge"),
    ],
)
def test_a_deliberate_back_edge_or_cycle_fails(module, source, bad):
    """The checks above see what they are for: one added import, and they report it."""
    edges = graph(MODULES)
    edges[module] = edges[module] | imports(source, module, False)
    if bad == "cycle":
        assert any(module in group for group in cycles(edges))
    else:
        assert any(line.startswith(module + " ") for line in back_edges(edges))


def test_no_module_uses_another_modules_private_names():
    found = private_reaches(MODULES)
    assert not found, "reaches into another module's private names:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "module, source",
    [
        ("inference_arithmetic.serving.planning", "from .continuous import _secret\n"),
        (
            "inference_arithmetic.page.live",
            "from inference_arithmetic.core import format\nformat._x\n",
        ),
        (
            "inference_arithmetic.cli",
            "import inference_arithmetic.serving.timing as timing\ntiming._secret()\n",
        ),
        (
            "inference_arithmetic.cli",
            "import inference_arithmetic\ninference_arithmetic.core.checks._x\n",
        ),
        (
            "inference_arithmetic.page.live",
            "from inference_arithmetic import core\ncore.format._x\n",
        ),
    ],
)
def test_a_deliberate_reach_into_private_names_fails(module, source):
    """One added line that reaches into another module's private name, and the rule reports
    it; the module's own private names, and dunders, are its own."""
    assert reaches(source, module, False), source


@pytest.mark.parametrize(
    "source",
    ["from inference_arithmetic.core import format\nformat.__doc__\n", "_own = 1\n_own\n"],
)
def test_a_modules_own_private_names_and_dunders_are_not_reaches(source):
    assert reaches(source, "inference_arithmetic.page.live", False) == []


def test_each_layer_says_what_lives_there():
    for folder in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").exists()):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
        assert doc and len(doc.split("\n\n")[0]) > 40, folder.name


# A module past this many lines holds more than one job (issue 33); the diagram gallery is a
# catalogue of independent drawings, one function each, and is the one exception.
MOST_LINES = 700
LONG_ALLOWED = {"page/diagrams.py"}


def test_each_module_is_short_and_says_its_job():
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        if name not in LONG_ALLOWED:
            assert text.count("\n") <= MOST_LINES, f"{name}: {text.count(chr(10))} lines"
        doc = ast.get_docstring(ast.parse(text))
        assert doc and len(doc.split("\n\n")[0]) > 30, f"{name} does not say its job"
