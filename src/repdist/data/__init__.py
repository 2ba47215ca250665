"""Data sets: the synthetic radial classification data and (later) CIFAR-10."""
