"""Image patches for Roeder et al. (2021)'s contrastive experiment (§5.2, App. A.3, Fig. 3a): from
each image (N, C, H, W) in [0, 1], a patch of its top half (x, f's input) and of its bottom half
(y, g's input), flattened and scaled to [-1, 1]. In training a patch lies at random in its half,
augmented; for evaluation at its centre, unaugmented, so every model sees the same inputs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

LUMA = (0.299, 0.587, 0.114)  # grey level of an RGB pixel (ITU-R 601), as torchvision's
RGB_TO_YIQ = ((0.299, 0.587, 0.114), (0.596, -0.274, -0.322), (0.211, -0.523, 0.312))
YIQ_TO_RGB = tuple(map(tuple, np.linalg.inv(np.array(RGB_TO_YIQ)).tolist()))


@dataclass(frozen=True)
class PatchSpec:
    """Patch size (height, width) within a half and the augmentation strengths (0: none)."""

    height: int
    width: int
    brightness: float = 0.0
    contrast: float = 0.0
    saturation: float = 0.0
    hue: float = 0.0

    def check(self, image_shape: tuple[int, ...]) -> None:
        """Raise ValueError when the patch does not fit in half of a (C, H, W) image."""
        _, height, width = image_shape
        if not (1 <= self.height <= height // 2 and 1 <= self.width <= width):
            raise ValueError(f"a {self.height} x {self.width} patch does not fit in half of a "
                             f"{height} x {width} image (at most {height // 2} x {width})")

    def features(self, channels: int) -> int:
        """The length of a flattened patch: f's and g's input size."""
        return channels * self.height * self.width

    def fixed_pair(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return fixed_pair(images, self)

    def random_pair(self, images: torch.Tensor,
                    generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y): a random patch of each image's top and bottom half, each augmented."""
        (top, _), (bottom, _) = random_patches(images, self, generator)
        return _flat(top), _flat(bottom)


def cut(images: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, height: int,
        width: int) -> torch.Tensor:
    """(N, C, height, width) patches whose top left corners are (rows[i], cols[i])."""
    n = images.shape[0]
    r = rows[:, None] + torch.arange(height, device=images.device)
    c = cols[:, None] + torch.arange(width, device=images.device)
    index = torch.arange(n, device=images.device)[:, None, None]
    return images[index, :, r[:, :, None], c[:, None, :]].permute(0, 3, 1, 2)


def fixed_pair(images: torch.Tensor, spec: PatchSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, y): the centred, unaugmented patch of each image's top and bottom half."""
    spec.check(tuple(images.shape[1:]))
    n, half, width = images.shape[0], images.shape[2] // 2, images.shape[3]
    row, col = (half - spec.height) // 2, (width - spec.width) // 2
    rows = torch.full((n,), row, device=images.device)
    cols = torch.full((n,), col, device=images.device)
    return (_flat(cut(images, rows, cols, spec.height, spec.width)),
            _flat(cut(images, rows + half, cols, spec.height, spec.width)))


def random_patches(images: torch.Tensor, spec: PatchSpec, generator: torch.Generator
                   ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per half (top, bottom): augmented (N, C, h, w) patches in [0, 1] and corners (N, 2)."""
    spec.check(tuple(images.shape[1:]))
    n, half, width = images.shape[0], images.shape[2] // 2, images.shape[3]
    out = []
    for offset in (0, half):
        rows = offset + _randint(half - spec.height + 1, n, generator, images.device)
        cols = _randint(width - spec.width + 1, n, generator, images.device)
        patch = augment(cut(images, rows, cols, spec.height, spec.width), spec, generator)
        out.append((patch, torch.stack([rows, cols], dim=1)))
    return out


# torchvision's ColorJitter, written out to run on any device without torchvision. The hue shift
# rotates the chroma plane in YIQ space: a linear stand-in for HSV's hue shift.
def augment(patches: torch.Tensor, spec: PatchSpec, generator: torch.Generator) -> torch.Tensor:
    """Random brightness, contrast, then (RGB only) saturation and hue, one draw per patch: a
    factor in U[max(0, 1 - s), 1 + s], a hue shift in U[-s, s] turns, each clipped to [0, 1]."""
    x = patches
    if spec.brightness:
        x = (x * _factor(spec.brightness, x, generator)).clamp(0, 1)
    if spec.contrast:
        mean = _grey(x).mean(dim=(1, 2, 3), keepdim=True)
        x = (mean + _factor(spec.contrast, x, generator) * (x - mean)).clamp(0, 1)
    if x.shape[1] == 3 and spec.saturation:
        grey = _grey(x)
        x = (grey + _factor(spec.saturation, x, generator) * (x - grey)).clamp(0, 1)
    if x.shape[1] == 3 and spec.hue:
        x = _rotate_hue(x, _uniform(-spec.hue, spec.hue, x, generator)).clamp(0, 1)
    return x


def _flat(patches: torch.Tensor) -> torch.Tensor:
    return (patches.reshape(patches.shape[0], -1) - 0.5) / 0.5


def _randint(high: int, n: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    return torch.randint(high, (n,), generator=generator, device=device)


def _uniform(low: float, high: float, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One value per patch, U[low, high], shaped (N, 1, 1, 1)."""
    u = torch.rand((x.shape[0], 1, 1, 1), generator=generator, device=x.device, dtype=x.dtype)
    return low + (high - low) * u


def _factor(strength: float, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return _uniform(max(0.0, 1.0 - strength), 1.0 + strength, x, generator)


def _grey(x: torch.Tensor) -> torch.Tensor:
    """(N, 1, h, w) grey levels: luma for RGB, else the mean over the channels."""
    if x.shape[1] != 3:
        return x.mean(dim=1, keepdim=True)
    weights = _constant(LUMA, x.device, x.dtype).view(1, 3, 1, 1)
    return (x * weights).sum(dim=1, keepdim=True)


@lru_cache(maxsize=32)
def _constant(values: tuple, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """A constant copied to the device once (a copy from the host each step would wait)."""
    return torch.tensor(values, device=device, dtype=dtype)


def _rotate_hue(x: torch.Tensor, turns: torch.Tensor) -> torch.Tensor:
    """Each RGB patch's chroma (I, Q in YIQ) rotated by its `turns` of a full turn."""
    to_yiq = _constant(RGB_TO_YIQ, x.device, x.dtype)
    to_rgb = _constant(YIQ_TO_RGB, x.device, x.dtype)
    angle = 2 * math.pi * turns.view(-1)
    cos, sin = torch.cos(angle), torch.sin(angle)
    rotation = torch.zeros((x.shape[0], 3, 3), device=x.device, dtype=x.dtype)
    rotation[:, 0, 0] = 1
    rotation[:, 1, 1], rotation[:, 1, 2] = cos, -sin
    rotation[:, 2, 1], rotation[:, 2, 2] = sin, cos
    transform = to_rgb @ rotation @ to_yiq  # (N, 3, 3), RGB -> RGB
    return torch.einsum("nij,njhw->nihw", transform, x)
