import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def random_model(rng, n=300, k=6, m=2, f_scale=2.0, g_scale=1.5):
    """Embeddings and unembeddings with varied log-odds scales, well away from degeneracy."""
    f = rng.normal(size=(n, m)) * f_scale
    g = rng.normal(size=(k, m)) * g_scale
    return f, g


def perturbed(rng, f, g, noise=0.3):
    return f + noise * rng.normal(size=f.shape), g + noise * rng.normal(size=g.shape)


@pytest.fixture(autouse=True, scope="session")
def _flush_subnormals_as_jobs_do():
    """Tests compute as the pipeline's jobs do: every job flushes subnormal floats to zero
    (repdist.runlog.job_log; why: repdist.cpu). Without it, tiny test networks spend most of
    their time on the CPU's subnormal slow path (a CIFAR toy run: 12 s instead of 0.8 s)."""
    from repdist.cpu import flush_subnormals

    flush_subnormals()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def quick_outputs(tmp_path_factory):
    """The quick DAG, run once per session in a scratch folder (never touching ./results)."""
    work = tmp_path_factory.mktemp("quick")
    snakemake = str(Path(sys.executable).parent / "snakemake")
    res = subprocess.run(
        [snakemake, "--cores", "2", "--configfile", str(ROOT / "config.quick.yaml"),
         "-s", str(ROOT / "Snakefile"), "--directory", str(work)],
        capture_output=True, text=True, timeout=1500,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return work / "results" / "quick"


@pytest.fixture
def crash_after(monkeypatch):
    """crash_after(n): the training loss raises KeyboardInterrupt (a simulated kill) after n
    batches; call the returned `restore()` to train normally again."""
    from repdist.training import loop

    real = loop.batch_nll

    def arm(n_batches):
        calls = {"n": 0}

        def crashing(*args):
            calls["n"] += 1
            if calls["n"] > n_batches:
                raise KeyboardInterrupt("simulated kill")
            return real(*args)

        monkeypatch.setattr(loop, "batch_nll", crashing)
        return lambda: monkeypatch.setattr(loop, "batch_nll", real)

    return arm
