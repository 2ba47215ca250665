"""The follow-up's CIFAR-100 networks: a torchvision ResNet-18 or ResNet-50, as for ImageNet.
They are their `backbones/resnet.py` over a copy of torchvision's ResNet, `models/classifier.py`,
`kldistill.py` and `logitdistill.py`. The ResNet's pooled features are mapped to the M-dimensional
embedding by `linear`, then the bias-free head whose rows are the unembeddings g.
State-dict keys and initial weights are theirs (`build_follow_up_resnet`)."""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .follow_up import FollowUpStack

IMAGENET_V2_FILE = "resnet50-11ad3fa6.pth"  # torchvision's ResNet50_Weights.IMAGENET1K_V2
IMAGENET_V2_URL = f"https://download.pytorch.org/models/{IMAGENET_V2_FILE}"
DEPTHS = {18: ("basic", (2, 2, 2, 2)), 50: ("bottleneck", (3, 4, 6, 3))}
FULL_WIDTH = 64  # torchvision's stem channels and layer1's planes (config cifar100.width)


class ImageNetWeightsError(RuntimeError):
    """The ImageNet weights file is missing or is not torchvision's ResNet-50."""


def _conv(cin: int, cout: int, kernel: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=kernel, stride=stride, padding=kernel // 2,
                     bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        self.conv1 = _conv(cin, planes, 3, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv(planes, planes, 3)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        self.conv1 = _conv(cin, planes, 1)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv(planes, planes, 3, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv(planes, planes * 4, 1)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn3(self.conv3(self.relu(self.bn2(self.conv2(out)))))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class TorchvisionResNet(nn.Module):
    """torchvision's ResNet (v1.5: the stride in the bottleneck's 3 x 3): its names, order and
    initialisation, `fc` included; `width` channels in the stem, 1, 2, 4, 8 times as many planes
    in the stages (64: torchvision's; a stand-in's smaller width keeps depth and key names)."""

    def __init__(self, depth: int, width: int = FULL_WIDTH) -> None:
        super().__init__()
        kind, layers = DEPTHS[depth]
        block = BasicBlock if kind == "basic" else Bottleneck
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        planes = [width * times for times in (1, 2, 4, 8)]
        for i, (plane, blocks) in enumerate(zip(planes, layers, strict=True)):
            layer = self._make_layer(block, plane, blocks, 1 if i == 0 else 2)
            setattr(self, f"layer{i + 1}", layer)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width * block.expansion, 1000)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.constant_(module.weight, 1)
                nn.init.constant_(module.bias, 0)

    def _make_layer(self, block: type, planes: int, blocks: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(_conv(self.inplanes, planes * block.expansion, 1, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, 1, None) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The pooled features their wrapper maps to the embedding (fc is never used)."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(self.avgpool(x), 1)


@dataclass(frozen=True)
class ResNetArch:
    """One CIFAR-100 model of the follow-up: the torchvision depth (18: students, 50: the
    teacher), the embedding's dimension M, the labels, whether the head is Xavier-initialised
    (every model but the plain classifier), and the channel width (64: theirs)."""

    depth: int = 18
    rep_dim: int = 50
    num_classes: int = 100
    xavier_head: bool = False
    width: int = FULL_WIDTH


class FollowUpEncoder(nn.Module):
    """Their `backbones.resnet.ResNet`: torchvision's layers, an unused 3 x 3 stem, `linear`."""

    def __init__(self, depth: int, rep_dim: int, imagenet: dict | None = None,
                 width: int = FULL_WIDTH) -> None:
        super().__init__()
        self.tv_layers = TorchvisionResNet(depth, width)
        if imagenet is not None:
            self.tv_layers.load_state_dict(imagenet)
        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.linear = nn.Linear(self.tv_layers.fc.in_features, rep_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.tv_layers.features(x))


class FollowUpResNet(nn.Module):
    """A classifier or student: `encoder` (f), `linear` (the head, g = its weight rows)."""

    def __init__(self, arch: ResNetArch, imagenet: dict | None = None) -> None:
        super().__init__()
        self.arch = arch
        self.encoder = FollowUpEncoder(arch.depth, arch.rep_dim, imagenet, arch.width)
        self.linear = nn.Linear(arch.rep_dim, arch.num_classes, bias=False)
        if arch.xavier_head:
            nn.init.xavier_uniform_(self.linear.weight)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The logits f(x)^T g(y) (their LOGITS)."""
        return self.linear(self.embed(x))


# Their teacher is `pretrain_resnet50v2`, which their code downloads. A teacher without the file
# trains from scratch, which its files then say (`imagenet` in the metadata).
def read_imagenet_weights(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """torchvision's ResNet-50 ImageNet state dict from `path` (ImageNetWeightsError if not)."""
    path = Path(path)
    if not path.is_file():
        raise ImageNetWeightsError(
            f"no ImageNet weights at {path}: download {IMAGENET_V2_URL} (torchvision's "
            f"ResNet50_Weights.IMAGENET1K_V2, the follow-up's teacher) there, or set "
            "logit_distance.cifar100.imagenet_weights to null to train the teacher from scratch")
    state = torch.load(path, map_location="cpu", weights_only=True)
    expected = TorchvisionResNet(50).state_dict()
    if not isinstance(state, dict) or set(state) != set(expected) or any(
            tuple(state[k].shape) != tuple(v.shape) for k, v in expected.items()):
        raise ImageNetWeightsError(f"{path} is not torchvision's ResNet-50 state dict "
                                   f"(expected {IMAGENET_V2_FILE} from {IMAGENET_V2_URL})")
    return state


def build_follow_up_resnet(arch: ResNetArch, seed: int, imagenet: dict | None = None
                           ) -> FollowUpResNet:
    """The model their code builds after set_random_seed(seed), in their keys: `encoder.tv_layers.*`
    (torchvision's: an ImageNet file loads as it is), `encoder.conv1.weight` (a stem never called),
    `encoder.linear.*`, `linear.weight`. Built in their order (torchvision's layers, the ImageNet
    weights, the wrapper's stem and map, the head, Xavier on it): their initial weights."""
    if imagenet is not None and (arch.depth != 50 or arch.width != FULL_WIDTH):
        raise ValueError("ImageNet weights are for the ResNet-50 teacher at torchvision's "
                         f"width {FULL_WIDTH}")
    torch.manual_seed(seed)
    return FollowUpResNet(arch, imagenet)


class StackedFollowUpResNet(FollowUpStack):
    """S follow-up ResNets of one architecture as a stack, run one after another on the shared
    batch, each with its own BatchNorm statistics: each follows the trajectory it would alone."""

    def __init__(self, models: Sequence[FollowUpResNet]) -> None:
        super().__init__(m.arch for m in models)
        self.members = nn.ModuleList(models)

    @property
    def head(self) -> torch.Tensor:
        return torch.stack([m.linear.weight for m in self.members])

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, 3, H, W) shared by every model. Returns (S, B, M)."""
        return torch.stack([m.embed(x) for m in self.members])

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """Each model's own forward (its head as nn.Linear: the arithmetic of a model alone)."""
        return torch.stack([m(x) for m in self.members])

    def state_dict_of(self, index: int) -> dict[str, torch.Tensor]:
        """Model `index` in their keys (encoder.tv_layers.*, encoder.linear.*, linear.weight)."""
        return {k: v.detach().clone() for k, v in self.members[index].state_dict().items()}


# how the ResNets of a stack run: the pipeline's `loop`, or `vmap`, which no GPU has timed yet
# (benchmarks/follow_up_stack.py; docs/gpu.md, "Options to be timed")
STACK_MODES = ("loop", "vmap")


class VmappedFollowUpResNet(FollowUpStack):
    """The same S ResNets as StackedFollowUpResNet, run as one batched network: weights and
    BatchNorm buffers stacked, the encoder mapped over them by torch.func.vmap. Each model keeps
    its own weights and statistics, but grouped arithmetic rounds differently from a model alone
    (tests/test_logit_distance_cifar100.py: within 1e-5 after two steps)."""

    def __init__(self, models: Sequence[FollowUpResNet]) -> None:
        super().__init__(m.arch for m in models)
        params, buffers = torch.func.stack_module_state(list(models))
        self.keys = list(models[0].state_dict())  # their order: parameters and buffers
        encoder = [key for key in self.keys if key.startswith("encoder.")]  # (its name, ours)
        self.encoder_params = [(key[8:], _flat(key)) for key in encoder if key in params]
        self.encoder_buffers = [(key[8:], _flat(key)) for key in encoder if key in buffers]
        for key, value in params.items():
            self.register_parameter(_flat(key), nn.Parameter(value.detach().clone()))
        for key, value in buffers.items():
            self.register_buffer(_flat(key), value.clone())
        self.__dict__["_encoder"] = copy.deepcopy(models[0].encoder).to("meta")  # shape only

    @property
    def head(self) -> torch.Tensor:
        return getattr(self, _flat("linear.weight"))

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, 3, H, W) shared by every model. Returns (S, B, M)."""
        encoder = self.__dict__["_encoder"]
        encoder.train(self.training)  # BatchNorm: batch statistics in training, running in eval
        params = {name: getattr(self, attr) for name, attr in self.encoder_params}
        buffers = {name: getattr(self, attr) for name, attr in self.encoder_buffers}

        def one(p: dict, b: dict, inputs: torch.Tensor) -> torch.Tensor:
            return torch.func.functional_call(encoder, (p, b), (inputs,))

        return torch.func.vmap(one, in_dims=(0, 0, None))(params, buffers, x)

    def state_dict_of(self, index: int) -> dict[str, torch.Tensor]:
        """Model `index` in their keys and order."""
        return {key: getattr(self, _flat(key))[index].detach().clone() for key in self.keys}


def _flat(key: str) -> str:
    """A state-dict key as one attribute name (module names hold no double underscore)."""
    return key.replace(".", "__")


def stack_resnets(models: Sequence[FollowUpResNet], mode: str = "loop"
                  ) -> StackedFollowUpResNet | VmappedFollowUpResNet:
    """The ResNets as one stack: one after another (`loop`) or one batched network (`vmap`)."""
    if mode not in STACK_MODES:
        raise ValueError(f"unknown stack mode {mode!r}: one of {STACK_MODES}")
    return StackedFollowUpResNet(models) if mode == "loop" else VmappedFollowUpResNet(models)
