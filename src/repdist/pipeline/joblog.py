"""Send a Snakemake job's output, warnings and tracebacks to its `log:` file, and set up every
job's process the same way: subnormals flushed, the machine logged, host copies guarded where
asked, a GPU slot held, one message when out of GPU memory."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from ..io import read_checkpoint_sidecar
from ..io.host import GUARD_ENV, host_copies_guarded
from .gpu_pool import gpu_slot
from .machine import MACHINE_PREFIX, describe
from .subnormals import flush_subnormals
from .training_jobs import memory_settings
from .warm import STARTED_ENV


RULE_PREFIX = "rule: "  # a Snakemake job's second log line: its rule and wildcards
CPU_NOTE = ", CPU "  # last line: "finished in W s, CPU C s" (the process's CPU, start-up too)
# a job forked warm (pipeline/warm.py): its CPU leaves out the imports it did not repeat
WARM_NOTE = "started warm: forked from the run's interpreter, its libraries already imported"


class GpuMemoryError(RuntimeError):
    """A job ran out of GPU memory (torch.OutOfMemoryError); the message says what to lower."""


@contextlib.contextmanager
def job_log(path: str | os.PathLike[str], gpus: int = 0,
            checkpoint: str | os.PathLike[str] | None = None) -> Iterator[logging.Logger]:
    """Redirect stdout/stderr, warnings and a failing job's traceback to `path` for a job; out of
    GPU memory, raise GpuMemoryError saying what to lower and where its `checkpoint` stands.
    With `gpus` (the job's `resources: gpu`) hold a slot of the run's GPU pool meanwhile."""
    flushed = flush_subnormals()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger("repdist")
    with open(path, "w", buffering=1) as fh:
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logging.captureWarnings(True)
        logging.getLogger("py.warnings").addHandler(handler)
        logger.info("%s%s", MACHINE_PREFIX, describe())
        if (job := snakemake_job_name()) is not None:
            logger.info("%s%s", RULE_PREFIX, job)
        logger.info("subnormal floats flushed to zero: %s", flushed or "no (unsupported here)")
        if os.environ.get(STARTED_ENV):
            logger.info("%s (pipeline/warm.py)", WARM_NOTE)
        start = time.time()
        try:
            with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh), _guard(logger), \
                    (gpu_slot(logger) if gpus else contextlib.nullcontext()):
                yield logger
        except BaseException as err:
            fh.write(traceback.format_exc())
            if _out_of_gpu_memory(err):
                message = out_of_memory_message(path, err, checkpoint)
                logger.error("%s", message)
                raise GpuMemoryError(message) from err
            raise
        finally:
            _log_null_tally(logger)
            logger.info("finished in %.2f s%s%.2f s", time.time() - start, CPU_NOTE,
                        time.process_time())
            logger.removeHandler(handler)
            logging.getLogger("py.warnings").removeHandler(handler)
            logging.captureWarnings(False)
            if sys.stdout is not sys.__stdout__:
                sys.stdout.flush()
    end_finished_job()


NULL_NOTE = "permutation null: "  # "permutation null: P pairs, S s" (measures.null.TALLY)


def _log_null_tally(logger: logging.Logger) -> None:
    """The job's permutation nulls, where it drew any: pairs and seconds."""
    tally = getattr(sys.modules.get("repdist.measures.null"), "TALLY", None)
    if tally is not None and tally.pairs:
        logger.info("%s%d pairs, %.2f s", NULL_NOTE, tally.pairs, tally.seconds)


def _injected() -> object | None:
    """The `snakemake` object Snakemake injects into a `script:` job's main module, or None."""
    found = getattr(sys.modules.get("__main__"), "snakemake", None)
    kind = type(found)
    return found if kind.__name__ == "Snakemake" and kind.__module__.startswith("snakemake") \
        else None


def snakemake_job_name() -> str | None:
    """`rule` and its wildcards (`cifar10_train fd=2`), in a Snakemake job; None elsewhere."""
    job = _injected()
    if job is None:
        return None
    wildcards = getattr(job, "wildcards", None)
    named = " ".join(f"{k}={v}" for k, v in dict(wildcards.items()).items()) if wildcards else ""
    return f"{getattr(job, 'rule', '?')} {named}".strip()


def end_finished_job() -> None:
    """End a finished Snakemake script job now, with status 0, skipping the teardown (0.5 s of
    CPU with torch): `with job_log(...)` ends every workflow script (tests/test_architecture.py).
    Outside a script job, or with torch.compile's worker pool, nothing happens."""
    if _injected() is None or "torch._inductor" in sys.modules:
        return
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _guard(logger: logging.Logger) -> contextlib.AbstractContextManager[None]:
    """Host copies guarded when REPDIST_GUARD_HOST_COPIES=1 and the job holds torch."""
    if os.environ.get(GUARD_ENV) != "1" or "torch" not in sys.modules:
        return contextlib.nullcontext()
    logger.info("host copies guarded (%s=1): a tensor reaching numpy outside to_host fails",
                GUARD_ENV)
    return host_copies_guarded()


def _out_of_gpu_memory(err: BaseException) -> bool:
    """torch.OutOfMemoryError (torch.cuda.OutOfMemoryError), told without importing torch."""
    oom = getattr(sys.modules.get("torch"), "OutOfMemoryError", None)
    return oom is not None and isinstance(err, oom)


def out_of_memory_message(log: str | os.PathLike[str], err: BaseException,
                          checkpoint: str | os.PathLike[str] | None = None) -> str:
    """One message for a job out of GPU memory: the job (its log), what to lower, and its
    checkpoint (written atomically, so the last one is whole: a rerun resumes from it)."""
    job = f"{Path(log).parent.name}/{Path(log).stem}"
    first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
    lower = "; ".join(memory_settings(log))
    if checkpoint is None:
        kept = "it writes no checkpoint"
    elif (state := read_checkpoint_sidecar(checkpoint)) is not None and Path(checkpoint).exists():
        kept = (f"its checkpoint {checkpoint} (step {state.get('step')} of "
                f"{state.get('total_steps')}) is intact: a rerun resumes from it")
    else:
        kept = f"no checkpoint was written yet ({checkpoint}): a rerun starts from step 0"
    return f"job {job} ran out of GPU memory ({first}). Lower {lower}; {kept}."
