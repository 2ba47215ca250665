"""The configuration: schema and cross-key checks fail before any job, naming the key."""

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate
from snakemake_interface_common.exceptions import WorkflowError

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
    with pytest.raises(WorkflowError, match="'rho_max' was unexpected"):
        validate(cfg, SCHEMA)


def test_wrong_type_is_rejected():
    cfg = load()
    cfg["measures"]["num_samples"] = "200"
    with pytest.raises(WorkflowError, match="'200' is not of type 'integer'"):
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
    with pytest.raises(WorkflowError, match=r"0 is less than the minimum of 1(.|\n)*widths"):
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


def closed_port_url() -> str:
    """An http URL on localhost where nothing listens (the port was just freed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/cifar-10-python.tar.gz"


def test_download_probe_tells_a_listening_host_from_a_dead_one():
    import socket

    from repdist.data.cifar10 import download_unreachable

    assert "cannot connect to 127.0.0.1" in download_unreachable(closed_port_url(), timeout=2)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert download_unreachable(f"http://127.0.0.1:{server.getsockname()[1]}/x") is None


def test_missing_cifar_copy_while_offline_names_the_key(tmp_path):
    from repdist.config_checks import check_cifar_available

    cfg = load()
    cfg["cifar10"]["resources"] = str(tmp_path)
    with pytest.raises(ConfigError, match=r"cifar10\.root.*cannot be downloaded: offline"):
        check_cifar_available(cfg, probe=lambda url: "offline")
    check_cifar_available(cfg, probe=lambda url: None)  # online: the download job will run
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"")  # an archive to extract: no probe
    check_cifar_available(cfg, probe=lambda url: "offline")


def test_offline_run_stops_before_any_job_naming_the_key(tmp_path):
    """Through Snakemake: the paper DAG with an unreachable CIFAR-10 URL and no copy stops at
    start-up, before any job, with the message; a run of targets without CIFAR is not blocked."""
    import subprocess
    import sys

    overlay = tmp_path / "offline.yaml"
    overlay.write_text(yaml.safe_dump({"cifar10": {"url": closed_port_url()}}))
    cmd = [str(Path(sys.executable).parent / "snakemake"), "--cores", "1", "-s",
           str(ROOT / "Snakefile"), "--directory", str(tmp_path / "work"), "--configfile",
           str(overlay)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "config key 'cifar10.root'" in out and "cannot be downloaded" in out
    assert "Finished jobid" not in out and not (tmp_path / "work" / "results").exists()
    dry = subprocess.run([*cmd, "-n", "synthetic_all"], capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0 and "cifar10.root" not in dry.stdout + dry.stderr


def test_protocol_must_be_paper_or_clean():
    cfg = load()
    assert cfg["protocol"] == "paper"  # the default reproduces the paper
    cfg["protocol"] = "original"
    with pytest.raises(WorkflowError, match="'original' is not one of \\['paper', 'clean'\\]"):
        validate(cfg, SCHEMA)


def test_seeds_per_job_must_be_one_or_all_names_the_key():
    cfg = load()
    cfg["cifar10"]["seeds_per_job"] = 4
    with pytest.raises(ConfigError, match="cifar10.seeds_per_job.*got 4"):
        check_config(cfg)
    for ok in (1, 10, "auto"):
        cfg["cifar10"]["seeds_per_job"] = ok
        check_config(cfg)


def test_authors_models_need_our_models_beside_theirs_names_the_key():
    cfg = load()
    cfg["synthetic"]["n_seeds"], cfg["synthetic"]["min_seeds"] = 3, 2
    with pytest.raises(ConfigError, match="authors_models.seeds"):
        check_config(cfg)
    cfg = load()
    cfg["synthetic"]["class_counts"] = [6, 10, 18]
    cfg["synthetic"]["width_figures"] = [[6], [10], [18]]
    with pytest.raises(ConfigError, match="authors_models.class_counts"):
        check_config(cfg)
    cfg["authors_models"]["enabled"] = False
    check_config(cfg)


def test_bound_beyond_m2_needs_enough_labels_names_the_key():
    cfg = load()
    cfg["bound_beyond_m2"]["configurations"] = [{"rep_dim": 5, "class_counts": [6]}]
    with pytest.raises(ConfigError, match="bound_beyond_m2.configurations.*K = 6 with M = 5"):
        check_config(cfg)


def _defaults(cls):
    from dataclasses import MISSING, fields

    return {f.name: f.default for f in fields(cls) if f.default is not MISSING}


def test_dataclass_defaults_are_the_configs_paper_constants():
    """Each paper constant lives in config.yaml; where a dataclass default repeats one, it is
    equal (so code used without the workflow computes what the workflow does)."""
    from repdist.experiments.cifar import CifarModelConfig
    from repdist.experiments.constructed_bound import ConstructedBoundConfig
    from repdist.experiments.kl_table import KLTableConfig
    from repdist.experiments.synthetic import SyntheticModelConfig
    from repdist.training.loop import TrainConfig

    cfg = load()
    syn, cif = cfg["synthetic"], cfg["cifar10"]
    measures = {k: cfg["measures"][k] for k in ("lam", "dist_type", "sum_or_max")}
    expected = {
        TrainConfig: {**{k: v for k, v in syn["training"].items() if k != "checkpoint_every"},
                      "protocol": cfg["protocol"]},
        SyntheticModelConfig: {k: syn[k] for k in ("rep_dim", "n_train", "n_test",
                                                    "train_data_seed", "test_data_seed")},
        CifarModelConfig: {k: cif[k] for k in ("base_width", "g_width", "bn_momentum", "device",
                                                "bf16", "channels_last", "eval_batch_size")},
        KLTableConfig: {**{k: v for k, v in cfg["kl_table"].items()}, **measures,
                        "seed": cfg["seed"]},
        ConstructedBoundConfig: {**{k: v for k, v in cfg["constructed"].items()
                                    if k != "classifiers"}, **measures, "seed": cfg["seed"]},
    }
    for cls, values in expected.items():
        defaults = _defaults(cls)
        for key, value in values.items():
            if key not in defaults:
                continue
            got = defaults[key]
            got = list(got) if isinstance(got, tuple) else got
            assert got == value, f"{cls.__name__}.{key} = {got!r}, config.yaml: {value!r}"
        assert set(values) & set(defaults), cls.__name__
