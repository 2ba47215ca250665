"""The Snakemake workflow: lint, formatting, and the quick DAG end to end."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from repdist.io import read_csv

from conftest import SNAKEMAKE

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def assert_image(path):
    """A real figure: a PDF with its header, or a PNG that decodes to a non-blank image."""
    if path.suffix == ".pdf":
        assert path.read_bytes()[:5] == b"%PDF-", path
        return
    import matplotlib.image

    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 200, (path, pixels.shape)
    assert pixels[..., :3].std() > 0.01, f"{path} is blank"


def run(*args, cwd=ROOT, timeout=600):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_snakemake_lint_is_clean():
    res = run(*SNAKEMAKE, "--lint")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "good condition" in res.stdout + res.stderr


def test_snakefmt_is_clean():
    res = run(str(BIN / "snakefmt"), "--check", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_bad_config_stops_before_any_job(tmp_path):
    res = run(*SNAKEMAKE, "-n", "--cores", "1", "--config", "seed=-1",
              "--directory", str(tmp_path), "-s", str(ROOT / "Snakefile"))
    assert res.returncode != 0
    assert "seed" in res.stdout + res.stderr


def test_their_cifar_models_alone_train_nothing(tmp_path):
    """`authors_cifar_theirs` (a machine without a GPU): their models extracted, compared and
    drawn, no CIFAR model of ours trained."""
    res = run(*SNAKEMAKE, "-n", "--cores", "1", "authors_cifar_theirs", "--configfile",
              str(ROOT / "config.quick.yaml"), "--directory", str(tmp_path),
              "-s", str(ROOT / "Snakefile"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    jobs = {line.split()[0] for line in res.stdout.splitlines() if line[:1].isalpha()}
    assert {"authors_cifar_extract", "authors_cifar_pairs", "authors_cifar_reps_figure",
            "authors_cifar_comparison_figure"} <= jobs
    assert not {j for j in jobs if j.startswith(("cifar10_train", "ours_beside"))}, jobs


@pytest.fixture
def quick_run(quick_outputs):
    return quick_outputs


def test_quick_dag_builds_table_and_figures(quick_run):
    table = read_csv(quick_run / "tables" / "kl_table.csv")
    assert {"rho", "kl", "d_llv", "mcca_f", "max_d_svd_f"} <= set(table.columns)
    assert table["kl"].iloc[-1] < table["kl"].iloc[0]
    assert (quick_run / "tables" / "kl_table.tex").read_text().count(r"\\") == len(table) + 1
    for k in (4, 6, 18):
        for ext in ("pdf", "png"):
            assert_image(quick_run / "figures" / f"constructed_bound_K{k}.{ext}")
        sweep = read_csv(quick_run / "constructed" / f"bound_K{k}.csv")
        valid = sweep[sweep["d_llv"] < 0.25]
        assert (valid["d_fg"] <= valid["bound"]).all()


def test_every_quick_table_carries_its_provenance(quick_run):
    from repdist.io import config_hash, read_table_metadata

    tables = [p for p in (quick_run / "tables").iterdir() if p.suffix in (".csv", ".tex", ".md")]
    tables += list((quick_run / "constructed").glob("*.csv"))
    assert len(tables) >= 10
    hashes = set()
    for path in tables:
        meta = read_table_metadata(path)
        assert {"config_hash", "package_version", "git_commit", "torch_version", "numpy_version",
                "seed", "experiment"} <= set(meta), path
        hashes.add(meta["config_hash"])
    assert len(hashes) == 1  # one config made them all
    assert len(next(iter(hashes))) == len(config_hash({}))


def test_quick_dag_leaves_logs_and_benchmarks(quick_run):
    assert (quick_run / "logs" / "kl_table.log").read_text().strip()
    assert (quick_run / "benchmarks" / "kl_table.tsv").exists()


def test_dry_run_after_quick_has_nothing_to_do(quick_run):
    res = run(*SNAKEMAKE, "-n", "--cores", "1", "--configfile", str(ROOT / "config.quick.yaml"),
              "-s", str(ROOT / "Snakefile"), "--directory", str(quick_run.parents[1]))
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


# the quick config's null (config.yaml's): the default measures' tau, p and calibrated score
NULL_COLUMNS = [f"{m}{s}" for m in ("kl", "mcca_f", "mcca_g", "cka_f", "svcca_f", "mutual_knn_f")
                for s in ("_tau", "_p", "_calibrated")]
PARQUET_META = {"experiment", "K", "M", "width", "fix_g", "fix_f", "steps", "split", "config_hash",
                "package_version", "torch_version", "numpy_version", "git_commit"}


def test_quick_dag_synthetic_outputs_and_schemas(quick_run):
    from repdist.experiments.pairs import PAIR_COLUMNS
    from repdist.io import read_parquet_metadata

    config_dir = quick_run / "synthetic" / "K4" / "w16_g0_f0"
    pairs = pd.read_parquet(config_dir / "pairs.parquet")
    assert list(pairs.columns) == PAIR_COLUMNS + NULL_COLUMNS  # each score beside its chance
    assert len(pairs) == 3  # 3 seeds in the quick config
    p = pairs[[c for c in NULL_COLUMNS if c.endswith("_p")]].to_numpy()
    assert ((p >= 1 / 201) & (p <= 1)).all() and (pairs["mcca_g_p"] >= 1 / 24).all()  # 4 labels
    assert (pairs["mcca_f_tau"] < pairs["mcca_f"]).all()  # trained seeds: beyond chance
    assert pairs["d_llv"].notna().all() and (pairs["kl"] >= 0).all()
    meta = read_parquet_metadata(config_dir / "pairs.parquet")
    assert PARQUET_META - {"seed"} <= set(meta) and meta["measures"]["num_samples"] == 200
    emb = pd.read_parquet(config_dir / "seed1" / "embeddings.parquet")
    assert list(emb.columns) == ["index", "label", "pred", "f_0", "f_1"] and len(emb) == 2000
    emb_meta = read_parquet_metadata(config_dir / "seed1" / "embeddings.parquet")
    assert PARQUET_META <= set(emb_meta) and emb_meta["seed"] == 1 and emb_meta["K"] == 4
    unemb = pd.read_parquet(config_dir / "seed1" / "unembeddings.parquet")
    assert list(unemb.columns) == ["label", "g_0", "g_1"] and len(unemb) == 4
    metrics = json.loads((config_dir / "seed1" / "metrics.json").read_text())
    assert metrics["steps"] == 300 and len(metrics["train_loss"]) == 7
    # protocol paper: whole epochs (2 of 157 batches), test passes after steps 0, 100, 200, 300
    assert metrics["protocol"] == "paper" and metrics["steps_total"] == 314
    assert metrics["test_loss_steps"] == [0, 100, 200, 300]
    assert metrics["final_test_loss"] == metrics["test_loss"][-1]
    assert {"final_test_loss", "test_accuracy", "wall_time_s", "test_loss"} <= set(metrics)
    assert (quick_run / "synthetic" / "K6" / "w16_g20_f20" / "pairs.parquet").exists()
    for stem in ("synthetic_data_K4", "synthetic_data_K6", "d_llv_vs_width_K4_6",
                 "d_llv_vs_d_fg_trained_synthetic", "prh_alignment"):
        for ext in ("pdf", "png"):
            assert_image(quick_run / "figures" / f"{stem}.{ext}")
    assert not list(quick_run.rglob("checkpoint.pt"))  # spent checkpoints are removed


def test_quick_dag_cifar_branch_on_standin_data(quick_run):
    from repdist.experiments.pairs import CIFAR_PAIR_COLUMNS
    from repdist.io import read_parquet_metadata

    for m in (2, 3):
        pairs = pd.read_parquet(quick_run / "cifar10" / f"fd{m}" / "pairs.parquet")
        test_split = [c.replace("mcca_f_", "mcca_f_test_") for c in NULL_COLUMNS]
        assert list(pairs.columns) == CIFAR_PAIR_COLUMNS + test_split and len(pairs) == 3
        assert pairs["mcca_f_train"].between(0, 1).all()
    seed_dir = quick_run / "cifar10" / "fd2" / "seed0"
    meta = read_parquet_metadata(seed_dir / "embeddings_test.parquet")
    assert meta["standin_data"] is True and meta["split"] == "test"
    assert len(pd.read_parquet(seed_dir / "embeddings_train.parquet")) == 500
    assert len(pd.read_parquet(seed_dir / "embeddings_test.parquet")) == 800
    metrics = json.loads((seed_dir / "metrics.json").read_text())
    assert {"final_train_loss", "final_test_loss", "steps_per_s"} <= set(metrics)
    assert (pairs["test_loss_eval_diff"] >= 0).all()
    assert not pairs["test_loss_diff"].equals(pairs["test_loss_eval_diff"])  # train vs eval mode
    assert metrics["protocol"] == "paper" and metrics["bn_momentum"] == pytest.approx(1 - 0.9**11)
    for stem in ("cifar10_reps_seed0", "cifar10_embedding_comparison_0_1", "loss_diff_vs_mcca",
                 "loss_diff_vs_mcca_eval"):
        assert_image(quick_run / "figures" / f"{stem}.png")


def test_quick_dag_beyond_the_paper_outputs(quick_run):
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    assert {"claim", "ours", "paper", "tolerance", "verdict"} <= set(comparison.columns)
    assert set(comparison["verdict"]) <= {"pass", "FAIL", "informational", "explained",
                                          "not judged at toy scale", "no data"}
    assert comparison["claim"].str.contains("Table 1").sum() == 5
    trends = comparison[comparison["verdict"] == "not judged at toy scale"]
    assert len(trends) and trends["tolerance"].str.contains("judged at paper scale: ").all()
    page = (quick_run / "tables" / "paper_comparison.md").read_text().splitlines()
    assert page[1] == ("# Reproduced vs paper: results/quick (config.yaml + config.quick.yaml), "
                       "toy scale")  # page[0]: the provenance
    fig3 = comparison[comparison["claim"].str.startswith("Fig. 3 left: seeds 0 and 1")]
    assert len(fig3) == 3 and (fig3["verdict"] == "informational").all()
    prh = comparison[comparison["claim"].str.startswith("PRH: mutual k-NN")]
    assert len(prh) == 4 and (prh["verdict"] == "informational").all()
    assert prh["claim"].str.contains("the authors' models").sum() == 2  # their stand-ins here
    assert "pass" in (quick_run / "tables" / "paper_comparison.md").read_text()
    extended = read_csv(quick_run / "tables" / "kl_table_extended.csv")
    assert {"d_logit", "cka_f", "svcca_f", "mutual_knn_f"} <= set(extended.columns)
    workshop = read_csv(quick_run / "tables" / "workshop_example.csv")
    assert len(workshop) == 10 and workshop["ours"].notna().all()
    assert_image(quick_run / "figures" / "workshop_lengths.png")  # workshop App. E, Fig. 4
    explained = comparison[comparison["verdict"] == "explained"]
    assert len(explained) == 2 and explained["claim"].str.contains("broadcast").all()
    snapshots = pd.read_parquet(quick_run / "dynamics" / "snapshots.parquet")
    assert sorted(snapshots["step"].unique()) == [0, 25, 50, 100, 150, 200, 250, 300]
    for stem in ("training_dynamics", "workshop_example", "measures_vs_width_K4",
                 "measures_vs_width_K6"):
        assert_image(quick_run / "figures" / f"{stem}.png")


def test_quick_dag_roeder_simulation(quick_run):
    """roeder_all at toy scale: both data variants trained with snapshots every 100 of 400
    steps, Fig. 2a-c, the curves and R^2 tables, and a verdict row per variant."""
    for noise in (0, 20):
        snapshots = pd.read_parquet(quick_run / "roeder" / f"noise{noise}" / "snapshots.parquet")
        assert sorted(snapshots["step"].unique()) == [0, 100, 200, 300, 400]
        assert len(snapshots) == 5 * 3  # 3 pairs of 3 seeds
        f = pd.read_parquet(quick_run / "roeder" / f"noise{noise}" / "seed1" / "embeddings.parquet")
        assert len(f) == 1000 and {"f_0", "f_1"} <= set(f.columns)
    curves = read_csv(quick_run / "tables" / "roeder_dynamics.csv")
    assert sorted(curves["noise_dims"].unique()) == [0, 20] and (curves["pairs"] == 3).all()
    fits = read_csv(quick_run / "tables" / "roeder_linear_fit.csv")
    assert len(fits) == 4 and fits["r2"].le(1).all()
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    roeder = comparison[comparison["claim"].str.startswith("Roeder Fig. 2b")]
    assert list(roeder["verdict"]) == ["not judged at toy scale", "informational"] * 2
    for stem in ("roeder_data", "roeder_dynamics", "roeder_linear_fit"):
        assert_image(quick_run / "figures" / f"{stem}.png")


def test_quick_dag_roeder_words(quick_run):
    """roeder_words_all at toy scale: 3 seeds of the log-bilinear word model, their files (f~ on
    the held-out contexts, g~ over the vocabulary), the pairs with Fig. 1's R^2, the figure and
    its points, the paper-comparison rows, and `repdist progress` on the training job."""
    from repdist.cli.progress import report
    from repdist.experiments.roeder.words_pairs import WORDS_PAIR_COLUMNS
    from repdist.io import read_table_metadata

    folder = quick_run / "roeder_words"
    vocab = read_csv(folder / "vocabulary.csv")
    assert len(vocab) == 100 and vocab["word"].iloc[-1] == "<unk>"
    for seed in range(3):
        f = pd.read_parquet(folder / f"seed{seed}" / "embeddings.parquet")
        g = pd.read_parquet(folder / f"seed{seed}" / "unembeddings.parquet")
        assert len(f) == 800 and (f["f_2"] == 1).all() and len(g) == 100
    pairs = read_csv(quick_run / "tables" / "roeder_words_pairs.csv")
    assert list(pairs.columns) == WORDS_PAIR_COLUMNS and len(pairs) == 3
    assert (pairs["mcca_f_components"] == 2).all() and pairs["r2_g"].le(1).all()
    assert read_table_metadata(quick_run / "tables" / "roeder_words_pairs.csv")["corpus"] == \
        "stdlib"
    fit = read_csv(quick_run / "tables" / "roeder_words_fit.csv")
    assert len(fit) == 12 and fit["word"].str.isalpha().all()
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    rows = comparison[comparison["claim"].str.startswith("Roeder Fig. 1 (stdlib corpus)")]
    assert list(rows["verdict"]) == ["not judged at toy scale", "informational"]
    assert_image(quick_run / "figures" / "roeder_words.png")
    assert "roeder_words_train" in report(quick_run)


def test_quick_dag_roeder_cpc(quick_run):
    """roeder_cpc_all at toy scale on the CIFAR-10 stand-in: three stacks of 4 seeds (the base
    one shared by panels b-d), each model early-stopped and recorded, snapshots of the 2 pairs
    every 10 steps, the pairs' measures on the 200 held-out patches, Fig. 3, its tables and a
    verdict per panel and side that names the data."""
    folder = quick_run / "roeder_cpc"
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == [
        "w16_p0.5_t40", "w16_p1_t40", "w8_p1_t40"]
    snapshots = pd.read_parquet(folder / "w16_p1_t40" / "snapshots.parquet")
    steps = sorted(snapshots["step"].unique())
    assert steps[0] == 0 and set(steps) <= {0, 10, 20, 30, 40}
    assert set(zip(snapshots["seed_a"], snapshots["seed_b"])) == {(0, 1), (2, 3)}
    metrics = json.loads((folder / "w16_p0.5_t40" / "seed2" / "metrics.json").read_text())
    assert metrics["best_step"] in (0, 10, 20, 30, 40) and metrics["n_train"] == 200
    assert metrics["data"] == "the CIFAR-10 stand-in (generated)"
    f = pd.read_parquet(folder / "w8_p1_t40" / "seed3" / "embeddings.parquet")
    assert len(f) == 200 and len(pd.read_parquet(folder / "w8_p1_t40" / "seed3" /
                                                 "unembeddings.parquet")) == 200
    pairs = pd.read_parquet(folder / "pairs.parquet")
    assert len(pairs) == 3 * 2 and (pairs["kl"] > 0).all() and pairs["mcca_g"].between(0, 1).all()
    summary = read_csv(quick_run / "tables" / "roeder_cpc_summary.csv")
    assert list(summary.groupby("panel").size().loc[["c", "d"]]) == [2, 2]
    assert (summary["pairs"] == 2).all()
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    cpc = comparison[comparison["claim"].str.startswith("Roeder Fig. 3")]
    assert len(cpc) == 12 and (cpc["verdict"] == "not judged at toy scale").all()
    assert cpc["claim"].str.contains("the CIFAR-10 stand-in").all()
    # each claim also read against the untrained seeds (every stack's step 0) and chance
    assert cpc["claim"].str.contains("beyond untrained models and chance").sum() == 6
    assert summary[["mcca_f_untrained_mean", "mcca_f_tau_mean"]].notna().any().all()
    assert_image(quick_run / "figures" / "roeder_cpc.png")


def test_every_quick_csv_opens_as_a_plain_csv(quick_run):
    """A user's `pd.read_csv` (or a spreadsheet) sees the header first; the provenance is in
    the sidecar."""
    csvs = sorted(quick_run.rglob("*.csv"))
    csvs = [p for p in csvs if "benchmarks" not in p.parts]
    assert len(csvs) >= 12  # 3 constructed sweeps + 9 tables
    for path in csvs:
        first = path.read_text().splitlines()[0]
        frame = pd.read_csv(path)
        assert first == ",".join(frame.columns) and not first.startswith("#"), path
        sidecar = path.with_name(path.name + ".provenance.json")
        assert json.loads(sidecar.read_text())["protocol"] == "paper", sidecar


def test_quick_dag_authors_branch_on_standin_checkpoints(quick_run):
    from repdist.experiments.authors.ours_vs_authors import OURS_VS_AUTHORS_COLUMNS

    table = read_csv(quick_run / "tables" / "ours_vs_authors.csv")
    assert list(table.columns) == OURS_VS_AUTHORS_COLUMNS
    assert len(table) == 2 * 2 * 3  # K 4, 6 x widths 16, 32 x seeds 0-2
    assert (table["d_llv"] > 0).all()  # the stand-ins are not our models
    init = read_csv(quick_run / "tables" / "authors_initialisation.csv")
    assert len(init) == 12 and init["bit_exact"].all()  # stand-in untrained = our init
    assert "Our seed s vs the authors' seed s" in (quick_run / "tables" /
                                                     "ours_vs_authors.md").read_text()
    pairs = pd.read_parquet(quick_run / "authors" / "synthetic" / "K4" / "w16_g0_f0" /
                            "pairs.parquet")
    assert len(pairs) == 3 and pairs["d_llv"].notna().all()
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    retrace = comparison[comparison["claim"].str.contains("stand-in checkpoints")]
    assert len(retrace) >= 7 and (retrace["verdict"] == "informational").all()
    for stem in ("d_llv_vs_width_K4_6_authors", "d_llv_vs_d_fg_trained_synthetic_authors"):
        assert_image(quick_run / "figures" / f"{stem}.png")


def test_quick_dag_authors_cifar_branch_on_standin_checkpoints(quick_run):
    from repdist.experiments.authors.ours_vs_authors import OURS_VS_AUTHORS_COLUMNS

    table = read_csv(quick_run / "tables" / "ours_vs_authors_cifar.csv")
    assert list(table.columns) == OURS_VS_AUTHORS_COLUMNS
    assert len(table) == 3 and (table["d_llv"] > 0).all()  # seeds 0-2; stand-ins differ
    pairs = pd.read_parquet(quick_run / "authors" / "cifar10" / "fd2" / "pairs.parquet")
    assert len(pairs) == 3 and pairs["d_llv"].notna().all()
    metrics = json.loads((quick_run / "authors" / "cifar10" / "fd2" / "seed1" /
                          "metrics.json").read_text())
    assert metrics["seed"] == 1 and metrics["M"] == 2 and "eval mode" in metrics["loss_note"]
    assert "Our seed s vs the authors' seed s" in (quick_run / "tables" /
                                                     "ours_vs_authors_cifar.md").read_text()
    # their models drawn as ours are (App. F.5, Fig. 3 left), and ours beside theirs
    for stem in ("authors_cifar10_reps_seed2", "authors_cifar10_embedding_comparison_0_1",
                 "ours_beside_authors_cifar10_seed0", "ours_beside_authors_cifar10_seed1"):
        assert_image(quick_run / "figures" / f"{stem}.png")
    log = (quick_run / "logs" / "ours_beside_authors_cifar_figure_seed1.log").read_text()
    assert "m_CCA(ours, seed 1, theirs, seed 1) on the test set" in log


def test_the_readme_models_example_runs_as_written(quick_run, tmp_path):
    """The README's worked example of the models: section, its shell block run verbatim in a
    folder laid out as a checkout after `make quick` (its results/quick the quick run's)."""
    import re

    text = (ROOT / "README.md").read_text()
    section = text[text.index("### In the DAG: the `models:` section"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    work = tmp_path
    (work / "results").mkdir()
    (work / "results" / "quick").symlink_to(quick_run)
    for name in ("Snakefile", "rules", "workflow", "envs", "report", "src", "config.yaml",
                 "config.quick.yaml"):
        (work / name).symlink_to(ROOT / name)
    (work / ".venv").symlink_to(Path(sys.executable).parent.parent)
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    group = pd.read_parquet(work / "results" / "mine" / "models" / "toy_K4" / "pairs.parquet")
    assert len(group) == 10 and group["model_a"].str.startswith("w16_g0_f0/seed").iloc[0]
    assert set(group["model_b"]) >= {"w32_g0_f0/seed2"} and group["d_llv"].notna().all()
    assert len(read_csv(work / "k6.csv")) == 3
    assert_image(work / "results" / "mine" / "figures" / "models_toy_K4_bound.png")


def test_quick_dag_bound_beyond_m2_and_models_group(quick_run):
    tightness = read_csv(quick_run / "tables" / "bound_tightness.csv")
    assert tightness["M"].tolist() == [2, 3] and (tightness["violations"] == 0).all()
    assert tightness["pairs"].tolist() == [4 * 3, 3]
    pairs = pd.read_parquet(quick_run / "bound_beyond_m2" / "M3" / "K6" / "w16_g0_f0" /
                            "pairs.parquet")
    assert len(pairs) == 3 and len(pd.read_parquet(
        quick_run / "bound_beyond_m2" / "M3" / "K6" / "w16_g0_f0" / "seed0" /
        "embeddings.parquet").filter(like="f_").columns) == 3
    group = pd.read_parquet(quick_run / "models" / "quick_synthetic_K4" / "pairs.parquet")
    assert len(group) == 6 and group["model_a"].iloc[0] == "w16_g0_f0/seed0"
    ours = pd.read_parquet(quick_run / "synthetic" / "K4" / "w16_g0_f0" / "pairs.parquet")
    assert group["d_llv"].iloc[0] == pytest.approx(ours["d_llv"].iloc[0], rel=1e-12)
    for stem in ("d_llv_vs_d_fg_trained_M3", "models_quick_synthetic_K4_bound",
                 "models_quick_synthetic_K4_measures"):
        assert_image(quick_run / "figures" / f"{stem}.png")


def test_report_of_a_synthetic_only_run_names_the_missing_branches(quick_run, tmp_path):
    """`make report` after a run without CIFAR-10 (as make run-synthetic): the report builds
    from what that run made, and its front page says what was left out, including what an
    overlay asked for beyond the run's grid (a seed of the authors' that it does not train)."""
    overlay = tmp_path / "no_cifar.yaml"
    overlay.write_text("cifar10: {enabled: false}\nbound_beyond_m2: {enabled: false}\n"
                       "roeder: {enabled: false}\nauthors_models: {seeds: [0, 1, 2, 3]}\n"
                       "lm: {enabled: false}\n")
    report = tmp_path / "report.html"
    res = run(*SNAKEMAKE, "--cores", "1", "-s", str(ROOT / "Snakefile"), "--directory",
              str(quick_run.parents[1]), "--configfile", str(ROOT / "config.quick.yaml"),
              str(overlay), "--report", str(report), timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    html = report.read_text()
    assert "Not in this report" in html and "cifar10.enabled: false" in html
    assert "bound_beyond_m2.enabled: false" in html and "roeder.enabled: false" in html
    assert "roeder_dynamics.png" not in html
    assert "lm.enabled: false" in html and "lm_seed_pairs.png" not in html
    assert "Adapted to this run" in html
    assert "authors_models.seeds: [0, 1, 2] of their [0, 1, 2, 3]" in html
    # each branch left out is an item of its own, not run into the one before it
    assert ".- <strong>" not in html and "<li><strong>The bound beyond M = 2</strong>" in html
    assert "d_llv_vs_width_K4_6.png" in html and "loss_diff_vs_mcca.png" not in html


def test_repdist_progress_on_the_finished_quick_run(quick_run):
    from repdist.cli.progress import report

    text = report(quick_run)
    assert "training jobs:" in text and "finished" in text
    assert "synthetic_train" in text and "cifar10_train" in text and "bound_beyond_train" in text
    assert "0 failed" not in text and "failed" not in text.split("\n")[2]


def test_repdist_job_times_on_the_finished_quick_run(quick_run):
    """Real Snakemake benchmark files and job logs: every file counted, every job's machine."""
    from repdist.cli.job_times import benchmarks, job_cpu, machines, report
    from repdist.pipeline.machine import describe

    files = sorted((quick_run / "benchmarks").rglob("*.tsv"))
    jobs = benchmarks(quick_run)
    assert len(jobs) == len(files) > 10
    text = report(quick_run)
    assert "synthetic_train w16" in text and "cifar10_train" in text
    total = next(line for line in text.splitlines() if line.startswith("total"))
    assert float(total.split()[2]) == pytest.approx(sum(j.seconds for j in jobs), abs=0.1)
    logs = list((quick_run / "logs").rglob("*.log"))
    assert machines(quick_run) == {describe(): len(logs)}
    warm = sum(job.warm for job in job_cpu(quick_run))  # forked warm (pipeline/warm.py)
    assert warm >= 0.8 * len(logs) and f"({warm} of {len(logs)} jobs started warm" in text


def test_quick_dag_distillation(quick_run):
    """Students of the quick DAG's teachers (K = 6, width 16, seeds 0-2) by every loss, their
    table, summary, figure and the paper comparison's informational rows."""
    table = read_csv(quick_run / "tables" / "distillation.csv")
    assert len(table) == 3 * 4 and set(table["loss"]) == {"kl", "logit_l2", "logit_l1", "labels"}
    assert table["student_seed"].tolist() == [1000, 1001, 1002] * 4
    assert table[["kl", "d_llv", "mcca_f", "probe_angle_student"]].notna().all().all()
    metrics = json.loads((quick_run / "distillation" / "K6_w16" / "logit_l2" / "teacher1" /
                          "metrics.json").read_text())
    assert metrics["loss"] == "logit_l2" and metrics["teacher_seed"] == 1 and metrics["seed"] == 1001
    summary = read_csv(quick_run / "tables" / "distillation_summary.csv")
    assert (summary[summary["K"] == "all"]["students"] == 3).all()
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    rows = comparison[comparison["claim"].str.startswith("Distillation")]
    assert len(rows) == 4 and (rows["verdict"] == "informational").all()
    assert not (quick_run / "distillation" / "K6_w16" / "kl" / "checkpoint.pt").exists()
    assert_image(quick_run / "figures" / "distillation.png")


def test_quick_dag_logit_distance(quick_run):
    """The follow-up's spirals at toy size (config.quick.yaml): the data in their format, two
    teachers and their 16 students (4 losses x 2 seeds), the snapshots at epochs 5 and 10 on
    both splits, the final table (nulls, Theorem F.1 on every student), the inverse-variance
    summary, both figures and the paper comparison's rows."""
    base = quick_run / "logit_distance" / "spirals"
    with np.load(base / "data" / "spirals.npz") as npz:
        assert npz["X_train"].shape == (560, 2) and npz["Y_test"].dtype == np.int64
    snapshots = read_csv(quick_run / "tables" / "logit_distance_spirals_snapshots.csv")
    assert len(snapshots) == 16 * 2 * 2 and sorted(set(snapshots["epoch"])) == [5, 10]
    final = read_csv(quick_run / "tables" / "logit_distance_spirals_final.csv")
    assert len(final) == 16 and set(final["loss"]) == {"kl", "l1", "l2", "labels"}
    assert final["f1_holds"].all() and final[["mcca_f_p", "d_rep_p"]].notna().all().all()
    metrics = json.loads((base / "students" / "l1" / "teacher401_seed41" / "metrics.json")
                         .read_text())
    assert (metrics["loss"], metrics["teacher_seed"], metrics["seed"]) == ("l1", 401, 41)
    assert set(torch.load(base / "teachers" / "seed400" / "model.pt", weights_only=True)) >= {
        "encoder.enc_block_1.weight", "encoder.enc_final.weight", "linear.weight"}
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    assert comparison["claim"].str.startswith("Follow-up (spirals)").sum() == 5
    assert not (base / "students" / "checkpoint.pt").exists()
    for name in ("logit_distance_spirals_metrics", "logit_distance_spirals_bound",
                 "logit_distance_sub_metrics", "logit_distance_sub_bound"):
        assert_image(quick_run / "figures" / f"{name}.png")


def test_quick_dag_logit_distance_on_a_sub_standin(quick_run):
    """SUB at toy size: its stand-in images through a DINOv2 built from a config into their
    features file, a concept-bottleneck teacher (its probe in its weights), 8 students, every
    model's attribute probe beside its teacher's, and the paper comparison's concept rows
    informational (stand-in)."""
    from repdist.data.sub import load_sub_features

    base = quick_run / "logit_distance" / "sub"
    x, birds, _ = load_sub_features(base / "data" / "sub_features.pt")
    assert x.shape == (33 * 12, 64) and (np.bincount(birds) == 12).all()
    assert np.linalg.matrix_rank(x) > 32  # features, not a constant: the encoder saw the images
    teacher = torch.load(base / "teachers" / "seed400" / "model.pt", weights_only=True)
    assert teacher["probe.weight"].shape == (33, 4)
    final = read_csv(quick_run / "tables" / "logit_distance_sub_final.csv")
    assert len(final) == 8 and final["f1_holds"].all()
    assert final[["concept_probe_accuracy", "teacher_concept_probe_accuracy"]].notna().all().all()
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    rows = comparison[comparison["claim"].str.startswith("Follow-up (SUB stand-in)")]
    concept = rows[rows["claim"].str.contains("concept probe")]
    assert len(rows) == 7 and len(concept) == 2 and (concept["verdict"] == "informational").all()


def test_quick_dag_logit_distance_on_a_cifar100_standin(quick_run):
    """CIFAR-100 at toy size: the stand-in in cifar-100-python's format, their ResNet-50
    teacher (from scratch: said so), a ResNet-18 student by each loss, snapshots after each of
    2 epochs on both splits, the final table (F.1 on every student), figures and the paper
    comparison's F.1 row."""
    from repdist.data.cifar100 import load_cifar100

    base = quick_run / "logit_distance" / "cifar100"
    data = load_cifar100(base / "standin" / "cifar-100-python")
    assert data.standin and data.train_images.shape == (64, 3, 32, 32)
    teacher = torch.load(base / "teachers" / "seed10" / "model.pt", weights_only=True)
    assert "encoder.tv_layers.layer4.2.conv3.weight" in teacher  # a ResNet-50's last block
    assert json.loads((base / "teachers" / "seed10" / "metrics.json").read_text())[
        "imagenet"] is False
    student = torch.load(base / "students" / "l2" / "teacher10_seed0" / "model.pt",
                         weights_only=True)
    assert "encoder.tv_layers.layer4.1.conv2.weight" in student and not any(
        "layer4.2" in key for key in student)  # a ResNet-18
    snapshots = read_csv(quick_run / "tables" / "logit_distance_cifar100_snapshots.csv")
    assert len(snapshots) == 4 * 2 * 2 and sorted(set(snapshots["epoch"])) == [1, 2]
    final = read_csv(quick_run / "tables" / "logit_distance_cifar100_final.csv")
    assert len(final) == 4 and final["f1_holds"].all()
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    rows = comparison[comparison["claim"].str.startswith("Follow-up (CIFAR-100 stand-in)")]
    assert len(rows) == 1 and rows["claim"].str.contains("Theorem F.1").all()
    for name in ("logit_distance_cifar100_metrics", "logit_distance_cifar100_bound"):
        assert_image(quick_run / "figures" / f"{name}.png")


def test_quick_dag_lm_seed_pairs(quick_run):
    """The quick DAG's language models (config.quick.yaml `lm`): the tokenizer and token windows
    of the stdlib text, three seeds' files, their three pairs, the report's table and figure."""
    from repdist.io import read_npz_metadata, read_parquet_metadata

    lm = quick_run / "lm"
    tokenizer = json.loads((lm / "tokenizer.json").read_text())
    assert tokenizer["vocab_size"] == 320 and len(tokenizer["merges"]) == 64
    meta = read_npz_metadata(lm / "tokens_eval.npz")
    assert meta["python_version"] == f"{sys.version_info.major}.{sys.version_info.minor}." \
        f"{sys.version_info.micro}" and meta["bytes_train"] > 0 and meta["bytes_eval"] > 0
    for seed in (0, 1, 2):
        metrics = json.loads((lm / f"seed{seed}" / "metrics.json").read_text())
        assert metrics["seed"] == seed and metrics["K"] == 320 and metrics["M"] == 16
        assert metrics["final_test_loss"] == metrics["eval_loss"] < metrics["eval_loss_curve"][0]
        f = pd.read_parquet(lm / f"seed{seed}" / "embeddings.parquet")
        assert len(f) == 200 and "f_15" in f.columns
        assert not (lm / f"seed{seed}" / "checkpoint.pt").exists()
        assert (quick_run / "logs" / "lm_train" / f"seed{seed}.log").read_text().strip()
    pairs = pd.read_parquet(lm / "pairs.parquet")
    assert pairs[["seed_a", "seed_b"]].values.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert pairs[["kl", "d_llv", "mcca_f", "mcca_g", "d_fg"]].notna().all().all()
    assert (pairs["kl"] > 0).all() and pairs["mcca_f"].between(0, 1).all()
    assert read_parquet_metadata(lm / "pairs.parquet")["measures"]["num_samples"] == 10
    table = read_csv(quick_run / "tables" / "lm_seed_pairs.csv")
    assert table["kl"].tolist() == pytest.approx(pairs["kl"].tolist(), rel=1e-14)
    assert (quick_run / "benchmarks" / "lm_pairs.tsv").exists()
    for ext in ("pdf", "png"):
        assert_image(quick_run / "figures" / f"lm_seed_pairs.{ext}")


def test_quick_dag_lm_models_and_layers(quick_run):
    """The quick DAG's outside models (config.quick.yaml `lm.models`: tiny GPT-2 and Llama
    stand-ins built here, one tokenizer, two widths) on one set of contexts, their pair, and both
    model sets (these and the lm seeds) layer by layer, with the head's input marked."""
    from repdist.experiments.lm.layers import LAYER_COLUMNS, SUMMARY_COLUMNS
    from repdist.experiments.pairs import NAMED_PAIR_COLUMNS
    from repdist.io import read_npz_metadata

    import yaml

    entries = yaml.safe_load((ROOT / "config.quick.yaml").read_text())["lm"]["models"]
    names = ["tiny_gpt2", "tiny_llama"]
    assert list(entries) == names
    widths = {n: entries[n]["standin"].get("width", 16) for n in names}
    assert all((quick_run / "lm_standins" / n / "tokenizer.json").is_file() for n in names)
    models = quick_run / "lm_models"
    meta = read_npz_metadata(models / "contexts.npz")
    assert meta["contexts"] == 200 and meta["window"] == 17 and meta["corpus"] == "stdlib"
    for name in names:
        f = pd.read_parquet(models / name / "embeddings.parquet")
        assert len(f) == 200 and (f["label"] >= 0).all()
        assert len(f.filter(like="f_").columns) == widths[name]
        metrics = json.loads((models / name / "metrics.json").read_text())
        assert metrics["positions_scored"] == 200 and metrics["final_test_loss"] > 0
        index = json.loads((models / name / "layers" / "layers.json").read_text())
        assert index["count"] == 3 and index["head_input"] == 2 and index["layers"] == [0, 1, 2]
        head = pd.read_parquet(models / name / "layers" / "layer2.parquet")
        assert (head.filter(like="f_").to_numpy() == f.filter(like="f_").to_numpy()).all()
        log = (quick_run / "logs" / "lm_extract" / f"{name}.log").read_text()
        assert "progress: step 200/200" in log
    pairs = pd.read_parquet(models / "pairs.parquet")
    assert list(pairs.columns) == NAMED_PAIR_COLUMNS + NULL_COLUMNS
    assert pairs[["model_a", "model_b"]].values.tolist() == [names]
    assert (pairs["kl"] > 0).all() and pairs["d_llv"].notna().all()
    differ = [widths[a] != widths[b] for a, b in pairs[["model_a", "model_b"]].values]
    assert all(differ) and pairs.loc[differ, "d_fg"].isna().all()  # m_SVD needs one M: NaN with the reason
    assert pairs.loc[differ, "warning"].str.contains("widths differ").all()
    assert pairs["mcca_f"].notna().all()  # the f-side measures compare across widths
    seeds = json.loads((quick_run / "lm" / "seed0" / "layers" / "layers.json").read_text())
    assert seeds["count"] == 3 and seeds["source"] == "blocks"  # embeddings, block 1, head input
    for branch, pair_count in (("lm", 3), ("lm_models", 1)):
        table = pd.read_parquet(quick_run / branch / "layers.parquet")
        assert list(table.columns) == LAYER_COLUMNS + ["tau", "p", "calibrated"]
        assert table["slot"].max() == 2 and table["p"].between(1 / 201, 1).all()
        best = pd.read_parquet(quick_run / branch / "layers_best.parquet")
        assert len(best) == 2 * pair_count and (best["slots"] == 3).all()  # CKA, m_CCA a pair
        assert table["value"].between(-1e-9, 1 + 1e-9).all()
        svcca = table[table["measure"] == "svcca"]
        narrowest = 16 if branch == "lm" else min(widths.values())
        capped = {min(k, narrowest) for k in (4, 8, 768)}  # 768: by the narrowest width
        assert sorted(svcca["components"].unique()) == sorted(capped)
        summary = read_csv(quick_run / "tables" / f"{branch}_layers.csv")
        assert list(summary.columns) == SUMMARY_COLUMNS + ["tau_mean", "calibrated_mean"]
        assert (summary["pairs"] == pair_count).all()
        assert summary.loc[summary["head_input"], "slot"].unique().tolist() == [2]
        for ext in ("pdf", "png"):
            assert_image(quick_run / "figures" / f"{branch}_layers.{ext}")
    table = read_csv(quick_run / "tables" / "lm_models_pairs.csv")
    assert len(table) == 1
    # a final LayerNorm (GPT-2) leaves f varying in M - 1 directions, Llama's RMSNorm M
    final_norm = {"tiny_gpt2": 1, "tiny_llama": 0}
    rank = {name: widths[name] - final_norm[name] for name in names}
    assert table["mcca_f_components"].tolist() == [
        min(rank[a], rank[b]) for a, b in table[["model_a", "model_b"]].values]
    assert_image(quick_run / "figures" / "lm_models_pairs.png")
    import re

    from repdist.cli.progress import report

    text = report(quick_run)  # `repdist progress` follows the extraction jobs
    assert all(re.search(rf"finished +lm_extract +{name} ", text) for name in names), text


def test_a_model_added_to_lm_models_is_the_only_one_extracted(quick_run, tmp_path):
    """Resume: after the quick run, a fourth model in lm.models plans its own stand-in and
    extraction and the tables that read every model; no other model, contexts or seed again."""
    import re

    overlay = tmp_path / "more.yaml"
    overlay.write_text("lm:\n  models:\n    tiny_gpt2b: {standin: {arch: gpt2, width: 16, "
                       "seed: 5}}\n")
    res = run(*SNAKEMAKE, "-n", "--cores", "1", "-s", str(ROOT / "Snakefile"), "--directory",
              str(quick_run.parents[1]), "--configfile", str(ROOT / "config.quick.yaml"),
              str(overlay))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    planned = re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    wildcards: (.*)$|"
                         r"^(?:local)?rule (\w+):$", res.stdout, flags=re.M)
    jobs = {(a or c, b) for a, b, c in planned}
    extracted = {w for rule, w in jobs if rule in ("lm_models_extract", "lm_standin")}
    assert extracted == {"name=tiny_gpt2b"}, jobs
    rules = {rule for rule, _ in jobs}
    assert {"lm_models_pairs", "lm_layers"} <= rules
    assert not rules & {"lm_models_tokens", "lm_train", "lm_seed_layers", "lm_pairs"}, rules
