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

    from repdist.cli import main
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


# A child process writes the same output again and again; the parent SIGKILLs it while a write
# is in flight (its temporary file exists). The target must then be absent or a complete earlier
# version, never a torn file.
WRITER = r"""
import sys
import numpy as np
kind, target, version = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(version)
if kind == "parquet":
    import pandas as pd
    from repdist.io import write_parquet
    frame = pd.DataFrame(rng.normal(size=(400_000, 8)), columns=[f"f_{i}" for i in range(8)])
    write = lambda: write_parquet(target, frame, {"version": version})
elif kind == "checkpoint":
    import torch
    from repdist.io import atomic_path
    state = {"step": version, "w": torch.from_numpy(rng.normal(size=(4_000_000,)))}
    def write():
        with atomic_path(target) as tmp:
            torch.save(state, tmp)
else:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from repdist.figures.style import save_figure
    def write():
        fig, ax = plt.subplots()
        ax.scatter(*rng.normal(size=(2, 60_000)), s=1)
        save_figure(fig, [target])
while True:
    print("writing", flush=True)
    write()
"""


def _read_back(kind, path):
    if kind == "parquet":
        import pandas as pd

        return pd.read_parquet(path).shape == (400_000, 8)
    if kind == "checkpoint":
        import torch

        return torch.load(path, weights_only=True)["w"].shape == (4_000_000,)
    return b"%%EOF" in path.read_bytes()[-32:]  # a PDF ends with its trailer


@pytest.mark.parametrize("kind,name", [("parquet", "pairs.parquet"), ("checkpoint", "checkpoint.pt"),
                                       ("figure", "figure.pdf")])
def test_sigkill_during_a_write_leaves_a_complete_file(tmp_path, kind, name):
    import signal
    import subprocess
    import sys
    import time

    caught = []
    target = tmp_path / name
    for delay in (0.0, 0.02):
        child = subprocess.Popen([sys.executable, "-c", WRITER, kind, str(target), "1"],
                                 stdout=subprocess.PIPE, text=True)
        for _ in range(2):  # the first write completes; kill during the second
            assert child.stdout.readline().strip() == "writing"
        # its temporary file open (however slowly a loaded machine schedules the writer)
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(f".{name}.*.tmp")) and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(delay)
        in_flight = bool(list(tmp_path.glob(f".{name}.*.tmp")))
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert target.exists() and _read_back(kind, target), f"torn {kind} after a SIGKILL"
        for leftover in tmp_path.glob(f".{name}.*.tmp"):
            leftover.unlink()
        caught.append(in_flight)
    assert any(caught), "no kill landed while a write was in flight"


def test_tables_carry_provenance_csv_in_a_sidecar(tmp_path, capsys):
    """LaTeX and Markdown: a first comment line; CSV: a plain CSV (header first, as pandas,
    spreadsheets and R read it) with its provenance in <name>.csv.provenance.json."""
    import pandas as pd

    from repdist.cli import main
    from repdist.io import (
        read_csv,
        read_table_metadata,
        table_provenance,
        write_csv,
        write_table_text,
    )

    meta = table_provenance({"seed": 7, "x": 1}, experiment="kl_table")
    assert meta["seed"] == 7 and {"git_commit", "config_hash", "torch_version"} <= set(meta)
    frame = pd.DataFrame({"rho": [1, 20], "kl": [0.78, 2.7e-5]})
    write_csv(tmp_path / "t.csv", frame, meta)
    write_table_text(tmp_path / "t.tex", "\\begin{tabular}{ll}\\end{tabular}\n", meta)
    write_table_text(tmp_path / "t.md", "| a |\n", meta)
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == "rho,kl"
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "t.csv"), frame)
    assert (tmp_path / "t.csv.provenance.json").exists()
    assert (tmp_path / "t.tex").read_text().startswith("% repdist provenance: {")
    assert (tmp_path / "t.md").read_text().splitlines()[0].endswith(" -->")
    for name in ("t.csv", "t.tex", "t.md"):
        assert read_table_metadata(tmp_path / name) == json_round_trip(meta)
    pd.testing.assert_frame_equal(read_csv(tmp_path / "t.csv"), frame)
    assert main(["info", str(tmp_path / "t.csv")]) == 0
    assert f"config_hash: {meta['config_hash']}" in capsys.readouterr().out
    write_csv(tmp_path / "bare.csv", frame)
    assert read_table_metadata(tmp_path / "bare.csv") == {}
    with pytest.raises(SystemExit, match="no repdist provenance"):
        main(["info", str(tmp_path / "bare.csv")])


def json_round_trip(obj):
    import json

    return json.loads(json.dumps(obj))


def test_an_atomic_folder_appears_whole_or_not_at_all(tmp_path):
    """A failure mid-write leaves no folder and no temporary one; a finished folder replaces
    the one that was there (never merged with it)."""
    from repdist.io import atomic_folder

    target = tmp_path / "out" / "layers"
    with pytest.raises(RuntimeError):
        with atomic_folder(target) as tmp:
            (tmp / "layer0.parquet").write_text("half")
            (tmp / "sub").mkdir()
            raise RuntimeError("killed mid-write")
    assert not target.exists() and list(target.parent.iterdir()) == []
    with atomic_folder(target) as tmp:
        assert tmp.parent == target.parent and tmp.is_dir() and not list(tmp.iterdir())
        (tmp / "old.txt").write_text("old")
    with atomic_folder(target) as tmp:
        (tmp / "new.txt").write_text("new")
        assert (target / "old.txt").exists()  # the previous folder stands until the end
    assert [p.name for p in target.iterdir()] == ["new.txt"]
    assert [p.name for p in target.parent.iterdir()] == ["layers"]
