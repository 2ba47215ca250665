"""The follow-up's distillation experiment (Nielsen et al. 2026) as their code runs it: per
teacher, students trained on its logits by KL(teacher || student), by their L1 and L2 logit
losses, and on the labels alone (a baseline), each at several seeds."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...data.cifar100 import load_cifar100, to_unit
from ...data.spirals import SpiralsData, load_spirals
from ...data.sub import SubData, load_sub_features, split_sub
from ...io import provenance
from ...io.host import to_host
from ...measures.cca import mean_cca
from ...measures.logit_distance import (
    d_logit_squared,
    d_rep,
    kl_from_logits,
    logits,
    min_probability,
)
from ...models.extract import extract
from ...models.follow_up import (
    FollowUpArch,
    FollowUpMLP,
    FollowUpStack,
    StackedFollowUp,
    build_follow_up,
)
from ...models.follow_up_resnet import (
    FollowUpResNet,
    ResNetArch,
    build_follow_up_resnet,
    stack_resnets,
)
from ...training.distillation import FOLLOW_UP_LOSSES, follow_up_objective
from ...training.loop import RunOptions, TrainConfig, TrainData, train
from ...training.settings import EpochSchedule
from .tables import SNAPSHOT_COLUMNS
from ..outputs import SeedFiles, SeedRepresentations, write_seed

SPLITS = ("train", "test")
DATASETS = ("spirals", "sub", "cifar100")
Arch = FollowUpArch | ResNetArch


def build_model(arch: Arch, seed: int, imagenet: dict | None = None
                ) -> FollowUpMLP | FollowUpResNet:
    """One model as their code builds it after the seed: an MLP or a ResNet."""
    if isinstance(arch, ResNetArch):
        return build_follow_up_resnet(arch, seed, imagenet)
    if imagenet is not None:
        raise ValueError("ImageNet weights are for the CIFAR-100 ResNets")
    return build_follow_up(arch, seed)


def stack_models(models: Sequence[FollowUpMLP | FollowUpResNet]) -> FollowUpStack:
    """Models of one architecture as one stack (ResNets run one after another)."""
    if all(isinstance(m, FollowUpResNet) for m in models):
        return stack_resnets(models)
    return StackedFollowUp(models)


@dataclass(frozen=True)
class FollowUpTraining:
    """How one kind of model of a data set trains (config.yaml `logit_distance.<set>`), as
    their utils/train.py: Adam, batches reshuffled every epoch (the last one short), lr x 1e-3
    for 20 epochs then decayed by 0.995 an epoch (EpochSchedule), dropout 0.1 in the encoder."""

    epochs: int
    lr: float = 1e-3
    batch_size: int = 512
    schedule: EpochSchedule = field(default_factory=EpochSchedule)
    checkpoint_every_epochs: int = 25

    def steps_per_epoch(self, n_train: int) -> int:
        return math.ceil(n_train / self.batch_size)

    def config(self, n_train: int, data_seed: int, eval_every_epochs: int) -> TrainConfig:
        """The loop's settings: whole epochs of the clean protocol's seeded batch order."""
        per_epoch = self.steps_per_epoch(n_train)
        return TrainConfig(steps=self.epochs * per_epoch, batch_size=self.batch_size,
                           lr=self.lr, data_seed=data_seed, log_every=per_epoch,
                           eval_every=per_epoch * eval_every_epochs,
                           checkpoint_every=per_epoch * self.checkpoint_every_epochs,
                           protocol="clean")


def follow_up_training(settings: Mapping[str, Any], epochs: int) -> FollowUpTraining:
    """FollowUpTraining from a config `training` block and one kind of model's epochs."""
    schedule = EpochSchedule(settings["warmup_epochs"], settings["warmup_factor"],
                             settings["decay"])
    return FollowUpTraining(epochs, settings["lr"], settings["batch_size"], schedule,
                            settings["checkpoint_every_epochs"])


def follow_up_train_data(data: SpiralsData | SubData) -> TrainData:
    """The loop's data: train and test splits (codes unused); SUB's labels are its birds."""
    k = data.num_classes
    return TrainData(data.x["train"], data.labels["train"], data.x["test"], data.labels["test"],
                     np.zeros((k, 1), dtype=np.float32))


def cifar100_train_data(path: str | Path) -> TrainData:
    """CIFAR-100 (a cifar-100-python folder, or a file in it): pixels in [0, 1] as their
    ToTensor() leaves them, the fine labels."""
    folder = Path(path)
    data = load_cifar100(folder if folder.is_dir() else folder.parent)
    return TrainData(to_unit(data.train_images), data.train_labels, to_unit(data.test_images),
                     data.test_labels, np.zeros((len(data.class_names), 1), dtype=np.float32))


@dataclass(frozen=True)
class JobData:
    """A training job's data: the loop's, each model's concept probe (SUB's attributes; None on
    the spirals) and the training inputs' concepts (SUB's concept-bottleneck teachers' targets)."""

    data: TrainData
    probe: Probe | None = None
    concepts: np.ndarray | None = None


def job_data(dataset: str, path: str | Path, num_classes: int,
             probe_seed: int | None = 42) -> JobData:
    """A job's data set (spirals: their npz; sub: their features file; cifar100: a
    cifar-100-python folder); `probe_seed` seeds SUB's concept probe."""
    if dataset == "spirals":
        return JobData(follow_up_train_data(load_spirals(path, num_classes)))
    if dataset == "cifar100":
        return JobData(cifar100_train_data(path))
    if dataset != "sub":
        raise ValueError(f"unknown data set {dataset!r}: one of {DATASETS}")
    if probe_seed is None:
        raise ValueError("SUB's concept probe needs its seed (logit_distance.sub.probe_seed)")
    sub = split_sub(*load_sub_features(path))
    probe = partial(concept_probe, concepts=sub.concepts["test"], seed=probe_seed)
    return JobData(follow_up_train_data(sub), probe, sub.concepts["train"])


def write_sub_features(path: str | Path,
                       batches: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
                       info: Mapping[str, Any]) -> int:
    """SUB's features file as their dsets/preprocess_sub.py writes it, from batches of (CLS
    features, birds, attributes), with `info`'s keys, written atomically; returns N."""
    from ...io import atomic_path

    parts = list(batches)
    if not parts:
        raise ValueError(f"{path}: no images to extract features from")
    x, birds, attributes = (np.concatenate(column) for column in zip(*parts, strict=True))
    data = {"embeddings": torch.as_tensor(x, dtype=torch.float32),
            "labels": torch.as_tensor(birds), "attributes": torch.as_tensor(attributes),
            **info}
    with atomic_path(path) as tmp:
        torch.save(data, tmp)
    return len(x)


def concept_probe(f: np.ndarray, concepts: np.ndarray, seed: int = 42) -> dict[str, float]:
    """Their fit_linear_probe_concepts (evaluation/sub_evaluate.py): logistic regression fitted
    on half the inputs (stratified by concept unless one occurs once, which theirs cannot split),
    scored on the other: accuracy, macro F1, log-loss (their NLL takes probabilities for logits)."""
    import warnings

    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import train_test_split

    strata = None if (np.bincount(concepts) == 1).any() else concepts
    f_fit, f_held, c_fit, c_held = train_test_split(f, concepts, test_size=0.5,
                                                    random_state=seed, stratify=strata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs' iteration note on unscaled features
        clf = LogisticRegression().fit(f_fit, c_fit)
    predicted = clf.predict(f_held)
    proba = np.zeros((len(f_held), int(concepts.max()) + 1))
    proba[:, clf.classes_] = clf.predict_proba(f_held)  # a concept never fitted: probability 0
    true = np.clip(proba[np.arange(len(c_held)), c_held], 1e-15, None)
    return {"concept_probe_accuracy": float(accuracy_score(c_held, predicted)),
            "concept_probe_f1": float(f1_score(c_held, predicted, average="macro")),
            "concept_probe_nll": float(-np.mean(np.log(true)))}


def _run(stack: FollowUpStack, data: TrainData, training: FollowUpTraining,
         data_seed: int, eval_every_epochs: int, options: RunOptions) -> dict[str, Any]:
    cfg = training.config(len(data.train_x), data_seed, eval_every_epochs)
    per_epoch = training.steps_per_epoch(len(data.train_x))
    identity = {**(options.identity or {}), "schedule": asdict(training.schedule)}
    _, finals = train(stack, data, cfg, replace(
        options, identity=identity, lr_factor=training.schedule.per_step(per_epoch)))
    return finals


Probe = Callable[[np.ndarray], dict[str, float]]  # a model's test f -> its concept probe


# A job trains every model of its kind as one stack sharing one batch order: a data set's
# teachers, or all its students (teacher x loss x seed). Student (t, loss, s) starts from their
# initialisation for seed s.
@dataclass(frozen=True)
class TeacherRun:
    """One teachers job; `imagenet` the ResNet-50's ImageNet weights (None: from scratch);
    `in_order`: batches in the data's order every epoch (CIFAR-100's teacher loader)."""

    arch: Arch
    seeds: Sequence[int]
    training: FollowUpTraining
    probe: Probe | None = None
    imagenet: dict | None = None
    in_order: bool = False


def train_teachers(run: TeacherRun, data: TrainData, files: Sequence[SeedFiles],
                   meta: Mapping[str, Any], options: RunOptions) -> None:
    """Train the teachers as one stack (cross entropy or options.objective); write each."""
    stack = stack_models([build_model(run.arch, s, run.imagenet) for s in run.seeds])
    identity = {"arch": asdict(run.arch), "seeds": list(run.seeds),
                **({"imagenet": True} if run.imagenet is not None else {})}
    finals = _run(stack, data, run.training, int(run.seeds[0]), run.training.epochs,
                  replace(options, identity=identity, in_order=run.in_order))
    members = [{"role": "teacher", "seed": int(s)} for s in run.seeds]
    _write_models(stack, data, list(zip(members, files, strict=True)), finals, meta, run.probe,
                  options.eval_batch_size)


def _write_models(stack: FollowUpStack, data: TrainData,
                  outputs: Sequence[tuple[dict, SeedFiles]], finals: Mapping[str, Any],
                  meta: Mapping[str, Any], probe: Probe | None = None,
                  batch_size: int | None = None) -> None:
    """Write each model (`outputs`: metadata and files): f on both splits, g, metrics, weights."""
    f_train, g = extract(stack, data.train_x, data.codes, batch_size)
    f_test, _ = extract(stack, data.test_x, data.codes, batch_size)
    stack.cpu()
    for i, (member, out) in enumerate(outputs):
        reps = SeedRepresentations(g[i], {"train": f_train[i], "test": f_test[i]},
                                   {"train": data.train_labels, "test": data.test_labels})
        metrics = {"final_test_loss_eval": finals["test_loss_eval"][i],
                   "test_accuracy": finals["test_accuracy"][i],
                   "steps_total": finals["steps_total"], "wall_time_s": finals["wall_time_s"],
                   **(probe(f_test[i]) if probe is not None else {})}
        write_seed(out, reps, {**meta, **member, "M": stack.arch.rep_dim,
                               "K": stack.arch.num_classes}, metrics, stack.state_dict_of(i))


@dataclass(frozen=True)
class Student:
    teacher: int  # index of its teacher among the teachers
    teacher_seed: int
    loss: str
    seed: int


def students_of(teacher_seeds: Sequence[int], losses: Sequence[str],
                seeds: Sequence[int]) -> list[Student]:
    """Every student, teacher-major, then loss, then seed: the stack's order."""
    unknown = sorted(set(losses) - set(FOLLOW_UP_LOSSES))
    if unknown:
        raise ValueError(f"unknown losses {unknown}; one of {FOLLOW_UP_LOSSES}")
    return [Student(t, int(ts), loss, int(s)) for t, ts in enumerate(teacher_seeds)
            for loss in losses for s in seeds]


def student_arch(arch: Arch, loss: str) -> Arch:
    """`arch` with an Xavier-initialised head for a distilled student (their KLDistill,
    LogitDistill); an MLP student has no concept probe."""
    if isinstance(arch, ResNetArch):
        return replace(arch, xavier_head=loss != "labels")
    return replace(arch, xavier_head=loss != "labels", concepts=0)


@dataclass(frozen=True)
class Teachers:
    """The teachers' f and logits per split, and g (float64)."""

    f: dict[str, np.ndarray]  # split -> (T, N, M)
    g: np.ndarray  # (T, K, M)
    z: dict[str, np.ndarray]  # split -> (T, N, K)


def teachers_from(stack: FollowUpStack, data: TrainData,
                  batch_size: int | None = None) -> Teachers:
    f = {"train": extract(stack, data.train_x, data.codes, batch_size)[0],
         "test": extract(stack, data.test_x, data.codes, batch_size)[0]}
    g = to_host(stack.head.detach(), np.float64)
    z = {split: np.einsum("tnm,tkm->tnk", f[split], g) for split in SPLITS}
    return Teachers(f, g, z)


def pair_metrics(teacher_f: np.ndarray, teacher_g: np.ndarray, f: np.ndarray, g: np.ndarray,
                 labels: np.ndarray, d_rep_subsets: int) -> dict[str, float]:
    """A student (f, g) against its teacher on one split's inputs (SNAPSHOT_COLUMNS)."""
    zt, zs = logits(teacher_f, teacher_g), logits(f, g)
    m = f.shape[1]
    return {"kl": kl_from_logits(zt, zs), "d_logit2": d_logit_squared(zs, zt),
            "mcca": mean_cca(teacher_f, f), "mcca_sklearn": sklearn_mcca(teacher_f, f, m),
            "d_rep": d_rep(f, g, teacher_f, teacher_g, d_rep_subsets).value,
            "tau_teacher": min_probability(zt), "tau_student": min_probability(zs),
            "accuracy": float(np.mean(zs.argmax(1) == labels)),
            "agreement": float(np.mean(zs.argmax(1) == zt.argmax(1))),
            "teacher_accuracy": float(np.mean(zt.argmax(1) == labels))}


class StudentSnapshots:
    """Every `every` epochs, each student against its teacher on both splits (pair_metrics;
    their evaluate_train_test). Resumable: the rows travel with the run's checkpoint."""

    def __init__(self, stack: FollowUpStack, data: TrainData, teachers: Teachers,
                 run: StudentRun, per_epoch: int, batch_size: int | None = None) -> None:
        self.stack, self.data, self.teachers, self.students = stack, data, teachers, run.students
        self.per_epoch, self.every = per_epoch, run.eval_every_epochs
        self.d_rep_subsets, self.batch_size = run.d_rep_subsets, batch_size
        self.rows: list[dict[str, Any]] = []

    def __call__(self, done: int) -> None:
        if done == 0 or done % (self.per_epoch * self.every):
            return
        epoch = done // self.per_epoch
        for split, x, labels in (("train", self.data.train_x, self.data.train_labels),
                                 ("test", self.data.test_x, self.data.test_labels)):
            f_all, g_all = extract(self.stack, x, self.data.codes, self.batch_size)
            for i, st in enumerate(self.students):
                metrics = pair_metrics(self.teachers.f[split][st.teacher],
                                       self.teachers.g[st.teacher], f_all[i], g_all[i], labels,
                                       self.d_rep_subsets)
                self.rows.append({"teacher_seed": st.teacher_seed, "loss": st.loss,
                                  "seed": st.seed, "epoch": epoch, "split": split, **metrics})

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=SNAPSHOT_COLUMNS)

    def state_dict(self) -> dict[str, Any]:
        return {"rows": list(self.rows)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rows = list(state["rows"])


def load_teachers(arch: Arch, paths: Sequence[str | Path]) -> FollowUpStack:
    """The teachers from their model.pt files (their keys), as one stack in eval mode."""
    models = []
    for path in paths:
        model = build_model(arch, 0)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        models.append(model)
    return stack_models(models).eval()


@torch.no_grad()
def teacher_targets(teachers: FollowUpStack, x: np.ndarray, rows: Sequence[int],
                    batch_size: int | None, device: str | torch.device) -> torch.Tensor:
    """(len(rows), N, K): teacher rows[s]'s logits as their distill_knowledge_to_dataset."""
    step = batch_size or len(x)
    parts = [teachers.logits(torch.as_tensor(x[i:i + step]).to(device))
             for i in range(0, len(x), step)]
    return torch.cat(parts, dim=1)[list(rows)].contiguous()


@dataclass(frozen=True)
class StudentRun:
    """One students job: every student (teacher-major) and how they train and are measured;
    `teacher_arch` None: the students' (CIFAR-100: ResNet-50 teachers, ResNet-18 students)."""

    arch: Arch
    students: Sequence[Student]
    training: FollowUpTraining
    eval_every_epochs: int
    d_rep_subsets: int
    probe: Probe | None = None
    teacher_arch: Arch | None = None


def train_students(run: StudentRun, teacher_paths: Sequence[str | Path], data: TrainData,
                   files: Sequence[SeedFiles], meta: Mapping[str, Any],
                   options: RunOptions) -> pd.DataFrame:
    """Train the students as one stack on their teachers' logits; write each; return snapshots."""
    students, training, batch = run.students, run.training, options.eval_batch_size
    teachers_stack = load_teachers(run.teacher_arch or run.arch, teacher_paths).to(options.device)
    teachers = teachers_from(teachers_stack, data, batch)
    targets = teacher_targets(teachers_stack, data.train_x, [s.teacher for s in students],
                              batch, options.device)
    del teachers_stack
    stack = stack_models([build_model(student_arch(run.arch, s.loss), s.seed)
                          for s in students])
    per_epoch = training.steps_per_epoch(len(data.train_x))
    snapshots = StudentSnapshots(stack, data, teachers, run, per_epoch, batch)
    identity = {"arch": asdict(run.arch), "students": [asdict(s) for s in students],
                **({"teacher_arch": asdict(run.teacher_arch)} if run.teacher_arch else {})}
    finals = _run(stack, data, training, students[0].seed, run.eval_every_epochs, replace(
        options, identity=identity, on_step=snapshots,
        resumables={**options.resumables, "snapshots": snapshots},
        objective=follow_up_objective([s.loss for s in students], targets)))
    members = [{"role": "student", "teacher_seed": s.teacher_seed, "loss": s.loss,
                "seed": s.seed} for s in students]
    _write_models(stack, data, list(zip(members, files, strict=True)), finals, meta, run.probe,
                  batch)
    return snapshots.table()


def snapshots_metadata(arch: Arch, training: FollowUpTraining,
                       run_config: Mapping[str, Any]) -> dict[str, Any]:
    return {"experiment": "logit_distance", "arch": asdict(arch),
            "training": {**asdict(training), "schedule": asdict(training.schedule)},
            **provenance(run_config)}


def sklearn_mcca(x: np.ndarray, y: np.ndarray, n_components: int) -> float:
    """Their m_CCA (dissimilarities/mean_cca.py): scikit-learn's CCA (NIPALS, max_iter 1000)
    fitted in-sample, the mean Pearson correlation of its matched components."""
    import warnings

    from sklearn.cross_decomposition import CCA

    cca = CCA(n_components=n_components, max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn's convergence notes on toy data
        u, v = cca.fit(x, y).transform(x, y)
    return float(np.mean([np.corrcoef(u[:, k], v[:, k])[0, 1] for k in range(n_components)]))
