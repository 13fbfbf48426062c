"""One report over the whole library: memory, time, throughput, cost and bounds of a served model.

>>> r = calculate("llama-3.1-8b", "h100-sxm", batch=16)
>>> r["memory"]["fits"], r["bound"]["prefill"], r["bound"]["decode"]
(True, 'compute', 'bandwidth')
>>> r["throughput"] == 16 * 256 / r["request_time"]  # B O tokens in one request's time
True
>>> calculate("llama-3.1-405b", "h100-sxm")
Traceback (most recent call last):
...
inference_arithmetic.core.numeric.ArgumentError: llama-3.1-405b does not fit: needs 81... GB ...

Every number is a closed-form SymPy formula of ``report_formulas``, evaluated at a
``Scenario``'s values; the calculator's page (``ia.calculator``) prints the same formulas to
JavaScript. The time to first token is ``latency.prefill_time``; the time per output token is
``time_per_output_token`` of the step model (``formulas.kernels`` by default), a decode step
at the mean context of the O - 1 steps, exact while the step is linear in the context: each
kernel on one side of its roofline (the whole step's, with ``step="roofline"``) over the whole
output, and no sliding window filling up (``exact`` says whether it is; ``ia.generation`` sums
the steps one by one). Costs are
``formulas.economics`` at full utilization and ``price_per_hour`` (default: the GPU's dated
example price). Memory is the
weights, split n ways with tensor parallelism (a pipeline: its fullest stage's layers), the KV
cache of B requests of T + O tokens,
split by KV heads (``latency.kv_split``), and one step's activations, against
``memory_utilization`` of each GPU. Chapter 16 presents it; chapters 06
(KV cache), 08 (prefill and decode), 09 (batching), 10 (parallelism) and 12 (economics)
derive its formulas.

The formulas are built (in SymPy) only where the disk cache (``core.cache``) has not kept them
compiled: SymPy and the formulas modules are imported there, so that a warm ``ia calculate``
reads the compiled code and runs it with numpy alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inference_arithmetic.core import cache
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.numeric import ArgumentError, CompiledFormulas
from inference_arithmetic.formulas.layouts import EXPERT_PARALLEL
from inference_arithmetic.models.config import AUTO, model, model_names
from inference_arithmetic.serving import bands
from inference_arithmetic.serving.scenario import (
    DEFAULT_STEP,
    FIGURES,
    STEPS,
    Scenario,
    check_decodes,
    deployment_keywords,
)

if TYPE_CHECKING:  # the annotations' types; SymPy itself is imported where a formula is built
    import sympy

__all__ = [
    "BOUNDS",
    "THEN",
    "BANDED",
    "report_formulas",
    "report_values",
    "bound_text",
    "NETWORK_NOTE",
    "EXPERT_NETWORK_NOTE",
    "NETWORK_NOTES",
    "notes",
    "calculate",
    "report",
]

BOUNDS = ("bandwidth", "compute")
"""What bounds a step, by the value of its ``*_compute_bound`` formula (0 or 1)."""
THEN = ", then "
"""Joins the bounds of a decode whose bound changes during the output."""
NETWORK_NOTE = (
    "tensor parallelism over {n_gpus} GPUs spans more than one {gpu} link domain ({domain} "
    "GPUs): its all-reduces cross the network, at {network} per GPU, which adds {seconds} to "
    "each decode step ({share} of it). Pipeline parallelism across domains "
    "(parallel='pipeline') sends one hand-off per stage instead"
)
"""``calculate``'s note for tensor parallelism past the GPU's link domain."""
EXPERT_NETWORK_NOTE = (
    "expert parallelism over {n_gpus} GPUs spans more than one {gpu} link domain ({domain} "
    "GPUs): the all-to-alls of its MoE layers cross the network, at {network} per GPU, which "
    "adds {seconds} to each decode step ({share} of it)"
)
"""``calculate``'s note for expert parallelism past the GPU's link domain."""
NETWORK_NOTES = {
    "tensor": NETWORK_NOTE,
    **dict.fromkeys(EXPERT_PARALLEL, EXPERT_NETWORK_NOTE),
}
"""The note past one link domain, by parallelism (a pipeline hands off once a stage: none)."""
BANDED = {**bands.PER_TOKEN, "request_time": ("request", False), "throughput": ("request", True)}
"""The predictions of ``calculate`` that carry a band (``serving.bands``): key -> (the kind of
prediction, whether it is a speed)."""


def _flag(condition):
    """1 where ``condition`` holds, else 0: a number, so it compiles and compares like one."""
    import sympy

    return sympy.Piecewise((1, condition), (0, True))


def report_formulas(arch, step=DEFAULT_STEP, parallel="tensor", **options) -> dict[str, sympy.Expr]:
    """The formulas of ``calculate`` for ``arch`` with ``parallel`` (``latency.PARALLEL``),
    in T, O, B and the deployment's symbols (S is put in: T + O for memory, the mean context
    for the time per output token), its steps timed by ``STEPS[step]``: the same formulas
    ``ia.generation`` evaluates step by step. Costs are those of ``formulas.economics`` at
    full utilization (a pipeline's n batches in flight share the rent). The bounds are chapter
    08's: which side of the whole step's roofline is the longer. ``options``: a scenario's
    ``formula_options`` (prefix caching, speculative decoding), for the kernel model only."""
    import sympy

    from inference_arithmetic.core.evaluation import put
    from inference_arithmetic.core.symbols import B, B_d, L_w, M, O, P_t, R, S, T, W, n_gpus
    from inference_arithmetic.formulas import economics, kernels, latency

    timing = STEPS[step]
    whole = {S: T + O}  # the cache of a whole request
    ttft = timing.prefill_time(arch, parallel, **options)
    tpot = timing.time_per_output_token(arch, parallel=parallel, **options)
    full = {economics.u: 1}
    cost_input = put(economics.cost_per_million_input_tokens(ttft, parallel), full)
    cost_output = put(economics.cost_per_million_output_tokens(tpot, parallel), full)
    compute = latency.decode_compute_time(arch, parallel=parallel)
    memory = latency.decode_memory_time(arch, parallel)

    def decode(context):  # compute-bound at this context
        return latency.compute_bound(put(compute, {S: context}), put(memory, {S: context}))

    crosses = sympy.false
    if arch.n_window_layers:  # the window fills up during the output: S crosses W - 1
        crosses = sympy.And(T < W - 1, W - 1 < latency.last_context(), L_w > 0)
    first, last = _flag(decode(T)), _flag(decode(latency.last_context()))
    # The mean context is exact while the step is linear in S: one side of the whole step's
    # roofline throughout, or, kernel by kernel, one side of each kernel's own.
    same = sympy.Eq(first, last)
    if step == "kernels":
        decoding = {P_t: 0, B_d: B}
        step_kernels = kernels.step_kernels(arch, parallel)
        bends = [put(kr.bound, decoding) for kr in step_kernels]
        bends = [bound for bound in bends if S in bound.free_symbols]
        ends = (T, latency.last_context())
        same = sympy.And(*(sympy.Eq(*(put(bound, {S: end}) for end in ends)) for bound in bends))
    draft = options.get("draft")
    # A draft model's weights and cache (``latency.draft_bytes_per_gpu``): a row of their own,
    # only where there is one, so that the formulas of every other scenario stay as they were.
    drafted = {}
    if draft not in (None, "head"):
        drafted["draft"] = put(latency.draft_bytes_per_gpu(draft), whole)
    return {
        "weights": latency.weight_bytes_per_gpu(arch, parallel),
        "kv_cache": put(latency.cache_bytes_per_gpu(arch, parallel), whole),
        **drafted,
        "activations": latency.activation_reserve(arch),
        "memory": put(latency.memory_per_gpu(arch, parallel, draft), whole),
        "budget": latency.memory_budget(),
        "ttft": ttft,
        "tpot": tpot,
        "request_time": timing.generation_time(arch, parallel=parallel, **options),
        "throughput": timing.throughput(arch, parallel=parallel, **options),
        "cost_input": cost_input,
        "cost_output": cost_output,
        "cost_request": economics.request_cost(cost_input, cost_output),
        "cost_blended": economics.blended_cost(cost_input, cost_output),
        "prefill_compute_bound": _flag(
            latency.compute_bound(
                latency.prefill_compute_time(arch, parallel),
                latency.prefill_memory_time(arch, parallel),
            )
        ),
        "decode_compute_bound_first": first,
        "decode_compute_bound_last": last,
        "exact": _flag(sympy.And(same, sympy.Not(crosses))),
        "mean_context": latency.mean_context(),
        "gpus": R * n_gpus,
        "capacity": M,
    }


def compiled_report(arch, step=DEFAULT_STEP, parallel="tensor", **options) -> CompiledFormulas:
    """``report_formulas`` compiled together, kept in the disk cache (``core.cache``)."""
    return cache.formulas(report_formulas, arch, step, parallel, **options)


def bound_text(*flags) -> str:
    """The bounds of a phase, from its ``*_compute_bound`` values in order: one bound, or
    each in turn ("bandwidth, then compute")."""
    names = [BOUNDS[int(flag)] for flag in flags]
    return THEN.join(dict.fromkeys(names))


@deployment_keywords
def calculate(
    model,
    gpu,
    *,
    n_gpus: int = 1,
    dtype: str = AUTO,
    cache_dtype: str | None = None,
    batch: int = 1,
    prompt_len: int = 2048,
    output_len: int = 256,
    price_per_hour: float | None = None,
    **deployment,
) -> dict:
    """Memory per GPU, time to first token, time per output token, throughput, cost per
    million tokens and the limiting bound of ``batch`` identical requests of ``prompt_len``
    prompt and ``output_len`` output tokens, on ``n_gpus`` GPUs with tensor parallelism, or
    with ``parallel="pipeline"`` as a pipeline of ``n_gpus`` stages: each GPU holds its
    stage's layers (of the fullest stage), a request passes the stages in turn (the same time
    to first token and per output token as ``ia.generation``'s where ``exact``), and n batches
    in flight make the throughput. An MoE model's routed experts may be spread over the GPUs,
    E/n each, its attention split by heads (``parallel="expert"``) or data-parallel, each GPU
    with the whole attention and the cache of its own 1/n of the requests
    (``parallel="expert-dp"``); the busiest GPU takes ``expert_imbalance`` times the mean
    GPU's tokens.

    The arguments make a ``Scenario``, which checks them (``KeyError`` for an unknown model,
    GPU or a compute format without a FLOP rate; ``ArgumentError``, a ``ValueError``, naming
    the argument for everything else, including a model that does not fit in
    ``memory_utilization`` of the GPUs' memory, a request past its context window, and
    requests of one output token, which have no time per output token: ``ONE_TOKEN``, as
    ``steady_state`` refuses them; ``ia.prefill_time`` times such a request).

    Returns ``memory`` (bytes per GPU: ``weights``, ``kv_cache`` at prompt_len + output_len
    tokens, ``draft`` (speculating with a draft model: its weights and cache, in ``total``
    too), ``activations`` (the reserve for one step of the token budget), ``total``,
    ``budget``, ``capacity``, and ``fits``), ``ttft``, ``tpot``, ``request_time`` (seconds),
    ``throughput`` (output tokens per second), ``cost`` (USD per million tokens:
    ``input``, ``output`` and ``blended`` as ``formulas.economics.COST_KEYS`` says, ``blended``
    being ``request`` over the O output tokens; USD per ``request``, its T input and O output
    tokens at the ``input`` and ``output`` prices; and the ``price_per_hour`` with its
    ``price_date``: ``price_per_hour`` if given, with no date, else the GPU's example; None
    where neither is),
    ``bound`` (compute or bandwidth, for ``prefill`` and ``decode``; "bandwidth, then compute"
    if decode changes bound during the output), ``band`` (for ttft, tpot, request_time and
    throughput, the range in which eight of ten held-out measurements of its group fell,
    ``serving.bands``; None with ``step="roofline"``; a key's None where no validated group
    holds the deployment, ``band_note`` saying why), ``mean_context``, ``exact``,
    ``notes``
    (sentences on the deployment: tensor parallelism past the GPU's link domain, what its
    all-reduces over the network add to a decode step, ``NETWORK_NOTE``), ``gpus``
    (in all: ``n_gpus`` per replica times ``replicas``), and the settings it used: ``model``,
    ``gpu``, ``n_gpus``, ``parallel``, ``dtype``, ``cache_dtype``, ``compute_dtype``, ``batch``,
    ``prompt_len``, ``output_len``, ``engine``, ``step``, the step's figures
    (``compute_efficiency``, ``bandwidth_efficiency``, ``attention_efficiency``,
    ``decode_attention_efficiency``, ``kernel_overhead``, ``step_overhead``,
    ``request_overhead``, ``allreduce_latency``), ``link_latency``, ``memory_utilization``,
    ``replicas``, ``expert_imbalance``, ``prefix_hit_rate`` and ``speculative``
    (``Speculative.describe``, or None). With a prefix cache the time to first token prefills
    only the uncached tokens, and the cost per million input tokens spreads it over all of
    them; speculating, the time per output token is a verification step over the tokens it
    yields.
    """
    workload = dict(batch=batch, prompt_len=prompt_len, output_len=output_len)
    deployment.update(n_gpus=n_gpus, dtype=dtype, cache_dtype=cache_dtype)
    s = Scenario(model, gpu, **workload, **deployment)
    check_decodes(s.output_len)
    return report(s, price_per_hour)


def report_values(s: Scenario, price_per_hour: float | None = None) -> dict[str, float | None]:
    """Every formula of ``report_formulas`` at the scenario's values and ``price_per_hour``
    (default: the GPU's example; costs None where there is neither)."""
    price, _, _ = s.gpu.price(price_per_hour)
    values = {**s.values(), "price_per_hour": price or 1.0}
    r = compiled_report(s.model, s.step, s.parallel, **s.formula_options).from_values(values)
    return {k: None if k.startswith("cost_") and not price else v for k, v in r.items()}


def _link_used() -> dict:
    from inference_arithmetic.formulas import parallel as parallelism

    return {"link": parallelism.link_bandwidth_used()}


def notes(s: Scenario, r: dict) -> list[str]:
    """What ``calculate`` says of a scenario beyond its numbers, from ``report_values`` ``r``:
    tensor or expert parallelism past one link domain (``NETWORK_NOTES``), with what the
    network adds to a decode step at the mean context: the step less the same formula's step
    were the n GPUs one link domain. A GPU whose link joins no others (a domain of one: PCIe
    cards) has no domain to leave: every group of them pays its slow link, and the formulas
    say so."""
    domain = s.gpu.link_domain or 1
    if s.parallel not in NETWORK_NOTES or s.n_gpus <= domain or domain == 1:
        return []
    one_domain = {**s.values(), "link_domain": s.n_gpus, "price_per_hour": 1.0}
    compiled = compiled_report(s.model, s.step, s.parallel, **s.formula_options)
    extra = r["tpot"] - compiled.from_values(one_domain)["tpot"]
    network = cache.formulas(_link_used).from_values(s.values())["link"]  # the formulas' own rule
    return [
        NETWORK_NOTES[s.parallel].format(
            n_gpus=s.n_gpus,
            gpu=s.gpu.name,
            domain=domain,
            network=fmt.show(network, "bandwidth"),
            seconds=fmt.show(extra, "seconds"),
            share=fmt.show(extra / r["tpot"], "percent"),
        )
    ]


def report(s: Scenario, price_per_hour: float | None = None) -> dict:
    """``calculate`` of a ``Scenario`` whose batch runs at once."""
    # Refused rather than reported a wave at a time: every number here is of the scenario's
    # batch at once, which in waves may be far past the memory, and a report of one wave would
    # not be of the batch it names. ``timing.run`` refuses the same; ``in_waves`` times waves.
    if s.in_waves:
        raise ArgumentError(
            f"the report is of a batch at once; a scenario in waves (in_waves=True, batch="
            f"{s.batch}) is timed by ia.serve(...) or ia.timing.in_waves(s)"
        )
    r = report_values(s, price_per_hour)
    cost = {key: r[f"cost_{key}"] for key in ("input", "output", "blended", "request")}
    price, date, _ = s.gpu.price(price_per_hour)
    banded = bands.noted(dict(r), BANDED, bands.scenario_groups(s)) if s.step == "kernels" else {}
    result = {
        "model": s.model.name,
        "gpu": s.gpu.name,
        **{name: getattr(s, name) for name in ("n_gpus", "dtype", "cache_dtype", "compute_dtype")},
        "gpus": int(r["gpus"]),
        **{name: getattr(s, name) for name in ("batch", "prompt_len", "output_len")},
        "memory": {
            "weights": r["weights"],
            "kv_cache": r["kv_cache"],
            **({"draft": r["draft"]} if "draft" in r else {}),
            "activations": r["activations"],
            "total": r["memory"],
            "budget": r["budget"],
            "capacity": r["capacity"],
            "fits": bool(r["memory"] <= r["budget"]),
        },
        "ttft": r["ttft"],
        "tpot": r["tpot"],
        "request_time": r["request_time"],
        "throughput": r["throughput"],
        "cost": {**cost, "price_per_hour": price, "price_date": date},
        "bound": {
            "prefill": bound_text(r["prefill_compute_bound"]),
            "decode": bound_text(r["decode_compute_bound_first"], r["decode_compute_bound_last"]),
        },
        # Where eight of ten held-out measurements fell: the residuals of its group's rows.
        "band": banded.get("band"),
        "mean_context": r["mean_context"],
        "exact": bool(r["exact"]),
        "notes": notes(s, r),
        "parallel": s.parallel,
        "engine": s.engine.name,
        "step": s.step,
        **{name: s.figure(name) for name in FIGURES},
        **{name: getattr(s, name) for name in ("link_latency", "memory_utilization", "replicas")},
        "prefix_hit_rate": s.prefix_hit_rate,
        "speculative": s.speculative.describe() if s.speculative else None,
        "expert_imbalance": s.expert_imbalance,
    }
    if "band_note" in banded:
        result["band_note"] = banded["band_note"]
    return result


def warm() -> None:
    """Compile and keep in the disk cache the report's formulas of every registry model, on
    the default step model, with tensor and pipeline parallelism."""
    for name in model_names():
        for parallel in ("tensor", "pipeline"):
            compiled_report(model(name), parallel=parallel)
