"""The band every prediction carries: where eight of ten held-out measurements fell.

>>> lo, hi = band("tpot", 0.010)  # a predicted 10 ms per output token
>>> lo < 0.010 < hi
True
>>> band("request", 1000.0, speed=True)[1] > 1000.0 > band("request", 1000.0, speed=True)[0]
True

``data/bands.json`` holds, for each kind of prediction (the first token, each later token, a
whole request or run), the 10th and 90th percentiles of the validation set's residuals: the
measured time over the predicted one, on published runs no number of the library was fitted on
(``validation.residuals.bands`` computes them, ``make bands`` writes the file, and a test
recomputes it). A predicted time t is measured between low t and high t on eight runs of ten; a
predicted speed v between v / high and v / low. The band describes the kernel model at its
defaults (``step="kernels"``); chapter 13 derives it.

A prediction's band comes from the residuals of its own group (``GROUPS``: Blackwell GPUs, FP4
weights, MoE models, expert parallelism, disaggregated serving, prompts of 8,000 tokens or
more; ``groups_of`` derives them from the deployment, as ``validation.residuals`` derives each
measured row's). One in none of them takes the file's own bands: the residuals of the rows in
none either (``CORE``). One in some takes the band of the narrowest of them (fewest rows), if
every one of its groups is validated for that kind (``VALIDATED``: enough rows from more than
one source); else it has none, and says which group lacks the rows (``withheld``).

>>> band("tpot", 0.010, groups=("blackwell",)) is None  # too few Blackwell rows yet
True
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from inference_arithmetic.core import cache
from inference_arithmetic.core.dtypes import compute_format
from inference_arithmetic.core.errors import UnknownName
from inference_arithmetic.formulas.layouts import EXPERT_PARALLEL
from inference_arithmetic.models.config import weight_formats

__all__ = ["KINDS", "BAND", "PER_TOKEN", "GROUPS", "CORE", "LONG_PROMPT", "VALIDATED"]
__all__ += ["WORDS", "gpu_groups", "model_groups", "groups_of", "scenario_groups"]
__all__ += ["factors", "withheld"]
__all__ += ["bands", "band", "of", "note", "noted", "describe"]

KINDS = ("ttft", "tpot", "request")
"""The kinds of prediction a band is kept for: the time to first token, the time per output
token, and a whole request's time (or a run's throughput)."""

BAND: dict
"""A band's ends, for a predicted time and for a predicted speed, in ``predicted`` and the
kind's factors ``band_low`` and ``band_high``: a speed's run the other way. The library
evaluates them; the calculator's page prints them to JavaScript. Built on first use
(``__getattr__``): a band read back from the disk cache needs no SymPy."""


@functools.cache
def _band() -> dict:
    """``BAND``."""
    import sympy

    predicted = sympy.Symbol("predicted", positive=True)
    low, high = sympy.Symbol("band_low", positive=True), sympy.Symbol("band_high", positive=True)
    return {
        "time": {"low": predicted * low, "high": predicted * high},
        "speed": {"low": predicted / high, "high": predicted / low},
    }


def __getattr__(name):
    if name == "BAND":
        return _band()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PER_TOKEN = {"ttft": ("ttft", False), "tpot": ("tpot", False)}
"""The first token and each later one, as the predictions that carry a band name them: key ->
(kind, whether it is a speed). Each entry point adds its own whole-request keys."""


LONG_PROMPT = 8000
"""The prompt, in tokens, from which a deployment is in the long-prompt group: where the
validation set's errors grow (issue 35: about 30% at 8k to 16k tokens)."""

GROUPS = {
    "blackwell": "NVIDIA GPUs with FP4 tensor cores (Blackwell: B200, B300, GB200, GB300, RTX "
    "PRO 6000, RTX 5090, DGX Spark)",
    "fp4": "weights in an FP4 format (NVFP4, MXFP4)",
    "moe": "mixture-of-experts models",
    "expert-parallel": "the experts spread over the GPUs (expert parallelism)",
    "disaggregated": "prefill and decode on separate GPUs",
    "long-prompt": f"prompts of {LONG_PROMPT:,} tokens or more",
}
"""The groups a prediction or a measured row may belong to, each a regime the single band of
all rows would hide: name -> what puts a deployment in it (``groups_of``)."""

CORE = "core"
"""The rows and predictions in none of ``GROUPS``: dense models on the GPUs before Blackwell,
weights of 8 bits or more, colocated, prompts under ``LONG_PROMPT`` tokens."""

VALIDATED = {"rows": 30, "sources": 2}
"""When a group's residuals of one kind make a band: at least this many rows, from at least
this many sources (one source's runs share its setup, and its errors with it)."""


def gpu_groups(gpu) -> tuple:
    """The ``GROUPS`` a ``GPU`` puts a deployment in: ``blackwell`` for an NVIDIA GPU with FP4
    tensor cores."""
    return ("blackwell",) if gpu.vendor == "NVIDIA" and "fp4" in gpu.peak_flop_rate else ()


def model_groups(arch, dtype: str) -> tuple:
    """The ``GROUPS`` a model (a ``ModelConfig``) with weights in ``dtype`` puts a deployment
    in ("auto": as the checkpoint ships them, ``models.config.weight_formats``: gpt-oss's
    experts in MXFP4): ``fp4`` for weights of an FP4 format, ``moe`` for experts."""
    fp4 = any(compute_format(f) == "fp4" for f in weight_formats(arch, dtype).values())
    return ("fp4",) * fp4 + ("moe",) * arch.is_moe


def groups_of(arch, gpu, dtype: str, parallel: str, prompt_len, disaggregated=False) -> tuple:
    """The ``GROUPS`` a deployment is in (in their order; none: ``CORE``'s): of ``arch`` (a
    ``ModelConfig``) on ``gpu`` (a ``GPU``), weights in ``dtype`` (``model_groups``), with
    ``parallel``, prompts of ``prompt_len`` tokens, prefill and decode apart if
    ``disaggregated``."""
    member = set(gpu_groups(gpu)) | set(model_groups(arch, dtype))
    member |= {"expert-parallel"} if parallel in EXPERT_PARALLEL else set()
    member |= {"disaggregated"} if disaggregated else set()
    member |= {"long-prompt"} if prompt_len >= LONG_PROMPT else set()
    return tuple(name for name in GROUPS if name in member)


def scenario_groups(s, prompt_len=None) -> tuple:
    """``groups_of`` a made ``Scenario`` (colocated; at ``prompt_len`` if given)."""
    length = s.prompt_len if prompt_len is None else prompt_len
    return groups_of(s.model, s.gpu, s.dtype, s.parallel, length)


def _validated(entry) -> bool:
    return entry is not None and "low" in entry


def _source(kind: str, groups=()) -> dict | None:
    """The entry of ``bands()`` a prediction of ``kind`` in ``groups`` takes its band from
    (``factors``), with its ``low``, ``high`` and ``rows``; None where it takes none."""
    if kind not in KINDS:
        raise UnknownName(f"no band for {kind!r}; the kinds are: {', '.join(KINDS)}")
    if not groups:
        return bands()[kind]
    entries = [bands()["groups"].get(g, {}).get(kind) for g in groups]
    if not all(_validated(e) for e in entries):
        return None
    return min(entries, key=lambda e: e["rows"])


def factors(kind: str, groups=()) -> tuple[float, float] | None:
    """The band's ``low`` and ``high`` factors for a prediction of ``kind`` in ``groups``
    (``groups_of``): ``CORE``'s where it is in none, the narrowest validated group's where
    every group it is in is validated for ``kind``, else None."""
    entry = _source(kind, groups)
    return None if entry is None else (entry["low"], entry["high"])


WORDS = {"ttft": "the first token", "tpot": "the time per token", "request": "the request"}
"""Each of ``KINDS`` in words, as a note names it."""


def withheld(kinds, groups) -> str:
    """Why predictions of ``kinds`` (one kind, or several) in ``groups`` have no band, in one
    sentence: each group short of ``VALIDATED``, with its rows and sources of each kind."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    table = bands()["groups"]
    short = []
    for g in groups:
        counts = []
        for kind in kinds:
            entry = table.get(g, {}).get(kind) or {"rows": 0, "sources": 0}
            if not _validated(entry):
                rows, sources = entry["rows"], entry["sources"]
                counts.append(
                    f"{WORDS[kind]}: {rows} row{'s' * (rows != 1)} from {sources} "
                    f"source{'s' * (sources != 1)}"
                )
        if counts:
            short.append(f"{g} ({'; '.join(counts)})")
    need = f"{VALIDATED['rows']} rows from {VALIDATED['sources']} sources"
    return (
        f"no band for {', '.join(WORDS[kind] for kind in kinds)}: outside every validated "
        f"group; the validation set has too few measurements in {', '.join(short)}, and a band "
        f"needs {need}"
    )


@functools.cache
def bands() -> dict:
    """The shipped bands: ``quantiles``, and for each of ``KINDS`` its ``low`` and ``high``
    factors and the ``rows`` of the validation set they come from."""
    text = (resources.files("inference_arithmetic.serving") / "data" / "bands.json").read_text()
    return json.loads(text)


def band(kind: str, value: float, speed: bool = False, groups=()) -> tuple[float, float] | None:
    """The range, low to high, in which eight of ten held-out measurements fell for a
    prediction ``value`` of ``kind`` (seconds; a speed if ``speed``) in ``groups``
    (``groups_of``; none: ``CORE``), or None where no validated group holds it (``factors``);
    ``KeyError`` naming the kinds for another kind."""
    found = factors(kind, groups)
    if found is None:
        return None
    low, high = found
    ends = cache.formulas(_ends)(predicted=value, band_low=low, band_high=high)
    which = "speed" if speed else "time"
    return (ends[f"{which} low"], ends[f"{which} high"])


def _ends() -> dict:
    """Both kinds' ends, compiled together and kept on disk (``core.cache``): compiling them
    would be most of a fresh process's first ``calculate``."""
    return {f"{which} {end}": e for which, both in _band().items() for end, e in both.items()}


def of(result: dict, banded: dict[str, tuple[str, bool]], groups=()) -> dict:
    """The band of each prediction of ``result`` that ``banded`` names, as key -> (kind,
    whether it is a speed), for a deployment in ``groups`` (``groups_of``): None for a key
    whose kind no validated group holds."""
    return {
        key: band(kind, float(result[key]), speed, groups) for key, (kind, speed) in banded.items()
    }


def note(banded: dict[str, tuple[str, bool]], groups=()) -> str | None:
    """Why some predictions of ``banded`` (key -> (kind, whether a speed)) in ``groups`` have
    no band (``withheld``), or None where every kind has one."""
    missing = [
        kind for kind in dict.fromkeys(k for k, _ in banded.values()) if not factors(kind, groups)
    ]
    return withheld(missing, groups) if missing else None


def noted(result: dict, banded: dict[str, tuple[str, bool]], groups=()) -> dict:
    """``result`` with its ``band`` (``of``), and, where a kind has none, ``band_note``
    saying why (``note``)."""
    result["band"] = of(result, banded, groups)
    why = note(banded, groups)
    if why:
        result["band_note"] = why
    return result


def describe(groups=()) -> str | None:
    """What the bands of a prediction in ``groups`` are, in one sentence (the calculator prints
    it under its readout): the runs they come from counted, each kind's (``factors``); None
    where no kind has a band."""
    low, high = bands()["quantiles"]
    sources = [_source(kind, groups) for kind in KINDS]
    if not any(sources):
        return None
    rows = sum(entry["rows"] for entry in sources if entry)
    return (
        f"in brackets, where eight runs of ten would be measured: the {low * 100:.0f}th to "
        f"{high * 100:.0f}th percentile of the model's errors on {rows} published measurements "
        "it was never fitted on"
    )


def warm() -> None:
    """Compile and keep in the disk cache the bands' ends."""
    cache.formulas(_ends)
