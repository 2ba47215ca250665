"""`repdist.extract.causal_lm_representations`: f and g of causal language models, on tiny
transformers built here in two layouts (GPT-2's: learned positions, a head tied to the token
embedding; GPT-NeoX's: parallel attention and MLP, an untied head), several seeds."""

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from repdist.extract import (
    ExtractionError,
    causal_lm_representations,
    classifier_representations,
    write_representations,
)
from repdist.extract.causal_lm import NO_NEXT_TOKEN
from repdist.io import read_npz_metadata
from repdist.io.representations import load_model
from repdist.measures import compare

from conftest import cli_in_process

VOCAB, WIDTH, LENGTH = 40, 16, 12


class Block(nn.Module):
    def __init__(self, parallel: bool) -> None:
        super().__init__()
        self.parallel = parallel
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(),
                                 nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, h):
        causal = torch.triu(torch.ones(h.shape[1], h.shape[1], dtype=torch.bool), diagonal=1)
        a = self.ln1(h)
        attended = self.attn(a, a, a, attn_mask=causal, need_weights=False)[0]
        if self.parallel:  # GPT-NeoX: h + attn(ln1 h) + mlp(ln2 h)
            return h + attended + self.mlp(self.ln2(h))
        h = h + attended  # GPT-2: sequential
        return h + self.mlp(self.ln2(h))


class TinyLM(nn.Module):
    """Token ids (batch, length) to next-token logits (batch, length, VOCAB)."""

    def __init__(self, layout: str, seed: int, head_bias: bool = False) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.layout = layout
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(LENGTH, WIDTH) if layout == "gpt2" else None
        self.blocks = nn.ModuleList(Block(parallel=layout == "neox") for _ in range(2))
        self.ln_f = nn.LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=head_bias)
        if layout == "gpt2":
            self.lm_head.weight = self.wte.weight  # tied, as GPT-2's
        self.double()

    def forward(self, input_ids, attention_mask=None):
        h = self.wte(input_ids)
        if self.wpe is not None:
            h = h + self.wpe(torch.arange(input_ids.shape[1]))
        for block in self.blocks:
            h = block(h)
        logits = self.lm_head(self.ln_f(h))
        return SimpleNamespace(logits=logits) if self.layout == "neox" else logits


def padded_tokens(seed: int = 0, contexts: int = 9, side: str = "right"):
    """Contexts of random lengths, padded with token 0 (a real token too) and masked."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (contexts, LENGTH), generator=gen)
    lengths = torch.randint(2, LENGTH + 1, (contexts,), generator=gen)
    at = torch.arange(LENGTH)[None, :]
    mask = at < lengths[:, None] if side == "right" else at >= LENGTH - lengths[:, None]
    return {"input_ids": torch.where(mask, ids, 0).numpy(), "attention_mask": mask.long().numpy()}


def model_log_probs(model, tokens):
    with torch.no_grad():
        out = model(torch.as_tensor(tokens["input_ids"]))
    logits = out.logits if hasattr(out, "logits") else out
    return torch.log_softmax(logits, dim=-1).numpy()


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("layout", ["gpt2", "neox"])
def test_f_and_g_give_the_models_next_token_probabilities(layout):
    tokens = padded_tokens()
    mask = tokens["attention_mask"].astype(bool)
    reps = [causal_lm_representations(TinyLM(layout, seed), tokens, batch_size=4)
            for seed in (0, 1, 2)]
    for seed, rep in enumerate(reps):
        model = TinyLM(layout, seed)
        assert rep.f.shape == (mask.sum(), WIDTH) and rep.g.shape == (VOCAB, WIDTH)
        assert rep.head == "lm_head" and rep.info["positions"] == "all"
        expected = model_log_probs(model, tokens)[mask]
        np.testing.assert_allclose(log_softmax(rep.f @ rep.g.T), expected, atol=1e-6, rtol=0)
        if layout == "gpt2":  # tied: g is the token embedding
            np.testing.assert_array_equal(rep.g, model.wte.weight.detach().numpy())  # exact: a copy
        nxt = np.where(mask[:, 1:], tokens["input_ids"][:, 1:], NO_NEXT_TOKEN)
        expected_labels = np.concatenate([nxt, np.full((len(nxt), 1), NO_NEXT_TOKEN)], axis=1)
        np.testing.assert_array_equal(rep.labels, expected_labels[mask])  # exact: integers
    assert not np.allclose(reps[0].f, reps[1].f)  # the seeds are different models
    result = compare(reps[0].f, reps[0].g, reps[1].f, reps[1].g, num_samples=2,
                     measures=["kl", "d_llv"])
    assert result["kl"] > 0 and result["d_llv"] > 0 and np.isfinite(result["d_llv"])
    # f is LayerNorm's output: centred over inputs it has rank WIDTH - 1 (its normalised
    # coordinates sum to zero), so m_CCA is the mean over those WIDTH - 1 and says so
    with pytest.warns(UserWarning, match=f"mean over {WIDTH - 1} of {WIDTH} components"):
        r = compare(reps[0].f, reps[0].g, reps[1].f, reps[1].g, num_samples=2,
                    measures=["mcca_f"])
    assert r["mcca_f_components"] == WIDTH - 1 and np.isfinite(r["mcca_f"])


@pytest.mark.parametrize("side", ["right", "left"])
def test_the_last_position_of_each_context_is_its_last_unmasked_token(side):
    model, tokens = TinyLM("neox", 3), padded_tokens(1, side=side)
    mask = tokens["attention_mask"].astype(bool)
    every = causal_lm_representations(model, {k: torch.as_tensor(v) for k, v in tokens.items()})
    last = causal_lm_representations(model, tokens, positions="last")
    assert last.f.shape == (len(mask), WIDTH) and last.info["contexts"] == len(mask)
    rows = np.cumsum(mask.ravel())[[i * LENGTH + np.flatnonzero(m).max()
                                    for i, m in enumerate(mask)]] - 1
    np.testing.assert_array_equal(last.f, every.f[rows])  # exact: one forward of 9 contexts in both
    # exact: integers
    np.testing.assert_array_equal(last.labels, NO_NEXT_TOKEN)  # nothing follows a context's end


def test_a_head_bias_is_folded_or_dropped_and_plain_arrays_are_unmasked():
    model = TinyLM("neox", 0, head_bias=True)
    ids = padded_tokens()["input_ids"]
    folded = causal_lm_representations(model, ids)
    dropped = causal_lm_representations(model, ids, bias="drop")
    assert folded.f.shape == (ids.size, WIDTH + 1) and folded.bias_folded
    # exact: a copy
    np.testing.assert_array_equal(folded.g[:, -1], model.lm_head.bias.detach().numpy())
    np.testing.assert_array_equal(dropped.f, folded.f[:, :-1])  # exact: the same forward
    expected = model_log_probs(model, {"input_ids": ids}).reshape(-1, VOCAB)
    np.testing.assert_allclose(log_softmax(folded.f @ folded.g.T), expected, atol=1e-6, rtol=0)


def test_written_lm_representations_read_back(tmp_path):
    rep = causal_lm_representations(TinyLM("gpt2", 0), padded_tokens(), positions="last")
    write_representations(tmp_path / "lm.npz", rep, model="tiny gpt2-like")
    loaded = load_model(tmp_path / "lm.npz")
    np.testing.assert_array_equal(loaded.f, rep.f)  # exact: a round trip
    np.testing.assert_array_equal(loaded.g, rep.g)  # exact: a round trip
    meta = read_npz_metadata(tmp_path / "lm.npz")
    assert meta["positions"] == "last" and meta["contexts"] == 9 and meta["K"] == VOCAB


def test_what_is_not_a_causal_lm_or_its_tokens_is_named():
    model = TinyLM("gpt2", 0)
    tokens = padded_tokens()
    with pytest.raises(ExtractionError, match="integers of shape"):
        causal_lm_representations(model, tokens["input_ids"].astype(float))
    with pytest.raises(ExtractionError, match="not the shape of input_ids"):
        causal_lm_representations(model, {**tokens,
                                          "attention_mask": tokens["attention_mask"][:, :3]})
    with pytest.raises(ExtractionError, match="all 0"):
        causal_lm_representations(model, {**tokens, "attention_mask": 0 * tokens["attention_mask"]},
                                  positions="last")
    with pytest.raises(ValueError, match="positions"):
        causal_lm_representations(model, tokens, positions="first")

    class Tempered(TinyLM):  # something non-linear after the head
        def forward(self, input_ids, attention_mask=None):
            return torch.tanh(super().forward(input_ids))

    with pytest.raises(ExtractionError, match="non-linear follows the head"):
        causal_lm_representations(Tempered("gpt2", 0), tokens)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(LENGTH, 3)

        def forward(self, input_ids, attention_mask=None):
            return self.head(input_ids.double())

    with pytest.raises(ExtractionError, match=r"\(batch, sequence, width\)"):
        causal_lm_representations(Classifier().double(), tokens)

    class Pooled(TinyLM):  # the head sees one vector per context, not one per position
        def forward(self, input_ids, attention_mask=None):
            return self.lm_head(self.wte(input_ids).mean(dim=1, keepdim=True))

    with pytest.raises(ExtractionError, match="not one f per position"):
        causal_lm_representations(Pooled("neox", 0), tokens)


BIGRAM = '''
import torch
from torch import nn


class Bigram(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.head = nn.Embedding(20, 8), nn.Linear(8, 20)

    def forward(self, input_ids, attention_mask=None):
        return self.head(torch.tanh(self.emb(input_ids)))
'''


def test_the_command_line_extracts_a_causal_lm(tmp_path, monkeypatch, capsys):
    """The first extraction a process of its own (the installed entry point), the others through
    the entry point's function in this process (the same parsing, errors and statuses)."""
    (tmp_path / "lm.py").write_text(BIGRAM)
    ids = np.random.default_rng(0).integers(0, 20, (7, 5))
    np.save(tmp_path / "tokens.npy", ids)
    torch.save({"input_ids": torch.as_tensor(ids), "attention_mask": torch.ones(7, 5)},
               tmp_path / "tokens.pt")
    args = ["extract", "--model", "lm.py:Bigram", "--random-init"]  # Bigram seeds its weights
    done = subprocess.run([sys.executable, "-m", "repdist", *args, "--inputs", "tokens.npy",
                           "--positions", "last", "-o", "last.npz"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    code, _, err = cli_in_process(*args, "--inputs", "tokens.pt", "--positions", "all", "-o",
                                  "all.npz", cwd=tmp_path, monkeypatch=monkeypatch, capsys=capsys)
    assert code == 0, err
    for positions, rows in (("last", 7), ("all", 35)):
        loaded = load_model(tmp_path / f"{positions}.npz")
        assert loaded.f.shape == (rows, 9) and loaded.g.shape == (20, 9)  # the bias folded in
    np.save(tmp_path / "floats.npy", ids.astype(float))
    code, _, err = cli_in_process(*args, "--inputs", "floats.npy", "--positions", "all", "-o",
                                  "x.npz", cwd=tmp_path, monkeypatch=monkeypatch, capsys=capsys)
    assert code == 2 and "integers of shape" in err
    assert not (tmp_path / "x.npz").exists()


class MaskFree(nn.Module):
    """A hand-written causal LM whose forward takes the ids alone (no attention_mask)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.emb, self.head = nn.Embedding(VOCAB, WIDTH), nn.Linear(WIDTH, VOCAB, bias=False)
        self.double()

    def forward(self, input_ids):
        h = torch.cumsum(self.emb(input_ids), dim=1)  # causal: position t sees tokens <= t
        return self.head(torch.tanh(h))


def test_a_model_without_an_attention_mask_keyword_runs_on_the_ids_alone():
    """Nothing is padded in a (contexts, length) array, or under an all-ones mask: the model is
    called as model(ids); padded inputs are an ExtractionError naming the missing keyword."""
    model = MaskFree()
    ids = np.random.default_rng(0).integers(0, VOCAB, (5, LENGTH))
    reps = causal_lm_representations(model, ids, positions="all")
    with torch.no_grad():
        logits = model(torch.as_tensor(ids)).reshape(-1, VOCAB).numpy()
    np.testing.assert_allclose(reps.f @ reps.g.T, logits, rtol=1e-10, atol=1e-10)
    ones = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    same = causal_lm_representations(model, ones, positions="last")
    # exact: one forward of 5 contexts in both
    np.testing.assert_array_equal(same.f, reps.f.reshape(5, LENGTH, -1)[:, -1])
    with pytest.raises(ExtractionError, match="takes no attention_mask.*padded"):
        causal_lm_representations(model, padded_tokens(), positions="all")

class Counted(TinyLM):
    """TinyLM whose forward counts its calls and fails with another error than the refusal's."""

    calls = 0

    def forward(self, input_ids, attention_mask=None):
        Counted.calls += 1
        raise AssertionError("the model ran")


@pytest.mark.parametrize("bad", [VOCAB, VOCAB + 7, -1])
def test_token_ids_past_the_embedding_are_refused_before_the_model_runs(bad):
    """An id the input embedding has no row for (past the vocabulary, or negative padding) is
    an ExtractionError naming the ids' range and the table's, raised before the forward pass:
    on CUDA the embedding kernel would fail asynchronously, with an error that hides the
    cause. So for causal LMs and for classifiers fed token ids (the largest nn.Embedding's rows
    where the model has no get_input_embeddings)."""
    ids = padded_tokens()["input_ids"]
    ids[3, 2] = bad
    Counted.calls = 0
    with pytest.raises(ExtractionError, match=rf"from {min(bad, 0)} to {max(bad, VOCAB - 1)}.*"
                                              rf"ids 0 to {VOCAB - 1}"):
        causal_lm_representations(Counted("neox", 0), ids)
    assert Counted.calls == 0

    class TextClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.wpe, self.wte = nn.Embedding(LENGTH, 4), nn.Embedding(VOCAB, 4)
            self.head = nn.Linear(4, 3)

        def forward(self, input_ids):
            Counted.calls += 1
            raise AssertionError("the model ran")

    with pytest.raises(ExtractionError, match=f"ids 0 to {VOCAB - 1}"):
        classifier_representations(TextClassifier(), torch.as_tensor(ids))
    assert Counted.calls == 0


def test_hugging_face_models_name_their_input_embedding():
    from repdist.extract.classifier import input_vocabulary

    class WithAccessor(TinyLM):
        def get_input_embeddings(self):
            return self.wpe  # what the model says, whatever else it holds

    assert input_vocabulary(WithAccessor("gpt2", 0)) == LENGTH
    assert input_vocabulary(TinyLM("gpt2", 0)) == VOCAB  # the largest table
    assert input_vocabulary(nn.Linear(3, 2)) is None
