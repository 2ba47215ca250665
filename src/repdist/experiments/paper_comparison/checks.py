"""Reproduced vs paper: every number or trend the paper (or its authors' code) states, next to
ours, with a tolerance and a verdict. Built from the workflow's own outputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...io import read_csv
from ..synthetic.alignment import alignment_trends, rank_correlation
from ..authors.ours_vs_authors import RETRACE_TOLERANCE
from ..prh.study import trend_rows
from ..roeder.cpc_tables import Trend, trend
from ..roeder.curves import first_near_max_step


TOY, PAPER_SCALE = "toy", "paper"  # config `scale`
NOT_JUDGED = "not judged at toy scale"
NO_DATA = "no data"
# The verdict column's words, and what each means (the page's legend; docs/results.md).
VERDICTS = {
    "pass": "the check holds.",
    "FAIL": "the check does not hold.",
    "explained": "differs from the paper for a reason found and stated.",
    "informational": "no verdict: the paper states no number or test for it.",
    NOT_JUDGED: "a trend the paper shows at its scale; the tolerance names the run that "
                "judges it.",
    NO_DATA: "nothing to judge (no pair or item); the tolerance says why.",
}
# The runs that judge a paper-scale trend (Check.judged_by).
SYNTHETIC_RUN = "make run-synthetic"
FULL_RUN = "make run"
FOLLOW_UP_RUN = "make run-logit-distance"
PRH_RUN = "snakemake --cores N --configfile config.prh.yaml prh_all"
AUTHORS_RUN = "make authors, then make run-synthetic"
WIDTH_CLAIM = "paper Fig. 3 right / App. F.7"


@dataclass(frozen=True)
class Check:
    """One row. `judged_by`: the run that judges a paper-scale trend (a toy run does not);
    empty for a check that holds at any scale. `no_data`: why there is nothing to judge."""

    claim: str
    source: str
    ours: float | str
    theirs: float | str
    tolerance: str
    passed: bool | None  # None: informational, no verdict
    explained: bool = False  # differs from the paper for a reason found and stated
    judged_by: str = ""
    no_data: str = ""

    @property
    def verdict(self) -> str:
        """The verdict at paper scale."""
        return self.verdict_at(PAPER_SCALE)

    def verdict_at(self, scale: str) -> str:
        """The verdict in a run of `scale` (config `scale`: paper or toy)."""
        if self.no_data:
            return NO_DATA
        if self.explained:
            return "explained"
        if self.passed is None:
            return "informational"
        if self.judged_by and scale == TOY:
            return NOT_JUDGED
        return "pass" if self.passed else "FAIL"

    def tolerance_at(self, scale: str) -> str:
        """The tolerance cell: what a verdict of no data or not judged rests on, said."""
        if self.no_data:
            return f"{self.tolerance}; no data: {self.no_data}"
        if self.verdict_at(scale) == NOT_JUDGED:
            return f"{self.tolerance}; judged at paper scale: {self.judged_by}"
        return self.tolerance


def kl_table_checks(table: pd.DataFrame) -> list[Check]:
    first, last = table.iloc[0], table.iloc[-1]
    return [
        Check("Table 1: KL at rho = 1", "paper Table 1 / code", float(first["kl"]), 0.7876,
              "abs 0.005", abs(first["kl"] - 0.7876) <= 0.005),
        Check(f"Table 1: KL at rho = {last['rho']:g} (KL -> 0)", "paper Table 1", float(last["kl"]),
              0.0, "< 5e-5 (prints 0.0000)", last["kl"] < 5e-5),
        Check("Table 1: d_LLV stays put (mean over rho)", "paper Table 1 / code",
              float(table["d_llv"].mean()), 1.3178, "abs 0.005",
              abs(table["d_llv"].mean() - 1.3178) <= 0.005),
        Check("Table 1: m_CCA(f) ~ 0 (max over rho)", "paper Table 1",
              float(table["mcca_f"].max()), 0.0005, "< 0.01", table["mcca_f"].max() < 0.01),
        Check("Table 1: max d_SVD ~ 1 (min over rho)", "paper Table 1",
              float(table["max_d_svd_f"].min()), 0.9997, "> 0.99",
              table["max_d_svd_f"].min() > 0.99),
    ]


def bound_checks(constructed: Mapping[int, pd.DataFrame], trained: pd.DataFrame | None,
                 rep_dim: int = 2) -> list[Check]:
    """Theorem 4.7's bound on the pairs in its range (d_LLV < 1/(2M)), at any scale."""
    limit = 1.0 / (2 * rep_dim)
    empty = f"no pair has d_LLV < 1/(2M) = {limit:g}, the bound's range"
    parts = [(f"Fig. 16 left, K = {k}: pairs above d_fg <= 2M d_LLV",
              sweep[sweep["d_llv"] < limit]) for k, sweep in sorted(constructed.items())]
    if trained is not None:
        parts.append(("Fig. 16 right: trained pairs above the bound",
                      trained[trained["d_llv"] < limit].dropna(subset=["d_fg"])))
    checks = []
    for claim, valid in parts:
        above = int((valid["d_fg"] > 2 * rep_dim * valid["d_llv"]).sum())
        checks.append(Check(claim, "paper Thm. 4.7", f"{above} of {len(valid)}", 0, "0",
                            above == 0, no_data="" if len(valid) else empty))
    return checks


def width_tables(paths: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The width summaries (tables/d_llv_vs_width_K*.csv), keyed by file name."""
    return {Path(p).stem: read_csv(p) for p in paths}


def width_checks(summaries: Mapping[str, pd.DataFrame],
                 baselines: Mapping[str, pd.DataFrame] | None = None) -> list[Check]:
    """Fig. 3 right / F.7: mean d_LLV and d_fg lower at the widest kept width than the
    narrowest; with `baselines` (tables/width_baseline_K*.csv), also beyond the baselines."""
    checks = []
    baselines = baselines or {}
    for name, summary in summaries.items():
        for k, part in summary.groupby("num_classes"):
            part = part.sort_values("width")
            if len(part) < 2:
                checks.append(Check(f"{name}, K = {k}: wider -> closer", "paper Fig. 3 / F.7",
                                    f"{len(part)} width(s) kept", "decreasing", "-", None,
                                    no_data="a trend needs two widths or more"))
                continue
            kept = ", ".join(f"w{int(w)}: {int(n)}" for w, n in zip(part["width"], part["seeds"],
                                                                     strict=True))
            checks.append(Check(f"{name}, K = {k}: seeds with test accuracy > threshold, per kept "
                                "width (retention)", WIDTH_CLAIM, kept, "not stated", "-", None))
            for col, label in (("d_llv_mean", "d_LLV"), ("d_fg_mean", "d_fg")):
                lo, hi = part.iloc[0], part.iloc[-1]
                checks.append(Check(
                    f"{name}, K = {k}: mean {label} falls from width {lo['width']:g} to "
                    f"{hi['width']:g}", WIDTH_CLAIM, f"{lo[col]:.4f} -> {hi[col]:.4f}",
                    "decreasing", "strictly lower", bool(hi[col] < lo[col]),
                    judged_by=SYNTHETIC_RUN))
            base = baselines.get(name.replace("d_llv_vs_width", "width_baseline"))
            if base is not None:
                rows = part.merge(base[base["K"] == k], on="width")
                checks += width_baseline_checks(rows, f"{name}, K = {k}")
    return checks


def width_margin(rows: pd.DataFrame, measure: str) -> pd.Series:
    """Per width, the mean distance below the nearer of the untrained mean and the null's tau."""
    parts = [rows[c] for c in (f"{measure}_untrained_mean", f"{measure}_tau_mean") if c in rows]
    if not parts:
        return pd.Series(np.nan, index=rows.index)
    return pd.concat(parts, axis=1).min(axis=1, skipna=True) - rows[f"{measure}_mean"]


def _width_trend(rows: pd.DataFrame, values: pd.Series, se: pd.Series) -> Trend:
    ends = [(float(rows["width"].iloc[i]), float(values.iloc[i]), float(se.iloc[i]))
            for i in (0, -1)]
    return Trend(rank_correlation(rows["width"], values), ends[0], ends[1], len(rows))


def width_baseline_checks(rows: pd.DataFrame, title: str) -> list[Check]:
    """The width claim against baselines (rows: a width summary merged with its baseline
    table). The margin below the nearer baseline (width_margin) must grow with width (rho > 0.5
    and last - first > 2 SE); untrained models fail by construction. The null pairs' mean
    calibrated distance (1 at 0, 0 at chance) must rise the same way."""
    rows = rows.sort_values("width").reset_index(drop=True)
    checks = []
    for measure, label in (("d_llv", "d_LLV"), ("d_fg", "d_fg")):
        margin = width_margin(rows, measure)
        se = (rows[f"{measure}_ci_high"] - rows[f"{measure}_ci_low"]) / (2 * 1.96)
        claim = f"{title}: mean {label} falls with width beyond untrained models and chance"
        if len(rows) < 2 or not np.isfinite(margin).any():
            checks.append(Check(claim, WIDTH_CLAIM, "no baseline at two widths", "decreasing",
                                "-", None, no_data="no baseline at two widths"))
            continue
        t = _width_trend(rows, margin, se)
        checks.append(Check(
            claim, WIDTH_CLAIM,
            f"below the nearer of untrained and tau by {t.first[1]:+.4f} at width "
            f"{t.first[0]:g} -> {t.last[1]:+.4f} at {t.last[0]:g} (rho {t.rho:+.2f}, "
            f"{t.rise_in_se:+.1f} SE)", "decreasing",
            "the margin: rho > 0.5 and last - first > 2 SE", t.rises, judged_by=SYNTHETIC_RUN))
        calibrated = rows[f"{measure}_calibrated_mean"]
        if not np.isfinite(calibrated).any():
            continue
        c = _width_trend(rows, calibrated, rows[f"{measure}_calibrated_se"])
        checks.append(Check(
            f"{title}: mean calibrated {label} rises with width (the null's "
            f"{int(rows['null_pairs'].min())} pairs a width)", WIDTH_CLAIM,
            f"{c.first[1]:.3f} (tau {rows[f'{measure}_tau_mean'].iloc[0]:.4f}) at width "
            f"{c.first[0]:g} -> {c.last[1]:.3f} (tau {rows[f'{measure}_tau_mean'].iloc[-1]:.4f})"
            f" at {c.last[0]:g} (rho {c.rho:+.2f}, {c.rise_in_se:+.1f} SE)", "rises",
            "rho > 0.5 and last - first > 2 SE", c.rises, judged_by=SYNTHETIC_RUN))
    return checks


def cifar_checks(pairs_fd2: pd.DataFrame | None, seeds: Sequence[int] = (0, 1),
                 standin: bool = False) -> list[Check]:
    if pairs_fd2 is None:
        return []
    row = pairs_fd2[(pairs_fd2["seed_a"] == seeds[0]) & (pairs_fd2["seed_b"] == seeds[1])]
    value = float(row["mcca_f_test"].iloc[0]) if len(row) else float("nan")
    data = " (stand-in data)" if standin else ""
    corr = float(abs(pairs_fd2[["test_loss_diff", "mcca_f_test"]].corr().iloc[0, 1]))
    return [
        Check(f"Fig. 3 left: m_CCA(seed {seeds[0]}, seed {seeds[1]}), M = 2, test{data}",
              "authors' code comment", value, 0.551, "informational: depends on the seeds' "
              "training trajectories", None),
        *_fig3_left_claims(row, seeds, data),
        Check(f"Fig. 5: loss difference says little about m_CCA (|corr| over 45 pairs){data}",
              "paper App. F.4", corr, "weak", "< 0.5", bool(corr < 0.5), judged_by=FULL_RUN),
    ]


def _fig3_left_claims(row: pd.DataFrame, seeds: Sequence[int], data: str) -> list[Check]:
    """The text on Fig. 3 (left)'s two seeds, without a number: informational rows."""
    if not len(row):
        return []
    r = row.iloc[0]
    pair = f"seeds {seeds[0]} and {seeds[1]}, M = 2{data}"
    loss = (f"{r['test_loss_a']:.4f} vs {r['test_loss_b']:.4f} (|diff| "
            f"{abs(r['test_loss_diff']):.4f}, {abs(r['test_loss_diff']) / r['test_loss_a']:.1%})")
    source = "paper §5.2 text on Fig. 3 left (reviewer summary)"
    return [
        Check(f"Fig. 3 left: {pair} reach nearly the same test loss", source, loss,
              "virtually identical (no number)", "informational", None),
        Check(f"Fig. 3 left: {pair}: KL is low", source, float(r["kl"]),
              "low (not recorded)", "informational", None),
        Check(f"Fig. 3 left: {pair}: d_LLV stays high", source, float(r["d_llv"]),
              "high (no number)", "informational", None),
    ]


def workshop_checks(table: pd.DataFrame) -> list[Check]:
    """The workshop example's numbers (workshop paper §4, App. D): ours within 10% (or the
    stated order of magnitude for the tiny losses), the error ratios explained."""
    from ..constructed.workshop import BROADCAST_PREFIX

    checks = []
    for row in table.itertuples():
        ours, theirs = float(row.ours), float(row.workshop_paper)
        if row.quantity.startswith(BROADCAST_PREFIX):
            close = abs(ours - theirs) <= 0.1 * theirs
            checks.append(Check(f"Workshop example: {row.quantity}", "workshop paper §4", ours,
                                theirs, "rel 10%: the paper's value, reproduced by the workshop "
                                "code's broadcasting (mean of |eps| x mean of 1/|log-odds|)",
                                close, explained=close))
        elif row.quantity.startswith("E|eps"):
            checks.append(Check(f"Workshop example: {row.quantity} (elementwise, correct)",
                                "workshop paper §4", ours, theirs, "differs: see the "
                                "broadcast rows", None))
        elif theirs < 1e-3:
            checks.append(Check(f"Workshop example: {row.quantity}", "workshop paper §4", ours,
                                theirs, "same order of magnitude",
                                0.1 * theirs <= ours <= 10 * theirs))
        else:
            checks.append(Check(f"Workshop example: {row.quantity}", "workshop paper §4", ours,
                                theirs, "abs 0.05", abs(ours - theirs) <= 0.05))
    return checks


def retrace_checks(table: pd.DataFrame, per_seed_width: int = 16,
                   standin: bool = False) -> list[Check]:
    """Our seed s against the authors' seed s (ours_vs_authors.csv): per seed, per
    configuration, and the goal: most within 0.03, median <= 0.02. Only the goal has a verdict
    (float rounding over 15,072 steps lets a seed or two drift); none on stand-ins."""
    note = " (stand-in checkpoints)" if standin else ""
    checks = []
    for row in table[table["width"] == per_seed_width].itertuples():
        checks.append(Check(
            f"Our seed {row.seed} vs the authors' seed {row.seed}, K = {row.K}, width "
            f"{row.width}: d_LLV (KL {row.kl:.1e}, m_CCA {row.mcca_f:.4f}){note}",
            "authors' checkpoints", float(row.d_llv),
            f"their seeds: {row.authors_inter_seed_d_llv:.3f} apart",
            f"< {RETRACE_TOLERANCE} (the goal row decides)", None))
    for (k, w), part in table.groupby(["K", "width"]):
        within = int((part["d_llv"] < RETRACE_TOLERANCE).sum())
        checks.append(Check(
            f"Our seeds vs the authors' same seeds, K = {k}, width {w}: retraced (median d_LLV "
            f"{part['d_llv'].median():.4f}){note}", "authors' checkpoints",
            f"{within} of {len(part)}",
            f"their seeds: {part['authors_inter_seed_d_llv'].iloc[0]:.3f} apart",
            f"d_LLV < {RETRACE_TOLERANCE}", None))
    goal = table[table["width"] == per_seed_width]
    if len(goal):
        within = int((goal["d_llv"] < RETRACE_TOLERANCE).sum())
        median = float(goal["d_llv"].median())
        checks.append(Check(
            f"Seed s retraces the authors' seed s (width {per_seed_width}, K = "
            f"{sorted(goal['K'].unique().tolist())}): {within} of {len(goal)} within "
            f"{RETRACE_TOLERANCE}, median d_LLV{note}", "authors' checkpoints", median,
            "0 (same model)", f">= 70% within {RETRACE_TOLERANCE} and median <= 0.02",
            None if standin else bool(within >= 0.7 * len(goal) and median <= 0.02),
            judged_by=AUTHORS_RUN))
    return checks


def tightness_checks(table: pd.DataFrame) -> list[Check]:
    """The bound at every M (bound_tightness.csv): informational beyond the paper's M = 2."""
    checks = []
    for row in table.itertuples():
        checks.append(Check(
            f"Bound d_fg <= 2M d_LLV at M = {row.M} ({row.configurations} configurations): "
            f"violations among pairs with d_LLV < 1/(2M); d_fg/(2M d_LLV) median "
            f"{row.ratio_q50:.3g}, 99% {row.ratio_q99:.3g}, max {row.ratio_max:.3g}",
            "paper Thm. 4.7" if row.M == 2 else "beyond the paper (it shows M = 2)",
            f"{row.violations} of {row.pairs_in_range}", 0, "0",
            bool(row.violations == 0) if row.M == 2 else None,
            no_data="" if row.pairs_in_range else "no pair has d_LLV < 1/(2M), the bound's "
            "range"))
    return checks


def comparison_frame(checks: Sequence[Check], scale: str = PAPER_SCALE) -> pd.DataFrame:
    """One row per check, its verdict and tolerance as a run of `scale` gives them."""
    def fmt(v: object) -> str:
        return f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v)

    return pd.DataFrame(
        [{"claim": c.claim, "source": c.source, "ours": fmt(c.ours), "paper": fmt(c.theirs),
          "tolerance": c.tolerance_at(scale), "verdict": c.verdict_at(scale)}
         for c in checks],
        columns=["claim", "source", "ours", "paper", "tolerance", "verdict"],
    )


def run_title(outdir: str, configfiles: Sequence[str], scale: str) -> str:
    """E.g. 'results/quick (config.yaml + config.quick.yaml), toy scale'."""
    files = f" ({' + '.join(configfiles)})" if configfiles else ""
    return f"{outdir}{files}, {scale} scale"


TOY_NOTE = ("A toy run judges only the checks that hold at any scale, such as Table 1 and the "
            "bounds.\nIt cannot show the paper's trends: their rows are not judged here.\n"
            "Each such row names, in its tolerance, the run that judges it.\n\n")


def comparison_markdown(frame: pd.DataFrame, protocol: str = "", run: str = "",
                        scale: str = PAPER_SCALE) -> str:
    """The page: the run and its scale, the table, the verdicts counted and their legend."""
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"
              for row in frame.itertuples(index=False)]
    counts = frame["verdict"].value_counts()
    shown = [w for w in VERDICTS if w in ("pass", "FAIL") or counts.get(w, 0)]
    summary = "\n" + ", ".join(f"{counts.get(w, 0)} {w}" for w in shown) + ".\n"
    legend = "\nVerdicts:\n\n" + "".join(f"- {word}: {means}\n"
                                          for word, means in VERDICTS.items())
    head = f"# Reproduced vs paper: {run or f'{scale} scale'}\n\n"
    if scale == TOY:
        head += TOY_NOTE
    if protocol:
        head += f"Training protocol of this run: `{protocol}`.\n\n"
    return head + "\n".join(lines) + "\n" + summary + legend


FOLLOW_UP = "follow-up (Nielsen et al. 2026)"


def distillation_checks(table: pd.DataFrame) -> list[Check]:
    """The follow-up's claims on our students (tables/distillation.csv), informational: is a
    logit-distance student linearly closer than the KL student, and better at the angle probe?"""
    checks = []
    kl = table[table["loss"] == "kl"]
    for loss in ("logit_l2", "logit_l1"):
        other = table[table["loss"] == loss]
        if not len(kl) or not len(other):
            continue
        both = other.merge(kl, on=["K", "width", "teacher_seed"], suffixes=("", "_kl"))
        n = len(both)
        closer = int((both["mcca_f"] > both["mcca_f_kl"]).sum())
        nearer = int((both["d_llv"] < both["d_llv_kl"]).sum())
        lower_kl = int((both["kl"] <= both["kl_kl"]).sum())
        checks.append(Check(
            f"Distillation, {loss} vs KL students of the same teacher: m_CCA(f) higher in "
            f"{closer} of {n}, d_LLV lower in {nearer} of {n}, KL lower or equal in {lower_kl} of "
            f"{n} (medians m_CCA {both['mcca_f'].median():.4f} vs {both['mcca_f_kl'].median():.4f},"
            f" d_LLV {both['d_llv'].median():.4f} vs {both['d_llv_kl'].median():.4f}, KL "
            f"{both['kl'].median():.2e} vs {both['kl_kl'].median():.2e})", FOLLOW_UP,
            f"{closer} of {n}", "logit-distance students linearly closer at equal or lower KL",
            "-", None))
        gap = (both["probe_angle_teacher"] - both["probe_angle_student"]).abs()
        gap_kl = (both["probe_angle_teacher"] - both["probe_angle_student_kl"]).abs()
        checks.append(Check(
            f"Distillation, {loss} vs KL: |teacher - student| angle-probe R^2, median "
            f"{gap.median():.4f} vs {gap_kl.median():.4f}; smaller in "
            f"{int((gap < gap_kl).sum())} of {n}", FOLLOW_UP, float(gap.median()),
            "logit-distance students keep the teacher's concepts better", "-", None))
    return checks


PRH = "Platonic Representation Hypothesis (Huh et al. 2024)"


def alignment_checks(table: pd.DataFrame, models: str = "") -> list[Check]:
    """PRH's headline claim on synthetic models (tables/prh_alignment.csv; `models`: not our
    grid), informational: does mutual k-NN alignment rise with width and test accuracy?"""
    on = f", {models}" if models else ""
    reads = [("mutual_knn_f", "")]
    if "mutual_knn_f_calibrated_mean" in table:  # the same read on scores above chance
        reads.append(("mutual_knn_f_calibrated", "calibrated "))
    checks = []
    for column, word in reads:
        t = alignment_trends(table, column)
        by_k = ", ".join(f"K={k}: {r:+.2f}" for k, r in t["rho_width_by_k"].items())
        checks.append(Check(
            f"PRH: {word}mutual k-NN alignment of f between seeds rises with width{on} "
            f"(Spearman rho per K: {by_k})", PRH,
            f"{t['rising_with_width']} of {t['class_counts']} K rising",
            "alignment rises with competence", "-", None))
    return [*checks, Check(
        f"PRH: mutual k-NN alignment of f between seeds rises with the seeds' test "
        f"accuracy{on} (Spearman rho over {len(table)} (K, width) configurations)", PRH,
        float(alignment_trends(table)["rho_accuracy"]), "alignment rises with competence", "-",
        None)]


PRH_FIG3 = "Platonic Representation Hypothesis (Huh et al. 2024), Fig. 3"
PRH_RISES = 0.5  # Spearman's rho over the language models above which alignment "rises"


def prh_study_checks(table: pd.DataFrame, standins: bool) -> list[Check]:
    """PRH's claim on their study (tables/prh_study.csv): per vision family, alignment rises
    with the language model's performance (Spearman's rho against 1 - bits per byte above
    PRH_RISES), raw and calibrated. Informational on stand-ins: tiny models are not the claim's."""
    checks = []
    metric = str(table["metric"].iloc[0]) if len(table) else "?"
    for row in trend_rows(table):
        raw = row["column"] == "score"
        rho = row["rho"]
        checks.append(Check(
            f"PRH Fig. 3: {'' if raw else 'calibrated '}{metric} alignment to the "
            f"{row['family']} vision models rises with the language model's performance "
            f"(Spearman rho over {row['language_models']} language models"
            f"{', stand-ins' if standins else ''})", PRH_FIG3, float(rho), "rises",
            f"rho > {PRH_RISES}", None if standins or not np.isfinite(rho)
            else bool(rho > PRH_RISES), judged_by=PRH_RUN,
            no_data="" if standins or np.isfinite(rho) else "no rank correlation: fewer than "
            "two language models, or scores all equal"))
    return checks


ROEDER = "Roeder et al. 2021, Fig. 2b"
ROEDER_CLAIMED_STEP = 4000  # "After approx. 4000 iterations, CCA finds a linear transformation"
ROEDER_WITHIN = 0.02  # "near its maximum": the mean m_CCA within this of its maximum


def roeder_checks(curves: pd.DataFrame) -> list[Check]:
    """Per data variant: is mean m_CCA near 4,000 steps within ROEDER_WITHIN of its maximum?"""
    checks = []
    for noise_dims, curve in curves.groupby("noise_dims"):
        curve = curve.sort_values("step")
        at = curve.iloc[int(np.argmin(np.abs(curve["step"] - ROEDER_CLAIMED_STEP)))]
        best = curve.loc[curve["mcca_f_mean"].idxmax()]
        near = first_near_max_step(curve, ROEDER_WITHIN)
        variant = f"{noise_dims} noise dimensions" if noise_dims else "no noise dimensions"
        checks.append(Check(
            f"Roeder Fig. 2b ({variant}): mean CCA between seeds near its maximum after "
            f"≈4,000 iterations", ROEDER,
            f"{at['mcca_f_mean']:.4f} at step {int(at['step']):,}; max "
            f"{best['mcca_f_mean']:.4f} at {int(best['step']):,}; first within {ROEDER_WITHIN} "
            f"of it at step {near:,}",
            "near max after ≈4,000 iterations", f"max - m_CCA(4,000) <= {ROEDER_WITHIN}",
            bool(best["mcca_f_mean"] - at["mcca_f_mean"] <= ROEDER_WITHIN),
            judged_by=SYNTHETIC_RUN))
        last = curve.iloc[-1]
        checks.append(Check(
            f"Roeder Fig. 2b ({variant}): the level CCA reaches, a linear map 'up to "
            "optimization error'", ROEDER,
            f"max {best['mcca_f_mean']:.4f}; at step {int(last['step']):,} "
            f"{last['mcca_f_mean']:.4f} ± {last['mcca_f_sd']:.4f} (sd over pairs)",
            "no number in the text", "-", None))
    return checks


ROEDER_WORDS = "Roeder et al. 2021, Fig. 1"
# "one linear map apart": at most 5 % of each coordinate's variance left (a residual within
# ~0.22 of its spread), the overlap the figure shows; exactly linear would be 1
ROEDER_WORDS_R2 = 0.95


def fit_r2(fit: pd.DataFrame) -> np.ndarray:
    """R^2 per dimension of the figure's fit (tables/roeder_words_fit.csv) on the words shown."""
    dims = sorted(int(c.rsplit("_", 1)[1]) for c in fit.columns if c.startswith("b_mapped_"))
    a = [fit[f"a_{d}"].to_numpy() for d in dims]
    mapped = [fit[f"b_mapped_{d}"].to_numpy() for d in dims]
    return np.asarray([1.0 - ((x - m) ** 2).sum() / ((x - x.mean()) ** 2).sum()
                       for x, m in zip(a, mapped, strict=True)])


def roeder_words_checks(pairs: pd.DataFrame, fit: pd.DataFrame, data: str) -> list[Check]:
    """Fig. 1's claim on the figure's two seeds, and over every seed pair (informational,
    with how R^2 goes with KL: the NeurIPS paper's question)."""
    a, b = int(fit["seed_a"].iloc[0]), int(fit["seed_b"].iloc[0])
    r2 = fit_r2(fit)
    row = pairs[(pairs["seed_a"] == min(a, b)) & (pairs["seed_b"] == max(a, b))].iloc[0]
    passed = bool(min(r2.min(), row["r2_g_min"]) >= ROEDER_WORDS_R2)
    reach = int((pairs["r2_g_min"] >= ROEDER_WORDS_R2).sum())
    rho = pairs["r2_g_min"].corr(pairs["kl"], method="spearman") if len(pairs) > 2 else np.nan
    return [
        Check(f"Roeder Fig. 1 ({data}): the two seeds' word vectors are one linear map apart",
              ROEDER_WORDS,
              f"seeds {a}, {b}: R^2 {', '.join(f'{v:.4f}' for v in r2)} on the {len(fit)} "
              f"words shown; {row['r2_g_min']:.4f} (lowest dimension) on every other word; "
              f"KL {row['kl']:.4f}", "overlap (exactly linear: R^2 = 1)",
              f"R^2 >= {ROEDER_WORDS_R2} in each dimension", passed, judged_by=SYNTHETIC_RUN),
        Check(f"Roeder Fig. 1 ({data}): every pair of seeds", ROEDER_WORDS,
              f"{reach} of {len(pairs)} pairs with R^2 >= {ROEDER_WORDS_R2}; R^2 (words) "
              f"{pairs['r2_g_min'].min():.4f} to {pairs['r2_g_min'].max():.4f}; m_CCA f "
              f"{pairs['mcca_f'].median():.4f}, g {pairs['mcca_g'].median():.4f} (medians); "
              f"KL {pairs['kl'].min():.4f} to {pairs['kl'].max():.4f}; Spearman's rho of R^2 "
              f"and KL {rho:.2f}", "two models shown", "-", None),
    ]
ROEDER_CPC = "Roeder et al. 2021, Fig. 3"
ROEDER_CPC_CLAIMS = {  # panel: (what rises along, its x as the summary holds it)
    "b": ("over training", "step"),
    "c": ("with the amount of training data", "training images"),
    "d": ("with the hidden units", "width"),
}


def roeder_cpc_checks(summary: pd.DataFrame, data: str) -> list[Check]:
    """Roeder's Fig. 3 claims on tables/roeder_cpc_summary.csv, for f and g: "rises" as
    roeder_cpc_tables.Trend.rises. `data` says what the run trained on."""
    checks = []
    for panel, (along, x_name) in ROEDER_CPC_CLAIMS.items():
        if not (summary["panel"] == panel).any():
            continue
        for side in ("f", "g"):
            t = trend(summary, panel, side)
            checks.append(Check(
                f"Roeder Fig. 3{panel}, {side}: mean CCA between pairs of models rises {along} "
                f"({data})", ROEDER_CPC,
                f"rho {t.rho:+.2f} over {t.points} points; {t.first[1]:.3f} ± {t.first[2]:.3f} "
                f"at {x_name} {t.first[0]:,.0f} -> {t.last[1]:.3f} ± {t.last[2]:.3f} at "
                f"{t.last[0]:,.0f} ({t.rise_in_se:+.1f} SE)", "rises",
                "rho > 0.5 and last - first > 2 SE", t.rises, judged_by=SYNTHETIC_RUN))
            checks.append(beyond_baseline_check(summary, panel, side, along, x_name, data))
    return checks


def beyond_baseline_check(summary: pd.DataFrame, panel: str, side: str, along: str,
                          x_name: str, data: str) -> Check:
    """The claim on mean CCA's height above the larger of untrained models and the null's tau."""
    t = trend(summary, panel, side, beyond=True)
    title = (f"Roeder Fig. 3{panel}, {side}: mean CCA rises {along} beyond untrained models "
             f"and chance ({data})")
    if not np.isfinite([t.first[1], t.last[1]]).all():
        return Check(title, ROEDER_CPC, "no untrained or null baseline in this run", "rises",
                     "-", None, no_data="no untrained or null baseline in this run")
    return Check(title, ROEDER_CPC,
                 f"height above the baseline: {t.first[1]:+.3f} at {x_name} {t.first[0]:,.0f} "
                 f"-> {t.last[1]:+.3f} at {t.last[0]:,.0f} (rho {t.rho:+.2f}, "
                 f"{t.rise_in_se:+.1f} SE)", "rises",
                 "the height: rho > 0.5 and last - first > 2 SE", t.rises,
                 judged_by=SYNTHETIC_RUN)
