"""The follow-up's experiment (repdist.experiments.logit_distance.training) against its authors'
own code: Nielsen et al. 2026, "Logit Distance Bounds Representational Similarity"
(bemigini/logit-distance-bounds-rep-sim), imported at run time from a folder that holds it.

It runs on a run's saved spirals models (`--results`: `make quick` makes one). Each of their
functions runs on our models and the same batches beside ours, and the differences are printed
(`run`). Their modules' missing imports get empty stand-ins (`import_theirs`)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from repdist.data.spirals import load_spirals, make_spirals
from repdist.io.representations import load_representations
from repdist.experiments.logit_distance.training import sklearn_mcca
from repdist.measures.cca import mean_cca
from repdist.measures.logit_distance import d_logit_squared, d_rep, logits
from repdist.models.follow_up import FollowUpArch, FollowUpMLP, StackedFollowUp
from repdist.training.distillation import follow_up_loss
from repdist.training.loop import make_adam
from repdist.training.settings import EpochSchedule


class _Anything(types.ModuleType):
    """A stand-in module: every attribute is a callable stand-in too."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(f"{self.__name__}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Anything(self.__name__)


@contextlib.contextmanager
def inside(folder: Path) -> Iterator[None]:
    """Their modules list their own folders (os.listdir('models')): import them from there."""
    before = Path.cwd()
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        os.chdir(before)


# Where torchvision, datasets or setproctitle does not import, an empty stand-in takes its place:
# PyPI's torchvision does not load beside the pinned torch, and the others are not installed.
# Nothing here calls a stand-in (sub_check replaces their `load_dataset`).
def import_theirs(folder: Path) -> tuple[dict[str, Any], str]:
    """Their modules the checks call, and what was stubbed."""
    stubbed = []
    with contextlib.suppress(ImportError):  # before any stand-in: it probes for torchvision
        import transformers  # noqa: F401
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure to load it: stand in
        for name in ("torchvision", "torchvision.transforms", "torchvision.datasets",
                     "torchvision.transforms.functional"):
            sys.modules[name] = _Anything(name)
        stubbed.append("torchvision (CIFAR-100's data set class; the ResNets are their own "
                       "copy of torchvision's, run here)")
    for name, what in (("setproctitle", "setproctitle (a process title)"),
                       ("datasets", "datasets (SUB's images: the run's stand-in read in its place)")):
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = _Anything(name)
            stubbed.append(what)
    with inside(folder):
        import dissimilarities.distribution_metric as dm
        import dissimilarities.mean_cca as mc
        import dissimilarities.representation_dissimilarity as rd
        import utils.losses as losses
        import utils.metrics as metrics
        from backbones import resnet
        from backbones.nn import MLP
        from models.classifier import Classifier
        from models.kldistill import KLDistill
        from models.logitdistill import LogitDistill
    return ({"dm": dm, "mc": mc, "rd": rd, "losses": losses, "metrics": metrics, "MLP": MLP,
             "Classifier": Classifier, "KLDistill": KLDistill, "LogitDistill": LogitDistill,
             "resnet": resnet},
            "; ".join(stubbed) or "none")


def their_spirals(folder: Path, seed: int, n_per_arm: int) -> dict[str, np.ndarray]:
    """Their generate_2d_data after np.random.seed(seed), `quit()` and plotting skipped, its
    npz written in a scratch folder and read back."""
    source = (folder / "dsets" / "synthetic.py").read_text()
    body = source[source.index("def generate_2d_data"):source.index("def filtrate_dataset")]
    body = body.replace("quit()", "pass")
    with tempfile.TemporaryDirectory() as scratch, inside(Path(scratch)):
        Path("data").mkdir()
        Path("logs").mkdir()
        space: dict[str, Any] = {"np": np, "torch": torch, "plot_2d_data": lambda *a, **k: None,
                                 "TensorDataset": lambda *a: a}
        exec(compile(body, "their dsets/synthetic.py", "exec"), space)  # noqa: S102
        np.random.seed(seed)
        with contextlib.redirect_stdout(open(os.devnull, "w")):
            space["generate_2d_data"](n_spirals=4, n_labels=7, N=n_per_arm)
        with np.load("data/synthetic_data.npz") as npz:
            return {k: npz[k] for k in npz.files}


def spirals_check(folder: Path, seed: int, n_per_arm: int) -> list[tuple[str, float, float]]:
    theirs = their_spirals(folder, seed, n_per_arm)
    ours = make_spirals(seed, n_per_arm=n_per_arm)
    rows = []
    for split in ("train", "val", "test"):
        dx = float(np.abs(theirs[f"X_{split}"] - ours.x[split]).max())
        dy = float(np.sum(theirs[f"Y_{split}"].reshape(-1) != ours.labels[split]))
        rows.append((f"spirals {split}: max |x ours - x theirs|, labels differing", dx + dy, 0.0))
    return rows


def their_pair_sample(k: int, m: int, pivots: int, combinations: int,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The (pivot, subset) pairs their d_rep draws (default_rng(seed): the pivots without
    replacement, then per pivot `combinations` subsets of M positions among the K - 1 other
    labels), as label indices."""
    rng = np.random.default_rng(seed)
    chosen = rng.choice(torch.arange(0, k), pivots, replace=False)
    p_out, s_out = [], []
    for p in chosen:
        for _ in range(combinations):
            positions = rng.choice(range(k - 1), m, replace=False)
            s_out.append([q if q < p else q + 1 for q in positions])
            p_out.append(int(p))
    return np.array(p_out), np.array(s_out)


def ours_over(f1: np.ndarray, g1: np.ndarray, f2: np.ndarray, g2: np.ndarray,
              pivots: np.ndarray, rows: np.ndarray) -> tuple[float, float]:
    """(mean squared, mean unsquared) ||f1 - A f2|| over the given pairs and the inputs."""
    sq, norms = [], []
    for p, row in zip(pivots, rows, strict=True):
        a = np.linalg.solve(g1[row] - g1[p], g2[row] - g2[p])
        r = f1 - f2 @ a.T
        sq.append(np.mean(np.sum(r**2, axis=1)))
        norms.append(np.mean(np.linalg.norm(r, axis=1)))
    return float(np.mean(sq)), float(np.mean(norms))


def measure_checks(theirs: dict[str, Any], teacher: tuple[np.ndarray, np.ndarray],
                   student: tuple[np.ndarray, np.ndarray]) -> list[tuple[str, float, float]]:
    """d_logit^2, both d_rep, m_CCA: theirs on our test representations against ours."""
    (f_t, g_t), (f_s, g_s) = teacher, student
    t32 = {k: torch.tensor(v, dtype=torch.float32) for k, v in
           (("ft", f_t), ("gt", g_t), ("fs", f_s), ("gs", g_s))}
    d2_theirs = float(theirs["dm"].calculate_d_2_logit(t32["fs"], t32["ft"], t32["gs"], t32["gt"]))
    d2_ours = d_logit_squared(logits(f_s, g_s), logits(f_t, g_t))
    k, m = g_s.shape
    pivots, combos = min(7, k), 15
    with contextlib.redirect_stdout(open(os.devnull, "w")), \
            contextlib.redirect_stderr(open(os.devnull, "w")):
        v1 = float(theirs["metrics"].calculate_d_rep(t32["fs"], t32["ft"], t32["gs"], t32["gt"],
                                                     pivots, combos, 0))
        v2 = float(theirs["rd"].calculate_d_rep(t32["fs"], t32["ft"], t32["gs"], t32["gt"],
                                                pivots, combos, 0))
    p, rows = their_pair_sample(k, m, pivots, combos)
    squared, unsquared = ours_over(f_s, g_s, f_t, g_t, p, rows)
    exact = d_rep(f_s, g_s, f_t, g_t).value
    mcca_theirs = float(theirs["mc"].mCCA(f_t, f_s, m)[0])
    return [
        ("d_logit^2: theirs vs ours (relative)", _rel(d2_theirs, d2_ours), 1e-5),
        ("d_rep, dissimilarities/: theirs x (pivots x subsets) vs ours on their sample "
         "(relative)", _rel(v2 * len(p), squared), 1e-4),
        ("d_rep, utils/metrics.py: theirs vs ours unsquared on their sample (relative)",
         _rel(v1, unsquared), 1e-4),
        (f"d_rep, dissimilarities/ as it is: theirs vs the definition on their sample "
         f"(relative; it divides by the {len(p)} pairs twice, informational)",
         _rel(v2, squared), float("inf")),
        ("d_rep, utils/metrics.py as it is: theirs vs the definition on their sample "
         "(relative; no square, informational)", _rel(v1, squared), float("inf")),
        (f"d_rep: ours on their sample ({len(p)} pairs) vs ours over every pair (relative; "
         "sampling, informational)", _rel(squared, exact), float("inf")),
        ("m_CCA: theirs (sklearn CCA) vs ours through sklearn (absolute)",
         abs(mcca_theirs - sklearn_mcca(f_t, f_s, m)), 1e-12),
        ("m_CCA: theirs (sklearn CCA) vs ours exact (absolute; NIPALS' own error)",
         abs(mcca_theirs - mean_cca(f_t, f_s)), 1e-3),
    ]


def defect_notes(folder: Path, theirs: dict[str, Any], teacher: tuple[np.ndarray, np.ndarray],
                 students: list[tuple[np.ndarray, np.ndarray]]) -> list[str]:
    """Their code's defects (ORIGIN.md's list), each confirmed here by running or reading it."""
    notes = []
    source = (folder / "dsets" / "synthetic.py").read_text()
    body = source[source.index("def generate_2d_data"):source.index("def filtrate_dataset")]
    if body.index("quit()") < body.index("np.savez"):
        notes.append("dsets/synthetic.py: generate_2d_data calls quit() before np.savez: the "
                     "data is never saved (confirmed; the retrace skips the quit)")
    (f_t, g_t), (f_s, g_s) = teacher, students[0]
    zt, zs = logits(f_t, g_t), logits(f_s, g_s)
    theirs_kl = float(theirs["metrics"].KL_from_logits(torch.tensor(zt), torch.tensor(zs)))
    from repdist.measures.logit_distance import kl_from_logits

    notes.append(f"utils/metrics.py: KL_from_logits(teacher, student) = {theirs_kl:.6g}: "
                 f"KL(student || teacher) = {kl_from_logits(zs, zt):.6g}, not KL(teacher || "
                 f"student) = {kl_from_logits(zt, zs):.6g} (confirmed: the evaluators' KL is the "
                 "reverse of their training metric's)")
    evaluator = (folder / "evaluation" / "syn_evaluate_standard.py").read_text()
    written = "synthetic-standard-classifier-epoch499-seed400"  # their make_checkpoint_name
    if "N0-classifier-epoch1499" in evaluator and written not in evaluator:
        notes.append(f"evaluation/: syn_evaluate_standard.py loads synthetic-standard-N0-"
                     f"classifier-epoch1499-seed<t>.pt; training writes {written}.pt "
                     "(utils/checkpoint.py::make_checkpoint_name): the names never meet")
    moment = zt.T @ zt / len(zt)
    unsorted = np.linalg.eig(moment)[0].real
    broken = 0
    for f, g in students:
        rho = np.sort(np.linalg.svd(np.linalg.qr(f_t - f_t.mean(0))[0].T
                                    @ np.linalg.qr(f - f.mean(0))[0], compute_uv=False))[::-1]
        rho = np.concatenate([rho, np.zeros(len(unsorted) - len(rho))])
        left = float(np.sum((1 - rho**2) * unsorted))
        raw = float(np.mean(np.sum((logits(f, g) - zt) ** 2, axis=1)))  # their d2_logit
        broken += left > raw * (1 + 1e-9)
    notes.append(f"figures/bound_plot_cifar.py: np.linalg.eig's unsorted eigenvalues of the raw "
                 f"logits' moment matrix beside sorted correlations: on these {len(students)} "
                 f"students the left side exceeds their (raw) d2_logit for {broken} (the sorted pairing "
                 "never does: measures.logit_distance.f1_bound); it also builds its teacher with "
                 "the student's final_dim (25, not the teacher's 50) and loads per-epoch "
                 "checkpoints that utils/train.py never saves (confirmed by reading)")
    return notes


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def their_model(theirs: dict[str, Any], loss: str, arch: FollowUpArch) -> torch.nn.Module:
    args = types.SimpleNamespace(dataset="synthetic", loss_type=loss, lr=1e-3)
    encoder = theirs["MLP"](input_dim=arch.in_dim, hidden_units=arch.hidden,
                            repr_dim=arch.rep_dim, dropout=arch.dropout)
    kind = {"labels": "Classifier", "kl": "KLDistill"}.get(loss, "LogitDistill")
    return theirs[kind](encoder, args, n_classes=arch.num_classes).cpu()


def step_check(theirs: dict[str, Any], loss: str, arch: FollowUpArch, state: dict,
               x: torch.Tensor, y: torch.Tensor,
               teacher_logits: torch.Tensor) -> list[tuple[str, float, float]]:
    """One step of their training loop against ours, from the same weights, batch and masks."""
    theirs_model = their_model(theirs, loss, arch)
    theirs_model.load_state_dict(state)
    model = FollowUpMLP(arch)
    model.load_state_dict(state)
    return compare_step(theirs, loss, theirs_model, StackedFollowUp([model]), x, y,
                        teacher_logits, loss)


def compare_step(theirs: dict[str, Any], loss: str, theirs_model: torch.nn.Module,
                 ours: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
                 teacher_logits: torch.Tensor, label: str) -> list[tuple[str, float, float]]:
    """One step of their loop (their model, Adam and loss) against our stack of one holding
    the same weights: the loss, and every weight and buffer after it."""
    theirs_model.train()
    opt = torch.optim.Adam(theirs_model.parameters(), lr=1e-3)  # their start_optim
    torch.manual_seed(7)
    out = theirs_model(x)
    out.update({"INPUTS": x, "LABELS": y, "TLOGITS": teacher_logits})
    their_loss = {"labels": theirs["losses"].Classification_Loss,
                  "kl": theirs["losses"].KL_Loss_logits, "l1": theirs["losses"].L1_Loss_Logits,
                  "l2": theirs["losses"].L2_Loss_Logits}[loss]
    value, _ = their_loss(out, types.SimpleNamespace(model="classifier"))
    opt.zero_grad()
    value.backward()
    opt.step()
    ours.train()
    ours_opt = make_adam(ours, 1e-3)
    torch.manual_seed(7)
    mine = follow_up_loss(loss, ours.logits(x), teacher_logits[None], y)
    ours_opt.zero_grad()
    mine.sum().backward()
    ours_opt.step()
    after = ours.state_dict_of(0)
    worst = max(float((after[k].double() - v.double()).abs().max())
                for k, v in theirs_model.state_dict().items())
    return [(f"one step, {label}: loss theirs vs ours (relative)",
             _rel(float(mine.detach()), float(value.detach())),
             1e-5),
            (f"one step, {label}: weights after it, max |theirs - ours|", worst, 1e-6)]


FULL_WIDTH = 64  # their ResNets' stem channels and layer1's planes (torchvision's)


class _ScaledNN(types.ModuleType):
    """torch.nn, but for Conv2d, BatchNorm2d and Linear (set on it by their_width)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.nn, name)


def scaled_nn(width: int) -> types.ModuleType:
    """torch.nn whose Conv2d, BatchNorm2d and Linear (its input) take every channel count that
    is a multiple of 64 at width / 64 of it (64 -> width, 2048 -> 32 x width): a ResNet's
    counts are all such, the 3 colours, the embedding and the labels are left alone. Each is a
    subclass of torch's: the same parameters, initialisation and forward."""

    def scale(count: int) -> int:
        return count // FULL_WIDTH * width if count % FULL_WIDTH == 0 else count

    class Conv2d(torch.nn.Conv2d):
        def __init__(self, cin: int, cout: int, *args: Any, **kwargs: Any) -> None:
            super().__init__(scale(cin), scale(cout), *args, **kwargs)

    class BatchNorm2d(torch.nn.BatchNorm2d):
        def __init__(self, features: int, *args: Any, **kwargs: Any) -> None:
            super().__init__(scale(features), *args, **kwargs)

    class Linear(torch.nn.Linear):
        def __init__(self, cin: int, *args: Any, **kwargs: Any) -> None:
            super().__init__(scale(cin), *args, **kwargs)

    module = _ScaledNN(f"torch.nn at width {width}")
    module.Conv2d, module.BatchNorm2d, module.Linear = Conv2d, BatchNorm2d, Linear
    return module


@contextlib.contextmanager
def their_width(theirs: dict[str, Any], width: int) -> Iterator[None]:
    """Their ResNet modules (backbones/resnet.py, backbones/tv_resnet.py) building at `width`:
    their code as it is, its `nn` scaled_nn(width) while the models are built; at 64, theirs
    untouched. The order of construction, and so of the random draws, is theirs."""
    modules = (theirs["resnet"], theirs["resnet"].tv_resnet)
    if width == FULL_WIDTH:
        yield
        return
    before = [m.nn for m in modules]
    for m in modules:
        m.nn = scaled_nn(width)
    try:
        yield
    finally:
        for m, nn in zip(modules, before, strict=True):
            m.nn = nn


def resnet_width(state: dict[str, torch.Tensor]) -> int:
    """A saved CIFAR-100 model's width: its stem's channels."""
    return int(state["encoder.tv_layers.conv1.weight"].shape[0])


def their_resnet(theirs: dict[str, Any], loss: str, depth: int, state: dict) -> torch.nn.Module:
    """Their CIFAR-100 model of `loss`'s class over their ResNet, holding `state` (at its
    width)."""
    args = types.SimpleNamespace(dataset="cifar100", loss_type=loss, lr=1e-3)
    with their_width(theirs, resnet_width(state)):
        encoder = getattr(theirs["resnet"], f"ResNet{depth}")(
            final_dim=state["linear.weight"].shape[1])
    kind = {"labels": "Classifier", "kl": "KLDistill"}.get(loss, "LogitDistill")
    model = theirs[kind](encoder, args, n_classes=state["linear.weight"].shape[0]).cpu()
    model.load_state_dict(state)
    return model


def cifar100_checks(theirs: dict[str, Any], base: Path) -> list[tuple[str, float, float]]:
    """On a run's CIFAR-100 models (logit_distance/cifar100): its teacher loaded into their
    ResNet-50 classifier (its logits in eval mode), and one training step of a ResNet-18 student
    of each loss, their model and loop against ours, on the stand-in's first 8 training images
    (else 8 random images and labels), at the run's width (their_width)."""
    from repdist.experiments.logit_distance.training import cifar100_train_data
    from repdist.models.follow_up_resnet import (
        ResNetArch,
        StackedFollowUpResNet,
        build_follow_up_resnet,
    )

    standin = base / "standin" / "cifar-100-python"
    if standin.is_dir():
        data = cifar100_train_data(standin)
        x, y = torch.as_tensor(data.train_x[:8]), torch.as_tensor(data.train_labels[:8])
    else:
        rng = torch.Generator().manual_seed(0)
        x, y = torch.rand(8, 3, 32, 32, generator=rng), torch.randint(0, 100, (8,), generator=rng)
    teacher_dir = sorted((base / "teachers").glob("seed*"))[0]
    state = torch.load(teacher_dir / "model.pt", weights_only=True)
    teacher = their_resnet(theirs, "labels", 50, state).eval()
    rep_dim, k = state["linear.weight"].shape[1], state["linear.weight"].shape[0]
    width = resnet_width(state)
    ours = build_follow_up_resnet(ResNetArch(50, rep_dim, k, width=width), 0)
    ours.load_state_dict(state)
    with torch.no_grad():
        teacher_logits = teacher(x)["LOGITS"]
        worst = float((teacher_logits - ours.eval()(x)).abs().max())
    rows = [(f"CIFAR-100 teacher (width {width}): our model.pt in their ResNet-50 classifier, "
             "logits max |theirs - ours|", worst, 0.0)]
    for loss in ("kl", "l1", "l2", "labels"):
        found = sorted((base / "students" / loss).glob(f"teacher{teacher_dir.name[4:]}_seed*"))
        if not found:
            continue
        state = torch.load(found[0] / "model.pt", weights_only=True)
        model = build_follow_up_resnet(ResNetArch(18, rep_dim, k, width=width), 0)
        model.load_state_dict(state)
        rows += compare_step(theirs, loss, their_resnet(theirs, loss, 18, state),
                             StackedFollowUpResNet([model]), x, y, teacher_logits,
                             f"CIFAR-100 ResNet-18 {loss}")
    return rows


def resnet_check(theirs: dict[str, Any], seed: int = 10,
                 width: int = FULL_WIDTH) -> list[tuple[str, float, float]]:
    """Their CIFAR-100 models as main.py builds them after set_random_seed(seed) (the
    ResNet-50 classifier from scratch, a ResNet-18 L2 student with its Xavier head; at `width`,
    by their_width) against build_follow_up_resnet: every initial weight, and the embedding and
    logits of one batch."""
    from repdist.models.follow_up_resnet import ResNetArch, build_follow_up_resnet

    rows = []
    args = types.SimpleNamespace(dataset="cifar100", loss_type="l2", lr=1e-3)
    x = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(seed))
    for depth, kind in ((50, "Classifier"), (18, "LogitDistill")):
        torch.manual_seed(seed)  # their set_random_seed, for torch
        with their_width(theirs, width):
            encoder = getattr(theirs["resnet"], f"ResNet{depth}")(final_dim=50)
        model = theirs[kind](encoder, args, n_classes=100).cpu()
        if kind != "Classifier":
            model.initialize_weights()
        arch = ResNetArch(depth, 50, 100, kind != "Classifier", width)
        ours = build_follow_up_resnet(arch, seed)
        theirs_state, our_state = model.state_dict(), ours.state_dict()
        same_keys = list(theirs_state) == list(our_state)
        worst = max(float((theirs_state[k].double() - our_state[k].double()).abs().max())
                    for k in theirs_state) if same_keys else float("inf")
        rows.append((f"ResNet-{depth} {kind}, seed {seed}, width {width}: state-dict keys and "
                     "order equal (0 = yes), initial weights max |theirs - ours|", worst, 0.0))
        with torch.no_grad():
            out, f, z = model.eval()(x), ours.eval().embed(x), ours(x)
        rows.append((f"ResNet-{depth} {kind}, width {width}: embedding and logits of one batch, "
                     "max |theirs - ours|", max(float((out["EMBS"] - f).abs().max()),
                                                float((out["LOGITS"] - z).abs().max())), 0.0))
    return rows


def schedule_check(epochs: int = 500, milestone: int = 20) -> list[tuple[str, float, float]]:
    """Their scheduler (utils/train.py's construction: ConstantLR over 20 epochs, handed over
    to the decay at `milestone`, 20 on the spirals and SUB, 3 on CIFAR-100) against
    EpochSchedule."""
    opt = torch.optim.Adam(torch.nn.Linear(1, 1).parameters(), lr=1e-3)
    first = torch.optim.lr_scheduler.ConstantLR(opt, factor=0.001, total_iters=20)
    second = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.995)
    scheduler = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[first, second],
                                                      milestones=[milestone])
    ours, worst = EpochSchedule(warmup_epochs=milestone), 0.0
    for epoch in range(epochs):
        worst = max(worst, _rel(1e-3 * ours.factor(epoch), opt.param_groups[0]["lr"]))
        opt.step()
        scheduler.step()
    return [(f"learning rate, epochs 0-{epochs - 1}, milestone {milestone}: theirs vs ours "
             "(relative)", worst, 1e-12)]


# The checks, each of their functions against ours on the same inputs: the spirals generator,
# their losses, d_logit^2, both d_rep (on their (pivot, subset) sample and over every pair), m_CCA,
# one training step of each loss (the same torch seed before each forward: the same dropout
# masks), the schedule, and their CIFAR-100 ResNets, at their width and at the run's where its
# models are narrower (`logit_distance.cifar100.width`). Where the run made SUB's features from
# images (logit_distance/sub/standin), their preprocessing runs on the same images and encoder.
def run(original: Path, results: Path, seed: int) -> list[tuple[str, float, float]]:
    theirs, stubbed = import_theirs(original)
    print(f"their modules from {original}; stand-ins: {stubbed}")
    base = results / "logit_distance" / "spirals"
    npz = base / "data" / "spirals.npz"
    data = load_spirals(npz)
    n_per_arm = (sum(len(v) for v in data.x.values())) // (4 * 7)
    rows = spirals_check(original, seed, n_per_arm)
    rows += schedule_check()
    rows += schedule_check(50, milestone=3)
    rows += resnet_check(theirs)
    teacher_dir = sorted((base / "teachers").glob("seed*"))[0]
    teacher = load_representations(teacher_dir / "embeddings_test.parquet",
                                   teacher_dir / "unembeddings.parquet")
    teacher_state = torch.load(teacher_dir / "model.pt", weights_only=True)
    arch = _arch(teacher_state)
    x = torch.as_tensor(data.x["train"][:512])
    y = torch.as_tensor(data.labels["train"][:512])
    teacher_model = FollowUpMLP(arch)
    teacher_model.load_state_dict(teacher_state)
    with torch.no_grad():
        teacher_logits = teacher_model.eval()(x)
    students = []
    for loss in ("kl", "l1", "l2", "labels"):
        found = sorted((base / "students" / loss).glob(f"teacher{teacher_dir.name[4:]}_seed*"))
        if not found:
            continue
        students += [load_representations(f / "embeddings_test.parquet",
                                          f / "unembeddings.parquet") for f in found]
        if loss == "kl":
            rows += measure_checks(theirs, teacher, students[-1])
        state = torch.load(found[0] / "model.pt", weights_only=True)
        rows += step_check(theirs, loss, arch, state, x, y, teacher_logits)
    for note in defect_notes(original, theirs, teacher, students):
        print(f"defect: {note}")
    if (results / "logit_distance" / "sub" / "standin").is_dir():
        rows += sub_check(original, results / "logit_distance" / "sub")
    cifar100 = results / "logit_distance" / "cifar100"
    if (cifar100 / "students").is_dir():
        width = resnet_width(torch.load(next((cifar100 / "teachers").glob("seed*/model.pt")),
                                        weights_only=True))
        if width != FULL_WIDTH:  # the run's narrower models: their code built at that width
            rows += resnet_check(theirs, width=width)
        rows += cifar100_checks(theirs, cifar100)
    return rows


class _Split:
    """A `datasets` split as their preprocessing reads it: its length, and a slice of rows as
    columns (images decoded by PIL, as `datasets` decodes them)."""

    def __init__(self, images: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        files = sorted(images.rglob("*.parquet"))
        self.table = pa.concat_tables([pq.read_table(f) for f in files]).to_pydict()

    def __len__(self) -> int:
        return len(self.table["bird_label"])

    def __getitem__(self, rows: slice) -> dict[str, list[Any]]:
        from PIL import Image

        out = {key: values[rows] for key, values in self.table.items()}
        out["image"] = [Image.open(io.BytesIO(cell["bytes"])) for cell in out["image"]]
        return out


def sub_check(folder: Path, sub: Path) -> list[tuple[str, float, float]]:
    """Their SUB preprocessing on the run's stand-in images and encoder, against our file."""
    import transformers

    from repdist.data.sub import load_sub_features

    standin = sub / "standin"
    with inside(folder):
        import dsets.preprocess_sub as theirs
    encoder = str(standin / "encoder")
    theirs.load_dataset = lambda name, *a, **k: {"test": _Split(standin / "images")}
    theirs.AutoModel = types.SimpleNamespace(
        from_pretrained=lambda name, **k: transformers.AutoModel.from_pretrained(encoder))
    theirs.AutoImageProcessor = types.SimpleNamespace(
        from_pretrained=lambda name, **k: transformers.AutoImageProcessor.from_pretrained(
            encoder))
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch), \
            contextlib.redirect_stdout(io.StringIO()):  # a line for every image
        os.makedirs("data")
        theirs.get_and_save_SUB_dino_embs()
        made = load_sub_features(Path(scratch) / "data" / "SUB_dinov2_embeddings.pt")
    ours = load_sub_features(sub / "data" / "sub_features.pt")
    scale = float(np.abs(ours[0]).max())
    return [("SUB features: their preprocessing on the stand-in images and encoder against "
             "ours (max |difference| / max |feature|)",
             float(np.abs(made[0] - ours[0]).max()) / scale, 1e-6),
            ("SUB features: their birds and attributes against ours (entries that differ)",
             float(sum(int((a != b).sum()) for a, b in zip(made[1:], ours[1:], strict=True))),
             0.0)]


def _arch(state: dict[str, torch.Tensor]) -> FollowUpArch:
    """The architecture of a saved model, from its weights' shapes."""
    depth = sum(1 for k in state if k.startswith("encoder.enc_block_") and k.endswith(".weight"))
    first, final = state["encoder.enc_block_1.weight"], state["encoder.enc_final.weight"]
    return FollowUpArch(in_dim=first.shape[1], hidden=first.shape[0], depth=depth,
                        rep_dim=final.shape[0], num_classes=state["linear.weight"].shape[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--original", type=Path, required=True,
                        help="a folder holding their code (logit-distance-bounds-rep-sim)")
    parser.add_argument("--results", type=Path, default=Path("results/quick"),
                        help="a run's output folder holding logit_distance/spirals")
    parser.add_argument("--seed", type=int, default=400,
                        help="the run's logit_distance.spirals.data.seed")
    args = parser.parse_args(argv)
    if not (args.original / "dissimilarities").is_dir():
        parser.error(f"{args.original}: no dissimilarities/ folder: not their code")
    if not (args.results / "logit_distance" / "spirals" / "students").is_dir():
        parser.error(f"{args.results}: no logit_distance/spirals/students: run `make quick` "
                     "(or the branch) first")
    rows = run(args.original.resolve(), args.results.resolve(), args.seed)
    failed = 0
    for what, value, tolerance in rows:
        ok = value <= tolerance
        failed += not ok
        print(f"{'ok ' if ok else 'FAIL'} {value:10.3g} (<= {tolerance:g})  {what}")
    print(f"{len(rows) - failed} of {len(rows)} within tolerance")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
