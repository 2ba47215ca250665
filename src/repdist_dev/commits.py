"""Commit messages a reader of `git log --oneline` can read: a subject of at most 72
characters, the detail in the body after one blank line. CI checks every commit since the rule
began (`python -m repdist_dev.commits`); `check_message` is the rule itself."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

MAX_SUBJECT = 72
# the last commit before the rule: older subjects are history, left as they are
RULE_SINCE = "a3d1122"


def check_message(message: str) -> list[str]:
    """What is wrong with one commit message (empty when nothing is)."""
    lines = message.rstrip("\n").split("\n")
    problems = []
    if not lines[0].strip():
        problems.append("the subject is empty")
    if len(lines[0]) > MAX_SUBJECT:
        problems.append(f"the subject has {len(lines[0])} characters (at most {MAX_SUBJECT})")
    if len(lines) > 1 and lines[1].strip():
        problems.append("no blank line between the subject and the body")
    return problems


def messages(since: str, repo: Path) -> list[tuple[str, str]]:
    """(short hash, message) of each commit after `since`, oldest first."""
    out = subprocess.run(["git", "-C", str(repo), "log", "--reverse", "--format=%h%x00%B%x01",
                          f"{since}..HEAD"], capture_output=True, text=True, check=True).stdout
    found = []
    for record in filter(str.strip, out.split("\x01")):
        commit, _, message = record.strip("\n").partition("\x00")
        found.append((commit, message))
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--since", default=RULE_SINCE, help="check the commits after this one")
    p.add_argument("--repo", type=Path, default=Path("."), help="the checkout (default: here)")
    args = p.parse_args(argv)
    known = subprocess.run(["git", "-C", str(args.repo), "cat-file", "-e",
                            f"{args.since}^{{commit}}"],
                           capture_output=True)
    if known.returncode:
        print(f"commit messages not checked: {args.since} is not in this clone's history")
        return 0
    bad = [(commit, problem) for commit, message in messages(args.since, args.repo)
           for problem in check_message(message)]
    for commit, problem in bad:
        print(f"commit {commit}: {problem}", file=sys.stderr)
    print(f"commit messages since {args.since}: {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
