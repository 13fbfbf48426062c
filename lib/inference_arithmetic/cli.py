"""The command line: ``inference-arithmetic`` (or ``ia``, or ``python -m inference_arithmetic``).

>>> main(["count", "llama-3.1-8b"])  # doctest: +ELLIPSIS
parameters                               8,030,261,248
...
KV cache per token                       131 kB
...
0

Each subcommand is one library function: ``count`` (``param_count``, ``kv_cache_bytes``, of a
registry name, a ``config.json``, its folder or its JSON text), ``calculate``
(``ia.calculate``), ``steady-state`` (``ia.steady_state``), ``plan`` (``ia.plan``),
``goodput`` (``ia.goodput``), ``frontier`` (``ia.frontier``) and ``kernels`` (``ia.kernels``);
``models`` and ``gpus`` list the registries. Output is a table for people, ``--json`` (nested,
base SI units) or ``--csv`` (one row per record, flat keys, base SI units) for programs. Exit
status: 0 with an answer, 2 when an argument is refused (the message names it and what is
valid), as argparse does for its own usage errors.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
import sys

import inference_arithmetic as ia
from inference_arithmetic.core import format as fmt
from inference_arithmetic.hardware.engines import family

__all__ = ["main", "parser", "render"]

EXAMPLES = """\
examples:
  ia count path/to/config.json                 parameters and KV cache per token of a config
  ia calculate llama-3.1-8b h100-sxm --batch 32 --prompt-len 4096
                                               memory, TTFT, TPOT, tokens/s and cost
  ia calculate llama-3.1-70b h100-sxm --n-gpus 4 --price-per-hour 2.5 --json
  ia calculate llama-3.1-70b h100-sxm --n-gpus 4 --parallel pipeline
  ia calculate deepseek-v3 h200 --n-gpus 8 --parallel expert-dp
  ia steady-state llama-3.1-8b h100-sxm --rate 4
  ia steady-state llama-3.1-70b h100-sxm --n-gpus 4 --rate 2 --prefix-hit-rate 0.5
                                               with half of each prompt in the prefix cache
  ia calculate llama-3.1-70b h100-sxm --n-gpus 4 --batch 16 --speculative eagle3
                                               speculative decoding with an EAGLE-3 head
  ia plan llama-3.1-70b h100-sxm --rate 10 --ttft 0.5 --tpot 0.05
  ia plan llama-3.1-70b h100-sxm --rate 10 --ttft 0.5 --tpot 0.05 --percentile 99
  ia steady llama-3.1-8b h100-sxm --concurrency 32
                                               32 users in a closed loop, as benchmarks run
  ia frontier llama-3.1-70b h100-sxm --most-gpus 8
                                               tokens/s per GPU against tokens/s per user
  ia goodput llama-3.1-8b h100-sxm --ttft 0.3 --tpot 0.015 --prompt-len 1024
  ia kernels llama-3.1-8b h100-sxm --batch 64 --context-len 4096 --csv
  ia kernels llama-3.1-8b h100-sxm --phase prefill --prompt-len 4096
  ia models; ia gpus                           the registries' names

A MODEL is a registry name (ia models), a config.json, a folder holding one, or its JSON
text. A GPU is a registry name (ia gpus), or a JSON file or text of your own device's
figures in base SI units, e.g. '{"name": "a6000", "peak_flop_rate": {"bf16": 155e12},
"memory_bandwidth": 768e9, "memory_bytes": 48e9}' (marked user-supplied).
Numbers print with decimal prefixes (1 GB = 10^9 B); --json and --csv give base SI units.
"""


# What the table shows of each answer: (key path, label, kind of ``format.show``). JSON and
# CSV give every key; the table, for people, these. The rows several tables print are labelled
# once: a request's times, its throughput, and a stream's load.
_TIMES = (
    ("ttft", "time to first token", "seconds"),
    ("tpot", "time per output token", "seconds"),
)
_REQUEST = (
    ("request_time", "request time", "seconds"),
    ("throughput", "throughput, output tokens/s", "number"),
)
_LOAD = (
    ("utilization", "load (rate / saturation)", "percent"),
    ("saturation_rate", "saturation, requests/s", "number"),
)
CALCULATE = (
    ("parallel", "parallelism", "text"),
    ("memory.weights", "weights per GPU", "nbytes"),
    ("memory.kv_cache", "KV cache per GPU", "nbytes"),
    ("memory.draft", "draft model per GPU", "nbytes"),
    ("memory.activations", "activations per GPU", "nbytes"),
    ("memory.total", "memory per GPU", "nbytes"),
    ("memory.budget", "memory budget per GPU", "nbytes"),
    ("memory.fits", "fits in the budget", "text"),
    *_TIMES,
    ("speculative.tokens_per_step", "tokens per verification step", "number"),
    ("tokens_per_s_per_user", "tokens/s per user", "number"),
    *_REQUEST,
    ("cost.input", "$ per million input tokens (prefill)", "usd"),
    ("cost.output", "$ per million output tokens (decode)", "usd"),
    ("cost.blended", "$ per million output tokens, blended", "usd"),
    ("cost.request", "$ per request", "usd"),
    ("cost.price_per_hour", "$ per GPU-hour", "usd"),
    ("bound.prefill", "prefill bound by", "text"),
    ("bound.decode", "decode bound by", "text"),
)
STEADY = (
    *_TIMES,
    ("percentiles.ttft.p90", "time to first token, p90", "seconds"),
    ("percentiles.ttft.p99", "time to first token, p99", "seconds"),
    ("percentiles.tpot.p90", "time per output token, p90", "seconds"),
    ("percentiles.tpot.p99", "time per output token, p99", "seconds"),
    *_REQUEST,
    ("concurrency", "requests in the engine", "number"),
    *_LOAD,
)
STEADY_USERS = (
    *_TIMES,
    *_REQUEST,
    ("requests_per_s", "requests/s", "number"),
    ("concurrency", "users", "integer"),
    ("in_engine", "requests in the engine", "integer"),
    ("queued", "users waiting outside it", "integer"),
    *_LOAD,
    ("first_wave.ttft", "first wave's time to first token", "seconds"),
    ("first_wave.last", "first wave's last first token", "seconds"),
)
FRONTIER = (
    ("n_gpus", "GPUs", "integer"),
    ("parallel", "parallelism", "text"),
    ("concurrency", "users", "integer"),
    ("throughput_per_gpu", "output tokens/s per GPU", "number"),
    ("tokens_per_s_per_user", "tokens/s per user", "number"),
    ("ttft", "TTFT", "seconds"),
    ("tpot", "TPOT", "seconds"),
)
PLAN = (
    ("layout", "layout", "text"),
    ("replicas", "replicas", "integer"),
    ("n_gpus", "GPUs per replica", "integer"),
    ("prefill_replicas", "prefill replicas", "integer"),
    ("prefill_gpus", "GPUs per prefill replica", "integer"),
    ("decode_replicas", "decode replicas", "integer"),
    ("decode_gpus", "GPUs per decode replica", "integer"),
    ("gpus", "GPUs in all", "integer"),
    ("ttft", "time to first token (as judged)", "seconds"),
    ("tpot", "time per output token (as judged)", "seconds"),
    ("binds", "one replica fewer misses", "text"),
    ("cost.blended", "$ per million output tokens, blended", "usd"),
    ("cost.price_per_hour", "$ per GPU-hour", "usd"),
)
GOODPUT = (
    ("requests_per_s", "goodput, requests/s", "number"),
    ("per_gpu", "goodput per GPU, requests/s", "number"),
    ("binds", "limit that binds", "text"),
    ("ttft", "time to first token there (as judged)", "seconds"),
    ("tpot", "time per output token there (as judged)", "seconds"),
)
COUNT = (
    ("params", "parameters", "integer"),
    ("active_params", "active parameters per token", "integer"),
    ("params_without_embeddings", "without the input embeddings", "integer"),
    ("weights_bytes", "weights", "nbytes"),
    ("kv_cache_bytes_per_token", "KV cache per token", "nbytes"),
    ("decode_flops_per_token", "FLOPs per token (decode, short context)", "flops"),
    ("context_window", "context window, tokens", "integer"),
)
KERNELS = (
    ("kernel", "kernel", "text"),
    ("kind", "kind", "text"),
    ("count", "count", "integer"),
    ("flops", "FLOPs", "flops"),
    ("bytes", "bytes", "nbytes"),
    ("bound", "bound", "text"),
    ("time", "time", "seconds"),
)


def _model(text: str):
    """A registry model, or a config read from a path, a folder or JSON text (``ia.model``)."""
    return ia.model(text)


def _gpu(text: str):
    """A registry GPU, or a device from a JSON file or text of its figures (``ia.gpu``)."""
    return ia.gpu(text)


def _deployment(args) -> dict:
    """The deployment options given (the library's defaults stand for the rest)."""
    names = ("n_gpus", "parallel", "dtype", "cache_dtype", "compute_dtype", "engine", "step")
    names += ("replicas", "expert_imbalance")
    names += ("memory_utilization", "price_per_hour", "prefix_hit_rate", "token_budget")
    options = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    drafting = {n: getattr(args, n, None) for n in ("draft_len", "acceptance_rate", "draft_model")}
    drafting = {n: v for n, v in drafting.items() if v is not None}
    if getattr(args, "speculative", None) is not None:
        options["speculative"] = {"method": args.speculative, **drafting}
    elif drafting:
        given = ", ".join("--" + n.replace("_", "-") for n in drafting)
        raise ia.ArgumentError(f"{given} describe speculative decoding: give --speculative too")
    return options


def _count(args) -> dict:
    m = _model(args.model)
    layers = ia.weight_formats(m, args.dtype)["layers"]  # the cache's format unless given
    result = {
        "model": m.name,
        "model_type": m.model_type,
        "params": ia.param_count(m),
        "active_params": ia.param_count(m, active=True),
        "params_without_embeddings": ia.param_count(m, embeddings=False),
        "weights_bytes": ia.timing.weights_per_gpu(m, n_gpus=1, dtype=args.dtype),
        "kv_cache_bytes_per_token": ia.kv_cache_bytes(
            m, batch=1, context_len=1, dtype=args.cache_dtype or layers
        ),
        "decode_flops_per_token": ia.decode_flops(m, batch=1, context_len=1),
        "context_window": m.context_window,
        "n_layers": m.n_layers,
        "d_model": m.d_model,
        "n_heads": m.n_heads,
        "n_kv_heads": m.n_kv_heads,
        "dtype": args.dtype if args.dtype == ia.AUTO else ia.dtypes.dtype_name(args.dtype),
        "weight_formats": ia.weight_formats(m, args.dtype),
    }
    return result


def _calculate(args) -> dict:
    workload = dict(batch=args.batch, prompt_len=args.prompt_len, output_len=args.output_len)
    r = ia.calculate(_model(args.model), _gpu(args.gpu), **workload, **_deployment(args))
    return {**r, "tokens_per_s_per_user": 1 / r["tpot"]}


def _steady(args) -> dict:
    workload = dict(prompt_len=args.prompt_len, output_len=args.output_len)
    options = _deployment(args)  # a steady state has no cost: its parser takes no price
    users = args.concurrency
    if users is not None:
        args.table = STEADY_USERS  # a closed loop's table: its users, and the rate it reaches
    return ia.steady_state(
        _model(args.model),
        _gpu(args.gpu),
        requests_per_s=args.rate,
        concurrency=users,
        **workload,
        **options,
    )


def _frontier(args) -> list[dict]:
    workload = dict(prompt_len=args.prompt_len, output_len=args.output_len)
    sweep = dict(most_gpus=args.most_gpus)
    if args.concurrency is not None:
        sweep["concurrency"] = args.concurrency
    options = _deployment(args)  # no n_gpus, parallel or replicas: the frontier sweeps them
    return ia.frontier(_model(args.model), _gpu(args.gpu), **workload, **sweep, **options)


def _plan(args) -> dict:
    options = _deployment(args)  # no n_gpus: the plan chooses it
    workload = dict(
        requests_per_s=args.rate, prompt_len=args.prompt_len, output_len=args.output_len
    )
    workload.update(ttft_target=args.ttft, tpot_target=args.tpot)
    choices = dict(percentile=_judged(args), layout=args.layout, most_gpus=args.most_gpus)
    return ia.plan(_model(args.model), _gpu(args.gpu), **workload, **choices, **options)


def _judged(args):
    """The percentile targets are on: None for "mean"."""
    return None if args.percentile == "mean" else int(args.percentile)


def _goodput(args) -> dict:
    workload = dict(prompt_len=args.prompt_len, output_len=args.output_len)
    targets = dict(ttft_target=args.ttft, tpot_target=args.tpot, percentile=_judged(args))
    return ia.goodput(
        _model(args.model), _gpu(args.gpu), **workload, **targets, **_deployment(args)
    )


def _kernels(args) -> list[dict]:
    step = dict(phase=args.phase, **_deployment(args))
    lengths = {n: getattr(args, n) for n in ("context_len", "prompt_len")}  # one per phase
    lengths = {n: v for n, v in lengths.items() if v is not None}
    return ia.kernels(_model(args.model), _gpu(args.gpu), batch=args.batch, **lengths, **step)


def _models(args) -> list[dict]:
    return [
        {
            "model": name,
            "model_type": m.model_type,
            "params": ia.param_count(m),
            "context_window": m.context_window,
        }
        for name in ia.model_names()
        for m in [ia.model(name)]
    ]


def _gpus(args) -> list[dict]:
    return [
        {
            "gpu": name,
            "bf16_flop_rate": g.peak_flop_rate.get("bf16"),
            "memory_bytes": g.memory_bytes,
            "usable_memory_bytes": g.usable_memory,  # what the memory budgets take
            "memory_bandwidth": g.memory_bandwidth,
            "price_per_hour": g.price_per_hour,
        }
        for name in ia.gpu_names()
        for g in [ia.gpu(name)]
    ]


MODELS = (
    ("model", "model", "text"),
    ("model_type", "family", "text"),
    ("params", "parameters", "count"),
    ("context_window", "window", "integer"),
)
GPUS = (
    ("gpu", "gpu", "text"),
    ("bf16_flop_rate", "bf16 FLOP/s", "flop_rate"),
    ("memory_bytes", "memory", "nbytes"),
    ("usable_memory_bytes", "usable", "nbytes"),
    ("memory_bandwidth", "bandwidth", "bandwidth"),
    ("price_per_hour", "$/GPU-hour", "usd"),
)


def _auto_help() -> str:
    return f"weights' format: bf16, fp8, nvfp4, q4_k_m, ... ({ia.AUTO}: as the checkpoint ships)"


def _percentile(p) -> None:
    """The percentile a command's targets are on: the library's default (the mean) unless
    given, the same for every command."""
    choices = [*map(str, ia.queueing.PERCENTILES), "mean"]
    default = (
        "mean" if ia.targets.DEFAULT_PERCENTILE is None else str(ia.targets.DEFAULT_PERCENTILE)
    )
    text = f"targets on this percentile of each request's times ({default})"
    p.add_argument("--percentile", choices=choices, default=default, help=text)


def _add_deployment(p, n_gpus=True):
    p.add_argument("model", help="registry name, config.json, its folder, or JSON text")
    p.add_argument("gpu", help="registry name, or a JSON file or text of your device's figures")
    if n_gpus:
        p.add_argument("--n-gpus", type=int, help="GPUs per replica (1)")
    p.add_argument("--dtype", help=_auto_help())
    p.add_argument("--cache-dtype", help="KV cache's format (the compute format)")
    p.add_argument("--compute-dtype", help="the products' format (the weights')")
    families = sorted({family(name) for name in ia.engine_names()})
    text = "serving engine, a family (its newest version) or family@version: "
    p.add_argument("--engine", help=text + ", ".join(families + ia.engine_names()))
    p.add_argument("--token-budget", type=int, help="tokens a step computes at most (the engine's)")
    p.add_argument("--step", choices=("kernels", "roofline"), help="step model (kernels)")
    p.add_argument("--memory-utilization", type=float, help="share of memory used (0.9)")
    p.add_argument("--prefix-hit-rate", type=float, help="share of each prompt cached (0)")
    methods = tuple(ia.speculative.METHODS)
    p.add_argument(
        "--speculative", choices=methods, help="speculative decoding: what drafts (none)"
    )
    p.add_argument("--draft-len", type=int, help="tokens drafted a step (the method's)")
    p.add_argument("--acceptance-rate", type=float, help="per drafted token (the method's)")
    p.add_argument("--draft-model", help="the model that drafts, for --speculative draft")


def _add_workload(p):
    p.add_argument("--prompt-len", type=int, default=2048, help="prompt tokens (2048)")
    p.add_argument("--output-len", type=int, default=256, help="output tokens (256)")


def _add_output(p):
    out = p.add_mutually_exclusive_group()
    for name, what in (
        ("json", "JSON, base SI units"),
        ("csv", "CSV, one row per record, base SI units"),
    ):
        out.add_argument(f"--{name}", action="store_const", const=name, dest="output", help=what)


def _price(p):
    p.add_argument("--price-per-hour", type=float, help="USD per GPU-hour (the GPU's example)")


def parser(only: str | None = None):
    """The command line's parser (an ``argparse.ArgumentParser``): a subcommand per question.
    With ``only`` (a subcommand's name, or "" for none), the other subcommands are named
    without their arguments: their choices come from the serving modules, and so from SymPy,
    which ``ia --help`` or ``ia gpus`` need not import (``main`` builds what was typed)."""
    top = argparse.ArgumentParser(
        prog="ia",
        description="Memory, time and money of serving a language model, from first principles.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {ia.__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="command")

    def command(name, function, table, help, aliases=()):
        """The subcommand's parser, or None where ``only`` names another."""
        p = sub.add_parser(
            name,
            help=help,
            description=help,
            aliases=list(aliases),
            epilog=EXAMPLES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(function=function, table=table)
        _add_output(p)
        return p if only is None or only in (name, *aliases) else None

    if p := command(
        "count", _count, COUNT, "parameters, weights and KV cache per token of a model"
    ):
        p.add_argument("model", help="registry name, config.json, its folder, or JSON text")
        p.add_argument("--dtype", default=ia.AUTO, help=_auto_help())
        p.add_argument("--cache-dtype", help="KV cache's format (the weights')")
    if p := command(
        "calculate",
        _calculate,
        CALCULATE,
        "memory, TTFT, TPOT, throughput and cost of a batch",
        aliases=("calc",),
    ):
        _calculate_arguments(p)
    if p := command(
        "steady-state",
        _steady,
        STEADY,
        "a continuously batching engine at a request rate, or under a number of users",
        aliases=("steady",),
    ):
        _steady_arguments(p)
    if p := command(
        "frontier",
        _frontier,
        FRONTIER,
        "the Pareto set of output tokens/s per GPU against tokens/s per user, over users and "
        "parallel layouts",
    ):
        _frontier_arguments(p)
    if p := command("plan", _plan, PLAN, "the cheapest deployment meeting TTFT and TPOT targets"):
        _plan_arguments(p)
    if p := command("goodput", _goodput, GOODPUT, "requests/s meeting TTFT and TPOT targets"):
        _goodput_arguments(p)
    if p := command("kernels", _kernels, KERNELS, "one step, kernel by kernel"):
        _kernels_arguments(p)
    command("models", _models, MODELS, "the registry's models")
    command("gpus", _gpus, GPUS, "the registry's GPUs")
    return top


def _calculate_arguments(p):
    _add_deployment(p)
    p.add_argument(
        "--parallel",
        choices=ia.formulas.layouts.PARALLEL,  # without SymPy, which ia.timing imports
        help="n GPUs as tensor, pipeline, or an MoE model's experts spread over them with "
        "attention split by heads (expert) or data-parallel (expert-dp) (tensor)",
    )
    p.add_argument(
        "--expert-imbalance",
        type=float,
        help="expert parallelism: the busiest GPU's tokens over the mean "
        f"({ia.scenario.DEFAULT_EXPERT_IMBALANCE})",
    )
    p.add_argument("--batch", type=int, default=1, help="requests served together (1)")
    _add_workload(p)
    p.add_argument("--replicas", type=int, help="copies of the deployment (1)")
    _price(p)


def _steady_arguments(p):
    _add_deployment(p)
    p.add_argument("--rate", type=float, help="requests per second (or --concurrency)")
    text = "users, each sending its next request when its last ends (a closed loop; or --rate)"
    p.add_argument("--concurrency", type=int, help=text)
    _add_workload(p)
    p.add_argument("--replicas", type=int, help="copies sharing the requests (1)")


def _frontier_arguments(p):
    _add_deployment(p, n_gpus=False)
    p.add_argument("--most-gpus", type=int, default=8, help="GPUs at most, per layout (8)")
    text = "users to sweep (1 2 4 ... 512)"
    p.add_argument("--concurrency", type=int, nargs="+", help=text)
    _add_workload(p)


def _plan_arguments(p):
    _add_deployment(p, n_gpus=False)
    p.add_argument("--rate", type=float, required=True, help="requests per second")
    p.add_argument("--ttft", type=float, required=True, help="time-to-first-token target, s")
    p.add_argument("--tpot", type=float, required=True, help="time-per-output-token target, s")
    _add_workload(p)
    _percentile(p)
    text = "one engine, pools of prefill and decode, or the cheaper (colocated)"
    p.add_argument("--layout", choices=ia.planning.LAYOUTS, default="colocated", help=text)
    p.add_argument("--most-gpus", type=int, default=64, help="GPUs at most, in all (64)")
    _price(p)


def _goodput_arguments(p):
    _add_deployment(p)
    p.add_argument("--ttft", type=float, required=True, help="time-to-first-token target, s")
    p.add_argument("--tpot", type=float, required=True, help="time-per-output-token target, s")
    _add_workload(p)
    p.add_argument("--replicas", type=int, help="copies sharing the requests (1)")
    _percentile(p)


def _kernels_arguments(p):
    _add_deployment(p)
    p.add_argument("--batch", type=int, default=1, help="requests in the step (1)")
    p.add_argument("--context-len", type=int, help="decode: tokens cached (2048)")
    p.add_argument("--prompt-len", type=int, help="prefill: prompt tokens (2048)")
    p.add_argument("--phase", choices=("decode", "prefill"), default="decode")


def _get(record: dict, path: str):
    for key in path.split("."):
        record = record.get(key) if isinstance(record, dict) else None
    return record


def _flat(record: dict, prefix: str = "") -> dict:
    """``record`` with nested dicts' keys joined by dots; a band's ends as ``_low``/``_high``;
    a list of sentences as one, joined by " | "."""
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flat(value, f"{name}."))
        elif prefix == "band." and isinstance(value, tuple | list):
            flat[f"{name}_low"], flat[f"{name}_high"] = value
        elif isinstance(value, list):  # sentences (calculate's notes): one cell
            flat[name] = " | ".join(map(str, value))
        else:
            flat[name] = value
    return flat


def _plain(value):
    """JSON's value: numpy scalars as Python numbers, non-finite numbers as null."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _show(value, kind) -> str:
    """``format.show``, and yes or no for a truth."""
    return ("yes" if value else "no") if isinstance(value, bool) else fmt.show(value, kind)


def _band_text(record, key, kind):
    band = _get(record, f"band.{key}")
    if not band:
        return ""
    low, high = band
    return f"  ({fmt.show(low, kind)} to {fmt.show(high, kind)})"


# What a subcommand took that is not an input: argparse's bookkeeping and the output's form.
_NOT_INPUTS = frozenset({"command", "function", "table", "output", "help", "version"})


def inputs(args) -> dict:
    """What a subcommand took, as ``--json`` carries it beside its answer: the model and the GPU
    as typed, then every option by the library's name of its argument (``--rate`` as
    ``requests_per_s``, ``--ttft`` as ``ttft_target``), each as given or by default; None where
    the library's default stands (``n_gpus``: 1, ``engine``: the newest vLLM, ...)."""
    names = {flag.removeprefix("--").replace("-", "_"): name for name, flag in FLAGS.items()}
    return {
        names.get(key, key): value for key, value in vars(args).items() if key not in _NOT_INPUTS
    }


def render(result, table, output: str | None, given: dict | None = None) -> str:
    """``result`` (a record or a list of them) as text: a table, JSON or CSV. JSON carries
    ``given`` (``inputs``), where there is any, as its ``inputs``: beside a record's keys, or
    with a list of records as its ``rows``."""
    records = result if isinstance(result, list) else [result]
    if output == "json":
        if given:
            rows = {"rows": result} if isinstance(result, list) else result
            result = {"inputs": given, **rows}
        return json.dumps(_plain(result), indent=2)
    if output == "csv":
        flat = [_flat(r) for r in records]
        columns = list(dict.fromkeys(k for r in flat for k in r))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: _plain(v) for k, v in r.items()} for r in flat)
        return buffer.getvalue().rstrip("\n")
    if isinstance(result, list):  # columns
        heads = [label for _, label, _ in table]
        rows = [[_show(_get(r, key), kind) for key, _, kind in table] for r in records]
        widths = [max(len(x) for x in column) for column in zip(heads, *rows, strict=True)]
        padded = (
            "  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip()
            for line in [heads, *rows]
        )
        return "\n".join(padded)
    shown = [
        (label, _show(_get(result, key), kind) + _band_text(result, key, kind))
        for key, label, kind in table
        if _get(result, key) is not None
    ]
    width = max(len(label) for label, _ in shown)
    lines = [f"{label.ljust(width)}  {value}" for label, value in shown]
    if any(band is not None for band in (result.get("band") or {}).values()):
        lines.append("(in brackets: where 8 of 10 held-out measurements fell, chapter 13)")
    if result.get("band_note"):  # a prediction outside every validated group says so
        lines.append(f"note: {result['band_note']}")
    lines += [f"note: {note}" for note in result.get("notes", ())]
    return "\n".join(lines)


# The library's arguments that the command line spells otherwise; every other option is the
# argument's name with dashes (--prompt-len for prompt_len).
FLAGS = {"requests_per_s": "--rate", "ttft_target": "--ttft", "tpot_target": "--tpot"}


def _flag(name: str) -> str:
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def flagged(message: str, typed: list[str], options=()) -> str:
    """A library refusal as the command line says it: every argument it names is named by its
    flag, where that flag was typed or is one of the subcommand's ``options`` (the library's
    names of its arguments, ``inputs``): ``--rate 0`` gives "--rate must be a positive
    number...", not "requests_per_s must be..."; ``--context-len`` past the window, "...
    --context-len + 1 tokens". A name with an underscore is an argument's wherever it stands; a
    plain word (``batch``, ``dtype``) only where the message starts with it or it is followed by
    "must", so that prose keeps its words."""
    names = set(options) | {
        name
        for name in (*FLAGS, *(w.split("=")[0].removeprefix("--").replace("-", "_") for w in typed))
        if any(word == _flag(name) or word.startswith(_flag(name) + "=") for word in typed)
    }
    names = {n for n in names if n not in ("model", "gpu")}  # positional: no flag

    def named(match):
        name = match.group(0)
        plain = "_" not in name
        if name not in names or (
            plain and match.start() > 0 and not message[match.end() :].startswith(" must")
        ):
            return name
        return _flag(name)

    # Identifiers not already part of a flag, a quoted value or a dotted name.
    return re.sub(r"(?<![\w.'\"-])[a-z][a-z0-9_]*(?![\w'\"(-])", named, message)


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: the process's); the exit status."""
    typed = sys.argv[1:] if argv is None else list(argv)
    # The subcommand is the first word that is not an option (the top level takes no values).
    p = parser(next((word for word in typed if not word.startswith("-")), ""))
    args = p.parse_args(typed)
    try:
        result = args.function(args)
    except (ValueError, KeyError, OSError) as error:  # the library's refusals name the input
        message = str(error) if not isinstance(error, KeyError) else error.args[0]
        options = inputs(args)
        p.exit(2, f"ia {args.command}: error: {flagged(message, typed, options)}\n")
    try:
        print(render(result, args.table, args.output, inputs(args)))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (Python flushes it at exit)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
