"""Language models layer by layer (Roeder et al. 2021, Fig. 4): the hidden states of real tiny
Hugging Face models (GPT-2, GPT-NeoX, Llama, built from configs) and of the lm branch's GPT, at
f's positions, and the layer table's properties: a model against itself is 1 everywhere, CKA
and m_CCA do not see an orthogonal map, m_CCA no invertible one, two widths compare, models of
different depths meet by relative depth."""

import numpy as np
import pandas as pd
import pytest
import torch
import transformers  # in the test extra and the lock: its absence fails, not skips
from tolerances import close_in, magnitude

from repdist.experiments.lm.layers import (
    LAYER_COLUMNS,
    layer_slots,
    pair_rows,
    layer_summary,
    layer_table,
    read_layer_set,
    write_layers,
)
from repdist.extract import ExtractionError, causal_lm_representations
from repdist.extract.layers import LayerReading, causal_lm_layers, layer_indices
from repdist.measures.prepared import alignment_view
from repdist.models.gpt import GPT, GPTConfig
from repdist.models.lm_standins import StandinSpec, build_standin

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

VOCAB, LENGTH = 60, 10


def tokens(contexts=40, seed=0):
    return np.random.default_rng(seed).integers(0, VOCAB, (contexts, LENGTH))


@pytest.mark.parametrize("arch", ["gpt2", "gpt_neox", "llama", "ours"])
@pytest.mark.parametrize("positions", ["last", "all"])
def test_the_last_layer_is_the_head_input_that_f_is(arch, positions):
    """HF models: their hidden states, the last one the final norm's output = f; our GPT: the
    embeddings, every block's output, then f (its final RMSNorm's output) as a layer."""
    if arch == "ours":
        torch.manual_seed(0)
        model, head = GPT(GPTConfig(vocab=VOCAB, width=16, layers=3, heads=2, context=16)), "head"
    else:
        model, head = build_standin(StandinSpec(arch, width=16, layers=3), VOCAB, 16), "lm_head"
    ids = tokens()
    got = causal_lm_layers(model, ids, "all", LayerReading(positions, head, None, 7))
    reps = causal_lm_representations(model, ids, head, positions=positions, bias="drop")
    assert got.count == (5 if arch == "ours" else 4) and got.head_input == got.count - 1
    assert got.source == ("blocks" if arch == "ours" else "output_hidden_states")
    rows = len(ids) * (LENGTH if positions == "all" else 1)
    assert all(s.shape == (rows, 16) and s.dtype == np.float32 for s in got.states.values())
    f = reps.f.astype(np.float32)  # batches of 7 contexts against 16: float32's rounding apart
    np.testing.assert_allclose(got.states[got.head_input], f, **close_in(np.float32, magnitude(f)))
    np.testing.assert_array_equal(got.labels, reps.labels)  # exact: integers
    embeddings = model.get_input_embeddings() if arch != "ours" else model.tokens
    if arch in ("gpt_neox", "llama"):  # no position embedding: layer 0 is the token's row
        last = ids[:, -1] if positions == "last" else ids.ravel()
        rows_of_the_table = embeddings.weight.detach().numpy()[last]
        np.testing.assert_array_equal(got.states[0], rows_of_the_table)  # exact: a gather
    logits = reps.f @ reps.g.T
    known = got.labels >= 0
    nll = -(logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))
            - logits.max(1, keepdims=True))[np.arange(len(logits)), np.maximum(got.labels, 0)]
    np.testing.assert_allclose(got.nll[known], nll[known], rtol=1e-5)
    assert np.isnan(got.nll[~known]).all() and (known.sum() > 0) == (positions == "all")


def test_selected_layers_and_their_range():
    model = build_standin(StandinSpec("gpt2", width=8, layers=2), VOCAB, 16)
    got = causal_lm_layers(model, tokens(6), [0, -1], LayerReading(head="lm_head"))
    assert sorted(got.states) == [0, 2] and got.count == 3
    assert layer_indices("all", 4) == [0, 1, 2, 3] and layer_indices([-1, 3, 0], 4) == [0, 3]
    with pytest.raises(ExtractionError, match="out of range.*3 layers"):
        causal_lm_layers(model, tokens(6), [5], LayerReading(head="lm_head"))
    targets = np.arange(6)  # a window's next tokens, known to the caller
    got = causal_lm_layers(model, tokens(6), [-1], LayerReading(head="lm_head"),
                           targets=targets)
    np.testing.assert_array_equal(got.labels, targets)  # exact: integers
    assert np.isfinite(got.nll).all()


def write_set(folder, name, states, head_input=None):
    """A model's layer folder as the jobs write it, from {layer: states}."""
    n = len(next(iter(states.values())))
    count = max(states) + 1
    write_layers(folder / name, {i: np.asarray(s, np.float32) for i, s in states.items()},
                 np.zeros(n, np.int64), np.zeros(n, np.int64),
                 {"name": name, "count": count,
                  "head_input": count - 1 if head_input is None else head_input})
    return read_layer_set(name, folder / name)


def random_layers(rng, n=300, widths=(12, 12, 12)):
    return {i: rng.normal(size=(n, w)) @ rng.normal(size=(w, w)) for i, w in enumerate(widths)}


def test_a_model_against_itself_is_one_at_every_layer_and_measure(tmp_path, rng):
    states = random_layers(rng)
    a, b = write_set(tmp_path, "a", states), write_set(tmp_path, "b", states)
    table = layer_table([a, b], "all", [4, 8, 16, 768])
    assert list(table.columns) == LAYER_COLUMNS
    assert table["value"].to_numpy() == pytest.approx(1.0, abs=1e-6)
    assert sorted(table.loc[table["measure"] == "svcca", "components"].unique()) == [4, 8, 12]
    assert table["head_input"].tolist() == [s == 2 for s in table["slot"]]
    assert (table["warning"] == "").all()
    assert (read_layer_set("a", tmp_path / "a").states(1) == states[1].astype(np.float32)).all()


def test_cka_and_mcca_ignore_an_orthogonal_map_and_mcca_any_invertible_one(tmp_path, rng):
    base = random_layers(rng)
    other = random_layers(np.random.default_rng(7))
    q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    invertible = rng.normal(size=(12, 12))
    sets = {"base": base, "other": other,
            "rotated": {i: s @ q for i, s in other.items()},
            "mixed": {i: s @ invertible + 3.0 for i, s in other.items()}}
    models = [write_set(tmp_path, name, s) for name, s in sets.items()]
    table = layer_table(models, "all", [4, 12])
    value = table.set_index(["model_a", "model_b", "slot", "measure", "components"])["value"]
    tol = 1e-5  # the states are stored in float32, the precision models compute in
    for slot in range(3):
        for measure, k in (("cka", 12), ("mcca", 12), ("svcca", 4), ("svcca", 12)):
            ref = value["base", "other", slot, measure, k]
            assert value["base", "rotated", slot, measure, k] == pytest.approx(ref, abs=tol)
            assert value["other", "rotated", slot, measure, k] == pytest.approx(1.0, abs=tol)
        assert value["base", "mixed", slot, "mcca", 12] == pytest.approx(
            value["base", "other", slot, "mcca", 12], abs=tol)
        assert value["other", "mixed", slot, "mcca", 12] == pytest.approx(1.0, abs=tol)
        assert value["other", "mixed", slot, "cka", 12] < 0.99  # CKA sees a non-orthogonal map


def test_two_widths_compare_capped_by_the_smaller(tmp_path, rng):
    narrow = write_set(tmp_path, "narrow", random_layers(rng, widths=(8, 8)))
    wide = write_set(tmp_path, "wide", random_layers(rng, widths=(20, 20)))
    table = layer_table([narrow, wide], "all", [4, 16, 768])
    assert sorted(table["components"].unique()) == [4, 8]
    assert table["value"].between(0, 1).all()


def test_three_widths_give_every_pair_every_count(tmp_path, rng):
    """SVCCA's counts are capped by the narrowest model (GPT-2's sizes: 768 to 1,600), so each
    line of the figure averages every pair; CKA and m_CCA keep one row per slot."""
    sets = [write_set(tmp_path, f"w{w}", random_layers(rng, widths=(w, w))) for w in (6, 9, 12)]
    table = layer_table(sets, "all", [4, 8, 768])
    assert sorted(table.loc[table["measure"] == "svcca", "components"].unique()) == [4, 6]
    summary = layer_summary(table)
    assert (summary["pairs"] == 3).all()
    assert len(summary) == 2 * 4  # 2 slots x (svcca 4, svcca 6, cka, mcca)
    mcca = summary[summary["measure"] == "mcca"]
    assert (mcca["components"] == 6).all()  # the narrowest pair's


def test_a_rank_deficient_head_input_is_averaged_over_its_rank(rng):
    """A final LayerNorm's f varies in M - 1 directions: m_CCA and SVCCA at M use M - 1, with
    the count and a note (exact zeros here; float32 rounding: tests/test_mcca_rank.py). The
    second representation is an invertible map of the first (x diag(1..6)): the same rank-5
    column space, so each of the 5 canonical correlations is 1 (to rounding)."""
    x = rng.normal(size=(300, 6))
    x -= x.mean(axis=1, keepdims=True)  # every row sums to zero
    rows = pair_rows(alignment_view(x), alignment_view(x @ np.diag(np.arange(1.0, 7.0))), [6])
    mcca = next(r for r in rows if r["measure"] == "mcca")
    svcca = next(r for r in rows if r["measure"] == "svcca")
    assert mcca["components"] == 6 and mcca["components_used"] == 5
    assert "mean over 5 of 6" in mcca["warning"]
    assert mcca["value"] == pytest.approx(1.0, abs=1e-12)
    assert svcca["components_used"] == 5 and "rank 5 < 6" in svcca["warning"]


def test_models_of_different_depths_meet_by_relative_depth(tmp_path, rng):
    shallow = write_set(tmp_path, "shallow", random_layers(rng, widths=(6,) * 3))
    deep = write_set(tmp_path, "deep", random_layers(rng, widths=(6,) * 5))
    assert layer_slots([shallow, deep], "all") == [[0, 1, 2], [0, 2, 4]]
    table = layer_table([shallow, deep], "all", [4])
    assert table["head_input"].tolist() == [s == 2 for s in table["slot"]]
    summary = layer_summary(table)
    assert (summary["pairs"] == 1).all() and summary["head_input"].sum() == 3
    listed = [write_set(tmp_path, f"l{n}", {0: rng.normal(size=(50, 4)),
                                            n - 1: rng.normal(size=(50, 4))}, n - 1)
              for n in (3, 5)]
    assert layer_slots(listed, [0, -1]) == [[0, 2], [0, 4]]


def test_the_layer_summary_averages_over_pairs(tmp_path, rng):
    models = [write_set(tmp_path, f"m{i}", random_layers(np.random.default_rng(i)))
              for i in range(3)]
    table = layer_table(models, "all", [4])
    summary = layer_summary(table)
    assert (summary["pairs"] == 3).all() and len(summary) == 3 * 3  # slots x (svcca, cka, mcca)
    one = table[(table["slot"] == 1) & (table["measure"] == "cka")]["value"]
    row = summary[(summary["slot"] == 1) & (summary["measure"] == "cka")].iloc[0]
    assert row["mean"] == pytest.approx(one.mean()) and row["max"] == one.max()


def test_a_layer_file_reads_as_a_models_embeddings(tmp_path, rng):
    """Each layer is in the embeddings format: with a g beside it, `repdist compare` reads it."""
    import shutil

    from repdist.io.representations import load_model, unembeddings_frame

    s = write_set(tmp_path, "m", random_layers(rng, widths=(5, 5)))
    folder = tmp_path / "as_model"
    folder.mkdir()
    shutil.copy(s.folder / "layer1.parquet", folder / "embeddings.parquet")
    unembeddings_frame(rng.normal(size=(9, 5))).to_parquet(folder / "unembeddings.parquet")
    assert load_model(folder).f.shape == (300, 5)
    assert pd.read_parquet(s.folder / "layer0.parquet").columns[:3].tolist() == \
        ["index", "label", "pred"]


class MaskFreeBlocks(torch.nn.Module):
    """A hand-written causal LM with a `blocks` ModuleList whose forward takes the ids alone."""

    def __init__(self, vocab=VOCAB, width=6):
        super().__init__()
        torch.manual_seed(5)
        self.emb = torch.nn.Embedding(vocab, width)
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(2))
        self.head = torch.nn.Linear(width, vocab, bias=False)

    def forward(self, input_ids):
        h = torch.cumsum(self.emb(input_ids), dim=1)  # causal: position t sees tokens <= t
        for block in self.blocks:
            h = torch.tanh(block(h))
        return self.head(h)


def test_a_model_without_an_attention_mask_keyword_gives_its_layers():
    """Its layers are read from the ids alone (causal_lm.mask_keywords), the last one its f."""
    model = MaskFreeBlocks()
    ids = tokens(5)
    got = causal_lm_layers(model, ids, "all", LayerReading(head="head"))
    # the first block's input, both blocks' outputs, and the head's input (tanh of the last)
    assert got.count == 4 and sorted(got.states) == [0, 1, 2, 3]
    reps = causal_lm_representations(model, ids, head="head", positions="last", bias="drop")
    f = reps.f.astype(np.float32)
    np.testing.assert_array_equal(got.states[3], f)  # exact: one forward of one batch in both


def test_the_layer_figure_says_what_its_bracketed_ticks_mean(tmp_path, rng):
    """Depths 3 and 5 meet by relative depth: the ticks read "1 (2)", "2 (4)" (slot, and the
    first model's layer), and the axis title says so, naming that model."""
    from repdist.figures.lm import layers_figure

    deep = write_set(tmp_path, "deep", random_layers(rng, widths=(6,) * 5))
    shallow = write_set(tmp_path, "shallow", random_layers(rng, widths=(6,) * 3))
    summary = layer_summary(layer_table([deep, shallow], "all", [4]))
    meta = {"models": [{"name": "deep"}, {"name": "shallow"}], "positions": "last"}
    ax = layers_figure(summary, meta).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1 (2)", "2 (4)"]
    assert '"k (l)": slot k is layer l of deep, the first model' in ax.get_xlabel()
    same = summary[summary["slot"] < 1].assign(layer=0)
    assert layers_figure(same, meta).axes[0].get_xlabel() == "layer (0: the embeddings)"


def test_the_layer_table_is_what_compare_gives_for_the_same_states(tmp_path, rng):
    """CKA and m_CCA of a pair of layers are compare()'s cka_f and mcca_f of those states
    (g any of the right width; compare reads f C-ordered, a parquet's columns come F-ordered:
    equal to rounding), SVCCA at k components extra.svcca at k; and bit for bit what the
    layer table gave before it went through the measures' own preparation (the formulas of
    then, here)."""
    import warnings

    from repdist.measures import compare
    from repdist.measures.cca import mean_cca_over_rank, orthonormal_basis
    from repdist.measures.extra import centred, linear_cka_centred, svcca, svcca_from_bases

    a = write_set(tmp_path, "a", random_layers(rng, n=200, widths=(5, 7)))
    b = write_set(tmp_path, "b", random_layers(rng, n=200, widths=(6, 7)))
    table = layer_table([a, b], "all", [3, 5])
    value = table.set_index(["slot", "measure", "components"])["value"]
    for slot in (0, 1):
        x, y = a.states(slot), b.states(slot)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = compare(x, np.ones((9, x.shape[1])), y, np.ones((9, y.shape[1])),
                           measures=["cka_f", "mcca_f"])
        narrowest = min(x.shape[1], y.shape[1])
        assert value[slot, "cka", narrowest] == pytest.approx(want["cka_f"], rel=1e-12)
        assert value[slot, "mcca", narrowest] == pytest.approx(want["mcca_f"], rel=1e-12)
        cx, cy, bx, by = centred(x), centred(y), orthonormal_basis(x), orthonormal_basis(y)
        before = linear_cka_centred(cx, cy, float(np.linalg.norm(cx.T @ cx)),
                                    float(np.linalg.norm(cy.T @ cy)))
        assert value[slot, "cka", narrowest] == before
        assert value[slot, "mcca", narrowest] == mean_cca_over_rank(bx, by, narrowest).value
        for k in (3, 5):
            assert value[slot, "svcca", k] == svcca_from_bases(bx, by, k, k)
            assert value[slot, "svcca", k] == pytest.approx(svcca(x, y, k), rel=1e-12)


def test_with_a_null_every_row_has_its_chance_level_and_the_best_slot_pays_for_the_search(
        tmp_path, rng):
    """Unrelated models: no row, and no best slot, beyond chance (the best slot's raw value is
    the largest of the slots'; its tau is higher than any one slot's); a model and an invertible
    map of it: every row's p is 1 / (K + 1). The best slot's null equals null.aggregate_null
    of the per-slot draws (Algorithm 2, tests/test_null_reference.py against their code)."""
    from repdist.experiments.lm.layers import BEST_COLUMNS, NULL_COLUMNS, layer_tables
    from repdist.measures.null import NullSettings

    null = NullSettings(permutations=19, seed=2)
    states = random_layers(rng, n=80, widths=(6, 6, 6, 6))
    unrelated = random_layers(np.random.default_rng(5), n=80, widths=(6, 6, 6, 6))
    mixing = rng.normal(size=(6, 6))
    sets = [write_set(tmp_path, "a", states), write_set(tmp_path, "b", unrelated),
            write_set(tmp_path, "c", {i: s @ mixing for i, s in states.items()})]
    got = layer_tables(sets, "all", [3], null)
    table, best = got.table, got.best
    assert list(table.columns) == [*LAYER_COLUMNS, *NULL_COLUMNS]
    assert list(best.columns) == BEST_COLUMNS and len(best) == 3 * 2
    related = table[(table["model_a"] == "a") & (table["model_b"] == "c")
                    & (table["measure"] == "mcca")]
    assert (related["p"] == 1 / 20).all() and (related["calibrated"] > 0.99).all(), related
    ab = table[(table["model_a"] == "a") & (table["model_b"] == "b") & (table["measure"] == "cka")]
    ab_best = best[(best["model_a"] == "a") & (best["model_b"] == "b")
                   & (best["measure"] == "cka")].iloc[0]
    assert ab_best["value"] == ab["value"].max() and ab_best["slots"] == 4
    assert ab_best["tau"] >= ab["tau"].max() - 1e-12 and ab_best["p"] > 0.05
    assert layer_table(sets[:2], "all", [3]).columns.tolist() == LAYER_COLUMNS  # no null


def test_with_a_null_the_summary_and_figure_carry_each_layers_chance_level(tmp_path, rng):
    """layer_summary adds the means of tau and the calibrated score; the figure draws CKA's and
    m_CCA's tau dotted, one point per slot."""
    from repdist.experiments.lm.layers import layer_tables
    from repdist.figures.lm import layers_figure
    from repdist.measures.null import NullSettings

    sets = [write_set(tmp_path, name, random_layers(np.random.default_rng(s), n=60))
            for name, s in (("a", 1), ("b", 2))]
    summary = layer_summary(layer_tables(sets, "all", [4], NullSettings(permutations=9)).table)
    assert list(summary.columns[-2:]) == ["tau_mean", "calibrated_mean"]
    assert summary["tau_mean"].between(0, 1).all()
    ax = layers_figure(summary, {"models": [{"name": "a"}, {"name": "b"}]}).axes[0]
    dotted = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"
              and ln.get_label().endswith("chance (null's tau)")]
    assert len(dotted) == 2 and all(len(ln.get_xdata()) == 3 for ln in dotted)
