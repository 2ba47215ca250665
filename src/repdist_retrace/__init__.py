"""Checks against the original code, step against step: `synthetic` (our synthetic seeds trained
as the authors' checkpoints were, against them), `cifar` (our CIFAR-10 training step and the
original's on the same images, from the authors' source tree), `prh` (our PRH metrics against the
Platonic Representation Hypothesis' own code). Each runs as `python -m repdist_retrace.NAME`; the
original code is loaded from the folder given on the command line."""
