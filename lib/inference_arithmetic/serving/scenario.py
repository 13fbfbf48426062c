"""A deployment and its workload, checked once when it is made: what every serving function
evaluates.

>>> s = Scenario("llama-3.1-70b", "h100-sxm", n_gpus=4, batch=8)
>>> s.cache_dtype, s.values()["n_gpus"], s.values()["seq_len"]
('bf16', 4, 2048)
>>> Scenario("llama-3.1-8b", "h100-sxm", n_gpus=3)
Traceback (most recent call last):
...
inference_arithmetic.core.numeric.ArgumentError: llama-3.1-8b's 32 attention heads and 8 KV ...

The keyword functions (``ia.prefill_time``, ``ia.generation``, ``ia.calculate``, ...) are thin
ways to make a ``Scenario`` and evaluate formulas of ``formulas.latency`` at its ``values()``.
Its rules are data: each input's type and range (``checks``), then ``CHECKS``, each a SymPy
condition and a message template, which the calculator's page prints to JavaScript and fills
the same way. Chapter 16 lists them.

The formulas are built in SymPy only where a compiled one is not in the disk cache
(``core.cache``): this module imports neither SymPy nor a formulas module until a rule or a
step is built, so that a warm ``ia calculate`` answers without them.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from inference_arithmetic.core import cache, checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.dtypes import (
    activation_bytes,
    bytes_per_number,
    cache_format,
    compute_format,
    dtype_name,
    fastest_wide,
)
from inference_arithmetic.core.numeric import ArgumentError, CompiledFormulas, UnknownName, numeric
from inference_arithmetic.formulas.layouts import EXPERT_PARALLEL, NO_EXPERTS, PARALLEL
from inference_arithmetic.hardware import engines
from inference_arithmetic.hardware.engines import engine as registry_engine
from inference_arithmetic.hardware.gpus import GPU
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.models.config import (
    AUTO,
    ModelConfig,
    model_names,
    weight_formats,
    weight_number_values,
)
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.serving.efficiencies import (
    EFFICIENCIES,
    FIGURES,
    OVERHEADS,
    found_figures,
)
from inference_arithmetic.serving.rules import CHECKS, Check
from inference_arithmetic.serving.speculative import Speculative, check_target, speculation

__all__ = [
    "STEPS",
    "STEP_FORMULAS",
    "DEFAULT_STEP",
    "DEFAULT_ENGINE",
    "DEFAULT_LINK_LATENCY",
    "DEFAULT_NETWORK_BANDWIDTH",
    "DEFAULT_MEMORY_UTILIZATION",
    "DEFAULT_TOKEN_BUDGET",
    "DEFAULT_EXPERT_IMBALANCE",
    "MAX_TOKENS",
    "Check",
    "CHECKS",
    "NO_RATE",
    "NO_LINK",
    "NO_WINDOW",
    "ONE_TOKEN",
    "check_decodes",
    "Scenario",
    "DEPLOYMENT",
    "tensor_parallel_degrees",
    "pipeline_degrees",
    "expert_parallel_degrees",
    "NOT_KERNELS",
    "IMBALANCE",
]


class _Imported(Mapping):
    """A mapping of names to what ``module:attribute`` paths name (a module where there is no
    attribute), each imported when it is looked up: its names are known without SymPy, which
    the formulas modules import."""

    def __init__(self, paths: dict[str, str]):
        self._paths = paths

    def __getitem__(self, name: str):
        module, _, attribute = self._paths[name].partition(":")
        found = importlib.import_module(module)
        return getattr(found, attribute) if attribute else found

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._paths!r})"


_FORMULAS = "inference_arithmetic.formulas"
STEPS = _Imported({"kernels": f"{_FORMULAS}.kernels", "roofline": f"{_FORMULAS}.latency"})
"""How a scenario times a step: kernel by kernel, each at its own roofline with its fixed cost
(``formulas.kernels``, the default), or as chapter 08's single roofline of the whole step
(``formulas.latency``). Both modules build the same formulas by the same names."""
STEP_FORMULAS = _Imported(
    {"kernels": f"{_FORMULAS}.kernels:step", "roofline": f"{_FORMULAS}.continuous:step"}
)
"""A continuously batching engine's step of B_d decodes and P_t prompt tokens, by the same
``step``: each a function of the model and its ``parallel`` (a pipeline's step is one
micro-batch's, stage by stage; expert parallelism's, the kernels' step of the busiest GPU)."""
DEFAULT_STEP = "kernels"
"""How a scenario times its steps unless it says (``STEPS``)."""
DEFAULT_ENGINE = "vllm"
"""The engine a scenario runs on unless it names one (``ia.engine_names()``): vLLM's family
name, its newest version, 0.11 (8,192 tokens a step and 1,024 sequences on a large GPU, 2,048
and 256 on another). The steady state's percentiles are held to the simulation
(``continuous.AGREEMENT``) at its step, far larger than a prompt, and at vLLM 0.7's of 512
tokens, the version of the fit set's vLLM runs (chapter 13), which names it: ``"vllm@0.7"``."""

DEFAULT_NETWORK_BANDWIDTH = 400e9 / 8
"""Bytes per second each GPU sends to other boards: one 400 Gb/s InfiniBand NDR port per GPU,
as on a DGX H100 (eight ConnectX-7 cards; NVIDIA DGX H100 User Guide)."""
DEFAULT_TOKEN_BUDGET = 8192
"""Tokens one step may put through the model where an engine states no budget of its own (a
static engine): the step the activation reserve is sized for. A continuous engine has its own
(``Engine.token_budget``, or its ``large_gpu``'s on a large GPU: ``Engine.batch``)."""
DEFAULT_EXPERT_IMBALANCE = round(59_337 / 50_302, 2)
"""The busiest GPU's tokens over the mean GPU's in an MoE layer with expert parallelism
(``expert_imbalance``, lambda_e), unless given: SGLang's DeepSeek-V3 prefill on 4 x 8 H100s
(EP32, 4,096-token prompts) ran at 50,302 tokens per second per node with the experts' loads
as served, 59,337 with a simulated perfect balance (LMSYS blog, "Deploying DeepSeek with PD
Disaggregation and Large-scale Expert Parallelism on 96 H100 GPUs", 2025-05-05, "Overall
Throughput"). The whole step slowed by their ratio, and only its MoE part waits for the
busiest GPU, so the layer's own ratio is at least this: a lower bound, read from a source,
never fitted. DeepSeek-V3's EPLB (redundant experts) exists to bring it towards 1."""
DEFAULT_LINK_LATENCY = 1e-6
"""Seconds per message between GPUs (a ring all-reduce sends 2(n - 1) of them; chapter 12)."""
DEFAULT_MEMORY_UTILIZATION = 0.9
"""Fraction of GPU memory an engine may fill (vLLM's ``gpu_memory_utilization`` default)."""
MAX_TOKENS = 1 << 22
"""Tokens of one request (prompt and output) for a model that states no context window: the
step-by-step timing evaluates every step, so the library needs some bound."""

NO_RATE = (
    "{gpu} has no peak FLOP rate for {compute_dtype}, the format the weights would be "
    "multiplied in; it has: {rates}. Give compute_dtype, one of those: {fastest} is its fastest "
    "of 16 bits or more, what weight-only quantization multiplies in"
)
"""The message for a compute format the GPU has no FLOP rate for (a ``KeyError``)."""
NO_LINK = (
    "{gpu} has no interconnect_bandwidth, so it serves alone; got n_gpus={n_gpus} (give the "
    "device a link's bytes per second each way)"
)
"""The message for more than one device that has no link to the others."""
NO_WINDOW = (
    "{model} states no context window; the library times requests of at most "
    f"{MAX_TOKENS:,} tokens, got prompt_len + output_len = {{tokens:,}}"
)
"""The message for a request past ``MAX_TOKENS`` of a model without a context window."""
ONE_TOKEN = (
    "output_len must be a whole number from 2 up, got {output_len}: a request of one output "
    "token is only a prefill, with no decode step and no time per output token "
    "(ia.prefill_time times it)"
)
"""The message for a report or a steady state of requests of one output token."""


NOT_KERNELS = (
    "prefix_hit_rate and speculative change the step kernel by kernel (step='kernels'); "
    "chapter 08's single roofline (step={step!r}) does not model them"
)
"""The message for a serving option on the single roofline of a whole step."""


@functools.lru_cache(maxsize=256)
def _compiled_check(check: Check, arch: ModelConfig, parallel: str):
    return numeric(check.holds(arch, parallel, None))


def rules_of(arch: ModelConfig, parallel: str, draft=None) -> tuple[tuple, CompiledFormulas]:
    """The checks that apply to ``arch`` with ``parallel`` (and a draft model's memory,
    ``draft``), and their conditions compiled as one function (1 where a check holds)."""
    applying = tuple(c for c in CHECKS if c.applies(arch, parallel))
    return applying, cache.formulas(_conditions, arch, parallel, draft)


def _conditions(arch: ModelConfig, parallel: str, draft=None) -> dict:
    """The conditions of the checks that apply to ``arch`` with ``parallel``, by name."""
    return {c.name: c.holds(arch, parallel, draft) for c in CHECKS if c.applies(arch, parallel)}


def _named(name: str) -> Check:
    """The check of ``CHECKS`` named ``name``."""
    (check,) = (c for c in CHECKS if c.name == name)
    return check


def _shown(check_name: str, arch: ModelConfig, parallel: str, draft=None) -> dict:
    """The numbers the message of the check named ``check_name`` shows, by name: a planner
    meets many deployments that break a rule, each explained, so they are compiled once."""
    fields = _named(check_name).fields
    return {name: expr(arch, parallel, draft) for name, (expr, _) in fields.items()}


def default_budget(gpu=None) -> int:
    """The token budget of a scenario that names none: the default engine's on ``gpu`` (a
    name or a ``GPU``; ``Engine.batch``), without one its own, the budget of a GPU that is not
    large (a static engine's stand-in, ``DEFAULT_TOKEN_BUDGET``, where it has none).

    >>> default_budget("h100-sxm"), default_budget("a100-80gb"), default_budget()
    (8192, 2048, 2048)
    """
    e = registry_engine(DEFAULT_ENGINE)
    if gpu is not None:
        e = e.on(registry_gpu(gpu))
    return e.token_budget or DEFAULT_TOKEN_BUDGET


def tensor_parallel_degrees(arch, most: int = 64) -> list[int]:
    """The tensor-parallel degrees up to ``most`` that split ``arch``'s heads (``CHECKS``);
    ``arch`` is what ``ia.model`` takes, as in the degree functions below."""
    return _degrees("heads", arch, "tensor", most)


def pipeline_degrees(arch, most: int = 64) -> list[int]:
    """The pipeline degrees up to ``most`` that leave each stage a layer (``CHECKS``)."""
    return _degrees("layers", arch, "pipeline", most)


def expert_parallel_degrees(arch, most: int = 512) -> list[int]:
    """The expert-parallel degrees up to ``most`` that spread ``arch``'s experts evenly
    (``CHECKS``); none for a dense model."""
    arch = registry_model(arch)
    return _degrees("experts", arch, "expert-dp", most) if arch.is_moe else []


def _degrees(name, arch, parallel, most):
    # Kept (``core.cache``): every message of a scenario names its model's degrees.
    arch = registry_model(arch)  # a name, a config, ... (ia.model)
    return list(cache.data(_degrees_holding, name, arch, parallel, most))


def _degrees_holding(name, arch, parallel, most):
    holds = _compiled_check(_named(name), arch, parallel)
    return [n for n in range(1, most + 1) if holds.from_values({**arch.sizes(), "n_gpus": n})]


@dataclass(frozen=True)
class Scenario:
    """A model served on ``n_gpus`` GPUs (``parallel``: "tensor", "pipeline", or for an MoE
    model "expert" or "expert-dp", its experts spread over the GPUs with ``expert_imbalance``
    the busiest GPU's load over the mean, its attention split by heads or data-parallel) in given
    formats and efficiencies, and its workload: ``batch`` requests of ``prompt_len`` prompt and
    ``output_len`` output tokens, all at once, or with ``in_waves`` as many at a time as fit.

    ``model`` and ``gpu`` are registry names or objects. ``dtype`` stores the weights: "auto"
    (the default) as the checkpoint ships, each group of weights in its config's format
    (``models.config.weight_formats``; bf16 for a model without a quantization block), or one
    format for all. ``compute_dtype`` (default: the layers' format's own,
    ``dtypes.compute_format``: fp4 for nvfp4, bf16 for int4-g128) is the format the GPU
    computes in, so weight-only int4 is ``dtype="int4", compute_dtype="bf16"`` (W4A16);
    ``cache_dtype`` (default: the compute format) stores the KV cache. Made, it has been
    checked: every input's type and range, the heads or layers against the GPUs, the context
    window, a FLOP rate for the compute format, and the memory: weights and the cache of the
    whole batch (in waves: of one request) within
    ``memory_utilization`` of each GPU. Errors name the argument, its value and what is valid.

    ``prefix_hit_rate`` (0 to 1) is the share of each prompt's tokens already in the engine's
    prefix cache: a prefill computes only the rest, attending to the whole prompt. Each
    request's cache still counts whole in memory: a hit may be its own conversation's earlier
    turn, and the blocks that requests running together share (vLLM's automatic prefix
    caching) are a saving the hit rate alone does not tell (chapter 15's shared prefix
    counts it). ``speculative`` (``serving.speculative``: a method's name, a dict or a
    ``Speculative``) drafts tokens for each decoding request to verify a step.
    """

    model: ModelConfig | str
    gpu: GPU | str
    n_gpus: int = 1
    parallel: str = "tensor"
    dtype: str = AUTO
    cache_dtype: str | None = None
    compute_dtype: str | None = None
    engine: engines.Engine | str = DEFAULT_ENGINE  # the profile's, not serving.engine.Engine
    step: str = DEFAULT_STEP
    compute_efficiency: float | None = None
    bandwidth_efficiency: float | None = None
    attention_efficiency: float | None = None
    decode_attention_efficiency: float | None = None
    kernel_overhead: float | None = None
    step_overhead: float | None = None
    request_overhead: float | None = None
    allreduce_latency: float | None = None
    link_latency: float = DEFAULT_LINK_LATENCY
    network_bandwidth: float = DEFAULT_NETWORK_BANDWIDTH
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    token_budget: int | None = None
    expert_imbalance: float = DEFAULT_EXPERT_IMBALANCE
    replicas: int = 1
    batch: int = 1
    prompt_len: int = 2048
    output_len: int = 256
    in_waves: bool = False
    prefix_hit_rate: float = 0.0
    speculative: Speculative | str | dict | None = None
    # The rules not checked here: a step's scenario (``one_step``) is held to the context
    # window by what the step reads, before it is made (not a field: the class says it).
    _unchecked = ()

    def __post_init__(self):
        device = registry_gpu(self.gpu)
        normal = {
            "model": registry_model(self.model),
            "gpu": device,
            # Resolved once for the GPU (``Engine.on``): everything after reads its batch.
            "engine": registry_engine(self.engine).on(device),
            "step": checks.choice("step", self.step, tuple(STEPS)),
            "n_gpus": checks.count("n_gpus", self.n_gpus),
            "parallel": checks.choice("parallel", self.parallel, PARALLEL),
            "dtype": self.dtype if self.dtype == AUTO else dtype_name(self.dtype),
            "batch": checks.count("batch", self.batch),
            "prompt_len": checks.count("prompt_len", self.prompt_len),
            "output_len": checks.count("output_len", self.output_len),
            "link_latency": checks.amount("link_latency", self.link_latency, "seconds", high=1.0),
            "network_bandwidth": checks.amount(
                "network_bandwidth",
                self.network_bandwidth,
                "bytes per second",
                positive=True,
                high=1e15,
            ),
            "replicas": checks.count("replicas", self.replicas),
            "prefix_hit_rate": checks.share("prefix_hit_rate", self.prefix_hit_rate),
            "speculative": speculation(self.speculative),
            "expert_imbalance": check_imbalance(self.expert_imbalance),
        }
        for name in (*EFFICIENCIES, "memory_utilization"):
            if name == "memory_utilization" or getattr(self, name) is not None:
                normal[name] = checks.fraction(name, getattr(self, name))
        for name in OVERHEADS:
            if getattr(self, name) is not None:
                normal[name] = checks.amount(name, getattr(self, name), "seconds", high=1.0)
        formats = weight_formats(normal["model"], normal["dtype"])
        if not normal["model"].weight_formats:  # one format: "auto" is bf16
            normal["dtype"] = formats["layers"]
        compute = self.compute_dtype or formats["layers"]
        normal["compute_dtype"] = compute_format(compute, "compute_dtype")
        cache = self.cache_dtype or normal["compute_dtype"]
        normal["cache_dtype"] = cache_format(cache, "cache_dtype")
        if not isinstance(self.in_waves, bool):
            raise ArgumentError(f"in_waves must be True or False, got {self.in_waves!r}")
        budget = self.token_budget
        if budget is None:  # the engine's own
            budget = normal["engine"].token_budget or DEFAULT_TOKEN_BUDGET
        normal["token_budget"] = checks.count("token_budget", budget)
        for name, value in normal.items():
            object.__setattr__(self, name, value)
        if self.step_options and self.step != "kernels":
            raise ArgumentError(NOT_KERNELS.format(step=self.step))
        object.__setattr__(self, "weight_formats", formats)
        object.__setattr__(self, "_figures", self._resolve())
        arch = self.model
        if self.parallel in EXPERT_PARALLEL and not arch.is_moe:
            error = ArgumentError(NO_EXPERTS.format(model=arch.name))
            error.check = "experts"
            raise error
        check_target(self.speculative, arch)
        tokens = self.prompt_len + self.output_len
        if arch.context_window is None and tokens > MAX_TOKENS and "window" not in self._unchecked:
            raise ArgumentError(NO_WINDOW.format(model=arch.name, tokens=tokens))
        if self.compute_dtype not in self.gpu.peak_flop_rate:
            raise UnknownName(NO_RATE.format(**self.named_settings()))
        if self.n_gpus > 1 and self.gpu.interconnect_bandwidth is None:
            raise ArgumentError(NO_LINK.format(gpu=self.gpu.name, n_gpus=self.n_gpus))
        values = self.values()
        if self.in_waves:  # requests wait their turn: one at a time must fit
            values["batch"] = 1
        rules, conditions = rules_of(arch, self.parallel, self.formula_options.get("draft"))
        holds = conditions.from_values(values)
        for check in rules:
            if not holds[check.name] and check.name not in self._unchecked:
                error = ArgumentError(self.explain(check, values))
                error.check = check.name  # which rule failed, for callers that answer it
                raise error

    def _resolve(self) -> dict[str, float]:
        """The efficiencies and fixed costs the step takes, each as given, else found
        (``found_figures``)."""
        layers = self.weight_formats["layers"]
        found = found_figures(self.gpu, self.engine, self.compute_dtype, layers, self.step)
        given = {name: getattr(self, name) for name in FIGURES if getattr(self, name) is not None}
        return {**found, **given}

    def figure(self, name: str) -> float:
        """An efficiency or fixed cost as the step takes it (``_resolve``)."""
        return self._figures[name]

    @property
    def step_options(self) -> tuple[str, ...]:
        """What the step does beyond plain steps (``kernels.OPTIONS``): none by default, so
        the formulas are the plain step's."""
        used = {"prefix": self.prefix_hit_rate > 0, "speculative": self.speculative is not None}
        return tuple(name for name, on in used.items() if on)

    @property
    def formula_options(self) -> dict:
        """The keyword arguments that give the step formulas this scenario's options (none
        without them, so that chapter 08's roofline, which takes none, serves too)."""
        if not self.step_options:
            return {}
        draft = self.speculative.draft if self.speculative else None
        return {"options": self.step_options, "draft": draft}

    @property
    def tokens_per_step(self) -> float:
        """Output tokens each decoding request gets from one step: 1, or speculating, the
        mean a verification yields (``Speculative.tokens_per_step``)."""
        return self.speculative.tokens_per_step if self.speculative else 1.0

    @property
    def timing(self):
        """The formulas that time this scenario's steps (``STEPS[step]``)."""
        return STEPS[self.step]

    def named_settings(self) -> dict:
        """The settings a message may name, as text."""
        return {
            "model": self.model.name,
            "gpu": self.gpu.name,
            "rates": ", ".join(self.gpu.peak_flop_rate),
            "fastest": fastest_wide(self.gpu.peak_flop_rate),
            "degrees": ", ".join(map(str, tensor_parallel_degrees(self.model))),
            "expert_degrees": ", ".join(map(str, expert_parallel_degrees(self.model))),
            **{
                f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)
                if f.name not in ("model", "gpu")
            },
        }

    def explain(self, check: Check, values: Mapping | None = None) -> str:
        """``check``'s message for this scenario."""
        values = self.values() if values is None else values
        draft = self.formula_options.get("draft")
        numbers = {}
        if check.fields:  # compiled once for the model and parallelism (``_shown``)
            compiled = cache.formulas(_shown, check.name, self.model, self.parallel, draft)
            numbers = compiled.from_values(values)
        shown = {name: fmt.show(numbers[name], kind) for name, (_, kind) in check.fields.items()}
        # The batch the rule was checked at: a scenario in waves checks one request.
        return check.message.format(**{**self.named_settings(), "batch": values["batch"], **shown})

    def values(self) -> dict:
        """Every value the serving formulas take, keyed by symbol name: the model's sizes, the
        GPU's figures in the compute format, the formats' bytes, the settings, the workload
        (T is the prompt; S is left to the formula's caller)."""
        values = {
            **self.model.sizes(),
            **self.gpu.figures(self.compute_dtype),
            **weight_number_values(self.model, self.dtype),
            "kv_bytes_per_number": bytes_per_number(self.cache_dtype),
            "activation_bytes_per_number": activation_bytes(self.compute_dtype),
            "n_gpus": self.n_gpus,
            **self._figures,
            "kv_shared": float(self.engine.kv_shared),
            "attention_fused": float(self.engine.flash_attention or self.step == "roofline"),
            "eager_prefill": float(self.engine.eager in ("prefill", "all")),
            "eager_decode": float(self.engine.eager == "all"),
            "link_latency": self.link_latency,
            "network_bandwidth": self.network_bandwidth,
            "memory_utilization": self.memory_utilization,
            "token_budget": self.token_budget,
            "expert_imbalance": self.expert_imbalance,
            "replicas": self.replicas,
            "batch": self.batch,
            "seq_len": self.prompt_len,
            "output_len": self.output_len,
        }
        if self.model.context_window:
            values["context_window"] = self.model.context_window
        if "prefix" in self.step_options:
            values["prefix_hit_rate"] = self.prefix_hit_rate
        if self.speculative:
            values.update(self.speculative.values())
        return values

    def evaluate(self, expr, **values):
        """``expr`` at this scenario's values (``values`` override or add, e.g. a context)."""
        return numeric(expr).from_values({**self.values(), **values})

    def replace(self, **changes) -> Scenario:
        """A copy with ``changes``, checked again."""
        return dataclasses.replace(self, **changes)

    @property
    def options(self) -> dict:
        """The deployment's settings as the keyword functions' arguments (the engine by its
        name)."""
        options = {name: getattr(self, name) for name in DEPLOYMENT}
        return {**options, "engine": self.engine.name}


@dataclass(frozen=True)
class _Step(Scenario):
    """A ``Scenario`` of one step, made by ``one_step``, which checked the window."""

    _unchecked = ("window",)


def one_step(model, gpu, argument: str, value, phase: str, **options) -> Scenario:
    """The ``Scenario`` of one step at ``argument`` = ``value`` tokens, with ``output_len=1``:
    a prefill of that prompt (``phase="prefill"``) or a decode step with that many tokens
    cached (``"decode"``); ``options`` are the Scenario's other arguments. The step is held to
    what it reads, within the context window (``MAX_TOKENS`` for a model that states none): a
    prefill its ``value`` tokens, a decode step ``value + 1``. A whole request's rule,
    T + O <= S_max, would name arguments the step does not take and refuse a prefill of the
    whole window; the error's ``check`` is "window" all the same."""
    value = checks.count(argument, value)
    arch = registry_model(model)
    added = 1 if checks.choice("phase", phase, ("prefill", "decode")) == "decode" else 0
    check_window(arch, argument, value, added)
    return _Step(arch, gpu, prompt_len=value, output_len=1, **options)


def check_decodes(output_len) -> None:
    """Refuse requests that never decode (``ONE_TOKEN``): ``calculate`` and ``steady_state``
    report a time per output token, which a request of one output token does not have."""
    # Refused rather than answered with a time per token no token took: a request of one
    # output token is its prefill, and Little's law counts lambda (O - 1) tau decoding, none.
    if checks.count("output_len", output_len) < 2:
        raise ArgumentError(ONE_TOKEN.format(output_len=output_len))


def check_window(arch: ModelConfig, argument: str, value: int, added: int = 0) -> None:
    """Refuse ``argument`` = ``value`` tokens (read with ``added`` more) past the context
    window of ``arch`` (``MAX_TOKENS`` for a model that states none), naming that argument;
    the error's ``check`` is "window", as a request's scenario names it."""
    most = arch.context_window or MAX_TOKENS
    if value + added > most:
        reads = f"; a decode step reads {argument} + 1 tokens (the cache and the new one)"
        error = ArgumentError(
            (
                f"{arch.name} reads at most {most:,} tokens (its context window)"
                if arch.context_window
                else f"{arch.name} states no context window; the library times steps of at "
                f"most {most:,} tokens"
            )
            + (reads if added else "")
            + f": {argument} may be at most {most - added:,}, got {value:,}"
        )
        error.check = "window"
        raise error


IMBALANCE = (1.0, 1e3)
"""The range of ``expert_imbalance``: 1 (balanced) up to a thousand (a bound keeps the step's
time finite); the calculator's page reads it from here."""


def check_imbalance(value) -> float:
    """``expert_imbalance``: the busiest GPU's load over the mean, from 1 (balanced) up."""
    low, high = IMBALANCE
    if not checks.is_real(value) or not low <= value <= high:
        raise ArgumentError(
            f"expert_imbalance must be a number from {low:g} (every GPU's experts equally busy) "
            f"to {high:g}, the busiest GPU's tokens over the mean GPU's, got {value!r}"
        )
    return float(value)


DEPLOYMENT = (
    "n_gpus",
    "dtype",
    "parallel",
    "cache_dtype",
    "compute_dtype",
    "engine",
    "step",
    *EFFICIENCIES,
    *OVERHEADS,
    "link_latency",
    "network_bandwidth",
    "memory_utilization",
    "token_budget",
    "expert_imbalance",
    "replicas",
    "prefix_hit_rate",
    "speculative",
)
"""The scenario's deployment settings, which every keyword function takes as ``**deployment``."""


UNEXPECTED = "{function}() takes no argument {names}; it takes {valid}"
"""The message for a keyword that neither a function nor the deployment settings take."""


def deployment_keywords(function):
    """Give ``function(..., **deployment)`` a signature that lists the deployment settings
    ``Scenario`` takes (with their defaults, keyword-only), for ``help`` and the docs: one
    place says what they are and what they default to. A keyword that is neither the
    function's nor a setting is refused by name (``UNEXPECTED``), not deep in a Scenario
    that would blame its own arguments."""
    import inspect

    signature = inspect.signature(function)
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    fields = inspect.signature(Scenario).parameters
    names = {p.name for p in own}
    extra = [
        fields[name].replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for name in DEPLOYMENT
        if name not in names
    ]
    taken = frozenset(names.union(DEPLOYMENT))

    @functools.wraps(function)
    def checked(*args, **keywords):
        if not taken.issuperset(keywords):
            unknown = ", ".join(sorted(set(keywords) - taken))
            valid = ", ".join(p.name for p in own + extra)
            message = UNEXPECTED.format(function=function.__name__, names=unknown, valid=valid)
            raise TypeError(message)
        return function(*args, **keywords)

    checked.__signature__ = signature.replace(parameters=own + extra)
    return checked


def warm() -> None:
    """Compile and keep in the disk cache the checks of every registry model, with tensor and
    pipeline parallelism: what making its first scenario compiles."""
    for name in model_names():
        for parallel in ("tensor", "pipeline"):
            rules_of(registry_model(name), parallel)
