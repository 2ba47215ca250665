"""The follow-up's CIFAR-100 pieces: the data in its real on-disk format (fetch, load, the
stand-in) and its networks (torchvision's ResNet-18 and ResNet-50 under their wrapper, ImageNet
weights from a file)."""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest
import torch

from repdist.data.cifar100 import (
    ARCHIVE,
    CIFAR100Error,
    fetch_cifar100,
    load_cifar100,
    to_unit,
    write_standin,
    write_standin_archive,
)
from repdist.io.download import ChecksumError
from repdist.models.follow_up_resnet import (
    IMAGENET_V2_URL,
    ImageNetWeightsError,
    ResNetArch,
    TorchvisionResNet,
    build_follow_up_resnet,
    read_imagenet_weights,
)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return write_standin(tmp_path_factory.mktemp("c100") / ARCHIVE.folder, n_train=300,
                         n_test=120, seed=3)


def test_the_standin_loads_as_cifar100_and_its_files_have_the_real_keys(standin):
    data = load_cifar100(standin)
    assert data.train_images.shape == (300, 3, 32, 32) and data.train_images.dtype == np.uint8
    assert data.test_images.shape == (120, 3, 32, 32) and data.standin
    assert data.train_labels.dtype == np.int64 and set(data.test_labels) == set(range(100))
    assert len(data.class_names) == 100
    with open(standin / "train", "rb") as fh:  # the data set's own reading snippet
        raw = pickle.load(fh, encoding="bytes")
    assert set(raw) == {b"filenames", b"batch_label", b"fine_labels", b"coarse_labels", b"data"}
    assert list(np.asarray(raw[b"fine_labels"]) // 5) == raw[b"coarse_labels"]
    with open(standin / "meta", "rb") as fh:
        meta = pickle.load(fh, encoding="latin1")
    assert len(meta["fine_label_names"]) == 100 and len(meta["coarse_label_names"]) == 20
    unit = to_unit(data.test_images)
    assert unit.dtype == np.float32 and unit.min() >= 0 and unit.max() <= 1
    # exact: IEEE's float32 k / 255 * 255 is k for each byte k
    assert np.array_equal(unit * 255, data.test_images.astype(np.float32))


def test_a_missing_or_foreign_file_is_named(standin, tmp_path):
    partial = tmp_path / ARCHIVE.folder
    partial.mkdir()
    (partial / "train").write_bytes((standin / "train").read_bytes())
    with pytest.raises(CIFAR100Error, match="missing test, meta.*logit_distance.cifar100.root"):
        load_cifar100(partial)
    (partial / "meta").write_bytes((standin / "meta").read_bytes())
    with open(partial / "test", "wb") as fh:
        pickle.dump({"data": np.zeros((2, 3072), np.uint8), "fine_labels": [0, 100]}, fh)
    with pytest.raises(CIFAR100Error, match="test: not a CIFAR-100 file"):
        load_cifar100(partial)


def test_fetch_verifies_extracts_and_refuses_a_wrong_checksum(tmp_path):
    source = tmp_path / "mirror" / ARCHIVE.name
    source.parent.mkdir()
    md5 = write_standin_archive(source, n_train=100, n_test=100)
    folder = fetch_cifar100(tmp_path / "resources", url=source.as_uri(), md5=md5)
    assert load_cifar100(folder).test_images.shape == (100, 3, 32, 32)
    assert sorted(p.name for p in (tmp_path / "resources").iterdir()) == [
        ARCHIVE.folder, ARCHIVE.name]  # no half-extracted leftovers
    with pytest.raises(ChecksumError, match="does not match the published"):
        fetch_cifar100(tmp_path / "other", url=source.as_uri())  # the real MD5 won't match
    assert not (tmp_path / "other" / ARCHIVE.folder).exists()


def test_fetch_offline_fails_fast_naming_the_archive_and_the_key(tmp_path):
    start = time.time()
    with pytest.raises(CIFAR100Error, match=f"{ARCHIVE.name} .MD5 {ARCHIVE.md5}.*"
                                            "logit_distance.cifar100.root"):
        fetch_cifar100(tmp_path, url=f"http://127.0.0.1:9/{ARCHIVE.name}", timeout=5)
    assert time.time() - start < 60 and not (tmp_path / ARCHIVE.name).exists()


@pytest.mark.parametrize(("depth", "params"), [(18, 11_689_512), (50, 25_557_032)])
def test_the_backbones_are_torchvisions(depth, params):
    """torchvision's published parameter counts (fc over ImageNet's 1,000 classes included)
    and its names; the wrapper adds their unused 3 x 3 stem and the map to M = 50."""
    tv = TorchvisionResNet(depth)
    assert sum(p.numel() for p in tv.parameters()) == params
    names = set(tv.state_dict())
    assert {"conv1.weight", "bn1.running_mean", "fc.weight", "layer2.0.downsample.0.weight",
            "layer4.1.bn2.num_batches_tracked"} <= names
    assert ("layer1.0.downsample.0.weight" in names) == (depth == 50)  # 64 -> 256 channels
    assert ("layer1.0.conv3.weight" in names) == (depth == 50)


def test_a_model_maps_cifar_images_to_its_embedding_and_logits():
    student = build_follow_up_resnet(ResNetArch(depth=18, rep_dim=50, xavier_head=True), seed=4)
    keys = list(student.state_dict())
    assert keys[0] == "encoder.tv_layers.conv1.weight" and keys[-1] == "linear.weight"
    assert {"encoder.conv1.weight", "encoder.linear.weight", "encoder.linear.bias"} <= set(keys)
    student.eval()
    x = torch.rand(3, 3, 32, 32)
    with torch.no_grad():
        f, logits = student.embed(x), student(x)
    assert f.shape == (3, 50) and logits.shape == (3, 100)
    assert torch.allclose(logits, f @ student.linear.weight.T, atol=1e-5)
    bound = (6 / (50 + 100)) ** 0.5  # Xavier-uniform on the head
    assert student.linear.weight.abs().max() <= bound
    again = build_follow_up_resnet(ResNetArch(depth=18, rep_dim=50, xavier_head=True), seed=4)
    other = build_follow_up_resnet(ResNetArch(depth=18, rep_dim=50, xavier_head=True), seed=5)
    for (name, p), q, r in zip(student.state_dict().items(), again.state_dict().values(),
                               other.state_dict().values(), strict=True):
        assert torch.equal(p, q), name  # exact: the same seed built again
        if p.is_floating_point() and p.std() > 0:
            assert not torch.equal(p, r), name


def test_the_teacher_reads_imagenet_weights_from_a_file_or_says_what_to_download(tmp_path):
    imagenet = TorchvisionResNet(50).state_dict()
    imagenet = {k: v + 1 if v.is_floating_point() else v for k, v in imagenet.items()}
    torch.save(imagenet, tmp_path / "resnet50.pth")
    teacher = build_follow_up_resnet(ResNetArch(depth=50), seed=10,
                                     imagenet=read_imagenet_weights(tmp_path / "resnet50.pth"))
    for name, value in imagenet.items():
        # exact: a copy from the file
        assert torch.equal(teacher.encoder.tv_layers.state_dict()[name], value), name
    with pytest.raises(ImageNetWeightsError, match=f"{IMAGENET_V2_URL}.*imagenet_weights"):
        read_imagenet_weights(tmp_path / "absent.pth")
    torch.save(TorchvisionResNet(18).state_dict(), tmp_path / "resnet18.pth")
    with pytest.raises(ImageNetWeightsError, match="not torchvision's ResNet-50"):
        read_imagenet_weights(tmp_path / "resnet18.pth")
    with pytest.raises(ValueError, match="ResNet-50 teacher"):
        build_follow_up_resnet(ResNetArch(depth=18), seed=0, imagenet=imagenet)


@pytest.mark.parametrize("depth", [18, 50])
def test_a_narrower_network_keeps_every_layer_and_key(depth):
    """`width` (config logit_distance.cifar100.width; the quick DAG's 4) divides every channel
    count of torchvision's 64-wide network, and nothing else: the same keys in the same order,
    the 3 colours, M, the 100 labels and fc's 1,000 kept; a batch maps to f and logits of the
    same sizes. ImageNet's weights need width 64."""
    full = build_follow_up_resnet(ResNetArch(depth, 4, 100), 0).state_dict()
    narrow_model = build_follow_up_resnet(ResNetArch(depth, 4, 100, width=4), 0)
    narrow = narrow_model.state_dict()
    assert list(narrow) == list(full)
    for key, value in full.items():
        assert tuple(narrow[key].shape) == tuple(
            n // 16 if n % 64 == 0 else n for n in value.shape), key
    with torch.no_grad():
        f, logits = narrow_model.eval().embed(torch.rand(2, 3, 32, 32)), narrow_model(
            torch.rand(2, 3, 32, 32))
    assert f.shape == (2, 4) and logits.shape == (2, 100)
    if depth == 50:
        with pytest.raises(ValueError, match="width 64"):
            build_follow_up_resnet(ResNetArch(50, width=4), seed=0,
                                   imagenet=TorchvisionResNet(50).state_dict())


def _resnets(depth, seeds, rep_dim=4, k=100):
    return [build_follow_up_resnet(ResNetArch(depth, rep_dim, k, xavier_head=True), s)
            for s in seeds]


def test_a_stack_of_resnets_trains_each_as_it_would_alone():
    """Two ResNet-18s as one stack, two Adam steps on the summed losses: each model's weights
    and BatchNorm statistics equal its own training alone; state_dict_of is its own state in
    their keys."""
    from repdist.experiments.logit_distance.training import stack_models
    from repdist.training.distillation import follow_up_loss
    from repdist.training.loop import make_adam

    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(6, 3, 32, 32, generator=g), torch.randint(0, 100, (6,), generator=g)
    stack = stack_models(_resnets(18, (0, 1)))
    assert stack.num_models == 2 and stack.head.shape == (2, 100, 4)
    opt = make_adam(stack, 1e-3)
    for _ in range(2):
        opt.zero_grad()
        follow_up_loss("labels", stack.logits(x), labels=y).sum().backward()
        opt.step()
    for i, alone in enumerate(_resnets(18, (0, 1))):
        alone_opt = make_adam(alone, 1e-3)
        for _ in range(2):
            alone_opt.zero_grad()
            follow_up_loss("labels", alone(x)[None], labels=y).sum().backward()
            alone_opt.step()
        ours, theirs = stack.state_dict_of(i), alone.state_dict()
        assert list(ours) == list(theirs)
        for key, value in theirs.items():
            torch.testing.assert_close(ours[key], value, rtol=0, atol=1e-6, msg=key)
        with torch.no_grad():
            torch.testing.assert_close(stack.eval().embed(x)[i], alone.eval().embed(x),
                                       rtol=0, atol=1e-5)
            torch.testing.assert_close(stack.unembed()[i], alone.linear.weight)
    with pytest.raises(ValueError, match="differ in architecture"):
        stack_models(_resnets(18, (0,)) + [build_follow_up_resnet(ResNetArch(18, 5, 100), 0)])


def test_the_teachers_batches_come_in_the_datas_order_when_asked():
    """Their CIFAR-100 teacher's loader has no shuffle: with in_order every epoch takes the
    examples in their order (the last batch short); without it each epoch is a permutation."""
    from repdist.experiments.logit_distance.training import stack_models
    from repdist.models.follow_up import FollowUpArch, build_follow_up
    from repdist.training.loop import RunOptions, TrainData, batch_nll, train
    from repdist.training.settings import TrainConfig

    seen = []

    def objective(model, x, codes, labels, idx):
        seen.append(idx.tolist())
        return batch_nll(model, x, codes, labels)

    rng = np.random.default_rng(0)
    data = TrainData(rng.normal(size=(10, 2)).astype(np.float32), rng.integers(0, 3, 10),
                     rng.normal(size=(4, 2)).astype(np.float32), rng.integers(0, 3, 4),
                     np.zeros((3, 1), np.float32))
    cfg = TrainConfig(steps=6, batch_size=4, lr=1e-3, data_seed=0, log_every=3, eval_every=3,
                      checkpoint_every=0, protocol="clean")
    arch = FollowUpArch(hidden=4, depth=1, num_classes=3)
    for in_order in (True, False):
        seen.clear()
        train(stack_models([build_follow_up(arch, 0)]), data, cfg,
              RunOptions(objective=objective, in_order=in_order))
        epochs = [sum(seen[i:i + 3], []) for i in (0, 3)]
        assert all(sorted(e) == list(range(10)) for e in epochs)
        assert (epochs == [list(range(10))] * 2) == in_order


def test_resnet_students_learn_from_a_resnet50_teacher(tmp_path):
    """The CIFAR-100 jobs at toy size: a ResNet-50 teacher (ImageNet weights given: its
    layers start from them) trained in the data's order, then ResNet-18 students by each
    loss on its logits, measured after every epoch; every model written, loadable as theirs."""
    from repdist.experiments.logit_distance.training import (
        Student,
        StudentRun,
        TeacherRun,
        cifar100_train_data,
        train_students,
        train_teachers,
    )
    from repdist.experiments.outputs import SeedFiles
    from repdist.training.loop import RunOptions
    from repdist.training.settings import EpochSchedule
    from repdist.experiments.logit_distance.training import FollowUpTraining

    folder = write_standin(tmp_path / ARCHIVE.folder, n_train=40, n_test=16, seed=1)
    data = cifar100_train_data(folder / "train")
    assert data.train_x.shape == (40, 3, 32, 32) and data.train_x.max() <= 1.0
    training = FollowUpTraining(1, 1e-3, 32, EpochSchedule(1, 1e-3, 0.995), 1)
    imagenet = TorchvisionResNet(50).state_dict()

    def files(name, n):
        def one(i):
            base = tmp_path / name / str(i)
            return SeedFiles({split: base / f"embeddings_{split}.parquet"
                              for split in ("train", "test")}, base / "unembeddings.parquet",
                             base / "metrics.json", base / "model.pt")
        return [one(i) for i in range(n)]

    teacher_arch = ResNetArch(50, 3, 100)
    teacher_files = files("teachers", 1)
    train_teachers(TeacherRun(teacher_arch, [10], training, imagenet=imagenet, in_order=True),
                   data, teacher_files, {}, RunOptions(eval_batch_size=16))
    trained = torch.load(teacher_files[0].model, weights_only=True)
    start = imagenet["conv1.weight"]
    assert float((trained["encoder.tv_layers.conv1.weight"] - start).abs().max()) < 1e-4
    students = [Student(0, 10, loss, 0) for loss in ("kl", "l1", "l2", "labels")]
    run = StudentRun(ResNetArch(18, 3, 100), students, training, 1, 50,
                     teacher_arch=teacher_arch)
    student_files = files("students", 4)
    table = train_students(run, [teacher_files[0].model], data, student_files, {},
                           RunOptions(eval_batch_size=16))
    assert len(table) == 4 * 2 and set(table["loss"]) == {"kl", "l1", "l2", "labels"}
    assert np.isfinite(table[["kl", "d_logit2", "mcca", "d_rep"]].to_numpy()).all()
    for out, loss in zip(student_files, ("kl", "l1", "l2", "labels")):
        model = build_follow_up_resnet(ResNetArch(18, 3, 100), 0)
        model.load_state_dict(torch.load(out.model, weights_only=True))
    assert (table.query("split == 'train' and loss == 'labels'")["kl"] > 0).all()


def test_the_vmapped_stack_computes_what_the_loop_computes():
    """vmap (one batched network, to be timed on a GPU) against loop (each model alone): the
    same logits, BatchNorm statistics after a training-mode pass, every gradient of the summed
    loss, and state dicts in their keys; its rounding differs (grouped convolutions)."""
    from repdist.models.follow_up_resnet import stack_resnets
    from repdist.training.distillation import follow_up_loss

    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(6, 3, 32, 32, generator=g), torch.randint(0, 100, (6,), generator=g)
    stacks = {mode: stack_resnets(_resnets(18, (0, 1)), mode) for mode in ("loop", "vmap")}
    for stack in stacks.values():
        follow_up_loss("labels", stack.train().logits(x), labels=y).sum().backward()
    loop, vmap = stacks["loop"], stacks["vmap"]
    assert vmap.num_models == 2 and vmap.head.shape == (2, 100, 4)
    for i in range(2):
        ours, alone = vmap.state_dict_of(i), loop.state_dict_of(i)
        assert list(ours) == list(alone)
        for key, value in alone.items():  # weights, and BatchNorm's statistics after the pass
            torch.testing.assert_close(ours[key], value, rtol=1e-5, atol=1e-6, msg=key)
        for name, param in loop.members[i].named_parameters():
            if param.grad is not None:  # torchvision's fc and their 3 x 3 stem are never used
                grad = getattr(vmap, name.replace(".", "__")).grad[i]
                torch.testing.assert_close(grad, param.grad, rtol=1e-3, atol=1e-5, msg=name)
    with torch.no_grad():
        torch.testing.assert_close(vmap.eval().logits(x), loop.eval().logits(x), rtol=1e-5,
                                   atol=1e-5)
    with pytest.raises(ValueError, match="unknown stack mode"):
        stack_resnets(_resnets(18, (0,)), "grouped")
