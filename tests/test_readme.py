"""The README says only what is there: every make target, `repdist` subcommand, command-line flag,
config key and output path it names exists, and every make target and subcommand is named in it.
`readme_problems` is checked on the README and, to show it can fail, on the README with a wrong
name of each kind planted in it. Then every command the README and docs/ give, in shell blocks
and `ticked` spans, is read on its own: its make target, its subcommand's flags, its Snakemake
profile and config files, its module (`shell_problems`, shown to fail the same way)."""

from __future__ import annotations

import argparse
import functools
import importlib.util
import re
import shlex
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


def test_every_name_in_the_guide_exists():
    """docs/guide.md holds the README's details (every output file, set-up, SLURM): the names it
    gives exist too; it need not name every target."""
    problems = readme_problems((ROOT / "docs" / "guide.md").read_text())
    assert [p for p in problems if not p.endswith(": not in the README")] == []


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


README_MAX_LINES = 350  # detail lives in docs/ pages (docs/guide.md); the README points at them


def test_the_readme_stays_within_its_length():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}): " \
        "move detail into a docs/ page, keeping every command"


# The commands of the README's and docs' shell blocks, one by one: `make X` names a target,
# `repdist SUB` a subcommand and only SUB's flags, `snakemake` existing profiles and config
# files and its own flags, `python -m M` an importable module, `python F.py` a file.
DOCS = (README, *sorted((ROOT / "docs").glob("*.md")))
SEPARATORS = {";", "&&", "||", "|", "(", ")", "&"}
KEYWORDS = {"do", "then", "else", "time", "!"}


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```(?:bash|sh)\n(.*?)^```", text, flags=re.M | re.S)


def shell_lines(block: str) -> tuple[list[str], set[str]]:
    """A block's command lines (continued lines joined, here-document bodies left out) and the
    files its here-documents write (`cat > FILE <<'END'`)."""
    lines, written, end, joined = [], set(), None, ""
    for line in block.splitlines():
        if end is not None:
            end = None if line.strip() == end else end
            continue
        joined += line
        if joined.endswith("\\"):
            joined = joined[:-1] + " "
            continue
        here = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", joined)
        if here:
            end = here.group(1)
            written.update(re.findall(r">\s*(\S+)\s+<<", joined))
        lines.append(joined)
        joined = ""
    return lines, written


def shell_commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line as word lists, comments and assignments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, "#"
    found, words = [], []
    for word in [*lexer, ";"]:
        if word in SEPARATORS:
            found.append(words)
            words = []
        elif words or (word not in KEYWORDS and not re.match(r"^\w+=", word)):
            words.append(word)
    return [w for w in found if w]


def subcommand_flags() -> dict[str | None, set[str]]:
    """Each `repdist` subcommand's option strings, built in-process; None: the top level's."""
    from repdist.cli import parser

    top = parser()
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices
    flags = {name: {o for a in sub._actions for o in a.option_strings}
             for name, sub in subs.items()}
    return {None: {o for a in top._actions for o in a.option_strings}, **flags}


@functools.cache
def snakemake_flags() -> set[str]:
    """Snakemake's long flags, read from its cli.py (building its parser looks plugins up)."""
    import snakemake.cli

    return set(re.findall(r"\"(--[a-z][a-z0-9-]+)\"", Path(snakemake.cli.__file__).read_text()))


def snakemake_problems(args: list[str], written: set[str]) -> list[str]:
    """A snakemake command's unknown flags, and the profile and config files it names that
    neither exist nor are written by its block."""
    problems, option = [], None
    for arg in args:
        if arg.startswith("-"):
            option = arg.split("=")[0]
            if option.startswith("--") and option not in snakemake_flags():
                problems.append(f"snakemake {option}: no such flag")
            continue
        if option == "--profile" and not (ROOT / arg).is_dir():
            problems.append(f"snakemake --profile {arg}: no such profile")
        elif option == "--configfile" and not ((ROOT / arg).is_file() or arg in written):
            problems.append(f"snakemake --configfile {arg}: no such file")
        option = option if option == "--configfile" else None  # it takes every file after it
    return problems


def repdist_problems(args: list[str]) -> list[str]:
    """A repdist command's unknown subcommand, or flags its subcommand does not take."""
    flags = subcommand_flags()
    sub = None if not args or args[0].startswith("-") else args[0]
    if sub not in flags:
        return [f"repdist {sub}: no such subcommand"]
    command = f"repdist {sub}" if sub else "repdist"
    return [f"{command} {flag}: no such flag"
            for flag in (a.split("=")[0] for a in args if re.match(r"-[a-z-]", a))
            if flag not in flags[sub]]


def command_problems(words: list[str], written: set[str]) -> list[str] | None:
    """What is wrong with one command of a shell block ([] for nothing), None for a command
    this does not check (cat, for, bash, hf ...)."""
    name, args = Path(words[0]).name.replace("python3", "python"), words[1:]
    if name == "python" and args[:2] == ["-m", "snakemake"]:
        return snakemake_problems(args[2:], written)
    if name == "python" and args[:1] == ["-m"]:
        try:
            found = importlib.util.find_spec(args[1]) is not None
        except ModuleNotFoundError:
            found = False
        return [] if found else [f"python -m {args[1]}: no such module"]
    if name == "python" and args[:1] and args[0].endswith(".py"):
        placeholder = re.search(r"\b[A-Z]{2,}\b", args[0])  # benchmarks/NAME.py
        return [] if (ROOT / args[0]).is_file() or args[0] in written or placeholder else [
            f"python {args[0]}: no such file"]
    if name == "make":
        return [f"make {t}: no such target" for t in args
                if not t.startswith("-") and "=" not in t and t not in make_targets()]
    if name == "repdist":
        return repdist_problems(args)
    if name == "snakemake":
        return snakemake_problems(args, written)
    return None


def doc_commands(text: str) -> list[tuple[list[str], set[str]]]:
    """The commands of a Markdown text, each with the files its block writes: those of its shell
    blocks, and its `ticked` spans that start with a command word this checks."""
    found = []
    for block in shell_blocks(text):
        lines, written = shell_lines(block)
        found += [(words, written) for line in lines for words in shell_commands(line)]
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    prose = re.sub(r"(?<!\n)\n(?!\n)", " ", prose)  # a span may wrap onto the next line
    return found + [(words, set()) for span in TICKED.findall(prose)
                    if re.match(r"(\S*/)?(make|repdist|snakemake|python3?)( |$)", span)
                    for words in shell_commands(span)]


def shell_problems(text: str) -> tuple[int, list[str]]:
    """(how many commands of a Markdown text were checked, what is wrong with them)."""
    checked, problems = 0, []
    for words, written in doc_commands(text):
        found = command_problems(words, written)
        checked += found is not None
        problems += found or []
    return checked, problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_command_in_the_docs_works_as_written(doc):
    assert shell_problems(doc.read_text())[1] == []


def test_the_readmes_commands_are_read_one_by_one():
    checked, _ = shell_problems(README.read_text())
    assert checked >= 40


@pytest.mark.parametrize("planted, problem", [
    ("make tset", "make tset: no such target"),
    ("make venv TORCH=torch && make tset", "make tset: no such target"),
    ("repdist comapre a b", "repdist comapre: no such subcommand"),
    ("repdist compare a b --num-sampels 3", "repdist compare --num-sampels: no such flag"),
    ("repdist diff a b --jobs 2   # compare's flag", "repdist diff --jobs: no such flag"),
    (".venv/bin/repdist extract --model m.py:build \\\n    --wieghts w.pt",
     "repdist extract --wieghts: no such flag"),
    ("snakemake --profile profiles/nowhere", "snakemake --profile profiles/nowhere: no such "
     "profile"),
    ("snakemake --cores 2 --configfile config.quick.yaml mine.yaml",
     "snakemake --configfile mine.yaml: no such file"),
    (".venv/bin/python -m snakemake --cores 2 --dry-runn", "snakemake --dry-runn: no such flag"),
    ("python -m repdist_dev.timngs", "python -m repdist_dev.timngs: no such module"),
    ("for s in 1 2; do\n  python toy.py\ndone", "python toy.py: no such file"),
])
def test_a_wrong_command_planted_in_a_shell_block_is_found(planted, problem):
    assert problem in shell_problems(f"```bash\n{planted}\n```\n")[1]


def test_a_target_after_configfile_is_found_in_prose_too():
    """--configfile takes every word after it: a target there is read as a config file."""
    assert shell_problems("`snakemake --cores 2 --configfile config.quick.yaml lm_all`") == (
        1, ["snakemake --configfile lm_all: no such file"])


def test_what_a_block_writes_itself_is_there():
    block = ("```bash\ncat > mine.yaml <<'YAML'\nmake tset: not a command here\nYAML\n"
             "snakemake --cores 2 --configfile config.quick.yaml mine.yaml\n```\n")
    assert shell_problems(block) == (1, [])
