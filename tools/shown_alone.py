"""A book page's removed cells run in a namespace of their own (run at its kernel's start-up).

A reader who runs a chapter's shown cells, in JupyterLab or copied into a script, runs them
without the removed ones (tagged remove-cell or remove-input: the glue, the asserts, the
set-up of a figure). So every shown cell must run from the shown cells above it alone. While
the book executes, this makes that so: a name a removed cell binds is seen by the removed cells
after it, never by a shown one, and a shown cell that reads it fails the page with a NameError,
as it would fail the reader. The removed cells still read everything the shown cells bound.
Nothing runs twice: the page's one execution is the check (tests/book/test_execute.py shows it
failing). What a removed cell changes in place of a shown cell's object is not seen here;
tests/book/test_chapters.py reads the cells for that.

tools/execute.py starts each page's kernel with this file (IPython's ``exec_files``) and with
``IA_BOOK_REMOVED`` naming a JSON file of the page's removed cells' sources. Every name this
file binds is deleted at its end, so the page's namespace is a fresh kernel's.
"""


def _keep_the_removed_cells_apart():
    import json
    import os

    with open(os.environ["IA_BOOK_REMOVED"]) as f:
        removed = set(json.load(f))
    shell = get_ipython()  # noqa: F821 (IPython's, in the namespace this file runs in)
    names = shell.user_ns
    own = {}  # what the removed cells bound, and no shown cell bound again since
    shown = {}  # the namespace as the shown cells left it, while a removed cell runs
    kernel = {"In", "Out", "exit", "quit", "get_ipython"}

    def ours(name) -> bool:  # not IPython's own (_, _i, Out, ...)
        return not name.startswith("_") and name not in kernel

    def changed(before) -> set:
        bound = {k for k, v in names.items() if ours(k) and (k not in before or before[k] is not v)}
        return bound | {k for k in before if ours(k) and k not in names}

    def before_cell(info):
        shown.clear()
        shown.update(names)
        if info.raw_cell in removed:
            names.update(own)

    def after_cell(result):
        done = changed(shown)
        if result.info.raw_cell not in removed:
            for name in done:  # bound again by a shown cell: the removed cells see that now
                own.pop(name, None)
            return
        for name in [k for k in own if k not in names and k not in shown]:
            del own[name]  # deleted by the removed cell
        for name in done:
            if name in names:
                own[name] = names[name]
                if name in shown:
                    names[name] = shown[name]
                else:
                    del names[name]
            else:  # deleted by the removed cell
                own.pop(name, None)
                names[name] = shown[name]

    shell.events.register("pre_run_cell", before_cell)
    shell.events.register("post_run_cell", after_cell)


_keep_the_removed_cells_apart()
del _keep_the_removed_cells_apart
