"""The `lm` branch below the DAG: the stdlib text and its split, the BPE tokenizer (against a
naive reference), the GPT's training (loss falls, a seed repeats bit for bit, a killed run
resumes to the same weights), its extraction (exact), and the config checks of `lm:`."""

import copy
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from repdist.data.bpe import BPETokenizer, pretokens, train_bpe
from repdist.data.stdlib_text import in_eval, read_stdlib_text, stdlib_files, stdlib_root
from repdist.extract import causal_lm_representations
from repdist.models.gpt import GPT, GPTConfig
from repdist.pipeline.config_checks import check_lm
from repdist.pipeline.config_errors import ConfigError
from repdist.training import lm as lm_loop
from repdist.training.lm import LMOptions, LMTrainConfig, evaluate_lm, train_lm

ROOT = Path(__file__).resolve().parents[1]
TEXT_BYTES = 150_000


@pytest.fixture(scope="module")
def text():
    return read_stdlib_text(TEXT_BYTES, 0.2)


@pytest.fixture(scope="module")
def tokenizer(text):
    return train_bpe(text.train, 400)


def naive_bpe(text, vocab_size):
    """The textbook BPE: recount every pair after every merge (ties: the smallest pair)."""
    words = Counter(pretokens(text))
    seqs = {w: list(w.encode()) for w in words}
    merges = []
    while 256 + len(merges) < vocab_size:
        counts = Counter()
        for w, seq in seqs.items():
            for pair in zip(seq, seq[1:]):
                counts[pair] += words[w]
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        if counts[best] < 2:
            break
        new = 256 + len(merges)
        merges.append(best)
        for w, seq in seqs.items():
            out, i = [], 0
            while i < len(seq):
                if seq[i : i + 2] == list(best):
                    out.append(new)
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            seqs[w] = out
    return merges


def test_stdlib_text_is_deterministic_capped_and_split_by_file(text):
    again = read_stdlib_text(TEXT_BYTES, 0.2)
    assert (again.train, again.eval) == (text.train, text.eval)
    info = text.info
    assert info["bytes_train"] + info["bytes_eval"] <= TEXT_BYTES
    assert len(text.train.encode()) == info["bytes_train"] > 0
    assert len(text.eval.encode()) == info["bytes_eval"] > 0
    assert info["python_version"].count(".") == 2
    root = stdlib_root()
    relative = [p.relative_to(root).as_posix() for p in stdlib_files()]
    assert relative == sorted(relative) and len(relative) > 100
    assert not any(part in ("site-packages", "test", "encodings")
                   for name in relative for part in name.split("/")[:-1])
    # a file's split depends on its path alone, not on what else the cap kept
    assert in_eval("json/decoder.py", 0.2) == in_eval("json/decoder.py", 0.2)
    share = np.mean([in_eval(f"f{i}.py", 0.2) for i in range(4000)])
    assert 0.17 < share < 0.23


def test_bpe_learns_the_naive_merges_and_round_trips(text, tokenizer):
    sample = text.train[:20_000]
    assert train_bpe(sample, 330).merges == naive_bpe(sample, 330)
    assert tokenizer.vocab_size == 400 and len(tokenizer.merges) == 144
    for r, (a, b) in enumerate(tokenizer.merges):
        assert tokenizer.token_bytes(256 + r) == tokenizer.token_bytes(a) + tokenizer.token_bytes(b)
    ids = tokenizer.encode(text.eval)
    assert tokenizer.decode(ids) == text.eval
    assert len(ids) < 0.6 * len(text.eval.encode())  # merges compress Python source
    assert max(ids) >= 256
    odd = "déjà vu — 日本語\t\n  x_1 = 'it''s'\r\n"
    assert tokenizer.decode(tokenizer.encode(odd)) == odd
    loaded = BPETokenizer.from_json(tokenizer.to_json())
    assert loaded.merges == tokenizer.merges and loaded.encode(text.eval) == ids


def windows(tokenizer, text, n, length=9):
    ids = tokenizer.encode(text)
    return np.array([ids[i * length : (i + 1) * length] for i in range(n)], dtype=np.int64)


CFG = LMTrainConfig(steps=24, batch_size=8, lr=3e-3, log_every=4, eval_every=12,
                    checkpoint_every=12)


def tiny(seed, tied=False):
    torch.manual_seed(seed)
    return GPT(GPTConfig(vocab=400, width=16, layers=1, heads=2, context=8, tied=tied))


@pytest.fixture(scope="module")
def data(text, tokenizer):
    return windows(tokenizer, text.train, 64), windows(tokenizer, text.eval, 16)


def test_lm_loss_falls_and_a_seed_repeats_bit_for_bit(data):
    train, evals = data
    model = tiny(0)
    before = evaluate_lm(model, torch.from_numpy(evals))[0]
    log, finals = train_lm(model, train, evals, CFG, seed=0)
    assert finals["eval_loss"] < before - 0.3
    assert log.train_loss[-1] < log.train_loss[0]
    again = tiny(0)
    train_lm(again, train, evals, CFG, seed=0)
    other = tiny(1)
    train_lm(other, train, evals, CFG, seed=1)
    for (name, a), b, c in zip(model.state_dict().items(), again.state_dict().values(),
                               other.state_dict().values(), strict=True):
        assert torch.equal(a, b), name  # exact: the same seed run again
    assert not torch.equal(model.head.weight, other.head.weight)


def test_a_killed_lm_run_resumes_to_the_same_weights(data, tmp_path, monkeypatch):
    train, evals = data
    whole = tiny(2)
    train_lm(whole, train, evals, CFG, seed=2)
    real, calls = lm_loop.next_token_loss, {"n": 0}

    def dies_after_15(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 15:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    ckpt = tmp_path / "checkpoint.pt"
    monkeypatch.setattr(lm_loop, "next_token_loss", dies_after_15)
    with pytest.raises(KeyboardInterrupt):
        train_lm(tiny(2), train, evals, CFG, seed=2, options=LMOptions(checkpoint=ckpt))
    monkeypatch.setattr(lm_loop, "next_token_loss", real)
    assert ckpt.exists()
    resumed = tiny(2)
    _, finals = train_lm(resumed, train, evals, CFG, seed=2, options=LMOptions(checkpoint=ckpt))
    assert finals["steps_run"] == CFG.steps - 12
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b)  # exact: the same run, resumed


@pytest.mark.parametrize("tied", [False, True])
def test_extraction_of_a_trained_gpt_is_exact(data, tied):
    train, evals = data
    model = tiny(3, tied).double()
    train_lm(model, train, evals, CFG, seed=3)
    tokens = evals[:, :-1]
    reps = causal_lm_representations(model, tokens, "head", positions="all")
    with torch.no_grad():
        want = torch.log_softmax(model(torch.from_numpy(tokens)), -1).reshape(-1, 400).numpy()
    f, g = reps.f, reps.g
    assert f.shape == (tokens.size, 16) and g.shape == (400, 16)
    got = torch.log_softmax(torch.from_numpy(f @ g.T), -1).numpy()
    assert np.abs(got - want).max() < 1e-6
    # exact: integers
    assert np.array_equal(reps.labels.reshape(tokens.shape)[:, :-1], tokens[:, 1:])
    centred = f - f.mean(axis=0)
    assert np.linalg.matrix_rank(centred) == 16  # RMSNorm: f keeps full rank (m_CCA defined)


def lm_config():
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg["lm"]["enabled"] = True
    return cfg


@pytest.mark.parametrize("change, key", [
    (lambda lm: lm["model"].update(heads=3), "lm.model.heads"),
    (lambda lm: lm["data"].update(vocab_size=60), "lm.data.vocab_size"),
    (lambda lm: lm.update(num_samples=31), "lm.num_samples"),
    (lambda lm: lm["data"].update(train_contexts=8), "lm.data.train_contexts"),
])
def test_impossible_lm_settings_name_the_key(change, key):
    cfg = lm_config()
    check_lm(cfg)
    bad = copy.deepcopy(cfg)
    change(bad["lm"])
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        check_lm(bad)
    bad["lm"]["enabled"] = False
    check_lm(bad)


def test_lm_positions_all_counts_every_position_as_an_input():
    cfg = lm_config()
    cfg["lm"]["num_samples"] = 500  # 500 x 65 > 2,000 last positions, < 128,000 positions
    with pytest.raises(ConfigError, match="lm.num_samples"):
        check_lm(cfg)
    cfg["lm"]["positions"] = "all"
    check_lm(cfg)


def test_lm_schema_rejects_bad_values():
    from snakemake.utils import validate
    from snakemake_interface_common.exceptions import WorkflowError

    for change in (lambda lm: lm.update(positions="first"),
                   lambda lm: lm["data"].update(eval_fraction=1.5),
                   lambda lm: lm.update(seeds=[0]),
                   lambda lm: lm["model"].update(depth=2)):
        cfg = lm_config()
        change(cfg["lm"])
        with pytest.raises(WorkflowError):
            validate(cfg, str(ROOT / "workflow/schemas/config.schema.yaml"))


def count_host_syncs(monkeypatch) -> dict[str, int]:
    """Counters of what training/lm.py (and the batch helpers it calls) makes cross between the
    host and the device: `to_host` calls (its marked sync points), implicit reads of a tensor
    (.item(), float(), int(), bool(), .tolist()) and host-to-device copies (Tensor.to,
    torch.from_numpy)."""
    import sys

    from repdist.training import batches

    counts = {"to_host": 0, "implicit": 0, "copies": 0}
    ours = {lm_loop.__file__, batches.__file__}

    def counted(kind, real):
        def wrapper(*args, **kwargs):
            if sys._getframe(1).f_code.co_filename in ours:
                counts[kind] += 1
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(lm_loop, "to_host", counted("to_host", lm_loop.to_host))
    for name in ("item", "tolist", "__float__", "__int__", "__bool__"):
        monkeypatch.setattr(torch.Tensor, name, counted("implicit", getattr(torch.Tensor, name)))
    monkeypatch.setattr(torch.Tensor, "to", counted("copies", torch.Tensor.to))
    monkeypatch.setattr(torch, "from_numpy", counted("copies", torch.from_numpy))
    monkeypatch.setattr(lm_loop.ProgressLog, "due", lambda self: False)  # no timed lines
    return counts


def test_an_lm_training_step_leaves_the_device_only_at_log_points(data, monkeypatch):
    """Between log points a step neither reads a value on the host (.item(): a GPU waits for
    it every step) nor copies its index batch from the host: the batch order is on the device,
    the loss window summed there; twice the steps with one more log point cost exactly one
    more `to_host`, and no other crossing."""
    train, evals = data
    counts = count_host_syncs(monkeypatch)
    seen = []
    for steps in (8, 16):
        counts.update(dict.fromkeys(counts, 0))
        cfg = LMTrainConfig(steps=steps, batch_size=8, lr=3e-3, log_every=8, eval_every=100)
        train_lm(tiny(0), train, evals, cfg, seed=0)
        seen.append(dict(counts))
    short, long = seen
    assert short["implicit"] == long["implicit"] == 0, seen
    assert long["copies"] == short["copies"], seen
    assert long["to_host"] == short["to_host"] + 1, seen
