"""The book's notation, defined once.

Each symbol's *name* is the keyword argument that compiled formulas take (``batch``,
``d_model``), so code reads like prose; its *LaTeX* is the short letter the chapters use
(``B``, ``D``). ``NOTATION`` keeps both with a meaning and a unit, and the introduction
prints its table from here. ``S`` (the context length) is left out of ``__all__``, so that a
star import does not hide SymPy's own ``S``; import it by name.

>>> from inference_arithmetic.symbols import B, D
>>> B * D
batch*d_model
>>> import sympy
>>> sympy.latex(B * D)
'B D'
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

__all__ = [
    "NOTATION",
    "Notation",
    "Sym",
    "by_name",
    "B",
    "T",
    "S_max",
    "D",
    "F",
    "L",
    "V",
    "H",
    "H_kv",
    "d_h",
    "E",
    "k",
    "b",
    "N",
    "d_1",
    "d_2",
    "d_3",
    "pi",
    "beta",
    "P",
    "F_e",
    "E_s",
    "L_d",
    "r_q",
    "r_kv",
    "d_nope",
    "d_rope",
    "d_v",
    "W",
    "L_w",
    "eta_c",
    "eta_m",
    "n_gpus",
    "beta_link",
    "alpha",
    "b_kv",
    "O",
    "M",
    "mu",
    "c",
    "u",
    "p_in",
    "p_out",
    "a",
    "gamma",
    "c_d",
    "P_s",
]


@dataclass(frozen=True)
class Notation:
    """One row of the book's notation table."""

    symbol: Sym
    latex: str
    meaning: str
    unit: str


NOTATION: dict[str, Notation] = {}


class Sym(sympy.Symbol):
    """A SymPy symbol that prints in LaTeX as the book's letter, not its Python name."""

    def _latex(self, printer):
        row = NOTATION.get(self.name)
        return row.latex if row else printer._print_Symbol(self)


# The assumptions of each kind of quantity. Sizes are positive integers; SymPy uses this to
# simplify (Max, sqrt) and we use it to validate numeric inputs. Bytes per number is positive
# but fractional (int4 is 0.5): "real". A few counts may be zero (an MoE model without dense
# layers): "count0". "Not an integer" would rule out zero too, so a fractional quantity that
# may be zero leaves integer unknown: "real0".
KINDS = {
    "count": {"integer": True, "positive": True},
    "count0": {"integer": True, "nonnegative": True},
    "real": {"integer": False, "positive": True},
    "real0": {"nonnegative": True},
}


def _define(name, latex, meaning, unit, kind="count"):
    symbol = Sym(name, **KINDS[kind])
    NOTATION[name] = Notation(symbol, latex, meaning, unit)
    return symbol


B = _define("batch", "B", "batch size: sequences processed together", "sequences")
T = _define("seq_len", "T", "sequence length: tokens in one forward pass", "tokens")
S = _define("context_len", "S", "context length: tokens already in the KV cache", "tokens")
S_max = _define(
    "context_window", r"S_{max}", "context window: the most tokens a model reads", "tokens"
)
D = _define("d_model", "D", "model width (hidden size)", "numbers")
F = _define("d_ff", "F", "feed-forward width", "numbers")
L = _define("n_layers", "L", "number of transformer layers", "layers")
V = _define("vocab_size", "V", "vocabulary size", "tokens")
H = _define("n_heads", "H", "attention (query) heads", "heads")
H_kv = _define("n_kv_heads", "H_{kv}", "key/value heads (GQA, MQA)", "heads")
d_h = _define("d_head", "d_h", "width of one attention head", "numbers")
E = _define("n_experts", "E", "experts in a mixture-of-experts layer", "experts")
k = _define("n_active_experts", "k", "experts active per token", "experts")
N = _define("n_params", "N", "number of parameters of a model", "parameters")
b = _define(
    "bytes_per_number", "b", "bytes per number (fp32 4, bf16 2, fp8 1, int4 0.5)", "bytes", "real"
)
pi = _define(
    "flop_rate", r"\pi", "floating-point operations per second of a device", "FLOP/s", "real"
)
beta = _define(
    "bandwidth", r"\beta", "bytes per second a device reads from its memory", "B/s", "real"
)
P = _define("max_positions", "P", "positions with a learned embedding (GPT-2)", "tokens")
F_e = _define("d_ff_expert", "F_e", "feed-forward width of one expert", "numbers")
E_s = _define("n_shared_experts", "E_s", "shared experts every token uses", "experts", "count0")
L_d = _define(
    "n_dense_layers", "L_d", "layers of an MoE model with a dense FFN", "layers", "count0"
)
r_q = _define("q_lora_rank", "r_q", "MLA: rank of the compressed query", "numbers")
r_kv = _define("kv_lora_rank", "r_{kv}", "MLA: rank of the compressed keys and values", "numbers")
d_nope = _define("d_nope", "d_{nope}", "MLA: key/query width per head without RoPE", "numbers")
d_rope = _define("d_rope", "d_{rope}", "MLA: key/query width per head with RoPE", "numbers")
d_v = _define("d_v", "d_v", "MLA: value width per head", "numbers")
W = _define("window", "W", "sliding-window length of windowed attention layers", "tokens")
L_w = _define("n_window_layers", "L_w", "layers with sliding-window attention", "layers", "count0")
eta_c = _define(
    "compute_efficiency", r"\eta_c", "achieved fraction of the peak FLOP/s", "fraction", "real"
)
eta_m = _define(
    "bandwidth_efficiency", r"\eta_m", "achieved fraction of the peak bandwidth", "fraction", "real"
)
b_kv = _define(
    "kv_bytes_per_number", "b_{kv}", "bytes per number of the KV cache (default b)", "bytes", "real"
)
n_gpus = _define("n_gpus", "n", "GPUs a model is split over", "GPUs")
beta_link = _define(
    "link_bandwidth", r"\beta_{link}", "bytes per second between two GPUs", "B/s", "real"
)
alpha = _define("link_latency", r"\alpha", "fixed time of one message between GPUs", "s", "real0")
O = _define("output_len", "O", "output tokens per request", "tokens")  # noqa: E741
M = _define("gpu_memory", "M", "memory of one GPU", "bytes", "real")
mu = _define(
    "memory_utilization", r"\mu", "fraction of GPU memory an engine may fill", "fraction", "real"
)
c = _define("price_per_hour", "c", "rental price of one GPU", "$/GPU-hour", "real")
u = _define(
    "utilization", "u", "fraction of the paid GPU time that does useful work", "fraction", "real"
)
# An API may give one kind of token away (not both: break_even_utilization refuses that).
p_in = _define(
    "api_input_price", "p_{in}", "an API's price of a million input tokens", "$", "real0"
)
p_out = _define(
    "api_output_price", "p_{out}", "an API's price of a million output tokens", "$", "real0"
)
a = _define(
    "acceptance_rate", "a", "speculation: chance a drafted token is accepted", "fraction", "real0"
)
gamma = _define("draft_len", r"\gamma", "speculation: tokens the draft proposes per step", "tokens")
c_d = _define(
    "draft_cost", "c_d", "speculation: a draft step's time over a target step's", "fraction", "real"
)
P_s = _define("prefix_len", "P_s", "tokens of a prompt prefix shared by every request", "tokens")
d_1 = _define("d_1", "d_1", "MLP input width", "numbers")
d_2 = _define("d_2", "d_2", "MLP hidden width (output width of a one-layer network)", "numbers")
d_3 = _define("d_3", "d_3", "MLP output width", "numbers")


def by_name(name: str) -> Sym:
    """The symbol whose keyword name is ``name``: ``by_name("batch") is B``.

    Raises ``KeyError`` listing the known names when there is no such symbol.
    """
    try:
        return NOTATION[name].symbol
    except KeyError:
        raise KeyError(f"no symbol named {name!r}; known names: {', '.join(NOTATION)}") from None
