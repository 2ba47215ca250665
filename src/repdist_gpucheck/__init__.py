"""`make gpu-check` (`python -m repdist_gpucheck --out DIR`): the GPU decided in one run.
`check` runs its parts; each module's docstring says what it holds (docs/gpu.md: how to run it)."""
