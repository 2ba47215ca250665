"""Distillation (beyond the paper): the losses on hand-sized cases, the linear probe, students
trained against small teachers, the table, summary and paper-comparison rows."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import train_config

from repdist.experiments.distillation.training import StudentSpec, train_students
from repdist.experiments.distillation.table import (
    COLUMNS,
    LoadedSeed,
    Teachers,
    distillation_summary,
    radial_concepts,
    student_rows,
)
from repdist.experiments.outputs import SeedFiles
from repdist.experiments.paper_comparison.checks import distillation_checks
from repdist.experiments.synthetic.training import SyntheticModelConfig, train_configurations
from repdist.io.representations import load_representations
from repdist.measures import compare
from repdist.measures.extra import d_logit
from repdist.measures.loglik import mean_kl
from repdist.measures.probe import linear_probe_r2
from repdist.training.distillation import LOSSES, distillation_loss, distillation_objective
from repdist.training.loop import RunOptions

MEASURES = {"lam": 1e-5, "dist_type": "max", "sum_or_max": "max", "num_samples": 20, "seed": 0}


def log_softmax(z):
    z = np.asarray(z, dtype=np.float64)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


# --- the losses -----------------------------------------------------------------------------

def test_losses_on_a_case_worked_by_hand():
    """Teacher p = (1/2, 1/2), student p' = (1/4, 3/4) on one input: KL = 1/2 log(4/3) + ...;
    centred log-probabilities (0, 0) and (-log 3 / 2, log 3 / 2): L2 = (log 3)^2 / 2,
    L1 = log 3."""
    teacher = torch.log(torch.tensor([[0.5, 0.5]], dtype=torch.float64))
    student = torch.log(torch.tensor([[0.25, 0.75]], dtype=torch.float64))
    kl = 0.5 * np.log(0.5 / 0.25) + 0.5 * np.log(0.5 / 0.75)
    assert float(distillation_loss("kl", student, teacher)) == pytest.approx(kl, rel=1e-14)
    assert float(distillation_loss("logit_l2", student, teacher)) == \
        pytest.approx(np.log(3) ** 2 / 2, rel=1e-14)
    assert float(distillation_loss("logit_l1", student, teacher)) == \
        pytest.approx(np.log(3), rel=1e-14)


def test_losses_agree_with_the_measures_and_their_invariances(rng):
    t = log_softmax(rng.normal(size=(50, 7)) * 2)
    s = log_softmax(rng.normal(size=(50, 7)) * 2)
    tt, st = torch.from_numpy(t), torch.from_numpy(s)
    # KL is the measures' mean_kl with the teacher as the reference; L2 is d_logit squared
    assert float(distillation_loss("kl", st, tt)) == pytest.approx(mean_kl(t, s), rel=1e-12)
    assert float(distillation_loss("logit_l2", st, tt)) == pytest.approx(d_logit(t, s) ** 2,
                                                                          rel=1e-12)
    # logit distances see log-probabilities only up to a per-input constant (they are logits)
    shifted = st + torch.from_numpy(rng.normal(size=(50, 1)) * 5)
    for kind in ("logit_l2", "logit_l1"):
        assert float(distillation_loss(kind, shifted, tt)) == \
            pytest.approx(float(distillation_loss(kind, st, tt)), rel=1e-12)
        assert float(distillation_loss(kind, tt, tt)) == 0.0
    assert abs(float(distillation_loss("kl", tt, tt))) < 1e-15
    # stacks: one value per model
    both = distillation_loss("kl", torch.stack([st, tt]), torch.stack([tt, tt]))
    assert both.shape == (2,) and float(both[1]) == pytest.approx(0.0, abs=1e-15)


def test_objectives_and_their_errors():
    assert distillation_objective("labels", None) is None  # the loop's own NLL
    with pytest.raises(ValueError, match="needs the teacher"):
        distillation_objective("kl", None)
    with pytest.raises(ValueError, match="unknown distillation loss 'mse'"):
        distillation_objective("mse", torch.zeros(1, 2, 3))
    with pytest.raises(ValueError, match="unknown distillation loss"):
        distillation_loss("labels", torch.zeros(2, 3), torch.zeros(2, 3))


# --- the probe ------------------------------------------------------------------------------

def test_linear_probe_recovers_a_linear_code_and_nothing_from_noise(rng):
    f = rng.normal(size=(400, 2))
    z = np.stack([2 * f[:, 0] - f[:, 1] + 3, f[:, 0] ** 2], axis=1)
    r2 = linear_probe_r2(f[:200], z[:200], f[200:], z[200:])
    assert r2[0] == pytest.approx(1.0, abs=1e-12)  # exactly linear (with an intercept)
    assert r2[1] < 0.05  # x^2 of a symmetric variable has no linear part
    noise = rng.normal(size=400)
    assert linear_probe_r2(f[:200], noise[:200], f[200:], noise[200:])[0] < 0.05
    # invariant to an invertible linear map of f (what the paper's identifiability allows)
    a = np.array([[2.0, 1.0], [-1.0, 3.0]])
    assert linear_probe_r2((f @ a)[:200], z[:200], (f @ a)[200:], z[200:]) == \
        pytest.approx(r2, abs=1e-10)
    assert np.isnan(linear_probe_r2(f[:200], z[:200, 0], f[200:], np.ones(200))[0])
    with pytest.raises(ValueError, match="differ in length"):
        linear_probe_r2(f[:200], z[:100], f[200:], z[200:])


def test_radial_concepts_count_the_angle_modulo_pi():
    x = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [0.0, -2.0]])
    c = radial_concepts(x)
    assert c["angle"][0] == pytest.approx(c["angle"][1], abs=1e-15)  # opposite points
    assert c["angle"][2] == pytest.approx([0.0, -1.0], abs=1e-15)
    assert c["radius"].tolist() == [1.0, 1.0, 2.0, 2.0]


# --- students of small teachers -------------------------------------------------------------

def small_config(seeds=(0, 1)):
    return SyntheticModelConfig(num_classes=4, width=8, fix_g=0.0, fix_f=0.0, seeds=list(seeds),
                                rep_dim=2, n_train=512, n_test=256, train_data_seed=0,
                                test_data_seed=1)


def seed_files(root: Path, seeds):
    return [SeedFiles({"test": root / f"seed{s}" / "embeddings.parquet"},
                      root / f"seed{s}" / "unembeddings.parquet", root / f"seed{s}" / "metrics.json",
                      root / f"seed{s}" / "model.pt") for s in seeds]


def loaded(files):
    f, g = load_representations(files.embeddings["test"], files.unembeddings)
    return LoadedSeed(f, g, json.loads(files.metrics.read_text())["test_accuracy"])


@pytest.fixture(scope="module")
def students(tmp_path_factory):
    """Two teachers (300 steps), and their students by every loss (200 steps)."""
    root = tmp_path_factory.mktemp("distillation")
    cfg = small_config()
    teachers = seed_files(root / "teachers", cfg.seeds)
    train_configurations([cfg], train_config(steps=300, batch_size=64, eval_every=100,
                                             protocol="clean"), [teachers], {})
    out = {}
    for loss in LOSSES:
        files = seed_files(root / loss, cfg.seeds)
        train_students(cfg, StudentSpec(loss, 100), train_config(steps=200, batch_size=64,
                                                                 eval_every=100, protocol="clean"),
                       [t.model for t in teachers], files, {}, RunOptions())
        out[loss] = files
    return cfg, teachers, out


def test_students_are_written_with_their_teacher_and_loss(students):
    cfg, teachers, by_loss = students
    meta = json.loads(by_loss["logit_l2"][1].metrics.read_text())
    assert meta["experiment"] == "distillation" and meta["loss"] == "logit_l2"
    assert meta["teacher_seed"] == 1 and meta["seed"] == 101
    # every loss starts the student of teacher s from the same seed
    state = {loss: torch.load(files[0].model, weights_only=True) for loss, files in
             by_loss.items()}
    assert all(not torch.equal(state["kl"]["f_net.l1.weight"], s["f_net.l1.weight"])
               for loss, s in state.items() if loss != "kl")  # ...and trains differently


def test_distilled_students_land_closer_to_their_teacher_than_label_students(students):
    """What distillation is for: at the same budget, KL and logit-distance students end nearer
    their teacher's distribution than a student that only saw the labels."""
    cfg, teachers, by_loss = students
    for t, teacher in enumerate(teachers):
        tf = loaded(teacher)
        kl = {loss: compare(tf.f, tf.g, *(lambda m: (m.f, m.g))(loaded(files[t])),
                            measures=["kl", "d_logit"]) for loss, files in by_loss.items()}
        for loss in ("kl", "logit_l2", "logit_l1"):
            assert kl[loss]["kl"] < kl["labels"]["kl"], (t, loss, kl)
            assert kl[loss]["d_logit"] < kl["labels"]["d_logit"], (t, loss, kl)


def test_student_table_summary_and_paper_comparison_rows(students):
    cfg, teachers, by_loss = students
    table = student_rows(Teachers(cfg.num_classes, cfg.width, cfg.seeds, cfg.n_test,
                                  cfg.test_data_seed), [loaded(t) for t in teachers],
                         {loss: [loaded(f) for f in files] for loss, files in by_loss.items()},
                         100, MEASURES)
    assert list(table.columns) == COLUMNS and len(table) == 2 * len(LOSSES)
    assert table["student_seed"].tolist() == [100, 101] * len(LOSSES)
    assert (table.groupby("loss")["probe_angle_teacher"].nunique() == 2).all()
    row = table[(table["loss"] == "kl") & (table["teacher_seed"] == 1)].iloc[0]
    direct = compare(loaded(teachers[1]).f, loaded(teachers[1]).g, loaded(by_loss["kl"][1]).f,
                     loaded(by_loss["kl"][1]).g, **MEASURES)
    assert row["d_llv"] == direct["d_llv"] and row["mcca_f"] == direct["mcca_f"]
    summary = distillation_summary(table)
    overall = summary[summary["K"] == "all"].set_index("loss")
    assert overall.loc["kl", "students"] == 2
    assert overall.loc["kl", "kl_mean"] == pytest.approx(table[table["loss"] == "kl"]["kl"].mean())
    checks = distillation_checks(table)
    assert len(checks) == 4 and all(c.verdict == "informational" for c in checks)
    assert "of 2" in checks[0].claim
    assert distillation_checks(table[table["loss"] != "kl"]) == []


def test_a_student_run_resumes_only_its_own_checkpoint(students, tmp_path):
    """The checkpoint's identity holds the loss: a KL run's checkpoint is not resumed by L1."""
    from repdist.training.checkpoint import load_resumable

    cfg, teachers, _ = students
    ckpt = tmp_path / "checkpoint.pt"
    cfg_train = train_config(steps=100, batch_size=64, eval_every=50, checkpoint_every=50,
                             protocol="clean")
    train_students(cfg, StudentSpec("kl", 100), cfg_train, [t.model for t in teachers],
                   seed_files(tmp_path / "kl", cfg.seeds), {}, RunOptions(checkpoint=ckpt))
    state = torch.load(ckpt, weights_only=False)
    assert state["identity"]["distillation"] == {"loss": "kl", "offset": 100}
    other = {**state["identity"], "distillation": {"loss": "logit_l1", "offset": 100}}
    assert load_resumable(ckpt, other, 100) is None


def test_the_summary_of_a_table_by_hand():
    table = pd.DataFrame([{c: 0.0 for c in COLUMNS} | {"K": 4, "width": 8, "loss": "kl",
                                                       "kl": v, "warning": ""}
                          for v in (1.0, 3.0)])
    summary = distillation_summary(table)
    assert summary["kl_mean"].tolist() == [2.0, 2.0]
    assert summary["kl_sd"].tolist() == pytest.approx([np.sqrt(2)] * 2)
