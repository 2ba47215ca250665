"""`make test-slurm`: the quick DAG through a real SLURM cluster on localhost, checked against
a local run of the same DAG.

1. starts munge, MariaDB, slurmdbd, slurmctld and slurmd (local_slurm_start.sh: installs the
   Debian packages when missing; needs root) with a CPU partition and a GPU partition whose node
   carries a fake GPU, so `--gpus=1` jobs schedule on a GPU-less machine;
2. derives a profile from profiles/slurm/config.yaml in which only the partition and account
   names are replaced by the local cluster's (everything else is the shipped profile);
3. runs the quick DAG locally (profiles/workstation), then through SLURM, each in its own folder;
4. checks with `sacct` that every non-local job of the DAG ran as a SLURM job of this run and
   completed, that the GPU rule ran in the GPU partition with a GPU allocated, and that both runs
   hold the same data (`repdist diff`);
5. stops only the daemons step 1 started (by pid), also when a step fails.

Usage: python tests/slurm/slurm_check.py [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CPU_PARTITION, GPU_PARTITION, ACCOUNT = "debug", "gpu", "local"
CONFIGS = [ROOT / "config.quick.yaml"]
# The quick config trains the synthetic models (and Roeder's Fig. 3) with `device: auto`: through
# SLURM the profile's `gpu` line plans them for the GPU partition's nodes (the login node here
# has none; on the fake-GPU node they then train on its CPU, as the local run does, to the same
# data). The check fails if one of these is not planned so. (CIFAR-10's planning:
# tests/test_gpu_planning.py.)
EXPECTED_GPU_RULES = {"synthetic_train", "synthetic_train_variants", "distillation_train",
                      "bound_beyond_train", "roeder_cpc_train"}
FAKE_GPUS = 4  # on the node: GPU jobs of the faults' scenarios run side by side
STATUS_CHECK_S = 5  # the plugin's first status check after a submission (its default: 40)
# every torch job of both runs as on a GPU (repdist.io.host), as the test suite's quick DAG
GUARDED_JOBS = {"REPDIST_GUARD_HOST_COPIES": "1"}
RUNNING: list[subprocess.Popen] = []


def log(msg: str) -> None:
    print(f"[slurm_check {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def local_profile(work: Path) -> Path:
    """profiles/slurm with the partition and account names of the local cluster (its
    partitions.yaml's two partitions renamed) and quicker status checks; everything else as
    shipped."""
    shipped = ROOT / "profiles/slurm"
    profile = yaml.safe_load((shipped / "config.yaml").read_text())
    profile["default-resources"]["slurm_account"] = ACCOUNT
    # the plugin's first status check comes 40 s after a submission, later ones up to 180 s
    # apart: right for a real cluster's sacct, but the quick DAG's chains of second-long jobs
    # would wait on it here
    profile["slurm-init-seconds-before-status-checks"] = STATUS_CHECK_S
    partitions = yaml.safe_load((shipped / profile["slurm-partition-config"]).read_text())
    renamed = {}
    for name, limits in partitions["partitions"].items():
        renamed[GPU_PARTITION if limits.get("max_gpu", 0) > 0 else CPU_PARTITION] = limits
    folder = work / "profile"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    (folder / profile["slurm-partition-config"]).write_text(
        yaml.safe_dump({"partitions": renamed}, sort_keys=False))
    return folder


@contextlib.contextmanager
def local_cluster(work: Path, **knobs: str) -> Iterator[Callable[[], None]]:
    """The one-node cluster for the length of the block; only the daemons it started are
    stopped afterwards (with every job cancelled), also when the block fails. `knobs` are
    local_slurm_start.sh's LOCAL_SLURM_* variables (lower case, without the prefix). Yields a
    function that starts whichever daemon is not running (a stopped slurmd, say) again."""
    started = work / "started-daemons"
    started.write_text("")
    env = {**os.environ, "LOCAL_SLURM_ACCOUNTING": "1", "LOCAL_SLURM_ACCOUNT": ACCOUNT,
           "LOCAL_SLURM_PARTITIONS": f"{CPU_PARTITION} {GPU_PARTITION}",
           "LOCAL_SLURM_STARTED_FILE": str(started),
           **{f"LOCAL_SLURM_{k.upper()}": v for k, v in knobs.items()}}
    def start() -> None:
        subprocess.run(["bash", str(HERE / "local_slurm_start.sh")], env=env, check=True,
                       stdout=subprocess.DEVNULL)

    try:
        t0 = time.monotonic()
        start()
        log(f"cluster up in {time.monotonic() - t0:.0f} s; started by this check: "
            f"{started.read_text().split() or 'none'}")
        yield start
    finally:
        for proc in RUNNING:
            if proc.poll() is None:
                proc.terminate()
                proc.wait()
        subprocess.run(["bash", str(HERE / "local_slurm_stop.sh"), "--only", str(started),
                        "--cancel-jobs"])


def snakemake(*args: str, log_file: Path,
              configs: Sequence[Path] = CONFIGS) -> tuple[subprocess.Popen, float]:
    """Start snakemake (this interpreter's) with `args`, output to `log_file`."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), *args]
    cmd += ["--configfile", *map(str, configs)]  # one flag: a second would replace the first
    with open(log_file, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                env={**os.environ, **GUARDED_JOBS})
    RUNNING.append(proc)
    return proc, time.monotonic()


def finish(run: tuple[subprocess.Popen, float], log_file: Path) -> float:
    """Wait for a run started by `snakemake`; its wall time in seconds, or exit with its log."""
    proc, start = run
    code = proc.wait()
    if code != 0:
        tail = "".join(log_file.read_text().splitlines(keepends=True)[-40:])
        raise SystemExit(f"snakemake failed ({code}), {log_file}:\n{tail}")
    return time.monotonic() - start


def planned_jobs(work: Path, profile: Path, configs: Sequence[Path]) -> tuple[Counter, set[str]]:
    """Jobs per rule that the SLURM run plans as cluster jobs (target rules are local), and
    the rules whose jobs ask for a GPU: a dry run with the run's profile and configs, here, on a
    login node without a GPU."""
    from repdist_dev import dag_snapshot

    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-n",
         "--profile", str(profile), "--directory", str(work / "dry"),
         "--configfile", *map(str, configs)],
        capture_output=True, text=True, check=True,
    ).stdout
    local = {"all", "constructed_all", "synthetic_all", "cifar10_all", "beyond_all"}
    counts: Counter = Counter()
    gpu_rules: set[str] = set()
    for block in dag_snapshot.jobs(out):
        rule = block.splitlines()[0].split()[1].rstrip(":")
        if block.startswith("localrule") or rule in local:
            continue
        counts[rule] += 1
        if re.search(r"\bgpu=[1-9]", block):
            gpu_rules.add(rule)
    return counts, gpu_rules


def sacct_jobs(run_name: str) -> list[dict[str, str]]:
    fields = ["JobID", "JobName", "Comment", "Partition", "Account", "AllocTRES", "State",
              "Elapsed"]
    out = subprocess.run(
        ["sacct", "-X", "-P", "--name", run_name, "-S", "now-1days", "-o", ",".join(fields)],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = [dict(zip(fields, line.split("|"))) for line in out.splitlines()[1:] if line]
    for row in rows:
        m = re.match(r"rule_(\w+?)(_wildcards_.*)?$", row["Comment"])
        row["rule"] = m.group(1) if m else "?"
    return rows


def check_jobs(rows: list[dict[str, str]], planned: Counter, gpu_rules: set[str]) -> list[str]:
    problems = []
    if not EXPECTED_GPU_RULES <= gpu_rules:
        problems.append(f"planned without a GPU: {EXPECTED_GPU_RULES - gpu_rules} (the "
                        "profile's gpu line should plan them for GPU nodes)")
    ran = Counter(row["rule"] for row in rows if row["State"] == "COMPLETED")
    if ran != planned:
        problems.append(f"completed SLURM jobs per rule {dict(ran)} != planned {dict(planned)}")
    for row in rows:
        if row["State"] != "COMPLETED":
            problems.append(f"job {row['JobID']} ({row['rule']}): {row['State']}")
        want = GPU_PARTITION if row["rule"] in gpu_rules else CPU_PARTITION
        if row["Partition"] != want:
            problems.append(f"job {row['JobID']} ({row['rule']}) ran in {row['Partition']}, not {want}")
        has_gpu = "gres/gpu=1" in row["AllocTRES"]
        if has_gpu != (row["rule"] in gpu_rules):
            problems.append(f"job {row['JobID']} ({row['rule']}): AllocTRES {row['AllocTRES']}")
        if row["Account"] != ACCOUNT:
            problems.append(f"job {row['JobID']} ({row['rule']}): account {row['Account']}")
    return problems


def scratch_folder(description: str, prefix: str,
                   parser: argparse.ArgumentParser | None = None,
                   ) -> tuple[Path, bool, argparse.Namespace]:
    """Parse --work/--keep (and the options already in `parser`); the scratch folder, whether
    to keep it, and the parsed options. Needs root; SIGTERM (CI timeouts, kill) unwinds through `finally` blocks, so the
    daemons still get stopped."""
    parser = parser or argparse.ArgumentParser(description=description)
    parser.add_argument("--work", type=Path, help="scratch folder (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if os.geteuid() != 0:
        raise SystemExit(f"{prefix}: needs root (it installs and starts the SLURM daemons)")
    work = args.work or Path(tempfile.mkdtemp(prefix=f"repdist-{prefix}-"))
    work.mkdir(parents=True, exist_ok=True)
    return work, bool(args.keep or args.work), args


def same_data(a: Path, b: Path) -> bool:
    """`repdist diff a b` (its report printed): do the two result folders hold equal data?"""
    diff = subprocess.run([sys.executable, "-m", "repdist", "diff", str(a), str(b)],
                          capture_output=True, text=True)
    print(diff.stdout.strip() or diff.stderr.strip())
    return diff.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", action="store_true",
                        help="then inject slurm_faults.py's faults on the same cluster")
    parser.add_argument("--keep-runs", type=Path,
                        help="keep the two quick runs here (local/, slurm/) for the test suite "
                             "(REPDIST_QUICK_RUNS, tests/quick_runs.py)")
    work, keep, args = scratch_folder(__doc__.splitlines()[0], "slurm", parser)
    knobs = {"fake_gpus": str(FAKE_GPUS)}
    if args.faults:
        from slurm_faults import SLURMD_TIMEOUT_S
        knobs["slurmd_timeout"] = str(SLURMD_TIMEOUT_S)
    try:
        with local_cluster(work, **knobs) as restart:
            code = check_quick_dag(work)
            if code == 0 and args.keep_runs:
                # tests/ is not on this script's path: the module is run from its file
                keep_runs = runpy.run_path(str(ROOT / "tests" / "quick_runs.py"))["keep"]
                keep_runs({"local": work / "local", "slurm": work / "slurm"}, args.keep_runs)
                log(f"the two quick runs kept in {args.keep_runs}")
            if args.faults:
                from slurm_faults import SCENARIOS, faults, report

                code = report(faults(work / "faults", restart, list(SCENARIOS)),
                              list(SCENARIOS)) or code
            return code
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def check_quick_dag(work: Path) -> int:
    """Steps 2-4 of the module docstring; 0 when the SLURM run passes every check."""
    profile = local_profile(work)
    planned, gpu_rules = planned_jobs(work, profile, CONFIGS)
    log(f"quick DAG: {sum(planned.values())} cluster jobs planned, on GPUs: {sorted(gpu_rules)}")

    # one after the other: run at once they oversubscribe the cores (the CIFAR jobs use two
    # threads each) and both slow down several-fold
    local = snakemake("--profile", str(ROOT / "profiles/workstation"), "--cores", "2",
                      "--directory", str(work / "local"), log_file=work / "local.log")
    local_s = finish(local, work / "local.log")
    log(f"local run (profiles/workstation, --cores 2): {local_s:.0f} s")
    slurm = snakemake("--profile", str(profile), "--directory", str(work / "slurm"),
                      log_file=work / "slurm.log")
    slurm_s = finish(slurm, work / "slurm.log")
    log(f"SLURM run (profiles/slurm, partitions {CPU_PARTITION}/{GPU_PARTITION}): {slurm_s:.0f} s")

    m = re.search(r"SLURM run ID: (\S+)", (work / "slurm.log").read_text())
    if not m:
        raise SystemExit("slurm_check: no 'SLURM run ID' in the SLURM run's log")
    rows = sacct_jobs(m.group(1))
    print(f"{'JobID':>6} {'rule':28} {'Partition':9} {'State':9} {'Elapsed':8} AllocTRES")
    for row in rows:
        print(f"{row['JobID']:>6} {row['rule']:28} {row['Partition']:9} {row['State']:9} "
              f"{row['Elapsed']:8} {row['AllocTRES']}")
    problems = check_jobs(rows, planned, gpu_rules)

    if not same_data(work / "local/results/quick", work / "slurm/results/quick"):
        problems.append("the SLURM run's data differ from the local run's")
    for line in problems:
        log(f"FAIL: {line}")
    if problems:
        return 1
    log(f"OK: {len(rows)} SLURM jobs, all completed where planned; data equal to the local run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
