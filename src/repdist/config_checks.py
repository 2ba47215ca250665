"""Checks across configuration keys that a JSON schema cannot express.

Run by the Snakefile right after schema validation, so an impossible combination stops the
workflow before any job starts, with a message that names the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

REP_DIM_CONSTRUCTED = 2  # the hand-built models live in 2-D


class ConfigError(ValueError):
    """A configuration value that cannot work; the message names the key."""


def _need(condition: bool, key: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"config key '{key}': {message}")


def check_config(config: Mapping[str, Any]) -> None:
    """Raise ConfigError naming the first impossible key combination."""
    m = REP_DIM_CONSTRUCTED
    kl = config["kl_table"]
    k = kl["num_classes"]
    _need(
        sorted(kl["permutation"]) == list(range(k)),
        "kl_table.permutation",
        f"must be a permutation of 0..{k - 1} (kl_table.num_classes = {k}), got {kl['permutation']}",
    )
    _need(
        k - 2 >= m,
        "kl_table.num_classes",
        f"d_SVD needs K-2 >= M = {m} labels, got K = {k}",
    )
    _need(
        kl["num_samples"] * (m + 1) <= k * kl["n_per_class"],
        "kl_table.num_samples",
        f"num_samples*(M+1) = {kl['num_samples'] * (m + 1)} exceeds the "
        f"{k * kl['n_per_class']} inputs (num_classes x n_per_class)",
    )
    con = config["constructed"]
    counts = [c["num_classes"] for c in con["classifiers"]]
    _need(
        len(set(counts)) == len(counts),
        "constructed.classifiers",
        f"each num_classes may appear once, got {counts}",
    )
    smallest = min(counts)
    _need(
        con["num_samples"] * (m + 1) <= smallest * con["n_per_class"],
        "constructed.num_samples",
        f"num_samples*(M+1) = {con['num_samples'] * (m + 1)} exceeds the "
        f"{smallest * con['n_per_class']} inputs of the {smallest}-class model",
    )

    syn = config["synthetic"]
    m_syn = syn["rep_dim"]
    for k in syn["class_counts"]:
        _need(
            k - 2 >= m_syn,
            "synthetic.class_counts",
            f"d_SVD needs K-2 >= M = {m_syn} labels (synthetic.rep_dim), got K = {k}",
        )
    need_inputs = config["measures"]["num_samples"] * (m_syn + 1)
    _need(
        need_inputs <= syn["n_test"],
        "measures.num_samples",
        f"num_samples*(M+1) = {need_inputs} exceeds the {syn['n_test']} test inputs "
        f"(synthetic.n_test)",
    )
    pairs = [(v["fix_g"], v["fix_f"]) for v in syn["variants"]]
    _need(
        len(set(pairs)) == len(pairs),
        "synthetic.variants",
        f"each (fix_g, fix_f) may appear once, got {pairs}",
    )
    _need(
        (0, 0) in pairs,
        "synthetic.variants",
        "the width figures need the unnormalised variant fix_g = fix_f = 0",
    )
    for group in syn["width_figures"]:
        missing = sorted(set(group) - set(syn["class_counts"]))
        _need(
            not missing,
            "synthetic.width_figures",
            f"class counts {missing} are not in synthetic.class_counts",
        )
    _need(
        syn["min_seeds"] <= syn["n_seeds"],
        "synthetic.min_seeds",
        f"{syn['min_seeds']} exceeds synthetic.n_seeds = {syn['n_seeds']}: no width could qualify",
    )

    cif = config["cifar10"]
    if cif["enabled"]:
        for m_c in cif["rep_dims"]:
            _need(
                10 - 2 >= m_c,
                "cifar10.rep_dims",
                f"d_SVD needs K-2 = 8 >= M labels, got M = {m_c}",
            )
        _need(
            max(cif["comparison_seeds"]) < cif["n_seeds"] and len(set(cif["comparison_seeds"])) == 2,
            "cifar10.comparison_seeds",
            f"need two different seeds below cifar10.n_seeds = {cif['n_seeds']}",
        )
        n_test = cif["standin_test"] if cif["standin"] else 10_000
        need = config["measures"]["num_samples"] * (max(cif["rep_dims"]) + 1)
        _need(
            need <= n_test,
            "measures.num_samples",
            f"num_samples*(M+1) = {need} exceeds the {n_test} CIFAR test images"
            + (" (cifar10.standin_test)" if cif["standin"] else ""),
        )
        if cif["root"] and not cif["standin"]:
            from .data.cifar10 import missing_files

            missing = missing_files(cif["root"])
            _need(
                not missing,
                "cifar10.root",
                f"{cif['root']} lacks {', '.join(missing)}: point it at a complete "
                "cifar-10-batches-py folder, or set it to null to download",
            )

    if cif["enabled"] and cif["seeds_per_job"] != "auto":
        _need(
            cif["seeds_per_job"] in (1, cif["n_seeds"]),
            "cifar10.seeds_per_job",
            f"must be auto, 1 or cifar10.n_seeds = {cif['n_seeds']} (one job per seed or all "
            f"seeds of an M in one job), got {cif['seeds_per_job']}",
        )

    aut = config["authors_models"]
    if aut["enabled"] is not False:
        unnormalised = next(v["widths"] for v in syn["variants"] if (v["fix_g"], v["fix_f"]) == (0, 0))
        _need(
            set(aut["class_counts"]) <= set(syn["class_counts"]),
            "authors_models.class_counts",
            f"{sorted(set(aut['class_counts']) - set(syn['class_counts']))} are not in "
            "synthetic.class_counts: our models of those classes are needed beside theirs",
        )
        _need(
            set(aut["widths"]) <= set(unnormalised),
            "authors_models.widths",
            f"{sorted(set(aut['widths']) - set(unnormalised))} are not widths of the synthetic "
            "variant (fix_g, fix_f) = (0, 0): our models of those widths are needed",
        )
        _need(
            max(aut["seeds"]) < syn["n_seeds"],
            "authors_models.seeds",
            f"seed {max(aut['seeds'])} is not trained here (synthetic.n_seeds = {syn['n_seeds']})",
        )
        _need(
            aut["min_seeds"] <= len(aut["seeds"]),
            "authors_models.min_seeds",
            f"{aut['min_seeds']} exceeds the {len(aut['seeds'])} authors' seeds compared",
        )

    beyond = config["bound_beyond_m2"]
    if beyond["enabled"]:
        for c in beyond["configurations"]:
            for k in c["class_counts"]:
                _need(
                    k - 2 >= c["rep_dim"],
                    "bound_beyond_m2.configurations",
                    f"d_SVD needs K-2 >= M labels, got K = {k} with M = {c['rep_dim']}",
                )
            need = config["measures"]["num_samples"] * (c["rep_dim"] + 1)
            _need(
                need <= syn["n_test"],
                "bound_beyond_m2.configurations",
                f"num_samples*(M+1) = {need} exceeds the {syn['n_test']} test inputs at "
                f"M = {c['rep_dim']} (synthetic.n_test)",
            )

    dyn = config["dynamics"]
    _need(
        max(dyn["snapshots"]) <= syn["training"]["steps"],
        "dynamics.snapshots",
        f"a snapshot after step {max(dyn['snapshots'])} never happens: training runs "
        f"{syn['training']['steps']} steps (synthetic.training.steps)",
    )
    _need(
        dyn["num_classes"] - 2 >= m_syn,
        "dynamics.num_classes",
        f"d_SVD needs K-2 >= M = {m_syn} labels, got K = {dyn['num_classes']}",
    )


def check_cifar_available(
    config: Mapping[str, Any], probe: Callable[[str], str | None] | None = None
) -> None:
    """Raise ConfigError when the CIFAR-10 branch would need a download that cannot happen.

    Called once the DAG is known to contain the download job (the Snakefile's `onstart`), so
    offline runs of other targets, dry runs, lint and reports are not blocked.
    """
    from .data.cifar10 import ARCHIVE, FOLDER, download_unreachable, missing_files

    cif = config["cifar10"]
    if not cif["enabled"] or cif["standin"] or cif["root"]:
        return
    resources = Path(cif["resources"])
    if not missing_files(resources / FOLDER) or (resources / ARCHIVE).exists():
        return
    why = (probe or download_unreachable)(cif["url"])
    _need(
        why is None,
        "cifar10.root",
        f"no CIFAR-10 copy in {resources / FOLDER} and it cannot be downloaded: {why}. "
        f"Set cifar10.root to a cifar-10-batches-py folder, put {ARCHIVE} into {resources}/, "
        "or leave the CIFAR experiments out (cifar10.enabled: false; `make run-synthetic`)",
    )


def check_authors_available(
    config: Mapping[str, Any], probe: Callable[[str], str | None] | None = None
) -> None:
    """Raise ConfigError when the authors' checkpoints would need a download that cannot
    happen (offline, no copy): called once the DAG is known to contain the download job."""
    from .data.cifar10 import download_unreachable

    aut = config["authors_models"]
    why = (probe or download_unreachable)(aut["url"])
    _need(
        why is None,
        "authors_models.root",
        f"the authors' checkpoints are not in {aut['resources']} and cannot be downloaded from "
        f"{aut['url']}: {why}. Set authors_models.root to a folder holding them (e.g. a clone's "
        "checkpoints/), or leave them out (authors_models.enabled: false); `make run-synthetic` "
        "runs without them",
    )


def check_authors_cifar_available(
    config: Mapping[str, Any], probe: Callable[[str], str | None] | None = None
) -> None:
    """Raise ConfigError when the authors' CIFAR checkpoints would need a download that cannot
    happen: called once the DAG is known to contain that download."""
    from .data.cifar10 import download_unreachable

    aut = config["authors_models"]
    why = (probe or download_unreachable)(aut["cifar_record"])
    _need(
        why is None,
        "authors_models.cifar_root",
        f"the authors' CIFAR-10 checkpoints cannot be downloaded from {aut['cifar_record']}: "
        f"{why}. Set authors_models.cifar_root to a folder holding them, or leave the authors' "
        "models out (authors_models.enabled: false)",
    )
