"""The configuration: schema and cross-key checks fail before any job, naming the key."""

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from repdist.config_checks import ConfigError, check_config

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def load(name="config.yaml"):
    return yaml.safe_load((ROOT / name).read_text())


def deep_update(base, overlay):
    """Recursive merge, as snakemake does for --configfile on top of the configfile directive."""
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_update(base[key], value)
        else:
            base[key] = value
    return base


def merged_quick():
    return deep_update(load(), load("config.quick.yaml"))


@pytest.mark.parametrize("cfg", [load(), merged_quick()], ids=["paper", "quick"])
def test_shipped_configs_are_valid(cfg):
    validate(copy.deepcopy(cfg), SCHEMA)
    check_config(cfg)


def test_unknown_key_is_rejected():
    cfg = load()
    cfg["kl_table"]["rho_max"] = 20
    with pytest.raises(Exception, match="rho_max"):
        validate(cfg, SCHEMA)


def test_wrong_type_is_rejected():
    cfg = load()
    cfg["measures"]["num_samples"] = "200"
    with pytest.raises(Exception, match="num_samples|'200'"):
        validate(cfg, SCHEMA)


def test_bad_permutation_names_the_key():
    cfg = load()
    cfg["kl_table"]["permutation"] = [0, 1, 2, 3, 4, 5, 5]
    with pytest.raises(ConfigError, match="kl_table.permutation"):
        check_config(cfg)


def test_too_many_samples_for_inputs_names_the_key():
    cfg = load()
    cfg["constructed"]["num_samples"] = 10_000
    with pytest.raises(ConfigError, match="constructed.num_samples"):
        check_config(cfg)


def test_non_positive_width_is_rejected_naming_the_key():
    cfg = load()
    cfg["synthetic"]["variants"][0]["widths"] = [16, 0]
    with pytest.raises(Exception, match="widths|minimum"):
        validate(cfg, SCHEMA)


def test_rep_dim_too_large_for_the_class_count_names_the_key():
    cfg = load()
    cfg["synthetic"]["rep_dim"] = 3
    cfg["synthetic"]["class_counts"] = [4, 6]  # K - 2 = 2 < M = 3 for K = 4
    with pytest.raises(ConfigError, match="synthetic.class_counts"):
        check_config(cfg)


def test_cifar_rep_dim_too_large_names_the_key():
    cfg = load()
    cfg["cifar10"]["rep_dims"] = [2, 9]
    with pytest.raises(ConfigError, match="cifar10.rep_dims"):
        check_config(cfg)


def test_incomplete_cifar_root_names_the_key(tmp_path):
    cfg = load()
    cfg["cifar10"]["root"] = str(tmp_path)
    with pytest.raises(ConfigError, match="cifar10.root.*data_batch_1"):
        check_config(cfg)


def test_snapshot_after_training_names_the_key():
    cfg = load()
    cfg["dynamics"]["snapshots"] = [0, 20_000]
    with pytest.raises(ConfigError, match="dynamics.snapshots"):
        check_config(cfg)
