"""`bash .gpu-bundle/run.sh run-synthetic` (repdist_dev.gpu_bundle): its arguments as make and the
record receive them (run.sh run with stand-ins for make and Python), the record it writes
(repdist_dev.run_record) from a run's files in their real formats, a cut call continued by the
next, and the rehearsal's verdict on a record (repdist_dev.gpu_rehearsal; `make
gpu-run-rehearsal` runs the whole command on this CPU)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from repdist.experiments.authors.ours_vs_authors import OURS_VS_AUTHORS_COLUMNS
from repdist.experiments.paper_comparison.checks import Check, comparison_frame
from repdist.io import write_csv
from repdist_dev import gpu_rehearsal, run_record
from repdist_dev.gpu_bundle import AUTHORS_CHECKPOINTS, RUN_SH, copy_authors_files

ROOT = Path(__file__).resolve().parents[1]
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"

# --- run.sh's arguments ---------------------------------------------------------------------

FAKE_PYTHON = """#!/usr/bin/env bash
printf '%q ' python "$@" >>"$CALLS"; echo >>"$CALLS"
if [[ $1 == -c ]]; then echo "torch 2.11.0+cu130 cuda True gpu NVIDIA H200"; fi
if [[ "$*" == *run_record* ]]; then exit "${FAKE_RECORD_EXIT:-0}"; fi
"""
FAKE_MAKE = """#!/usr/bin/env bash
printf '%q ' make "$@" >>"$CALLS"; echo >>"$CALLS"
sleep "${FAKE_MAKE_SLEEP:-0}"
exit "${FAKE_MAKE_EXIT:-0}"
"""


@pytest.fixture
def checkout(tmp_path):
    """A checkout holding the bundle's run.sh and its authors' overlay, and a folder of
    stand-ins for make and the machine's Python that write down how they were called."""
    root, fakes = tmp_path / "repo", tmp_path / "fakes"
    (root / ".gpu-bundle" / "wheels").mkdir(parents=True)
    (root / ".gpu-bundle" / "run.sh").write_text(RUN_SH)
    (root / ".gpu-bundle" / "authors.yaml").write_text("authors_models: {root: x}\n")
    fakes.mkdir()
    for name, text in (("python3", FAKE_PYTHON), ("make", FAKE_MAKE)):
        (fakes / name).write_text(text)
        (fakes / name).chmod(0o755)
    return root, fakes


def run_sh(checkout, *args, **env):
    root, fakes = checkout
    calls = root.parent / "calls.txt"
    calls.unlink(missing_ok=True)
    out = subprocess.run(["bash", ".gpu-bundle/run.sh", *args], cwd=root, text=True,
                         capture_output=True, timeout=60,
                         env={**os.environ, "PATH": f"{fakes}:{os.environ['PATH']}",
                              "CALLS": str(calls), "OUT": str(root.parent / "out"), **env})
    made = [shlex.split(line) for line in calls.read_text().splitlines()]
    return out, made


def test_run_sh_runs_make_run_synthetic_with_its_config_and_writes_the_record(checkout):
    root, _ = checkout
    (root / ".snakemake" / "locks").mkdir(parents=True)  # a killed call's lock
    (root / ".snakemake" / "locks" / "0.input.lock").write_text("")
    out, made = run_sh(checkout, "run-synthetic", "CONFIG=a.yaml b.yaml", "CORES=3")
    assert out.returncode == 0, out.stdout + out.stderr
    unlock = [c for c in made if "--unlock" in c]
    assert unlock and unlock[0][-4:] == ["config.synthetic.yaml", ".gpu-bundle/authors.yaml",
                                         "a.yaml", "b.yaml"]
    make = [c for c in made if c[0] == "make"]
    assert len(make) == 1 and make[0][1] == "run-synthetic" and make[0][2].startswith("VENV=")
    assert make[0][3:] == ["CONFIG=.gpu-bundle/authors.yaml a.yaml b.yaml", "CORES=3"]
    record = [c for c in made if "repdist_dev.run_record" in c][0]
    options = dict(zip(record[3::2], record[4::2], strict=True))
    assert options["--exit"] == "0" and options["--budget"] == "510s"
    assert options["--gpu"] == "NVIDIA H200" and options["--torch"] == "2.11.0+cu130"
    assert options["--config"] == ".gpu-bundle/authors.yaml a.yaml b.yaml"
    assert options["--out"] == str(root.parent / "out")
    assert int(options["--begun"]) <= int(options["--started"]) <= time.time()
    assert "releasing the Snakemake lock an earlier call left" in out.stdout


def test_run_sh_writes_the_record_of_a_call_its_limit_cut(checkout):
    root, _ = checkout
    (root / ".gpu-bundle" / "authors.yaml").unlink()  # a bundle without their checkpoints
    out, made = run_sh(checkout, "run-synthetic", BUDGET="1s", FAKE_MAKE_SLEEP="20")
    assert out.returncode == 124 and "stopped at the time limit (1s)" in out.stderr
    assert not [c for c in made if "--unlock" in c]  # no lock left: none released
    assert [c for c in made if c[0] == "make"][0][3:] == ["CONFIG="]
    record = [c for c in made if "repdist_dev.run_record" in c][0]
    assert record[record.index("--exit") + 1] == "124"
    assert record[record.index("--config") + 1] == ""

    out, _ = run_sh(checkout, "run-synthetic", FAKE_RECORD_EXIT="2")  # the run ok, no record
    assert out.returncode == 1 and "the run's record could not be written" in out.stderr
    out, _ = run_sh(checkout, "run-synthetic", FAKE_MAKE_EXIT="2", FAKE_RECORD_EXIT="2")
    assert out.returncode == 2  # Snakemake's failure is the one reported


# --- the record -----------------------------------------------------------------------------

def benchmark(path: Path, seconds: float, rss: float = 300.0) -> None:
    """A Snakemake benchmark TSV (tests/test_job_times.py's format)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds:.2f}\t0:00:{int(seconds):02d}\t{rss}\t900\t400\t410\t1"
                             f"\t2\t95\t{seconds}\n")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A synthetic training job's files, written by the job's own code (K = 4, width 8, two
    seeds, 6 steps, the graph-ready step: eager on a CPU)."""
    from conftest import train_config

    from repdist.experiments.outputs import SeedFiles
    from repdist.experiments.synthetic.training import SyntheticModelConfig, train_configurations

    root = tmp_path_factory.mktemp("trained") / "synthetic" / "K4" / "w8_g0_f0"
    files = [SeedFiles({"test": root / f"seed{s}/embeddings.parquet"},
                       root / f"seed{s}/unembeddings.parquet", root / f"seed{s}/metrics.json",
                       root / f"seed{s}/model.pt") for s in (0, 1)]
    cfg = SyntheticModelConfig(num_classes=4, width=8, fix_g=0.0, fix_f=0.0, seeds=[0, 1],
                               rep_dim=2, n_train=512, n_test=256, train_data_seed=0,
                               test_data_seed=1)
    train_configurations([cfg], train_config(steps=6, batch_size=64, eval_every=3,
                                             protocol="clean"), [files], {}, cuda_graph=True)
    return root


@pytest.fixture
def run(tmp_path, trained, monkeypatch):
    """A results folder as a run leaves it: benchmark files, a training job's models, the paper
    comparison (a FAIL among its rows) and our seeds against the authors', a Snakemake log;
    the dry run of what is left replaced by its answer."""
    results = tmp_path / "results"
    (results / "synthetic" / "K4").mkdir(parents=True)
    os.symlink(trained, results / "synthetic" / "K4" / "w8_g0_f0")
    benchmark(results / "benchmarks" / "synthetic_train" / "K4_w8_g0_f0.tsv", 12.5)
    benchmark(results / "benchmarks" / "synthetic_pairs" / "K4_w8_g0_f0.tsv", 2.0)
    benchmark(results / "benchmarks" / "kl_table.tsv", 0.5)
    frame = comparison_frame([
        Check("Table 1: KL at rho = 1", "paper Table 1", 0.7876, 0.7876, "abs 0.005", True),
        Check("mean d_LLV falls with width", "paper Fig. 3", "0.75 -> 0.89", "decreasing",
              "strictly lower", False),
        Check("seeds kept", "paper Fig. 3", "w16: 3", "not stated", "-", None)])
    write_csv(results / "tables" / "paper_comparison.csv", frame, {"experiment": "test"})
    rows = [[4, 8, s, 1e-3, d, 0.9, 0.1, 0.9, 0.9, 0.5, 1e-2, 0.5, 0.4, ""]
            for s, d in ((0, 0.01), (1, 0.02), (2, 0.2))]
    write_csv(results / "tables" / "ours_vs_authors.csv",
              pd.DataFrame(rows, columns=OURS_VS_AUTHORS_COLUMNS), {"experiment": "test"})
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"outdir": str(results),
                                       "authors_models": {"standin": True}}))
    monkeypatch.setattr(run_record, "dry_run", lambda configs: (0, {}, ""))
    return results, overlay


def smk_log(results: Path, text: str) -> None:
    folder = results.parent / ".snakemake" / "log"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{time.time():.6f}.snakemake.log").write_text(text)


def record_call(overlay: Path, out: Path, status: int = 0, seconds: float = 30.0,
                **options: str) -> dict:
    started = time.time() - seconds
    args = ["--exit", str(status), "--started", str(started), "--budget", "510s",
            "--config", str(overlay), "--out", str(out)]
    args += [a for k, v in options.items() for a in (f"--{k.replace('_', '-')}", v)]
    assert run_record.main(args) == 0
    found = sorted(out.glob("*-run-synthetic.json"))
    assert len(found) == 1
    return json.loads(found[0].read_text())


def test_the_record_reads_a_finished_run(run, tmp_path):
    results, overlay = run
    smk_log(results, "1 of 3 steps (33%) done\n3 of 3 steps (100%) done\n")
    record = record_call(overlay, tmp_path / "out", torch="2.13.0")
    r = record["run_synthetic"]
    assert r["name"].startswith("cpu-") and r["name"].endswith("-run-synthetic")
    assert r["status"] == "complete" and r["missing_jobs"] == 0 and r["notes"] == {}
    assert r["calls"][0]["jobs_done"] == "3 of 3 jobs (100%) done"
    assert r["calls"][0]["exit"] == 0 and not r["calls"][0]["cut"]
    assert r["wall_s"] == pytest.approx(30.0, abs=1.0) and r["minutes"] == pytest.approx(0.5,
                                                                                         abs=0.02)
    assert {g["group"]: g["jobs"] for g in r["jobs_by_rule"]} == {
        "kl_table": 1, "synthetic_pairs w8": 1, "synthetic_pairs (all)": 1,
        "synthetic_train w8": 1, "synthetic_train (all)": 1}
    assert r["job_seconds"] == pytest.approx(15.0)
    [job] = r["training"]
    assert job["job"] == "K4_w8_g0_f0" and job["seconds"] == 12.5 and job["note"] == ""
    assert job["steps_run"] == job["steps_total"] == 6 and job["steps_per_s"] > 0
    assert job["graphs"] == {"64": {"captured": False, "replayed": 0, "eager": 6}}
    pc = r["paper_comparison"]
    assert pc["counts"] == {"pass": 1, "FAIL": 1, "informational": 1} and pc["rows"] == 3
    assert pc["fail"] == [{"claim": "mean d_LLV falls with width", "source": "paper Fig. 3",
                           "ours": "0.75 -> 0.89", "paper": "decreasing",
                           "tolerance": "strictly lower"}]
    a = r["authors"]
    assert a["source"].startswith("stand-ins") and a["models"] == 3 and a["within"] == 2
    assert a["rows"] == [{"K": 4, "width": 8, "seeds": 3, "median_d_llv": 0.02,
                          "max_d_llv": 0.2, "within": 2, "authors_inter_seed_d_llv": 0.5,
                          "ours_inter_seed_d_llv": 0.4}]
    page = (tmp_path / "out" / f"{r['name']}.md").read_text()
    assert "**complete**: 1 call(s)" in page and "| mean d_LLV falls with width |" in page
    assert "| K4_w8_g0_f0 | 12.5 | 6 |" in page and "64: eager (0 replayed, 6 eager)" in page
    assert "2 of 3 within d_LLV 0.03" in page
    assert (results / "run-synthetic" / f"{r['name']}.json").is_file()  # for a next call


def test_a_cut_call_is_partial_and_the_next_call_continues_its_record(run, tmp_path,
                                                                       monkeypatch):
    results, overlay = run
    (results / "tables" / "ours_vs_authors.csv").unlink()
    (results / "tables" / "paper_comparison.csv").unlink()
    monkeypatch.setattr(run_record, "dry_run",
                        lambda configs: (5, {"synthetic_pairs": 4, "all": 1}, ""))
    smk_log(results, "2 of 9 steps (22%) done\nError in rule kl_table:\n"
                     "SIGTERM received: cancelling the running jobs and stopping; rerun\n"
                     "Error in rule synthetic_train:\n")
    out = tmp_path / "out"
    r = record_call(overlay, out, status=124, seconds=500.0)["run_synthetic"]
    assert r["status"] == "partial" and r["missing_jobs"] == 5
    assert r["missing_by_rule"] == {"synthetic_pairs": 4, "all": 1}
    assert r["calls"][0]["cut"] and r["calls"][0]["failed_rules"] == ["kl_table"]
    assert r["calls"][0]["stopped_rules"] == ["synthetic_train"]
    assert r["paper_comparison"] is None and r["authors"] is None
    assert "paper_comparison.csv not written" in r["notes"]["paper_comparison"]
    assert "ours_vs_authors.csv not written: stand-ins" in r["notes"]["authors"]
    page = (out / f"{r['name']}.md").read_text()
    assert "**partial**" in page and "124 (cut at 510s)" in page
    assert "stopped: synthetic_train" in page and "Jobs left: synthetic_pairs 4" in page

    monkeypatch.setattr(run_record, "dry_run", lambda configs: (0, {}, ""))
    smk_log(results, "7 of 7 steps (100%) done\n")
    out.joinpath(f"{r['name']}.json").unlink()  # a fresh OUT: the run's folder holds the record
    again = record_call(overlay, out, seconds=100.0)["run_synthetic"]
    assert again["name"] == r["name"] and again["status"] == "complete"
    assert [c["exit"] for c in again["calls"]] == [124, 0]
    assert again["wall_s"] == pytest.approx(600.0, abs=2.0)
    assert again["calls"][1]["jobs_done"] == "7 of 7 jobs (100%) done"

    out.joinpath(f"{r['name']}.json").unlink()
    third = record_call(overlay, out, seconds=5.0)["run_synthetic"]  # after a complete one
    assert len(third["calls"]) == 1 and third["wall_s"] == pytest.approx(5.0, abs=1.0)
    out.joinpath(f"{r['name']}.json").unlink()
    failed = record_call(overlay, out, status=1)["run_synthetic"]  # Snakemake's exit counts
    assert failed["status"] == "partial" and failed["missing_jobs"] == 0


def test_on_a_gpu_the_record_is_named_after_it_and_copied_to_the_records(run, tmp_path,
                                                                         monkeypatch):
    results, overlay = run
    monkeypatch.setattr(run_record, "RECORDS", tmp_path / "records")
    r = record_call(overlay, tmp_path / "out", gpu="NVIDIA H200")["run_synthetic"]
    assert r["name"].startswith("nvidia-h200-") and r["device"] == "NVIDIA H200"
    assert {p.name for p in (tmp_path / "records").iterdir()} == {f"{r['name']}.json",
                                                                  f"{r['name']}.md"}


def test_the_jobs_left_are_read_from_a_dry_run():
    stats = ("Job stats:\njob                      count\n---------------------  -------\n"
             "synthetic_train             20\nsynthetic_pairs             68\nall"
             "                          1\ntotal                       89\n\n")
    assert run_record.left_jobs("Building DAG of jobs...\n" + stats + "[rules]\n" + stats) == \
        (89, {"synthetic_train": 20, "synthetic_pairs": 68, "all": 1}, "")
    assert run_record.left_jobs("Nothing to be done (all requested files are present and up to "
                                "date).\n") == (0, {}, "")
    assert run_record.left_jobs("ConfigError ...", 1)[0] is None
    assert run_record.left_jobs("Building DAG of jobs...\n")[2] == \
        "the dry run printed no job count"


# --- the rehearsal's verdict ----------------------------------------------------------------

def test_the_rehearsal_fails_a_record_that_is_not_a_finished_run(run, tmp_path):
    results, overlay = run
    out = tmp_path / "out"
    record = record_call(overlay, out)
    path = next(out.glob("*.json"))
    assert gpu_rehearsal.run_verdict(out) == []
    assert gpu_rehearsal.run_verdict(out, calls=2) == ["1 calls recorded, 2 made"]

    def judged(change) -> list[str]:
        damaged = json.loads(json.dumps(record))
        change(damaged["run_synthetic"])
        path.write_text(json.dumps(damaged))
        return gpu_rehearsal.run_verdict(out)

    assert judged(lambda r: r.update(status="partial", missing_jobs=3)) == [
        "record partial", "3 jobs left"]
    assert judged(lambda r: r.update(failed_rules=["synthetic_train"])) == [
        "failed: synthetic_train"]
    assert judged(lambda r: r["calls"][0].update(exit=1)) == ["the last call exited 1"]
    assert judged(lambda r: r["training"][0].update(steps_per_s=None, graphs=None)) == [
        "training job K4_w8_g0_f0: steps/s None",
        "training job K4_w8_g0_f0: no step graphs recorded"]
    assert judged(lambda r: r.update(training=[])) == ["no training job"]
    assert judged(lambda r: r.update(paper_comparison=None, notes={"paper_comparison": "x"})) \
        == ["note paper_comparison: x", "paper comparison None"]
    assert judged(lambda r: r.update(wall_s=99.0)) == ["wall_s 99.0 is not the calls' sum"]
    path.unlink()
    assert gpu_rehearsal.run_verdict(out)[0].startswith("expected one record")


def test_the_rehearsal_narrows_run_synthetic_to_the_quick_size(tmp_path):
    overlay = yaml.safe_load(gpu_rehearsal.quick_overlay(tmp_path / "q.yaml").read_text())
    quick = yaml.safe_load((ROOT / "config.quick.yaml").read_text())
    assert overlay["outdir"] == "results/quick" and overlay["synthetic"] == quick["synthetic"]
    assert "lm" not in overlay and "prh" not in overlay  # Hugging Face stand-ins: not the image's
    assert not overlay["logit_distance"]["sub"]["enabled"]  # SUB's stand-in encoder is one too
    assert overlay["roeder"]["cpc"]["patch"] == [4, 8]  # half of a digit


# --- the authors' checkpoints in the bundle -------------------------------------------------

def test_the_bundle_carries_every_authors_checkpoint_for_run_synthetic(tmp_path):
    from repdist.models.authors import CHECKSUMS, read_checksums

    every = sorted(read_checksums(CHECKSUMS))
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    for name in AUTHORS_CHECKPOINTS:
        (theirs / name).write_bytes(b"x")
    out = tmp_path / ".gpu-bundle"
    out.mkdir()
    assert copy_authors_files(out, tmp_path / "no-code", theirs) == ["authors-checkpoints (10)"]
    assert not (out / "authors.yaml").exists()  # ten are not all: run-synthetic leaves them out
    for name in every:
        (theirs / name).write_bytes(b"x")
    out = tmp_path / "other" / ".gpu-bundle"
    out.mkdir(parents=True)
    assert copy_authors_files(out, tmp_path / "no-code", theirs) == [
        f"authors-checkpoints ({len(every)})", "authors.yaml"]
    assert sorted(p.name for p in (out / "authors-checkpoints").iterdir()) == every
    assert yaml.safe_load((out / "authors.yaml").read_text()) == {
        "authors_models": {"root": ".gpu-bundle/authors-checkpoints"}}
