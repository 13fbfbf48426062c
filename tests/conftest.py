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

from hypothesis import settings  # noqa: E402

# Compiling a formula (lambdify) on first use takes longer than hypothesis' default deadline.
settings.register_profile("library", max_examples=50, deadline=None, database=None)
settings.load_profile("library")
