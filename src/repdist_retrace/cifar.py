"""Our CIFAR-10 step against the original's: the same seeds trained by both, step by step.
The authors' code and ours train on the same CIFAR-format images, beside a float-rounding baseline
(the same run on one thread instead of two).

It prints first where ours and the original part: the first batch's gradient of each. Then every
step's loss of each run, the largest difference per group of tensors at the --at steps, and KL,
d_LLV and m_CCA(f) after the last step. Shims stand in for torchvision (named in the output)."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from repdist.data.cifar10 import load_cifar10, normalise, write_standin
from repdist.data.radial import label_codes
from repdist.experiments.cifar.training import (
    NUM_CLASSES,
    CifarModelConfig,
    cifar_stack,
    resolve_bn_momentum,
)
from repdist.measures import compare
from repdist.models.extract import extract
from repdist.models.resnet import build_cifar_model
from repdist.models.stacked import StackedModelClass
from repdist.pipeline.subnormals import flush_subnormals
from repdist.training.devices import TF32_MODES, set_cuda_float32
from repdist.training.loop import RunOptions, TrainData, batch_nll, train

from repdist_dev.checkout import paper_config, train_config

from .original import SHIMS_USED, put_on_path

PAPER_CONFIG = paper_config()
G_WIDTH = PAPER_CONFIG["cifar10"]["g_width"]  # the original's ..._resnetcifar10_128_fd*.json
BASE_WIDTH = PAPER_CONFIG["cifar10"]["base_width"]
SHIMS = ("torchvision.datasets.CIFAR10 + ToTensor + Normalize(0.5, 0.5) -> TensorDataset of the "
         "same uint8 images, /255, -0.5, /0.5 in torch; DataLoader num_workers 2 -> 0")
SHIM_FLOAT64 = "float64: a forward pre-hook on g_net casts the one-hot input to float64"
# On --device cuda both codes train on the GPU in the --tf32 mode (the original's own default being
# PyTorch's); the threads baseline then says only that the GPU's sums are repeatable.
DEVICE = torch.device("cpu")  # --device: where both codes train


class _Stop(Exception):
    """Raised from a step hook once a run has taken the steps asked for."""


@dataclass
class Run:
    """One seed's run: the loss of every step, the state dict after each --at step (and after
    the last), the seconds per step."""

    name: str
    seed: int
    losses: list[float] = field(default_factory=list)
    states: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)
    seconds_per_step: float = float("nan")
    _after_first: float = 0.0

    def clock(self, done: int) -> None:
        """Seconds per step from the end of step 1 to the end of the last (step 0's test pass
        and first-call costs left out); called with every count of steps done."""
        if done == 1:
            self._after_first = time.perf_counter()
        elif done > 1:
            self.seconds_per_step = (time.perf_counter() - self._after_first) / (done - 1)


@dataclass(frozen=True)
class Images:
    train_x: np.ndarray  # (N, 3, 32, 32) uint8
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    source: str


def _snapshot(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in state.items()}


def import_original(folder: Path):
    """The authors' modules, imported from their source tree (no torchvision needed for these)."""
    put_on_path(folder)
    from src.config.model_config import ModelConfig
    from src.config.train_config import TrainConfig
    from src.file_handling.save_load_model import initialize_model
    from src.training import train as original_train
    from src.util import TargetType
    return ModelConfig, TrainConfig, initialize_model, original_train, TargetType


def original_loaders(images: Images, dtype: torch.dtype, batch_size: int):
    """The shim for their torchvision CIFAR10 dataset: the same images, scaled as ToTensor and
    Normalize((0.5,) * 3, (0.5,) * 3) do; num_workers=0 draws from the global RNG as their
    workers would."""
    from torch.utils.data import DataLoader, TensorDataset

    def dataset(x: np.ndarray, y: np.ndarray) -> TensorDataset:
        t = torch.from_numpy(x).to(torch.float32).div(255.0).sub(0.5).div(0.5).to(dtype)
        return TensorDataset(t, torch.from_numpy(y.astype(np.int64)))

    return (DataLoader(dataset(images.train_x, images.train_y), batch_size=batch_size,
                       shuffle=True, num_workers=0),
            DataLoader(dataset(images.test_x, images.test_y), batch_size=batch_size,
                       shuffle=False, num_workers=0))


def original_model(folder: Path, seed: int, rep_dim: int, dtype: torch.dtype) -> torch.nn.Module:
    """Seed `seed`'s model as their train_models builds it: torch.manual_seed(seed), then their
    ModelClass; in float64 g's one-hot input (`.float()` in their loop) is cast by a hook."""
    model_config_cls, _, initialize_model, _, target = import_original(folder)
    torch.manual_seed(seed)
    model = initialize_model(model_config_cls(
        random_seed=seed, model_type="ResNetCIFAR10", target_type=target.CLASSIFICATION_MULTI,
        nonlinearity="leaky_relu", num_classes=NUM_CLASSES, num_features=G_WIDTH,
        rep_dim=rep_dim, fix_length_gs=0.0, fix_length_fs=0.0)).to(DEVICE, dtype)
    if dtype == torch.float64:
        model.g_net.register_forward_pre_hook(lambda _m, args: tuple(a.double() for a in args))
    return model


def run_original(folder: Path, seed: int, images: Images, steps: int, at: Sequence[int],
                 rep_dim: int, dtype: torch.dtype) -> Run:
    """Their train() on seed `seed`'s model (torch.manual_seed(seed), then their model, as
    their train_models does), stopped once `steps` steps are taken; their data seed is 0."""
    _, train_config_cls, _, original_train, target = import_original(folder)
    settings = PAPER_CONFIG["cifar10"]["training"]
    model = original_model(folder, seed, rep_dim, dtype)
    cfg = train_config_cls(dataset_name="cifar10", random_seed=settings["data_seed"],
                           batch_size=settings["batch_size"], train_steps=steps + 1,
                           reduction="mean", use_forward_as_loss=True,
                           learning_rate=settings["lr"], optimizer_type="ADAM")
    run = Run("original", seed)

    forward = model.forward  # their loop calls model.forward(...) directly: no module hooks

    def observed_forward(*args, **kwargs):
        """A training forward (grad on) starts step i = len(run.losses): keep the state after
        i steps (their test pass after step 0 included) and, after it, the step's loss."""
        if not torch.is_grad_enabled():
            return forward(*args, **kwargs)
        done = len(run.losses)
        if done in at or done == steps:
            run.states[done] = _snapshot(model.state_dict())
        run.clock(done)
        if done == steps:
            raise _Stop
        loss = forward(*args, **kwargs)
        run.losses.append(float(loss.detach()))
        return loss

    model.forward = observed_forward
    train_loader, test_loader = original_loaders(images, dtype, settings["batch_size"])
    try:
        original_train.train(train_loader, test_loader, target.CLASSIFICATION_MULTI, model, cfg,
                             DEVICE.type, steps + 1)
    except _Stop:
        pass
    _done(run)
    return run


def _done(run: Run) -> None:
    """A line as each run ends (a float64 run of the original takes tens of minutes)."""
    print(f"  {run.name} seed {run.seed}: {len(run.losses)} steps, {run.seconds_per_step:.2f} "
          f"s/step, last loss {run.losses[-1]:.10f}", flush=True)


def first_gradients(folder: Path, images: Images, rep_dim: int, dtype: torch.dtype) -> dict:
    """Where ours and the original part: the gradient of the first batch (32 training images) at
    seed 0's initial weights, theirs from their ModelClass.forward, ours from batch_nll (paper
    protocol); per group, the largest relative difference of one tensor's gradient."""
    theirs = original_model(folder, 0, rep_dim, dtype)
    from src.util import convert_int_targets_to_one_hot
    ours = our_stack([0], rep_dim, "paper", dtype).to(DEVICE)
    x = torch.from_numpy(normalise(images.train_x[:32])).to(DEVICE, dtype)
    y = torch.from_numpy(images.train_y[:32].astype(np.int64)).to(DEVICE)
    theirs.forward(x, convert_int_targets_to_one_hot(y, NUM_CLASSES).to(DEVICE), DEVICE.type,
                   "mean").backward()
    codes = torch.from_numpy(label_codes(np.arange(NUM_CLASSES), NUM_CLASSES)).to(DEVICE, dtype)
    batch_nll(ours, x, codes, y).sum().backward()
    with torch.no_grad():  # ours' gradients under the original's names and shapes
        weights = {k: p.detach().clone() for k, p in ours.named_parameters()}
        for _, p in ours.named_parameters():
            p.copy_(p.grad)
        grads = _snapshot(ours.state_dict_of(0))
        for k, p in ours.named_parameters():
            p.copy_(weights[k])
    theirs_grads = _snapshot({k: p.grad for k, p in theirs.named_parameters()})  # on the CPU
    return {group: max(float((grads[k] - g).abs().max() / g.abs().max())
                       for k, g in theirs_grads.items() if member(k))
            for group, member in GROUPS.items() if group != "BN stats"}


def our_stack(seeds: Sequence[int], rep_dim: int, protocol: str,
              dtype: torch.dtype) -> StackedModelClass:
    """The models of `seeds` as a CIFAR job builds them (experiments.cifar.training.cifar_stack)
    from the paper's config, on the CPU, in `dtype`."""
    c = PAPER_CONFIG["cifar10"]
    cfg = CifarModelConfig(rep_dim=rep_dim, seeds=list(seeds), base_width=BASE_WIDTH,
                           g_width=G_WIDTH, bn_momentum=c["bn_momentum"], device="cpu",
                           tf32=c["tf32"], channels_last=False,
                           eval_batch_size=c["eval_batch_size"], cuda_graph=False)
    return cifar_stack(cfg, resolve_bn_momentum(cfg.bn_momentum, protocol)).to(dtype)


def run_ours(name: str, seeds: Sequence[int], images: Images, steps: int, at: Sequence[int],
             protocol: str, rep_dim: int, dtype: torch.dtype, threads: int) -> list[Run]:
    """Our loop on the models of `seeds` as one stack (one seed: alone), stopped after `steps`."""
    torch.set_num_threads(threads)
    stack = our_stack(seeds, rep_dim, protocol, dtype)
    runs = [Run(name, s) for s in seeds]

    def recording_nll(model, x, codes, labels, _idx):
        loss = batch_nll(model, x, codes, labels)
        for run, value in zip(runs, loss.detach().double().reshape(-1).tolist(), strict=True):
            run.losses.append(value)
        return loss

    def on_step(done: int) -> None:
        if done in at or done == steps:
            for i, run in enumerate(runs):
                run.states[done] = _snapshot(stack.state_dict_of(i))
        for run in runs:
            run.clock(done)
        if done == steps:
            raise _Stop

    data = TrainData(normalise(images.train_x), images.train_y, normalise(images.test_x),
                     images.test_y, label_codes(np.arange(NUM_CLASSES), NUM_CLASSES))
    cfg = train_config("cifar10", protocol=protocol, steps=steps, checkpoint_every=0)
    try:
        train(stack, data, cfg, RunOptions(on_step=on_step, objective=recording_nll,
                                           device=DEVICE))
    except _Stop:
        pass
    torch.set_num_threads(2)
    for run in runs:
        _done(run)
    return runs


GROUPS: dict[str, Callable[[str], bool]] = {
    "f": lambda k: k.startswith("f_net.") and not _bn_stat(k),
    "g": lambda k: k.startswith("g_net."),
    "BN stats": lambda k: k.endswith(("running_mean", "running_var")),
}


def _bn_stat(key: str) -> bool:
    return key.endswith(("running_mean", "running_var", "num_batches_tracked"))


def tensor_differences(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict:
    """Per group: the largest |a - b| over its tensors; the largest relative difference of one
    tensor, max|a - b| / max|a| (`max_rel`) and ||a - b|| / ||a|| (`norm_rel`); how many of
    its tensors are bit-equal."""
    out = {}
    for group, member in GROUPS.items():
        keys = [k for k in a if member(k)]
        diff = [a[k].double() - b[k].double() for k in keys]
        abs_d = [float(d.abs().max()) for d in diff]
        rel_d = [d / max(float(a[k].double().abs().max()), 1e-300) for d, k in zip(abs_d, keys)]
        norm_d = [float(d.norm() / max(float(a[k].double().norm()), 1e-300))
                  for d, k in zip(diff, keys)]
        out[group] = {"max_abs": max(abs_d), "max_rel": max(rel_d), "norm_rel": max(norm_d),
                      "bit_equal": sum(torch.equal(a[k], b[k]) for k in keys),
                      "tensors": len(keys)}
    tracked = [k for k in a if k.endswith("num_batches_tracked")]
    out["num_batches_tracked"] = sorted({(int(a[k]), int(b[k])) for k in tracked})
    return out


_REPS: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # by id of a kept state dict


def representations(state: dict[str, torch.Tensor], seed: int, images: Images,
                    rep_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(f, g) of a state dict as a model in float64, eval mode, on the test images; once per
    state (every comparison of a run reuses them)."""
    if id(state) not in _REPS:
        model = build_cifar_model(seed, rep_dim, NUM_CLASSES, G_WIDTH, BASE_WIDTH).double()
        model.load_state_dict({k: v.double() if v.is_floating_point() else v
                               for k, v in state.items()})
        codes = label_codes(np.arange(NUM_CLASSES), NUM_CLASSES).astype(np.float64)
        f, g = extract(StackedModelClass([model]), normalise(images.test_x).astype(np.float64),
                       codes, 250)
        _REPS[id(state)] = (f[0], g[0])
    return _REPS[id(state)]


def model_measures(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], seed: int,
                   images: Images, rep_dim: int) -> dict[str, float]:
    """KL, d_LLV and m_CCA(f) between two state dicts as models (eval mode, test images)."""
    n_sets = min(200, len(images.test_y) // (rep_dim + 1))  # 200 diversity sets where N allows
    r = compare(*representations(a, seed, images, rep_dim),
                *representations(b, seed, images, rep_dim), num_samples=n_sets)
    return {"kl": r["kl"], "d_llv": r["d_llv"], "mcca_f": r["mcca_f"]}


def compare_runs(label: str, a: Run, b: Run, at: Sequence[int], steps: int, images: Images,
                 rep_dim: int) -> dict:
    """One comparison row: loss and tensor differences at the --at steps, measures at the end."""
    n = min(len(a.losses), len(b.losses))
    loss_d = [abs(x - y) for x, y in zip(a.losses[:n], b.losses[:n])]
    return {"comparison": label, "seed": a.seed, "a": a.name, "b": b.name,
            "max_loss_diff": max(loss_d), "max_rel_loss_diff": max(
                d / abs(x) for d, x in zip(loss_d, a.losses)),
            "tensors": {s: tensor_differences(a.states[s], b.states[s])
                        for s in sorted({*at, steps}) if s in a.states and s in b.states},
            "final": model_measures(a.states[steps], b.states[steps], a.seed, images, rep_dim)}


# Images: a generated stand-in (--n-train/--n-test images, repdist.data.cifar10.write_standin), or
# --cifar-root, a cifar-10-batches-py folder (its first --n-train and --n-test images).
def load_images(args: argparse.Namespace, tmp: Path) -> Images:
    if args.cifar_root:
        data, source = load_cifar10(args.cifar_root), f"CIFAR-10 at {args.cifar_root}"
    else:
        data = load_cifar10(write_standin(tmp / "standin", args.n_train, args.n_test, seed=0))
        source = "generated stand-in (repdist.data.cifar10.write_standin, seed 0)"
    return Images(data.train_images[: args.n_train], data.train_labels[: args.n_train],
                  data.test_images[: args.n_test], data.test_labels[: args.n_test],
                  f"{source}: {args.n_train} training and {args.n_test} test images")


# Runs, per seed (ResNet-18 f, M = --rep-dim, g of width 128, batch 32, Adam at 1e-4):
# - `original`: the authors' `src/training/train.py::train` with their ModelClass and ResNet18,
#   imported from --original at run time (f evaluated K + 1 = 11 times a step);
# - `ours`: `repdist.training.loop.train` under each --protocol, every seed alone;
# - `ours-t1`: the same with one thread instead of two (only the summation order changes): the
#   rounding baseline every other distance is read against;
# - `stacked` (--stacked): all --seeds as one stack (grouped convolutions), against each alone.
def all_runs(args: argparse.Namespace, images: Images, dtype: torch.dtype) -> dict:
    """Every run the comparisons need, keyed by (name, protocol, seed)."""
    common = (images, args.steps, args.at)
    runs: dict[tuple[str, str, int], Run] = {}
    for seed in args.seeds:
        if args.original and seed in args.original_seeds:
            runs["original", "-", seed] = run_original(args.original, seed, *common,
                                                       args.rep_dim, dtype)
        for protocol in args.protocol:
            baseline = seed == args.seeds[0]  # the rounding baseline, on the first seed
            for name, threads in (("ours", 2), ("ours-t1", 1))[: 1 + baseline]:
                (run,) = run_ours(name, [seed], *common, protocol, args.rep_dim, dtype, threads)
                runs[name, protocol, seed] = run
    if args.stacked:
        for protocol in args.protocol:
            for run in run_ours("stacked", args.seeds, *common, protocol, args.rep_dim, dtype, 2):
                runs["stacked", protocol, run.seed] = run
    return runs


def comparisons(args: argparse.Namespace, runs: dict, images: Images) -> list[dict]:
    rows = []
    for protocol in args.protocol:
        for seed in args.seeds:
            ours = runs["ours", protocol, seed]
            pairs = [("rounding: ours threads 2 vs 1", runs["ours-t1", protocol, seed])
                     ] if ("ours-t1", protocol, seed) in runs else []
            if ("original", "-", seed) in runs:
                pairs.insert(0, ("ours vs original", runs["original", "-", seed]))
            if ("stacked", protocol, seed) in runs:
                pairs.append(("stacked vs alone", runs["stacked", protocol, seed]))
            for label, other in pairs:
                row = compare_runs(label, ours, other, args.at, args.steps, images, args.rep_dim)
                rows.append({**row, "protocol": protocol})
    return rows


def print_losses(args: argparse.Namespace, runs: dict) -> None:
    for seed in args.seeds:
        cols = [(key, run) for key, run in runs.items() if key[2] == seed]
        names = [f"{k[0]}/{k[1]}" if k[1] != "-" else k[0] for k, _ in cols]
        print(f"\nseed {seed}: the loss of every step")
        print(f"{'step':>5} " + " ".join(f"{n:>22}" for n in names))
        for step in range(args.steps):
            print(f"{step:5d} " + " ".join(
                f"{r.losses[step]:22.17f}" if step < len(r.losses) else f"{'':>22}"
                for _, r in cols))
        print(f"{'s/step':>5} " + " ".join(f"{r.seconds_per_step:22.2f}" for _, r in cols))


def print_comparisons(rows: list[dict]) -> None:
    print("\nLargest relative difference of one tensor per group, max|a-b|/max|a| and "
          "||a-b||/||a||")
    print(f"{'comparison':<30} {'protocol':<8} {'seed':>4} {'step':>5} "
          + " ".join(f"{g + ' max':>11} {g + ' norm':>11}" for g in GROUPS) + " bit-equal")
    for r in rows:
        for step, t in r["tensors"].items():
            equal = sum(t[g]["bit_equal"] for g in GROUPS)
            total = sum(t[g]["tensors"] for g in GROUPS)
            print(f"{r['comparison']:<30} {r['protocol']:<8} {r['seed']:4d} {step:5d} "
                  + " ".join(f"{t[g]['max_rel']:11.2e} {t[g]['norm_rel']:11.2e}"
                             for g in GROUPS)
                  + f" {equal:>4}/{total:<5}")
    print(f"\n{'comparison':<30} {'protocol':<8} {'seed':>4} {'max |dloss|':>11} {'KL':>9} "
          f"{'d_LLV':>9} {'m_CCA(f)':>9} {'num_batches_tracked':>20}")
    for r in rows:
        last = r["tensors"][max(r["tensors"])]
        print(f"{r['comparison']:<30} {r['protocol']:<8} {r['seed']:4d} "
              f"{r['max_loss_diff']:11.2e} {r['final']['kl']:9.2e} {r['final']['d_llv']:9.2e} "
              f"{r['final']['mcca_f']:9.6f} {str(last['num_batches_tracked']):>20}")


def describe_device(args: argparse.Namespace) -> str:
    if DEVICE.type != "cuda":
        return "cpu"
    return f"cuda ({torch.cuda.get_device_name()}, tf32 {args.tf32})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original", type=Path, help="the authors' source tree (none: ours only)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--original-seeds", type=int, nargs="+",
                        help="the seeds the original trains (default: all --seeds)")
    parser.add_argument("--float64", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--protocol", nargs="+", default=["paper"], choices=["paper", "clean"])
    parser.add_argument("--stacked", action="store_true")
    parser.add_argument("--rep-dim", type=int, default=2)
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--n-test", type=int, default=500)
    parser.add_argument("--cifar-root", type=Path)
    parser.add_argument("--at", type=int, nargs="+", default=[1, 2, 5, 10, 20, 40, 63])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--tf32", default=PAPER_CONFIG["cifar10"]["tf32"], choices=TF32_MODES,
                        help="float32 on CUDA (cifar10.tf32; default: the config's)")
    args = parser.parse_args()
    global DEVICE
    DEVICE = torch.device(args.device)
    if DEVICE.type == "cuda":
        set_cuda_float32(args.tf32)
    if args.stacked and len(args.seeds) < 2:
        parser.error("--stacked needs two or more --seeds")
    args.original_seeds = args.seeds if args.original_seeds is None else args.original_seeds
    flush_subnormals()  # as every pipeline job does
    dtype = torch.float64 if args.float64 else torch.float32
    args.at = [s for s in args.at if s <= args.steps]
    with tempfile.TemporaryDirectory() as tmp:
        images = load_images(args, Path(tmp))
    print(f"{images.source}; {args.steps} steps, {dtype}, seeds {args.seeds}, "
          f"protocols {args.protocol}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, device {describe_device(args)}")
    if args.original:
        grads = first_gradients(args.original, images, args.rep_dim, dtype)
        print("first batch's gradient at seed 0's initial weights, ours (paper) vs original, "
              "largest relative difference of one tensor: "
              + ", ".join(f"{g} {v:.2e}" for g, v in grads.items()), flush=True)
    runs = all_runs(args, images, dtype)
    shims = [SHIMS, *SHIMS_USED] + [SHIM_FLOAT64] * args.float64 if args.original else []
    if shims:
        print("shims in the original: " + "; ".join(shims))
    print_losses(args, runs)
    rows = comparisons(args, runs, images)
    print_comparisons(rows)
    if args.json:
        args.json.write_text(json.dumps({"images": images.source, "dtype": str(dtype),
                                         "device": describe_device(args),
                                         "shims": shims,
                                         "steps": args.steps, "rows": rows,
                                         "seconds_per_step": {"/".join(map(str, k)):
                                                              r.seconds_per_step
                                                              for k, r in runs.items()}},
                                        indent=1, default=str))


if __name__ == "__main__":
    main()
