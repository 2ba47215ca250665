"""The CIFAR retrace (repdist_retrace.cifar) without the authors' code: in
float64 a stack of seeds takes the same steps as each seed alone, and one thread the same as
two, to float64's rounding; the table it prints is read back from its JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Two computations (a stack or one model, one thread or two) sum in other orders: after two
# Adam steps in float64 they part by a few thousand ulps (2.2e-16) of each tensor at most.
FLOAT64_STEPS = 1e-12


@pytest.mark.slow  # ~100 s on 2 cores: `make test-slow` (CI) runs it
def test_float64_stack_and_threads_agree_to_rounding(tmp_path):
    out = tmp_path / "retrace.json"
    res = subprocess.run(
        [sys.executable, "-m", "repdist_retrace.cifar", "--float64", "--steps", "2",
         "--at", "1", "2", "--seeds", "0", "1", "--stacked", "--n-train", "64", "--n-test", "32",
         "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    labels = sorted(r["comparison"] for r in rows)
    assert labels == ["rounding: ours threads 2 vs 1", "stacked vs alone", "stacked vs alone"]
    for row in rows:
        for step in ("1", "2"):
            for group in row["tensors"][step].values():
                if isinstance(group, dict):
                    assert group["max_rel"] <= FLOAT64_STEPS, (row["comparison"], step)
        assert row["max_loss_diff"] <= FLOAT64_STEPS
        assert row["final"]["d_llv"] <= FLOAT64_STEPS
    assert "stacked vs alone" in res.stdout
