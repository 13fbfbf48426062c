"""Shared test settings: a headless matplotlib backend and a fast hypothesis profile."""

import os
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")  # before anything imports matplotlib
# Hypothesis caches under ./.hypothesis by default; keep the repository root clean (and spare
# pytest the warning about a directory its norecursedirs setting does not list).
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY",
    os.path.join(tempfile.gettempdir(), "inference-arithmetic-hypothesis"),
)

# Compiled formulas are cached on disk (inference_arithmetic.serving.cache): the tests start from an
# empty cache of their own, so they compile what they check and leave the user's cache alone.
os.environ.setdefault("IA_CACHE_DIR", tempfile.mkdtemp(prefix="inference-arithmetic-cache-"))

from hypothesis import settings  # noqa: E402

# Compiling a formula (lambdify) on first use takes longer than hypothesis' default deadline.
settings.register_profile("library", max_examples=50, deadline=None, database=None)
settings.load_profile("library")
