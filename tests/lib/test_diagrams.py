"""The diagrams draw the library's numbers, leave no figure open, refuse what they cannot draw,
and every chapter that shows one gives it a caption, a name and alt text."""

import re
import struct
import subprocess
import sys
from pathlib import Path

import jupytext
import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

import inference_arithmetic as ia
from inference_arithmetic.core import format as fmt
from inference_arithmetic.page import diagrams, figures

ROOT = Path(__file__).resolve().parents[2]

DRAWINGS = {
    "two_layer_network": {},
    "transformer_block": {},
    "kv_cache_steps": {},
    "memory_hierarchy": {},
    "prefill_decode_timeline": {},
    "batching_timeline": {},
    "parallelism": {},
    "attention_shapes": {},
    "gqa_grouping": {},
    "mla_compress": {},
    "prefill_decode_shapes": {},
    "batch_shared_read": {},
}

# Which chapter shows which diagram.
CHAPTERS = {
    "two_layer_network": "02-mlp.md",
    "transformer_block": "03-transformer-params.md",
    "kv_cache_steps": "06-kv-cache.md",
    "memory_hierarchy": "07-hardware.md",
    "prefill_decode_timeline": "08-prefill-decode.md",
    "batching_timeline": "10-streams.md",
    "parallelism": "12-parallelism.md",
    "attention_shapes": "04-flops.md",
    "gqa_grouping": "06-kv-cache.md",
    "mla_compress": "06-kv-cache.md",
    "prefill_decode_shapes": "08-prefill-decode.md",
    "batch_shared_read": "09-batching.md",
}

# Drawn for a phone: the text column of a 390 px wide page (its width in CSS pixels) and the
# least text size readable there (tests/book/test_layout.py checks the built book the same way).
PHONE_COLUMN = 342  # measured: a figure's width in the built page at a 390 px viewport
LEAST_PX = 9


def test_every_public_drawing_is_tested_and_shown():
    public = {name for name in diagrams.__all__ if name != "Diagram"}
    assert public == set(DRAWINGS) == set(CHAPTERS)


def _smallest_text_px(d, column=PHONE_COLUMN):
    """The smallest text of ``d`` in CSS pixels when the figure is shown in ``column`` pixels
    (shrunk to fit, never enlarged), as its PNG records it (``page.figures``)."""
    data, size = d._repr_png_()
    return figures.shown_text_px(data, min(column, size["width"]))


@pytest.mark.parametrize("name", sorted(DRAWINGS))
def test_every_diagrams_text_is_legible_at_phone_width(name):
    d = getattr(diagrams, name)(**DRAWINGS[name])
    assert _smallest_text_px(d) >= LEAST_PX, name


def test_the_legibility_check_can_fail():
    d = diagrams.attention_shapes()
    d.figure.findobj(lambda a: isinstance(a, Text) and a.get_text())[0].set_fontsize(6)
    assert _smallest_text_px(d) < LEAST_PX
    # The same figure drawn twice as wide shrinks its text below the threshold too.
    wide = diagrams.attention_shapes()
    wide.figure.set_size_inches(wide.figure.get_size_inches() * 2)
    assert _smallest_text_px(wide) < LEAST_PX


def test_attention_shows_each_products_shapes():
    texts = diagrams.attention_shapes("llama-3.1-8b", seq_len=1024).texts
    assert "$T \\times d_h$\n1,024 × 128" in texts  # Q and V: d_h = 128 from the registry
    assert "$d_h \\times T$\n128 × 1,024" in texts  # K transposed
    assert texts.count("$T \\times T$\n1,024 × 1,024") == 2  # the scores, before and after
    with pytest.raises(ValueError, match="seq_len"):
        diagrams.attention_shapes(seq_len=0)


def test_gqa_groups_query_heads_over_the_registrys_kv_heads():
    texts = " ".join(diagrams.gqa_grouping("llama-3.1-70b").texts)
    assert "64 query heads; 8 K/V heads, 8 query heads share each" in texts
    per_token = ia.kv_cache_bytes(ia.model("llama-3.1-70b"), batch=1, context_len=1)
    assert f"cache: {fmt.nbytes(per_token)} a token" in texts  # the library's own count
    assert f"cache: {fmt.nbytes(per_token * 8)} a token" in texts  # MHA: 8 times the heads
    with pytest.raises(ValueError, match="not grouped-query"):
        diagrams.gqa_grouping("llama-2-7b")  # multi-head


def test_mla_caches_the_latent_not_the_heads():
    texts = " ".join(diagrams.mla_compress("deepseek-v3").texts)
    assert "cached: 576 numbers a token a layer" in texts  # r_kv 512 + d_rope 64
    assert fmt.nbytes(ia.kv_cache_bytes(ia.model("deepseek-v3"), batch=1, context_len=1)) in texts
    assert "40,960 numbers" in texts  # 128 heads x (128 + 64 + 128)
    with pytest.raises(ValueError, match="no latent attention"):
        diagrams.mla_compress("llama-3.1-8b")


def test_prefill_and_decode_meet_the_same_weights():
    texts = diagrams.prefill_decode_shapes("llama-3.1-8b", prompt_len=512).texts
    assert texts.count("$D \\times F$\n4,096 × 14,336") == 2  # one matrix, both phases
    assert "$T \\times D$\n512 × 4,096" in texts and "$1 \\times D$\n1 × 4,096" in texts
    joined = " ".join(texts)
    # 2 B D F FLOPs over b (B D + D F + B F) bytes: about 1 per byte for one row in bf16.
    assert ": 1 FLOP per byte (bf16)" in joined
    rows = 512 * 4096 * 14336 * 2 / (2 * (512 * 4096 + 4096 * 14336 + 512 * 14336))
    assert f": {rows:,.0f} FLOPs per byte (bf16)" in joined


def test_a_batch_shares_one_read_of_the_weights():
    texts = " ".join(diagrams.batch_shared_read(batch=4, **ia.timing.IDEAL).texts)
    one = ia.decode_step_time(
        "llama-3.1-8b", "h100-sxm", batch=1, context_len=2048, **ia.timing.IDEAL
    )
    four = ia.decode_step_time(
        "llama-3.1-8b", "h100-sxm", batch=4, context_len=2048, **ia.timing.IDEAL
    )
    assert f"batch 1 {fmt.seconds(one)}, batch 4 {fmt.seconds(four)}" in texts
    assert "request 4" in texts and "request 5" not in texts
    assert fmt.nbytes(ia.param_count(ia.model("llama-3.1-8b")) * 2) in texts
    with pytest.raises(ValueError, match="batch"):
        diagrams.batch_shared_read(batch=1)


@pytest.mark.parametrize("name", sorted(DRAWINGS))
def test_a_diagram_is_a_sharp_png_and_leaves_no_figure_open(name):
    before = plt.get_fignums()
    d = getattr(diagrams, name)(**DRAWINGS[name])
    assert isinstance(d, diagrams.Diagram) and d.texts
    data, size = d._repr_png_()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    # Twice the pixels of the size it is shown at: sharp on a high-density screen.
    assert (width // 2, height // 2) == (size["width"], size["height"])
    assert 300 < size["width"] < 1000
    assert plt.get_fignums() == before  # drawn without pyplot: nothing to close


def test_importing_the_library_does_not_import_matplotlib():
    code = "import sys, inference_arithmetic; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", ["h100-sxm", "a100-80gb"])
def test_the_memory_hierarchy_shows_the_registry_figures(name):
    g = ia.gpu(name)
    texts = " ".join(diagrams.memory_hierarchy(name, "llama-3.1-8b").texts)
    assert fmt.bandwidth(g.memory_bandwidth) in texts
    assert f"L2 cache\n{fmt.nbytes(g.l2_cache_bytes, binary=True)}" in texts
    assert f"{g.sm_count} SMs" in texts
    assert fmt.flop_rate(g.flop_rate("bf16")) in texts
    weights = ia.param_count(ia.model("llama-3.1-8b")) * 2
    assert f"weights {fmt.nbytes(weights)}" in texts


def test_h100_on_chip_figures_are_the_whitepapers():
    g = ia.gpu("h100-sxm")
    # 50 MB of L2 and 228 KB of shared memory per SM, in the binary units CUDA reports.
    assert (g.l2_cache_bytes, g.sm_count, g.shared_memory_per_sm) == (50 << 20, 132, 228 << 10)


def test_a_gpu_without_on_chip_figures_is_refused_by_name():
    with pytest.raises(ValueError, match=r"no l2_cache_bytes.*for l4.*h100-sxm"):
        diagrams.memory_hierarchy("l4")
    with pytest.raises(KeyError, match="unknown gpu"):
        diagrams.memory_hierarchy("h100")


def test_the_network_counts_its_lines():
    assert "12 weights in all" in diagrams.two_layer_network().texts
    texts = diagrams.two_layer_network(3, 4, 5).texts
    assert "32 weights in all" in texts  # 3 * 4 + 4 * 5
    assert any(t.endswith("\n20 weights") for t in texts)
    for bad in (0, 9, 2.5):
        with pytest.raises(ValueError, match="d_2"):
            diagrams.two_layer_network(2, bad, 2)


def test_the_block_shows_the_models_matrices():
    texts = diagrams.transformer_block("llama-3.1-70b").texts
    assert "8,192 × 1,024 weights each" in texts  # K and V: 8 heads of 128
    assert "8,192 × 28,672 weights each" in texts  # gate and up
    assert "28,672 × 8,192 weights" in texts
    classic = " ".join(diagrams.transformer_block("gpt2").texts)
    assert "twice" not in classic and "W_{gate}" not in classic
    assert "768 × 3,072 weights" in classic
    with pytest.raises(ValueError, match="mixture-of-experts"):
        diagrams.transformer_block("deepseek-v3")


def test_the_cache_grows_a_token_a_step():
    texts = " ".join(diagrams.kv_cache_steps("llama-3.1-8b", steps=4).texts)
    per_token = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads of 128, bf16
    for t in (2, 3, 4):
        assert f"cache: {t} tokens, {fmt.nbytes(t * per_token)}" in texts
    assert "cache: 1 token," in texts
    with pytest.raises(ValueError, match="steps"):
        diagrams.kv_cache_steps(steps=0)


def test_the_timeline_uses_the_librarys_times():
    texts = " ".join(diagrams.prefill_decode_timeline(prompt_len=2048).texts)
    ttft = ia.prefill_time("llama-3.1-8b", "h100-sxm", batch=1, prompt_len=2048)
    tpot = ia.decode_step_time("llama-3.1-8b", "h100-sxm", batch=1, context_len=2048)
    assert f"time to first token {fmt.seconds(ttft)}" in texts
    assert f"time per output token {fmt.seconds(tpot)}" in texts
    assert "prefill: 2,048 tokens at once\ncompute-bound" in texts
    short = " ".join(diagrams.prefill_decode_timeline(prompt_len=8).texts)
    assert "prefill: 8 tokens at once\nmemory-bound" in short  # too few tokens to reach the ridge
    with pytest.raises(ValueError, match="output_len"):
        diagrams.prefill_decode_timeline(output_len=1)


def test_static_batches_wait_for_their_slowest_request():
    texts = diagrams.batching_timeline(lengths=(4, 1, 1, 1, 4), slots=2).texts
    # Static: batches (4, 1), (1, 1), (4) take 4 + 1 + 4 steps; 11 busy of 2 * 9 slot-steps.
    assert "static batching: 9 steps,\n61% of slot-steps decode a token" in texts
    # Continuous: slot 2 runs the three short ones and then the last, steps 3 to 7.
    assert "continuous batching: 7 steps,\n79% of slot-steps decode a token" in texts
    with pytest.raises(ValueError, match="1 to 26 requests"):
        diagrams.batching_timeline(lengths=())
    with pytest.raises(ValueError, match="slots"):
        diagrams.batching_timeline(slots=0)


def test_the_partitions_show_layers_and_messages():
    texts = " ".join(diagrams.parallelism("llama-3.1-70b", n_gpus=4).texts)
    assert "layers\n1–20" in texts and "layers\n61–80" in texts
    assert "160 a step" in texts  # 2 all-reduces in each of 80 layers
    assert "3 hand-offs a step" in texts
    assert fmt.nbytes(8192 * 2) in texts  # one token's activations, D = 8192 in bf16
    assert "16 of 64\nheads" in texts
    with pytest.raises(ValueError, match="n_gpus"):
        diagrams.parallelism(n_gpus=1)


@pytest.mark.parametrize("drawing", sorted(CHAPTERS))
def test_each_chapter_shows_its_diagram_with_caption_name_and_alt_text(drawing):
    chapter = CHAPTERS[drawing]
    notebook = jupytext.read(ROOT / "book" / chapter)
    call = f"ia.diagrams.{drawing}("
    cells = [c for c in notebook.cells if c.cell_type == "code" and call in c.source]
    assert cells, f"{chapter} does not draw {call}...)"
    for cell in cells:
        mystnb = cell.metadata.get("mystnb", {})
        alt = mystnb.get("image", {}).get("alt", "")
        figure = mystnb.get("figure", {})
        assert len(alt) > 60, f"{chapter}: the diagram needs alt text (mystnb: image: alt:)"
        assert len(figure.get("caption", "")) > 40 and re.fullmatch(
            r"fig-[a-z0-9-]+", figure.get("name", "")
        ), f"{chapter}: the diagram needs a caption and a fig- name"
        assert "remove-input" in cell.metadata.get("tags", []), f"{chapter}: hide its code"
        name = figure["name"]
        text = (ROOT / "book" / chapter).read_text()
        assert f"{{numref}}`{name}`" in text, f"{chapter}: the prose never points to {name}"
