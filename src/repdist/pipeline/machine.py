"""What machine a job ran on, in one line for its log: two VMs of one name and core count
train at speeds a third apart (their host CPUs differ). No torch: every job logs this line."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
from pathlib import Path

MACHINE_PREFIX = "machine: "


def cpu_model(cpuinfo: str | os.PathLike[str] = "/proc/cpuinfo") -> str:
    """The CPU's model name (/proc/cpuinfo), else the platform's, else "unknown CPU"."""
    with contextlib.suppress(OSError):
        for line in Path(cpuinfo).read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return " ".join(value.split())
    return platform.processor() or "unknown CPU"


def usable_cpus() -> int:
    """CPUs this process may run on (a SLURM or cgroup limit included, where the OS says)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def describe() -> str:
    """One line: CPU model, usable CPUs, OS and architecture, host."""
    return (f"{cpu_model()}, {usable_cpus()} usable CPU(s), {platform.system()} "
            f"{platform.machine()}, host {socket.gethostname()}")
