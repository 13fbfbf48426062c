"""What a build reads of a model, so that models that agree on all of it share what was built.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Shape:
...     name: str
...     layers: int
...     gated: bool
>>> def build(shape):  # reads only whether the shape is gated
...     return "x * gate" if shape.gated else "x"
>>> small, large = Shape("small", 2, True), Shape("large", 80, True)
>>> shared(build, small) is shared(build, large)  # built once, for small
True
>>> Reads(build, small).values
{'gated': True}

A formula of the library is an expression of a model's sizes (symbols), so the models of one
family get the same formulas: the calculator's page prints those of 28 registry models in
about 20 builds (``page.calculator_data``). Which models share is derived, never typed: a build
runs on a copy of the model that records each field and property the build asks for, and a
later model is given the same result only where it has every one of those values. A build
must be a function of what it reads (no clock, no randomness, no state outside the model).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

__all__ = ["Reads", "shared"]

_OPEN: list[dict] = []
"""The reads being recorded, innermost last."""

_BUILT: dict[Callable, list] = {}
"""By build: what each build this process ran read, and what it returned (``shared``)."""


def shared(build: Callable, model):
    """``build(model)``, or what ``build`` returned in this process for a model that has every
    value ``build`` read of that one (``Reads``); ``model`` is a frozen dataclass."""
    done = _BUILT.setdefault(build, [])
    for reads, built in done:
        if reads.match(model):
            return built
    reads = Reads(build, model)
    done.append((reads, reads.built))
    return reads.built


class Reads:
    """``build(model)`` run on a copy of ``model`` that records what it reads: ``values``, each
    field and property asked for, by name, with its value (a property's own reads are not
    recorded: the build sees its value), every field where the instance's ``__dict__`` is
    read; ``built``, what ``build`` returned.

    The copy hashes as the model does (without recording) and equals only itself, so caches
    keyed on the model work inside the build and hold the copy apart from the model's own
    entries and from every other build's copy: a build run again, or another build of the same
    model, reads again what a cache inside it reads, rather than find the entry a copy equal
    to its own left there."""

    def __init__(self, build: Callable, model):
        self.values = {}
        cls = getattr(type(model), "_recorded", type(model))  # a copy's model's class
        copy = object.__new__(_recording(cls))
        _unrecorded(lambda: copy.__dict__.update(model.__dict__))
        _OPEN.append(self.values)
        try:
            self.built = build(copy)
        finally:
            _OPEN.pop()
        if _OPEN:  # a build inside another: what this one read, the other one read too
            for name, value in self.values.items():
                _OPEN[-1].setdefault(name, value)

    def match(self, model) -> bool:
        """Whether ``model`` has every value read."""
        return all(getattr(model, name) == value for name, value in self.values.items())


def _unrecorded(read: Callable):
    """``read()``, with nothing it reads recorded."""
    _OPEN.append({})
    try:
        return read()
    finally:
        _OPEN.pop()


@functools.cache
def _recording(cls: type) -> type:
    """A subclass of ``cls`` (a frozen dataclass) whose instances record what is read of them
    in the innermost open ``Reads``. A method's reads of the instance are recorded one by one;
    the name, hash and repr are ``cls``'s (a repr reads every field); an instance equals only
    itself (``Reads``)."""
    watched = {field.name for field in dataclasses.fields(cls)}
    watched |= {name for name in dir(cls) if isinstance(getattr(cls, name), property)}

    def __getattribute__(self, name):
        if not _OPEN or (name not in watched and name != "__dict__"):
            return object.__getattribute__(self, name)
        value = _unrecorded(lambda: object.__getattribute__(self, name))
        if name == "__dict__":  # vars(), copies: everything
            _OPEN[-1].update({f: value[f] for f in watched if f in value})
        else:
            _OPEN[-1].setdefault(name, value)
        return value

    def __hash__(self):
        return _unrecorded(lambda: cls.__hash__(self))

    def __eq__(self, other):
        return self is other

    namespace = {"__getattribute__": __getattribute__, "__hash__": __hash__, "__eq__": __eq__}
    namespace |= {"__qualname__": cls.__qualname__, "__module__": cls.__module__, "_recorded": cls}
    return type(cls.__name__, (cls,), namespace)
