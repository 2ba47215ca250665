"""Flushing subnormal floats: how much faster, and whether the trained models move.

Trains the same stack (default K = 4, width 128, variant (0, 0), 5 seeds, 15,072 steps, the
paper protocol: a confident configuration) twice, each in a process of its own: once with the
CPU's flush-to-zero / denormals-are-zero bits set (what every pipeline job does), once without.
Prints the wall time and ms per step of the last 2,000 steps of each, and per seed the d_LLV
between the model trained with and without flushing, next to the d_LLV between different seeds.

Usage: python benchmarks/subnormals.py [--classes 4] [--width 128] [--seeds 5]
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np



def train_one(mode: str, k: int, width: int, seeds: int, out: Path) -> None:
    import torch

    from repdist.pipeline.subnormals import flush_subnormals, subnormals_flushed
    from repdist.data.radial import label_codes, make_radial
    from repdist.models.mlp import build_synthetic_model
    from repdist.models.stacked import StackedModelClass
    from repdist.training.loop import RunOptions, TrainData, train
    from repdist_dev.checkout import train_config

    if mode == "flush":
        flush_subnormals()
    assert subnormals_flushed() == (mode == "flush")
    torch.set_num_threads(1)
    train_d, test_d = make_radial(20_000, k, 0), make_radial(2_000, k, 1)
    codes = label_codes(np.arange(k), k)
    stack = StackedModelClass([build_synthetic_model(s, k, width, 2, 0, 0) for s in range(seeds)])
    cfg = train_config()
    total = cfg.steps_for(len(train_d.x))
    stamps = {}

    def on_step(done: int) -> None:
        if done in (total - 2000, total):
            stamps[done] = time.perf_counter()

    start = time.perf_counter()
    train(stack, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
        cfg, RunOptions(on_step=on_step))
    with torch.no_grad():
        f = stack.embed(torch.from_numpy(test_d.x)).double().numpy()
        g = stack.unembed(torch.from_numpy(codes)).double().numpy()
    np.savez(out, f=f, g=g, wall=time.perf_counter() - start,
             late_ms=(stamps[total] - stamps[total - 2000]) / 2000 * 1e3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--mode", choices=["flush", "noflush"], help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.mode:
        train_one(args.mode, args.classes, args.width, args.seeds, args.out)
        return
    from repdist.measures import compare

    tmp = Path(tempfile.mkdtemp())
    runs = {}
    for mode in ("flush", "noflush"):
        out = tmp / f"{mode}.npz"
        subprocess.run([sys.executable, __file__, "--mode", mode, "--out", str(out),
                        "--classes", str(args.classes), "--width", str(args.width),
                        "--seeds", str(args.seeds)], check=True)
        runs[mode] = np.load(out)
    a, b = runs["flush"], runs["noflush"]
    print(f"K = {args.classes}, width {args.width}, {args.seeds} seeds, 15,072 steps, 1 thread")
    for mode, r in runs.items():
        print(f"  {mode:8s} wall {float(r['wall']):7.1f} s, last 2,000 steps "
              f"{float(r['late_ms']):6.2f} ms/step")
    same = [compare(a["f"][s], a["g"][s], b["f"][s], b["g"][s])["d_llv"]
            for s in range(args.seeds)]
    inter = [compare(a["f"][i], a["g"][i], a["f"][j], a["g"][j])["d_llv"]
             for i, j in itertools.combinations(range(args.seeds), 2)]
    for s, d in enumerate(same):
        print(f"  seed {s}: d_LLV(flushed, not flushed) = {d:.2e}")
    print(f"  between different seeds (flushed): mean d_LLV {np.mean(inter):.3f}, "
          f"min {np.min(inter):.3f}")
    if args.json:
        args.json.write_text(json.dumps({"flush_s": float(a["wall"]), "noflush_s":
                                         float(b["wall"]), "same_seed_d_llv": same,
                                         "inter_seed_d_llv": inter}, indent=2))


if __name__ == "__main__":
    main()
