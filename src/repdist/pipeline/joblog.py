"""Send a Snakemake job's output, warnings and tracebacks to its `log:` file, and set up the
job's process the same way for every job (subnormal floats flushed, see `repdist.pipeline.subnormals`; the
machine it runs on logged, see `repdist.pipeline.machine`)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from .subnormals import flush_subnormals
from .machine import MACHINE_PREFIX, describe


@contextlib.contextmanager
def job_log(path: str | os.PathLike[str]) -> Iterator[logging.Logger]:
    """Redirect stdout/stderr and Python warnings to `path` for the duration of a job.

    A failing job writes its traceback to the log before re-raising, so `snakemake` points the
    user at a log that says what went wrong. Subnormal floats are flushed to zero first thing.
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
            with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
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
