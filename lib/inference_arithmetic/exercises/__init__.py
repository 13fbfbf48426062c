"""Self-checking exercises: an answer compared with what the library computes from the
exercise's own inputs, with feedback that says what is likely wrong.

>>> print(check("ex-intro-bandwidth", bandwidth=None))
ex-intro-bandwidth: not answered yet (bandwidth: bytes per second)
>>> expected = answers("ex-intro-bandwidth")["bandwidth"]
>>> check("ex-intro-bandwidth", bandwidth=expected).correct
True
>>> print(check("ex-intro-bandwidth", bandwidth=expected / 2))
ex-intro-bandwidth, bandwidth: off by a factor of 2 (yours is half the answer): ...

Each chapter's exercises are in ``exercises.chNN`` (``EXERCISES`` holds them all, by the label
the book gives them). A part of an exercise is a number (with a unit and a tolerance), a
SymPy expression (checked with SymPy: equal when their difference simplifies to 0) or a
yes/no. The student edition of a chapter (``make notebooks``) replaces each solution by
``student_cell(label)``; the book checks every solution's own answer with ``check``.
"""

from __future__ import annotations

import functools
import importlib
import math
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import sympy

from inference_arithmetic.core.numeric import UnknownName

__all__ = ["Part", "Exercise", "Feedback", "EXERCISES", "register", "check", "answers"]
__all__ += ["student_cell", "labels", "written"]

KINDS = ("number", "symbolic", "yes/no")

EXACT = 1e-9
"""The tolerance of an exact count: only float rounding is forgiven."""

# Ratios of a wrong answer to the right one that have a usual cause, and what they say (the
# GB/GiB ones only for an answer in bytes). A part's own hint (Part.hints) is added to them.
COMMON = {
    2.0: "off by a factor of 2 (yours is twice the answer)",
    0.5: "off by a factor of 2 (yours is half the answer)",
    2**30 / 1e9: "yours is 7.4% high: is it in GB where GiB was asked (or the reverse)?",
    1e9 / 2**30: "yours is 6.9% low: is it in GiB where GB was asked (or the reverse)?",
}

# An answer given in another unit than the one asked, by how the asked unit begins: the unit
# it looks like, and how many of the asked unit one of it is. An answer of 3 GB where bytes
# were asked is 10^-9 of the answer; of 25 (a percentage) where a fraction was asked, 100
# times it. Longest first, so "bytes per second" is not read as "bytes".
SLIPS = {
    "dollars per million tokens": {"dollars per token": 1e6, "dollars per thousand tokens": 1e3},
    "fraction": {"a percentage": 0.01},
    "probability": {"a percentage": 0.01},
    "percent": {"a fraction": 100.0},
    "bytes": {"kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "MiB": 2**20, "GiB": 2**30},
    "GiB": {"bytes": 2**-30, "MiB": 2**-10, "TB": 1e12 / 2**30},
    "seconds": {"milliseconds": 1e-3, "microseconds": 1e-6, "minutes": 60.0, "hours": 3600.0},
    "FLOPs": {"GFLOPs": 1e9, "TFLOPs": 1e12, "PFLOPs": 1e15},
    "parameters": {"millions of parameters": 1e6, "billions of parameters": 1e9},
    "dollars": {"cents": 0.01},
}


@dataclass(frozen=True)
class Part:
    """One answer of an exercise: ``expected()`` computes it with the library, from the
    exercise's inputs, once a process. ``unit`` says what the number is in (words: "bytes",
    "seconds"); ``hints`` maps a ratio of a wrong answer to the right one (2, 0.5, 1e3, ...) to
    a question that teaches ("did you count both K and V?"), or is a function that returns such
    a mapping when a wrong answer first needs it (hints that take a computation)."""

    name: str
    expected: Callable[[], object]
    unit: str = ""
    kind: str = "number"
    tolerance: float = 0.01
    hints: Mapping[float, str] | Callable[[], Mapping[float, str]] = field(default_factory=dict)

    def __post_init__(self):
        # Each computed once, when first needed: every check of an exercise compares with
        # the answer, and a wrong answer may need the hints.
        object.__setattr__(self, "expected", functools.cache(self.expected))
        if callable(self.hints):
            object.__setattr__(self, "hints", functools.cache(self.hints))
        if self.kind not in KINDS:
            raise ValueError(f"Part {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class Exercise:
    """An exercise of the book (its ``label``) and the parts of its answer; ``written``: the
    questions it asks that are answered in words (each verbatim from the exercise's text),
    which the student edition gives a cell to write in beside the cell that checks."""

    label: str
    chapter: str
    parts: tuple[Part, ...]
    written: tuple[str, ...] = ()

    def part(self, name: str) -> Part:
        for part in self.parts:
            if part.name == name:
                return part
        raise UnknownName(f"{self.label} has no part {name!r}; its parts: {self.names()}")

    def names(self) -> str:
        return ", ".join(part.name for part in self.parts)


EXERCISES: dict[str, Exercise] = {}
"""Every self-checking exercise, by its label in the book."""


def register(chapter: str, label: str, *parts: Part, written: tuple[str, ...] = ()) -> Exercise:
    """Add an exercise to ``EXERCISES`` (each chapter module calls this for its own), with
    the questions of it answered in words (``written``), if any."""
    if label in EXERCISES:
        raise ValueError(f"exercise {label!r} is registered twice")
    if not parts:
        raise ValueError(f"exercise {label!r} needs at least one part")
    if isinstance(written, str):
        raise TypeError(f"exercise {label!r}: written is a tuple of questions, not one string")
    EXERCISES[label] = exercise = Exercise(label, chapter, tuple(parts), tuple(written))
    return exercise


def _exercise(label: str) -> Exercise:
    _load()
    try:
        return EXERCISES[label]
    except KeyError:
        raise UnknownName(
            f"no exercise {label!r}; the book's exercises: {', '.join(EXERCISES)}"
        ) from None


def labels() -> list[str]:
    """The labels of every self-checking exercise, in the book's order."""
    _load()
    return sorted(EXERCISES, key=lambda label: (EXERCISES[label].chapter, label))


def written(label: str) -> tuple[str, ...]:
    """The questions of exercise ``label`` answered in words (none for most)."""
    return _exercise(label).written


def answers(label: str) -> dict:
    """The right answer of each part of exercise ``label``, as the library computes it."""
    return {part.name: part.expected() for part in _exercise(label).parts}


@dataclass(repr=False)
class Feedback:
    """What ``check`` says: a line per part; ``correct`` when every part is right."""

    label: str
    lines: list[tuple[str, str, bool]]  # (part, what it says, right)
    answered: bool = True

    @property
    def correct(self) -> bool:
        return self.answered and all(right for _, _, right in self.lines)

    def __str__(self):
        if not self.answered:
            wanted = "; ".join(f"{name}: {text}" for name, text, _ in self.lines)
            return f"{self.label}: not answered yet ({wanted})"
        return "\n".join(f"{self.label}, {name}: {text}" for name, text, _ in self.lines)

    __repr__ = __str__  # what a notebook shows where it shows no HTML

    def _repr_html_(self):
        import html

        marks = {True: "&#10004;", False: "&#10008;"}
        rows = "".join(
            f"<li>{marks[right] if self.answered else '&#8230;'} <b>{html.escape(name)}</b>: "
            f"{html.escape(text)}</li>"
            for name, text, right in self.lines
        )
        return (
            f'<div class="ia-exercise-check"><b>{html.escape(self.label)}</b><ul>{rows}</ul></div>'
        )


def check(label: str, **given) -> Feedback:
    """Compare the answers ``given`` (one keyword per part) with the library's; never raises
    for an answer, so a notebook with blank answers (None) runs to the end."""
    exercise = _exercise(label)
    unknown = [name for name in given if name not in {p.name for p in exercise.parts}]
    if unknown:
        names = ", ".join(map(repr, unknown))
        raise UnknownName(f"{label} has no part {names}; its parts: {exercise.names()}")
    if all(given.get(part.name) is None for part in exercise.parts):
        lines = [(p.name, p.unit or p.kind, False) for p in exercise.parts]
        return Feedback(label, lines, answered=False)
    lines = []
    for part in exercise.parts:
        answer = given.get(part.name)
        if answer is None:
            lines.append((part.name, f"not answered yet ({part.unit or part.kind})", False))
            continue
        right, text = _judge(part, answer, part.expected())
        lines.append((part.name, text, right))
    return Feedback(label, lines)


def _judge(part: Part, answer, expected) -> tuple[bool, str]:
    if part.kind == "yes/no":
        if not isinstance(answer, bool):
            return False, "answer True or False"
        return (True, "right") if answer == expected else (False, "no: think again")
    if part.kind == "symbolic":
        try:
            # Typed as text, a formula's letters are the library's symbols (with their
            # assumptions), not new ones of the same name.
            names = {symbol.name: symbol for symbol in sympy.sympify(expected).free_symbols}
            given = sympy.sympify(answer, locals=names)
            mine = {s: names[s.name] for s in given.free_symbols if s.name in names}
            difference = sympy.simplify(expected - given.xreplace(mine))
        except (sympy.SympifyError, TypeError):
            return False, "give a SymPy expression"
        if difference == 0:
            return True, "right: equal to the library's formula"
        return False, f"not equal to the library's formula: yours lacks {difference}"
    return _number(part, answer, float(expected))


def _number(part: Part, answer, expected: float) -> tuple[bool, str]:
    unit = f" ({part.unit})" if part.unit else ""
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return False, f"give a number{unit}"
    if not math.isfinite(value):
        return False, f"give a finite number{unit}"
    if expected == 0:
        return (value == 0, "right" if value == 0 else f"the answer is 0{unit}")
    if math.isclose(value, expected, rel_tol=part.tolerance):
        return True, "right"
    ratio = value / expected
    if value == 0:
        return False, f"the answer is not 0{unit}"
    if ratio < 0:
        return (
            False,
            f"the sign is wrong: the answer is {'positive' if expected > 0 else 'negative'}",
        )
    hints = part.hints() if callable(part.hints) else part.hints
    # A mistake's ratio that is no ratio, or that the tolerance would pass, tells nothing.
    usable = {float(r): text for r, text in hints.items() if math.isfinite(r) and r > 0}
    usable = {r: text for r, text in usable.items() if abs(r - 1) > part.tolerance}
    hint = next((text for known, text in usable.items() if _near(ratio, known)), None)
    said = _describe(ratio, part.unit)
    return False, f"{said}: {hint}" if hint else said


def _near(ratio: float, known: float) -> bool:
    return math.isclose(ratio, known, rel_tol=0.02)


def _describe(ratio: float, unit: str) -> str:
    """How far off an answer ``ratio`` times the right one is, in the likeliest terms."""
    in_bytes = unit.split(" ")[0] in ("bytes", "GB", "GiB")  # not "FLOPs per byte"
    common = COMMON if in_bytes else {k: v for k, v in COMMON.items() if k in (2.0, 0.5)}
    for known, text in common.items():
        if _near(ratio, known):
            return text
    slip = _slip(ratio, unit)
    if slip:
        return slip
    decades = math.log10(ratio)
    # A power of 10 that no unit of SLIPS explains: a prefix (10^3k) in a unit that has them,
    # and for a unit not given, the likeliest slips. A count of GPUs 100 times too high is not
    # a percentage: it gets the plain factor below.
    share = unit.startswith(("fraction", "probability", "percent"))
    if abs(decades) >= 2.5 and abs(decades / 3 - round(decades / 3)) < 0.05 and not share:
        return (
            f"off by 10^{round(decades)}: check the prefix; the answer is in {unit or 'base units'}"
        )
    if abs(decades) >= 1.9 and abs(decades - round(decades)) < 0.02 and not unit:
        return (
            f"off by 10^{round(decades)}: a percentage where a fraction was asked, or the reverse?"
        )
    if 0.75 <= ratio <= 1.33:
        off = abs(ratio - 1)
        side = "high" if ratio > 1 else "low"
        return (
            f"right order of magnitude, {off:.{0 if off >= 0.01 else 2}%} {side}: check your inputs"
        )
    factor = ratio if ratio > 1 else 1 / ratio
    side = "too high" if ratio > 1 else "too low"
    return f"off by a factor of {factor:.3g}, {side}" + (f" (in {unit})" if unit else "")


def _slip(ratio: float, unit: str) -> str | None:
    """The unit an answer ``ratio`` times the right one looks like it is in, if it is one that
    ``SLIPS`` lists for ``unit``: "off by 10^-9: it looks like GB; the question asks for bytes"."""
    head = next(
        (asked for asked in sorted(SLIPS, key=len, reverse=True) if unit.startswith(asked)), None
    )
    if head is None:
        return None
    rest = unit[len(head) :].split(" (")[0]  # " per second" of "bytes per second"
    asked = f"a {unit}" if head in ("fraction", "probability") else unit
    for name, size in SLIPS[head].items():
        if _near(ratio, 1 / size):
            name = name if head in ("fraction", "probability", "percent") else name + rest
            return f"off by {_power(ratio)}: it looks like {name}; the question asks for {asked}"
    return None


def _power(ratio: float) -> str:
    """A ratio as a power of 10 where it is one (10^-9), else its value (1.07e-09)."""
    decades = math.log10(ratio)
    return (
        f"10^{round(decades)}"
        if abs(decades - round(decades)) < 0.01
        else f"a factor of {ratio:.3g}"
    )


def student_cell(label: str, name: str | None = None) -> str:
    """The code cell that replaces an exercise's solution in the student edition; ``name`` is
    the exercise as the book numbers it ("Exercise 6.2"), the label where not given.

    >>> print(student_cell("ex-intro-bandwidth", "Exercise 0.1").splitlines()[0])
    # Your answer to Exercise 0.1: replace each None, then run the cell.
    """
    exercise = _exercise(label)
    lines = [f"# Your answer to {name or label}: replace each None, then run the cell."]
    lines += [f'ia.exercises.check(\n    "{label}",']
    for part in exercise.parts:
        what = "True or False" if part.kind == "yes/no" else part.unit or part.kind
        lines.append(f"    {part.name}=None,  # {what}")
    return "\n".join(lines + [")"])


_LOADED = False


def _load() -> None:
    """Import every chapter's module (each registers its exercises), once."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for info in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{info.name}")
