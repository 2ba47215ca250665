"""The GPU bundle (repdist_dev.gpu_bundle): packed in a copy of the project, then run through its
own commands on this CPU: `bash .gpu-bundle/run.sh --smoke` (make bench-gpu's smoke mode), a
DAG planned through Snakemake, `make test-gpu` refused without a GPU. `make gpu-check-rehearsal`
(repdist_dev.gpu_rehearsal, in CI) runs `run.sh check` as an offline GPU machine would; here, what
that machine lacks is never assumed: no test or script finds a `snakemake` script beside the
interpreter, and the image's package list is read from a `pip freeze`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
from repdist_dev.gpu_bundle import DEFAULT_IMAGE, missing, read_image


def test_only_what_the_gpu_image_lacks_is_carried():
    needed = {"numpy": "2.3.0", "PyYAML": "6.0.2", "torch": "2.13.0", "repdist": "0.1",
              "snakemake": "9.27.1", "typing_extensions": "4.15.0", "Jinja2": "3.1.6"}
    assert missing(needed) == {"snakemake": "9.27.1"}
    assert missing(needed, frozenset()) == {k: v for k, v in sorted(needed.items())
                                            if k != "repdist"}
    assert {"torch", "numpy", "pandas", "pyarrow", "matplotlib", "scipy"} <= DEFAULT_IMAGE


def project_copy(dest: Path) -> Path:
    """The checkout as it would be copied: tracked and untracked-not-ignored files, as a git
    repo."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    return dest


@pytest.mark.slow  # ~1 min: `make test-slow` (CI) runs it
def test_the_packed_bundle_runs_make_bench_gpu_in_smoke_mode(tmp_path):
    repo = project_copy(tmp_path / "repo")
    pack = subprocess.run([sys.executable, "-m", "repdist_dev.gpu_bundle", "--out", ".gpu-bundle",
                           "--no-fetch"], cwd=repo, capture_output=True, text=True, timeout=300)
    assert pack.returncode == 0, pack.stderr[-2000:]
    manifest = (repo / ".gpu-bundle/MANIFEST.txt").read_text()
    assert "wheels (0): none downloaded" in manifest and "MiB of 64" in manifest

    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(out), "BUDGET": "9m"}
    run = subprocess.run(["bash", ".gpu-bundle/run.sh", "--smoke"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "gpu-bundle: torch" in run.stdout
    assert "benchmarks/gpu_paper.py --json results/benchmarks/gpu_paper.json --smoke" in run.stdout
    result = json.loads((out / "gpu_paper.json").read_text())
    assert result["smoke"] and result["device"] == "cpu"
    assert all(r["steps_per_s"] > 0 for r in result["cifar"].values())
    assert result["synthetic_grid"]["extrapolated"] and not result["whole_dag"]["measured"]

    # the other two commands, as far as a machine without a GPU takes them: a whole DAG
    # through Snakemake (planned only, -n), and make test-gpu refusing for want of a GPU
    dag = subprocess.run(["bash", ".gpu-bundle/run.sh", "dag", "-n", "--cores", "2",
                          "--configfile", "config.quick.yaml"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=600)
    assert dag.returncode == 0, dag.stdout[-2000:] + dag.stderr[-2000:]
    assert "This was a dry-run" in dag.stdout and "gpu-bundle: dag took" in dag.stdout
    if not __import__("torch").cuda.is_available():
        gpu = subprocess.run(["bash", ".gpu-bundle/run.sh", "test-gpu"], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=600)
        assert gpu.returncode != 0 and "make test-gpu: torch sees no CUDA GPU" in gpu.stdout


def test_an_image_package_list_is_read_from_pip_freeze(tmp_path):
    listing = tmp_path / "image.txt"
    listing.write_text("# the GPU machine\ntorch==2.11.0+cu130\nPyYAML==6.0.2\n\n"
                       "typing_extensions==4.15.0\nnvidia-cudnn-cu13 @ file:///wheels/x.whl\n")
    image = read_image(listing)
    assert image == {"torch", "pyyaml", "typing-extensions", "nvidia-cudnn-cu13"}
    assert missing({"torch": "2.13.0", "snakemake": "9.27.1"}, image) == {"snakemake": "9.27.1"}
    listing.write_text("# nothing\n")
    with pytest.raises(SystemExit, match="names no distribution"):
        read_image(listing)


def test_snakemake_is_started_through_the_interpreter_everywhere():
    """An offline GPU machine's Python runs Snakemake from the bundle's wheels on its path,
    with no `snakemake` script beside it: every test, tool, benchmark, package module and the Makefile start it
    as `python -m snakemake` (before: six tests and a tool looked beside sys.executable)."""
    pattern = re.compile(r"""(parent\s*/\s*["']snakemake["']|BIN\s*/\s*["']snakemake|"""
                         r"""\$\(BIN\)/snakemake|which\(["']snakemake)""")
    files = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("src/**/*.py"),
             *ROOT.glob("benchmarks/*.py"), *ROOT.glob("workflow/scripts/*.py"), ROOT / "Makefile"]
    found = [f"{f.relative_to(ROOT)}:{i}" for f in files
             for i, line in enumerate(f.read_text().splitlines(), 1)
             if pattern.search(line) and f.name != "test_gpu_bundle.py"]
    assert not found, found
    from conftest import SNAKEMAKE

    assert SNAKEMAKE == [sys.executable, "-m", "snakemake"]


def test_the_rehearsal_judges_a_record_and_names_what_it_skipped(tmp_path):
    """repdist_dev.gpu_rehearsal's verdict on a toy record: a failed test or a FAILS check is
    named; a skipped test is neither passed nor failed: it is listed with its reason."""
    from repdist_dev.gpu_rehearsal import skipped, verdict

    record = {"status": "complete", "parts": {"tests": {"status": "ok", "note": ""}},
              "tests": [{"name": "t_ok", "outcome": "passed", "seconds": 1.0, "message": ""},
                        {"name": "t_skip", "outcome": "skipped", "seconds": 0.0,
                         "message": "Skipped: REPDIST_AUTHORS_CODE not set\n"}],
              "candidates": [{"name": "c", "status": "ok", "note": "",
                              "checks": [{"passes": True}]}],
              "measures": [{"name": "m", "status": "ok", "passes": None}]}
    path = tmp_path / "cpu-toy-2026-11-27.json"
    path.write_text(json.dumps(record))
    assert verdict(tmp_path) == []
    assert skipped(tmp_path) == ["t_skip: Skipped: REPDIST_AUTHORS_CODE not set"]
    record["tests"][0]["outcome"] = "failed"
    record["candidates"][0]["checks"][0]["passes"] = False
    path.write_text(json.dumps(record))
    assert verdict(tmp_path) == ["test t_ok: failed", "candidate c: a check FAILS"]
