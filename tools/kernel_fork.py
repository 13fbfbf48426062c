"""Book pages' kernels forked from one process that has imported what every page imports.

    python tools/kernel_fork.py serve SOCKET          # the server (tools/execute.py starts it)
    python tools/kernel_fork.py kernel SOCKET ARGS... # a kernel: its kernelspec's command

Each page runs in a fresh kernel, and a fresh kernel spends most of a small page's time
importing: ipykernel, NumPy, SymPy and Matplotlib take about 4 of the 5 seconds before a page's
first cell on a busy 2-core machine, 19 times in a build. So ``serve`` imports them once and
waits on a Unix socket; each kernel Jupyter starts (``kernel``, the command of the kernelspec
``Forked.NAME``) hands the server its arguments, environment, folder and standard streams, and
the server forks a child that becomes that kernel: ipykernel's own entry point, in a new
session, with the page's environment and folder. Nothing of the repository is imported
before the fork, so a page's kernel still records every file of it that the page reads
(tools/book_reads.py, which IPython runs at the kernel's start-up as before), and SymPy's caches
start empty. The variables read when a module is imported are the server's, set as a page's
kernel has them: SymPy's cache size (``Forked``'s ``env``, the one execute.py gives each page)
and Matplotlib's backend (``serve`` names ipykernel's inline one where none is named).

Jupyter signals the ``kernel`` process, which passes an interrupt or a termination on to its
child; if it is killed, the child sees the pipe it holds close and exits. Where the server is
not there (or this is not a system that forks), ``kernel`` runs a kernel the usual way, so a page
never depends on it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

PRELOADED = ("ipykernel.kernelapp", "IPython", "numpy", "sympy", "matplotlib.pyplot")
"""What every page's kernel imports (ipykernel; the chapters' imports), imported once."""

INLINE = "module://matplotlib_inline.backend_inline"
"""The backend ipykernel names in ``MPLBACKEND`` for its kernels (when it names none)."""

_MESSAGE = 1 << 20  # the longest request: arguments and an environment


def serve(path: str) -> None:
    """Import ``PRELOADED``, then fork a kernel for each request on the socket at ``path``."""
    os.environ.setdefault("MPLBACKEND", INLINE)  # before Matplotlib reads it
    for name in PRELOADED:
        __import__(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the system reaps the kernels
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    server.listen()
    print("ready", flush=True)
    while True:
        connection, _ = server.accept()
        message, fds, _, _ = socket.recv_fds(connection, _MESSAGE, 4)
        pid = os.fork()
        if pid == 0:
            server.close()
            _become_kernel(connection, json.loads(message), fds)
        connection.send(str(pid).encode())
        connection.close()
        for fd in fds:
            os.close(fd)


def _become_kernel(connection, request: dict, fds: list[int]) -> None:
    """In the forked child: the page's streams, session, folder and environment, then
    ipykernel's entry point; its exit status goes back to the ``kernel`` process."""
    code = 1
    try:
        stdin, stdout, stderr, lifeline = fds
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the kernel's own children are its
        os.setsid()
        keep_priority()
        _exit_with(lifeline)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = request["argv"]
        # ipykernel read its parent's process from the environment when the server imported
        # it: the page's (Jupyter's process), given as an option. It is not this child's parent
        # (the server), so ipykernel does not watch it; the ``kernel`` process does.
        parent = os.environ.get("JPY_PARENT_PID")
        if parent:
            sys.argv.append(f"--IPKernelApp.parent_handle={parent}")
        del sys.path[0]  # the server's folder, tools/ (ipykernel's launcher removes its own)
        from ipykernel import kernelapp

        try:
            kernelapp.launch_new_instance()
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            connection.send(str(code).encode())
        finally:
            os._exit(code)


def keep_priority() -> None:
    """Give this process's new session the process's own niceness. Linux schedules each session
    as one group (its autogroup) at the group's niceness, 0 for a new one whatever the process's:
    a page's kernel run under `nice make` would otherwise take as much of the machine as the
    library's tests beside it. Where there are no autogroups this does nothing."""
    import time

    for _ in range(5):
        try:
            with open("/proc/self/autogroup", "w") as group:
                group.write(str(os.nice(0)))
            return
        except BlockingIOError:  # without CAP_SYS_ADMIN, one change per 0.1 s machine-wide
            time.sleep(0.1)
        except OSError:  # no autogroups (another system, or a kernel without them)
            return


def _exit_with(lifeline: int) -> None:
    """Exit when the ``kernel`` process that holds the pipe's other end is gone (killed)."""
    import threading

    def watch():
        os.read(lifeline, 1)  # returns at the end of the pipe: the writer has exited
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def kernel(path: str, argv: list[str]) -> int:
    """A kernel for Jupyter: forked by the server at ``path``, else started as usual."""
    launcher = [sys.executable, "-m", "ipykernel_launcher", *argv]
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        connection.connect(path)
    except OSError:  # no server: a kernel the usual way
        os.execv(sys.executable, launcher)
    read_end, write_end = os.pipe()
    request = {"argv": launcher[2:], "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(connection, [json.dumps(request).encode()], [0, 1, 2, read_end])
    os.close(read_end)
    child = int(connection.recv(64))

    def pass_on(signum, frame):
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, pass_on)
    # Jupyter's process, as a kernel it starts watches it (ipykernel's ParentPollerUnix): if
    # it is gone, so is the kernel.
    parent = os.getppid()
    connection.settimeout(1.0)
    status = None
    while status is None:
        try:
            status = connection.recv(64)
        except TimeoutError:
            if os.getppid() != parent:
                pass_on(signal.SIGKILL, None)
                status = b""
    os.close(write_end)
    return int(status) if status else 1  # nothing: the child was killed


class Forked:
    """The server for the pages of one build, with this process's environment and ``env``
    (what its kernels' imports read: SymPy's ``SYMPY_CACHE_SIZE``), and the kernelspec of its
    kernels, in ``folder``. ``with Forked(folder, env) as name``: the pages run with
    ``kernel_name=name`` (None where no server could start) and ``JUPYTER_PATH`` as ``Forked``
    sets it, in this process, before the workers start."""

    NAME = "ia-forked"

    def __init__(self, folder, env: dict):
        self.folder, self.env = str(folder), env
        self.socket = os.path.join(self.folder, "kernels.sock")
        self.process, self.jupyter_path = None, os.environ.get("JUPYTER_PATH")  # restored

    def __enter__(self) -> str | None:
        import subprocess

        if not hasattr(os, "fork"):
            return None
        spec = os.path.join(self.folder, "kernels", self.NAME)
        os.makedirs(spec, exist_ok=True)
        command = [sys.executable, os.path.abspath(__file__), "kernel", self.socket]
        kernelspec = {
            "argv": [*command, "-f", "{connection_file}"],
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "metadata": {"debugger": True},
        }
        with open(os.path.join(spec, "kernel.json"), "w") as out:
            json.dump(kernelspec, out)
        paths = [self.folder, self.jupyter_path or ""]
        serving = [sys.executable, os.path.abspath(__file__), "serve", self.socket]
        os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in paths if p)
        env = {**os.environ, **self.env}
        self.process = subprocess.Popen(serving, env=env, stdout=subprocess.PIPE)
        if self.process.stdout.readline().strip() != b"ready":
            self.__exit__()
            return None  # the pages' kernels start as usual
        return self.NAME

    def __exit__(self, *exc) -> None:
        if self.jupyter_path is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = self.jupyter_path
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process.stdout.close()
            self.process = None


class Plain(Forked):
    """No server: the pages' kernels start as usual (``with Plain(folder, env) as name`` gives
    None)."""

    def __enter__(self) -> None:
        return None


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "kernel":
        sys.exit(kernel(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(f"usage: {__doc__.splitlines()[2].strip()}")
