"""Model-steps per second of the seed-stacked synthetic trainer vs a plain one-model loop.

Both run the same loop (repdist.training.loop.train: Adam, batch 128, f once per step); the
plain loop trains one nn.Module model at a time, as the original trained its seeds.

`synthetic_job(device, cuda_graph, steps)` times one job of the grid as the pipeline runs it
(4 variants x 20 seeds stacked, the paper protocol), eagerly or replayed from CUDA graphs, and
returns its final weights for the numerical check (`make gpu-check` calls it; `--job` prints it).

Usage: python benchmarks/synthetic_training.py [--widths 16 256] [--seeds 20] [--steps 300]
       python benchmarks/synthetic_training.py --job [--device cuda] [--cuda-graph] [--steps N]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from repdist.data.radial import label_codes, make_radial
from repdist.experiments.synthetic.training import (SyntheticModelConfig, synthetic_data,
                                                    synthetic_stack)
from repdist.models.mlp import build_synthetic_model
from repdist.models.stacked import StackedModelClass
from repdist.training.loop import GRAPH_WARMUP, RunOptions, TrainData, train
from repdist.training.protocol import batches_per_epoch

from repdist_dev.checkout import paper_config, train_config


def model_steps_per_s(models, data, steps: int) -> float:
    train_d, test_d, codes = data
    cfg = train_config(steps=steps, eval_every=10**9)
    start = time.perf_counter()
    train(models, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes), cfg)
    n = models.num_models if isinstance(models, StackedModelClass) else 1
    # the paper protocol runs whole epochs: count the steps it ran, not the nominal ones
    return n * cfg.steps_for(len(train_d.x)) / (time.perf_counter() - start)


def synthetic_job(device: str | torch.device, cuda_graph: bool, steps: int, width: int = 64,
                  num_classes: int = 6, seeds: int = 20, dtype: torch.dtype = torch.float32
                  ) -> dict:
    """One stacked synthetic training job as the pipeline runs it: config.yaml's synthetic
    section and protocol (20,000 training points, batches of 128, Adam 1e-4, a loss entry every
    500 steps and a test pass every 2,000), every variant's `seeds` seeds (4 x 20 = 80 models)
    at `width` and K = `num_classes`, `steps` nominal steps (the paper protocol runs whole
    epochs of 157 batches: 15,072 for the paper's 15,000), on `device`, with or without
    RunOptions.cuda_graph, in `dtype` (float64 for an exactness check).

    Returns a dict: steps_per_s and model_steps_per_s (the steady state: from step
    `timed_from`, after every batch size is captured, to the end, timed between two device
    syncs), steps (run), timed_from, wall_s (the whole run: warm-up, captures, test passes,
    finals), step_graphs (CUDA graphs replayed: 2 when captured, 0 eager or after a failed
    capture), models, device, cuda_graph, weights (the stack's state dict, float64 on the CPU:
    compare a graphed job's with an eager one's), train_loss (the logged entries, per model)."""
    device = torch.device(device)
    synthetic = paper_config()["synthetic"]
    cfgs = [SyntheticModelConfig(num_classes, width, float(v["fix_g"]), float(v["fix_f"]),
                                 list(range(seeds)), synthetic["rep_dim"], synthetic["n_train"],
                                 synthetic["n_test"], synthetic["train_data_seed"],
                                 synthetic["test_data_seed"])
            for v in synthetic["variants"]]
    data = synthetic_data(cfgs[0])
    stack = synthetic_stack(cfgs).to(dtype)
    cfg = train_config(steps=steps, checkpoint_every=0)
    total = cfg.steps_for(len(data.train_x))
    per_epoch = batches_per_epoch(len(data.train_x), cfg.batch_size)
    timed_from = per_epoch * (GRAPH_WARMUP + 1)  # both batch sizes captured by then
    if timed_from >= total:
        timed_from = total // 2
    marks: dict[int, float] = {}

    def mark(done: int) -> None:
        if done in (timed_from, total):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            marks[done] = time.perf_counter()

    start = time.perf_counter()
    log, finals = train(stack, data, cfg, RunOptions(device=device, cuda_graph=cuda_graph,
                                                     on_step=mark))
    wall = time.perf_counter() - start
    rate = (total - timed_from) / (marks[total] - marks[timed_from])
    return {"steps_per_s": rate, "model_steps_per_s": rate * stack.num_models, "steps": total,
            "timed_from": timed_from, "wall_s": wall, "step_graphs": finals["step_graphs"],
            "models": stack.num_models, "device": str(device), "cuda_graph": cuda_graph,
            "weights": {k: v.detach().double().cpu() for k, v in stack.state_dict().items()},
            "train_loss": log.train_loss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--classes", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--plain-seeds", type=int, default=2, help="seeds timed in the plain loop")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json")
    parser.add_argument("--job", action="store_true",
                        help="time one job of the grid (synthetic_job) at the first width")
    parser.add_argument("--device", default="cpu", help="with --job")
    parser.add_argument("--cuda-graph", action="store_true", help="with --job")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.job:
        job = synthetic_job(args.device, args.cuda_graph, args.steps, args.widths[0],
                            args.classes, args.seeds)
        print(json.dumps({k: v for k, v in job.items() if k not in ("weights", "train_loss")}))
        return
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
