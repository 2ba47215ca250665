"""Roeder et al. (2021)'s Fig. 1: words and vocabulary, the log-bilinear model (its float64
log-likelihood, its invariances, seeds stacked as alone), training and the files it leaves, the
pairs with Fig. 1's R^2, the figure's fit, the config checks and the paper-comparison rows."""

import copy
import json

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import train_config
from repdist.data.words import (
    UNK,
    Vocabulary,
    build_vocabulary,
    read_corpus,
    spread,
    windows,
    words,
)
from repdist.experiments.outputs import SeedFiles
from repdist.experiments.paper_comparison.checks import (
    ROEDER_WORDS_R2,
    fit_r2,
    roeder_words_checks,
)
from repdist.experiments.roeder.words import WordsConfig, train_words, words_data
from repdist.experiments.roeder.words_pairs import (
    WORDS_PAIR_COLUMNS,
    fit_table,
    shown_words,
    vector_fit_r2,
    word_vectors,
    words_fit,
    words_pairs,
)
from repdist.io import read_csv, read_parquet_metadata, read_table_metadata
from repdist.models.log_bilinear import StackedLogBilinear
from repdist.pipeline.config_checks import check_config
from repdist.pipeline.config_errors import ConfigError
from repdist.training.loop import TrainData, train

ANIMALS, THINGS = ("cat", "dog", "cow", "hen"), ("mat", "log", "rug")
# distinct lines (a text file is split by line: a repeated line lands on one side)
TEXT = "".join(f"the {ANIMALS[i % 4]} sat on the {THINGS[i % 3]} {i % 5}; a {ANIMALS[i % 3]} "
               f"and (a) {ANIMALS[i % 2]}!\n" for i in range(200))


# --- words, vocabulary, windows ------------------------------------------------------------

def test_words_are_word_runs_and_single_other_characters():
    assert words("self.x=f(a_1, 'b')  # ok\n") == [
        "self", ".", "x", "=", "f", "(", "a_1", ",", "'", "b", "'", ")", "#", "ok"]
    text = "Hello, world!\n\tx  += 10;"
    assert "".join(words(text)) == "".join(text.split())  # nothing but whitespace is dropped


def test_the_vocabulary_keeps_the_most_frequent_words_and_one_unk_for_the_rest():
    tokens = list("aaaabbbccd") + ["e", "e", "e"]  # a 4, b 3, e 3, c 2, d 1
    vocab = build_vocabulary(tokens, 4)
    assert vocab.words == ("a", "b", "e", UNK)  # the tie b/e in code-point order
    assert vocab.counts == (4, 3, 3, 3) and sum(vocab.counts) == len(tokens)
    assert vocab.size == 4 and vocab.unk == 3
    np.testing.assert_array_equal(vocab.ids(["e", "c", "a", "zz"]), [2, 3, 0, 3])  # exact: integers
    for size in range(2, 6):  # a larger cap keeps the smaller one's words, in order
        words_kept = build_vocabulary(tokens, size).words[:-1]
        assert words_kept == build_vocabulary(tokens, size + 1).words[: size - 1]
    with pytest.raises(ValueError, match="5 distinct words, fewer than the 6"):
        build_vocabulary(tokens, 7)
    with pytest.raises(ValueError, match="ends in"):
        Vocabulary(("a", "b"), (1, 1))


def test_the_unk_token_is_no_word_of_any_text():
    assert UNK not in words(f"a {UNK} b <unk>")


def test_windows_are_every_context_and_the_word_after_it():
    ids = np.arange(10) * 7
    x, y = windows(ids, 3)
    assert x.shape == (7, 3) and y.shape == (7,)
    for t in range(7):
        np.testing.assert_array_equal(x[t], ids[t : t + 3])  # exact: integers
        assert y[t] == ids[t + 3]
    assert windows(ids[:3], 3)[0].shape == (0, 3)
    with pytest.raises(ValueError, match="context must be >= 1"):
        windows(ids, 0)


def test_spread_takes_distinct_indices_over_the_whole_range():
    rows = spread(1000, 37)
    assert rows[0] == 0 and rows[-1] == 999 and len(set(rows)) == 37
    np.testing.assert_array_equal(spread(5, 5), np.arange(5))  # exact: integers
    with pytest.raises(ValueError):
        spread(3, 4)


def test_a_text_file_is_split_by_line_the_same_way_whatever_else_it_holds(tmp_path):
    lines = [f"line {i} of the text\n" for i in range(400)]
    path = tmp_path / "corpus.txt"
    path.write_text("".join(lines))
    split = read_corpus(str(path), 0, 0.2)
    held = set(split.held_out.splitlines(keepends=True))
    assert 40 < len(held) < 120 and not held & set(split.train.splitlines(keepends=True))
    assert split.info["lines_held_out"] == len(held) and split.info["corpus"] == str(path)
    path.write_text("".join(lines[::-1] + ["another line\n"]))  # reordered, one more
    again = read_corpus(str(path), 0, 0.2)
    assert held <= set(again.held_out.splitlines(keepends=True))
    with pytest.raises(FileNotFoundError, match="neither 'stdlib' nor a text file"):
        read_corpus(str(tmp_path / "missing.txt"), 0, 0.2)


# --- the model -------------------------------------------------------------------------------

def small_model(seeds=(0, 1), vocabulary=11, context=3, rep_dim=2):
    model = StackedLogBilinear(list(seeds), vocabulary, context, rep_dim).double()
    with torch.no_grad():  # a bias away from 0, as after training
        model.bias.normal_(0, 1, generator=torch.Generator().manual_seed(9))
    return model


def contexts(n=6, vocabulary=11, context=3):
    return torch.randint(0, vocabulary, (n, context),
                         generator=torch.Generator().manual_seed(3)).double()


def test_log_likelihood_in_float64_is_the_direct_computation():
    model, x = small_model(), contexts()
    codes = torch.arange(11, dtype=torch.float64)[:, None]
    log_probs = model.log_probs(x, codes)
    assert log_probs.dtype == torch.float64 and log_probs.shape == (2, 6, 11)
    for s in range(2):
        r, c = model.context_vectors[s].detach(), model.positions[s].detach()
        q, b = model.target_vectors[s].detach(), model.bias[s].detach()
        for n, window in enumerate(x.long()):
            f = sum(c[i] @ r[w] for i, w in enumerate(window))
            scores = torch.stack([f @ q[y] + b[y] for y in range(11)])
            expected = scores - torch.logsumexp(scores, dim=0)
            torch.testing.assert_close(log_probs[s, n], expected, rtol=0, atol=1e-12)
    labels = torch.tensor([0, 3, 10, 5, 5, 1])
    nll = model.nll(x, codes, labels)
    expected = -log_probs.gather(-1, labels.expand(2, -1)[..., None]).squeeze(-1).mean(-1)
    torch.testing.assert_close(nll, expected, rtol=0, atol=1e-12)


def test_f_and_g_carry_the_bias_as_one_more_coordinate():
    model, x = small_model(), contexts()
    codes = torch.arange(11, dtype=torch.float64)
    f, g = model.embed(x), model.unembed(codes)
    assert f.shape == (2, 6, 3) and g.shape == (2, 11, 3)
    assert torch.equal(f[..., -1], torch.ones(2, 6, dtype=torch.float64))  # exact: ones
    torch.testing.assert_close(torch.log_softmax(f @ g.transpose(1, 2), -1),
                               model.log_probs(x, codes), rtol=0, atol=1e-12)
    # exact: copies of the parameters
    assert torch.equal(g[..., -1], model.bias) and torch.equal(g[..., :2], model.target_vectors)


def test_p_is_unchanged_when_f_and_the_word_vectors_change_by_b_and_b_inverse_transpose():
    """f -> B f (every C_i -> B C_i), q -> B^{-T} q, r -> D r with C_i -> C_i D^{-1}, and a
    constant added to every bias: the same p; q then differs by an exact linear map."""
    model, x = small_model(), contexts()
    codes = torch.arange(11, dtype=torch.float64)
    before = model.log_probs(x, codes)
    b_map = torch.tensor([[2.0, 1.0], [-0.5, 3.0]], dtype=torch.float64)
    d_map = torch.tensor([[0.0, -1.5], [0.7, 0.2]], dtype=torch.float64)
    q_before = model.target_vectors.detach().clone()
    with torch.no_grad():
        model.positions.copy_(b_map @ model.positions @ torch.linalg.inv(d_map))
        model.context_vectors.copy_(model.context_vectors @ d_map.T)
        model.target_vectors.copy_(model.target_vectors @ torch.linalg.inv(b_map))
        model.bias.add_(torch.tensor([[4.0], [-2.5]], dtype=torch.float64))
    torch.testing.assert_close(model.log_probs(x, codes), before, rtol=0, atol=1e-12)
    np.testing.assert_allclose(vector_fit_r2(q_before[0].numpy(),
                                             model.target_vectors[0].detach().numpy()), 1.0,
                               atol=1e-12)
    with torch.no_grad():  # not a change of coordinates: p moves
        model.target_vectors.mul_(torch.tensor([1.0, -1.0], dtype=torch.float64))
    assert (model.log_probs(x, codes) - before).abs().max() > 1e-3


def test_each_seed_starts_as_alone_and_bad_shapes_are_refused():
    stack, alone = small_model((3, 5)), small_model((5,))
    for name, p in alone.named_parameters():
        if name != "bias":
            # exact: the same seeded draws
            assert torch.equal(dict(stack.named_parameters())[name][1], p[0]), name
    with pytest.raises(ValueError, match=r"contexts must be \(B, 3\) word ids"):
        stack.embed(torch.zeros(4, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="vocabulary must be in"):
        StackedLogBilinear([0], 1, 3, 2)


def word_data(n_train=400, n_test=80, vocabulary=11, context=3):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocabulary, n_train + n_test + 2 * context)
    x, y = windows(ids[: n_train + context], context)
    tx, ty = windows(ids[n_train + context :], context)
    codes = np.arange(vocabulary, dtype=np.float32)[:, None]
    return TrainData(x, y, tx[:n_test], ty[:n_test], codes)


def test_a_stack_of_seeds_trains_each_as_alone_through_the_training_loop():
    data = word_data()
    cfg = train_config("synthetic", steps=40, batch_size=16, lr=1e-2, eval_every=20,
                       log_every=10, checkpoint_every=0, protocol="clean")
    stack = small_model((0, 1))
    train(stack, data, cfg)
    for i, seed in enumerate((0, 1)):
        alone = small_model((seed,))
        with torch.no_grad():
            alone.bias.copy_(small_model((0, 1)).bias[i : i + 1])
        train(alone, data, cfg)
        for name, p in alone.state_dict_of(0).items():
            q = stack.state_dict_of(i)[name]
            assert float((p - q).norm() / p.norm()) <= 1e-9, (seed, name)


# --- training, files, pairs, the figure ------------------------------------------------------

def corpus_cfg(path, **overrides):
    cfg = dict(corpus=str(path), max_bytes=0, held_out_fraction=0.25, vocabulary=12, context=2,
               rep_dim=2, seeds=[0, 1, 2], n_test=60)
    return WordsConfig(**{**cfg, **overrides})


def seed_files(folder, seeds):
    return [SeedFiles({"test": folder / f"s{s}" / "embeddings.parquet"},
                      folder / f"s{s}" / "unembeddings.parquet",
                      folder / f"s{s}" / "metrics.json", folder / f"s{s}" / "model.pt")
            for s in seeds]


def test_words_data_errors_name_the_key(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    data = words_data(corpus_cfg(path))
    assert data.data.test_x.shape == (60, 2) and data.vocabulary.size == 12
    assert set(np.unique(data.data.train_labels)) <= set(range(12))
    with pytest.raises(ValueError, match="roeder.words.vocabulary = 40"):
        words_data(corpus_cfg(path, vocabulary=40))
    with pytest.raises(ValueError, match="roeder.words.n_test = 100000"):
        words_data(corpus_cfg(path, n_test=100_000))


def test_train_words_writes_every_seed_and_the_pairs_hold_fig_1s_r2(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    cfg = corpus_cfg(path)
    files = seed_files(tmp_path, cfg.seeds)
    train_cfg = train_config("synthetic", steps=60, batch_size=32, lr=3e-2, eval_every=30,
                             log_every=20, checkpoint_every=0, protocol="clean")
    run_config = {"roeder": {}, "seed": 0, "protocol": "paper"}
    info = train_words(cfg, train_cfg, files, tmp_path / "vocabulary.csv", run_config)
    assert info["corpus"] == str(path) and info["windows_train"] > 0
    vocab = read_csv(tmp_path / "vocabulary.csv")
    # the vocabulary is a table of the run (its protocol), the models say how they trained
    assert read_table_metadata(tmp_path / "vocabulary.csv")["protocol"] == "paper"
    assert read_parquet_metadata(files[0].unembeddings)["protocol"] == "clean"
    assert list(vocab["id"]) == list(range(12)) and vocab["word"].iloc[-1] == UNK
    metrics = [json.loads(f.metrics.read_text()) for f in files]
    assert all(m["experiment"] == "roeder_words" and m["K"] == 12 for m in metrics)
    g = pd.read_parquet(files[0].unembeddings)
    assert len(g) == 12 and [c for c in g.columns if c.startswith("g_")] == ["g_0", "g_1", "g_2"]
    pairs = words_pairs(cfg.seeds, [f.embeddings["test"] for f in files],
                        [f.unembeddings for f in files], metrics,
                        {"num_samples": 10, "seed": 0}, cfg.rep_dim)
    assert list(pairs.columns) == WORDS_PAIR_COLUMNS and len(pairs) == 3
    assert (pairs["mcca_f_components"] == 2).all()  # f~'s 1 never varies
    assert (pairs["mcca_g_components"] == 3).all()
    assert (pairs["r2_g_min"] <= pairs["r2_g"]).all() and (pairs["r2_f"] <= 1).all()
    assert (pairs["kl"] >= 0).all()
    with pytest.raises(ValueError, match="2 output sets for 3 seeds"):
        train_words(cfg, train_cfg, files[:2], tmp_path / "v.csv", {})


def test_a_words_run_resumes_from_its_checkpoint_to_the_same_models(tmp_path, caplog):
    """A checkpoint every 20 of 60 steps (the last at 40 stays when a run ends early); a run
    finding it resumes there and ends where an uninterrupted run ends."""
    from repdist.training.loop import RunOptions

    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    cfg = corpus_cfg(path, seeds=[0, 1])
    train_cfg = train_config("synthetic", steps=60, batch_size=32, lr=3e-2, eval_every=30,
                             log_every=20, checkpoint_every=20, protocol="clean")
    checkpoint = tmp_path / "checkpoint.pt"
    weights = []
    for run in ("first", "resumed"):
        files = seed_files(tmp_path / run, cfg.seeds)
        with caplog.at_level("INFO", logger="repdist"):
            train_words(cfg, train_cfg, files, tmp_path / run / "vocabulary.csv", {},
                        RunOptions(checkpoint=checkpoint))
        weights.append([torch.load(f.model) for f in files])
    assert "resuming from step 40 of 60" in caplog.text
    for first, resumed in zip(*weights, strict=True):
        for name, p in first.items():
            assert torch.equal(p, resumed[name]), name  # exact: the same run, resumed


def test_a_checkpoint_of_another_text_is_not_resumed(tmp_path, caplog):
    """The corpus changed under the same path (another Python's stdlib, an edited file): the
    run starts afresh."""
    from repdist.training.loop import RunOptions

    path = tmp_path / "corpus.txt"
    cfg = corpus_cfg(path, seeds=[0])
    train_cfg = train_config("synthetic", steps=40, batch_size=32, lr=3e-2, eval_every=20,
                             log_every=20, checkpoint_every=20, protocol="clean")
    checkpoint = tmp_path / "checkpoint.pt"
    for text in (TEXT, TEXT + "the cat sat on a new line\n"):
        path.write_text(text)
        caplog.clear()
        with caplog.at_level("INFO", logger="repdist"):
            train_words(cfg, train_cfg, seed_files(tmp_path, cfg.seeds), tmp_path / "v.csv", {},
                        RunOptions(checkpoint=checkpoint))
        assert "resuming" not in caplog.text


def vocabulary_table(names):
    return pd.DataFrame({"id": range(len(names)), "word": names, "count": range(len(names), 0, -1)})


def test_shown_words_are_letters_spread_over_the_ranks_or_the_listed_ones():
    vocab = vocabulary_table([".", "the", "(", "a", "x1", "cat", "dog", "_", "mat", UNK])
    assert shown_words(vocab, 2) == [1, 8]
    assert shown_words(vocab, 5) == [1, 3, 5, 6, 8]
    assert shown_words(vocab, ["dog", "."]) == [6, 0]
    with pytest.raises(ValueError, match=r"roeder.words.shown: \['cow'\] not in"):
        shown_words(vocab, ["dog", "cow"])
    with pytest.raises(ValueError, match="holds 5 words made of letters"):
        shown_words(vocab, 6)


def test_the_figures_fit_recovers_an_affine_map_from_the_words_not_shown():
    rng = np.random.default_rng(1)
    q_a = rng.normal(size=(50, 2))
    q_b = q_a @ np.array([[1.0, 2.0], [-3.0, 0.5]]) + np.array([4.0, -1.0])
    vocab = vocabulary_table([f"w{i}" for i in range(49)] + [UNK])
    fit = words_fit(vocab, [3, 10, 20], q_a, q_b)
    assert fit.words == ["w3", "w10", "w20"]
    np.testing.assert_allclose(fit.mapped_b, q_a[[3, 10, 20]], atol=1e-10)
    np.testing.assert_allclose(fit.r2, 1.0, atol=1e-12)
    table = fit_table(fit, [0, 1])
    np.testing.assert_allclose(fit_r2(table), 1.0, atol=1e-12)
    noise = words_fit(vocab, list(range(25)), q_a, rng.normal(size=(50, 2)))
    assert (noise.r2 < 0.3).all()
    np.testing.assert_allclose(word_vectors(np.hstack([q_a, q_a[:, :1]]), 2), q_a)


def test_the_figure_draws_f_on_held_out_contexts_beside_the_word_vectors():
    """Fig. 1's caption says f on held-out data: a fourth panel draws seed b's f mapped onto
    seed a's on the held-out half (at most 300 contexts), with the fit's R^2 in its title."""
    from repdist.figures.roeder_words import roeder_words_figure
    from repdist.measures.probe import linear_fit

    rng = np.random.default_rng(3)
    q_a = rng.normal(size=(40, 2))
    vocab = vocabulary_table([f"w{i}" for i in range(39)] + [UNK])
    fit = words_fit(vocab, [1, 2, 3], q_a, q_a @ np.array([[2.0, 0.0], [1.0, 1.0]]))
    f_a = rng.normal(size=(800, 2))
    contexts = linear_fit("", f_a, f_a @ np.array([[0.0, 1.0], [1.0, 0.0]]) + 3.0)
    fig = roeder_words_figure(fit, [0, 1], "note", contexts)
    panel = fig.axes[3]
    assert len(fig.axes) == 4 and "held-out contexts (300 of 400)" in panel.get_title()
    assert "1.000, 1.000" in panel.get_title()
    dots, circles = panel.collections[:2]
    np.testing.assert_allclose(dots.get_offsets(), circles.get_offsets(), atol=1e-9)
    assert len(roeder_words_figure(fit, [0, 1], "note").axes) == 3


# --- paper comparison and config ---------------------------------------------------------------

def pairs_table(r2):
    return pd.DataFrame({"seed_a": [0, 0, 1], "seed_b": [1, 2, 2], "r2_g_min": r2,
                         "kl": [0.01, 0.2, 0.3], "mcca_f": [0.99, 0.7, 0.7],
                         "mcca_g": [0.99, 0.8, 0.8]})


def fit_points(noise):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(30, 2))
    mapped = a + noise * rng.normal(size=(30, 2))
    return pd.DataFrame({"word": [f"w{i}" for i in range(30)], "a_1": a[:, 0], "a_2": a[:, 1],
                         "b_1": 0.0, "b_2": 0.0, "b_mapped_1": mapped[:, 0],
                         "b_mapped_2": mapped[:, 1], "seed_a": 0, "seed_b": 1})


def test_the_fig_1_claim_passes_when_both_fits_reach_the_threshold():
    good = roeder_words_checks(pairs_table([0.99, 0.5, 0.6]), fit_points(0.05), "stdlib corpus")
    assert [c.verdict for c in good] == ["pass", "informational"]
    assert "stdlib corpus" in good[0].claim and "1 of 3 pairs" in good[1].ours
    assert str(ROEDER_WORDS_R2) in good[0].tolerance
    far = roeder_words_checks(pairs_table([0.99, 0.5, 0.6]), fit_points(0.5), "stdlib corpus")
    assert far[0].verdict == "FAIL"  # the shown words are off
    rest = roeder_words_checks(pairs_table([0.9, 0.5, 0.6]), fit_points(0.05), "x")
    assert rest[0].verdict == "FAIL"  # every other word is off


def config_with_words(**changes):
    import yaml

    from test_config import ROOT

    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg["roeder"]["words"].update(changes)
    return cfg


@pytest.mark.parametrize("change, key", [
    ({"fit_seeds": [0, 10_000]}, "roeder.words.fit_seeds"),
    ({"fit_seeds": [1, 1]}, "roeder.words.fit_seeds"),
    ({"vocabulary": 4}, "roeder.words.vocabulary"),
    ({"n_test": 100}, "measures.num_samples"),
    ({"shown": 1000}, "roeder.words.shown"),
    ({"corpus": "/no/such/corpus.txt"}, "roeder.words.corpus"),
])
def test_impossible_words_settings_name_the_key(change, key):
    cfg = config_with_words(**change)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        check_config(copy.deepcopy(cfg))
    cfg["roeder"]["words"]["enabled"] = False  # a branch turned off is not checked
    check_config(cfg)


def test_the_words_schema_refuses_a_bad_value():
    from snakemake.utils import validate
    from snakemake_interface_common.exceptions import WorkflowError
    from test_config import SCHEMA

    for change in ({"shown": 0}, {"shown": []}, {"held_out_fraction": 1.0},
                   {"device": "tpu"}, {"vocabulary": 3}):
        with pytest.raises(WorkflowError):
            validate(config_with_words(**change), SCHEMA)
