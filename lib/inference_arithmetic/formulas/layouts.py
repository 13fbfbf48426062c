"""The parallel layouts a step is split by, by name: plain names without SymPy, so that a
scenario's checks and the command line's choices read them without importing it
(``formulas.latency`` builds the formulas of each and names them there too)."""

__all__ = ["PARALLEL", "EXPERT_PARALLEL", "NO_EXPERTS"]

PARALLEL = ("tensor", "pipeline", "expert", "expert-dp")
"""The ways a step is split over n GPUs: tensor parallelism, a pipeline of stages, or an MoE
model's routed experts spread over them (``EXPERT_PARALLEL``)."""
EXPERT_PARALLEL = ("expert", "expert-dp")
"""The parallelisms that spread an MoE model's routed experts over the GPUs: attention split
by heads ("expert") or run by each GPU on its own requests ("expert-dp")."""
NO_EXPERTS = "expert parallelism needs an MoE model; {model} is dense"
"""The message for expert parallelism asked of a dense model."""
