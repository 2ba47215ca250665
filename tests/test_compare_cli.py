"""`repdist compare`: models from folders, .npz and .pt files; the pairs table; bad input."""

import itertools
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import perturbed, random_model

from repdist.cli import main
from repdist.io import read_csv, read_parquet_metadata, write_parquet
from repdist.measures import compare
from repdist.io.representations import embeddings_frame, unembeddings_frame

N, K, M = 300, 6, 2
FAST = ["--num-samples", "20"]


def save_npz(path, f, g):
    np.savez(path, f=f, g=g)
    return path


def save_pt(path, f, g):
    torch = pytest.importorskip("torch")
    torch.save({"f": torch.tensor(f), "g": torch.tensor(g)}, path)
    return path


def save_folder(path, f, g):
    path.mkdir()
    n = len(f)
    write_parquet(path / "embeddings.parquet", embeddings_frame(f, np.zeros(n), np.zeros(n)), {})
    write_parquet(path / "unembeddings.parquet", unembeddings_frame(g), {})
    return path


@pytest.fixture
def family(rng):
    """Four related models: (f, g) arrays."""
    f, g = random_model(rng, n=N, k=K, m=M)
    return [(f, g)] + [perturbed(rng, f, g, noise=0.2 * (i + 1)) for i in range(3)]


@pytest.fixture
def model_paths(tmp_path, family):
    """The family in all three formats: a.npz, b.pt, c/ (parquet folder), d.npz."""
    savers = [(save_npz, "a.npz"), (save_pt, "b.pt"), (save_folder, "c"), (save_npz, "d.npz")]
    return [
        save(tmp_path / name, f, g) for (save, name), (f, g) in zip(savers, family, strict=True)
    ]


def run(*args):
    return main(["compare", *map(str, args)])


def assert_same_value(got, want, key):
    if isinstance(want, float) and np.isnan(want):
        assert np.isnan(got), key
    elif isinstance(want, (list, np.ndarray)):
        assert list(got) == list(want), key
    else:
        assert got == want, key


def test_every_format_gives_the_library_result(tmp_path, family, model_paths, capsys):
    out = tmp_path / "pairs.parquet"
    assert run(*model_paths, "-o", out, *FAST, "--seed", "3") == 0
    table = pd.read_parquet(out)
    assert list(table.model_a) == ["a", "a", "a", "b", "b", "c"]
    assert list(table.model_b) == ["b", "c", "d", "c", "d", "d"]
    for row, (i, j) in zip(table.itertuples(), itertools.combinations(range(4), 2), strict=True):
        want = compare(*family[i], *family[j], num_samples=20, seed=3)
        for key, value in want.items():
            if key == "m_svd_f":
                assert row.m_svd_f_min == min(value)
            else:
                assert_same_value(getattr(row, key), value, key)
    printed = capsys.readouterr().out
    assert "4 models, 6 pairs" in printed
    d_llv = table.d_llv
    assert (
        f"d_llv   mean {d_llv.mean():.6g}  min {d_llv.min():.6g}  max {d_llv.max():.6g}" in printed
    )


def test_jobs_in_processes_give_the_same_table(tmp_path, model_paths):
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    assert run(*model_paths, "-o", one, *FAST) == 0
    assert run(*model_paths, "-o", two, *FAST, "--jobs", "2") == 0
    # exact: the same computation in worker processes
    pd.testing.assert_frame_equal(pd.read_parquet(one), pd.read_parquet(two), check_exact=True)


def test_a_measures_subset_gives_only_those_columns_and_skips_the_rest(
    tmp_path, model_paths, monkeypatch
):
    import importlib

    prepared_module = importlib.import_module("repdist.measures.prepared")
    full, part = tmp_path / "full.parquet", tmp_path / "part.parquet"
    assert run(*model_paths, "-o", full, *FAST) == 0

    def no_knn(*args, **kwargs):
        raise AssertionError("k-NN graph built though mutual_knn_f was not asked for")

    monkeypatch.setattr(prepared_module, "knn_indices", no_knn)
    assert run(*model_paths, "-o", part, *FAST, "--measures", "d_llv, m_svd_f_min,mcca_f") == 0
    table = pd.read_parquet(part)
    assert list(table.columns) == [
        "model_a",
        "model_b",
        "d_llv",
        "m_svd_f_min",
        "m_svd_label_sets",
        "d_fg_estimate",
        "mcca_f",
        "mcca_f_components",
        "warning",
    ]
    # exact: the same computation, fewer columns
    pd.testing.assert_frame_equal(table, pd.read_parquet(full)[table.columns], check_exact=True)


def test_csv_and_parquet_outputs_hold_the_same_table_with_provenance(tmp_path, model_paths, capsys):
    as_csv, as_parquet = tmp_path / "pairs.csv", tmp_path / "pairs.parquet"
    assert run(*model_paths, "-o", as_csv, *FAST, "--lam", "0.01") == 0
    assert run(*model_paths, "-o", as_parquet, *FAST, "--lam", "0.01") == 0
    parquet = pd.read_parquet(as_parquet)
    plain_csv = pd.read_csv(as_csv)  # a plain CSV: provenance in pairs.csv.provenance.json
    assert as_csv.read_text().startswith("model_a,model_b,")
    pd.testing.assert_frame_equal(read_csv(as_csv), plain_csv)
    numbers = [c for c in parquet.columns if parquet[c].dtype.kind in "fiub"]
    pd.testing.assert_frame_equal(plain_csv[numbers], parquet[numbers], rtol=1e-15)
    exact = pd.read_csv(as_csv, float_precision="round_trip")  # 17 digits written
    # exact: a round trip, 17 digits
    pd.testing.assert_frame_equal(exact[numbers], parquet[numbers], check_exact=True)
    assert plain_csv.input_set.tolist() == [str(s.tolist()) for s in parquet.input_set]
    meta = read_parquet_metadata(as_parquet)
    assert meta["tool"] == "repdist compare"
    assert meta["settings"]["lam"] == 0.01 and meta["settings"]["num_samples"] == 20
    assert [m["path"] for m in meta["models"]] == [str(p) for p in model_paths]
    assert {"package_version", "numpy_version", "git_commit"} <= set(meta)
    capsys.readouterr()
    assert main(["info", str(as_csv)]) == 0
    assert "tool: repdist compare" in capsys.readouterr().out


def test_sampled_label_sets_through_the_cli(tmp_path, rng, capsys):
    """K = 14, M = 5: C(12, 5) = 792 label sets; --max-label-sets 100 samples 100 of them."""
    f, g = random_model(rng, n=700, k=14, m=5)
    f2, g2 = perturbed(rng, f, g, noise=0.5)
    a, b = save_npz(tmp_path / "a.npz", f, g), save_npz(tmp_path / "b.npz", f2, g2)
    out = tmp_path / "pairs.parquet"
    assert run(a, b, "-o", out, *FAST, "--max-label-sets", "100") == 0
    row = pd.read_parquet(out).iloc[0]
    want = compare(f, g, f2, g2, num_samples=20, max_label_sets=100)
    assert row.m_svd_label_sets == 100 and bool(row.d_fg_estimate)
    assert row.d_fg == want["d_fg"] and row.m_svd_f_min == min(want["m_svd_f"])
    assert "d_fg is an estimate" in capsys.readouterr().out


def test_colliding_names_are_told_apart_by_their_folders(tmp_path, family):
    paths = []
    for seed in (0, 1):
        (tmp_path / f"seed{seed}").mkdir()
        paths.append(save_npz(tmp_path / f"seed{seed}" / "model.npz", *family[seed]))
    out = tmp_path / "pairs.csv"
    assert run(*paths, "-o", out, *FAST) == 0
    row = read_csv(out).iloc[0]
    assert (row.model_a, row.model_b) == ("seed0/model", "seed1/model")


def test_names_are_lengthened_alike_for_every_model(tmp_path):
    from repdist.io.representations import model_names

    folders = [tmp_path / w / f"seed{s}" for w, s in
               (("w16", 0), ("w16", 1), ("w32", 0), ("w32", 1), ("w32", 2))]
    for folder in folders:
        folder.mkdir(parents=True)
    assert model_names(folders) == ["w16/seed0", "w16/seed1", "w32/seed0", "w32/seed1",
                                    "w32/seed2"]
    assert model_names(folders[::2]) == ["w16/seed0", "w32/seed0", "w32/seed2"]
    assert model_names([folders[0], folders[1]]) == ["seed0", "seed1"]
    assert model_names([folders[0], folders[0]]) == ["seed0", "seed0#2"]


def test_progress_is_reported_on_stderr_for_long_runs(tmp_path, model_paths, monkeypatch, capsys):
    from repdist.measures import pairs

    monkeypatch.setattr(pairs, "PROGRESS_EVERY_S", 0.0)
    assert run(*model_paths, "-o", tmp_path / "p.parquet", *FAST) == 0
    err = capsys.readouterr().err
    assert "repdist compare: 1/6 pairs (17%)" in err and "6/6 pairs" in err


def _bad_cases(tmp_path, family):
    """Per kind of bad input, a function that writes its files and returns (models, expected
    message fragments); files are written only for the case at hand (several use b.npz)."""
    (f, g), (f2, g2) = family[:2]
    good = save_npz(tmp_path / "good.npz", f, g)
    nan_f = f2.copy()
    nan_f[5, 1] = np.nan
    inf_g = g2.copy()
    inf_g[2, 0] = -np.inf
    empty = tmp_path / "empty"
    empty.mkdir()
    half = tmp_path / "half"
    half.mkdir()
    write_parquet(half / "embeddings.parquet", embeddings_frame(f2, np.zeros(N), np.zeros(N)), {})
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file")
    np.savez(tmp_path / "no_g.npz", f=f2, h=g2)
    np.savez(tmp_path / "small_k.npz", f=f2, g=g2[:3])
    return {
        "fewer N": lambda: (
            [good, save_npz(tmp_path / "b.npz", f2[:-1], g2)],
            ["b.npz", f"{N - 1} x {M}", f"{N} x {M}", "good.npz"],
        ),
        "other K": lambda: (
            [good, save_npz(tmp_path / "b.npz", f2, np.vstack([g2, g2[:1]]))],
            ["b.npz", f"K={K + 1}", f"K={K}"],
        ),
        "K below M + 2": lambda: (
            [save_npz(tmp_path / "a.npz", f[:, :1].repeat(3, 1), g[:4, :1].repeat(3, 1)), good],
            ["a.npz", "K=4", "M + 2 = 5"],
        ),
        "f and g of different M": lambda: (
            [good, save_npz(tmp_path / "b.npz", f2, g2[:, :1])],
            ["b.npz", f"M={M}", "g has 1"],
        ),
        "NaN in f": lambda: (
            [good, save_npz(tmp_path / "b.npz", nan_f, g2)],
            ["b.npz", "f has 1 NaN or infinite", "row 5, column 1"],
        ),
        "inf in g": lambda: (
            [save_npz(tmp_path / "b.npz", f2, inf_g), good],
            ["b.npz", "g has 1 NaN or infinite", "row 2, column 0"],
        ),
        "missing file": lambda: ([good, tmp_path / "gone.npz"], ["gone.npz", "no such file"]),
        "unreadable file": lambda: ([good, garbage], ["garbage.npz", "cannot read"]),
        "empty folder": lambda: (
            [good, empty],
            ["empty", "no embeddings.parquet and no unembeddings"],
        ),
        "folder without unembeddings": lambda: ([good, half], ["half", "no unembeddings.parquet"]),
        "npz without g": lambda: (
            [good, tmp_path / "no_g.npz"],
            ["no_g.npz", "no array 'g'", "f, h"],
        ),
        "unknown format": lambda: (
            [good, tmp_path / "empty.txt"],
            ["empty.txt", "unknown model format"],
        ),
        "one model": lambda: ([good], ["at least two models", "got 1"]),
        "too few labels for both": lambda: (
            [tmp_path / "small_k.npz", tmp_path / "small_k.npz"],
            ["small_k.npz", "K=3", "M + 2 = 4"],
        ),
        "too few inputs for num_samples": lambda: (
            [good, save_npz(tmp_path / "b.npz", f2, g2)],
            ["num_samples*(M+1) = 200*3 = 600", f"N = {N}"],
        ),
    }


BAD = [
    "fewer N",
    "other K",
    "K below M + 2",
    "f and g of different M",
    "NaN in f",
    "inf in g",
    "missing file",
    "unreadable file",
    "empty folder",
    "folder without unembeddings",
    "npz without g",
    "unknown format",
    "one model",
    "too few labels for both",
    "too few inputs for num_samples",
]


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error_and_writes_nothing(case, tmp_path, family, capsys):
    (tmp_path / "empty.txt").write_text("")
    models, fragments = _bad_cases(tmp_path, family)[case]()
    out = tmp_path / "out" / "pairs.parquet"
    samples = ["--num-samples", "200"] if case == "too few inputs for num_samples" else FAST
    assert run(*models, "-o", out, *samples) == 2
    err = capsys.readouterr().err
    assert err.startswith("repdist compare: error: ")
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert not out.exists()
    assert not (out.parent.exists() and list(out.parent.iterdir()))  # no temporary left


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["-o", "pairs.txt"], "must end in .parquet or .csv, got '.txt'"),
        (["-o", "pairs.csv", "--measures", "kl,dllv"], "unknown measure(s) ['dllv']"),
        (["-o", "pairs.csv", "--max-label-sets", "0"], "max_label_sets must be a positive integer"),
        (["-o", "pairs.csv", "--jobs", "0"], "--jobs must be at least 1"),
        (["-o", "pairs.csv", "--null", "-2"], "null permutations must be an integer >= 0"),
        (["-o", "pairs.csv", "--null", "9", "--null-measures", "mcca"], "unknown ['mcca']"),
    ],
)
def test_bad_options_are_refused_before_reading_models(
    args, fragment, tmp_path, capsys, monkeypatch
):
    from repdist.experiments.models import groups as models

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(models, "load_model", lambda p: pytest.fail("read a model"))
    assert main(["compare", "a.npz", "b.npz", *args]) == 2
    assert fragment in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_exits_2_on_bad_input_and_0_on_good(tmp_path, model_paths):
    out = tmp_path / "pairs.parquet"
    cmd = [sys.executable, "-m", "repdist", "compare", "-o", str(out), *FAST]
    bad = subprocess.run([*cmd, str(model_paths[0])], capture_output=True, text=True)
    assert bad.returncode == 2 and "at least two models" in bad.stderr and not out.exists()
    good = subprocess.run([*cmd, *map(str, model_paths[:2])], capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert "2 models, 1 pair " in good.stdout and len(pd.read_parquet(out)) == 1


def test_an_existing_output_survives_a_failed_run(tmp_path, family, model_paths):
    out = tmp_path / "pairs.csv"
    assert run(*model_paths[:2], "-o", out, *FAST) == 0
    before = out.read_bytes()
    assert run(*model_paths[:2], "-o", out, "--num-samples", "200") == 2  # needs 600 inputs
    assert out.read_bytes() == before
    sidecar = out.with_name(out.name + ".provenance.json")
    assert json.loads(sidecar.read_text())["settings"]["num_samples"] == 20


def test_two_compares_writing_one_file_at_once_leave_one_whole_table(tmp_path, rng):
    """Two `repdist compare -o same.parquet` started together (3 and 4 models): the file that
    stands is one of the two whole tables, never a mix or a torn file, and no temporary is
    left."""
    models = [save_npz(tmp_path / f"m{i}.npz", *random_model(rng, n=N, k=K)) for i in range(4)]
    out = tmp_path / "same.parquet"
    runs = [subprocess.Popen([sys.executable, "-m", "repdist", "compare", *map(str, group), "-o",
                              str(out), *FAST], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for group in (models[:3], models)]
    assert all(r.wait(timeout=300) == 0 for r in runs)
    table = pd.read_parquet(out)
    assert len(table) in (3, 6)
    meta = read_parquet_metadata(out)
    assert len(meta["models"]) == {3: 3, 6: 4}[len(table)]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_full_disk_names_the_output_and_leaves_nothing_behind(tmp_path, rng):
    """The output cannot be written (a file-size limit stands in for a full disk): exit status 2
    naming the file and the cause, nothing under its name or a temporary; with room again, the
    same command writes the table."""
    models = [save_npz(tmp_path / f"m{i}.npz", *random_model(rng, n=N, k=K)) for i in range(3)]
    out = tmp_path / "pairs.parquet"
    command = " ".join([sys.executable, "-m", "repdist", "compare", *map(str, models), "-o",
                        str(out), *FAST])
    full = subprocess.run(["bash", "-c", f"ulimit -f 4; {command}"], capture_output=True,
                          text=True, timeout=300)
    assert full.returncode == 2, full.stderr
    assert f"cannot write {out}: " in full.stderr and "File too large" in full.stderr
    assert "Traceback" not in full.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m0.npz", "m1.npz", "m2.npz"]
    again = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and len(pd.read_parquet(out)) == 3


def test_the_low_rank_method_is_chosen_from_the_command_line(tmp_path, rng, capsys):
    """--method low_rank with every pivot searched gives the exact method's numbers; a pivot
    sample gives a t1 at or above them, said in words on stderr and in the warning column."""
    paths = [save_npz(tmp_path / f"m{i}.npz", *random_model(rng, n=N, k=40)) for i in range(2)]
    tables = {}
    for name, flags in {"exact": ["--method", "exact"],
                        "low_rank": ["--method", "low_rank", "--max-pivots", "40"],
                        "sampled": ["--method", "low_rank", "--max-pivots", "5"]}.items():
        out = tmp_path / f"{name}.csv"
        capsys.readouterr()
        assert run(*paths, "-o", out, *FAST, "--max-label-sets", "30", *flags) == 0
        tables[name] = read_csv(out)
        err = capsys.readouterr().err
        if name == "sampled":  # 5 of 40 pivots cannot prove the minimum: said, not silent
            assert "repdist compare: warning: d_LLV's pivot search stopped at max_pivots=5 " \
                   "of K=40" in err and "PivotSampleWarning" not in err
            assert "max_pivots=5 of K=40" in tables[name]["warning"][0]
    for column in ("kl", "d_llv", "t2", "t3", "t4", "d_fg", "mcca_f", "mcca_g", "d_logit"):
        np.testing.assert_allclose(tables["low_rank"][column], tables["exact"][column],
                                   rtol=1e-9, atol=1e-12)
    assert (tables["sampled"]["t1"] >= tables["exact"]["t1"] - 1e-12).all()
    with pytest.raises(SystemExit):  # argparse names the choices
        run(*paths, "-o", tmp_path / "x.csv", "--method", "fast")


def test_the_summary_counts_the_label_sets_of_the_pairs_estimated(tmp_path, rng, capsys):
    """Widths 5, 4, 5: the first pair (different widths) has no label sets, the second (5 and
    5) 100 of 792; the summary says 100, for 1 of 3 pairs, not the first row's 0."""
    f, g = random_model(rng, n=700, k=14, m=5)
    f2, g2 = perturbed(rng, f, g, noise=0.5)
    narrow, narrow_g = random_model(rng, n=700, k=14, m=4)
    paths = [save_npz(tmp_path / "a.npz", f, g), save_npz(tmp_path / "n.npz", narrow, narrow_g),
             save_npz(tmp_path / "b.npz", f2, g2)]
    assert run(*paths, "-o", tmp_path / "pairs.parquet", *FAST, "--max-label-sets", "100") == 0
    table = pd.read_parquet(tmp_path / "pairs.parquet")
    assert table["m_svd_label_sets"].tolist() == [0, 100, 0]
    out = capsys.readouterr().out
    assert "estimate (a lower bound) for 1 of 3 pairs: m_SVD_f ran on a sample of 100 label " \
           "sets" in out


def test_null_puts_each_score_beside_its_chance_level(tmp_path, rng, capsys):
    """`--null K`: the library's null columns (tau, p, calibrated of the asked measures) and a
    chance line under each summarised score; `--null 0` (the default): the table as before."""
    f, g = random_model(rng)
    unrelated = random_model(rng)
    paths = [save_npz(tmp_path / "a.npz", f, g),
             save_npz(tmp_path / "b.npz", *perturbed(rng, f, g, noise=0.1)),
             save_npz(tmp_path / "c.npz", *unrelated)]
    out = tmp_path / "pairs.csv"
    assert run(*paths, "-o", out, "--null", 50, "--null-measures", "mcca_f,d_llv") == 0
    table = read_csv(out)
    assert list(table.columns[-6:]) == [f"{m}_{s}" for m in ("d_llv", "mcca_f")
                                        for s in ("tau", "p", "calibrated")]
    related = table[(table["model_a"] == "a") & (table["model_b"] == "b")].iloc[0]
    assert related["mcca_f_p"] == 1 / 51 and related["d_llv_p"] == 1 / 51
    printed = capsys.readouterr().out
    assert "chance: tau mean" in printed and "pairs above chance (p <= 0.05)" in printed
    assert "pairs below chance (p <= 0.05)" in printed  # d_llv: a distance
    assert run(*paths, "-o", tmp_path / "plain.csv") == 0
    assert not any(c.endswith("_tau") for c in read_csv(tmp_path / "plain.csv").columns)
