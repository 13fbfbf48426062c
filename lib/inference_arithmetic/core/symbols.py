"""The book's notation, defined once.

Each symbol's *name* is the keyword argument that compiled formulas take (``batch``,
``d_model``), so code reads like prose; its *LaTeX* is the short letter the chapters use
(``B``, ``D``). ``NOTATION`` keeps both with a meaning and a unit, and the introduction
prints its table from here. ``S`` (the context length) is left out of ``__all__``, so that a
star import does not hide SymPy's own ``S``; import it by name.

>>> from inference_arithmetic.core.symbols import B, D
>>> B * D
batch*d_model
>>> import sympy
>>> sympy.latex(B * D)
'B D'
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from inference_arithmetic.core.numeric import UnknownName


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


# The notation, one symbol a line: its Python name, its name as a keyword argument, its LaTeX,
# its kind (KINDS), its unit and its meaning.
_TABLE = r"""
B         | batch                | B            | count  | sequences  | batch size: sequences processed together
T         | seq_len              | T            | count  | tokens     | sequence length: tokens in one forward pass
S         | context_len          | S            | count  | tokens     | context length: tokens already in the KV cache
S_max     | context_window       | S_{max}      | count  | tokens     | context window: the most tokens a model reads
D         | d_model              | D            | count  | numbers    | model width (hidden size)
F         | d_ff                 | F            | count  | numbers    | feed-forward width
L         | n_layers             | L            | count  | layers     | number of transformer layers
V         | vocab_size           | V            | count  | tokens     | vocabulary size
H         | n_heads              | H            | count  | heads      | attention (query) heads
H_kv      | n_kv_heads           | H_{kv}       | count  | heads      | key/value heads (GQA, MQA)
d_h       | d_head               | d_h          | count  | numbers    | width of one attention head
E         | n_experts            | E            | count  | experts    | experts in a mixture-of-experts layer
k         | n_active_experts     | k            | count  | experts    | experts active per token
N         | n_params             | N            | count  | parameters | number of parameters of a model
b         | bytes_per_number     | b            | real   | bytes      | bytes per stored number (fp32 4, bf16 2, fp8 1, int4 0.5)
pi        | flop_rate            | \pi          | real   | FLOP/s     | floating-point operations per second a device sustains
beta      | bandwidth            | \beta        | real   | B/s        | bytes per second a device reads from its memory
P         | max_positions        | P            | count  | tokens     | positions with a learned embedding (GPT-2)
F_e       | d_ff_expert          | F_e          | count  | numbers    | feed-forward width of one expert
E_s       | n_shared_experts     | E_s          | count0 | experts    | shared experts every token uses
L_d       | n_dense_layers       | L_d          | count0 | layers     | layers of an MoE model with a dense FFN
r_q       | q_lora_rank          | r_q          | count  | numbers    | MLA: rank of the compressed query
r_kv      | kv_lora_rank         | r_{kv}       | count  | numbers    | MLA: rank of the compressed keys and values
d_nope    | d_nope               | d_{nope}     | count  | numbers    | MLA: key/query width per head without RoPE
d_rope    | d_rope               | d_{rope}     | count  | numbers    | MLA: key/query width per head with RoPE
d_v       | d_v                  | d_v          | count  | numbers    | MLA: value width per head
W         | window               | W            | count  | tokens     | sliding-window length of windowed attention layers
L_w       | n_window_layers      | L_w          | count0 | layers     | layers with sliding-window attention
eta_c     | compute_efficiency   | \eta_c       | real   | fraction   | achieved fraction of the peak FLOP/s
eta_m     | bandwidth_efficiency | \eta_m       | real   | fraction   | achieved fraction of the peak bandwidth
b_kv      | kv_bytes_per_number  | b_{kv}       | real   | bytes      | bytes per number of the KV cache (b unless the cache has its own dtype)
b_e       | expert_bytes_per_number | b_e     | real   | bytes      | bytes per number of the experts' weights, where a checkpoint stores them in a format of their own (gpt-oss: MXFP4)
b_v       | vocab_bytes_per_number | b_v       | real   | bytes      | bytes per number of the embedding and the output head, where a checkpoint stores them in a format of their own
n_gpus    | n_gpus               | n            | count  | GPUs       | GPUs a model is split over
beta_link | link_bandwidth       | \beta_{link} | real   | B/s        | bytes per second between two GPUs
alpha     | link_latency         | \alpha       | real0  | s          | fixed time of one message between GPUs
O         | output_len           | O            | count  | tokens     | output tokens per request
M         | gpu_memory           | M            | real   | bytes      | memory of one GPU
mu        | memory_utilization   | \mu          | real   | fraction   | fraction of GPU memory a serving engine may fill
c         | price_per_hour       | c            | real   | $/GPU-hour | rental price of one GPU
u         | utilization          | u            | real   | fraction   | fraction of the paid GPU time that does useful work
p_in      | api_input_price      | p_{in}       | real0  | $          | an API's price of a million input tokens
p_out     | api_output_price     | p_{out}      | real0  | $          | an API's price of a million output tokens
a         | acceptance_rate      | a            | real0  | fraction   | speculative decoding: probability that the target model accepts a drafted token
gamma     | draft_len            | \gamma       | count  | tokens     | speculative decoding: tokens the draft proposes per step
c_d       | draft_cost           | c_d          | real   | fraction   | speculative decoding: time of one draft step relative to one target step
h_p       | prefix_hit_rate      | h_p          | real0  | fraction   | prefix caching: share of each prompt's tokens whose KV cache an engine already holds
p_c       | api_cached_input_price | p_{c}      | real0  | $          | an API's price of a million cached input tokens
P_s       | prefix_len           | P_s          | count  | tokens     | tokens of a prompt prefix shared by every request
d_1       | d_1                  | d_1          | count  | numbers    | MLP input width
d_2       | d_2                  | d_2          | count  | numbers    | MLP hidden width (output width of a one-layer network)
d_3       | d_3                  | d_3          | count  | numbers    | MLP output width
B_d       | decoding             | B_d          | count0 | requests   | requests one step of a continuously batching engine decodes
P_t       | prefill_tokens       | P_t          | count0 | tokens     | prompt tokens one step of a continuously batching engine prefills
eta_a     | attention_efficiency | \eta_a       | real   | fraction   | achieved fraction of the peak FLOP/s in attention (FlashAttention kernels)
n_link    | link_domain          | n_{link}     | count  | GPUs       | GPUs joined by the fast link (one NVLink domain: 8 on an HGX board)
beta_net  | network_bandwidth    | \beta_{net}  | real   | B/s        | bytes per second each GPU sends over the network between domains
P_max     | token_budget         | P_{max}      | count  | tokens     | tokens one step may put through the model (the engine's token budget)
R         | replicas             | R            | count  | replicas   | data-parallel copies of a deployment, each serving its own requests
b_a       | activation_bytes_per_number | b_a   | real   | bytes      | bytes per number of the activations between kernels and of the messages between GPUs (the compute format, and at least 2: bf16 when the matrix products run in fp8 or int8)
eta_kv    | decode_attention_efficiency | \eta_{kv} | real | fraction | achieved fraction of the peak bandwidth of decode attention reading the KV cache
sigma_kv  | kv_shared            | \sigma_{kv}  | real0  | 0 or 1     | 1 when decode attention reads each KV head once for its whole query group, 0 when every query head reads it again
tau_k     | kernel_overhead      | \tau_k       | real0  | s          | fixed time of one kernel beyond its roofline (launch, ramp-up, tail)
tau_s     | step_overhead        | \tau_s       | real0  | s          | fixed time of one engine step beyond its kernels (scheduling, sampling, host synchronisation)
alpha_ar  | allreduce_latency    | \alpha_{ar}  | real0  | s          | time of the smallest all-reduce over the GPUs' link (one-shot, latency-bound)
beta_ar   | allreduce_bandwidth  | \beta_{ar}   | real   | B/s        | bytes per second a one-shot all-reduce adds per byte of its message, 2 (n - 1) / n of them (its measured slope)
m_c       | matmul_half_rows     | m_c          | real   | rows       | token rows at which a matrix product reaches half its large-product rate (tile and wave quantization)
T_a       | attention_half_len   | T_a          | real   | tokens     | prompt length at which FlashAttention reaches half its rate on long prompts
d_a       | attention_half_head  | d_a          | real   | numbers    | head size at which FlashAttention reaches half its rate (a query-key pair's exponential takes as long as its products)
tau_a     | decode_attention_latency | \tau_a   | real0  | s          | fixed time of one decode-attention kernel (its launch and the merge of its splits)
h_kv      | kv_reread_hits       | h_{kv}       | real0  | fraction   | fraction of a decode-attention kernel's repeated reads of a KV head that the L2 cache serves (a kernel that reads it once per query head)
g_e       | grouped_matmul       | g_e          | real   | fraction   | fraction of a single product's rate (compute and bandwidth) a grouped product over many experts' matrices reaches
phi_a     | attention_fused      | \phi_a       | real0  | 0 or 1     | 1 when an engine's prompt attention is one fused kernel (FlashAttention), 0 when it is two products and a softmax over the whole square of scores
tau_r     | request_overhead     | \tau_r       | real0  | s          | fixed time of an engine step for each request it schedules (the host's work per sequence)
alpha_rg  | ring_latency         | \alpha_{rg}  | real0  | s          | time of the smallest all-reduce by NCCL's algorithms for large messages (ring, NVLS)
beta_rg   | ring_bandwidth       | \beta_{rg}   | real   | B/s        | bytes per second NCCL's large-message all-reduce adds per byte, 2 (n - 1) / n of them
tau_h     | host_op_cost         | \tau_h      | real0  | s          | host's time to dispatch and launch one kernel of a step run op by op (eager PyTorch, no CUDA graph)
eps_p     | eager_prefill        | \epsilon_p  | real0  | 0 or 1     | 1 when an engine runs a step with prompt tokens op by op, 0 when it replays a CUDA graph
eps_d     | eager_decode         | \epsilon_d  | real0  | 0 or 1     | 1 when an engine runs a step of decodes alone op by op, 0 when it replays a CUDA graph
lambda_e  | expert_imbalance     | \lambda_e   | real   | ratio      | expert parallelism: tokens the busiest GPU's experts take over the mean GPU's (1 when balanced)
"""


def _rows():
    for line in _TABLE.strip().splitlines():
        python, name, latex, kind, unit, meaning = (part.strip() for part in line.split("|", 5))
        yield python, _define(name, latex, meaning, unit, kind)


_SYMBOLS = dict(_rows())
globals().update(_SYMBOLS)  # B, T, S, D, ...: the module's names for them
# S, the context length, is imported by name only: a star import keeps SymPy's own S.
__all__ = ["NOTATION", "Notation", "Sym", "KINDS", "by_name", "notation_table"]
__all__ += [n for n in _SYMBOLS if n != "S"]


def by_name(name: str) -> Sym:
    """The symbol whose keyword name is ``name``: ``by_name("batch") is B``.

    Raises ``KeyError`` listing the known names when there is no such symbol.
    """
    try:
        return NOTATION[name].symbol
    except KeyError:
        raise UnknownName(f"no symbol named {name!r}; known names: {', '.join(NOTATION)}") from None


# A control's name in words, keyed by the symbol's name: the widgets label their controls with
# it, the symbol (from its LaTeX) and the unit (from NOTATION), as ``controls.label`` does.
# A symbol without an entry is named by its meaning, up to the first colon.
LABELS = {
    "batch": "batch",
    "seq_len": "sequence length",
    "context_len": "context length",
    "context_window": "context window",
    "d_model": "model width",
    "d_ff": "feed-forward width",
    "n_layers": "layers",
    "vocab_size": "vocabulary",
    "n_heads": "attention heads",
    "n_kv_heads": "key/value heads",
    "d_head": "head width",
    "n_experts": "experts",
    "n_active_experts": "active experts",
    "n_params": "model size",
    "bytes_per_number": "number format",
    "flop_rate": "peak compute",
    "bandwidth": "memory bandwidth",
    "window": "attention window",
    "compute_efficiency": "compute efficiency",
    "bandwidth_efficiency": "bandwidth efficiency",
    "kv_bytes_per_number": "cache number format",
    "expert_bytes_per_number": "experts' number format",
    "vocab_bytes_per_number": "vocabulary number format",
    "n_gpus": "GPUs",
    "expert_imbalance": "experts' imbalance",
    "link_bandwidth": "link bandwidth",
    "link_latency": "message latency",
    "output_len": "output length",
    "gpu_memory": "GPU memory",
    "memory_utilization": "memory utilization",
    "price_per_hour": "GPU price",
    "utilization": "utilization",
    "api_input_price": "input price",
    "api_output_price": "output price",
    "acceptance_rate": "acceptance rate",
    "draft_len": "draft length",
    "draft_cost": "draft cost",
    "prefix_len": "shared prefix",
    "prefix_hit_rate": "prefix-cache hit rate",
    "api_cached_input_price": "cached input price",
    "d_1": "input width",
    "d_2": "hidden width",
    "d_3": "output width",
    "attention_efficiency": "attention efficiency",
    "network_bandwidth": "network bandwidth",
    "link_domain": "GPUs per NVLink domain",
    "token_budget": "token budget",
    "replicas": "replicas",
    "activation_bytes_per_number": "activation format",
    "decode_attention_efficiency": "decode attention efficiency",
    "kv_shared": "shared KV reads",
    "kernel_overhead": "kernel overhead",
    "step_overhead": "step overhead",
    "allreduce_latency": "all-reduce latency",
    "allreduce_bandwidth": "all-reduce bandwidth",
    "matmul_half_rows": "matmul half-rate rows",
    "attention_half_len": "attention half-rate length",
    "attention_half_head": "attention half-rate head size",
    "decode_attention_latency": "decode attention latency",
    "kv_reread_hits": "KV re-reads from L2",
    "grouped_matmul": "grouped product efficiency",
    "attention_fused": "fused prompt attention",
    "request_overhead": "request overhead",
    "ring_latency": "ring all-reduce latency",
    "ring_bandwidth": "ring all-reduce bandwidth",
    "host_op_cost": "host cost per eager kernel",
    "eager_prefill": "eager prefill steps",
    "eager_decode": "eager decode steps",
}
"""Short words for each symbol's control: ``LABELS["bandwidth"] == "memory bandwidth"``."""


def notation_table(symbols=None) -> str:
    """The notation as a Markdown table (symbol, keyword in code, meaning, unit): of
    ``symbols`` in their order, or of every symbol. The introduction shows the first
    chapters' letters, the formula reference all of them.

    >>> print(notation_table([B]).splitlines()[2])
    | $B$ | `batch` | batch size: sequences processed together | sequences |
    """
    chosen = NOTATION.values() if symbols is None else [NOTATION[s.name] for s in symbols]
    rows = ["| symbol | keyword in code | meaning | unit |", "|---|---|---|---|"]
    rows += [f"| ${r.latex}$ | `{r.symbol.name}` | {r.meaning} | {r.unit} |" for r in chosen]
    return "\n".join(rows)
