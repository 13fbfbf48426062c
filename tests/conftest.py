"""Shared test settings: a headless matplotlib backend and a fast hypothesis profile."""

import os
import shutil
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")  # before anything imports matplotlib
# Hypothesis caches under ./.hypothesis by default; keep the repository root clean (and spare
# pytest the warning about a directory its norecursedirs setting does not list).
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY",
    os.path.join(tempfile.gettempdir(), "inference-arithmetic-hypothesis"),
)

# Compiled formulas are cached on disk (inference_arithmetic.core.cache). The tests keep a
# cache of their own, so that they leave the user's alone; it starts as a copy of the entries
# that `make` compiled for this very library (its warm step, into the folder named after the
# library's source and the SymPy and NumPy versions), so that the tests read the compiled
# formulas the book and a reader read rather than compile them all again; what is not there is
# compiled. test_cache.py checks that an entry read back gives the numbers of a fresh compile.
# IA_CACHE_DIR set beforehand (an empty folder, or "off") is used as it is.
if "IA_CACHE_DIR" not in os.environ:
    try:
        from inference_arithmetic.core import cache

        made = cache.folder()  # the user's: where `make` compiled
    except Exception:  # a library that does not import: its tests say so, one by one
        made = None
    os.environ["IA_CACHE_DIR"] = tempfile.mkdtemp(prefix="inference-arithmetic-cache-")
    if made is not None and made.is_dir():
        shutil.copytree(made, cache.folder())

from hypothesis import settings  # noqa: E402

# Compiling a formula (lambdify) on first use takes longer than hypothesis' default deadline.
settings.register_profile("library", max_examples=50, deadline=None, database=None)
settings.load_profile("library")
