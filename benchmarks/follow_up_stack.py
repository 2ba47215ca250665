"""The follow-up's CIFAR-100 students: a training step of S ResNet-18s stacked by each mode.

Times one optimisation step (forward, backward, Adam) of S ResNet-18 students (M = 50, 100
labels, batches of 32 CIFAR-sized images, the L2 loss on a teacher's logits) for each
stack mode: `loop` (the models one after another, the pipeline's) and `vmap` (one batched
network, no config key until a GPU times it: docs/gpu.md), after warm-up steps, and the
design's students' training extrapolated from it (config.yaml: 100 students x 50 epochs x
1,563 steps). Prints a table; `--json` writes it.

Usage: python benchmarks/follow_up_stack.py [--device cuda] [--students 100] [--steps 10]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from repdist.models.follow_up_resnet import (
    STACK_MODES,
    ResNetArch,
    build_follow_up_resnet,
    stack_resnets,
)
from repdist.training.distillation import follow_up_loss
from repdist.training.loop import make_adam

DESIGN_STEPS = 50 * 1563  # 50 epochs of 50,000 images in batches of 32
DESIGN_STUDENTS = 100  # 5 teachers x {KL, L1, L2, labels} x 5 seeds


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_seconds(mode: str, students: int, steps: int, warmup: int,
                 device: torch.device) -> float:
    """Mean seconds of one step of `students` ResNet-18s stacked by `mode`."""
    stack = stack_resnets([build_follow_up_resnet(ResNetArch(18, 50, 100, True), s)
                           for s in range(students)], mode).to(device).train()
    opt = make_adam(stack, 1e-3)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(32, 3, 32, 32, generator=g).to(device)
    target = torch.randn(students, 32, 100, generator=g).to(device)
    for i in range(warmup + steps):
        if i == warmup:
            sync(device)
            started = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        follow_up_loss("l2", stack.logits(x), target).sum().backward()
        opt.step()
    sync(device)
    return (time.perf_counter() - started) / steps


def main() -> None:
    args = parse()
    device = torch.device(args.device)
    rows = []
    for mode in STACK_MODES:
        seconds = step_seconds(mode, args.students, args.steps, args.warmup, device)
        model_steps = args.students / seconds
        rows.append({"mode": mode, "students": args.students, "step_ms": 1e3 * seconds,
                     "model_steps_per_s": model_steps,
                     "design_hours": DESIGN_STUDENTS * DESIGN_STEPS / model_steps / 3600})
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"{name}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| stack | students | ms a step | model-steps/s | the design's students, h |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['students']} | {r['step_ms']:.1f} | "
              f"{r['model_steps_per_s']:.1f} | {r['design_hours']:.1f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": name, "torch": torch.__version__,
                                         "rows": rows}, indent=1))


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", type=Path)
    return parser.parse_args()


if __name__ == "__main__":
    main()
