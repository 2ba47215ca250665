"""repdist.measures.prh against the Platonic Representation Hypothesis' own `metrics.py`.
Their code (minyoungg/platonic-rep) is imported at run time from a folder that holds it.

It prints each metric from both on random pairs (their pipeline: rows L2-normalised; the outlier
clamp compared separately). A shim stands in for torchaudio where it does not import. With `--study
RESULTS` (a run's output folder holding prh/: `make quick` makes one), their study's own code runs
on our files: scores, best layer pairs, and the language stand-ins' features."""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

import numpy as np
import torch

from repdist.measures import prh
from repdist.measures.extra import mutual_knn


# Their module imports torchaudio (not installed beside the pinned torch) for `edit_distance`
# alone. The shim's is the textbook Levenshtein recursion, not repdist's code, so the comparison
# stays independent.
def levenshtein(a, b) -> float:
    m, n = len(a), len(b)
    d = np.zeros((m + 1, n + 1))
    d[:, 0], d[0, :] = np.arange(m + 1), np.arange(n + 1)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1,
                          d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return float(d[m, n])


def import_theirs(folder: Path):
    try:
        import torchaudio.functional  # noqa: F401
        shim = "none"
    except ImportError:
        package = types.ModuleType("torchaudio")
        functional = types.ModuleType("torchaudio.functional")
        functional.edit_distance = levenshtein
        package.functional = functional
        sys.modules.update({"torchaudio": package, "torchaudio.functional": functional})
        shim = "torchaudio.functional.edit_distance (textbook Levenshtein)"
    sys.path.insert(0, str(folder))
    import metrics  # their module

    return metrics.AlignmentMetrics, metrics.remove_outliers, shim


def stub_modules() -> None:
    """Modules their extract_features.py imports at the top for vision models only."""
    for name in ("timm", "timm.data", "timm.data.transforms_factory", "torchvision",
                 "torchvision.models", "torchvision.models.feature_extraction", "datasets"):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__dict__.update(resolve_data_config=None, create_transform=None,
                                   create_feature_extractor=None, load_dataset=None)
            sys.modules[name] = module


def their_scores(study: Path) -> None:
    """Their remove_outliers and compute_score on our features, pair by pair, beside our table:
    the score and best layer pair (the concatenated layers passed as one more layer)."""
    import pandas as pd
    import measure_alignment  # their module (imports metrics, tasks, utils)

    from repdist.experiments.prh.study import INFO

    table = pd.read_parquet(study / "prh" / "alignment.parquet")
    worst, same = 0.0, 0
    for row in table.itertuples():
        feats = {}
        for modality, name in (("vision", row.vision), ("language", row.language)):
            info = json.loads((study / "prh" / modality / name / INFO).read_text())
            raw = torch.tensor(np.load(study / "prh" / modality / name / "features.npy"))
            clamped = measure_alignment.metrics.remove_outliers(raw.float(), q=0.95, exact=False)
            feats[modality] = [clamped[:, i] for i in range(info["layers"])]
            feats[modality].append(clamped.flatten(start_dim=1))
        score, (i, j) = measure_alignment.compute_score(feats["vision"], feats["language"],
                                                        metric=row.metric, topk=10)
        name = lambda k, n: "all" if k == n - 1 else str(k)  # noqa: E731
        best = (name(j, len(feats["language"])), name(i, len(feats["vision"])))
        same += best == (row.language_layer, row.vision_layer)
        worst = max(worst, abs(score - row.score))
        print(f"{row.language:>12s} x {row.vision:<14s} theirs {score:.6f} "
              f"(language {best[0]}, vision {best[1]}) ours {row.score:.6f} "
              f"({row.language_layer}, {row.vision_layer})")
    print(f"compute_score: {same} of {len(table)} best pairs the same, largest |diff| "
          f"{worst:.1e}")


def their_extraction(study: Path, batch_size: int) -> None:
    """Their extract_llm_features on each language stand-in, beside our features (the same where
    ours were read with `padding: prh`); their loader without device_map (needs accelerate)."""
    import argparse as ap
    import tempfile

    import transformers

    stub_modules()
    import extract_features  # their module

    from repdist.data.image_captions import read_folder

    extract_features.load_llm = lambda path, **_: transformers.AutoModelForCausalLM \
        .from_pretrained(path, output_hidden_states=True).eval()
    if not torch.cuda.is_available():  # their clean-up after each model
        torch.cuda.empty_cache = torch.cuda.ipc_collect = lambda: None
    pairs = read_folder(study / "prh" / "standins" / "pairs")
    dataset = [{"text": [c]} for c in pairs.captions]
    for folder in sorted((study / "prh" / "standins" / "language").iterdir()):
        ours = study / "prh" / "language" / folder.name
        info = json.loads((ours / "info.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            args = ap.Namespace(output_dir=tmp, dataset="standin", subset="pairs", pool="avg",
                                prompt=False, caption_idx=0, force_remake=True, qlora=False,
                                force_download=False, batch_size=batch_size)
            extract_features.extract_llm_features([str(folder)], dataset, args)
            saved = torch.load(next(Path(tmp).rglob("*.pt")))
        diff = np.abs(saved["feats"].float().numpy() - np.load(ours / "features.npy")).max()
        print(f"{folder.name}: our padding {info['padding']!r}; features max |diff| {diff:.1e}; "
              f"bits per byte theirs {float(saved['bpb']):.6f} ours {info['bits_per_byte']:.6f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original", type=Path, required=True, help="a platonic-rep checkout")
    parser.add_argument("--study", type=Path, help="a run's output folder holding prh/")
    parser.add_argument("--batch-size", type=int, default=64, help="their extraction's batch")
    args = parser.parse_args()
    if args.study is not None:
        import transformers  # noqa: F401 (before the torchaudio shim, which it would probe)
    theirs, remove_outliers, shim = import_theirs(args.original)
    if args.study is not None:
        their_scores(args.study)
        their_extraction(args.study, args.batch_size)
        return
    print(f"shim: {shim}")
    rng = np.random.default_rng(0)
    worst = 0.0
    for n, d, k in [(300, 2, 10), (500, 8, 10), (200, 16, 5)]:
        x = rng.normal(size=(n, d))
        y = x @ rng.normal(size=(d, d)) + 0.5 * rng.normal(size=(n, d))
        xt, yt = (torch.nn.functional.normalize(torch.tensor(v), dim=-1) for v in (x, y))
        xu, yu = prh.unit_rows(x), prh.unit_rows(y)
        ref = {"cycle_knn": theirs.cycle_knn(xt, yt, k), "lcs_knn": theirs.lcs_knn(xt, yt, k),
               "edit_distance_knn": theirs.edit_distance_knn(xt, yt, k),
               "unbiased_cka": theirs.unbiased_cka(xt, yt), "cknna": theirs.cknna(xt, yt, topk=k),
               "mutual_knn": theirs.mutual_knn(xt, yt, k)}
        ours = {**prh.knn_metrics(xu, yu, k), "unbiased_cka": prh.unbiased_cka(xu, yu),
                "cknna": prh.cknna(xu, yu, k), "mutual_knn": mutual_knn(x, y, k)}
        for key, value in ref.items():
            diff = abs(float(value) - ours[key])
            worst = max(worst, diff)
            print(f"N={n:4d} d={d:2d} k={k:2d} {key:18s} theirs {float(value):.12f} "
                  f"ours {ours[key]:.12f} |diff| {diff:.1e}")
        for exact in (False, True):
            diff = np.abs(remove_outliers(torch.tensor(x), 0.95, exact=exact).numpy()
                          - prh.clamp_outliers(x, 0.95, exact=exact)).max()
            print(f"N={n:4d} d={d:2d} outlier clamp (exact={exact}) max |diff| {diff:.1e}")
    print(f"largest difference of a metric: {worst:.1e} (theirs average in float32)")


if __name__ == "__main__":
    main()
