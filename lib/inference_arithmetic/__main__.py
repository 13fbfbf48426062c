"""``python -m inference_arithmetic``: the command line (``inference_arithmetic.cli``)."""

import sys

from inference_arithmetic.cli import main

if __name__ == "__main__":  # not on import (the docs' and tests' module walks import it)
    sys.exit(main())
