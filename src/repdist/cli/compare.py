"""`repdist compare MODEL... -o pairs.parquet`: every measure for every pair (i < j in the order
given) of the models, in one table written atomically with provenance (DESCRIPTION says more)."""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..experiments.models.groups import ALIASES, MATCHES, compare_models, nan_report, plural
from ..io import write_table
from ..io.representations import ModelInputError
from ..measures import CompareSettings
from ..measures.cca import PRECISIONS
from ..measures.glossary import render_text
from ..measures.conventions import PRH_CONVENTIONS, SVCCA_MODES, with_prh_conventions
from ..measures.low_rank import LOW_RANK_ABOVE_LABELS, METHODS
from ..measures.null import DISTANCES, NULL_MEASURES, NullSettings
from ..measures.selection import MEASURES
from ..measures.svd import MAX_LABEL_SETS

NAME = "compare"
HELP = "every measure for every pair of models given as folders, .npz or .pt files"
SUMMARY = ("d_llv", "d_fg", "mcca_f", "kl")
EXIT_BAD_INPUT = 2
EXIT_NAN = 3  # --strict: the table is written, but some measure is NaN
SHOWN_WARNINGS = 5
DESCRIPTION = (
    "Every measure for every pair of models. Each MODEL is a folder with embeddings.parquet and "
    "unembeddings.parquet, an .npz with arrays f (N x M) and g (K x M), or a .pt dict of "
    "tensors f and g. Rows are matched by their index and label, never by position. Widths M "
    "may differ: m_SVD and d_fg are then NaN, and stderr says why. Exit status: 0 when the "
    "table is written, 2 on bad input (nothing written), 3 with --strict when a measure is NaN. "
    "--columns says what each column means.")
# Unless told otherwise, compare()'s own defaults (the DAG passes config.yaml's `measures`).
DEFAULTS = CompareSettings()
# The alignment options: flag -> CompareSettings field (None: not given on the command line).
CONVENTION_FLAGS = ("outlier_quantile", "unit_rows", "svcca", "svcca_components")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("models", nargs="*", type=Path, metavar="MODEL",
                   help="a folder with embeddings.parquet and unembeddings.parquet, an .npz "
                        "with arrays f and g, or a .pt dict of tensors f and g")
    p.add_argument("-o", "--output", type=Path, default=None,
                   help="the pairs table: .parquet or .csv (required unless --columns)")
    p.add_argument("--columns", action="store_true",
                   help="print what every column of the table means (distance or "
                        "similarity, which value means the same, range, source) and exit")
    p.add_argument("--num-samples", type=int, default=DEFAULTS.num_samples,
                   help="candidate diversity sets of M+1 inputs for d_LLV (default 200, or "
                        "N // (M+1) when the inputs hold fewer disjoint sets)")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed,
                   help=f"seed of every random draw (default {DEFAULTS.seed})")
    p.add_argument("--lam", type=float, default=DEFAULTS.lam,
                   help=f"weight of the scale terms t3, t4 in d_LLV (default {DEFAULTS.lam:g})")
    p.add_argument("--max-label-sets", type=int, default=DEFAULTS.max_label_sets,
                   help="above this many label sets, m_SVD_f runs on a seeded sample of them "
                        f"and d_fg is an estimate (default {MAX_LABEL_SETS}; by the low-rank "
                        "method as many M x M SVDs as ~2^33 operations allow, 18 at M = 768)")
    p.add_argument("--method", choices=METHODS, default=DEFAULTS.method,
                   help="exact: N x K log-likelihoods and K x K covariances, as the paper's "
                        "code; low_rank: nothing N x K kept, d_LLV's pivot search bounded by "
                        f"--max-pivots; auto (default): low_rank above {LOW_RANK_ABOVE_LABELS} "
                        "labels (a language model's vocabulary)")
    p.add_argument("--max-pivots", type=int, default=DEFAULTS.max_pivots,
                   help="low_rank: d_LLV's pivot search computes at most this many pivot rows "
                        "(branch and bound; a sample under dist_type mean); when that does not "
                        "prove the minimum, a warning, and t1 and d_LLV are at or above the "
                        f"exact search's (default {DEFAULTS.max_pivots})")
    p.add_argument("--precision", choices=PRECISIONS, default=DEFAULTS.precision,
                   help="the precision f and g were computed in, which sets m_CCA's rank "
                        "tolerance (a final LayerNorm's f varies in M - 1 directions, the "
                        "last one float32 rounding); auto (default): float32 where every "
                        "value is a float32 value, else float64, per model")
    p.add_argument("--device", default=DEFAULTS.device,
                   help="low_rank: where the logits are streamed and the pivot rows searched: "
                        "cpu (default), auto (a GPU when torch sees one) or a torch device "
                        "such as cuda or cuda:1; float64 there too")
    p.add_argument("--measures", default=None,
                   help=f"comma-separated subset of: {', '.join(MEASURES)} (default: all)")
    add_convention_arguments(p)
    add_null_arguments(p)
    p.add_argument("--match", choices=MATCHES, default="exact",
                   help="exact (default): every model must have the same inputs and labels, "
                        "matched by their index and label; intersect: compare the inputs and "
                        "labels all models share, saying how many each lost")
    p.add_argument("--strict", action="store_true",
                   help=f"exit with status {EXIT_NAN} when any measure is NaN (the table is "
                        "still written; stderr says why each NaN is there)")
    p.add_argument("--jobs", type=int, default=1,
                   help="pairs computed in this many processes, with the same results as one "
                        "(default 1); each uses the BLAS's threads, so with many jobs set "
                        "OPENBLAS_NUM_THREADS=1 (the same for every run you compare)")


def add_convention_arguments(p: argparse.ArgumentParser) -> None:
    """How the f-side alignment measures (cka_f, svcca_f, k-NN, cknna_f) read f."""
    prh = PRH_CONVENTIONS
    p.add_argument("--outlier-quantile", type=float, default=None, metavar="Q",
                   help="clamp f's values at the mean over inputs of each row's Q-quantile "
                        "of |f| first (default "
                        f"{DEFAULTS.outlier_quantile:g}: no clamp; "
                        f"--prh: {prh['outlier_quantile']})")
    p.add_argument("--unit-rows", action=argparse.BooleanOptionalAction, default=None,
                   help="L2-normalise f's rows (after the clamp) (default: no; --prh: yes)")
    p.add_argument("--svcca", choices=SVCCA_MODES, default=None,
                   help="svcca_f on the principal components of 99%% of the variance, or on "
                        "z-scored columns with --svcca-components of them (default "
                        f"{DEFAULTS.svcca}; --prh: {prh['svcca']})")
    p.add_argument("--svcca-components", type=int, default=None, metavar="K",
                   help="components of --svcca zscored (default "
                        f"{DEFAULTS.svcca_components})")
    p.add_argument("--prh", action="store_true",
                   help="the Platonic Representation Hypothesis' conventions (Huh et al. 2024): "
                        "--outlier-quantile 0.95 --unit-rows --svcca zscored --svcca-components "
                        "10, each overridden by its own flag")


def add_null_arguments(p: argparse.ArgumentParser) -> None:
    """A permutation null beside each score (measures/null.py)."""
    null = NullSettings()
    p.add_argument("--null", type=int, default=0, metavar="K",
                   help="each score beside its chance level: K permutations of one model's "
                        "inputs (of its labels for m_CCA and m_SVD of g) give the columns "
                        "<measure>_tau (the null's 1 - alpha quantile; alpha for distances), "
                        "<measure>_p and <measure>_calibrated (default 0: none; the "
                        f"workflow's config.yaml: {null.permutations})")
    p.add_argument("--null-alpha", type=float, default=null.alpha, metavar="ALPHA",
                   help=f"the level of the null's threshold tau (default {null.alpha:g})")
    p.add_argument("--null-measures", default=",".join(null.chosen), metavar="LIST",
                   help=f"comma-separated measures the null is drawn for, of: "
                        f"{', '.join(NULL_MEASURES)} (default: {', '.join(null.chosen)})")


def run(args: argparse.Namespace) -> int:
    """The `compare` subcommand; returns the exit status."""
    if args.columns:
        print(render_text())
        return 0
    try:
        output, settings = _check_arguments(args)
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            frame, meta = compare_models(args.models, settings, args.jobs, args.match)
        write_table(output, frame, meta)
    except (ModelInputError, ValueError, MemoryError, OSError) as err:
        print(f"repdist compare: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _summary(frame, len(meta["models"]), output, time.perf_counter() - start, settings)
    nan = _explain(frame, meta["notes"], [str(w.message) for w in caught])
    if args.strict and nan:
        print(f"repdist compare: --strict: {plural(nan, 'NaN value')} in the table (written to "
              f"{output})", file=sys.stderr)
        return EXIT_NAN
    return 0


def _explain(frame: Any, notes: list[str], caught: list[str]) -> int:
    """On stderr: the notes (rows matched, too few inputs), each NaN column with its reason, the
    other warnings once each. Returns how many measure values are NaN."""
    lines = [f"note: {note}" for note in notes] + nan_report(frame)
    told = " ".join(lines)
    parts: dict[str, int] = {}
    for warning in frame["warning"].fillna("").astype(str):
        for part in filter(None, warning.split("; ")):
            parts[part] = parts.get(part, 0) + 1
    rest = [(text, count) for text, count in parts.items() if text not in told]
    lines += [f"warning: {text} ({plural(count, 'pair')})"
              for text, count in rest[:SHOWN_WARNINGS]]
    if len(rest) > SHOWN_WARNINGS:
        lines.append(f"warning: {len(rest) - SHOWN_WARNINGS} more in the warning column")
    known = " ".join(parts)
    lines += [f"warning: {text}" for text in dict.fromkeys(caught) if text not in known]
    for line in lines:
        print(f"repdist compare: {line}", file=sys.stderr)
    numeric = frame.select_dtypes("float")
    return int(numeric.isna().to_numpy().sum())


def _check_arguments(args: argparse.Namespace) -> tuple[Path, CompareSettings]:
    """Fail fast, before reading any model, on a bad output name or setting."""
    if args.output is None:
        raise ValueError("give the output table with -o/--output (.parquet or .csv)")
    output = Path(args.output)
    if output.suffix not in (".parquet", ".csv"):
        raise ValueError(f"{output}: the output must end in .parquet or .csv, "
                         f"got {output.suffix or 'no suffix'!r}")
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    measures = None if args.measures is None else [ALIASES.get(name.strip(), name.strip())
                                                    for name in args.measures.split(",")]
    given = {key: getattr(args, key) for key in CONVENTION_FLAGS
             if getattr(args, key) is not None}
    conventions = with_prh_conventions({**given, "prh_conventions": args.prh})
    settings = CompareSettings(num_samples=args.num_samples, lam=args.lam, seed=args.seed,
                               max_label_sets=args.max_label_sets, measures=measures,
                               method=args.method, max_pivots=args.max_pivots,
                               precision=args.precision, device=args.device,
                               null={"permutations": args.null, "alpha": args.null_alpha,
                                     "measures": args.null_measures, "seed": args.seed},
                               **conventions)
    return output, settings


def _summary(frame: Any, n_models: int, output: Path, seconds: float,
             settings: CompareSettings) -> None:
    print(f"repdist compare: {n_models} models, {plural(len(frame), 'pair')} -> {output} "
          f"({seconds:.1f} s)")
    for column in SUMMARY:
        if column in frame:
            print(_summary_line(column, frame[column].to_numpy(dtype=np.float64)))
            if isinstance(settings.null, NullSettings) and f"{column}_tau" in frame:
                print(_null_line(frame, column, settings.null.alpha))
    if "d_fg_estimate" in frame and frame["d_fg_estimate"].any():
        print(_estimate_line(frame))
    flagged = int((frame["warning"] != "").sum())
    if flagged:
        print(f"  {plural(flagged, 'pair')} with a warning (the warning column; "
              "stderr says why)")


def _estimate_line(frame: Any) -> str:
    """Which pairs' d_fg is an estimate, and on how many label sets (those pairs' own counts)."""
    estimated = frame["d_fg_estimate"].to_numpy(dtype=bool)
    counts = sorted({int(c) for c in frame["m_svd_label_sets"].to_numpy()[estimated]})
    sets = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    pairs = ("" if estimated.all()
             else f" for {int(estimated.sum())} of {plural(len(frame), 'pair')}")
    return (f"  d_fg is an estimate (a lower bound){pairs}: m_SVD_f ran on a sample of {sets} "
            "label sets")


def _null_line(frame: Any, column: str, alpha: float) -> str:
    """A measure's chance level: tau, the largest p, the calibrated mean, pairs beyond chance."""
    tau = frame[f"{column}_tau"].to_numpy(dtype=np.float64)
    p = frame[f"{column}_p"].to_numpy(dtype=np.float64)
    calibrated = frame[f"{column}_calibrated"].to_numpy(dtype=np.float64)
    side = "below" if column in DISTANCES else "above"
    return (f"  {'':<7} chance: tau mean {np.nanmean(tau):.6g}, p max {np.nanmax(p):.3g}, "
            f"calibrated mean {np.nanmean(calibrated):.3g}; {int(np.sum(p <= alpha))} "
            f"of {plural(len(p), 'pair')} {side} chance (p <= {alpha:g})")


def _summary_line(column: str, values: np.ndarray) -> str:
    finite = values[np.isfinite(values)]
    if finite.size:
        line = (f"  {column:<7} mean {finite.mean():.6g}  min {finite.min():.6g}  "
                f"max {finite.max():.6g}")
    else:
        line = f"  {column:<7} no finite value"
    nan = values.size - finite.size
    return line + (f"  ({nan} NaN)" if nan else "")
