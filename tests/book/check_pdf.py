"""`make pdf` runs this after building: the PDF holds every chapter. Not part of `make test`
(texlive is large and the build slow); run by name, so pytest's test_*.py pattern skips it."""

import re
import subprocess
from pathlib import Path

import pytest

from tests.book.test_chapters import CHAPTERS

ROOT = Path(__file__).resolve().parents[2]


def _pdf() -> Path:
    found = sorted((ROOT / "_build" / "latex").glob("*.pdf"))
    if not found:
        pytest.fail("no PDF in _build/latex: run make pdf")
    return found[0]


def _title(doc: str) -> str:
    text = (ROOT / f"{doc}.md").read_text()
    return re.search(r"^# (.+)$", text, flags=re.M).group(1).strip()


def test_the_pdf_has_pages_for_the_whole_book():
    info = subprocess.run(["pdfinfo", str(_pdf())], capture_output=True, text=True, check=True)
    pages = int(re.search(r"^Pages:\s+(\d+)", info.stdout, flags=re.M).group(1))
    assert pages >= 10 * len(CHAPTERS), f"only {pages} pages for {len(CHAPTERS)} chapters"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_chapter_title_is_in_the_pdf(doc):
    text = subprocess.run(["pdftotext", str(_pdf()), "-"], capture_output=True, text=True).stdout
    words = " ".join(text.replace("\u2019", "'").split())  # LaTeX curls apostrophes
    title = " ".join(_title(doc).split())
    assert title in words, f"{title!r} not found in the PDF"
