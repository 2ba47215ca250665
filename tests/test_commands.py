"""What a newcomer reads first: `make help` lists every public target of the Makefile, and the
`repdist` subcommands that report on results (info, diff, progress, job-times) give every
argument a help text, name no internal module in their --help, and count in good English."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from repdist.cli import parser
from repdist.cli.common import plural

ROOT = Path(__file__).resolve().parents[1]
REPORTING = ("info", "diff", "progress", "job-times")
# .PHONY targets `make help` need not list: the list itself
NOT_IN_HELP = {"help"}


def phony_targets(makefile: str) -> set[str]:
    return set(re.search(r"^\.PHONY:(.*)$", makefile, re.M).group(1).split())


def help_problems(makefile: str, help_text: str) -> list[str]:
    """The public targets of a Makefile that its `make help` output leaves out."""
    listed = set(re.findall(r"^make ([a-z][a-z0-9-]*)\b", help_text, re.M))
    return [f"make {t}: not in make help" for t in sorted(phony_targets(makefile) - NOT_IN_HELP
                                                          - listed)]


def test_make_help_lists_every_public_target():
    res = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert help_problems((ROOT / "Makefile").read_text(), res.stdout) == []


def test_a_target_left_out_of_make_help_is_found():
    makefile = ".PHONY: help venv clean-quick\nhelp:\n"
    assert help_problems(makefile, "make venv    - create .venv\n") == [
        "make clean-quick: not in make help"]


def subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("name", REPORTING)
def test_every_argument_has_help(name):
    bare = [a.dest for a in subparsers()[name]._actions if not (a.help or "").strip()]
    assert bare == [], f"repdist {name}: arguments without help: {bare}"


def module_names() -> set[str]:
    """The package's modules as dotted names (io.representations), with and without repdist."""
    package = ROOT / "src" / "repdist"
    names = set()
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if len(parts) > 1:
            names.add(".".join(parts))
        if parts:
            names.add("repdist." + ".".join(parts))
    return names


def internal_names(text: str) -> list[str]:
    """The package's module names that `text` (a --help output) mentions."""
    modules = module_names()
    return sorted({m for m in re.findall(r"(?<![\w.])[a-z_]+(?:\.[a-z_]+)+", text)
                   if m in modules})


@pytest.mark.parametrize("name", REPORTING)
def test_help_names_no_internal_module(name):
    assert internal_names(subparsers()[name].format_help()) == []


def test_an_internal_module_in_a_help_text_is_found():
    assert internal_names("lines of `training.progress`, see repdist.pipeline.machine.") == [
        "repdist.pipeline.machine", "training.progress"]


def test_plural():
    assert [plural(n, "pair") for n in (0, 1, 2)] == ["0 pairs", "1 pair", "2 pairs"]
    assert plural(1, "match", "matches") == "1 match"
    assert plural(3, "match", "matches") == "3 matches"
