"""`repdist extract --model FILE.py:NAME [--weights W.pt] --inputs X -o reps.npz`: f and g of a
PyTorch classifier (its final linear layer's inputs and weights, the bias folded in) in the
.npz that `repdist compare` reads (repdist.extract).

The model comes from Python code, FILE.py:NAME, a class or function called with no arguments
that returns the nn.Module, then loads --weights (a state dict, read with weights_only=True);
or from a whole module saved with torch.save(model) (--model model.pt: unpickled, so only for
files you trust, with --code FILE.py when its class lives there). Inputs: an .npy array, or a
.pt tensor or dict with 'x' (and 'y', labels). With --positions (all, last) the model is a
causal LM and the inputs token ids: an .npy integer array (contexts, length), or a .pt dict
with 'input_ids' and 'attention_mask'. --model hf:NAME_OR_PATH is a Hugging Face causal LM
(a save_pretrained folder or a hub id; needs transformers), whose head is its output embedding.
Instead of --inputs, --text FILE.txt with --context-length L (and --max-contexts N) cuts the
text, tokenized by --tokenizer (default: the hf: model's own), into consecutive windows of L
tokens. A causal LM from hf: or --text needs no --positions: it defaults to last (one f per
window). Bad input stops with exit status 2 and a message; nothing is written.
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
HF = "hf:"  # --model's prefix of a Hugging Face causal LM


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="FILE.py:NAME (a class or function returning the nn.Module), a .pt "
                        "file holding a whole module saved with torch.save(model), or "
                        "hf:NAME_OR_PATH (a Hugging Face causal LM: a folder or a hub id)")
    p.add_argument("--weights", type=Path, default=None,
                   help="a state dict (.pt) to load into the model built by FILE.py:NAME")
    p.add_argument("--code", type=Path, default=None,
                   help="a .py file to import before unpickling a whole-module --model .pt")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--inputs", type=Path,
                       help="the N inputs: .npy, or .pt (a tensor, or a dict with 'x' and 'y')")
    given.add_argument("--text", type=Path,
                       help="a text file for a causal LM, tokenized and cut into consecutive "
                            "windows of --context-length tokens (the last short one dropped)")
    p.add_argument("--tokenizer", default=None,
                   help="the Hugging Face tokenizer of --text: a folder or a hub id (default: "
                        "the hf: model's own)")
    p.add_argument("--context-length", type=int, default=None,
                   help="tokens per context cut from --text")
    p.add_argument("--max-contexts", type=int, default=None,
                   help="keep at most this many contexts of --text (the first ones)")
    p.add_argument("-o", "--output", type=Path, required=True, help="the .npz to write")
    p.add_argument("--head", default=None,
                   help="module name of the final nn.Linear (default: the last one; an hf: "
                        "model's output embedding)")
    p.add_argument("--bias", choices=("fold", "drop"), default="fold",
                   help="fold the head's bias in as one more dimension (default; the same "
                        "p(y|x)) or drop it")
    p.add_argument("--positions", choices=("all", "last"), default=None,
                   help="the model is a causal LM and --inputs token ids: f at every unmasked "
                        "position, or at the last of each context (default: a classifier; last "
                        "for an hf: model or --text)")
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
        hf_name = args.model[len(HF):] if args.model.startswith(HF) else None
        _check_text_flags(args, hf_name)
        positions = args.positions or ("last" if hf_name is not None or args.text else None)
        model, head = _hf_model(args, hf_name) if hf_name is not None else (_model(args), args.head)
        if positions is None:
            reps = classifier_representations(model, _inputs(args.inputs, args.batch_size),
                                              head, bias=args.bias, device=args.device,
                                              batch_size=args.batch_size)
        else:
            tokens = _tokens(args.inputs) if args.inputs else _text_tokens(args, hf_name)
            reps = causal_lm_representations(model, tokens, head, positions=positions,
                                             bias=args.bias, device=args.device,
                                             batch_size=args.batch_size)
        text = {"tokenizer": args.tokenizer or hf_name, "context_length": args.context_length,
                "max_contexts": args.max_contexts} if args.text else {}
        write_representations(args.output, reps, model=args.model,
                              inputs=str(args.inputs or args.text),
                              weights=str(args.weights) if args.weights else None, **text)
    except (ExtractionError, ValueError, OSError, ImportError, AttributeError, KeyError,
            RuntimeError) as err:
        print(f"repdist extract: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    info = reps.info
    print(f"repdist extract: {args.output}: f {reps.f.shape}, g {reps.g.shape} from head "
          f"{info['head']!r} (bias {info['bias']})")
    return 0


def _check_text_flags(args: argparse.Namespace, hf_name: str | None) -> None:
    """--tokenizer, --context-length and --max-contexts go with --text, which needs a tokenizer
    and a context length; --weights and --code do not go with an hf: model."""
    if args.text is None:
        extra = [flag for flag, value in (("--tokenizer", args.tokenizer),
                                          ("--context-length", args.context_length),
                                          ("--max-contexts", args.max_contexts))
                 if value is not None]
        if extra:
            raise ValueError(f"{', '.join(extra)} go with --text, not --inputs")
    else:
        if args.context_length is None:
            raise ValueError("--text needs --context-length (tokens per context)")
        if args.tokenizer is None and hf_name is None:
            raise ValueError("--text needs --tokenizer NAME_OR_PATH when --model is not hf:")
    if hf_name is not None and (args.weights is not None or args.code is not None):
        raise ValueError("--weights and --code go with a PyTorch --model, not hf:")


def _hf_model(args: argparse.Namespace, name: str) -> tuple[Any, str | None]:
    """A Hugging Face causal LM and its head: --head, else its output embedding."""
    from ..extract import load_causal_lm
    from ..extract.hf import output_head

    if not name:
        raise ValueError("--model hf: needs a folder or a hub id after 'hf:'")
    model = load_causal_lm(name)
    return model, args.head or output_head(model)


def _text_tokens(args: argparse.Namespace, hf_name: str | None) -> Any:
    """--text cut into windows of --context-length tokens of --tokenizer (or the model's own)."""
    from ..extract import load_tokenizer, text_contexts

    tokenizer = load_tokenizer(args.tokenizer or hf_name)
    return text_contexts(args.text.read_text(encoding="utf-8"), tokenizer, args.context_length,
                         args.max_contexts)


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
