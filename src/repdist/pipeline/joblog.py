"""Send a Snakemake job's output, warnings and tracebacks to its `log:` file, and set up the
job's process the same way for every job (subnormal floats flushed, see `repdist.pipeline.subnormals`; the
machine it runs on logged, see `repdist.pipeline.machine`; with REPDIST_GUARD_HOST_COPIES=1, a
torch job runs under `repdist.io.host.host_copies_guarded`, as the test suite runs the DAG)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from ..io.host import GUARD_ENV, host_copies_guarded
from .gpu_pool import gpu_slot
from .machine import MACHINE_PREFIX, describe
from .subnormals import flush_subnormals


@contextlib.contextmanager
def job_log(path: str | os.PathLike[str], gpus: int = 0) -> Iterator[logging.Logger]:
    """Redirect stdout/stderr and Python warnings to `path` for the duration of a job.

    A failing job writes its traceback to the log before re-raising, so `snakemake` points the
    user at a log that says what went wrong. Subnormal floats are flushed to zero first thing.
    `gpus`: the job's `resources: gpu`; a GPU job holds one GPU of the run's pool meanwhile
    (pipeline.gpu_pool).
    """
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
        logger.info("subnormal floats flushed to zero: %s", flushed or "no (unsupported here)")
        start = time.time()
        try:
            with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh), _guard(logger), \
                    (gpu_slot(logger) if gpus else contextlib.nullcontext()):
                yield logger
        except BaseException:
            fh.write(traceback.format_exc())
            raise
        finally:
            logger.info("finished in %.2f s", time.time() - start)
            logger.removeHandler(handler)
            logging.getLogger("py.warnings").removeHandler(handler)
            logging.captureWarnings(False)
            if sys.stdout is not sys.__stdout__:
                sys.stdout.flush()


def _guard(logger: logging.Logger) -> contextlib.AbstractContextManager[None]:
    """Host copies guarded when REPDIST_GUARD_HOST_COPIES=1 and the job imported torch (a job
    without torch holds no tensor)."""
    if os.environ.get(GUARD_ENV) != "1" or "torch" not in sys.modules:
        return contextlib.nullcontext()
    logger.info("host copies guarded (%s=1): a tensor reaching numpy outside to_host fails",
                GUARD_ENV)
    return host_copies_guarded()
