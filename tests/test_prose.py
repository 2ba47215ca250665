"""The docs read in plain short sentences: README.md and docs/*.md together have a median
sentence of at most 20 words and none over 60 (tests/prose.py's rule: paragraphs and list
items are sentences, table cells count toward the longest only), the README at most 350 lines and
docs/ at most 2,000. Then the splitter itself, on a paragraph whose sentences are counted by hand,
and the report on a sentence just over the limit."""

from __future__ import annotations

from pathlib import Path

import prose  # beside this file: tests/ is on pytest's path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_the_readme_and_docs_read_in_short_sentences():
    median, long = prose.report([README, *DOCS])
    assert median <= prose.MEDIAN_WORDS, f"median sentence {median} words"
    assert long == [], "sentences over {} words:\n{}".format(prose.MAX_WORDS, "\n".join(
        f"{Path(s.path).relative_to(ROOT)}:{s.line}: {s.words} words: {s.text[:80]}"
        for s in long))


def test_the_readme_stays_within_its_lines():
    assert lines(README) <= prose.README_LINES, \
        f"README.md has {lines(README)} lines (at most {prose.README_LINES})"


def test_the_docs_stay_within_their_lines():
    total = sum(lines(path) for path in DOCS)
    assert total <= prose.DOCS_LINES, f"docs/ has {total} lines (at most {prose.DOCS_LINES})"


PAGE = """# A heading is not a sentence

The quick DAG runs every branch. `make quick` runs it
offline, in [two minutes](docs/speed.md)! Does it? Yes.

- a list item is a sentence of its own
- Fig. 3 splits after the abbreviation, e.g. here

```bash
make quick   # code is left out. So is this.
```

<!-- a comment
is left out. Entirely. -->

| term | meaning |
|---|---|
| `kl` | A cell of a table. Its sentences count too |
"""


def test_the_splitter_counts_a_known_paragraph(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    found = [(s.line, s.words, s.in_table) for s in prose.sentences(page)]
    assert found == [
        (3, 6, False),   # The quick DAG runs every branch.
        (3, 7, False),   # `make quick` runs it offline, in two minutes!  (a span, a link's text)
        (3, 2, False),   # Does it?
        (3, 1, False),   # Yes.
        (6, 9, False),   # a list item is a sentence of its own
        (7, 1, False),   # Fig.  (a full stop before a digit ends a sentence)
        (7, 7, False),   # 3 splits after the abbreviation, e.g. here  (not before lower case)
        (16, 1, True),   # term  (a header cell is a cell)
        (16, 1, True),   # meaning
        (18, 1, True),   # `kl`
        (18, 5, True),   # A cell of a table.
        (18, 4, True),   # Its sentences count too
    ]


def test_a_sentence_over_the_limit_is_reported_and_one_at_it_is_not(tmp_path):
    at, over = tmp_path / "at.md", tmp_path / "over.md"
    at.write_text(" ".join(["word"] * prose.MAX_WORDS) + ".\n")
    over.write_text(" ".join(["word"] * (prose.MAX_WORDS + 1)) + ".\n\nShort one here.\n")
    assert prose.report([at]) == (prose.MAX_WORDS, [])
    median, long = prose.report([over])
    assert [(s.line, s.words) for s in long] == [(1, prose.MAX_WORDS + 1)]
    assert median == (prose.MAX_WORDS + 1 + 3) / 2
