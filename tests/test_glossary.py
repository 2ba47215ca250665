"""The glossary of output columns (repdist.measures.glossary): every column the writers emit has
an entry, built through their own code on small inputs (`repdist compare`'s columns, the pairs
tables of seeds, named models and CIFAR-10, the snapshots, the students, the language models'
layer tables, PRH's tables, the follow-up's) or read off the column lists they build their
frames with; every entry's direction fits its kind and the null's own tails; an unknown column
is reported; docs/measures.md's block is the rendered one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import random_model

from repdist.measures import CompareSettings
from repdist.measures.glossary import (
    BEGIN,
    END,
    ENTRIES,
    FAMILIES,
    KINDS,
    TABLES,
    entry,
    main,
    missing,
    render_markdown,
    render_text,
    with_columns,
)
from repdist.measures.null import DISTANCES, NULL_MEASURES, SCORE_MAX

ROOT = Path(__file__).resolve().parents[1]
N, K, M = 120, 7, 3
NULL = {"permutations": 3, "measures": list(NULL_MEASURES)}
EVERYTHING = {"num_samples": 5, "null": NULL}  # every measure, every null


def write_models(folder: Path, count: int, rng) -> tuple[list[Path], list[Path]]:
    """`count` models' embeddings and unembeddings files, as the pairs jobs read them."""
    from repdist.io.representations import embeddings_frame, unembeddings_frame

    emb, unemb = [], []
    for s in range(count):
        f, g = random_model(rng, n=N, k=K, m=M)
        emb.append(folder / f"e{s}.parquet")
        unemb.append(folder / f"u{s}.parquet")
        embeddings_frame(f, np.arange(N) % K, np.arange(N) % K).to_parquet(emb[-1])
        unembeddings_frame(g).to_parquet(unemb[-1])
    return emb, unemb


METRICS = [{"final_test_loss": 1.0 + s, "test_accuracy": 0.5, "final_test_loss_eval": 1.1 + s}
           for s in range(3)]


def test_repdist_compares_columns_have_entries():
    from repdist.experiments.models.groups import table_columns

    columns = table_columns(CompareSettings(**EVERYTHING))
    assert {"m_svd_f_min", "cknna_f_calibrated", "d_fg_tau", "warning"} <= set(columns)
    assert missing(columns, "compare") == []


def test_the_pairs_tables_columns_have_entries(tmp_path, rng):
    """Seeds, named models and CIFAR-10 through their writers with every measure and null;
    the report's table, Roeder's word pairs and CPC pairs from the lists they select."""
    from repdist.experiments.pairs import (
        compare_cifar_seeds,
        compare_named,
        compare_seeds,
        null_fields_of,
    )
    from repdist.experiments.roeder.cpc_tables import CONFIG_COLUMNS
    from repdist.experiments.roeder.words_pairs import WORDS_PAIR_COLUMNS
    from repdist.figures.lm import TABLE_COLUMNS

    emb, unemb = write_models(tmp_path, 3, rng)
    (tmp_path / "train").mkdir()
    train, _ = write_models(tmp_path / "train", 3, rng)
    tables = [compare_seeds([0, 1, 2], emb, unemb, METRICS, EVERYTHING),
              compare_named(["a", "b", "c"], emb, unemb, METRICS, EVERYTHING),
              compare_cifar_seeds([0, 1, 2], emb, train, unemb, METRICS, EVERYTHING)]
    assert "mcca_f_test_calibrated" in tables[2].columns
    null = null_fields_of(CompareSettings(**EVERYTHING))
    lists = [TABLE_COLUMNS, WORDS_PAIR_COLUMNS, [*CONFIG_COLUMNS, *tables[0].columns, *null]]
    for columns in [*(t.columns for t in tables), *lists]:
        assert missing(columns, "pairs") == []


def test_the_snapshots_and_students_columns_have_entries(rng):
    """The training snapshots (ours and Roeder's CPC, with its canonical correlations) by
    their Snapshots object; the students' table and summary by their functions."""
    from repdist.experiments.distillation.table import (
        LoadedSeed,
        Teachers,
        distillation_summary,
        student_rows,
    )
    from repdist.experiments.synthetic.dynamics import Snapshots
    from repdist.experiments.roeder.cpc_tables import SNAPSHOT_COLUMNS, cca_coefficients

    models = [random_model(rng, n=N, k=K, m=M) for _ in range(3)]
    stacked = (np.stack([f for f, _ in models]), np.stack([g for _, g in models]))
    for extra in ({}, {"columns": SNAPSHOT_COLUMNS, "extra": cca_coefficients}):
        snapshots = Snapshots(lambda: stacked, [0, 1, 2], [5], EVERYTHING, **extra)
        snapshots(5)
        assert missing(snapshots.table().columns, "pairs") == []
    seeds = [LoadedSeed(f, g, 0.5) for f, g in models]
    students = student_rows(Teachers(K, M, [0], N, 0), seeds[:1], {"kl": seeds[1:2],
                                                                   "l2": seeds[2:]}, 100,
                            EVERYTHING)
    assert missing(students.columns, "pairs") == []
    assert missing(distillation_summary(students).columns, "pairs") == []


def test_the_language_models_layer_tables_columns_have_entries(tmp_path, rng):
    from repdist.experiments.lm.layers import (
        layer_summary,
        layer_tables,
        read_layer_set,
        write_layers,
    )
    from repdist.measures.null import NullSettings

    sets = []
    for name in ("a", "b"):
        states = {i: rng.normal(size=(60, 4)).astype(np.float32) for i in range(2)}
        write_layers(tmp_path / name, states, np.zeros(60, np.int64), np.zeros(60, np.int64),
                     {"name": name, "count": 2, "head_input": 1})
        sets.append(read_layer_set(name, tmp_path / name))
    tables = layer_tables(sets, "all", [2, 4], NullSettings(permutations=3))
    for table in (tables.table, tables.best, layer_summary(tables.table)):
        assert missing(table.columns, "lm_layers") == []


def test_prhs_tables_columns_have_entries(rng):
    """The study's table (every layer pair, its null, Benjamini-Hochberg) and the synthetic
    grid's alignment table, by their functions."""
    from repdist.experiments.synthetic.alignment import alignment_table
    from repdist.experiments.prh.study import StudyModel, StudySettings, study_table
    from repdist.measures.null import NullSettings

    def model(name, modality, **info):
        return StudyModel(name, rng.normal(size=(40, 2, 5)), {"modality": modality, **info})

    language = [model(f"l{i}", "language", bits_per_byte=1.0 - 0.1 * i) for i in range(2)]
    vision = [model("v", "vision", family="vit", parameters=10)]
    study = study_table(language, vision, StudySettings(), NullSettings(permutations=3))
    assert missing(study.columns, "prh") == []
    pairs = pd.DataFrame({"K": 4, "width": [8, 8, 8, 16, 16, 16], "seed_a": [0, 0, 1] * 2,
                          "seed_b": [1, 2, 2] * 2, "acc_a": 0.9, "acc_b": 0.8,
                          **{f"{m}{s}": rng.uniform(size=6) for m in ("mutual_knn_f", "cknna_f")
                             for s in ("", "_tau", "_calibrated")}})
    assert missing(alignment_table(pairs).columns, "prh") == []


def test_the_follow_ups_tables_columns_have_entries(rng):
    """Its snapshots' declared columns (the frame's), the final table with its nulls and the
    concept probe's columns, and the inverse-variance summary, by their functions."""
    from repdist.experiments.logit_distance.tables import (
        SNAPSHOT_COLUMNS,
        final_table,
        inverse_variance_summary,
        probe_columns,
    )
    from repdist.measures.null import NullSettings

    teacher = random_model(rng, n=N, k=K, m=M)
    probe = probe_columns({"concept_probe_accuracy": 0.7}, {"concept_probe_accuracy": 0.8})
    members = [{"teacher_seed": 0, "loss": loss, "seed": 1, **probe} for loss in ("kl", "l2")]
    final = final_table(members, {0: teacher}, [random_model(rng, n=N, k=K, m=M)] * 2,
                        NullSettings(permutations=3), 50)
    snapshots = pd.DataFrame([[0, loss, s, 1, "test", *rng.uniform(size=10)]
                              for loss in ("kl", "l2") for s in (1, 2)],
                             columns=SNAPSHOT_COLUMNS)
    for table in (snapshots, final, inverse_variance_summary(snapshots)):
        assert missing(table.columns, "follow_up") == []
    assert entry("tau", "follow_up").kind == "other" and entry("tau").kind == "similarity"


def test_every_entry_reads_as_its_kind_says():
    """A distance is 0 for the same model and starts its range there; a similarity has a
    value for "the same"; nothing else has one; every entry says what it holds and where it
    comes from, once per table."""
    names = [(e.name, e.tables) for e in ENTRIES]
    assert len(names) == len(set(names))
    for e in ENTRIES:
        assert e.kind in KINDS and set(e.tables) <= set(TABLES), e
        assert e.meaning.endswith(".") and e.source and e.range, e
        if e.kind == "distance":
            assert e.same == 0 and e.range.startswith("[0"), e
        elif e.kind == "similarity":
            assert e.same is not None, e
            if e.range[0] in "[(" and ";" not in e.range:  # one interval: "the same" its top
                assert e.range.endswith(f"{e.same:g}]"), e
        else:
            assert e.same is None, e
    for f in FAMILIES:
        assert f.pattern.endswith(f.suffix) and set(f.bases) <= set(KINDS), f
        assert f.kind is None or (f.same is None) == (f.kind not in ("distance", "similarity"))


def test_the_glossary_reads_each_null_measure_as_its_null_does():
    """The null takes a distance's lower tail (null.DISTANCES), a similarity's upper one up to
    its top (null.SCORE_MAX): the glossary says the same of every measure."""
    for measure in NULL_MEASURES:
        found = entry(measure)
        assert found.kind == ("distance" if measure in DISTANCES else "similarity"), measure
        assert found.same == (0 if measure in DISTANCES else SCORE_MAX.get(measure, 1.0))


def test_families_take_their_direction_from_their_base():
    assert entry("kl_tau").kind == "distance" and entry("kl_tau").same == 0
    assert entry("kl_calibrated").kind == "similarity" and entry("kl_calibrated").same == 1
    assert entry("kl_p").kind == "other" and entry("mcca_f_test_p").range == "(0, 1]"
    assert entry("mcca_f_tau_mean").kind == "similarity"
    assert entry("d_llv_ci_low").range == entry("d_llv").range
    assert entry("test_accuracy_sd").kind == "other"


def test_an_unknown_column_is_reported_missing():
    """The check can fail: a column nobody described, a null of a column that is no measure,
    a summary of a name."""
    assert missing(["kl", "no_such_column", "kl_tau", "warning_p", "model_a_mean"]) == [
        "no_such_column", "warning_p", "model_a_mean"]
    with pytest.raises(KeyError, match="no_such_column"):
        entry("no_such_column")


def test_the_terminal_text_says_each_columns_direction():
    text = render_text()
    assert all(e.name in text for e in ENTRIES) and all(f.pattern in text for f in FAMILIES)
    some = render_text(["kl", "mcca_f", "kl_p"]).splitlines()
    assert len(some) == 1 + 2 * 3 and "cka_f" not in "\n".join(some)
    assert "distance: 0 = the same" in some[1] and "similarity: 1 = the same" in some[3]


def test_the_docs_render_the_glossary(tmp_path):
    """docs/measures.md holds the rendered block; a stale one is found and rewritten."""
    docs = (ROOT / "docs" / "measures.md").read_text()
    assert with_columns(docs) == docs, "run: python -m repdist.measures.glossary --write " \
                                       "docs/measures.md"
    assert render_markdown() in docs
    stale = docs.replace("| `kl` |", "| `kl_old` |")
    assert with_columns(stale) != stale
    copy = tmp_path / "measures.md"
    copy.write_text(stale)
    assert main(["--write", str(copy)]) == 0 and copy.read_text() == docs
    with pytest.raises(ValueError, match="columns: begin"):
        with_columns(docs.replace(BEGIN, "").replace(END, ""))
