"""The Platonic Representation Hypothesis' study: vision against language models."""
