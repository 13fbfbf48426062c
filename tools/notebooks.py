"""Write the .ipynb of each chapter given (MyST Markdown) into a folder, in one process.

    python tools/notebooks.py OUT_DIR book/01-quantities.md ...

One process for all: importing jupytext takes seconds, converting a chapter a few tens of
milliseconds, so one command per chapter spent a minute of `make test` on imports.
"""

import sys
from pathlib import Path

import jupytext


def main(out: str, *sources: str) -> None:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for source in map(Path, sources):
        jupytext.write(jupytext.read(source), folder / f"{source.stem}.ipynb", fmt="ipynb")


if __name__ == "__main__":
    main(*sys.argv[1:])
