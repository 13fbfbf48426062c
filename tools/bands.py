"""Write the bands every prediction carries (inference_arithmetic/serving/data/bands.json)
from the validation set's residuals at the library's defaults: ``make bands``. Run it whenever
the predictions change; tests/lib/test_residuals.py fails until it is."""

import json
import sys
from importlib import resources

from inference_arithmetic.validation import residuals


def main() -> None:
    out = {"quantiles": list(residuals.QUANTILES), **residuals.bands()}
    path = resources.files("inference_arithmetic.serving") / "data" / "bands.json"
    text = json.dumps(out, indent=2) + "\n"
    with open(str(path), "w") as file:
        file.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
