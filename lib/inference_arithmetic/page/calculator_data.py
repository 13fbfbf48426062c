"""The calculator's page data: the library's formulas, checks and messages printed for the
browser, once per process and kept in the disk cache.

>>> data = model_data(registry_model("llama-3.1-8b"))
>>> sorted(data["report"]), data["degrees"]
(['kernels', 'roofline'], '1, 2, 4, 8, 16, 32')

The page cannot run Python, so ``page_data()`` gives it the rules as data: every formula and
every check's condition printed to JavaScript (``printing.javascript``), the messages as
templates, the readout's rows, the form's controls, and the formats by name for the page's
``iaShow`` (``format.js_runtime()``, tested against ``format.show``). ``calculator.js`` is an
interpreter of it.

A model's formulas are expressions of its sizes, so the models of one family (the Llamas, the
Qwen3 dense models) have the same ones: each is built and printed once for the models that
share it (``core.reads.shared``: derived from what building it read of the model), each
formula printed once (``printing.javascript``), and while they are built each Max and Min is
evaluated once (``core.evaluation.once``).
"""

from __future__ import annotations

import functools
import inspect
import itertools

from inference_arithmetic import serving
from inference_arithmetic.core import cache, checks, evaluation
from inference_arithmetic.core.dtypes import ALIASES, DTYPE_BYTES, activation_bytes, compute_format
from inference_arithmetic.core.printing import javascript
from inference_arithmetic.core.reads import shared
from inference_arithmetic.formulas import continuous as formulas_continuous
from inference_arithmetic.formulas import latency, techniques
from inference_arithmetic.hardware.engines import engine as registry_engine
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.hardware.gpus import gpu_names
from inference_arithmetic.models.config import (
    AUTO,
    model_names,
    weight_formats,
    weight_number_values,
)
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.page import own_config
from inference_arithmetic.page.calculator_form import (
    COMPUTED,
    COMPUTES,
    CONTINUOUS,
    FRONTIER,
    JUDGED,
    NO_SPECULATION,
    PAGE_PARALLEL,
    PLAN,
    SAME,
    STATIC,
    STREAM_PARALLEL,
    not_streamed,
    page_controls,
    ranges,
)
from inference_arithmetic.page.calculator_readout import (
    BANDED_CELL,
    CONTINUOUS_ROWS,
    DEPLOYMENT,
    FRONTIER_COLUMNS,
    FRONTIER_KEY,
    GIVEN_KIND,
    NOTES,
    PERCENTILE_KEY,
    PERCENTILE_NAMES,
    PLAN_ROWS,
    ROWS,
    STREAM,
    users_text,
    withheld,
)
from inference_arithmetic.serving import (
    bands,
    continuous,
    efficiencies,
    engine,
    frontier,
    planning,
    queueing,
    scenario,
    speculative,
)

__all__ = ["page_data", "model_data", "band_groups", "warm", "step_key", "drafts", "parallels"]
__all__ += ["method"]


def model_data(arch) -> dict:
    """One model's part of the page's data: its sizes, formats and degrees, and its formulas and
    checks printed, kept in the disk cache."""
    return cache.data(_model_data, arch)


def _model_data(arch) -> dict:
    # The formulas and the checks each printed once for the models that share them (``shared``):
    # the checks read more of a model (whether it has a context window) than the formulas do.
    formulas, rules = shared(_print_formulas, arch), shared(_print_checks, arch)
    return {**_facts(arch), **formulas, "checks": rules}


def _facts(arch) -> dict:
    """What the page takes of the model itself: its sizes, formats and parallel degrees."""
    return {
        "sizes": arch.sizes(),
        "weights": weight_number_values(arch),  # as the checkpoint ships ("auto")
        "layers_format": weight_formats(arch)["layers"],
        "context_window": arch.context_window,
        "degrees": ", ".join(map(str, scenario.tensor_parallel_degrees(arch))),
        "degree_list": scenario.tensor_parallel_degrees(arch),
        "plan_degrees": {  # continuous.plan's: a pipeline's stages, else the heads' split
            "tensor": scenario.tensor_parallel_degrees(arch, planning.PLAN_DEGREE),
            "pipeline": scenario.pipeline_degrees(arch, planning.PLAN_DEGREE),
        },
        "expert_degrees": ", ".join(map(str, scenario.expert_parallel_degrees(arch))),
        "expert_degree_list": scenario.expert_parallel_degrees(arch, ranges()["n_gpus"][1]),
        # The groups of serving.bands its weights put a deployment in, by the weights' format.
        "groups": {d: list(bands.model_groups(arch, d)) for d in [AUTO, *DTYPE_BYTES]},
    }


def _print_formulas(arch) -> dict:
    """The model's formulas printed: its steady state's steps and capacity, and its report's
    formulas, by step model and parallelism; for an MoE model, the plain kernel step and the
    capacity of expert parallelism, which only the frontier's closed loops take
    (``STREAM_PARALLEL`` says why the steady state at a rate does not)."""
    capacity = {p: latency.max_concurrency(arch, p) for p in STREAM_PARALLEL}
    experts = {}
    if arch.is_moe:
        step = scenario.STEP_FORMULAS["kernels"]
        experts = {
            "experts": {
                "step": javascript({p: step(arch, p) for p in latency.EXPERT_PARALLEL}),
                "capacity": javascript(
                    {p: latency.max_concurrency(arch, p) for p in latency.EXPERT_PARALLEL}
                ),
            }
        }
    return {
        **experts,
        "continuous": {  # the page's steady state, of each of STREAM_PARALLEL
            "step": {s: _steps(arch, s) for s in scenario.STEPS},
            "capacity": javascript(capacity),
        },
        "report": {
            s: {p: javascript(serving.report_formulas(arch, s, p)) for p in parallels(arch)}
            for s in scenario.STEPS
        },
    }


def _print_checks(arch) -> dict:
    """The model's checks by parallelism, their conditions and fields printed."""
    return {p: _checks(arch, p) for p in parallels(arch)}


def _checks(arch, parallel) -> list:
    return [
        {
            "name": check.name,
            "holds": javascript(check.holds(arch, parallel)),
            "message": check.message,
            "fields": {
                f: {**javascript(e(arch, parallel)), "kind": k}
                for f, (e, k) in check.fields.items()
            },
        }
        for check in scenario.CHECKS
        if check.applies(arch, parallel)
    ]


def parallels(arch) -> list[str]:
    """The parallelisms whose formulas the page carries for ``arch``: expert parallelism only
    where it has experts (``latency.NO_EXPERTS``)."""
    return [p for p in PAGE_PARALLEL if arch.is_moe or p not in latency.EXPERT_PARALLEL]


def step_key(options: tuple, draft) -> str:
    """The page's name of a step with ``options`` (``kernels.OPTIONS``, in order) and ``draft``
    (``Speculative.draft``; None without speculation): the page builds the same."""
    return ",".join(options) + ":" + str(draft)


def drafts() -> list:
    """The drafts of the methods whose defaults the page offers (a draft model is named)."""
    return sorted({m.draft for m in speculative.METHODS.values() if m.draft_len}, key=str)


def _steps(arch, step) -> dict:
    """The continuous step of ``arch`` by ``step_key``: the plain step, and with the kernel
    model each set of serving options (``Scenario.formula_options``); each of tensor
    parallelism and a pipeline's micro-batch (``STREAM_PARALLEL``), printed together: their
    common parts, most of a pipeline's, are carried once (5 kB of JavaScript for both of 70B's
    plain kernel steps, against 3.7 for the tensor step alone and 3.3 for the pipeline's)."""

    def both(**options):
        formulas = scenario.STEP_FORMULAS[step]
        return javascript({p: formulas(arch, p, **options) for p in STREAM_PARALLEL})

    steps = {step_key((), None): both()}
    if step != "kernels":
        return steps
    for prefix, draft in itertools.product((False, True), [False, *drafts()]):
        options = ("prefix",) * prefix + ("speculative",) * (draft is not False)
        if options:
            draft = None if draft is False else draft
            steps[step_key(options, draft)] = both(options=options, draft=draft)
    return steps


def warm() -> int:
    """Print the page's data of every registry model into the disk cache (``make`` runs it
    when it sets up the environment); the number of models."""
    return len(page_data()["models"])


def _gpu_data(g, engine) -> dict:
    """One GPU's part of the page's data: its figures, and for each step model the figures a
    step takes by the compute format, and the weights' stream by theirs
    (``efficiencies.WEIGHT_FIGURES``): the scenario's, for each format the form offers; and
    the default engine's batch on it (``Engine.batch``: vLLM 0.11 steps more on a large GPU),
    whose ``max_num_seqs`` caps the frontier's loops as the library's does on that GPU."""
    figures = {k: v for k, v in g.figures(next(iter(g.peak_flop_rate))).items() if k != "flop_rate"}
    by_compute, by_weights = {}, {}
    for step in scenario.STEPS:
        by_compute[step] = {}
        for c in (c for c in g.peak_flop_rate if c in COMPUTES):  # the formats offered
            found = efficiencies.found_figures(g, engine, c, c, step)
            kept = {k: v for k, v in found.items() if k not in efficiencies.WEIGHT_FIGURES}
            by_compute[step][c] = {**kept, "activation_bytes_per_number": activation_bytes(c)}
        some = next(iter(by_compute[step]))
        found = {d: efficiencies.found_figures(g, engine, some, d, step) for d in DTYPE_BYTES}
        by_weights[step] = {
            d: {k: got[k] for k in efficiencies.WEIGHT_FIGURES} for d, got in found.items()
        }
    try:  # the plan's refusal of a GPU without a price, the library's own words
        g.price(required=True)
        no_price = None
    except ValueError as error:
        no_price = str(error)
    return {
        "flop_rate": dict(g.peak_flop_rate),
        "figures": figures,
        "compute": by_compute,
        "weights": by_weights,
        "price_per_hour": g.price_per_hour,
        "price_date": g.price_date,
        "no_price": no_price,
        "groups": list(bands.gpu_groups(g)),  # of serving.bands
        "batch": engine.batch(g),
    }


def band_groups() -> dict:
    """What the page needs to band a prediction by its group, as ``serving.bands`` does: the
    groups in their order, the rules the form's own controls decide (an expert layout, a long
    prompt), and for each set of groups the form can reach (no disaggregation: its modes are
    colocated) each kind's factors (``bands.factors``; null: none), the sentence that says what
    the bands are (``bands.describe``) and, by mode, the one that says which kinds have none
    (``calculator_readout.withheld``)."""
    reachable = [g for g in bands.GROUPS if g != "disaggregated"]
    table = {}
    for n in range(len(reachable) + 1):
        for groups in itertools.combinations(reachable, n):
            table[",".join(groups)] = {
                "factors": {kind: bands.factors(kind, groups) for kind in bands.KINDS},
                "describe": bands.describe(groups),
                "withheld": {
                    "static": withheld(STATIC, groups),
                    "streamed": withheld(CONTINUOUS, groups),
                },
            }
    return {
        "order": list(bands.GROUPS),
        "expert_parallel": list(latency.EXPERT_PARALLEL),
        "long_prompt": bands.LONG_PROMPT,
        "table": table,
    }


def _rows_data(rows, banded) -> list[dict]:
    return [
        {"key": k, "label": text, "kind": kind, "band": banded.get(k)} for k, text, kind in rows
    ]


@functools.cache
def page_data() -> dict:
    """The page's data, the same for every calculator (module docstring)."""
    with evaluation.once():
        models = {name: model_data(registry_model(name)) for name in model_names()}
    default = scenario.Scenario("llama-3.1-8b", "h100-sxm")
    # The registry's default engine, not the default scenario's (resolved for its H100): each
    # GPU's batch is its own (``Engine.batch``).
    profile = registry_engine(scenario.DEFAULT_ENGINE)
    gpus = {name: _gpu_data(registry_gpu(name), profile) for name in gpu_names()}
    # The numeric settings the form does not offer (the engine's, the link): the default
    # scenario's values less the model's, the GPU's and the form's own.
    own = set(default.model.sizes()) | set(default.gpu.figures(default.compute_dtype))
    own |= set(gpus[default.gpu.name]["compute"][default.step][default.compute_dtype])
    own |= set(efficiencies.WEIGHT_FIGURES) | set(_FORM_VALUES)
    options = {k: v for k, v in default.values().items() if k not in own}
    plan_signature = inspect.signature(planning.plan_colocated).parameters
    return {
        "same": SAME,
        "computed": COMPUTED,
        "controls": page_controls(),
        "models": models,
        "gpus": gpus,
        "dtypes": DTYPE_BYTES,
        "names": ALIASES,  # a compute format's name as a cache's: fp4 is nvfp4
        "computes": {d: compute_format(d) for d in [*DTYPE_BYTES, *COMPUTES]},
        "auto": AUTO,
        "options": options,
        "count_message": checks.COUNT,
        "no_rate": scenario.NO_RATE,
        "no_link": scenario.NO_LINK,
        "no_experts": latency.NO_EXPERTS,
        "not_kernels": {s: scenario.NOT_KERNELS.format(step=s) for s in scenario.STEPS},
        "no_speculation": NO_SPECULATION,
        "speculative": {m: method(m) for m in speculative.METHODS},
        "serving": {
            "prefilled": javascript(techniques.prefilled_tokens()),
            "verified": javascript(techniques.verified_tokens()),
            "expected": javascript(techniques.expected_tokens()),
        },
        "one_token": continuous.ONE_TOKEN,
        "rows": _rows_data(ROWS, serving.BANDED),
        "band_groups": band_groups(),
        "band_ends": {which: javascript(ends) for which, ends in bands.BAND.items()},
        "band_cell": BANDED_CELL,
        "bounds": serving.BOUNDS,
        "then": serving.THEN,
        "notes": NOTES,
        "given_kind": GIVEN_KIND,
        "modes": {"static": STATIC, "continuous": CONTINUOUS, "plan": PLAN, "frontier": FRONTIER},
        "continuous_rows": _rows_data(CONTINUOUS_ROWS, continuous.BANDED),
        "plan_rows": _rows_data(PLAN_ROWS, continuous.BANDED),
        "context": javascript(latency.mean_context()),
        "steady": {k: javascript(e) for k, e in queueing.STEADY.items()},
        "pipeline_wait": javascript(formulas_continuous.pipeline_wait()),
        "pipeline_square": javascript(formulas_continuous.pipeline_wait(2)),
        "in_flight": javascript({p: latency.batches_in_flight(p) for p in STREAM_PARALLEL}),
        "stream_parallel": STREAM_PARALLEL,
        "not_streamed": not_streamed("{parallel}"),
        "replicas": {k: javascript(e) for k, e in continuous.REPLICAS.items()},
        "stream": javascript(STREAM),
        "prompt_counts": queueing.PROMPT_COUNTS,
        "runaway": [queueing.RUNAWAY_COUNTS, queueing.RUNAWAY_TAIL],
        "spread": queueing.SPREAD_POINTS,
        "quantiles": {  # what the percentiles of the steady state's times take (quantiles.js)
            "percentiles": queueing.PERCENTILES,
            "names": PERCENTILE_NAMES,
            "normal": queueing.NORMAL_POINTS,
            "tpot": javascript(queueing.TPOT_QUANTILE),  # a TPOT's at each of them
            "tiny": queueing.TINY,
            "grid": queueing.GRID,
        },
        "percentile_key": PERCENTILE_KEY,
        "saturated": continuous.SATURATED,
        "saturated_kinds": continuous.SATURATED_KINDS,
        "replicated": continuous.REPLICATED,
        "own": {
            "name": own_config.OWN,
            "rules": own_config.reading(),
            "messages": own_config.MESSAGES,
        },
        "frontier": _frontier_data(default),
        "plan": {
            "degree": planning.PLAN_DEGREE,
            "most_gpus": plan_signature["most_gpus"].default,
            "message": planning.NO_DEPLOYMENT,
            "kinds": planning.NO_DEPLOYMENT_KINDS,
            "judged": JUDGED,  # the form's choice -> ia.plan's percentile (None: the mean)
            "on": planning.NO_DEPLOYMENT_ON,
        },
    }


def _frontier_data(default) -> dict:
    """What the page's frontier (frontier.js, over closed.js) takes: ``ia.frontier``'s sweep
    and messages, the readout's columns and templates (the engine's cap on the requests it
    runs is each GPU's: ``_gpu_data``'s batch; the form offers no engine: the default's)."""
    signature = inspect.signature(frontier.frontier).parameters
    try:  # its refusal of requests of one output token, the library's own words
        frontier.frontier(default.model, default.gpu, output_len=1)
    except ValueError as error:
        one_token = str(error)
    return {
        "most_gpus": signature["most_gpus"].default,
        "concurrency": signature["concurrency"].default,
        "one_token": one_token,
        "no_layout": frontier.NO_LAYOUT,
        "experts_by_kernels": engine.EXPERTS_BY_KERNELS,
        "expert_parallel": latency.EXPERT_PARALLEL,
        "request_check": frontier.REQUEST_CHECK,
        "columns": _rows_data(FRONTIER_COLUMNS, {}),
        "key": FRONTIER_KEY,
        "deployment": DEPLOYMENT,
        "users": users_text(),
    }


def method(name: str) -> dict:
    """A speculation method as the page takes it: its draft (``step_key``) and its defaults'
    values, or the library's refusal of a method that has none (a draft model's); for
    ``"mtp"``, the models that ship its module (``models``) and the refusal of any other
    (``refusal``, a template of the model's name: ``speculative.check_target``)."""
    try:
        speculation = speculative.Speculative(name)
    except ValueError as error:
        return {"error": str(error)}
    data = {"draft": str(speculation.draft), **speculation.values()}
    if name == "mtp":
        others = ", ".join(m for m in speculative.METHODS if m != "mtp")
        models = ", ".join(speculative.mtp_models()) or "none"
        refusal = speculative.NO_MTP.format(model="{model}", models=models, methods=others)
        data |= {"models": list(speculative.mtp_models()), "refusal": refusal}
    return data


_FORM_VALUES = ("bytes_per_number", "expert_bytes_per_number", "vocab_bytes_per_number")
_FORM_VALUES += ("kv_bytes_per_number", "n_gpus", "batch", "replicas")
_FORM_VALUES += ("seq_len", "output_len", "context_window", "memory_utilization", "token_budget")
"""The values the form sets itself (``calculate()`` in the page's script)."""
