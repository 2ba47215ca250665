import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
# The paper's constants live in config.yaml only: tests take them from there, as the rules do.
PAPER_CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
# Every torch job of a DAG the tests run, as on a GPU (repdist.io.host): values reach numpy
# only through to_host. tests/slurm/slurm_check.py runs its quick DAGs so too.
GUARDED_JOBS = {"REPDIST_GUARD_HOST_COPIES": "1"}
# The one way a test starts Snakemake: as a module of this interpreter, so it is found wherever
# the interpreter finds its packages (no `snakemake` script need sit beside it: an offline GPU
# machine's Python with the bundle's wheels on its path has none).
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def train_config(section: str = "synthetic", **overrides):
    """A TrainConfig of config.yaml's `section`, with overrides."""
    from repdist.training.settings import train_config as from_config

    return from_config(PAPER_CONFIG, section, **overrides)


def train_data(train_d, test_d, codes):
    """TrainData from two radial data sets and the label codes."""
    from repdist.training.loop import TrainData

    return TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes)


def measure_settings() -> dict:
    return {k: PAPER_CONFIG["measures"][k] for k in ("lam", "dist_type", "sum_or_max")}


def kl_table_config(**overrides):
    """The KL table's settings as the rule builds them, with overrides."""
    from repdist.experiments.kl_table import KLTableConfig

    return KLTableConfig(**{**PAPER_CONFIG["kl_table"], **measure_settings(),
                            "seed": PAPER_CONFIG["seed"], **overrides})


def constructed_bound_config(num_classes, noise_level, **overrides):
    """One constructed classifier's sweep settings as the rule builds them, with overrides."""
    from repdist.experiments.constructed_bound import ConstructedBoundConfig

    shared = {k: v for k, v in PAPER_CONFIG["constructed"].items() if k != "classifiers"}
    return ConstructedBoundConfig(num_classes=num_classes, noise_level=noise_level,
                                  **{**shared, **measure_settings(),
                                     "seed": PAPER_CONFIG["seed"], **overrides})


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
    (repdist.pipeline.joblog.job_log; why: repdist.pipeline.subnormals). Without it, tiny test networks spend most of
    their time on the CPU's subnormal slow path (a CIFAR toy run: 12 s instead of 0.8 s)."""
    from repdist.pipeline.subnormals import flush_subnormals

    flush_subnormals()


@pytest.fixture(autouse=True, scope="session")
def _host_copies_guarded():
    """Every test runs the package's code as on a GPU: a tensor that reaches numpy anywhere in
    repdist but through repdist.io.host.to_host fails (np.asarray of a CUDA tensor raises; the
    first GPU run stopped so at step 0). Conversions in the tests' own code are left alone."""
    import repdist
    from repdist.io.host import host_copies_guarded

    with host_copies_guarded(scope=str(Path(repdist.__file__).parent)):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def quick_outputs(tmp_path_factory):
    """The quick DAG's results/quick: run once per session in a scratch folder (never touching
    ./results), every torch job under the host-copy guard, or the local run `make test-slurm`
    kept for this same workflow (REPDIST_QUICK_RUNS, repdist_dev.quick_runs)."""
    from repdist_dev.quick_runs import shared_run

    shared = shared_run("local")
    if shared is not None:
        return shared / "results" / "quick"
    work = tmp_path_factory.mktemp("quick")
    res = subprocess.run(
        [*SNAKEMAKE, "--cores", "2", "--configfile", str(ROOT / "config.quick.yaml"),
         "-s", str(ROOT / "Snakefile"), "--directory", str(work)],
        capture_output=True, text=True, timeout=1500, env={**os.environ, **GUARDED_JOBS},
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


@pytest.fixture(scope="module")
def device() -> str:
    """Where the `gpu`-marked tests run: CUDA (they skip without it), or what
    REPDIST_GPU_TESTS_DEVICE names (cpu: a check of the tests themselves, not a GPU result)."""
    forced = os.environ.get("REPDIST_GPU_TESTS_DEVICE")
    if forced:
        return forced
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here: `make test-gpu` runs these on one")
    return "cuda"
