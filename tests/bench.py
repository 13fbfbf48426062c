"""`make bench`: how fast the library imports, evaluates and redraws, the command line answers,
and the book builds.

Prints medians, with the goal beside each. A benchmark, not a test: timings depend on the
machine, so nothing here fails a build.
"""

import argparse
import contextlib
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# The first ia.calculate in a fresh process: the model, the GPU, and the number of GPUs to
# start from (more are tried while the model does not fit).
FIRST_CALCULATE = (
    ("llama-3.1-8b", "h100-sxm", 1),
    ("llama-3.1-70b", "h100-sxm", 4),
    ("mixtral-8x7b", "h100-sxm", 2),
    ("deepseek-v3", "h200", 16),
)


# A warm ia.calculate (its formulas compiled, in a process that has made one already), the
# steady state of a rate (first in a fresh process, then another rate on the same deployment)
# and a plan (first in a fresh process): each against its goal.
WARM_CALCULATE = ("llama-3.1-70b", "h100-sxm", {"n_gpus": 4, "batch": 32})
STEADY_STATE = ("llama-3.1-8b", "h100-sxm", 2.0)
PLAN = ("llama-3.1-70b", "h100-sxm", 10, 2048, 256, 0.5, 0.05)
PLAN_KEYWORDS = ("requests_per_s", "prompt_len", "output_len", "ttft_target", "tpot_target")
REGISTRY_GPU = "h200"  # every registry model's first calculation, on as many as it needs
COMMAND_LINE = (("--help",), ("gpus",), ("models",), ("calculate", "llama-3.1-8b", "h100-sxm"))
"""The command lines whose first answer, a fresh ``ia`` process from start to exit, is timed."""


LOADED = "import inference_arithmetic as ia\nia.calculate"
"""The library with its API loaded: the package loads each name on first use, so its bare
import costs nothing, and the first use of ``ia.calculate`` imports its modules and NumPy;
SymPy comes in only where a formula is built (a cold disk cache). The import goal and every
"first call" start from here."""
WITH_SYMPY = f"{LOADED}\nimport sympy"
"""``LOADED`` and SymPy, as a process that builds formulas (a chapter) has them: the import
goal's measure before the API loaded without SymPy, beside its base; the steady state and the
plan start from here, since their modules import SymPy (the import line counts it)."""


def median_seconds(function, repeat=7, number=1):
    return statistics.median(timeit.repeat(function, repeat=repeat, number=number)) / number


def fresh_seconds(statement, setup="", repeat=5, env=None):
    """Median seconds of ``statement``, run once in each of ``repeat`` fresh processes after
    ``setup`` (not timed), with ``env`` added to the environment."""
    code = f"import time\n{setup}\nt = time.perf_counter()\n{statement}\n"
    code += "print(time.perf_counter() - t)"
    runs = []
    for _ in range(repeat):
        environment = {**os.environ, **(env or {})}
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=environment
        )
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"{statement!r} failed in a fresh process: {last}")
        runs.append(float(done.stdout.split()[-1]))
    return statistics.median(runs)


def import_times(repeat=7):
    """Median import times of the library (its API loaded, ``LOADED``; with SymPy too,
    ``WITH_SYMPY``; and the bare package) and of what it builds on, sympy and numpy, in fresh
    processes taking turns (so that all see the same load on the machine)."""
    library, sympy_too, bare, base = [], [], [], []
    for _ in range(repeat):
        library.append(fresh_seconds(LOADED, repeat=1))
        sympy_too.append(fresh_seconds(WITH_SYMPY, repeat=1))
        bare.append(fresh_seconds("import inference_arithmetic", repeat=1))
        base.append(fresh_seconds("import sympy, numpy", repeat=1))
    return tuple(statistics.median(times) for times in (library, sympy_too, bare, base))


def first_calculate(model, gpu, n_gpus, repeat=5, most=256):
    """The GPUs the model fits on (from ``n_gpus``, doubling) and the median times of the
    first ``ia.calculate`` in a fresh process, after ``LOADED``: with an
    empty disk cache (compiling) and with the cache one such call leaves (inference_arithmetic
    .cache)."""
    import inference_arithmetic as ia

    for name, names in ((model, ia.model_names()), (gpu, ia.gpu_names())):
        if name not in names:
            raise LookupError(f"{name} is not in the registry")
    while True:  # n_gpus is found in this process; each timed call is in a fresh one
        try:
            ia.calculate(model, gpu, n_gpus=n_gpus)
            break
        except ValueError:  # does not fit: more GPUs
            if n_gpus * 2 > most:
                raise
            n_gpus *= 2
    call = f"ia.calculate({model!r}, {gpu!r}, n_gpus={n_gpus})"
    setup = LOADED
    cold = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as empty:
            cold.append(fresh_seconds(call, setup, 1, {"IA_CACHE_DIR": empty}))
    with tempfile.TemporaryDirectory() as kept:
        fresh_seconds(call, setup, 1, {"IA_CACHE_DIR": kept})  # fills the cache
        warm = fresh_seconds(call, setup, repeat, {"IA_CACHE_DIR": kept})
    return n_gpus, statistics.median(cold), warm


def command_line_seconds(argv, repeat=5):
    """Median seconds of a fresh ``ia`` process answering ``argv``, from its start to its exit
    (the disk cache as ``make`` leaves it): the console script beside this Python, else
    ``python -m inference_arithmetic``."""
    script = Path(sys.executable).with_name("ia")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "inference_arithmetic"]
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([*command, *argv], check=True, capture_output=True)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def warm_calculate():
    """Median seconds of ``WARM_CALCULATE`` in this process, after one such call."""
    import inference_arithmetic as ia

    model, gpu, options = WARM_CALCULATE
    call = functools.partial(ia.calculate, model, gpu, **options)
    call()
    return median_seconds(call, number=200)


def registry_first_calculates(gpu=REGISTRY_GPU, repeat=3, most=256):
    """The first ``ia.calculate`` of every registry model in a fresh process, on the fewest
    ``gpu`` (a power of two) that hold it, with requests inside its context window, and the
    disk cache warm (``ia.serving.warm()``, run here first: it compiles only what is missing).
    Returns (label, median seconds) pairs, slowest first."""
    import inference_arithmetic as ia

    ia.serving.warm()
    times = []
    for name in ia.model_names():
        window = ia.model(name).context_window
        prompt_len = 2048 if window is None else min(2048, window - 256)
        n_gpus = 1
        while True:  # found in this process; each timed call is in a fresh one
            try:
                ia.calculate(name, gpu, n_gpus=n_gpus, prompt_len=prompt_len)
                break
            except ValueError:  # does not fit (or cannot be split): more GPUs
                if n_gpus * 2 > most:
                    raise
                n_gpus *= 2
        call = f"ia.calculate({name!r}, {gpu!r}, n_gpus={n_gpus}, prompt_len={prompt_len})"
        seconds = fresh_seconds(call, LOADED, repeat)
        times.append((f"{name}, {n_gpus} x {gpu}", seconds))
    return sorted(times, key=lambda pair: -pair[1])


def steady_state_times(repeat=5):
    """Median seconds of ``STEADY_STATE`` first in a fresh process (the disk cache as ``make``
    leaves it), and of another rate on the same deployment after it. From ``WITH_SYMPY``: the
    stream's modules import SymPy, which the import line counts."""
    model, gpu, rate = STEADY_STATE
    setup = WITH_SYMPY
    first = f"ia.steady_state({model!r}, {gpu!r}, requests_per_s={rate!r})"
    other = f"ia.steady_state({model!r}, {gpu!r}, requests_per_s={rate * 1.5!r})"
    return fresh_seconds(first, setup, repeat), fresh_seconds(other, f"{setup}\n{first}", repeat)


def plan_seconds(repeat=3):
    """Median seconds of ``PLAN``, first in a fresh process (the disk cache as ``make`` leaves
    it): every tensor-parallel degree's saturation and each replica count's steady state. From
    ``WITH_SYMPY``, as ``steady_state_times``."""
    workload = dict(zip(PLAN_KEYWORDS, PLAN[2:], strict=True))  # keyword-only, as ia.plan's
    return fresh_seconds(f"ia.plan(*{PLAN[:2]!r}, **{workload!r})", WITH_SYMPY, repeat)


SWEEP = dict(n_gpus=[1, 2, 4, 8], batch=list(range(1, 51)), output_len=[64, 256, 1024, 2048, 8192],
             prompt_len=[2**k for k in range(7, 17)])  # fmt: skip
"""A sweep of 4 x 50 x 5 x 10 = 10^4 scenarios of one model on one GPU, some not fitting."""


def sweep_seconds(repeat=5):
    """Median seconds of ``ia.sweep`` over ``SWEEP`` (warm: after one sweep in the process)."""
    import inference_arithmetic as ia

    def run():
        return ia.sweep("llama-3.1-70b", "h100-sxm", **SWEEP)

    run()
    return median_seconds(run, repeat), len(run())


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


def step_model_times():
    """Warm seconds of one evaluation of a step, kernel by kernel (``formulas.kernels``), for
    every registry model on a GPU that holds it: the compiled step at a scenario's values, one
    step of decodes and prompt tokens. Returns (model, seconds) pairs, slowest first."""
    import inference_arithmetic as ia
    from inference_arithmetic.serving.engine import compiled_step

    times = []
    for name in ia.model_names():
        for n_gpus in (1, 2, 4, 8, 16, 32, 64):
            try:
                workload = dict(prompt_len=512, output_len=64, in_waves=True)
                s = ia.Scenario(name, "h200", n_gpus=n_gpus, **workload)
                break
            except ValueError:
                continue
        else:
            continue  # larger than 64 H200s: not a step anyone runs
        step = compiled_step(s.model, s.step)  # compiled once, as the library keeps it
        point = {**s.values(), "decoding": 64, "context_len": 512, "prefill_tokens": 512}
        step.from_values(point)
        run = functools.partial(step.from_values, point)
        times.append((name, median_seconds(run, number=200)))
    return sorted(times, key=lambda pair: -pair[1])


SIMULATION = ("llama-3.1-8b", "h100-sxm", 0.9, 40_000)
"""A stream near saturation: the model, the GPU, the load (of the saturation rate) and the
requests after the warm-up, at the default engine's step and 1,024 + 128 tokens."""


def simulation_seconds(repeat=3):
    """Median seconds of ``SIMULATION`` run by the engine's own loop, and under SimPy (the same
    engine, the same arrivals: its requests' times the same to the bit), warm."""
    import inference_arithmetic as ia
    from inference_arithmetic.serving import continuous, simulation
    from inference_arithmetic.serving.engine import stream_scenario

    model, gpu, load, requests = SIMULATION
    s = stream_scenario(model, gpu, 1024, 128, 1, ia.AUTO, {})
    rate = load * continuous.saturation_rate(s.replace(batch=1, in_waves=True))
    arrivals = np.cumsum(np.random.default_rng(0).exponential(1 / rate, requests * 6 // 5))
    bounds, under_simpy = simulation.limits(s), {"owners": np.zeros(len(arrivals), dtype=int)}

    def run(**engines):
        return simulation.run_limits(*bounds, arrivals, simulation.run_step(s), **engines)

    run()
    return median_seconds(run, repeat), median_seconds(lambda: run(**under_simpy), repeat)


def build_times():
    with tempfile.TemporaryDirectory() as out:
        command = [str(ROOT / ".venv/bin/jupyter-book"), "build", str(ROOT), "--path-output", out]
        results = []
        for _ in ("clean", "cached"):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            results.append(time.perf_counter() - start)
        return results


@contextlib.contextmanager
def measuring(what):
    """Print why a measurement failed, and go on to the next: a benchmark fails no build."""
    try:
        yield
    except Exception as error:  # noqa: BLE001  (whatever broke, the other timings still count)
        print(f"{what}: not measured ({type(error).__name__}: {error})")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-build", action="store_true", help="skip the book build timings")
    args = parser.parse_args()

    with measuring("import times"):
        library, sympy_too, bare, base = import_times()
        print(f"import inference_arithmetic      {bare * 1e3:8.0f} ms   names load on first use")
        print(f"  and its API (ia.calculate)     {library * 1e3:8.0f} ms   (goal: under 1 s)")
        print(f"  and SymPy too (building)       {sympy_too * 1e3:8.0f} ms")
        print(f"import sympy, numpy              {base * 1e3:8.0f} ms   what the library builds on")
        print(f"  ratio, the API                 {library / base:8.2f} x    (goal: at most 1.2x)")
        print(f"  ratio, the API and SymPy       {sympy_too / base:8.2f} x    (goal: at most 1.2x)")

    print("first ia.calculate in a fresh process (after import and ia.calculate's first use):")
    for model, gpu, n_gpus in FIRST_CALCULATE:
        with measuring(f"  {model} on {gpu}"):
            n_gpus, cold, warm = first_calculate(model, gpu, n_gpus)
            label = f"{model}, {n_gpus} x {gpu}"
            print(f"  {label:31s}{warm * 1e3:8.0f} ms   (goal: at most 100 ms), cached on disk")
            empty = "with an empty cache (importing SymPy, compiling; no goal)"
            print(f"  {'':31s}{cold * 1e3:8.0f} ms   {empty}")
    with measuring("every registry model's first ia.calculate"):
        times = registry_first_calculates()
        (slowest, worst), median = times[0], statistics.median(t for _, t in times)
        print(f"  every registry model, slowest  {worst * 1e3:8.0f} ms   {slowest}; median "
              f"{median * 1e3:.0f} ms of {len(times)}, cached on disk "
              "(goal: at most 100 ms)")  # fmt: skip

    print("the command line's first answer (a fresh ia process, start to exit):")
    for argv in COMMAND_LINE:
        with measuring(f"  ia {' '.join(argv)}"):
            seconds = command_line_seconds(argv)
            print(f"  ia {' '.join(argv):28s}{seconds * 1e3:8.0f} ms   (goal: under 0.5 s)")

    with measuring("warm ia.calculate"):
        model, gpu, options = WARM_CALCULATE
        seconds = warm_calculate()
        print(f"warm ia.calculate                {seconds * 1e3:8.3f} ms   {model}, "
              f"{options['n_gpus']} x {gpu}, batch {options['batch']}, median "
              "(goal: at most 0.2 ms)")  # fmt: skip

    with measuring("steady state"):
        first, other = steady_state_times()
        model, gpu, rate = STEADY_STATE
        print(f"first ia.steady_state            {first * 1e3:8.0f} ms   {model}, "
              f"{rate:g} requests/s on {gpu}, fresh process (goal: at most 50 ms)")  # fmt: skip
        print(f"  {'':31s}{other * 1e3:8.0f} ms   another rate on the same deployment (no goal)")

    with measuring("plan"):
        seconds = plan_seconds()
        model, gpu, rate = PLAN[:3]
        print(f"first ia.plan                    {seconds:8.2f} s    {model}, "
              f"{rate:g} requests/s on {gpu}, fresh process (goal: at most 0.5 s)")  # fmt: skip

    with measuring("sweep"):
        seconds, rows = sweep_seconds()
        print(f"ia.sweep of {rows:,} scenarios        {seconds * 1e3:8.0f} ms   llama-3.1-70b on "
              "h100-sxm, every check row by row (goal: well under 1 s)")  # fmt: skip

    with measuring("compiled formula vs numpy"):
        library, hand = numeric_vs_numpy()
        print(f"training_memory on 10^6 points   {library * 1e3:8.1f} ms   compiled, with checks")
        print(f"the same expression by hand      {hand * 1e3:8.1f} ms   numpy")
        print(f"  ratio                          {library / hand:8.2f} x    (goal: at most 1.2x)")

    with measuring("step model"):
        times = step_model_times()
        seconds = [t for _, t in times]
        (slowest, worst), median = times[0], statistics.median(seconds)
        print(f"a step, kernel by kernel         {median * 1e3:8.3f} ms   median over "
              f"{len(times)} registry models, warm; slowest {slowest} {worst * 1e3:.3f} ms "
              "(goal: under 1 ms)")  # fmt: skip

    with measuring("simulation"):
        own, simpy = simulation_seconds()
        model, gpu, load, requests = SIMULATION
        print(f"a stream simulated               {own:8.2f} s    {requests:,} requests at "
              f"{load:g} of {model}'s saturation on {gpu}, warm; under SimPy {simpy:.2f} s "
              "(no goal)")  # fmt: skip

    with measuring("widget update"):
        median, worst = widget_update()
        print(f"widget update (slider moved)     {median * 1e3:8.1f} ms   median; worst "
              f"{worst * 1e3:.1f} ms (goal: median under 100 ms)")  # fmt: skip

    if not args.no_build:
        with measuring("book build"):
            clean, cached = build_times()
            print(f"book build, clean                {clean:8.1f} s    (no goal)")
            print(f"book build, cached               {cached:8.1f} s    (no goal)")


if __name__ == "__main__":
    main()
