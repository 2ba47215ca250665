"""Outputs appear complete or not at all."""

import pytest

from repdist.io import atomic_path, config_hash, provenance, write_text


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out" / "table.csv"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half of a tab")
            raise RuntimeError("killed mid-write")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_atomic_write_replaces_existing_file(tmp_path):
    target = tmp_path / "x.txt"
    write_text(target, "old")
    write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_config_hash_is_stable_and_order_free():
    assert config_hash({"a": 1, "b": [1, 2]}) == config_hash({"b": [1, 2], "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_provenance_names_versions():
    info = provenance({"seed": 0})
    assert {"package_version", "numpy_version", "torch_version", "config_hash"} <= set(info)


def test_parquet_metadata_round_trip_and_cli(tmp_path, capsys):
    import pandas as pd

    from repdist.__main__ import main
    from repdist.io import read_parquet_metadata, write_parquet

    path = tmp_path / "pairs.parquet"
    write_parquet(path, pd.DataFrame({"seed_a": [0], "d_llv": [0.5]}),
                  provenance({"seed": 0}, experiment="synthetic", K=4))
    meta = read_parquet_metadata(path)
    assert meta["experiment"] == "synthetic" and meta["K"] == 4 and "config_hash" in meta
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "rows: 1" in out and "experiment: synthetic" in out and "torch_version" in out
    assert main(["info", str(tmp_path / "missing.parquet")]) == 2
