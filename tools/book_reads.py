"""A book page's kernel records what it reads of the repository (run at its start-up).

tools/execute.py starts each page's kernel with this file as ``PYTHONSTARTUP``, which IPython
runs before the first cell, and with ``IA_BOOK_ROOT`` (the repository) and ``IA_BOOK_READS`` (a
file to append to) in its environment. An audit hook then writes a line for each file under the
repository the page opens to read (with its modification time and size then), and each folder
it lists, the first time: the inputs its outputs depend on beside its code and the library's.
What the import system opens or lists is left out (the executor keys the library's code), and
so is what importlib.metadata reads of the installed packages (the executor keys their
versions); a module imported from the repository outside the library is recorded as its source
file. Starting another process (a shell command, a subprocess, a fork) is recorded too: what
that process reads cannot be seen from here.

Every name this file binds is deleted at its end, so the page's namespace is a fresh kernel's.
"""


def _install_the_hook():
    import json
    import os
    import sys

    root = os.path.realpath(os.environ["IA_BOOK_ROOT"])
    left_out = tuple(os.path.join(root, name) + os.sep for name in (".venv", "_build", ".git"))
    library = os.path.join(root, "lib") + os.sep
    log = open(os.environ["IA_BOOK_READS"], "a", buffering=1)
    seen = set()
    processes = {"subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec"}
    processes |= {"os.fork", "os.forkpty"}
    metadata = os.path.join(os.sep + "importlib", "metadata") + os.sep  # installed packages

    def write(kind, path):
        if (kind, path) in seen:
            return
        seen.add((kind, path))
        try:  # as it was when first read: one that changes before the page ends is not kept
            stat = os.stat(path) if kind == "file" else None
            when = [stat.st_mtime_ns, stat.st_size] if stat else None
        except OSError:
            when = None
        log.write(json.dumps([kind, os.path.relpath(path, root) if path else "", when]) + "\n")

    def reads(mode, flags) -> bool:
        if isinstance(mode, str):
            return "r" in mode or "+" in mode
        return isinstance(flags, int) and flags & os.O_ACCMODE != os.O_WRONLY

    def hook(event, args):
        if event in processes:
            write("process", "")
            return
        if event == "open":
            path, mode, flags = args
            kind = "file" if reads(mode, flags) else None
        elif event in ("os.listdir", "os.scandir"):
            path, kind = args[0], "folder"
        else:
            return
        if kind is None or path is None or isinstance(path, int):  # a file descriptor
            return
        path = os.path.realpath(os.fsdecode(path))
        if not path.startswith(root + os.sep) or path.startswith(left_out):
            return
        if kind == "folder" and os.path.basename(path) == "__pycache__":
            return  # Python's bytecode, not an input
        caller = sys._getframe(1).f_code.co_filename
        if caller.startswith("<frozen importlib") or metadata in caller:
            if kind == "folder" or not path.endswith((".py", ".pyc")):
                return  # the import system's look-ups, and importlib.metadata's of packages
            source = path  # a module: its source, unless the library's (keyed by its code)
            if path.endswith(".pyc"):
                folder, name = os.path.split(path)
                source = os.path.join(os.path.dirname(folder), name.split(".")[0] + ".py")
            if source.startswith(library):
                return
            path = source
        write(kind, path)

    sys.addaudithook(hook)


_install_the_hook()
del _install_the_hook
