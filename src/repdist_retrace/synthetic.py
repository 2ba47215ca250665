"""Seed s retraces the authors' seed s: train K = 4 and 6, width 16, seeds 0-4 under a protocol
(default paper) and compare each with the authors' trained model of the same seed.

Prints, per seed, KL, d_LLV and m_CCA between our model and theirs, next to the mean between the
authors' own different seeds; then how many land within d_LLV 0.03 and the median. The authors'
folder (--authors) holds their checkpoint files (a clone's checkpoints/, or `make authors`'s
resources/authors-checkpoints); their sha256 is checked."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from repdist.models.authors import CHECKSUMS, load_synthetic_model, read_checksums, synthetic_name, verify  # noqa: E501
from repdist.pipeline.subnormals import flush_subnormals
from repdist.data.radial import label_codes, make_radial
from repdist.measures import compare
from repdist.models.mlp import build_synthetic_model
from repdist.models.stacked import StackedModelClass
from repdist.training.loop import TrainData, train

from repdist_dev.checkout import SHARED, train_config

TOLERANCE = 0.03


def reps(model, x, codes):
    with torch.no_grad():
        return model.embed(x).double().numpy(), model.unembed(codes).double().numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors", type=Path, default=SHARED / "authors-checkpoints")
    parser.add_argument("--classes", type=int, nargs="+", default=[4, 6])
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--protocol", default="paper", choices=["paper", "clean"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    flush_subnormals()  # as every pipeline job does
    torch.set_num_threads(1)
    sums = read_checksums(CHECKSUMS)
    rows = []
    print(f"protocol {args.protocol}, width {args.width}, seeds {args.seeds}")
    print(f"{'K':>2} {'seed':>4} {'KL':>9} {'d_LLV':>8} {'m_CCA':>7} {'acc ours':>9} "
          f"{'acc theirs':>10}")
    for k in args.classes:
        train_d, test_d = make_radial(20_000, k, 0), make_radial(2_000, k, 1)
        codes = label_codes(np.arange(k), k)
        stack = StackedModelClass([build_synthetic_model(s, k, args.width, 2, 0, 0)
                                   for s in args.seeds])
        start = time.perf_counter()
        _, finals = train(stack, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
            train_config(protocol=args.protocol))
        x, c = torch.from_numpy(test_d.x), torch.from_numpy(codes)
        ours = [reps(stack, x, c)]
        f_all, g_all = ours[0]
        theirs = []
        for s in args.seeds:
            path = args.authors / str(synthetic_name(k, s, args.width))
            verify(path, sums)
            theirs.append(reps(load_synthetic_model(path), x, c))
        inter = np.mean([compare(*theirs[i], *theirs[j])["d_llv"]
                         for i, j in itertools.combinations(range(len(theirs)), 2)])
        for i, s in enumerate(args.seeds):
            r = compare(f_all[i], g_all[i], *theirs[i])
            acc_theirs = float((np.argmax(theirs[i][0] @ theirs[i][1].T, axis=1)
                                == test_d.labels).mean())
            rows.append({"K": k, "seed": s, "kl": r["kl"], "d_llv": r["d_llv"],
                         "mcca_f": r["mcca_f"], "acc_ours": finals["test_accuracy"][i],
                         "acc_authors": acc_theirs, "authors_inter_seed_d_llv": inter,
                         "steps": finals["steps_total"]})
            print(f"{k:2d} {s:4d} {r['kl']:9.2e} {r['d_llv']:8.4f} {r['mcca_f']:7.4f} "
                  f"{finals['test_accuracy'][i]:9.4f} {acc_theirs:10.4f}")
        print(f"   K = {k}: the authors' own seeds are {inter:.3f} apart in d_LLV on average; "
              f"{finals['steps_total']} steps in {time.perf_counter() - start:.0f} s")
    d = np.array([r["d_llv"] for r in rows])
    print(f"{int((d < TOLERANCE).sum())} of {len(d)} within d_LLV {TOLERANCE} of the authors' "
          f"model of the same seed; median {np.median(d):.4f}; max {d.max():.4f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
