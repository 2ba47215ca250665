"""The synthetic study: MLPs trained on radial data, by width, seed and classes."""
