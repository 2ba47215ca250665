"""A person's files and inputs, read and checked before a model runs on them.

Tensors and state dicts are read with torch.load(weights_only=True), which runs no code from the
file. A file it refuses (numpy arrays, a whole module, other Python objects) is an
ExtractionError saying what the file holds, as far as the class names in its pickle tell, and
how to save it instead."""

from __future__ import annotations

import pickle
import pickletools
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .classifier import ExtractionError

# the modules whose classes torch.load(weights_only=True) reads itself: not worth naming
_OWN_MODULES = ("torch", "collections", "builtins", "__builtin__", "_codecs", "copyreg")
_LISTED = 3  # names shown of a longer list


def some(names: list[str]) -> str:
    """The first few of `names`, and how many more there are."""
    shown = ", ".join(names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")


def pickled_classes(path: Path) -> list[str]:
    """The classes and functions a torch.save file's pickle names, read without running it;
    [] when the file is not the zip archive torch.save writes."""
    try:
        with zipfile.ZipFile(path) as archive:
            name = next(n for n in archive.namelist() if n.endswith("data.pkl"))
            data = archive.read(name)
        found, strings = [], []
        for op, arg, _ in pickletools.genops(data):
            if op.name == "GLOBAL":
                found.append(str(arg).replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(".".join(strings[-2:]))
            elif isinstance(arg, str):
                strings.append(arg)
    except (OSError, zipfile.BadZipFile, StopIteration, ValueError):
        return []
    return list(dict.fromkeys(found))


def held(classes: list[str]) -> str:
    """What a file whose pickle names `classes` holds besides tensors, in words."""
    foreign = [c for c in classes if c.split(".")[0] not in _OWN_MODULES]
    numpy = [c for c in foreign if c.split(".")[0] == "numpy"]
    others = [c for c in foreign if c not in numpy]
    parts = []
    if numpy:
        arrays = any(c.endswith(("_reconstruct", "ndarray")) for c in numpy)
        parts.append("numpy arrays" if arrays else "numpy scalars")
    if others:
        parts.append(f"objects of {some(others)}")
    return " and ".join(parts) or "Python objects other than tensors"


def read_torch_file(path: Path, fix: str) -> Any:
    """torch.load(path, weights_only=True) on the CPU; a missing file, one torch.save did not write
    or one holding more than tensors is an ExtractionError (`fix`: how to save it instead)."""
    if not path.is_file():
        raise ExtractionError(f"{path}: no such file")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        classes = pickled_classes(path) or re.findall(r"GLOBAL ([\w.]+)", str(err))
        if not classes and not zipfile.is_zipfile(path):  # not a pickle of objects: no format
            raise ExtractionError(f"{path}: not a file torch.save wrote (it is no zip archive, "
                                  "and no pickle of tensors)") from err
        raise ExtractionError(f"{path} holds {held(classes)}, not tensors alone, so it cannot be "
                              f"read without running code from it. {fix}") from err
    except (RuntimeError, KeyError, EOFError) as err:
        why = (str(err).split(". ")[0].splitlines()[0] if isinstance(err, RuntimeError) and
               str(err).strip() else "it is empty, cut short or in another format")
        raise ExtractionError(f"{path}: not a file torch.save wrote ({why})") from err


def read_npy(path: Path) -> np.ndarray:
    """An .npy array, read without unpickling: an array of Python objects, or a file numpy
    cannot read as an array, is an ExtractionError."""
    if not path.is_file():
        raise ExtractionError(f"{path}: no such file")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as err:
        raise ExtractionError(f"{path}: not an array of numbers numpy.save wrote ({err}): save "
                              "a numeric array with numpy.save") from err


def as_inputs(x: Any, source: str) -> torch.Tensor:
    """`x` as a tensor of real numbers (an ExtractionError for strings, objects, complex)."""
    if isinstance(x, np.ndarray) and x.dtype.kind not in "biufc":
        raise ExtractionError(f"{source}: the inputs are {x.dtype} values, not numbers")
    try:
        tensor = torch.as_tensor(x)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ExtractionError(f"{source}: the inputs are not an array of numbers "
                              f"({type(x).__name__}: {err})") from err
    if tensor.is_complex():
        raise ExtractionError(f"{source}: the inputs are complex ({_name(tensor.dtype)}); a model "
                              "here takes real numbers: save the real and imaginary parts as "
                              "features")
    return tensor


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_finite(x: torch.Tensor, source: str, cast_from: torch.dtype | None = None) -> None:
    """Every value of float `x` is finite; else an ExtractionError with the count and where
    (`cast_from`: the dtype `x` was cast from, whose finite values overflowed)."""
    bad = ~torch.isfinite(x)
    count = int(bad.sum())
    if not count:
        return
    first = tuple(int(i) for i in bad.nonzero()[0])
    verb = "is" if count == 1 else "are"
    what = (f"{verb} not finite (NaN or infinite)" if cast_from is None else
            f"{verb} past the range of the model's {_name(x.dtype)} (finite in "
            f"{_name(cast_from)}, infinite once cast)")
    raise ExtractionError(f"{source}: {count} of the {x.numel()} input values {what}; the "
                          f"first at index {first}")


def checked_inputs(x: Any, dtype: torch.dtype | None, source: str) -> torch.Tensor:
    """The inputs as a tensor for a model of parameters `dtype` (None: floats as they are): floats
    must be finite, also once cast (a float64 past float32's range is not); token ids stay."""
    tensor = as_inputs(x, source)
    if not tensor.is_floating_point():
        return tensor
    _check_finite(tensor, source)
    if dtype is None or tensor.dtype == dtype:
        return tensor
    cast = tensor.to(dtype)
    _check_finite(cast, source, cast_from=tensor.dtype)
    return cast


def _state_dict(state: Any, path: Path) -> Mapping[str, Any]:
    """The file's content as a state dict: a mapping of names to tensors."""
    if not isinstance(state, Mapping):
        raise ExtractionError(f"{path} holds a {type(state).__name__}, not a state dict (a dict "
                              "of tensors by name): save model.state_dict()")
    nested = [k for k in ("state_dict", "model", "model_state_dict")
              if isinstance(state.get(k), Mapping)]
    if nested and not any(isinstance(v, torch.Tensor) for v in state.values()):
        raise ExtractionError(f"{path} holds a checkpoint (keys {some(sorted(map(str, state)))}),"
                              f" not a state dict: save its {nested[0]!r} entry alone, e.g. "
                              f"torch.save(checkpoint[{nested[0]!r}], 'weights.pt')")
    return state


def _mismatch(path: Path, model: nn.Module, state: Mapping[str, Any]) -> str | None:
    """Why `state` does not fit `model`, naming keys and shapes; None when nothing differs."""
    own = model.state_dict()
    kind = type(model).__name__
    missing = [k for k in own if k not in state]
    unexpected = [str(k) for k in state if k not in own]
    if missing or unexpected:
        why = (f"{path} does not fit {kind}: {len(missing)} of its {len(own)} keys are missing "
               f"({some(missing) or 'none'}), and {len(unexpected)} of the file's {len(state)} "
               f"are not its ({some(unexpected) or 'none'})")
        prefixes = {k.split(".")[0] + "." for k in unexpected}
        if len(prefixes) == 1 and all(k.split(".", 1)[-1] in own for k in unexpected):
            why += f"; the file's keys start with {prefixes.pop()!r}: strip it before saving"
        return why
    shapes = [f"{k} is {tuple(v.shape)} in the file, {tuple(own[k].shape)} in the model"
              for k, v in state.items() if isinstance(v, torch.Tensor) and v.shape != own[k].shape]
    if shapes:
        differ = "shape differs" if len(shapes) == 1 else "shapes differ"
        return f"{path} does not fit {kind}: {len(shapes)} {differ} ({some(shapes)})"
    return None


def load_weights(model: nn.Module, path: Path, fix: str) -> None:
    """Load the state dict in `path` into `model`; a file that is not one, or does not fit
    (keys, shapes), is an ExtractionError naming what differs; `fix` as for read_torch_file."""
    state = _state_dict(read_torch_file(path, fix), path)
    try:
        model.load_state_dict(state)
    except RuntimeError as err:
        why = _mismatch(path, model, state)
        first = str(err).strip().splitlines()
        raise ExtractionError(why or f"{path} does not fit {type(model).__name__} "
                                     f"({' '.join(line.strip() for line in first[:2])})") from err
