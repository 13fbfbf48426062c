"""Continuous batching: an engine that schedules every step anew.

Every step decodes one token of each of the B_d running requests (S tokens cached each, on
average) and prefills P_t prompt tokens of the requests that arrived (chunked prefill, under
a token budget). Its time is the roofline of its compute and memory, plus tensor
parallelism's messages; ``ia.continuous`` puts the steady state of an arrival rate into it.
Derived in chapter 09, whose static batches it extends to a stream of requests (a chapter of
its own is still to be written).

>>> from inference_arithmetic.models import model
>>> sorted(s.name for s in step(model("llama-3.1-8b")).free_symbols)[:4]
['bandwidth', 'bandwidth_efficiency', 'bytes_per_number', 'compute_efficiency']
"""

from __future__ import annotations

from inference_arithmetic.formulas import latency, roofline, transformer
from inference_arithmetic.symbols import B, B_d, D, P_t, S, T, V, b, n_gpus

__all__ = ["step_sides", "step"]


def step_sides(arch):
    """A step of B_d decoding requests and P_t prompt tokens: its compute time, memory time
    and message time.

    Compute: every token through the weights (k experts of an MoE layer), each decoding
    request's attention over its S cached tokens, each prompt token's over the half of its
    prompt of T tokens before it, logits for the decodes. Memory: all weights (at serving
    concurrency a MoE layer reads nearly every expert) and every decoding request's cache.
    """
    per_token = 2 * transformer.over_layers(arch, transformer.matmul_weights(arch, "absorbed"))
    pair = transformer.attention_flops(arch, mla="absorbed").subs({B: 1, S: 0, T: 1})
    flops = per_token * (B_d + P_t) + pair * (B_d * (S + 1) + P_t * (T + 1) / 2)
    flops += 2 * D * V * B_d
    compute = roofline.compute_time(flops) / n_gpus  # tensor parallelism: 1/n each
    cache = latency.cache_bytes(arch).subs(B, B_d)
    memory = roofline.memory_time(b * transformer.params(arch) + cache) / n_gpus
    return compute, memory, latency.communication_time(arch, B_d + P_t)


def step(arch):
    """Seconds of one step: the roofline of its compute and memory, plus its messages."""
    compute, memory, messages = step_sides(arch)
    return latency.roof(compute, memory) + messages
