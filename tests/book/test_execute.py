"""The book's execution cache (tools/execute.py): a page runs again exactly when its code, the
library's code (docstrings and comments aside) or a file it read changed, so that no page is
served stale.

A tiny book in a temporary folder: a "library" (lib/: a module and a data file), a page that
reads the data file, one that lists a folder, one that prints the module's docstring (read from
its file, as the formula reference reads them) and one that reads nothing; each is executed in
a real kernel with the hook the book's pages run under (tools/book_reads.py).
"""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import execute  # noqa: E402

FRONT = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

"""
PAGES = {
    # Importing the library opens and lists files too, and so does looking up the installed
    # packages (on sys.path, with lib/ on it): the library's code and the packages are keyed.
    "reads": 'import importlib.metadata, json, sys\n\nsys.path.insert(0, "../lib")\nimport tiny\n\n'
    "assert list(importlib.metadata.distributions())\n"
    'print(json.load(open("../lib/data/specs.json"))["bandwidth"] * tiny.VALUE)',
    "lists": 'import os\n\nprint(sorted(os.listdir("../lib/profiles")))',
    "plain": "print(6 * 7)",
    # Prints a docstring as the formula reference does: read from the module's file.
    "docs": 'import ast, inspect, sys\n\nsys.path.insert(0, "../lib")\nimport tiny\n\n'
    "print(ast.get_docstring(ast.parse(inspect.getsource(tiny))))",
}


def _write(root: Path, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _page(code: str) -> str:
    return FRONT + "```{code-cell} ipython3\n" + code + "\n```\n"


def _printed(cache_dir: Path, page: Path) -> str:
    from jupyter_cache import get_cache

    _, notebook = get_cache(str(cache_dir)).merge_match_into_notebook(execute.read(page))
    return "".join(output["text"] for output in notebook.cells[0]["outputs"])


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The tiny book, executed once (every page runs: none is in the cache)."""
    root = tmp_path_factory.mktemp("book")
    _write(root, {
        "lib/tiny/__init__.py": '"""A library."""\n\nVALUE = 1\n',
        "lib/data/specs.json": json.dumps({"bandwidth": 3.35}),
        "lib/data/unread.csv": "a,b\n1,2\n",
        "lib/profiles/a.json": "{}",
        **{f"pages/{name}.md": _page(code) for name, code in PAGES.items()},
    })  # fmt: skip
    pages = [root / "pages" / f"{name}.md" for name in PAGES]
    cache = root / "_build" / ".jupyter_cache"
    ran, failed = execute.execute(pages, cache, root, jobs=2, out=lambda line: None)
    assert not failed and sorted(ran) == sorted(pages)
    return root, cache, {page.stem: page for page in pages}


def _stale(root, cache, pages):
    """The pages that would run again, their records left in the cache."""
    from jupyter_cache import get_cache

    library = execute.library_key(root / "lib")
    stale, _ = execute.stale(pages.values(), get_cache(str(cache)), root, library, drop=False)
    return sorted(page.stem for page in stale)


def test_a_page_records_the_files_it_reads_and_the_folders_it_lists(book):
    root, cache, pages = book
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import NbCacheRecord

    records = {}
    for name, page in pages.items():
        _, key = get_cache(str(cache)).create_hashed_notebook(execute.read(page))
        record = NbCacheRecord.record_from_hashkey(key, get_cache(str(cache)).db)
        records[name] = record.data["inputs"]
    assert list(records["reads"]["files"]) == ["lib/data/specs.json"]
    assert records["reads"]["folders"] == {} and not records["reads"]["whole"]
    assert list(records["lists"]["folders"]) == ["lib/profiles"] and not records["lists"]["files"]
    assert records["plain"]["files"] == records["plain"]["folders"] == {}
    assert list(records["docs"]["files"]) == ["lib/tiny/__init__.py"]  # its source, read
    assert (cache.parent / ".executed" / "pages" / "reads").exists()  # the page's stamp
    assert _printed(cache, pages["reads"]) == "3.35\n"


def test_nothing_changed_runs_nothing(book):
    root, cache, pages = book
    assert _stale(root, cache, pages) == []
    assert execute.execute(pages.values(), cache, root, out=lambda line: None) == ([], [])


def test_a_data_edit_runs_again_the_page_that_read_it_and_no_other(book):
    root, cache, pages = book
    (root / "lib" / "data" / "unread.csv").write_text("a,b\n3,4\n")  # read by no page
    assert _stale(root, cache, pages) == []
    (root / "lib" / "data" / "specs.json").write_text(json.dumps({"bandwidth": 4.8}))
    ran, failed = execute.execute(pages.values(), cache, root, out=lambda line: None)
    assert ran == [pages["reads"]] and not failed
    assert _printed(cache, pages["reads"]) == "4.8\n"  # its new number, not the old one
    (root / "lib" / "profiles" / "b.json").write_text("{}")  # a file more in a listed folder
    ran, _ = execute.execute(pages.values(), cache, root, out=lambda line: None)
    assert ran == [pages["lists"]]
    assert _printed(cache, pages["lists"]) == "['a.json', 'b.json']\n"


def test_a_code_edit_makes_every_page_stale_and_a_docstring_edit_the_page_printing_it(book):
    root, cache, pages = book
    module = root / "lib" / "tiny" / "__init__.py"
    before = module.read_text()
    assert _printed(cache, pages["docs"]) == "A library.\n"
    try:
        module.write_text(before.replace("VALUE = 1", "VALUE = 2"))
        assert _stale(root, cache, pages) == ["docs", "lists", "plain", "reads"]
        # A comment or a docstring changes no number: only the page that printed the docstring,
        # having read the module's file, runs again.
        module.write_text(before.replace("VALUE = 1", "VALUE = 1  # the one value"))
        assert _stale(root, cache, pages) == ["docs"]
        module.write_text(before.replace("A library.", "A library, documented."))
        assert _stale(root, cache, pages) == ["docs"]
    finally:
        module.write_text(before)
    assert _stale(root, cache, pages) == []


def test_a_page_started_another_process_depends_on_every_file_of_the_library(tmp_path):
    root = tmp_path
    _write(root, {
        "lib/data/specs.json": "{}",
        "pages/shell.md": _page('import subprocess\n\nsubprocess.run(["true"], check=True)'),
    })  # fmt: skip
    cache = root / "_build" / ".jupyter_cache"
    ran, failed = execute.execute([root / "pages" / "shell.md"], cache, root, out=print)
    assert len(ran) == 1 and not failed
    (root / "lib" / "data" / "specs.json").write_text('{"changed": true}')
    assert _stale(root, cache, {"shell": root / "pages" / "shell.md"}) == ["shell"]


def test_a_failing_page_is_not_cached(tmp_path):
    _write(tmp_path, {"lib/x.py": "", "pages/fails.md": _page("1 / 0")})
    cache, page = tmp_path / "cache", tmp_path / "pages" / "fails.md"
    lines = []
    ran, failed = execute.execute([page], cache, tmp_path, out=lines.append)
    assert failed == [page] and "ZeroDivisionError" in "\n".join(lines)
    assert _stale(tmp_path, cache, {"fails": page}) == ["fails"]


_RUN = execute.run


def _kernel_lost(page, root, timeout, kernel=None, env=None):
    """``execute.run``, whose kernel is lost the first N times (N in the file ``lost``)."""
    lost = Path(root) / "lost"
    left = int(lost.read_text())
    if left:
        lost.write_text(str(left - 1))
        raise RuntimeError("Kernel didn't respond in 60 seconds")
    return _RUN(page, root, timeout, kernel, env)


@pytest.mark.parametrize("times", [1, 2])
def test_a_page_whose_kernel_is_lost_runs_once_more(tmp_path, monkeypatch, times):
    # Two kernels starting at once can be given the same port: the page runs again, once.
    # (The pool's processes are forked, so they run the patched function.)
    monkeypatch.setattr(execute, "run", _kernel_lost)
    _write(tmp_path, {"lib/x.py": "", "pages/a.md": _page("print(1)"), "lost": str(times)})
    cache, page = tmp_path / "cache", tmp_path / "pages" / "a.md"
    lines = []
    ran, failed = execute.execute([page], cache, tmp_path, out=lines.append)
    assert ran == [page] and "running it again" in "\n".join(lines)
    if times == 1:
        assert not failed and _printed(cache, page) == "1\n"
    else:
        assert failed == [page] and lines[-1].startswith(f"{page}: failed")


def _cells(*cells) -> str:
    """A page of code cells, each (tags, code)."""
    blocks = []
    for tags, code in cells:
        front = f"---\ntags: [{', '.join(tags)}]\n---\n" if tags else ""
        blocks.append("```{code-cell} ipython3\n" + front + code + "\n```\n")
    return FRONT + "\n".join(blocks)


# Removed cells see the shown cells' names and each other's (a shown rebinding last); a shown
# cell sees only the shown cells', whatever the removed ones bound, rebound or deleted.
APART = _cells(
    ((), "x, y = 1, 2"),
    (("remove-cell",), "hidden = x + y\ny = 20\ndel x"),
    ((), "print(x, y, 'hidden' in dir())"),
    (("remove-input",), "print(hidden, y)\nhidden *= 3"),
    ((), "y = 5"),
    (("remove-cell",), "print(hidden, y)"),
)


def test_a_shown_cell_sees_only_the_shown_cells_names(tmp_path):
    from jupyter_cache import get_cache

    _write(tmp_path, {"lib/x.py": "", "pages/apart.md": APART})
    cache, page = tmp_path / "cache", tmp_path / "pages" / "apart.md"
    ran, failed = execute.execute([page], cache, tmp_path, out=print)
    assert ran == [page] and not failed
    _, notebook = get_cache(str(cache)).merge_match_into_notebook(execute.read(page))
    printed = ["".join(o.get("text", "") for o in cell["outputs"]) for cell in notebook.cells]
    assert printed == ["", "", "1 2 False\n", "3 20\n", "", "9 5\n"]


def test_a_shown_cell_that_needs_a_removed_cells_name_fails_the_page(tmp_path):
    page = _cells((("remove-cell",), "import math"), ((), "print(math.pi)"))
    _write(tmp_path, {"lib/x.py": "", "pages/needs.md": page})
    lines = []
    ran, failed = execute.execute([tmp_path / "pages" / "needs.md"], tmp_path / "c", tmp_path,
                                  out=lines.append)  # fmt: skip
    printed = "\n".join(lines)
    assert failed and "NameError" in printed and "name 'math' is not defined" in printed


def test_a_pages_kernel_gets_the_librarys_sympy_cache_size(tmp_path, monkeypatch):
    # A chapter imports SymPy before the library; the kernel must have the library's size all
    # the same (SymPy reads it once, at its import): the calculator's page data depends on it.
    # Not from this process's environment (importing the library may have left it there).
    import inference_arithmetic

    monkeypatch.delenv("SYMPY_CACHE_SIZE", raising=False)

    code = "import sympy.core.cache\n\nprint(sympy.core.cache.SYMPY_CACHE_SIZE)"
    _write(tmp_path, {"lib/x.py": "", "pages/size.md": _page(code)})
    cache, page = tmp_path / "cache", tmp_path / "pages" / "size.md"
    ran, failed = execute.execute([page], cache, tmp_path, out=print)
    assert ran == [page] and not failed
    assert _printed(cache, page) == f"{inference_arithmetic.SYMPY_CACHE_SIZE}\n"
    assert inference_arithmetic.SYMPY_CACHE_SIZE > 1000  # SymPy's default


def test_the_shown_notebook_has_the_shown_cells_only(tmp_path):
    # `make shown` runs these with nbval: the code a reader sees, in order, and nothing else.
    import shown

    page = tmp_path / "page.md"
    page.write_text(APART)
    notebook = shown.shown(page)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.source for cell in code] == [
        "x, y = 1, 2",
        "print(x, y, 'hidden' in dir())",
        "y = 5",
    ]
    assert not any(cell.outputs for cell in code)


# What a kernel knows of its start: what the server imported before the fork read from the
# environment (SymPy's cache size, Matplotlib's backend), its folder, import path, environment
# and namespace. (That it records what a page reads, tools/book_reads.py's hook, installed at
# its start-up, is checked above: the tiny book's four pages run in forked kernels.)
TWIN = """import os, sys
import matplotlib, sympy.core.cache

print(sympy.core.cache.SYMPY_CACHE_SIZE, matplotlib.get_backend(), os.getcwd())
print(sys.path, os.environ.get("IA_TWIN"), __name__, sorted(dir()), flush=True)"""


def test_a_forked_kernel_is_a_fresh_kernels_twin(tmp_path, monkeypatch):
    import kernel_fork
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    monkeypatch.setenv("IA_TWIN", "the page's")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernels' own: ipykernel's
    (tmp_path / "page").mkdir()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(TWIN)])
    printed = {}
    for server in (kernel_fork.Plain, kernel_fork.Forked):
        with server(tmp_path / server.__name__, {"SYMPY_CACHE_SIZE": "4321"}) as name:
            assert (name is None) == (server is kernel_fork.Plain)
            monkeypatch.setenv("SYMPY_CACHE_SIZE", "4321")  # as execute.run adds it
            chosen = {"kernel_name": name} if name else {}
            result = single_nb_execution(
                nbformat.from_dict(notebook), str(tmp_path / "page"), 60, False, **chosen
            )
            monkeypatch.delenv("SYMPY_CACHE_SIZE")
        assert result.err is None, result.exc_string
        printed[server] = result.nb.cells[0].outputs[0]["text"]
    assert printed[kernel_fork.Forked] == printed[kernel_fork.Plain]
    assert printed[kernel_fork.Plain].startswith(
        f"4321 module://matplotlib_inline.backend_inline {tmp_path / 'page'}"
    )
    assert "the page's __main__" in printed[kernel_fork.Plain]


AUTOGROUP = Path("/proc/self/autogroup")


def test_a_kernel_in_a_session_of_its_own_keeps_the_priority_it_was_started_with():
    # A forked kernel calls setsid (tools/kernel_fork.py): Linux then schedules its session as
    # one group at niceness 0, whatever the niceness `make test` started the book's chain at.
    import os

    import kernel_fork

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a kernel's first steps, under a lower priority
        try:
            os.nice(7)
            os.setsid()
            before = AUTOGROUP.read_text().split()[-1]
            try:  # whether this system lets a session group's niceness be set (to what it is)
                AUTOGROUP.write_text(before)
            except BlockingIOError:  # set by another within 0.1 s: settable, keep_priority waits
                pass
            kernel_fork.keep_priority()
            after = AUTOGROUP.read_text().split()[-1]
            os.write(write, f"{os.nice(0)} {before} {after}".encode())
        except OSError:  # no session groups, or a /proc that cannot be written
            os.write(write, b"unsettable")
        finally:
            os._exit(0)
    os.close(write)
    reported = os.read(read, 100).decode().split()
    os.waitpid(child, 0)
    if reported == ["unsettable"]:
        pytest.skip("this system lets no session group's priority be set")
    own, before, after = reported
    assert before == "0" != own  # a new session's group: niceness 0, not the kernel's
    assert after == own
