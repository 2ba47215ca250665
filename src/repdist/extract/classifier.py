"""Any classifier whose logits come from a final linear layer is a model of the paper's family:
logits = W f(x) + b, so f(x) is the layer's input and g(y) its weight row y. The bias is one more
coordinate: f'(x) = [f(x), 1], g'(y) = [W_y, b_y] give the same logits, hence the same p(y|x), with
M + 1 dimensions (the paper's identifiability results hold for f', g'). Dropping it (`bias="drop"`)
keeps M dimensions but describes another distribution when b is not constant.

The layer's inputs are taken with a forward hook while the whole model runs, and its outputs are
checked against the model's (`tapped_head`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..io import provenance, write_npz
from ..io.host import to_host
from ..io.validation import check_finite, representations
from ..measures.extra import centred_log_probs

BIAS_MODES = ("fold", "drop")
# Model outputs must equal the head's up to a per-input constant (logits or log-probabilities)
# within this tolerance, relative to the largest centred logit (float32 rounding is ~1e-7).
LOGIT_TOLERANCE = 1e-4


class ExtractionError(ValueError):
    """The model (or its inputs) is not a classifier whose logits come from a linear head."""


@dataclass(frozen=True)
class ClassifierRepresentations:
    """f (N x M') over the loader's inputs and g (K x M') as float64; M' = M + 1 when the bias
    is folded in. `labels` holds the loader's second item per input when it yields pairs."""

    f: np.ndarray
    g: np.ndarray
    head: str
    bias_folded: bool
    labels: np.ndarray | None = None
    info: Mapping[str, Any] = field(default_factory=dict)


def find_head(model: nn.Module, head: str | None = None) -> tuple[str, nn.Linear]:
    """The named nn.Linear, or the last one the model registers."""
    linears = [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    if head is None:
        if not linears:
            raise ExtractionError(f"{type(model).__name__} has no nn.Linear layer: its logits "
                                  "do not come from a linear head (pass head= if one is wrapped)")
        return linears[-1]
    modules = dict(model.named_modules())
    if head not in modules:
        names = ", ".join(name for name, _ in linears) or "none"
        raise ExtractionError(f"no module named {head!r} in {type(model).__name__} "
                              f"(its nn.Linear layers: {names})")
    if not isinstance(modules[head], nn.Linear):
        raise ExtractionError(f"module {head!r} is a {type(modules[head]).__name__}, "
                              "not an nn.Linear")
    return head, modules[head]


def batches(loader: Any, batch_size: int) -> Iterable[Any]:
    """A loader's batches; an array or tensor of inputs is cut into batches of `batch_size`."""
    if isinstance(loader, np.ndarray | torch.Tensor):
        inputs = torch.as_tensor(loader)
        return (inputs[i : i + batch_size] for i in range(0, len(inputs), batch_size))
    return loader


def _split(batch: Any) -> tuple[torch.Tensor, Any]:
    """(inputs, labels or None) of a batch: a tensor, or a (inputs, labels, ...) sequence."""
    if isinstance(batch, list | tuple):
        if not batch:
            raise ExtractionError("the loader yielded an empty batch")
        return torch.as_tensor(batch[0]), batch[1] if len(batch) > 1 else None
    return torch.as_tensor(batch), None


class HeadTap:
    """A forward hook that keeps the head's inputs and outputs of one forward pass."""

    def __init__(self, head: nn.Linear) -> None:
        self.calls: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.handle = head.register_forward_hook(self)

    def __call__(self, module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
        self.calls.append((inputs[0].detach(), output.detach()))


def _centred(z: torch.Tensor) -> np.ndarray:
    """Logits up to a per-input constant: the measures' clr transform, in float64."""
    return centred_log_probs(to_host(z.reshape(len(z), -1), np.float64))


def head_call(name: str, tap: HeadTap, shape: tuple[int, ...], dims: int) -> tuple[torch.Tensor,
                                                                                      torch.Tensor]:
    """The head's (input, output) of this forward pass: it must have run once, on inputs of
    `dims` dimensions (2: a classifier's (batch, features); 3: an LM's (batch, sequence, width))."""
    calls, tap.calls = tap.calls, []
    if len(calls) != 1:
        raise ExtractionError(f"head {name!r} ran {len(calls)} times in one forward pass on "
                              f"inputs of shape {shape}; it must run exactly once")
    f, out = calls[0]
    if f.dim() != dims:
        want = "(batch, features)" if dims == 2 else "(batch, sequence, width)"
        raise ExtractionError(f"head {name!r} received inputs of shape {tuple(f.shape)}; "
                              f"f must be {want}")
    return f, out


def check_logits(name: str, logits: Any, out: torch.Tensor) -> None:
    """The model's output must be the head's (the last axis: the labels), up to a per-row
    constant: otherwise the head's inputs and weights are not the model's f, g."""
    if not isinstance(logits, torch.Tensor) or logits.shape != out.shape:
        got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ExtractionError(f"the model's output ({got}) is not the head {name!r}'s output "
                              f"{tuple(out.shape)}: the logits do not come from this layer")
    k = out.shape[-1] if out.dim() else 1
    a, b = _centred(logits.reshape(-1, k)), _centred(out.reshape(-1, k))
    gap = float(np.abs(a - b).max()) if a.size else 0.0
    scale = max(1.0, float(np.abs(b).max()) if b.size else 0.0)
    if gap > LOGIT_TOLERANCE * scale:
        raise ExtractionError(
            f"the model's outputs differ from head {name!r}'s by up to {gap:.3g} (beyond a "
            "per-input constant): something non-linear follows the head, so its inputs and "
            "weights are not the model's f and g")


@dataclass
class TappedHead:
    """A model on its extraction device with its head tapped (see `tapped_head`)."""

    name: str
    layer: nn.Linear
    tap: HeadTap
    device: torch.device

    def weights(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The head's weight and bias (None without one) on the host, as float64."""
        bias = self.layer.bias
        return (self.layer.weight.detach().double().cpu(),
                None if bias is None else bias.detach().double().cpu())


@contextlib.contextmanager
def tapped_head(model: nn.Module, head: str | None, bias: str,
                device: str | torch.device | None) -> Iterator[TappedHead]:
    """The model in eval mode on `device` (default CUDA when available) with its head tapped;
    afterwards the tap is removed and the model's mode and device are restored. A head that is
    not the last step of the logits is an error (check_logits), not a silent mismatch."""
    if bias not in BIAS_MODES:
        raise ValueError(f"bias must be one of {BIAS_MODES}, got {bias!r}")
    name, layer = find_head(model, head)
    target = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    params = next(model.parameters(), None)
    home, was_training = (params.device if params is not None else target), model.training
    tap = HeadTap(layer)
    try:
        model.to(target).eval()
        yield TappedHead(name, layer, tap, target)
    finally:
        tap.handle.remove()
        model.to(home).train(was_training)


def input_vocabulary(model: nn.Module) -> int | None:
    """How many token ids the model's input embedding holds: `get_input_embeddings()`'s, else the
    largest nn.Embedding's (so no valid id is refused); None without one."""
    get = getattr(model, "get_input_embeddings", None)
    table = None
    with contextlib.suppress(NotImplementedError, AttributeError):
        table = get() if callable(get) else None
    if isinstance(table, nn.Embedding):
        return int(table.num_embeddings)
    sizes = [m.num_embeddings for m in model.modules() if isinstance(m, nn.Embedding)]
    return int(max(sizes)) if sizes else None


def check_token_ids(model: nn.Module, x: torch.Tensor) -> None:
    """Integer inputs (int64/int32) of a model with an input embedding are token ids: each must
    have a row of it. Checked before the model runs: on CUDA an id past the table fails
    asynchronously, often at a later call with the CUDA context lost, naming no input."""
    if x.dtype not in (torch.int64, torch.int32) or x.numel() == 0:
        return
    vocab = input_vocabulary(model)
    if vocab is None:
        return
    lo, hi = (int(v) for v in to_host(torch.stack([x.min(), x.max()]).long()))
    if lo < 0 or hi >= vocab:
        raise ExtractionError(
            f"the model cannot run on a batch of token ids of shape {tuple(x.shape)}: they run "
            f"from {lo} to {hi}, and its input embedding holds ids 0 to {vocab - 1} only (were "
            "they made by another tokenizer, or padded with -1?)")


def parameter_dtype(model: nn.Module) -> torch.dtype | None:
    """The dtype of the model's first floating-point parameter (or buffer); None without one."""
    tensors = (*model.parameters(), *model.buffers())
    return next((t.dtype for t in tensors if t.is_floating_point()), None)


def failing_module(model: nn.Module, x: torch.Tensor, **kwargs: Any) -> str | None:
    """The innermost submodule whose forward was running when model(x) failed, run again with
    hooks: its name and what it is; None when the model's own forward fails (or nothing does)."""
    running: list[str] = []
    handles = []
    for name, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(
            lambda m, args, name=name: running.append(name)))
        handles.append(module.register_forward_hook(lambda m, args, out: running.pop()))
    try:
        model(x, **kwargs)
    except Exception:  # the failure being explained: only where it happens is wanted
        if running and running[-1]:
            module = model.get_submodule(running[-1])
            return f"{running[-1]!r} ({type(module).__name__}({module.extra_repr()}))"
    finally:
        for handle in handles:
            handle.remove()
    return None


def _cannot_run(model: nn.Module, x: torch.Tensor, err: Exception, kwargs: dict[str, Any]) -> str:
    """Why the model cannot run on batch `x`, in words: the shape and dtype, the submodule that
    fails (unless the device's state may be lost), and the error's first line."""
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    what = f"a batch of inputs of shape {tuple(x.shape)}, {str(x.dtype).removeprefix('torch.')}"
    if isinstance(err, torch.OutOfMemoryError):
        return f"the model ran out of memory on {what} on {x.device}: pass a smaller batch size"
    where = None if "CUDA error" in first else failing_module(model, x, **kwargs)
    says = f"its module {where} fails" if where else f"{type(err).__name__}"
    hint = ""
    if not x.is_floating_point() and parameter_dtype(model) is not None and \
            input_vocabulary(model) is None:
        hint = " (integer inputs go in as they are, as token ids: save features as floats)"
    return f"the model cannot run on {what}: {says}: {first}{hint}"


def run_model(model: nn.Module, x: torch.Tensor, **kwargs: Any) -> Any:
    """The model's output on one batch, float inputs cast to its parameters' dtype (token ids as
    they are); a batch it cannot take (check_token_ids among others) is an ExtractionError."""
    check_token_ids(model, x)
    dtype = parameter_dtype(model)
    if dtype is not None and x.is_floating_point() and x.dtype != dtype:
        x = x.to(dtype)
    try:
        return model(x, **kwargs)
    except (RuntimeError, ValueError, TypeError, IndexError) as err:  # IndexError: a token id
        # past the vocabulary (an embedding lookup on the CPU)
        raise ExtractionError(_cannot_run(model, x, err, kwargs)) from err


@torch.no_grad()
def classifier_representations(model: nn.Module, loader: Any, head: str | None = None, *,
                               bias: str = "fold", device: str | torch.device | None = None,
                               batch_size: int = 256) -> ClassifierRepresentations:
    """f over every input of `loader` and g of `model`'s linear head (see the module's text).

    `loader`: a DataLoader or any iterable of batches (tensors, or (inputs, labels, ...) tuples),
    or one array of inputs. `head`: the final nn.Linear's module name (default: the last one).
    `bias`: "fold" (f' = [f, 1], g' = [W, b]) or "drop". `device`: default CUDA when available.
    The model's mode and device are restored afterwards."""
    fs, labels = [], []
    with tapped_head(model, head, bias, device) as tapped:
        for batch in batches(loader, batch_size):
            x, y = _split(batch)
            logits = run_model(model, x.to(tapped.device))
            f, out = head_call(tapped.name, tapped.tap, tuple(x.shape), dims=2)
            check_logits(tapped.name, logits, out)
            fs.append(f.double().cpu())
            labels.append(None if y is None else torch.as_tensor(y).cpu())
        weight, layer_bias = tapped.weights()
    if not fs:
        raise ExtractionError("the loader yielded no inputs")
    return assemble(tapped.name, torch.cat(fs), weight, layer_bias, bias, labels)


def assemble(name: str, f: torch.Tensor, weight: torch.Tensor, layer_bias: torch.Tensor | None,
             bias: str, labels: list[Any]) -> ClassifierRepresentations:
    """The representations of f (rows) and the head's weight and bias, folded or dropped."""
    fold = bias == "fold" and layer_bias is not None
    g = weight
    if fold:
        f = torch.cat([f, torch.ones(len(f), 1, dtype=f.dtype)], dim=1)
        g = torch.cat([weight, layer_bias[:, None]], dim=1)
    y = None if any(v is None for v in labels) else to_host(torch.cat(labels))
    info = {"head": name, "bias": "folded" if fold else ("dropped" if layer_bias is not None
                                                          else "none"),
            "N": int(f.shape[0]), "K": int(g.shape[0]), "M": int(g.shape[1])}
    return ClassifierRepresentations(to_host(f), to_host(g), name, fold, y, info)


def write_representations(path: str | Path, reps: ClassifierRepresentations, **extra: Any) -> None:
    """The .npz `repdist compare` reads (f, g, and labels when known), atomically, with provenance
    and `extra`, after `repdist compare`'s checks: a model whose f is NaN is said, not written."""
    if Path(path).suffix != ".npz":
        raise ValueError(f"{path}: representations are written as .npz")
    f, g = representations(reps.f, reps.g, f"{path} (not written)")
    for name, values in (("f", f), ("g", g)):
        check_finite(values, f"{path} (not written): the model's {name}")
    arrays = {"f": reps.f, "g": reps.g}
    if reps.labels is not None:
        arrays["labels"] = reps.labels
    write_npz(path, arrays, provenance(**reps.info, **extra))
