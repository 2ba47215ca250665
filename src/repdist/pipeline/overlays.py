"""Branches that follow an overlay: a user who narrows the synthetic grid (fewer class counts,
widths or seeds) or shortens training should not have to switch off the branches built on it.
Each branch's rule is at the function that applies it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OUTDIR_PLACEHOLDER = "{outdir}"

Config = dict[str, Any]


def adapt_to_overlays(config: Config) -> list[str]:
    """Fit the dependent branches to the synthetic grid and training of `config`, in place,
    before the config checks; one line per change for the log."""
    notes = (_width_figures(config) + _authors(config) + _dynamics(config)
             + _distillation(config) + _roeder(config))
    _models_under_outdir(config)
    return notes


def _unnormalised_widths(syn: Mapping[str, Any]) -> list[int]:
    return next((list(v["widths"]) for v in syn["variants"]
                 if (v["fix_g"], v["fix_f"]) == (0, 0)), [])


def _kept(values: list[Any], allowed: Any) -> list[Any]:
    return [v for v in values if v in allowed]


# Width figures: class counts the run does not train leave their figure groups.
def _width_figures(config: Config) -> list[str]:
    syn = config["synthetic"]
    groups = [kept for group in syn["width_figures"]
              if (kept := _kept(group, syn["class_counts"]))]
    if groups == syn["width_figures"] or not groups:
        return []  # nothing to adapt, or nothing left: the config check names the key
    old, syn["width_figures"] = syn["width_figures"], groups
    return [f"synthetic.width_figures: {groups} (was {old}), the class counts this run trains"]


# The authors' models: compared on the part of their grid that the run trains; off when none is.
def _authors(config: Config) -> list[str]:
    aut, syn = config["authors_models"], config["synthetic"]
    if aut["enabled"] is False:
        return []
    grid = {"class_counts": _kept(aut["class_counts"], syn["class_counts"]),
            "widths": _kept(aut["widths"], _unnormalised_widths(syn)),
            "seeds": _kept(aut["seeds"], range(syn["n_seeds"]))}
    changed = {key: (aut[key], kept) for key, kept in grid.items() if kept != aut[key]}
    if not changed:
        return []
    if not all(grid.values()):
        empty = [key for key, kept in grid.items() if not kept]
        aut["enabled"] = False
        return [f"authors_models: off, this run trains none of their {', '.join(empty)} "
                f"({'; '.join(f'{k} {old}' for k, (old, _) in changed.items())})"]
    aut.update(grid)
    notes = [f"authors_models.{key}: {new} of their {old}, the part this run trains"
             for key, (old, new) in changed.items()]
    if aut["min_seeds"] > len(grid["seeds"]):
        notes.append(f"authors_models.min_seeds: {len(grid['seeds'])} (was {aut['min_seeds']})")
        aut["min_seeds"] = len(grid["seeds"])
    return notes


# Training dynamics: snapshots after the last step are dropped.
def _dynamics(config: Config) -> list[str]:
    dyn, steps = config["dynamics"], config["synthetic"]["training"]["steps"]
    kept = [s for s in dyn["snapshots"] if s <= steps]
    if kept == dyn["snapshots"]:
        return []
    if len(kept) < 2:
        kept = sorted(set(kept) | {0, steps})
    dropped = [s for s in dyn["snapshots"] if s not in kept]
    dyn["snapshots"] = kept
    return [f"dynamics.snapshots: {dropped} dropped, after the last of the {steps} training "
            f"steps (synthetic.training.steps); {kept} kept"]


# Distillation: teacher seeds the run does not train are dropped; off when none is left.
def _distillation(config: Config) -> list[str]:
    dist, n_seeds = config["distillation"], config["synthetic"]["n_seeds"]
    if not dist["enabled"]:
        return []
    kept = _kept(dist["teacher_seeds"], range(n_seeds))
    if kept == dist["teacher_seeds"]:
        return []
    old, dist["teacher_seeds"] = dist["teacher_seeds"], kept
    if not kept:
        dist["enabled"] = False
        return [f"distillation: off, none of the teacher seeds {old} is trained "
                f"(synthetic.n_seeds = {n_seeds})"]
    return [f"distillation.teacher_seeds: {kept} of {old} (synthetic.n_seeds = {n_seeds})"]


NEURIPS_FIT = (18, 64)  # (K, width) of the NeurIPS models drawn as Roeder's Fig. 2c


def neurips_fit_trained(config: Config) -> bool:
    """Whether the run trains NEURIPS_FIT's unnormalised models at both roeder.fit_seeds."""
    syn, (k, width) = config["synthetic"], NEURIPS_FIT
    return (k in syn["class_counts"] and width in _unnormalised_widths(syn)
            and max(config["roeder"]["fit_seeds"]) < syn["n_seeds"])


# Roeder's Fig. 2c on the NeurIPS models: left out when the run does not train them.
def _roeder(config: Config) -> list[str]:
    if not config["roeder"]["enabled"] or neurips_fit_trained(config):
        return []
    k, width = NEURIPS_FIT
    return [f"roeder: Fig. 2c of the NeurIPS models left out, this run does not train K = {k}, "
            f"width {width}, seeds {config['roeder']['fit_seeds']}"]


# `models:` groups: a path starting with `{outdir}/` is under the run's output folder.
def _models_under_outdir(config: Config) -> None:
    prefix = OUTDIR_PLACEHOLDER + "/"
    outdir = str(config["outdir"]).rstrip("/")
    for group, entries in (config.get("models") or {}).items():
        config["models"][group] = [
            f"{outdir}/{e[len(prefix):]}" if isinstance(e, str) and e.startswith(prefix) else e
            for e in entries]
