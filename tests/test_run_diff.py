"""`repdist diff A B`: two result folders hold the same data, or the differences are named."""

import pandas as pd

from repdist.cli import main
from repdist.io import write_csv, write_parquet, write_table_text


def make_run(root, value=1.0, commit="a"):
    meta = {"git_commit": commit}  # provenance may differ between runs: not data
    write_parquet(root / "synthetic" / "pairs.parquet", pd.DataFrame({"d_llv": [0.5, value]}),
                  meta)
    write_csv(root / "tables" / "t.csv", pd.DataFrame({"kl": [value]}), meta)
    write_table_text(root / "tables" / "t.tex", f"{value} \\\\\n", meta)
    (root / "logs").mkdir(exist_ok=True)
    (root / "logs" / "x.log").write_text(f"timing {commit}\n")  # logs are not data


def test_equal_runs_differ_only_in_provenance(tmp_path, capsys):
    make_run(tmp_path / "a", commit="a")
    make_run(tmp_path / "b", commit="b")
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "3 data files compared, 0 differences" in capsys.readouterr().out


def test_a_changed_value_and_a_missing_file_are_named(tmp_path, capsys):
    make_run(tmp_path / "a")
    make_run(tmp_path / "b", value=2.0)
    (tmp_path / "b" / "tables" / "t.tex").unlink()
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "synthetic/pairs.parquet" in out and "tables/t.csv: line 2: '1' != '2'" in out
    assert "only in" in out and "tables/t.tex" in out
    assert "2 data files compared, 3 differences" in out


def test_a_missing_folder_is_an_error(tmp_path, capsys):
    assert main(["diff", str(tmp_path / "none"), str(tmp_path)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_one_file_and_one_difference_are_counted_in_the_singular(tmp_path, capsys):
    for root, value in ((tmp_path / "a", 1.0), (tmp_path / "b", 2.0)):
        write_csv(root / "t.csv", pd.DataFrame({"kl": [value]}), {"git_commit": "a"})
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert "repdist diff: 1 data file compared, 1 difference\n" in capsys.readouterr().out
