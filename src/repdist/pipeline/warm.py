"""Warm starts for a local run's script jobs: each job is forked from a server that has already
imported the libraries every job imports (`PRELOAD`), instead of a fresh Python importing them.

Those imports cost about 2 s of CPU a job, most of a toy run's CPU. Where anything is missing, the
job starts cold: a warm start is only ever a faster way to the same process. Config `warm_starts`
turns it on: config.quick.yaml's runs start warm; config.yaml's stay cold (start-ups are under
1 % of a paper-scale run)."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable
from pathlib import Path

SOCKET_ENV = "REPDIST_WARM_SOCKET"  # where the server listens (set by the head for its jobs)
PYTHON_ENV = "REPDIST_WARM_PYTHON"  # the server's interpreter: only its own jobs are handed over
STARTED_ENV = "REPDIST_WARM_STARTED"  # set in a job that was forked warm (the job log says so)
HOOK_DIR = Path(__file__).with_name("warm_hook")  # holds the sitecustomize that delegates
SCRIPTS_DIR = f"{os.sep}.snakemake{os.sep}scripts{os.sep}"  # where Snakemake writes script jobs
# what more than one quick-DAG job imports (torch._dynamo: any optimiser's, 1 s); failures skipped
PRELOAD = ("numpy", "pandas", "pyarrow.parquet", "pyarrow.dataset", "scipy.linalg",
           "scipy.optimize", "matplotlib.pyplot", "matplotlib.backends.backend_pdf",
           "fontTools.subset", "torch", "torch._dynamo", "sklearn.linear_model",
           "sklearn.cross_decomposition", "transformers.modeling_utils", "snakemake.script",
           "threadpoolctl", "tabulate")
# A warm job differs from a cold one in two ways. Snakemake's `benchmark:` files measure the
# client's process tree: wall seconds stay right, CPU and memory are the client's (the job log's
# last line holds the job's own). Environment variables a preloaded library reads on import are
# the head's, not the job's (threads excepted).
MIN_JOBS = 6  # fewer jobs than this start cold (start_for_local_jobs)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
HEADER = struct.Struct("!I")  # a message's length, before its JSON
SERVER_LOG = "warm-starts.log"  # the server's output


def _send(conn: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(conn, [HEADER.pack(len(data)) + data], fds)
    else:
        conn.sendall(HEADER.pack(len(data)) + data)


class _Channel:
    """Length-prefixed JSON messages over a Unix socket, read whole: two messages that arrive
    in one read (a job that ends before its client has read its pid) are two messages."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.buffer = b""

    def receive(self, fds: int = 0) -> tuple[dict | None, list[int]]:
        """The next message (None: the peer has gone) and up to `fds` descriptors with it."""
        got: list[int] = []
        while True:
            if len(self.buffer) >= HEADER.size:
                end = HEADER.size + HEADER.unpack_from(self.buffer)[0]
                if len(self.buffer) >= end:
                    message = json.loads(self.buffer[HEADER.size:end])
                    self.buffer = self.buffer[end:]
                    return message, got
            if fds and not got:
                chunk, got, _, _ = socket.recv_fds(self.conn, 1 << 16, fds)
            else:
                chunk = self.conn.recv(1 << 16)
            if not chunk:
                return None, got
            self.buffer += chunk


# -- the client: a job's interpreter, from the hook ------------------------------------------

def handed_over(argv: list[str], environ: os._Environ | dict) -> bool:
    """This interpreter runs a Snakemake script job that the run's server can start warm."""
    return bool(environ.get(SOCKET_ENV)) and environ.get(PYTHON_ENV) == sys.executable and \
        bool(argv) and SCRIPTS_DIR in os.path.abspath(argv[0]) and argv[0].endswith(".py")


# A job's interpreter first runs warm_hook/sitecustomize.py. The client sends its argv, directory,
# environment and stream descriptors; the server forks a child that becomes the job. The client
# forwards FORWARDED signals and exits with its status; a child without its client is stopped.
def delegate() -> None:
    """Hand this job to the server and exit with the job's status; return (to start cold)
    where the server cannot be reached or cannot start it."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(os.environ[SOCKET_ENV])
        _send(conn, {"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}, [0, 1, 2])
        channel = _Channel(conn)
        started, _ = channel.receive()
    except OSError:
        return
    if not started or "pid" not in started:
        return
    child = int(started["pid"])
    for signum in FORWARDED:
        signal.signal(signum, lambda n, _f: _forward(child, n))
    ended, _ = channel.receive()  # a forwarded signal's handler returns: the call resumes
    if ended is None:  # the server went first: the job goes too, and fails as a job
        _forward(child, signal.SIGKILL)
        print(f"repdist warm start: the server of this run ended before job {child}",
              file=sys.stderr)
    code = 1 if ended is None else int(ended["exit"])
    os._exit(code if code >= 0 else 128 - code)


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


# -- the server: the head's warm interpreter ---------------------------------------------------

def preload(names: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import `names` (those installed); the ones imported."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    done = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 (a library that cannot load here is left to the jobs)
            continue
        done.append(name)
    if "matplotlib.pyplot" in done:
        _draw_once(sys.modules["matplotlib.pyplot"])
    return done


def _draw_once(plt) -> None:
    """Save a small figure as PDF and PNG in memory: what each figure job's first save loads."""
    import io

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0, 1], label="x")
    ax.set_title("x")
    ax.legend()
    for kind in ("pdf", "png"):
        fig.savefig(io.BytesIO(), format=kind)
    plt.close(fig)


def serve(path: Path, watch: int, names: tuple[str, ...] = PRELOAD, log=print) -> None:
    """Fork each job sent to the socket `path`, with `names` preloaded, until `watch` ends."""
    loaded = preload(names)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():  # a forked child could not use CUDA
        log("warm starts: CUDA was initialised while preloading: every job starts cold")
        return
    gc.collect()
    gc.freeze()  # the collector leaves the preloaded objects' pages shared with every child
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path) + ".new")
    listener.listen(64)
    os.replace(str(path) + ".new", path)  # clients see the socket only once it accepts
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    running: dict[int, socket.socket] = {}
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: _stop_all(running, listener, path))
    log(f"warm starts: listening on {path}, preloaded {', '.join(loaded)}")
    while alive(watch):
        ready, _, _ = select.select([listener, wake_read, *running.values()], [], [], 1.0)
        if wake_read in ready:
            os.read(wake_read, 512)
        for pid, status in _reaped():
            conn = running.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                conn.close()
        for pid, conn in list(running.items()):
            if conn in ready:  # a client that went away: its job goes too
                _forward(pid, signal.SIGTERM)
        if listener in ready:
            _accept(listener, running, log)
    _stop_all(running, listener, path)


def alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reaped() -> list[tuple[int, int]]:
    done = []
    with contextlib.suppress(ChildProcessError):
        while (reaped := os.waitpid(-1, os.WNOHANG))[0]:
            done.append(reaped)
    return done


def _accept(listener: socket.socket, running: dict[int, socket.socket], log) -> None:
    conn, _ = listener.accept()
    try:
        request, fds = _Channel(conn).receive(fds=3)
    except OSError:
        request, fds = None, []
    if request is None or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in running.values():
            other.close()
        _become_the_job(request, fds, conn)
    for fd in fds:
        os.close(fd)
    _send(conn, {"pid": pid})
    running[pid] = conn
    log(f"warm starts: {Path(request['argv'][0]).name} as pid {pid}")


def _become_the_job(request: dict, fds: list[int], conn: socket.socket) -> None:
    """In the forked child: become the client's job and exit with its status (never returns)."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[STARTED_ENV] = "1"
        tempfile.tempdir = None  # read again from the job's TMPDIR
        sys.argv = list(request["argv"])
        sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
        _threads_from_environment()
        code = _run_main(sys.argv[0])
    except BaseException:  # noqa: BLE001 (the job's own failure, reported as a cold start would)
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _threads_from_environment() -> None:
    """The thread counts a fresh interpreter would read from OMP_NUM_THREADS (Snakemake's)."""
    threads = os.environ.get("OMP_NUM_THREADS")
    if not threads or not threads.isdigit() or int(threads) < 1:
        return
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(threads))
    if "threadpoolctl" in sys.modules:
        sys.modules["threadpoolctl"].threadpool_limits(int(threads))


def _run_main(script: str) -> int:
    """Run `script` as the interpreter runs a script, atexit included; its exit status."""
    import atexit
    import runpy

    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    return code


def _stop_all(running: dict[int, socket.socket], listener: socket.socket, path: Path) -> None:
    for pid in running:
        _forward(pid, signal.SIGTERM)
    with contextlib.suppress(OSError):
        listener.close()
    with contextlib.suppress(OSError):
        os.unlink(path)
        path.parent.rmdir()  # start_server's private folder
    os._exit(0)


# -- the head: start the server, point the jobs at it -----------------------------------------

def start_server(folder: Path, watch: int | None = None,
                 names: tuple[str, ...] = PRELOAD) -> Path:
    """Start the server for `watch` (default: this process), logging to `folder`, and point our
    jobs at it; its socket, in a short private folder (a socket path holds 107 bytes at most)."""
    watch = os.getpid() if watch is None else watch
    path = Path(tempfile.mkdtemp(prefix="repdist-warm-")) / "socket"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / SERVER_LOG, "a") as log:
        subprocess.Popen([sys.executable, "-m", __name__, str(path), "--watch", str(watch),
                          "--preload", ",".join(names)],
                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True, env={**os.environ, "MPLBACKEND": "Agg"})
    os.environ[SOCKET_ENV] = str(path)
    os.environ[PYTHON_ENV] = sys.executable
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(HOOK_DIR) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(HOOK_DIR), *parts])
    return path


def start_for_local_jobs(enabled: bool, local: bool, gpus: int,
                         jobs: Iterable[object]) -> Path | None:
    """The Snakefile's `onstart`: the server's socket; None unless `warm_starts` is on and the run
    is local (a cluster job runs in its allocation), plans no GPU (no fork once CUDA may be
    touched) and has MIN_JOBS jobs (the server's imports cost about two cold starts)."""
    if not (enabled and local and not gpus) or sum(1 for _ in jobs) < MIN_JOBS:
        return None
    return start_server(Path(".snakemake", "log"))


def wait_for_server(path: Path, timeout: float = 60.0) -> bool:
    """Whether the server at `path` accepts jobs within `timeout` seconds (tests, tools)."""
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return path.exists()


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m repdist.pipeline.warm",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("socket", type=Path)
    parser.add_argument("--watch", type=int, required=True, help="serve while this pid lives")
    parser.add_argument("--preload", default=",".join(PRELOAD),
                        help="the modules to import first, comma-separated")
    args = parser.parse_args(argv)
    serve(args.socket, args.watch, tuple(filter(None, args.preload.split(","))),
          log=lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
