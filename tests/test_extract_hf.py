"""Hugging Face causal LMs through `repdist.extract` (load_causal_lm, load_tokenizer,
text_contexts) and `repdist extract --model hf:...`: real transformers models, tiny, built here
from a config (GPT-2: tied head; GPT-NeoX: untied), several seeds, saved with save_pretrained and
loaded back offline. softmax(f g^T) must be each model's own next-token distribution (computed
from the in-memory model that was saved, not the loaded one) within 1e-6."""

import copy
import sys

import numpy as np
import pytest
import torch
import transformers  # in the test extra and the lock: its absence fails, not skips
from tolerances import close_in, magnitude

from repdist.cli import main
from repdist.extract import (
    ExtractionError,
    causal_lm_representations,
    load_causal_lm,
    load_tokenizer,
    text_contexts,
)
from repdist.extract.hf import output_head
from repdist.io.representations import load_model

VOCAB, WIDTH, LENGTH, SEEDS = 100, 16, 12, (0, 1, 2)
LINES = ["the cat sat on the mat and the dog sat on the log",
         "a bird sang in the tree while the cat slept on the warm mat",
         "the dog ran to the park and the bird flew over the tree"]


def build(layout: str, seed: int):
    """A tiny GPT-2 (head tied to the token embedding) or GPT-NeoX (untied) from a config."""
    torch.manual_seed(seed)
    if layout == "gpt2":
        config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=WIDTH, n_layer=2, n_head=2,
                                         n_positions=32, bos_token_id=0, eos_token_id=0)
        return transformers.GPT2LMHeadModel(config).eval()
    config = transformers.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=2,
                                        num_attention_heads=2, intermediate_size=2 * WIDTH,
                                        max_position_embeddings=32, tie_word_embeddings=False,
                                        bos_token_id=0, eos_token_id=0)
    return transformers.GPTNeoXForCausalLM(config).eval()


def word_tokenizer():
    """A real (word-level) fast tokenizer trained on LINES, offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(LINES, trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    return tok, transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{(layout, seed): (folder, the in-memory model saved there)}; GPT-2 seed 0's folder also
    holds the word tokenizer (the model's own)."""
    root = tmp_path_factory.mktemp("hf")
    models = {}
    for layout in ("gpt2", "neox"):
        for seed in SEEDS:
            model, folder = build(layout, seed), root / f"{layout}{seed}"
            model.save_pretrained(folder)
            models[layout, seed] = folder, model
    word_tokenizer()[1].save_pretrained(root / "gpt20")
    return models


def token_ids(seed: int = 0, contexts: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, VOCAB, (contexts, LENGTH))


def model_log_probs(model, ids, mask=None) -> np.ndarray:
    """The model's own next-token log-probabilities, (contexts, length, VOCAB)."""
    with torch.no_grad():
        logits = model(torch.as_tensor(ids), attention_mask=None if mask is None
                       else torch.as_tensor(mask)).logits
    return torch.log_softmax(logits.double(), dim=-1).numpy()


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("layout", ["gpt2", "neox"])
def test_loaded_models_give_their_next_token_probabilities(saved, layout):
    ids = token_ids()
    lengths = np.array([LENGTH, 3, 7, LENGTH, 5, 9, 2])
    mask = (np.arange(LENGTH)[None, :] < lengths[:, None]).astype(np.int64)  # right padding
    fs = []
    for seed in SEEDS:
        folder, original = saved[layout, seed]
        model = load_causal_lm(str(folder))
        assert not model.training and next(model.parameters()).dtype == torch.float32
        head = output_head(model)
        rep = causal_lm_representations(model, {"input_ids": ids, "attention_mask": mask},
                                        head, batch_size=3)
        expected = model_log_probs(original, ids, mask)[mask.astype(bool)]
        assert rep.f.shape == (mask.sum(), WIDTH) and rep.g.shape == (VOCAB, WIDTH)
        np.testing.assert_allclose(log_softmax(rep.f @ rep.g.T), expected, atol=1e-6, rtol=0)
        embedding = original.get_input_embeddings().weight.detach().numpy()
        unembedding = original.get_output_embeddings().weight.detach().numpy()
        np.testing.assert_array_equal(rep.g, unembedding)  # exact: a copy of the weights
        tied = np.array_equal(rep.g, embedding)  # exact: a tied head is the embedding's array
        assert tied == (layout == "gpt2")  # tied only in GPT-2
        last = causal_lm_representations(model, {"input_ids": ids, "attention_mask": mask},
                                         head, positions="last")
        rows = np.cumsum(lengths) - 1
        # one batch of 7 contexts against batches of 3: float32's rounding apart
        np.testing.assert_allclose(last.f, rep.f[rows], **close_in(np.float32, magnitude(rep.f)))
        fs.append(rep.f)
    assert not np.allclose(fs[0], fs[1])  # the seeds are different models


def test_a_half_precision_checkpoint_loads_as_float32(tmp_path):
    half = build("gpt2", 4).to(torch.bfloat16)
    half.save_pretrained(tmp_path / "bf16")
    model = load_causal_lm(str(tmp_path / "bf16"))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    np.testing.assert_array_equal(model.lm_head.weight.detach().numpy(),  # exact: bfloat16 widened
                                  half.lm_head.weight.detach().float().numpy())


def test_a_head_bias_is_folded_into_f_and_g(saved):
    folder, original = saved["neox", 1]
    original = copy.deepcopy(original)  # the fixture's model stays as saved
    model = load_causal_lm(str(folder))
    head_name = output_head(model)
    bias = torch.linspace(-2.0, 3.0, VOCAB)
    for m in (model, original):  # the same bias on both: the model's own logits change too
        head = m.get_output_embeddings()
        with_bias = torch.nn.Linear(WIDTH, VOCAB, bias=True)
        with_bias.weight.data.copy_(head.weight.data)
        with_bias.bias.data.copy_(bias)
        m.set_output_embeddings(with_bias)
    ids = token_ids(1)
    rep = causal_lm_representations(model, ids, head_name, positions="all", bias="fold")
    assert rep.bias_folded and rep.f.shape == (ids.size, WIDTH + 1)
    np.testing.assert_array_equal(rep.g[:, -1], bias.numpy())  # exact: a copy
    expected = model_log_probs(original, ids).reshape(-1, VOCAB)
    np.testing.assert_allclose(log_softmax(rep.f @ rep.g.T), expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("layout", ["gpt2", "neox"])
def test_the_command_line_extracts_a_saved_model_and_the_file_reads_back(saved, layout, tmp_path,
                                                                         capsys):
    ids = token_ids(2)
    np.save(tmp_path / "ids.npy", ids)
    for seed in SEEDS[:2]:
        folder, original = saved[layout, seed]
        expected = model_log_probs(original, ids)
        for positions, rows in (("all", expected.reshape(-1, VOCAB)), ("last", expected[:, -1]),
                                (None, expected[:, -1])):  # hf: defaults to last
            out = tmp_path / f"{layout}{seed}_{positions}.npz"
            flags = [] if positions is None else ["--positions", positions]
            status = main(["extract", "--model", f"hf:{folder}", "--inputs",
                           str(tmp_path / "ids.npy"), *flags, "-o", str(out)])
            assert status == 0, capsys.readouterr().err
            loaded = load_model(out)
            np.testing.assert_allclose(log_softmax(loaded.f @ loaded.g.T), rows, atol=1e-6,
                                       rtol=0)
        # the file holds exactly what the Python call extracts
        rep = causal_lm_representations(load_causal_lm(str(folder)), ids, positions="all")
        loaded = load_model(tmp_path / f"{layout}{seed}_all.npz")
        np.testing.assert_array_equal(loaded.f, rep.f)  # exact: one forward of 7 contexts, saved
        np.testing.assert_array_equal(loaded.g, rep.g)  # exact: a copy of the weights, saved


def test_text_is_cut_into_windows_of_the_tokenizers_ids(saved, tmp_path, capsys):
    folder, original = saved["gpt2", 0]
    raw, _ = word_tokenizer()
    text = "\n".join(LINES)
    ids = np.array(raw.encode(text).ids)  # the tokenizer's own ids, not through repdist
    (tmp_path / "text.txt").write_text(text)
    contexts = text_contexts(text, load_tokenizer(str(folder)), 5)
    assert contexts.dtype == np.int64 and contexts.shape == (len(ids) // 5, 5)
    np.testing.assert_array_equal(contexts.ravel(), ids[: contexts.size])  # exact: integers
    np.testing.assert_array_equal(text_contexts(text, load_tokenizer(str(folder)), 5, 2),
                                  contexts[:2])  # exact: integers
    # the model's own tokenizer (its folder) by default, or --tokenizer
    for extra in ([], ["--tokenizer", str(folder)]):
        out = tmp_path / f"text{len(extra)}.npz"
        status = main(["extract", "--model", f"hf:{folder}", "--text", str(tmp_path / "text.txt"),
                       "--context-length", "5", "--max-contexts", "3", "--positions", "all",
                       *extra, "-o", str(out)])
        assert status == 0, capsys.readouterr().err
        loaded = load_model(out)
        windows = ids[:15].reshape(3, 5)
        expected = model_log_probs(original, windows).reshape(-1, VOCAB)
        np.testing.assert_allclose(log_softmax(loaded.f @ loaded.g.T), expected, atol=1e-6,
                                   rtol=0)
        labels = np.concatenate([windows[:, 1:], np.full((3, 1), -1)], axis=1).ravel()
        np.testing.assert_array_equal(np.load(out)["labels"], labels)  # exact: integers
    with pytest.raises(ExtractionError, match="shorter than one context"):
        text_contexts("the cat", load_tokenizer(str(folder)), 5)


def run_bad(argv, tmp_path, capsys) -> str:
    """Runs `repdist extract` expecting exit status 2 and nothing written; returns stderr."""
    out = tmp_path / "bad.npz"
    status = main(["extract", *argv, "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 2, err
    # (transformers' progress bars may come before it)
    assert err.splitlines()[-1].startswith("repdist extract: error: ") and not out.exists()
    return err


def test_a_hub_id_offline_and_not_cached_names_the_model_and_the_way_out(monkeypatch, tmp_path,
                                                                          capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    np.save(tmp_path / "ids.npy", token_ids())
    name = "repdist-tests/no-such-model"
    err = run_bad(["--model", f"hf:{name}", "--inputs", str(tmp_path / "ids.npy")], tmp_path,
                  capsys)
    assert name in err and "HF_HUB_OFFLINE" in err and f"hf download {name}" in err
    assert "HF_HOME" in err
    with pytest.raises(ExtractionError, match="hf download repdist-tests/no-such-tokenizer"):
        load_tokenizer("repdist-tests/no-such-tokenizer")


def test_without_transformers_the_error_says_how_to_install_it(monkeypatch, tmp_path, capsys,
                                                               saved):
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` fails
    folder = saved["gpt2", 0][0]
    with pytest.raises(ExtractionError, match=r"pip install transformers"):
        load_causal_lm(str(folder))
    np.save(tmp_path / "ids.npy", token_ids())
    err = run_bad(["--model", f"hf:{folder}", "--inputs", str(tmp_path / "ids.npy")], tmp_path,
                  capsys)
    assert str(folder) in err and "repdist[lm]" in err


def test_bad_hf_inputs_stop_with_a_message(saved, tmp_path, capsys):
    folder = saved["neox", 0][0]
    np.save(tmp_path / "ids.npy", token_ids() + VOCAB)  # past the vocabulary
    (tmp_path / "short.txt").write_text("the cat")
    ids, short = str(tmp_path / "ids.npy"), str(tmp_path / "short.txt")
    assert "cannot run" in run_bad(["--model", f"hf:{folder}", "--inputs", ids], tmp_path, capsys)
    assert "does not hold a tokenizer" in run_bad(  # neox0's folder has no tokenizer
        ["--model", f"hf:{folder}", "--text", short, "--context-length", "4"], tmp_path, capsys)
    gpt2 = f"hf:{saved['gpt2', 0][0]}"
    assert "shorter than one context" in run_bad(
        ["--model", gpt2, "--text", short, "--context-length", "4"], tmp_path, capsys)
    assert "needs --context-length" in run_bad(["--model", gpt2, "--text", short], tmp_path,
                                               capsys)
    assert "go with --text" in run_bad(["--model", gpt2, "--inputs", ids, "--context-length",
                                        "4"], tmp_path, capsys)
    assert "does not hold a causal LM" in run_bad(["--model", f"hf:{tmp_path}", "--inputs", ids],
                                                  tmp_path, capsys)
    assert "--weights" in run_bad(["--model", gpt2, "--weights", "w.pt", "--inputs", ids],
                                  tmp_path, capsys)


def test_m_cca_of_two_gpt2s_runs_over_the_rank_their_final_layer_norm_leaves(saved, tmp_path,
                                                                              capsys):
    """GPT-2 ends in a LayerNorm, run in float32: f varies in WIDTH - 1 directions plus float32
    rounding. `repdist extract` then `repdist compare`: m_CCA(f) is the mean over those
    WIDTH - 1 (mcca_f_components), with the reason in the warning column; g (the tied token
    embedding) keeps all WIDTH."""
    import pandas as pd

    np.save(tmp_path / "ids.npy", token_ids(3, contexts=20))
    files = []
    for seed in SEEDS[:2]:
        files.append(tmp_path / f"gpt2_{seed}.npz")
        assert main(["extract", "--model", f"hf:{saved['gpt2', seed][0]}", "--inputs",
                     str(tmp_path / "ids.npy"), "--positions", "all", "-o", str(files[-1])]) == 0
    out = tmp_path / "pairs.csv"
    assert main(["compare", *map(str, files), "-o", str(out), "--measures", "mcca_f,mcca_g"]) == 0
    row = pd.read_csv(out).iloc[0]
    assert row["mcca_f_components"] == WIDTH - 1 and row["mcca_g_components"] == WIDTH
    assert f"mean over {WIDTH - 1} of {WIDTH} components" in row["warning"]
    f1, f2 = (load_model(path).f for path in files)
    centred = [f - f.mean(axis=0) for f in (f1, f2)]
    bases = [np.linalg.svd(c, full_matrices=False)[0][:, : WIDTH - 1] for c in centred]
    want = np.linalg.svd(bases[0].T @ bases[1], compute_uv=False).mean()
    assert row["mcca_f"] == pytest.approx(want, rel=1e-9)
    # --precision float64: the rounding direction counts (what the tolerance was before)
    assert main(["compare", *map(str, files), "-o", str(out), "--measures", "mcca_f",
                 "--precision", "float64"]) == 0
    assert pd.read_csv(out).iloc[0]["mcca_f_components"] == WIDTH
