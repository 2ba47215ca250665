"""How many inputs and labels each measure needs: one rule per measure group, stated in words.

Below a rule's count of inputs (N rows of f) or labels (K rows of g), a measure is undefined (a
refusal) or biased towards similarity (a warning). `repdist compare`, the `models:` groups and
`compare()` apply the rules before measuring; each message names the measures and the numbers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .selection import INPUT_SIDE, KNN_MEASURES, LABEL_SIDE, SVD_G

# f read over the inputs: every measure whose sample is the N inputs
OVER_INPUTS = (LABEL_SIDE | KNN_MEASURES
               | {"mcca_f", "cka_f", "svcca_f", "unbiased_cka_f", "cknna_f", "t2", "t4"})
# canonical correlations: two M-dimensional subspaces meet when 2M > N - 1
CCA_OVER_INPUTS = frozenset({"mcca_f", "svcca_f"})
PER_DIMENSION = 10  # inputs per dimension below which unrelated models look alike


@dataclass(frozen=True)
class SampleRule:
    """Below `least(M)` samples (`axis`: N inputs or K labels; `formula` the same in words)
    the `measures` are refused or warned about; `why` says why (formatted with the numbers)."""

    measures: frozenset[str]
    axis: str
    least: Callable[[int], int]
    formula: str
    refuse: bool
    why: str
    group: str = ""  # how `why` names the measures; "" lists those asked


RULES = (
    SampleRule(frozenset(INPUT_SIDE | SVD_G) - {"input_set"}, "inputs", lambda m: m + 1, "M + 1",
               True, "{names} need a set of M + 1 = {least} distinct inputs, but N = {n}"),
    SampleRule(CCA_OVER_INPUTS, "inputs", lambda m: 2 * m + 1, "2M + 1", False,
               "{names}: N = {n} inputs span N - 1 = {n_1} centred directions, fewer than "
               "2M = {m2}, so two unrelated models' f share a direction by construction: "
               "the score is inflated"),
    SampleRule(frozenset(OVER_INPUTS) - {"input_set", "y_pivot", "y_leave_out"}, "inputs",
               lambda m: PER_DIMENSION * m, f"{PER_DIMENSION}M", False,
               "{names}: N = {n} inputs for M = {m} dimensions is fewer than "
               f"{PER_DIMENSION} per dimension ({{least}}): unrelated models score as similar "
               "by chance; read the scores beside their null (--null)",
               "every measure read over the inputs"),
    SampleRule(frozenset({"mcca_g"}), "labels", lambda m: 2 * m + 1, "2M + 1", False,
               "{names}: K = {n} labels span K - 1 = {n_1} centred directions, fewer than "
               "2M = {m2}, so two unrelated models' g share a direction by construction: "
               "the score is inflated"),
)


def sample_notes(n: int, k: int, m: int, selected: frozenset[str]) -> tuple[list[str], list[str]]:
    """(refusals, warnings) in words for N inputs, K labels and width M under the measures
    asked; each names the measures and the numbers."""
    refusals: list[str] = []
    notes: list[str] = []
    for rule in RULES:
        hit = sorted(rule.measures & selected)
        count = n if rule.axis == "inputs" else k
        least = rule.least(m)
        if hit and count < least:
            (refusals if rule.refuse else notes).append(rule.why.format(
                names=rule.group or ", ".join(hit), n=count, n_1=count - 1, m=m, m2=2 * m,
                least=least))
    return refusals, notes


def rules_text() -> list[str]:
    """Each rule in one line, for the docs: the measures, the least count, what happens below."""
    return [f"{rule.group or ', '.join(sorted(rule.measures))}: fewer than {rule.formula} "
            f"{rule.axis} gives {'a refusal' if rule.refuse else 'a warning'}" for rule in RULES]
