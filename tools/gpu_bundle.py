"""`make gpu-bundle`: pack what a lent GPU machine needs to run `make bench-gpu` as it is, offline.

Such a machine (the ones lent to this project: python3 with torch, numpy, pandas, pyarrow,
matplotlib, scipy, pyyaml and more, no Snakemake, no network, at most 64 MiB carried) cannot run
`make venv`. The bundle, a folder `.gpu-bundle/` beside the project (git-ignored), holds:

- `wheels/`: the distributions the benchmark imports that the GPU machine's image lacks (found by
  importing benchmarks/gpu_paper.py here and subtracting GPU_IMAGE), at this venv's versions,
  built for CPython 3.12 on manylinux x86-64; today none are missing, and the list says so;
- `run.sh`: installs those wheels offline into a folder beside a shim of the Makefile's venv (a
  `bin/python` that runs the machine's python3 with them and `src/` on the path, and the venv's
  `.installed` mark), then runs `make bench-gpu VENV=<shim>` (the same command line without
  make), within a time limit (BUDGET, default 19m), and copies the JSON to $OUT when set;
  `run.sh --smoke` runs the benchmark's CPU smoke mode (what tests/test_gpu_bundle.py runs here);
- `MANIFEST.txt`: what is inside, and the size that travels with the project.

On this workplace: `make gpu-bundle`, then the device tool with carry [".gpu-bundle"] and
the command `bash .gpu-bundle/run.sh`.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "benchmarks/gpu_paper.py"
LIMIT_BYTES = 64 * 2**20  # what the device tool carries: the project and the bundle together
PYTHON_VERSION = "3.12"  # the GPU machines' python3
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
# The GPU machines' image as last read (KINDS.md of the device tool, 2026-11-17): distributions
# it holds, by normalised name. A distribution here is not carried.
GPU_IMAGE = frozenset("""
absl-py accelerate attrs certifi charset-normalizer click cloudpickle contourpy cycler filelock
fonttools fsspec hypothesis idna jinja2 joblib kiwisolver markupsafe matplotlib mpmath networkx
numpy packaging pandas pillow pip pluggy psutil pyarrow pygments pyparsing pytest python-dateutil
pytz pyyaml requests scikit-learn scipy setuptools six sympy tabulate threadpoolctl torch tqdm
triton typing-extensions tzdata urllib3 wheel wrapt
""".split())

RUN_SH = r"""#!/usr/bin/env bash
# `make bench-gpu` on a machine without network whose python3 has torch (tools/gpu_bundle.py).
#   bash .gpu-bundle/run.sh [--smoke]     PYTHON (default python3), BUDGET (default 19m), OUT
set -euo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$bundle")
py=$(command -v "${PYTHON:-python3}")
shim=$(mktemp -d)
mkdir -p "$shim/bin" "$shim/site"
if compgen -G "$bundle/wheels/*.whl" >/dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --target "$shim/site" \
        "$bundle"/wheels/*.whl
fi
cat >"$shim/bin/python" <<EOF
#!/bin/sh
PYTHONPATH="$shim/site:$root/src\${PYTHONPATH:+:\$PYTHONPATH}" exec "$py" "\$@"
EOF
chmod +x "$shim/bin/python"
touch "$shim/.installed"    # the Makefile's venv, made: `make bench-gpu` runs as it is
cd "$root"
probe='import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
echo "gpu-bundle: $("$shim/bin/python" -c "$probe")"
status=0
if command -v make >/dev/null; then
    timeout "${BUDGET:-19m}" make bench-gpu VENV="$shim" BENCH_ARGS="$*" || status=$?
else
    timeout "${BUDGET:-19m}" "$shim/bin/python" benchmarks/gpu_paper.py \
        --json results/benchmarks/gpu_paper.json "$@" || status=$?
fi
if [[ $status -eq 124 ]]; then
    echo "gpu-bundle: stopped at the time limit (${BUDGET:-19m}); no JSON written" >&2
fi
if [[ -n ${OUT:-} && -f results/benchmarks/gpu_paper.json ]]; then
    cp results/benchmarks/gpu_paper.json "$OUT/"
fi
exit "$status"
"""


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_distributions(python: str = sys.executable) -> dict[str, str]:
    """{distribution: version} of what importing the benchmark loads, in `python`'s environment."""
    probe = f"""
import importlib.metadata as md, importlib.util, json, sys
sys.path.insert(0, {str(BENCHMARK.parent)!r})  # as when run as a script
before = {{m.split('.')[0] for m in sys.modules}}
spec = importlib.util.spec_from_file_location("gpu_paper", {str(BENCHMARK)!r})
spec.loader.exec_module(importlib.util.module_from_spec(spec))
tops = {{m.split('.')[0] for m in sys.modules}} - before
owners = md.packages_distributions()
dists = {{d for t in tops for d in owners.get(t, [])}}
print(json.dumps({{d: md.version(d) for d in dists}}))
"""
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"gpu-bundle: importing {BENCHMARK} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def missing(needed: dict[str, str], present: frozenset[str] = GPU_IMAGE) -> dict[str, str]:
    """The needed distributions the GPU image lacks (this project itself travels as source)."""
    return {d: v for d, v in sorted(needed.items())
            if normalise(d) not in present and normalise(d) != "repdist"}


def download(wanted: dict[str, str], folder: Path) -> None:
    """Wheels of `wanted` for the GPU machines' python (binary only; pure wheels fit any)."""
    for name, version in wanted.items():
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation",
               "cp", *sum([["--platform", p] for p in PLATFORMS], []), "-d", str(folder),
               f"{name}=={version}"]
        subprocess.run(cmd, check=True)


def project_bytes() -> int:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.split(b"\0")
    return sum((ROOT / f.decode()).stat().st_size for f in files
               if f and (ROOT / f.decode()).is_file())


def pack(out: Path, fetch: bool = True) -> dict[str, object]:
    """Write the bundle into `out` (replaced); what it holds."""
    if out.exists():
        shutil.rmtree(out)
    (out / "wheels").mkdir(parents=True)
    carried = missing(imported_distributions())
    if carried and fetch:
        download(carried, out / "wheels")
    (out / "run.sh").write_text(RUN_SH)
    (out / "run.sh").chmod(0o755)
    wheels = sorted(p.name for p in (out / "wheels").glob("*.whl"))
    size = project_bytes() + sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    summary = {"carried": carried, "wheels": wheels, "travels_bytes": size,
               "limit_bytes": LIMIT_BYTES}
    lines = [f"bench-gpu bundle (tools/gpu_bundle.py), for python {PYTHON_VERSION} with torch",
             "wheels: " + (", ".join(wheels) or "none: the GPU image holds every distribution "
                           "the benchmark imports"),
             f"project and bundle together: {size / 2**20:.1f} MiB of {LIMIT_BYTES / 2**20:.0f}"]
    (out / "MANIFEST.txt").write_text("\n".join(lines) + "\n")
    if size > LIMIT_BYTES:
        raise SystemExit(f"gpu-bundle: {size / 2**20:.1f} MiB would travel, over the limit")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".gpu-bundle")
    parser.add_argument("--no-fetch", action="store_true",
                        help="write run.sh and the manifest, download no wheels")
    args = parser.parse_args()
    summary = pack(args.out, fetch=not args.no_fetch)
    print((args.out / "MANIFEST.txt").read_text(), end="")
    if summary["carried"] and args.no_fetch:
        print(f"not downloaded (--no-fetch): {summary['carried']}")


if __name__ == "__main__":
    main()
