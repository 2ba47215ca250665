"""The README's exit-status table of `repdist compare` is true: every row is run here, with the
status it states, a message in words on stderr and never a traceback. And the sample rules
listed in docs/measures.md are the code's."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from repdist.io.representations import embeddings_frame, unembeddings_frame
from repdist.measures.sample_rules import rules_text

ROOT = Path(__file__).resolve().parents[1]
N, K, M = 80, 6, 2
FAST = ["--num-samples", "4", "--measures", "kl,d_llv,d_fg,mcca_f,cka_f"]


def rows():
    """(exit status, case) of each row of the README's exit-status table."""
    text = (ROOT / "README.md").read_text()
    table = text.split("<!-- exit statuses:")[1].split("\n\n")[0]
    found = re.findall(r"^\| (\d) \| (.+?) \| .+ \|$", table, flags=re.M)
    return [(int(status), case) for status, case in found]


def npz(path, f, g, **more):
    np.savez(path, f=f, g=g, **more)
    return str(path)


def model(seed, n=N, k=K, m=M):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, m)), rng.normal(size=(k, m))


def folder(path, f, g, mangle=lambda frame: frame):
    path.mkdir()
    mangle(embeddings_frame(f, np.zeros(len(f)), np.zeros(len(f)))).to_parquet(
        path / "embeddings.parquet")
    unembeddings_frame(g).to_parquet(path / "unembeddings.parquet")
    return str(path)


def case_args(case, tmp):
    """The command-line arguments (models and options) of one row of the table."""
    good = npz(tmp / "good.npz", *model(0))
    other = npz(tmp / "other.npz", *model(1))
    f, g = model(2)
    zero = f.copy()
    zero[:] = 1.0
    big = npz(tmp / "big.npz", f * 1e80, g * 1e80)
    return {
        "good models": [good, other],
        "models of different widths M": [good, npz(tmp / "m3.npz", *model(3, m=3))],
        "a constant f or an all-zero g": [good, npz(tmp / "flat.npz", zero, g * 0)],
        "stdout closed early (`\\| head -c 1`)": [good, other],
        "a missing, unreadable or unknown file": [good, str(tmp / "gone.npz")],
        "a foreign column, a duplicate or missing index or label": [
            good, folder(tmp / "foreign", f, g, lambda e: e.assign(f_norm=1.0))],
        "other inputs or labels than the first model's": [good, npz(tmp / "n.npz",
                                                                    *model(4, n=N - 1))],
        "complex, text or boolean values, NaN or infinity": [
            good, npz(tmp / "complex.npz", f.astype(complex), g)],
        "values whose squares overflow float64 (above 1e150)": [good, big],
        "K < M + 2 labels, or N < M + 1 inputs for d_LLV": [
            npz(tmp / "k3a.npz", *model(5, k=3)), npz(tmp / "k3b.npz", *model(6, k=3))],
        "a bad option (`--lam -1`, `--num-samples 0`, `--match any`)": [good, other,
                                                                        "--lam", "-1"],
        "`--strict` and a measure is NaN": [good, npz(tmp / "m3.npz", *model(3, m=3)),
                                            "--strict"],
    }[case]


def test_the_table_has_every_row_tested():
    assert len(rows()) == 12 and rows()[0] == (0, "good models")


@pytest.mark.parametrize("status,case", rows(), ids=[case for _, case in rows()])
def test_each_row_of_the_exit_status_table(status, case, tmp_path):
    out = tmp_path / "pairs.csv"
    args = [sys.executable, "-m", "repdist", "compare", *case_args(case, tmp_path), "-o",
            str(out), *FAST]
    if "closed early" in case:  # the command's own status, under pipefail
        command = "set -o pipefail; " + " ".join(f"'{a}'" for a in args) + " | head -c 1"
        done = subprocess.run(command, shell=True, capture_output=True, text=True,
                              executable="/bin/bash")
    else:
        done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and "Warning:" not in done.stderr, done.stderr
    assert out.exists() == (status != 2)
    if status == 2:
        assert done.stderr.startswith("repdist compare: error: ") or "usage:" in done.stderr
    if status != 2 and ("NaN" in case or "widths" in case or "constant" in case):
        assert re.search(r"repdist compare: [\w, ]+: NaN for 1 of 1 pair: \S", done.stderr)


def test_the_docs_list_the_code_sample_rules():
    docs = (ROOT / "docs" / "measures.md").read_text()
    listed = docs.split("<!-- sample rules:")[1].split("\n\n")[0].splitlines()[1:]
    assert listed == [f"- {line}" for line in rules_text()]


@pytest.mark.parametrize("f,g,fragment", [
    (np.zeros((5, 0)), np.zeros((4, 0)), "f must be a non-empty 2-D array (N x M)"),
    (np.ones((5, 2)) * 1j, np.ones((4, 2)), "f holds complex numbers (complex128)"),
    (np.full((5, 2), "a"), np.ones((4, 2)), "f is not a numeric array"),
    (np.ones((5, 2)), np.ones((4, 3)), "f has M=2 columns but g has 3"),
    (np.ones((1, 2)), np.ones((4, 2)), "need a set of M + 1 = 3 distinct inputs, but N = 1"),
])
def test_the_python_api_refuses_the_same_inputs_in_words(f, g, fragment):
    """compare() checks its arrays where the command line does (io.validation): M = 0 once
    ended in a memoryview error, complex arrays lost their imaginary part."""
    from repdist.io.validation import InputError
    from repdist.measures import compare

    with pytest.raises(InputError) as err:
        compare(f, g, f, g, num_samples=1)
    assert fragment in str(err.value)
