"""The README says only what is there: every make target, `repdist` subcommand, command-line flag,
config key and output path it names exists, and every make target and subcommand is named in it.
`readme_problems` is checked on the README and, to show it can fail, on the README with a wrong
name of each kind planted in it."""

from __future__ import annotations

import argparse
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
from repdist_dev import dag_snapshot

TICKED = re.compile(r"`([^`\n]+)`")
# files a run writes that are not jobs' outputs in the DAG
NOT_IN_DAG = ("results/report.html", "results/quick/report.html", "results/.run-configfiles",
              "results/benchmarks/gpu_paper.json")
OUTPUT_ROOTS = ("results/", "tables/", "figures/", "constructed/")
# the outdir of the README's worked example of the models: section (its own config writes there)
EXAMPLE_OUTDIRS = ("results/mine",)
# sbatch's options the README names (those the SLURM plugin refuses inside slurm_extra)
SBATCH_FLAGS = {"--gres", "--gpus", "--mem", "--requeue"}


@functools.cache
def make_targets() -> set[str]:
    phony = re.search(r"^\.PHONY:(.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    return set(phony.split())


@functools.cache
def subcommands() -> set[str]:
    from repdist.cli import SUBCOMMANDS

    return {c.NAME for c in SUBCOMMANDS}


def _parser_flags(parser: argparse.ArgumentParser) -> set[str]:
    flags = set()
    for action in parser._actions:
        flags.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags |= _parser_flags(sub)
    return flags


@functools.cache
def known_flags() -> set[str]:
    """Flags of every command the README can name: repdist's, Snakemake's (read from its
    cli.py: building its parser waits ~10 s here on plugin lookups), pip's, `hf download`'s
    (huggingface_hub's, for the models and data sets the README has a user fetch), and the project's
    scripts' and developer modules' (benchmarks, repdist_dev, repdist_gpucheck, repdist_retrace,
    the SLURM checks)."""
    import snakemake.cli

    from repdist.cli import parser

    flags = _parser_flags(parser()) | set(
        re.findall(r"\"(--[a-z][a-z0-9-]+)\"", Path(snakemake.cli.__file__).read_text()))
    for script in [*ROOT.glob("benchmarks/*.py"), *ROOT.glob("src/repdist_*/*.py"),
                   *ROOT.glob("tests/slurm/*.py")]:
        flags |= set(re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"", script.read_text()))
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--help"],
                         capture_output=True, text=True).stdout
    hf = subprocess.run([str(Path(sys.executable).with_name("hf")), "download", "--help"],
                        capture_output=True, text=True).stdout
    assert "--revision" in hf, "huggingface_hub's `hf download --help` printed no flags"
    return flags | set(re.findall(r"(--[a-z][a-z0-9-]+)", pip + hf)) | SBATCH_FLAGS


@functools.cache
def config_keys() -> set[str]:
    """Every dotted key the schema allows (a.b.c), and config.yaml's."""
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    keys: set[str] = set()

    def walk(node: dict, prefix: str) -> None:
        for name, sub in node.get("properties", {}).items():
            keys.add(prefix + name)
            if isinstance(sub, dict):
                ref = sub.get("$ref", "")
                target = schema
                for part in ref.removeprefix("#/").split("/") if ref else []:
                    target = target[part]
                walk(target if ref else sub, prefix + name + ".")

    walk(schema, "")
    return keys


@functools.cache
def output_paths() -> tuple[str, ...]:
    """Every file the three configs' DAGs write (outputs, logs, benchmarks), and the others."""
    paths = set(NOT_IN_DAG)
    for name in dag_snapshot.CONFIGS:
        for line in dag_snapshot.read_recorded(name).splitlines():
            key, _, files = line.strip().partition(": ")
            if key in ("output", "log", "benchmark"):
                paths.update(files.split(", "))
    return tuple(sorted(paths))


def named_paths(named: str) -> list[str]:
    """A README path with {a,b} alternatives as the paths it names, one per alternative."""
    m = re.search(r"\{([^}]*,[^}]*)\}", named)
    if not m:
        return [named]
    return [p for alt in m.group(1).split(",")
            for p in named_paths(named[:m.start()] + alt + named[m.end():])]


def _path_pattern(named: str) -> re.Pattern:
    """One README path (`figures/x_K{K}`, `results/cifar10/fd{M}/`) as a pattern over written
    paths: {X} any name, * any part of one, a folder any file in it, a figure without its
    extension either extension; under results/ or results/quick/."""
    rest = re.sub(r"^results(/quick)?(/|$)", "", named.rstrip("/"))
    pattern = "".join("[^/]+" if part.startswith("{") else
                      re.escape(part).replace(r"\*", "[^/]*")
                      for part in re.split(r"(\{[^}]*\})", rest))
    return re.compile(f"^results/(quick/)?{pattern}(/.*|\\.[a-z]+)?$" if pattern
                      else r"^results/")


def commands(text: str) -> list[str]:
    """What the README writes as code: `ticked` spans and the lines of fenced blocks."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.M | re.S)
    return TICKED.findall(re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)) + [
        line for block in blocks for line in block.splitlines()]


def readme_problems(text: str) -> list[str]:
    """Names in `text` (a README) that do not exist, and targets and subcommands it omits."""
    code = commands(text)
    ticked = TICKED.findall(re.sub(r"^```.*?^```", "", text, flags=re.M | re.S))
    joined = "\n".join(code)
    targets, subs, flags = make_targets(), subcommands(), known_flags()
    named_targets = set(re.findall(r"(?:^|[\s;&(])make ([a-z][a-z0-9-]*)", joined, flags=re.M))
    named_subs = set(re.findall(r"(?:^|[\s/])repdist ([a-z][a-z-]*)", joined, flags=re.M))
    problems = [f"make {t}: no such target" for t in sorted(named_targets - targets)]
    problems += [f"make {t}: not in the README" for t in sorted(targets - named_targets)]
    problems += [f"repdist {s}: no such subcommand" for s in sorted(named_subs - subs)]
    problems += [f"repdist {s}: not in the README" for s in sorted(subs - named_subs)]
    problems += [f"{flag}: no command here has this flag" for flag in
                 sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", joined)) - flags)]
    keys, paths = config_keys(), output_paths()
    sections = {k for k in keys if "." not in k}
    for token in ticked:
        m = re.fullmatch(r"([a-z_0-9]+(?:\.[a-z_0-9]+)+)(?::.*)?", token)
        if m and m.group(1).split(".")[0] in sections and m.group(1) not in keys:
            problems.append(f"{m.group(1)}: no such config key")
        for named in (part.split(" ")[0] for part in token.split(", ")):
            if not named.startswith(OUTPUT_ROOTS) or named.startswith(EXAMPLE_OUTDIRS):
                continue
            if not all(any(_path_pattern(one).match(p) for p in paths)
                       for one in named_paths(named)):
                problems.append(f"{named}: no job writes it")
    return problems


def test_every_name_in_the_readme_exists_and_every_target_is_named():
    assert readme_problems(README.read_text()) == []


@pytest.mark.parametrize("planted, problem", [
    ("`make tset`", "make tset: no such target"),
    ("`repdist comapre`", "repdist comapre: no such subcommand"),
    ("`--num-sampels`", "--num-sampels: no command here has this flag"),
    ("`cifar10.devise`", "cifar10.devise: no such config key"),
    ("`results/figures/d_llv_vs_widht_K4_6`", "results/figures/d_llv_vs_widht_K4_6: no job writes it"),
    ("`tables/kl_table.{csv,xlsx}`", "tables/kl_table.{csv,xlsx}: no job writes it"),
])
def test_a_wrong_name_planted_in_the_readme_is_found(planted, problem):
    assert problem in readme_problems(README.read_text() + f"\n{planted}\n")


def test_a_target_left_out_of_the_readme_is_found():
    text = README.read_text().replace("make clean-quick", "make cleanquick")
    problems = readme_problems(text)
    assert "make clean-quick: not in the README" in problems
    assert "make cleanquick: no such target" in problems


README_MAX_LINES = 550  # detail lives in docs/ pages; the README points at them


def test_the_readme_stays_within_its_length():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}): " \
        "move detail into a docs/ page, keeping every command"
