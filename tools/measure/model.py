"""A Llama decoder in plain PyTorch with random weights and a preallocated KV cache, to time.

Written by hand rather than built with ``transformers``, on purpose: a measurement of the
arithmetic, not of a framework. It runs the products ``LlamaForCausalLM`` runs (separate q, k,
v and o projections; gate, up and down; RMSNorm; rotary embeddings; grouped-query attention;
an untied lm_head), and nothing the roofline does not count besides those few elementwise
operations: the KV cache is allocated once, at the size of the case, so a step neither
concatenates nor copies it (``DynamicCache`` concatenates every step, moving the whole cache
again, bytes the book's formula does not count); attention is
``scaled_dot_product_attention`` on the cache itself, with no mask tensor built; the prefill
computes the logits of the last position only, as generation does; and a decode step's
queries of one KV group are stacked against that group's keys, so no key or value is repeated
to every head. The parameters are counted (``parameter_count``) so that the report can check
them against the library's count of the same config.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["LlamaDecoder", "KVCache", "scaled_config"]

KINDS = {"fp32": torch.float32, "bf16": torch.bfloat16}


def scaled_config(config: dict, *, hidden_size: int, n_layers: int) -> dict:
    """A Hugging Face Llama ``config.json`` scaled down: ``hidden_size`` wide and ``n_layers``
    deep, keeping the head size, the ratio of query to KV heads, the ratio of the feed-forward
    width to the model width, the vocabulary and everything else.

    >>> c = scaled_config({"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
    ...     "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32},
    ...     hidden_size=2048, n_layers=8)
    >>> c["num_attention_heads"], c["num_key_value_heads"], c["intermediate_size"]
    (16, 4, 7168)
    """
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    group = heads // config["num_key_value_heads"]
    scale = hidden_size / config["hidden_size"]
    new_heads = hidden_size // head_dim
    if new_heads * head_dim != hidden_size or new_heads % group:
        raise ValueError(f"hidden_size {hidden_size} does not keep heads of {head_dim}")
    scaled = dict(config)
    scaled.update(
        hidden_size=hidden_size,
        num_hidden_layers=n_layers,
        num_attention_heads=new_heads,
        num_key_value_heads=new_heads // group,
        head_dim=head_dim,
        intermediate_size=round(config["intermediate_size"] * scale),
    )
    return scaled


class KVCache:
    """Keys and values of ``layers`` layers for ``batch`` sequences of ``length`` positions,
    allocated once (zeros: the values do not change the time)."""

    def __init__(self, layers, batch, kv_heads, length, head_dim, dtype):
        shape = (layers, batch, kv_heads, length, head_dim)
        self.keys = torch.zeros(shape, dtype=dtype)
        self.values = torch.zeros(shape, dtype=dtype)

    @property
    def nbytes(self) -> int:
        return 2 * self.keys.numel() * self.keys.element_size()


class LlamaDecoder:
    """The decoder of a Llama ``config`` (a Hugging Face config dict) in ``dtype``, with
    random weights (normal, standard deviation 0.02, as ``initializer_range``)."""

    def __init__(self, config: dict, dtype: str = "bf16", seed: int = 0):
        torch.manual_seed(seed)
        self.config = config
        self.dtype, self.dtype_name = KINDS[dtype], dtype
        d = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.kv_heads = config["num_key_value_heads"]
        self.head_dim = config.get("head_dim") or d // self.heads
        f, v = config["intermediate_size"], config["vocab_size"]
        self.eps = config.get("rms_norm_eps", 1e-5)
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim

        def weight(*shape):
            return torch.empty(shape, dtype=self.dtype).normal_(0.0, 0.02)

        def norm():
            return torch.ones(d, dtype=self.dtype)

        self.embed = weight(v, d)
        self.layers = [
            {
                "attn_norm": norm(),
                "q": weight(q, d),
                "k": weight(kv, d),
                "v": weight(kv, d),
                "o": weight(d, q),
                "mlp_norm": norm(),
                "gate": weight(f, d),
                "up": weight(f, d),
                "down": weight(d, f),
            }
            for _ in range(config["num_hidden_layers"])
        ]
        self.final_norm = norm()
        self.lm_head = weight(v, d)
        theta = config.get("rope_theta", 10000.0)
        self.inv_freq = 1.0 / theta ** (torch.arange(0, self.head_dim, 2) / self.head_dim)

    def tensors(self):
        yield self.embed
        for layer in self.layers:
            yield from layer.values()
        yield self.final_norm
        yield self.lm_head

    def parameter_count(self) -> int:
        return sum(t.numel() for t in self.tensors())

    def weight_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors())

    def cache(self, batch: int, length: int) -> KVCache:
        return KVCache(len(self.layers), batch, self.kv_heads, length, self.head_dim, self.dtype)

    def _norm(self, x, weight):
        # RMSNorm in fp32, as transformers' LlamaRMSNorm computes it.
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * x32.to(x.dtype)

    def _rotary(self, start, count):
        positions = torch.arange(start, start + count, dtype=torch.float32)
        angles = torch.outer(positions, self.inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos().to(self.dtype), angles.sin().to(self.dtype)

    @staticmethod
    def _rotate(x, cos, sin):
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin

    def forward(self, tokens: torch.Tensor, cache: KVCache, start: int) -> torch.Tensor:
        """Logits of the last position of each of the ``tokens`` (batch, T) sequences, placed
        at positions ``start`` .. ``start + T - 1`` of ``cache``, which they attend up to."""
        batch, count = tokens.shape
        if count > 1 and start:
            raise ValueError("a prefill starts at position 0; later tokens decode one at a time")
        end = start + count
        x = F.embedding(tokens, self.embed)
        cos, sin = self._rotary(start, count)
        group = self.heads // self.kv_heads
        for index, w in enumerate(self.layers):
            h = self._norm(x, w["attn_norm"])
            q = F.linear(h, w["q"]).view(batch, count, self.heads, self.head_dim)
            k = F.linear(h, w["k"]).view(batch, count, self.kv_heads, self.head_dim)
            v = F.linear(h, w["v"]).view(batch, count, self.kv_heads, self.head_dim)
            q = self._rotate(q.transpose(1, 2), cos, sin)
            keys, values = cache.keys[index], cache.values[index]
            keys[:, :, start:end] = self._rotate(k.transpose(1, 2), cos, sin)
            values[:, :, start:end] = v.transpose(1, 2)
            keys, values = keys[:, :, :end], values[:, :, :end]
            if count == 1:
                # One new token sees every cached one: the queries of a group are one (group,
                # d_head) matrix against the group's keys, read once for all its heads.
                q = q.reshape(batch, self.kv_heads, group, self.head_dim)
                o = F.scaled_dot_product_attention(q, keys, values)
            else:
                o = F.scaled_dot_product_attention(q, keys, values, is_causal=True, enable_gqa=True)
            o = o.reshape(batch, self.heads, count, self.head_dim).transpose(1, 2)
            x = x + F.linear(o.reshape(batch, count, -1), w["o"])
            h = self._norm(x, w["mlp_norm"])
            x = x + F.linear(F.silu(F.linear(h, w["gate"])) * F.linear(h, w["up"]), w["down"])
        x = self._norm(x[:, -1:], self.final_norm)
        return F.linear(x, self.lm_head)
