"""What the paper's width claim is read against (experiments/synthetic/width_baseline.py): the same
seeds untrained and the null of d_LLV and d_{f,g}; and the paper comparison's rows built on them,
which untrained models fail (a negative control)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from repdist.experiments.pairs import compare_seeds
from repdist.experiments.paper_comparison.checks import width_baseline_checks, width_margin
from repdist.experiments.synthetic.training import (SyntheticModelConfig, synthetic_data,
                                                    synthetic_stack)
from repdist.experiments.synthetic.width_baseline import width_baseline
from repdist.experiments.synthetic.widths import width_summary
from repdist.io.representations import embeddings_frame, unembeddings_frame
from repdist.models.extract import extract

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

MEASURES = {"num_samples": 20, "seed": 0}
NULL = {"permutations": 19, "alpha": 0.05, "seed": 0}


def config(width: int, seeds=(0, 1, 2, 3)) -> SyntheticModelConfig:
    return SyntheticModelConfig(num_classes=4, width=width, fix_g=0.0, fix_f=0.0, seeds=seeds,
                                rep_dim=2, n_train=40, n_test=120, train_data_seed=0,
                                test_data_seed=1)


def untrained_files(tmp_path, cfg: SyntheticModelConfig, accuracy=(0.95, 0.95, 0.95, 0.5)):
    """The configuration's seeds at initialisation written as trained models' files, with a
    pairs table whose accuracies keep all seeds but the last."""
    with torch.no_grad():
        f_all, g_all = extract(synthetic_stack([cfg]), synthetic_data(cfg).test_x,
                               synthetic_data(cfg).codes)
    emb, unemb, metrics = [], [], []
    for s, f, g in zip(cfg.seeds, f_all, g_all, strict=True):
        emb.append(tmp_path / f"w{cfg.width}_e{s}.parquet")
        unemb.append(tmp_path / f"w{cfg.width}_u{s}.parquet")
        embeddings_frame(f, np.zeros(len(f)), np.zeros(len(f))).to_parquet(emb[-1])
        unembeddings_frame(g).to_parquet(unemb[-1])
        metrics.append({"final_test_loss": 1.0, "test_accuracy": accuracy[s]})
    pairs = compare_seeds(cfg.seeds, emb, unemb, metrics, MEASURES)
    path = tmp_path / f"w{cfg.width}_pairs.parquet"
    pairs.to_parquet(path)
    return path, emb, unemb, metrics, pairs


def test_untrained_pairs_are_the_seeds_at_initialisation_and_the_null_is_drawn(tmp_path):
    """Written as if trained, the seeds at initialisation give back their own untrained values
    (the same pairs, the same measures); the low-accuracy seed is left out; the null's tau and
    calibrated distances are there for the first `null_pairs` kept pairs."""
    cfgs = [config(16), config(32)]
    files = [untrained_files(tmp_path, c) for c in cfgs]
    models = {"embeddings": [e for f in files for e in f[1]],
              "unembeddings": [u for f in files for u in f[2]],
              "metrics": [m for f in files for m in f[3]]}
    table = width_baseline(cfgs, [f[0] for f in files], models, (0.9, 2), MEASURES, NULL)
    assert list(table["width"]) == [16, 32] and (table["untrained_pairs"] == 3).all()
    for row, (_, _, _, _, pairs) in zip(table.itertuples(), files, strict=True):
        kept = pairs[(pairs["seed_b"] < 3)]
        for m in ("d_llv", "d_fg", "mcca_f"):
            assert np.isclose(getattr(row, f"{m}_untrained_mean"), kept[m].mean(), rtol=1e-9)
    assert (table["null_pairs"] == 3).all()
    one = width_baseline(cfgs, [f[0] for f in files], models, (0.9, 2), MEASURES, NULL, 1)
    assert (one["null_pairs"] == 1).all()
    for m in ("d_llv", "d_fg"):
        assert (table[f"{m}_tau_mean"] > 0).all()
        assert table[f"{m}_calibrated_mean"].between(0, 1).all()
    none = width_baseline(cfgs, [f[0] for f in files], models, (0.99, 2), MEASURES, NULL)
    assert none.empty  # no width keeps two seeds above 0.99
    first = {"embeddings": files[0][1], "unembeddings": files[0][2], "metrics": files[0][3]}
    off = width_baseline(cfgs[:1], [files[0][0]], first, (0.9, 2), MEASURES, None)
    assert off["d_llv_tau_mean"].isna().all() and (off["null_pairs"] == 0).all()
    assert off["d_llv_untrained_mean"].iloc[0] == table["d_llv_untrained_mean"].iloc[0]


def summary_and_baseline(d_llv: list[float], untrained: list[float], tau: list[float]):
    widths = [16, 32, 64, 128]
    rows = pd.DataFrame({"width": widths, "d_llv_mean": d_llv,
                         "d_llv_ci_low": np.array(d_llv) - 0.002,
                         "d_llv_ci_high": np.array(d_llv) + 0.002,
                         "d_fg_mean": d_llv, "d_fg_ci_low": np.array(d_llv) - 0.002,
                         "d_fg_ci_high": np.array(d_llv) + 0.002})
    base = pd.DataFrame({"width": widths, "null_pairs": 10})
    for m in ("d_llv", "d_fg"):
        base[f"{m}_untrained_mean"] = untrained
        base[f"{m}_tau_mean"] = tau
        base[f"{m}_calibrated_mean"] = (np.array(tau) - np.array(d_llv)) / np.array(tau)
        base[f"{m}_calibrated_se"] = 0.001
    return rows.merge(base, on="width")


def test_a_width_trend_beyond_its_baselines_passes_and_untrained_models_fail():
    """Trained distances that fall faster than both baselines pass both rows; the untrained
    models read as if trained (their own baseline: a margin of 0 at every width) fail the
    beyond row, though their raw distance falls with width as well."""
    falling = [0.10, 0.07, 0.05, 0.03]
    trained = summary_and_baseline(falling, untrained=[0.30] * 4, tau=[0.20, 0.19, 0.18, 0.17])
    checks = width_baseline_checks(trained, "K = 4")
    assert [c.passed for c in checks] == [True, True, True, True]
    assert np.allclose(width_margin(trained, "d_llv"), [0.10, 0.12, 0.13, 0.14])
    untrained = summary_and_baseline(falling, untrained=falling, tau=[0.5] * 4)
    beyond = [c for c in width_baseline_checks(untrained, "K = 4") if "beyond" in c.claim]
    assert np.allclose(width_margin(untrained, "d_llv"), 0)
    assert [c.passed for c in beyond] == [False, False]


def test_the_summary_and_the_baseline_keep_the_same_seeds(tmp_path):
    """The baseline compares the pairs width_summary keeps (kept_pairs: one home)."""
    cfg = config(16)
    path, *_ = untrained_files(tmp_path, cfg)
    pairs = pd.read_parquet(path).assign(width=16)
    summary = width_summary(pairs, 0.9, 2)
    assert int(summary["seeds"].iloc[0]) == 3 and int(summary["pairs"].iloc[0]) == 3
