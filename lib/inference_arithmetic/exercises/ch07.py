"""Chapter 07 (hardware): fp8 on the roofline, the intensity of attention in decode, int4
against bandwidth, and the fractions of the peaks real kernels reach.

The inputs are the chapter's: the H100 SXM's figures from the registry (``GPU.figures``); the
feed-forward product of Llama 3.1 70B, a (B x D) by (D x F) matrix product, in fp8 at fp8's
peak; attention in a decode step of Llama 3.1 70B at 2,048 cached tokens in bf16, the
H / H_kv query heads of a group sharing their keys; Llama 3.1 8B in int4 on an RTX 4090 and an
L4 against bf16 on the H100, by the weights-only ceiling beta / (N b); kernels reaching 60% of
the FLOP/s and 80% of the bandwidth.
"""

import functools

import sympy

import inference_arithmetic as ia
from inference_arithmetic.exercises import Part, register
from inference_arithmetic.formulas import basics, roofline
from inference_arithmetic.symbols import B, D, F, b

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


def _attention(query_rows, requests=1):
    """FLOPs per byte of the decode attention of ``requests`` requests, each multiplying
    ``query_rows`` query heads by its own cached keys: a (rows x d_h) by (d_h x S) product."""
    m = ia.model(FFN_MODEL)
    shape = dict(batch=query_rows, d_model=m.d_head, d_ff=CONTEXT, bytes_per_number=2)
    flops = requests * ia.numeric(roofline.matmul_flops()).from_values(shape)
    moved = requests * ia.numeric(roofline.matmul_bytes())(**shape)  # no request shares keys
    return flops / moved


def _group():
    m = ia.model(FFN_MODEL)
    return m.n_heads // m.n_kv_heads


register(
    "07-hardware",
    "ex-hw-attention",
    Part(
        "intensity",
        lambda: _attention(_group()),
        unit="FLOPs per byte",
        hints=(
            lambda: {
                _attention(1) / _attention(_group()): "the query heads of a group share the "
                "keys: the product has H / H_kv rows, not one",
                _attention(ia.model(FFN_MODEL).n_heads) / _attention(_group()): "only the "
                "H / H_kv query heads of one group share a key/value head's keys, not all H",
            }
        ),
    ),
    Part(
        "batching_raises_it",
        lambda: bool(_attention(_group(), requests=2) > _attention(_group())),
        kind="yes/no",
    ),
)


def _decode_ceiling(gpu, dtype, **efficiency):
    """Tokens per second of one request, by the weights-only ceiling (ideal unless given)."""
    values = {**ia.gpu(gpu).figures("bf16"), "bandwidth_efficiency": 1.0, **efficiency}
    values.update(n_params=ia.param_count(SMALL), bytes_per_number=ia.bytes_per_number(dtype))
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
