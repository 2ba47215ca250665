"""ResNet-18, CIFAR variant (the original's `src/file_handling/save_load_model.py`): 3x3 stem, no
max-pool, four stages of two BasicBlocks (64/128/256/512 channels at base width 64), 4x4 average
pool, Linear(8*base -> M) with bias. `base_width` shrinks the network for toy runs on a CPU; 64 is
the paper."""

from __future__ import annotations

import torch
from torch import nn

from .mlp import ModelClass, SmallMLP


def effective_bn_momentum(num_classes: int) -> float:
    """The original ran f K+1 times per step, updating BN running stats K+1 times with the same
    batch statistics: effective momentum 1 - 0.9^(K+1) (0.6862 for K = 10; its
    `src/training/train.py`)."""
    return 1.0 - 0.9 ** (num_classes + 1)


class BasicBlock(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, stride: int, momentum: float) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch, momentum=momentum)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch, momentum=momentum)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_ch, momentum=momentum),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    def __init__(self, final_dim: int, base_width: int = 64, bn_momentum: float = 0.1) -> None:
        super().__init__()
        widths = [base_width, 2 * base_width, 4 * base_width, 8 * base_width]
        self.conv1 = nn.Conv2d(3, base_width, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(base_width, momentum=bn_momentum)
        in_ch = base_width
        for i, (width, stride) in enumerate(zip(widths, (1, 2, 2, 2), strict=True)):
            blocks = [BasicBlock(in_ch, width, stride, bn_momentum),
                      BasicBlock(width, width, 1, bn_momentum)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
            in_ch = width
        self.linear = nn.Linear(widths[-1], final_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = nn.functional.adaptive_avg_pool2d(out, 1).flatten(1)  # = 4x4 avg pool on 32x32
        return self.linear(out)


def build_cifar_model(seed: int, rep_dim: int, num_classes: int = 10, g_width: int = 128,
                      base_width: int = 64, bn_momentum: float = 0.1) -> ModelClass:
    """torch.manual_seed(seed), then f = ResNet18, then g = SmallMLP(K-1 -> g_width -> M)."""
    torch.manual_seed(seed)
    return ModelClass(ResNet18(rep_dim, base_width=base_width, bn_momentum=bn_momentum),
                      SmallMLP(num_classes - 1, g_width, rep_dim))
