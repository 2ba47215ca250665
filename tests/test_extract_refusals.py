"""`repdist extract` on a new person's files: a model without weights, float64 inputs, a .pt of
numpy arrays, inputs the model cannot take, weights that do not fit, a model file that fails.
Each bad input is exit status 2 and one or two lines in words (no traceback, nothing written);
float inputs are cast to the model's dtype; an unexpected error is still a traceback."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from repdist.extract import ExtractionError, classifier_representations
from repdist.extract.inputs import checked_inputs
from repdist.io import read_npz_metadata

from conftest import cli_in_process

MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.head = nn.Linear(2, 8), nn.Linear(8, 6)

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)))


def needs(width):
    return Net()


def fails():
    raise RuntimeError("no GPU found")
'''
RANDOM = ("--model", "net.py:Net", "--random-init")
FAILING_LINE = MODEL.splitlines().index('    raise RuntimeError("no GPU found")') + 1
# float32 rounding of the inputs (unit roundoff 6e-8) through two layers of width 8: a few ulps
F32_TOLERANCE = 1e-6


@pytest.fixture
def folder(tmp_path):
    """A model file, weights that fit it and some that do not, and inputs of every kind."""
    (tmp_path / "net.py").write_text(MODEL)
    (tmp_path / "syntax.py").write_text("def build(:\n    pass\n")
    (tmp_path / "raises.py").write_text("import torch\n\nVALUE = 1 / 0\n")
    code: dict = {}
    exec(MODEL, code)  # the Net of net.py, for weights that fit it
    torch.manual_seed(0)
    model = code["Net"]()
    state = model.state_dict()
    torch.save(state, tmp_path / "w.pt")
    torch.save({f"module.{k}": v for k, v in state.items()}, tmp_path / "prefixed.pt")
    torch.save({**state, "head.weight": torch.zeros(5, 8)}, tmp_path / "shape.pt")
    torch.save({"epoch": 3, "state_dict": state}, tmp_path / "checkpoint.pt")
    torch.save({k: v.numpy() for k, v in state.items()}, tmp_path / "numpy_weights.pt")
    x = np.random.default_rng(0).normal(size=(40, 2))
    np.save(tmp_path / "x64.npy", x)
    np.save(tmp_path / "x32.npy", x.astype(np.float32))
    np.save(tmp_path / "x3.npy", np.zeros((40, 3), np.float32))
    np.save(tmp_path / "complex.npy", x.astype(np.complex64))
    bad = x.copy()
    bad[5, 1], bad[9, 0] = np.nan, np.inf
    np.save(tmp_path / "nan.npy", bad)
    np.save(tmp_path / "huge.npy", np.where(np.arange(80).reshape(40, 2) == 7, 1e300, x))
    torch.save({"x": x, "y": np.arange(40) % 6}, tmp_path / "numpy.pt")
    torch.save({"x": torch.as_tensor(x), "y": torch.arange(40) % 6}, tmp_path / "x64.pt")
    (tmp_path / "text.pt").write_text("not a tensor file")
    return tmp_path


def refused(folder, monkeypatch, capsys, *args) -> str:
    """Runs `repdist extract ARGS -o out.npz` expecting a refusal: status 2, one or two lines of
    words, no traceback, nothing written; returns stderr."""
    code, _, err = cli_in_process("extract", *args, "-o", "out.npz", cwd=folder,
                                  monkeypatch=monkeypatch, capsys=capsys)
    assert code == 2, err
    assert "Traceback" not in err and 1 <= len(err.strip().splitlines()) <= 2, err
    assert err.startswith("repdist extract: error: ") and not (folder / "out.npz").exists()
    return err


def extracted(folder, monkeypatch, capsys, *args, out="out.npz") -> np.lib.npyio.NpzFile:
    code, _, err = cli_in_process("extract", *args, "-o", out, cwd=folder,
                                  monkeypatch=monkeypatch, capsys=capsys)
    assert code == 0, err
    return np.load(folder / out)


def test_a_model_from_code_needs_weights_or_random_init(folder, monkeypatch, capsys):
    err = refused(folder, monkeypatch, capsys, "--model", "net.py:Net", "--inputs", "x32.npy")
    assert "would be measured at its initial weights" in err
    assert "--weights W.pt" in err and "--random-init" in err
    extracted(folder, monkeypatch, capsys, *RANDOM, "--inputs", "x32.npy", out="random.npz")
    assert read_npz_metadata(folder / "random.npz")["random_init"] is True
    extracted(folder, monkeypatch, capsys, "--model", "net.py:Net", "--weights", "w.pt",
              "--inputs", "x32.npy", out="trained.npz")
    assert read_npz_metadata(folder / "trained.npz")["random_init"] is False
    torch.save(torch.nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 6)),
               folder / "whole.pt")
    extracted(folder, monkeypatch, capsys, "--model", "whole.pt", "--inputs", "x32.npy",
              out="whole.npz")  # a module saved whole carries its weights
    assert read_npz_metadata(folder / "whole.npz")["random_init"] is False
    for args, words in [((*RANDOM, "--weights", "w.pt"), "exclude each other"),
                        (("--model", "whole.pt", "--random-init"), "carries its own weights"),
                        (("--model", "hf:gpt2", "--random-init"), "carries its own weights")]:
        assert words in refused(folder, monkeypatch, capsys, *args, "--inputs", "x32.npy")


def test_float64_inputs_are_cast_to_the_models_float32(folder, monkeypatch, capsys):
    """The same f as the float32 inputs, to float32 rounding (the cast rounds each input once);
    a .pt of float64 tensors too; integers stay integers; a float64 model keeps float64."""
    trained = ("--model", "net.py:Net", "--weights", "w.pt")
    f32 = extracted(folder, monkeypatch, capsys, *trained, "--inputs", "x32.npy", out="a.npz")
    f64 = extracted(folder, monkeypatch, capsys, *trained, "--inputs", "x64.npy", out="b.npz")
    pt = extracted(folder, monkeypatch, capsys, *trained, "--inputs", "x64.pt", out="c.npz")
    for other in (f64, pt):
        np.testing.assert_allclose(other["f"], f32["f"], rtol=F32_TOLERANCE, atol=F32_TOLERANCE)
    assert pt["labels"].tolist() == (np.arange(40) % 6).tolist()
    model = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 3))
    x = torch.randn(10, 2, dtype=torch.float64)
    api = classifier_representations(model, x)  # the Python API casts too
    np.testing.assert_allclose(api.f, classifier_representations(model, x.float()).f,
                               rtol=F32_TOLERANCE, atol=F32_TOLERANCE)
    assert checked_inputs(np.arange(6).reshape(3, 2), torch.float32, "ids").dtype == torch.int64
    assert checked_inputs(x.float(), torch.float64, "x").dtype == torch.float64
    assert classifier_representations(model.double(), x.float()).f.shape == (10, 5)


def test_inputs_that_are_not_finite_real_numbers_are_refused(folder, monkeypatch, capsys):
    err = refused(folder, monkeypatch, capsys, *RANDOM, "--inputs", "complex.npy")
    assert "complex.npy: the inputs are complex (complex64)" in err and "real" in err
    err = refused(folder, monkeypatch, capsys, *RANDOM, "--inputs", "nan.npy")
    assert "nan.npy: 2 of the 80 input values are not finite" in err
    assert "first at index (5, 1)" in err
    err = refused(folder, monkeypatch, capsys, *RANDOM, "--inputs", "huge.npy")
    assert "1 of the 80 input values is past the range of the model's float32" in err
    assert "first at index (3, 1)" in err
    with pytest.raises(ExtractionError, match="not finite"):
        checked_inputs(torch.tensor([[0.0, float("nan")]]), torch.float32, "x")


def test_a_pt_of_numpy_arrays_says_what_it_holds_and_how_to_save_it(folder, monkeypatch, capsys):
    """In a process of its own too: no torch advice (weights_only=False), no traceback."""
    done = subprocess.run([sys.executable, "-m", "repdist", "extract", *RANDOM, "--inputs",
                           "numpy.pt", "-o", "out.npz"], cwd=folder, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    for err in (done.stderr, refused(folder, monkeypatch, capsys, *RANDOM, "--inputs",
                                     "numpy.pt")):
        assert "numpy.pt holds numpy arrays" in err
        assert "torch.save({'x': torch.as_tensor(x)}" in err and ".npy" in err
        assert "weights_only=False" not in err and "safe_globals" not in err
    err = refused(folder, monkeypatch, capsys, "--model", "net.py:Net", "--weights",
                  "numpy_weights.pt", "--inputs", "x32.npy")
    assert "numpy_weights.pt holds numpy arrays" in err and "model.state_dict()" in err


def test_weights_that_do_not_fit_name_the_keys_and_shapes(folder, monkeypatch, capsys):
    def weights(name: str) -> str:
        return refused(folder, monkeypatch, capsys, "--model", "net.py:Net", "--weights", name,
                       "--inputs", "x32.npy")

    err = weights("prefixed.pt")
    assert "prefixed.pt does not fit Net: 4 of its 4 keys are missing (body.weight" in err
    assert "4 of the file's 4 are not its (module.body.weight" in err and "'module.'" in err
    err = weights("shape.pt")
    assert "1 shape differs (head.weight is (5, 8) in the file, (6, 8) in the model)" in err
    err = weights("checkpoint.pt")
    assert "checkpoint.pt holds a checkpoint" in err and "save its 'state_dict' entry" in err
    assert "no such file" in weights("missing.pt")
    assert "not a file torch.save wrote" in weights("text.pt")


@pytest.mark.parametrize("model, words", [
    ("syntax.py:build", "importing syntax.py fails at line 1: SyntaxError"),
    ("raises.py:build", "importing raises.py fails at line 3: ZeroDivisionError"),
    ("net.py:Nope", "net.py defines nothing callable named 'Nope' (its classes and functions: "
                    "Net, fails, needs)"),
    ("net.py:needs", "net.py:needs() fails: TypeError: needs() missing 1 required positional "
                     "argument: 'width' (it is called with no arguments)"),
    ("net.py:fails", f"net.py:fails() fails at line {FAILING_LINE}: RuntimeError: no GPU found"),
])
def test_a_model_file_that_fails_names_its_line(folder, monkeypatch, capsys, model, words):
    err = refused(folder, monkeypatch, capsys, "--model", model, "--random-init", "--inputs",
                  "x32.npy")
    assert words in err


def test_inputs_the_model_cannot_take_name_the_shapes(folder, monkeypatch, capsys):
    err = refused(folder, monkeypatch, capsys, *RANDOM, "--inputs", "x3.npy")
    assert "net.py:Net on x3.npy: the model cannot run on a batch of inputs of shape (40, 3)" in err
    assert "its module 'body' (Linear(in_features=2, out_features=8, bias=True)) fails" in err
    err = refused(folder, monkeypatch, capsys, *RANDOM, "--inputs", "x32.npy", "--head", "nope")
    assert "net.py:Net on x32.npy: no module named 'nope' in Net (its nn.Linear layers: body, " \
           "head)" in err
    for inputs, words in [("text.pt", "text.pt: not a file torch.save wrote"),
                          ("gone.npy", "gone.npy: no such file"),
                          ("w.npz", "not an .npz")]:
        assert words in refused(folder, monkeypatch, capsys, *RANDOM, "--inputs", inputs)
    assert "not a device torch knows" in refused(folder, monkeypatch, capsys, *RANDOM, "--inputs",
                                                 "x32.npy", "--device", "abacus")


def test_an_unexpected_error_is_still_a_traceback(folder, monkeypatch, capsys):
    """A bug is not bad input: it is raised, not turned into a message."""
    import repdist.extract

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(repdist.extract, "classifier_representations", broken)
    with pytest.raises(KeyError, match="a bug"):
        cli_in_process("extract", *RANDOM, "--inputs", "x32.npy", "-o", "out.npz", cwd=folder,
                       monkeypatch=monkeypatch, capsys=capsys)
    assert not (folder / "out.npz").exists()


def test_non_finite_representations_are_said_and_not_written(tmp_path):
    """What extract writes passes the checks compare makes (io.validation): a model whose f
    came out NaN is refused in words, and no file appears."""
    import numpy as np

    from repdist.extract.classifier import ClassifierRepresentations, write_representations
    from repdist.io.validation import InputError

    f = np.ones((4, 2))
    f[1, 0] = np.nan
    reps = ClassifierRepresentations(f, np.ones((3, 2)), "head", False, None, {"N": 4})
    with pytest.raises(InputError, match=r"not written\): the model's f has 1 NaN"):
        write_representations(tmp_path / "reps.npz", reps)
    assert not (tmp_path / "reps.npz").exists()
