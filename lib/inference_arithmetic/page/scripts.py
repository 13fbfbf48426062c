"""The page's JavaScript files, read from this folder: the runtimes that the live widgets and
the calculator carry into a page that has no Python behind it.

>>> "iaLive" in script("live.js")
True

``live.js`` renders a live widget (``live.live_html``); ``calculator.js`` interprets the
calculator's data (``calculator.Calculator.live_html``), with ``steady.js`` (``iaSteady``, the
steady state of a continuously batching engine over the data's formulas), ``plan.js``
(``iaPlan``, the plan's search over it), ``closed.js`` (``iaLoop``, a closed loop of users) and
``frontier.js`` (``iaFrontier``, the frontier over such loops). ``core/format.js`` prints
their numbers (``format.js_runtime``).
"""

from __future__ import annotations

import functools
import importlib.resources

__all__ = ["script"]


@functools.cache
def script(name: str) -> str:
    """The text of the page's script ``name`` (``live.js``, ``calculator.js``, ...), read once."""
    return importlib.resources.files(__package__).joinpath(name).read_text("utf-8")
