"""Compiled formulas kept on disk between processes: a model's first calculation in a fresh
process reads its compiled code instead of building and compiling SymPy expressions again.

>>> from inference_arithmetic.formulas import mlp
>>> both = formulas("mlp-example", lambda: {"forward": mlp.forward_flops()})
>>> both(batch=1, d_1=2, d_2=3, d_3=2)
{'forward': 24.0}

The cache lives in ``$IA_CACHE_DIR``, else ``$XDG_CACHE_HOME/inference-arithmetic``, else
``~/.cache/inference-arithmetic``; ``IA_CACHE_DIR=off`` turns it off. Entries sit in a folder
named after a hash of the library's source and the SymPy and NumPy versions, so a changed
library never reads an old entry. A folder that cannot be written, or an entry that cannot be
read, only costs the compile: the formulas are built as if there were no cache.
``ia.serving.warm()`` and ``ia.timing.warm()`` (which ``make`` runs when it sets up the
environment) compile the calculator's formulas, the steady state's step and the keyword
functions' formulas of every registry model ahead of their first use. ``formulas`` keeps
formulas compiled together for single numbers, ``formula`` one for arrays (as ``numeric``
compiles it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import sympy

from inference_arithmetic.core.numeric import CompiledFormula, CompiledFormulas

__all__ = ["formulas", "formula", "data", "folder"]


@functools.cache
def _fingerprint(root: Path) -> str:
    """A hash of the library's source and data files and of the SymPy and NumPy versions.
    Reading every file costs milliseconds a process: the hash is kept in ``root`` under the
    files' sizes and modification times (what Python trusts for its own bytecode cache), and a
    process whose files have the same ones reads it from there."""
    package = str(Path(__file__).parents[1])  # the whole library, not only serving/
    # os.walk and plain strings: pathlib's rglob took half the time of a first steady state.
    paths = sorted(
        (os.path.relpath(os.path.join(folder, name), package).replace(os.sep, "/"),
         os.path.join(folder, name))
        for folder, _, names in os.walk(package)
        for name in names
        if name.endswith((".py", ".json"))
    )  # fmt: skip
    versions = f"{sympy.__version__} {np.__version__}"
    signature = hashlib.sha256(versions.encode())
    for name, path in paths:
        stat = os.stat(path)
        signature.update(f"{name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    kept = root / "signatures" / signature.hexdigest()[:32]
    try:
        known = kept.read_text()
        if len(known) == 16 and all(c in "0123456789abcdef" for c in known):
            return known
    except OSError:
        pass  # not seen before: hash the files
    digest = hashlib.sha256(versions.encode())
    for name, path in paths:
        digest.update(name.encode())
        digest.update(Path(path).read_bytes())
    _store_text(kept, digest.hexdigest()[:16])
    return digest.hexdigest()[:16]


def folder():
    """Where this library's compiled formulas are kept, a ``pathlib.Path`` (None when the
    cache is off)."""
    root = os.environ.get("IA_CACHE_DIR")
    if root == "off":
        return None
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        root = Path(base) / "inference-arithmetic"
    return Path(root) / _fingerprint(Path(root))


def _path(key: str):
    where = folder()
    return where / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json") if where else None


def _store(path, parts) -> None:
    _store_text(path, json.dumps(parts))


def _store_text(path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as file:
            file.write(text)
        os.replace(file.name, path)  # whole or not at all, for a process reading it
    except OSError:
        pass


def formulas(key: str, build: Callable[[], dict]) -> CompiledFormulas:
    """The formulas ``build()`` returns, compiled together, read from the cache under ``key``
    (a text that names them uniquely, e.g. a model's repr) or compiled and stored there."""
    return _compiled(CompiledFormulas, key, build)


def formula(key: str, build: Callable[[], object]) -> CompiledFormula:
    """The one formula ``build()`` returns, compiled for arrays as ``numeric`` compiles it,
    read from the cache under ``key`` or compiled and stored there."""
    return _compiled(CompiledFormula, key, build)


def _compiled(kind, key, build):
    path = _path(key)
    if path is not None:
        try:
            return kind.from_parts(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError, SyntaxError):
            pass  # absent or unreadable: compile it
    compiled = kind(build())
    if path is not None:
        _store(path, compiled.parts())
    return compiled


def data(key: str, build: Callable[[], object]):
    """JSON-ready data ``build()`` returns (the calculator page's formulas, printed), read
    from the cache under ``key`` or built and stored there."""
    path = _path(key)
    if path is not None:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass  # absent or unreadable: build it
    built = build()
    if path is not None:
        _store(path, built)
    return built
