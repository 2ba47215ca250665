"""What every output column means: one table for `repdist compare`, the pairs tables, the
language models', PRH's and the follow-up's tables. `entry` resolves a column, families
(`<measure>_tau`) included; `missing` lists the columns without one (a test holds every writer
to it). `python -m repdist.measures.glossary --write docs/measures.md` renders the docs' block."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

Kind = Literal["distance", "similarity", "count", "flag", "index", "name", "text", "other"]
KINDS: tuple[str, ...] = get_args(Kind)
MEASURE_KINDS = ("distance", "similarity")
NUMERIC_KINDS = ("distance", "similarity", "count", "other")

PAPER = "paper"
NULL_SOURCE = "Gröger, Wen and Brbić 2026, Alg. 1"
PRH = "Huh et al. 2024"
FOLLOW_UP = "Nielsen et al. 2026"
OURS = "repdist"

# The tables an entry can be limited to (Entry.tables), and the files each one is.
TABLES = {
    "compare": "`repdist compare`'s table; a `models:` group's `models/<group>/pairs.parquet`",
    "pairs": "`pairs.parquet` of seeds (synthetic, the authors', `lm/`, `roeder_cpc/`) and of "
             "named models (`lm_models/`), CIFAR-10's; the training snapshots "
             "(`dynamics/snapshots.parquet`, Roeder's); `tables/distillation.csv`, "
             "`tables/distillation_summary.csv`, `tables/roeder_words_pairs.csv`, "
             "`tables/lm_seed_pairs.csv`, `tables/lm_models_pairs.csv`",
    "lm_layers": "`lm/layers.parquet`, `lm_models/layers.parquet`, their `layers_best.parquet` "
                 "and `tables/*_layers.csv`",
    "prh": "`prh/alignment.parquet`, `tables/prh_study.csv`, `tables/prh_alignment.csv`, "
           "`tables/prh_alignment_authors.csv`",
    "follow_up": "`tables/logit_distance_<data>_{snapshots,final,summary}.csv`",
}


@dataclass(frozen=True)
class Entry:
    """One column: what it holds, its kind, the value meaning "the same" (0 for a distance, the
    top for a similarity, None otherwise), its range and source; `tables` (TABLES' keys)
    limits it where a name means otherwise elsewhere (empty: everywhere)."""

    name: str
    meaning: str
    kind: Kind
    same: float | None
    range: str
    source: str
    tables: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    """Columns named `<base><suffix>` for a base column of one of `bases`' kinds; `meaning` says
    `{base}` where the base goes. `kind` None: kind, "the same" and range are the base's."""

    pattern: str
    suffix: str
    meaning: str
    kind: Kind | None
    same: float | None
    range: str
    source: str
    bases: tuple[str, ...] = MEASURE_KINDS


def _distance(name: str, meaning: str, source: str, top: str = "∞)") -> Entry:
    return Entry(name, meaning, "distance", 0, f"[0, {top}", source)


def _similarity(name: str, meaning: str, source: str, low: str = "[0", same: float = 1) -> Entry:
    return Entry(name, meaning, "similarity", same, f"{low}, {same:g}]", source)


def _plain(kind: Kind, name: str, meaning: str, source: str = OURS, range_: str = "-") -> Entry:
    return Entry(name, meaning, kind, None, range_, source)


MODELS = (
    _plain("name", "model_a", "The pair's first model, by name (its path's, or lm.models')."),
    _plain("name", "model_b", "The pair's second model, by name."),
    _plain("index", "seed_a", "The first model's training seed."),
    _plain("index", "seed_b", "The second model's training seed."),
    _plain("index", "step", "Optimisation steps done when the pair was compared (a snapshot)."),
    _plain("text", "warning", "Why a measure is undefined, or what a reader must know; empty "
                              "when nothing is."),
)

PAPER_MEASURES = (
    _distance("kl", "Mean over inputs of KL(p₁(·|x) ‖ p₂(·|x)) in nats (the follow-up: teacher "
                    "first).", f"{PAPER} §4.1"),
    _distance("d_llv", "The log-likelihood variance distance, max(t1, t2, λ t3, λ t4).",
              f"{PAPER} Def. 4.4"),
    _distance("t1", "d_LLV's label side: the largest sd over inputs of the two models' "
                    "standardised log-odds gaps.", f"{PAPER} Def. 4.4"),
    _distance("t2", "d_LLV's input side: the same over labels, on the diversity set's inputs.",
              f"{PAPER} Def. 4.4"),
    _distance("t3", "d_LLV's label-side scale term: the largest gap between the models' "
                    "log-odds scales.", f"{PAPER} Def. 4.4"),
    _distance("t4", "d_LLV's input-side scale term: the same on the diversity set's inputs.",
              f"{PAPER} Def. 4.4"),
    _plain("index", "y_pivot", "d_LLV's pivot label, the one minimising t1.", f"{PAPER} Def. 4.4"),
    _plain("index", "y_leave_out", "The label left out with the pivot.", f"{PAPER} Def. 4.4"),
    _plain("index", "input_set", "The M + 1 inputs of d_LLV's diversity set (a list; x₀ "
                                 "first).", f"{PAPER} Def. 4.4"),
    _similarity("m_svd_f", "m_SVD of the embeddings for each label set (a list; tables keep "
                           "its minimum).", f"{PAPER} Def. 4.5"),
    _similarity("m_svd_f_min", "m_svd_f's minimum over the label sets.", f"{PAPER} Def. 4.5"),
    _similarity("m_svd_g", "m_SVD of the unembeddings on input_set's inputs.", f"{PAPER} Def. 4.5"),
    _distance("d_fg", "The dissimilarity max(1 − m_svd_f_min, 1 − m_svd_g), the bound's left "
                      "side.", f"{PAPER} Def. 4.5", "1]"),
    _plain("count", "m_svd_label_sets", "How many label sets m_SVD of f ran over (0 when the "
                                        "widths differ).", f"{PAPER} Def. 4.5", "[0, ∞)"),
    _plain("flag", "d_fg_estimate", "True where those sets were a sample: m_svd_f_min may be "
                                    "too high, d_fg too low.", f"{PAPER} Def. 4.5"),
    _similarity("mcca_f", "Mean canonical correlation of the embeddings, over the directions "
                          "both vary in.", f"{PAPER} §5 (Roeder et al. 2021)"),
    _similarity("mcca_g", "Mean canonical correlation of the unembeddings, likewise.",
                f"{PAPER} §5 (Roeder et al. 2021)"),
    _plain("count", "mcca_f_components", "How many correlations mcca_f averages (M − 1 after a "
                                         "final LayerNorm).", OURS, "[0, M]"),
    _plain("count", "mcca_g_components", "How many correlations mcca_g averages.", OURS, "[0, M]"),
    _similarity("mcca_f_test", "mcca_f on the test split's inputs.", f"{PAPER} Fig. 3"),
    _similarity("mcca_f_train", "mcca_f on the training split's inputs.", f"{PAPER} Fig. 3"),
)

ALIGNMENT_MEASURES = (
    _similarity("cka_f", "Linear CKA of the embeddings.", "Kornblith et al. 2019"),
    _similarity("svcca_f", "SVCCA of the embeddings: mean canonical correlation of their top "
                           "principal components.", "Raghu et al. 2017"),
    _similarity("mutual_knn_f", "Mean share of each input's 10 nearest neighbours both "
                                "embeddings agree on.", PRH),
    _distance("d_logit", "Logit distance √(E_x Σ_y gap of centred log-probabilities²).", FOLLOW_UP),
    _similarity("cycle_knn_f", "Share of inputs found again among the neighbours of their "
                               "neighbours in the other embedding.", PRH),
    _similarity("lcs_knn_f", "Mean longest common subsequence of each input's two ordered "
                             "10-NN lists.", PRH, same=10),
    _similarity("edit_distance_knn_f", "1 − mean edit distance of the two ordered 10-NN lists "
                                       "/ 10.", PRH),
    _similarity("unbiased_cka_f", "CKA of the embeddings from the unbiased HSIC estimator.",
                f"Song et al. 2012; {PRH}", low="[-1"),
    _similarity("cknna_f", "Unbiased CKA kept on the pairs of inputs that are top-10 "
                           "neighbours in both (about [-1, 1]).", PRH, low="[-1"),
)

PAIR_FACTS = (
    _plain("other", "test_loss_diff", "|Difference| of the two models' final test losses.",
           f"{PAPER} Fig. 5", "[0, ∞)"),
    _plain("other", "acc_a", "The first model's test accuracy.", OURS, "[0, 1]"),
    _plain("other", "acc_b", "The second model's test accuracy.", OURS, "[0, 1]"),
    _plain("other", "test_loss_a", "The first model's final test loss (the paper's protocol: "
                                   "train-mode BatchNorm).", f"{PAPER} Fig. 5", "[0, ∞)"),
    _plain("other", "test_loss_b", "The second model's final test loss, likewise.",
           f"{PAPER} Fig. 5", "[0, ∞)"),
    _plain("other", "test_loss_eval_a", "The first model's test loss in eval mode after "
                                        "training.", OURS, "[0, ∞)"),
    _plain("other", "test_loss_eval_b", "The second model's eval-mode test loss.", OURS, "[0, ∞)"),
    _plain("other", "test_loss_eval_diff", "|Difference| of the eval-mode test losses.", OURS,
           "[0, ∞)"),
)

ROEDER = (
    _similarity("r2_g", "Held-out R² of b's word vectors mapped linearly onto a's, mean over "
                        "dimensions.", "Roeder et al. 2021, Fig. 1", low="(-∞"),
    _similarity("r2_g_min", "The same R², its smallest dimension.", "Roeder et al. 2021, Fig. 1",
                low="(-∞"),
    _similarity("r2_f", "Held-out R² of b's embeddings of held-out contexts mapped onto a's, "
                        "mean over dimensions.", "Roeder et al. 2021, Fig. 1", low="(-∞"),
    _similarity("r2_f_min", "The same R², its smallest dimension.", "Roeder et al. 2021, Fig. 1",
                low="(-∞"),
    _plain("count", "width", "The models' width M (their hidden width where that differs).",
           OURS, "[1, ∞)"),
    _plain("other", "data_fraction", "Share of the training data the models saw.",
           "Roeder et al. 2021, Fig. 3c", "(0, 1]"),
    _plain("count", "max_steps", "The training's budget of optimisation steps.",
           "Roeder et al. 2021, Fig. 3", "[1, ∞)"),
    _plain("count", "n_train", "Training examples the models saw.", "Roeder et al. 2021, Fig. 3c",
           "[1, ∞)"),
    _plain("index", "best_step_a", "The step early stopping kept for the first model."),
    _plain("index", "best_step_b", "The step early stopping kept for the second model."),
    _similarity("cca_f", "Every canonical correlation of the embeddings, descending (a list).",
                "Roeder et al. 2021, Fig. 3b"),
    _similarity("cca_g", "Every canonical correlation of the unembeddings, descending.",
                "Roeder et al. 2021, Fig. 3b"),
)

STUDENTS = (
    _plain("count", "K", "The number of labels (classes); 'all' in a summary over every "
                         "configuration.", OURS, "[2, ∞)"),
    _plain("name", "loss", "The loss the student learned by (kl, l1, l2, labels, ...)."),
    _plain("index", "teacher_seed", "The teacher's seed."),
    _plain("index", "student_seed", "The student's seed."),
    _plain("other", "test_accuracy", "Test accuracy (a student's, or the mean of a grid "
                                     "point's seeds).", OURS, "[0, 1]"),
    _plain("other", "teacher_test_accuracy", "The teacher's test accuracy.", OURS, "[0, 1]"),
    *(_plain("other", f"probe_{concept}_{who}", f"Held-out R² of a linear probe of the input's "
                                                f"{concept} from the {who}'s embedding.",
             OURS, "(-∞, 1]")
      for concept in ("angle", "radius") for who in ("teacher", "student")),
    _plain("count", "students", "How many students the row averages.", OURS, "[1, ∞)"),
    _plain("count", "teachers", "How many teachers the row averages.", OURS, "[1, ∞)"),
)

NULL_AND_SUMMARY = (
    Entry("tau", "The null's threshold: the chance level of the row's score, its 1 − α "
                 "quantile.", "similarity", 1, "the score's", NULL_SOURCE),
    _plain("other", "p", "Add-one permutation p-value of the row's score against its null.",
           NULL_SOURCE, "(0, 1]"),
    _similarity("calibrated", "The row's score above chance, clip((s − τ)/(s_max − τ), 0, 1): "
                              "0 at chance.", NULL_SOURCE),
    _plain("count", "permutations", "Orderings the null drew (all but the identity in an exact "
                                    "test).", NULL_SOURCE, "[1, ∞)"),
    _plain("other", "q", "Benjamini-Hochberg adjusted p-value over the table.",
           "Benjamini and Hochberg 1995", "(0, 1]"),
    _plain("flag", "significant", "True where q ≤ α.", "Benjamini and Hochberg 1995"),
    _plain("count", "pairs", "How many pairs the row summarises.", OURS, "[1, ∞)"),
    _plain("other", "mean", "The group's mean of the row's measure (`measure` or `metric` names "
                            "it).", OURS, "the measure's"),
    _plain("other", "min", "The group's minimum of the row's measure.", OURS, "the measure's"),
    _plain("other", "max", "The group's maximum of the row's measure.", OURS, "the measure's"),
    _plain("other", "var", "The variance of `mean` (the follow-up's inverse-variance average).",
           FOLLOW_UP, "[0, ∞)"),
)

LAYERS = (
    _plain("index", "slot", "The layer slot (0: the embeddings), matched by relative depth.",
           "Roeder et al. 2021, Fig. 4"),
    _plain("index", "layer_a", "The first model's layer at this slot."),
    _plain("index", "layer_b", "The second model's layer at this slot."),
    _plain("index", "layer", "The first pair's first model's layer at this slot."),
    _plain("flag", "head_input", "True where the slot is the head's input in both models."),
    _plain("name", "measure", "The measure the row holds: svcca, cka or mcca (all similarities)."),
    _plain("count", "components", "SVCCA's components (for CKA and m_CCA the narrower width).",
           "Roeder et al. 2021, Fig. 4", "[1, M]"),
    _plain("count", "components_used", "Components used, capped by both ranks.", OURS, "[0, M]"),
    _similarity("value", "The row's measure on this pair and slot (SVCCA, linear CKA or m_CCA).",
                "Roeder et al. 2021, Fig. 4"),
    _plain("count", "slots", "How many slots the best one was chosen among.", OURS, "[1, ∞)"),
    _plain("index", "best_slot", "The slot of the pair's highest score (null of the maximum: "
                                 "Alg. 2).", "Gröger, Wen and Brbić 2026, Alg. 2"),
)

PRH_STUDY = (
    _plain("name", "language", "The language model."),
    _plain("name", "vision", "The vision model."),
    _plain("name", "family", "The vision model's family (vit, dinov2, clip, ...)."),
    _plain("count", "vision_parameters", "The vision model's parameters.", PRH, "[1, ∞)"),
    _plain("count", "language_parameters", "The language model's parameters.", PRH, "[1, ∞)"),
    _plain("other", "bits_per_byte", "The language model's bits per byte on the captions (lower "
                                     "is better).", PRH, "[0, ∞)"),
    _plain("other", "performance", "1 − bits per byte: the language model's performance.", PRH,
           "(-∞, 1]"),
    _plain("name", "metric", "The alignment metric (PRH's), or the follow-up summary's averaged "
                             "column."),
    Entry("score", "The metric's best value over layer pairs (LCS k-NN's top is 10).",
          "similarity", 1, "[-1, 1]; LCS k-NN [0, 10]", f"{PRH}, Fig. 3"),
    _plain("index", "language_layer", "The language model's layer of the best pair ('all': "
                                      "concatenated).", PRH),
    _plain("index", "vision_layer", "The vision model's layer of the best pair.", PRH),
    _plain("count", "num_classes", "The number of labels K.", OURS, "[2, ∞)"),
)

FOLLOW_UP_COLUMNS = (
    _plain("index", "seed", "The student's seed."),
    _plain("index", "epoch", "Training epochs done at the measurement."),
    _plain("name", "split", "The inputs measured on: train or test."),
    _distance("d_logit2", "The squared logit distance d_logit².", FOLLOW_UP),
    _similarity("mcca", "m_CCA of the student's and the teacher's embeddings.", FOLLOW_UP),
    _similarity("mcca_sklearn", "The same by sklearn's iterative CCA, as their code computes "
                                "it.", FOLLOW_UP),
    _distance("d_rep", "Mean squared gap of the teacher's embedding and the student's mapped by "
                       "the unembeddings.", FOLLOW_UP),
    _plain("other", "tau_teacher", "The smallest probability the teacher gives any label on any "
                                   "input.", FOLLOW_UP, "(0, 1/K]"),
    _plain("other", "tau_student", "The smallest probability the student gives.", FOLLOW_UP,
           "(0, 1/K]"),
    _plain("other", "accuracy", "The student's accuracy on the split.", FOLLOW_UP, "[0, 1]"),
    _similarity("agreement", "Share of inputs on which student and teacher predict the same "
                             "label.", FOLLOW_UP),
    _plain("other", "teacher_accuracy", "The teacher's accuracy on the split.", FOLLOW_UP,
           "[0, 1]"),
    _plain("other", "concept_probe_accuracy", "The student's concept probe accuracy.",
           FOLLOW_UP, "[0, 1]"),
    _plain("other", "teacher_concept_probe_accuracy", "The teacher's concept probe accuracy.",
           FOLLOW_UP, "[0, 1]"),
    _plain("other", "concept_probe_gap", "The teacher's probe accuracy minus the student's.",
           FOLLOW_UP, "[-1, 1]"),
    _distance("f1_left", "Theorem F.1's left side, Σ (1 − ρ²) λ over the teacher's logit "
                         "eigenvalues.", f"{FOLLOW_UP}, Thm. F.1"),
    _distance("f1_right", "Theorem F.1's right side, d_logit².", f"{FOLLOW_UP}, Thm. F.1"),
    _plain("flag", "f1_holds", "True where the left side is at most the right, up to rounding.",
           f"{FOLLOW_UP}, Thm. F.1"),
    _plain("other", "f1_slack", "The right side minus the left (≥ 0 where the bound holds).",
           f"{FOLLOW_UP}, Thm. F.1", "(-∞, ∞)"),
    _distance("kl_bound", "2 KL / τ², the bound on d_logit² under τ-lower-bounded "
                          "probabilities.", FOLLOW_UP),
    Entry("tau", "The smallest probability either model gives any label (the KL bound's τ).",
          "other", None, "(0, 1/K]", FOLLOW_UP, ("follow_up",)),
    _plain("other", "kl_bound_looseness", "kl_bound / f1_right: how far the KL bound is above "
                                          "d_logit².", FOLLOW_UP, "[1, ∞]"),
)

ENTRIES: tuple[Entry, ...] = (*MODELS, *PAPER_MEASURES, *ALIGNMENT_MEASURES, *PAIR_FACTS,
                              *ROEDER, *STUDENTS, *NULL_AND_SUMMARY, *LAYERS, *PRH_STUDY,
                              *FOLLOW_UP_COLUMNS)

FAMILIES: tuple[Family, ...] = (
    Family("<measure>_tau", "_tau", "The null's threshold for {base}: the chance level (its "
           "1 − α quantile; a distance's α quantile).", None, None, "", NULL_SOURCE),
    Family("<measure>_p", "_p", "Add-one permutation p-value of {base} (for a distance, the "
           "lower tail).", "other", None, "(0, 1]", NULL_SOURCE),
    Family("<measure>_calibrated", "_calibrated", "{base} above chance, clipped: 0 at chance or "
           "worse, 1 at a perfect score.", "similarity", 1, "[0, 1]", NULL_SOURCE),
    Family("<column>_mean", "_mean", "The mean of {base} over the row's pairs (or students).",
           None, None, "", OURS, NUMERIC_KINDS),
    Family("<column>_std", "_std", "The population sd of {base} over the row's pairs.",
           "other", None, "[0, ∞)", OURS, NUMERIC_KINDS),
    Family("<column>_sd", "_sd", "The sample sd of {base} over the row's students.", "other",
           None, "[0, ∞)", OURS, NUMERIC_KINDS),
    Family("<column>_se", "_se", "The standard error of {base}'s mean over the row's pairs.",
           "other", None, "[0, ∞)", OURS, NUMERIC_KINDS),
    Family("<column>_ci_low", "_ci_low", "The low end of the 95 % bootstrap interval of "
           "{base}'s mean (seeds resampled).", None, None, "", OURS, NUMERIC_KINDS),
    Family("<column>_ci_high", "_ci_high", "The high end of that interval.", None, None, "",
           OURS, NUMERIC_KINDS),
)


def _exact(column: str, table: str | None) -> Entry | None:
    """The entry named `column`: the one limited to `table` first, then the general one."""
    named = [e for e in ENTRIES if e.name == column]
    tests = (lambda e: table in e.tables, lambda e: not e.tables, lambda e: table is None)
    return next((e for wanted in tests for e in named if wanted(e)), None)


def _member(family: Family, column: str, base: Entry) -> Entry:
    """A family's column as an entry of its own: the base's kind, "the same" and range where
    the family has none."""
    defines = base if family.kind is None else family
    return Entry(column, family.meaning.format(base=base.name), defines.kind, defines.same,
                 defines.range, family.source)


def entry(column: str, table: str | None = None) -> Entry:
    """The entry of `column` (in `table`, a TABLES key, where a name means otherwise there):
    its own, or its family's built from its base (`kl_tau` from `kl`); KeyError if none."""
    found = _exact(column, table)
    if found is not None:
        return found
    for family in sorted(FAMILIES, key=lambda f: -len(f.suffix)):
        base = column[: -len(family.suffix)]
        if not column.endswith(family.suffix) or not base:
            continue
        try:
            parent = entry(base, table)
        except KeyError:
            continue
        if parent.kind in family.bases:
            return _member(family, column, parent)
    raise KeyError(f"no glossary entry for the column {column!r}")


def missing(columns: Iterable[str], table: str | None = None) -> list[str]:
    """The columns without an entry, in the order given."""
    out = []
    for column in columns:
        try:
            entry(column, table)
        except KeyError:
            out.append(column)
    return out


def direction(item: Entry | Family) -> str:
    """How to read a column: "distance: 0 = the same", "similarity: 1 = the same", or its
    kind; a family that takes its base's direction says so."""
    if item.kind is None:
        return f"as {item.pattern.split('_')[0]}"
    if item.kind in MEASURE_KINDS and item.same is not None:
        return f"{item.kind}: {item.same:g} = the same"
    return item.kind


Row = tuple[str, str, str, str, str, str]


def _rows(columns: Sequence[str] | None, code: str = "") -> list[Row]:
    """(name, tables it is limited to, direction, range, source, meaning) of these columns, or
    of every entry and then every family; `code` quotes a family's base in its meaning."""
    if columns is not None:
        found = [entry(c) for c in columns]
        return [(e.name, "", direction(e), e.range, e.source, e.meaning) for e in found]
    rows = [(e.name, ", ".join(e.tables), direction(e), e.range, e.source, e.meaning)
            for e in ENTRIES]
    for f in FAMILIES:
        base = f.pattern.split("_")[0]
        rows.append((f.pattern, "", direction(f), f.range or f"as {code}{base}{code}", f.source,
                     f.meaning.format(base=f"{code}{base}{code}")))
    return rows


def render_text(columns: Sequence[str] | None = None) -> str:
    """The glossary for a terminal: per column its direction, range and source, then what it
    holds on a line of its own; these columns only, or everything."""
    rows = [(f"{n} ({t})" if t else n, d, r, s, m) for n, t, d, r, s, m in _rows(columns)]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for name, way, span, source, meaning in rows:
        lines.append(f"{name:<{widths[0]}}  {way:<{widths[1]}}  {span:<{widths[2]}}  {source}")
        lines.append(f"    {meaning}")
    header = f"{'column':<{widths[0]}}  {'direction':<{widths[1]}}  {'range':<{widths[2]}}  source"
    return "\n".join([header, *lines])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _markdown_rows(rows: list[Row]) -> list[str]:
    """A Markdown table of rows (a family's `<base>` quoted, so that it is not read as HTML)."""
    lines = ["| column | meaning | direction | range | source |", "|---|---|---|---|---|"]
    for name, tables, way, span, source, meaning in rows:
        where = f" ({tables} only)" if tables else ""
        way = way.replace("<", "`<").replace(">", ">`")
        lines.append(f"| `{name}`{where} | {_cell(meaning)} | {way} | {_cell(span)} | {source} |")
    return lines


def render_markdown() -> str:
    """The glossary for docs/measures.md: the tables it covers, every column, every family."""
    lines = ["A distance is 0 for two models that are the same; a similarity is at its top "
             "(1; LCS k-NN's 10) for them. Heatmaps take their colour maps and colour bars' "
             "labels from this direction (figures/style.py::colour_bar).", "",
             "| tables | files |", "|---|---|"]
    lines += [f"| {key} | {files} |" for key, files in TABLES.items()]
    rows = _rows(None, code="`")
    families = {f.pattern for f in FAMILIES}
    lines += ["", *_markdown_rows([row for row in rows if row[0] not in families])]
    lines += ["", "Families: a column named after another one plus a suffix.", "",
              *_markdown_rows([row for row in rows if row[0] in families])]
    return "\n".join(lines)


BEGIN = "<!-- columns: begin (python -m repdist.measures.glossary; do not edit) -->"
END = "<!-- columns: end -->"


def with_columns(text: str) -> str:
    """`text` (a Markdown file's) with the block between BEGIN and END rendered anew."""
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"no '{BEGIN} ... {END}' block to fill")
    return text[:start] + f"{BEGIN}\n{render_markdown()}\n{END}" + text[stop + len(END):]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the glossary (for a terminal, or as Markdown), or render a file's block."""
    parser = argparse.ArgumentParser(prog="python -m repdist.measures.glossary",
                                     description="What every output column means.")
    parser.add_argument("--markdown", action="store_true", help="print it as Markdown")
    parser.add_argument("--write", type=Path, metavar="FILE",
                        help=f"render FILE's block between {BEGIN} and {END}")
    args = parser.parse_args(argv)
    if args.write is not None:
        args.write.write_text(with_columns(args.write.read_text()))
    else:
        print(render_markdown() if args.markdown else render_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
