"""The book's schematic diagrams, drawn from the library's numbers so they stay right.

>>> d = memory_hierarchy("h100-sxm", "llama-3.1-8b")
>>> "3.35 TB/s" in d.texts  # the registry's bandwidth, formatted as the prose prints it
True
>>> d.png()[:4]
b'\\x89PNG'

Each function returns a ``Diagram``: a matplotlib figure that a notebook shows as a PNG at
twice its size (sharp on high-density screens) and whose ``texts`` the tests read. The figures
are made without pyplot, so none is left open and none is shown twice. Sizes come from a
``ModelConfig``, hardware figures from the GPU registry, labels from the book's notation
(``symbols.NOTATION``); the colours are the widgets' (``controls.PALETTE``). Dark text on a
white card reads in both of the book's colour modes (the theme puts figures on a light card).
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch
from matplotlib.text import Text

from inference_arithmetic.core import checks
from inference_arithmetic.core import format as fmt
from inference_arithmetic.core.dtypes import bytes_per_number
from inference_arithmetic.core.numeric import ArgumentError, evaluate
from inference_arithmetic.core.symbols import NOTATION
from inference_arithmetic.formulas import mlp, parallel
from inference_arithmetic.hardware.gpus import ON_CHIP, gpu_names
from inference_arithmetic.hardware.gpus import gpu as registry_gpu
from inference_arithmetic.models.config import model as registry_model
from inference_arithmetic.models.counts import (
    decode_flops,
    forward_flops,
    kv_cache_bytes,
    param_count,
)
from inference_arithmetic.page import figures
from inference_arithmetic.page.controls import PALETTE
from inference_arithmetic.serving import timing

__all__ = [
    "Diagram",
    "two_layer_network",
    "transformer_block",
    "kv_cache_steps",
    "memory_hierarchy",
    "prefill_decode_timeline",
    "batching_timeline",
    "parallelism",
    "attention_shapes",
    "gqa_grouping",
    "mla_compress",
    "prefill_decode_shapes",
    "batch_shared_read",
]

BLUE, VERMILION, GREEN, PURPLE, ORANGE, SKY = PALETTE[:6]
INK = "#222222"  # the text: dark on the white card of both colour modes
GREY = "#666666"
DPI = 100  # the figure's size in the page, in CSS pixels per inch; the PNG has twice as many
# Every diagram is drawn at most about 5 inches wide with text of SMALL points or more, so that
# its smallest text is at least 9 CSS px where a phone's column (342 px) shrinks it.
SMALL = 10


class Diagram:
    """A drawn figure: ``texts`` lists its words, ``png()`` renders it, a notebook shows it."""

    def __init__(self, figure: Figure):
        self.figure = figure

    @property
    def texts(self) -> list[str]:
        """Every text of the figure (labels, ticks, titles), in drawing order."""
        found = self.figure.findobj(lambda artist: isinstance(artist, Text))
        return [t.get_text() for t in found if t.get_text() and t.get_visible()]

    def png(self, scale: int = figures.SCALE) -> bytes:
        """The figure as a PNG at ``scale`` times its size in the page (``figures.png``)."""
        return figures.png(self.figure, scale)[0]

    def _repr_png_(self):
        return figures.png(self.figure)


def _sym(name: str) -> str:
    """The book's letter for a symbol, as mathtext: ``_sym("d_head")`` is ``d_h``."""
    return NOTATION[name].latex


def _math(*parts: str) -> str:
    return "$" + " ".join(parts) + "$"


def _shape(rows: str, cols: str) -> str:
    return rf"{rows} \times {cols}".replace(" ", r"\,").replace(r"\,\times\,", r" \times ")


def _canvas(width: float, height: float, scale: float = 0.62) -> tuple[Figure, object]:
    """A blank drawing area of ``width`` by ``height`` units, ``scale`` inches a unit."""
    figure = Figure(figsize=(width * scale, height * scale), dpi=DPI)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return figure, ax


def _tint(color: str, amount: float = 0.22) -> tuple[float, float, float]:
    """``color`` mixed with white: ``amount`` of the colour, the rest white."""
    r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return tuple(1 - amount * (1 - c) for c in (r, g, b))


def _box(ax, x, y, w, h, text="", color=BLUE, size=SMALL, fill=0.22, **kw):
    """A rounded box with its lower-left corner at (x, y) and ``text`` in its middle."""
    ax.add_patch(
        FancyBboxPatch(
            (x, y),
            w,
            h,
            boxstyle="round,pad=0,rounding_size=0.08",
            linewidth=1.2,
            edgecolor=color,
            facecolor=_tint(color, fill),
            **kw,
        )
    )
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, color=INK)


def _arrow(ax, start, end, color=INK, width=1.2, style="-|>", **kw):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle=style,
            mutation_scale=11,
            color=color,
            linewidth=width,
            shrinkA=0,
            shrinkB=0,
            **kw,
        )
    )


def _dense(arch):
    """A registry model (or a ``ModelConfig``) whose layers the block diagram can draw."""
    m = registry_model(arch)
    if m.n_experts or m.q_lora_rank or m.kv_lora_rank:
        raise ArgumentError(
            f"{m.name} has mixture-of-experts or latent-attention layers; the diagram draws a "
            "dense layer with multi-head or grouped-query attention"
        )
    return m


def two_layer_network(d_1: int = 2, d_2: int = 3, d_3: int = 2) -> Diagram:
    """Chapter 02's network: ``d_1`` inputs, ``d_2`` hidden numbers, ``d_3`` outputs; every
    line is one weight, ``d_1 d_2 + d_2 d_3`` of them (12 for the default 2-3-2)."""
    widths = [checks.count(name, v, 1, 8) for name, v in (("d_1", d_1), ("d_2", d_2), ("d_3", d_3))]
    n_weights = int(evaluate(mlp.params(), d_1=widths[0], d_2=widths[1], d_3=widths[2]))
    figure, ax = _canvas(8.6, 5.4, scale=0.54)
    xs, top, gap = [1.4, 4.3, 7.2], 4.1, 0.78
    nodes = []
    for x, n in zip(xs, widths, strict=True):
        middle = top - (max(widths) - 1) * gap / 2
        nodes.append([(x, middle + (n - 1) * gap / 2 - i * gap) for i in range(n)])
    for layer, color in ((0, BLUE), (1, VERMILION)):
        for a in nodes[layer]:
            for c in nodes[layer + 1]:
                ax.plot([a[0], c[0]], [a[1], c[1]], color=color, linewidth=1.3, zorder=1)
    for column, color in zip(nodes, (SKY, PURPLE, GREEN), strict=True):
        for x, y in column:
            ax.add_patch(
                Circle(
                    (x, y),
                    0.24,
                    facecolor=_tint(color, 0.5),
                    edgecolor=color,
                    linewidth=1.4,
                    zorder=2,
                )
            )
    low = min(y for column in nodes for _, y in column) - 0.55
    names = ("input", "hidden", "output")
    for x, name, symbol, n in zip(xs, names, ("d_1", "d_2", "d_3"), widths, strict=True):
        ax.text(
            x,
            low,
            f"{name}\n{_math(_sym(symbol), '=', str(n))}",
            ha="center",
            va="top",
            fontsize=SMALL,
            color=INK,
        )
    high = max(y for column in nodes for _, y in column) + 0.45
    for i, (color, w) in enumerate(((BLUE, "W_1"), (VERMILION, "W_2"))):
        rows, cols = _sym(f"d_{i + 1}"), _sym(f"d_{i + 2}")
        count = widths[i] * widths[i + 1]
        ax.text(
            (xs[i] + xs[i + 1]) / 2,
            high,
            f"{_math(w)}: {_math(_shape(rows, cols))}\n{count} weights",
            ha="center",
            va="bottom",
            fontsize=SMALL,
            color=color,
        )
    ax.text(
        4.3,
        0.15,
        f"{n_weights} weights in all",
        ha="center",
        va="bottom",
        fontsize=SMALL,
        color=INK,
    )
    return Diagram(figure)


def transformer_block(arch="llama-3.1-8b") -> Diagram:
    """One layer of a dense decoder-only transformer, with the shapes of each of its products
    in the book's letters and the weight matrices' sizes for ``arch`` (a registry name or a
    ``ModelConfig``); ``ValueError`` for a mixture-of-experts or latent-attention model."""
    m = _dense(arch)
    B, T, D, F = (_sym(n) for n in ("batch", "seq_len", "d_model", "d_ff"))
    H, Hkv, dh = _sym("n_heads"), _sym("n_kv_heads"), _sym("d_head")
    rows = B + " " + T
    gated = m.ffn == "gated"
    hd, hkvd = m.n_heads * m.d_head, m.n_kv_heads * m.d_head
    # Narrow and tall: about 0.4 inch a unit across and 0.68 down, so that each product fits its
    # column in two lines of SMALL-point text beside its box.
    figure = Figure(figsize=(12.4 * 0.395, 12.2 * 0.68), dpi=DPI)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 12.4)
    ax.set_ylim(0, 12.2)
    ax.set_axis_off()
    left, width, mid = 0.9, 4.2, 3.0
    right = 5.7

    def product(y, text, numbers=None, split=True):
        # A long product's shapes break before its arrow: ``text`` is "$a \to b$".
        if split and r" \to " in text:
            head, tail = text.split(r" \to ", 1)
            text = f"{head}$\n$\\to {tail}"
        ax.text(right, y + (0.2 if numbers else 0), text, ha="left", va="center", fontsize=SMALL,
                color=INK, linespacing=1.5)  # fmt: skip
        if numbers:
            ax.text(right, y - 0.36, numbers, ha="left", va="top", fontsize=SMALL, color=GREY)

    def down(y0, y1):
        _arrow(ax, (mid, y0), (mid, y1))

    ax.text(
        mid,
        11.75,
        f"in: {_math(_shape(rows, D))}",
        ha="center",
        va="center",
        fontsize=SMALL,
        color=INK,
    )
    ax.text(
        right,
        11.75,
        f"products of one layer\n({m.name}: {m.n_layers} layers)",
        ha="left",
        va="center",
        fontsize=SMALL,
        color=INK,
        fontweight="bold",
    )
    down(11.5, 10.95)
    _box(ax, left + 1.1, 10.45, 2.0, 0.5, "norm", color=GREY, size=SMALL, fill=0.12)
    w3 = (width - 0.3) / 3
    names = (("W_Q", H), ("W_K", Hkv), ("W_V", Hkv))
    centres = [left + i * (w3 + 0.15) + w3 / 2 for i in range(len(names))]
    # The normed input goes to each of the three projections: a fork, an arrow into each.
    ax.plot([mid, mid], [10.45, 10.1], color=INK, linewidth=1.2)
    ax.plot([centres[0], centres[-1]], [10.1, 10.1], color=INK, linewidth=1.2)
    for i, (name, _) in enumerate(names):
        _arrow(ax, (centres[i], 10.1), (centres[i], 9.75))
        _box(ax, left + i * (w3 + 0.15), 9.0, w3, 0.75, _math(name), color=BLUE)
    product(
        10.45,
        _math(
            rf"Q: ({_shape(rows, D)})\,({_shape(D, H + ' ' + dh)}) \to "
            + _shape(rows, H + " " + dh)
        ),
        f"{_shape_text(m.d_model, hd)} weights",
    )
    product(
        9.15,
        _math(
            rf"K, V: ({_shape(rows, D)})\,({_shape(D, Hkv + ' ' + dh)}) \to "
            + _shape(rows, Hkv + " " + dh)
        ),
        f"{_shape_text(m.d_model, hkvd)} weights each",
    )
    for x in centres:  # Q, K and V each go into attention
        _arrow(ax, (x, 9.0), (x, 8.35))
    _box(
        ax,
        left,
        7.45,
        width,
        0.9,
        "attention, per head\n" + _math(r"\mathrm{softmax}(Q K^\top / \sqrt{" + dh + r"})\, V"),
        color=VERMILION,
    )
    product(
        8.3,
        _math(rf"Q K^\top: ({_shape(T, dh)})\,({_shape(dh, T)}) \to {_shape(T, T)}"),
        split=False,
    )
    product(
        7.7,
        _math(rf"\cdot V: ({_shape(T, T)})\,({_shape(T, dh)}) \to {_shape(T, dh)}"),
        f"{_math(B, H)} times (each sequence,\neach head); no weights",
        split=False,
    )
    down(7.45, 6.85)
    _box(ax, left + 1.1, 6.1, 2.0, 0.75, _math("W_O"), color=BLUE)
    product(
        6.25,
        _math(
            rf"({_shape(rows, H + ' ' + dh)})\,({_shape(H + ' ' + dh, D)}) \to " + _shape(rows, D)
        ),
        f"{_shape_text(hd, m.d_model)} weights",
    )
    down(6.1, 5.6)
    _add(ax, mid, 5.35)
    ax.plot([mid, 0.35, 0.35], [11.15, 11.15, 5.35], color=GREY, linewidth=1.1)
    _arrow(ax, (0.35, 5.35), (mid - 0.25, 5.35), color=GREY, width=1.1)
    down(5.1, 4.6)
    _box(ax, left + 1.1, 4.1, 2.0, 0.5, "norm", color=GREY, size=SMALL, fill=0.12)
    down(4.1, 3.55)
    ffn_in = (("gate", "W_{gate}"), ("up", "W_{up}")) if gated else (("up", "W_{up}"),)
    w2 = (width - 0.2) / 2 if gated else 2.0
    x0 = left if gated else left + 1.1
    for i, (_, name) in enumerate(ffn_in):
        _box(ax, x0 + i * (w2 + 0.2), 2.8, w2, 0.75, _math(name), color=GREEN)
    times = ", twice" if gated else ""
    product(
        3.18,
        _math(rf"({_shape(rows, D)})\,({_shape(D, F)}) \to {_shape(rows, F)}") + times,
        f"{_shape_text(m.d_model, m.d_ff)} weights" + (" each" if gated else ""),
    )
    down(2.8, 2.2)
    if gated:
        ax.text(mid + 0.15, 2.5, "gate ⊙ up", ha="left", va="center", fontsize=SMALL, color=GREY)
    _box(ax, left + 1.1, 1.45, 2.0, 0.75, _math("W_{down}"), color=GREEN)
    product(
        1.83,
        _math(rf"({_shape(rows, F)})\,({_shape(F, D)}) \to {_shape(rows, D)}"),
        f"{_shape_text(m.d_ff, m.d_model)} weights",
    )
    down(1.45, 0.95)
    _add(ax, mid, 0.7)
    ax.plot([mid, 0.35, 0.35], [4.85, 4.85, 0.7], color=GREY, linewidth=1.1)
    _arrow(ax, (0.35, 0.7), (mid - 0.25, 0.7), color=GREY, width=1.1)
    ax.text(
        mid + 0.4,
        0.7,
        f"out: {_math(_shape(rows, D))}",
        ha="left",
        va="center",
        fontsize=SMALL,
        color=INK,
    )
    return Diagram(figure)


def _shape_text(rows: int, cols: int) -> str:
    return f"{fmt.integer(rows)} × {fmt.integer(cols)}"


def _add(ax, x, y):
    """The residual connection's sum: a circled plus."""
    # A marker, not a patch: round whatever the axes' aspect.
    ax.plot(x, y, "o", markersize=15, markerfacecolor="white", markeredgecolor=INK, mew=1.2)
    ax.text(x, y, "+", ha="center", va="center", fontsize=11, color=INK)


def kv_cache_steps(arch="llama-3.1-8b", steps: int = 4, dtype: str = "bf16") -> Diagram:
    """The KV cache over the first ``steps`` decode steps: each step keeps one more token's key
    and value and its new query reads all of them; the bytes are ``arch``'s in ``dtype``."""
    m = registry_model(arch)
    steps = checks.count("steps", steps, 1, 8)
    # Each step: a line that says what its query reads, then the cached keys and values, then
    # the cache's size beside them; the text above the cells keeps the figure narrow.
    cell, gap, height, row = 0.62, 0.08, 0.42, 1.7
    width = max(1.0 + steps * (cell + gap) + 3.6, 8.0)
    top = row * steps + 1.35
    figure, ax = _canvas(width, top, scale=0.56)
    per_token = kv_cache_bytes(m, batch=1, context_len=1, dtype=dtype)
    ax.text(0.1, top - 0.3, f"{m.name}, {dtype}: each token adds {fmt.nbytes(per_token)}",
            ha="left", va="center", fontsize=SMALL, color=INK)  # fmt: skip
    ax.text(0.1, top - 0.8, "orange: written this step; blue: kept", ha="left", va="center",
            fontsize=SMALL, color=GREY)  # fmt: skip
    for t in range(1, steps + 1):
        y = row * (steps - t) + 0.3
        reads = "its own key" if t == 1 else f"all {t} keys"
        ax.text(0.1, y + 2 * height + 0.3, f"step {t}: the new token's query reads {reads}",
                ha="left", va="center", fontsize=SMALL, color=INK)  # fmt: skip
        ax.text(0.55, y + height * 1.5, "K", ha="center", va="center", fontsize=SMALL, color=GREY)
        ax.text(0.55, y + height * 0.5, "V", ha="center", va="center", fontsize=SMALL, color=GREY)
        for i in range(t):
            new = i == t - 1
            color = VERMILION if new else BLUE
            x = 0.9 + i * (cell + gap)
            for level in (0, 1):
                ax.add_patch(
                    FancyBboxPatch(
                        (x, y + level * height + 0.02),
                        cell,
                        height - 0.04,
                        boxstyle="round,pad=0,rounding_size=0.05",
                        linewidth=1.0,
                        edgecolor=color,
                        facecolor=_tint(color, 0.45 if new else 0.2),
                    )
                )
        cached = kv_cache_bytes(m, batch=1, context_len=t, dtype=dtype)
        tokens = "1 token" if t == 1 else f"{t} tokens"
        ax.text(0.9 + t * (cell + gap) + 0.15, y + height, f"cache: {tokens}, {fmt.nbytes(cached)}",
                ha="left", va="center", fontsize=SMALL, color=INK)  # fmt: skip
    return Diagram(figure)


def memory_hierarchy(gpu="h100-sxm", arch="llama-3.1-8b", dtype: str = "bf16") -> Diagram:
    """Where the weights live: off-chip HBM, the on-chip L2 and SM shared memory, the tensor
    cores, with ``gpu``'s registry figures, and the bytes of ``arch``'s weights against each
    memory. ``ValueError`` for a GPU whose on-chip figures the registry does not hold."""
    g = registry_gpu(gpu)
    missing = [name for name in ON_CHIP if getattr(g, name) is None]
    if missing:
        have = [name for name in gpu_names() if _has_on_chip(name)]
        raise ArgumentError(
            f"the registry has no {', '.join(missing)} for {g.name}; "
            f"GPUs with on-chip figures: {', '.join(have)}"
        )
    m = registry_model(arch)
    weights = param_count(m) * bytes_per_number(dtype)
    shared = g.sm_count * g.shared_memory_per_sm
    # HBM above the chip and the chip's memories side by side inside it: a tall figure, narrow
    # enough for its text to be read on a phone (x and y units of 0.4 inch).
    figure = Figure(figsize=(4.8, 5.2), dpi=DPI)
    ax = figure.add_axes((0, 2.4 / 5.2, 1, 2.8 / 5.2))
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 7)
    ax.set_axis_off()
    _box(ax, 0.2, 5.0, 11.6, 1.8, "", color=BLUE, fill=0.12)
    ax.text(0.5, 6.45, f"HBM, off the chip: {fmt.nbytes(g.memory_bytes)}", ha="left",
            va="center", fontsize=SMALL, color=INK)  # fmt: skip
    fill = min(weights / g.memory_bytes, 1.0)
    _box(ax, 0.5, 5.25, 11.0 * fill, 0.6, "", color=BLUE, fill=0.5)
    inside = fill > 0.6  # the label inside a long bar, beside a short one
    ax.text(0.7 if inside else 0.7 + 11.0 * fill, 5.55, f"weights {fmt.nbytes(weights)}",
            ha="left", va="center", fontsize=SMALL, color=INK)  # fmt: skip
    _arrow(ax, (3.0, 5.0), (3.0, 3.85), color=BLUE, width=2.2)
    ax.text(3.4, 4.65, fmt.bandwidth(g.memory_bandwidth), ha="left", va="center", fontsize=SMALL,
            color=INK, fontweight="bold")  # fmt: skip
    ax.text(
        3.4, 4.15, "all weights, every step", ha="left", va="center", fontsize=SMALL, color=GREY
    )
    ax.add_patch(
        FancyBboxPatch(
            (0.2, 0.6),
            11.6,
            3.2,
            boxstyle="round,pad=0,rounding_size=0.1",
            linewidth=1.2,
            edgecolor=GREY,
            facecolor="none",
            linestyle=(0, (4, 2)),
        )
    )
    ax.text(11.6, 3.45, "the GPU chip", ha="right", va="center", fontsize=SMALL, color=GREY)
    l2 = f"L2 cache\n{fmt.nbytes(g.l2_cache_bytes, binary=True)}"
    _box(ax, 0.5, 1.0, 3.0, 2.1, l2, color=GREEN, size=SMALL)
    _arrow(ax, (3.55, 2.05), (4.25, 2.05))
    sm_text = (
        f"{g.sm_count} SMs\nshared memory\n{g.sm_count} × "
        f"{fmt.nbytes(g.shared_memory_per_sm, binary=True)}"
    )
    _box(ax, 4.3, 1.0, 3.5, 2.1, sm_text, color=ORANGE, size=SMALL)
    _arrow(ax, (7.85, 2.05), (8.55, 2.05))
    cores = f"tensor cores\n{fmt.flop_rate(g.flop_rate(dtype))}"
    _box(ax, 8.6, 1.0, 3.0, 2.1, cores, color=VERMILION, size=SMALL)
    ax.text(0.2, 0.2, f"{g.name}, {m.name} in {dtype}", ha="left", va="center", fontsize=SMALL,
            color=GREY)  # fmt: skip
    bars = figure.add_axes((0.32, 0.5 / 5.2, 0.62, 1.6 / 5.2))
    sizes = {
        "weights": (weights, BLUE),
        "HBM": (g.memory_bytes, BLUE),
        "L2 cache": (g.l2_cache_bytes, GREEN),
        "shared memory": (shared, ORANGE),
    }
    labels = list(sizes)
    for i, (value, color) in enumerate(sizes.values()):
        bars.barh(i, value, color=_tint(color, 0.6), edgecolor=color, height=0.6)
        text = fmt.nbytes(value, binary=color != BLUE)
        bars.text(value * 1.5, i, text, ha="left", va="center", fontsize=SMALL, color=INK)
    bars.set_xscale("log")
    bars.set_xlim(1e6, 1e13)
    bars.set_xticks([1e6, 1e8, 1e10, 1e12])
    bars.set_yticks(range(len(labels)), labels, fontsize=SMALL, color=INK)
    bars.invert_yaxis()
    bars.set_xlabel("bytes (log scale)", fontsize=SMALL, color=INK)
    bars.tick_params(axis="x", which="major", labelsize=SMALL, colors=INK)
    bars.spines[["top", "right"]].set_visible(False)
    return Diagram(figure)


def _has_on_chip(name: str) -> bool:
    return all(getattr(registry_gpu(name), f) is not None for f in ON_CHIP)


def prefill_decode_timeline(
    arch="llama-3.1-8b",
    gpu="h100-sxm",
    prompt_len: int = 2048,
    output_len: int = 8,
    dtype: str = "bf16",
    **deployment,
) -> Diagram:
    """One request on a time axis: the prefill of its ``prompt_len`` tokens, which ends with
    the first output token, then one decode step per further token, each timed by the library
    (``ia.prefill_time``, ``ia.decode_step_time``; ``deployment`` as they take it)."""
    m, g = registry_model(arch), registry_gpu(gpu)
    prompt_len = checks.count("prompt_len", prompt_len)
    output_len = checks.count("output_len", output_len, 2, 16)
    ttft = timing.prefill_time(m, g, batch=1, prompt_len=prompt_len, dtype=dtype, **deployment)
    steps = [
        timing.decode_step_time(
            m, g, batch=1, context_len=prompt_len + i, dtype=dtype, **deployment
        )
        for i in range(output_len - 1)
    ]
    # Which side of the ideal roofline each phase is on: its FLOPs at peak against its bytes
    # (weights and cache) at full bandwidth.
    weights = param_count(m) * bytes_per_number(dtype)
    cache = kv_cache_bytes(m, batch=1, context_len=prompt_len, dtype=dtype)
    prefill_bound = _bound(forward_flops(m, batch=1, seq_len=prompt_len), weights + cache, g, dtype)
    decode_bound = _bound(
        decode_flops(m, batch=1, context_len=prompt_len), weights + cache, g, dtype
    )
    scale = 1e3  # milliseconds
    total = (ttft + sum(steps)) * scale
    # Each phase named under the bars, the prefill's at the left and the decode's below it at
    # the right, so that a short prefill's bar need not hold its words.
    figure = Figure(figsize=(4.8, 3.2), dpi=DPI)
    ax = figure.add_axes((0.03, 0.3, 0.94, 0.62))
    ax.barh(0, ttft * scale, left=0, height=0.5, color=_tint(BLUE, 0.45), edgecolor=BLUE)
    ax.text(0, -0.35, f"prefill: {fmt.integer(prompt_len)} tokens at once\n{prefill_bound}",
            ha="left", va="top", fontsize=SMALL, color=INK)  # fmt: skip
    start = ttft * scale
    for i, step in enumerate(steps):
        ax.barh(
            0,
            step * scale,
            left=start,
            height=0.5,
            edgecolor=VERMILION,
            color=_tint(VERMILION, 0.45 if i % 2 else 0.25),
        )
        start += step * scale
    ax.text(total, -0.9, f"decode: one token a step,\nevery weight read again; {decode_bound}",
            ha="right", va="top", fontsize=SMALL, color=INK)  # fmt: skip
    ends = [ttft * scale]
    for step in steps:
        ends.append(ends[-1] + step * scale)
    ax.plot(ends, [0.33] * len(ends), "v", color=INK, markersize=5)
    ax.text(ends[0], 0.45, "1st token", ha="center", va="bottom", fontsize=SMALL, color=INK)
    ax.text(
        ends[-1], 0.45, f"token {output_len}", ha="right", va="bottom", fontsize=SMALL, color=INK
    )
    for left, right in ((0, ends[0]), (ends[0], ends[1])):
        ax.annotate("", (left, 0.82), (right, 0.82),
                    arrowprops=dict(arrowstyle="<->", color=GREY, linewidth=1))  # fmt: skip
    ax.text(0, 0.92, f"time to first token {fmt.seconds(ttft)}", ha="left", va="bottom",
            fontsize=SMALL, color=INK)  # fmt: skip
    ax.text(total, 1.22, f"time per output token {fmt.seconds(steps[0])}", ha="right",
            va="bottom", fontsize=SMALL, color=INK)  # fmt: skip
    ax.set_xlim(0, total * 1.02)
    ax.set_ylim(-1.45, 1.5)
    ax.set_yticks([])
    ax.set_xlabel(f"time (ms)\n{m.name} on one {g.name}, {dtype}, one request", fontsize=SMALL,
                  color=INK)  # fmt: skip
    ax.tick_params(axis="x", labelsize=SMALL, colors=INK)
    ax.spines[["top", "right", "left"]].set_visible(False)
    return Diagram(figure)


def _bound(flops, nbytes, g, dtype) -> str:
    compute = flops / g.flop_rate(dtype) > nbytes / g.memory_bandwidth
    return "compute-bound" if compute else "memory-bound"


def _schedule(lengths, slots, continuous):
    """The runs (request, slot, start, end) in decode steps, and the idle stretches (slot,
    start, end): a static batch's slots wait for its slowest request; a continuous engine
    gives a free slot to the next request at once."""
    runs, idle, free = [], [], [0] * slots
    if continuous:
        for r, n in enumerate(lengths):
            slot = min(range(slots), key=lambda s: free[s])
            runs.append((r, slot, free[slot], free[slot] + n))
            free[slot] += n
        return runs, idle
    start = 0
    for first in range(0, len(lengths), slots):
        batch = lengths[first : first + slots]
        end = start + max(batch)
        runs += [(first + s, s, start, start + n) for s, n in enumerate(batch)]
        idle += [(s, start + n, end) for s, n in enumerate(batch) if start + n < end]
        start = end
    return runs, idle


def batching_timeline(lengths=(6, 2, 4, 3, 2, 5, 3, 2, 4, 2), slots: int = 4) -> Diagram:
    """Static against continuous batching of requests that want ``lengths`` output tokens,
    on ``slots`` batch slots, one decode step a column; the titles give each schedule's steps
    and the share of slot-steps that decode a token."""
    slots = checks.count("slots", slots, 1, 8)
    lengths = [checks.count("a request's length", n, 1, 50) for n in lengths]
    if not lengths or len(lengths) > 26:
        raise ArgumentError(f"draw 1 to 26 requests, got {len(lengths)}")
    figure = Figure(figsize=(4.8, 2.0 + 0.55 * slots * 2), dpi=DPI)
    schedules = {"static": _schedule(lengths, slots, False)}
    schedules["continuous"] = _schedule(lengths, slots, True)
    span = max(end for runs, _ in schedules.values() for *_, end in runs)
    axes = figure.subplots(2, 1, sharex=True)
    figure.subplots_adjust(left=0.15, right=0.98, top=0.88, bottom=0.16, hspace=0.75)
    for ax, (name, (runs, idle)) in zip(axes, schedules.items(), strict=True):
        end = max(e for *_, e in runs)
        busy = sum(lengths) / (end * slots)
        for r, slot, s, e in runs:
            color = PALETTE[r % 6]
            ax.barh(slot, e - s, left=s, height=0.7, color=_tint(color, 0.35), edgecolor=color)
            ax.text(
                (s + e) / 2,
                slot,
                chr(ord("A") + r),
                ha="center",
                va="center",
                fontsize=SMALL,
                color=INK,
            )
        for slot, s, e in idle:
            ax.barh(
                slot,
                e - s,
                left=s,
                height=0.7,
                color="white",
                edgecolor=GREY,
                hatch="////",
                linewidth=0.6,
            )
        ax.set_title(
            f"{name} batching: {end} steps,\n{busy:.0%} of slot-steps decode a token",
            fontsize=SMALL,
            color=INK,
            loc="left",
        )
        ax.set_yticks(range(slots), [f"slot {s + 1}" for s in range(slots)], fontsize=SMALL)
        ax.invert_yaxis()
        ax.set_xlim(0, span + 0.5)
        ax.tick_params(colors=INK, labelsize=SMALL)
        ax.spines[["top", "right"]].set_visible(False)
    axes[-1].set_xlabel(
        "time (decode steps); hatched: a slot that\nwaits for its batch's slowest request",
        fontsize=SMALL,
        color=INK,
    )
    return Diagram(figure)


def parallelism(arch="llama-3.1-70b", n_gpus: int = 4, batch: int = 1, dtype="bf16") -> Diagram:
    """Pipeline against tensor parallelism of ``arch`` over ``n_gpus`` GPUs: what each GPU
    holds and the messages of one decode step of ``batch`` tokens (activations of D numbers
    each, ``b`` bytes a number)."""
    m = registry_model(arch)
    n = checks.count("n_gpus", n_gpus, 2, 8)
    batch = checks.count("batch", batch)
    message = batch * m.d_model * bytes_per_number(dtype)
    per_gpu = timing.weights_per_gpu(m, n_gpus=n, dtype=dtype)
    B, D, b = _sym("batch"), _sym("d_model"), _sym("bytes_per_number")
    size = _math(rf"{B}\,{D}\,{b}") + f" = {fmt.nbytes(message)}"
    figure, ax = _canvas(12.0, 9.0, scale=0.42)
    w, gap = (11.4 - (n - 1) * 0.3) / n, 0.3
    xs = [0.3 + i * (w + gap) for i in range(n)]
    ax.text(
        0.3,
        8.45,
        f"pipeline: each GPU holds {m.n_layers // n if m.n_layers % n == 0 else '~'}"
        f" whole layers,\n{fmt.nbytes(per_gpu)} of weights",
        ha="left",
        va="center",
        fontsize=SMALL,
        color=INK,
        fontweight="bold",
    )
    bounds = [round(i * m.n_layers / n) for i in range(n + 1)]
    for i, x in enumerate(xs):
        label = f"GPU {i + 1}\nlayers\n{bounds[i] + 1}–{bounds[i + 1]}"
        _box(ax, x, 6.2, w, 1.5, label, color=BLUE, size=SMALL)
        if i:
            _arrow(ax, (x - gap + 0.02, 6.95), (x - 0.02, 6.95), color=PURPLE, width=1.8)
    ax.text(
        0.3,
        5.5,
        f"{n - 1} hand-offs a step, each {size};\none GPU works while the others wait",
        ha="left",
        va="center",
        fontsize=SMALL,
        color=INK,
    )
    per_layer = parallel.ALL_REDUCES_PER_LAYER
    ax.text(
        0.3,
        4.35,
        f"tensor: each GPU holds 1/{n} of every matrix\nof all {m.n_layers} layers, "
        f"{fmt.nbytes(per_gpu)} of weights",
        ha="left",
        va="center",
        fontsize=SMALL,
        color=INK,
        fontweight="bold",
    )
    heads = (
        f"{m.n_heads // n} of {m.n_heads}\nheads" if m.n_heads % n == 0 else f"1/{n} of\nthe heads"
    )
    for i, x in enumerate(xs):
        _box(ax, x, 1.95, w, 1.75, f"GPU {i + 1}\n{heads},\n1/{n} of FFN", color=GREEN,
             size=SMALL)  # fmt: skip
        if i:
            _arrow(ax, (x - gap + 0.02, 2.82), (x - 0.02, 2.82), color=PURPLE, width=1.8)
    # The ring closes: the last GPU sends to the first, under the row.
    _arrow(
        ax,
        (xs[-1] + w / 2, 1.9),
        (xs[0] + w / 2, 1.9),
        color=PURPLE,
        width=1.5,
        connectionstyle="arc3,rad=-0.12",
    )
    ax.text(
        0.3,
        0.45,
        f"ring all-reduce after attention and after the FFN:\n{per_layer} a layer, "
        f"{per_layer * m.n_layers} a step, each of {size}",
        ha="left",
        va="center",
        fontsize=SMALL,
        color=INK,
    )
    return Diagram(figure)


# --- Five figures: attention, GQA, MLA, prefill against decode, a shared read --------------
# Drawn narrow (at most about 5 inches) with text of 10 points or more, so that the smallest
# text is at least 9 px when the figure shrinks to a phone's column.


def _matrix(ax, x, y, w, h, name, shape, color, fill=0.3, below=True):
    """A matrix as a box (lower-left corner at x, y), its name inside, its shape under it."""
    _box(ax, x, y, w, h, name, color=color, size=11, fill=fill)
    if shape:
        ax.text(x + w / 2, y - 0.12 if below else y + h + 0.12, shape, ha="center",
                va="top" if below else "bottom", fontsize=SMALL, color=INK)  # fmt: skip


def _op(ax, x, y, text):
    ax.text(x, y, text, ha="center", va="center", fontsize=14, color=INK)


def attention_shapes(arch="llama-3.1-8b", seq_len: int = 2048) -> Diagram:
    """Attention of one head over ``seq_len`` tokens with the shapes of its products: the
    scores Q K^T (T x d_h by d_h x T gives T x T), their softmax row by row, and the
    weighted sum of the values (T x T by T x d_h gives T x d_h); d_h is ``arch``'s."""
    m = _dense(arch)
    seq_len = checks.count("seq_len", seq_len)
    T, dh = _sym("seq_len"), _sym("d_head")
    n, d = fmt.integer(seq_len), fmt.integer(m.d_head)
    tall, thin, square = (0.55, 1.7), (1.7, 0.55), (1.7, 1.7)
    figure, ax = _canvas(7.4, 9.6, scale=0.62)
    ax.text(0.1, 9.35, f"one head of {m.name}: {_math(T)} = {n} tokens, {_math(dh)} = {d}",
            ha="left", va="center", fontsize=SMALL, color=INK, fontweight="bold")  # fmt: skip

    def row(y, left, right, result, op_left, op_right="="):
        x = 0.1
        for i, (name, (w, h), shape, color) in enumerate((left, right, result)):
            slot = max(w, 1.6)  # as wide as its shape's label
            _matrix(ax, x + (slot - w) / 2, y + (1.7 - h) / 2, w, h, name, shape, color)
            if i < 2:
                _op(ax, x + slot + 0.3, y + 0.85, op_left if i == 0 else op_right)
                x += slot + 0.6
        return x

    def shape(rows, cols, r, c):
        return f"{_math(_shape(rows, cols))}\n{r} × {c}"

    row(6.55, (_math("Q"), tall, shape(T, dh, n, d), BLUE),
        (_math(r"K^\top"), thin, shape(dh, T, d, n), BLUE),
        (_math("S"), square, shape(T, T, n, n), VERMILION), "×")  # fmt: skip
    ax.text(0.1, 5.45, r"scores: $2\,T^2 d_h$ FLOPs a head", ha="left", va="center",
            fontsize=SMALL, color=GREY)  # fmt: skip
    _arrow(ax, (6.9, 5.3), (6.9, 4.35))
    ax.text(6.75, 4.8, r"softmax of each row of $S / \sqrt{" + dh + "}$", ha="right",
            va="center", fontsize=SMALL, color=INK)  # fmt: skip
    row(2.45, (_math("P"), square, shape(T, T, n, n), VERMILION),
        (_math("V"), tall, shape(T, dh, n, d), BLUE),
        (_math("O"), tall, shape(T, dh, n, d), GREEN), "×")  # fmt: skip
    ax.text(0.1, 1.45, r"weighted sum of values: the same $2\,T^2 d_h$ FLOPs",
            ha="left", va="center", fontsize=SMALL, color=GREY)  # fmt: skip
    heads = f"{m.n_heads} query heads" + (
        f", {m.n_kv_heads} K/V heads" if m.n_kv_heads != m.n_heads else ""
    )
    ax.text(0.1, 0.95, f"{heads} a layer, {m.n_layers} layers; no weights",
            ha="left", va="center", fontsize=SMALL, color=GREY)  # fmt: skip
    ax.text(0.1, 0.45, "sizes not to scale", ha="left", va="center", fontsize=SMALL,
            color=GREY, style="italic")  # fmt: skip
    return Diagram(figure)


def _cache_per_token(m, n_kv_heads=None, form="latent", dtype="bf16") -> float:
    """Bytes a token's keys and values take in all layers (the library's cache formula), with
    ``n_kv_heads`` K/V heads in place of ``arch``'s."""
    from inference_arithmetic.core.numeric import numeric
    from inference_arithmetic.formulas import kv_cache

    values = {**m.sizes(), "batch": 1, "context_len": 1,
              "bytes_per_number": bytes_per_number(dtype)}  # fmt: skip
    if n_kv_heads is not None:
        values["n_kv_heads"] = n_kv_heads
    return float(numeric(kv_cache.kv_cache_bytes(m, form)).from_values(values))


def gqa_grouping(arch="llama-3.1-8b", dtype: str = "bf16") -> Diagram:
    """Query heads and the K/V heads they read, three ways: multi-head (one K/V head per query
    head), ``arch``'s grouped-query attention (H / H_kv query heads share one), multi-query
    (all share one); with each one's cache per token in ``dtype``."""
    m = _dense(arch)
    if m.n_kv_heads in (1, m.n_heads):
        raise ArgumentError(f"{m.name} has {m.n_kv_heads} K/V heads: not grouped-query")
    H = m.n_heads
    width = 7.6
    figure, ax = _canvas(width, 10.2, scale=0.62)
    cell = (width - 0.5) / H
    kinds = (("multi-head (MHA)", H), (f"grouped-query (GQA), {m.name}", m.n_kv_heads),
             ("multi-query (MQA)", 1))  # fmt: skip
    for k, (name, kv) in enumerate(kinds):
        top = 9.9 - 3.4 * k
        per_token = _cache_per_token(m, kv, dtype=dtype)
        group = H // kv
        ax.text(0.25, top, name, ha="left", va="center", fontsize=SMALL, color=INK,
                fontweight="bold" if kv == m.n_kv_heads else "normal")  # fmt: skip
        qy, ky = top - 0.75, top - 2.05
        kv_w = min(cell * group, width - 0.5)
        for i in range(H):
            x = 0.25 + i * cell
            _box(ax, x + 0.02, qy, cell - 0.04, 0.38, color=BLUE, fill=0.45)
            j = i // group
            ax.plot([x + cell / 2, 0.25 + j * kv_w + kv_w / 2], [qy, ky + 0.38],
                    color=GREY, linewidth=0.7, zorder=0)  # fmt: skip
        for j in range(kv):
            _box(ax, 0.25 + j * kv_w + 0.03, ky, kv_w - 0.06, 0.38, color=VERMILION, fill=0.45)
        shared = "one a query head" if group == 1 else f"{group} query heads share each"
        ax.text(0.25, ky - 0.3, f"{H} query heads; {kv} K/V head{'s' if kv > 1 else ''}, "
                f"{shared}", ha="left", va="center", fontsize=SMALL, color=INK)  # fmt: skip
        ax.text(0.25, ky - 0.72, f"cache: {fmt.nbytes(per_token)} a token ({dtype}, "
                f"{m.n_layers} layers)", ha="left", va="center", fontsize=SMALL,
                color=GREY)  # fmt: skip
    return Diagram(figure)


def mla_compress(arch="deepseek-v3", dtype: str = "bf16") -> Diagram:
    """Multi-head latent attention's compress and expand: a token's hidden vector (D numbers)
    is compressed to a latent of r_kv numbers plus a shared RoPE key of d_rope, which is what
    the cache keeps; each head's key and value are expanded from it when attention needs them.
    The sizes are ``arch``'s; ``ValueError`` for a model without latent attention."""
    m = registry_model(arch)
    if not m.is_mla:
        raise ArgumentError(f"{m.name} has no latent attention; try deepseek-v3")
    D, r, dr = _sym("d_model"), _sym("kv_lora_rank"), _sym("d_rope")
    dn, dv, H = _sym("d_nope"), _sym("d_v"), _sym("n_heads")
    from inference_arithmetic.core.numeric import numeric
    from inference_arithmetic.formulas import kv_cache

    sizes = m.sizes()
    # Numbers a layer caches per token, latent and expanded per head (the library's formula).
    latent, expanded = (int(numeric(kv_cache.numbers_per_token(m, form)).from_values(sizes))
                        for form in ("latent", "expanded"))  # fmt: skip
    per_token = _cache_per_token(m, dtype=dtype)
    figure, ax = _canvas(7.6, 9.6, scale=0.62)
    i = fmt.integer
    _box(ax, 1.6, 8.4, 4.4, 0.85, f"hidden vector {_math(D)} = {i(m.d_model)}", color=GREY,
         size=SMALL + 1, fill=0.15)  # fmt: skip
    _arrow(ax, (3.8, 8.4), (3.8, 7.35))
    ax.text(3.95, 7.88, f"compress: {_math('W_{DKV}')} {i(m.d_model)} × {i(latent)}",
            ha="left", va="center", fontsize=SMALL, color=INK)  # fmt: skip
    _box(ax, 0.9, 5.75, 5.8, 1.6, "", color=ORANGE, fill=0.35)
    rope = i(sizes["d_rope"])
    ax.text(3.8, 6.85, f"latent {_math(r)} = {i(m.kv_lora_rank)} + RoPE key {_math(dr)} = "
            f"{rope}", ha="center", va="center", fontsize=SMALL + 1, color=INK)  # fmt: skip
    ax.text(3.8, 6.25, f"cached: {i(latent)} numbers a token a layer", ha="center",
            va="center", fontsize=SMALL + 1, color=INK, fontweight="bold")  # fmt: skip
    for x_end, label in ((2.0, "W_{UK}"), (5.6, "W_{UV}")):
        _arrow(ax, (3.8, 5.75), (x_end, 4.55))
        ax.text(x_end + (-0.15 if x_end < 3.8 else 0.15), 5.2, _math(label),
                ha="right" if x_end < 3.8 else "left", va="center", fontsize=SMALL + 1,
                color=INK)  # fmt: skip
    _box(ax, 0.2, 3.45, 3.5, 1.1, f"keys, per head\n{_math(dn, '+', dr)} = "
         f"{i(sizes['d_nope'] + sizes['d_rope'])}", color=BLUE, size=SMALL)  # fmt: skip
    _box(ax, 3.9, 3.45, 3.5, 1.1, f"values, per head\n{_math(dv)} = {i(sizes['d_v'])}", color=BLUE,
         size=SMALL)  # fmt: skip
    ax.text(3.8, 2.95, f"expanded for all {_math(H)} = {m.n_heads} heads when attention needs "
            "them", ha="center", va="center", fontsize=SMALL, color=INK)  # fmt: skip
    ax.text(0.2, 2.1, f"cache of a token: {fmt.nbytes(per_token)} in {dtype}, all "
            f"{m.n_layers} layers", ha="left", va="center", fontsize=SMALL, color=INK)  # fmt: skip
    ax.text(0.2, 1.55, f"keys and values kept per head instead: {i(expanded)} numbers",
            ha="left", va="center", fontsize=SMALL, color=GREY)  # fmt: skip
    ax.text(0.2, 1.05, f"a layer, {expanded / latent:.0f} times as many", ha="left",
            va="center", fontsize=SMALL, color=GREY)  # fmt: skip
    return Diagram(figure)


def prefill_decode_shapes(arch="llama-3.1-8b", prompt_len: int = 2048, dtype: str = "bf16"):
    """The up-projection of ``arch``'s feed-forward layer in prefill and in decode: the same
    D x F weight matrix times T x D (every prompt token at once) or 1 x D (one new token), with
    each product's FLOPs per byte moved (``roofline.matmul_intensity``)."""
    from inference_arithmetic.formulas import roofline

    m = _dense(arch)
    prompt_len = checks.count("prompt_len", prompt_len)
    T, D, F = _sym("seq_len"), _sym("d_model"), _sym("d_ff")
    b = bytes_per_number(dtype)

    def intensity(rows):
        return float(evaluate(roofline.matmul_intensity(), batch=rows, d_model=m.d_model,
                              d_ff=m.d_ff, bytes_per_number=b))  # fmt: skip

    i = fmt.integer
    figure, ax = _canvas(7.6, 9.4, scale=0.62)
    panels = ((f"prefill: all {_math(T)} = {i(prompt_len)} prompt tokens at once", T,
               i(prompt_len), 1.9, prompt_len),
              ("decode: one new token a step", "1", "1", 0.28, 1))  # fmt: skip
    for k, (title, rows, rows_n, h, count) in enumerate(panels):
        top = 9.1 - 4.6 * k
        ax.text(0.2, top, title, ha="left", va="center", fontsize=SMALL, color=INK,
                fontweight="bold")  # fmt: skip
        mid = top - 1.45
        _matrix(ax, 0.2, mid - h / 2, 1.5, h, _math("X") if count > 1 else "",
                f"{_math(_shape(rows, D))}\n{rows_n} × {i(m.d_model)}", SKY)  # fmt: skip
        _op(ax, 2.05, mid, "×")
        _matrix(ax, 2.4, mid - 0.75, 2.2, 1.5, _math("W_{up}"),
                f"{_math(_shape(D, F))}\n{i(m.d_model)} × {i(m.d_ff)}", GREEN)  # fmt: skip
        _op(ax, 4.95, mid, "=")
        _matrix(ax, 5.3, mid - h / 2, 2.2, h, _math("Y") if count > 1 else "",
                f"{_math(_shape(rows, F))}\n{rows_n} × {i(m.d_ff)}", SKY)  # fmt: skip
        ax.text(0.2, top - 3.55, f"one read of {_math('W_{up}')}: {intensity(count):,.0f} "
                f"FLOP{'s' if round(intensity(count)) != 1 else ''} per byte ({dtype})",
                ha="left", va="center", fontsize=SMALL, color=INK)  # fmt: skip
    return Diagram(figure)


def batch_shared_read(
    arch="llama-3.1-8b",
    gpu="h100-sxm",
    batch: int = 8,
    context_len: int = 2048,
    dtype: str = "bf16",
    **deployment,
) -> Diagram:
    """A decode step of ``batch`` requests: their B rows stacked into one B x D input that
    meets each weight matrix once, so the weights cross from memory once a step whatever the
    batch; with the library's step times at batch 1 and at ``batch``
    (``ia.decode_step_time``, ``deployment`` as it takes it)."""
    m, g = registry_model(arch), registry_gpu(gpu)
    batch = checks.count("batch", batch, 2, 16)
    one = timing.decode_step_time(m, g, batch=1, context_len=context_len, dtype=dtype, **deployment)
    many = timing.decode_step_time(
        m, g, batch=batch, context_len=context_len, dtype=dtype, **deployment
    )
    weights = param_count(m) * bytes_per_number(dtype)
    B, D = _sym("batch"), _sym("d_model")
    figure, ax = _canvas(7.6, 8.6, scale=0.62)
    _box(ax, 0.2, 7.3, 7.2, 1.0, f"memory (HBM): {m.name}'s weights, {fmt.nbytes(weights)}",
         color=BLUE, size=SMALL + 1, fill=0.15)  # fmt: skip
    _arrow(ax, (6.05, 7.3), (6.05, 4.65), color=BLUE, width=2.2)
    ax.text(5.9, 6.0, "read once a step", ha="right", va="center", fontsize=SMALL, color=INK)
    h = 4.4 / batch
    for r in range(batch):
        color = SKY
        _box(ax, 0.2, 1.55 + (batch - 1 - r) * h + 0.04, 2.4, h - 0.08, "", color=color,
             fill=0.45)  # fmt: skip
        ax.text(2.75, 1.55 + (batch - 1 - r) * h + h / 2, f"request {r + 1}", ha="left",
                va="center", fontsize=SMALL, color=INK)  # fmt: skip
    ax.text(1.4, 1.35, f"{_math(_shape(B, D))}\n{batch} × {fmt.integer(m.d_model)}",
            ha="center", va="top", fontsize=SMALL, color=INK)  # fmt: skip
    _op(ax, 4.35, 3.75, "×")
    _matrix(ax, 4.7, 2.85, 2.7, 1.8, "weights", "", GREEN)
    ax.text(0.2, 0.3, f"one step, {g.name}: batch 1 {fmt.seconds(one)}, "
            f"batch {batch} {fmt.seconds(many)}", ha="left", va="center", fontsize=SMALL,
            color=INK)  # fmt: skip
    ax.text(6.05, 2.45, f"{batch} tokens a step\ninstead of 1", ha="center", va="top",
            fontsize=SMALL, color=GREY)  # fmt: skip
    return Diagram(figure)
