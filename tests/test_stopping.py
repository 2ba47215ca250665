"""SIGTERM and SIGINT stop a run's head process: KeyboardInterrupt (Snakemake's cancel path) at
the first, later ones ignored, and a watchdog that ends a head still waiting after the grace
period, releasing Snakemake's lock first (repdist.pipeline.stopping). The head on a real SLURM
cluster: tests/slurm/slurm_faults.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

CHILD = textwrap.dedent("""
    import sys, time
    from repdist.pipeline.stopping import stop_on_signals
    stop_on_signals(lambda: print("released", flush=True), grace_s={grace},
                    log=lambda m: print(m, flush=True))
    try:
        print("ready", flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    {after}
""")


def run_child(signals: list[signal.Signals], grace: float = 30, after: str = "") -> tuple[int, str, float]:
    """Start a child with the handlers, send `signals` once it is ready; (status, output, seconds)."""
    code = CHILD.format(grace=grace, after=after)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    start = time.monotonic()
    for signum in signals:
        proc.send_signal(signum)
        time.sleep(0.3)
    out, _ = proc.communicate(timeout=30)
    return proc.returncode, out, time.monotonic() - start


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_first_signal_interrupts_the_main_thread(signum):
    status, out, _ = run_child([signum])
    assert status == 0
    assert f"{signum.name} received: cancelling the running jobs" in out
    assert "interrupted" in out and "released" not in out


def test_later_signals_are_noted_not_raised():
    after = "time.sleep(1.5); print('cancel path finished', flush=True)"
    status, out, _ = run_child([signal.SIGINT, signal.SIGTERM, signal.SIGINT], after=after)
    assert status == 0
    assert out.count("already stopping") == 2
    assert "cancel path finished" in out


def test_watchdog_ends_a_head_that_keeps_waiting():
    # Snakemake's cancel path joining a status thread asleep for minutes, in small
    status, out, took = run_child([signal.SIGTERM], grace=1.0, after="time.sleep(60)")
    assert status == 128 + signal.SIGTERM
    assert "interrupted" in out
    assert "released" in out and "exiting now" in out
    assert took < 20


def test_descendants_lists_children_and_grandchildren():
    from repdist.pipeline.stopping import descendants

    child = subprocess.Popen(["bash", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE,
                             text=True)
    try:
        grandchild = int(child.stdout.readline())
        found = descendants(os.getpid())
        assert child.pid in found and grandchild in found
        assert os.getpid() not in found
    finally:
        child.kill()
        os.kill(grandchild, signal.SIGKILL)
        child.wait()
