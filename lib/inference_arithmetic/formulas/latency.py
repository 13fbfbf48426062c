"""Time of a prefill and of a decode step of a transformer, on n GPUs, by the roofline.

Derived in chapters 08 (prefill and decode), 09 (batching) and 10 (parallelism). Each step
moves the weights it uses once and, in decode, every request's KV cache; its FLOPs are those
of chapter 04. The cache is counted at b_kv bytes per number, so that it can be stored in
another dtype than the weights (chapter 15); with one dtype for both, b_kv = b. Split over
n GPUs with tensor parallelism, the weights shrink n-fold, the cache as far as its heads
allow (``kv_split``), and every layer adds two all-reduces of the activations
(``formulas.parallel``).

Serving-time conventions, which differ from the FLOP counter's of chapter 04 on purpose: a
prompt's attention counts only the keys a token can see (causal, as FlashAttention computes
it) and runs at its own achieved rate eta_a; a step reads one embedding row per token, not
the whole table; an MLA model decodes in the absorbed form, as serving engines do, and
prefills in the expanded one.

Expert parallelism (chapter 12, ``parallel="expert"`` or ``"expert-dp"``) spreads an MoE
model's routed experts over the n GPUs, E/n each, and sends the tokens to them and back by two
all-to-alls a MoE layer. Its attention is tensor-parallel ("expert": every other weight split
n ways, as with tensor parallelism) or data-parallel ("expert-dp": each GPU keeps the whole
attention, the other layers' weights and the cache of its own share of the requests, the
practice for MLA models, whose latent cannot be split by heads).
"""

from __future__ import annotations

import functools

import sympy

from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.core.symbols import (
    B,
    D,
    E,
    E_s,
    F,
    F_e,
    H_kv,
    L,
    L_d,
    M,
    O,
    P_max,
    R,
    S,
    T,
    V,
    b,
    b_e,
    b_kv,
    b_v,
    eta_a,
    k,
    mu,
    n_gpus,
    pi,
)
from inference_arithmetic.formulas import kv_cache, roofline, transformer
from inference_arithmetic.formulas import parallel as parallelism

# The layouts' names, public here too (``latency.PARALLEL``), live where no SymPy is imported.
from inference_arithmetic.formulas.layouts import (  # noqa: F401  (NO_EXPERTS: kernels')
    EXPERT_PARALLEL,
    NO_EXPERTS,
    PARALLEL,
)

# The formulas, each an entry of the formula reference (book/appendix-formulas.md), and the
# names of the parallelisms. The helpers other formulas modules build on (``check_parallel``,
# ``work_split``, ``weight_number_bytes``, ``stored_weight_bytes``, ``at_sizes``) are public
# but not formulas of their own, and stay off that page.
__all__ = [
    "PARALLEL",
    "EXPERT_PARALLEL",
    "routed_expert_params",
    "experts_touched",
    "weight_bytes_read",
    "cache_bytes",
    "prefill_bytes",
    "decode_bytes",
    "weight_bytes_per_gpu",
    "kv_split",
    "cache_bytes_per_gpu",
    "draft_bytes_per_gpu",
    "activation_reserve",
    "memory_per_gpu",
    "memory_budget",
    "max_concurrency",
    "waves",
    "communication_time",
    "serving_compute_time",
    "prefill_compute_time",
    "prefill_memory_time",
    "prefill_time",
    "decode_compute_time",
    "decode_memory_time",
    "decode_step_time",
    "roof",
    "compute_bound",
    "mean_context",
    "last_context",
    "time_per_output_token",
    "request_time",
    "generation_time",
    "batches_in_flight",
    "output_throughput",
    "throughput",
]


def experts_touched(tokens):
    """Experts of one MoE layer that ``tokens`` tokens use between them, on average.

    Each token picks k of E experts; if the picks were uniform and independent, an expert is
    missed by all of them with probability (1 - k/E)^tokens. One token reads k experts; a
    large batch reads nearly all E.
    """
    return E * (1 - (1 - k / E) ** tokens)


def weight_number_bytes(arch, group):
    """Bytes per number of a group of ``arch``'s weights (``models.config.WEIGHT_GROUPS``): b for
    every group of a model that ships one format; a checkpoint that quantizes some groups
    (``arch.weight_formats``) has b_e for its experts and b_v for its vocabulary, b for the
    layers' other weights."""
    if not arch.weight_formats:
        return b
    return {"layers": b, "experts": b_e, "vocabulary": b_v}[group]


def stored_weight_bytes(arch, total, experts=0, vocabulary=0):
    """Bytes of ``total`` weights of which ``experts`` are experts' and ``vocabulary`` the
    embedding's and output head's, each group at its ``weight_number_bytes``: b total for a
    model in one format."""
    if not arch.weight_formats:
        return b * total
    layers = total - experts - vocabulary
    return b * layers + b_e * experts + b_v * vocabulary


def weight_bytes_read(arch, tokens):
    """Bytes of weights one forward pass over ``tokens`` tokens reads: all of a dense model
    (for an MoE model, only the experts the tokens touch), except the input embedding, of
    which it gathers one row per token (of the V rows at most). A tied embedding is read
    whole anyway, as the output projection. Each group at its own bytes per number
    (``stored_weight_bytes``)."""
    total = transformer.params(arch)
    vocabulary = transformer.vocabulary_params(arch)
    if not arch.tied_embeddings:
        unread_rows = V * D - sympy.Min(tokens, V) * D
        total, vocabulary = total - unread_rows, vocabulary - unread_rows
    if not arch.is_moe:
        return stored_weight_bytes(arch, total, 0, vocabulary)
    unread = _experts_weights(arch, E - experts_touched(tokens))
    experts = transformer.expert_params(arch) - unread
    return stored_weight_bytes(arch, total - unread, experts, vocabulary)


def _experts_weights(arch, count):
    """The weight matrices of ``count`` routed experts in every MoE layer (biases aside)."""
    matrices = 3 if arch.ffn == "gated" else 2
    expert = matrices * D * F_e
    return transformer.over_layers(arch, lambda moe: count * expert if moe else 0)


def cache_bytes(arch, mla_cache="latent"):
    """Chapter 06's KV cache of B requests of S tokens, at b_kv bytes per number."""
    return kv_cache.kv_cache_bytes(arch, mla_cache=mla_cache).subs(b, b_kv)


def prefill_bytes(arch, mla_cache="latent"):
    """A prefill of B sequences of T tokens reads the weights and writes their KV cache."""
    return weight_bytes_read(arch, B * T) + cache_bytes(arch, mla_cache).subs(S, T)


def decode_bytes(arch, mla_cache="latent"):
    """A decode step reads the weights and the KV cache of every one of the B requests."""
    return weight_bytes_read(arch, B) + cache_bytes(arch, mla_cache)


def check_parallel(parallel):
    """``parallel`` if it is one of ``PARALLEL``, else an error listing them: every formula
    that splits a step over the GPUs (here, ``formulas.continuous``, ``formulas.kernels``)
    checks its ``parallel`` with it."""
    if parallel not in PARALLEL:
        raise ArgumentError(f"parallel must be one of {PARALLEL}, got {parallel!r}")
    return parallel


def routed_expert_params(arch):
    """The routed experts of every MoE layer (not the shared ones): what expert parallelism
    spreads over the GPUs. 0 for a dense model."""
    if not arch.is_moe:
        return 0
    shared = transformer.over_layers(
        arch, lambda moe: E_s * transformer.ffn_params(arch, F_e) if moe else 0
    )
    return transformer.expert_params(arch) - (shared if arch.n_shared_experts else 0)


# --- Memory: what each of the n GPUs holds -----------------------------------------------------


def weight_bytes_per_gpu(arch, parallel="tensor"):
    """Bytes of weights on each of n GPUs: b N / n with tensor parallelism (and with expert
    parallelism whose attention is tensor-parallel: the experts E/n each, the rest split by
    heads); a pipeline's fullest stage holds ceil(L / n) of the L layers
    (``parallel.layers_per_stage``), and the same share of the rest, b N ceil(L / n) / L
    (b N / n when n divides L); with data-parallel attention ("expert-dp") each GPU holds every
    weight but the routed experts others hold, (n - 1) / n of them. Each group of weights at
    its own bytes per number (``stored_weight_bytes``)."""
    total, experts = transformer.params(arch), transformer.expert_params(arch)
    vocabulary = transformer.vocabulary_params(arch)
    if check_parallel(parallel) == "expert-dp":
        elsewhere = routed_expert_params(arch) * (n_gpus - 1) / n_gpus
        return stored_weight_bytes(arch, total - elsewhere, experts - elsewhere, vocabulary)
    return stored_weight_bytes(arch, total, experts, vocabulary) / _parts(parallel)


def _parts(parallel):
    """Into how many equal parts the model is split, as its fullest GPU holds it: n with tensor
    parallelism; in a pipeline, whose stages hold whole layers, L / ceil(L / n). The embedding
    and the head go with the layers' share, as the even split of chapter 12 counts them."""
    if check_parallel(parallel) != "pipeline":
        return n_gpus
    return L / parallelism.layers_per_stage()


def kv_split(arch, parallel="tensor"):
    """Into how many parts the KV cache is divided over the n GPUs. A pipeline gives each
    stage its layers, the fullest ceil(L / n) of them: L / ceil(L / n) (n when n divides L).
    Tensor parallelism gives each GPU its KV heads, and each GPU keeps at
    least one: min(n, H_kv), so past H_kv GPUs the heads are copied, not divided. MLA's latent
    is shared by all heads: every GPU keeps it whole, 1 (as vLLM and SGLang do). With
    data-parallel attention ("expert-dp") each GPU keeps the whole cache of its own 1/n of the
    requests: n, whatever the heads."""
    if check_parallel(parallel) == "pipeline":
        return _parts(parallel)
    if parallel == "expert-dp":
        return n_gpus
    return sympy.Integer(1) if arch.is_mla else sympy.Min(n_gpus, H_kv)


def cache_bytes_per_gpu(arch, parallel="tensor"):
    """Bytes of the KV cache on each of n GPUs: B requests of S tokens for each of the
    ``batches_in_flight`` (a pipeline keeps n batches, each stage its layers of all of them),
    over ``kv_split``."""
    return batches_in_flight(parallel) * cache_bytes(arch) / kv_split(arch, parallel)


def at_sizes(expr, arch):
    """``expr`` with ``arch``'s sizes put in as numbers: a second model's formula (a draft
    model's) beside the target's, whose own sizes stay symbols for the scenario to fill. Not
    a formula of its own: a helper of ``draft_bytes_per_gpu`` and ``kernels.draft_time``."""
    sizes = arch.sizes()
    known = {s: sizes.get(s.name) for s in expr.free_symbols}
    return expr.xreplace({s: sympy.sympify(v) for s, v in known.items() if v is not None})


def draft_bytes_per_gpu(draft, parallel="tensor"):
    """Bytes each GPU holds for a separate draft model (speculative decoding with a smaller
    model, ``draft`` a ``ModelConfig``; 0 for none, or a head): its weights and its own KV
    cache of B requests of S tokens, in the target's formats, split over the n GPUs as tensor
    parallelism splits them. vLLM loads the draft beside the target at the target's
    tensor-parallel degree and keeps the draft's layers in the same cache blocks as the
    target's, so both come out of one memory budget.

    >>> from inference_arithmetic.models.config import model
    >>> draft_bytes_per_gpu(model("llama-3.1-8b"))  # 8,030,261,248 weights; 8 KV heads
    65536*batch*context_len*kv_bytes_per_number/Min(8, n_gpus) + 8030261248*bytes_per_number/n_gpus
    """
    if draft is None or isinstance(draft, str):
        return sympy.Integer(0)
    held = weight_bytes_per_gpu(draft, "tensor") + cache_bytes_per_gpu(draft, "tensor")
    return at_sizes(held, draft)


def activation_reserve(arch):
    """Bytes each GPU keeps free for one step's activations: a step of the token budget
    P_max through the widest layer, the feed-forward block's intermediate (2 F wide when
    gated: gate and up; k + shared experts' F_e in an MoE layer), split over the n GPUs.
    vLLM measures this peak with a dummy step of its token budget before it sizes the cache."""
    width = (k + arch.n_shared_experts) * F_e if arch.is_moe else F
    if arch.is_moe and arch.n_dense_layers:
        width = sympy.Max(width, F)
    gated = 2 if arch.ffn == "gated" else 1
    return b * P_max * gated * width / n_gpus


def memory_per_gpu(arch, parallel="tensor", draft=None):
    """Weights, KV cache and the activation reserve on each GPU (a pipeline's fullest), and a
    draft model's weights and cache (``draft_bytes_per_gpu``): what must fit in its memory
    budget."""
    weights = weight_bytes_per_gpu(arch, parallel)
    held = weights + cache_bytes_per_gpu(arch, parallel) + activation_reserve(arch)
    return held + draft_bytes_per_gpu(draft)


def memory_budget():
    """The bytes of one GPU an engine may fill, mu M (vLLM's ``gpu_memory_utilization``: the
    rest holds activations, the engine's workspace and the CUDA context)."""
    return mu * M


def max_concurrency(arch, parallel="tensor", draft=None):
    """Requests of S cached tokens per batch whose KV cache fits beside the weights in the
    budget mu M of each of n GPUs (``memory_per_gpu`` at most ``memory_budget``, solved for B;
    a draft model's weights and cache, ``draft``, in it too)."""
    drafted = draft_bytes_per_gpu(draft)
    drafted_weights = drafted.subs(B, 0)  # 0 without a draft model: the plain formula
    free = memory_budget() - weight_bytes_per_gpu(arch, parallel) - activation_reserve(arch)
    per_request = cache_bytes_per_gpu(arch, parallel).subs(B, 1) + drafted.subs(B, 1)
    return sympy.floor((free - drafted_weights) / (per_request - drafted_weights))


def waves(arch, parallel="tensor", draft=None):
    """Waves in which an engine runs B requests sent at once, at most ``max_concurrency`` at
    a time (S: the tokens of one whole request)."""
    return sympy.ceiling(B / max_concurrency(arch, parallel, draft))


# --- Time: a step is the roofline of its share of the work, plus the messages -----------------


def work_split(parallel):
    """Into how many parts a step's work is divided, one GPU doing one part while the others
    wait for nothing: tensor parallelism splits every layer n ways; a pipeline's stages run in
    turn, so one request's step takes one whole model's work, stage after stage (1). Expert
    parallelism splits the experts' work n ways and attention's by heads or by requests: n too
    (the busiest GPU's extra share, lambda_e, is the kernel model's). ``formulas.continuous``
    divides its steps by it too."""
    return 1 if check_parallel(parallel) == "pipeline" else n_gpus


def communication_time(arch, tokens, parallel="tensor"):
    """Messages between GPUs in a step over ``tokens`` tokens: two all-reduces a layer
    (tensor), or n - 1 hand-offs between stages (pipeline); zero on one GPU. Expert
    parallelism: two all-to-alls a MoE layer, and with attention split by heads ("expert") an
    all-reduce after it in every layer and after each dense layer's feed-forward block."""
    mode = check_parallel(parallel)
    if mode == "tensor":
        return parallelism.tensor_parallel_comm_time(arch, tokens)
    if mode == "pipeline":
        return parallelism.pipeline_parallel_comm_time(arch, tokens)
    dense = L_d if arch.n_dense_layers else 0
    per_all_to_all = parallelism.all_to_all_time(parallelism.expert_parallel_bytes(tokens))
    messages = (L - dense) * parallelism.ALL_TO_ALLS_PER_MOE_LAYER * per_all_to_all
    if mode == "expert":
        messages += (L + dense) * parallelism.all_reduce_time(b * tokens * D)
    return messages


def serving_compute_time(flops, attention):
    """Seconds of a step's ``flops``, of which ``attention`` are attention's (the score and
    value products): the matrix products at eta_c of the peak, attention at eta_a, the rate
    FlashAttention kernels reach (chapter 13 cites it)."""
    return roofline.compute_time(flops - attention) + attention / (eta_a * pi)


def prefill_compute_time(arch, parallel="tensor"):
    """Seconds of a prefill's FLOPs on one GPU's share: causal attention (each token attends
    to the tokens before it, as FlashAttention computes, not the counter's full T x T), MLA
    expanded, logits of the last position only."""
    flops = transformer.step_flops(arch, causal=True, last_logits_only=True).subs(S, 0)
    attention = transformer.attention_flops(arch, causal=True).subs(S, 0)
    return serving_compute_time(flops, attention) / work_split(parallel)


def _bytes_time(weights, cache, arch, parallel):
    """Seconds one GPU's share of ``weights`` and ``cache`` bytes takes to move: tensor
    parallelism divides the weights n ways and the cache ``kv_split`` ways; a pipeline's
    stages move theirs one after another, the whole model's. With data-parallel attention
    ("expert-dp") ``weights`` is the GPU's own (``_weights_read``)."""
    if check_parallel(parallel) == "pipeline":
        return roofline.memory_time(weights + cache)
    own = weights if parallel == "expert-dp" else weights / n_gpus
    return roofline.memory_time(own + cache / kv_split(arch, parallel))


def _weights_read(arch, tokens, parallel):
    """Bytes of weights a step over ``tokens`` tokens reads (``weight_bytes_read``); with
    data-parallel attention, what one GPU reads: all but the routed experts on the others,
    (n - 1) / n of those the tokens touch."""
    read = weight_bytes_read(arch, tokens)
    if parallel != "expert-dp":
        return read
    touched = _experts_weights(arch, experts_touched(tokens))
    return read - weight_number_bytes(arch, "experts") * touched * (n_gpus - 1) / n_gpus


def prefill_memory_time(arch, parallel="tensor"):
    """Seconds of a prefill's memory traffic (weights, and the cache it writes) on one GPU's
    share."""
    cache = cache_bytes(arch).subs(S, T)
    return _bytes_time(_weights_read(arch, B * T, parallel), cache, arch, parallel)


def roof(compute, memory):
    """The roofline: a step takes the longer of its compute and memory times. Built as it
    is: SymPy would compare the two sides symbolically, which costs more than all the rest and
    never finds one always longer (they are in different units of the GPU)."""
    return sympy.Max(compute, memory, evaluate=False)


@functools.lru_cache(maxsize=256)  # built once per model: a request's formulas reuse it
def prefill_time(arch, parallel="tensor"):
    """Seconds of a prefill of B sequences of T tokens: the time to first token."""
    compute, memory = prefill_compute_time(arch, parallel), prefill_memory_time(arch, parallel)
    return roof(compute, memory) + communication_time(arch, B * T, parallel)


def decode_compute_time(arch, mla="absorbed", parallel="tensor"):
    """Seconds of a decode step's FLOPs on one GPU's share (an MLA model absorbed, as serving
    engines decode it; ``mla="reexpand"`` is the naive contrast)."""
    flops = transformer.decode_flops(arch, mla=mla)
    attention = transformer.attention_flops(arch, mla=mla).subs(T, 1)
    return serving_compute_time(flops, attention) / work_split(parallel)


def decode_memory_time(arch, parallel="tensor"):
    """Seconds of a decode step's memory traffic (weights and every cache) on one GPU's share."""
    return _bytes_time(_weights_read(arch, B, parallel), cache_bytes(arch), arch, parallel)


@functools.lru_cache(maxsize=256)  # built once per model: a request's formulas reuse it
def decode_step_time(arch, mla="absorbed", parallel="tensor", context=S):
    """Seconds of one decode step of B requests with S tokens cached each (or ``context``,
    put in before the roofline is built)."""
    at = {S: context}
    compute = decode_compute_time(arch, mla, parallel).subs(at)
    return roof(compute, decode_memory_time(arch, parallel).subs(at)) + communication_time(
        arch, B, parallel
    )


def compute_bound(compute, memory):
    """The roofline's verdict as an expression: true where the compute side is the longer
    (``compute_bound(decode_compute_time(m), decode_memory_time(m))``)."""
    return sympy.GreaterThan(compute, memory, evaluate=False)


# --- A request: the prefill, then O - 1 decode steps -------------------------------------------


@functools.cache
def mean_context():
    """The mean context of a request's O - 1 decode steps, S = T, ..., T + O - 2 (a single
    output token is timed at one step of S = T, as ``ia.generation`` does)."""
    return T + sympy.Max(O - 2, 0) / 2


@functools.cache
def last_context():
    """The context of a request's last decode step."""
    return T + sympy.Max(O - 2, 0)


def time_per_output_token(arch, mla="absorbed", parallel="tensor"):
    """A decode step at the mean context: the mean time per output token after the first.
    Exact while one bound holds and no sliding window fills up (a step is linear in S)."""
    return decode_step_time(arch, mla, parallel, mean_context())


def request_time(ttft, tpot):
    """Seconds from the prompt to the last of O tokens: the first comes out of the prefill
    (``ttft``), each further one takes a decode step (``tpot`` on average)."""
    return ttft + (O - 1) * tpot


def generation_time(arch, mla="absorbed", parallel="tensor"):
    """Seconds from the prompts to the last of O output tokens of B requests, in closed form
    (``request_time`` of ``prefill_time`` and ``time_per_output_token``)."""
    ttft = prefill_time(arch, parallel)
    return request_time(ttft, time_per_output_token(arch, mla, parallel))


def batches_in_flight(parallel="tensor"):
    """Batches a deployment works on at once: one with tensor parallelism; n in a pipeline,
    which keeps every stage busy with a batch of its own."""
    return n_gpus if check_parallel(parallel) == "pipeline" else sympy.Integer(1)


def output_throughput(seconds, parallel="tensor"):
    """Output tokens per second when B requests of O tokens take ``seconds``, on each of R
    replicas: one batch at a time with tensor parallelism. A pipeline keeps
    ``batches_in_flight`` and moves at the pace of its fullest stage, which takes ceil(L / n)
    of the L layers' share of ``seconds`` per batch: L / ceil(L / n) batches in ``seconds``
    (n when n divides L)."""
    pace = _parts(parallel) if check_parallel(parallel) == "pipeline" else 1
    return R * pace * B * O / seconds


def throughput(arch, mla="absorbed", parallel="tensor"):
    """Output tokens per second of B requests in closed form (pipeline: n batches in flight)."""
    return output_throughput(generation_time(arch, mla, parallel), parallel)
