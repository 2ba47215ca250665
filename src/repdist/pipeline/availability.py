"""Whether a download the DAG needs can happen from here, asked in the Snakefile's `onstart` only
when the DAG holds the download job, so offline runs of other targets, dry runs, lint and reports
are not blocked; a run that needs one that cannot happen stops, naming the config key to set."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from ..io.download import unreachable
from .config_errors import need

Probe = Callable[[str], str | None]


def check_cifar_available(config: Mapping[str, Any], probe: Probe | None = None) -> None:
    """Raise ConfigError when the CIFAR-10 branch would need a download that cannot happen."""
    from ..data.cifar10 import ARCHIVE, FOLDER, missing_files

    cif = config["cifar10"]
    if not (cif["enabled"] or cpc_reads_cifar(config)) or cif["standin"] or cif["root"]:
        return
    resources = Path(cif["resources"])
    why = _copy_unreachable(missing_files(resources / FOLDER), resources / ARCHIVE, cif["url"],
                            probe)
    need(why is None, "cifar10.root",
         f"no CIFAR-10 copy in {resources / FOLDER} and it cannot be downloaded: {why}. "
         f"Set cifar10.root to a cifar-10-batches-py folder, put {ARCHIVE} into {resources}/, "
         "or leave the CIFAR experiments out (cifar10.enabled: false; `make run-synthetic`; "
         "Roeder's Fig. 3 on the digits: roeder.cpc.dataset: digits)")


def _copy_unreachable(missing: list[str], archive: Path, url: str,
                      probe: Probe | None) -> str | None:
    """Why the lacking `missing` files come neither from `archive` nor `url`; None if they can."""
    if not missing or archive.exists():
        return None
    return (probe or unreachable)(url)


def check_cifar100_available(config: Mapping[str, Any], probe: Probe | None = None) -> None:
    """Raise ConfigError when the follow-up's CIFAR-100 needs a download that cannot happen."""
    from ..data.cifar100 import ARCHIVE

    c100 = config["logit_distance"]["cifar100"]
    resources = Path(c100["resources"])
    why = _copy_unreachable(ARCHIVE.missing(resources / ARCHIVE.folder),
                            resources / ARCHIVE.name, c100["url"], probe)
    need(why is None, "logit_distance.cifar100.root",
         f"no CIFAR-100 copy in {resources / ARCHIVE.folder} and it cannot be downloaded: "
         f"{why}. Set logit_distance.cifar100.root to a cifar-100-python folder, put "
         f"{ARCHIVE.name} (MD5 {ARCHIVE.md5}) into {resources}/, or leave CIFAR-100 out "
         "(logit_distance.cifar100.enabled: false)")


def check_imagenet_weights(config: Mapping[str, Any]) -> None:
    """Raise ConfigError when the CIFAR-100 teachers need ImageNet's weights and lack the file."""
    from ..models.follow_up_resnet import IMAGENET_V2_FILE, IMAGENET_V2_URL

    weights = config["logit_distance"]["cifar100"]["imagenet_weights"]
    need(not weights or Path(weights).is_file(), "logit_distance.cifar100.imagenet_weights",
         f"the CIFAR-100 teachers start from ImageNet's weights, and {weights} is not there: "
         f"download {IMAGENET_V2_URL} (torchvision's {IMAGENET_V2_FILE}) to it, or set the key "
         "to null to train the teachers from scratch")


def cpc_reads_cifar(config: Mapping[str, Any]) -> bool:
    """Whether Roeder's Fig. 3 runs on CIFAR-10, which needs its copy whatever cifar10.enabled."""
    roe = config["roeder"]
    return bool(roe["enabled"] and roe["cpc"]["enabled"] and roe["cpc"]["dataset"] == "cifar10")


def check_authors_available(config: Mapping[str, Any], probe: Probe | None = None) -> None:
    """Raise ConfigError when the authors' checkpoints need a download that cannot happen."""
    aut = config["authors_models"]
    _need_reachable(aut["url"], "authors_models.root", probe,
                    f"the authors' checkpoints are not in {aut['resources']} and cannot be "
                    f"downloaded from {aut['url']}",
                    "a folder holding them (e.g. a clone's checkpoints/)")


def check_authors_cifar_available(config: Mapping[str, Any], probe: Probe | None = None) -> None:
    """Raise ConfigError when the authors' CIFAR checkpoints need a download that cannot happen."""
    aut = config["authors_models"]
    _need_reachable(aut["cifar_record"], "authors_models.cifar_root", probe,
                    "the authors' CIFAR-10 checkpoints cannot be downloaded from "
                    f"{aut['cifar_record']}", "a folder holding them")


def _need_reachable(url: str, key: str, probe: Probe | None, what: str, folder: str) -> None:
    why = (probe or unreachable)(url)
    need(why is None, key,
         f"{what}: {why}. Set {key} to {folder}, or leave the authors' models out "
         "(authors_models.enabled: false); `make run-synthetic` runs without them")


def authors_available_locally(config: Mapping[str, Any]) -> bool:
    """The authors' models need no download: a stand-in, a folder, or a finished download."""
    from ..models.authors import CHECKSUMS, read_checksums

    aut = config["authors_models"]
    if aut["standin"] or aut["root"]:
        return True
    folder = Path(aut["resources"])
    return all((folder / n).is_file() for n in read_checksums(CHECKSUMS))


def authors_on(config: Mapping[str, Any]) -> bool:
    """Whether the run holds the authors' models: `enabled: true` (downloaded when needed), or
    `auto` with a copy present (`make run-synthetic`, which must work offline)."""
    enabled = config["authors_models"]["enabled"]
    return enabled is True or (enabled == "auto" and authors_available_locally(config))


def check_downloads(config: Mapping[str, Any], needed_rules: Collection[str],
                    probe: Probe | None = None) -> str | None:
    """ConfigError for a needed download that cannot happen; a note if `auto` drops the authors."""
    if "cifar10_download" in needed_rules:
        check_cifar_available(config, probe)
    if "authors_download" in needed_rules:
        check_authors_available(config, probe)
    if "authors_cifar_download" in needed_rules:
        check_authors_cifar_available(config, probe)
    if "logit_distance_cifar100_download" in needed_rules:
        check_cifar100_available(config, probe)
    if "logit_distance_cifar100_teachers" in needed_rules:
        check_imagenet_weights(config)
    aut = config["authors_models"]
    if aut["enabled"] == "auto" and not authors_on(config):
        return (f"The authors' models are left out: no copy in {aut['resources']} and "
                "authors_models.root is not set (`make authors` downloads them; `make run` "
                "includes them).")
    return None
