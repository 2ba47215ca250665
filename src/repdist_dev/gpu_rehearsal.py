"""`make gpu-check-rehearsal` and `make gpu-run-rehearsal`: the GPU machine's run, on this CPU.

That machine gets the checkout with `.gpu-bundle/` and runs `bash .gpu-bundle/run.sh check` or
`run-synthetic` (docs/gpu.md). It has its own Python: no Snakemake beside it, no network, often no
`git`. Whatever would break there breaks here first; the steps are numbered at their functions.
`--keep DIR` keeps the copy, the stand-in and the output there."""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repdist_dev.checkout import ROOT, SHARED
from repdist_dev.gpu_bundle import DEFAULT_IMAGE, normalise, requirement_closure

HIDDEN = ("git", "snakemake")  # commands the GPU machine is not promised (and their git-* kin)
CPU_BUDGET_S = 1800  # the check's budget here: every GPU test runs on 2 CPU cores
RUN_BUDGET_S = 1800  # run-synthetic's limit here: the quick size on 2 CPU cores, with room


# Step 1: the bundle, packed as `make gpu-bundle` packs it, in a copy of the checkout (prepare).
def copy_checkout(dest: Path) -> None:
    """The checkout's files as they would be carried: tracked and new-not-ignored, no .git."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, capture_output=True,
                           check=True).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in names)):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)


def image_distributions(python: str) -> dict[str, md.Distribution]:
    """The image's distributions present in this venv, with everything they require on
    `python` (a real image installs its packages' requirements), by normalised name."""
    installed = {normalise(d.metadata["Name"]): d for d in md.distributions()}
    found: dict[str, md.Distribution] = {}
    for name in sorted(DEFAULT_IMAGE & set(installed)):
        for dist in requirement_closure(name, python):
            key = normalise(dist)
            if key in installed and key not in {normalise(h) for h in HIDDEN}:
                found[key] = installed[key]
    return found


# Step 2: a throwaway Python stands in for the machine's: torch and DEFAULT_IMAGE's packages with
# what they require, and no `snakemake` script.
def stand_in_python(folder: Path) -> Path:
    """A venv of this machine's interpreter holding the image's packages only (links into the
    project's venv); its python."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python3"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig."
                                "get_paths()['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for dist in image_distributions(version).values():
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        origin = Path(str(dist.locate_file("")))
        for top in tops:
            if (origin / top).exists() and not (site / top).exists() and top != "bin":
                (site / top).symlink_to(origin / top)
    return python


# Step 3: `PATH` leads to that Python and to this machine's commands less `git` and any `snakemake`,
# and the network is cut (`unshare -n`: a network namespace of its own, only loopback).
def hidden_path(folder: Path, python: Path) -> str:
    """A PATH of the stand-in's bin and every command of this PATH but git's and Snakemake's
    (and none of a venv's)."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        where = Path(entry)
        if not where.is_dir() or (where.parent / "pyvenv.cfg").exists():
            continue
        for tool in where.iterdir():
            name = tool.name
            if any(name == h or name.startswith(f"{h}-") for h in HIDDEN):
                continue
            if not (folder / name).exists() and os.access(tool, os.X_OK) and tool.is_file():
                (folder / name).symlink_to(tool)
    return os.pathsep.join([str(python.parent), str(folder)])


def offline_prefix() -> list[str]:
    """The command that cuts the network: unshare into a network namespace of its own (as root,
    or mapping this user to root in a user namespace)."""
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        if shutil.which("unshare") and subprocess.run([*prefix, "true"],
                                                      capture_output=True).returncode == 0:
            return prefix
    raise SystemExit("gpu-check-rehearsal: cannot cut the network here (unshare -n and -rn "
                     "refused); --network runs it with the network")


def verdict(out: Path) -> list[str]:
    """What in the record is not as a passing GPU run's would be."""
    records = sorted(out.glob("cpu-toy-*.json"))
    if len(records) != 1:
        return [f"expected one record in {out}, found {[r.name for r in records]}"]
    record = json.loads(records[0].read_text())
    wrong = [f"record {record['status']}"] if record["status"] != "complete" else []
    wrong += [f"part {p}: {v['status']} ({v['note']})" for p, v in record["parts"].items()
              if v["status"] != "ok"]
    wrong += [f"test {t['name']}: {t['outcome']}" for t in record["tests"]
              if t["outcome"] not in ("passed", "skipped")]
    wrong += [f"candidate {c['name']}: {c['status']} ({c['note']})"
              for c in record["candidates"] if c["status"] != "ok"]
    wrong += [f"candidate {c['name']}: a check FAILS" for c in record["candidates"]
              if any(k["passes"] is False for k in c["checks"])]
    wrong += [f"measure {m['name']}: {m['status']}, passes {m['passes']}"
              for m in record["measures"] if m["status"] != "ok" or m["passes"] is False]
    return wrong


def skipped(out: Path) -> list[str]:
    """The GPU tests the record shows skipped, with why (on a CPU the sync-debug tests; without
    the authors' files their two comparisons): said, never counted as passed."""
    return [f"{t['name']}: {t['message'].strip().splitlines()[-1] if t['message'] else ''}"
            for r in sorted(out.glob("cpu-toy-*.json"))
            for t in json.loads(r.read_text())["tests"] if t["outcome"] == "skipped"]


def quick_overlay(path: Path) -> Path:
    """`make run-synthetic` at the quick size, one overlay after config.synthetic.yaml:
    config.quick.yaml less its language models, PRH's study and the follow-up's SUB (Hugging Face
    stand-ins a GPU image need not hold; run-synthetic at paper scale runs none of them) and
    CIFAR-100 (off in run-synthetic too), with config.synthetic.yaml's contrastive patch."""
    import yaml

    quick = yaml.safe_load((ROOT / "config.quick.yaml").read_text())
    synthetic = yaml.safe_load((ROOT / "config.synthetic.yaml").read_text())
    for section in ("lm", "prh"):
        quick.pop(section)
    quick["logit_distance"]["sub"]["enabled"] = False
    quick["logit_distance"]["cifar100"]["enabled"] = False
    quick["roeder"]["cpc"]["patch"] = synthetic["roeder"]["cpc"]["patch"]
    path.write_text("# run-synthetic at the quick size (repdist_dev.gpu_rehearsal)\n"
                    + yaml.safe_dump(quick, sort_keys=False))
    return path


def prepare(work: Path, network: bool) -> tuple[Path, Path, dict[str, str], list[str]]:
    """The copy of the checkout with its bundle, the output folder, the environment (the
    stand-in Python, PATH without git or snakemake, OUT) and the prefix that cuts the
    network."""
    repo, out = work / "repo", work / "out"
    out.mkdir(parents=True)
    copy_checkout(repo)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([sys.executable, "-m", "repdist_dev.gpu_bundle", "--out",
                    str(repo / ".gpu-bundle"), "--python-version", version, "--authors-code",
                    str(SHARED / "authors-code"), "--authors-checkpoints",
                    str(SHARED / "authors-checkpoints")], check=True)
    python = stand_in_python(work / "python")
    env = {k: v for k, v in os.environ.items()  # nothing of this venv or of a calling make
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX", "MAKEFLAGS",
                        "MAKELEVEL", "MFLAGS")}
    env.update(PATH=hidden_path(work / "bin", python), OUT=str(out))
    print(f"gpu-rehearsal: a copy of the checkout, python {python} (no snakemake beside it), "
          f"no git, {'with' if network else 'no'} network", flush=True)
    return repo, out, env, [] if network else offline_prefix()


def call(cmd: list[str], repo: Path, env: dict[str, str]) -> tuple[int, float]:
    """Run one command in the copy; its exit status and wall time."""
    print(f"gpu-rehearsal: {' '.join(cmd)}", flush=True)
    start = time.monotonic()
    status = subprocess.run(cmd, cwd=repo, env=env).returncode
    return status, time.monotonic() - start


# Step 4, `--what check` (the default): run.sh check in the copy, the toy check on the CPU, its
# files into OUT, with a budget in which every part finishes here (run.sh's limit above it). It
# fails (exit 1) when the command fails or the record is not a passing run's (verdict).
def rehearse_check(work: Path, network: bool, check_args: list[str]) -> int:
    repo, out, env, prefix = prepare(work, network)
    env.update(REPDIST_GPU_TESTS_DEVICE="cpu", BUDGET=f"{CPU_BUDGET_S + 120}s")
    status, wall = call([*prefix, "bash", ".gpu-bundle/run.sh", "check", "--budget",
                         str(CPU_BUDGET_S), *check_args], repo, env)
    wrong = ([f"run.sh check exited {status}"] if status else []) + verdict(out)
    return concluded("gpu-check-rehearsal", [wall], wrong, "every part ok, every row ok",
                     skipped(out))


def concluded(name: str, walls: list[float], wrong: list[str], ok: str,
              unrehearsed: list[str] = ()) -> int:
    """Print a rehearsal's wall times, what FAILS, what it skipped and, failing nothing, `ok`;
    its exit status."""
    print(f"{name}: {len(walls)} call(s) took {' + '.join(f'{w:.0f}' for w in walls)} s, "
          "install included")
    for line in wrong:
        print(f"{name}: FAILS: {line}")
    for line in unrehearsed:
        print(f"{name}: skipped, not rehearsed: {line}")
    if not wrong:
        print(f"{name}: ok: {ok}")
    return 1 if wrong else 0


def run_verdict(out: Path, calls: int = 1) -> list[str]:
    """What in run.sh run-synthetic's record (repdist_dev.run_record) is not as a finished run's
    would be, after `calls` calls (2: the first cut at its limit, the second resuming)."""
    records = sorted(out.glob("cpu-*-run-synthetic.json"))
    if len(records) != 1:
        return [f"expected one record in {out}, found {[r.name for r in records]}"]
    r = json.loads(records[0].read_text())["run_synthetic"]
    wrong = [f"record {r['status']}"] if r["status"] != "complete" else []
    wrong += [f"{r['missing_jobs']} jobs left"] if r["missing_jobs"] != 0 else []
    wrong += [f"failed: {', '.join(r['failed_rules'])}"] if r["failed_rules"] else []
    wrong += [f"note {k}: {v}" for k, v in r["notes"].items()]
    made = r["calls"]
    if len(made) != calls:
        wrong.append(f"{len(made)} calls recorded, {calls} made")
    elif calls > 1 and not made[0]["cut"]:
        wrong.append(f"the first call was not cut (exit {made[0]['exit']})")
    if made and made[-1]["exit"] != 0:
        wrong.append(f"the last call exited {made[-1]['exit']}")
    if abs(r["wall_s"] - sum(c["seconds"] for c in made)) > 0.5:
        wrong.append(f"wall_s {r['wall_s']} is not the calls' sum")
    if not r["jobs_by_rule"] or not r["job_seconds"] > 0:
        wrong.append("no job times")
    if not r["training"]:
        wrong.append("no training job")
    wrong += [f"training job {t['job']}: steps/s {t['steps_per_s']}" for t in r["training"]
              if not (t["steps_per_s"] or 0) > 0]
    wrong += [f"training job {t['job']}: no step graphs recorded" for t in r["training"]
              if not t["graphs"]]
    pc, theirs = r["paper_comparison"], r["authors"]
    if pc is None or sum(pc["counts"].values()) != pc["rows"] or not pc["rows"]:
        wrong.append(f"paper comparison {pc}")
    if theirs is None or not theirs["rows"]:
        wrong.append(f"authors' table {theirs}")
    return wrong


# Step 5, `--what run-synthetic`: run.sh run-synthetic at the quick size (quick_overlay). With
# `--cut S` a first call is cut at S seconds and a second must resume and finish the run. It fails
# when the last call fails or the record is not a finished run's (run_verdict).
def rehearse_run(work: Path, network: bool, args: list[str], cut: float | None) -> int:
    repo, out, env, prefix = prepare(work, network)
    cmd = [*prefix, "bash", ".gpu-bundle/run.sh", "run-synthetic",
           f"CONFIG={quick_overlay(work / 'quick-synthetic.yaml')}", *args]
    # the first call cut at its limit, as a GPU machine's 10 minutes cut it, then the rest
    budgets = ([f"{cut:g}s"] if cut is not None else []) + [f"{RUN_BUDGET_S}s"]
    statuses, walls = zip(*(call(cmd, repo, {**env, "BUDGET": b}) for b in budgets),
                          strict=True)
    wrong = ([f"the first call exited {statuses[0]}, not 124 (cut)"]
             if cut is not None and statuses[0] != 124 else [])
    wrong += [f"run.sh run-synthetic exited {statuses[-1]}"] if statuses[-1] else []
    wrong += run_verdict(out, len(statuses))
    return concluded("gpu-run-rehearsal", list(walls), wrong,
                     "the run complete, every job done, its record whole")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("check", "run-synthetic"), default="check",
                        help="the command rehearsed: run.sh check (default) or run-synthetic "
                             "at the quick size")
    parser.add_argument("--cut", type=float, metavar="SECONDS",
                        help="run-synthetic: cut the first call after SECONDS (its BUDGET), "
                             "then check that a second call resumes and finishes the run")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument("--network", action="store_true", help="do not cut the network")
    parser.add_argument("args", nargs="*", help="passed to run.sh check or run-synthetic "
                                                "(after --)")
    args = parser.parse_args()

    def rehearse(work: Path) -> int:
        if args.what == "check":
            return rehearse_check(work, args.network, args.args)
        return rehearse_run(work, args.network, args.args, args.cut)

    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=False)
        sys.exit(rehearse(args.keep))
    with tempfile.TemporaryDirectory(prefix="gpu-rehearsal-") as work:
        sys.exit(rehearse(Path(work)))


if __name__ == "__main__":
    main()
