"""`make test-kernels`: the tests that compare numbers, under the float kernels of other CPUs. No
test, and no decision of a measure, may rest on one CPU's rounding.

The tests are pytest's `numerics` marker. Each configuration is an environment that OpenBLAS,
numpy and torch read at start-up, probed before its tests; the exit status is 1 if any failed."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from repdist_dev.checkout import ROOT

NUMERICS = "numerics and not slow and not gpu"  # the tests every configuration runs
NUMPY_GROUPS = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"
# what threadpoolctl reports for each OPENBLAS_CORETYPE (a DYNAMIC_ARCH build names the kernel
# set it took: Zen's are Haswell's; Prescott's are reported under the older core's name)
OPENBLAS_CORES = {"Haswell": {"Haswell"}, "Zen": {"Zen", "Haswell"},
                  "Prescott": {"Prescott", "Katmai"}, "SkylakeX": {"SkylakeX"}}
PROBE = """
import json, numpy, torch
from threadpoolctl import threadpool_info
from numpy._core._multiarray_umath import __cpu_features__ as features
blas = [i.get("architecture") for i in threadpool_info() if i["internal_api"] == "openblas"]
print(json.dumps({"openblas": blas, "numpy_off": sorted(k for k, v in features.items()
                  if not v), "avx512f": bool(features.get("AVX512F")),
                  "avx2": bool(features.get("AVX2")),
                  "torch": torch.backends.cpu.get_cpu_capability()}))
"""


@dataclass(frozen=True)
class Kernels:
    """One configuration: its name, its environment and what the probe must then report."""

    name: str
    env: dict[str, str]
    openblas: str | None = None  # the OPENBLAS_CORETYPE it sets
    numpy_off: tuple[str, ...] = ()  # numpy dispatch groups it turns off
    torch: str | None = None  # torch's capability it asks for
    needs: str = ""  # a CPU feature without which it is skipped: "avx512f", "avx2"


# OpenBLAS is numpy's and scipy's BLAS and LAPACK; NUMPY_GROUPS are numpy 2.4's AVX2 and AVX-512
# dispatch groups; MKL (torch's BLAS) is held to torch's instructions by MKL_ENABLE_INSTRUCTIONS.
def configurations() -> list[Kernels]:
    """Each library's kernels in turn, then all at their baseline at once (the oldest x86-64 CPU
    the wheels run on); one the CPU cannot run is skipped, saying why."""
    groups = tuple(NUMPY_GROUPS.split())
    blas = [Kernels(f"openblas-{core.lower()}", {"OPENBLAS_CORETYPE": core}, openblas=core,
                    needs="avx512f" if core == "SkylakeX" else "avx2" if core in
                    ("Haswell", "Zen") else "")
            for core in OPENBLAS_CORES]
    return [*blas,
            Kernels("numpy-baseline", {"NPY_DISABLE_CPU_FEATURES": NUMPY_GROUPS},
                    numpy_off=groups),
            Kernels("torch-default", {"ATEN_CPU_CAPABILITY": "default",
                                      "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}, torch="DEFAULT"),
            Kernels("torch-avx2", {"ATEN_CPU_CAPABILITY": "avx2",
                                   "MKL_ENABLE_INSTRUCTIONS": "AVX2"}, torch="AVX2", needs="avx2"),
            Kernels("all-baseline", {"OPENBLAS_CORETYPE": "Prescott",
                                     "NPY_DISABLE_CPU_FEATURES": NUMPY_GROUPS,
                                     "ATEN_CPU_CAPABILITY": "default",
                                     "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
                    openblas="Prescott", numpy_off=groups, torch="DEFAULT")]


def probe(env: dict[str, str]) -> dict:
    """What the libraries report in a fresh interpreter under `env` (MKL's choice cannot be
    read back: its variable is set, not checked)."""
    out = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, **env},
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def mismatch(config: Kernels, seen: dict) -> str:
    """Why the libraries did not take this configuration ("" when they did)."""
    problems = []
    if config.openblas and not set(seen["openblas"]) <= OPENBLAS_CORES[config.openblas]:
        problems.append(f"OpenBLAS reports {seen['openblas']}, not {config.openblas}")
    if config.openblas and not seen["openblas"]:
        problems.append("no OpenBLAS loaded by numpy")
    off = [g for g in config.numpy_off if g not in seen["numpy_off"]]
    if off:
        problems.append(f"numpy still dispatches {off}")
    if config.torch and seen["torch"] != config.torch:
        problems.append(f"torch's capability is {seen['torch']}, not {config.torch}")
    return "; ".join(problems)


def run_one(config: Kernels, pytest_args: list[str]) -> dict:
    """Probe, then run the numerics tests under `config`: its row of the summary."""
    here = probe({})
    if config.needs and not here[config.needs]:
        return {"name": config.name, "status": "skipped", "seconds": 0.0,
                "detail": f"this CPU has no {config.needs.upper()}"}
    seen = probe(config.env)
    why = mismatch(config, seen)
    if why:
        return {"name": config.name, "status": "failed", "seconds": 0.0,
                "detail": f"not taken: {why}"}
    start = time.perf_counter()
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", NUMERICS,
                            "-p", "no:cacheprovider", *pytest_args], cwd=ROOT,
                           env={**os.environ, **config.env}, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    last = (tests.stdout.strip().splitlines() or ["(no output)"])[-1]
    if tests.returncode != 0:
        print(tests.stdout[-6000:], tests.stderr[-2000:], sep="\n", flush=True)
    return {"name": config.name, "status": "passed" if tests.returncode == 0 else "failed",
            "seconds": round(seconds, 1), "detail": f"{last} (OpenBLAS {seen['openblas']}, "
            f"torch {seen['torch']})"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated configuration names")
    parser.add_argument("--list", action="store_true", help="list the configurations")
    args, rest = parser.parse_known_args(argv)
    chosen = configurations()
    if args.list:
        for c in chosen:
            print(c.name, " ".join(f"{k}={v}" for k, v in c.env.items()))
        return 0
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {c.name for c in chosen}
        if unknown:
            parser.error(f"unknown configurations {sorted(unknown)}; --list names them")
        chosen = [c for c in chosen if c.name in names]
    rows = []
    for config in chosen:
        rows.append(run_one(config, [a for a in rest if a != "--"] or ["-n", "auto"]))
        row = rows[-1]
        print(f"{row['name']:18} {row['status']:8} {row['seconds']:7.1f} s  {row['detail']}",
              flush=True)
    total = sum(r["seconds"] for r in rows)
    print(f"make test-kernels: {sum(r['status'] == 'passed' for r in rows)} passed, "
          f"{sum(r['status'] == 'skipped' for r in rows)} skipped, "
          f"{sum(r['status'] == 'failed' for r in rows)} failed in {total:.0f} s")
    return 1 if any(r["status"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
