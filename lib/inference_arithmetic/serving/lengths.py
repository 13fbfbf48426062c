"""Requests of many lengths: a workload given as sequences of prompt and output lengths (a
trace's, or draws from a distribution), each request one (prompt, output) pair, as
``ia.simulation.simulate`` draws them and as the steady state's chain takes them (chapter 10).

>>> w = Lengths.of([512, 1536], [64, 192])
>>> w.means, round(w.context, 1)  # (63 x 543 + 191 x 1631) / (63 + 191): decode-weighted
((1024.0, 128.0), 1361.1)

Which terms of the steady state need the distribution, and which only its means:

- the decoding requests and the prompt tokens a step are Little's law's, means only
  (``means``);
- a step's attention reads the decodes' caches, and a request of O tokens decodes for O - 1
  steps: the decodes hold long answers more often than the requests do, so their mean context
  is the decode-weighted one (``LENGTHS``, ``context``);
- a prefill of K prompts is a sum of K random lengths, and a queue waits longer behind steps
  that vary: each K's steps are a mixture over that sum (``sums``; the chain stays one on K);
- a request's first token waits for its own prompt to go through: its TTFT is a mixture over
  its prompt length (``prompts``, the bins of the distribution);
- its time per output token averages its own O - 1 steps, so the steps' noise spreads the
  short answers' TPOT more: a mixture over its output length (``outputs``).

The memory is the scenario's of the mean lengths: it admits requests while it holds as many
tokens as that many mean requests' caches, as ``simulate`` admits them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from inference_arithmetic.core import cache, checks
from inference_arithmetic.core.symbols import O, T
from inference_arithmetic.formulas import latency

__all__ = ["LENGTHS", "BINS", "NODES", "Lengths", "sequences", "sums"]

LENGTHS: dict
"""A request's decode steps and their context summed (``_lengths``, built on first use)."""


BINS = 16
"""Groups a distribution of lengths is cut into for the mixtures, narrower towards its long
end (the longest holds 1/256 of its share, ``cut``), each at its mean length. Prompts are cut
by their share of tokens: a long prompt's first token is the tail a p99 reads."""


def sequences(prompt_len, output_len):
    """The two lengths as integer arrays of one size (a single length repeated), checked;
    None when both are single lengths."""
    given = [np.atleast_1d(np.asarray(x)) for x in (prompt_len, output_len)]
    if all(x.size == 1 for x in given):
        return None
    for name, x in (("prompt_len", given[0]), ("output_len", given[1])):
        if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer) or (x < 1).any():
            raise checks.ArgumentError(
                f"{name} must be a whole number of tokens from 1 up, or a sequence of them"
            )
    sizes = {x.size for x in given if x.size > 1}
    if len(sizes) > 1:
        raise checks.ArgumentError(
            "prompt_len and output_len given as sequences must be of one length, to keep "
            f"their pairs; got {given[0].size} and {given[1].size}"
        )
    size = sizes.pop()
    return tuple(np.broadcast_to(x, size).astype(int) for x in given)


NODES = 6
"""Points each sum of prompts' tokens is kept at (``sums``), narrower towards its long end as
``BINS`` are, by share of tokens: an arrival lands in a prefill in proportion to its time, so
the long sums hold the waits a p99 reads, which points cut by share of prefills would leave
too few of (tests/lib/test_lengths.py holds both cuts against the simulation)."""


def cut(values, shares, groups, mass=None):
    """``groups`` groups of a distribution (``values`` with ``shares`` summing to 1), by the
    cumulative share of its ``mass`` (of each value; its shares if None), the i-th from
    1 - (1 - i / groups)^2 up (an atom split between groups where a cut falls in it, its share
    in proportion): each group's mean and share, so the mean is kept."""
    order = np.argsort(values, kind="stable")
    values, shares = np.asarray(values, float)[order], np.asarray(shares, float)[order]
    mass = shares if mass is None else np.asarray(mass, float)[order]
    mass = mass / mass.sum() if mass.sum() > 0 else shares
    edges = 1 - (1 - np.arange(groups + 1) / groups) ** 2
    below = np.concatenate([[0.0], np.cumsum(mass)])
    # Each atom's share in each group: its share times the part of its mass in the group's.
    low = np.maximum(below[:-1, None], edges[None, :-1])
    high = np.minimum(below[1:, None], edges[None, 1:])
    parts = np.maximum(high - low, 0.0) * (shares / np.maximum(mass, 1e-300))[:, None]
    share = parts.sum(axis=0)
    return (values @ parts) / np.maximum(share, 1e-300), share


def sums(values, shares, counts, nodes=NODES):
    """The distribution of the sum of k independent draws of a distribution (``values``,
    ``shares``), for each k of ``counts`` (0 up, in order), kept at ``nodes`` points (``cut``
    of the sum of the k - 1 draws' points and one more draw): two arrays, one row each. One
    value: a row of one point, k times it."""
    values, shares = np.asarray(values, float), np.asarray(shares, float)
    if len(values) == 1:
        return np.asarray(counts, float)[:, None] * values[0], np.ones((len(counts), 1))
    points, weights = np.zeros(nodes), np.full(nodes, 1.0 / nodes)
    rows = []
    for _ in counts:
        rows.append((points, weights))
        summed, share = (points[:, None] + values).ravel(), (weights[:, None] * shares).ravel()
        points, weights = cut(summed, share, nodes, share * summed)
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def _bins(lengths, by_tokens=False) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(mean length, share of requests) of each group of ``lengths``: each distinct length if
    there are at most ``BINS``, else ``BINS`` groups (``cut``) by their share of requests or,
    ``by_tokens``, of tokens, so that the tail a p99 reads keeps its own groups."""
    values, counts = np.unique(lengths, return_counts=True)
    shares = counts / counts.sum()
    if len(values) <= BINS:
        return tuple(map(float, values)), tuple(map(float, shares))
    means, shares = cut(values, shares, BINS, shares * values if by_tokens else None)
    return tuple(map(float, means)), tuple(map(float, shares))


@functools.cache
def _lengths() -> dict:
    """``LENGTHS``: a request's decode steps and their context summed. Over a workload, the
    decodes' mean context is the mean of the second over the mean of the first
    (``Lengths.context``). Built on first use (``__getattr__``), not at import: SymPy's first
    sum imports its tensor and combinatorics modules."""
    return {"decode_steps": O - 1, "decode_context": (O - 1) * latency.mean_context()}


def __getattr__(name):
    if name == "LENGTHS":
        return _lengths()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Lengths:
    """A workload's lengths, summarized for the steady state: their ``means`` (prompt,
    output), the decodes' mean ``context``, and the bins of the ``prompts`` and the ``outputs``
    (lengths, shares). Hashable, so the engines made for it are kept."""

    means: tuple[float, float]
    context: float
    prompts: tuple[tuple[float, ...], tuple[float, ...]]
    outputs: tuple[tuple[float, ...], tuple[float, ...]]

    @classmethod
    def of(cls, prompt_len, output_len, shortest=None) -> Lengths | None:
        """The summary of the pairs (``sequences``); None for two single lengths. ``shortest``,
        if given, is called with the shortest output length first (the steady state's
        ``continuous.check_decodes`` refuses one token: it never decodes)."""
        pairs = sequences(prompt_len, output_len)
        if pairs is None:
            return None
        prompts, outputs = pairs
        if shortest is not None:
            shortest(int(outputs.min()))
        summed = cache.formulas(_lengths).over(
            {T.name: prompts, O.name: outputs}
        )  # T: the prompt's
        return cls(
            means=(float(prompts.mean()), float(outputs.mean())),
            context=float(summed["decode_context"].mean() / summed["decode_steps"].mean()),
            prompts=_bins(prompts, by_tokens=True),
            outputs=_bins(outputs),
        )

    def scenario_lengths(self) -> tuple[int, int]:
        """The whole-token lengths of the scenario whose memory and steps serve them: the
        means, rounded (as ``simulate`` makes its scenario)."""
        return tuple(max(round(x), 1) for x in self.means)
