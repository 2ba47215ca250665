"""Device selection: GPU tags decided without a GPU or torch, and a job promised a GPU that
finds none fails at once; subnormal floats flushed to zero in jobs."""

import re
import subprocess
import sys

import pytest

from repdist.pipeline.gpu_plan import cuda_present, uses_gpu
from repdist.training.devices import DeviceError, resolve_device


def test_gpu_tags(monkeypatch):
    assert uses_gpu("cuda") and not uses_gpu("cpu")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not cuda_present() and not uses_gpu("auto")
    with pytest.raises(ValueError, match="device must be one of"):
        uses_gpu("gpu")


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without a GPU")
def test_a_job_configured_for_cuda_fails_at_once_without_a_gpu():
    with pytest.raises(DeviceError, match="synthetic.device is 'cuda' but this job sees no GPU"):
        resolve_device("cuda", "synthetic.device")
    assert resolve_device("auto", "synthetic.device").type == "cpu"
    assert resolve_device("cpu", "synthetic.device").type == "cpu"


def test_flushing_subnormals_in_a_fresh_process():
    """In a process of its own (the bits stay set for the rest of a process): before, a
    subnormal survives arithmetic; after, it is zero, also in a thread started afterwards and
    in torch."""
    code = (
        "import threading, numpy as np, torch\n"
        "from repdist.pipeline.subnormals import flush_subnormals, subnormals_flushed\n"
        "assert not subnormals_flushed()\n"
        "how = flush_subnormals()\n"
        "seen = []\n"
        "t = threading.Thread(target=lambda: seen.append(subnormals_flushed())); t.start(); t.join()\n"
        "tiny = torch.tensor([1e-39], dtype=torch.float32) * 1.0\n"
        "print(how, subnormals_flushed(), seen[0], float(tiny[0]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    how, main, thread, tiny = out.stdout.split()
    if how == "":  # a CPU or platform without the control bits: nothing to check
        pytest.skip("flushing subnormals is not supported here")
    assert (main, thread, float(tiny)) == ("True", "True", 0.0)


def test_job_log_flushes_and_says_so(tmp_path):
    code = (
        "from repdist.pipeline.joblog import job_log\n"
        "from repdist.pipeline.subnormals import subnormals_flushed\n"
        f"with job_log({str(tmp_path / 'job.log')!r}):\n"
        "    assert subnormals_flushed()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "subnormal floats flushed to zero: mxcsr" in (tmp_path / "job.log").read_text()


JOB = (
    "import atexit, pathlib, sys\n"
    "from repdist.pipeline.joblog import job_log\n"
    "atexit.register(lambda: pathlib.Path(sys.argv[2]).write_text('torn down'))\n"
    "{inject}"
    "print('before the job', flush=False)\n"
    "with job_log(sys.argv[1]) as log:\n"
    "    log.info('working')\n"
    "    {work}\n"
)
SNAKEMAKE_OBJECT = (  # what Snakemake injects into a script job, with the fields the log reads
    "from snakemake.iocontainers import Wildcards\nfrom snakemake.script import Snakemake\n"
    "snakemake = Snakemake.__new__(Snakemake)\nsnakemake.rule = 'toy_rule'\n"
    "snakemake.wildcards = Wildcards(fromdict={'K': '4', 'W': '16'})\n")


@pytest.mark.parametrize("inject,work,ended_at_once", [
    (SNAKEMAKE_OBJECT, "pass", True),  # a Snakemake script job, done: no teardown
    ("", "pass", False),  # anything else ends as Python does
    (SNAKEMAKE_OBJECT, "raise ValueError('bad input')", False),  # a failing job: its traceback
])
def test_a_finished_snakemake_job_ends_at_once(tmp_path, inject, work, ended_at_once):
    """pipeline.joblog.end_finished_job: a Snakemake job's process ends as its job log closes,
    status 0 and every stream flushed, without the interpreter's teardown (atexit handlers
    included); a failing job still exits 1 with its traceback in its log."""
    log, marker = tmp_path / "job.log", tmp_path / "teardown"
    code = JOB.format(inject=inject, work=work)
    out = subprocess.run([sys.executable, "-c", code, str(log), str(marker)],
                         capture_output=True, text=True, timeout=120)
    failing = "raise" in work
    assert out.returncode == (1 if failing else 0), out.stderr
    text = log.read_text()
    assert "before the job" in out.stdout and "working" in text
    assert re.search(r"INFO finished in [\d.]+ s, CPU [\d.]+ s$", text, re.M), text
    assert ("INFO rule: toy_rule K=4 W=16" in text) is bool(inject)
    assert marker.exists() is not ended_at_once
    if failing:
        assert "ValueError: bad input" in log.read_text()


@pytest.mark.slow  # ~10 s: `make test-slow` (CI) runs it
def test_gpu_benchmark_runs_end_to_end_in_its_cpu_smoke_mode(tmp_path):
    """`make bench-gpu` needs a GPU; its --smoke mode runs every part tiny on the CPU, so the
    script is known to work where no GPU is lent."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "gpu.json"
    res = subprocess.run([sys.executable, str(root / "benchmarks/gpu_paper.py"), "--smoke",
                          "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["smoke"] and set(result["cifar"]) == {"one_model", "stacked_10", "original_way"}
    assert all(r["steps_per_s"] > 0 for r in result["cifar"].values())
    assert result["synthetic_grid"]["extrapolated"] and len(result["synthetic_grid"]["jobs"]) == 2
    assert result["whole_dag"]["measured"] is False
