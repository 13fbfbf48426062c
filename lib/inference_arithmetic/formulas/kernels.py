"""A step as a GPU runs it: a sequence of kernels, each with its own roofline, plus fixed costs.

Chapter 08 times a step by one roofline: the longer of all its FLOPs at the GPU's rate and all
its bytes at its bandwidth. A GPU runs the step one kernel after another, and each kernel is
bound by its own side: a decode step's matrix products may turn compute-bound at a large batch
while its attention, which reads every cached token once, stays bound by memory. So a step
takes the *sum* of its kernels' rooflines, never less than chapter 08's single one, and each
kernel pays a fixed cost (``tau_k``: its launch, ramp-up and tail) and the engine one per step
(``tau_s``: scheduling, sampling, the host's synchronisation) and one per request it schedules
(``tau_r``). Derived in chapter 08's section
"Kernel by kernel"; chapter 13 shows how much of the measured time each term explains.

One step of a continuously batching engine decodes one token of each of B_d requests (S
cached tokens each) and prefills P_t prompt tokens of prompts of T: a prefill is the step
with B_d = 0 and P_t = B T, a decode step the one with P_t = 0 and B_d = B. Per layer:

- the input norm; the attention projections (one product of the token rows by the query, key
  and value weights); RoPE and the cache write; attention (prompts: causal, at FlashAttention's
  rate eta_a, less on short prompts, T / (T + T_a), and on small heads, d / (d + d_a);
  decodes: reading every request's cache at eta_kv of the bandwidth, each KV head once for its
  query group when ``sigma_kv`` is 1, once per query head when it is 0, the L2 cache serving
  h_kv of the repeats); the output projection; an all-reduce of the activations (tensor
  parallelism);
- the residual and the second norm; the feed-forward products (gate and up, the activation,
  down), or an MoE layer's router and grouped expert products; a second all-reduce;

and per step the embedding rows, the final norm, the logits of each decoding request and each
prompt's last token, and the sampling. Weights travel at b bytes per number, the cache at
b_kv, the activations and every message at b_a. Tensor parallelism divides each layer's
products and heads n ways (the cache ``latency.kv_split`` ways); a pipeline runs every layer on
its stage in turn and hands the activations on n - 1 times. Expert parallelism (chapter 12)
gives each GPU E/n whole routed experts, of which the busiest GPU's take lambda_e times the
mean GPU's token-expert pairs, with two all-to-alls a MoE layer to send the tokens there and
back; its attention is split by heads ("expert") or run by each GPU on its own requests, with
the whole weights ("expert-dp": the busiest GPU's share of the requests, ``own_requests``).

>>> from inference_arithmetic.models.config import model
>>> [k.name for k in step_kernels(model("llama-3.1-8b"))][:4]
['input norm', 'attention projections', 'rope and cache write', 'prompt attention']
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy

from inference_arithmetic.core.evaluation import longer, put
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.core.symbols import (
    B,
    B_d,
    D,
    E,
    E_s,
    F,
    F_e,
    H,
    H_kv,
    L,
    L_d,
    L_w,
    P,
    P_t,
    S,
    T,
    T_a,
    V,
    W,
    alpha,
    alpha_ar,
    alpha_rg,
    b,
    b_a,
    b_kv,
    beta,
    beta_ar,
    beta_rg,
    d_a,
    d_h,
    d_nope,
    d_rope,
    d_v,
    eps_d,
    eps_p,
    eta_a,
    eta_c,
    eta_kv,
    eta_m,
    g_e,
    h_kv,
    k,
    m_c,
    n_gpus,
    n_link,
    phi_a,
    pi,
    r_kv,
    sigma_kv,
    tau_a,
    tau_h,
    tau_k,
    tau_r,
    tau_s,
)
from inference_arithmetic.formulas import kv_cache, latency, techniques, transformer
from inference_arithmetic.formulas import parallel as parallelism

__all__ = [
    "OPTIONS",
    "ATTENTION_HEAD",
    "KINDS",
    "Kernel",
    "matmul_rate",
    "gemm",
    "elementwise",
    "all_reduce_time",
    "own_requests",
    "step_kernels",
    "fixed_cost",
    "launches",
    "host_time",
    "host_wait",
    "step_time",
    "draft_time",
    "step",
    "prefill_time",
    "decode_step_time",
    "time_per_output_token",
    "generation_time",
    "throughput",
]

COMPOSED = (
    "step_time",
    "step",
    "prefill_time",
    "decode_step_time",
    "time_per_output_token",
    "generation_time",
    "throughput",
)
"""The formulas composed of ``step_kernels``' (the formula reference shows each for one model)."""

KINDS = ("matmul", "attention", "elementwise", "collective")
OPTIONS = ("prefix", "speculative")
"""What an engine may do beyond plain steps, each changing the step's formula (chapter 15):
``prefix``, a share h_p of each prompt already in the prefix cache
(``techniques.prefilled_tokens`` of its T tokens prefilled, attending to all T); and
``speculative``, each decoding request verifying gamma drafted tokens, gamma + 1 rows
(``techniques.verified_tokens``). Without them the formulas are the plain step's, unchanged."""
"""What a kernel is: a product with weights, attention, a pass over activations, a message."""


ATTENTION_HEAD = 128
"""The head (numbers per query-key product) the GPUs' FlashAttention figures were read at
(``prompt_attention`` and ``attention_half_len``: FlashAttention-3's forward pass, head dim
128); a head of d numbers runs at (d / (d + d_a)) / (128 / (128 + d_a)) of that rate."""


@dataclass(frozen=True)
class Kernel:
    """One kernel of a step: its FLOPs, bytes and seconds on one GPU (each a SymPy expression
    of the step's sizes), and how many times a step runs it (``count``: L for most kernels of
    a layer, 1 for the embedding and the head). ``time`` is its own roofline, the longer of
    its two sides (``compute``: its FLOPs at its rate; ``memory``: its bytes at its bandwidth),
    plus its fixed cost; ``bound`` is 1 where the compute side is the longer; ``runs`` is 1
    where the step has rows for it (its launches: ``count`` times ``runs``). A message has no
    sides: its time is the link's."""

    name: str
    kind: str
    flops: sympy.Expr
    nbytes: sympy.Expr
    time: sympy.Expr
    bound: sympy.Expr
    count: sympy.Expr = sympy.Integer(1)
    compute: sympy.Expr = sympy.Integer(0)
    memory: sympy.Expr = sympy.Integer(0)
    runs: sympy.Expr = sympy.Integer(1)


def _runs(rows):
    """1 when a kernel has rows to work on, 0 when the step has none for it (a prefill has no
    decoding requests): its fixed cost is paid only when it runs. ``rows`` is a count."""
    return sympy.Min(rows, 1)


def _kernel(name, kind, flops, nbytes, rate, bandwidth, rows, count=1, fixed=tau_k):
    compute, memory = flops / rate, nbytes / bandwidth
    time = sympy.Max(compute, memory, evaluate=False) + fixed * _runs(rows)
    bound = sympy.Piecewise((1, compute >= memory), (0, True))
    count = sympy.sympify(count)
    return Kernel(name, kind, flops, nbytes, time, bound, count, compute, memory, _runs(rows))


def matmul_rate(rows):
    """FLOP/s of a product of ``rows`` token rows: eta_c of the peak for a large one, less for
    few rows, rows / (rows + m_c) of it, since the GPU computes its tiles whole (measured on
    LLM-shaped weights: cuBLAS on an H100, ``GPU.achieved``). A single row is a matrix-vector
    product, which libraries run with a kernel of its own that wastes no rows: its rate is the
    large products', and it is bound by its weights' stream."""
    tiles = sympy.Max(sympy.Min(rows - 1, 1), 0)  # 0 for one row, 1 from two rows up
    return eta_c * pi * rows / (rows + m_c * tiles)


def gemm(name, rows, inner, outer, count=1, weights=None, per_matrix=None, grouped=False, stored=b):
    """A product of ``rows`` token rows by an ``inner`` x ``outer`` weight matrix: 2 rows inner
    outer FLOPs at ``matmul_rate`` of the rows each matrix multiplies (``per_matrix``, default
    ``rows``: an MoE layer's experts each take a share); the weights (``weights`` numbers,
    default inner outer) at ``stored`` bytes each (b, or an expert's b_e, the head's b_v:
    ``latency.weight_number_bytes``) and the rows in and out at b_a, at eta_m of the
    bandwidth. A ``grouped`` product (one kernel over many experts' matrices) reaches g_e of
    a single product's rate and bandwidth."""
    weights = inner * outer if weights is None else weights
    nbytes = stored * weights + b_a * rows * (inner + outer)
    flops = 2 * rows * inner * outer
    # At least one row (an expert with no token in the step reads nothing and does nothing).
    rate = matmul_rate(sympy.Max(rows if per_matrix is None else per_matrix, 1))
    bandwidth = eta_m * beta
    if grouped:
        rate, bandwidth = g_e * rate, g_e * bandwidth
    return _kernel(name, "matmul", flops, nbytes, rate, bandwidth, rows, count)


def elementwise(name, rows, numbers, count=1, weights=0):
    """A pass over activations (a norm, the residual, an activation function, RoPE): it reads
    and writes ``numbers`` per row at b_a bytes each (and ``weights`` at b, a norm's scale), at
    eta_m of the bandwidth; its FLOPs are not counted (they are not matrix products)."""
    nbytes = b_a * rows * numbers + b * weights
    return _kernel(name, "elementwise", 0, nbytes, pi, eta_m * beta, rows, count)


def all_reduce_time(nbytes):
    """An all-reduce of ``nbytes`` over the n GPUs, by the faster of two algorithms, as
    engines choose by message size: the engine's own for small messages (its measured smallest
    time alpha_ar, growing by 2 (n - 1) / n of the bytes at its measured beta_ar) or NCCL's for
    large ones (alpha_rg, and the same share of the bytes at beta_rg, or at the network's rate
    past one NVLink domain: ``parallel.link_bandwidth_used``). Zero on one GPU. Past one
    domain only the ring is left: the engine's one-shot kernel writes into its peers' memory
    over the link (vLLM's custom all-reduce is for one node), so it cannot reach GPUs beyond."""
    share = 2 * (n_gpus - 1) / n_gpus * nbytes
    one_shot = alpha_ar + share / beta_ar
    ring = alpha_rg + share / sympy.Min(beta_rg, parallelism.link_bandwidth_used())
    single = sympy.Piecewise((0, sympy.Eq(n_gpus, 1)), (1, True))
    return single * sympy.Piecewise((sympy.Min(one_shot, ring), n_gpus <= n_link), (ring, True))


def _collective(name, nbytes, rows, count):
    time = all_reduce_time(nbytes)
    # A call on one GPU launches nothing (``all_reduce_time`` is 0 there).
    runs = _runs(rows) * sympy.Piecewise((0, sympy.Eq(n_gpus, 1)), (1, True))
    return Kernel(
        name, "collective", 0, nbytes, time, sympy.Integer(0), sympy.sympify(count), runs=runs
    )


def _attention_projections(arch, tokens, share, mla):
    """The products before and after attention, as (name, rows, inner, outer) of one layer."""
    if not arch.is_mla:
        qkv = (H + 2 * H_kv) * d_h / share
        return [("attention projections", tokens, D, qkv)], [
            ("output projection", tokens, H * d_h / share, D)
        ]
    # MLA: decodes absorbed (attention on the latent), prompts expanded per head; the query's
    # weights (compressed or not) and the latent's down-projection as one product of width D.
    down = transformer.mla_query_params(arch) + D * (r_kv + d_rope)
    before = [("attention projections", tokens, D, down / (D * share))]
    before.append(("latent expansion", P_t, r_kv, H * (d_nope + d_v) / share))
    after = [("output projection", tokens, H * d_v / share, D)]
    if mla == "absorbed":
        before.append(("latent absorption", B_d, H * d_nope / share, r_kv))
        after.insert(0, ("latent absorption (values)", B_d, r_kv, H * d_v / share))
    else:  # every cached token expanded again, every step, as the reference implementation
        before.append(("cache expansion", B_d * S, r_kv, H * (d_nope + d_v) / share))
    return before, after


def _attention(arch, share, split, windowed, mla, new=T, rows=1):
    """Attention of one layer, prompts and decodes apart (``windowed``: a sliding-window
    layer, whose decodes read at most W - 1 cached tokens). Each prompt computes its last
    ``new`` tokens (``OPTIONS``' prefix), whose queries attend to the T - new cached before
    them, read from the cache; each decode ``rows`` queries, which read its cache once."""
    qk_prompt, v_prompt = transformer.attention_widths(arch, "reexpand")
    qk_decode, v_decode = transformer.attention_widths(arch, mla)
    pairs = T * (T + 1) / 2 if not windowed else transformer.attention_keys(arch, True, True)
    if windowed:
        pairs = pairs.subs(S, 0)
    cached = T - new  # tokens of each prompt in the prefix cache
    if new != T:  # the cached tokens' own pairs were computed before
        pairs = pairs - pairs.subs(T, cached)
    prompts = P_t / new  # prompts of T tokens, new of them computed, each
    prompt_flops = 2 * prompts * pairs * H * (qk_prompt + v_prompt) / share
    # Queries, keys and values in, the output out, per prompt token (expanded, for MLA).
    numbers = H * (2 * qk_prompt + 2 * v_prompt) if arch.is_mla else (2 * H + 2 * H_kv) * d_h
    prompt_bytes = b_a * P_t * numbers / share
    if new != T:  # and the cached prefix's keys and values, read once per prompt
        held = sympy.Min(cached, W) if windowed else cached
        stored = kv_cache.numbers_per_token(arch) / split
        prompt_bytes = prompt_bytes + b_kv * prompts * held * stored
    read = sympy.Min(S, W - 1) if windowed else S
    decode_flops = 2 * rows * B_d * read * H * (qk_decode + v_decode) / share
    # Re-expanded MLA reads what it expanded: keys and values of every head, in b_a.
    expanded = arch.is_mla and mla == "reexpand"
    per_token = kv_cache.numbers_per_token(arch, "expanded" if expanded else "latent")
    # A kernel that reads a KV head once per query head reads it H / H_kv times; the L2 cache
    # serves h_kv of the repeats, the rest come from memory again.
    again = (H / H_kv - 1) * (1 - h_kv)
    reads = 1 if arch.is_mla else sigma_kv + (1 - sigma_kv) * (1 + again)
    decode_bytes = (b_a if expanded else b_kv) * B_d * read * per_token * reads / split
    # FlashAttention's rate grows with the prompt's length: T / (T + T_a) of its long-prompt rate;
    # and with the head: each query-key pair's exponential and rescaling do not shrink with it,
    # so a head of d numbers (the mean of its two products' widths) runs at d / (d + d_a) of
    # an endless head's rate, taken relative to the figures' head (ATTENTION_HEAD).
    head = (qk_prompt + v_prompt) / 2
    heads = head / (head + d_a) * (ATTENTION_HEAD + d_a) / ATTENTION_HEAD
    prompt_rate = eta_a * pi * T / (T + T_a) * heads
    prompt = _kernel(
        "prompt attention",
        "attention",
        phi_a * prompt_flops,
        phi_a * prompt_bytes,
        prompt_rate,
        eta_m * beta,
        phi_a * P_t,
    )
    # Without a fused kernel (phi_a = 0) attention is two products over the whole square of
    # query-key pairs, its scores written, read and rewritten by the softmax and read again,
    # in fp32 (4 bytes), 4 passes: the prompt's length squared in memory traffic.
    square = new * T if not windowed else new * sympy.Min(T, W)
    unfused_flops = 2 * prompts * square * H * (qk_prompt + v_prompt) / share
    scores = 4 * 4 * prompts * square * H / share
    unfused = _kernel(
        "prompt attention (unfused)",
        "attention",
        (1 - phi_a) * unfused_flops,
        (1 - phi_a) * (prompt_bytes + scores),
        matmul_rate(T),
        eta_m * beta,
        (1 - phi_a) * P_t,
    )
    decode = _kernel(
        "decode attention",
        "attention",
        decode_flops,
        decode_bytes,
        eta_a * pi,
        eta_kv * beta,
        B_d,
        fixed=tau_a,
    )
    return prompt, unfused, decode


def _ffn(arch, tokens, share, moe, spread=False):
    """The feed-forward kernels of one layer: dense (gate and up, activation, down) or MoE
    (router, the experts the tokens touch in one grouped product each way, shared experts).
    ``spread``: the routed experts are spread over the n GPUs, whole (expert parallelism):
    the busiest GPU holds E/n of the experts and takes its ``parallel.busiest_share`` of the
    token-expert pairs (lambda_e / n, at most all), on that share of the experts the tokens
    touch, as far as its own E/n go."""
    gated = arch.ffn == "gated"
    widths = 2 if gated else 1
    if not moe:
        return [
            gemm("feed-forward up", tokens, D, widths * F / share),
            elementwise("activation", tokens, (widths + 1) * F / share),
            gemm("feed-forward down", tokens, F / share, D),
        ]
    touched = latency.experts_touched(tokens)
    pairs = tokens * k  # token-expert pairs: each expert's rows, summed
    per_expert = pairs / sympy.Max(touched, k)  # rows of a touched expert (none: no rows)
    up = widths * F_e / share
    stored = latency.weight_number_bytes(arch, "experts")
    routed_share = share
    if spread:
        # The busiest GPU's share of the pairs lands on as many more of its experts as it can
        # (few tokens: one row each) and beyond its E / n on more rows each (many tokens).
        busiest = parallelism.busiest_share()  # min(lambda_e, n) / n of the pairs
        touched, pairs = sympy.Min(busiest * touched, E / n_gpus), busiest * pairs
        per_expert, up, routed_share = pairs / sympy.Max(touched, busiest * k), widths * F_e, 1
    kernels = [
        gemm("router", tokens, D, E),
        elementwise("expert routing", tokens, 2 * E),
        gemm(
            "experts up", pairs, D, up, 1, touched * D * up, per_expert, grouped=True, stored=stored
        ),
        elementwise("expert activation", pairs, (widths + 1) * F_e / routed_share),
        gemm(
            "experts down",
            pairs,
            F_e / routed_share,
            D,
            weights=touched * F_e / routed_share * D,
            per_matrix=per_expert,
            grouped=True,
            stored=stored,
        ),
    ]
    if arch.n_shared_experts:
        kernels += [
            gemm("shared experts up", tokens, D, widths * E_s * F_e / share, stored=stored),
            gemm("shared experts down", tokens, E_s * F_e / share, D, stored=stored),
        ]
    return kernels


def _with_count(kernel, count):
    return Kernel(**{**kernel.__dict__, "count": kernel.count * count})


def _options(options) -> tuple[str, ...]:
    """``options`` checked against ``OPTIONS``, in their order (one formula per set)."""
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise ArgumentError(
            f"unknown step options {', '.join(sorted(unknown))}; choose from {', '.join(OPTIONS)}"
        )
    return tuple(o for o in OPTIONS if o in options)


def _widths(options):
    """Tokens each prompt prefills and rows each decoding request puts through a step."""
    new = techniques.prefilled_tokens() if "prefix" in options else T
    rows = techniques.verified_tokens() if "speculative" in options else 1
    return new, rows


ROUTED = (
    "experts up",
    "expert activation",
    "experts down",
    "all-to-all (dispatch)",
    "all-to-all (combine)",
)
"""The kernels of expert parallelism that work on the whole step's tokens, spread over the
GPUs: each GPU's routed experts and the all-to-alls. With data-parallel attention every other
kernel works on one GPU's own requests (``own_requests``)."""


def own_requests(parallel):
    """What a GPU's kernels put in for the step's decodes and prompt tokens: the step's
    own (an empty mapping) but with data-parallel attention ("expert-dp"), where each GPU runs
    its own requests: the busiest GPU's, its even share of them but at least one decode, or
    one whole prompt of T tokens, where the step has any, max(B_d / n, min(B_d, 1))."""
    if parallel != "expert-dp":
        return {}
    return {
        B_d: sympy.Max(B_d / n_gpus, sympy.Min(B_d, 1)),
        P_t: sympy.Max(P_t / n_gpus, sympy.Min(P_t, T)),
    }


def _on_own_requests(kernel, own):
    if not own or kernel.name in ROUTED:
        return kernel
    fields = ("flops", "nbytes", "time", "bound", "compute", "memory", "runs")
    changed = {f: sympy.sympify(getattr(kernel, f)).xreplace(own) for f in fields}
    return Kernel(**{**kernel.__dict__, **changed})


def _all_to_alls(tokens):
    """Expert parallelism's dispatch of a MoE layer's tokens to their experts' GPUs and the
    combine of the results back, of the busiest GPU (``parallel.expert_parallel_bytes``)."""
    nbytes = parallelism.expert_parallel_bytes(tokens, b_a)
    time = parallelism.all_to_all_time(nbytes)
    return [
        Kernel(f"all-to-all ({name})", "collective", 0, nbytes, time, sympy.Integer(0))
        for name in ("dispatch", "combine")
    ]


@functools.lru_cache(maxsize=256)
def step_kernels(arch, parallel="tensor", mla="absorbed", options=()) -> tuple[Kernel, ...]:
    """Every kernel of a step of B_d decoding requests and P_t prompt tokens, with the times
    each runs (module docstring), and what ``options`` (``OPTIONS``) change. Times are one
    GPU's: a tensor-parallel GPU's share of each layer; a pipeline's layers one after
    another, stage after stage; with expert parallelism the busiest GPU's."""
    new, rows = _widths(_options(options))
    mode = latency.check_parallel(parallel)
    tensor = mode == "tensor"
    spread = mode in latency.EXPERT_PARALLEL
    if spread and not arch.is_moe:
        raise ArgumentError(latency.NO_EXPERTS.format(model=arch.name))
    heads = mode in ("tensor", "expert")  # attention split by heads
    share = n_gpus if heads else sympy.Integer(1)
    split = latency.kv_split(arch, parallel) if heads else sympy.Integer(1)
    tokens = rows * B_d + P_t
    transformer.check_mla(mla)
    before, after = _attention_projections(arch, tokens, share, mla)
    # The weights no product reads (norms, biases, attention sinks), read with the norms.
    matrices = transformer.matmul_weights(arch, "reexpand")
    expansion = r_kv * H * (d_nope + d_v) if arch.is_mla else 0
    extras = transformer.over_layers(
        arch, lambda moe: transformer.layer_params(arch, moe, True) - matrices(moe) - expansion
    )
    layer = [elementwise("input norm", tokens, 2 * D, weights=extras / (L * share))]
    layer += [gemm(*row) for row in before]
    cache_numbers = kv_cache.numbers_per_token(arch) / split
    rope = 2 * (H + H_kv) * d_h / share if not arch.is_mla else 2 * d_rope * (H + 1)
    layer.append(
        _kernel(
            "rope and cache write",
            "elementwise",
            0,
            b_a * tokens * rope + b_kv * tokens * cache_numbers,
            pi,
            eta_m * beta,
            tokens,
        )
    )
    kernels = [_with_count(kernel, L) for kernel in layer]
    full = L - L_w if arch.n_window_layers else L
    for windowed, count in ((False, full), (True, L_w if arch.n_window_layers else 0)):
        if count != 0:
            kernels += [
                _with_count(kr, count)
                for kr in _attention(arch, share, split, windowed, mla, new, rows)
            ]
    message = b_a * tokens * D
    layer = [gemm(*row) for row in after]
    if heads:
        layer.append(_collective("all-reduce (attention)", message, tokens, 1))
    layer.append(elementwise("residual and norm", tokens, 3 * D))
    kernels += [_with_count(kernel, L) for kernel in layer]
    dense = (L_d if arch.n_dense_layers else 0) if arch.is_moe else L
    for moe, count in ((False, dense), (True, L - dense)):
        if count != 0:
            kernels += [
                _with_count(kr, count) for kr in _ffn(arch, tokens, share, moe, spread and moe)
            ]
    layer = [elementwise("residual", tokens, 3 * D)]
    if tensor:
        layer.append(_collective("all-reduce (feed-forward)", message, tokens, 1))
    kernels += [_with_count(kernel, L) for kernel in layer]
    if spread:  # the dense layers' products split by heads' all-reduce; the MoE layers' messages
        if heads and dense != 0:
            reduce = _collective("all-reduce (feed-forward)", message, tokens, 1)
            kernels.append(_with_count(reduce, dense))
        kernels += [_with_count(kr, L - dense) for kr in _all_to_alls(tokens)]
    logits = rows * B_d + P_t / new  # each decoding request's next tokens, each prompt's first
    vocab = latency.weight_number_bytes(arch, "vocabulary")
    gathered = vocab * (sympy.Min(tokens, V) * D if not arch.tied_embeddings else tokens * D)
    if arch.max_positions:  # learned positions: a row each too (GPT-2)
        gathered = gathered + vocab * sympy.Min(tokens, P) * D
    kernels += [
        _kernel("embedding", "elementwise", 0, gathered + b_a * tokens * D, pi, eta_m * beta, 1),
        elementwise("final norm", logits, 2 * D, weights=transformer.final_norm_params(arch)),
        gemm(
            "logits",
            logits,
            D,
            V / share,
            weights=(D + int(arch.lm_head_bias)) * V / share,
            stored=vocab,
        ),
        elementwise("sampling", logits, 2 * V / share),
    ]
    if mode == "pipeline":
        handoff = (n_gpus - 1) * (message / parallelism.link_bandwidth_used() + alpha)
        kernels.append(Kernel("stage hand-offs", "collective", 0, message, handoff, 0))
    own = own_requests(parallel)
    return tuple(_on_own_requests(kernel, own) for kernel in kernels)


def fixed_cost(parallel="tensor", prompt=T):
    """The engine's own seconds in a step: tau_s, and tau_r for each request it schedules
    (each decode, each prompt of ``prompt`` tokens computed; with data-parallel attention,
    each GPU's host its own)."""
    return (tau_s + tau_r * (B_d + P_t / prompt)).xreplace(own_requests(parallel))


def _kernels_time(kernels) -> sympy.Expr:
    """The seconds the GPU spends on ``kernels``: each its count of times."""
    return sum((kr.count * kr.time for kr in kernels), sympy.Integer(0))


def launches(arch, parallel="tensor", mla="absorbed", options=()) -> sympy.Expr:
    """Kernels a step launches: each of ``step_kernels`` ``count`` times where it runs
    (``runs``). An engine running the step op by op launches at least one operator for each;
    fused kernels are one operator, unfused ones several, so this counts the fewest.

    >>> from inference_arithmetic.models.config import model
    >>> launches(model("llama-3.1-8b")).subs({P_t: 0, B_d: 1, n_gpus: 1})  # a decode, one GPU
    10*n_layers + 4
    """
    kernels = step_kernels(arch, parallel, mla, _options(options))
    return sum((kr.count * kr.runs for kr in kernels), sympy.Integer(0))


def host_time(arch, parallel="tensor", mla="absorbed", options=()) -> sympy.Expr:
    """The host's seconds dispatching and launching a step's kernels one by one, where the
    engine runs the step eagerly: tau_h for each of its ``launches``, in a step with prompt
    tokens if the engine runs those eagerly (eps_p), in a step of decodes alone if it runs
    those eagerly (eps_d); 0 for a step replayed from a CUDA graph (one launch in all).

    >>> from inference_arithmetic.models.config import model
    >>> host_time(model("llama-3.1-8b")).subs({P_t: 0, B_d: 1, n_gpus: 1})
    eager_decode*host_op_cost*(10*n_layers + 4)
    """
    prompts = sympy.Min(P_t, 1)  # 1 when the step prefills, 0 for decodes alone
    eager = eps_p * prompts + eps_d * (1 - prompts)
    return eager * tau_h * launches(arch, parallel, mla, options)


def host_wait(arch, parallel="tensor", mla="absorbed", options=()) -> sympy.Expr:
    """Seconds the GPU waits for the host in an eager step: the host's ``host_time`` beyond
    the kernels' own, 0 where the GPU is the slower. PyTorch launches asynchronously: the host
    enqueues each operator and goes on to the next while the GPU runs the queue, so the two
    overlap and the step lasts the longer of the two; the host waits for the GPU only at the
    step's end (sampling reads the tokens back), which ``fixed_cost`` keeps apart."""
    gpu = _kernels_time(step_kernels(arch, parallel, mla, _options(options)))
    return longer(host_time(arch, parallel, mla, options) - gpu, 0)


@functools.lru_cache(maxsize=256)
def step_time(arch, parallel="tensor", mla="absorbed", options=(), draft=None):
    """Seconds of one step of B_d decodes and P_t prompt tokens: the longer of its kernels'
    times, summed, and the host's launches where it runs them eagerly (``host_time``; the
    kernels' time plus ``host_wait``), plus the engine's ``fixed_cost``, and, speculating, the
    draft's (``draft_time``)."""
    options = _options(options)
    new, _ = _widths(options)
    fixed = fixed_cost(parallel, new)
    gpu = _kernels_time(step_kernels(arch, parallel, mla, options))
    total = longer(gpu, host_time(arch, parallel, mla, options)) + fixed
    if "speculative" in options and draft is not None:
        total = total + draft_time(arch, parallel, mla, options, draft)
    return total


DRAFTS = ("head", "model")
"""What drafts the tokens a speculating step verifies, where it costs GPU time: ``"head"``,
one layer of the target's own shape with its embedding and output head (an EAGLE-3 head, a
DeepSeek MTP module); or a smaller model (a ``ModelConfig``). An n-gram lookup in the
prompt runs on the host: no draft at all (``None``)."""


@functools.lru_cache(maxsize=64)
def draft_time(arch, parallel="tensor", mla="absorbed", options=(), draft="head"):
    """Seconds the draft adds to a step: gamma passes over the B_d decoding requests, the
    first also over the step's P_t prompt tokens (the draft keeps a cache of its own), each
    pass the draft's kernels (no engine overhead: the passes run inside the step). A
    ``"head"`` is the target's kernels with one layer; a draft model its own kernels at its
    own sizes, stored and computed in the target's formats."""
    plain = tuple(o for o in _options(options) if o != "speculative")
    source = arch if draft == "head" else draft
    one = sum(kr.count * kr.time for kr in step_kernels(source, parallel, mla, plain))
    if draft == "head":  # one layer, of the MoE kind where the model has MoE layers
        one = put(one, {L: 1, L_d: 0, L_w: 0})
    else:
        one = latency.at_sizes(one, draft)
    # The later passes run only while requests decode (a prefill-only step drafts nothing).
    return one + (techniques.gamma - 1) * sympy.Min(B_d, 1) * put(one, {P_t: 0})


def step(arch, parallel="tensor", options=(), draft=None):
    """A continuously batching engine's step (``formulas.continuous.step``, kernel by kernel):
    in a pipeline, one micro-batch's, through every stage; with expert parallelism, the
    busiest GPU's."""
    return step_time(arch, parallel, options=_options(options), draft=draft)


@functools.lru_cache(maxsize=256)
def prefill_time(arch, parallel="tensor", options=(), draft=None):
    """Seconds of a prefill of B prompts of T tokens: the step with P_t = B T (B times the
    tokens it computes, with a prefix cache) and no decodes (MLA expanded, as engines
    prefill it)."""
    new, _ = _widths(_options(options))
    return put(step_time(arch, parallel, options=options, draft=draft), {B_d: 0, P_t: B * new})


@functools.lru_cache(maxsize=256)
def decode_step_time(arch, mla="absorbed", parallel="tensor", context=S, options=(), draft=None):
    """Seconds of one decode step of B requests with S (or ``context``) tokens cached each
    (speculating: one verification step, which yields ``techniques.expected_tokens``)."""
    step = step_time(arch, parallel, mla, _options(options), draft)
    return put(put(step, {P_t: 0, B_d: B}), {S: context})


def time_per_output_token(arch, mla="absorbed", parallel="tensor", options=(), draft=None):
    """A decode step at the mean context of a request's O - 1 steps (``latency.mean_context``):
    exact while every kernel stays on one side of its roofline, each being linear in S.
    Speculating, a verification step over the tokens it yields on average."""
    options = _options(options)
    step = decode_step_time(arch, mla, parallel, latency.mean_context(), options, draft)
    return step / techniques.expected_tokens() if "speculative" in options else step


def generation_time(arch, mla="absorbed", parallel="tensor", options=(), draft=None):
    """Seconds from B prompts to the last of their O output tokens: the prefill, then O - 1
    decode steps (``latency.request_time``)."""
    ttft = prefill_time(arch, parallel, options, draft)
    return latency.request_time(ttft, time_per_output_token(arch, mla, parallel, options, draft))


def throughput(arch, mla="absorbed", parallel="tensor", options=(), draft=None):
    """Output tokens per second of B requests (pipeline: n batches in flight)."""
    return latency.output_throughput(generation_time(arch, mla, parallel, options, draft), parallel)
