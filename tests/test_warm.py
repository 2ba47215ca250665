"""Warm starts (repdist.pipeline.warm): a local run's script jobs forked from one preloaded
interpreter behave as the same script started cold: arguments, directory, environment,
streams, threads, exit status, failures and signals; anything else starts cold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repdist.pipeline import warm

HOOK = warm.HOOK_DIR / "sitecustomize.py"


def start(folder: Path, names: tuple[str, ...], **env: str) -> tuple[Path, dict, subprocess.Popen]:
    """A server preloading `names` for a stand-in head (a sleeping process the caller ends),
    started with `env` added to this process's environment: its socket, the environment its
    jobs get (this process's own is left as it was) and the head."""
    head = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        path = warm.start_server(folder, watch=head.pid, names=names)
        jobs = dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert warm.wait_for_server(path, timeout=120), "the server never listened"
    return path, jobs, head


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server preloading what REPORT imports, started as beside the tests (one thread)."""
    path, env, head = start(tmp_path_factory.mktemp("logs"), ("torch", "threadpoolctl"),
                            OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    yield path, env, head
    head.kill()
    head.wait()


def script(folder: Path, body: str) -> Path:
    """A script where Snakemake writes its script jobs."""
    path = folder / ".snakemake" / "scripts" / "tmpjob.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def run(path: Path, env: dict, cwd: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path), *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, **kwargs)


REPORT = """
import os, sys, threadpoolctl, torch
print("argv", sys.argv[1:], "cwd", os.getcwd(), "var", os.environ.get("JOB_VAR"))
print("warm", os.environ.get("REPDIST_WARM_STARTED"), "parent", os.getppid())
print("threads", torch.get_num_threads(),
      {p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"})
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize(("status", "threads"), [(0, 2), (3, 1)])
def test_a_job_forks_warm_with_its_arguments_streams_environment_threads_and_status(
        server, tmp_path, status, threads):
    path, env, _ = server
    job = script(tmp_path, REPORT)
    done = run(job, {**env, "JOB_VAR": "x", "OMP_NUM_THREADS": str(threads),
                     "OPENBLAS_NUM_THREADS": str(threads)}, tmp_path, str(status), "b")
    assert done.returncode == status, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["argv"] == f"['{status}', 'b'] cwd {tmp_path} var x"
    parent = int(lines["warm"].split()[-1])
    assert lines["warm"].startswith("1 parent") and parent != os.getpid()  # the server's child
    assert lines["threads"] == f"{threads} {{{threads}}}"
    assert done.stderr.strip() == "to stderr"


def test_a_failing_job_reports_its_traceback_and_status_1(server, tmp_path):
    _, env, _ = server
    done = run(script(tmp_path, "import os\nassert os.environ['REPDIST_WARM_STARTED']\n"
                                "raise ValueError('the job failed')\n"), env, tmp_path)
    assert done.returncode == 1
    assert "ValueError: the job failed" in done.stderr and "Traceback" in done.stderr


def test_sigterm_to_the_waiting_client_stops_the_job(server, tmp_path):
    _, env, _ = server
    pidfile = tmp_path / "pid"
    job = script(tmp_path, f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))"
                           "\ntime.sleep(60)\n")
    client = subprocess.Popen([sys.executable, str(job)], env=env, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not pidfile.is_file() or not pidfile.read_text():
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    child = int(pidfile.read_text())
    assert child != client.pid
    client.send_signal(signal.SIGTERM)
    assert client.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while warm.alive(child) and time.monotonic() < deadline:  # reaped by the server
        time.sleep(0.05)
    assert not warm.alive(child)


def test_other_interpreters_and_scripts_start_cold(server, tmp_path):
    path, env, _ = server
    assert warm.handed_over([str(tmp_path / ".snakemake/scripts/a.py")], env)
    assert not warm.handed_over([str(tmp_path / "a.py")], env)  # not a Snakemake script
    assert not warm.handed_over(["-c"], env)
    assert not warm.handed_over([str(tmp_path / ".snakemake/scripts/a.py")],
                                {**env, warm.PYTHON_ENV: "/elsewhere/python"})
    code = "import os, sys; print(os.environ.get('REPDIST_WARM_STARTED'), os.getppid())"
    plain = tmp_path / "plain.py"
    plain.write_text(code)
    done = run(plain, env, tmp_path)
    assert done.stdout.split() == ["None", str(os.getpid())]
    gone = run(script(tmp_path, code), {**env, warm.SOCKET_ENV: str(tmp_path / "none")},
               tmp_path)  # no server there: the job starts cold
    assert done.returncode == gone.returncode == 0
    assert gone.stdout.split() == ["None", str(os.getpid())]


def test_the_hook_names_the_socket_variable_and_runs_the_next_sitecustomize(tmp_path):
    assert f'"{warm.SOCKET_ENV}"' in HOOK.read_text()
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.CHAINED = True\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(warm.HOOK_DIR), str(tmp_path)])}
    done = subprocess.run([sys.executable, "-c", "print(CHAINED)"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr


def test_the_server_ends_with_its_head_and_removes_its_socket(tmp_path):
    path, _, head = start(tmp_path, ("json",))
    assert "listening on" in (tmp_path / warm.SERVER_LOG).read_text()
    assert "preloaded json" in (tmp_path / warm.SERVER_LOG).read_text()
    head.kill()
    head.wait()
    deadline = time.monotonic() + 20
    while path.exists() and time.monotonic() < deadline:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert not path.exists() and not path.parent.exists()


def test_a_job_whose_server_dies_fails_and_goes_with_it(tmp_path):
    """The server killed under a running job: the client exits 1, and the job it started
    does not run on unseen."""
    _, env, head = start(tmp_path, ())
    pidfile = tmp_path / "pid"
    job = script(tmp_path, f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))"
                           "\ntime.sleep(60)\n")
    client = subprocess.Popen([sys.executable, str(job)], env=env, cwd=tmp_path,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pidfile.is_file() or not pidfile.read_text():
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    child = int(pidfile.read_text())
    os.kill(_stat(child)[1], signal.SIGKILL)  # its parent: the server
    _, err = client.communicate(timeout=30)
    assert client.returncode == 1 and "ended before job" in err
    deadline = time.monotonic() + 10
    while warm.alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not warm.alive(child) or _stat(child)[0] == "Z"  # gone, or dead and not yet reaped
    head.kill()
    head.wait()


def _stat(pid: int) -> tuple[str, int]:
    """A process's state letter and parent, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        state, parent = fh.read().rsplit(")", 1)[1].split()[:2]
    return state, int(parent)


def test_messages_are_read_whole_however_they_arrive():
    """A job that ends before its client has read its pid: the pid and the status arrive in
    one read and are still two messages; a message cut in two is read whole; then the end."""
    import json
    import socket

    ours, theirs = socket.socketpair()
    ours.settimeout(10)  # a message lost in the buffer: a timeout, not a hang
    first, second = (json.dumps(m).encode() for m in ({"pid": 7}, {"exit": 3}))
    theirs.sendall(warm.HEADER.pack(len(first)) + first + warm.HEADER.pack(len(second)) + second)
    channel = warm._Channel(ours)
    assert channel.receive() == ({"pid": 7}, []) and channel.receive() == ({"exit": 3}, [])
    theirs.sendall(warm.HEADER.pack(len(first)) + first[:3])
    theirs.sendall(first[3:])
    assert channel.receive() == ({"pid": 7}, [])
    theirs.close()
    assert channel.receive() == (None, [])
