"""The GPU-facing paths on a fake accelerator, on a CPU: one step of each training loop (the
synthetic stacked MLP and the CIFAR stacked ResNet through training/loop.py, the LM loop,
distillation's objective), extraction (classifier and causal LM) and a resume from a checkpoint,
on a device whose tensors raise when they meet a CPU tensor, as CUDA's do (tests/fake_device.py
says how: PyTorch's PrivateUse1 backend with FakeTensors). The controls show that it catches a
mismatch, in a bare operation and in the training loop's batch loss."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).with_name("fake_device.py")
from conftest import once_per_session
from fake_device import CASES  # beside this file: tests/ is on pytest's path


def run_harness() -> dict:
    """Every case in one process of its own (the backend it registers is for good)."""
    res = subprocess.run([sys.executable, str(HARNESS)], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """The harness's outcomes, run once for the session (however many workers share it)."""
    result = once_per_session(tmp_path_factory, "fake-device", run_harness)
    if "skip" in result:
        pytest.skip(f"no fake accelerator in this torch build: {result['skip']}")
    return result


@pytest.mark.parametrize("case", list(CASES))
def test_on_a_fake_accelerator(outcomes, case):
    assert outcomes[case] == "ok", outcomes[case]
