"""The Platonic Representation Hypothesis' study (Huh et al. 2024, Fig. 3) from config to table:
each model's every-layer features on the image-caption pairs, written once (resumably), and
every language model beside every vision model, their metric maximised over layer pairs, raw
and beside the null of the maximum, with Benjamini-Hochberg over the matrix.

A model's folder: `features.npy` (N x L x D float32, every layer), `bpb.npy` (a language
model's bits per byte per caption) and `info.json` (what it is and how it was read, with the
provenance). While it is extracted, its batches gather in `<folder>.parts/`, which a rerun of
the same settings resumes from; the folder appears whole at the end."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...io import atomic_folder, atomic_path, config_hash, write_json
from ...io.validation import InputError, real_array
from ...measures.null import NullSettings, benjamini_hochberg
from ...measures.prh import PRH_K, PRH_OUTLIER_QUANTILE
from ...measures.prh_layers import METRICS, ModelLayers, layer_alignment, prepare_layers

FEATURES, BPB, INFO = "features.npy", "bpb.npy", "info.json"
MODALITIES = ("language", "vision")
FAMILY_ORDER = ("vit", "vit_mae", "mae", "dinov2", "clip")  # the figure's panels, then the rest


@dataclass(frozen=True)
class StudySettings:
    """The alignment's settings (config `prh`): metric, k, the outlier clamp's quantile and
    exactness, and whether each model's layers concatenated count as one more layer."""

    metric: str = "mutual_knn"
    k: int = PRH_K
    outlier_quantile: float = PRH_OUTLIER_QUANTILE
    exact_quantile: bool = False
    concatenated: bool = True

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"prh.metric must be one of {', '.join(METRICS)}, "
                             f"got {self.metric!r}")


def _resume(parts: Path, settings: Mapping[str, Any]) -> list[Path]:
    """The part files of an interrupted run of these settings, in row order (others removed)."""
    stamp = parts / "settings.json"
    digest = config_hash(settings)
    if parts.is_dir() and (not stamp.is_file() or json.loads(stamp.read_text()) != digest):
        shutil.rmtree(parts)
    parts.mkdir(parents=True, exist_ok=True)
    if not stamp.is_file():
        write_json(stamp, digest)
    return sorted(parts.glob("rows*.npz"))


def extract_to_folder(folder: str | Path, batches: Any, n: int, info: Mapping[str, Any],
                      settings: Mapping[str, Any]) -> dict[str, Any]:
    """Run `batches(start)` (an iterator of (rows, features[, bpb]) from row `start`), each batch
    kept in `<folder>.parts/`, then write the folder whole and drop the parts; return its info."""
    folder = Path(folder)
    parts = folder.with_name(folder.name + ".parts")
    done = _resume(parts, settings)
    start = int(done[-1].stem.split("-")[1]) if done else 0
    for out in batches(start):
        rows = out[0]
        with atomic_path(parts / f"rows{rows.start:08d}-{rows.stop:08d}.npz") as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, *out[1:])
    batches = []  # each batch's arrays: features, then bits per byte where there are
    for path in sorted(parts.glob("rows*.npz")):
        with np.load(path) as part:
            batches.append([part[name] for name in part.files])
    features = np.concatenate([arrays[0] for arrays in batches])
    if len(features) != n:
        raise RuntimeError(f"{folder}: {len(features)} rows extracted, {n} expected")
    written = {**info, "inputs": n, "layers": int(features.shape[1]),
               "dim": int(features.shape[2]), "resumed_from_row": start}
    with atomic_folder(folder) as tmp:
        np.save(tmp / FEATURES, features)
        if len(batches[0]) > 1:
            bpb = np.concatenate([arrays[1] for arrays in batches])
            np.save(tmp / BPB, bpb)
            written["bits_per_byte"] = float(bpb.mean())
        write_json(tmp / INFO, written)
    shutil.rmtree(parts)
    return written


@dataclass(frozen=True)
class StudyModel:
    """One model's features (N x L x D, memory-mapped) and info."""

    name: str
    features: np.ndarray
    info: Mapping[str, Any]

    @property
    def modality(self) -> str:
        return str(self.info["modality"])


def read_study_model(name: str, folder: str | Path) -> StudyModel:
    """One model's features, checked against what its extraction recorded: real numbers of
    shape inputs x layers x dim (rows in the data set's order, as extract_to_folder wrote)."""
    folder = Path(folder)
    info = json.loads((folder / INFO).read_text())
    features = real_array(np.load(folder / FEATURES, mmap_mode="r"), str(folder / FEATURES))
    recorded = tuple(info.get(key) for key in ("inputs", "layers", "dim"))
    if tuple(features.shape) != recorded:
        raise InputError(f"{folder / FEATURES}: features of shape {tuple(features.shape)}, but "
                         f"{INFO} records inputs x layers x dim = {recorded}: extract the "
                         "model again")
    return StudyModel(name, features, info)


def prepared(model: StudyModel, settings: StudySettings) -> ModelLayers:
    feats = model.features
    return prepare_layers([feats[:, i] for i in range(feats.shape[1])], settings.outlier_quantile,
                          settings.exact_quantile, settings.concatenated)


def _layer_name(index: int, count: int, concatenated: bool) -> str:
    return "all" if concatenated and index == count else str(index)


def study_table(language: Sequence[StudyModel], vision: Sequence[StudyModel],
                settings: StudySettings, null: NullSettings | None = None,
                progress: Any = None) -> pd.DataFrame:
    """One row per (language, vision) model: the best layer pair's score (vision x, language
    y, as their compute_score is called), its layers ('all': the concatenation), the null's
    tau, p and calibrated score, and q, Benjamini-Hochberg over the matrix."""
    sizes = {len(m.features) for m in [*language, *vision]}
    if len(sizes) != 1:
        raise ValueError("the models saw different numbers of pairs: " + ", ".join(
            f"{m.name} {len(m.features)}" for m in [*language, *vision]))
    rows = []
    vision_layers = {m.name: prepared(m, settings) for m in vision}
    for lm in language:
        y = prepared(lm, settings)
        for vm in vision:
            x = vision_layers[vm.name]
            found = layer_alignment(x, y, settings.metric, settings.k, null)
            concat = settings.concatenated
            rows.append({
                "language": lm.name, "vision": vm.name, "family": vm.info.get("family", ""),
                "vision_parameters": vm.info.get("parameters"),
                "language_parameters": lm.info.get("parameters"),
                "bits_per_byte": lm.info.get("bits_per_byte"),
                "performance": 1 - lm.info.get("bits_per_byte", np.nan),
                "metric": settings.metric, "score": found.score,
                "language_layer": _layer_name(found.best[1], len(y) - concat, concat),
                "vision_layer": _layer_name(found.best[0], len(x) - concat, concat),
                "tau": found.tau, "p": found.p, "calibrated": found.calibrated,
                "permutations": found.permutations})
            if progress is not None:
                progress(len(rows), len(language) * len(vision))
    table = pd.DataFrame(rows)
    table["q"] = benjamini_hochberg(table["p"].to_numpy())
    table["significant"] = table["q"] <= (null.alpha if null else np.nan)
    return table


def family_order(families: Sequence[str]) -> list[str]:
    """The vision families in the figure's order (FAMILY_ORDER, then the rest by name)."""
    seen = list(dict.fromkeys(families))
    return sorted(seen, key=lambda f: (FAMILY_ORDER.index(f) if f in FAMILY_ORDER
                                       else len(FAMILY_ORDER), f))


def trend_rows(table: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """PRH's claim per vision family, raw and calibrated: Spearman's rho, over the language
    models, of the family's mean alignment against their performance (1 - bits per byte)."""
    from scipy.stats import spearmanr

    for family in family_order(table["family"].tolist()):
        part = table[table["family"] == family]
        for column in ("score", "calibrated"):
            means = part.groupby("language").agg(performance=("performance", "first"),
                                                 value=(column, "mean"))
            ok = means.dropna()
            varied = len(ok) >= 3 and ok["performance"].nunique() > 1 and ok["value"].nunique() > 1
            rho = float(spearmanr(ok["performance"], ok["value"])[0]) if varied else float("nan")
            yield {"family": family, "column": column, "language_models": len(ok), "rho": rho}
