"""`repdist.extract.classifier_representations` and `repdist extract`: f and g of PyTorch
classifiers with a final linear layer, on small classifiers trained here."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from repdist.extract import ExtractionError, classifier_representations, write_representations
from repdist.io import read_npz_metadata
from repdist.io.representations import load_model
from repdist.measures import compare

from conftest import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
REPDIST = [sys.executable, "-m", "repdist"]


class Net(nn.Module):
    """A small classifier: a feature MLP, then the head (not last in registration order)."""

    def __init__(self, classes: int = 6, features: int = 2) -> None:
        super().__init__()
        self.classifier = nn.Linear(features, classes)
        self.body = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, features))

    def forward(self, x):
        return self.classifier(self.body(x))


def trained(seed: int, steps: int = 150) -> Net:
    torch.manual_seed(seed)
    net = Net()
    x = torch.randn(512, 2)
    y = (torch.atan2(x[:, 1], x[:, 0]) + np.pi).mul(6 / (2 * np.pi)).long().clamp(max=5)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return net


@pytest.fixture(scope="module")
def inputs():
    return torch.randn(300, 2, generator=torch.Generator().manual_seed(7))


def test_folded_bias_gives_the_models_own_logits(inputs):
    net = trained(0)
    reps = classifier_representations(net, inputs, head="classifier")
    assert reps.f.shape == (300, 3) and reps.g.shape == (6, 3) and reps.bias_folded
    assert reps.f.dtype == np.float64 and (reps.f[:, -1] == 1).all()
    with torch.no_grad():
        logits = net(inputs).double().numpy()
    np.testing.assert_allclose(reps.f @ reps.g.T, logits, atol=1e-5)
    # exact: a copy
    np.testing.assert_array_equal(reps.g[:, -1], net.classifier.bias.detach().double().numpy())
    dropped = classifier_representations(net, inputs, head="classifier", bias="drop")
    assert dropped.f.shape == (300, 2) and not dropped.bias_folded
    np.testing.assert_array_equal(dropped.f, reps.f[:, :2])  # exact: the same forward


def test_the_default_head_is_the_last_linear_registered(inputs):
    """Net registers its head first: the default picks body.2, whose output is not the
    logits, and says so."""
    with pytest.raises(ExtractionError, match="'body.2'"):
        classifier_representations(trained(0, 1), inputs)
    plain = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 3), nn.Linear(3, 5))
    assert classifier_representations(plain, inputs).head == "3"


def test_batches_labels_mode_and_device_are_handled(inputs):
    net = trained(1)
    net.train()
    whole = classifier_representations(net, inputs, head="classifier", batch_size=1000)
    labels = torch.arange(300) % 6
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, labels),
                                         batch_size=64)
    batched = classifier_representations(net, loader, head="classifier")
    np.testing.assert_allclose(batched.f, whole.f, rtol=1e-6, atol=1e-7)
    assert batched.labels.tolist() == labels.tolist() and whole.labels is None
    assert net.training and next(net.parameters()).device.type == "cpu"


def test_what_is_not_a_linear_head_is_named(inputs):
    net = trained(0, 1)
    with pytest.raises(ExtractionError, match="no nn.Linear"):
        classifier_representations(nn.Sequential(nn.Conv1d(1, 1, 1)), inputs)
    with pytest.raises(ExtractionError, match="no module named 'head'.*classifier"):
        classifier_representations(net, inputs, head="head")
    with pytest.raises(ExtractionError, match="is a Tanh, not an nn.Linear"):
        classifier_representations(net, inputs, head="body.1")
    softmax = nn.Sequential(net, nn.Softmax(dim=-1))
    with pytest.raises(ExtractionError, match="non-linear follows the head"):
        classifier_representations(softmax, inputs, head="0.classifier")
    # log-probabilities are the logits up to a per-input constant: accepted
    log_probs = nn.Sequential(net, nn.LogSoftmax(dim=-1))
    assert classifier_representations(log_probs, inputs, head="0.classifier").g.shape == (6, 3)
    with pytest.raises(ExtractionError, match=r"batch of inputs of shape \(256, 3\)"):
        classifier_representations(net, torch.randn(300, 3), head="classifier")
    with pytest.raises(ExtractionError, match="no inputs"):
        classifier_representations(net, [], head="classifier")
    with pytest.raises(ValueError, match="bias must be one of"):
        classifier_representations(net, inputs, head="classifier", bias="keep")


def test_a_head_run_twice_or_on_sequences_is_refused(inputs):
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(2, 4)

        def forward(self, x):
            return self.head(x) + self.head(x)

    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(2, 4)

        def forward(self, x):
            return self.head(x[:, None, :].expand(-1, 3, -1))

    with pytest.raises(ExtractionError, match="ran 2 times"):
        classifier_representations(Twice(), inputs)
    with pytest.raises(ExtractionError, match=r"shape \(256, 3, 2\)"):
        classifier_representations(Tokens(), inputs)


def test_written_representations_are_what_compare_reads(inputs, tmp_path):
    reps = [classifier_representations(trained(s), inputs, head="classifier") for s in (0, 1)]
    write_representations(tmp_path / "a.npz", reps[0], note="seed 0")
    loaded = load_model(tmp_path / "a.npz")
    np.testing.assert_array_equal(loaded.f, reps[0].f)  # exact: a round trip
    meta = read_npz_metadata(tmp_path / "a.npz")
    assert meta["head"] == "classifier" and meta["bias"] == "folded" and meta["M"] == 3
    assert meta["note"] == "seed 0" and "package_version" in meta
    result = compare(reps[0].f, reps[0].g, reps[1].f, reps[1].g, num_samples=20)
    assert result["warning"] == "" and 0 < result["mcca_f"] <= 1
    with pytest.raises(ValueError, match=r"written as \.npz"):
        write_representations(tmp_path / "a.parquet", reps[0])


def run_cli(*args, cwd):
    return subprocess.run([*REPDIST, "extract", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_the_command_line_extracts_and_names_bad_input(tmp_path, monkeypatch, capsys):
    """One run as a process of its own (the installed entry point), the others through the
    entry point's function in this process (the same parsing, errors and exit statuses)."""
    code = tmp_path / "toy.py"
    code.write_text("from torch import nn\n\ndef build():\n"
                    "    return nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 6))\n")
    torch.manual_seed(0)
    torch.save(nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 6)).state_dict(),
               tmp_path / "w.pt")
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(40, 2)).astype("f4"))
    torch.save({"x": torch.randn(40, 2), "y": torch.arange(40) % 6}, tmp_path / "xy.pt")
    ok = run_cli("--model", "toy.py:build", "--weights", "w.pt", "--inputs", "x.npy", "-o",
                 "out.npz", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "f (40, 9), g (6, 9)" in ok.stdout and load_model(tmp_path / "out.npz").g.shape == (6, 9)
    code, _, err = cli_in_process("extract", "--model", "toy.py:build", "--random-init",
                                  "--inputs", "xy.pt", "-o", "xy.npz", "--bias", "drop",
                                  "--batch-size", "7", cwd=tmp_path, monkeypatch=monkeypatch,
                                  capsys=capsys)
    assert code == 0, err
    assert np.load(tmp_path / "xy.npz")["labels"].tolist() == (np.arange(40) % 6).tolist()
    bad = {
        "FILE.py:NAME": ("--model", "toy.pt.txt", "--inputs", "x.npy", "-o", "b.npz"),
        "no such Python file": ("--model", "nope.py:build", "--inputs", "x.npy", "-o", "b.npz"),
        "must end in .npz": ("--model", "toy.py:build", "--inputs", "x.npy", "-o", "b.csv"),
        "cannot run on a batch of inputs of shape (40, 3)": ("--model", "toy.py:build",
                                                             "--weights", "w.pt", "--inputs",
                                                             "x3.npy", "-o", "b.npz"),
        "needs 'x'": ("--model", "toy.py:build", "--weights", "w.pt", "--inputs", "d.pt", "-o",
                      "b.npz"),
    }
    np.save(tmp_path / "x3.npy", np.zeros((40, 3), dtype="f4"))
    torch.save({"z": torch.zeros(3)}, tmp_path / "d.pt")
    for message, args in bad.items():  # each a status 2 and a message, never an exception
        code, _, err = cli_in_process("extract", *args, cwd=tmp_path, monkeypatch=monkeypatch,
                                      capsys=capsys)
        assert code == 2 and message in err, (message, err)
        assert "Traceback" not in err and not (tmp_path / "b.npz").exists()


def test_the_readme_extract_example_runs_as_written(tmp_path):
    """README "From a PyTorch classifier": its shell block, verbatim, in a scratch folder."""
    import re

    import pandas as pd

    text = (ROOT / "README.md").read_text()
    section = text[text.index("### From a PyTorch classifier: `repdist extract`"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    pairs = pd.read_csv(tmp_path / "toy_pairs.csv")
    assert len(pairs) == 1 and pairs["warning"].fillna("").iloc[0] == ""
    assert 0 < pairs["mcca_f"].iloc[0] <= 1 and pairs["d_llv"].iloc[0] > 0
    assert load_model(tmp_path / "toy_seed0.npz").f.shape == (1000, 3)


def test_repdist_info_prints_the_provenance_of_an_extraction(inputs, tmp_path):
    write_representations(tmp_path / "r.npz", classifier_representations(
        trained(0, 1), inputs, head="classifier"), note="x")
    res = subprocess.run([*REPDIST, "info", str(tmp_path / "r.npz")], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and "head: classifier" in res.stdout and "bias: folded" in res.stdout
    np.savez(tmp_path / "plain.npz", f=np.zeros((3, 2)), g=np.zeros((4, 2)))
    res = subprocess.run([*REPDIST, "info", str(tmp_path / "plain.npz")], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode != 0 and "no repdist provenance" in res.stderr
