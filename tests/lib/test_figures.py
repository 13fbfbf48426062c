"""The renderer records the smallest text that is drawn, and a notebook's figures go through it."""

import base64
import io
import struct

import pytest
from matplotlib.figure import Figure

from inference_arithmetic.page import figures


def _figure(width=4.0):
    figure = Figure(figsize=(width, 2.5), dpi=100)
    ax = figure.add_subplot()
    ax.plot([0, 10], [0, 1])
    ax.set_xlabel("tokens", fontsize=12)
    return figure, ax


def test_the_record_is_the_smallest_drawn_text_and_the_pngs_resolution():
    figure, ax = _figure()
    ax.annotate("note", (5, 0.5), fontsize=8)
    data, size = figures.png(figure)
    record = figures.smallest_text(data)
    assert record == {"points": 8.0, "text": "note", "pixels_per_inch": 200.0}
    width, height = struct.unpack(">II", data[16:24])
    assert (width // 2, height // 2) == (size["width"], size["height"])  # twice the pixels
    # 8 pt at 200 px an inch, the PNG shown at half its pixels: 8 / 72 * 100 CSS px.
    assert figures.shown_text_px(data, width / 2) == pytest.approx(8 / 72 * 100)
    assert figures.shown_text_px(data, width / 4) == pytest.approx(8 / 72 * 50)


def test_texts_that_are_not_drawn_are_not_recorded():
    figure, ax = _figure()
    ax.text(5, 0.5, "hidden", fontsize=5, visible=False)
    ax.text(5, 0.5, "   ", fontsize=5)  # nothing to read
    legend = ax.legend(["line"], fontsize=6)
    legend.set_visible(False)  # a hidden parent hides its texts
    inset = figure.add_axes((0.6, 0.6, 0.2, 0.2))
    inset.tick_params(labelsize=4)
    inset.set_axis_off()  # its tick labels exist and are never drawn
    assert figures.smallest_text(figures.png(figure)[0])["points"] == 10  # the tick labels
    legend.set_visible(True)
    assert figures.smallest_text(figures.png(figure)[0])["text"] == "line"


def test_a_png_without_a_record_or_without_text():
    figure, ax = _figure()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    assert figures.smallest_text(buffer.getvalue()) is None
    assert figures.shown_text_px(buffer.getvalue(), 300) is None
    ax.set_axis_off()
    ax.xaxis.label.set_visible(False)
    assert figures.shown_text_px(figures.png(figure)[0], 300) == float("inf")


def test_a_notebooks_figures_go_through_the_renderer():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.pylabtools import select_figure_formats

    shell = InteractiveShell.instance()
    figures.use_in(shell)
    # What matplotlib_inline does when pyplot first loads: its configured formats, after
    # dropping every printer registered for Figure.
    select_figure_formats(shell, shell.config.InlineBackend.figure_formats)
    figure, _ = _figure()
    data, metadata = shell.display_formatter.format(figure)
    assert figures.smallest_text(data["image/png"])["points"] == 10
    assert metadata["image/png"] == figures.png(figure)[1]
    # Without the book's renderer (matplotlib_inline's retina format), no record.
    select_figure_formats(shell, {"retina"})
    retina = shell.display_formatter.format(figure)[0]["image/png"]  # base64, as it prints
    assert figures.smallest_text(base64.b64decode(retina)) is None
