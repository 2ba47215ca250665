"""How each measure of `compare` scales with the labels K and the width M, towards a language
model's sizes (K = 50,257, M = 768, N = 10,000 contexts; the LM issue's target: every measure
within 60 s and 8 GiB on 2 cores).

Each cell (K, M, one measure) runs `compare(..., measures=[measure])` with the defaults on two
models of the benchmark family (benchmarks/measures.py::model_family) in a fresh process,
under a time limit and an address-space limit, and reports its wall time, peak resident
memory (ru_maxrss of that process: Python, numpy, torch and the two models included) and the
path `method="auto"` took (exact up to 1,024 labels, low_rank above). The column "paper" is
the paper's five measures in one call (KL, d_LLV, d_fg with m_SVD, m_CCA of f and g), sharing
their work. A cell past a limit is reported as such, and the larger cells of that measure (K
and M both at least as large) are not run; a cell that `compare` refuses (K - 2 < M, say) is
reported with its message.

--pivot-error instead measures the low-rank path's sampled pivot search against the exact
search over every pivot, on several seeds, at sizes where both run.

Usage: python benchmarks/measures_sweep.py [--n 10000] [--k 100 500 ...] [--m 8 64 ...]
                                           [--limit-s 120] [--limit-gib 8] [--json out.json]
       python benchmarks/measures_sweep.py --pivot-error [--k 2000 5000] [--m 64] [--seeds 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

MEASURES = ("kl", "d_llv", "d_fg", "mcca_f", "mcca_g", "paper")
PAPER = "kl,d_llv,d_fg,mcca_f,mcca_g"


def run_cell(k: int, m: int, n: int, measure: str) -> dict[str, float]:
    """One measure on one pair, in this process (the child's side)."""
    import numpy as np

    from repdist.measures import compare
    from repdist.measures.compare import CompareSettings, candidate_count
    from repdist.measures.low_rank import use_low_rank
    from repdist_dev.family import model_family

    (f1, g1), (f2, g2) = model_family(2, n, k, m)
    start = time.perf_counter()
    result = compare(f1, g1, f2, g2, measures=PAPER if measure == "paper" else [measure])
    seconds = time.perf_counter() - start
    value = result["d_llv" if measure == "paper" else measure]
    return {"seconds": seconds, "num_samples": candidate_count(CompareSettings(), n, m),
            "method": "low_rank" if use_low_rank("auto", k) else "exact",
            "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "value": float(value) if np.isscalar(value) else None}


def pivot_error(ks: list[int], ms: list[int], n: int, seeds: int) -> list[dict]:
    """t1 and d_LLV by the low-rank path's pivot sample (the default max_pivots) against the
    exhaustive search (every pivot) and the exact path, per model-family seed."""
    from repdist.measures import compare
    from repdist_dev.family import model_family

    rows = []
    for k in ks:
        for m in ms:
            for seed in range(seeds):
                (f1, g1), (f2, g2) = model_family(2, n, k, m, seed=seed)
                runs = {"exact": dict(method="exact"),
                        "every_pivot": dict(method="low_rank", max_pivots=k),
                        "sampled": dict(method="low_rank")}
                got = {}
                for name, kw in runs.items():
                    start = time.perf_counter()
                    got[name] = compare(f1, g1, f2, g2, measures="d_llv,t1,y_pivot", **kw)
                    got[name]["seconds"] = time.perf_counter() - start
                exact, sampled = got["exact"], got["sampled"]
                row = {"k": k, "m": m, "n": n, "seed": seed, "t1_exact": exact["t1"],
                       "t1_every_pivot": got["every_pivot"]["t1"], "t1_sampled": sampled["t1"],
                       "d_llv_exact": exact["d_llv"], "d_llv_sampled": sampled["d_llv"],
                       "same_pivot": exact["y_pivot"] == sampled["y_pivot"],
                       **{f"seconds_{name}": r["seconds"] for name, r in got.items()}}
                row["t1_rel_error"] = (row["t1_sampled"] - row["t1_exact"]) / row["t1_exact"]
                rows.append(row)
                print(f"K={k} M={m} seed={seed}: t1 exact {row['t1_exact']:.6g}, every pivot "
                      f"{row['t1_every_pivot']:.6g}, sampled {row['t1_sampled']:.6g} "
                      f"({100 * row['t1_rel_error']:+.2f}%), same pivot {row['same_pivot']}; "
                      f"d_LLV exact {row['d_llv_exact']:.6g}, sampled {row['d_llv_sampled']:.6g}"
                      f" ({row['seconds_exact']:.1f} s / {row['seconds_sampled']:.1f} s)",
                      flush=True)
    return rows


def cell(k: int, m: int, n: int, measure: str, limit_s: float, limit_gib: float) -> dict:
    """Run one cell in a child process under the limits; its row."""
    row: dict = {"k": k, "m": m, "n": n, "measure": measure}
    limit = int(limit_gib * 2**30)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    try:
        done = subprocess.run([sys.executable, __file__, "--cell", str(k), str(m), str(n),
                               measure], capture_output=True, text=True, timeout=limit_s,
                              preexec_fn=cap)
    except subprocess.TimeoutExpired:
        return {**row, "status": f"> {limit_s:g} s"}
    if done.returncode != 0:
        memory = "MemoryError" in done.stderr or "Unable to allocate" in done.stderr
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        return {**row, "status": f"> {limit_gib:g} GiB" if memory else f"failed: {tail[0]}"}
    return {**row, "status": "ok", **json.loads(done.stdout.strip().splitlines()[-1])}


def sweep(ks: list[int], ms: list[int], n: int, limit_s: float, limit_gib: float) -> list[dict]:
    rows, failed = [], {measure: [] for measure in MEASURES}
    for k in ks:
        for m in ms:
            for measure in MEASURES:
                beyond = [(k0, m0) for k0, m0 in failed[measure] if k >= k0 and m >= m0]
                if beyond:
                    rows.append({"k": k, "m": m, "n": n, "measure": measure,
                                 "status": f"not run (K={beyond[0][0]}, M={beyond[0][1]} did "
                                           "not fit)"})
                    continue
                row = cell(k, m, n, measure, limit_s, limit_gib)
                rows.append(row)
                if row["status"].startswith(">"):  # past a limit: larger cells would be too
                    failed[measure].append((k, m))
                print(_line(row), flush=True)
    return rows


def _line(row: dict) -> str:
    what = (f"{row['seconds']:.2f} s, {row['peak_rss_gib']:.2f} GiB ({row['method']})"
            if row["status"] == "ok" else row["status"])
    return f"K={row['k']:>6} M={row['m']:>4} N={row['n']} {row['measure']:>7}: {what}"


def _short(status: str) -> str:
    """A refused cell's status as a table cell (the JSON keeps the whole message)."""
    return "refused: K - 2 < M" if "K-2 >= M" in status else status


def table(rows: list[dict], ks: list[int], ms: list[int]) -> str:
    """A Markdown table: one row per (K, M), one column per measure."""
    out = ["| K | M | " + " | ".join(MEASURES) + " |", "|---|---|" + "---|" * len(MEASURES)]
    by = {(r["k"], r["m"], r["measure"]): r for r in rows}
    for k in ks:
        for m in ms:
            cells = []
            for measure in MEASURES:
                r = by[(k, m, measure)]
                cells.append(f"{r['seconds']:.1f} s, {r['peak_rss_gib']:.2f} GiB"
                             if r["status"] == "ok" else _short(r["status"]))
            out.append(f"| {k:,} | {m} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--k", type=int, nargs="+", default=[100, 500, 2_000, 5_000, 50_257])
    parser.add_argument("--m", type=int, nargs="+", default=[8, 64, 768])
    parser.add_argument("--limit-s", type=float, default=120.0)
    parser.add_argument("--limit-gib", type=float, default=8.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pivot-error", action="store_true",
                        help="the sampled pivot search against the exact one (default K 2000 "
                             "5000, M 64)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--cell", nargs=4, metavar=("K", "M", "N", "MEASURE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cell:
        k, m, n, measure = args.cell
        print(json.dumps(run_cell(int(k), int(m), int(n), measure)))
        return
    if args.pivot_error:
        given = {"--k", "--m"} & set(sys.argv)
        ks = args.k if "--k" in given else [2_000, 5_000]
        ms = args.m if "--m" in given else [64]
        rows = pivot_error(ks, ms, args.n, args.seeds)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
        return
    rows = sweep(args.k, args.m, args.n, args.limit_s, args.limit_gib)
    print(table(rows, args.k, args.m))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
