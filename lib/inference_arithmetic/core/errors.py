"""The library's errors for its caller's input: ``ArgumentError``, and ``UnknownName`` for a
name that is not one of the valid choices.

They import nothing, so that what checks an input or lists a registry (``core.checks``,
``core.registry``, the command line's ``ia gpus``) imports no SymPy.
"""

__all__ = ["ArgumentError", "UnknownName"]


class ArgumentError(ValueError, TypeError):
    """A compiled formula got a missing, unknown or invalid argument.

    It is a ``ValueError`` (bad input, as everywhere in the library) and a ``TypeError``
    (what Python raises for a wrong keyword argument), so either ``except`` catches it.
    Every error the library raises for its caller's input is one (``UnknownName`` too).
    A scenario refused by one of its rules (``serving.rules.CHECKS``) carries the rule's name
    as ``check``: "fit" where the weights and the cache do not fit in memory, "heads",
    "layers", "experts" or "window"; a caller that expects one refusal can tell it from the
    others.
    """


class UnknownName(ArgumentError, KeyError):
    """A name that is not one of the valid choices: a model, a GPU, an engine, a format, a
    key. A ``KeyError``, as a dict's lookup raises, and an ``ArgumentError``; its message
    names what was asked for and the valid choices (or the close ones).

    >>> raise UnknownName("unknown gpu 'h100'; close matches: h100-sxm")
    Traceback (most recent call last):
    ...
    inference_arithmetic.core.numeric.UnknownName: unknown gpu 'h100'; close matches: h100-sxm
    """

    def __str__(self):
        return ValueError.__str__(self)  # the message as it is (a KeyError would quote it)


# Their public home is ``core.numeric``, where the library defined them first and which
# re-exports them: tracebacks, doctests and pickles name them there.
ArgumentError.__module__ = UnknownName.__module__ = "inference_arithmetic.core.numeric"
