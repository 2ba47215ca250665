"""Model-steps per second of the seed-stacked synthetic trainer vs a plain one-model loop.

Both run the same loop (repdist.training.loop.train: Adam, batch 128, f once per step); the
plain loop trains one nn.Module model at a time, as the original trained its seeds.

Usage: python benchmarks/synthetic_training.py [--widths 16 256] [--seeds 20] [--steps 300]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from repdist.data.radial import label_codes, make_radial
from repdist.models.mlp import build_synthetic_model
from repdist.models.stacked import StackedModelClass
from repdist.training.loop import TrainData, train

from paper_config import train_config


def model_steps_per_s(models, data, steps: int) -> float:
    train_d, test_d, codes = data
    cfg = train_config(steps=steps, eval_every=10**9)
    start = time.perf_counter()
    train(models, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes), cfg)
    n = models.num_models if isinstance(models, StackedModelClass) else 1
    # the paper protocol runs whole epochs: count the steps it ran, not the nominal ones
    return n * cfg.steps_for(len(train_d.x)) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--classes", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--plain-seeds", type=int, default=2, help="seeds timed in the plain loop")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    k = args.classes
    data = make_radial(20_000, k, 0), make_radial(2_000, k, 1), label_codes(np.arange(k), k)
    rows = []
    warm = StackedModelClass([build_synthetic_model(s, k, 16, 2, 0, 0) for s in range(2)])
    model_steps_per_s(warm, data, 20)  # one-time costs (thread pools, kernels) out of the timing
    for w in args.widths:
        stack = StackedModelClass([build_synthetic_model(s, k, w, 2, 0, 0)
                                   for s in range(args.seeds)])
        stacked = model_steps_per_s(stack, data, args.steps)
        plain = np.mean([model_steps_per_s(build_synthetic_model(s, k, w, 2, 0, 0), data,
                                           args.steps) for s in range(args.plain_seeds)])
        rows.append({"width": w, "stacked_model_steps_per_s": stacked,
                     "plain_model_steps_per_s": plain, "speedup": stacked / plain})
        print(f"K={k} width {w:4d}: stacked ({args.seeds} seeds) {stacked:8.0f} model-steps/s, "
              f"plain loop {plain:7.0f} model-steps/s, speed-up {stacked / plain:5.2f}x "
              f"({args.steps} steps, {args.threads} thread(s))", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
