"""Write the .ipynb of each chapter given (MyST Markdown) into a folder, in one process.

    python tools/notebooks.py OUT_DIR book/01-quantities.md ...

One process for all: importing jupytext takes seconds, converting a chapter a few tens of
milliseconds, so one command per chapter spent a minute of `make test` on imports. The book's
".ipynb" download (tools/book_html.py) is written by the same `write`.
"""

import sys
from pathlib import Path

import jupytext


def write(source: Path, target: Path) -> None:
    """The class notebook of one chapter: its cells, no outputs (a class runs them)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(jupytext.read(source), target, fmt="ipynb")


def main(out: str, *sources: str) -> None:
    for source in map(Path, sources):
        write(source, Path(out) / f"{source.stem}.ipynb")


if __name__ == "__main__":
    main(*sys.argv[1:])
