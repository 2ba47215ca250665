"""The follow-up's tables: each student's final measurement with its chance level and the two
bounds, their figures' inverse-variance averages, and the paper comparison's rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...measures import compare
from ...measures.logit_distance import d_rep, d_rep_null, f1_bound, kl_bound, logits
from ...measures.null import NullSettings, null_stats, permutations
from ..paper_comparison.checks import FOLLOW_UP, FOLLOW_UP_RUN, Check

# a student against its teacher (training.StudentSnapshots)
SNAPSHOT_COLUMNS = ["teacher_seed", "loss", "seed", "epoch", "split", "kl", "d_logit2",
                    "mcca", "mcca_sklearn", "d_rep", "tau_teacher", "tau_student",
                    "accuracy", "agreement", "teacher_accuracy"]
METRICS = [c for c in SNAPSHOT_COLUMNS if c not in
           ("teacher_seed", "loss", "seed", "epoch", "split")]
COMPARED = ("kl", "mcca_f", "d_logit")  # compare()'s measures in the final table, with nulls


def _d_rep_null(f: np.ndarray, g: np.ndarray, f_t: np.ndarray, g_t: np.ndarray,
                null: NullSettings | None, subsets: int) -> dict[str, float]:
    """d_rep and its permutation null (the student's inputs reordered; NaN without a null)."""
    observed = d_rep(f, g, f_t, g_t, subsets).value
    tau = p = calibrated = float("nan")
    if null is not None:
        drawn, count, _ = permutations(len(f), null.permutations, null.seed)
        orders = np.array(list(drawn), dtype=np.intp).reshape(count, len(f))
        draws = d_rep_null(f, g, f_t, g_t, orders, subsets)
        tau, p, calibrated = null_stats(observed, draws, null.alpha, distance=True)
    return {"d_rep": observed, "d_rep_tau": tau, "d_rep_p": p, "d_rep_calibrated": calibrated}


def student_row(teacher: tuple[np.ndarray, np.ndarray], student: tuple[np.ndarray, np.ndarray],
                null: NullSettings | None, subsets: int) -> dict[str, Any]:
    """One student's final row from (f, g) of it and its teacher: KL, m_CCA(f), d_logit and
    d_rep, each with its permutation null (none where `null` is None), Theorem F.1's two sides
    and the KL bound under tau-lower-boundedness, with the looseness of each."""
    (f_t, g_t), (f, g) = teacher, student
    drawn = None if null is None else {"permutations": null.permutations, "alpha": null.alpha,
                                       "seed": null.seed, "measures": list(COMPARED)}
    result = compare(f_t, g_t, f, g, measures=",".join(COMPARED), null=drawn)
    bound = f1_bound(f_t, g_t, f, g)
    kl_side, tau = kl_bound(logits(f_t, g_t), logits(f, g))
    return {**{k: v for k, v in result.items() if k != "warning"},
            **_d_rep_null(f, g, f_t, g_t, null, subsets),
            "f1_left": bound.left, "f1_right": bound.right, "f1_holds": bound.holds,
            "f1_slack": bound.right - bound.left, "kl_bound": kl_side, "tau": tau,
            "kl_bound_looseness": kl_side / bound.right if bound.right > 0 else float("inf"),
            "warning": result["warning"]}


def final_table(members: Sequence[Mapping[str, Any]],
                teachers: Mapping[int, tuple[np.ndarray, np.ndarray]],
                students: Sequence[tuple[np.ndarray, np.ndarray]],
                null: NullSettings | None, subsets: int) -> pd.DataFrame:
    """Every student's final row: its member fields beside student_row; `teachers` by seed."""
    rows = [{**dict(member), **student_row(teachers[int(member["teacher_seed"])], reps, null,
                                           subsets)}
            for member, reps in zip(members, students, strict=True)]
    return pd.DataFrame(rows)


PROBE = "concept_probe_accuracy"  # experiments.logit_distance.training.concept_probe's score


def probe_columns(student_metrics: Mapping[str, Any],
                  teacher_metrics: Mapping[str, Any]) -> dict[str, float]:
    """A student's concept probe beside its teacher's (empty where the data has no concept)."""
    if PROBE not in student_metrics:
        return {}
    return {PROBE: student_metrics[PROBE], f"teacher_{PROBE}": teacher_metrics[PROBE],
            "concept_probe_gap": teacher_metrics[PROBE] - student_metrics[PROBE]}


def inverse_variance_summary(snapshots: pd.DataFrame,
                             metrics: Sequence[str] = tuple(METRICS)) -> pd.DataFrame:
    """Per loss, epoch, split and metric: their figures' average over teachers
    (figures/inverse_variance_weighted_average.py, _iv_average), its variance and counts."""
    rows = []
    for (loss, epoch, split), group in snapshots.groupby(["loss", "epoch", "split"]):
        for metric in metrics:
            mean, var = _iv_average(group, metric)
            rows.append({"loss": loss, "epoch": int(epoch), "split": split, "metric": metric,
                         "mean": mean, "var": var,
                         "teachers": int(group["teacher_seed"].nunique()),
                         "students": int(len(group))})
    return pd.DataFrame(rows)


def _iv_average(group: pd.DataFrame, metric: str) -> tuple[float, float]:
    """Their estimator, each teacher a measuring instrument: sum_t sum_i y_ti / s_t^2 over
    sum_t n_t / s_t^2 (s_t^2 the variance of teacher t's students, ddof 1), variance 1 / sum_t
    n_t / s_t^2. Without any weight: a plain mean over every student, variance var / n."""
    weights, weighted, values = 0.0, 0.0, []
    for _, students in group.groupby("teacher_seed"):
        y = students[metric].to_numpy(dtype=np.float64)
        values.append(y)
        var = y.var(ddof=1) if len(y) > 1 else 0.0
        if var > 0 and np.isfinite(var):
            weights += len(y) / var
            weighted += y.sum() / var
    if weights > 0:
        return weighted / weights, 1.0 / weights
    every = np.concatenate(values)
    return float(every.mean()), float(every.var(ddof=1) / len(every)) if len(every) > 1 else 0.0


def _paired(final: pd.DataFrame, loss: str, metric: str) -> pd.DataFrame:
    """`loss` students beside the KL students of the same teacher and seed (their same start)."""
    ours = final[final["loss"] == loss][["teacher_seed", "seed", metric]]
    kl = final[final["loss"] == "kl"][["teacher_seed", "seed", metric]]
    return ours.merge(kl, on=["teacher_seed", "seed"], suffixes=("", "_kl"))


def probe_checks(final: pd.DataFrame, data: str, standin: bool) -> list[Check]:
    """The follow-up's concept claim: L1 and L2 students' probe accuracy drops less below the
    teacher's than paired KL students', by > 2 SE; informational on a stand-in."""
    if "concept_probe_gap" not in final:
        return []
    checks = []
    for loss in ("l1", "l2"):
        both = _paired(final, loss, "concept_probe_gap")
        if len(both) < 2:
            continue
        diff = (both["concept_probe_gap_kl"] - both["concept_probe_gap"]).to_numpy(dtype=float)
        se = diff.std(ddof=1) / np.sqrt(len(diff))
        where = " (stand-in features: informational)" if standin else ""
        checks.append(Check(
            f"Follow-up ({data}): {loss.upper()} students keep the teacher's concept probe "
            f"better than KL students (accuracy drop {both['concept_probe_gap'].mean():.4f} vs "
            f"{both['concept_probe_gap_kl'].mean():.4f}, paired difference {diff.mean():.4g} +- "
            f"{se:.2g} SE){where}", FOLLOW_UP, float(diff.mean()),
            "logit distance preserves linearly recoverable concepts", "> 2 SE",
            None if standin else bool(diff.mean() > 2 * se), judged_by=FOLLOW_UP_RUN))
    return checks


def follow_up_checks(final: pd.DataFrame, data: str) -> list[Check]:
    """The follow-up's claims: L1 and L2 students' calibrated m_CCA higher and d_rep lower
    than paired KL students', by > 2 SE (a lower bound when teachers are few: their students
    share them); and Theorem F.1's bound on every student, at any scale."""
    checks = []
    for loss in ("l1", "l2"):
        for metric, sign, word in (("mcca_f_calibrated", 1.0, "higher"), ("d_rep", -1.0, "lower")):
            both = _paired(final, loss, metric)
            if len(both) < 2:
                continue
            diff = sign * (both[metric] - both[f"{metric}_kl"]).to_numpy(dtype=np.float64)
            se = diff.std(ddof=1) / np.sqrt(len(diff))
            checks.append(Check(
                f"Follow-up ({data}): {loss.upper()} students' {metric} {word} than KL "
                f"students' of the same teacher and seed (mean paired difference "
                f"{diff.mean():.4g} +- {se:.2g} SE, {int((diff > 0).sum())} of {len(diff)})",
                FOLLOW_UP, float(diff.mean()), f"{word} (logit distance keeps linear structure)",
                "> 2 SE", bool(diff.mean() > 2 * se), judged_by=FOLLOW_UP_RUN))
    holds = final["f1_holds"].astype(bool)
    checks.append(Check(
        f"Follow-up ({data}): Theorem F.1, sum (1 - rho^2) lambda <= d_logit^2 for every student "
        f"({int(holds.sum())} of {len(holds)}; median slack {final['f1_slack'].median():.3g})",
        FOLLOW_UP + ", Thm. F.1", int((~holds).sum()), "0 violations", "exact",
        bool(holds.all()), no_data="" if len(holds) else "no student in the table"))
    return checks
