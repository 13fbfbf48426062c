"""Chapter 07 (hardware): fp8 on the roofline, the intensity of attention in decode, int4
against bandwidth, and the fractions of the peaks real kernels reach.

The inputs are the chapter's: the H100 SXM's figures from the registry (``GPU.figures``); the
feed-forward product of Llama 3.1 70B, a (B x D) by (D x F) matrix product, in fp8 at fp8's
peak; attention in a decode step of Llama 3.1 70B at 2,048 cached tokens in bf16, its FLOPs
(chapter 04, scores and values of every head) against the bytes of the KV cache it reads
(chapter 06), the H / H_kv query heads of a group sharing their keys and values; Llama 3.1 8B
in int4 on an RTX 4090 and an L4 against bf16 on the H100, by the weights-only ceiling
beta / (N b), N the parameters one token reads (all but the embedding rows it does not look
up, as a decode step counts them); kernels reaching 60% of the FLOP/s and 80% of the bandwidth.
"""

import functools

import sympy

import inference_arithmetic as ia
from inference_arithmetic.core.symbols import B, D, F, T, b
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import basics, kv_cache, latency, roofline
from inference_arithmetic.formulas import transformer as tf

GPU = "h100-sxm"
FFN_MODEL = "llama-3.1-70b"  # its feed-forward product, D x F
CONTEXT = 2048  # cached tokens of the attention exercise
SMALL = "llama-3.1-8b"
EFFICIENCY = {"compute_efficiency": 0.6, "bandwidth_efficiency": 0.8}  # exercise 4's kernels

_ceiling = ia.numeric(1 / roofline.memory_time(basics.weight_bytes()))  # tokens per second


@functools.cache
def _batch_at_ridge(bytes_per_number, flop_dtype):
    """The batch at which the feed-forward product's intensity reaches the ridge point."""
    m = ia.model(FFN_MODEL)
    product = roofline.matmul_intensity().subs({D: m.d_model, F: m.d_ff, b: bytes_per_number})
    crossing = sympy.solve(sympy.Eq(product, roofline.ridge_point()), B)[0]
    return ia.numeric(crossing).from_values(ia.gpu(GPU).figures(flop_dtype))


_fp8 = ia.bytes_per_number("fp8")

register(
    "07-hardware",
    "ex-hw-fp8",
    Part(
        "ridge_point",
        lambda: ia.gpu(GPU).ridge_point("fp8"),
        unit="FLOPs per byte",
        hints=(
            lambda: {
                ia.gpu(GPU).ridge_point("bf16") / ia.gpu(GPU).ridge_point("fp8"): "that is "
                "bf16's: fp8's peak FLOP/s are about twice as high, the bandwidth the same",
            }
        ),
    ),
    Part(
        "batch",
        lambda: _batch_at_ridge(_fp8, "fp8"),
        unit="rows",
        hints=(
            lambda: {
                batch / _batch_at_ridge(_fp8, "fp8"): hint
                for batch, hint in {
                    _batch_at_ridge(2, "fp8"): "an fp8 number is one byte, not two: the "
                    "product moves half the bytes of bf16",
                    _batch_at_ridge(_fp8, "bf16"): "fp8's peak FLOP/s are about twice bf16's",
                    ia.numeric(basics.balanced_tokens()).from_values(
                        {**ia.gpu(GPU).figures("fp8"), "bytes_per_number": _fp8}
                    ): "that is the small-batch rule b pi / (2 beta); solve the product's "
                    "whole intensity for B",
                }.items()
            }
        ),
    ),
)


def _attention(requests=1, kv_heads=None):
    """FLOPs per byte of the attention of a decode step of ``requests`` requests: the score
    and value products of every query head over the S cached tokens and the new one, against
    the bytes of the KV cache they read (no request shares its cache). ``kv_heads`` replaces
    the model's key/value heads, for the hints."""
    m = ia.model(FFN_MODEL)
    values = {**m.sizes(), "batch": requests, "seq_len": 1, "context_len": CONTEXT}
    values["bytes_per_number"] = ia.bytes_per_number("bf16")
    if kv_heads is not None:
        values["n_kv_heads"] = kv_heads
    flops = ia.numeric(tf.attention_flops(m).subs(T, 1)).from_values(values)
    moved = ia.numeric(kv_cache.kv_cache_bytes(m)).from_values(values)
    return flops / moved


def _score_product_alone():
    """The intensity of the score product alone as a matrix product that writes its scores to
    memory, (H / H_kv x d_h) by (d_h x S): a likely wrong answer."""
    m = ia.model(FFN_MODEL)
    shape = dict(batch=m.n_heads // m.n_kv_heads, d_model=m.d_head, d_ff=CONTEXT)
    shape["bytes_per_number"] = ia.bytes_per_number("bf16")
    return ia.numeric(roofline.matmul_intensity()).from_values(shape)


register(
    "07-hardware",
    "ex-hw-attention",
    Part(
        "intensity",
        lambda: _attention(),
        unit="FLOPs per byte",
        hints=(
            lambda: {
                _attention(kv_heads=ia.model(FFN_MODEL).n_heads) / _attention(): "the "
                "H / H_kv query heads of a group share its keys and values: each cached byte "
                "serves all of them, not one head",
                _attention(kv_heads=1) / _attention(): "only the H / H_kv query heads of one "
                "group share a key/value head, not all H",
                _score_product_alone() / _attention(): "that is the score product alone, "
                "writing its scores to memory: count the value product's FLOPs too against "
                "the cached keys and values, the only bytes of any size",
            }
        ),
    ),
    Part(
        "batching_raises_it",
        lambda: bool(_attention(requests=2) > _attention()),
        kind="yes/no",
    ),
)


@functools.cache
def _params_read():
    """The parameters one token of SMALL reads: the decode step's count, one embedding row."""
    m = ia.model(SMALL)
    return ia.numeric(latency.weight_bytes_read(m, 1) / b).from_values(m.sizes())


def _decode_ceiling(gpu, dtype, **efficiency):
    """Tokens per second of one request, by the weights-only ceiling (ideal unless given)."""
    values = {**ia.gpu(gpu).figures("bf16"), "bandwidth_efficiency": 1.0, **efficiency}
    values.update(n_params=_params_read(), bytes_per_number=ia.bytes_per_number(dtype))
    return _ceiling.from_values(values)


register(
    "07-hardware",
    "ex-hw-int4",
    Part(
        "rtx_4090_faster",
        lambda: _decode_ceiling("rtx-4090", "int4") > _decode_ceiling(GPU, "bf16"),
        kind="yes/no",
    ),
    Part(
        "l4_faster",
        lambda: _decode_ceiling("l4", "int4") > _decode_ceiling(GPU, "bf16"),
        kind="yes/no",
    ),
)


@functools.cache
def _effective_ridge():
    """The intensity at which compute time equals memory time at the kernels' fractions."""
    per_byte, nbytes = sympy.symbols("per_byte nbytes", positive=True)
    balance = sympy.Eq(roofline.compute_time(per_byte * nbytes), roofline.memory_time(nbytes))
    return ia.numeric(sympy.solve(balance, per_byte)[0])


_eta_c, _eta_m = EFFICIENCY["compute_efficiency"], EFFICIENCY["bandwidth_efficiency"]

register(
    "07-hardware",
    "ex-hw-efficiency",
    Part(
        "tokens_per_second",
        lambda: _decode_ceiling(GPU, "bf16", **EFFICIENCY),
        unit="tokens per second",
        hints={
            1 / _eta_m: f"the kernels reach {_eta_m:.0%} of the bandwidth, not all of it",
            _eta_c / _eta_m: "decode is memory-bound: its ceiling scales with the bandwidth's "
            "fraction, not the FLOP/s'",
        },
    ),
    Part(
        "effective_ridge_point",
        lambda: _effective_ridge().from_values({**ia.gpu(GPU).figures("bf16"), **EFFICIENCY}),
        unit="FLOPs per byte",
        hints={
            _eta_m / _eta_c: "that is the peak ridge point pi / beta: the kernels' fractions "
            "multiply it by eta_c / eta_m",
            (_eta_m / _eta_c) ** 2: "the ridge point is multiplied by eta_c / eta_m, not divided",
        },
    ),
)
