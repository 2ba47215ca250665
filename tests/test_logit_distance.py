"""The follow-up's experiment (Nielsen et al. 2026, "Logit Distance Bounds Representational
Similarity"): its spirals, models, losses, schedule and measures, held to their definitions
(`python -m repdist_retrace.logit_distance` holds them to the authors' own code)."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from repdist.data.spirals import load_spirals, make_spirals, save_spirals, spiral_points
from repdist.data.sub import (
    SubFeaturesError,
    SubImagesError,
    load_sub_features,
    split_sub,
    sub_batches,
    sub_images,
    write_sub_image_standin,
    write_sub_standin,
)
from repdist.experiments.logit_distance.training import (
    FollowUpTraining,
    Student,
    StudentRun,
    TeacherRun,
    concept_probe,
    follow_up_train_data,
    job_data,
    train_students,
    train_teachers,
    write_sub_features,
)
from repdist.experiments.logit_distance.tables import (
    _iv_average,
    final_table,
    follow_up_checks,
    inverse_variance_summary,
)
from repdist.experiments.outputs import SeedFiles
from repdist.extract.image_text import final_cls
from repdist.measures.logit_distance import (
    d_logit_squared,
    d_rep,
    d_rep_null,
    f1_bound,
    kl_bound,
    kl_from_logits,
    logits,
)
from repdist.measures.null import NullSettings
from repdist.models.follow_up import FollowUpArch, StackedFollowUp, build_follow_up
from repdist.models.prh_standins import VisionStandinSpec, build_vision_standin
from repdist.training.distillation import cbm_objective, follow_up_loss, follow_up_objective
from repdist.training.loop import RunOptions, TrainConfig, TrainData, train
from repdist.training.settings import EpochSchedule

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels


def test_the_spirals_are_their_arms_labels_and_split():
    """28 arms of n points at radii 1..10, each label on n_spirals arms; the first points and
    labels of seed 400 as their generator gives them (golden: held to their code by the
    retrace); a stratified 50/25/25 split; the same for the same seed."""
    x, y = spiral_points(400, n_per_arm=10)
    assert x.shape == (280, 2) and y.shape == (280,)
    radius = np.linalg.norm(x, axis=1).reshape(28, 10)
    np.testing.assert_allclose(radius, np.tile(np.linspace(1, 10, 10), (28, 1)), rtol=1e-12)
    arms = y.reshape(28, 10)
    assert (arms == arms[:, :1]).all()  # one label an arm
    assert np.bincount(arms[:, 0], minlength=7).tolist() == [4] * 7
    np.testing.assert_allclose(x[0], [0.9973164487706805, 0.07321134482741498], rtol=1e-12)
    assert arms[:7, 0].tolist() == [0, 4, 2, 5, 3, 1, 6]
    data = make_spirals(400, n_per_arm=10)
    sizes = {s: len(v) for s, v in data.x.items()}
    assert sizes == {"train": 140, "val": 70, "test": 70}
    assert np.bincount(data.labels["train"], minlength=7).tolist() == [20] * 7
    again = make_spirals(400, n_per_arm=10)
    assert all(np.array_equal(data.x[s], again.x[s]) for s in data.x)  # exact: the same seeded draw
    assert not np.array_equal(make_spirals(401, n_per_arm=10).x["train"], data.x["train"])


def test_spirals_are_saved_in_their_format_and_read_back(tmp_path):
    data = make_spirals(400, n_per_arm=10)
    save_spirals(data, tmp_path / "s.npz")
    with np.load(tmp_path / "s.npz") as npz:
        assert sorted(npz.files) == sorted(f"{a}_{s}" for a in "XYZ"
                                           for s in ("train", "val", "test"))
        assert npz["X_train"].dtype == np.float32 and npz["Y_train"].dtype == np.int64
        assert (npz["Z_test"] == -1).all()
    back = load_spirals(tmp_path / "s.npz")
    # exact: a round trip
    assert back.num_classes == 7 and np.array_equal(back.x["test"], data.x["test"])
    np.savez(tmp_path / "bad.npz", X_train=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="not a spirals file"):
        load_spirals(tmp_path / "bad.npz")


def their_construction(seed: int, xavier: bool) -> dict[str, torch.Tensor]:
    """Their MLP and head built in their order after torch.manual_seed (backbones/nn.py's
    layers, then the head, then Xavier for a student), as plain nn.Linear layers."""
    torch.manual_seed(seed)
    layers = {f"encoder.enc_block_{i}": torch.nn.Linear(a, b)
              for i, (a, b) in enumerate([(2, 8), (8, 8), (8, 8)], start=1)}
    layers["encoder.enc_final"] = torch.nn.Linear(8, 2)
    head = torch.nn.Linear(2, 7, bias=False)
    if xavier:
        torch.nn.init.xavier_uniform_(head.weight)
    state = {f"{k}.{n}": p for k, layer in layers.items() for n, p in layer.state_dict().items()}
    return {**state, "linear.weight": head.weight.detach()}


@pytest.mark.parametrize("xavier", [False, True])
def test_a_model_starts_from_their_initial_weights(xavier):
    ours = build_follow_up(FollowUpArch(hidden=8, xavier_head=xavier), 40).state_dict()
    theirs = their_construction(40, xavier)
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        assert torch.equal(ours[key], value), key  # exact: their seeded draws, reproduced


def test_a_stack_is_each_model_alone():
    """Logits in eval mode, and one Adam step with dropout 0, of a stack of three: each model's
    as alone (float64)."""
    arch = FollowUpArch(hidden=8, dropout=0.0)
    models = [build_follow_up(arch, s).double() for s in (1, 2, 3)]
    stack = StackedFollowUp(models).double().eval()
    x = torch.randn(16, 2, dtype=torch.float64)
    for i, model in enumerate(models):
        torch.testing.assert_close(stack.logits(x)[i], model.eval()(x), rtol=1e-12, atol=1e-12)
    target = torch.randn(3, 16, 7, dtype=torch.float64)
    opt = torch.optim.Adam(stack.parameters(), lr=1e-2)
    follow_up_loss("l1", stack.train().logits(x), target).sum().backward()
    opt.step()
    for i, model in enumerate(models):
        alone = torch.optim.Adam(model.parameters(), lr=1e-2)
        follow_up_loss("l1", model.train()(x), target[i]).backward()
        alone.step()
        for key, value in model.state_dict().items():
            torch.testing.assert_close(stack.state_dict_of(i)[key], value, rtol=1e-12,
                                       atol=1e-12)


def test_their_losses_are_torchs_on_raw_logits():
    s, t = torch.randn(2, 32, 7), torch.randn(2, 32, 7)
    y = torch.randint(0, 7, (32,))
    for i in range(2):
        kl = torch.nn.KLDivLoss(reduction="batchmean", log_target=True)(
            F.log_softmax(s[i], dim=1), F.log_softmax(t[i], dim=1))
        torch.testing.assert_close(follow_up_loss("kl", s, t)[i], kl)
        torch.testing.assert_close(follow_up_loss("l1", s, t)[i], F.l1_loss(s[i], t[i]))
        torch.testing.assert_close(follow_up_loss("l2", s, t)[i], ((s[i] - t[i]) ** 2).sum() / 32)
        torch.testing.assert_close(follow_up_loss("labels", s, labels=y)[i],
                                   F.cross_entropy(s[i], y))
    with pytest.raises(ValueError, match="unknown loss"):
        follow_up_loss("l3", s, t)


def test_a_stack_of_students_learns_each_by_its_own_loss():
    kinds = ["kl", "l1", "l2", "labels"]
    stack = StackedFollowUp([build_follow_up(FollowUpArch(hidden=8, dropout=0.0), s)
                             for s in range(4)]).eval()
    teacher = torch.randn(4, 50, 7)
    x, y, idx = torch.randn(20, 2), torch.randint(0, 7, (20,)), torch.arange(10, 30)
    loss = follow_up_objective(kinds, teacher)(stack, x, None, y, idx)
    z = stack.logits(x)
    for i, kind in enumerate(kinds):
        want = follow_up_loss(kind, z[i], teacher[i, idx], y)
        torch.testing.assert_close(loss[i], want)
    with pytest.raises(ValueError, match="teachers' logits"):
        follow_up_objective(["kl"], None)


def test_the_schedule_is_their_sequential_lr():
    """Their utils/train.py: ConstantLR(0.001, 20 epochs) then ExponentialLR(0.995)."""
    opt = torch.optim.Adam(torch.nn.Linear(1, 1).parameters(), lr=1e-3)
    schedulers = [torch.optim.lr_scheduler.ConstantLR(opt, factor=0.001, total_iters=20),
                  torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.995)]
    theirs = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=schedulers, milestones=[20])
    ours = EpochSchedule()
    for epoch in range(120):
        assert opt.param_groups[0]["lr"] == pytest.approx(1e-3 * ours.factor(epoch), rel=1e-13)
        opt.step()
        theirs.step()


def test_the_loop_steps_at_the_scheduled_rate():
    """A run whose first epoch has rate 0 leaves the weights where they started through it;
    the next epoch moves them (the rate is set between steps)."""
    data = TrainData(np.random.default_rng(0).normal(size=(40, 2)).astype(np.float32),
                     np.arange(40) % 7, np.zeros((8, 2), np.float32), np.arange(8) % 7,
                     np.zeros((7, 1), np.float32))
    stack = StackedFollowUp([build_follow_up(FollowUpArch(hidden=8), 0)])
    start = {k: v.clone() for k, v in stack.state_dict().items()}
    seen = {}

    def at(done):
        if done in (4, 8):
            seen[done] = {k: v.clone() for k, v in stack.state_dict().items()}

    cfg = TrainConfig(steps=8, batch_size=10, lr=1e-2, data_seed=0, log_every=4, eval_every=4,
                      checkpoint_every=0, protocol="clean")
    train(stack, data, cfg, RunOptions(on_step=at, lr_factor=EpochSchedule(1, 0.0, 1.0)
                                       .per_step(4)))
    # exact: a rate of 0 moves no weight
    assert all(torch.equal(seen[4][k], v) for k, v in start.items())
    assert not torch.equal(seen[8]["head"], start["head"])


def random_model(rng, n=400, k=7, m=2):
    return rng.normal(size=(n, m)), rng.normal(size=(k, m))


def test_d_rep_is_zero_in_the_identifiability_class_and_positive_outside():
    """f2 = f1 B, g2 = g1 B^-T (+ a shift of every g) give the same distribution: d_rep 0 over
    every pivot and subset; another model does not."""
    rng = np.random.default_rng(0)
    f1, g1 = random_model(rng)
    b = rng.normal(size=(2, 2)) + 2 * np.eye(2)
    f2, g2 = f1 @ b, g1 @ np.linalg.inv(b).T + rng.normal(size=2)
    same = d_rep(f1, g1, f2, g2)
    assert same.pairs == 7 * math.comb(6, 2) and not same.sampled
    assert same.value == pytest.approx(0.0, abs=1e-12)
    other = d_rep(f1, g1, *random_model(rng))
    assert other.value > 0.1
    sampled = d_rep(f1, g1, *random_model(rng), max_subsets=20)
    assert sampled.sampled and sampled.pairs + sampled.singular == 20


def test_d_rep_is_the_mean_of_the_residual_over_pivots_and_subsets():
    rng = np.random.default_rng(1)
    (f1, g1), (f2, g2) = random_model(rng, n=50, k=4), random_model(rng, n=50, k=4)
    values = []
    for p in range(4):
        others = [y for y in range(4) if y != p]
        for i in range(3):
            for j in range(i + 1, 3):
                rows = [others[i], others[j]]
                a = np.linalg.solve(g1[rows] - g1[p], g2[rows] - g2[p])
                values.append(np.mean(np.sum((f1 - f2 @ a.T) ** 2, axis=1)))
    assert d_rep(f1, g1, f2, g2).value == pytest.approx(np.mean(values), rel=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_theorem_f1_and_the_kl_bound_hold_between_any_two_models(seed):
    rng = np.random.default_rng(seed)
    (f1, g1), (f2, g2) = random_model(rng, m=3), random_model(rng, m=2)
    bound = f1_bound(f1, g1, f2, g2)
    assert bound.holds and 0 < bound.left <= bound.right
    assert list(bound.eigenvalues) == sorted(bound.eigenvalues, reverse=True)
    kl_side, tau = kl_bound(logits(f1, g1), logits(f2, g2))
    assert kl_side >= d_logit_squared(logits(f1, g1), logits(f2, g2)) and 0 < tau < 1 / 7
    itself = f1_bound(f1, g1, f1, g1)
    assert itself.left == pytest.approx(0.0, abs=1e-9) and itself.right == 0.0


def test_kl_is_the_teachers_against_the_students():
    rng = np.random.default_rng(2)
    zt, zs = rng.normal(size=(30, 5)), rng.normal(size=(30, 5))
    p = np.exp(zt) / np.exp(zt).sum(1, keepdims=True)
    q = np.exp(zs) / np.exp(zs).sum(1, keepdims=True)
    assert kl_from_logits(zt, zs) == pytest.approx(np.mean(np.sum(p * np.log(p / q), 1)))


def test_the_inverse_variance_average_is_theirs():
    """Two teachers, students' values {1, 3} and {10, 10.5}: each weighted by n / var."""
    frame = pd.DataFrame({"teacher_seed": [0, 0, 1, 1], "x": [1.0, 3.0, 10.0, 10.5]})
    w0, w1 = 2 / 2.0, 2 / 0.125
    mean, var = _iv_average(frame, "x")
    assert mean == pytest.approx((4.0 / 2.0 + 20.5 / 0.125) / (w0 + w1))
    assert var == pytest.approx(1 / (w0 + w1))
    flat = pd.DataFrame({"teacher_seed": [0, 0, 0], "x": [2.0, 2.0, 2.0]})
    assert _iv_average(flat, "x") == (2.0, 0.0)


def final_rows(l1_advantage: float) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for t in (0, 1):
        for s in range(5):
            base = 0.5 + 0.05 * rng.normal()
            for loss, shift in (("kl", 0.0), ("l1", l1_advantage), ("l2", l1_advantage)):
                rows.append({"teacher_seed": t, "seed": s, "loss": loss,
                             "mcca_f_calibrated": base + shift, "d_rep": 1.0 - base - shift,
                             "f1_holds": True, "f1_slack": 0.1})
    return pd.DataFrame(rows)


def test_the_claims_pass_when_logit_students_are_closer_and_fail_when_they_are_not():
    passed = {c.claim.split(":")[1][:40]: c.passed for c in follow_up_checks(final_rows(0.1), "t")}
    assert all(passed.values()) and len(passed) == 5
    same = follow_up_checks(final_rows(0.0), "t")
    assert [c.passed for c in same] == [False, False, False, False, True]
    broken = final_rows(0.1).assign(f1_holds=[True] * 29 + [False])
    assert follow_up_checks(broken, "t")[-1].passed is False


def test_teachers_and_students_train_measure_and_tabulate(tmp_path):
    """The branch at toy size: two teachers, their students by every loss, snapshots at epochs
    2 and 4 on both splits, the final table with nulls and bounds, the summary."""
    data = follow_up_train_data(make_spirals(400, n_per_arm=12))
    arch = FollowUpArch(hidden=8)
    training = FollowUpTraining(epochs=4, batch_size=32, schedule=EpochSchedule(1))

    def files(name):
        folder = tmp_path / name
        return SeedFiles({"train": folder / "tr.parquet", "test": folder / "te.parquet"},
                         folder / "g.parquet", folder / "m.json", folder / "model.pt")

    train_teachers(TeacherRun(arch, [400, 401], training), data, [files("t0"), files("t1")], {},
                   RunOptions())
    students = [Student(t, 400 + t, loss, 40) for t in (0, 1) for loss in ("kl", "l1", "labels")]
    snapshots = train_students(StudentRun(arch, students, training, 2, 1000),
                               [tmp_path / "t0/model.pt", tmp_path / "t1/model.pt"], data,
                               [files(f"s{i}") for i in range(len(students))], {}, RunOptions())
    assert sorted(set(snapshots["epoch"])) == [2, 4] and len(snapshots) == 2 * 2 * len(students)
    assert snapshots[["kl", "d_logit2", "mcca", "d_rep"]].notna().all().all()
    from repdist.io.representations import load_representations

    def reps(name):
        return load_representations(tmp_path / name / "te.parquet", tmp_path / name / "g.parquet")

    final = final_table([{"teacher_seed": s.teacher_seed, "loss": s.loss, "seed": s.seed}
                         for s in students], {400: reps("t0"), 401: reps("t1")},
                        [reps(f"s{i}") for i in range(len(students))],
                        NullSettings(permutations=20), 1000)
    assert final["f1_holds"].all() and (final["kl_bound"] >= final["f1_right"]).all()
    assert final[["mcca_f_p", "d_rep_p", "kl_calibrated"]].notna().all().all()
    summary = inverse_variance_summary(snapshots)
    assert set(summary["loss"]) == {"kl", "l1", "labels"} and (summary["teachers"] == 2).all()


def test_d_rep_null_draws_are_d_rep_of_the_reordered_inputs():
    rng = np.random.default_rng(4)
    (f1, g1), (f2, g2) = random_model(rng, n=120, k=9, m=3), random_model(rng, n=120, k=9, m=3)
    orders = np.array([rng.permutation(120) for _ in range(6)])
    np.testing.assert_allclose(d_rep_null(f1, g1, f2, g2, orders),
                               [d_rep(f1[o], g1, f2, g2).value for o in orders], rtol=1e-10)


def test_sub_features_are_read_in_their_format_and_split_as_theirs(tmp_path):
    """A stand-in in their file format: 33 birds x 4 points, their 70/30 then 80/20 split
    stratified by bird; a file without their keys names what is missing."""
    write_sub_standin(tmp_path / "sub.pt", per_bird=10, seed=0, dim=16)
    x, birds, attributes = load_sub_features(tmp_path / "sub.pt")
    assert x.shape == (330, 16) and x.dtype == np.float32 and birds.max() == 32
    data = split_sub(x, birds, attributes)
    assert {k: len(v) for k, v in data.x.items()} == {"train": 184, "val": 47, "test": 99}
    assert (np.bincount(data.labels["test"], minlength=33) == 3).all()
    assert data.num_classes == 33 and data.num_concepts == attributes.max() + 1
    torch.save({"embeddings": torch.zeros(3, 4)}, tmp_path / "bad.pt")
    with pytest.raises(SubFeaturesError, match="labels"):
        load_sub_features(tmp_path / "bad.pt")


def test_subs_images_become_their_features_file_as_their_preprocessing_makes_it(tmp_path):
    """Stand-in images in the hub's layout, read in batches of 5, resized to 64 first, through
    a tiny DINOv2's processor and its final CLS token, written in their format: the features of
    their recipe (every image at once, RGB, resized bilinear, processor, last_hidden_state[:,
    0]), each image's bird and attribute, and their file's keys."""
    import pyarrow.parquet as pq
    from PIL import Image

    write_sub_image_standin(tmp_path / "sub", per_bird=3, seed=0, birds=4, attributes=3)
    model, processor = build_vision_standin(VisionStandinSpec("dinov2", width=16, seed=1))
    images = sub_images(str(tmp_path / "sub"))
    assert images.rows == 12 and images.files[0].name == "test-00000-of-00001.parquet"
    batches = [(final_cls(model, processor, pictures), birds, attributes)
               for pictures, birds, attributes in sub_batches(images, 5, 64)]
    assert [len(b[1]) for b in batches] == [5, 5, 2]
    path = tmp_path / "features.pt"
    info = {"model": "stand-in", "image_size": 64, "dataset": images.source, "split": "test"}
    assert write_sub_features(path, batches, info) == 12
    x, birds, attributes = load_sub_features(path)
    table = pq.read_table(images.files[0]).to_pydict()
    theirs = [Image.open(io.BytesIO(cell["bytes"])).convert("RGB").resize((64, 64),
                                                                         Image.BILINEAR)
              for cell in table["image"]]
    with torch.no_grad():
        want = model(**processor(images=theirs, return_tensors="pt")).last_hidden_state[:, 0]
    np.testing.assert_allclose(x, want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(birds, np.repeat(np.arange(4), 3))  # exact: integers
    np.testing.assert_array_equal(attributes, table["attr_label"])  # exact: integers
    saved = torch.load(path, weights_only=True)
    assert {k: saved[k] for k in info} == info


def test_subs_images_that_cannot_be_read_are_named(tmp_path, monkeypatch):
    """A parquet file without SUB's columns, a folder without parquet files, and the hub's
    dataset while offline and not cached: each error names the file, or how to fetch it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "empty").mkdir()
    with pytest.raises(SubImagesError, match="no parquet files"):
        sub_images(str(tmp_path / "empty"))
    (tmp_path / "odd" / "data").mkdir(parents=True)
    pq.write_table(pa.table({"image": [{"bytes": b"x", "path": None}], "bird_label": [0]}),
                   tmp_path / "odd" / "data" / "test-00000-of-00001.parquet")
    with pytest.raises(SubImagesError, match="test-00000-of-00001.parquet: no column attr_label"):
        sub_images(str(tmp_path / "odd"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "cache"))
    with pytest.raises(SubImagesError, match="hf download Jessica-bader/SUB --repo-type "
                                             "dataset.*logit_distance.sub.images"):
        sub_images("Jessica-bader/SUB")


def test_the_concept_bottleneck_teacher_learns_birds_and_attributes(tmp_path):
    """Their BiClassification_Loss: cross entropy of the labels plus that of the concepts; and
    a job's SUB data: the birds as labels, the attributes' probe."""
    write_sub_standin(tmp_path / "sub.pt", per_bird=10, seed=0, dim=16)
    job = job_data("sub", tmp_path / "sub.pt", 33)
    assert job.probe is not None and len(job.concepts) == len(job.data.train_x)
    arch = FollowUpArch(in_dim=16, hidden=8, depth=1, rep_dim=4, num_classes=33, concepts=33,
                        dropout=0.0, xavier_head=True)
    stack = StackedFollowUp([build_follow_up(arch, 0)])
    x = torch.as_tensor(job.data.train_x[:20])
    y, idx = torch.as_tensor(job.data.train_labels[:20]), torch.arange(20)
    concepts = torch.as_tensor(job.concepts)
    loss = cbm_objective(concepts)(stack, x, None, y, idx)
    want = F.cross_entropy(stack.logits(x)[0], y) + F.cross_entropy(
        stack.concept_logits(x)[0], concepts[:20])
    torch.testing.assert_close(loss[0], want)


def test_the_concept_probe_reads_a_concept_that_is_there_and_not_one_that_is_not():
    rng = np.random.default_rng(5)
    concepts = np.repeat(np.arange(4), 50)
    holding = np.eye(4)[concepts] * 3 + rng.normal(size=(200, 4))
    assert concept_probe(holding, concepts)["concept_probe_accuracy"] > 0.9
    chance = concept_probe(rng.normal(size=(200, 4)), concepts)
    assert chance["concept_probe_accuracy"] < 0.45 and chance["concept_probe_nll"] > 1.2


def test_a_rules_settings_become_its_jobs_runs():
    """experiments.logit_distance.jobs: the MLP data sets' one architecture, CIFAR-100's ResNet
    teacher and students, each student indexed to its teacher, SUB's objective and probe seed."""
    from repdist.experiments.logit_distance.jobs import (
        architectures,
        job_options,
        student_run,
        teacher_run,
    )
    from repdist.models.follow_up_resnet import ResNetArch

    training = FollowUpTraining(epochs=2)
    mlp = {"in_dim": 2, "hidden": 8, "depth": 1, "rep_dim": 2, "num_classes": 7}
    teachers = teacher_run(mlp, [400, 401], training, None)
    assert teachers.arch == FollowUpArch(**mlp) and teachers.imagenet is None
    assert not teachers.in_order
    members = [(401, "kl", 40), (401, "l1", 40), (400, "kl", 41)]
    run = student_run(mlp, members, training, 5, 100, None)
    assert run.students == [Student(0, 401, "kl", 40), Student(0, 401, "l1", 40),
                            Student(1, 400, "kl", 41)]
    assert run.arch == FollowUpArch(**mlp) and run.teacher_arch is None
    resnet = {"student_depth": 18, "imagenet_weights": None, "teacher_in_order": True,
              "eval_batch_size": 16}
    wide = {"depth": 50, "rep_dim": 4, "num_classes": 100, "width": 4}
    assert architectures(wide, resnet) == (ResNetArch(**wide), ResNetArch(**{**wide, "depth": 18}))
    run = student_run(wide, members, training, 5, 100, resnet)
    assert run.teacher_arch == ResNetArch(**wide) and run.arch.depth == 18
    cifar = teacher_run(wide, [10], training, resnet)
    assert cifar.in_order and cifar.imagenet is None
    assert job_options("c.pt", "cpu", resnet).eval_batch_size == 16
    options = job_options("c.pt", "cpu", None, np.zeros((4, 3), dtype=np.int64))
    assert options.objective is not None and options.eval_batch_size is None
    with pytest.raises(ValueError, match="probe_seed"):
        job_data("sub", "unused.pt", 33, None)
