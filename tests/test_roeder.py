"""Roeder et al. (2021)'s simulation study: the model, training with snapshots, Fig. 2b's curves
and its claim's check, Fig. 2c's linear fit."""

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import train_config
from repdist.experiments.outputs import SeedFiles
from repdist.experiments.paper_comparison.checks import ROEDER_WITHIN, roeder_checks
from repdist.experiments.roeder.classifier import (RoederModelConfig, roeder_data, roeder_stack,
                                                   train_roeder)
from repdist.experiments.roeder.curves import (
    first_near_max_step,
    linear_fit_table,
    snapshot_curves,
)
from repdist.measures.probe import linear_fit
from repdist.models.mlp import SmallMLP, build_roeder_model
from repdist.training.loop import train


def roeder_cfg(**overrides):
    cfg = dict(num_classes=6, noise_dims=3, width=8, depth=4, g_depth=0, rep_dim=2,
               seeds=[0, 1, 2], n_train=256, n_test=700, train_data_seed=0, test_data_seed=1)
    return RoederModelConfig(**{**cfg, **overrides})


def test_roeder_model_has_four_hidden_layers_a_bottleneck_and_a_class_table():
    model = build_roeder_model(3, 18, 22, 64, 4, 2)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert shapes == {
        "f_net.l1.weight": (64, 22), "f_net.l1.bias": (64,),
        **{f"f_net.l{i}.{p}": (64, 64) if p == "weight" else (64,)
           for i in (2, 3, 4) for p in ("weight", "bias")},
        "f_net.l5.weight": (2, 64),
        "g_net.l1.weight": (2, 17),  # the truncated one-hot code: the last class's g is 0
    }
    codes = torch.eye(18, 17)
    g = model.unembed(codes)
    # exact: one-hot codes pick rows
    assert torch.equal(g[-1], torch.zeros(2)) and torch.equal(g[:-1], model.g_net.l1.weight.T)


def test_roeder_model_is_seeded_f_then_g():
    torch.manual_seed(5)
    f, g = SmallMLP(4, 8, 2, depth=4), SmallMLP(5, 8, 2, depth=0)
    model = build_roeder_model(5, 6, 4, 8, 4, 2)
    for ours, alone in ((model.f_net, f), (model.g_net, g)):
        for (name, a), b in zip(ours.state_dict().items(), alone.state_dict().values(),
                                strict=True):
            assert torch.equal(a, b), name  # exact: the same seeded draws


def test_a_stack_of_roeder_models_trains_each_as_alone():
    """float64, 60 steps: the stacked deeper MLP (and g with no hidden layer) follows each seed's
    own trajectory, as the original depth's stack does (test_training)."""
    cfg = roeder_cfg()
    data = roeder_data(cfg)
    train_cfg = train_config("roeder", steps=60, batch_size=32, lr=1e-3, eval_every=30,
                             log_every=20, checkpoint_every=0, protocol="clean")
    stack = roeder_stack(cfg).double()
    train(stack, data, train_cfg)
    for i, seed in enumerate(cfg.seeds):
        alone = build_roeder_model(seed, 6, 5, 8, 4, 2).double()
        train(alone, data, train_cfg)
        for name, p in alone.state_dict().items():
            q = stack.state_dict_of(i)[name]
            assert float((p - q).norm() / p.norm()) <= 1e-9, (seed, name)


def test_train_roeder_writes_every_seed_and_snapshots_every_pair(tmp_path):
    cfg = roeder_cfg()
    files = [SeedFiles({"test": tmp_path / f"s{s}" / "embeddings.parquet"},
                       tmp_path / f"s{s}" / "unembeddings.parquet",
                       tmp_path / f"s{s}" / "metrics.json", tmp_path / f"s{s}" / "model.pt")
             for s in cfg.seeds]
    train_cfg = train_config("roeder", steps=40, batch_size=32, eval_every=20, log_every=20,
                             checkpoint_every=0, protocol="clean")
    table = train_roeder(cfg, train_cfg, [0, 20, 40], {"num_samples": 20, "seed": 0}, files,
                         {"roeder": {}})
    assert sorted(table["step"].unique()) == [0, 20, 40]
    assert len(table) == 3 * 3 and set(zip(table["seed_a"], table["seed_b"])) == {
        (0, 1), (0, 2), (1, 2)}
    assert table["mcca_f"].between(0, 1).all() and (table["d_llv"] > 0).all()
    for f in files:
        assert all(p.exists() for p in (*f.embeddings.values(), f.unembeddings, f.metrics,
                                        f.model))
    with pytest.raises(ValueError, match="2 output sets for 3 seeds"):
        train_roeder(cfg, train_cfg, [0], {}, files[:2], {})


def snapshots(values_by_step):
    """A snapshots table: at each step, one m_CCA per seed pair (d_LLV, d_fg from it)."""
    rows = [{"step": step, "seed_a": 0, "seed_b": j + 1, "mcca_f": v, "d_llv": 1 - v,
             "d_fg": np.nan if j == 0 else 2 * (1 - v)}
            for step, values in values_by_step.items() for j, v in enumerate(values)]
    return pd.DataFrame(rows)


def test_snapshot_curves_are_the_mean_and_sd_over_pairs_per_variant():
    curves = snapshot_curves({20: snapshots({0: [0.2, 0.4], 10: [0.9, 0.9]}),
                              0: snapshots({0: [0.5, 0.5]})})
    assert list(curves["noise_dims"]) == [0, 20, 20] and list(curves["pairs"]) == [2, 2, 2]
    first = curves.iloc[1]
    assert first["mcca_f_mean"] == pytest.approx(0.3)
    assert first["mcca_f_sd"] == pytest.approx(0.1)  # ddof 0
    assert first["d_fg_mean"] == pytest.approx(2 * 0.6) and first["d_fg_sd"] == 0  # NaN left out


def curve(steps, values):
    return pd.DataFrame({"step": steps, "mcca_f_mean": values})


def test_first_near_max_step_is_where_the_curve_first_comes_near_its_maximum():
    steps = [0, 2000, 4000, 6000, 8000]
    assert first_near_max_step(curve(steps, [0.3, 0.90, 0.985, 0.99, 0.995]), 0.02) == 4000
    assert first_near_max_step(curve(steps, [0.3, 0.99, 0.90, 0.99, 0.995]), 0.02) == 2000
    assert first_near_max_step(curve(steps[::-1], [0.995, 0.99, 0.985, 0.9, 0.3]), 0.02) == 4000
    assert first_near_max_step(curve(steps, [0.3, 0.5, 0.6, 0.7, 0.99]), 0.02) == 8000
    assert first_near_max_step(curve([], []), 0.02) is None


def variant_curves(values_by_noise):
    frames = [curve(list(range(0, 2000 * len(v), 2000)), v).assign(noise_dims=d, mcca_f_sd=0.0)
              for d, v in values_by_noise.items()]
    return pd.concat(frames, ignore_index=True)


def test_roeder_check_passes_near_the_maximum_at_4000_and_fails_when_still_rising():
    checks = roeder_checks(variant_curves({
        0: [0.2, 0.9, 0.99 - ROEDER_WITHIN / 2, 0.99, 0.99],  # near max at 4,000
        20: [0.2, 0.5, 0.7, 0.8, 0.95],  # still rising
    }))
    assert [c.verdict for c in checks] == ["pass", "informational", "FAIL", "informational"]
    assert "no noise dimensions" in checks[0].claim and "20 noise" in checks[2].claim
    assert "at step 4,000" in checks[0].ours and "of it at step 4,000" in checks[0].ours
    assert checks[3].ours.startswith("max 0.9500; at step 8,000 0.9500")


def test_linear_fit_of_a_linear_transform_is_exact_and_of_noise_is_poor():
    rng = np.random.default_rng(0)
    f_a = rng.normal(size=(400, 2))
    f_b = f_a @ np.array([[2.0, 1.0], [-0.5, 3.0]]) + np.array([1.0, -2.0])
    fit = linear_fit("exact", f_a, f_b)
    np.testing.assert_allclose(fit.r2, 1.0, atol=1e-12)
    np.testing.assert_allclose(fit.mapped_b, f_a[200:], atol=1e-10)
    assert len(fit.f_a) == 200  # scored on the held-out half
    noise = linear_fit("noise", f_a, rng.normal(size=(400, 2)))
    assert (noise.r2 < 0.05).all()
    # an invertible affine map of model b changes nothing
    noisy = f_b + rng.normal(scale=0.5, size=f_b.shape)
    direct = linear_fit("direct", f_a, noisy)
    again = linear_fit("again", f_a, noisy @ np.array([[0.0, 3.0], [1.0, 1.0]]) + 7.0)
    assert 0.5 < direct.r2.min() < 1 and again.r2 == pytest.approx(direct.r2, abs=1e-9)
    table = linear_fit_table([fit, noise])
    assert list(table["pair"]) == ["exact", "exact", "noise", "noise"]
    assert list(table["dimension"]) == [1, 2, 1, 2]
    with pytest.raises(ValueError, match="differ in inputs"):
        linear_fit("bad", f_a, f_b[:10])
