"""The record of `bash .gpu-bundle/run.sh run-synthetic` (repdist_dev.gpu_bundle).
It says what `make run-synthetic` did on a machine, in one call or in the calls that finished it.

run.sh writes it after every call, a cut one included, from the run's own files. A value the files
do not give is null, and `notes` says why."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from repdist.cli.job_times import benchmarks, groups
from repdist.cli.progress import jobs_done, newest_snakemake_log
from repdist.io.files import write_text
from repdist.pipeline.stopping import STOPPING_NOTE
from repdist_dev.checkout import ROOT, paper_config
from repdist_dev.records import RECORDS, commit, slug

SCHEMA = "repdist-run-synthetic/1"
FOLDER = "run-synthetic"  # under the run's outdir: the record a next call continues
SUFFIX = "-run-synthetic"
BASE_CONFIGS = ["config.synthetic.yaml"]  # make run-synthetic's overlay, before CONFIG's
PROFILE = "profiles/workstation"  # the Makefile's
CUT = (124, 137)  # timeout's exit statuses: SIGTERM at the limit, KILL after it
TRAINING_RULE = "synthetic_train"  # the benchmark folder of the synthetic training jobs
DRY_RUN_S = 30.0  # within the 10 minutes: 510 s of run, 20 s to stop, the install and this
TRAINING_JOB = re.compile(r"^K(\d+)_w(\d+)_(variants|g\d+_f\d+)$")
ERROR_IN_RULE = re.compile(r"^Error in rule (\S+):", re.M)


def run_config(configfiles: list[str]) -> dict[str, Any]:
    """config.yaml with the overlays merged as Snakemake merges --configfile's."""
    import yaml
    from snakemake.utils import update_config

    config = paper_config()
    for name in configfiles:
        update_config(config, yaml.safe_load((ROOT / name).read_text()) or {})
    return config


def dry_run(configfiles: list[str]) -> tuple[int | None, dict[str, int], str]:
    """The jobs a rerun of the same command would run (Snakemake's dry run with the Makefile's
    profile): left_jobs of its output."""
    cmd = [sys.executable, "-m", "snakemake", "-n", "--profile", PROFILE, "--cores", "1",
           "--configfile", *configfiles]
    try:
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=DRY_RUN_S)
    except subprocess.TimeoutExpired:
        return None, {}, f"the dry run took over {DRY_RUN_S:.0f} s"
    return left_jobs(out.stdout + out.stderr, out.returncode)


# `status`: complete when Snakemake exited 0 and a dry run of the same command finds nothing left
# to do, else partial.
def left_jobs(text: str, status: int = 0) -> tuple[int | None, dict[str, int], str]:
    """From a dry run's output: the jobs left in all and by rule (its last job stats), or None
    and why."""
    if status != 0:
        return None, {}, f"the dry run failed (exit {status}): {text[-300:].strip()}"
    if "Nothing to be done" in text:
        return 0, {}, ""
    stats = text.rsplit("Job stats:", 1)[-1]
    totals = re.findall(r"^total\s+(\d+)\s*$", stats, re.M)
    if "Job stats:" not in text or not totals:
        return None, {}, "the dry run printed no job count"
    by_rule = {r: int(n) for r, n in re.findall(r"^(\w+)\s+(\d+)\s*$", stats, re.M)
               if r != "total"}
    return int(totals[-1]), by_rule, ""


def snakemake_log(results: Path, since: float) -> tuple[str | None, list[str], list[str]]:
    """This call's Snakemake log (the newest, written since `since`): its jobs done, the rules
    it reports failed, and those whose jobs a stop (SIGTERM, SIGINT) ended."""
    log = newest_snakemake_log(results)
    if log is None or log.stat().st_mtime < since:
        return None, [], []
    text = log.read_text(errors="replace")
    before, _, after = text.partition(STOPPING_NOTE)
    return (jobs_done(text), sorted(set(ERROR_IN_RULE.findall(before))),
            sorted(set(ERROR_IN_RULE.findall(after))))


def job_metrics(results: Path, name: str) -> dict[str, Any] | None:
    """The metrics.json of one synthetic training job's first model (the job's speed is every
    model's): K4_w16_variants trained every variant of K = 4, width 16."""
    match = TRAINING_JOB.match(name)
    if not match:
        return None
    k, width, which = match.groups()
    variant = "g*_f*" if which == "variants" else which
    found = sorted((results / "synthetic" / f"K{k}").glob(f"w{width}_{variant}/seed*/"
                                                          "metrics.json"))
    return json.loads(found[0].read_text()) if found else None


def training(results: Path, jobs: list[Any]) -> list[dict[str, Any]]:
    """Each finished synthetic training job: its seconds (benchmark), steps, steps/s and CUDA
    graphs (its models' metrics.json, repdist.experiments.synthetic.training.speed_metrics)."""
    rows = []
    for job in jobs:
        if job.rule != TRAINING_RULE:
            continue
        metrics = job_metrics(results, job.name) or {}
        row: dict[str, Any] = {"job": job.name, "seconds": round(job.seconds, 2)}
        for key in ("steps_run", "steps_total", "steps_per_s", "step_graphs"):
            row[key] = metrics.get(key)
        row["graphs"] = metrics.get("step_graph_sizes")
        row["graph_error"] = metrics.get("step_graph_error")
        missing = [k for k in ("steps_per_s", "step_graphs") if k not in metrics]
        row["note"] = ("no metrics.json of its models found" if not metrics else
                       f"{', '.join(missing)} not in its metrics.json (written before they "
                       "were recorded)" if missing else "")
        rows.append(row)
    return rows


def shown(path: Path) -> str:
    """A path as a note names it: from the checkout where it lies inside."""
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def paper_comparison(results: Path) -> tuple[dict[str, Any] | None, str]:
    """The paper comparison's verdicts counted and its FAIL rows (tables/paper_comparison.csv)."""
    path = results / "tables" / "paper_comparison.csv"
    if not path.is_file():
        return None, f"{shown(path)} not written (the run did not reach it)"
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    fails = [{k: r[k] for k in ("claim", "source", "ours", "paper", "tolerance")}
             for r in rows if r["verdict"] == "FAIL"]
    return {"rows": len(rows), "counts": dict(Counter(r["verdict"] for r in rows)),
            "fail": fails}, ""


def authors_source(config: dict[str, Any]) -> str:
    """Whose checkpoints `our seed s vs theirs` compares with, as the run's config says."""
    from repdist.pipeline.availability import authors_on

    aut = config["authors_models"]
    if not authors_on(config):
        return "left out (no copy of their checkpoints; authors_models.enabled: auto)"
    if aut["standin"]:
        return "stand-ins in their format, made by the run (authors_models.standin)"
    return f"the authors' checkpoints in {aut['root'] or aut['resources']}"


def _number(text: str) -> float | None:
    """A table's number; None for an empty or NaN cell (a measure not defined there)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _summary(values: list[float | None], tolerance: float) -> dict[str, Any]:
    """d_LLV's median and largest over the models where it is defined, and how many lie within
    `tolerance`."""
    d = [v for v in values if v is not None]
    return {"median_d_llv": statistics.median(d) if d else None,
            "max_d_llv": max(d) if d else None, "within": sum(v < tolerance for v in d)}


def authors(results: Path, config: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """Our seed s against the authors' seed s, per configuration (tables/ours_vs_authors.csv):
    d_LLV's median and largest, the seeds within the retrace tolerance, the mean between
    different seeds (theirs, ours)."""
    from repdist.experiments.authors.ours_vs_authors import RETRACE_TOLERANCE

    source = authors_source(config)
    path = results / "tables" / "ours_vs_authors.csv"
    if not path.is_file():
        return None, f"{shown(path)} not written: {source}"
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    table = []
    for key in sorted({(int(r["K"]), int(r["width"])) for r in rows}):
        part = [r for r in rows if (int(r["K"]), int(r["width"])) == key]
        table.append({"K": key[0], "width": key[1], "seeds": len(part),
                      **_summary([_number(r["d_llv"]) for r in part], RETRACE_TOLERANCE),
                      "authors_inter_seed_d_llv": _number(part[0]["authors_inter_seed_d_llv"]),
                      "ours_inter_seed_d_llv": _number(part[0]["ours_inter_seed_d_llv"])})
    overall = _summary([_number(r["d_llv"]) for r in rows], RETRACE_TOLERANCE)
    return {"source": source, "tolerance": RETRACE_TOLERANCE, "models": len(rows),
            "within": overall["within"], "median_d_llv": overall["median_d_llv"],
            "rows": table}, ""


def previous(folder: Path, configfiles: list[str]) -> dict[str, Any] | None:
    """The record this call continues (its calls kept, this one added): the newest in `folder`,
    partial, of the same configs. After a complete one a new record starts."""
    found = sorted(folder.glob(f"*{SUFFIX}.json"), key=lambda p: p.stat().st_mtime)
    try:
        data = json.loads(found[-1].read_text())["run_synthetic"] if found else None
    except (ValueError, KeyError):  # not a record of this format: start a new one
        return None
    if data and data["status"] == "partial" and data["configfiles"] == configfiles:
        return data
    return None


def this_call(args: argparse.Namespace, results: Path, now: float) -> dict[str, Any]:
    done, failed, stopped = snakemake_log(results, args.started)
    seconds = round(now - args.started, 1)
    return {"started": dt.datetime.fromtimestamp(args.started).isoformat(timespec="seconds"),
            "seconds": seconds, "minutes": round(seconds / 60, 2),
            "command_s": round(now - (args.begun or args.started), 1), "exit": args.exit,
            "cut": args.exit in CUT, "budget": args.budget, "jobs_done": done,
            "failed_rules": failed, "stopped_rules": stopped}


def build(args: argparse.Namespace) -> dict[str, Any]:
    """The record after this call (the earlier calls' kept where it continues one)."""
    now = time.time()
    configfiles = BASE_CONFIGS + args.config.split()
    config = run_config(configfiles)
    results = ROOT / config["outdir"]
    earlier = previous(results / FOLDER, configfiles)
    call = this_call(args, results, now)
    calls = (earlier["calls"] if earlier else []) + [call]
    left, left_by_rule, why_left = dry_run(configfiles)
    notes: dict[str, str] = {}
    if why_left:
        notes["missing_jobs"] = why_left
    jobs = benchmarks(results) if (results / "benchmarks").is_dir() else []
    comparison, notes["paper_comparison"] = paper_comparison(results)
    theirs, notes["authors"] = authors(results, config)
    wall = round(sum(c["seconds"] for c in calls), 1)
    head, dirty = commit()
    date = earlier["date"] if earlier else dt.date.today().isoformat()
    gpu_slug = slug(args.gpu) if args.gpu else "cpu"
    return {"schema": SCHEMA, "run_synthetic": {
        "name": f"{gpu_slug}-{date}{SUFFIX}",
        "status": "complete" if args.exit == 0 and left == 0 else "partial",
        "wall_s": wall, "minutes": round(wall / 60, 2), "calls": calls,
        "device": args.gpu or "cpu", "gpu_slug": gpu_slug, "torch": args.torch,
        "python": platform.python_version(), "host": platform.node(), "cores": os.cpu_count(),
        "commit": head, "dirty": dirty, "date": date, "configfiles": configfiles,
        "outdir": config["outdir"], "missing_jobs": left, "missing_by_rule": left_by_rule,
        "failed_rules": call["failed_rules"],
        "jobs_by_rule": [{"group": g.label, "jobs": len(g.jobs), "seconds": round(g.seconds, 1),
                          "longest_s": round(g.longest, 1), "max_rss_mb": g.max_rss_mb}
                         for g in groups(jobs)],
        "job_seconds": round(sum(j.seconds for j in jobs), 1),
        "training": training(results, jobs), "paper_comparison": comparison,
        "authors": theirs, "notes": {k: v for k, v in notes.items() if v}}}


def _f(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:,.{digits}f}"


def graphs_text(graphs: dict[str, dict[str, Any]] | None) -> str:
    if not graphs:
        return "-"
    return ", ".join(f"{size}: {'captured' if g['captured'] else 'eager'} ({g['replayed']:,} "
                     f"replayed, {g['eager']:,} eager)" for size, g in graphs.items())


def markdown(record: dict[str, Any]) -> str:
    """The record as a short readable page: the calls, jobs by rule, training, the verdicts."""
    r = record["run_synthetic"]
    left = "unknown" if r["missing_jobs"] is None else f"{r['missing_jobs']} jobs left"
    lines = [f"# run-synthetic {r['name']}", "",
             f"{r['device']}; torch {r['torch'] or '-'}, Python {r['python']}; {r['cores']} cores;"
             f" commit {r['commit']}{' (with uncommitted changes)' if r['dirty'] else ''}; "
             f"configs {' '.join(r['configfiles'])} (outdir {r['outdir']}).", "",
             f"**{r['status']}**: {len(r['calls'])} call(s), {r['minutes']:.1f} min in all; "
             f"{left}; failed in the last call: {', '.join(r['failed_rules']) or 'none'}.", "",
             "| call | started | minutes | exit | Snakemake |", "|---|---|---|---|---|"]
    lines += [f"| {i} | {c['started']} | {c['minutes']:.2f} | {c['exit']}"
              f"{' (cut at ' + c['budget'] + ')' if c['cut'] else ''} | {c['jobs_done'] or '-'}"
              f"{'; failed: ' + ', '.join(c['failed_rules']) if c['failed_rules'] else ''}"
              f"{'; stopped: ' + ', '.join(c['stopped_rules']) if c['stopped_rules'] else ''} |"
              for i, c in enumerate(r["calls"], 1)]
    lines += ["", "| jobs | count | job-seconds | longest s | peak RSS MB |",
              "|---|---|---|---|---|"]
    lines += [f"| {g['group']} | {g['jobs']} | {_f(g['seconds'])} | {_f(g['longest_s'])} | "
              f"{_f(g['max_rss_mb'], 0)} |" for g in r["jobs_by_rule"]]
    lines += ["", "| training job | seconds | steps | steps/s | graphs |", "|---|---|---|---|---|"]
    lines += [f"| {t['job']} | {_f(t['seconds'])} | {_f(t['steps_run'], 0)} | "
              f"{_f(t['steps_per_s'])} | {graphs_text(t['graphs'])}"
              f"{'; ' + t['note'] if t['note'] else ''} |" for t in r["training"]]
    return "\n".join(lines + verdict_lines(r)) + "\n"


def verdict_lines(r: dict[str, Any]) -> list[str]:
    """The paper comparison's counts and FAIL rows, the authors' table, the notes."""
    lines = [""]
    pc = r["paper_comparison"]
    if pc is not None:
        lines += [f"Paper comparison ({pc['rows']} rows): " + ", ".join(
            f"{n} {v}" for v, n in sorted(pc["counts"].items())), ""]
        if pc["fail"]:
            lines += ["| FAIL | ours | paper | tolerance |", "|---|---|---|---|"]
            lines += [f"| {f['claim']} | {f['ours']} | {f['paper']} | {f['tolerance']} |"
                      for f in pc["fail"]] + [""]
    a = r["authors"]
    if a is not None:
        lines += [f"Our seed s vs the authors' seed s ({a['source']}): {a['within']} of "
                  f"{a['models']} within d_LLV {a['tolerance']}, median "
                  f"{_f(a['median_d_llv'], 4)}.", "",
                  "| K | width | seeds | median d_LLV | within | max d_LLV | theirs apart |"
                  " ours apart |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {t['K']} | {t['width']} | {t['seeds']} | {_f(t['median_d_llv'], 4)} | "
                  f"{t['within']}/{t['seeds']} | {_f(t['max_d_llv'], 4)} | "
                  f"{_f(t['authors_inter_seed_d_llv'], 3)} | {_f(t['ours_inter_seed_d_llv'], 3)} |"
                  for t in a["rows"]] + [""]
    if r["missing_by_rule"]:
        lines += ["Jobs left: " + ", ".join(f"{k} {v}" for k, v in r["missing_by_rule"].items()),
                  ""]
    lines += [f"- {k}: {v}" for k, v in r["notes"].items()]
    return lines


def write(record: dict[str, Any], folders: list[Path]) -> list[Path]:
    """<folder>/<name>.json and .md in each folder, each file atomically."""
    name = record["run_synthetic"]["name"]
    text, page = json.dumps(record, indent=1) + "\n", markdown(record)
    written = []
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        write_text(folder / f"{name}.json", text)
        write_text(folder / f"{name}.md", page)
        written.append(folder / f"{name}.json")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exit", type=int, required=True, help="make run-synthetic's status")
    parser.add_argument("--started", type=float, required=True, help="its start, epoch s")
    parser.add_argument("--begun", type=float, help="the command's start (install included)")
    parser.add_argument("--budget", default="", help="the call's time limit, as timeout took it")
    parser.add_argument("--gpu", default="", help="the GPU's name (none: the CPU)")
    parser.add_argument("--torch", default="", help="torch's version")
    parser.add_argument("--config", default="", help="make's CONFIG: overlays after "
                        "config.synthetic.yaml")
    parser.add_argument("--out", type=Path, help="a folder to write the record into as well")
    parser.add_argument("--no-copy", action="store_true",
                        help="on a GPU, do not copy the record into benchmarks/records/")
    args = parser.parse_args(argv)
    record = build(args)
    r = record["run_synthetic"]
    folders = [ROOT / r["outdir"] / FOLDER] + ([args.out] if args.out else [])
    if args.gpu and not args.no_copy:
        folders.append(RECORDS)
    paths = write(record, folders)
    print(markdown(record), end="")
    print(f"run-synthetic: record {r['status']}, {len(r['calls'])} call(s), "
          f"{r['minutes']:.1f} min: " + ", ".join(str(p) for p in paths), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
