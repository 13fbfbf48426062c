"""Seconds, from the book's formulas, for a real model on a real GPU.

>>> import inference_arithmetic as ia
>>> m, g = ia.model("llama-3.1-70b"), ia.gpu("h100-sxm")
>>> round(decode_step_time(m, g, batch=1, context_len=2048, n_gpus=2), 3)  # kernel by kernel
0.03
>>> round(decode_step_time(m, g, context_len=2048, n_gpus=2, step="roofline"), 3)  # ch. 08
0.035

Every function makes a ``Scenario`` (which checks every argument once) and evaluates a SymPy
formula at its values: by default the kernel-level step model of ``formulas.kernels``, each
kernel at the GPU's measured rate (``GPU.achieved``) with the engine's fixed costs (``engine``,
``ia.engine_names()``); with ``step="roofline"``, chapter 08's single roofline of the whole
step (``formulas.latency``), at ``compute_efficiency`` and ``bandwidth_efficiency``, one set
for the whole book fitted in chapter 13 as a first approximation. An efficiency or a fixed cost
given as an argument replaces the measured one; ``IDEAL`` gives the ideal roofline of chapter
08. ``cache_dtype`` stores the KV cache in another dtype than the weights, and
``compute_dtype`` computes in another than they are stored in: weight-only int4 (AWQ, GPTQ)
is read at half a byte per weight and computed in bf16. Every function refuses a deployment
whose memory per GPU exceeds ``memory_utilization`` of the GPU's memory (as its driver reports
it).

``run(scenario)`` and ``in_waves(scenario)`` evaluate a ``Scenario`` made by hand; the keyword
functions are thin ways to make one.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from inference_arithmetic.core import cache, checks
from inference_arithmetic.core.numeric import ArgumentError, CompiledFormulas
from inference_arithmetic.core.symbols import T
from inference_arithmetic.formulas import latency
from inference_arithmetic.hardware.engines import engine as registry_engine
from inference_arithmetic.hardware.engines import engine_names
from inference_arithmetic.models.config import AUTO, model_names, weight_number_values
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.serving import bands, simulation
from inference_arithmetic.serving.efficiencies import (  # noqa: F401  (ia.timing.DEFAULT_*)
    DEFAULT_ATTENTION_EFFICIENCY,
    DEFAULT_BANDWIDTH_EFFICIENCY,
    DEFAULT_COMPUTE_EFFICIENCY,
)
from inference_arithmetic.serving.scenario import (  # noqa: F401  (DEFAULT_*: ia.timing.DEFAULT_*)
    DEFAULT_EXPERT_IMBALANCE,
    DEFAULT_LINK_LATENCY,
    DEFAULT_MEMORY_UTILIZATION,
    DEFAULT_NETWORK_BANDWIDTH,
    DEFAULT_STEP,
    DEFAULT_TOKEN_BUDGET,
    STEPS,
    Scenario,
    check_window,
    deployment_keywords,
    one_step,
)

# The DEFAULT_* settings are the scenario's and the efficiencies' (documented there), here as
# ia.timing.DEFAULT_*.
__all__ = [
    "PARALLEL",
    "IDEAL",
    "IDEAL_EFFICIENCIES",
    "ROOFLINE",
    "prefill_time",
    "decode_step_time",
    "generation",
    "serve",
    "weights_per_gpu",
    "max_batch",
    "compute_bound_batch",
    "run",
    "in_waves",
    "BURST_LIMIT",
    "PHASES",
    "kernels",
    "NO_PREFIX_IN_DECODE",
    "STEP_TOKENS",
    "PROMPT_NOT_CONTEXT",
    "CONTEXT_NOT_PROMPT",
    "warm",
]

PARALLEL = latency.PARALLEL
IDEAL_EFFICIENCIES = {
    "compute_efficiency": 1.0,
    "bandwidth_efficiency": 1.0,
    "attention_efficiency": 1.0,
}
"""The peak FLOP/s and the peak bandwidth, as the values of their efficiencies' symbols."""
ROOFLINE = {"step": "roofline"}
"""Chapter 08's single roofline of the whole step at its fitted efficiencies (chapter 13's
first approximation), for the chapters that derive it: ``**ia.timing.ROOFLINE``. The
library's default times a step kernel by kernel."""
IDEAL = {**ROOFLINE, **IDEAL_EFFICIENCIES}
"""The ideal roofline of chapter 08, one roofline of the whole step at the peak FLOP/s and the
peak bandwidth: ``**ia.timing.IDEAL``. (Messages between GPUs keep their latency: it is not
part of the roofline.)"""

# Stand-ins for the measured times that the request formulas combine.
_ttft, _tpot, _seconds = sympy.symbols("ttft tpot seconds", positive=True)


def _prefill(s: Scenario) -> float:
    prefill = cache.formula(s.timing.prefill_time, s.model, s.parallel, **s.formula_options)
    return prefill.from_values(s.values())


def _steps(s: Scenario, contexts, mla="absorbed"):
    """Decode-step times of the scenario's batch at each of ``contexts`` cached tokens
    (speculating: verification steps, each yielding ``Scenario.tokens_per_step`` tokens)."""
    step = cache.formula(s.timing.decode_step_time, s.model, mla, s.parallel, **s.formula_options)
    return np.broadcast_to(
        step.from_values({**s.values(), "context_len": contexts}), contexts.shape
    )


@deployment_keywords
def prefill_time(
    model, gpu, *, batch=1, prompt_len=2048, n_gpus=1, dtype=AUTO, **deployment
) -> float:
    """Seconds to prefill ``batch`` prompts of ``prompt_len`` tokens: the time to first token.

    With ``parallel="pipeline"`` the stages run one after another for a single batch, so the
    time is one GPU's (were it big enough) plus the hand-offs between stages.
    """
    deployment.update(batch=batch, n_gpus=n_gpus, dtype=dtype)
    return _prefill(one_step(model, gpu, "prompt_len", prompt_len, "prefill", **deployment))


@deployment_keywords
def decode_step_time(
    model, gpu, *, batch=1, context_len=2048, n_gpus=1, dtype=AUTO, mla="absorbed", **deployment
) -> float:
    """Seconds of one decode step for ``batch`` requests with ``context_len`` tokens cached:
    the time per output token of each of them (the step writes token ``context_len + 1``).
    Speculating (``speculative``), one verification step, which yields
    ``Speculative.tokens_per_step`` tokens of each request on average."""
    deployment.update(batch=batch, n_gpus=n_gpus, dtype=dtype)
    s = one_step(model, gpu, "context_len", context_len, "decode", **deployment)
    return float(_steps(s, np.asarray(s.prompt_len), mla))


def run(s: Scenario) -> dict[str, float]:
    """``generation`` of a ``Scenario``: its whole batch, from prompt to last token."""
    if s.in_waves:
        raise ArgumentError("run times one batch at once; a scenario in waves: in_waves(s)")
    ttft = _prefill(s)
    # The first output token comes out of the prefill; each further one takes a decode step,
    # with the context growing by one token a step (one step is timed even if none runs).
    contexts = np.arange(s.prompt_len, s.prompt_len + max(s.output_len - 1, 1))
    tpot = float(np.mean(_steps(s, contexts))) / s.tokens_per_step
    request_time = cache.formula(_request_time).from_values(
        {**s.values(), "ttft": ttft, "tpot": tpot}
    )
    throughput = cache.formula(latency.output_throughput, _seconds, s.parallel)
    return {
        "ttft": ttft,
        "tpot": tpot,
        "request_time": request_time,
        "throughput": throughput.from_values({**s.values(), "seconds": request_time}),
    }


def _request_time():
    return latency.request_time(_ttft, _tpot)


@deployment_keywords
def generation(
    model, gpu, *, batch=1, prompt_len=2048, output_len=256, n_gpus=1, dtype=AUTO, **deployment
) -> dict[str, float]:
    """A batch of identical requests from prompt to last token.

    Returns ``ttft``, the time to first token (the prefill), ``tpot``, the mean time per
    output token after the first (decode steps with the context growing from ``prompt_len``
    to ``prompt_len + output_len - 2``, each evaluated), ``request_time``, the end-to-end latency of
    a request (``latency.request_time``), in seconds, and ``throughput`` in output tokens per
    second (``latency.output_throughput``: with pipeline parallelism, n batches in flight keep
    every stage busy, so n times one batch's, latency unchanged).
    """
    workload = dict(batch=batch, prompt_len=prompt_len, output_len=output_len)
    return run(Scenario(model, gpu, **workload, n_gpus=n_gpus, dtype=dtype, **deployment))


BURST_LIMIT = {"requests": 25_000, "output tokens": 1 << 23}
"""The most requests, and output tokens in all, that ``serve`` times on a continuously batching
engine timed kernel by kernel: it follows that engine's schedule step by step
(``simulation.burst``), in time that grows with both (about a second at either limit). Waves
(a static engine, or ``step="roofline"``) are a closed form, of any count."""
TOO_MANY = (
    "requests must be at most {requests_limit:,}, and requests x output_len at most "
    "{tokens_limit:,} output tokens, on a continuously batching engine ({engine}) timed kernel "
    "by kernel, got {requests:,} x {output_len:,}: ia.serve follows its schedule step by step, "
    "in time that grows with both. A stream's closed form is ia.steady_state(model, gpu, "
    "requests_per_s=...); waves of any count are timed in closed form with step='roofline' "
    "or on a static engine ({static})"
)
"""The message for a burst past ``BURST_LIMIT``."""


def in_waves(s: Scenario) -> dict[str, float]:
    """``serve`` of a ``Scenario`` whose ``batch`` requests queue: in waves of as many as fit,
    or, on a continuously batching engine timed kernel by kernel, as that engine admits them
    (``simulation.burst``, within ``BURST_LIMIT``: ``TOO_MANY``)."""
    if not s.in_waves:
        s = s.replace(in_waves=True)
    if s.step == "kernels" and s.engine.batching == "continuous":
        most, tokens = BURST_LIMIT["requests"], BURST_LIMIT["output tokens"]
        if s.batch > most or s.batch * s.output_len > tokens:  # not left to run for hours
            static = (n for n in engine_names() if registry_engine(n).batching == "static")
            raise ArgumentError(
                TOO_MANY.format(
                    requests_limit=most,
                    tokens_limit=tokens,
                    engine=s.engine.name,
                    requests=s.batch,
                    output_len=s.output_len,
                    static=", ".join(map(repr, static)),
                )
            )
        r = simulation.burst(s)
        # The most requests the engine ran at once: its wave, as a static engine's batch.
        wave_size = r.pop("concurrency")
        waves = -(-s.batch // wave_size)  # the batch over the most at once, rounded up
        return {"waves": waves, "wave_size": wave_size, **r}
    values = {**s.values(), "context_len": s.prompt_len + s.output_len}
    draft = s.formula_options.get("draft")  # a draft model's weights and cache take room
    fit = int(
        cache.formula(latency.max_concurrency, s.model, s.parallel, draft).from_values(values)
    )
    wave_size = min(s.batch, fit)
    waves = cache.formula(latency.waves, s.model, s.parallel, draft).from_values(values)
    full, rest = divmod(s.batch, wave_size)
    first = run(s.replace(batch=wave_size, in_waves=False))
    elapsed = full * first["request_time"] + (
        run(s.replace(batch=rest, in_waves=False))["request_time"] if rest else 0.0
    )
    # The waves run one after another: the requests' tokens over the whole elapsed time.
    throughput = cache.formula(latency.output_throughput, _seconds, "tensor")
    return {
        "waves": int(waves),
        "wave_size": wave_size,
        "elapsed": elapsed,
        "throughput": throughput.from_values({**s.values(), "seconds": elapsed, "batch": s.batch}),
        "ttft": first["ttft"],
        "tpot": first["tpot"],
    }


@deployment_keywords
def serve(
    model, gpu, *, requests, prompt_len=2048, output_len=256, n_gpus=1, dtype=AUTO, **deployment
) -> dict[str, float]:
    """``requests`` identical requests sent at once to an engine whose KV cache holds only so
    many: it runs them in waves of at most ``wave_size`` requests, one after another.

    ``wave_size`` is the number of whole requests (prompt and output) whose cache fits in
    ``memory_utilization`` of the GPUs' memory beside the weights: a static engine's batch, a
    continuous engine's most requests at once. (It is not ``steady_state``'s ``concurrency``,
    the requests in the engine of a stream.) Returns ``waves``, ``wave_size``, ``elapsed``
    (seconds) and ``throughput`` (output tokens per second), the
    first wave's ``ttft`` and ``tpot`` (a continuous engine's: the mean over the requests), and
    their ``band``: for each, the range in which eight of ten held-out measurements of its
    group fell (``serving.bands``; None with ``step="roofline"``; a key's None where no
    validated group holds the deployment, ``band_note`` saying why). Waves are a closed form,
    of any number of requests; a continuous engine's schedule is followed step by step, within
    ``BURST_LIMIT`` (past it ``ArgumentError``, ``TOO_MANY``: ``ia.steady_state`` is a
    stream's closed form).
    """
    checks.count("requests", requests)
    workload = dict(batch=requests, prompt_len=prompt_len, output_len=output_len)
    deployment.update(n_gpus=n_gpus, dtype=dtype)
    s = Scenario(model, gpu, **workload, in_waves=True, **deployment)
    r = in_waves(s)
    if s.step != "kernels":
        return {**r, "band": None}
    return bands.noted(dict(r), SERVE_BANDED, bands.scenario_groups(s))


SERVE_BANDED = {**bands.PER_TOKEN, "elapsed": ("request", False), "throughput": ("request", True)}
"""The predictions of ``serve`` that carry a band: key -> (kind, whether it is a speed)."""


def weights_per_gpu(
    model, *, n_gpus: int = 1, dtype: str = AUTO, parallel: str = "tensor"
) -> float:
    """Bytes of weights each of ``n_gpus`` GPUs holds: split evenly with tensor parallelism; a
    pipeline's fullest stage's, ceil(L / n) whole layers (``latency.weight_bytes_per_gpu``);
    each group of weights in ``dtype``'s format ("auto": as the checkpoint ships)."""
    model = registry_model(model)
    values = {**model.sizes(), "n_gpus": checks.count("n_gpus", n_gpus)}
    values.update(weight_number_values(model, dtype))
    parallel = checks.choice("parallel", parallel, PARALLEL)
    return cache.formula(latency.weight_bytes_per_gpu, model, parallel).from_values(values)


@deployment_keywords
def max_batch(model, gpu, *, context_len=2048, n_gpus=1, dtype=AUTO, **deployment) -> int:
    """The most requests of ``context_len`` tokens (prompt and output, at least one each)
    whose KV cache fits beside the weights in ``memory_utilization`` of the GPUs' memory;
    0 if not even one does."""
    context_len = checks.count("context_len", context_len, low=2)
    check_window(registry_model(model), "context_len", context_len)
    workload = dict(prompt_len=context_len - 1, output_len=1, in_waves=True)
    try:
        s = Scenario(model, gpu, **workload, n_gpus=n_gpus, dtype=dtype, **deployment)
    except ArgumentError as error:
        if getattr(error, "check", None) == "fit":
            return 0
        raise
    values = {**s.values(), "context_len": context_len}
    draft = s.formula_options.get("draft")  # a draft model's weights and cache take room
    return int(
        cache.formula(latency.max_concurrency, s.model, s.parallel, draft).from_values(values)
    )


@deployment_keywords
def compute_bound_batch(
    model, gpu, *, context_len=2048, n_gpus=1, dtype=AUTO, limit=1 << 20, **deployment
) -> int | None:
    """The smallest batch at which a decode step's compute time reaches its memory time, or
    None if none up to ``limit`` does (the KV cache grows with the batch as fast as the
    FLOPs, so long contexts may never turn compute-bound). Memory is not checked: the answer
    may be a batch that does not fit."""
    limit = checks.count("limit", limit, high=1 << 40)
    deployment.setdefault("memory_utilization", 1.0)  # memory is not the question here
    deployment.update(n_gpus=n_gpus, dtype=dtype, in_waves=True)
    s = one_step(model, gpu, "context_len", context_len, "decode", **deployment)
    bound = cache.formula(_decode_bound, s.model)

    def compute_bound(batches):
        return bound.from_values({**s.values(), "batch": batches, "context_len": s.prompt_len})

    batches = np.unique(np.geomspace(1, limit, 2000).astype(int))
    found = np.nonzero(compute_bound(batches))[0]
    if not found.size:
        return None
    # Refine between the last memory-bound sample and the first compute-bound one.
    high = int(batches[found[0]])
    low = int(batches[found[0] - 1]) if found[0] else 1
    grid = np.arange(low, high + 1)
    return int(grid[np.nonzero(compute_bound(grid))[0][0]])


def _decode_bound(arch):
    return latency.compute_bound(
        latency.decode_compute_time(arch), latency.decode_memory_time(arch)
    )


@functools.lru_cache(maxsize=256)
def _kernel_rows(arch, parallel, mla, options=(), draft=None):
    """The step's kernels and their counts, FLOPs, bytes, roofline sides, seconds (each times
    its count) and bound, compiled together; with ``options`` (``kernels.OPTIONS``), the
    tokens each prompt prefills and, speculating with a draft, the draft's seconds."""
    from inference_arithmetic.formulas import kernels, techniques

    step = kernels.step_kernels(arch, parallel, mla, options)
    fields = {"prefilled": techniques.prefilled_tokens() if "prefix" in options else T}
    if draft is not None:
        fields["draft"] = kernels.draft_time(arch, parallel, mla, options, draft)
    for i, kr in enumerate(step):
        fields[f"{i} count"] = kr.count
        for name in ("flops", "nbytes", "compute", "memory", "time"):
            fields[f"{i} {name}"] = kr.count * getattr(kr, name)
        fields[f"{i} bound"] = kr.bound
    fields["fixed"] = kernels.fixed_cost(parallel)
    fields["host"] = kernels.host_wait(arch, parallel, mla, options)
    return step, CompiledFormulas({k: sympy.sympify(v) for k, v in fields.items()})


PHASES = ("decode", "prefill")


NO_PREFIX_IN_DECODE = (
    "prefix_hit_rate changes only a prefill (phase='prefill'): a decode step reads the whole "
    "cache, however much of it the prefix cache held"
)
"""The refusal of a prefix hit rate where it would change nothing."""


STEP_TOKENS = 2048
"""``kernels``' tokens by default: a decode step's ``context_len``, a prefill's ``prompt_len``."""

PROMPT_NOT_CONTEXT = (
    "a prefill (phase='prefill') computes a prompt of prompt_len tokens: give prompt_len, not "
    "context_len (the tokens a decode step has cached)"
)
"""The refusal of a decode step's length in a prefill: one name, one job."""

CONTEXT_NOT_PROMPT = (
    "a decode step (phase='decode') reads context_len tokens cached: give context_len, not "
    "prompt_len (a prefill's prompt, with phase='prefill')"
)
"""The refusal of a prefill's length in a decode step."""


@deployment_keywords
def kernels(
    model,
    gpu,
    *,
    batch=1,
    context_len=None,
    prompt_len=None,
    n_gpus=1,
    dtype=AUTO,
    phase="decode",
    mla="absorbed",
    **deployment,
) -> list[dict]:
    """One step kernel by kernel: a row per kernel, in the order the GPU runs them, with its
    name (``kernel``), ``kind``, the times the step runs it (``count``), and for all of them
    together their ``flops``, ``bytes``, the two sides of their roofline (``compute``: FLOPs at
    the kernel's rate; ``memory``: bytes at its bandwidth; seconds, without the fixed cost),
    ``bound`` and seconds on one GPU (``time``) (``formulas.kernels``). ``phase="decode"``: a
    decode step of ``batch`` requests with ``context_len`` tokens cached; ``"prefill"``: a
    prefill of ``batch`` prompts of ``prompt_len`` tokens. Each is ``STEP_TOKENS`` (2,048) unless
    given, and each phase refuses the other's length (``PROMPT_NOT_CONTEXT``,
    ``CONTEXT_NOT_PROMPT``). Where the engine runs the step op by op and the host's launches
    outlast the kernels, a row ``host launches`` holds the GPU's wait (``kernels.host_wait``).
    The last row, ``step``, is the engine's fixed cost of the step and of the requests it
    schedules; the seconds add up to the step's time.

    >>> table = kernels("llama-3.1-8b", "h100-sxm", batch=256, context_len=1024)
    >>> bound = {r["kernel"]: r["bound"] for r in table}
    >>> bound["feed-forward up"], bound["decode attention"]  # each kernel its own side
    ('compute', 'bandwidth')
    """
    phase = checks.choice("phase", phase, PHASES)
    if phase == "decode" and deployment.get("prefix_hit_rate"):
        raise checks.ArgumentError(NO_PREFIX_IN_DECODE)
    # A prefill's tokens are its prompt, a decode step's its cache: each phase takes its own
    # name, as every other entry point spells them, and refuses the other's.
    if phase == "prefill" and context_len is not None:
        raise checks.ArgumentError(PROMPT_NOT_CONTEXT)
    if phase == "decode" and prompt_len is not None:
        raise checks.ArgumentError(CONTEXT_NOT_PROMPT)
    name, tokens = ("context_len", context_len) if phase == "decode" else ("prompt_len", prompt_len)
    tokens = STEP_TOKENS if tokens is None else tokens
    deployment.update(batch=batch, n_gpus=n_gpus, dtype=dtype)
    s = one_step(model, gpu, name, tokens, phase, step="kernels", **deployment)
    context_len = s.prompt_len  # the formulas' length symbol, either phase's tokens
    step, compiled = _kernel_rows(s.model, s.parallel, mla, **s.formula_options)
    values = {**s.values(), "context_len": context_len, "decoding": 0, "prefill_tokens": 0}
    prompts = batch * compiled.from_values(values)["prefilled"]  # a prefill reads no cache
    decoding, prompts = (batch, 0) if phase == "decode" else (0, prompts)
    values.update(decoding=decoding, prefill_tokens=prompts)
    got = {k: float(v) for k, v in compiled.from_values(values).items()}
    rows = []
    for i, kr in enumerate(step):
        time = got[f"{i} time"]
        if time == 0:
            continue  # a kernel the phase does not run (a prefill's decode attention)
        work = got[f"{i} flops"] + got[f"{i} nbytes"]
        bound = "fixed" if work == 0 else ("compute" if got[f"{i} bound"] else "bandwidth")
        rows.append(
            {
                "kernel": kr.name,
                "kind": kr.kind,
                "count": round(got[f"{i} count"]),  # L, or the windowed layers
                "flops": got[f"{i} flops"],
                "bytes": got[f"{i} nbytes"],
                "compute": got[f"{i} compute"],
                "memory": got[f"{i} memory"],
                "bound": "link" if kr.kind == "collective" else bound,
                "time": time,
            }
        )
    if "draft" in got:  # the draft's passes, as one row
        zero = {"flops": 0.0, "bytes": 0.0, "compute": 0.0, "memory": 0.0}
        rows.append(
            {
                "kernel": "draft",
                "kind": "draft",
                "count": s.speculative.draft_len,
                **zero,
                "bound": "draft",
                "time": got["draft"],
            }
        )
    if got["host"] > 0:  # an eager step whose launches outlast its kernels: the GPU waits
        zero = {"flops": 0.0, "bytes": 0.0, "compute": 0.0, "memory": 0.0}
        rows.append(
            {
                "kernel": "host launches",
                "kind": "fixed",
                "count": 1,
                **zero,
                "bound": "host",
                "time": got["host"],
            }
        )
    # The engine's own time: tau_s a step, tau_r for each request it schedules.
    step = got["fixed"]
    rows.append(
        {
            "kernel": "step",
            "kind": "fixed",
            "count": 1,
            "flops": 0.0,
            "bytes": 0.0,
            "compute": 0.0,
            "memory": 0.0,
            "bound": "fixed",
            "time": step,
        }
    )
    return rows


def warm() -> int:
    """Compile and keep in the disk cache what the keyword functions evaluate for every
    registry model on the default step model, with tensor and pipeline parallelism: the
    prefill, the decode step and the requests that fit; the number of models."""
    # A model's first prefill_time or generation otherwise builds these in the call (seconds
    # each); ``make`` runs this beside ``ia.serving.warm`` and the page's, one process each.
    timing = STEPS[DEFAULT_STEP]
    for name in model_names():
        arch = registry_model(name)
        for parallel in ("tensor", "pipeline"):
            cache.formula(timing.prefill_time, arch, parallel)
            cache.formula(timing.decode_step_time, arch, "absorbed", parallel)
            cache.formula(latency.max_concurrency, arch, parallel, None)
        cache.formula(_decode_bound, arch)
    return len(model_names())
