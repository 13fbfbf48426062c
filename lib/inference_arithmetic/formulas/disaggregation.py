"""Prefill and decode on separate GPUs: what handing a request's KV cache over costs.

Derived in chapter 11. A disaggregated deployment prefills prompts on one pool of GPUs and
decodes on another (DistServe, Splitwise, Mooncake): each request's cache, written by the
prefill, moves to the decode pool before its second token. Its bytes are chapter 06's cache of
the prompt; each of the n GPUs that hold a distinct part of it (``latency.kv_split``) sends its
part over its own link at once.

>>> from inference_arithmetic.models.config import model
>>> kv_transfer_bytes(model("llama-3.1-70b"))
2*d_head*kv_bytes_per_number*n_kv_heads*n_layers*seq_len

Llama 3 70B's 2,048-token prompt in bf16: 2 * 128 * 2 * 8 * 80 * 2048 = 671,088,640 bytes;
from four H100s, each sending its two KV heads' quarter, 3.4 ms over a 400 Gb/s network port
each (50 GB/s) and 0.37 ms over NVLink (450 GB/s each way).
"""

from __future__ import annotations

from inference_arithmetic.core.numeric import ArgumentError
from inference_arithmetic.core.symbols import B, S, T, alpha, beta_link, beta_net
from inference_arithmetic.formulas import latency

__all__ = ["TRANSFER_PATHS", "kv_transfer_bytes", "kv_transfer_time"]

TRANSFER_PATHS = {"link": beta_link, "network": beta_net}
"""The bandwidth a cache moves at: the GPUs' own link within one link domain (NVLink), or each
GPU's network port between domains (its NIC: the transfer is one GPU to another, not a ring
over NVLink)."""


def kv_transfer_bytes(arch):
    """Bytes of the KV cache of one prompt of T tokens, at b_kv bytes per number."""
    return latency.cache_bytes(arch).subs({B: 1, S: T})


def kv_transfer_time(arch, path="link"):
    """Seconds to move one prompt's cache from the prefill GPUs to the decode GPUs over
    ``path`` (``TRANSFER_PATHS``): its bytes split over the ``kv_split`` GPUs that each hold a
    distinct part (n: the fewer GPUs of the two sides), each part over its own link, plus one
    message's latency."""
    if path not in TRANSFER_PATHS:
        choices = ", ".join(map(repr, TRANSFER_PATHS))
        raise ArgumentError(f"path must be one of {choices}, got {path!r}")
    lanes = latency.kv_split(arch)
    return kv_transfer_bytes(arch) / (lanes * TRANSFER_PATHS[path]) + alpha
