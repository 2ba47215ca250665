"""`repdist extract --model M --inputs X -o reps.npz`: f and g of a PyTorch classifier or causal
LM (its final linear layer's inputs and weights, the bias folded in), for `repdist compare`.

A module saved whole (model.pt) is unpickled: trusted files only. Float inputs are cast to the
model's dtype. Bad input stops with exit status 2 and a message in words; nothing is written."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

NAME = "extract"
HELP = ("f and g of a PyTorch classifier or causal LM (final linear layer) into an .npz for "
        "repdist compare")
EXIT_BAD_INPUT = 2
HF = "hf:"  # --model's prefix of a Hugging Face causal LM
WHOLE = (".pt", ".pth")  # --model's suffixes of a whole module saved with torch.save(model)
INPUTS_FIX = ("Save tensors instead, torch.save({'x': torch.as_tensor(x)}, 'inputs.pt'), or "
              "the array as an .npy (numpy.save).")
TOKENS_FIX = ("Save tensors instead, torch.save({'input_ids': torch.as_tensor(ids)}, "
              "'tokens.pt'), or the ids as an .npy (numpy.save).")
WEIGHTS_FIX = ("Save the state dict of tensors, torch.save(model.state_dict(), 'weights.pt'); a "
               "module saved whole goes in --model.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="FILE.py:NAME (a class or function returning the nn.Module), a .pt "
                        "file holding a whole module saved with torch.save(model), or "
                        "hf:NAME_OR_PATH (a Hugging Face causal LM: a folder or a hub id)")
    p.add_argument("--weights", type=Path, default=None,
                   help="a state dict (.pt) to load into the model built by FILE.py:NAME "
                        "(needed, unless --random-init)")
    p.add_argument("--random-init", action="store_true",
                   help="measure the model's initial weights, e.g. an untrained baseline "
                        "(FILE.py:NAME without --weights)")
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
    """The `extract` subcommand; returns the exit status. Bad input (files, flags, a model that
    cannot run on the inputs) is a message and status 2; anything else is a bug and raises."""
    from ..extract import ExtractionError

    try:
        reps = _extract(args)
    except (ExtractionError, ValueError, OSError) as err:
        print(f"repdist extract: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    initial = "; initial weights, --random-init" if args.random_init else ""
    print(f"repdist extract: {args.output}: f {reps.f.shape}, g {reps.g.shape} from head "
          f"{reps.info['head']!r} (bias {reps.info['bias']}{initial})")
    return 0


def _extract(args: argparse.Namespace) -> Any:
    """Check the flags, read the inputs, build the model, extract and write what it returns."""
    from ..extract import load_causal_lm, write_representations
    from ..extract.hf import output_head

    if args.output.suffix != ".npz":
        raise ValueError(f"{args.output}: the output must end in .npz")
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    hf_name = args.model[len(HF):] if args.model.startswith(HF) else None
    _check_text_flags(args, hf_name)
    _check_weight_flags(args, hf_name)
    _check_device(args.device)
    positions = args.positions or ("last" if hf_name is not None or args.text else None)
    data = (None if args.inputs is None else
            _raw_inputs(args.inputs) if positions is None else _tokens(args.inputs))
    if hf_name == "":
        raise ValueError("--model hf: needs a folder or a hub id after 'hf:'")
    model = load_causal_lm(hf_name) if hf_name is not None else _model(args)
    head = args.head or (output_head(model) if hf_name is not None else None)
    reps = _representations(args, model, head, positions, data, hf_name)
    text = {"tokenizer": args.tokenizer or hf_name, "context_length": args.context_length,
            "max_contexts": args.max_contexts} if args.text else {}
    write_representations(args.output, reps, model=args.model,
                          inputs=str(args.inputs or args.text),
                          weights=str(args.weights) if args.weights else None,
                          random_init=bool(args.random_init), **text)
    return reps


def _representations(args: argparse.Namespace, model: Any, head: str | None,
                     positions: str | None, data: Any, hf_name: str | None) -> Any:
    """f and g of the model on `data` or --text; an ExtractionError names both."""
    from ..extract import (ExtractionError, causal_lm_representations,
                           classifier_representations, load_tokenizer, text_contexts)

    loader = tokens = data
    if positions is None:
        loader = _classifier_inputs(model, data, args.inputs, args.batch_size)
    elif args.text:  # windows of --context-length tokens of --tokenizer (or the model's own)
        tokens = text_contexts(args.text.read_text(encoding="utf-8"),
                               load_tokenizer(args.tokenizer or hf_name), args.context_length,
                               args.max_contexts)
    try:
        if positions is None:
            return classifier_representations(model, loader, head, bias=args.bias,
                                              device=args.device, batch_size=args.batch_size)
        return causal_lm_representations(model, tokens, head, positions=positions,
                                         bias=args.bias, device=args.device,
                                         batch_size=args.batch_size)
    except ExtractionError as err:
        raise ExtractionError(f"{args.model} on {args.inputs or args.text}: {err}") from err


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
    elif args.context_length is None:
        raise ValueError("--text needs --context-length (tokens per context)")
    elif args.tokenizer is None and hf_name is None:
        raise ValueError("--text needs --tokenizer NAME_OR_PATH when --model is not hf:")
    if hf_name is not None and (args.weights is not None or args.code is not None):
        raise ValueError("--weights and --code go with a PyTorch --model, not hf:")


def _check_weight_flags(args: argparse.Namespace, hf_name: str | None) -> None:
    """A FILE.py:NAME model needs --weights or --random-init, which goes with neither
    --weights nor a model that carries its weights (a whole-module .pt, hf:)."""
    code_model = hf_name is None and not args.model.endswith(WHOLE)
    if code_model and args.weights is None and not args.random_init and \
            Path(args.model.rpartition(":")[0]).is_file():
        name = args.model.rpartition(":")[2]
        raise ValueError(f"--model {args.model} would be measured at its initial weights (what "
                         f"{name}() starts with): pass --weights W.pt (a state dict), or "
                         "--random-init to measure the initial weights")
    if not args.random_init:
        return
    if args.weights is not None:
        raise ValueError("--random-init and --weights exclude each other: --random-init measures "
                         "the model's initial weights, --weights loads trained ones")
    if hf_name is not None or args.model.endswith(WHOLE):
        raise ValueError(f"--random-init goes with --model FILE.py:NAME: {args.model} carries "
                         "its own weights")


def _check_device(name: str | None) -> None:
    """--device names a device torch knows and this machine has."""
    import torch

    if name is None:
        return
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise ValueError(f"--device {name!r}: not a device torch knows (e.g. cpu, cuda, "
                         "cuda:1, mps)") from err
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (device.index or 0) >= count:
            why = ("this torch is built without CUDA" if torch.version.cuda is None else
                   f"{count} CUDA device(s) visible here")
            raise ValueError(f"--device {name}: no such CUDA device ({why}); leave --device out "
                             "to use the CPU when there is no GPU")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {name}: MPS is not available here")


def _user_error(what: str, err: Exception, path: Path) -> str:
    """A failure of the person's own code, in one line: the line of `path` where it was raised
    (or its syntax is wrong), and its error's first line."""
    lines = (err.msg if isinstance(err, SyntaxError) else str(err)).strip().splitlines()
    frames = [f.lineno for f in traceback.extract_tb(err.__traceback__)
              if Path(f.filename).resolve() == path.resolve()]
    if isinstance(err, SyntaxError) and err.lineno and \
            Path(err.filename or "").resolve() == path.resolve():
        frames = [err.lineno]
    where = f" at line {frames[-1]}" if frames else ""
    return f"{what} fails{where}: {type(err).__name__}{': ' + lines[0] if lines else ''}"


def _import_file(path: Path) -> Any:
    """Import a .py file as a module named after it, its folder on sys.path so that pickled
    classes `<stem>.<Class>` resolve; an error in it is an ExtractionError naming the line."""
    from ..extract import ExtractionError

    if not path.is_file():
        raise ValueError(f"{path}: no such Python file")
    sys.path.insert(0, str(path.resolve().parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ExtractionError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the person's code: its error in words, not our traceback
        del sys.modules[path.stem]
        raise ExtractionError(_user_error(f"importing {path}", err, path)) from err
    return module


def _built(module: Any, path: Path, name: str) -> Any:
    """What FILE.py:NAME returns: NAME, called with no arguments."""
    from ..extract import ExtractionError

    build = getattr(module, name, None)
    if not callable(build):
        defined = sorted(k for k, v in vars(module).items() if callable(v) and not
                         k.startswith("_") and getattr(v, "__module__", None) == module.__name__)
        what = "nothing callable" if build is None else f"a {type(build).__name__}"
        raise ExtractionError(f"{path} defines {what} named {name!r} (its classes and "
                              f"functions: {', '.join(defined) or 'none'})")
    try:
        return build()
    except Exception as err:  # the person's code
        hint = " (it is called with no arguments)" if isinstance(err, TypeError) else ""
        raise ExtractionError(_user_error(f"{path}:{name}()", err, path) + hint) from err


def _model(args: argparse.Namespace) -> Any:
    """The nn.Module of --model: FILE.py:NAME (with --weights or --random-init), or a whole one."""
    import torch

    from ..extract.inputs import load_weights

    if args.code is not None:
        _import_file(args.code)
    if args.model.endswith(WHOLE):
        if args.weights is not None:
            raise ValueError("--weights goes with --model FILE.py:NAME, not a whole-module .pt")
        model = _whole_module(Path(args.model))
    else:
        file, sep, name = args.model.rpartition(":")
        if not sep or not file.endswith(".py"):
            raise ValueError(f"--model {args.model!r}: give FILE.py:NAME or a .pt file")
        if not Path(file).is_file():
            raise ValueError(f"{file}: no such Python file")
        model = _built(_import_file(Path(file)), Path(file), name)
        if args.weights is not None and isinstance(model, torch.nn.Module):
            load_weights(model, args.weights, WEIGHTS_FIX)
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"--model {args.model!r} gave a {type(model).__name__}, not an nn.Module")
    return model


def _whole_module(path: Path) -> Any:
    """A module saved whole with torch.save(model): unpickled (its class must be importable)."""
    import pickle
    from collections.abc import Mapping

    import torch

    from ..extract import ExtractionError

    if not path.is_file():
        raise ExtractionError(f"{path}: no such file")
    try:
        model = torch.load(path, map_location="cpu", weights_only=False)
    except (AttributeError, ModuleNotFoundError) as err:
        raise ExtractionError(f"{path}: the class of the module it holds cannot be found "
                              f"({err}): pass --code FILE.py, the file that defines it") from err
    except (pickle.UnpicklingError, RuntimeError, KeyError, EOFError) as err:
        raise ExtractionError(f"{path}: not a file torch.save wrote ({err})") from err
    if isinstance(model, Mapping):
        raise ExtractionError(f"{path} holds a dict of {len(model)} entries (a state dict?), not "
                              f"a whole module: pass --model FILE.py:NAME --weights {path}")
    return model


def _raw_inputs(path: Path) -> tuple[Any, Any]:
    """A classifier's inputs and labels (None without) as the file holds them."""
    import torch

    from ..extract.inputs import read_npy, read_torch_file

    if path.suffix == ".npy":
        return read_npy(path), None
    if path.suffix == ".npz":
        raise ValueError(f"{path}: give the inputs as one .npy array (numpy.save) or a .pt file, "
                         "not an .npz")
    data = read_torch_file(path, INPUTS_FIX)
    if isinstance(data, dict):
        if "x" not in data:
            raise ValueError(f"{path}: a dict of inputs needs 'x' (found {sorted(data)})")
        return data["x"], data.get("y")
    if not isinstance(data, torch.Tensor):
        raise ValueError(f"{path}: expected a tensor or a dict with 'x', got {type(data).__name__}")
    return data, None


def _classifier_inputs(model: Any, data: tuple[Any, Any], path: Path, batch_size: int) -> Any:
    """The inputs checked, in the model's dtype: one tensor, or (x, y) batches with labels."""
    from ..extract.classifier import parameter_dtype
    from ..extract.inputs import as_inputs, checked_inputs

    x, y = data
    x = checked_inputs(x, parameter_dtype(model), str(path))
    if y is None:
        return x
    y = as_inputs(y, f"{path} (labels 'y')")
    if x.dim() == 0 or y.dim() == 0 or len(y) != len(x):
        raise ValueError(f"{path}: {len(x) if x.dim() else 0} inputs but "
                         f"{len(y) if y.dim() else 0} labels")
    return [(x[i : i + batch_size], y[i : i + batch_size]) for i in range(0, len(x), batch_size)]


def _tokens(path: Path) -> Any:
    """A causal LM's token ids: an .npy, or a .pt dict with 'input_ids' (and 'attention_mask')."""
    from ..extract.inputs import read_npy, read_torch_file

    if path.suffix == ".npy":
        return read_npy(path)
    data = read_torch_file(path, TOKENS_FIX)
    if not isinstance(data, dict):
        return data
    if "input_ids" not in data:
        raise ValueError(f"{path}: a dict of token inputs needs 'input_ids' (found {sorted(data)})")
    return {k: data[k] for k in ("input_ids", "attention_mask") if k in data}
