"""Data sets: the synthetic radial classification data, Roeder et al.'s simulation data and
CIFAR-10."""
