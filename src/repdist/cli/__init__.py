"""The `repdist` command: one registry of subcommands, each a module of this package with
NAME, HELP, `add_arguments(parser)` and `run(args) -> exit status`; its `--help` text is the
module's DESCRIPTION where it has one (what a user reads), else its docstring."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from . import compare, diff, extract, info, job_times, progress

SUBCOMMANDS = (info, diff, progress, job_times, compare, extract)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="repdist", description="reproduce 'When Does Closeness in Distribution Imply "
        "Representational Similarity?' and compare models")
    top.add_argument("--version", action="version", version=f"repdist {__version__}")
    sub = top.add_subparsers(dest="command", required=True)
    for command in SUBCOMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP,
                           description=getattr(command, "DESCRIPTION", command.__doc__))
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; its exit status. A reader that closes stdout early (`| head`) ends
    the command quietly: what it wrote to files is whole, only its printout was cut."""
    args = parser().parse_args(argv)
    try:
        status = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # nothing more can reach that reader; keep the interpreter's last flush from failing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return status
