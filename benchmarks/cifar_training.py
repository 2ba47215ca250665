"""CIFAR training steps per second: our trainer vs the original code's way, on one device.

Ours: f evaluated once per step, data resident on the device, optional bf16/channels_last on
CUDA (repdist.training.loop.train). The original's way: the loss evaluates f K+1 = 11 times per
step (the target logit, then one pass per class for the normaliser) and batches come from a
torch DataLoader on the CPU (num_workers=2), copied to the device each step.

Usage: python benchmarks/cifar_training.py [--steps 200] [--base-width 64] [--device auto]
Real CIFAR-10 is used if --data points at a cifar-10-batches-py folder, else a stand-in.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from repdist.data.cifar10 import load_cifar10, normalise, write_standin
from repdist.data.radial import label_codes
from repdist.experiments.cifar import _AutocastF
from repdist.models.resnet import build_cifar_model
from repdist.training.loop import TrainConfig, make_adam, train

K = 10


def ours(data, steps, base_width, device, bf16, channels_last) -> float:
    model = build_cifar_model(0, 2, base_width=base_width)
    if bf16:
        model.f_net = _AutocastF(model.f_net)
    codes = label_codes(np.arange(K), K)
    cfg = TrainConfig(steps=steps, batch_size=32, eval_every=10**9)
    x, tx = normalise(data.train_images), normalise(data.test_images[:64])
    start = time.perf_counter()
    _, finals = train(model, x, data.train_labels, tx, data.test_labels[:64], codes, cfg,
                      device=device, eval_batch_size=64, channels_last=channels_last)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps / finals["wall_time_s"], time.perf_counter() - start


def original_way(data, steps, base_width, device) -> float:
    model = build_cifar_model(0, 2, base_width=base_width).to(device)
    codes = torch.from_numpy(label_codes(np.arange(K), K)).to(device)
    x = torch.from_numpy(normalise(data.train_images))
    y = torch.from_numpy(data.train_labels)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32,
                                         shuffle=True, num_workers=2, drop_last=True)
    opt = make_adam(model, 1e-4)
    done, start = 0, None
    while done < steps:
        for xb, yb in loader:
            if done == 1:  # time from the second step: skip worker start-up
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.perf_counter()
            xb, yb = xb.to(device), yb.to(device)
            target = (model.f_net(xb) * model.g_net(codes[yb])).sum(1).double()
            per_class = torch.stack(
                [(model.f_net(xb) * model.g_net(codes[k:k + 1])).sum(1).double()
                 for k in range(K)], 1)
            loss = -(target - torch.logsumexp(per_class, 1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
            if done == steps:
                break
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (steps - 1) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--original-steps", type=int, default=None)
    parser.add_argument("--base-width", type=int, default=64)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--data", help="a cifar-10-batches-py folder (default: a stand-in)")
    parser.add_argument("--json")
    args = parser.parse_args()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if args.device == "auto" else args.device))
    if args.data:
        data = load_cifar10(args.data)
    else:
        tmp = Path(tempfile.mkdtemp()) / "cifar-10-batches-py"
        data = load_cifar10(write_standin(tmp, n_train=5000, n_test=100))
    cl = device.type == "cuda"
    ours_sps, ours_wall = ours(data, args.steps, args.base_width, device, args.bf16 and cl, cl)
    orig_sps = original_way(data, args.original_steps or args.steps, args.base_width, device)
    row = {"device": str(device), "gpu": torch.cuda.get_device_name() if cl else "",
           "base_width": args.base_width, "steps": args.steps, "bf16": args.bf16 and cl,
           "ours_steps_per_s": ours_sps, "original_way_steps_per_s": orig_sps,
           "speedup": ours_sps / orig_sps,
           "one_20000_step_model_min": 20000 / ours_sps / 60}
    print(json.dumps(row, indent=2), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
