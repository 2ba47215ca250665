"""`repdist extract --model FILE.py:NAME [--weights W.pt] --inputs X -o reps.npz`: f and g of a
PyTorch classifier (its final linear layer's inputs and weights, the bias folded in) in the
.npz that `repdist compare` reads (repdist.extract).

The model comes from Python code, FILE.py:NAME, a class or function called with no arguments
that returns the nn.Module, then loads --weights (a state dict, read with weights_only=True);
or from a whole module saved with torch.save(model) (--model model.pt: unpickled, so only for
files you trust, with --code FILE.py when its class lives there). Inputs: an .npy array, or a
.pt tensor or dict with 'x' (and 'y', labels). With --positions (all, last) the model is a
causal LM and the inputs token ids: an .npy integer array (contexts, length), or a .pt dict
with 'input_ids' and 'attention_mask'. Bad input stops with exit status 2 and a message;
nothing is written.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

NAME = "extract"
HELP = ("f and g of a PyTorch classifier or causal LM (final linear layer) into an .npz for "
        "repdist compare")
EXIT_BAD_INPUT = 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="FILE.py:NAME (a class or function returning the nn.Module), or a .pt "
                        "file holding a whole module saved with torch.save(model)")
    p.add_argument("--weights", type=Path, default=None,
                   help="a state dict (.pt) to load into the model built by FILE.py:NAME")
    p.add_argument("--code", type=Path, default=None,
                   help="a .py file to import before unpickling a whole-module --model .pt")
    p.add_argument("--inputs", type=Path, required=True,
                   help="the N inputs: .npy, or .pt (a tensor, or a dict with 'x' and 'y')")
    p.add_argument("-o", "--output", type=Path, required=True, help="the .npz to write")
    p.add_argument("--head", default=None,
                   help="module name of the final nn.Linear (default: the last one)")
    p.add_argument("--bias", choices=("fold", "drop"), default="fold",
                   help="fold the head's bias in as one more dimension (default; the same "
                        "p(y|x)) or drop it")
    p.add_argument("--positions", choices=("all", "last"), default=None,
                   help="the model is a causal LM and --inputs token ids: f at every unmasked "
                        "position, or at the last of each context (default: a classifier)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--device", default=None, help="default: cuda when available, else cpu")


def run(args: argparse.Namespace) -> int:
    """The `extract` subcommand; returns the exit status."""
    from ..extract import (
        ExtractionError,
        causal_lm_representations,
        classifier_representations,
        write_representations,
    )

    try:
        if args.output.suffix != ".npz":
            raise ValueError(f"{args.output}: the output must end in .npz")
        if args.batch_size < 1:
            raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
        model = _model(args)
        if args.positions is None:
            reps = classifier_representations(model, _inputs(args.inputs, args.batch_size),
                                              args.head, bias=args.bias, device=args.device,
                                              batch_size=args.batch_size)
        else:
            reps = causal_lm_representations(model, _tokens(args.inputs), args.head,
                                             positions=args.positions, bias=args.bias,
                                             device=args.device, batch_size=args.batch_size)
        write_representations(args.output, reps, model=args.model, inputs=str(args.inputs),
                              weights=str(args.weights) if args.weights else None)
    except (ExtractionError, ValueError, OSError, ImportError, AttributeError, KeyError,
            RuntimeError) as err:
        print(f"repdist extract: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    info = reps.info
    print(f"repdist extract: {args.output}: f {reps.f.shape}, g {reps.g.shape} from head "
          f"{info['head']!r} (bias {info['bias']})")
    return 0


def _import_file(path: Path) -> Any:
    """Import a .py file as a module named after it (its folder on sys.path, so that pickled
    classes referring to `<stem>.<Class>` resolve)."""
    if not path.is_file():
        raise ValueError(f"{path}: no such Python file")
    sys.path.insert(0, str(path.resolve().parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _model(args: argparse.Namespace) -> Any:
    import torch

    if args.code is not None:
        _import_file(args.code)
    if args.model.endswith((".pt", ".pth")):
        if args.weights is not None:
            raise ValueError("--weights goes with --model FILE.py:NAME, not a whole-module .pt")
        model = torch.load(args.model, map_location="cpu", weights_only=False)
    else:
        file, sep, name = args.model.rpartition(":")
        if not sep or not file.endswith(".py"):
            raise ValueError(f"--model {args.model!r}: give FILE.py:NAME or a .pt file")
        model = getattr(_import_file(Path(file)), name)()
        if args.weights is not None:
            model.load_state_dict(torch.load(args.weights, map_location="cpu", weights_only=True))
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"--model {args.model!r} gave a {type(model).__name__}, not an nn.Module")
    return model


def _inputs(path: Path, batch_size: int) -> Any:
    """The inputs as an array or tensor, or as (x, y) batches when labels come with them."""
    import numpy as np
    import torch

    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    data = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(data, dict):
        if "x" not in data:
            raise ValueError(f"{path}: a dict of inputs needs 'x' (found {sorted(data)})")
        x, y = data["x"], data.get("y")
        if y is None:
            return x
        if len(y) != len(x):
            raise ValueError(f"{path}: {len(x)} inputs but {len(y)} labels")
        return [(x[i : i + batch_size], y[i : i + batch_size]) for i in range(0, len(x), batch_size)]
    if not isinstance(data, torch.Tensor):
        raise ValueError(f"{path}: expected a tensor or a dict with 'x', got {type(data).__name__}")
    return data


def _tokens(path: Path) -> Any:
    """A causal LM's inputs: token ids (.npy), or a .pt dict with 'input_ids' (and
    'attention_mask')."""
    import numpy as np
    import torch

    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    data = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(data, dict):
        return data
    if "input_ids" not in data:
        raise ValueError(f"{path}: a dict of token inputs needs 'input_ids' (found {sorted(data)})")
    return {k: data[k] for k in ("input_ids", "attention_mask") if k in data}
