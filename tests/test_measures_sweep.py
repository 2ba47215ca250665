"""benchmarks/measures_sweep.py at toy size: a cell that compare refuses is reported with its
message and does not stop the larger ones; a cell past a limit stops the larger cells of its
measure (they are reported as not run)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = [sys.executable, str(ROOT / "benchmarks" / "measures_sweep.py"), "--n", "300"]


def sweep(tmp_path, *args):
    out = tmp_path / "rows.json"
    done = subprocess.run([*SWEEP, *args, "--json", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "| K | M | kl | d_llv | d_fg | mcca_f | mcca_g | paper |" in done.stdout
    return {(r["k"], r["measure"]): r for r in json.loads(out.read_text())}


def test_refused_cells_are_named_and_the_sweep_goes_on(tmp_path):
    rows = sweep(tmp_path, "--k", "4", "12", "--m", "4")
    assert all("K-2 >= M" in rows[(4, m)]["status"] for m in ("d_fg", "paper"))
    assert all(rows[(4, m)]["status"] == "ok" for m in ("kl", "d_llv", "mcca_f"))  # only m_SVD_f asks
    ok = rows[(12, "d_llv")]
    assert ok["status"] == "ok" and ok["seconds"] > 0 and ok["peak_rss_gib"] > 0
    assert ok["num_samples"] == 60 and ok["value"] > 0  # 300 // (M + 1)
    assert ok["method"] == "exact" and rows[(12, "paper")]["value"] == ok["value"]


def test_the_pivot_error_mode_compares_the_sampled_search_with_the_exact(tmp_path):
    out = tmp_path / "pivots.json"
    done = subprocess.run([*SWEEP, "--pivot-error", "--k", "600", "--m", "4", "--seeds", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())
    assert len(rows) == 2
    for row in rows:  # 512 of 600 pivots: at or above the minimum over every pivot
        assert row["t1_sampled"] >= row["t1_exact"] * (1 - 1e-9)
        assert abs(row["t1_every_pivot"] - row["t1_exact"]) <= 1e-9 * row["t1_exact"]


def test_a_cell_past_its_time_limit_stops_the_larger_ones(tmp_path):
    rows = sweep(tmp_path, "--k", "12", "20", "--m", "4", "--limit-s", "0.001")
    assert rows[(12, "kl")]["status"] == "> 0.001 s"
    assert rows[(20, "kl")]["status"].startswith("not run (K=12, M=4")
