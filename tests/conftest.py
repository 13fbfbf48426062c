"""Shared test settings: a headless matplotlib backend, a fast hypothesis profile, a cache of
compiled formulas of the tests' own, the longest test files first, and the ``slow`` mark."""

import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")  # before anything imports matplotlib
# Hypothesis caches under ./.hypothesis by default; keep the repository root clean (and spare
# pytest the warning about a directory its norecursedirs setting does not list).
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY",
    os.path.join(tempfile.gettempdir(), "inference-arithmetic-hypothesis"),
)

# Compiled formulas are cached on disk (inference_arithmetic.core.cache). The tests keep a
# cache of their own, so that they leave the user's alone (a test may build a formula a reader
# never would). Where it lacks an entry they read the user's (IA_CACHE_READ, never written):
# what the chapters or a reader compiled for this very library (the folder named after its code
# and data and the SymPy and NumPy versions), also while the tests run (`make test` runs the
# chapters beside them), so the tests read the compiled formulas the book and a reader read
# rather than compile them all again. test_cache.py checks that an entry read back gives the
# numbers of a fresh compile. IA_CACHE_DIR set beforehand (an empty folder, or "off") is used
# as it is, and then nothing else is read.
if "IA_CACHE_DIR" not in os.environ:
    try:
        from inference_arithmetic.core import cache

        made = cache.folder()  # the user's: where `make` compiled
    except Exception:  # a library that does not import: its tests say so, one by one
        made = None
    os.environ["IA_CACHE_DIR"] = tempfile.mkdtemp(prefix="inference-arithmetic-cache-")
    if made is not None:
        os.environ["IA_CACHE_READ"] = str(made.parent)

from hypothesis import settings  # noqa: E402

# Compiling a formula (lambdify) on first use takes longer than hypothesis' default deadline.
settings.register_profile("library", max_examples=50, deadline=None, database=None)
settings.load_profile("library")


# --- The longest test files first --------------------------------------------------------------
# pytest-xdist runs all of a file's tests on one worker (`--dist loadfile`: they share what they
# compute), in the order the files come (with --no-loadscope-reorder); a long file that starts
# last leaves the other workers idle at the end. So the files run longest first: by the seconds
# each took in the last run here (kept in pytest's cache), else, in a fresh clone, by the
# seconds each took in one (FRESH_SECONDS: pytest's own record of a fresh clone's `make test` on
# 2 cores, the book's tests beside the library's, Chromium's time in its tests' seconds and a
# file's formulas compiled there, not read back), a file timed in neither before them all, the
# largest first.
SECONDS = "inference-arithmetic/seconds-per-file"
FRESH_SECONDS = Path(__file__).with_name("file_seconds.json")
_seconds: dict[str, float] = {}


def _file(nodeid: str) -> str:
    return nodeid.split("::")[0]


# --- The slow mark ----------------------------------------------------------------------------
# `make quick` runs the library's tests but those marked ``slow`` (pytest -m "not slow"), so that
# it answers in under a minute; `make test` runs them all. A test is marked slow when it takes a
# second or more here: the SimPy oracles (thousands of simulated requests, as many as their
# tolerances need), the property searches, the page data of every model, the wheel's install.
# A test left unmarked that takes longer than SLOW_SECONDS is named at the end of the run, so
# that the quick loop stays quick as tests are added.
SLOW_SECONDS = 2.0
_unmarked_slow: dict[str, float] = {}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: takes seconds; left out of `make quick`, run by `make test`"
    )


def pytest_collection_modifyitems(config, items):
    timed = json.loads(FRESH_SECONDS.read_text())
    timed |= config.cache.get(SECONDS, {}) if getattr(config, "cache", None) else {}

    def longest_first(item):
        path = _file(item.nodeid)
        if path in timed:
            return (1, -timed[path], path)
        return (0, -os.path.getsize(os.path.join(config.rootpath, path)), path)

    items.sort(key=longest_first)  # stable: a file's tests keep their order


def pytest_runtest_logreport(report):
    _seconds[_file(report.nodeid)] = _seconds.get(_file(report.nodeid), 0.0) + report.duration
    quick = not report.nodeid.startswith("tests/book/")  # what `make quick` runs
    if (
        quick
        and report.when == "call"
        and report.duration > SLOW_SECONDS
        and "slow" not in report.keywords
    ):
        _unmarked_slow[report.nodeid] = report.duration


def pytest_terminal_summary(terminalreporter):
    if _unmarked_slow:
        terminalreporter.write_sep("-", f"tests over {SLOW_SECONDS:.0f} s not marked slow")
        for nodeid, seconds in sorted(_unmarked_slow.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")


def pytest_sessionfinish(session):
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config, "cache", None) or not _seconds:
        return  # a worker's are the controller's to keep
    config.cache.set(SECONDS, {**config.cache.get(SECONDS, {}), **_seconds})
