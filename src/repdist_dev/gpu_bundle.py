"""`make gpu-bundle`: pack what an offline GPU machine needs to run the project's GPU work.
That work is `make gpu-check`, `run-synthetic`, `bench-gpu`, `test-gpu` and a whole DAG.

Such a machine has a Python with a CUDA build of torch, but no network and no Snakemake, so it
cannot run `make venv`. The bundle, `.gpu-bundle/` beside the project (git-ignored), holds
`wheels/`, the authors' code and checkpoints, `run.sh` and `MANIFEST.txt`. Copy the checkout with
it to the GPU machine and run `bash .gpu-bundle/run.sh check` there (docs/gpu.md)."""

from __future__ import annotations

import argparse
import ast
import importlib.metadata as md
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

from repdist_dev.checkout import ROOT, SHARED

# what the bundle's commands import, their closures carried (SCRIPTS: the modules they import)
MODULES = ["repdist_gpucheck.check", "repdist_gpucheck.candidates", "repdist_gpucheck.measures",
           "repdist_gpucheck.profiling", "repdist_dev.run_record"]
SCRIPTS = [ROOT / "benchmarks/gpu_paper.py"]
LIMIT_MIB = 64  # the budget of the project and the bundle together (MANIFEST.txt says the size)
PYTHON_VERSION = "3.12"  # the GPU machine's python3, by default
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
# What a CUDA-torch image's Python usually holds (the distributions, by normalised name), when
# --image-packages does not say: a distribution here is not carried.
DEFAULT_IMAGE = frozenset("""
absl-py accelerate attrs certifi charset-normalizer click cloudpickle contourpy cycler filelock
fonttools fsspec hypothesis idna jinja2 joblib kiwisolver markupsafe matplotlib mpmath networkx
numpy packaging pandas pillow pip pluggy psutil pyarrow pygments pyparsing pytest python-dateutil
pytz pyyaml requests scikit-learn scipy setuptools six sympy tabulate threadpoolctl torch tqdm
triton typing-extensions tzdata urllib3 wheel wrapt
""".split())
# what `make test-gpu` compares our GPU-trained seeds with (tests/test_gpu.py)
AUTHORS_CHECKPOINTS = [
    f"{date}trained_radial_classification_SmallMLP_classes{k}_seed{s}_features32_fd2_data20000"
    "_lr0_0001_steps15000"
    for k, date in ((4, "2025-04-22"), (6, "2024-12-06")) for s in range(5)]

# run.sh run-synthetic's overlay when the bundle carries all their checkpoints (from the checkout)
AUTHORS_OVERLAY = """# make gpu-bundle: their checkpoints in the bundle, for run.sh run-synthetic
authors_models:
  root: {folder}/authors-checkpoints
"""

# `run.sh` installs the wheels offline beside a shim of the Makefile's venv, then runs one command
# within a time limit; a run-synthetic call the limit cuts is resumed by the same command again.
RUN_SH = r"""#!/usr/bin/env bash
# The project's GPU work on a machine without network whose python3 has torch
# (repdist_dev.gpu_bundle):
#   bash .gpu-bundle/run.sh [check|bench-gpu|test-gpu|run-synthetic|dag|--smoke] [ARGS]
#   PYTHON (default python3), BUDGET (default 19m; check 9m, run-synthetic 510s), OUT (where
#   results go)
set -euo pipefail
begun=$(date +%s)
bundle=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$bundle")
py=$(command -v "${PYTHON:-python3}")
shim=$(mktemp -d)
mkdir -p "$shim/bin" "$shim/site"
if compgen -G "$bundle/wheels/*.whl" >/dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --target "$shim/site" \
        "$bundle"/wheels/*.whl
fi
echo "gpu-bundle: the wheels installed in $(( $(date +%s) - begun )) s"
cat >"$shim/bin/python" <<EOF
#!/bin/sh
PYTHONPATH="$shim/site:$root/src\${PYTHONPATH:+:\$PYTHONPATH}" exec "$py" "\$@"
EOF
printf '#!/bin/sh\nexec "%s/bin/python" -m snakemake "$@"\n' "$shim" >"$shim/bin/snakemake"
chmod +x "$shim/bin/python" "$shim/bin/snakemake"
touch "$shim/.installed"    # the Makefile's venv, made: make runs as it is
export PATH="$shim/bin:$PATH"
if [[ -d $bundle/authors-code ]]; then export REPDIST_AUTHORS_CODE="$bundle/authors-code"; fi
if [[ -d $bundle/authors-checkpoints ]]; then
    export REPDIST_AUTHORS_CHECKPOINTS="$bundle/authors-checkpoints"
fi
cd "$root"
what=bench-gpu
case "${1:-}" in check|bench-gpu|test-gpu|run-synthetic|dag) what=$1; shift ;; esac
torch_version='' gpu=''
if [[ $what != check ]]; then  # the check probes torch itself: one start of torch fewer
    probe='import torch; c = torch.cuda.is_available(); print("torch", torch.__version__,
"cuda", c, "gpu", torch.cuda.get_device_name(0) if c else "none")'
    found=$("$shim/bin/python" -c "$probe" | tail -n 1) || true
    echo "gpu-bundle: $found"
    torch_version=$(echo "$found" | cut -d' ' -f2)
    gpu=${found#* gpu }
    if [[ $gpu == none ]]; then gpu=''; fi
fi
if [[ $what == run-synthetic ]]; then
    # make's CONFIG: the overlay naming the authors' checkpoints the bundle carries (their models
    # in the run: authors_models.enabled is auto), then any CONFIG=... among ARGS
    configs=()
    if [[ -f $bundle/authors.yaml ]]; then configs+=("$(basename "$bundle")/authors.yaml"); fi
    passed=()
    for arg in "$@"; do
        case $arg in CONFIG=*) read -ra more <<<"${arg#CONFIG=}"
            configs+=(${more[@]+"${more[@]}"}) ;;
            *) passed+=("$arg") ;; esac
    done
    # a call its time limit cut may have left Snakemake's lock (KILLed while stopping): the
    # earlier call has ended, so it is stale (a run still writing this outdir would stop at
    # once, at its run lock); the profile's rerun-incomplete redoes its cut jobs, and training
    # jobs resume from their checkpoints
    if compgen -G ".snakemake/locks/*" >/dev/null; then
        echo "gpu-bundle: releasing the Snakemake lock an earlier call left"
        "$shim/bin/snakemake" --unlock --profile profiles/workstation --cores 1 \
            --configfile config.synthetic.yaml ${configs[@]+"${configs[@]}"} >/dev/null || true
    fi
fi
status=0
# the check keeps its own budget (480 s) and ends its parts itself; its limit only backs that
# up (SIGTERM to the whole group: the check ends its parts and keeps its record; KILL 20 s on).
# run-synthetic's leaves, within 10 minutes, Snakemake's stop (seconds) and the record (its
# dry run): a second call resumes.
case $what in check) limit=${BUDGET:-9m} ;; run-synthetic) limit=${BUDGET:-510s} ;;
    *) limit=${BUDGET:-19m} ;; esac
start=$(date +%s)
case $what in
    check)  # make gpu-check's command itself, so that its exit status comes back as it is
        timeout -k 20 "$limit" "$shim/bin/python" -m repdist_gpucheck \
            --out "${OUT:-results/gpu-check}" "$@" || status=$? ;;
    bench-gpu)
        timeout -k 20 "$limit" make bench-gpu VENV="$shim" BENCH_ARGS="$*" || status=$? ;;
    test-gpu)
        timeout -k 20 "$limit" make test-gpu VENV="$shim" || status=$? ;;
    run-synthetic)  # every core (the Makefile's CORES) and every GPU (the profile)
        timeout -k 20 "$limit" make run-synthetic VENV="$shim" CONFIG="${configs[*]-}" \
            ${passed[@]+"${passed[@]}"} || status=$? ;;
    dag)
        timeout -k 20 "$limit" "$shim/bin/snakemake" --profile profiles/workstation "$@" \
            || status=$? ;;
esac
echo "gpu-bundle: $what took $(( $(date +%s) - start )) s, $(( $(date +%s) - begun )) s in all" \
    "(exit $status)"
if [[ $status -eq 124 ]]; then
    echo "gpu-bundle: stopped at the time limit ($limit)" >&2
fi
if [[ $what == run-synthetic ]]; then  # its record, a cut call's too (repdist_dev.run_record)
    "$shim/bin/python" -m repdist_dev.run_record --exit "$status" --started "$start" \
        --begun "$begun" --budget "$limit" --gpu "$gpu" --torch "$torch_version" \
        --config "${configs[*]-}" ${OUT:+--out "$OUT"} || {
        echo "gpu-bundle: the run's record could not be written" >&2
        if [[ $status -eq 0 ]]; then status=1; fi
    }
fi
if [[ -n ${OUT:-} ]]; then
    if [[ -f results/benchmarks/gpu_paper.json ]]; then cp results/benchmarks/gpu_paper.json "$OUT/"; fi
    if [[ $what == dag ]]; then
        for folder in results results/quick; do
            if [[ -d $folder/benchmarks ]]; then
                "$shim/bin/python" -m repdist job-times "$folder" \
                    >"$OUT/job-times-$(basename "$folder").txt" 2>&1 || true
            fi
        done
    fi
fi
exit "$status"
"""


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Target:
    """The GPU machine's Python the bundle is for: its version, its distributions (normalised
    names), and the budget in MiB of the project and the bundle together."""

    python: str = PYTHON_VERSION
    image: frozenset[str] = DEFAULT_IMAGE
    limit_mib: float = LIMIT_MIB


def read_image(path: Path) -> frozenset[str]:
    """Distribution names from a file of `pip freeze` or `pip list --format freeze` lines
    (`name==version`, or names alone; comments and blank lines skipped)."""
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(normalise(re.split(r"[=<>~!@ ;\[]", line, maxsplit=1)[0]))
    if not names:
        raise SystemExit(f"gpu-bundle: {path} names no distribution")
    return frozenset(names)


def script_imports(path: Path) -> list[str]:
    """The modules a script imports at its top level (read, not run)."""
    tree = ast.parse(path.read_text())
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append(node.module)
    return [m for m in found if m != "__future__"]


def imported_distributions(python: str = sys.executable) -> dict[str, str]:
    """{distribution: version} of what importing the bundle's commands loads, in `python`'s
    environment."""
    modules = MODULES + [m for s in SCRIPTS for m in script_imports(s)] + ["psutil"]
    probe = f"""
import importlib, importlib.metadata as md, json, sys
before = {{m.split('.')[0] for m in sys.modules}}
for name in {modules!r}:  # psutil: the check ends a part's processes with it
    importlib.import_module(name)
tops = {{m.split('.')[0] for m in sys.modules}} - before
owners = md.packages_distributions()
dists = {{d for t in tops for d in owners.get(t, [])}}
print(json.dumps({{d: md.version(d) for d in dists}}))
"""
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"gpu-bundle: importing the bundle's commands failed:\n"
                         f"{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def requirement_closure(name: str, python: str = PYTHON_VERSION) -> dict[str, str]:
    """{distribution: version} of `name` and everything it requires on `python`, as installed
    here (`make venv` holds exactly what the lock pins)."""
    env = {**default_environment(), "python_version": python,
           "python_full_version": f"{python}.0", "extra": ""}
    found: dict[str, str] = {}
    todo = [name]
    while todo:
        dist = md.distribution(todo.pop())
        if normalise(dist.metadata["Name"]) in {normalise(n) for n in found}:
            continue
        found[dist.metadata["Name"]] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate(env):
                todo.append(req.name)
    return found


# `wheels/`: what the benchmarks import and Snakemake needs, less the image's (--image-packages),
# at this venv's versions, for that Python on manylinux x86-64.
def missing(needed: dict[str, str], present: frozenset[str] = DEFAULT_IMAGE) -> dict[str, str]:
    """The needed distributions the GPU image lacks (this project itself travels as source)."""
    return {d: v for d, v in sorted(needed.items())
            if normalise(d) not in present and normalise(d) != "repdist"}


def download(wanted: dict[str, str], folder: Path, python: str = PYTHON_VERSION) -> None:
    """Wheels of `wanted` for the GPU machine's `python` (binary only; pure wheels fit any)."""
    for name, version in wanted.items():
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--only-binary=:all:", "--python-version", python, "--implementation",
               "cp", *sum([["--platform", p] for p in PLATFORMS], []), "-d", str(folder),
               f"{name}=={version}"]
        got = subprocess.run(cmd, capture_output=True, text=True)
        if got.returncode != 0:  # no wheel on PyPI: build one (pure Python)
            built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                                    "-w", str(folder), f"{name}=={version}"],
                                   capture_output=True, text=True)
            if built.returncode != 0:
                raise SystemExit(f"gpu-bundle: no wheel of {name}=={version} for Python "
                                 f"{python}, and building one failed:\n{got.stderr[-1500:]}"
                                 f"{built.stderr[-1500:]}")
            print(f"gpu-bundle: {name}=={version}: no wheel on the index, built one here")


def copy_authors_files(out: Path, code: Path, checkpoints: Path) -> list[str]:
    """The authors' source tree and checkpoints, where given: all 76 SmallMLP checkpoints (then
    `authors.yaml`, the overlay that points `run.sh run-synthetic` at them) or, short of those,
    the ten test-gpu compares with (run-synthetic then leaves their models out); what was copied."""
    from repdist.models.authors import CHECKSUMS, read_checksums

    copied = []
    if (code / "src").is_dir():
        shutil.copytree(code, out / "authors-code", ignore=shutil.ignore_patterns(".git"))
        copied.append("authors-code")
    every = sorted(read_checksums(CHECKSUMS))
    for names in (every, AUTHORS_CHECKPOINTS):
        if all((checkpoints / n).is_file() for n in names):
            (out / "authors-checkpoints").mkdir()
            for name in names:
                shutil.copy2(checkpoints / name, out / "authors-checkpoints")
            copied.append(f"authors-checkpoints ({len(names)})")
            break
    if copied and copied[-1] == f"authors-checkpoints ({len(every)})":
        (out / "authors.yaml").write_text(AUTHORS_OVERLAY.format(folder=out.name))
        copied.append("authors.yaml")
    return copied


def project_bytes() -> int:
    """The checkout's tracked files, in bytes (what goes to the GPU machine beside the bundle)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.split(b"\0")
    return sum((ROOT / f.decode()).stat().st_size for f in files
               if f and (ROOT / f.decode()).is_file())


def pack(out: Path, fetch: bool = True, code: Path = SHARED / "authors-code",
         checkpoints: Path = SHARED / "authors-checkpoints",
         target: Target = Target()) -> dict[str, object]:
    """Write the bundle into `out` (replaced); what it holds."""
    if out.exists():
        shutil.rmtree(out)
    (out / "wheels").mkdir(parents=True)
    needed = {**imported_distributions(), **requirement_closure("snakemake", target.python)}
    carried = missing(needed, target.image)
    if carried and fetch:
        download(carried, out / "wheels", target.python)
    authors = copy_authors_files(out, code, checkpoints) if fetch else []
    (out / "run.sh").write_text(RUN_SH)
    (out / "run.sh").chmod(0o755)
    wheels = sorted(p.name for p in (out / "wheels").glob("*.whl"))
    size = project_bytes() + sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    summary = {"carried": carried, "wheels": wheels, "authors": authors, "travels_bytes": size,
               "limit_mib": target.limit_mib}
    lines = [f"GPU bundle (repdist_dev.gpu_bundle), for python {target.python} with torch",
             f"wheels ({len(wheels)}): " + (", ".join(wheels) or "none downloaded"),
             "the authors' files: " + (", ".join(authors) or "none (not found, or --no-fetch): "
                                       "test-gpu's two comparisons with them skip"),
             f"project and bundle together: {size / 2**20:.1f} MiB of {target.limit_mib:g}"]
    (out / "MANIFEST.txt").write_text("\n".join(lines) + "\n")
    if size > target.limit_mib * 2**20:
        raise SystemExit(f"gpu-bundle: {size / 2**20:.1f} MiB would go with the project, over "
                         f"the bundle's budget of {target.limit_mib:g} MiB (--limit-mib)")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".gpu-bundle")
    parser.add_argument("--no-fetch", action="store_true",
                        help="write run.sh and the manifest, download no wheels")
    parser.add_argument("--authors-code", type=Path, default=SHARED / "authors-code",
                        help="the authors' source tree (a clone of their repository)")
    parser.add_argument("--authors-checkpoints", type=Path,
                        default=SHARED / "authors-checkpoints",
                        help="a folder holding their trained SmallMLP checkpoints")
    parser.add_argument("--python-version", default=PYTHON_VERSION,
                        help="the GPU machine's Python, MAJOR.MINOR (default %(default)s)")
    parser.add_argument("--image-packages", type=Path,
                        help="what the GPU machine's Python holds, as `pip freeze` lists it "
                             "(default: a CUDA-torch image's usual set)")
    parser.add_argument("--limit-mib", type=float, default=LIMIT_MIB,
                        help="the most the project and bundle may weigh together, MiB")
    args = parser.parse_args()
    target = Target(args.python_version,
                    read_image(args.image_packages) if args.image_packages else DEFAULT_IMAGE,
                    args.limit_mib)
    summary = pack(args.out, fetch=not args.no_fetch, code=args.authors_code,
                   checkpoints=args.authors_checkpoints, target=target)
    print((args.out / "MANIFEST.txt").read_text(), end="")
    if summary["carried"] and args.no_fetch:
        print(f"not downloaded (--no-fetch): {summary['carried']}")


if __name__ == "__main__":
    main()
