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

import inference_arithmetic as ia
from inference_arithmetic.core import format as fmt
from inference_arithmetic.page import diagrams

ROOT = Path(__file__).resolve().parents[1]

DRAWINGS = {
    "two_layer_network": {},
    "transformer_block": {},
    "kv_cache_steps": {},
    "memory_hierarchy": {},
    "prefill_decode_timeline": {},
    "batching_timeline": {},
    "parallelism": {},
}

# Which chapter shows which diagram.
CHAPTERS = {
    "02-mlp.md": "two_layer_network",
    "03-transformer-params.md": "transformer_block",
    "06-kv-cache.md": "kv_cache_steps",
    "07-hardware.md": "memory_hierarchy",
    "08-prefill-decode.md": "prefill_decode_timeline",
    "09-batching.md": "batching_timeline",
    "10-parallelism.md": "parallelism",
}


def test_every_public_drawing_is_tested_and_shown():
    public = {name for name in diagrams.__all__ if name != "Diagram"}
    assert public == set(DRAWINGS) == set(CHAPTERS.values())


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
    ttft = ia.prefill_time("llama-3.1-8b", "h100-sxm", 1, 2048)
    tpot = ia.decode_step_time("llama-3.1-8b", "h100-sxm", 1, 2048)
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
    assert "static batching: 9 steps, 61% of slot-steps decode a token" in texts
    # Continuous: slot 2 runs the three short ones and then the last, steps 3 to 7.
    assert "continuous batching: 7 steps, 79% of slot-steps decode a token" in texts
    with pytest.raises(ValueError, match="1 to 26 requests"):
        diagrams.batching_timeline(lengths=())
    with pytest.raises(ValueError, match="slots"):
        diagrams.batching_timeline(slots=0)


def test_the_partitions_show_layers_and_messages():
    texts = " ".join(diagrams.parallelism("llama-3.1-70b", n_gpus=4).texts)
    assert "layers 1–20" in texts and "layers 61–80" in texts
    assert "160 a step" in texts  # 2 all-reduces in each of 80 layers
    assert "3 hand-offs a step" in texts
    assert fmt.nbytes(8192 * 2) in texts  # one token's activations, D = 8192 in bf16
    assert "16 of 64 heads" in texts
    with pytest.raises(ValueError, match="n_gpus"):
        diagrams.parallelism(n_gpus=1)


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_each_chapter_shows_its_diagram_with_caption_name_and_alt_text(chapter):
    notebook = jupytext.read(ROOT / "book" / chapter)
    call = f"ia.diagrams.{CHAPTERS[chapter]}("
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
