"""The registries' shared machinery: JSON entries shipped with the package, and names.

>>> from inference_arithmetic.hardware.gpus import gpu_names
>>> "h100-sxm" in gpu_names()
True

``models`` and ``hardware`` keep one JSON file per model and per GPU, each with its sources.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator, Mapping
from importlib import resources

from inference_arithmetic.core.errors import ArgumentError, UnknownName

__all__ = ["Registry", "entries", "lookup"]


def entries(package: str) -> Iterator[dict]:
    """The JSON files of ``package`` (a folder of the library), parsed, in name order."""
    for path in sorted(resources.files(package).iterdir(), key=lambda p: p.name):
        if path.name.endswith(".json"):
            yield json.loads(path.read_text())


class Registry(Mapping):
    """The entries of ``package`` by name, each read and made (``make(entry)``) when first
    asked for, so that a process that uses one model reads one file, not the whole folder. A
    file is named after its entry (``h100-sxm.json`` holds ``"name": "h100-sxm"``)."""

    def __init__(self, package: str, make: Callable[[dict], object]):
        folder = resources.files(package)
        files = sorted(folder.iterdir(), key=lambda p: p.name)
        self._paths = {p.name.removesuffix(".json"): p for p in files if p.name.endswith(".json")}
        self._make, self._made = make, {}

    def __getitem__(self, name: str):
        if name not in self._made:
            entry = json.loads(self._paths[name].read_text())  # KeyError for an unknown name
            if entry.get("name") != name:
                raise ValueError(f"{self._paths[name]} holds {entry.get('name')!r}, not {name!r}")
            self._made[name] = self._make(entry)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, name) -> bool:
        return name in self._paths


def lookup(what: str, name, registry: Mapping, listing: str, own: str = ""):
    """``registry[name]``, or a ``KeyError`` naming close matches (``ArgumentError`` for
    something that is not a name): the one way the model and GPU registries answer. ``own``
    says how to pass one of one's own; both messages end with it."""
    if not isinstance(name, str):
        message = f"a {what} is a name from {listing} or an ia.{what}(name), got {name!r}"
        raise ArgumentError(message + (f"; {own}" if own else ""))
    try:
        return registry[name]
    except KeyError:
        close = difflib.get_close_matches(name, registry, n=3, cutoff=0.5)
        found = f"close matches: {', '.join(close)}" if close else f"{listing} lists them all"
        own = f"; {own}" if own else ""
        raise UnknownName(f"unknown {what} {name!r}; {found}{own}") from None
