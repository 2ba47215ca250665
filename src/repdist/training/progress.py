"""Progress lines from long training jobs, and reading them back.

A job logs a line about every 30 s and at every loss-log step. Snakemake reports a job only when
it ends; these lines let a person (or `repdist progress`) tell a slow job from a stuck one."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

LOG = logging.getLogger("repdist")
PROGRESS_EVERY_S = 30.0

LINE = re.compile(
    r"progress: step (?P<step>\d+)/(?P<total>\d+) \((?P<pct>[\d.]+)%\), "
    r"loss (?P<loss>\S+), (?P<rate>[\d.]+) steps/s, elapsed (?P<elapsed>[\d:]+), "
    r"ETA (?P<eta>[\d:]+|\?)"
)


def clock(seconds: float) -> str:
    """H:MM:SS."""
    seconds = max(0, round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def seconds_of(text: str) -> float:
    hours, minutes, seconds = (int(v) for v in text.split(":"))
    return hours * 3600 + minutes * 60 + seconds


class ProgressLog:
    """Rate-limited progress lines for a run of `total` steps that starts at `start`."""

    def __init__(self, total: int, start: int = 0, every_s: float = PROGRESS_EVERY_S,
                 logger: logging.Logger = LOG) -> None:
        self.total, self.start, self.every_s, self.logger = total, start, every_s, logger
        self.started = self.last = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every_s

    def report(self, done: int, loss: float | None) -> None:
        elapsed = time.monotonic() - self.started
        rate = (done - self.start) / elapsed if elapsed > 0 else 0.0
        eta = clock((self.total - done) / rate) if rate > 0 else "?"
        loss_text = f"{loss:.4f}" if loss is not None else "n/a"
        self.logger.info(f"progress: step {done}/{self.total} ({100 * done / self.total:.1f}%), "
                         f"loss {loss_text}, {rate:.1f} steps/s, elapsed {clock(elapsed)}, "
                         f"ETA {eta}")
        self.last = time.monotonic()


@dataclass(frozen=True)
class ProgressState:
    step: int
    total: int
    percent: float
    loss: float | None
    rate: float
    elapsed_s: float
    eta_s: float | None


def parse_line(text: str) -> ProgressState | None:
    m = LINE.search(text)
    if not m:
        return None
    loss = None if m["loss"] == "n/a" else float(m["loss"])
    eta = None if m["eta"] == "?" else seconds_of(m["eta"])
    return ProgressState(int(m["step"]), int(m["total"]), float(m["pct"]), loss,
                         float(m["rate"]), seconds_of(m["elapsed"]), eta)
