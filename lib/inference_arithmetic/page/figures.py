"""One renderer for the book's figures: a PNG with twice the pixels it is shown at, which
records the size of its smallest text, so that a test can check the text where it is shown.

>>> from matplotlib.figure import Figure
>>> figure = Figure(figsize=(4, 2.5), dpi=100)
>>> _ = figure.add_subplot().set_title("memory", fontsize=12)  # ticks at 10 pt, the default
>>> data, size = png(figure)
>>> smallest_text(data)["points"], smallest_text(data)["pixels_per_inch"]
(10.0, 200.0)
>>> 10 / 72 * 200 * 300 / (2 * size["width"]) == shown_text_px(data, 300)  # in 300 CSS px
True

Chapters' matplotlib figures come here through IPython (``use_in``: ``import
inference_arithmetic`` calls it in a notebook), diagrams and widgets call ``png`` themselves.
The record is a PNG text chunk (``RECORD``): the smallest font size, in points, of the texts
drawn (ticks, labels, legends, annotations, mathtext at its font size), the text itself, and
the PNG's pixels per inch. A figure ``w`` CSS px wide whose PNG is ``n`` px wide shows a font
of ``s`` points at ``s / 72 * pixels_per_inch * w / n`` CSS px (``shown_text_px``).
"""

from __future__ import annotations

import io
import json
import struct
import zlib

__all__ = ["SCALE", "RECORD", "png", "smallest_text", "shown_text_px", "use_in"]

SCALE = 2  # PNG pixels per CSS pixel: sharp on high-density screens
RECORD = "smallest text"  # the PNG text chunk's keyword
_SIGNATURE_AND_HEADER = 8 + 25  # the PNG signature, then the IHDR chunk, which comes first


def png(figure, scale: int = SCALE) -> tuple[bytes, dict[str, int]]:
    """The figure as a PNG of ``scale`` times its pixels (tight around what is drawn), with
    its record, and the size to show it at: ``{"width": w, "height": h}`` in CSS px."""
    from matplotlib.text import Text

    drawn = []
    draw = Text.draw

    # Recorded as drawn, not found afterwards: a tick label outside the axis limits, or of an
    # axis switched off, is a Text that is never drawn (nor is any text of a hidden parent).
    def recording(text, renderer):
        if text.get_visible() and text.get_text().strip():
            drawn.append((float(text.get_fontsize()), text.get_text()))
        return draw(text, renderer)

    buffer = io.BytesIO()
    Text.draw = recording
    try:
        figure.savefig(
            buffer,
            format="png",
            dpi=figure.dpi * scale,
            facecolor=figure.get_facecolor(),
            bbox_inches="tight",
        )
    finally:
        Text.draw = draw
    data = buffer.getvalue()
    points, text = min(drawn, default=(None, ""))
    record = {"points": points, "text": text, "pixels_per_inch": float(figure.dpi * scale)}
    body = RECORD.encode("latin-1") + b"\0" + json.dumps(record).encode("ascii")
    chunk = (
        struct.pack(">I", len(body))
        + b"tEXt"
        + body
        + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    )
    width, height = struct.unpack(">II", data[16:24])  # the IHDR's size
    data = data[:_SIGNATURE_AND_HEADER] + chunk + data[_SIGNATURE_AND_HEADER:]
    return data, {"width": width // scale, "height": height // scale}


def smallest_text(data: bytes) -> dict | None:
    """The record ``png`` wrote into a PNG: ``points`` (None for a figure without text),
    ``text`` and ``pixels_per_inch``; None for a PNG without one."""
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + length]
        if kind == b"tEXt" and body.startswith(RECORD.encode("latin-1") + b"\0"):
            return json.loads(body.split(b"\0", 1)[1])
        if kind == b"IDAT":  # text chunks that matter come before the image data
            return None
        at += 12 + length
    return None


def shown_text_px(data: bytes, shown_width: float) -> float | None:
    """The smallest text of a PNG made by ``png``, in CSS px, when the page shows the PNG
    ``shown_width`` CSS px wide; infinite for a figure without text, None without a record."""
    record = smallest_text(data)
    if record is None:
        return None
    if record["points"] is None:
        return float("inf")
    natural = struct.unpack(">I", data[16:20])[0]
    return record["points"] / 72 * record["pixels_per_inch"] * shown_width / natural


def _ipython_png(figure):
    return png(figure)


def use_in(shell) -> None:
    """Show the shell's matplotlib figures through ``png`` (IPython's PNG printer for them).

    matplotlib_inline, when pyplot first loads, drops every printer registered for ``Figure``
    and registers those of its configured formats: configured with none, it registers none, and
    IPython's lookup of a figure's printer goes on to its base class, ``FigureBase``, where this
    one is. By name, so that matplotlib is not imported until a figure is shown.
    """
    import sys

    shell.config.InlineBackend.figure_formats = set()
    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type_by_name("matplotlib.figure", "FigureBase", _ipython_png)
    inline = sys.modules.get("matplotlib_inline.backend_inline")
    if inline is not None and "matplotlib.pyplot" in sys.modules:  # its formats already set
        inline.set_matplotlib_formats()
