"""Serving: a deployment evaluated. A ``Scenario`` (scenario), its times (timing), a
continuously batching engine (continuous) and a workload of many lengths for it (lengths), its
cost (economics) and one report of it all (report).

``ia.serving.calculate`` and ``ia.serving.report`` are the report's; the other modules are
reached as ``ia.scenario``, ``ia.timing``, ``ia.continuous`` and ``ia.economics``.
"""

# Re-exported, with the one list of names, that module's __all__.
from inference_arithmetic.serving.report import *  # noqa: F403
from inference_arithmetic.serving.report import __all__  # noqa: F401
