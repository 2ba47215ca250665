import contextlib
import os
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
    from repdist.experiments.constructed.kl_table import KLTableConfig

    return KLTableConfig(**{**PAPER_CONFIG["kl_table"], **measure_settings(),
                            "seed": PAPER_CONFIG["seed"], **overrides})


def constructed_bound_config(num_classes, noise_level, **overrides):
    """One constructed classifier's sweep settings as the rule builds them, with overrides."""
    from repdist.experiments.constructed.bound import ConstructedBoundConfig

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


def session_shared(tmp_path_factory) -> Path:
    """A scratch folder shared by every process of this test session: pytest-xdist's workers
    each have their own, side by side in the session's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_session(tmp_path_factory, name: str, compute):
    """`compute()` (a JSON value) once for the whole session, whichever process asks first;
    the others wait for it and read it (an expensive module fixture would otherwise run once
    in every pytest-xdist worker that gets one of its tests)."""
    import fcntl
    import json

    folder = session_shared(tmp_path_factory)
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / f"{name}.json"
        if not done.exists():
            value = compute()
            tmp = done.with_suffix(".tmp")
            tmp.write_text(json.dumps(value))
            tmp.replace(done)
        return json.loads(done.read_text())


def cli_in_process(*args, cwd, monkeypatch, capsys) -> tuple[int, str, str]:
    """`repdist ...` as its entry point runs it (repdist.cli.main), in this process: its exit
    status, stdout and stderr. The user's model folder it puts on sys.path and the module it
    imports from there are taken back."""
    from repdist.cli import main

    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    finally:
        for name in set(sys.modules) - before:
            if str(cwd) in (getattr(sys.modules[name], "__file__", None) or ""):
                del sys.modules[name]
    out, err = capsys.readouterr()
    return code, out, err


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


QUICK = "quick_outputs"  # the fixture of the tests that read the quick DAG's outputs


def pytest_collection_modifyitems(config, items):
    """The tests that read the quick DAG run last, so that the DAG, started beside the others
    (_quick_dag_beside), has finished by then."""
    items.sort(key=lambda item: QUICK in getattr(item, "fixturenames", ()))


def reads_the_quick_dag(session) -> bool:
    return any(QUICK in getattr(item, "fixturenames", ()) for item in session.items)


def sharing_the_cores(session) -> bool:
    """More than one process of this session computes at once: pytest-xdist's workers, or the
    quick DAG beside the tests."""
    from quick_runs import shared_run

    return bool(os.environ.get("PYTEST_XDIST_WORKER")) or (
        reads_the_quick_dag(session) and shared_run("local") is None)


@pytest.fixture(autouse=True, scope="session")
def _one_thread_when_sharing(request):
    """Where processes share the cores, each computes on one thread, and so do the commands the
    tests start: a multi-threaded step whose threads wait on each other at every operation
    while another process holds a core runs many times slower (a CIFAR test: 5 s alone, 73 s
    beside the quick DAG's two-thread jobs)."""
    if not sharing_the_cores(request.session):
        yield
        return
    try:  # numpy's BLAS (a machine without threadpoolctl keeps its threads)
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = lambda _: contextlib.nullcontext()  # noqa: E731

    saved = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    os.environ.update({k: "1" for k in THREAD_VARIABLES})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(threads)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# The niceness of pytest-xdist's workers beside the quick DAG: its jobs, which the tests that
# read its outputs wait for, come first on a busy core (a weight of 1024 against 335).
TESTS_NICE = 5


@pytest.fixture(autouse=True, scope="session")
def _quick_dag_beside(request, tmp_path_factory):
    """The quick DAG, started as the session's first test starts, beside the other tests, in a
    scratch folder (never touching ./results), when any selected test reads it and no kept run
    fits (REPDIST_QUICK_RUNS, tests/quick_runs.py). Under pytest-xdist the first worker
    starts it and every worker waits for the same run; it stops if the session ends first."""
    from quick_runs import BesideRun, shared_run

    if not reads_the_quick_dag(request.session):
        yield None
        return
    shared = shared_run("local")
    if shared is not None:
        yield shared / "results" / "quick"
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # the DAG is the session's longest path: the tests take the cores it leaves
        os.nice(TESTS_NICE)
    yield BesideRun.start_or_join(session_shared(tmp_path_factory),
                                  watch=os.getppid() if worker else os.getpid(),
                                  cores=len(os.sched_getaffinity(0)))


@pytest.fixture(scope="session")
def quick_outputs(_quick_dag_beside):
    """The quick DAG's results/quick: the run beside the tests (every torch job under the
    host-copy guard), or the local run `make test-slurm` kept for this same workflow."""
    if isinstance(_quick_dag_beside, Path):
        return _quick_dag_beside
    return _quick_dag_beside.wait(timeout=1500)


@pytest.fixture
def crash_after(monkeypatch):
    """crash_after(n): the training step raises KeyboardInterrupt (a simulated kill) after n
    batches, whatever its loss (the NLL or a run's own objective); call the returned
    `restore()` to train normally again."""
    from repdist.training import loop

    real = loop._train_step

    def arm(n_batches):
        calls = {"n": 0}

        def crashing(*args):
            calls["n"] += 1
            if calls["n"] > n_batches:
                raise KeyboardInterrupt("simulated kill")
            return real(*args)

        monkeypatch.setattr(loop, "_train_step", crashing)
        return lambda: monkeypatch.setattr(loop, "_train_step", real)

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
