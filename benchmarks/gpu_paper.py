"""The whole paper on one GPU: how fast, measured (`make bench-gpu`).

(a) CIFAR training steps/s at paper scale on the full-size stand-in (50,000 / 10,000 images):
    one ResNet-18 alone, the 10 seeds stacked (one network of grouped convolutions), variants of
    the stacked step (no channels_last, torch.compile), and the original's way (f
    11 times a step, batches from a CPU DataLoader with 2 workers, batch 32); minutes for
    30 models x 20,319 steps extrapolated from each rate.
(b) The synthetic grid (1,360 models x 15,072 steps): every training job of the grid as the
    GPU runs it (all variants of a (K, width) in one stack), each timed for --grid-steps steps
    and extrapolated to 15,072 (or run in full with --grid-steps 15072).
(c) The whole DAG (`snakemake` with the full-size stand-in, device cuda) if --dag is given and
    Snakemake is installed: its wall time.

Prints a table and writes the numbers to --json. Which numbers are extrapolated is recorded.
`--smoke` runs everything tiny on the CPU (what the test suite checks) under the host-copy guard
(repdist.io.host: a tensor reaching numpy other than through to_host fails there as it would on
a GPU, where the first run of this benchmark stopped at step 0). `make gpu-check` has
superseded it for deciding defaults (repdist_gpucheck); it stays for paper-scale runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


from repdist.io.host import host_copies_guarded
from repdist.pipeline.subnormals import flush_subnormals
from repdist.data.cifar10 import load_cifar10, normalise, write_standin
from repdist.data.radial import label_codes, make_radial
from repdist.models.mlp import build_synthetic_model
from repdist.models.resnet import build_cifar_model, effective_bn_momentum
from repdist.models.stacked import StackedModelClass
from repdist.training.loop import RunOptions, TrainData, make_adam, train

from repdist_dev.checkout import ROOT, train_config
from repdist.training.protocol import batches_per_epoch

K_CIFAR = 10
CIFAR_STEPS = 20_319  # 13 epochs of 1,563 batches (paper protocol)
SYNTHETIC_STEPS = 15_072  # 96 epochs of 157 batches
GRID = {"class_counts": [4, 6, 10, 18], "variants": [(0, 0), (0, 20), (20, 0), (20, 20)],
        "widths_all": [16, 32, 64, 128], "widths_unnormalised": [256], "seeds": 20}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def cifar_rate(data, device, seeds, steps, base_width, channels_last=True,
               compile_f=False) -> float:
    """Training steps/s of `seeds` ResNet-18s stacked (1 = one model alone) on `device`.
    channels_last only on CUDA, as the pipeline (on some CPUs its convolution backward crawls)."""
    channels_last = channels_last and device.type == "cuda"
    stack = StackedModelClass([build_cifar_model(s, 2, K_CIFAR, 128, base_width,
                                                 effective_bn_momentum(K_CIFAR))
                               for s in range(seeds)])
    if compile_f:
        stack.f_net.body = torch.compile(stack.f_net.body)
    codes = label_codes(np.arange(K_CIFAR), K_CIFAR)
    x, tx = normalise(data.train_images), normalise(data.test_images[:64])
    cfg = train_config(steps=steps, batch_size=32, eval_every=10**9, log_every=10**9,
                      protocol="clean")
    warm = train_config(steps=min(20, steps), batch_size=32, eval_every=10**9, protocol="clean")
    train(stack, TrainData(x, data.train_labels, tx, data.test_labels[:64], codes),
        warm, RunOptions(device=device, eval_batch_size=64, channels_last=channels_last))  # cudnn autotuning, compile
    sync(device)
    _, finals = train(stack, TrainData(x, data.train_labels, tx, data.test_labels[:64], codes),
        cfg, RunOptions(device=device, eval_batch_size=64, channels_last=channels_last))
    return steps / finals["wall_time_s"]


def original_rate(data, device, steps, base_width) -> float:
    """The original's loop: f evaluated K+1 = 11 times a step, batches from a CPU DataLoader."""
    model = build_cifar_model(0, 2, K_CIFAR, 128, base_width).to(device)
    codes = torch.from_numpy(label_codes(np.arange(K_CIFAR), K_CIFAR)).to(device)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(normalise(data.train_images)),
                                             torch.from_numpy(data.train_labels))
    loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2)
    opt = make_adam(model, 1e-4)
    done, start = 0, None
    while done < steps + 1:
        for xb, yb in loader:
            if done == 1:  # from the second step: worker start-up left out
                sync(device)
                start = time.perf_counter()
            xb, yb = xb.to(device), yb.to(device)
            target = (model.f_net(xb) * model.g_net(codes[yb])).sum(1).double()
            per_class = torch.stack([(model.f_net(xb) * model.g_net(codes[k:k + 1])).sum(1)
                                     .double() for k in range(K_CIFAR)], 1)
            loss = -(target - torch.logsumexp(per_class, 1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
            if done == steps + 1:
                break
    sync(device)
    return steps / (time.perf_counter() - start)


def grid_jobs(smoke: bool) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """(K, width, variants) of every synthetic training job as a GPU runs the grid."""
    if smoke:
        return [(4, 8, GRID["variants"]), (6, 16, [(0, 0)])]
    jobs = [(k, w, GRID["variants"]) for k in GRID["class_counts"] for w in GRID["widths_all"]]
    return jobs + [(k, w, [(0, 0)]) for k in GRID["class_counts"]
                   for w in GRID["widths_unnormalised"]]


def grid_time(device, steps, smoke) -> tuple[float, list[dict]]:
    """Seconds for the whole grid at SYNTHETIC_STEPS steps per model, from `steps` timed."""
    seeds = 3 if smoke else GRID["seeds"]
    rows, total = [], 0.0
    for k, width, variants in grid_jobs(smoke):
        data = make_radial(20_000, k, 0), make_radial(2_000, k, 1)
        codes = label_codes(np.arange(k), k)
        stack = StackedModelClass([build_synthetic_model(s, k, width, 2, g, f)
                                   for g, f in variants for s in range(seeds)])
        cfg = train_config(steps=steps, eval_every=10**9, log_every=10**9, protocol="clean")
        _, finals = train(stack, TrainData(data[0].x, data[0].labels, data[1].x, data[1].labels, codes),
            cfg, RunOptions(device=device))
        seconds = finals["wall_time_s"] * SYNTHETIC_STEPS / steps
        total += seconds
        rows.append({"K": k, "width": width, "models": len(variants) * seeds,
                     "ms_per_step": 1e3 * finals["wall_time_s"] / steps,
                     "seconds_at_15072_steps": seconds})
    return total, rows


def dag_time(device_name: str) -> float | None:
    """Wall seconds of the whole DAG with the full-size stand-in (None: this interpreter has no
    Snakemake)."""
    if importlib.util.find_spec("snakemake") is None:
        return None
    work = Path(tempfile.mkdtemp(prefix="gpu-dag-"))
    overlay = work / "gpu.yaml"
    overlay.write_text(json.dumps({
        "cifar10": {"standin": True, "standin_train": 50_000, "standin_test": 10_000,
                    "device": device_name},
        "synthetic": {"device": device_name},
        "authors_models": {"enabled": "auto"},
    }))
    cmd = [sys.executable, "-m", "snakemake", "--cores", "all", "--profile", str(ROOT / "profiles/workstation"),
           "-s", str(ROOT / "Snakefile"), "--directory", str(work), "--configfile", str(overlay)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def main() -> None:
    if "--smoke" in sys.argv[1:]:
        with host_copies_guarded(str(ROOT)):
            run()
    else:
        run()


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--cifar-steps", type=int, default=300)
    parser.add_argument("--original-steps", type=int, default=60)
    parser.add_argument("--grid-steps", type=int, default=1000)
    parser.add_argument("--variants", action="store_true",
                        help="also time no-channels_last and torch.compile")
    parser.add_argument("--dag", action="store_true", help="also run and time the whole DAG")
    parser.add_argument("--smoke", action="store_true", help="tiny, on the CPU (for tests)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.dag and args.smoke:
        raise SystemExit("bench-gpu: --dag runs the paper-scale DAG; not with --smoke")
    return args


def cifar_rates(args: argparse.Namespace, device: torch.device) -> dict[str, dict]:
    """Steps/s of each way of training CIFAR-10 and the 30 models' minutes at that rate."""
    base = 4 if args.smoke else 64
    n_train, n_test = (500, 100) if args.smoke else (50_000, 10_000)
    folder = Path(tempfile.mkdtemp()) / "cifar-10-batches-py"
    data = load_cifar10(write_standin(folder, n_train, n_test, seed=0))
    steps = 5 if args.smoke else args.cifar_steps
    seeds = 2 if args.smoke else 10
    rates = {"one_model": cifar_rate(data, device, 1, steps, base),
             "stacked_10": cifar_rate(data, device, seeds, steps, base)}
    if args.variants:
        rates["stacked_10_no_channels_last"] = cifar_rate(data, device, seeds, steps, base, False)
        rates["stacked_10_compiled"] = cifar_rate(data, device, seeds, steps, base,
                                                  compile_f=True)
    rates["original_way"] = original_rate(data, device, 3 if args.smoke else args.original_steps,
                                          base)
    models = {"one_model": 1, "original_way": 1}
    return {name: {"steps_per_s": r,
                   "minutes_30_models": 30 / models.get(name, seeds) * CIFAR_STEPS / r / 60,
                   "extrapolated": True} for name, r in rates.items()}


def report(result: dict, grid_steps: int) -> None:
    print(f"{'what':34s} {'steps/s':>9s} {'minutes':>9s}")
    for name, row in result["cifar"].items():
        print(f"CIFAR {name:28s} {row['steps_per_s']:9.2f} {row['minutes_30_models']:9.1f} "
              "(30 models x 20,319 steps, extrapolated)")
    extrapolated = ", extrapolated" if grid_steps < SYNTHETIC_STEPS else ""
    print(f"{'synthetic grid (1,360 models)':34s} {'':9s} "
          f"{result['synthetic_grid']['minutes']:9.1f} ({grid_steps} steps per job "
          f"timed{extrapolated})")
    dag = result["whole_dag"]["minutes"]
    print(f"{'whole DAG':34s} {'':9s} {'not run (--dag)' if dag is None else f'{dag:9.1f}'}")


def run() -> None:
    args = parse()
    flush_subnormals()
    device = torch.device("cpu" if args.smoke else args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench-gpu: no CUDA device visible (this benchmark needs a GPU; "
                         "--smoke runs it tiny on the CPU)")
    cifar = cifar_rates(args, device)
    grid_steps = 20 if args.smoke else args.grid_steps
    grid_s, grid_rows = grid_time(device, grid_steps, args.smoke)
    dag_s = dag_time("cuda") if args.dag else None
    result = {
        "device": str(device), "gpu": torch.cuda.get_device_name() if device.type == "cuda"
        else "", "torch": torch.__version__, "smoke": args.smoke,
        "cifar_epoch_batches": batches_per_epoch(50_000, 32),
        "cifar": cifar,
        "synthetic_grid": {"minutes": grid_s / 60, "steps_timed_per_job": grid_steps,
                           "extrapolated": grid_steps < SYNTHETIC_STEPS, "jobs": grid_rows},
        "whole_dag": {"minutes": dag_s / 60 if dag_s is not None else None,
                      "measured": dag_s is not None},
    }
    report(result, grid_steps)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written to {args.json}")

if __name__ == "__main__":
    main()
