"""Data sets: synthetic, CIFAR, text, image-caption and SUB data, with offline stand-ins."""
