"""A pytest plugin of `make gpu-check` (repdist_gpucheck.check loads it with `-p`): the GPU tests
in the order that fits a time slice, each outcome appended to $REPDIST_GPU_CHECK_TESTS (JSON
lines) the moment it is known, so a tests part cut at its time limit still says which tests
passed, failed or were running."""

from __future__ import annotations

import json
import os
import time


def _emit(event: dict) -> None:
    path = os.environ.get("REPDIST_GPU_CHECK_TESTS")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps({**event, "time": time.time()}) + "\n")


LAST = ("test_the_quick_dag_trains_on_the_gpu",
        "test_synthetic_seeds_trained_on_the_gpu_land_on_the_authors")


def pytest_collection_modifyitems(session, config, items) -> None:  # noqa: ANN001
    """The long tests last, in LAST's order; the rest as collected."""
    rank = {name: i + 1 for i, name in enumerate(LAST)}
    items.sort(key=lambda item: rank.get(item.name, 0))


def pytest_collection_finish(session) -> None:  # noqa: ANN001
    _emit({"event": "collected", "names": [item.nodeid for item in session.items]})


def pytest_runtest_logstart(nodeid, location) -> None:  # noqa: ANN001
    _emit({"event": "start", "name": nodeid})


def pytest_runtest_logreport(report) -> None:  # noqa: ANN001
    """The call's outcome, or the setup's when it did not pass (a skip or an error there)."""
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed") or (
            report.when == "teardown" and report.outcome == "failed"):
        outcome = report.outcome
        if report.when != "call" and outcome == "failed":
            outcome = "error"
        message = ""
        if report.skipped and isinstance(report.longrepr, tuple):
            message = str(report.longrepr[2])
        elif report.failed:
            message = str(report.longrepr)[-3000:]
        _emit({"event": "done", "name": report.nodeid, "outcome": outcome,
               "seconds": report.duration, "message": message})
