"""Regenerate requirements.lock from pyproject.toml (`make lock`; needs uv and PyPI).

The lock holds every package `make venv` installs except torch. Each is pinned with `==` and the
sha256 hashes of all its files on PyPI, resolved for CPython 3.11 on Linux x86-64. The venv and the
per-rule conda envs run the same versions. An existing lock is uv's preference: pins stay unless a
constraint or pyproject.toml moves them (LOCK_ARGS=--upgrade takes the newest versions allowed).
Standard library only, so the system python3 can run it."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from repdist_dev.checkout import ROOT

# Constraints: torch==TORCH_VERSION (so that torch's own dependencies are resolved for the torch
# the venv gets) and every version envs/*.yaml pins. Not emitted: torch (`make venv` installs it
# from $(TORCH)) and the CUDA runtime PyPI's Linux torch wheel requires (nvidia-*, cuda-*,
# triton), which a CPU wheel does not need and a GPU build brings itself.
LOCK = ROOT / "requirements.lock"
EXTRAS = ("workflow", "test")
PYTHON_VERSION = "3.11"
PLATFORM = "x86_64-manylinux_2_28"
INDEX = "https://pypi.org/simple"
# conda-forge name -> PyPI name, where they differ
CONDA_TO_PYPI = {"pytorch": "torch", "matplotlib-base": "matplotlib"}
# what PyPI's Linux torch wheel pulls for CUDA: never in the lock
CUDA_ONLY = re.compile(r"^(nvidia-.+|cuda-.+|triton)$")
CONDA_PIN = re.compile(r"^\s*-\s*([A-Za-z0-9_.-]+)=([0-9][^=\s]*)\s*$")


def conda_pins() -> dict[str, str]:
    """PyPI name -> version for every package envs/*.yaml pins (python left out); the env files
    must agree with each other."""
    pins: dict[str, tuple[str, str]] = {}
    for env in sorted((ROOT / "envs").glob("*.yaml")):
        for line in env.read_text().splitlines():
            m = CONDA_PIN.match(line)
            if not m or m.group(1) == "python":
                continue
            name = CONDA_TO_PYPI.get(m.group(1), m.group(1)).lower()
            if name in pins and pins[name][0] != m.group(2):
                sys.exit(f"lock: {env.name} pins {m.group(1)}={m.group(2)} but "
                         f"{pins[name][1]} pins {pins[name][0]}")
            pins[name] = (m.group(2), env.name)
    return {name: version for name, (version, _) in pins.items()}


def compile_args(uv: str, constraints: Path) -> list[str]:
    return [uv, "pip", "compile", "pyproject.toml", *[a for e in EXTRAS for a in ("--extra", e)],
            "--python-version", PYTHON_VERSION, "--python-platform", PLATFORM,
            "--default-index", INDEX, "--no-config", "-c", str(constraints)]


# uv resolves twice: once without hashes to learn the names of torch's CUDA packages for this torch
# version, then with --generate-hashes and those names (and torch) left out.
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", default="uv", help="the uv executable")
    parser.add_argument("--torch-version", required=True, help="the Makefile's TORCH_VERSION")
    parser.add_argument("--upgrade", action="store_true", help="newest versions allowed")
    args = parser.parse_args()

    pins = conda_pins()
    if pins.get("torch", args.torch_version) != args.torch_version:
        sys.exit(f"lock: envs/torch.yaml pins pytorch={pins['torch']} but the Makefile's "
                 f"TORCH_VERSION is {args.torch_version}: make them equal first")
    pins["torch"] = args.torch_version
    uv_version = subprocess.run([args.uv, "--version"], capture_output=True, text=True,
                                check=True).stdout.split()[1]

    with tempfile.TemporaryDirectory() as tmp:
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
        base = compile_args(args.uv, constraints)
        first = subprocess.run([*base, "--no-header", "--no-annotate", "--quiet"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout
        names = [line.split("==")[0] for line in first.splitlines() if "==" in line]
        left_out = ["torch", *sorted(n for n in names if CUDA_ONLY.match(n))]
        out = Path(tmp) / "lock.txt"
        if LOCK.exists() and not args.upgrade:
            out.write_text(LOCK.read_text())  # uv keeps the pins of an existing output file
        subprocess.run([*base, "--generate-hashes", "--custom-compile-command", "make lock",
                        *(["--upgrade"] if args.upgrade else []),
                        *[a for n in left_out for a in ("--no-emit-package", n)],
                        "--quiet", "-o", str(out)], cwd=ROOT, check=True)
        # annotations name the constraints file: a stable name instead of the temporary path
        body = out.read_text().replace(str(constraints), "constraints").splitlines(keepends=True)

    while body and body[0].startswith("#"):  # uv's own header; ours says more
        body.pop(0)
    def wrapped(words: list[str]) -> str:
        return textwrap.fill(" ".join(words), 96, initial_indent="#   ", subsequent_indent="#   ",
                             break_on_hyphens=False)

    header = f"""\
# requirements.lock: the exact versions `make venv` installs (pip install --require-hashes).
# Do not edit by hand: `make lock` regenerates it (repdist_dev.lock, uv {uv_version}, PyPI only):
#   uv pip compile pyproject.toml --extra {' --extra '.join(EXTRAS)} \\
#     --python-version {PYTHON_VERSION} --python-platform {PLATFORM} --generate-hashes \\
#     -c <constraints> --no-emit-package <torch and its CUDA runtime>
# constraints (the Makefile's TORCH_VERSION and the pins of envs/*.yaml):
{wrapped([f"{n}=={v}" for n, v in sorted(pins.items())])}
# left out (make venv installs torch from $(TORCH), whose build brings its own runtime):
{wrapped(left_out)}
"""
    LOCK.write_text(header + "".join(body))
    entries = sum(1 for line in body if "==" in line)
    print(f"lock: {LOCK.name}: {entries} packages, {len(left_out)} left out "
          f"({', '.join(left_out[:3])}{', ...' if len(left_out) > 3 else ''})")


if __name__ == "__main__":
    main()
