"""A decoder-only transformer, block by block: parameters and FLOPs.

Derived in chapters 03 (parameters) and 04 (FLOPs). Each function takes an architecture (a
``ModelConfig``, or anything with its fields) for the *structure* (gated or classic FFN,
biases, GQA, experts, MLA) and returns a SymPy expression in the book's *sizes* (D, F, L, V,
H, H_kv, d_h, ...). Evaluate it at a model's sizes with ``ModelConfig.sizes()``.

>>> classic_approximation()
12*d_model**2*n_layers + d_model*vocab_size

FLOPs count matmuls, 2 per multiply-add, as a FLOP counter sees the reference implementation:
every weight matmul, attention scores and values over all keys (masks do not reduce the count;
``causal=True`` counts only the keys a token can see), logits at every position unless
``last_logits_only``. Norms, softmax, activations, RoPE and bias additions are not counted.
"""

from __future__ import annotations

import sympy

from inference_arithmetic.core.checks import architecture
from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.core.symbols import (
    B,
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
    S,
    T,
    V,
    W,
    d_h,
    d_nope,
    d_rope,
    d_v,
    k,
    r_kv,
    r_q,
)

# The formulas, each an entry of the formula reference (book/appendix-formulas.md), and the MLA
# decodes. ``mla_query_params`` and ``check_mla``, which ``formulas.kernels`` builds on, are
# public helpers, not entries of that page.
__all__ = [
    "embedding_params",
    "lm_head_params",
    "attention_params",
    "ffn_params",
    "norm_params",
    "final_norm_params",
    "moe_params",
    "expert_params",
    "vocabulary_params",
    "layer_params",
    "over_layers",
    "params",
    "non_embedding_params",
    "classic_approximation",
    "MLA_DECODES",
    "matmul_weights",
    "mla_expansion_flops",
    "attention_widths",
    "attention_keys",
    "attention_flops",
    "step_flops",
    "forward_flops",
    "decode_flops",
]


def _number(arch):
    """Numbers in one norm: a weight per number (RMSNorm), and a bias (LayerNorm)."""
    return D if arch.norm == "rms" else 2 * D


def embedding_params(arch):
    """The token embedding, V x D, and learned position embeddings, P x D, where a model has
    them (GPT-2; RoPE models have none)."""
    return V * D + (P * D if arch.max_positions else 0)


def lm_head_params(arch):
    """The output projection to the vocabulary: D x V, or nothing when tied to the embedding,
    and a bias of V where a model has one (Phi-3.5-MoE, GPT-J; tied or not)."""
    bias = V if arch.lm_head_bias else 0
    return (0 if arch.tied_embeddings else V * D) + bias


def attention_params(arch):
    """One attention block: query, key, value and output projections (and their biases).

    Grouped-query attention shares each key/value head among H / H_kv query heads, so K and V
    are D x H_kv*d_h while Q and O are D x H*d_h. Some models norm the queries and keys
    (``qk_norm``) or learn an attention sink per head. Multi-head latent attention (MLA)
    compresses keys/values to r_kv numbers (and queries to r_q, in most models), with a norm
    each, then expands them per head; a d_rope-wide key part with RoPE is shared by all heads.
    """
    if arch.is_mla:
        compressed_norm = r_q if arch.q_lora_rank else 0  # the compressed query's norm
        query = mla_query_params(arch) + compressed_norm
        key_value = D * (r_kv + d_rope) + r_kv + r_kv * H * (d_nope + d_v)
        return query + key_value + H * d_v * D
    weights = D * H * d_h + 2 * D * H_kv * d_h + H * d_h * D
    biases = (H * d_h + 2 * H_kv * d_h if arch.qkv_bias else 0) + (D if arch.out_bias else 0)
    norms = {"": 0, "head": 2 * d_h, "full": (H + H_kv) * d_h}[arch.qk_norm]
    return weights + biases + norms + (H if arch.attention_sinks else 0)


def mla_query_params(arch):
    """MLA's query weights: compressed to r_q and expanded per head, or projected directly
    (models without query compression, q_lora_rank None). Part of ``attention_params`` and
    of ``matmul_weights``, and of the kernel model's attention projections."""
    if arch.q_lora_rank:
        return D * r_q + r_q * H * (d_nope + d_rope)
    return D * H * (d_nope + d_rope)


def ffn_params(arch, width=F):
    """A feed-forward block: gated (gate, up, down: 3 D x width) or classic (up, down: 2)."""
    matrices = 3 if arch.ffn == "gated" else 2
    biases = ((matrices - 1) * width + D) if arch.ffn_bias else 0
    return matrices * D * width + biases


def norm_params(arch):
    """The norms of one layer: two, before attention and before the FFN (Gemma 2 has four; one
    where attention and the FFN run in parallel on the same input, as in GPT-J and Falcon 7B)."""
    return arch.norms_per_layer * _number(arch)


def final_norm_params(arch):
    """The norm after the last layer."""
    return _number(arch)


def moe_params(arch, active=False):
    """A mixture-of-experts block: E experts (k of them active per token), a router D x E,
    and shared experts that every token uses."""
    experts = k if active else E
    total = experts * ffn_params(arch, F_e) + D * E + (E if arch.router_bias else 0)
    return total + (E_s * ffn_params(arch, F_e) if arch.n_shared_experts else 0)


def expert_params(arch, active=False):
    """The experts' feed-forward blocks of every MoE layer, routed (k of them with
    ``active=True``) and shared, biases included: what a checkpoint may store in a format of
    their own. 0 for a dense model."""
    if not arch.is_moe:
        return 0
    routed = k if active else E
    experts = routed + (E_s if arch.n_shared_experts else 0)
    return over_layers(arch, lambda moe: experts * ffn_params(arch, F_e) if moe else 0)


def vocabulary_params(arch):
    """The embedding (and learned positions) and the output head: ``embedding_params`` and
    ``lm_head_params``."""
    return embedding_params(arch) + lm_head_params(arch)


def layer_params(arch, moe=False, active=False):
    """One transformer layer: attention, a dense or MoE feed-forward block, and its norms."""
    ffn = moe_params(arch, active) if moe else ffn_params(arch)
    return attention_params(arch) + ffn + norm_params(arch)


def over_layers(arch, block):
    """``block(moe)`` summed over the layers: L_d dense and L - L_d MoE layers in MoE models."""
    if not arch.is_moe:
        return L * block(False)
    dense = L_d if arch.n_dense_layers else 0
    return dense * block(False) + (L - dense) * block(True)


def params(arch, active=False, embeddings=True):
    """Every parameter, counted once (tied embeddings once): the model's N.

    ``active=True`` counts only what one token uses: k of the E routed experts.
    ``embeddings=False`` leaves out the input embedding table (and learned positions): a
    token reads one row of it, and model cards often leave it out of "active parameters"
    (gpt-oss's does). A tied table stays, as the output head every token multiplies by.
    """
    layers = over_layers(architecture(arch), lambda moe: layer_params(arch, moe, active))
    total = embedding_params(arch) + layers + final_norm_params(arch) + lm_head_params(arch)
    if embeddings:
        return total
    lookup = (P * D if arch.max_positions else 0) + (0 if arch.tied_embeddings else V * D)
    return total - lookup


def non_embedding_params(arch, active=False):
    """Parameters without the token and position embeddings (an untied LM head stays)."""
    return params(arch, active) - embedding_params(arch)


def classic_approximation():
    """12 L D^2 + V D: the textbook count (MHA, F = 4D, classic FFN, tied, no bias or norm)."""
    return 12 * L * D**2 + V * D


MLA_DECODES = ("reexpand", "absorbed")


def check_mla(mla):
    """``mla`` if it is one of ``MLA_DECODES``, else an error listing them: every formula that
    decodes an MLA model (here and in ``formulas.kernels``) checks it with it."""
    if mla not in MLA_DECODES:
        raise ArgumentError(f"unknown MLA decode {mla!r}; choose one of {', '.join(MLA_DECODES)}")
    return mla


def matmul_weights(arch, mla="reexpand"):
    """Weights one token is multiplied by in one layer of each kind: {moe: count}.

    Biases and norms are not matmuls; the router is (D x E); only the k active experts run.
    For MLA the expansion of the compressed keys and values (r_kv x H (d_nope + d_v)) is not
    here: ``mla_expansion_flops`` counts it for every token it is applied to. With
    ``mla="absorbed"`` it is folded into the query and the output instead (H d_nope r_kv and
    H r_kv d_v per new token), and attention runs on the compressed cache.
    """
    check_mla(mla)

    def weights(moe):
        if arch.is_mla:
            attention = mla_query_params(arch) + D * (r_kv + d_rope) + H * d_v * D
            if mla == "absorbed":
                attention += H * d_nope * r_kv + H * r_kv * d_v
        else:
            attention = 2 * D * H * d_h + 2 * D * H_kv * d_h
        matrices = 3 if arch.ffn == "gated" else 2
        if not moe:
            return attention + matrices * D * F
        shared = E_s if arch.n_shared_experts else 0
        return attention + (k + shared) * matrices * D * F_e + D * E

    return weights


def mla_expansion_flops(arch, mla="reexpand"):
    """MLA: expanding the compressed keys and values, 2 B r_kv H (d_nope + d_v) per token.

    The reference implementation caches the compressed form and re-expands every cached
    token at every step (S + T tokens); the absorbed form never expands.
    """
    check_mla(mla)
    if not arch.is_mla or mla == "absorbed":
        return 0
    return L * 2 * B * (S + T) * r_kv * H * (d_nope + d_v)


def attention_widths(arch, mla="reexpand"):
    """Widths per head of the score product (queries . keys) and of the value product.

    Absorbed MLA attends in the compressed space: keys r_kv + d_rope, values r_kv wide.
    """
    if arch.is_mla:
        return (d_nope + d_rope, d_v) if mla == "reexpand" else (r_kv + d_rope, r_kv)
    return d_h, d_h


def attention_keys(arch, causal=False, windowed=False):
    """Query-key pairs of T new tokens with S tokens cached: T (S + T), or with causal=True
    only the pairs a token may see, T S + T (T + 1) / 2. A windowed layer caches at most
    W - 1 tokens (each token sees itself and the W - 1 before it)."""
    cached = sympy.Min(S, W - 1) if windowed else S
    return T * cached + (T * (T + 1) / 2 if causal else T * T)


def attention_flops(arch, causal=False, mla="reexpand"):
    """Score and value matmuls of every layer: 2 B H (d_qk + d_v) per query-key pair."""
    qk, v = attention_widths(arch, mla)
    per_pair = 2 * B * H * (qk + v)
    if not arch.n_window_layers:
        return L * per_pair * attention_keys(arch, causal)
    windowed = attention_keys(arch, causal, windowed=True)
    return per_pair * ((L - L_w) * attention_keys(arch, causal) + L_w * windowed)


def step_flops(arch, causal=False, last_logits_only=False, mla="reexpand"):
    """FLOPs of one forward pass of B sequences of T new tokens, with S tokens cached.

    ``mla`` chooses how an MLA model decodes: "reexpand" as the reference implementation
    does, "absorbed" as its paper and the serving engines do; other models ignore it.
    """
    weights = matmul_weights(architecture(arch), mla)
    linear = 2 * B * T * over_layers(arch, weights) + mla_expansion_flops(arch, mla)
    logits = 2 * B * (1 if last_logits_only else T) * D * V
    return linear + attention_flops(arch, causal, mla) + logits


def forward_flops(arch, causal=False, last_logits_only=False):
    """Prefill: B sequences of T tokens, nothing cached (S = 0). MLA expands, as in training."""
    return step_flops(arch, causal, last_logits_only).subs(S, 0)


def decode_flops(arch, causal=False, mla="reexpand"):
    """One decode step: one new token per sequence (T = 1) against S cached tokens."""
    return step_flops(arch, causal, mla=mla).subs(T, 1)
