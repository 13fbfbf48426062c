"""Serving: a deployment evaluated. A ``Scenario`` (scenario) and what its steps achieve
(efficiencies), its times (timing), one report of it all (report), many at once (sweep) and its
cost (economics); under a stream of requests, the queueing chain (queueing), the engine on it
(engine), the colocated steady state (continuous) and the disaggregated one (disaggregated),
a closed loop of users (closed) and the frontier of throughput per GPU against tokens per user
(frontier), the simulation that checks them (simulation), the targets they meet (targets) and
the plan that meets them cheapest (planning), of requests of one length or many (lengths).

``ia.serving.calculate`` and ``ia.serving.report`` are the report's; the other modules are
reached as ``ia.scenario``, ``ia.timing``, ``ia.continuous``, ``ia.simulation`` and the rest by
their names (the engine's as ``ia.serving.engine``: ``ia.engine`` names an engine's profile).
"""

# Re-exported, with the one list of names, that module's __all__.
from inference_arithmetic.serving.report import *  # noqa: F403
from inference_arithmetic.serving.report import __all__ as _report_names

__all__ = [*_report_names, "warm"]


def warm() -> int:
    """Compile and keep in the disk cache what a registry model's first calculation, steady
    state and plan would compile (each module its own: the checks, the report's formulas, the
    bands, the queueing chain's relations, the engine's step, the plan's cost); ``make`` runs
    it when it sets up the environment. The number of models."""
    from inference_arithmetic.models.config import model_names
    from inference_arithmetic.serving import bands, continuous, engine, planning, queueing, scenario

    # ``serving.report`` is the report's function here (re-exported above): its module by name.
    from inference_arithmetic.serving.report import warm as warm_report

    modules = (bands, scenario, queueing, engine, continuous, planning)
    for warm_one in (*(module.warm for module in modules), warm_report):
        warm_one()
    return len(model_names())
