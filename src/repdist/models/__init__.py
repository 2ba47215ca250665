"""Models: the SmallMLP of the paper, and a seed-stacked version that trains many seeds at once."""
