"""Overlays that narrow the synthetic grid or shorten training: the branches built on it adapt
(pipeline/overlays.py) and say so, and the DAG builds."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from repdist.pipeline.config_checks import check_config
from repdist.pipeline.overlays import adapt_to_overlays

from conftest import SNAKEMAKE

ROOT = Path(__file__).resolve().parents[1]
PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())


def adapted(**synthetic):
    cfg = copy.deepcopy(PAPER)
    cfg["synthetic"].update(synthetic)
    notes = adapt_to_overlays(cfg)
    check_config(cfg)  # what adapted passes the checks
    return cfg, notes


def test_an_untouched_config_is_left_as_it_is():
    cfg = copy.deepcopy(PAPER)
    assert adapt_to_overlays(cfg) == [] and cfg == PAPER


def test_a_narrowed_grid_narrows_the_authors_comparison_and_the_width_figures():
    cfg, notes = adapted(class_counts=[4, 6], variants=[{"fix_g": 0, "fix_f": 0, "widths": [16]}])
    assert cfg["authors_models"]["widths"] == [16] and cfg["authors_models"]["enabled"] is True
    assert cfg["synthetic"]["width_figures"] == [[4, 6]]
    assert any("authors_models.widths: [16] of their [16, 32, 64, 128]" in n for n in notes)
    cfg, notes = adapted(class_counts=[4])
    assert cfg["authors_models"]["class_counts"] == [4]
    assert cfg["synthetic"]["width_figures"] == [[4]]


def test_a_grid_without_their_models_turns_the_authors_comparison_off():
    cfg, notes = adapted(class_counts=[10, 18])
    assert cfg["authors_models"]["enabled"] is False
    assert notes[-1].startswith("authors_models: off") and "class_counts" in notes[-1]


def test_a_grid_without_k18_width_64_leaves_out_roeders_fig_2c_of_the_neurips_models():
    from repdist.pipeline.overlays import neurips_fit_trained

    assert neurips_fit_trained(PAPER)
    cfg, notes = adapted(class_counts=[4, 6])
    assert not neurips_fit_trained(cfg)
    assert notes[-1] == ("roeder: Fig. 2c of the NeurIPS models left out, this run does not "
                         "train K = 18, width 64, seeds [0, 1]")
    cfg, notes = adapted(n_seeds=1, min_seeds=1)
    assert not neurips_fit_trained(cfg) and notes[-1].startswith("roeder: Fig. 2c")
    cfg["roeder"]["enabled"] = False
    assert adapt_to_overlays(cfg) == []  # nothing to leave out of a branch that is off


def test_fewer_seeds_narrow_the_authors_seeds_and_the_teachers():
    cfg, notes = adapted(n_seeds=2, min_seeds=2)
    assert cfg["authors_models"]["seeds"] == [0, 1] and cfg["authors_models"]["min_seeds"] == 2
    assert cfg["distillation"]["teacher_seeds"] == [0, 1]
    assert any(n.startswith("distillation.teacher_seeds: [0, 1]") for n in notes)


def test_shorter_training_drops_the_later_snapshots():
    cfg = copy.deepcopy(PAPER)
    cfg["synthetic"]["training"]["steps"] = 3000
    notes = adapt_to_overlays(cfg)
    check_config(cfg)
    assert cfg["dynamics"]["snapshots"] == [0, 250, 500, 1000, 2000, 3000]
    assert notes == ["dynamics.snapshots: [5000, 7500, 10000, 12500, 15000] dropped, after the "
                     "last of the 3000 training steps (synthetic.training.steps); "
                     "[0, 250, 500, 1000, 2000, 3000] kept"]
    cfg["synthetic"]["training"]["steps"] = 100
    cfg["dynamics"]["snapshots"] = [500, 1000]
    adapt_to_overlays(cfg)
    assert cfg["dynamics"]["snapshots"] == [0, 100]


def test_model_paths_under_outdir():
    cfg = copy.deepcopy(PAPER)
    cfg["outdir"] = "elsewhere/"
    cfg["models"] = {"g": ["{outdir}/synthetic/K4/w16_g0_f0/seed0", "runs/a.npz"]}
    adapt_to_overlays(cfg)
    assert cfg["models"]["g"] == ["elsewhere/synthetic/K4/w16_g0_f0/seed0", "runs/a.npz"]


@pytest.mark.parametrize("overlay", [
    "synthetic: {class_counts: [4, 6], variants: [{fix_g: 0, fix_f: 0, widths: [16]}]}\n",
    "synthetic: {training: {steps: 200}}\n",
    "outdir: elsewhere\n",
], ids=["narrow-grid", "short-training", "quick-elsewhere"])
def test_overlays_that_used_to_stop_now_build_their_dag(overlay, tmp_path):
    """The three overlays of issue 26 (on the quick config): the DAG builds, and the log says
    what was adapted."""
    path = tmp_path / "overlay.yaml"
    path.write_text(overlay)
    res = subprocess.run([*SNAKEMAKE, "-n", "--cores", "1", "-s", str(ROOT / "Snakefile"),
                          "--directory", str(tmp_path), "--configfile",
                          str(ROOT / "config.quick.yaml"), str(path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    if "outdir" in overlay:
        assert "elsewhere/models/quick_synthetic_K4/pairs.parquet" in res.stdout
    else:
        assert "config adapted:" in res.stdout + res.stderr
