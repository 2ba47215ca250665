"""The configuration: schema and cross-key checks fail before any job, naming the key."""

import copy
from pathlib import Path

import pytest

from conftest import SNAKEMAKE, train_config
import yaml
from snakemake.utils import validate
from snakemake_interface_common.exceptions import WorkflowError

from repdist.pipeline.config_checks import check_config
from repdist.pipeline.config_errors import ConfigError

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


@pytest.mark.parametrize("change, key", [
    ({"n_test": 100}, "measures.num_samples"),
    ({"num_classes": 2}, "roeder.num_classes"),
    ({"fit_seeds": [0, 10]}, "roeder.fit_seeds"),
    ({"variants": [{"noise_dims": 0, "lr": 1e-4}, {"noise_dims": 0, "lr": 3e-4}]},
     "roeder.variants"),
])
def test_impossible_roeder_settings_name_the_key(change, key):
    cfg = load()
    cfg["roeder"].update(change)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        check_config(cfg)
    cfg["roeder"]["enabled"] = False  # a branch turned off is not checked
    check_config(cfg)


@pytest.mark.parametrize("overlay, change, key, why", [
    ("config.yaml", {"patch": [17, 8]}, "roeder.cpc.patch", "does not fit in half of a 32 x 32"),
    ("config.synthetic.yaml", {"patch": [5, 8]}, "roeder.cpc.patch", "half of a 8 x 8 digits"),
    ("config.yaml", {"n_seeds": 9}, "roeder.cpc.n_seeds", "even number"),
    ("config.yaml", {"n_test": 20_000}, "roeder.cpc.n_test", "exceeds the 10000 test images"),
    ("config.synthetic.yaml", {"n_test": 10, "rep_dim": 16}, "roeder.cpc.n_test", "K-2 >= M"),
    ("config.synthetic.yaml", {"data_fractions": [0.05, 1.0]}, "roeder.cpc.data_fractions",
     "leaves 55 training images of digits"),
    ("config.quick.yaml", {"n_test": 2000}, "roeder.cpc.n_test", "exceeds the 800 test"),
])
def test_impossible_roeder_cpc_settings_name_the_key(overlay, change, key, why):
    cfg = deep_update(load(), load(overlay)) if overlay != "config.yaml" else load()
    check_config(cfg)
    cfg["roeder"]["cpc"].update(change)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.") + ".*" + why):
        check_config(cfg)
    cfg["roeder"]["cpc"]["enabled"] = False  # a branch turned off is not checked
    check_config(cfg)


def test_roeder_cpc_on_cifar_needs_its_copy_even_with_the_cifar_experiments_off(tmp_path):
    from repdist.pipeline.availability import check_cifar_available

    cfg = deep_update(load(), load("config.synthetic.yaml"))
    cfg["cifar10"]["resources"] = str(tmp_path)
    check_cifar_available(cfg, probe=lambda url: "offline")  # the digits: no CIFAR-10 needed
    cfg["roeder"]["cpc"]["dataset"] = "cifar10"
    with pytest.raises(ConfigError, match=r"cifar10\.root.*roeder\.cpc\.dataset: digits"):
        check_cifar_available(cfg, probe=lambda url: "offline")


def test_cifar100_and_imagenet_weights_missing_offline_name_their_keys(tmp_path):
    """The follow-up's CIFAR-100 at start-up: no copy and no way to download it names
    logit_distance.cifar100.root and the archive's MD5; ImageNet's weights named but absent
    name their URL and key; a file there, or null, passes."""
    from repdist.pipeline.availability import check_downloads

    cfg = load()
    c100 = cfg["logit_distance"]["cifar100"]
    c100.update(resources=str(tmp_path), imagenet_weights=str(tmp_path / "w.pth"))
    with pytest.raises(ConfigError, match=r"cifar100\.root.*offline.*eb9058c3"):
        check_downloads(cfg, {"logit_distance_cifar100_download"}, probe=lambda url: "offline")
    check_downloads(cfg, {"logit_distance_cifar100_download"}, probe=lambda url: None)
    with pytest.raises(ConfigError, match=r"imagenet_weights.*resnet50-11ad3fa6\.pth"):
        check_downloads(cfg, {"logit_distance_cifar100_teachers"})
    (tmp_path / "w.pth").write_bytes(b"")
    check_downloads(cfg, {"logit_distance_cifar100_teachers"})
    c100["imagenet_weights"] = None
    check_downloads(cfg, {"logit_distance_cifar100_teachers"})


def test_narrower_cifar100_networks_refuse_imagenets_weights_naming_the_key():
    """logit_distance.cifar100.width below torchvision's 64 (the quick DAG's 4) builds the
    teacher from scratch: ImageNet's weights beside it are refused, naming the width; 0 is not
    a width."""
    cfg = load()
    cfg["logit_distance"]["enabled"] = True
    c100 = cfg["logit_distance"]["cifar100"]
    c100.update(enabled=True, width=8)
    assert c100["imagenet_weights"]  # the paper's teacher starts from ImageNet's weights
    with pytest.raises(ConfigError, match=r"cifar100\.width.*width 64.*imagenet_weights"):
        check_config(cfg)
    c100["imagenet_weights"] = None
    check_config(cfg)
    assert merged_quick()["logit_distance"]["cifar100"]["width"] == 4
    c100["width"] = 0
    with pytest.raises(WorkflowError, match=r"0 is less than the minimum of 1(.|\n)*width"):
        validate(cfg, SCHEMA)


def closed_port_url() -> str:
    """An http URL on localhost where nothing listens (the port was just freed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/cifar-10-python.tar.gz"


def test_download_probe_tells_a_listening_host_from_a_dead_one():
    import socket

    from repdist.io.download import unreachable as download_unreachable

    assert "cannot connect to 127.0.0.1" in download_unreachable(closed_port_url(), timeout=2)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert download_unreachable(f"http://127.0.0.1:{server.getsockname()[1]}/x") is None


def test_missing_cifar_copy_while_offline_names_the_key(tmp_path):
    from repdist.pipeline.availability import check_cifar_available

    cfg = load()
    cfg["cifar10"]["resources"] = str(tmp_path)
    with pytest.raises(ConfigError, match=r"cifar10\.root.*cannot be downloaded: offline"):
        check_cifar_available(cfg, probe=lambda url: "offline")
    check_cifar_available(cfg, probe=lambda url: None)  # online: the download job will run
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"")  # an archive to extract: no probe
    check_cifar_available(cfg, probe=lambda url: "offline")


@pytest.mark.slow  # two Snakemake starts (~11 s; the check itself: the test above)
def test_offline_run_stops_before_any_job_naming_the_key(tmp_path):
    """Through Snakemake: the toy DAG on the real CIFAR-10 (no stand-in) with an unreachable URL
    and no copy stops at start-up, before any job, with the message; a run of targets without
    CIFAR is not blocked."""
    import subprocess
    import sys

    overlay = tmp_path / "offline.yaml"
    overlay.write_text(yaml.safe_dump({"cifar10": {"url": closed_port_url(), "standin": False}}))
    cmd = [*SNAKEMAKE, "--cores", "1", "-s",
           str(ROOT / "Snakefile"), "--directory", str(tmp_path / "work"), "--configfile",
           str(ROOT / "config.quick.yaml"), str(overlay)]
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
    cfg["cifar10"]["stack_across_m"] = True  # every seed of every M in one job
    cfg["cifar10"]["seeds_per_job"] = 1
    with pytest.raises(ConfigError, match="cifar10.stack_across_m.*seeds_per_job: 1"):
        check_config(cfg)
    for ok in (10, "auto"):
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
    with pytest.raises(ConfigError, match="bound_beyond_m2.configurations.*M = 5 labels, got K = 6"):
        check_config(cfg)


def test_distillation_needs_a_trained_teacher_and_enough_labels_names_the_key():
    cfg = load()
    cfg["distillation"]["teacher_seeds"] = [20, 21]  # seeds 0-19 are trained
    with pytest.raises(ConfigError, match="distillation.teacher_seeds.*no teacher seed"):
        check_config(cfg)
    cfg["distillation"]["teacher_seeds"] = [19, 20]  # 20 is left out, 19 is a teacher
    check_config(cfg)
    from repdist.pipeline.config_checks import check_distillation

    cfg["synthetic"]["rep_dim"], cfg["distillation"]["class_counts"] = 3, [4]
    with pytest.raises(ConfigError, match="distillation.class_counts"):
        check_distillation(cfg)
    cfg["distillation"]["enabled"] = False
    check_distillation(cfg)


def test_paper_constants_live_in_config_yaml_only():
    """The dataclasses that carry config values have no defaults (the values come from
    config.yaml, through the rules or the tests' helpers), so no default can drift from it."""
    from dataclasses import MISSING, fields

    from repdist.experiments.cifar.training import CifarModelConfig
    from repdist.experiments.constructed.bound import ConstructedBoundConfig
    from repdist.experiments.constructed.kl_table import KLTableConfig
    from repdist.experiments.synthetic.training import SyntheticModelConfig
    from repdist.training.settings import TrainConfig

    for cls in (TrainConfig, SyntheticModelConfig, CifarModelConfig, KLTableConfig,
                ConstructedBoundConfig):
        defaulted = [f.name for f in fields(cls)
                     if f.default is not MISSING or f.default_factory is not MISSING]
        assert not defaulted, f"{cls.__name__} has defaults for {defaulted}"
    cfg = load()
    train = train_config()
    assert {k: getattr(train, k) for k in cfg["synthetic"]["training"]} == \
        cfg["synthetic"]["training"]
    assert train.protocol == cfg["protocol"]


@pytest.mark.parametrize("change, message", [
    ({"permutations": -1}, "-1 is less than the minimum of 0"),
    ({"alpha": 1.0}, "1.0 is greater than or equal to the maximum of 1"),
    ({"measures": ["m_cca"]}, "'m_cca' is not one of"),
    ({"samples": 10}, "'samples' was unexpected"),
])
def test_a_bad_null_setting_is_refused_naming_it(change, message):
    cfg = load()
    cfg["null"].update(change)
    with pytest.raises(WorkflowError, match=message) as err:
        validate(cfg, SCHEMA)
    assert "null" in str(err.value)


def test_an_overlays_bare_null_key_is_the_null_section():
    """YAML reads a bare `null:` as the key None: the Snakefile puts it back under "null"
    (over the quoted section's values) before validation; every pairs job then gets it."""
    from repdist.pipeline.config_types import named_null_section
    from repdist.pipeline.measure_settings import pair_measures

    cfg = deep_update(load(), yaml.safe_load("null: {permutations: 20}"))
    assert None in cfg
    named_null_section(cfg)
    validate(cfg, SCHEMA)
    assert None not in cfg and cfg["null"]["permutations"] == 20 and cfg["null"]["alpha"] == 0.05
    assert pair_measures(cfg)["null"]["permutations"] == 20
    cfg["null"]["permutations"] = 0
    assert "null" not in pair_measures(cfg)  # off: the jobs' parameters as before the null


def test_the_configs_null_measures_are_compares_default():
    """One default: config.yaml's `null.measures` are what compare(null=...) draws unasked."""
    from repdist.measures.null import DEFAULT_NULL_MEASURES

    assert tuple(load()["null"]["measures"]) == DEFAULT_NULL_MEASURES


def test_snapshots_draw_the_null_of_their_own_measures():
    """A training run's snapshots (every pair at every snapshot step) draw the null of
    null.snapshot_measures only; the pairs jobs draw null.measures and never see the key;
    snapshot_measures [] draws none at the snapshots. The CompareSettings take each."""
    from repdist.measures import CompareSettings
    from repdist.pipeline.measure_settings import pair_measures

    cfg = load()
    pairs, snapshots = pair_measures(cfg), pair_measures(cfg, snapshots=True)
    assert "snapshot_measures" not in pairs["null"] | snapshots["null"]
    assert tuple(CompareSettings(**pairs).null.measures) == tuple(cfg["null"]["measures"])
    assert CompareSettings(**snapshots).null.measures == ("mcca_f", "mcca_g")
    cfg["null"]["snapshot_measures"] = []
    validate(cfg, SCHEMA)
    assert "null" not in pair_measures(cfg, snapshots=True) and "null" in pair_measures(cfg)
    cfg["null"]["snapshot_measures"] = ["m_cca"]
    with pytest.raises(WorkflowError, match="'m_cca' is not one of"):
        validate(cfg, SCHEMA)


@pytest.mark.parametrize("path, why", [
    (("cifar10", "bf16"), "0.85x"),
    (("cifar10", "stack"), "0.30x"),
    (("cifar10", "fp16"), "no GPU record has decided"),
    (("cifar10", "compile"), "no GPU record has decided"),
    (("cifar10", "cudnn_benchmark"), "no GPU record has decided"),
    (("logit_distance", "cifar100", "stack"), "no GPU has timed vmap"),
])
def test_a_removed_key_stops_the_run_naming_it_and_why(path, why):
    """A key config.yaml no longer holds (a record rejected the option, or none has decided
    it) stops the run before validation, even at its old default, naming the key and why."""
    from repdist.pipeline.config_checks import check_removed_keys

    cfg = load()
    check_removed_keys(cfg)
    section = cfg
    for part in path[:-1]:
        section = section[part]
    section[path[-1]] = False
    key = ".".join(path)
    with pytest.raises(ConfigError, match=f"config key '{key}': .*{why}.*delete the key"):
        check_removed_keys(cfg)
    with pytest.raises(WorkflowError, match=f"'{path[-1]}' was unexpected"):
        validate(cfg, SCHEMA)  # the schema refuses it too


def test_a_config_with_two_removed_keys_names_both():
    from repdist.pipeline.config_checks import check_removed_keys

    cfg = load()
    cfg["cifar10"].update(bf16=False, fp16=False)
    with pytest.raises(ConfigError, match="(?s)'cifar10.bf16'.*\n.*'cifar10.fp16'"):
        check_removed_keys(cfg)


def test_every_cifar_model_setting_reaches_the_job():
    """Every CifarModelConfig field is a key of cifar10 that cifar_model_settings hands to the
    job (rules/helpers/cifar.smk)."""
    import re
    from dataclasses import fields

    from repdist.experiments.cifar.training import CifarModelConfig

    helper = (ROOT / "rules" / "helpers" / "cifar.smk").read_text()
    keys = re.search(r"def cifar_model_settings.*?keys = \((.*?)\)", helper, re.S).group(1)
    passed = set(re.findall(r'"(\w+)"', keys)) | {"rep_dim", "seeds", "eval_batch_size"}
    assert passed == {f.name for f in fields(CifarModelConfig)}
    assert passed - {"rep_dim", "seeds"} <= set(load()["cifar10"])


def test_paper_runs_start_cold_and_quick_runs_warm():
    """warm_starts: off in config.yaml (and the schema's default), on in config.quick.yaml."""
    schema = yaml.safe_load(Path(SCHEMA).read_text())
    assert schema["properties"]["warm_starts"]["default"] is False
    paper, quick = load(), merged_quick()
    assert paper["warm_starts"] is False and quick["warm_starts"] is True
    bare = load()
    del bare["warm_starts"]
    validate(bare, SCHEMA)
    assert bare["warm_starts"] is False
