"""`make test-slurm-faults`: the faults a cluster user meets, injected into runs on the real
one-node SLURM cluster of `make test-slurm`; every run must end with data equal to an
uninterrupted local run of the same target (`repdist diff`).

The target is one synthetic training job (config.quick.yaml with an overlay: K = 4, width 32,
three seeds stacked, a few thousand steps per checkpoint), run through a copy of the shipped SLURM
profile (partition and account names replaced, as in slurm_check.py):

1. requeue: `scontrol requeue` of the running job after its first checkpoint. SLURM runs it
   again and the job resumes from the checkpoint (its training log says "resuming from step").
2. time limit: the job's runtime is `attempt` minutes (the profile's set-resources, here only to
   make a time limit reachable in a test; the shipped rules scale their own runtime by attempt
   too) and training takes longer than one. SLURM ends attempt 1 with TIMEOUT, Snakemake
   resubmits it (profile `retries:`) with 2 minutes, and it resumes from the checkpoint.
3. SIGTERM, 4. SIGINT to the Snakemake head process while the job trains: the head cancels the
   job (`scancel`) and exits within STOP_LIMIT_S, no job of the run is left queued, no partial
   file stands; the same command run again resumes and completes (pipeline/stopping.py).
5. slurmd stopped under the running job (SlurmdTimeout 20 s here, SLURM's default is 300 s):
   slurmctld sets the node DOWN while the job still trains, and fails the job (NODE_FAIL, then
   requeued by SLURM or resubmitted by Snakemake); slurmd comes back, and the run, or a rerun of
   it, completes.

Usage: python tests/slurm/slurm_faults.py [--only SCENARIO ...] [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from slurm_check import (  # its sibling: this folder is the script's
    FAKE_GPUS,
    ROOT,
    local_cluster,
    local_profile,
    log,
    same_data,
    scratch_folder,
    snakemake,
)

TARGET = "results/quick/synthetic/K4/w32_g0_f0/seed0/embeddings.parquet"
TRAIN_RULES = ("synthetic_train", "synthetic_train_variants")
SHORT = {"steps": 20000, "every": 1000}  # about 45 s of training here
LONG = {"steps": 70000, "every": 2000}  # about 150 s: past a 1-minute limit; outlives slurmd
STOP_LIMIT_S = 60
SLURMD_TIMEOUT_S = 20


def overlay(work: Path, steps: int, every: int) -> Path:
    """config.quick.yaml narrowed to one training job of `steps` steps."""
    path = work / f"overlay_{steps}.yaml"
    path.write_text(yaml.safe_dump({"synthetic": {
        "class_counts": [4],
        "variants": [{"fix_g": 0, "fix_f": 0, "widths": [32]}],
        "training": {"steps": steps, "log_every": every, "eval_every": every,
                     "checkpoint_every": every},
    }}))
    return path


def start(folder: Path, profile: Path, config: Path) -> tuple[subprocess.Popen, float]:
    folder.mkdir(parents=True, exist_ok=True)
    logs = sorted(folder.glob("head*.log"))
    return snakemake(TARGET, "--profile", str(profile), "--directory", str(folder),
                     log_file=folder / f"head{len(logs)}.log",
                     configs=[ROOT / "config.quick.yaml", config])


def wait_for(what: str, ready: Callable[[], object], timeout: float) -> object:
    """Poll `ready` every second until it returns something truthy; fail after `timeout` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = ready()
        if value:
            return value
        time.sleep(1)
    raise SystemExit(f"slurm_faults: no {what} within {timeout:.0f} s")


def checkpoint(folder: Path) -> Path | None:
    return next((folder / "results/quick/synthetic").rglob("checkpoint.pt"), None)


def head_log(folder: Path) -> str:
    return "".join(p.read_text() for p in sorted(folder.glob("head*.log")))


def job_id(folder: Path) -> str | None:
    """The SLURM id of the last training job the head submitted."""
    ids = re.findall(r"submitted with SLURM jobid (\d+)", head_log(folder))
    return ids[-1] if ids else None


def run_id(folder: Path, every: bool = False) -> str:
    """The SLURM job name of the folder's last run (`every`: of all its runs, comma-separated)."""
    ids = re.findall(r"SLURM run ID: (\S+)", head_log(folder))
    if not ids:
        tail = "".join(head_log(folder).splitlines(keepends=True)[-30:])
        raise SystemExit(f"slurm_faults: no run of {folder} reached SLURM; its log ends:\n{tail}")
    return ",".join(ids) if every else ids[-1]


def resumed(folder: Path) -> bool:
    logs = (folder / "results/quick/logs").rglob("synthetic_train/*.log")
    return any("resuming from step" in p.read_text() for p in logs)


def sacct_states(name: str) -> list[tuple[str, str, str]]:
    """Every record of the run's jobs, requeued incarnations included: (JobID, State, Timelimit);
    a state may read 'CANCELLED by 0'."""
    out = subprocess.run(["sacct", "-X", "-D", "-n", "-P", "--name", name, "-S", "now-1days",
                          "-o", "JobID,State,Timelimit"], capture_output=True, text=True).stdout
    return [tuple(line.split("|")) for line in out.splitlines() if line]


def queued(name: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "--name", name, "-o", "%i %T"],
                         capture_output=True, text=True).stdout
    return out.split("\n")[:-1]


def whole_files(folder: Path) -> list[str]:
    """Problems: parquet files under the results that cannot be read whole."""
    problems = []
    for path in (folder / "results").rglob("*.parquet"):
        try:
            pq.read_table(path)
        except Exception as err:  # noqa: BLE001 (any failure to read is the finding)
            problems.append(f"{path} is not a whole parquet file: {err}")
    return problems


def finished(run: tuple[subprocess.Popen, float], timeout: float) -> int:
    proc, _ = run
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise SystemExit(f"slurm_faults: the run did not end within {timeout:.0f} s") from None


def outcome(name: str, folder: Path, reference: Path, code: int, extra: list[str]) -> list[str]:
    """The common checks at the end of a scenario; its problems, each prefixed by `name`."""
    problems = list(extra)
    if code != 0:
        problems.append(f"the run ended with exit status {code} (see {folder}/head*.log)")
    if not resumed(folder):
        problems.append("no training log says 'resuming from step'")
    if not same_data(reference / "results/quick", folder / "results/quick"):
        problems.append("its data differ from the uninterrupted run's")
    problems += whole_files(folder)
    log(f"{name}: {'OK' if not problems else 'FAILED'}; SLURM records: "
        f"{sacct_states(run_id(folder, every=True))}")
    return [f"{name}: {p}" for p in problems]


Reference = Callable[[str], Path]  # "short" | "long" -> the uninterrupted run's folder


def requeue(folder: Path, profile: Path, config: Path, reference: Reference) -> list[str]:
    run = start(folder, profile, config)
    wait_for("checkpoint", lambda: checkpoint(folder), 900)  # queued behind the others
    job = job_id(folder)
    subprocess.run(["scontrol", "requeue", job], check=True)
    log(f"requeue: job {job} requeued after its first checkpoint")
    code = finished(run, 1200)
    records = sacct_states(run_id(folder))
    extra = [] if any(state == "REQUEUED" for _, state, _ in records) else [
        f"no REQUEUED record: {records}"]
    return outcome("requeue", folder, reference("short"), code, extra)


def time_limit(folder: Path, profile: Path, config: Path, reference: Reference) -> list[str]:
    settings = yaml.safe_load((profile / "config.yaml").read_text())
    settings["retries"] = 3
    settings.setdefault("set-resources", {}).update(
        {rule: {"runtime": "attempt"} for rule in TRAIN_RULES})
    timed = folder / "profile"
    shutil.copytree(profile, timed)  # the partitions file too
    (timed / "config.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    code = finished(start(folder, timed, config), 1800)
    records = sacct_states(run_id(folder))
    timed_out = [limit for _, state, limit in records if state == "TIMEOUT"]
    completed = [limit for _, state, limit in records if state == "COMPLETED"]
    extra = []
    if not timed_out:
        extra.append(f"no job hit its time limit: {records}")
    elif not completed or max(completed) <= min(timed_out):  # HH:MM:SS compares as text
        extra.append(f"no later attempt with a longer limit completed: {records}")
    return outcome("time limit", folder, reference("long"), code, extra)


def stop_head(folder: Path, profile: Path, config: Path, reference: Reference,
              signum: signal.Signals) -> list[str]:
    run = start(folder, profile, config)
    wait_for("checkpoint", lambda: checkpoint(folder), 900)  # queued behind the others
    sent = time.monotonic()
    run[0].send_signal(signum)
    code = finished(run, STOP_LIMIT_S + 120)
    took = time.monotonic() - sent
    log(f"{signum.name}: the head exited with status {code} {took:.0f} s after the signal")
    extra = [f"the head took {took:.0f} s to exit (limit {STOP_LIMIT_S})"
             ] if took > STOP_LIMIT_S else []
    time.sleep(5)  # scancel is asynchronous: give slurmctld a moment
    left = queued(run_id(folder))
    if left:
        extra.append(f"jobs left in the queue: {left}")
    extra += whole_files(folder)
    rerun = finished(start(folder, profile, config), 1200)
    return outcome(signum.name, folder, reference("short"), rerun, extra)


def slurmd_stopped(folder: Path, profile: Path, config: Path, reference: Reference,
                   restart: Callable[[], None]) -> list[str]:
    run = start(folder, profile, config)
    wait_for("checkpoint", lambda: checkpoint(folder), 900)  # queued behind the others
    pid = int(Path("/run/local-slurm/slurmd.pid").read_text())
    subprocess.run(["kill", "-TERM", str(pid)], check=True)
    log(f"slurmd (pid {pid}) stopped under job {job_id(folder)}")

    def node_down() -> str:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True)
        return "down" in out.stdout and out.stdout.strip()

    log(f"node state: {wait_for('node DOWN', node_down, SLURMD_TIMEOUT_S * 6)}; records: "
        f"{sacct_states(run_id(folder))}")
    restart()
    log("slurmd started again")
    code = finished(run, 1200)
    if code != 0:
        log(f"slurmd: the run ended with status {code}; running it again")
        code = finished(start(folder, profile, config), 600)
    records = sacct_states(run_id(folder, every=True))
    extra = []
    if not any(state == "NODE_FAIL" for _, state, _ in records):
        extra.append(f"the job was not failed by the node's loss: {records}")
    if len({job for job, _, _ in records}) > 1:  # SLURM's requeue and a resubmission at once
        extra.append(f"more than one SLURM job trained the model: {records}")
    return outcome("slurmd stopped", folder, reference("long"), code, extra)


def reference_run(work: Path, config: Path) -> Path:
    folder = work / f"reference_{config.stem}"
    local = start(folder, ROOT / "profiles/workstation", config)
    if finished(local, 1800) != 0:
        raise SystemExit(f"slurm_faults: the uninterrupted local run failed, see {folder}")
    log(f"uninterrupted local run ({config.stem}) done")
    return folder


SCENARIOS = ("requeue", "sigterm", "sigint", "slurmd", "time_limit")


# Run together (their waits overlap: a requeued job's hold, time limits, heads exiting), then
# the one that takes the node down, alone (it fails every job on the node).
TOGETHER = ("requeue", "time_limit", "sigterm", "sigint")
ALONE = ("slurmd",)


def faults(work: Path, restart: Callable[[], None], chosen: list[str]) -> list[str]:
    """Run the `chosen` scenarios, each in its own folder under `work`, those of TOGETHER at
    the same time (with the uninterrupted reference runs), then those of ALONE; their
    problems."""
    profile = local_profile(work)
    configs = {"short": overlay(work, **SHORT), "long": overlay(work, **LONG)}
    pool = ThreadPoolExecutor(max_workers=len(SCENARIOS) + 2)
    refs = {size: pool.submit(reference_run, work, config) for size, config in configs.items()}

    def ref(size: str) -> Path:
        return refs[size].result()

    scenarios = {
        "requeue": lambda: requeue(work / "requeue", profile, configs["short"], ref),
        "sigterm": lambda: stop_head(work / "sigterm", profile, configs["short"], ref,
                                     signal.SIGTERM),
        "sigint": lambda: stop_head(work / "sigint", profile, configs["short"], ref,
                                    signal.SIGINT),
        "slurmd": lambda: slurmd_stopped(work / "slurmd", profile, configs["long"], ref,
                                         restart),
        "time_limit": lambda: time_limit(work / "time_limit", profile, configs["long"], ref),
    }
    problems = []
    with pool:
        for phase in (TOGETHER, ALONE):
            running = [pool.submit(scenarios[name]) for name in phase if name in chosen]
            problems += [p for future in running for p in future.result()]
    return problems


def report(problems: list[str], chosen: list[str]) -> int:
    for line in problems:
        log(f"FAIL: {line}")
    if not problems:
        log(f"OK: {len(chosen)} faults injected ({', '.join(chosen)}); every run ended "
            "with data equal to an uninterrupted run")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, default=list(SCENARIOS),
                        help="run these scenarios only (default: all)")
    work, keep, args = scratch_folder(__doc__.splitlines()[0], "slurm-faults", parser)
    try:
        with local_cluster(work, slurmd_timeout=str(SLURMD_TIMEOUT_S),
                           fake_gpus=str(FAKE_GPUS)) as restart:
            return report(faults(work, restart, args.only), args.only)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
