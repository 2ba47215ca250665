"""The docs' prose in plain short sentences: `python tests/prose.py` reports the sentence
lengths and line counts of README.md and docs/ against the limits tests/test_prose.py holds.

A sentence is prose outside code: paragraphs and list items, split after ., ! or ? before a
space; a table cell's sentences count toward the longest only (cells are mostly numbers and
names, not sentences). Fenced code, HTML comments and headings are left out; an inline code span
counts as one word, a link as its text.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

MEDIAN_WORDS = 20
MAX_WORDS = 60
README_LINES = 350
DOCS_LINES = 2000

_CODE_SPAN = re.compile(r"`[^`]*`")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(`*\"'])")


@dataclass(frozen=True)
class Sentence:
    path: str
    line: int
    words: int
    text: str
    in_table: bool = False


def _blocks(text: str) -> list[tuple[int, str, bool]]:
    """(first line, text, in a table) of each prose block: paragraphs, list items, table
    cells."""
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    blocks: list[tuple[int, str, bool]] = []
    fenced, current, start = False, [], 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        new_item = re.match(r"^\s*([-*+]|\d+\.)\s", line)
        if fenced or not stripped or stripped.startswith("#") or stripped.startswith("|") \
                or new_item:
            if current:
                blocks.append((start, " ".join(current), False))
            current = []
            if not fenced and stripped.startswith("|") and not re.match(r"^\|[\s:|-]+\|$",
                                                                         stripped):
                blocks += [(number, cell, True) for cell in stripped.strip("|").split("|")]
            if not fenced and new_item:
                current, start = [line[new_item.end():].strip()], number
            continue
        if not current:
            start = number
        current.append(stripped)
    if current:
        blocks.append((start, " ".join(current), False))
    return blocks


def sentences(path: str | Path) -> list[Sentence]:
    """Every sentence of a Markdown file, with its word count."""
    out = []
    for line, block, in_table in _blocks(Path(path).read_text()):
        plain = _LINK.sub(r"\1", _CODE_SPAN.sub("`code`", block))
        for part in _SPLIT.split(plain):
            words = len(part.split())
            if words:
                out.append(Sentence(str(path), line, words, part.strip(), in_table))
    return out


def report(paths: list[Path]) -> tuple[float, list[Sentence]]:
    """The median sentence length over all the files, and the sentences over MAX_WORDS."""
    found = [s for path in paths for s in sentences(path)]
    prose = [s.words for s in found if not s.in_table]
    median = statistics.median(prose) if prose else 0.0
    return median, [s for s in found if s.words > MAX_WORDS]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("root", nargs="?", type=Path, default=Path("."), help="the checkout")
    args = p.parse_args(argv)
    paths = [args.root / "README.md", *sorted((args.root / "docs").glob("*.md"))]
    median, long = report(paths)
    readme = len(paths[0].read_text().splitlines())
    docs = sum(len(path.read_text().splitlines()) for path in paths[1:])
    for s in long:
        print(f"{s.path}:{s.line}: {s.words} words: {s.text[:100]}")
    print(f"median sentence {median:g} words (at most {MEDIAN_WORDS}); {len(long)} over "
          f"{MAX_WORDS}; README.md {readme} lines (at most {README_LINES}); docs/ {docs} lines "
          f"(at most {DOCS_LINES})")
    ok = median <= MEDIAN_WORDS and not long and readme <= README_LINES and docs <= DOCS_LINES
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
