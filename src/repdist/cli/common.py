"""What the `repdist` subcommands that report on a results folder share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..experiments.models.groups import plural

__all__ = ["add_results_argument", "plural", "report_runner"]

def add_results_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", nargs="?", type=Path, default=Path("results"), metavar="RESULTS",
                   help="the run's results folder (default: results; make quick writes "
                        "results/quick)")


def report_runner(name: str, report: Callable[[Path], str]) -> Callable[[argparse.Namespace], int]:
    """A subcommand's `run`: print `report(results)`; bad input exits 2 with a message."""

    def run(args: argparse.Namespace) -> int:
        try:
            print(report(args.results))
        except (FileNotFoundError, ValueError) as err:
            print(f"repdist {name}: {err}", file=sys.stderr)
            return 2
        return 0

    return run
