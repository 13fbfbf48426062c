"""`make bench`: how fast the library imports, evaluates and redraws, and the book builds.

Prints medians, with the goal beside each. A benchmark, not a test: timings depend on the
machine, so nothing here fails a build.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def median_seconds(function, repeat=7, number=1):
    return statistics.median(timeit.repeat(function, repeat=repeat, number=number)) / number


def import_time(repeat=5):
    code = "import time; t = time.perf_counter(); import inference_arithmetic; "
    code += "print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )  # fmt: skip
        for _ in range(repeat)
    ]
    return statistics.median(runs)


def numeric_vs_numpy(points=10**6):
    import inference_arithmetic as ia
    from inference_arithmetic.formulas import mlp

    rng = np.random.default_rng(0)
    values = {
        "batch": rng.integers(1, 1024, points).astype(float),
        "d_1": rng.integers(1, 8192, points).astype(float),
        "d_2": rng.integers(1, 32768, points).astype(float),
        "d_3": rng.integers(1, 8192, points).astype(float),
        "bytes_per_number": rng.choice([0.5, 1.0, 2.0, 4.0], points),
    }
    compiled = ia.numeric(mlp.training_memory())

    def by_hand(batch, d_1, d_2, d_3, bytes_per_number):
        return bytes_per_number * (4 * (d_1 * d_2 + d_2 * d_3) + batch * (d_1 + d_2 + d_3))

    assert np.allclose(compiled(**values), by_hand(**values), rtol=1e-12)
    library = median_seconds(lambda: compiled(**values))
    hand = median_seconds(lambda: by_hand(**values))
    return library, hand


def widget_update(samples=30):
    import inference_arithmetic as ia
    from inference_arithmetic.formulas import mlp

    widget = ia.widgets.formula_widget(
        {"inference": mlp.inference_memory(), "training": mlp.training_memory()},
        x="batch",
        controls={
            "batch": ia.widgets.Range(1, 1024, 32),
            "d_1": ia.widgets.Range(64, 8192, 1024, step=64),
            "d_2": ia.widgets.Range(64, 32768, 4096, step=64),
            "d_3": ia.widgets.Range(64, 8192, 1024, step=64),
            "bytes_per_number": ia.widgets.Choice(ia.DTYPE_BYTES, 4),
        },
        value_format=ia.format.nbytes,
    )
    widget.widget()  # build the controls and the image, as a notebook displaying it does
    controls = widget._widgets
    rng = np.random.default_rng(0)
    times = []
    for _ in range(samples):
        # Moving a slider runs the same observer a reader's drag does.
        value = int(rng.integers(64, 8192) // 64 * 64)
        start = time.perf_counter()
        controls["d_1"].value = value
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def build_times():
    with tempfile.TemporaryDirectory() as out:
        command = [str(ROOT / ".venv/bin/jupyter-book"), "build", str(ROOT), "--path-output", out]
        results = []
        for _ in ("clean", "cached"):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            results.append(time.perf_counter() - start)
        return results


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-build", action="store_true", help="skip the book build timings")
    args = parser.parse_args()

    seconds = import_time()
    print(f"import inference_arithmetic      {seconds * 1e3:8.0f} ms   (goal: under 1 s)")

    library, hand = numeric_vs_numpy()
    print(f"training_memory on 10^6 points   {library * 1e3:8.1f} ms   compiled by the library")
    print(f"the same expression by hand      {hand * 1e3:8.1f} ms   numpy")
    print(f"  ratio                          {library / hand:8.2f} x    (goal: within 1.5x)")

    median, worst = widget_update()
    print(f"widget update (slider moved)     {median * 1e3:8.1f} ms   median; worst "
          f"{worst * 1e3:.1f} ms (goal: median under 100 ms)")  # fmt: skip

    if not args.no_build:
        clean, cached = build_times()
        print(f"book build, clean                {clean:8.1f} s")
        print(f"book build, cached               {cached:8.1f} s")


if __name__ == "__main__":
    main()
