"""The workflow's rules read from their files as text, without Snakemake: each rule's name, the
file that holds it and its directives (what the checks of the conda environments and the quick
DAG's budget by branch read).

Three forms: `rule NAME:`; `use rule A as B with:` (B's own directives, then A's); and rules
defined in a loop over a literal tuple, one rule per value, each a `rule:` whose `name:` is an
f-string of the loop's variable:

    for data in ("a", "b"):

        rule:
            name:
                f"train_{data}"
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

from repdist_dev.checkout import ROOT

HEADER = re.compile(r"^(?:rule (\w+)|use rule (\w+) as (\w+) with):\n", re.M)
LOOP = re.compile(r"^for (\w+) in (\([^)]*\)):\n((?:(?:    .*)?\n)*)", re.M)
NAMED = re.compile(r"^rule:\n    name:\s+f\"([^\"]+)\",?\n", re.M)


def rule_files(root: Path = ROOT) -> list[Path]:
    """The Snakefile, then rules/*.smk in name order."""
    return [root / "Snakefile", *sorted((root / "rules").glob("*.smk"))]


def unrolled(text: str) -> str:
    """`text` with each loop of rules written out: its body once for each value of its tuple,
    dedented, each `rule:` with its `name:` as `rule NAME:` (the name's f-string filled in)."""

    def write_out(loop: re.Match[str]) -> str:
        variable, body = loop.group(1), textwrap.dedent(loop.group(3)).strip("\n")
        return "".join(
            NAMED.sub(lambda rule: f"rule {rule.group(1).format(**{variable: value})}:\n",
                      body + "\n") + "\n\n"
            for value in ast.literal_eval(loop.group(2)))

    return LOOP.sub(write_out, text)


def rule_blocks(root: Path = ROOT) -> dict[str, tuple[Path, str]]:
    """rule name -> (its file, its text): the directives below its header up to the next
    rule or two blank lines; a rule made by `use rule A as B with:` has its own directives
    first, then A's."""
    blocks, derived = {}, []
    for path in rule_files(root):
        parts = HEADER.split(unrolled(path.read_text()))
        for name, base, new, body in zip(parts[1::4], parts[2::4], parts[3::4], parts[4::4]):
            body = body.split("\n\n\n")[0]
            if name:
                blocks[name] = (path, body)
            else:
                derived.append((new, base, path, body))
    for new, base, path, body in derived:
        blocks[new] = (path, body + "\n" + blocks[base][1])
    return blocks
