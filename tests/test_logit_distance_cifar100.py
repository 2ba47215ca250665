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
        assert torch.equal(p, q), name
        if p.is_floating_point() and p.std() > 0:
            assert not torch.equal(p, r), name


def test_the_teacher_reads_imagenet_weights_from_a_file_or_says_what_to_download(tmp_path):
    imagenet = TorchvisionResNet(50).state_dict()
    imagenet = {k: v + 1 if v.is_floating_point() else v for k, v in imagenet.items()}
    torch.save(imagenet, tmp_path / "resnet50.pth")
    teacher = build_follow_up_resnet(ResNetArch(depth=50), seed=10,
                                     imagenet=read_imagenet_weights(tmp_path / "resnet50.pth"))
    for name, value in imagenet.items():
        assert torch.equal(teacher.encoder.tv_layers.state_dict()[name], value), name
    with pytest.raises(ImageNetWeightsError, match=f"{IMAGENET_V2_URL}.*imagenet_weights"):
        read_imagenet_weights(tmp_path / "absent.pth")
    torch.save(TorchvisionResNet(18).state_dict(), tmp_path / "resnet18.pth")
    with pytest.raises(ImageNetWeightsError, match="not torchvision's ResNet-50"):
        read_imagenet_weights(tmp_path / "resnet18.pth")
    with pytest.raises(ValueError, match="ResNet-50 teacher"):
        build_follow_up_resnet(ResNetArch(depth=18), seed=0, imagenet=imagenet)
