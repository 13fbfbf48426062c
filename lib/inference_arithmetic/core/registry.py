"""The registries' shared machinery: JSON entries shipped with the package, and names.

>>> from inference_arithmetic.hardware.gpus import gpu_names
>>> "h100-sxm" in gpu_names()
True

``models`` and ``hardware`` keep one JSON file per model and per GPU, each with its sources.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from importlib import resources

from inference_arithmetic.core.numeric import ArgumentError, UnknownName

__all__ = ["entries", "lookup"]


def entries(package: str) -> Iterator[dict]:
    """The JSON files of ``package`` (a folder of the library), parsed, in name order."""
    for path in sorted(resources.files(package).iterdir(), key=lambda p: p.name):
        if path.name.endswith(".json"):
            yield json.loads(path.read_text())


def lookup(what: str, name, registry: Mapping, listing: str):
    """``registry[name]``, or a ``KeyError`` naming close matches (``ArgumentError`` for
    something that is not a name): the one way the model and GPU registries answer."""
    if not isinstance(name, str):
        message = f"a {what} is a name from {listing} or an ia.{what}(name), got {name!r}"
        raise ArgumentError(message)
    try:
        return registry[name]
    except KeyError:
        close = difflib.get_close_matches(name, registry, n=3, cutoff=0.5) or list(registry)
        raise UnknownName(f"unknown {what} {name!r}; close matches: {', '.join(close)}") from None
