"""Execute the book's pages into its execution cache, each keyed on everything it depends on.

    python tools/execute.py [--jobs N] [--timeout SECONDS] [--cache DIR] PAGE.md ...

The build (myst-nb) takes a page's outputs from the jupyter-cache in ``DIR`` (default
_build/.jupyter_cache) when a record there has the page's code cells, and jupyter-cache keys a
record on those alone. A page also depends on the library's code and on the data files it reads
(a GPU's specs, a validation CSV, the bands), so each record made here carries its *inputs*
beside its outputs (the record's data, ``inputs``): a hash of the library's code (docstrings
and comments aside) and the installed packages (``library_key``), and the hash of every file of
the repository the page read and of every folder it listed while it ran, as its kernel recorded
them (tools/book_reads.py, an audit hook). A page whose record is missing, was made elsewhere,
or whose inputs are no longer those is executed again; the others are left alone. So a data
edit re-executes exactly the pages that read that file, and no page is served stale. A page
that started another process (whose reads cannot be seen) depends on every file under lib/.

The pages run JOBS at a time (default 2), the longest first, each in a fresh kernel forked
from a process that has imported ipykernel, NumPy, SymPy and Matplotlib once
(tools/kernel_fork.py). Each executed page's stamp, _build/.executed/PAGE, is touched, so
that Sphinx reads the page again (tools/book_html.py makes the stamp a dependency of the page).
A page that fails is not cached: its traceback is printed and the exit status is 1. A page
whose kernel could not start or died runs once more first (two kernels starting at once can be
given the same free port).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import hashlib
import json
import os
import sys
import tempfile
import time
import traceback
from importlib import metadata
from pathlib import Path

import kernel_fork  # tools/kernel_fork.py, beside this file

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "lib"
READS = Path(__file__).with_name("book_reads.py")
SHOWN_ALONE = Path(__file__).with_name("shown_alone.py")
# What decides how a page is run and recorded: a change to any runs every page again.
EXECUTOR = (Path(__file__), READS, SHOWN_ALONE)
# The seconds each page takes from a fresh clone on a 2-core machine (`make test`, both jobs
# busy), for the order only: a page missing from it runs last, and a page run before goes by
# its own time.
SECONDS = Path(__file__).with_name("page_seconds.json")


def library_key(library: Path = LIBRARY) -> str:
    """A hash of the library's code (each module's syntax tree without its docstrings and
    comments, ``cache.content_hash``), of this executor's and of the Python version and
    installed packages. A docstring edit leaves the pages alone: a page that prints a
    docstring (the formula reference) reads it from its module's file, and so depends on it
    as on any file it reads."""
    from inference_arithmetic.core.cache import content_hash

    digest = hashlib.sha256(sys.version.encode())
    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    digest.update("\n".join(packages).encode())
    modules = sorted(p for p in library.rglob("*.py") if "__pycache__" not in p.parts)
    named = [(str(p.relative_to(library)), content_hash(p)) for p in modules]
    executor = [(f"tools/{p.name}", file_hash(p)) for p in EXECUTOR]
    for name, hashed in [*named, *executor]:
        digest.update(f"\n{name} {hashed}".encode())
    return digest.hexdigest()


def library_sympy_cache_size() -> int:
    """The size of SymPy's caches the library asks for (``ia.SYMPY_CACHE_SIZE``); the package
    imports nothing heavy."""
    import inference_arithmetic

    return inference_arithmetic.SYMPY_CACHE_SIZE


def file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "folder"


def folder_hash(path: Path) -> str | None:
    """A hash of a folder's listing (not its files' contents), as a page that lists it sees,
    less Python's bytecode (``__pycache__``), which comes and goes with no edit."""
    try:
        names = sorted(name for name in os.listdir(path) if name != "__pycache__")
    except (FileNotFoundError, NotADirectoryError):
        return None
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def inputs(reads: list, root: Path, library: str) -> dict:
    """What a page read (``reads``, its kernel's lines) with their hashes now: a file changed
    since the page read it gets no hash, so the record is never current."""
    files = {path: when for kind, path, when in reads if kind == "file"}
    folders = {path for kind, path, _ in reads if kind == "folder"}
    whole = any(kind == "process" for kind, _, _ in reads)
    if whole:  # it started a process: every file under lib/ (the library's data) counts
        for p in (root / "lib").rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts:
                files.setdefault(str(p.relative_to(root)), None)
    hashes = {}
    for path, when in sorted(files.items()):
        try:
            stat = (root / path).stat()
            now = [stat.st_mtime_ns, stat.st_size]
        except OSError:
            now = None
        hashes[path] = file_hash(root / path) if when is None or when == now else "changed"
    return {
        "library": library,
        "files": hashes,
        "folders": {path: folder_hash(root / path) for path in sorted(folders)},
        "whole": whole,
    }


def current(recorded: dict | None, root: Path, library: str) -> bool:
    """Whether the inputs a record was made with are what they are now."""
    if not recorded or recorded.get("library") != library:
        return False
    files, folders = recorded.get("files", {}), recorded.get("folders", {})
    return all(file_hash(root / path) == h for path, h in files.items()) and all(
        folder_hash(root / path) == h for path, h in folders.items()
    )


def read(page: Path):
    """The page as myst-nb reads it for the build (the same cells, so the same cache key)."""
    from myst_nb.core.read import myst_nb_reader_plugin

    return myst_nb_reader_plugin(str(page))


REMOVED = {"remove-cell", "remove-input"}
"""The tags of the cells a reader does not see (their code, and for remove-cell their output)."""


def removed_sources(notebook) -> list[str]:
    """The sources of the notebook's removed cells (``REMOVED``), which run apart from the shown
    ones (tools/shown_alone.py); a source that a shown cell has too is the shown cell's."""
    cells = [c for c in notebook.cells if c.cell_type == "code"]
    shown = {c.source for c in cells if not set(c.metadata.get("tags", ())) & REMOVED}
    return sorted({c.source for c in cells} - shown)


def run(
    page: str, root: str, timeout: int, kernel: str | None = None, env: dict | None = None
) -> tuple[dict, float, str | None, list]:
    """Execute one page in a kernel that records what it reads (a worker process's task), of
    the kernelspec named ``kernel`` (tools/kernel_fork.py's), else of the notebook's, with
    ``env`` added to its environment."""
    from jupyter_cache.executors.utils import single_nb_execution

    with tempfile.TemporaryDirectory() as folder:
        log, removed = Path(folder) / "reads.jsonl", Path(folder) / "removed.json"
        log.touch()
        notebook = read(Path(page))
        removed.write_text(json.dumps(removed_sources(notebook)))
        os.environ.update(PYTHONSTARTUP=str(READS), IA_BOOK_ROOT=root, IA_BOOK_READS=str(log))
        os.environ.update(IA_BOOK_REMOVED=str(removed))
        os.environ.update(env or {})
        chosen = {"kernel_name": kernel} if kernel else {}
        result = single_nb_execution(
            notebook,
            cwd=str(Path(page).parent),
            timeout=timeout,
            allow_errors=False,
            extra_arguments=[
                "--IPKernelApp.log_level=ERROR",  # not its warning about TCP
                f"--IPKernelApp.exec_files={[str(SHOWN_ALONE)]}",  # tools/shown_alone.py
            ],
            **chosen,
        )
        reads = [json.loads(line) for line in log.read_text().splitlines()]
    return result.nb, result.time, result.exc_string, reads


def stamp(page: Path, root: Path, cache_dir: Path) -> Path:
    """The file touched when ``page`` is executed, beside the cache: .executed/book/NN-slug
    (the page's name in the book, as tools/book_html.py looks it up)."""
    return Path(cache_dir).parent / ".executed" / page.resolve().relative_to(root).with_suffix("")


def stale(pages, cache, root: Path, library: str, drop=True) -> tuple[list[Path], dict]:
    """The pages whose record in ``cache`` is missing or was made from other inputs (each such
    record is dropped, ``drop``: never served again), and how long each page last took."""
    from jupyter_cache.cache.db import NbCacheRecord

    stale, took = [], {}
    for page in map(Path, pages):
        _, key = cache.create_hashed_notebook(read(page))
        try:
            record = NbCacheRecord.record_from_hashkey(key, cache.db)
        except KeyError:
            record = None
        if record is not None:
            took[page] = record.data.get("execution_seconds", 0)
            if current(record.data.get("inputs"), root, library):
                continue
            if drop:
                with contextlib.suppress(KeyError):  # its notebook's file is gone already
                    cache.remove_cache(record.pk)
        stale.append(page)
    return stale, took


def execute(pages, cache_dir, root: Path = ROOT, jobs: int = 2, timeout: int = 300, out=print):
    """Execute the pages whose cached outputs are missing or whose inputs changed; return
    the pages executed and the pages that failed."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    root = Path(root).resolve()
    cache = get_cache(str(cache_dir))
    library = library_key(root / "lib")
    pages = [Path(page) for page in pages]
    stale_pages, took = stale(pages, cache, root, library)
    if not stale_pages:
        return [], []
    # The longest first, so that none is left to run alone at the end: by the time each took
    # when it last ran here, else by what it takes on a 2-core machine from a fresh clone
    # (SECONDS): the calculator's page, which prints every model's formulas, takes a fifth of
    # the whole, and started last it would run alone for a minute or more.
    expected = {**json.loads(SECONDS.read_text()), **{p.stem: s for p, s in took.items()}}
    longest_first = sorted(stale_pages, key=lambda p: -expected.get(p.stem, 0))
    names = ", ".join(p.stem for p in longest_first)
    out(f"executing {len(stale_pages)} of {len(pages)} pages: {names}")
    failed = []
    # SymPy reads the size of its caches once, when it is imported, and a chapter imports it
    # before the library (its imports sorted): each kernel gets the library's size from the
    # start, without which the calculator's page data takes over twice as long.
    env = {"SYMPY_CACHE_SIZE": str(library_sympy_cache_size())}
    # The kernels fork from a server that has imported what every page imports. It costs
    # about one kernel's start-up, before any page can start, and saves most of one on each
    # page: worth it for more pages than run at once; fewer start their kernels as usual.
    forked = kernel_fork.Forked if len(stale_pages) > jobs else kernel_fork.Plain
    with (
        tempfile.TemporaryDirectory() as folder,
        forked(folder, env) as kernel,
        concurrent.futures.ProcessPoolExecutor(jobs) as pool,
    ):
        submit = functools.partial(pool.submit, run, timeout=timeout, kernel=kernel, env=env)
        running = {submit(str(p), str(root)): p for p in longest_first}
        again = set()  # the pages run a second time
        while running:
            ended, _ = concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
            future = next(iter(ended))
            page = running.pop(future)
            try:
                notebook, seconds, error, reads = future.result()
            except Exception:  # the kernel died, or could not start
                error, seconds = traceback.format_exc(), 0.0
                if page not in again:
                    # Once more: two kernels starting at once can be given the same free
                    # port (jupyter_client picks it before the kernel binds it).
                    out(f"{page}: its kernel could not start or died; running it again\n{error}")
                    again.add(page)
                    running[submit(str(page), str(root))] = page
                    continue
            if error is not None:
                out(f"{page}: failed\n{error}")
                failed.append(page)
                continue
            data = {"execution_seconds": seconds, "inputs": inputs(reads, root, library)}
            cache.cache_notebook_bundle(
                CacheBundleIn(notebook, str(page.resolve()), data=data),
                check_validity=False,
                overwrite=True,
            )
            done = stamp(page, root, cache_dir)
            done.parent.mkdir(parents=True, exist_ok=True)
            done.touch()
            out(f"{page}: {seconds:.0f} s")
    return stale_pages, failed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="+")
    parser.add_argument("--cache", default=str(ROOT / "_build" / ".jupyter_cache"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    ran, failed = execute(args.pages, args.cache, ROOT, args.jobs, args.timeout)
    if not ran:
        print(f"no page to execute: the outputs of all {len(args.pages)} are current")
    elif not failed:
        print(f"{len(ran)} pages executed in {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
