"""Compiled formulas kept between calls and between processes, under a key derived from the
function that builds them and its arguments.

>>> from inference_arithmetic.formulas import mlp
>>> forward = formula(mlp.forward_flops)  # built and compiled, or read back from the disk
>>> forward(batch=1, d_1=2, d_2=3, d_3=2)
24.0
>>> key(mlp.params) == key(mlp.params, bias=False) != key(mlp.params, bias=True)
True
>>> formula(lambda: mlp.forward_flops())
Traceback (most recent call last):
...
TypeError: the cache keys a formula by the function that builds it: give a function defined ...

``formulas(build, *args, **keywords)`` compiles the dict of formulas ``build(*args,
**keywords)`` returns together, for single numbers; ``formula`` compiles one for arrays (as
``numeric`` does); ``data`` keeps JSON-ready data (the calculator page's formulas, printed).
Each is built once: ``key`` derives the key from the builder (a function defined at the top of
its module, by its module and name) and the arguments it is called with (defaults filled in),
each written out whole (``canonical``), so that a key can leave no input out. What is not
written out (an object of a type it does not know) is refused rather than keyed by a ``repr``
that might leave something out.

Within a process each key is built once; between processes the compiled code is kept in
``$IA_CACHE_DIR``, else ``$XDG_CACHE_HOME/inference-arithmetic``, else
``~/.cache/inference-arithmetic`` (``IA_CACHE_DIR=off`` turns the disk off), in a folder named
after ``fingerprint()``: the library's code and data and the SymPy, NumPy and Python versions,
so that a changed library never reads an old entry. A folder that cannot be written, or an
entry that cannot be read, only costs the compile. ``$IA_CACHE_READ`` names another such
cache, read where this one lacks an entry and never written: the tests keep a cache of their
own and read what the chapters compile meanwhile. ``ia.serving.warm()`` and
``ia.timing.warm()`` fill it ahead of first use (``make`` leaves that to the chapters and the
tests, each compiling what it uses).
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import hashlib
import inspect
import json
import os
import sys
import tempfile
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np

from inference_arithmetic.core.numeric import CompiledFormula, CompiledFormulas

__all__ = [
    "formulas",
    "formula",
    "data",
    "key",
    "canonical",
    "fingerprint",
    "content_hash",
    "folder",
    "forget",
]

KEPT = 1024
"""Builds kept in a process (the least recently used go first): every registry model's report,
step and checks, with room for a sweep's or a property test's own models."""

_kept: collections.OrderedDict = collections.OrderedDict()


def formulas(build: Callable[..., dict], *args, **keywords) -> CompiledFormulas:
    """The formulas ``build(*args, **keywords)`` returns (a dict of SymPy expressions),
    compiled together for single numbers."""
    return _kept_or_made("formulas", build, args, keywords)


def formula(build: Callable, *args, **keywords) -> CompiledFormula:
    """The one formula ``build(*args, **keywords)`` returns, compiled for arrays as
    ``numeric`` compiles it."""
    return _kept_or_made("formula", build, args, keywords)


def data(build: Callable, *args, **keywords):
    """The JSON-ready data ``build(*args, **keywords)`` returns: the same object at each call
    in a process, so not to be changed."""
    return _kept_or_made("data", build, args, keywords)


def forget() -> None:
    """Drop what this process keeps (the disk's entries stay): as a fresh process starts."""
    _kept.clear()


def key(build: Callable, *args, **keywords) -> str:
    """The key of ``build(*args, **keywords)``: a hash of the builder's module and name and of
    every argument (``canonical``), defaults filled in, so that two calls that build the same
    thing share it and any other input makes another."""
    return _hash(_call(build, args, keywords))


def canonical(value) -> str:
    """``value`` written out whole, with its type, as text: None, True and False, ints, floats
    (every digit) and strings; tuples, lists, mappings (sorted), sets; functions and classes
    by module and name; dataclasses by their type and every field (a ``ModelConfig``, a
    ``GPU``); NumPy numbers; SymPy objects by ``srepr``. Anything else is a ``TypeError``.

    >>> canonical((1, 1.0, True, "1", None))
    '(1,1.0,True,"1",None,)'
    """
    return _form(value)[0]


def _form(value) -> tuple[str, bool]:
    """``canonical``'s text of ``value``, and whether it can never change (no list, dict or
    set inside): a frozen dataclass of such fields keeps its text (``_frozen``)."""
    kind = type(value)
    if value is None or kind in (bool, int, float):
        return repr(value), True  # 1, 1.0 and True apart
    if kind is str:
        return _quoted(value), True
    kept = _frozen.get(id(value))
    if kept is not None and kept[0]() is value:
        return kept[1], True
    if kind in (tuple, list, set, frozenset):
        forms = [_form(v) for v in value]
        texts = [text for text, _ in forms]
        fixed = kind in (tuple, frozenset) and all(f for _, f in forms)
        if kind is tuple:
            return "(" + "".join(t + "," for t in texts) + ")", fixed
        if kind is list:
            return "[" + ",".join(texts) + "]", False
        return "set(" + ",".join(sorted(texts)) + ")", fixed
    if isinstance(value, Mapping):
        items = [(_form(k), _form(v)) for k, v in value.items()]
        text = "{" + ",".join(sorted(f"{k}:{v}" for (k, _), (v, _) in items)) + "}"
        fixed = isinstance(value, MappingProxyType) and all(a and b for (_, a), (_, b) in items)
        return text, fixed
    if isinstance(value, np.generic):
        return f"numpy.{value.dtype}({value.item()!r})", True
    # A SymPy object exists only once SymPy is imported: a key of plain inputs (a model, a
    # GPU, names) is derived without importing it, as a warm command line's are.
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(value, sympy.Basic):
        return "sympy" + _quoted(sympy.srepr(value)), True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dataclass_form(value)
    if callable(value) and hasattr(value, "__qualname__"):  # a function or a class
        return f"<{_name(value, 'argument')}>", True
    raise TypeError(
        f"the cache cannot key an argument of type {kind.__module__}.{kind.__qualname__} "
        f"({value!r:.60}): give it as numbers, strings, containers of them, a dataclass, a "
        "function or a SymPy object"
    )


_quoted = json.encoder.encode_basestring_ascii  # a string in JSON's quotes, escaped
_frozen: dict[int, tuple[weakref.ref, str]] = {}
"""The text of each frozen dataclass whose fields can never change (a ``ModelConfig``, a
``GPU``), by identity while it lives: writing a model's forty fields out costs more than the
rest of a call's key."""


def _dataclass_form(value) -> tuple[str, bool]:
    # A field marked ``metadata={"key": False}`` feeds no formula (a model's count of MTP
    # modules): it leaves the key, and every key made before it was added, as they were.
    kept = [f for f in dataclasses.fields(value) if f.metadata.get("key", True)]
    forms = [(f.name, _form(getattr(value, f.name))) for f in kept]
    text = f"{_name(type(value), 'argument')}(" + ",".join(f"{n}={t}" for n, (t, _) in forms) + ")"
    fixed = type(value).__dataclass_params__.frozen and all(f for _, (_, f) in forms)
    if fixed:
        try:
            forgotten = functools.partial(_frozen.pop, id(value), None)
            _frozen[id(value)] = (weakref.ref(value, lambda _: forgotten()), text)
        except TypeError:
            pass  # no weak reference to it: written out at each call
    return text, fixed


def _name(function, role: str) -> str:
    """``function``'s module and name, if that is where its module holds it: a function
    defined at the top of a module (or a class there), not a lambda, a nested function or a
    bound method, whose name would not say what it does."""
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None)
    found = sys.modules.get(module) if isinstance(module, str) else None
    for part in (name or "<none>").split("."):
        found = getattr(found, part, None)
    if found is not function:
        raise TypeError(
            f"the cache keys a formula by the function that builds it: give a function defined "
            f"at the top of a module (its module and name are the key), not {function!r} as the "
            f"{role}"
        )
    return f"{module}:{name}"


@functools.lru_cache(maxsize=256)
def _parameters(build) -> tuple[str, inspect.Signature, dict | None, str | None]:
    """The builder's name and signature; for a builder whose parameters may each be given by
    position or by name, their defaults by name, in order, and the name of its ``**keywords``
    if it has one: what ``_call`` fills in without ``Signature.bind`` (None for another)."""
    name = _name(build, "build")
    signature = inspect.signature(build)
    parameters = list(signature.parameters.values())
    rest = parameters.pop().name if parameters and parameters[-1].kind is VAR_KEYWORD else None
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in parameters):
        return name, signature, None, None
    return name, signature, {p.name: p.default for p in parameters}, rest


VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD


def _call(build, args: tuple, keywords: dict) -> str:
    """The text of the call ``build(*args, **keywords)``: the builder's name and each of its
    parameters' values in order, defaults filled in (``canonical``)."""
    name, signature, defaults, rest = _parameters(build)
    values = None
    if defaults is not None and len(args) <= len(defaults):
        values = dict(zip(defaults, args, strict=False))
        more = {k: v for k, v in keywords.items() if k not in defaults}
        if any(k in values for k in keywords) or (more and rest is None):
            values = None  # a name given twice, or unknown: bind says which
        else:
            values = {k: keywords.get(k, values.get(k, d)) for k, d in defaults.items()}
            if any(v is inspect.Parameter.empty for v in values.values()):
                values = None  # a parameter missing: bind says which
            elif rest is not None:
                values[rest] = more
    if values is None:
        bound = signature.bind(*args, **keywords)
        bound.apply_defaults()
        values = bound.arguments
    return name + "(" + ",".join(f"{k}={_form(v)[0]}" for k, v in values.items()) + ")"


def _kept_or_made(kind: str, build, args, keywords):
    root = _root()
    found = (root, kind, _call(build, args, keywords))
    if found in _kept:
        _kept.move_to_end(found)
        return _kept[found]
    where = None if root is None else root / fingerprint()
    path = where / f"{_hash(found[2])}-{kind}.json" if where else None
    made = _read(kind, path) if path is not None else None
    if made is None and path is not None and (other := _other_root()) is not None:
        made = _read(kind, other / path.parent.name / path.name)  # another's: read only
    if made is None:
        from inference_arithmetic.core import evaluation  # SymPy: a miss builds with it

        with evaluation.once():
            built = build(*args, **keywords)
        made = built if kind == "data" else _COMPILED[kind](built)
        if path is not None:
            _write_text(path, json.dumps(made if kind == "data" else made.parts()))
    _kept[found] = made
    if len(_kept) > KEPT:
        _kept.popitem(last=False)
    return made


_COMPILED = {"formulas": CompiledFormulas, "formula": CompiledFormula}


def _read(kind: str, path: Path):
    """The entry at ``path``, or None if it is absent or unreadable (then it is compiled)."""
    try:
        parts = json.loads(path.read_text())
        return parts if kind == "data" else _COMPILED[kind].from_parts(parts)
    except (OSError, ValueError, KeyError, TypeError, SyntaxError):
        return None


def folder() -> Path | None:
    """Where this library's compiled formulas are kept, a ``pathlib.Path`` (None when the
    cache is off)."""
    root = _root()
    return None if root is None else root / fingerprint()


def _root() -> Path | None:
    """The cache's folder, of every version of the library (None when it is off)."""
    return _root_of(os.environ.get("IA_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"))


def _other_root() -> Path | None:
    """The cache read where this one lacks an entry (``$IA_CACHE_READ``; None when unset)."""
    other = os.environ.get("IA_CACHE_READ")
    return Path(other) if other else None


@functools.lru_cache(maxsize=16)
def _root_of(given: str | None, home: str | None) -> Path | None:
    if given == "off":
        return None
    if given:
        return Path(given)
    return Path(home or Path.home() / ".cache") / "inference-arithmetic"


LIBRARY = Path(__file__).parents[1]
"""The library's folder, which ``fingerprint`` hashes."""


@functools.cache
def fingerprint(package: Path | None = None, root: Path | None = None) -> str:
    """A hash of the library in ``package`` (by default this one): each module's code (its
    syntax tree without docstrings, so that neither a docstring nor a comment nor the layout
    changes it), every data file it ships, and the SymPy, NumPy and Python versions; 16
    hexadecimal digits.

    Hashing every module costs most of a second: the hash is kept in the cache's folder
    (``root``, by default the disk cache's) under the files' sizes and modification times,
    what Python trusts for its own bytecode, and so is each file's. A process whose files are
    those of one before it reads the fingerprint; after an edit, only the edited files are
    hashed again."""
    root = _root() if root is None else root
    package = LIBRARY if package is None else package  # not a default: the API page prints it
    paths = []
    for where, folders, names in os.walk(package):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in names:
            if not name.endswith((".pyc", ".pyo")):
                path = os.path.join(where, name)
                paths.append((os.path.relpath(path, package).replace(os.sep, "/"), path))
    versions = f"{_sympy_version()} {np.__version__} {sys.version_info[:2]}"
    stats = {}
    for name, path in sorted(paths):
        stat = os.stat(path)
        stats[name] = f"{name} {stat.st_size} {stat.st_mtime_ns}"
    signature = _hash(versions + "\n" + "\n".join(stats.values()))
    kept = _kept_hex(root / "signatures" / signature) if root else None
    if kept is not None:
        return kept
    digest = hashlib.sha256(versions.encode())
    for name, path in sorted(paths):
        file_kept = root / "files" / _hash(stats[name]) if root else None
        found = _kept_hex(file_kept) if file_kept else None
        if found is None:
            found = content_hash(path)
            if file_kept is not None:
                _write_text(file_kept, found)
        digest.update(f"{name} {found}\n".encode())
    if root is not None:
        _write_text(root / "signatures" / signature, digest.hexdigest()[:16])
    return digest.hexdigest()[:16]


def _sympy_version() -> str:
    """SymPy's version, read from its ``release.py`` without importing it (SymPy takes half a
    second to import, which a warm command line does not pay)."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("sympy")
    try:
        text = Path(spec.submodule_search_locations[0], "release.py").read_text()
        return re.search(r"""__version__\s*=\s*["']([^"']+)["']""", text).group(1)
    except (AttributeError, TypeError, IndexError, OSError):  # laid out otherwise: ask SymPy
        import sympy

        return sympy.__version__


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def content_hash(path: str | Path) -> str:
    """A module's syntax tree without its docstrings, or a data file's bytes, hashed (16
    hexadecimal digits): what a module does, not what it says (the book's executor keys its
    pages on the library's code by it, too)."""
    path = os.fspath(path)
    content = Path(path).read_bytes()
    if path.endswith(".py"):
        try:
            tree = _Undocumented().visit(ast.parse(content))
            content = ast.dump(tree, annotate_fields=False).encode()
        except SyntaxError:
            pass  # hashed as it is: importing it will say what is wrong
    return hashlib.sha256(content).hexdigest()[:16]


class _Undocumented(ast.NodeTransformer):
    """A syntax tree without its string statements: the docstrings of modules, classes and
    functions, and those under a constant's assignment, which do nothing when run."""

    def generic_visit(self, node):
        super().generic_visit(node)
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not _is_text(s)]
            node.body = kept or [ast.Pass()]  # a body that held only a docstring
        return node


def _is_text(statement) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))  # fmt: skip


def _kept_hex(path: Path) -> str | None:
    """The 16 hexadecimal digits kept at ``path``, or None."""
    try:
        text = path.read_text()
    except OSError:
        return None
    return text if len(text) == 16 and all(c in "0123456789abcdef" for c in text) else None


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a process may be reading it); a folder
    that cannot be written only costs the next process the compile."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as file:
            file.write(text)
        os.replace(file.name, path)
    except OSError:
        pass
